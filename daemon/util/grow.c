/* SPDX-License-Identifier: MIT */
/*
 * grow.c — growing a heap array by doubling (see grow.h). Never prints.
 */
#include <errno.h>
#include <stdlib.h>

#include "util/grow.h"

/* The capacity, at most max, that doubling from cap (or first) reaches once it holds need. */
static size_t next_cap(size_t cap, size_t need, size_t first, size_t max)
{
        size_t n = cap ? cap : (first ? first : 1);

        while (n < need)
                n = n > max / 2 ? max : n * 2;
        return n;
}

static int grow(void **arr, size_t *cap, size_t elem, size_t need, size_t first, size_t max)
{
        if (need <= *cap)
                return 0;
        if (!elem || need > max || need > SIZE_MAX / elem)
                return -EOVERFLOW;
        size_t n = next_cap(*cap, need, first, max);

        if (n > SIZE_MAX / elem)
                n = SIZE_MAX / elem; /* still >= need */
        void *p = realloc(*arr, n * elem);

        if (!p)
                return -ENOMEM;
        *arr = p;
        *cap = n;
        return 0;
}

int grow_array(void **arr, size_t *cap, size_t elem, size_t need, size_t first)
{
        return grow(arr, cap, elem, need, first, SIZE_MAX);
}

int grow_array_u32(void **arr, uint32_t *cap, size_t elem, size_t need, size_t first)
{
        size_t c = *cap;
        int err = grow(arr, &c, elem, need, first, UINT32_MAX);

        if (!err)
                *cap = (uint32_t)c;
        return err;
}
