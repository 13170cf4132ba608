/* SPDX-License-Identifier: MIT */
/*
 * util/hash.h — FNV-1a, 64-bit: the hash of the daemon's in-memory tables (interned strings,
 * folded stacks, module keys); and the multiplicative mix for integer keys (pids, tids,
 * file identities). Header only; includes no daemon header.
 *
 * Never used for anything an attacker could aim at a table's worst case and never persisted:
 * tables may change the hash freely (it is not part of any file format).
 */
#ifndef CTXPROF_UTIL_HASH_H
#define CTXPROF_UTIL_HASH_H

#include <stddef.h>
#include <stdint.h>

#define FNV1A64_OFFSET 0xcbf29ce484222325ull
#define FNV1A64_PRIME  0x100000001b3ull

/* FNV-1a of n bytes at p (p may be NULL when n == 0). */
static inline uint64_t fnv1a64(const void *p, size_t n)
{
        const unsigned char *s = p;
        uint64_t h = FNV1A64_OFFSET;

        for (size_t i = 0; i < n; i++)
                h = (h ^ s[i]) * FNV1A64_PRIME;
        return h;
}

/* Fibonacci hashing: x times 2^64 / golden ratio, whose high bits spread consecutive keys
 * (pids, inode numbers) over a power-of-two table; take the bits from the top. */
#define HASH_FIB64 0x9E3779B97F4A7C15ull
static inline uint64_t hash_mix64(uint64_t x)
{
        return x * HASH_FIB64;
}

#endif
