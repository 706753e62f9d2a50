/* SPDX-License-Identifier: MIT */
/*
 * report.h - pieces of the `dial9 report --html` page's data
 * (cmd_report.c writes the page; report_why.c the worst delays' whys).
 */
#ifndef DIAL9_REPORT_H
#define DIAL9_REPORT_H

#include <stdio.h>

#include "timeline.h"

/*
 * An occupant's name as the page shows its thread (@by_sched: the page's
 * name of each of tl->st's threads, or NULL), else `dial9 sched`'s.
 */
const char *report_culprit_label(const struct timeline *tl,
				 const char *const *by_sched, uint32_t src,
				 uint32_t kind, uint32_t tid, uint32_t tgid);
/*
 * ,"why":[...]: for each of the @top worst delays of @tl, its explanation
 * or null (culprits collected: TL_CULPRITS); 0 or -ENOMEM.
 */
int report_why_json(FILE *f, const struct timeline *tl,
		    const char *const *by_sched, size_t top);

#endif
