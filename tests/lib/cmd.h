/* SPDX-License-Identifier: MIT */
/*
 * cmd.h - a shell command's output, for the VM's tests of libdial9 and
 * the dial9 command (tests/sched, kselftest programs) and the host's
 * (tests/lib).
 */
#ifndef DIAL9_TEST_CMD_H
#define DIAL9_TEST_CMD_H

#include <stdio.h>

/*
 * @cmd's standard output into @out (@cap bytes, NUL-terminated, cut at
 * @cap - 1); its status as pclose() gives it, or -1 if it did not start.
 */
static inline int test_cmd_output(const char *cmd, char *out, size_t cap)
{
	FILE *pp = popen(cmd, "r");
	size_t len = 0, n;

	out[0] = 0;
	if (!pp)
		return -1;
	while (len < cap - 1 && (n = fread(out + len, 1, cap - 1 - len, pp)))
		len += n;
	out[len] = 0;
	return pclose(pp);
}

#endif
