// SPDX-License-Identifier: MIT
/* fuzz_cli_dump.c - dial9 dump on arbitrary bytes (tests/fuzz/cli_fuzz.h). */
#include "cli_fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const sets[][8] = {
		{ "dump", NULL }, { "dump", "--sorted", NULL }
	};

	return cli_fuzz_run(cmd_dump, sets, sizeof(sets) / sizeof(sets[0]), data,
			    size);
}
