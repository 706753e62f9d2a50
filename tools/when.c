// SPDX-License-Identifier: MIT
/* when.c - the times of --since and --until (when.h). */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "when.h"

static long long midnight(long long t)
{
	return t - ((t % 86400) + 86400) % 86400;
}

int cli_parse_time(const char *s, long long *out)
{
	long long now = (long long)time(NULL), v;
	struct tm tm;
	const char *p;
	char *end;

	if (!strcmp(s, "now")) {
		*out = now;
		return 0;
	}
	if (!strcmp(s, "today") || !strcmp(s, "yesterday")) {
		*out = midnight(now) - (s[0] == 'y' ? 86400 : 0);
		return 0;
	}
	if (*s == '@') {
		v = strtoll(s + 1, &end, 10);
		if (!s[1] || *end)
			return -1;
		*out = v;
		return 0;
	}
	v = strtoll(s, &end, 10);
	if (end != s && v >= 0 && end[0] && !end[1] && strchr("smhd", end[0])) {
		long long mul = end[0] == 's' ? 1 : end[0] == 'm' ? 60 :
				end[0] == 'h' ? 3600 : 86400;

		*out = now - v * mul;
		return 0;
	}
	memset(&tm, 0, sizeof(tm));
	p = strptime(s, "%Y-%m-%d", &tm);
	if (p && (*p == 'T' || *p == ' ')) {
		const char *q = strptime(p + 1, "%H:%M:%S", &tm);

		p = q ? q : strptime(p + 1, "%H:%M", &tm);
	}
	if (p && *p == 'Z')
		p++;
	if (!p || *p)
		return -1;
	*out = (long long)timegm(&tm);
	return 0;
}
