// SPDX-License-Identifier: MIT
/* fuzz_cli_sched.c - dial9 sched on arbitrary bytes (tests/fuzz/cli_fuzz.h). */
#include "cli_fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const sets[][8] = {
		{ "sched", NULL }, { "sched", "--json", NULL },
		{ "sched", "--min-delay", "1", "--top", "2", NULL },
		{ "sched", "--culprits", NULL },
		{ "sched", "--culprits", "--json", NULL },
		{ "sched", "--explain", "--min-delay", "0", NULL },
		{ "sched", "--explain", "--json", NULL },
	};

	return cli_fuzz_run(cmd_sched, sets, sizeof(sets) / sizeof(sets[0]), data,
			    size);
}
