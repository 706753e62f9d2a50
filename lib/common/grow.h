/* SPDX-License-Identifier: MIT */
/* grow.h - growing arrays, for the library and the dial9 command. */
#ifndef DIAL9_GROW_H
#define DIAL9_GROW_H

#include <stddef.h>
#include <stdlib.h>

/*
 * Make room for @need elements of @size bytes in *@v (capacity *@cap,
 * doubled as needed); 0 or -ENOMEM, *@v unchanged on failure.
 */
int d9_grow(void **v, size_t *cap, size_t need, size_t size);

/* qsort(), where n may be 0 and base NULL (which qsort() does not allow). */
static inline void d9_sort(void *base, size_t n, size_t size,
			   int (*cmp)(const void *, const void *))
{
	if (n > 1)
		qsort(base, n, size, cmp);
}

/*
 * The first of the @n elements of @size bytes at @base for which
 * @before(element, @key) is false (@n if none), the elements being in an
 * order where it holds of a prefix: a binary search, C++'s
 * partition_point.
 */
static inline size_t d9_partition(const void *base, size_t n, size_t size,
				  int (*before)(const void *elem,
						const void *key),
				  const void *key)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (before((const char *)base + mid * size, key))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

#endif
