/* SPDX-License-Identifier: MIT */
/*
 * ctxprof/tls_target.h — wire format between the TLS locator (daemon/tls/tls_locate.c) and the
 * BPF sampler: how, for one process, the BPF program finds the address of a thread-local
 * variable from the sampled thread's pointer (tp: on x86-64 task->thread.fsbase, TLS variant
 * II, see bpf/arch_x86.h).
 *
 * Value of the per-process BPF map keyed by tgid. Shared by both sides: only __u/__s types.
 */
#ifndef CTXPROF_TLS_TARGET_H
#define CTXPROF_TLS_TARGET_H

#ifndef __bpf__
#include <linux/types.h>
#endif

enum ctxprof_tls_mode {
        CTXPROF_TLS_NONE = 0,   /* variable not present (yet): no read */
        CTXPROF_TLS_STATIC = 1, /* address = tp + tp_offset (tp_offset < 0 on x86-64) */
        CTXPROF_TLS_DTV = 2,    /* dtv = *(tp + dtv.dtv_offset);
                                 * if dtv.has_len, require module <= dtv[dtv.len_index];
                                 * block = *(dtv + module * dtv_stride); block in {0, -1} = none;
                                 * address = block + offset */
};

/* One thread-local variable. 32 bytes. */
struct ctxprof_tls_var {
        __u32 mode;       /* enum ctxprof_tls_mode */
        __u32 dtv_stride; /* DTV entry size: glibc 16, musl 8 */
        __s64 tp_offset;  /* STATIC: offset from tp */
        __u64 module;     /* DTV: module id (index into the DTV) */
        __u64 offset;     /* DTV: offset inside the module's TLS block */
};
_Static_assert(sizeof(struct ctxprof_tls_var) == 32, "TLS variable: 32 bytes, no padding");

/* How the DTV is laid out for this process's libc. 16 bytes. */
struct ctxprof_dtv_layout {
        __s32 dtv_offset; /* where tp holds the DTV pointer: 8 for glibc and musl x86-64 */
        __s32 len_index;  /* entry index holding the DTV length: glibc -1, musl 0 */
        __u32 has_len;    /* 1 = bounds-check module against the length entry */
        __u32 pad;
};
_Static_assert(sizeof(struct ctxprof_dtv_layout) == 16, "DTV layout: 16 bytes, no padding");

/*
 * A Go program's goroutine labels (runtime/pprof.Do, SetGoroutineLabels): the sampled
 * thread's current goroutine is g = *(tp + g_tp_offset) (Go's TLS slot), its M's user
 * goroutine curg = *(*(g + g_m) + m_curg), and curg's labels *(curg + g_labels). 16 bytes.
 *
 * kind CTXPROF_GO_LABELS_HMAP (Go up to 1.23, found in the binary's DWARF or its version):
 * the labels pointer points to a runtime/pprof.labelMap, a map[string]string: a pointer to
 * its hmap {count int @0, B uint8 @9, buckets @16, oldbuckets @24}, each bucket 272 bytes
 * {tophash [8]u8 @0, keys [8]string @8, values [8]string @136, overflow *bucket @264}, a
 * string {ptr, len}. A slot is full when its tophash is >= 5 (runtime's minTopHash).
 */
enum ctxprof_go_labels_kind {
        CTXPROF_GO_LABELS_NONE = 0, /* not a Go program */
        CTXPROF_GO_LABELS_HMAP = 1,
        CTXPROF_GO_LABELS_UNKNOWN = 2, /* a Go program whose layout is not known: no read,
                                        * counted by the daemon (never a wrong label) */
};

struct ctxprof_go_layout {
        __s32 g_tp_offset; /* x86-64: -8 (runtime.tlsg, the executable's TLS block) */
        __u16 g_m;         /* offsetof(runtime.g, m) */
        __u16 m_curg;      /* offsetof(runtime.m, curg) */
        __u16 g_labels;    /* offsetof(runtime.g, labels) */
        __u16 kind;        /* enum ctxprof_go_labels_kind */
        __u32 pad;
};
_Static_assert(sizeof(struct ctxprof_go_layout) == 16, "Go layout: 16 bytes, no padding");

/*
 * Per-process value of the BPF map `targets` (key: __u32 tgid as the daemon sees it; BPF
 * translates pids to the daemon's PID namespace). The map, `exec_gens` and the daemon's
 * process table hold at most CTXPROF_MAX_TARGETS processes.
 *
 * exec_gen: which image of the process the location describes. BPF counts the execs of each
 * target in the map `exec_gens` (key: tgid, value: __u64, no entry = 0) and follows a
 * location only while exec_gen equals that count. The daemon reads the count before it
 * reads the process's files and memory, so a location it publishes after the process
 * exec'ed again (its update can land after BPF's reset) is refused, not applied to the new
 * image.
 */
struct ctxprof_tls_target {
        struct ctxprof_tls_var labels; /* custom_labels_current_set (a pointer variable) */
        struct ctxprof_tls_var span;   /* ctx_span_context_v1 (the 64-byte record itself) */
        struct ctxprof_tls_var otel;   /* otel_thread_ctx_v1 (OTEP 4947: a pointer variable) */
        struct ctxprof_dtv_layout dtv;
        struct ctxprof_go_layout go; /* goroutine labels (Go programs); read when no labels */
        __u64 generation;            /* bumped by the daemon on every location it publishes */
        __u64 exec_gen; /* the exec count (map `exec_gens`) the location was made for */
        __u64 flags;    /* CTXPROF_TLS_F_* */
};
_Static_assert(sizeof(struct ctxprof_tls_target) == 3 * sizeof(struct ctxprof_tls_var) +
                                                        sizeof(struct ctxprof_dtv_layout) +
                                                        sizeof(struct ctxprof_go_layout) + 24,
               "TLS target: 152 bytes, no padding");

/* Whether t says where any context is: a variable located, or a Go labels layout. */
static inline int ctxprof_tls_target_any(const struct ctxprof_tls_target *t)
{
        return t->labels.mode != CTXPROF_TLS_NONE || t->span.mode != CTXPROF_TLS_NONE ||
               t->otel.mode != CTXPROF_TLS_NONE || t->go.kind == CTXPROF_GO_LABELS_HMAP;
}

#define CTXPROF_MAX_TARGETS 4096 /* processes sampled at once (BPF maps, daemon table) */

/*
 * flags: CTXPROF_TLS_F_PENDING = a location is being made and this one may be incomplete:
 * the target was just added (attach), exec'ed, or mapped a file that may hold a TLS variable
 * (a dlopen). Set by the daemon when it inserts a target and by BPF (exec, file mmap/mprotect
 * of a target); cleared by the daemon's next published location. BPF marks every sample taken
 * meanwhile CTXPROF_SF_PENDING, and the daemon does not record such a sample unless it
 * carries context (see daemon/engine/procs.c for why it is not held and completed later).
 */
#define CTXPROF_TLS_F_PENDING 0x1

#endif /* CTXPROF_TLS_TARGET_H */
