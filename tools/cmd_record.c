// SPDX-License-Identifier: MIT
/*
 * cmd_record.c - `dial9 record`: the scheduling of unmodified processes,
 * into ordinary segments.
 *
 *   dial9 record [-o DIR] [--children] [--stacks] [--service NAME] -p PID...
 *   dial9 record [-o DIR] [--children] [--stacks] [--service NAME] -- CMD [ARGS]
 *
 * It runs a recorder in this process with the targets as its scheduler
 * source (dial9.ko, else perf_event_open) and nothing of its own, until the
 * command exits, every PID is gone, or Ctrl-C.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <libgen.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>
#include <linux/dial9.h>

#include "cli.h"

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
	(void)sig;
	stop_requested = 1;
}

static bool alive(int pid)
{
	return kill(pid, 0) == 0 || errno == EPERM;
}

static void usage(FILE *out)
{
	fprintf(out,
		"usage: dial9 record [-o DIR] [--children] [--stacks] [--service NAME] [--ring-kb N] [--cpu-hz N] -p PID...\n"
		"       dial9 record [-o DIR] [--children] [--stacks] [--service NAME] [--ring-kb N] [--cpu-hz N] -- CMD [ARGS]\n"
		"\nRecords the scheduling of the processes (switches, wake-ups,\n"
		"runqueue delays, migrations) until the command exits, every PID is\n"
		"gone, or Ctrl-C.  DIR defaults to DIAL9_TRACE_DIR or /var/tmp/dial9-UID\n"
		"(created 0700; a directory of another user, or one others can write,\n"
		"is refused).\n"
		"--ring-kb: dial9.ko ring per CPU, a power of two (default 1024).\n"
		"--cpu-hz: on-CPU samples a second per CPU, with user stacks (a CPU\n"
		"profile for dial9 flame --on-cpu); default DIAL9_CPU_SAMPLE_HZ or\n"
		"99, 0: none, at most 1000.\n"
		"--stacks: the user stack of each switch-out and of each waker (where\n"
		"a thread blocked, who woke it: dial9 flame, dial9 sched --explain);\n"
		"dial9.ko only, also DIAL9_SCHED_STACKS=1.\n"
		"Other users' processes need CAP_PERFMON; with dial9.ko any process\n"
		"other than the recorder's own needs it too.\n");
}

static int wait_child(pid_t child, int *status)
{
	for (;;) {
		pid_t r = waitpid(child, status, 0);

		if (r == child)
			return 0;
		if (r < 0 && errno != EINTR)
			return -errno;
	}
}

/*
 * The options of the launchers that exec a command after their own
 * arguments, and whether each takes a value (a separate argument, unless
 * given as --name=value or -Xvalue): the program that finally runs names
 * the service, not taskset or env.
 */
struct launcher {
	const char *name;
	const char *with_value;	/* short options that take one */
	unsigned int positional;	/* arguments before the command */
	bool assigns;		/* NAME=VALUE arguments before it (env) */
};

static const struct launcher launchers[] = {
	{ "env", "uCS", 0, true },
	{ "taskset", "", 1, false },	/* the mask, or -c's list */
	{ "nice", "n", 0, false },
	{ "chrt", "", 1, false },	/* the priority */
	{ "ionice", "cnp", 0, false },
	{ "stdbuf", "ioe", 0, false },
	{ "timeout", "sk", 1, false },	/* the duration */
	{ "nohup", "", 0, false },
	{ "setsid", "", 0, false },
	{ "numactl", "NmCpiPl", 0, false },
};

/* The program @argv finally execs, past the launchers it starts with. */
static const char *final_program(char **argv)
{
	for (int depth = 0; argv[0] && depth < 8; depth++) {
		const char *base = strrchr(argv[0], '/');
		const struct launcher *l = NULL;
		unsigned int pos;
		int i = 1;

		base = base ? base + 1 : argv[0];
		for (size_t k = 0; k < sizeof(launchers) / sizeof(launchers[0]); k++)
			if (!strcmp(base, launchers[k].name))
				l = &launchers[k];
		if (!l)
			break;
		pos = l->positional;
		for (; argv[i]; i++) {
			const char *a = argv[i];

			if (!strcmp(a, "--")) {
				i++;
				break;
			}
			/*
			 * An option: -X VALUE skips its value too; -XVALUE,
			 * --name=value, flags and nice's -5 do not (taskset's
			 * -c takes the list as its positional).
			 */
			if (a[0] == '-') {
				if (a[1] && a[1] != '-' && !a[2] &&
				    strchr(l->with_value, a[1]) && argv[i + 1])
					i++;
				continue;
			}
			if (l->assigns && strchr(a, '='))
				continue;
			if (pos) {
				pos--;
				continue;
			}
			break;
		}
		if (!argv[i])
			break;	/* nothing after the launcher: it is the program */
		argv += i;
	}
	return argv[0];
}

int cmd_record(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "pid", required_argument, NULL, 'p' },
		{ "children", no_argument, NULL, 'c' },
		{ "service", required_argument, NULL, 's' },
		{ "ring-kb", required_argument, NULL, 'r' },
		{ "cpu-hz", required_argument, NULL, 'H' },
		{ "stacks", no_argument, NULL, 'S' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct sigaction sa = { .sa_handler = on_signal };
	struct dial9_config cfg;
	struct dial9_stats st = { .size = sizeof(st) };
	const char *dir = getenv("DIAL9_TRACE_DIR");
	const char *service = NULL;
	int pids[64], npids = 0, c, status = 0, ret, go[2] = { -1, -1 };
	bool children = false, stacks = false;
	uint32_t ring_kb = 0;		/* 0: the library's default */
	long cpu_hz = -1;		/* -1: the environment's, or 99 */
	pid_t child = -1;
	char svc[64];

	optind = 1;
	/* '+': stop at the command's own arguments. */
	while ((c = getopt_long(argc, argv, "+o:p:ch", opts, NULL)) != -1) {
		char *end;
		long v;

		switch (c) {
		case 'o': dir = optarg; break;
		case 'c': children = true; break;
		case 'S': stacks = true; break;
		case 's': service = optarg; break;
		case 'r':
			errno = 0;
			v = strtol(optarg, &end, 10);
			if (errno || *end || v < 4 || v > 65536 || (v & (v - 1))) {
				fprintf(stderr, "dial9 record: --ring-kb must be a power of two in 4..65536\n");
				return 2;
			}
			ring_kb = (uint32_t)v;
			break;
		case 'H':
			errno = 0;
			v = strtol(optarg, &end, 10);
			if (errno || *end || !*optarg || v < 0 ||
			    v > DIAL9_SAMPLE_MAX_HZ) {
				fprintf(stderr, "dial9 record: --cpu-hz must be in 0..%u\n",
					DIAL9_SAMPLE_MAX_HZ);
				return 2;
			}
			cpu_hz = v;
			break;
		case 'p':
			errno = 0;
			v = strtol(optarg, &end, 10);
			if (errno || *end || v <= 0 || v > 4194304 || npids == 64) {
				fprintf(stderr, "dial9 record: bad or too many -p '%s' (at most 64)\n",
					optarg);
				return 2;
			}
			pids[npids++] = (int)v;
			break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if ((optind < argc) == (npids > 0)) {
		usage(stderr);
		return 2;
	}
	for (int i = 0; i < npids; i++) {
		if (!alive(pids[i])) {
			fprintf(stderr, "dial9 record: no process %d\n", pids[i]);
			return 1;
		}
	}
	if (optind < argc) {
		/* Start the command stopped at a pipe until recording runs. */
		if (pipe2(go, O_CLOEXEC)) {
			perror("dial9 record: pipe");
			return 1;
		}
		child = fork();
		if (child < 0) {
			perror("dial9 record: fork");
			return 1;
		}
		if (!child) {
			char b;

			close(go[1]);
			if (read(go[0], &b, 1) != 1)
				_exit(127);	/* recording did not start */
			execvp(argv[optind], argv + optind);
			fprintf(stderr, "dial9 record: %s: %s\n", argv[optind],
				strerror(errno));
			_exit(127);
		}
		close(go[0]);
		pids[npids++] = child;
		if (!service && !(getenv("DIAL9_SERVICE_NAME") &&
				  *getenv("DIAL9_SERVICE_NAME"))) {
			snprintf(svc, sizeof(svc), "%s",
				 final_program(argv + optind));
			service = basename(svc);
		}
	}
	dial9_config_init(&cfg);
	/* The recorder's own settings (docs/cli.md lists which apply);
	 * DIAL9_ENABLED does not: recording is what was asked for. */
	dial9_config_from_env(&cfg);
	if (dir && *dir)
		cfg.trace_dir = dir;
	if (!service && getenv("DIAL9_SERVICE_NAME") &&
	    *getenv("DIAL9_SERVICE_NAME"))
		service = getenv("DIAL9_SERVICE_NAME");
	if (!service) {
		snprintf(svc, sizeof(svc), "pid-%d", pids[0]);
		service = svc;
	}
	cfg.service_name = service;
	/* DIAL9_SCHED_ENABLED=0 would record nothing at all */
	if (cfg.sched == DIAL9_SCHED_OFF)
		cfg.sched = DIAL9_SCHED_AUTO;
	/* DIAL9_SCHED_OCCUPANTS=0 and DIAL9_SCHED_STACKS=1 apply; the rest
	 * is the command line's */
	cfg.sched_flags = (cfg.sched_flags & (DIAL9_SCHED_NO_OCCUPANTS |
					      DIAL9_SCHED_STACKS)) |
			  DIAL9_SCHED_NO_SELF |
			  (children ? DIAL9_SCHED_CHILDREN : 0) |
			  (stacks ? DIAL9_SCHED_STACKS : 0);
	cfg.sched_pids = pids;
	cfg.sched_npids = (uint32_t)npids;
	if (ring_kb)
		cfg.sched_ring_bytes = ring_kb * 1024;
	if (cpu_hz >= 0)
		cfg.cpu_sample_hz = (uint32_t)cpu_hz;
	ret = dial9_start(&cfg);
	if (!ret && dial9_get_stats(&st) == 0 && !st.sched_backend[0]) {
		fprintf(stderr,
			"dial9 record: cannot record the scheduling of %s %d: %s.\n"
			"It needs CAP_PERFMON (e.g. run as root), or run as the owner of a process\n"
			"that links libdial9 and let it record itself.\n",
			child > 0 ? "command" : "process", pids[0],
			dial9_strerror(st.sched_error));
		dial9_stop();
		ret = -EPERM;
	} else if (ret) {
		fprintf(stderr, "dial9 record: cannot start recording into %s: %s\n",
			cfg.trace_dir, dial9_strerror(ret));
	}
	if (ret) {
		if (child > 0) {
			close(go[1]);	/* the child exits without running */
			wait_child(child, &status);
		}
		return 1;
	}
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	if (child > 0) {
		if (write(go[1], "g", 1) != 1)
			perror("dial9 record: start the command");
		close(go[1]);
		/* Ctrl-C reaches the command too; we stop when it exits. */
		wait_child(child, &status);
	} else {
		while (!stop_requested) {
			int left = 0;
			struct timespec ts = { 0, 100000000 };

			for (int i = 0; i < npids; i++)
				left += alive(pids[i]);
			if (!left)
				break;
			nanosleep(&ts, NULL);
		}
	}
	dial9_stop();
	dial9_get_stats(&st);
	fprintf(stderr, "dial9 record: %llu scheduler records from %s (%llu encoded here), %llu lost; %llu segments in %s, %llu evicted by the %s budget\n",
		(unsigned long long)st.sched_events, st.sched_backend,
		(unsigned long long)st.sched_encoded,
		(unsigned long long)st.sched_lost,
		(unsigned long long)st.segments_sealed, st.dir,
		(unsigned long long)st.segments_evicted,
		cfg.storage == DIAL9_STORAGE_MEMORY ? "memory" : "disk");
	fprintf(stderr, "dial9 record: segments written %s\n",
		st.direct_io ? "with O_DIRECT (no page-cache copy)" :
		"through the page cache (DIAL9_DIRECT_IO=off, or O_DIRECT "
		"refused: `dial9 info` shows each segment's io_direct)");
	fprintf(stderr, "dial9 record: the recorder's threads used %.3f ms of CPU (%.0f ns per scheduler record); its ring reader ran at SCHED_FIFO %u for %.3f ms in %u stretches (%u cut short by its budget)\n",
		(double)st.recorder_cpu_ns / 1e6,
		st.sched_events ? (double)st.recorder_cpu_ns /
				  (double)st.sched_events : 0.0,
		st.sched_reader_prio, (double)st.sched_reader_rt_ns / 1e6,
		st.sched_reader_rt_entries, st.sched_reader_rt_capped);
	if (st.cpu_sample_hz)
		fprintf(stderr, "dial9 record: %llu CPU samples at %u Hz (lost ones are among the records lost), %llu periods missed by a late timer\n",
			(unsigned long long)st.sched_samples, st.cpu_sample_hz,
			(unsigned long long)st.sched_samples_missed);
	else if (cfg.cpu_sample_hz)
		fprintf(stderr, "dial9 record: no CPU samples: %s cannot take them here (dial9 info shows why)\n",
			st.sched_backend);
	if ((cfg.sched_flags & DIAL9_SCHED_STACKS) &&
	    !strcmp(st.sched_backend, "dial9.ko"))
		fprintf(stderr, "dial9 record: %llu user stacks (lost ones are among the records lost)\n",
			(unsigned long long)st.sched_stacks);
	else if (cfg.sched_flags & DIAL9_SCHED_STACKS)
		fprintf(stderr, "dial9 record: no user stacks: they need dial9.ko, not %s\n",
			st.sched_backend);
	if (cfg.pipeline)
		fprintf(stderr, "dial9 record: shipped %llu segments (%llu failed, %llu not shipped by the shutdown timeout, %llu evicted), %llu summaries (%llu lost)\n",
			(unsigned long long)st.pipe_done,
			(unsigned long long)st.pipe_failed,
			(unsigned long long)st.pipe_abandoned,
			(unsigned long long)st.pipe_evicted,
			(unsigned long long)st.summaries_done,
			(unsigned long long)st.summaries_failed);
	if (cfg.mode == DIAL9_MODE_TRIGGER)
		fprintf(stderr, "dial9 record: trigger mode: %llu dumps shipped (%llu triggers folded into them); segments sealed after the last dump %s%s\n",
			(unsigned long long)st.dumps_done,
			(unsigned long long)st.dumps_coalesced,
			cfg.storage == DIAL9_STORAGE_MEMORY ?
			"were in memory only: they are gone" : "stay in ",
			cfg.storage == DIAL9_STORAGE_MEMORY ? "" : st.dir);
	if (st.sched_unfollowed)
		fprintf(stderr, "dial9 record: INCOMPLETE: %llu processes were not followed (more than %u at once, or from an exec of a privileged program on, as an unprivileged user; dial9 sched lists which): their scheduling is not in the trace\n",
			(unsigned long long)st.sched_unfollowed,
			DIAL9_MAX_TARGETS);
	if (child > 0) {
		int rc = WIFEXITED(status) ? WEXITSTATUS(status) :
			 128 + WTERMSIG(status);

		/* The command's status, unless it succeeded and we did not. */
		return rc ? rc : st.sched_unfollowed ? 2 : 0;
	}
	return st.sched_unfollowed ? 2 : 0;
}
