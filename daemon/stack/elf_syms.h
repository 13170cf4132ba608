/* SPDX-License-Identifier: MIT */
/*
 * elf_syms.h — the elfutils half of symbolization: one module's ELF (from a descriptor) and
 * its DWARF (debug file by build id only, debuginfo_find.h) turned into raw names for a file
 * offset: the inline chain (innermost first, the real function last) with file:line, or the
 * symbol-table name (for a Go binary without one, the name its .gopclntab gives). Names are as the
 * file has them (mangled, not cut, not interned) and live as long as the elf_syms. It runs in the
 * parser helper (service/parser_server.c) or, without one, in the daemon (stack/symbolize.c). Never
 * prints; never opens the module by a name.
 */
#ifndef CTXPROF_ELF_SYMS_H
#define CTXPROF_ELF_SYMS_H

#include <stdint.h>

struct elf_syms;
struct elf_sym_entry {
        const char *function; /* raw (mangled) name; NULL if unknown */
        const char *file;     /* NULL if unknown */
        int line;             /* -1 if unknown */
        int inlined;          /* 1 = inlined into the next entry */
};

/* Opens the module from fd (taken in every case: closed on error or by elf_syms_free).
 * *dwarf_refused is set to 1 when its DWARF would need a file by name (then only symbol
 * table names are given). NULL with *err = -EINVAL (not ELF) or -ENOMEM. */
struct elf_syms *elf_syms_open(int fd, const char *name, int *dwarf_refused, int *err);
void elf_syms_free(struct elf_syms *);
/* The names at file offset off (already moved into the call for a return address): up to max
 * entries, 0 when nothing names it. */
int elf_syms_resolve(struct elf_syms *, uint64_t off, struct elf_sym_entry *out, int max);

#endif
