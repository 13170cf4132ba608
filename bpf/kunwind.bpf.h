/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * kunwind.bpf.h — the in-kernel .eh_frame unwinder of the sampling program: walks the
 * interrupted (or blocked) thread's user stack with the compact rows the daemon loaded
 * (ctxprof/cfi.h) and writes the return addresses, leaf first, where bpf_get_stack would have
 * put them. One bpf_loop iteration per frame (the callback is verified once, so two binary
 * searches per frame fit the verifier's budget); a frame with no table, a gap or a rule BPF
 * cannot express takes a frame-pointer step instead, counted. Reads only target memory at the
 * CFA (return address, saved rbp), with bpf_probe_read_user; never writes it.
 *
 * Included once, by sampler.bpf.c, after ctx_read.bpf.h and the arch header.
 */
#ifndef CTXPROF_KUNWIND_BPF_H
#define CTXPROF_KUNWIND_BPF_H

#include "ctxprof/cfi.h"

/* Every module's rows, in slices the daemon allocates (resized before load; 1 entry when the
 * in-kernel unwinder is off). */
struct {
        __uint(type, BPF_MAP_TYPE_ARRAY);
        __uint(max_entries, CTXPROF_KU_DEFAULT_ROWS);
        __type(key, __u32);
        __type(value, struct ctxprof_cfi_row);
} ku_rows SEC(".maps");

/* tgid -> executable mappings with their slices (written by the daemon). */
struct {
        __uint(type, BPF_MAP_TYPE_HASH);
        __uint(max_entries, CTXPROF_MAX_TARGETS);
        __uint(map_flags, BPF_F_NO_PREALLOC);
        __type(key, __u32);
        __type(value, struct ctxprof_ku_proc);
} ku_procs SEC(".maps");

/* The walk's state and output for this CPU's sample (the BPF stack is too small for it). */
struct ku_scratch {
        __u64 regs[CTXPROF_NREGS]; /* the sample's registers when it has no dwarf record */
        __u64 ip, sp, bp;
        __u32 n;      /* ips[] filled */
        __u32 flags;  /* CTXPROF_SF_KU_* seen */
        __u32 exact;  /* sc->ip is an interrupted pc (after a signal frame) */
        __u32 lo, hi; /* a binary search's bounds (see KU_LO) */
        __u32 pad;
        __u64 fp_steps, unsup;
        __u64 ips[CTXPROF_MAX_USTACK];
};

struct {
        __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
        __uint(max_entries, 1);
        __type(key, __u32);
        __type(value, struct ku_scratch);
} ku_scratch SEC(".maps");

struct ku_ctx {
        struct ku_scratch *sc;
        const struct ctxprof_ku_proc *pr;
};

#define KU_STOP     1 /* bpf_loop: end the walk */
#define KU_CONTINUE 0
#define KU_RA_OFF   8  /* x86-64: return address at cfa - 8 */
#define KU_FP_CFA   16 /* frame-pointer step: cfa = rbp + 16, ra at rbp + 8, rbp at rbp */
#define KU_PLT_BASE 8
#define KU_PLT_MASK 15

/*
 * The binary searches keep lo and hi in the scratch map value, not in registers: the verifier
 * does not track map memory, so the two branches of a step reach the next one in the same
 * state and are pruned; in registers, each step's bounds would be a new state to explore
 * (830k instructions verified for the sampling program, 0.93 s of kernel CPU at load,
 * against 23k and 17 ms).
 */
#define KU_LO(sc) (*(volatile __u32 *)&(sc)->lo)
#define KU_HI(sc) (*(volatile __u32 *)&(sc)->hi)

/* The mapping of key, or NULL. */
static __always_inline const struct ctxprof_ku_map *
ku_find_map(struct ku_scratch *sc, const struct ctxprof_ku_proc *pr, __u64 key)
{
        const struct ctxprof_ku_map *m;
        __u32 n = pr->n, lo, hi, k;

        KU_LO(sc) = 0;
        KU_HI(sc) = n < CTXPROF_KU_MAX_MAPS ? n : CTXPROF_KU_MAX_MAPS;
        for (k = 0; k < CTXPROF_KU_MAP_STEPS; k++) {
                __u32 mid;

                lo = KU_LO(sc);
                hi = KU_HI(sc);
                if (lo >= hi)
                        break;
                mid = (lo + hi) / 2;
                if (pr->m[mid & (CTXPROF_KU_MAX_MAPS - 1)].end <= key)
                        KU_LO(sc) = mid + 1;
                else
                        KU_HI(sc) = mid;
        }
        lo = KU_LO(sc);
        /* the mask only shows the verifier the bound */
        m = &pr->m[lo & (CTXPROF_KU_MAX_MAPS - 1)];
        if (lo >= n || m->start > key)
                return NULL;
        return m;
}

/* The row covering file offset off in the slice of m, or NULL. */
static __always_inline const struct ctxprof_cfi_row *
ku_find_row(struct ku_scratch *sc, const struct ctxprof_ku_map *m, __u64 off)
{
        __u32 base = m->row_start, lo, hi, k, idx;

        KU_LO(sc) = 0;
        KU_HI(sc) = m->row_count;
        for (k = 0; k < CTXPROF_KU_ROW_STEPS; k++) {
                const struct ctxprof_cfi_row *r;
                __u32 mid;

                lo = KU_LO(sc);
                hi = KU_HI(sc);
                if (lo >= hi)
                        break;
                mid = (lo + hi) / 2;
                idx = base + mid;
                r = bpf_map_lookup_elem(&ku_rows, &idx);
                if (!r)
                        return NULL;
                if (r->pc <= off)
                        KU_LO(sc) = mid + 1;
                else
                        KU_HI(sc) = mid;
        }
        lo = KU_LO(sc);
        if (!lo)
                return NULL;
        idx = base + lo - 1;
        return bpf_map_lookup_elem(&ku_rows, &idx);
}

/* Caller's (cfa, ra, rbp) by frame pointers. 0 or -1 (no frame pointer chain here). */
static __always_inline int ku_fp_step(struct ku_scratch *sc, __u64 *cfa, __u64 *ra, __u64 *bp)
{
        sc->fp_steps++; /* tried: counted whether or not a frame pointer chain is there */
        sc->flags |= CTXPROF_SF_KU_FALLBACK;
        if (!sc->bp || sc->bp < sc->sp)
                return -1;
        *cfa = sc->bp + KU_FP_CFA;
        if (bpf_probe_read_user(ra, sizeof(*ra), (void *)(sc->bp + KU_FP_CFA - KU_RA_OFF)) ||
            bpf_probe_read_user(bp, sizeof(*bp), (void *)sc->bp))
                return -1;
        return 0;
}

/* Caller's (cfa, ra, rbp) by the CFI row. 0, 1 (outermost frame), -1 (unwinding failed), 2
 * (no rule BPF can use: take a frame-pointer step), or 3 (a signal frame: cfa is the
 * interrupted rsp, which may lie anywhere, sigaltstack). */
static __always_inline int ku_cfi_step(struct ku_scratch *sc, const struct ctxprof_cfi_row *r,
                                       __u64 *cfa, __u64 *ra, __u64 *bp)
{
        switch (r->cfa_rule) {
        case CTXPROF_CFA_RSP:
                *cfa = sc->sp + (__s64)r->cfa_off;
                break;
        case CTXPROF_CFA_RBP:
                *cfa = sc->bp + (__s64)r->cfa_off;
                break;
        case CTXPROF_CFA_PLT:
                *cfa = sc->sp + KU_PLT_BASE +
                       ((sc->ip & KU_PLT_MASK) >= (__u64)r->cfa_off ? KU_PLT_BASE : 0);
                break;
        case CTXPROF_CFA_END:
                return 1;
        case CTXPROF_CFA_SIGNAL:
                if (bpf_probe_read_user(ra, sizeof(*ra), (void *)(sc->sp + CTXPROF_SIG_RIP_OFF)) ||
                    bpf_probe_read_user(cfa, sizeof(*cfa),
                                        (void *)(sc->sp + CTXPROF_SIG_RSP_OFF)) ||
                    bpf_probe_read_user(bp, sizeof(*bp), (void *)(sc->sp + CTXPROF_SIG_RBP_OFF)))
                        return -1;
                sc->exact = 1; /* the interrupted pc: no call before it */
                return 3;
        case CTXPROF_CFA_UNSUP:
                sc->unsup++;
                return 2;
        default:
                return 2;
        }
        if (bpf_probe_read_user(ra, sizeof(*ra), (void *)(*cfa - KU_RA_OFF)))
                return -1;
        *bp = sc->bp;
        if (r->rbp_rule == CTXPROF_RBP_SAVED &&
            bpf_probe_read_user(bp, sizeof(*bp), (void *)(*cfa + (__s64)r->rbp_off)))
                return -1;
        if (r->rbp_rule == CTXPROF_RBP_UNDEF)
                *bp = 0;
        return 0;
}

/* bpf_loop callback: record the current frame, then step to its caller. */
static long ku_step(__u32 i, void *arg)
{
        struct ku_ctx *c = arg;
        struct ku_scratch *sc = c->sc;
        const struct ctxprof_cfi_row *r = NULL;
        const struct ctxprof_ku_map *m;
        __u64 key, cfa = 0, ra = 0, bp = 0;
        __u32 n = sc->n;
        int st = 2;

        if (n >= CTXPROF_MAX_USTACK || !sc->ip)
                return KU_STOP;
        sc->ips[n] = sc->ip;
        sc->n = n + 1;
        /* a return address points after the call; the leaf and an interrupted pc do not */
        key = n && !sc->exact ? sc->ip - 1 : sc->ip;
        sc->exact = 0;
        m = ku_find_map(sc, c->pr, key);
        if (!m)
                sc->flags |= CTXPROF_SF_KU_NOMAP;
        else if (m->row_count)
                r = ku_find_row(sc, m, key - m->bias);
        if (r)
                st = ku_cfi_step(sc, r, &cfa, &ra, &bp);
        if (st == 1)
                sc->flags |= CTXPROF_SF_KU_COMPLETE;
        if (st == 2)
                st = ku_fp_step(sc, &cfa, &ra, &bp);
        if (st == 3)
                st = 0;
        else if (!st && cfa <= sc->sp)
                return KU_STOP; /* the stack grows down: a caller's frame is above */
        if (st)
                return KU_STOP;
        sc->ip = ra;
        sc->sp = cfa;
        sc->bp = bp;
        return KU_CONTINUE;
}

/*
 * Unwind the sampled thread's user stack (regs in enum ctxprof_reg order) into out (room for
 * CTXPROF_MAX_USTACK ips), r->n_ustack set. 0, or -1 when the process has no mapping list
 * yet (the caller uses bpf_get_stack).
 */
static __always_inline int ku_unwind(struct ctxprof_sample_rec *r, __u64 *out, const __u64 *regs,
                                     __u32 tgid, struct ctxprof_counters *cnt)
{
        __u32 zero = 0, n;
        struct ku_ctx c;

        c.pr = bpf_map_lookup_elem(&ku_procs, &tgid);
        if (!c.pr) {
                count(cnt, CTXPROF_CNT_KU_NOPROC);
                return -1;
        }
        c.sc = bpf_map_lookup_elem(&ku_scratch, &zero);
        if (!c.sc)
                return -1;
        c.sc->ip = regs[CTXPROF_REG_IP];
        c.sc->sp = regs[CTXPROF_REG_SP];
        c.sc->bp = regs[CTXPROF_REG_RBP];
        c.sc->n = 0;
        c.sc->flags = 0;
        c.sc->exact = 0;
        c.sc->fp_steps = 0;
        c.sc->unsup = 0;
        bpf_loop(CTXPROF_MAX_USTACK, ku_step, &c, 0);
        n = c.sc->n;
        if (n > CTXPROF_MAX_USTACK)
                n = CTXPROF_MAX_USTACK;
        if (n && bpf_probe_read_kernel(out, n * sizeof(__u64), c.sc->ips))
                n = 0;
        r->n_ustack = n;
        r->flags |= CTXPROF_SF_KUNWIND | c.sc->flags;
        count(cnt, CTXPROF_CNT_KU_SAMPLES);
        if (cnt) {
                cnt->c[CTXPROF_CNT_KU_FRAMES] += n;
                cnt->c[CTXPROF_CNT_KU_FP_STEPS] += c.sc->fp_steps;
                cnt->c[CTXPROF_CNT_KU_UNSUP] += c.sc->unsup;
                if (c.sc->flags & CTXPROF_SF_KU_NOMAP)
                        cnt->c[CTXPROF_CNT_KU_NOMAP]++;
        }
        return 0;
}

#endif
