// SPDX-License-Identifier: MIT
/*
 * fleet_read.c - the rows of segment summaries below a directory: each
 * *.json.gz decompressed (zlib), each line a flat JSON object of which
 * the columns of struct fleet_row are kept.
 */
#include <errno.h>
#include <stddef.h>
#include <ftw.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

#include "cli.h"
#include "fleet.h"
#include "pipeline/pipeline.h"

/* ---- a flat JSON object: strings, numbers, literals, arrays of them ---- */

struct cur {
	const char *p, *end;
};

static void ws(struct cur *c)
{
	while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' ||
				 *c->p == '\r' || *c->p == '\n'))
		c->p++;
}

static int hexval(char ch)
{
	return ch >= '0' && ch <= '9' ? ch - '0' :
	       ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 :
	       ch >= 'A' && ch <= 'F' ? ch - 'A' + 10 : -1;
}

/* The 4 hex digits after c->p (at the 'u' of \uXXXX) into *@u. */
static int hex4(const struct cur *c, unsigned int *u)
{
	if (c->end - c->p < 5)
		return -1;
	*u = 0;
	for (int i = 1; i <= 4; i++) {
		int h = hexval(c->p[i]);

		if (h < 0)
			return -1;
		*u = *u * 16 + (unsigned int)h;
	}
	return 0;
}

/*
 * The code point of the \u escape at c->p (its 'u'), left on its last
 * digit: a surrogate pair (\uD83D\uDE00) is one character, a lone
 * surrogate U+FFFD, so that what comes out is valid UTF-8.
 */
static int u4(struct cur *c, unsigned int *u)
{
	unsigned int lo;

	if (hex4(c, u))
		return -1;
	c->p += 4;
	if (*u < 0xd800 || *u > 0xdfff)
		return 0;
	if (*u < 0xdc00 && c->end - c->p > 2 && c->p[1] == '\\' &&
	    c->p[2] == 'u') {
		struct cur n = { c->p + 2, c->end };

		if (!hex4(&n, &lo) && lo >= 0xdc00 && lo <= 0xdfff) {
			*u = 0x10000 + ((*u - 0xd800) << 10) + (lo - 0xdc00);
			c->p += 6;
			return 0;
		}
	}
	*u = 0xfffd;
	return 0;
}

/*
 * A string into out[0..len) (cut to fit between characters, UTF-8 from
 * \u escapes).
 */
static int str(struct cur *c, char *out, size_t len)
{
	bool full = false;
	size_t o = 0;

	if (c->p >= c->end || *c->p != '"')
		return -1;
	for (c->p++; c->p < c->end && *c->p != '"'; c->p++) {
		unsigned int u = (unsigned char)*c->p;
		bool esc_u = false;
		char b[4];
		size_t nb = 1;

		if (u == '\\') {
			if (++c->p >= c->end)
				return -1;
			switch (*c->p) {
			case 'n': u = '\n'; break;
			case 't': u = '\t'; break;
			case 'r': u = '\r'; break;
			case 'b': u = '\b'; break;
			case 'f': u = '\f'; break;
			case 'u':
				if (u4(c, &u))
					return -1;
				esc_u = true;
				break;
			default: u = (unsigned char)*c->p;
			}
		}
		if (u < 0x80 || !esc_u) { /* raw UTF-8 bytes stay as they are */
			b[0] = (char)u;
		} else if (u < 0x800) {
			b[0] = (char)(0xc0 | u >> 6);
			b[1] = (char)(0x80 | (u & 0x3f));
			nb = 2;
		} else if (u < 0x10000) {
			b[0] = (char)(0xe0 | u >> 12);
			b[1] = (char)(0x80 | ((u >> 6) & 0x3f));
			b[2] = (char)(0x80 | (u & 0x3f));
			nb = 3;
		} else {
			b[0] = (char)(0xf0 | u >> 18);
			b[1] = (char)(0x80 | ((u >> 12) & 0x3f));
			b[2] = (char)(0x80 | ((u >> 6) & 0x3f));
			b[3] = (char)(0x80 | (u & 0x3f));
			nb = 4;
		}
		if (out && !full && o + nb < len) {
			memcpy(out + o, b, nb);
			o += nb;
		} else {
			full = true;	/* no later, shorter character */
		}
	}
	if (c->p >= c->end)
		return -1;
	c->p++;
	if (out && len) {	/* and not inside a raw character */
		out[o] = 0;
		out[d9_utf8_cut(out, o)] = 0;
	}
	return 0;
}

/* Skip a value that is not a string: number, literal, array. */
static int skip(struct cur *c)
{
	int depth = 0;

	while (c->p < c->end) {
		char ch = *c->p;

		if (ch == '"') {
			if (str(c, NULL, 0))
				return -1;
			continue;
		}
		if (ch == '[')
			depth++;
		else if (ch == ']' && depth-- == 0)
			return -1;
		else if ((ch == ',' || ch == '}') && !depth)
			return 0;
		c->p++;
	}
	return -1;
}

/* ---- interned strings: one copy of each, for every row that has it ---- */

struct fleet_strs {
	char **v;	/* open addressing, a power of two */
	size_t cap, n;
};

static uint64_t hash_str(const char *s)
{
	uint64_t h = 1469598103934665603ull;

	while (*s)
		h = (h ^ (unsigned char)*s++) * 1099511628211ull;
	return h;
}

/* The one copy of @s; NULL: out of memory. */
static const char *intern(struct fleet_rows *rows, const char *s)
{
	struct fleet_strs *t = rows->strs;
	size_t i;

	if (!t && !(t = rows->strs = calloc(1, sizeof(*t))))
		return NULL;
	if (2 * (t->n + 1) > t->cap) {
		size_t nc = t->cap ? t->cap * 2 : 1024;
		char **nv = calloc(nc, sizeof(*nv));

		if (!nv)
			return NULL;
		for (size_t j = 0; j < t->cap; j++) {
			if (!t->v[j])
				continue;
			for (i = hash_str(t->v[j]) & (nc - 1); nv[i]; i = (i + 1) & (nc - 1))
				;
			nv[i] = t->v[j];
		}
		free(t->v);
		t->v = nv;
		t->cap = nc;
	}
	for (i = hash_str(s) & (t->cap - 1); t->v[i]; i = (i + 1) & (t->cap - 1))
		if (!strcmp(t->v[i], s))
			return t->v[i];
	t->v[i] = strdup(s);
	if (!t->v[i])
		return NULL;
	t->n++;
	return t->v[i];
}

/* ---- a row ---- */

/* What a line holds, before its strings are interned. */
struct line {
	struct fleet_row r;
	char host[256], service[256], boot_id[64], thread[64], segment[1024];
	unsigned int seen;	/* KEY_* */
};

struct col {
	const char *name;
	size_t off, len;	/* len: a string of that size; 0: a number */
	unsigned int key;	/* a column every row must have: KEY_* */
};

enum {
	KEY_HOST = 1u << 0, KEY_SERVICE = 1u << 1, KEY_BOOT = 1u << 2,
	KEY_TID = 1u << 3, KEY_INDEX = 1u << 4, KEY_START = 1u << 5,
	KEY_END = 1u << 6,
	KEYS = (1u << 7) - 1,
};

#define S(f, k) { #f, offsetof(struct line, f), sizeof(((struct line *)0)->f), k }
#define N(f, k) { #f, offsetof(struct line, r.f), 0, k }
static const struct col cols[] = {
	S(host, KEY_HOST), { "service_name", offsetof(struct line, service),
			     sizeof(((struct line *)0)->service), KEY_SERVICE },
	S(boot_id, KEY_BOOT), S(thread, 0), S(segment, 0), N(pid, 0),
	N(tid, KEY_TID), N(segment_index, KEY_INDEX),
	N(window_start_ns, KEY_START), N(window_end_ns, KEY_END),
	N(switches, 0), N(runq_total_ns, 0), N(waits, 0),
	N(unknown_delays, 0), N(delay_count, 0), N(delay_sum_ns, 0),
	N(delay_max_ns, 0), N(delay_p50_ns, 0), N(delay_p99_ns, 0),
	N(delay_max_at_ns, 0), N(delay_max_at_mono_ns, 0), N(lost_sched, 0),
	N(lost_app, 0),
};

/* 0, -1 if not a flat JSON object, -2 if a key column is missing. */
static int parse_row(const char *p, const char *end, struct line *l)
{
	struct cur c = { p, end };

	memset(l, 0, sizeof(*l));
	ws(&c);
	if (c.p >= c.end || *c.p++ != '{')
		return -1;
	for (;;) {
		char key[64];
		const struct col *k = NULL;

		ws(&c);
		if (c.p < c.end && *c.p == '}')
			return l->seen == KEYS ? 0 : -2;
		if (str(&c, key, sizeof(key)))
			return -1;
		ws(&c);
		if (c.p >= c.end || *c.p++ != ':')
			return -1;
		ws(&c);
		for (size_t i = 0; i < sizeof(cols) / sizeof(cols[0]); i++)
			if (!strcmp(cols[i].name, key))
				k = &cols[i];
		if (k && k->len) {
			if (*c.p == '"') {
				if (str(&c, (char *)l + k->off, k->len))
					return -1;
				l->seen |= k->key;
			} else if (skip(&c)) {
				return -1;
			}
		} else if (k && c.p < c.end && *c.p >= '0' && *c.p <= '9') {
			char *e;

			*(uint64_t *)(void *)((char *)l + k->off) =
				strtoull(c.p, &e, 10);
			c.p = e;
			l->seen |= k->key;
		} else if (c.p < c.end && *c.p == '"' ? str(&c, NULL, 0) :
			   skip(&c)) {
			return -1;
		}
		ws(&c);
		if (c.p < c.end && *c.p == ',') {
			c.p++;
			continue;
		}
		if (c.p < c.end && *c.p == '}')
			return l->seen == KEYS ? 0 : -2;
		return -1;
	}
}

/* ---- files ---- */

/*
 * The decompressed bytes of @path, NUL-terminated, at most
 * cli_inflate_max() of them (the cap of LZ4 segments): -EFBIG past it,
 * -EBADMSG if it is not gzip or cut short.
 */
static int gunzip_file(const char *path, char **out, size_t *len)
{
	gzFile g = gzopen(path, "rb");
	size_t max = cli_inflate_max(), cap = 1 << 16, n = 0;
	char *buf = malloc(cap);
	int got, ret = 0;

	if (!g || !buf) {
		if (g)
			gzclose(g);
		free(buf);
		return g ? -ENOMEM : -errno;
	}
	while ((got = gzread(g, buf + n, (unsigned int)(cap - n - 1))) > 0) {
		n += (size_t)got;
		if (n > max) {
			ret = -EFBIG;
			break;
		}
		if (cap - n < 2) {
			size_t ncap = cap * 2 < max + 2 ? cap * 2 : max + 2;
			char *nb = realloc(buf, ncap);

			if (!nb) {
				ret = -ENOMEM;
				break;
			}
			buf = nb;
			cap = ncap;
		}
	}
	/* closed whatever gzread() said: a corrupt stream leaked it */
	if ((gzclose(g) != Z_OK || got < 0) && !ret)
		ret = -EBADMSG;
	if (ret) {
		free(buf);
		return ret;
	}
	buf[n] = 0;
	*out = buf;
	*len = n;
	return 0;
}

static bool keep(const struct fleet_row *r, const struct fleet_filter *f)
{
	if (f->since && r->window_end_ns < (uint64_t)f->since * 1000000000ull)
		return false;
	if (f->until && r->window_start_ns >= (uint64_t)f->until * 1000000000ull)
		return false;
	if (f->service && strcmp(r->service, f->service))
		return false;
	if (f->host && strcmp(r->host, f->host))
		return false;
	return true;
}

static int read_file(const char *path, const struct fleet_filter *f,
		     struct fleet_rows *rows)
{
	size_t len = 0, max = f->max_rows ? f->max_rows : FLEET_MAX_ROWS_DEFAULT;
	char *buf = NULL, *p, *nl;
	const char *file = intern(rows, path);
	struct line *l = malloc(sizeof(*l));
	int ret = file && l ? gunzip_file(path, &buf, &len) : -ENOMEM;

	if (ret) {
		if (ret == -EFBIG)
			fprintf(stderr, "dial9 fleet: %s: decompresses to more than %zu MiB (DIAL9_INFLATE_MAX_MB)\n",
				path, cli_inflate_max() >> 20);
		else
			fprintf(stderr, "dial9 fleet: %s: %s\n", path,
				ret == -EBADMSG ? "not a gzip file, or truncated" :
				strerror(-ret));
		free(l);
		if (ret != -ENOMEM)
			rows->bad++;
		return ret == -ENOMEM ? ret : 0;
	}
	rows->files++;
	for (p = buf; p < buf + len; p = nl + 1) {
		struct fleet_row *r = &l->r;
		int bad;

		nl = memchr(p, '\n', (size_t)(buf + len - p));
		if (!nl)
			nl = buf + len;
		if (nl == p)
			continue;
		bad = parse_row(p, nl, l);
		if (bad) {
			rows->bad++;
			rows->incomplete += bad == -2;
			continue;
		}
		r->host = l->host;
		r->service = l->service;
		if (!keep(r, f))
			continue;
		if (rows->n == max) {
			fprintf(stderr, "dial9 fleet: more than %zu rows (threads times segments) in the window; narrow it with --since/--until, --service or --host, or raise --max-rows\n",
				max);
			ret = -E2BIG;
			break;
		}
		r->host = intern(rows, l->host);
		r->service = intern(rows, l->service);
		r->boot_id = intern(rows, l->boot_id);
		r->thread = intern(rows, l->thread);
		r->segment = intern(rows, l->segment);
		r->file = file;
		if (!r->host || !r->service || !r->boot_id || !r->thread ||
		    !r->segment || cli_grow((void **)&rows->v, &rows->cap,
					    rows->n + 1, sizeof(*r))) {
			ret = -ENOMEM;
			break;
		}
		rows->v[rows->n++] = *r;
	}
	free(buf);
	free(l);
	return ret;
}

static char **found;
static size_t nfound, capfound;

static int visit(const char *path, const struct stat *st, int type,
		 struct FTW *ftw)
{
	size_t n = strlen(path), el = strlen(D9_SUMMARY_EXT);
	char *dup;

	(void)ftw;
	/* a FIFO would block gzopen() for good */
	if (type != FTW_F || !S_ISREG(st->st_mode) || n < el || strcmp(path + n - el, D9_SUMMARY_EXT) ||
	    strstr(path, "/."))	/* a write-back's temp file */
		return 0;
	dup = strdup(path);
	if (!dup || cli_grow((void **)&found, &capfound, nfound + 1,
			     sizeof(*found))) {
		free(dup);
		return -1;
	}
	found[nfound++] = dup;
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int fleet_read_dir(const char *dir, const struct fleet_filter *f,
		   struct fleet_rows *rows)
{
	char sub[4096];
	struct stat st;
	int ret = 0;

	snprintf(sub, sizeof(sub), "%s/" D9_SUMMARY_DIR, dir);
	if (stat(sub, &st) || !S_ISDIR(st.st_mode))
		snprintf(sub, sizeof(sub), "%s", dir);
	if (stat(sub, &st)) {
		fprintf(stderr, "dial9 fleet: %s: %s\n", sub, strerror(errno));
		return -errno;
	}
	nfound = 0;
	if (nftw(sub, visit, 32, FTW_PHYS)) {
		fprintf(stderr, "dial9 fleet: %s: cannot list it\n", sub);
		ret = -ENOMEM;
	}
	d9_sort(found, nfound, sizeof(*found), cmp_str);
	for (size_t i = 0; !ret && i < nfound; i++) {
		cli_progress("fleet: reading summaries", (int)i, (int)nfound,
			     found[i]);
		ret = read_file(found[i], f, rows);
	}
	cli_progress_done();
	for (size_t i = 0; i < nfound; i++)
		free(found[i]);
	free(found);
	found = NULL;
	nfound = capfound = 0;
	if (ret == -ENOMEM)
		fprintf(stderr, "dial9 fleet: out of memory\n");
	if (rows->incomplete)
		fprintf(stderr, "dial9 fleet: %zu lines without a key column (host, service_name, boot_id, tid, segment_index, window_start_ns, window_end_ns) left out\n",
			rows->incomplete);
	return ret;
}

void fleet_rows_free(struct fleet_rows *rows)
{
	if (rows->strs) {
		for (size_t i = 0; i < rows->strs->cap; i++)
			free(rows->strs->v[i]);
		free(rows->strs->v);
		free(rows->strs);
	}
	free(rows->v);
	memset(rows, 0, sizeof(*rows));
}
