// SPDX-License-Identifier: MIT
/* utf8.c - which bytes are UTF-8, and cutting names between characters. */
#include <string.h>

#include "common/text.h"

static int cont(uint8_t c)
{
	return (c & 0xc0) == 0x80;
}

size_t d9_utf8_seq(const uint8_t *s, size_t len)
{
	uint8_t c, lo = 0x80, hi = 0xbf;
	size_t n;

	if (!len)
		return 0;
	c = s[0];
	if (c < 0x80)
		return 1;
	if (c < 0xc2 || c > 0xf4)
		return 0;	/* a continuation, an overlong lead, past U+10FFFF */
	n = c < 0xe0 ? 2 : c < 0xf0 ? 3 : 4;
	if (c == 0xe0)
		lo = 0xa0;	/* overlong */
	else if (c == 0xed)
		hi = 0x9f;	/* surrogates */
	else if (c == 0xf0)
		lo = 0x90;	/* overlong */
	else if (c == 0xf4)
		hi = 0x8f;	/* past U+10FFFF */
	if (len < n || s[1] < lo || s[1] > hi)
		return 0;
	for (size_t i = 2; i < n; i++)
		if (!cont(s[i]))
			return 0;
	return n;
}

size_t d9_utf8_cut(const char *s, size_t max)
{
	const uint8_t *u = (const uint8_t *)s;
	size_t n = strnlen(s, max), lead = n;

	/* back over at most three continuation bytes to their lead */
	while (lead > 0 && n - lead < 3 && cont(u[lead - 1]))
		lead--;
	if (lead == 0 || u[lead - 1] < 0xc0)
		return n;	/* ASCII or stray continuations: nothing cut */
	lead--;
	/* the lead's sequence needs more bytes than are left: drop it */
	if ((u[lead] >= 0xf0 ? 4u : u[lead] >= 0xe0 ? 3u : 2u) > n - lead)
		return lead;
	return n;
}
