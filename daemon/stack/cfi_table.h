/* SPDX-License-Identifier: MIT */
/*
 * cfi_table.h — one ELF file's call-frame information (.eh_frame, found through
 * .eh_frame_hdr) turned into the sorted compact rows of ctxprof/cfi.h that the in-kernel
 * unwinder binary-searches. Built with elfutils (dwarf_getcfi_elf + dwarf_cfi_addrframe over
 * every FDE's range); equal adjacent rows merged; rules BPF cannot express marked
 * CTXPROF_CFA_UNSUP (the unwinder then takes a counted frame-pointer step); the standard x86-64
 * PLT expression recognised as CTXPROF_CFA_PLT. Never prints; reads only the file it is given.
 *
 * Not in the table: .debug_frame (elfutils' dwarf_getcfi_elf reads .eh_frame only; Debian
 * ships .debug_frame in separate debug files) and files without .eh_frame_hdr.
 * A table is immutable once built and may be read from any thread.
 */
#ifndef CTXPROF_CFI_TABLE_H
#define CTXPROF_CFI_TABLE_H

#include <stddef.h>
#include <stdint.h>

#include "ctxprof/cfi.h"

#define CFI_TABLE_MAX_ROWS (1u << 22) /* a bigger table is refused (-EFBIG) */
/* dwarf_cfi_addrframe re-runs an FDE's instructions from its start for every row, so an FDE
 * of N rows costs N^2/2 instruction steps: a crafted .eh_frame (one FDE of a million
 * advance_loc) would hold the sampling thread for minutes. The steps of one build are
 * bounded (a build past it is refused, -EFBIG); libc and python3 stay far below it. */
#define CFI_TABLE_MAX_STEPS (1ull << 26)

struct cfi_table_stats {
        uint32_t fdes;   /* FDEs listed in .eh_frame_hdr */
        uint32_t unsup;  /* rows marked CTXPROF_CFA_UNSUP */
        uint32_t signal; /* rows of signal frames (__restore_rt: CTXPROF_CFA_SIGNAL if the
                          * standard layout, else UNSUP) */
        uint32_t plt;    /* rows recognised as the PLT expression */
        uint32_t gaps;   /* CTXPROF_CFA_NONE rows (pc ranges no FDE covers) */
        uint64_t build_ns;
};

struct cfi_table {
        struct ctxprof_cfi_row *rows; /* sorted by pc, no two adjacent rows equal */
        size_t n;
        struct cfi_table_stats st;
};

/* Parse in this process the table of the ELF file open at fd (the caller keeps fd).
 * -ENOENT: no .eh_frame_hdr; -ENOTSUP: a header encoding other than the standard one;
 * -EINVAL: not an ELF file or corrupt CFI; -EFBIG: more than CFI_TABLE_MAX_ROWS; -ENOMEM.
 * The parser helper's; the daemon calls cfi_table_build. */
int cfi_table_build_local(int fd, struct cfi_table *out);

/* Every later cfi_table_build asks pc (the daemon's parser helper, util/parser_client.h);
 * NULL: parse here again. */
struct parser_client;
void cfi_table_use_parser(struct parser_client *pc);
/* The table of fd (stack/cfi_table_remote.c): built by the parser helper when one is named,
 * else by cfi_table_build_local. Waits at most CFI_PARSER_WAIT_MS for another thread's
 * request. Its errors, and: -EBUSY, the helper busy past that wait or not running now
 * (nothing to blame the file for: ask again later); -EPROTO, the file stalled, killed or
 * confused the helper, or its answer was out of format. */
#define CFI_PARSER_WAIT_MS 50
int cfi_table_build(int fd, struct cfi_table *out);
/* The table of the kernel's vDSO, read from this process's own (the same image every x86-64
 * process of this kernel maps as [vdso]). -ENOENT when it cannot be found. */
int cfi_table_build_vdso(struct cfi_table *out);
/* The row that covers file offset off (the last with pc <= off), or NULL before the first. */
const struct ctxprof_cfi_row *cfi_table_lookup(const struct cfi_table *, uint64_t off);
void cfi_table_free(struct cfi_table *);

#endif
