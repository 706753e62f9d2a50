// SPDX-License-Identifier: MIT
/*
 * fuzz_cli_fleet.c - dial9 fleet on a hostile segment summary
 * (tests/fuzz/cli_fuzz.h).  The input is the one summary of a directory
 * laid out like a bucket: gzip bytes as they are when it starts with
 * gzip's magic (a hostile or cut stream), else JSON lines that the
 * target compresses first, so that most runs reach the line parser and
 * the ranking.  Seeds in tests/fuzz/seeds/fleet/.
 */
#include <sys/stat.h>
#include <zlib.h>

#include "cli_fuzz.h"

static char dir[] = "/tmp/dial9-fuzz-fleet-XXXXXX";
static char sub[3][128], file[192];

static void cleanup(void)
{
	unlink(file);
	for (int i = 2; i >= 0; i--)
		rmdir(sub[i]);
	rmdir(dir);
}

/* DIR/summary/version=1/service=s/1-0.json.gz, made once. */
static void setup(void)
{
	static const char *const level[3] = { "summary", "version=1",
					      "service=s" };

	if (!mkdtemp(dir))
		abort();
	for (int i = 0; i < 3; i++) {
		snprintf(sub[i], sizeof(sub[i]), "%s/%s", i ? sub[i - 1] : dir,
			 level[i]);
		if (mkdir(sub[i], 0700))
			abort();
	}
	snprintf(file, sizeof(file), "%s/1-0.json.gz", sub[2]);
	atexit(cleanup);
}

static void put(const uint8_t *data, size_t size)
{
	if (size >= 2 && data[0] == 0x1f && data[1] == 0x8b) {
		int fd = open(file, O_WRONLY | O_CREAT | O_TRUNC, 0600);

		if (fd < 0)
			abort();
		cli_fuzz_write(fd, data, size);
		close(fd);
	} else {
		gzFile g = gzopen(file, "wb1");

		if (!g || (size && gzwrite(g, data, (unsigned int)size) <= 0) ||
		    gzclose(g) != Z_OK)
			abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const sets[][8] = {
		{ "fleet", NULL },
		{ "fleet", "--json", NULL },
		{ "fleet", "--by", "thread", "--sort", "max", NULL },
		{ "fleet", "--json", "--by", "thread", "--sort", "total", NULL },
		{ "fleet", "--by", "host", "--top", "1", NULL },
		{ "fleet", "--json", "--by", "service", "--since", "@1000", NULL },
		{ "fleet", "--until", "@2000000000", "--host", "h1", NULL },
	};

	if (!*file)
		setup();
	put(data, size);
	return cli_fuzz_cmd(cmd_fleet, sets[size % (sizeof(sets) / sizeof(sets[0]))],
			    dir);
}
