// SPDX-License-Identifier: GPL-2.0
/*
 * Power the test VM off with a status the host sees: qemu's isa-debug-exit
 * device turns a write of CODE to port 0xf4 into the exit status
 * (CODE << 1) | 1.  The cloud kernel has no /dev/port, hence ioperm().
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/io.h>

int main(int argc, char **argv)
{
	unsigned int code = argc > 1 ? (unsigned int)atoi(argv[1]) : 1;

	if (ioperm(0xf4, 4, 1)) {
		perror("ioperm");
		return 1;
	}
	outl(code, 0xf4);
	return 1;	/* not reached when the device is present */
}
