/* SPDX-License-Identifier: MIT */
/* grow.h - growing arrays, for the library and the dial9 command. */
#ifndef DIAL9_GROW_H
#define DIAL9_GROW_H

#include <stddef.h>

/*
 * Make room for @need elements of @size bytes in *@v (capacity *@cap,
 * doubled as needed); 0 or -ENOMEM, *@v unchanged on failure.
 */
int d9_grow(void **v, size_t *cap, size_t need, size_t size);

#endif
