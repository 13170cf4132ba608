/* SPDX-License-Identifier: MIT */
/*
 * test_jfr_dict.c — the JFR writer's dictionaries (jfr/jfr_dict.c): the string table gives
 * one dense index per distinct byte string (embedded NULs and the empty string included),
 * keeps its copies across growth and hands back the same index for the same bytes; clear
 * forgets every string; the u64 map stores, overwrites and finds keys (0 and ~0 included)
 * across growth, and clear empties it.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "jfr/jfr_dict.h"

/* enough strings and keys to grow the tables (64 slots at first) several times */
#define MANY 5000

Test(jfr_strtab, same_bytes_same_index)
{
        struct jfr_strtab t;
        uint32_t a, b, c, e;
        int added;

        jfr_strtab_init(&t);
        cr_assert_eq(jfr_strtab_intern(&t, "alpha", 5, &a, &added), 0);
        cr_assert_eq(added, 1);
        cr_assert_eq(jfr_strtab_intern(&t, "beta", 4, &b, &added), 0);
        cr_assert_eq(added, 1);
        cr_assert_eq(jfr_strtab_intern(&t, "alpha", 5, &c, &added), 0);
        cr_assert_eq(added, 0);
        cr_assert_eq(c, a);
        cr_assert_neq(a, b);
        /* a prefix is another string; so is the empty one */
        cr_assert_eq(jfr_strtab_intern(&t, "alpha", 4, &c, NULL), 0);
        cr_assert(c != a && c != b);
        cr_assert_eq(jfr_strtab_intern(&t, "", 0, &e, &added), 0);
        cr_assert_eq(added, 1);
        cr_assert_eq(t.n, 4);
        cr_assert_str_eq(jfr_strtab_str(&t, a), "alpha");
        cr_assert_str_eq(jfr_strtab_str(&t, c), "alph");
        cr_assert_str_eq(jfr_strtab_str(&t, e), "");
        jfr_strtab_free(&t);
}

Test(jfr_strtab, embedded_nul_is_part_of_the_string)
{
        struct jfr_strtab t;
        uint32_t a, b;

        jfr_strtab_init(&t);
        cr_assert_eq(jfr_strtab_intern(&t, "a\0b", 3, &a, NULL), 0);
        cr_assert_eq(jfr_strtab_intern(&t, "a\0c", 3, &b, NULL), 0);
        cr_assert_neq(a, b);
        cr_assert_eq(t.len[a], 3);
        cr_assert_eq(memcmp(jfr_strtab_str(&t, b), "a\0c", 4), 0); /* copied, NUL-terminated */
        jfr_strtab_free(&t);
}

Test(jfr_strtab, dense_indices_survive_growth_and_clear)
{
        struct jfr_strtab t;
        char s[32];
        uint32_t idx;
        int added;

        jfr_strtab_init(&t);
        for (uint32_t i = 0; i < MANY; i++) {
                int n = snprintf(s, sizeof(s), "frame-%u", i);
                cr_assert_eq(jfr_strtab_intern(&t, s, (size_t)n, &idx, &added), 0);
                cr_assert_eq(idx, i, "string %u got index %u", i, idx);
                cr_assert_eq(added, 1);
        }
        for (uint32_t i = 0; i < MANY; i++) {
                int n = snprintf(s, sizeof(s), "frame-%u", i);
                cr_assert_eq(jfr_strtab_intern(&t, s, (size_t)n, &idx, &added), 0);
                cr_assert_eq(idx, i);
                cr_assert_eq(added, 0, "string %u added twice", i);
                cr_assert_str_eq(jfr_strtab_str(&t, i), s);
        }
        cr_assert_eq(t.n, MANY);
        /* after clear every string is new again, numbered from 0 */
        jfr_strtab_clear(&t);
        cr_assert_eq(t.n, 0);
        cr_assert_eq(jfr_strtab_intern(&t, "frame-7", 7, &idx, &added), 0);
        cr_assert_eq(idx, 0);
        cr_assert_eq(added, 1);
        cr_assert_str_eq(jfr_strtab_str(&t, 0), "frame-7");
        jfr_strtab_free(&t);
}

Test(jfr_u64map, put_get_overwrite_grow_clear)
{
        struct jfr_u64map m;
        uint32_t v = 12345;

        jfr_u64map_init(&m);
        cr_assert_eq(jfr_u64map_get(&m, 1, &v), 0, "found a key in an empty map");
        cr_assert_eq(v, 12345, "a miss wrote the value");
        cr_assert_eq(jfr_u64map_put(&m, 0, 10), 0);
        cr_assert_eq(jfr_u64map_put(&m, UINT64_MAX, 20), 0);
        cr_assert_eq(jfr_u64map_get(&m, 0, &v), 1);
        cr_assert_eq(v, 10);
        cr_assert_eq(jfr_u64map_get(&m, UINT64_MAX, &v), 1);
        cr_assert_eq(v, 20);
        cr_assert_eq(jfr_u64map_put(&m, 0, 11), 0);
        cr_assert_eq(jfr_u64map_get(&m, 0, &v), 1);
        cr_assert_eq(v, 11, "put did not overwrite");
        cr_assert_eq(m.n, 2);
        /* keys that share their low bits (addresses of one page size apart) */
        for (uint64_t i = 1; i <= MANY; i++)
                cr_assert_eq(jfr_u64map_put(&m, i << 12, (uint32_t)i), 0);
        cr_assert_eq(m.n, MANY + 2);
        for (uint64_t i = 1; i <= MANY; i++) {
                cr_assert_eq(jfr_u64map_get(&m, i << 12, &v), 1, "key %#llx lost",
                             (unsigned long long)(i << 12));
                cr_assert_eq(v, (uint32_t)i);
        }
        cr_assert_eq(jfr_u64map_get(&m, (MANY + 1ull) << 12, &v), 0);
        cr_assert_eq(jfr_u64map_get(&m, 0, &v), 1);
        cr_assert_eq(v, 11);
        jfr_u64map_clear(&m);
        cr_assert_eq(m.n, 0);
        cr_assert_eq(jfr_u64map_get(&m, 1ull << 12, &v), 0, "a key survived clear");
        cr_assert_eq(jfr_u64map_put(&m, 1ull << 12, 5), 0);
        cr_assert_eq(jfr_u64map_get(&m, 1ull << 12, &v), 1);
        cr_assert_eq(v, 5);
        jfr_u64map_free(&m);
}

Test(jfr_strtab, find_never_adds)
{
        struct jfr_strtab t;
        uint32_t idx = 99;

        jfr_strtab_init(&t);
        cr_assert_eq(jfr_strtab_find(&t, "a", 1, &idx), 0, "an empty table");
        cr_assert_eq(jfr_strtab_intern(&t, "a", 1, &idx, NULL), 0);
        cr_assert_eq(jfr_strtab_intern(&t, "bc", 2, &idx, NULL), 0);
        cr_assert_eq(jfr_strtab_find(&t, "bc", 2, &idx), 1);
        cr_assert_eq(idx, 1);
        cr_assert_eq(jfr_strtab_find(&t, "b", 1, &idx), 0);
        cr_assert_eq(t.n, 2, "find added nothing");
        jfr_strtab_free(&t);
}
