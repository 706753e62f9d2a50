// SPDX-License-Identifier: MIT
/* log.c - the library's one log line (common.h). */
#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

#include "common/common.h"

void d9_log(const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	int n = snprintf(buf, sizeof(buf), "dial9: ");

	va_start(ap, fmt);
	n += vsnprintf(buf + n, sizeof(buf) - (size_t)n - 1, fmt, ap);
	va_end(ap);
	if (n > (int)sizeof(buf) - 2)
		n = (int)sizeof(buf) - 2;
	buf[n++] = '\n';
	if (write(2, buf, (size_t)n) < 0)
		(void)0;
}
