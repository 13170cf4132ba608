/* SPDX-License-Identifier: MIT */
/*
 * test_go_pclntab.c — the .gopclntab reader (stack/go_pclntab.c) on tables built here in the
 * Go 1.18+ layout: each function's code range gives its name (first and last byte, both
 * magics, 4- and 8-byte words, textStart 0 taking the .text address); no name below the text,
 * past the last function or when the table says nothing; and a crafted table (wrong magic or
 * word size, a count or offset past the section, a name offset negative or past it, a name
 * with no NUL before the section ends, a truncated header) is refused or names nothing,
 * never read outside its bytes (ASan checks the reads: the buffer is exactly the section).
 * The real table of a Go binary: tests/integration/test_record_go.sh.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stack/go_pclntab.h"

#define TEXT     0x401000u
#define HDR      8
#define NAMES_AT 0x80  /* funcnametab */
#define PCLN_AT  0xc0  /* functab, then the _func records */
#define SECTION  0x120 /* bytes of the whole table */

/* A table of three functions at TEXT+0x0, +0x40, +0x100, the code ending at +0x180:
 * "main.main", "main.spin", "runtime.goexit". ps: word size; text_start: the header's. */
struct table {
        uint8_t b[SECTION];
};

static void put32(uint8_t *p, uint32_t v)
{
        memcpy(p, &v, 4);
}

static void put_word(uint8_t *p, uint64_t v, unsigned ps)
{
        memcpy(p, &v, ps);
}

static struct table make_table(uint32_t magic, unsigned ps, uint64_t text_start)
{
        static const char *names[] = {"main.main", "main.spin", "runtime.goexit"};
        static const uint32_t entries[] = {0x0, 0x40, 0x100, 0x180};
        struct table t;
        uint32_t name_off = 0;
        uint64_t words[8] = {3, 1, text_start, NAMES_AT, 0, 0, 0, PCLN_AT};

        memset(&t, 0, sizeof(t));
        put32(t.b, magic);
        t.b[6] = 1; /* minLC */
        t.b[7] = (uint8_t)ps;
        for (unsigned i = 0; i < 8; i++)
                put_word(t.b + HDR + i * ps, words[i], ps);
        for (unsigned i = 0; i < 4; i++) {
                /* functab: entryoff, funcoff (relative to PCLN_AT); _funcs after it */
                uint32_t funcoff = 4 * 8 + i * 16;

                put32(t.b + PCLN_AT + i * 8, entries[i]);
                put32(t.b + PCLN_AT + i * 8 + 4, funcoff);
                if (i < 3) {
                        put32(t.b + PCLN_AT + funcoff, entries[i]);
                        put32(t.b + PCLN_AT + funcoff + 4, name_off);
                        strcpy((char *)t.b + NAMES_AT + name_off, names[i]);
                        name_off += (uint32_t)strlen(names[i]) + 1;
                }
        }
        return t;
}

static const char *name_at(const struct table *tb, size_t len, uint64_t addr)
{
        struct go_pclntab t;
        /* exactly len bytes on the heap: ASan sees a read past them */
        uint8_t *copy = malloc(len);
        const char *n;
        static char out[64];

        cr_assert_not_null(copy);
        memcpy(copy, tb->b, len);
        if (go_pclntab_init(&t, copy, len, TEXT)) {
                free(copy);
                return NULL;
        }
        n = go_pclntab_name(&t, addr);
        if (n)
                snprintf(out, sizeof(out), "%s", n);
        free(copy);
        return n ? out : NULL;
}

Test(go_pclntab, names_each_functions_range)
{
        struct table t = make_table(0xfffffff0u, 8, TEXT);

        cr_assert_str_eq(name_at(&t, SECTION, TEXT), "main.main");
        cr_assert_str_eq(name_at(&t, SECTION, TEXT + 0x3f), "main.main");
        cr_assert_str_eq(name_at(&t, SECTION, TEXT + 0x40), "main.spin");
        cr_assert_str_eq(name_at(&t, SECTION, TEXT + 0xff), "main.spin");
        cr_assert_str_eq(name_at(&t, SECTION, TEXT + 0x100), "runtime.goexit");
        cr_assert_str_eq(name_at(&t, SECTION, TEXT + 0x17f), "runtime.goexit");
        cr_assert_null(name_at(&t, SECTION, TEXT + 0x180), "past the last function");
        cr_assert_null(name_at(&t, SECTION, TEXT - 1), "below the text");
        cr_assert_null(name_at(&t, SECTION, TEXT + 0x100000000ull), "far above the text");
}

Test(go_pclntab, layouts)
{
        struct table go120 = make_table(0xfffffff1u, 8, TEXT);
        struct table w4 = make_table(0xfffffff0u, 4, TEXT);
        struct table no_start = make_table(0xfffffff0u, 8, 0);
        struct table go116 = make_table(0xfffffffau, 8, TEXT);
        struct go_pclntab g;

        cr_assert_str_eq(name_at(&go120, SECTION, TEXT + 0x50), "main.spin");
        cr_assert_str_eq(name_at(&w4, SECTION, TEXT + 0x50), "main.spin");
        /* textStart 0 (a PIE's, relocated at run time): the .text address */
        cr_assert_str_eq(name_at(&no_start, SECTION, TEXT + 0x50), "main.spin");
        cr_assert_eq(go_pclntab_init(&g, go116.b, SECTION, TEXT), -ENOTSUP, "Go 1.16's layout");
}

Test(go_pclntab, crafted_headers_refused)
{
        struct table t = make_table(0xfffffff0u, 8, TEXT);
        struct go_pclntab g;

        t.b[7] = 3; /* word size */
        cr_assert_eq(go_pclntab_init(&g, t.b, SECTION, TEXT), -ENOTSUP);
        t = make_table(0xfffffff0u, 8, TEXT);
        t.b[4] = 1; /* pad1 */
        cr_assert_eq(go_pclntab_init(&g, t.b, SECTION, TEXT), -ENOTSUP);
        t = make_table(0xfffffff0u, 8, TEXT);
        cr_assert_eq(go_pclntab_init(&g, t.b, HDR + 7 * 8, TEXT), -EINVAL, "truncated header");
        cr_assert_eq(go_pclntab_init(&g, t.b, 4, TEXT), -ENOTSUP, "no header");
        cr_assert_eq(go_pclntab_init(&g, NULL, SECTION, TEXT), -ENOTSUP);
        put_word(t.b + HDR, 1000, 8); /* nfunc: the function table would pass the end */
        cr_assert_eq(go_pclntab_init(&g, t.b, SECTION, TEXT), -EINVAL);
        put_word(t.b + HDR, 0xffffffffffffffffull, 8);
        cr_assert_eq(go_pclntab_init(&g, t.b, SECTION, TEXT), -EINVAL);
        t = make_table(0xfffffff0u, 8, TEXT);
        put_word(t.b + HDR + 7 * 8, SECTION, 8); /* pclnOffset at the end */
        cr_assert_eq(go_pclntab_init(&g, t.b, SECTION, TEXT), -EINVAL);
        t = make_table(0xfffffff0u, 8, TEXT);
        put_word(t.b + HDR + 3 * 8, 1ull << 40, 8); /* funcnameOffset */
        cr_assert_eq(go_pclntab_init(&g, t.b, SECTION, TEXT), -EINVAL);
}

Test(go_pclntab, crafted_entries_name_nothing)
{
        struct table t = make_table(0xfffffff0u, 8, TEXT);

        /* main.spin's _func past the section */
        put32(t.b + PCLN_AT + 1 * 8 + 4, SECTION);
        cr_assert_null(name_at(&t, SECTION, TEXT + 0x50));
        put32(t.b + PCLN_AT + 1 * 8 + 4, 0xfffffff0u);
        cr_assert_null(name_at(&t, SECTION, TEXT + 0x50));
        /* its name offset negative, then past the section */
        t = make_table(0xfffffff0u, 8, TEXT);
        put32(t.b + PCLN_AT + 4 * 8 + 16 + 4, 0x80000000u);
        cr_assert_null(name_at(&t, SECTION, TEXT + 0x50));
        put32(t.b + PCLN_AT + 4 * 8 + 16 + 4, SECTION);
        cr_assert_null(name_at(&t, SECTION, TEXT + 0x50));
        /* a name running to the section's end with no NUL */
        t = make_table(0xfffffff0u, 8, TEXT);
        put32(t.b + PCLN_AT + 4 * 8 + 16 + 4, SECTION - 3 - NAMES_AT);
        memset(t.b + SECTION - 3, 'x', 3);
        cr_assert_null(name_at(&t, SECTION, TEXT + 0x50));
        /* entries out of order: a name of the table or none, never a read outside it */
        t = make_table(0xfffffff0u, 8, TEXT);
        put32(t.b + PCLN_AT + 1 * 8, 0xffffff00u);
        for (uint64_t a = TEXT; a < TEXT + 0x180; a += 0x10) {
                const char *n = name_at(&t, SECTION, a);

                cr_assert(!n || !strcmp(n, "main.main") || !strcmp(n, "main.spin") ||
                          !strcmp(n, "runtime.goexit"));
        }
}
