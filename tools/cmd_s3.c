// SPDX-License-Identifier: MIT
/*
 * cmd_s3.c - dial9 ls and dial9 fetch: the segments libdial9 uploaded to
 * S3, selected by the Hive partition keys of their object keys
 *
 *   {prefix}/version=1/date=YYYY-MM-DD/service={svc}/time=HHMM/
 *            instance={host}/boot={boot_id}/{epoch_secs}-{index}.bin[.lz4]
 *
 * and with --summaries their summaries, under the same partitions below
 * {prefix}/summary/ ({epoch_secs}-{index}.json.gz); the layout is the
 * library's (lib/pipeline/pipeline.h: D9_S3_P_*, d9_s3_hive_escape).
 *
 * ListObjectsV2 pages (continuation tokens) and GetObject through libcurl,
 * signed with its AWS SigV4; credentials from the AWS environment.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "pipeline/pipeline.h"
#include "when.h"

#if DIAL9_S3
#include <curl/curl.h>

#define EMPTY_SHA "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

struct s3 {
	const char *endpoint; /* path-style, or NULL: AWS virtual-hosted */
	const char *region;
	char *bucket, *prefix;
	const char *ak, *sk, *token;
	char sigv4[128];
};

struct obj {
	char *key;
	unsigned long long size;
	long long epoch;
};

struct buf {
	char *p;
	size_t n;
};

static size_t collect(char *p, size_t size, size_t n, void *arg)
{
	struct buf *b = arg;
	char *np = realloc(b->p, b->n + size * n + 1);

	if (!np)
		return 0;
	b->p = np;
	memcpy(b->p + b->n, p, size * n);
	b->n += size * n;
	b->p[b->n] = 0;
	return size * n;
}

/* RFC 3986 unreserved characters stay, the rest is %XX (as SigV4 wants):
 * the library's d9_s3_uri_encode() into a malloc'd string. */
static char *uri_encode(const char *s, bool keep_slash)
{
	size_t len = strlen(s) * 3 + 1;
	char *out = malloc(len);

	if (out && d9_s3_uri_encode(s, keep_slash, out, len)) {
		free(out);
		out = NULL;
	}
	return out;
}

/* Hive's escaping of a partition value, as libdial9 writes keys. */
static char *hive_escape(const char *s)
{
	size_t len = strlen(s) * 3 + 1;
	char *out = malloc(len);

	if (out && d9_s3_hive_escape(s, out, len)) {
		free(out);
		out = NULL;
	}
	return out;
}

/* XML text (entities resolved) between <tag> and </tag> after *pos. */
static char *xml_text(const char *p, const char *end, const char *tag)
{
	char open[64], close[64], *out, *o;
	const char *a, *b;

	snprintf(open, sizeof(open), "<%s>", tag);
	snprintf(close, sizeof(close), "</%s>", tag);
	a = strstr(p, open);
	if (!a || (end && a >= end))
		return NULL;
	a += strlen(open);
	b = strstr(a, close);
	if (!b)
		return NULL;
	out = o = malloc((size_t)(b - a) + 1);
	if (!out)
		return NULL;
	while (a < b) {
		static const struct {
			const char *ent;
			char c;
		} ents[] = { { "&amp;", '&' }, { "&lt;", '<' }, { "&gt;", '>' },
			     { "&quot;", '"' }, { "&apos;", '\'' } };
		bool done = false;

		for (size_t i = 0; i < sizeof(ents) / sizeof(ents[0]) && *a == '&'; i++) {
			size_t n = strlen(ents[i].ent);

			if (!strncmp(a, ents[i].ent, n)) {
				*o++ = ents[i].c;
				a += n;
				done = true;
				break;
			}
		}
		if (done)
			continue;
		if (*a == '&' && a[1] == '#') {
			char *e;
			long v = a[2] == 'x' ? strtol(a + 3, &e, 16) : strtol(a + 2, &e, 10);

			if (*e == ';' && v > 0 && v < 128) {
				*o++ = (char)v;
				a = e + 1;
				continue;
			}
		}
		*o++ = *a++;
	}
	*o = 0;
	return out;
}

/* A signed GET of url into body; returns the HTTP status, or -1 with a
 * message when the request itself failed. */
static long s3_get(const struct s3 *s, const char *url, struct buf *body)
{
	CURL *c = curl_easy_init();
	struct curl_slist *h = NULL;
	char tok[2048];
	long status = -1;
	CURLcode rc;

	if (!c)
		return -1;
	h = curl_slist_append(h, "x-amz-content-sha256: " EMPTY_SHA);
	if (s->token) {
		snprintf(tok, sizeof(tok), "x-amz-security-token: %s", s->token);
		h = curl_slist_append(h, tok);
	}
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_AWS_SIGV4, s->sigv4);
	curl_easy_setopt(c, CURLOPT_USERNAME, s->ak);
	curl_easy_setopt(c, CURLOPT_PASSWORD, s->sk);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 10L);
	curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
	curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, 60L);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, body);
	rc = curl_easy_perform(c);
	if (rc == CURLE_OK)
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	else
		fprintf(stderr, "dial9: %s: %s\n", url, curl_easy_strerror(rc));
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
	return status;
}

static void http_error(const char *what, long status, const struct buf *b)
{
	char *code = b->p ? xml_text(b->p, NULL, "Code") : NULL;
	char *msg = b->p ? xml_text(b->p, NULL, "Message") : NULL;

	fprintf(stderr, "dial9: %s: HTTP %ld%s%s%s%s\n", what, status,
		code ? " " : "", code ? code : "", msg ? ": " : "", msg ? msg : "");
	free(code);
	free(msg);
}

struct filter {
	char *service, *host; /* Hive-escaped */
	bool since_set, until_set;
	long long since, until;
	bool summaries; /* the summaries rather than the segments */
};

/* Is the partition c[0..len) name (its "name=") followed by value? */
static bool part_is(const char *c, size_t len, const char *name,
		    const char *value)
{
	size_t nl = strlen(name);

	return len - nl == strlen(value) && !strncmp(c + nl, value, len - nl);
}

/* Does the key (below the prefix) name a segment the filter selects? */
static bool select_key(const char *rel, const struct filter *f, long long *epoch)
{
	const char *const *names = d9_s3_parts;
	const char *c[7], *p = rel;
	size_t len[7];
	unsigned long long index;
	char tail[16];
	int n = 0;

	while (n < 7) {
		const char *e = strchr(p, '/');

		c[n] = p;
		len[n] = e ? (size_t)(e - p) : strlen(p);
		n++;
		if (!e)
			break;
		p = e + 1;
	}
	if (n != 7 || strchr(c[6], '/'))
		return false;
	for (int i = 0; i < 6; i++)
		if (strncmp(c[i], names[i], strlen(names[i])) ||
		    (i == 0 && len[0] != strlen(names[0])))
			return false;
	if (sscanf(c[6], "%lld-%llu%15s", epoch, &index, tail) != 3 ||
	    (f->summaries ? strcmp(tail, D9_SUMMARY_EXT) :
	     strcmp(tail, ".bin") && strcmp(tail, ".bin.lz4")))
		return false;
	if (f->service && !part_is(c[2], len[2], D9_S3_P_SERVICE, f->service))
		return false;
	if (f->host && !part_is(c[4], len[4], D9_S3_P_INSTANCE, f->host))
		return false;
	if (f->since_set && *epoch < f->since)
		return false;
	if (f->until_set && *epoch >= f->until)
		return false;
	return true;
}

static bool progress_on;

static void progress(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void progress(const char *fmt, ...)
{
	va_list ap;

	if (!isatty(2))
		return;
	fprintf(stderr, "\r\033[K");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	progress_on = true;
}

static void progress_end(void)
{
	if (progress_on)
		fprintf(stderr, "\r\033[K");
	progress_on = false;
}

/* Every selected segment under the prefix, in key order. */
static int list(const struct s3 *s, const struct filter *f, unsigned int page,
		struct obj **out, size_t *nout)
{
	char *token = NULL, *base, *eprefix, *estart = NULL, *ebucket;
	char lp[2048], start[2100];
	struct obj *v = NULL;
	size_t n = 0, seen = 0;
	int ret = 0, pages = 0;
	bool more = true;

	snprintf(lp, sizeof(lp), "%s%s%s" D9_S3_P_VERSION "/", s->prefix,
		 *s->prefix ? "/" : "", f->summaries ? D9_SUMMARY_DIR "/" : "");
	eprefix = uri_encode(lp, false);
	ebucket = uri_encode(s->bucket, false);
	if (f->since_set) { /* keys sort by date first: skip earlier days */
		time_t t = (time_t)f->since;
		struct tm tm;

		gmtime_r(&t, &tm);
		snprintf(start, sizeof(start), "%s" D9_S3_P_DATE "%04d-%02d-%02d", lp,
			 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday);
		estart = uri_encode(start, false);
	}
	if (s->endpoint) {
		if (asprintf(&base, "%s/%s", s->endpoint, ebucket) < 0)
			base = NULL;
	} else if (asprintf(&base, "https://%s.s3.%s.amazonaws.com/", s->bucket,
			    s->region) < 0) {
		base = NULL;
	}
	if (!eprefix || !ebucket || !base || (f->since_set && !estart)) {
		ret = -ENOMEM;
		goto out;
	}
	while (more) {
		struct buf body = { 0 };
		char *url, *etok = token ? uri_encode(token, false) : NULL;
		const char *p;
		long status;

		/* query parameters in the order SigV4 canonicalizes them */
		if (asprintf(&url, "%s?%s%s%slist-type=2&max-keys=%u&prefix=%s%s%s",
			     base, etok ? "continuation-token=" : "",
			     etok ? etok : "", etok ? "&" : "", page, eprefix,
			     estart && !etok ? "&start-after=" : "",
			     estart && !etok ? estart : "") < 0) {
			free(etok);
			ret = -ENOMEM;
			break;
		}
		free(etok);
		status = s3_get(s, url, &body);
		free(url);
		if (status != 200) {
			if (status > 0)
				http_error("ListObjectsV2", status, &body);
			free(body.p);
			ret = -EIO;
			break;
		}
		pages++;
		for (p = body.p; p && (p = strstr(p, "<Contents>"));) {
			const char *e = strstr(p, "</Contents>");
			char *key = xml_text(p, e, "Key"), *size = xml_text(p, e, "Size");
			long long epoch;

			seen++;
			/* below the prefix: version=1/date=.../{epoch}-{index}.bin */
			if (key && !strncmp(key, lp, strlen(lp)) &&
			    select_key(key + strlen(lp) - 10, f, &epoch)) {
				struct obj *nv = realloc(v, (n + 1) * sizeof(*v));

				if (!nv) {
					free(key);
					free(size);
					ret = -ENOMEM;
					break;
				}
				v = nv;
				v[n].key = key;
				v[n].size = size ? strtoull(size, NULL, 10) : 0;
				v[n].epoch = epoch;
				n++;
				key = NULL;
			}
			free(key);
			free(size);
			p = e ? e : p + 10;
		}
		{
			char *t = xml_text(body.p, NULL, "IsTruncated");

			more = t && !strcmp(t, "true");
			free(t);
		}
		free(token);
		token = more ? xml_text(body.p, NULL, "NextContinuationToken") : NULL;
		if (more && !token) {
			fprintf(stderr, "dial9: ListObjectsV2: truncated without a "
					"continuation token\n");
			ret = -EPROTO;
			more = false;
		}
		free(body.p);
		progress("listing: %zu objects, %zu selected (page %d)", seen, n, pages);
		if (ret)
			break;
	}
	progress_end();
out:
	free(token);
	free(base);
	free(eprefix);
	free(estart);
	free(ebucket);
	if (ret) {
		for (size_t i = 0; i < n; i++)
			free(v[i].key);
		free(v);
		return ret;
	}
	*out = v;
	*nout = n;
	return 0;
}

static int mkdirs(char *path)
{
	for (char *p = path + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		if (mkdir(path, 0755) && errno != EEXIST) {
			*p = '/';
			return -errno;
		}
		*p = '/';
	}
	if (mkdir(path, 0755) && errno != EEXIST)
		return -errno;
	return 0;
}

/* Download one object to dir/{key below the prefix}: temp file, rename. */
static int fetch_one(const struct s3 *s, struct obj *o, const char *dir,
		     bool *skipped)
{
	size_t pl = strlen(s->prefix);
	const char *rel = !strncmp(o->key, s->prefix, pl) &&
			  (!pl || o->key[pl] == '/') ? o->key + pl + !!pl : o->key;
	char *path = NULL, *tmp = NULL, *ekey = uri_encode(o->key, true), *url = NULL;
	char *ebucket = uri_encode(s->bucket, false), *slash;
	struct buf body = { 0 };
	struct stat st;
	long status;
	FILE *f;
	int ret = 0;

	*skipped = false;
	if (!ekey || !ebucket || asprintf(&path, "%s/%s", dir, rel) < 0 ||
	    asprintf(&tmp, "%s.partial", path) < 0 ||
	    (s->endpoint ? asprintf(&url, "%s/%s/%s", s->endpoint, ebucket, ekey) :
			   asprintf(&url, "https://%s.s3.%s.amazonaws.com/%s",
				    s->bucket, s->region, ekey)) < 0) {
		ret = -ENOMEM;
		goto out;
	}
	if (!stat(path, &st) && (unsigned long long)st.st_size == o->size) {
		*skipped = true; /* fetched before */
		goto out;
	}
	slash = strrchr(path, '/');
	*slash = 0;
	ret = mkdirs(path);
	*slash = '/';
	if (ret) {
		fprintf(stderr, "dial9: %s: %s\n", path, strerror(-ret));
		goto out;
	}
	status = s3_get(s, url, &body);
	if (status != 200) {
		if (status > 0)
			http_error(o->key, status, &body);
		ret = -EIO;
		goto out;
	}
	f = fopen(tmp, "wb");
	if (!f || fwrite(body.p, 1, body.n, f) != body.n || fflush(f) ||
	    fsync(fileno(f))) {
		ret = -errno;
		fprintf(stderr, "dial9: %s: %s\n", tmp, strerror(errno));
		if (f)
			fclose(f);
		unlink(tmp);
		goto out;
	}
	fclose(f);
	o->size = body.n;
	if (rename(tmp, path)) {
		ret = -errno;
		fprintf(stderr, "dial9: %s: %s\n", path, strerror(errno));
		unlink(tmp);
	}
out:
	free(body.p);
	free(path);
	free(tmp);
	free(ekey);
	free(ebucket);
	free(url);
	return ret;
}

/* --key: objects named by the caller, of unknown size. */
static int given_keys(const char **keys, size_t n, struct obj **out,
		      size_t *nout)
{
	struct obj *v = calloc(n, sizeof(*v));

	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		v[i].key = strdup(keys[i]);
		v[i].size = ~0ull; /* never "fetched before" */
		if (!v[i].key) {
			while (i--)
				free(v[i].key);
			free(v);
			return -ENOMEM;
		}
	}
	*out = v;
	*nout = n;
	return 0;
}

static void usage(const char *cmd)
{
	fprintf(stderr,
		"usage: dial9 %s s3://BUCKET[/PREFIX] [--service S] [--host H] "
		"[--since T]%s\n"
		"          [--until T] [--summaries] [--endpoint URL] [--region R]\n"
		"          [--page-size N]%s\n"
		"  T: 90s, 30m, 2h, 7d (ago), now, today, yesterday, YYYY-MM-DD[THH:MM[:SS]]\n"
		"     (UTC), @EPOCH\n"
		"  PREFIX defaults to dial9-traces; credentials from AWS_ACCESS_KEY_ID,\n"
		"  AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN; endpoint and region from\n"
		"  DIAL9_S3_ENDPOINT, DIAL9_S3_REGION (else AWS_REGION, us-east-1)\n",
		cmd, strcmp(cmd, "fetch") ? "" : " -o DIR",
		strcmp(cmd, "fetch") ? "" : " [--key KEY]...");
}

static int run(int argc, char **argv, bool fetch)
{
	const char *cmd = fetch ? "fetch" : "ls", *url = NULL, *outdir = NULL;
	const char *service = NULL, *host = NULL, *since = NULL, *until = NULL;
	const char **keys = NULL;
	size_t nkeys = 0;
	struct filter f = { 0 };
	struct s3 s = { 0 };
	unsigned int page = 1000;
	struct obj *v = NULL;
	size_t n = 0;
	int ret, rc = 0;

	s.endpoint = getenv("DIAL9_S3_ENDPOINT");
	s.region = getenv("DIAL9_S3_REGION");
	if (!s.region || !*s.region)
		s.region = getenv("AWS_REGION");
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(cmd);
			free(keys);
			return 0;
		}
		if (!strcmp(a, "--summaries")) {
			f.summaries = true;
			continue;
		}
		if (a[0] != '-') {
			if (url) {
				usage(cmd);
				return 2;
			}
			url = a;
			continue;
		}
		if (!val) {
			fprintf(stderr, "dial9 %s: %s needs a value\n", cmd, a);
			return 2;
		}
		i++;
		if (!strcmp(a, "--service"))
			service = val;
		else if (!strcmp(a, "--host"))
			host = val;
		else if (!strcmp(a, "--since"))
			since = val;
		else if (!strcmp(a, "--until"))
			until = val;
		else if (fetch && !strcmp(a, "--key")) {
			const char **nk = realloc(keys, (nkeys + 1) * sizeof(*nk));

			if (!nk) {
				free(keys);
				return 1;
			}
			keys = nk;
			keys[nkeys++] = val;
		}
		else if (!strcmp(a, "--endpoint"))
			s.endpoint = val;
		else if (!strcmp(a, "--region"))
			s.region = val;
		else if (!strcmp(a, "--page-size") && atoi(val) > 0 && atoi(val) <= 1000)
			page = (unsigned int)atoi(val);
		else if (fetch && !strcmp(a, "-o"))
			outdir = val;
		else {
			fprintf(stderr, "dial9 %s: unknown option %s\n", cmd, a);
			usage(cmd);
			return 2;
		}
	}
	if (!url || strncmp(url, "s3://", 5) || !url[5] || url[5] == '/' ||
	    (fetch && !outdir)) {
		usage(cmd);
		return 2;
	}
	{
		const char *b = url + 5, *sl = strchr(b, '/');

		s.bucket = sl ? strndup(b, (size_t)(sl - b)) : strdup(b);
		s.prefix = strdup(sl ? sl + 1 : "dial9-traces");
	}
	while (s.prefix && *s.prefix && s.prefix[strlen(s.prefix) - 1] == '/')
		s.prefix[strlen(s.prefix) - 1] = 0;
	if (!s.region || !*s.region)
		s.region = "us-east-1";
	if (s.endpoint && !*s.endpoint)
		s.endpoint = NULL;
	s.ak = getenv("AWS_ACCESS_KEY_ID");
	s.sk = getenv("AWS_SECRET_ACCESS_KEY");
	s.token = getenv("AWS_SESSION_TOKEN");
	if (s.token && !*s.token)
		s.token = NULL;
	if (!s.ak || !*s.ak || !s.sk || !*s.sk) {
		fprintf(stderr, "dial9 %s: needs AWS_ACCESS_KEY_ID and "
				"AWS_SECRET_ACCESS_KEY in the environment\n", cmd);
		rc = 1;
		goto out;
	}
	snprintf(s.sigv4, sizeof(s.sigv4), "aws:amz:%s:s3", s.region);
	if (since) {
		if (cli_parse_time(since, &f.since)) {
			fprintf(stderr, "dial9 %s: --since \"%s\": not a time\n", cmd,
				since);
			rc = 2;
			goto out;
		}
		f.since_set = true;
	}
	if (until) {
		if (cli_parse_time(until, &f.until)) {
			fprintf(stderr, "dial9 %s: --until \"%s\": not a time\n", cmd,
				until);
			rc = 2;
			goto out;
		}
		f.until_set = true;
	}
	f.service = service ? hive_escape(service) : NULL;
	f.host = host ? hive_escape(host) : NULL;
	curl_global_init(CURL_GLOBAL_DEFAULT);
	if (nkeys)	/* exactly these (dial9 fleet names them) */
		ret = given_keys(keys, nkeys, &v, &n);
	else
		ret = list(&s, &f, page, &v, &n);
	if (ret) {
		rc = 1;
		goto out_curl;
	}
	if (!fetch) {
		unsigned long long total = 0;

		for (size_t i = 0; i < n; i++) {
			time_t t = (time_t)v[i].epoch;
			struct tm tm;

			gmtime_r(&t, &tm);
			printf("%04d-%02d-%02dT%02d:%02d:%02dZ %10llu  %s\n",
			       tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
			       tm.tm_hour, tm.tm_min, tm.tm_sec, v[i].size, v[i].key);
			total += v[i].size;
		}
		if (isatty(2))
			fprintf(stderr, "%zu %s, %llu bytes\n", n,
				f.summaries ? "summaries" : "segments", total);
	} else {
		unsigned long long bytes = 0;
		size_t got = 0, skipped = 0;

		for (size_t i = 0; i < n; i++) {
			bool skip;

			progress("fetch: %zu/%zu %s", i + 1, n, v[i].key);
			if (fetch_one(&s, &v[i], outdir, &skip)) {
				rc = 1;
				continue;
			}
			if (skip) {
				skipped++;
			} else {
				got++;
				bytes += v[i].size;
			}
		}
		progress_end();
		fprintf(stderr, "dial9 fetch: %zu %s (%llu bytes) into %s%s",
			got, f.summaries ? "summaries" : "segments", bytes,
			outdir, skipped ? "" : "\n");
		if (skipped)
			fprintf(stderr, ", %zu already there\n", skipped);
		if (rc)
			fprintf(stderr, "dial9 fetch: some segments could not be "
					"fetched\n");
	}
out_curl:
	for (size_t i = 0; i < n; i++)
		free(v[i].key);
	free(v);
	curl_global_cleanup();
out:
	free(keys);
	free(f.service);
	free(f.host);
	free(s.bucket);
	free(s.prefix);
	return rc;
}
#else
/* Built with make DIAL9_S3=0: no libcurl, so nothing to talk to S3 with. */
static int run(int argc, char **argv, bool fetch)
{
	(void)argc;
	(void)argv;
	fprintf(stderr,
		"dial9 %s: this dial9 was built without S3 support "
		"(make DIAL9_S3=0); build it with DIAL9_S3=1 (the default) "
		"to list or fetch uploaded segments\n", fetch ? "fetch" : "ls");
	return 1;
}
#endif /* DIAL9_S3 */

int cmd_ls(int argc, char **argv)
{
	return run(argc, argv, false);
}

int cmd_fetch(int argc, char **argv)
{
	return run(argc, argv, true);
}
