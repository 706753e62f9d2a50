/* SPDX-License-Identifier: MIT */
/* when.h - the times the dial9 commands take (--since, --until): UTC. */
#ifndef DIAL9_WHEN_H
#define DIAL9_WHEN_H

/*
 * A time as seconds since the epoch into *out; 0, or -1 if @s is none:
 *   90s, 30m, 2h, 7d        ago
 *   now, today, yesterday   (today, yesterday: at 00:00 UTC)
 *   YYYY-MM-DD[THH:MM[:SS]][Z]  UTC
 *   @EPOCH
 */
int cli_parse_time(const char *s, long long *out);

#endif
