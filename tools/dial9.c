// SPDX-License-Identifier: MIT
/*
 * dial9.c - the dial9 command: one subcommand per file (cmd_*.c),
 * built only on the public library API.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <lz4frame.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "grow.h"

static const struct {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *help;
} cmds[] = {
	{ "dump", cmd_dump, "dump [--sorted] TRACE...  events as JSON lines" },
	{ "fetch", cmd_fetch, "fetch s3://BUCKET[/PREFIX] [--service S] [--host H] [--since T] -o DIR\n"
			      "                                 download uploaded segments (dial9 ls's selection)" },
	{ "export", cmd_export, "export --perfetto [-o FILE] TRACE...\n"
				"                                 Chrome trace JSON for Perfetto UI / chrome://tracing" },
	{ "fleet", cmd_fleet, "fleet (DIR | s3://BUCKET[/PREFIX]) [--since T] [--until T] [--by B]\n"
			      "                                 worst threads, services, hosts by runqueue delay (summaries)" },
	{ "info", cmd_info, "info TRACE...            metadata, counts, time range, losses" },
	{ "ls", cmd_ls, "ls s3://BUCKET[/PREFIX] [--service S] [--host H] [--since T]\n"
			"                                 uploaded segments by their partition keys" },
	{ "record", cmd_record, "record [-o DIR] [--children] (-p PID... | -- CMD [ARGS])\n"
				"                                 scheduling of unmodified processes" },
	{ "report", cmd_report, "report --html [-o FILE] [--top N] TRACE...\n"
				"                                 one self-contained HTML page: timeline, histogram, worst delays" },
	{ "sched", cmd_sched, "sched [--json] [--tid N] [--min-delay US] [--top N] TRACE...\n"
			      "        dial9 sched --live [-p PID]...  runqueue delays as they happen" },
};

static void usage(FILE *out)
{
	fprintf(out, "usage: dial9 COMMAND [ARGS]\n\n"
		     "TRACE is a segment file or a directory searched for them.\n\n");
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		fprintf(out, "  dial9 %s\n", cmds[i].help);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "--version")) {
		printf("dial9 %s%s\n", DIAL9_VERSION_STRING,
		       DIAL9_S3 ? "" : " (without S3)");
		return 0;
	}
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		if (!strcmp(argv[1], cmds[i].name))
			return cmds[i].fn(argc - 1, argv + 1);
	fprintf(stderr, "dial9: unknown command '%s'\n", argv[1]);
	usage(stderr);
	return 2;
}

/* ---- shared helpers ---- */

/* {epoch}-{index}.bin: a segment uploaded to S3 uncompressed. */
static int is_s3_plain(const char *name)
{
	unsigned long long a, b;
	int end = 0;

	return sscanf(name, "%llu-%llu.bin%n", &a, &b, &end) == 2 && end &&
	       !name[end];
}

static int is_segment(const char *name)
{
	size_t n = strlen(name);

	return (n > 6 && !strcmp(name + n - 6, ".dial9")) ||
	       (n > 13 && !strcmp(name + n - 13, ".dial9.active")) ||
	       (n > 10 && !strcmp(name + n - 10, ".dial9.lz4")) ||
	       (n > 8 && !strcmp(name + n - 8, ".bin.lz4")) ||
	       is_s3_plain(name);
}

static int add_path(char ***v, int *n, const char *p)
{
	char **nv = realloc(*v, (size_t)(*n + 1) * sizeof(char *));

	if (!nv)
		return -ENOMEM;
	*v = nv;
	nv[*n] = strdup(p);
	if (!nv[*n])
		return -ENOMEM;
	(*n)++;
	return 0;
}

static int walk(const char *dir, char ***v, int *n, int depth)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int ret = 0;

	if (!d)
		return -errno;
	while (!ret && (de = readdir(d))) {
		char p[4096];
		struct stat st;

		if (de->d_name[0] == '.')
			continue;
		snprintf(p, sizeof(p), "%s/%s", dir, de->d_name);
		if (stat(p, &st))
			continue;
		if (S_ISDIR(st.st_mode) && depth < 8)
			ret = walk(p, v, n, depth + 1);
		else if (S_ISREG(st.st_mode) && is_segment(de->d_name))
			ret = add_path(v, n, p);
	}
	closedir(d);
	return ret;
}

static int cmp_path(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int cli_collect(int argc, char **argv, char ***paths)
{
	char **v = NULL;
	int n = 0;

	for (int i = 0; i < argc; i++) {
		struct stat st;
		int ret, before = n;

		if (stat(argv[i], &st)) {
			fprintf(stderr, "dial9: %s: %s\n", argv[i], strerror(errno));
			cli_free_paths(v, n);
			return -ENOENT;
		}
		ret = S_ISDIR(st.st_mode) ? walk(argv[i], &v, &n, 0) :
					    add_path(&v, &n, argv[i]);
		if (ret) {
			fprintf(stderr, "dial9: %s: %s\n", argv[i], strerror(-ret));
			cli_free_paths(v, n);
			return ret;
		}
		if (S_ISDIR(st.st_mode))
			qsort(v + before, (size_t)(n - before), sizeof(char *),
			      cmp_path);
	}
	*paths = v;
	return n;
}

void cli_free_paths(char **paths, int n)
{
	for (int i = 0; i < n; i++)
		free(paths[i]);
	free(paths);
}

/*
 * An LZ4 frame (or several) decompressed into anonymous memory, shrunk
 * to its length so that cli_unmap()'s munmap() frees it all.
 */
static int lz4_inflate(const uint8_t *in, size_t n, struct cli_file *f)
{
	LZ4F_dctx *dctx;
	LZ4F_frameInfo_t fi;
	size_t cap, len = 0, done = 0, hn = n, r;
	uint8_t *buf;
	int ret = 0;

	if (LZ4F_isError(LZ4F_createDecompressionContext(&dctx, LZ4F_VERSION)))
		return -ENOMEM;
	r = LZ4F_getFrameInfo(dctx, &fi, in, &hn);
	if (LZ4F_isError(r)) {
		LZ4F_freeDecompressionContext(dctx);
		return -EBADMSG;
	}
	done = hn;
	cap = fi.contentSize ? (size_t)fi.contentSize + 4096 : n * 4 + 65536;
	buf = mmap(NULL, cap, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (buf == MAP_FAILED) {
		LZ4F_freeDecompressionContext(dctx);
		return -ENOMEM;
	}
	while (done < n) {
		size_t sn = n - done, dn;

		if (cap - len < 65536) {
			void *nb = mremap(buf, cap, cap * 2, MREMAP_MAYMOVE);

			if (nb == MAP_FAILED) {
				ret = -ENOMEM;
				break;
			}
			buf = nb;
			cap *= 2;
		}
		dn = cap - len;
		r = LZ4F_decompress(dctx, buf + len, &dn, in + done, &sn, NULL);
		if (LZ4F_isError(r)) {
			ret = -EBADMSG;
			break;
		}
		len += dn;
		done += sn;
		if ((!sn && !dn) || (done == n && r)) {
			ret = -ENODATA; /* cut short */
			break;
		}
	}
	LZ4F_freeDecompressionContext(dctx);
	if (ret || !len) {
		munmap(buf, cap);
		return ret;
	}
	if (cap > len) {
		void *nb = mremap(buf, cap, len, 0);

		if (nb != MAP_FAILED)
			buf = nb;
	}
	f->data = buf;
	f->len = len;
	return 0;
}

int cli_grow(void **v, size_t *cap, size_t need, size_t size)
{
	return d9_grow(v, cap, need, size);
}

int cli_map(const char *path, struct cli_file *f)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;

	f->path = (char *)path;
	f->data = NULL;
	f->len = 0;
	if (fd < 0 || fstat(fd, &st)) {
		int ret = -errno;

		fprintf(stderr, "dial9: %s: %s\n", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return ret;
	}
	if (st.st_size > 0) {
		void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE,
			       fd, 0);

		if (m == MAP_FAILED) {
			int ret = -errno;

			fprintf(stderr, "dial9: %s: %s\n", path, strerror(errno));
			close(fd);
			return ret;
		}
		f->data = m;
		f->len = (size_t)st.st_size;
		if (f->len >= 4 && !memcmp(m, "\x04\x22\x4d\x18", 4)) {
			/* an LZ4 segment: read its decompressed bytes */
			int ret = lz4_inflate(m, f->len, f);

			munmap(m, (size_t)st.st_size);
			if (ret) {
				f->data = NULL;
				f->len = 0;
				fprintf(stderr, "dial9: %s: bad LZ4 data: %s\n",
					path, strerror(-ret));
				close(fd);
				return ret;
			}
		}
	}
	close(fd);
	return 0;
}

void cli_unmap(struct cli_file *f)
{
	if (f->data)
		munmap((void *)f->data, f->len);
}

void cli_json_str(FILE *out, const void *s, size_t len)
{
	const uint8_t *p = s;

	fputc('"', out);
	for (size_t i = 0; i < len; i++) {
		uint8_t c = p[i];

		if (c == '"' || c == '\\')
			fprintf(out, "\\%c", c);
		else if (c == '\n')
			fputs("\\n", out);
		else if (c == '\t')
			fputs("\\t", out);
		else if (c < 0x20 || c == 0x7f)
			fprintf(out, "\\u%04x", c);
		else
			fputc(c, out);
	}
	fputc('"', out);
}

void cli_json_value(FILE *out, const struct dial9_value *v)
{
	switch (v->type) {
	case DIAL9_U64:
		fprintf(out, "%llu", (unsigned long long)v->u64);
		break;
	case DIAL9_I64:
		fprintf(out, "%lld", (long long)v->i64);
		break;
	case DIAL9_BOOL:
		fputs(v->b ? "true" : "false", out);
		break;
	case DIAL9_F64:
		if (isfinite(v->f64))
			fprintf(out, "%.17g", v->f64);
		else
			fputs("null", out);
		break;
	case DIAL9_STR:
	case DIAL9_ISTR:
		cli_json_str(out, v->str.ptr, v->str.len);
		break;
	case DIAL9_BYTES: {
		const uint8_t *b = v->str.ptr;

		fputc('"', out);
		for (size_t i = 0; i < v->str.len; i++)
			fprintf(out, "%02x", b[i]);
		fputc('"', out);
		break;
	}
	default:
		fputs("null", out); /* a type from a newer writer */
	}
}

void cli_decode_error(const char *path, int err, uint64_t off)
{
	fprintf(stderr, "dial9: %s: %s at offset %llu\n", path,
		dial9_strerror(err), (unsigned long long)off);
}

/* Progress on stderr for long work, only when stderr is a terminal. */
static bool progress_shown;

void cli_progress(const char *what, int i, int n, const char *path)
{
	if (n < 2 || !isatty(2))
		return;
	fprintf(stderr, "\r\033[K%s: %d/%d %s", what, i + 1, n, path);
	progress_shown = true;
}

void cli_progress_done(void)
{
	if (progress_shown)
		fprintf(stderr, "\r\033[K");
	progress_shown = false;
}

int cli_write_output(const char *cmd, const char *path,
		     int (*fn)(FILE *f, void *arg), void *arg)
{
	bool file = path && strcmp(path, "-");
	FILE *f = stdout;
	int rc = 0;

	if (file) {
		f = fopen(path, "w");
		if (!f) {
			fprintf(stderr, "dial9 %s: %s: %s\n", cmd, path,
				strerror(errno));
			return 1;
		}
	}
	if (fn(f, arg)) {
		fprintf(stderr, "dial9 %s: out of memory\n", cmd);
		rc = 1;
	}
	if (file ? fclose(f) : fflush(f)) {
		fprintf(stderr, "dial9 %s: %s: %s\n", cmd,
			file ? path : "stdout", strerror(errno));
		rc = 1;
	}
	if (rc && file)
		unlink(path);
	return rc;
}
