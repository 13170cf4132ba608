/* SPDX-License-Identifier: MIT */
/*
 * go_pclntab.h — function names of a Go binary from its .gopclntab, the Go runtime's own
 * function table: a binary linked with `-ldflags="-s -w"` (usual for container images) has no
 * .symtab, but keeps this table, so its frames can still be named. Layouts of Go 1.18 and
 * later (header magic 0xfffffff0 for 1.18-1.19, 0xfffffff1 for 1.20 and later, the same where
 * names are concerned); an older or unknown layout is refused (-ENOTSUP). Every offset and
 * count the table holds is checked against the section's size: its bytes are the target's, and
 * a crafted table can name the binary's own frames as it likes, never make a read outside the
 * section. Runs where elf_syms runs (the parser helper). Never prints, never allocates.
 */
#ifndef CTXPROF_GO_PCLNTAB_H
#define CTXPROF_GO_PCLNTAB_H

#include <stddef.h>
#include <stdint.h>

struct go_pclntab {
        const uint8_t *p; /* the section's bytes (not owned), len of them */
        size_t len;
        uint64_t text_start; /* the address function entries are relative to */
        uint32_t nfunc;
        uint32_t magic;     /* the header's: which _func layout */
        uint64_t funcnames; /* offset of the name table */
        uint64_t functab;   /* offset of the function table (nfunc + 1 entries) */
        uint64_t pctab;     /* offset of the pc-value tables */
        /* go:func.* (moduledata.gofunc), where funcdata offsets point: the inline trees.
         * NULL: no inlined frames. Not owned. */
        const uint8_t *gofunc;
        size_t gofunc_len;
};

/* Reads the header of a .gopclntab section of len bytes at data; text_addr is the binary's
 * .text address (used when the header's textStart is 0). 0, -ENOTSUP (not a layout we read) or
 * -EINVAL (offsets or counts outside the section). */
int go_pclntab_init(struct go_pclntab *t, const void *data, size_t len, uint64_t text_addr);
/* The name of the function whose code holds addr (a link-time address), into the section, or
 * NULL. */
const char *go_pclntab_name(const struct go_pclntab *t, uint64_t addr);

/*
 * Where go:func.* is, for inlined frames (Go 1.18 and 1.19: their _func, inlinedCall and
 * moduledata layouts; the others keep function names only): the runtime's moduledata is
 * found in the len bytes of .noptrdata as a word equal to the .gopclntab's address
 * (pclntab_addr) with the text address the table has, and its gofunc field read. 0 and
 * *gofunc (an address), or -ENOENT.
 */
int go_pclntab_find_gofunc(const struct go_pclntab *t, uint64_t pclntab_addr, const void *noptrdata,
                           size_t len, uint64_t *gofunc);

/*
 * The frames at addr, innermost first: the functions inlined there (from the function's
 * inline tree: pc-data table 2, funcdata 3 into go:func.*), then the function itself.
 * names[i] point into the section; returns how many (at most max: the innermost max - 1
 * calls and the function), 0 when addr is in no function. Without go:func.* (or a layout
 * without inline trees), the function alone. Every offset is checked against its buffer; a
 * tree that loops ends at max.
 */
int go_pclntab_frames(const struct go_pclntab *t, uint64_t addr, const char **names, int max);

#endif
