// SPDX-License-Identifier: MIT
/* fuzz_cli_flame.c - dial9 flame on arbitrary bytes (tests/fuzz/cli_fuzz.h). */
#include "cli_fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const sets[][8] = {
		{ "flame", NULL }, { "flame", "--tid", "700", NULL },
	};

	return cli_fuzz_run(cmd_flame, sets, sizeof(sets) / sizeof(sets[0]), data,
			    size);
}
