// SPDX-License-Identifier: MIT
/* fuzz_cli_info.c - dial9 info on arbitrary bytes (tests/fuzz/cli_fuzz.h). */
#include "cli_fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const sets[][8] = {
		{ "info", NULL }
	};

	return cli_fuzz_run(cmd_info, sets, sizeof(sets) / sizeof(sets[0]), data,
			    size);
}
