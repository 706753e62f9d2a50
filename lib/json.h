/* SPDX-License-Identifier: MIT */
/* json.h - what the library's JSON writers (dump manifests, segment
 * summaries) share. */
#ifndef DIAL9_JSON_H
#define DIAL9_JSON_H

#include <stdio.h>

/* A JSON string (quotes included) appended to f; NULL is "". */
void d9_json_str(FILE *f, const char *s);

#endif
