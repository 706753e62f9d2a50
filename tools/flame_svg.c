// SPDX-License-Identifier: MIT
/*
 * flame_svg.c - folded stacks as an SVG flame graph (`dial9 flame --svg`).
 *
 * The folded stacks become a tree (one node per distinct path from the
 * root, callees in name order, as flame graphs sort them): each node is a
 * box as wide as its share of the whole, its callers below it, the
 * thread's frame ("NAME TID") on the root "all".  Every box carries a
 * <title> (name, value, share) that browsers show on hover; names longer
 * than their box are cut with "..".  Boxes narrower than MIN_W pixels are
 * left out (with their callees) and counted in the subtitle.  The output
 * is well-formed XML whatever the names: &, <, >, quotes escaped, bytes
 * that are not UTF-8 written as U+FFFD.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "common/grow.h"
#include "common/text.h"
#include "flame.h"

#define WIDTH 1200.0
#define PAD 10.0
#define FRAME_H 16
#define TOP 50
#define CHAR_W 7.0		/* of the 12 px monospace font */
#define MIN_W 0.1

struct node {
	const char *name;
	size_t len;
	uint64_t v;
	uint32_t first, next;	/* child and sibling, 0: none */
	uint32_t depth;
};

struct tree {
	struct node *v;
	size_t n, cap;
	uint32_t depth;		/* the deepest */
	size_t hidden;		/* boxes too narrow to draw */
};

static long node_new(struct tree *t, const char *name, size_t len,
		     uint32_t depth)
{
	if (d9_grow((void **)&t->v, &t->cap, t->n + 1, sizeof(*t->v)))
		return -ENOMEM;
	t->v[t->n] = (struct node){ .name = name, .len = len, .depth = depth };
	if (depth > t->depth)
		t->depth = depth;
	return (long)t->n++;
}

/* Node @n's name against @name: as memcmp, a prefix first. */
static int name_cmp(const struct node *n, const char *name, size_t len)
{
	int cmp = memcmp(n->name, name, n->len < len ? n->len : len);

	if (cmp)
		return cmp;
	return n->len < len ? -1 : n->len > len;
}

/* The child @name of node @parent, created in name order if new. */
static long child(struct tree *t, uint32_t parent, const char *name,
		  size_t len)
{
	uint32_t prev = 0, at = t->v[parent].first;
	long c;

	for (; at; prev = at, at = t->v[at].next) {
		int cmp = name_cmp(&t->v[at], name, len);

		if (!cmp)
			return at;
		if (cmp > 0)
			break;
	}
	c = node_new(t, name, len, t->v[parent].depth + 1);
	if (c < 0)
		return c;
	t->v[c].next = at;
	if (prev)
		t->v[prev].next = (uint32_t)c;
	else
		t->v[parent].first = (uint32_t)c;
	return c;
}

static int build(struct tree *t, const struct flame *f)
{
	if (node_new(t, "all", 3, 0) < 0)
		return -ENOMEM;
	for (size_t i = 0; i < f->n; i++) {
		const char *s = f->v[i].key;
		uint32_t at = 0;

		t->v[0].v += f->v[i].v;
		while (*s) {
			const char *e = strchr(s, ';');
			size_t len = e ? (size_t)(e - s) : strlen(s);
			long c = child(t, at, s, len);

			if (c < 0)
				return -ENOMEM;
			at = (uint32_t)c;
			t->v[at].v += f->v[i].v;
			s += len + (e != NULL);
		}
	}
	return 0;
}

/* @len bytes of @s as XML character data or an attribute value. */
static void xml_text(FILE *out, const char *s, size_t len)
{
	const uint8_t *p = (const uint8_t *)s;

	while (len) {
		size_t n = d9_utf8_seq(p, len);

		if (!n) {
			fputs("\xef\xbf\xbd", out);
			n = 1;
		} else if (n > 1) {
			fwrite(p, 1, n, out);
		} else if (*p == '&') {
			fputs("&amp;", out);
		} else if (*p == '<') {
			fputs("&lt;", out);
		} else if (*p == '>') {
			fputs("&gt;", out);
		} else if (*p == '"') {
			fputs("&quot;", out);
		} else if (*p == '\'') {
			fputs("&apos;", out);
		} else if (*p < 0x20 || *p == 0x7f) {
			fputc('_', out);
		} else {
			fputc(*p, out);
		}
		p += n;
		len -= n;
	}
}

/* The bytes of the first @chars characters of @s (of @len bytes). */
static size_t prefix_chars(const char *s, size_t len, size_t chars)
{
	size_t at = 0;

	while (at < len && chars--) {
		size_t n = d9_utf8_seq((const uint8_t *)s + at, len - at);

		at += n ? n : 1;
	}
	return at;
}

static size_t nchars(const char *s, size_t len)
{
	size_t n = 0, at = 0;

	while (at < len) {
		size_t k = d9_utf8_seq((const uint8_t *)s + at, len - at);

		at += k ? k : 1;
		n++;
	}
	return n;
}

/* A warm colour of its own for each name (the same in every graph). */
static void colour(const char *s, size_t len, unsigned int rgb[3])
{
	uint32_t h = 2166136261u;

	for (size_t i = 0; i < len; i++)
		h = (h ^ (uint8_t)s[i]) * 16777619u;
	rgb[0] = 205 + h % 50;
	rgb[1] = (h >> 8) % 230;
	rgb[2] = (h >> 16) % 55;
}

static void value_text(FILE *out, const struct flame *f, uint64_t v)
{
	if (f->on_cpu)
		fprintf(out, "%" PRIu64 " sample%s", v, v == 1 ? "" : "s");
	else
		fprintf(out, "%" PRIu64 ".%03" PRIu64 " ms", v / 1000000,
			v / 1000 % 1000);
}

static void draw(FILE *out, const struct flame *f, struct tree *t,
		 uint32_t at, double x, double scale)
{
	const struct node *n = &t->v[at];
	double w = (double)n->v * scale, cx = x;
	double y = TOP + (double)(t->depth - n->depth) * FRAME_H;
	unsigned int rgb[3];
	size_t room = w > 2 * CHAR_W ? (size_t)((w - 6) / CHAR_W) : 0;

	if (w < MIN_W) {
		t->hidden++;
		return;
	}
	colour(n->name, n->len, rgb);
	fputs("<g class=\"frame\"><title>", out);
	xml_text(out, n->name, n->len);
	fputs(" (", out);
	value_text(out, f, n->v);
	fprintf(out, ", %.2f%%)</title>", t->v[0].v ?
		100.0 * (double)n->v / (double)t->v[0].v : 0.0);
	fprintf(out, "<rect x=\"%.2f\" y=\"%.0f\" width=\"%.2f\" height=\"%d\" "
		"fill=\"rgb(%u,%u,%u)\" rx=\"2\"/>", x, y, w, FRAME_H - 1,
		rgb[0], rgb[1], rgb[2]);
	if (room >= 3) {
		size_t chars = nchars(n->name, n->len);
		size_t len = chars <= room ? n->len :
			     prefix_chars(n->name, n->len, room - 2);

		fprintf(out, "<text x=\"%.2f\" y=\"%.0f\">", x + 3,
			y + FRAME_H - 4);
		xml_text(out, n->name, len);
		fputs(chars <= room ? "</text>" : "..</text>", out);
	}
	fputs("</g>\n", out);
	for (uint32_t c = n->first; c; c = t->v[c].next) {
		draw(out, f, t, c, cx, scale);
		cx += (double)t->v[c].v * scale;
	}
}

int flame_write_svg(FILE *out, void *arg)
{
	const struct flame *f = arg;
	struct tree t = { 0 };
	double scale;
	int h;

	if (build(&t, f)) {
		free(t.v);
		return -ENOMEM;
	}
	h = TOP + (int)(t.depth + 1) * FRAME_H + 30;
	scale = t.v[0].v ? (WIDTH - 2 * PAD) / (double)t.v[0].v : 0;
	fprintf(out, "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n"
		"<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" "
		"width=\"%.0f\" height=\"%d\" viewBox=\"0 0 %.0f %d\">\n"
		"<style>text{font:12px monospace;fill:#000;pointer-events:none}"
		".frame rect:hover{stroke:#000;stroke-width:0.5}"
		"</style>\n<rect width=\"100%%\" height=\"100%%\" fill=\"#f8f4ec\"/>\n"
		"<text x=\"%.0f\" y=\"24\" style=\"font-size:17px\">%s</text>\n",
		WIDTH, h, WIDTH, h, PAD,
		f->on_cpu ? "On-CPU samples" : "Off-CPU time");
	fprintf(out, "<g id=\"frames\">\n");
	draw(out, f, &t, 0, PAD, scale);
	fprintf(out, "</g>\n<text id=\"subtitle\" x=\"%.0f\" y=\"40\">", PAD);
	value_text(out, f, t.v[0].v);
	fprintf(out, " in %zu stacks", f->n);
	if (t.hidden)
		fprintf(out, "; %zu boxes narrower than %.1f px not drawn",
			t.hidden, MIN_W);
	fputs("</text>\n</svg>\n", out);
	free(t.v);
	return 0;
}
