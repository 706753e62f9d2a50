// SPDX-License-Identifier: MIT
/* grow.c - growing arrays (grow.h). */
#include <errno.h>
#include <stdlib.h>

#include "common/grow.h"

int d9_grow(void **v, size_t *cap, size_t need, size_t size)
{
	size_t nc;
	void *nv;

	if (need <= *cap)
		return 0;
	nc = *cap ? *cap : 64;
	while (nc < need)
		nc *= 2;
	nv = realloc(*v, nc * size);
	if (!nv)
		return -ENOMEM;
	*v = nv;
	*cap = nc;
	return 0;
}
