// SPDX-License-Identifier: GPL-2.0
/*
 * libdial9 under dial9.ko's per-user ring limit: smaller rings, said,
 * rather than no module at all.
 */
#include "../kmod/dial9_test.h"
#include <grp.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <dial9.h>
#include "kselftest_harness.h"

#define PARAM "/sys/module/dial9/parameters/user_ring_kb"

TEST(rings_halved_to_fit_the_user_limit)
{
	char old[32] = "";
	FILE *f = fopen(PARAM, "r");
	int st;
	pid_t kid;

	ASSERT_NE(NULL, f);
	ASSERT_NE(NULL, fgets(old, sizeof(old), f));
	fclose(f);
	ASSERT_EQ(0, d9_write_file(PARAM, "700"));
	kid = fork();
	ASSERT_LE(0, kid);
	if (!kid) {
		struct dial9_ksched_opts o = { .ring_size = 4 << 20 };
		struct dial9_ksched *k;
		char why[256];
		int ret;

		if (setgroups(0, NULL) || setgid(65534) || setuid(65534))
			_exit(10);
		ret = dial9_ksched_open(&k, &o, why, sizeof(why));
		if (ret) {
			printf("# open: %d %s\n", ret, why);
			_exit(11);
		}
		printf("# %s: %s\n", dial9_ksched_backend(k),
		       dial9_ksched_fallback_reason(k));
		ret = strcmp(dial9_ksched_backend(k), "dial9.ko") ? 12 :
		      !strstr(dial9_ksched_fallback_reason(k),
			      "rings of 256 KiB per CPU, not 4096") ? 13 : 0;
		dial9_ksched_close(k);
		_exit(ret);
	}
	ASSERT_EQ(kid, waitpid(kid, &st, 0));
	EXPECT_EQ(0, d9_write_file(PARAM, old));
	ASSERT_TRUE(WIFEXITED(st));
	EXPECT_EQ(0, WEXITSTATUS(st))
		TH_LOG("11: no source, 12: not dial9.ko, 13: not said");
}

TEST_HARNESS_MAIN
