/* SPDX-License-Identifier: MIT */
/*
 * util/grow.h — growing a heap array by doubling: the one place that picks a new capacity and
 * checks its byte size for overflow. Never shrinks, never frees, never zeroes, never touches
 * the array or its capacity on failure.
 */
#ifndef CTXPROF_UTIL_GROW_H
#define CTXPROF_UTIL_GROW_H

#include <stddef.h>
#include <stdint.h>

/*
 * Make room for `need` elements of `elem` bytes in *arr, whose capacity is *cap elements.
 * Nothing happens while need <= *cap. Otherwise the capacity doubles (starting at `first`
 * when *cap is 0) until it holds need, and *arr is reallocated. Returns 0, -ENOMEM, or
 * -EOVERFLOW when the array would not fit in a size_t.
 *
 * Call as grow_array((void **)&a, &cap, sizeof(*a), n + 1, 64).
 */
int grow_array(void **arr, size_t *cap, size_t elem, size_t need, size_t first);

/* The same for a uint32_t capacity (the capacity never exceeds UINT32_MAX; -EOVERFLOW when
 * need does). */
int grow_array_u32(void **arr, uint32_t *cap, size_t elem, size_t need, size_t first);

#endif
