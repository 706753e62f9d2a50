// SPDX-License-Identifier: MIT
/* fuzz_cli_report.c - dial9 report on arbitrary bytes (tests/fuzz/cli_fuzz.h). */
#include "cli_fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const sets[][8] = {
		{ "report", "--html", "-o", "-", NULL },
		{ "report", "--html", "--top", "1", "-o", "-", NULL }
	};

	return cli_fuzz_run(cmd_report, sets, sizeof(sets) / sizeof(sets[0]), data,
			    size);
}
