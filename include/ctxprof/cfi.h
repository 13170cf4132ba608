/* SPDX-License-Identifier: MIT */
/*
 * ctxprof/cfi.h — wire format of the in-kernel unwind tables: the compact CFI rows the daemon
 * builds from a module's .eh_frame (daemon/stack/cfi_table.c) and loads into the BPF array
 * `ku_rows`, and the per-process list of executable mappings (BPF hash `ku_procs`) that tells
 * the unwinder in bpf/sampler.bpf.c which slice of rows covers an address. Shared by both
 * sides: only __u/__s types, fixed layouts, no pointers. Must never contain logic.
 *
 * Addresses in rows are FILE OFFSETS in the module (not ELF virtual addresses), so a row slice
 * is shared by every process mapping the file, and BPF turns an ip into a key with one
 * subtraction: key = ip - (mapping start - mapping file offset).
 */
#ifndef CTXPROF_CFI_H
#define CTXPROF_CFI_H

#ifndef __bpf__
#include <linux/types.h>
#endif

/* ctxprof_cfi_row.cfa_rule: how the caller's stack pointer (the CFA) is found. */
enum ctxprof_cfa_rule {
        CTXPROF_CFA_NONE = 0,   /* no CFI covers this pc (a gap): frame-pointer step, counted */
        CTXPROF_CFA_RSP = 1,    /* cfa = rsp + cfa_off */
        CTXPROF_CFA_RBP = 2,    /* cfa = rbp + cfa_off */
        CTXPROF_CFA_PLT = 3,    /* PLT stub: cfa = rsp + 8 + ((ip & 15) >= cfa_off ? 8 : 0) */
        CTXPROF_CFA_END = 4,    /* return address undefined: the outermost frame (_start, clone) */
        CTXPROF_CFA_UNSUP = 5,  /* a rule BPF cannot express (DWARF expression, other register,
                                 * return address not at cfa-8): frame-pointer step, counted */
        CTXPROF_CFA_SIGNAL = 6, /* Linux x86-64 signal trampoline (__restore_rt): the interrupted
                                 * rip, rsp, rbp are in the ucontext at rsp (offsets below); the
                                 * next ip is exact, not a return address */
};

/* CTXPROF_CFA_SIGNAL: struct ucontext_t at rsp, uc_mcontext.gregs[] from byte 40 */
#define CTXPROF_SIG_RBP_OFF 120 /* gregs[REG_RBP = 10] */
#define CTXPROF_SIG_RSP_OFF 160 /* gregs[REG_RSP = 15] */
#define CTXPROF_SIG_RIP_OFF 168 /* gregs[REG_RIP = 16] */

/* ctxprof_cfi_row.rbp_rule: how the caller's rbp is found. */
enum ctxprof_rbp_rule {
        CTXPROF_RBP_SAME = 0,  /* unchanged */
        CTXPROF_RBP_SAVED = 1, /* saved at cfa + rbp_off */
        CTXPROF_RBP_UNDEF = 2, /* not recoverable (treated as 0) */
};

/* One row: the rule from `pc` up to the next row's pc. 12 bytes. */
struct ctxprof_cfi_row {
        __u32 pc;      /* file offset in the module */
        __s32 cfa_off; /* CFA_RSP/CFA_RBP: offset; CFA_PLT: the (ip & 15) threshold */
        __s16 rbp_off; /* RBP_SAVED: rbp is at cfa + rbp_off */
        __u8 cfa_rule; /* enum ctxprof_cfa_rule */
        __u8 rbp_rule; /* enum ctxprof_rbp_rule */
};
_Static_assert(sizeof(struct ctxprof_cfi_row) == 12, "cfi row: 12 bytes, no padding");

/* Bounds of the in-kernel unwinder. */
#define CTXPROF_KU_MAX_MAPS     128        /* executable mappings per process (sorted by start) */
#define CTXPROF_KU_DEFAULT_ROWS (1u << 20) /* rows in `ku_rows` (12 MiB), all modules together */
#define CTXPROF_KU_MAP_STEPS    8          /* binary search steps over the mappings (2^8 > 128) */
#define CTXPROF_KU_ROW_STEPS    24         /* binary search steps over one module's rows */

/* One executable mapping of a process. row_count == 0: no table (frame-pointer steps). */
struct ctxprof_ku_map {
        __u64 start, end; /* [start, end) in the process */
        __u64 bias;       /* start - file offset: key = ip - bias */
        __u32 row_start;  /* first row of the module's slice in `ku_rows` */
        __u32 row_count;
};
_Static_assert(sizeof(struct ctxprof_ku_map) == 32, "ku map: 32 bytes");

/* `ku_procs` value, keyed by tgid (the daemon's PID namespace). */
struct ctxprof_ku_proc {
        __u32 n; /* entries used in m[], sorted by start, non-overlapping */
        __u32 pad;
        struct ctxprof_ku_map m[CTXPROF_KU_MAX_MAPS];
};
_Static_assert(sizeof(struct ctxprof_ku_proc) == 8 + 32 * CTXPROF_KU_MAX_MAPS, "ku proc");

#endif /* CTXPROF_CFI_H */
