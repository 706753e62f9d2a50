// SPDX-License-Identifier: MIT
/*
 * config.c - the recorder's configuration: the defaults, DIAL9_*
 * environment variables, and the checks dial9_start() applies.
 */
#include <errno.h>
#include <stdatomic.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "recorder/recorder.h"

/* ---- configuration ---- */

/*
 * DIAL9_SCHED_RING_BUDGET over the possible CPUs, three rings each (the
 * kernel's, the reader's inbox and spare), as a power of two.
 */
static uint32_t default_sched_ring(void)
{
	long n = sysconf(_SC_NPROCESSORS_CONF);
	uint64_t per = DIAL9_SCHED_RING_BUDGET / 3 / (uint64_t)(n > 0 ? n : 1);
	uint32_t ring = DIAL9_SCHED_RING_MAX_DEFAULT;

	while (ring > DIAL9_SCHED_RING_MIN_DEFAULT && ring > per)
		ring /= 2;
	return ring;
}

/*
 * Per user, on disk: /var/tmp survives a reboot (a crashed service's
 * segments are salvaged at the next start) and holds a 1 GiB budget,
 * where $XDG_RUNTIME_DIR is a small tmpfs that exists only while the
 * user is logged in (services have none).  The writer makes it 0700 and
 * takes it only if it is the user's own and nobody else can write it.
 */
struct default_dir {
	struct default_dir *next;
	uid_t uid;
	char path[40];
};

/* One string per effective uid the process has had, never freed: a
 * config may keep the pointer, and a setuid program gets its own. */
static struct default_dir *_Atomic default_dirs;

const char *dial9_default_trace_dir(void)
{
	uid_t uid = geteuid();
	struct default_dir *d, *head = atomic_load(&default_dirs);

	for (d = head; d; d = d->next)
		if (d->uid == uid)
			return d->path;
	d = malloc(sizeof(*d));
	if (!d)
		return "/var/tmp/dial9";
	d->uid = uid;
	snprintf(d->path, sizeof(d->path), "/var/tmp/dial9-%u", (unsigned int)uid);
	do
		d->next = head;
	while (!atomic_compare_exchange_weak(&default_dirs, &head, d));
	return d->path;
}

void dial9_config_init(struct dial9_config *c)
{
	memset(c, 0, sizeof(*c));
	c->size = sizeof(*c);
	c->trace_dir = dial9_default_trace_dir();
	c->trace_mode = 0600;
	c->service_name = NULL; /* the program name */
	c->rotation_secs = 60;
	c->max_disk_bytes = 1024 * MIB;
	c->max_file_bytes = 0; /* min(100 MiB, max_disk / 4) */
	c->buffer_bytes = 1024 * 1024;
	c->flush_interval_ms = 5;
	c->collector_batches = 1024;
	c->io_backend = DIAL9_IO_AUTO;
	c->clock = DIAL9_CLOCK_AUTO;
	c->sched = DIAL9_SCHED_AUTO;
	c->sched_ring_bytes = default_sched_ring();
	c->sched_reader_prio = 1;
	c->cpu_sample_hz = 99;
	c->upload_concurrency = 4;
	c->s3_prefix = "dial9-traces";
	c->shutdown_timeout_ms = 5000;
	c->upload_timeout_ms = 30000;
	c->retry_base_ms = 500;
	c->retry_max_ms = 300000;
	c->mode = DIAL9_MODE_CONTINUOUS;
	c->dump_debounce_ms = 1000;
	c->trigger_signal = 0;
}

static int parse_bool(const char *s)
{
	static const char *const yes[] = { "t", "true", "1", "y", "yes", "on" };
	static const char *const no[] = { "f", "false", "0", "n", "no", "off" };

	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
		if (!strcasecmp(s, yes[i]))
			return 1;
		if (!strcasecmp(s, no[i]))
			return 0;
	}
	return -1;
}

/* An unsigned number in [lo, hi]; false (with a warning) otherwise. */
static bool env_u64(const char *name, uint64_t lo, uint64_t hi, uint64_t *out)
{
	const char *s = getenv(name);
	char *end;
	unsigned long long v;

	if (!s)
		return false;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (!*s || *end || errno || s[0] == '-' || v < lo || v > hi) {
		d9_log("%s=\"%s\" is not a number in %llu..%llu; using the "
		       "default", name, s, (unsigned long long)lo,
		       (unsigned long long)hi);
		return false;
	}
	*out = v;
	return true;
}

static bool env_choice(const char *name, const char *const *names,
		       unsigned int n, uint32_t *out)
{
	const char *s = getenv(name);

	if (!s)
		return false;
	for (unsigned int i = 0; i < n; i++) {
		if (!strcasecmp(s, names[i])) {
			*out = i;
			return true;
		}
	}
	d9_log("%s=\"%s\" is not one of the accepted values; using the default",
	       name, s);
	return false;
}

/* "USR2", "SIGUSR2", "RTMIN+3", "12": a signal number, or -1. */
static int parse_signal(const char *s)
{
	static const struct {
		const char *name;
		int sig;
	} names[] = { { "USR1", SIGUSR1 }, { "USR2", SIGUSR2 }, { "HUP", SIGHUP },
		      { "QUIT", SIGQUIT }, { "PWR", SIGPWR }, { "URG", SIGURG } };
	char *end;
	long v;

	if (!strncasecmp(s, "SIG", 3))
		s += 3;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcasecmp(s, names[i].name))
			return names[i].sig;
	if (!strncasecmp(s, "RTMIN", 5)) {
		v = s[5] ? strtol(s + 6, &end, 10) : 0;
		if ((s[5] && (s[5] != '+' || *end)) || v < 0 ||
		    SIGRTMIN + v > SIGRTMAX)
			return -1;
		return SIGRTMIN + (int)v;
	}
	v = strtol(s, &end, 10);
	if (!*s || *end || v < 1 || v > SIGRTMAX || v == SIGKILL || v == SIGSTOP)
		return -1;
	return (int)v;
}

/* The worker pipeline: S3 or write-back, LZ4 unless DIAL9_COMPRESS=none. */
static void pipeline_from_env(struct dial9_config *c)
{
	static const char *const comp[] = { "lz4", "none" };
	const char *s;
	uint32_t v;
	uint64_t n;

	if ((s = getenv("DIAL9_S3_BUCKET")) && *s) {
		c->s3_bucket = s;
		c->pipeline |= DIAL9_PIPE_S3 | DIAL9_PIPE_LZ4;
	}
	if ((s = getenv("DIAL9_S3_PREFIX")))
		c->s3_prefix = s;
	if ((s = getenv("DIAL9_S3_REGION")) && *s)
		c->s3_region = s;
	if ((s = getenv("DIAL9_S3_ENDPOINT")) && *s)
		c->s3_endpoint = s;
	if ((s = getenv("DIAL9_WRITE_BACK_DIR")) && *s) {
		if (c->pipeline & DIAL9_PIPE_S3) {
			d9_log("DIAL9_WRITE_BACK_DIR is ignored: DIAL9_S3_BUCKET "
			       "is set");
		} else {
			c->write_back_dir = s;
			c->pipeline |= DIAL9_PIPE_WRITE_BACK | DIAL9_PIPE_LZ4;
		}
	}
	if (env_choice("DIAL9_COMPRESS", comp, 2, &v)) {
		if (v == 0)
			c->pipeline |= DIAL9_PIPE_LZ4;
		else
			c->pipeline &= ~DIAL9_PIPE_LZ4;
	}
	{
		static const char *const modes[] = { "continuous", "trigger" };

		env_choice("DIAL9_MODE", modes, 2, &c->mode);
	}
	{
		static const char *const st[] = { "disk", "memory" };

		env_choice("DIAL9_STORAGE", st, 2, &c->storage);
	}
	if (c->storage == DIAL9_STORAGE_MEMORY) {
		c->max_disk_bytes = 64 * MIB;
		if (env_u64("DIAL9_MEMORY_BUDGET_MB", 1, 1ull << 30, &n))
			c->max_disk_bytes = n * MIB;
	}
	if (env_u64("DIAL9_DUMP_DEBOUNCE_MS", 0, 3600000, &n))
		c->dump_debounce_ms = (uint32_t)n;
	if ((s = getenv("DIAL9_TRIGGER_SIGNAL")) && *s) {
		int sig = parse_signal(s);

		if (sig > 0)
			c->trigger_signal = sig;
		else
			d9_log("DIAL9_TRIGGER_SIGNAL=\"%s\" is not a signal "
			       "(USR1, USR2, RTMIN+N or a number); no signal "
			       "triggers a dump", s);
	}
	if (env_u64("DIAL9_UPLOAD_CONCURRENCY", 1, 64, &n))
		c->upload_concurrency = (uint32_t)n;
	if (env_u64("DIAL9_SHUTDOWN_TIMEOUT_MS", 0, 3600000, &n))
		c->shutdown_timeout_ms = (uint32_t)n;
}

int dial9_config_from_env(struct dial9_config *c)
{
	static const char *const io[] = { "auto", "io_uring", "pwrite" };
	static const char *const clk[] = { "auto", "tsc", "clock_gettime" };
	static const char *const dio[] = { "auto", "off" };
	const char *s;
	uint64_t v;
	int enabled = 0;

	if ((s = getenv("DIAL9_ENABLED"))) {
		enabled = parse_bool(s);
		if (enabled < 0) {
			d9_log("DIAL9_ENABLED=\"%s\" is not a boolean "
			       "(true/false, 1/0, yes/no, on/off); using the "
			       "default (off)", s);
			enabled = 0;
		}
	}
	if ((s = getenv("DIAL9_TRACE_DIR"))) {
		if (*s)
			c->trace_dir = s;
		else
			d9_log("DIAL9_TRACE_DIR is empty; using the default");
	}
	if ((s = getenv("DIAL9_TRACE_MODE"))) {
		char *end;
		unsigned long m = strtoul(s, &end, 8);

		if (*s && !*end && (m == 0600 || m == 0640))
			c->trace_mode = (uint32_t)m;
		else
			d9_log("DIAL9_TRACE_MODE=\"%s\" is neither 0600 nor 0640; "
			       "using the default (0600)", s);
	}
	if ((s = getenv("DIAL9_SERVICE_NAME")) && *s)
		c->service_name = s;
	if ((s = getenv("DIAL9_HOST_NAME")) && *s)
		c->host_name = s;
	if (env_u64("DIAL9_ROTATION_SECS", 1, 86400 * 365, &v))
		c->rotation_secs = (uint32_t)v;
	if (env_u64("DIAL9_MAX_DISK_USAGE_MB", 1, 1ull << 40, &v))
		c->max_disk_bytes = v * MIB;
	if (env_u64("DIAL9_MAX_FILE_SIZE_MB", 1, 1ull << 40, &v))
		c->max_file_bytes = v * MIB;
	if (env_u64("DIAL9_BUFFER_KB", 4, 1024 * 1024, &v))
		c->buffer_bytes = (uint32_t)(v * 1024);
	if (env_u64("DIAL9_FLUSH_INTERVAL_MS", 1, 60000, &v))
		c->flush_interval_ms = (uint32_t)v;
	if (env_u64("DIAL9_COLLECTOR_BATCHES", 1, 1u << 20, &v))
		c->collector_batches = (uint32_t)v;
	if ((s = getenv("DIAL9_SCHED_ENABLED"))) {
		int on = parse_bool(s);

		if (on < 0)
			d9_log("DIAL9_SCHED_ENABLED=\"%s\" is not a boolean; "
			       "using the default (on)", s);
		else
			c->sched = on ? DIAL9_SCHED_AUTO : DIAL9_SCHED_OFF;
	}
	if ((s = getenv("DIAL9_SCHED_STACKS"))) {
		int on = parse_bool(s);

		if (on < 0)
			d9_log("DIAL9_SCHED_STACKS=\"%s\" is not a boolean; "
			       "using the default (off)", s);
		else if (on)
			c->sched_flags |= DIAL9_SCHED_STACKS;
		else
			c->sched_flags &= ~DIAL9_SCHED_STACKS;
	}
	if ((s = getenv("DIAL9_SYMBOLS"))) {
		int on = parse_bool(s);

		if (on < 0)
			d9_log("DIAL9_SYMBOLS=\"%s\" is not a boolean; "
			       "using the default (on with DIAL9_SCHED_STACKS)",
			       s);
		else
			c->symbols = on ? DIAL9_SYMBOLS_ON : DIAL9_SYMBOLS_OFF;
	}
	if (env_u64("DIAL9_SYMBOLS_MAX_FRAMES", 1, 1u << 24, &v))
		c->symbols_max_frames = (uint32_t)v;
	if ((s = getenv("DIAL9_SCHED_OCCUPANTS"))) {
		int on = parse_bool(s);

		if (on < 0)
			d9_log("DIAL9_SCHED_OCCUPANTS=\"%s\" is not a boolean; "
			       "using the default (on)", s);
		else if (on)
			c->sched_flags &= ~DIAL9_SCHED_NO_OCCUPANTS;
		else
			c->sched_flags |= DIAL9_SCHED_NO_OCCUPANTS;
	}
	if (env_u64("DIAL9_FLUSH_NICE", 0, 19, &v))
		c->flush_nice = (int32_t)v;
	if (env_u64("DIAL9_SCHED_READER_PRIO", 0, 99, &v))
		c->sched_reader_prio = (uint32_t)v;
	if (env_u64("DIAL9_CPU_SAMPLE_HZ", 0, DIAL9_SAMPLE_MAX_HZ, &v))
		c->cpu_sample_hz = (uint32_t)v;
	if (env_u64("DIAL9_SCHED_RING_KB", 4, 64 * 1024, &v)) {
		if (v & (v - 1))
			d9_log("DIAL9_SCHED_RING_KB=%llu is not a power of two; "
			       "using the default", (unsigned long long)v);
		else
			c->sched_ring_bytes = (uint32_t)(v * 1024);
	}
	pipeline_from_env(c);
	env_choice("DIAL9_IO_BACKEND", io, 3, &c->io_backend);
	env_choice("DIAL9_CLOCK", clk, 3, &c->clock);
	env_choice("DIAL9_DIRECT_IO", dio, 2, &c->direct_io);
	if (c->max_file_bytes && c->max_file_bytes > c->max_disk_bytes) {
		d9_log("DIAL9_MAX_FILE_SIZE_MB is above DIAL9_MAX_DISK_USAGE_MB; "
		       "using the default");
		c->max_file_bytes = 0;
	}
	return enabled;
}

/* Copy a caller's config (maybe from an older, smaller struct). */
int d9_config_check(const struct dial9_config *in, struct dial9_config *c)
{
	dial9_config_init(c);
	if (!in || in->size < sizeof(uint32_t))
		return -EINVAL;
	memcpy(c, in, in->size < sizeof(*c) ? in->size : sizeof(*c));
	c->size = sizeof(*c);
	if (!c->trace_dir || !*c->trace_dir || c->rotation_secs < 1 ||
	    c->max_disk_bytes < 1 || c->buffer_bytes < 4096 ||
	    c->buffer_bytes > (1u << 30) || c->flush_interval_ms < 1 ||
	    c->flush_interval_ms > 60000 || c->flush_nice < 0 ||
	    c->flush_nice > 19 || c->sched_reader_prio > 99 ||
	    c->cpu_sample_hz > DIAL9_SAMPLE_MAX_HZ ||
	    c->collector_batches < 1 ||
	    c->collector_batches > (1u << 20) || c->io_backend > DIAL9_IO_PWRITE ||
	    c->clock > DIAL9_CLOCK_GETTIME || c->sched > DIAL9_SCHED_SCHEDSTAT ||
	    c->sched_flags & ~(DIAL9_SCHED_NO_SELF | DIAL9_SCHED_CHILDREN |
			       DIAL9_SCHED_SYSTEM_WIDE | DIAL9_SCHED_STACKS |
			       DIAL9_SCHED_NO_OCCUPANTS) ||
	    (c->sched_npids && !c->sched_pids) || c->sched_npids > 1024 ||
	    c->upload_concurrency > 64 || c->shutdown_timeout_ms > 3600000 ||
	    c->mode > DIAL9_MODE_TRIGGER || c->dump_debounce_ms > 3600000 ||
	    c->trigger_signal < 0 || c->trigger_signal > SIGRTMAX ||
	    c->trigger_signal == SIGKILL || c->trigger_signal == SIGSTOP ||
	    c->symbols > DIAL9_SYMBOLS_ON || c->symbols_max_frames > (1u << 24))
		return -EINVAL;
	if (c->trace_mode != 0600 && c->trace_mode != 0640)
		return -EINVAL;
	if (c->direct_io > DIAL9_DIRECT_IO_OFF)
		return -EINVAL;
	/* a dump needs somewhere to go; segments in memory too */
	if (c->mode == DIAL9_MODE_TRIGGER && !c->pipeline)
		return -EINVAL;
	if (c->storage > DIAL9_STORAGE_MEMORY ||
	    (c->storage == DIAL9_STORAGE_MEMORY &&
	     !(c->pipeline & (DIAL9_PIPE_S3 | DIAL9_PIPE_WRITE_BACK))))
		return -EINVAL;
	if (!c->max_file_bytes) {
		c->max_file_bytes = c->max_disk_bytes / 4;
		if (c->max_file_bytes > 100 * MIB)
			c->max_file_bytes = 100 * MIB;
		if (c->max_file_bytes < 4096)
			c->max_file_bytes = 4096;
	}
	if (c->max_file_bytes > c->max_disk_bytes)
		return -EINVAL;
	if (!c->service_name || !*c->service_name)
		c->service_name = program_invocation_short_name;
	return 0;
}
