// SPDX-License-Identifier: MIT
/*
 * test_trace_dir.c - trace directories in shared places, tried as a
 * local attacker would: a directory another user made first, one anyone
 * can write, the per-user default squatted, links planted where the
 * next segment goes and where salvage looks.  Nothing outside the
 * recorder's own files may change, and a refused directory is a clear
 * error.  The cases with two users need root (CI runs as root): the
 * attacker is uid 65534, a forked child.
 */
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/wait.h>

#include <cmocka.h>

#include "helpers.h"

#define ATTACKER 65534

DIAL9_EVENT_TYPE(t_tick, "tick", DIAL9_FIELD(U64, seq));

static void cfg_for(struct dial9_config *c, const char *dir)
{
	dial9_config_init(c);
	c->trace_dir = dir;
	c->service_name = "dirtest";
	c->sched = DIAL9_SCHED_OFF;
}

/* Run @fn(arg) as @uid in a child; its exit status. */
static int as_user(uid_t uid, int (*fn)(const void *), const void *arg)
{
	pid_t pid = fork();
	int st;

	assert_true(pid >= 0);
	if (!pid) {
		if (setresgid(uid, uid, uid) || setresuid(uid, uid, uid))
			_exit(100);
		_exit(fn(arg));
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 200;
}

static void need_root(void)
{
	if (geteuid())
		skip(); /* two users: root only */
}

static int mkdir_open(const void *arg)
{
	if (mkdir(arg, 0777) || chmod(arg, 0777))
		return 1;
	return 0;
}

/* A victim's file @name in @dir: it must never change. */
static char *victim_file(const char *dir, const char *name)
{
	char *p;
	FILE *f;

	if (asprintf(&p, "%s/%s", dir, name) < 0)
		abort();
	f = fopen(p, "w");
	assert_non_null(f);
	fputs("precious\n", f);
	fclose(f);
	assert_int_equal(chmod(p, 0600), 0);
	return p;
}

static void assert_precious(const char *p)
{
	size_t n;
	uint8_t *b = test_slurp(p, &n);

	assert_non_null(b);
	assert_int_equal(n, 9);
	assert_memory_equal(b, "precious\n", 9);
	free(b);
}

static void record_a_little(void)
{
	for (uint64_t i = 0; i < 100; i++)
		DIAL9_EMIT(t_tick, dial9_u64(i));
}

/* A directory another user made, even 0777: refused, nothing created. */
static void foreign_directory_refused(void **state)
{
	char *base = test_tmpdir("foreign"), *dir;
	struct dial9_config c;
	size_t n;
	char **v;
	(void)state;

	need_root();
	assert_int_equal(chmod(base, 01777), 0); /* as /tmp is */
	if (asprintf(&dir, "%s/traces", base) < 0)
		abort();
	assert_int_equal(as_user(ATTACKER, mkdir_open, dir), 0);
	cfg_for(&c, dir);
	assert_int_equal(dial9_start(&c), -EPERM);
	v = test_list(dir, "", &n);
	test_free_list(v);
	assert_int_equal(n, 0); /* nothing went into it */
	test_rm_rf(base);
	free(dir);
	free(base);
}

/* The user's own directory, but writable by all: refused too. */
static void writable_directory_refused(void **state)
{
	char *dir = test_tmpdir("open");
	struct dial9_config c;
	(void)state;

	assert_int_equal(chmod(dir, 0777), 0);
	cfg_for(&c, dir);
	assert_int_equal(dial9_start(&c), -EACCES);
	assert_int_equal(chmod(dir, 0770), 0);
	assert_int_equal(dial9_start(&c), -EACCES); /* its group, too */
	assert_int_equal(chmod(dir, 0755), 0);
	assert_int_equal(dial9_start(&c), 0);
	dial9_stop();
	test_rm_rf(dir);
	free(dir);
}

static mode_t mode_of(const char *p)
{
	struct stat st;

	assert_int_equal(lstat(p, &st), 0);
	return st.st_mode & 07777;
}

/* Segments 0600 in a 0700 directory; 0640/0750 for a group. */
static void private_modes(void **state)
{
	static const uint32_t modes[] = { 0600, 0640 };
	(void)state;

	for (size_t m = 0; m < 2; m++) {
		char *dir = test_tmpdir("modes"), *sub, **v;
		struct dial9_config c;
		size_t n;

		cfg_for(&c, dir);
		c.trace_mode = modes[m];
		assert_int_equal(dial9_start(&c), 0);
		sub = test_boot_dir(dir);
		assert_non_null(sub);
		assert_int_equal(mode_of(sub), modes[m] == 0600 ? 0700 : 0750);
		record_a_little();
		dial9_stop();
		v = test_list(sub, ".dial9", &n);
		assert_true(n >= 1);
		for (size_t i = 0; i < n; i++)
			assert_int_equal(mode_of(v[i]), modes[m]);
		test_free_list(v);
		free(sub);
		test_rm_rf(dir);
		free(dir);
	}
	{
		struct dial9_config c;

		cfg_for(&c, "/tmp");
		c.trace_mode = 0666; /* never writable by others */
		assert_int_equal(dial9_start(&c), -EINVAL);
	}
}

struct plant {
	const char *boot;   /* the writer's directory */
	const char *target; /* a file of the victim's */
};

/*
 * A link named like the next segment, planted in the writer's own
 * directory (as a swap of it would): the writer must not write through
 * it.  Root may write there; that it does not follow is what is tested.
 */
static void planted_link_not_followed(void **state)
{
	char *dir = test_tmpdir("link"), *sub, *precious, link[700];
	struct dial9_config c;
	struct dial9_stats st = { .size = sizeof(st) };
	(void)state;

	precious = victim_file(dir, "precious");
	cfg_for(&c, dir);
	c.max_file_bytes = 4096;
	c.max_disk_bytes = 1 << 20;
	assert_int_equal(dial9_start(&c), 0);
	sub = test_boot_dir(dir);
	assert_non_null(sub);
	for (int i = 2; i < 40; i++) {
		snprintf(link, sizeof(link), "%s/%08d.dial9.active", sub, i);
		assert_int_equal(symlink(precious, link), 0);
		snprintf(link, sizeof(link), "%s/%08d.dial9", sub, i);
		assert_int_equal(symlink(precious, link), 0);
	}
	for (int r = 0; r < 20; r++) {
		record_a_little();
		dial9_flush(1000);
	}
	dial9_get_stats(&st);
	dial9_stop();
	assert_precious(precious);
	assert_true(st.write_errors > 0); /* said, not silent */
	free(sub);
	free(precious);
	test_rm_rf(dir);
	free(dir);
}

static int plant_salvage(const void *arg)
{
	const struct plant *p = arg;
	char path[700];

	/* a link to a directory of the victim's, and a directory of the
	 * attacker's own, each looking like a dead writer's */
	snprintf(path, sizeof(path), "%s/evil-1", p->boot);
	if (symlink(p->target, path))
		return 1;
	snprintf(path, sizeof(path), "%s/evil-2", p->boot);
	if (mkdir(path, 0777))
		return 2;
	snprintf(path, sizeof(path), "%s/evil-2/00000001.dial9.active", p->boot);
	if (symlink("/etc/hostname", path))
		return 3;
	return 0;
}

/* Salvage follows no link and touches no other user's directory. */
static void salvage_follows_no_link(void **state)
{
	char *dir = test_tmpdir("salv"), *elsewhere = test_tmpdir("victim");
	char path[700], *precious;
	struct plant p = { .boot = dir, .target = elsewhere };
	struct dial9_config c;
	struct stat st;
	(void)state;

	need_root();
	/* the attacker could write the trace directory (as before the
	 * checks): salvage must still be safe if it meets such entries */
	precious = victim_file(elsewhere, "00000001.dial9.active");
	assert_int_equal(chmod(dir, 0777), 0);
	assert_int_equal(as_user(ATTACKER, plant_salvage, &p), 0);
	assert_int_equal(chmod(dir, 0700), 0);
	cfg_for(&c, dir);
	assert_int_equal(dial9_start(&c), 0);
	dial9_stop();
	assert_precious(precious); /* not truncated, not renamed */
	snprintf(path, sizeof(path), "%s/evil-2/00000001.dial9.active", dir);
	assert_int_equal(lstat(path, &st), 0);
	assert_true(S_ISLNK(st.st_mode));
	free(precious);
	test_rm_rf(dir);
	test_rm_rf(elsewhere);
	free(dir);
	free(elsewhere);
}

#define VICTIM 54321

static int squat_default(const void *arg)
{
	(void)arg;
	if (mkdir("/var/tmp/dial9-54321", 0777) ||
	    chmod("/var/tmp/dial9-54321", 0777))
		return 1;
	return 0;
}

/* The victim records with the default directory, squatted. */
static int victim_records(const void *arg)
{
	struct dial9_config c;
	struct dial9_stats st = { .size = sizeof(st) };
	(void)arg;

	dial9_config_init(&c);
	c.service_name = "dirtest";
	c.sched = DIAL9_SCHED_OFF;
	if (strcmp(c.trace_dir, "/var/tmp/dial9-54321"))
		return 1;
	if (dial9_start(&c))
		return 2;
	record_a_little();
	dial9_get_stats(&st);
	dial9_stop();
	/* a private directory beside the default, not the squatted one */
	if (strncmp(st.dir, "/var/tmp/dial9-54321.", 21))
		return 3;
	return 0;
}

/* Whoever makes a user's default directory first cannot stop that
 * user's recorder, nor see into what it writes. */
static void squatted_default(void **state)
{
	size_t n;
	char **v;
	(void)state;

	need_root();
	test_sh("rm -rf /var/tmp/dial9-54321 /var/tmp/dial9-54321.*");
	assert_int_equal(as_user(ATTACKER, squat_default, NULL), 0);
	assert_int_equal(as_user(VICTIM, victim_records, NULL), 0);
	v = test_list("/var/tmp/dial9-54321", "", &n);
	test_free_list(v);
	assert_int_equal(n, 0);
	assert_int_equal(test_sh("test \"$(stat -c %%a /var/tmp/dial9-54321.*)\" = 700"), 0);
	test_sh("rm -rf /var/tmp/dial9-54321 /var/tmp/dial9-54321.*");
}

/* The write-back directory is checked as the trace directory is. */
static void foreign_write_back_refused(void **state)
{
	char *dir = test_tmpdir("wbsrc"), *wb = test_tmpdir("wb");
	struct dial9_config c;
	struct dial9_stats st = { .size = sizeof(st) };
	(void)state;

	assert_int_equal(chmod(wb, 0777), 0);
	cfg_for(&c, dir);
	c.pipeline = DIAL9_PIPE_WRITE_BACK;
	c.write_back_dir = wb;
	c.shutdown_timeout_ms = 300;
	assert_int_equal(dial9_start(&c), 0);
	record_a_little();
	dial9_stop();
	(void)st;
	assert_int_equal(test_sh("test -z \"$(ls -A '%s')\"", wb), 0);
	test_rm_rf(dir);
	test_rm_rf(wb);
	free(dir);
	free(wb);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(foreign_directory_refused),
		cmocka_unit_test(writable_directory_refused),
		cmocka_unit_test(private_modes),
		cmocka_unit_test(planted_link_not_followed),
		cmocka_unit_test(salvage_follows_no_link),
		cmocka_unit_test(squatted_default),
		cmocka_unit_test(foreign_write_back_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
