// SPDX-License-Identifier: MIT
/* fuzz_cli_flame.c - dial9 flame on arbitrary bytes (tests/fuzz/cli_fuzz.h). */
#include "cli_fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const sets[][8] = {
		{ "flame", NULL }, { "flame", "--tid", "700", NULL },
		{ "flame", "--on-cpu", "--svg", NULL },
		{ "flame", "--on-cpu", "--span", "request", "--from", "+0.00002",
		  NULL },
		{ "flame", "--svg", "--span", "request", "--to", "1000.00004",
		  NULL },
	};

	return cli_fuzz_run(cmd_flame, sets, sizeof(sets) / sizeof(sets[0]), data,
			    size);
}
