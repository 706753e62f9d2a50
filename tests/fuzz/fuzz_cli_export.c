// SPDX-License-Identifier: MIT
/* fuzz_cli_export.c - dial9 export on arbitrary bytes (tests/fuzz/cli_fuzz.h). */
#include "cli_fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const sets[][8] = {
		{ "export", "--perfetto", "-o", "-", NULL }
	};

	return cli_fuzz_run(cmd_export, sets, sizeof(sets) / sizeof(sets[0]), data,
			    size);
}
