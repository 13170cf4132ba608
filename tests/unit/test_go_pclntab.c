/* SPDX-License-Identifier: MIT */
/*
 * test_go_pclntab.c — the .gopclntab reader (stack/go_pclntab.c) on tables built here in the
 * Go 1.18+ layout: each function's code range gives its name (first and last byte, both
 * magics, 4- and 8-byte words, textStart 0 taking the .text address); no name below the text,
 * past the last function or when the table says nothing; and a crafted table (wrong magic or
 * word size, a count or offset past the section, a name offset negative or past it, a name
 * with no NUL before the section ends, a truncated header) is refused or names nothing,
 * never read outside its bytes (ASan checks the reads: the buffer is exactly the section).
 * Inlined frames (Go 1.18-1.19): the inline-index pc-value table and the inline tree in
 * go:func.* give the calls inlined at a pc, innermost first; a tree or table that points
 * outside its buffer, loops, or a function record cut short gives the function alone (or
 * stops at max); the moduledata is found by its word for the table's address and the text's.
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

/*
 * Inlined frames (Go 1.18-1.19 layout): main.spin at TEXT+0 (0x80 bytes) has main.mix
 * inlined at [0x10, 0x20) and main.inner inlined into that mix at [0x20, 0x30); main.inner
 * is also a function of its own at TEXT+0x80. The pc-value table of inline indexes (pcdata 2)
 * and the inline tree (funcdata 3, in go:func.*) are laid out as the Go linker writes them.
 */
#define I_SECTION 0x200
#define I_NAMES   0x80
#define I_PCTAB   0xa0
#define I_PCLN    0x100
#define I_FUNC0   24 /* after 3 functab entries */
#define I_FUNC1   (I_FUNC0 + 40 + 3 * 4 + 4 * 4)

struct inl {
        uint8_t b[I_SECTION];
        uint8_t gofunc[40]; /* two inlinedCall entries of 20 bytes */
};

static struct inl make_inl(void)
{
        static const uint8_t pcv[] = {0x00, 0x10, 0x02, 0x10, 0x02, 0x10, 0x03, 0x50, 0x00};
        uint64_t words[8] = {2, 1, TEXT, I_NAMES, 0, 0, I_PCTAB, I_PCLN};
        struct inl t;

        memset(&t, 0, sizeof(t));
        put32(t.b, 0xfffffff0u);
        t.b[6] = 1;
        t.b[7] = 8;
        for (unsigned i = 0; i < 8; i++)
                put_word(t.b + HDR + i * 8, words[i], 8);
        memcpy(t.b + I_NAMES, "main.spin\0main.mix\0main.inner", 30); /* 0, 10, 19 */
        memcpy(t.b + I_PCTAB + 1, pcv, sizeof(pcv));                  /* offset 0 means no table */
        put32(t.b + I_PCLN, 0x0);
        put32(t.b + I_PCLN + 4, I_FUNC0);
        put32(t.b + I_PCLN + 8, 0x80);
        put32(t.b + I_PCLN + 12, I_FUNC1);
        put32(t.b + I_PCLN + 16, 0x100); /* the end of the code */
        uint8_t *f = t.b + I_PCLN + I_FUNC0;
        put32(f + 4, 0);          /* main.spin */
        put32(f + 28, 3);         /* npcdata */
        f[39] = 4;                /* nfuncdata */
        put32(f + 40 + 2 * 4, 1); /* pcdata[2]: the inline indexes, at pctab + 1 */
        for (unsigned i = 0; i < 4; i++)
                put32(f + 52 + i * 4, i == 3 ? 0 : 0xffffffffu); /* funcdata[3]: the tree */
        f = t.b + I_PCLN + I_FUNC1;
        put32(f, 0x80);
        put32(f + 4, 19);         /* main.inner */
        put32(t.gofunc + 12, 10); /* [0] main.mix, called at spin+0x08 */
        put32(t.gofunc + 16, 0x08);
        put32(t.gofunc + 20 + 12, 19); /* [1] main.inner, called at spin+0x18 (in mix) */
        put32(t.gofunc + 20 + 16, 0x18);
        return t;
}

/* The frames at addr as "a;b;c" (innermost first), the buffers copied to exact sizes. */
static const char *frames_at(const struct inl *tb, size_t gofunc_len, uint64_t addr, int max)
{
        static char out[256];
        const char *names[8];
        struct go_pclntab t;
        uint8_t *copy = malloc(I_SECTION), *gf = gofunc_len ? malloc(gofunc_len) : NULL;
        int n;

        cr_assert_not_null(copy);
        memcpy(copy, tb->b, I_SECTION);
        if (gf)
                memcpy(gf, tb->gofunc, gofunc_len);
        cr_assert_eq(go_pclntab_init(&t, copy, I_SECTION, TEXT), 0);
        t.gofunc = gf;
        t.gofunc_len = gofunc_len;
        n = go_pclntab_frames(&t, addr, names, max);
        out[0] = '\0';
        for (int i = 0; i < n; i++)
                snprintf(out + strlen(out), sizeof(out) - strlen(out), "%s%s", i ? ";" : "",
                         names[i]);
        free(copy);
        free(gf);
        return out;
}

Test(go_pclntab, inlined_frames)
{
        struct inl t = make_inl();

        cr_assert_str_eq(frames_at(&t, 40, TEXT + 0x05, 8), "main.spin");
        cr_assert_str_eq(frames_at(&t, 40, TEXT + 0x15, 8), "main.mix;main.spin");
        cr_assert_str_eq(frames_at(&t, 40, TEXT + 0x25, 8), "main.inner;main.mix;main.spin");
        cr_assert_str_eq(frames_at(&t, 40, TEXT + 0x40, 8), "main.spin");
        cr_assert_str_eq(frames_at(&t, 40, TEXT + 0x90, 8), "main.inner", "the function itself");
        cr_assert_str_eq(frames_at(&t, 40, TEXT + 0x100, 8), "", "past the code");
        cr_assert_str_eq(frames_at(&t, 0, TEXT + 0x25, 8), "main.spin", "no go:func.*");
        cr_assert_str_eq(frames_at(&t, 40, TEXT + 0x25, 2), "main.inner;main.spin",
                         "at most max: the innermost calls and the function");
}

Test(go_pclntab, crafted_inline_trees_stay_inside)
{
        struct inl t = make_inl();

        /* the tree's second entry past go:func.*: the chain stops there */
        cr_assert_str_eq(frames_at(&t, 30, TEXT + 0x25, 8), "main.spin");
        /* a call site outside the function */
        t = make_inl();
        put32(t.gofunc + 16, 0x80);
        cr_assert_str_eq(frames_at(&t, 40, TEXT + 0x15, 8), "main.spin");
        /* a tree that loops (mix called from inside itself): ends at max */
        t = make_inl();
        put32(t.gofunc + 16, 0x15);
        cr_assert_str_eq(frames_at(&t, 40, TEXT + 0x15, 4), "main.mix;main.mix;main.mix;main.spin");
        /* an index past the tree, a name offset past the names, a negative one */
        t = make_inl();
        t.b[I_PCTAB + 1 + 4] = 0x7e; /* +63 */
        cr_assert_str_eq(frames_at(&t, 40, TEXT + 0x25, 8), "main.spin");
        t = make_inl();
        put32(t.gofunc + 12, I_SECTION);
        cr_assert_str_eq(frames_at(&t, 40, TEXT + 0x15, 8), "main.spin");
        put32(t.gofunc + 12, 0x80000000u);
        cr_assert_str_eq(frames_at(&t, 40, TEXT + 0x15, 8), "main.spin");
        /* a pc-value table running off the section (an endless varint) */
        t = make_inl();
        put32(t.b + I_PCLN + I_FUNC0 + 40 + 2 * 4, I_SECTION - 2);
        t.b[I_SECTION - 2] = 0x80;
        t.b[I_SECTION - 1] = 0x80;
        cr_assert_str_eq(frames_at(&t, 40, TEXT + 0x25, 8), "main.spin");
        /* npcdata claiming more tables than the section holds */
        t = make_inl();
        put32(t.b + I_PCLN + I_FUNC0 + 28, 0x10000000u);
        cr_assert_str_eq(frames_at(&t, 40, TEXT + 0x25, 8), "main.spin");
}

Test(go_pclntab, moduledata_found_by_its_table)
{
        struct inl t = make_inl();
        uint8_t noptr[16 + 312];
        struct go_pclntab g;
        uint64_t gofunc = 0;

        cr_assert_eq(go_pclntab_init(&g, t.b, I_SECTION, TEXT), 0);
        memset(noptr, 0, sizeof(noptr));
        put_word(noptr + 16, 0x4d5300, 8);       /* moduledata.pcHeader */
        put_word(noptr + 16 + 176, TEXT, 8);     /* .text */
        put_word(noptr + 16 + 304, 0x4b9b50, 8); /* .gofunc */
        cr_assert_eq(go_pclntab_find_gofunc(&g, 0x4d5300, noptr, sizeof(noptr), &gofunc), 0);
        cr_assert_eq(gofunc, 0x4b9b50);
        cr_assert_eq(go_pclntab_find_gofunc(&g, 0x4d5308, noptr, sizeof(noptr), &gofunc), -ENOENT,
                     "another table's address");
        cr_assert_eq(go_pclntab_find_gofunc(&g, 0x4d5300, noptr, sizeof(noptr) - 8, &gofunc),
                     -ENOENT, "the moduledata cut by the section's end");
        put_word(noptr + 16 + 176, TEXT + 0x1000, 8);
        cr_assert_eq(go_pclntab_find_gofunc(&g, 0x4d5300, noptr, sizeof(noptr), &gofunc), -ENOENT,
                     "a word that is not the moduledata's (another text)");
        put32(t.b, 0xfffffff1u);
        cr_assert_eq(go_pclntab_init(&g, t.b, I_SECTION, TEXT), 0);
        put_word(noptr + 16 + 176, TEXT, 8);
        cr_assert_eq(go_pclntab_find_gofunc(&g, 0x4d5300, noptr, sizeof(noptr), &gofunc), -ENOENT,
                     "Go 1.20's moduledata is not read");
}
