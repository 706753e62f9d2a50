/* SPDX-License-Identifier: MIT */
/*
 * cli_fuzz.h - the driver of the libFuzzer targets of the dial9 command
 * (fuzz_cli_*.c), one per subcommand that reads traces: each input is
 * the one TRACE argument, a memfd named by /proc/self/fd/N, run through
 * the subcommand's own entry point (cmd_dump() ...) with one of its
 * option sets; its output and its messages go to /dev/null.  LZ4 input decompresses to
 * at most 16 MiB here (DIAL9_INFLATE_MAX_MB), to keep each run short.
 * A target whose input is not a trace (fuzz_cli_fleet.c: a summary in
 * a directory) writes its own file and calls cli_fuzz_cmd().
 */
#ifndef DIAL9_CLI_FUZZ_H
#define DIAL9_CLI_FUZZ_H

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../../tools/cli.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Write all of @data to @fd, or abort. */
static inline void cli_fuzz_write(int fd, const uint8_t *data, size_t size)
{
	size_t done = 0;

	while (done < size) {
		ssize_t n = write(fd, data + done, size - done);

		if (n <= 0)
			abort();
		done += (size_t)n;
	}
}

/*
 * Run @cmd with the arguments @set (a NULL-terminated list of at most 7)
 * and then @path; the first call sends the output and the messages to
 * /dev/null.
 */
static inline int cli_fuzz_cmd(int (*cmd)(int argc, char **argv),
			       const char *const *set, const char *path)
{
	static int ready;
	char *argv[16];
	int argc = 0;

	if (!ready) {
		int nul = open("/dev/null", O_WRONLY);

		if (nul < 0 || dup2(nul, 1) < 0)
			abort();
		close(nul);
		/* the command's messages too (one per bad input); the
		 * sanitizers and libFuzzer write to fd 2 themselves */
		stderr = fopen("/dev/null", "w");
		if (!stderr)
			abort();
		setenv("DIAL9_INFLATE_MAX_MB", "16", 1);
		ready = 1;
	}
	while (argc < 7 && set[argc]) {
		argv[argc] = (char *)set[argc];
		argc++;
	}
	argv[argc++] = (char *)path;
	argv[argc] = NULL;
	cmd(argc, argv);
	fflush(stdout);
	return 0;
}

/*
 * Run @cmd on @data with the option set @sets[size % @nsets] (each a
 * NULL-terminated list of at most 7 arguments before the trace).
 */
static inline int cli_fuzz_run(int (*cmd)(int argc, char **argv),
			       const char *const sets[][8], size_t nsets,
			       const uint8_t *data, size_t size)
{
	char path[64];
	int fd = memfd_create("trace", MFD_CLOEXEC);

	if (fd < 0)
		abort();
	cli_fuzz_write(fd, data, size);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	cli_fuzz_cmd(cmd, sets[size % nsets], path);
	close(fd);
	return 0;
}

#endif
