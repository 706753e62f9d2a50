// SPDX-License-Identifier: MIT
/*
 * s3.c - what the S3 step decides without a network: object keys
 * (Hive-partitioned, so Athena, Trino or Spark query a fleet's traces in
 * place), URI encoding as SigV4 wants it, the payload hash, and which
 * failures are worth a retry. The transfers are in worker.c. Summaries
 * (summary.h) take the same key below {prefix}/summary/.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "pipeline/pipeline.h"

#if DIAL9_S3
#include <curl/curl.h>
#include <openssl/evp.h>
#endif

const char *const d9_s3_parts[D9_S3_NPARTS] = {
	D9_S3_P_VERSION, D9_S3_P_DATE, D9_S3_P_SERVICE, D9_S3_P_TIME,
	D9_S3_P_INSTANCE, D9_S3_P_BOOT,
};

int d9_s3_hive_escape(const char *s, char *buf, size_t len)
{
	static const char special[] = "\"#%'*/:=?\\{}[]^";
	size_t o = 0;

	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		bool esc = c < 0x20 || c == 0x7f || strchr(special, c);

		if (o + (esc ? 3 : 1) >= len)
			return -ENAMETOOLONG;
		if (esc)
			o += (size_t)snprintf(buf + o, len - o, "%%%02X", c);
		else
			buf[o++] = (char)c;
	}
	buf[o] = 0;
	return 0;
}

int d9_s3_key(const struct d9_s3_target *t, char *buf, size_t len)
{
	char svc[256], host[256], boot[96];
	time_t secs = (time_t)(t->start_real_ns / 1000000000ull);
	struct tm tm;
	int n;

	if (d9_s3_hive_escape(t->service, svc, sizeof(svc)) ||
	    d9_s3_hive_escape(t->host, host, sizeof(host)) ||
	    d9_s3_hive_escape(t->boot_id, boot, sizeof(boot)) ||
	    !gmtime_r(&secs, &tm))
		return -ENAMETOOLONG;
	n = snprintf(buf, len,
		     "%s%s" D9_S3_P_VERSION "/" D9_S3_P_DATE "%04d-%02d-%02d/"
		     D9_S3_P_SERVICE "%s/" D9_S3_P_TIME "%02d%02d/"
		     D9_S3_P_INSTANCE "%s/" D9_S3_P_BOOT "%s/%lld-%llu%s",
		     t->prefix, *t->prefix ? "/" : "", tm.tm_year + 1900,
		     tm.tm_mon + 1, tm.tm_mday, svc, tm.tm_hour, tm.tm_min, host,
		     boot, (long long)secs, (unsigned long long)t->index, t->ext);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

int d9_s3_summary_key(const struct d9_s3_target *t, char *buf, size_t len)
{
	struct d9_s3_target s = *t;
	char prefix[512];
	int n = snprintf(prefix, sizeof(prefix), "%s%s" D9_SUMMARY_DIR, t->prefix,
			 *t->prefix ? "/" : "");

	if (n < 0 || (size_t)n >= sizeof(prefix))
		return -ENAMETOOLONG;
	s.prefix = prefix;
	s.ext = D9_SUMMARY_EXT;
	return d9_s3_key(&s, buf, len);
}

int d9_s3_uri_encode(const char *s, bool keep_slash, char *buf, size_t len)
{
	size_t o = 0;

	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		bool plain = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
			     (c >= '0' && c <= '9') || c == '-' || c == '.' ||
			     c == '_' || c == '~' || (keep_slash && c == '/');

		if (o + (plain ? 1 : 3) >= len)
			return -ENAMETOOLONG;
		if (plain)
			buf[o++] = (char)c;
		else
			o += (size_t)snprintf(buf + o, len - o, "%%%02X", c);
	}
	buf[o] = 0;
	return 0;
}

#if DIAL9_S3
enum d9_s3_outcome d9_s3_classify(int curl_result, long status)
{
	switch (curl_result) {
	case CURLE_OK:
		break;
	/* the request can never work as configured */
	case CURLE_UNSUPPORTED_PROTOCOL:
	case CURLE_URL_MALFORMAT:
	case CURLE_NOT_BUILT_IN:
	case CURLE_BAD_FUNCTION_ARGUMENT:
	case CURLE_UNKNOWN_OPTION:
		return D9_S3_TERMINAL;
	/* connection errors, timeouts, resets, TLS hiccups, name lookups */
	default:
		return D9_S3_RETRY;
	}
	if (status >= 200 && status < 300)
		return D9_S3_OK;
	if (status >= 500 || status == 429 || status == 408 || status == 0)
		return D9_S3_RETRY;
	return D9_S3_TERMINAL; /* other 4xx (and 1xx/3xx we did not ask for) */
}

int d9_sha256_hex(const void *in, size_t n, char hex[65])
{
	unsigned char md[32];
	unsigned int mdlen = 0;

	if (!EVP_Digest(in, n, md, &mdlen, EVP_sha256(), NULL) || mdlen != 32)
		return -EIO;
	for (int i = 0; i < 32; i++)
		snprintf(hex + 2 * i, 3, "%02x", md[i]);
	return 0;
}
#endif /* DIAL9_S3 */
