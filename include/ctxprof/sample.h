/* SPDX-License-Identifier: MIT */
/*
 * ctxprof/sample.h — wire format between the BPF sampler (bpf/sampler.bpf.c) and the daemon
 * (daemon/engine/sampler_ingest.c): the ring-buffer sample record, the lifecycle event record
 * and the per-CPU counters. Shared by both sides: only __u/__s types, fixed heads followed by
 * variable-length parts whose lengths the head states, no pointers. Must never contain logic
 * beyond constants.
 *
 * The BPF side copies raw target memory into the record with bounded reads and never
 * interprets it; every decision about what a label or span means (checksum, first duplicate
 * wins, NULL keys, truncation) is taken in user space from the raw lengths kept here.
 */
#ifndef CTXPROF_SAMPLE_H
#define CTXPROF_SAMPLE_H

#ifndef __bpf__
#include <linux/types.h>
#endif

/* Build-time caps (Custom Labels readers choose their own; see the spec). */
#define CTXPROF_MAX_LABELS    10    /* labelset entries read per sample (storage[0..10)) */
#define CTXPROF_LABEL_KEY_MAX 128   /* key bytes copied; longer keys are dropped by the reader */
#define CTXPROF_LABEL_VAL_MAX 256   /* value bytes copied; longer values are truncated */
#define CTXPROF_MAX_USTACK    127   /* user frames (bpf_get_stack) */
#define CTXPROF_MAX_KSTACK    48    /* kernel frames */
#define CTXPROF_STACK_COPY    16384 /* stack-copy records: bytes of user stack from sp */
#define CTXPROF_NREGS         17    /* stack-copy records: user registers, enum ctxprof_reg */
#define CTXPROF_COMM_LEN      16
/* OTEP 4947 record: fixed header, then attrs_data_size bytes of entries; the OTEP's budget
 * for the whole record is 640 bytes, and BPF copies no more. */
#define CTXPROF_OTEL_HDR     28
#define CTXPROF_OTEL_REC_MAX 640

/*
 * ctxprof_sample_copy_rec.regs[]: the DWARF register numbering of x86-64 (System V psABI),
 * the order libdwfl takes them in. Filled by BPF in bpf/arch_x86.h; read by the daemon's
 * unwinder. An arm64 port changes this list (and that header).
 */
enum ctxprof_reg {
        CTXPROF_REG_RAX = 0,
        CTXPROF_REG_RDX = 1,
        CTXPROF_REG_RCX = 2,
        CTXPROF_REG_RBX = 3,
        CTXPROF_REG_RSI = 4,
        CTXPROF_REG_RDI = 5,
        CTXPROF_REG_RBP = 6,
        CTXPROF_REG_RSP = 7,
        CTXPROF_REG_R8 = 8,
        CTXPROF_REG_R9 = 9,
        CTXPROF_REG_R10 = 10,
        CTXPROF_REG_R11 = 11,
        CTXPROF_REG_R12 = 12,
        CTXPROF_REG_R13 = 13,
        CTXPROF_REG_R14 = 14,
        CTXPROF_REG_R15 = 15,
        CTXPROF_REG_RIP = 16, /* the return-address column: the interrupted pc */
};
#define CTXPROF_REG_SP CTXPROF_REG_RSP /* the user stack is copied from here */
#define CTXPROF_REG_IP CTXPROF_REG_RIP /* the leaf frame */
_Static_assert(CTXPROF_REG_RIP + 1 == CTXPROF_NREGS, "regs[] holds every register up to rip");

/* First field of every ring record: what follows. */
enum ctxprof_rec_type {
        CTXPROF_REC_SAMPLE = 1,      /* struct ctxprof_sample_rec */
        CTXPROF_REC_SAMPLE_COPY = 2, /* struct ctxprof_sample_copy_rec */
        CTXPROF_REC_EVENT = 3,       /* struct ctxprof_event_rec */
        CTXPROF_REC_OFFCPU = 4,      /* struct ctxprof_offcpu_rec */
};

/* ctxprof_sample_rec.flags */
#define CTXPROF_SF_TP         0x1  /* thread pointer was non-zero */
#define CTXPROF_SF_SPAN_READ  0x2  /* span[] holds the raw 24 bytes of the span record */
#define CTXPROF_SF_LABELSET   0x4  /* a labelset pointer was read and was non-NULL */
#define CTXPROF_SF_LABELS_CUT 0x8  /* labelset count > CTXPROF_MAX_LABELS */
#define CTXPROF_SF_USER_MODE  0x10 /* the sample interrupted user mode */
#define CTXPROF_SF_REGS       0x20 /* stack copy: regs[] valid */
#define CTXPROF_SF_TLS_STALE  0x40 /* the location was made for an image before an exec: no read */
#define CTXPROF_SF_CGROUP     0x80 /* sampled for its cgroup (not in the targets map yet) */
/* taken while the location was pending (ctxprof/tls_target.h): recorded only with context */
#define CTXPROF_SF_PENDING  0x100
#define CTXPROF_SF_OTEL     0x200 /* the otel part holds the header (and entries) of a record */
#define CTXPROF_SF_OTEL_CUT 0x400 /* attrs_data_size over the budget: prefix copied */
/* ustack[] came from the in-kernel .eh_frame unwinder (bpf/kunwind.bpf.h), not bpf_get_stack */
#define CTXPROF_SF_KUNWIND     0x800
#define CTXPROF_SF_KU_FALLBACK 0x1000 /* ... and took at least one frame-pointer step */
#define CTXPROF_SF_KU_NOMAP    0x2000 /* ... and met an ip in no mapping it knows (dlopen) */
/* ... and reached the outermost frame (return address undefined: _start, clone) */
#define CTXPROF_SF_KU_COMPLETE 0x4000
#define CTXPROF_SF_GO_LABELS   0x8000 /* the labels part holds a goroutine's pprof labels */

/* Cgroups whose processes are sampled without being in the targets map (daemon cgroup
 * selectors: the process and every descendant cgroup, checked in the kernel) */
#define CTXPROF_MAX_CGROUPS 16

/* ctxprof_sample_rec.errors: each bit = that read failed (the item is treated as absent) */
#define CTXPROF_SE_SPAN_ADDR   0x1   /* span TLS address could not be computed (DTV read) */
#define CTXPROF_SE_SPAN_READ   0x2   /* bpf_probe_read_user of the span record faulted */
#define CTXPROF_SE_LABELS_ADDR 0x4   /* labels TLS address could not be computed */
#define CTXPROF_SE_LABELS_READ 0x8   /* pointer or labelset header read faulted */
#define CTXPROF_SE_USTACK      0x10  /* bpf_get_stack(user) failed */
#define CTXPROF_SE_KSTACK      0x20  /* bpf_get_stack(kernel) failed */
#define CTXPROF_SE_REGS        0x40  /* stack copy: user registers unavailable */
#define CTXPROF_SE_STACK_COPY  0x80  /* stack copy: not even the first page could be copied */
#define CTXPROF_SE_OTEL_ADDR   0x100 /* otel_thread_ctx_v1 TLS address could not be computed */
#define CTXPROF_SE_OTEL_READ   0x200 /* the pointer or the record it names could not be read */

/* ctxprof_label_rec.flags */
#define CTXPROF_LF_PRESENT     0x1  /* storage[i] was read */
#define CTXPROF_LF_ENTRY_FAULT 0x2  /* reading storage[i] faulted */
#define CTXPROF_LF_KEY_NULL    0x4  /* key.buf == NULL: reader must skip the label */
#define CTXPROF_LF_KEY_FAULT   0x8  /* reading the key bytes faulted */
#define CTXPROF_LF_VAL_NULL    0x10 /* value.buf == NULL (non-conforming writer) */
#define CTXPROF_LF_VAL_FAULT   0x20 /* reading the value bytes faulted */

/*
 * Ring records are variable-length: a record carries what it holds, not its caps. Layout,
 * each part starting at an 8-byte boundary:
 *
 *   head      struct ctxprof_sample_rec, or a type's head that begins with it
 *             (ctxprof_sample_copy_rec, ctxprof_offcpu_rec)
 *   ustack    n_ustack x __u64 user ips, leaf first
 *   kstack    n_kstack x __u64 kernel ips, leaf first
 *   labels    labels_len bytes: n_labels entries, each a struct ctxprof_label_rec followed by
 *             key_bytes of key and val_bytes of value, padded to 8 (CTXPROF_LABEL_REC_SIZE)
 *   otel      otel_len bytes of the OTEP 4947 record (header + entries), padded to 8
 *   stack     stack copy: stack_len bytes of user stack copied from regs[CTXPROF_REG_SP]
 *
 * len is the whole record; every count and length is capped below and user space checks
 * each against the record's size before use (engine/record_view.c).
 */
#define CTXPROF_REC_ALIGN    8
#define CTXPROF_REC_ROUND(n) (((n) + CTXPROF_REC_ALIGN - 1) & ~(CTXPROF_REC_ALIGN - 1))

/* One labelset entry as found in the target: 24 bytes, then key_bytes + val_bytes. */
struct ctxprof_label_rec {
        __u64 key_len;   /* raw key.len from the target (may be anything) */
        __u64 val_len;   /* raw value.len */
        __u32 flags;     /* CTXPROF_LF_* */
        __u16 key_bytes; /* key bytes that follow: min(key_len, cap) when read, else 0 */
        __u16 val_bytes; /* value bytes after them: min(val_len, cap) when read, else 0 */
};
_Static_assert(sizeof(struct ctxprof_label_rec) == 24, "label entry head: 24 bytes, no padding");
#define CTXPROF_LABEL_REC_SIZE(kb, vb)                                                             \
        CTXPROF_REC_ROUND(sizeof(struct ctxprof_label_rec) + (kb) + (vb))
#define CTXPROF_LABEL_REC_MAX                                                                      \
        CTXPROF_LABEL_REC_SIZE(CTXPROF_LABEL_KEY_MAX, CTXPROF_LABEL_VAL_MAX) /* 408 */
#define CTXPROF_LABELS_BYTES_MAX (CTXPROF_MAX_LABELS * CTXPROF_LABEL_REC_MAX)

/* Raw span record: the first 24 bytes of ctx_span_context_v1, as read in one copy. */
struct ctxprof_span_raw {
        __u64 span_id;
        __u64 root_span_id;
        __u64 checksum; /* validated in user space; 0 or mismatch = no span (torn read) */
};
_Static_assert(sizeof(struct ctxprof_span_raw) == 24, "span record: the 3 words of ctx/abi.h");

/* The head of every sample record (frame-pointer samples carry nothing else before the
 * variable parts). */
struct ctxprof_sample_rec {
        __u32 type; /* enum ctxprof_rec_type */
        __u32 tgid; /* as the daemon sees it (its PID namespace: see pidns_ino in BPF) */
        __u32 tid;
        __u32 cpu;
        __u64 time_ns;               /* bpf_ktime_get_ns (CLOCK_MONOTONIC) */
        __u32 flags;                 /* CTXPROF_SF_* */
        __u32 errors;                /* CTXPROF_SE_* */
        __u64 tls_generation;        /* ctxprof_tls_target.generation of the location */
        __u64 tp;                    /* thread pointer (fsbase) */
        char comm[CTXPROF_COMM_LEN]; /* thread name at sample time */
        struct ctxprof_span_raw span;
        __u64 label_count; /* raw labelset count */
        __u32 n_labels;    /* label entries in the labels part (those attempted) */
        __u32 n_ustack;    /* user ips in the ustack part */
        __u32 n_kstack;    /* kernel ips in the kstack part */
        __u32 labels_len;  /* bytes of the labels part */
        __u64 otel_ptr;    /* value of otel_thread_ctx_v1 (0 = no record) */
        __u32 otel_len;    /* with CTXPROF_SF_OTEL: bytes of the otel part (before padding) */
        __u32 len;         /* bytes of the whole record */
};
_Static_assert(sizeof(struct ctxprof_sample_rec) == 128, "sample head: 128 bytes, no padding");

/* DWARF-mode sample: the head plus user registers; the stack copy is the last part. */
struct ctxprof_sample_copy_rec {
        struct ctxprof_sample_rec base; /* base.type == CTXPROF_REC_SAMPLE_COPY */
        __u64 regs[CTXPROF_NREGS];      /* enum ctxprof_reg */
        __u64 stack_len;                /* bytes of the stack part */
};
_Static_assert(sizeof(struct ctxprof_sample_copy_rec) ==
                   sizeof(struct ctxprof_sample_rec) + 8 * CTXPROF_NREGS + 8,
               "stack-copy head: no padding (272 bytes)");

/*
 * Off-CPU interval (bpf/offcpu.bpf.h): a target thread left the CPU without being runnable
 * (it blocked); the record is emitted when it next runs. base holds what was read at the
 * switch-out (context, user and kernel stacks, time_ns = the switch-out), so the stacks are
 * the blocking ones. Kept per thread in the BPF map `offcpu_threads` between the two.
 */
struct ctxprof_offcpu_rec {
        struct ctxprof_sample_rec base; /* base.type == CTXPROF_REC_OFFCPU */
        __u64 duration_ns;              /* switch-out to switch-in (run-queue delay included) */
        __u64 runq_ns; /* wakeup to switch-in: runnable but not running; 0 = no wakeup seen */
        __u64 wake_ns; /* BPF bookkeeping: time of the wakeup, 0 = none yet */
        __u32 state;   /* prev_state at the switch-out (TASK_INTERRUPTIBLE = 1, ...) */
        __u32 pad;
};
_Static_assert(sizeof(struct ctxprof_offcpu_rec) == sizeof(struct ctxprof_sample_rec) + 32,
               "off-CPU head: the sample head + 32 bytes, no padding");

/* Size caps of a record's parts: the longest head, then each variable part at its cap. */
#define CTXPROF_REC_HEAD_MAX     sizeof(struct ctxprof_sample_copy_rec)
#define CTXPROF_STACKS_BYTES_MAX (8 * (CTXPROF_MAX_USTACK + CTXPROF_MAX_KSTACK))
/* A record without a stack copy (fp, in-kernel dwarf, off-CPU) is at most this long. */
#define CTXPROF_REC_CTX_MAX                                                                        \
        (CTXPROF_REC_HEAD_MAX + CTXPROF_STACKS_BYTES_MAX + CTXPROF_LABELS_BYTES_MAX +              \
         CTXPROF_OTEL_REC_MAX)
/* Any record. */
#define CTXPROF_REC_MAX (CTXPROF_REC_CTX_MAX + CTXPROF_STACK_COPY)
_Static_assert(CTXPROF_REC_CTX_MAX % CTXPROF_REC_ALIGN == 0, "parts stay 8-byte aligned");

/* Off-CPU intervals shorter than this are dropped in the kernel (and counted). */
#define CTXPROF_OFFCPU_MIN_NS_DEFAULT 1000000ull /* 1 ms */
/* Threads with an off-CPU slot at once (map `offcpu_threads`; more are counted, not kept). */
#define CTXPROF_OFFCPU_MAX_THREADS_DEFAULT 8192

/*
 * Lifecycle events. They travel in the ring `samples`, between the samples, so that the
 * consumer sees them in the order they happened: every sample a process took before it
 * exec'ed or exited comes out before the event. Only when `samples` is full are they put in
 * the small ring `events` instead (consumed after `samples`: order is then best effort).
 */
enum ctxprof_event_type {
        CTXPROF_EV_FORK = 1,       /* new process forked by a target (child tgid in tgid) */
        CTXPROF_EV_EXEC = 2,       /* a target exec'ed: TLS must be located again */
        CTXPROF_EV_EXIT = 3,       /* the last thread of a target exited */
        CTXPROF_EV_EXEC_OTHER = 4, /* notify_exec_all: a process that is not a target exec'ed */
        CTXPROF_EV_MAP = 5,        /* a target mapped a file that may hold TLS (dlopen) */
};

struct ctxprof_event_rec {
        __u32 type;  /* CTXPROF_REC_EVENT */
        __u32 event; /* enum ctxprof_event_type */
        __u32 tgid;
        __u32 tid;
        __u32 parent_tgid; /* FORK: the target that forked */
        __u32 pad;
        __u64 time_ns;
        char comm[CTXPROF_COMM_LEN];
};
_Static_assert(sizeof(struct ctxprof_event_rec) == 48, "event record: 48 bytes, no padding");

/*
 * Event bounds. Lifecycle and MAP events cost the daemon work (a maps re-read, a TLS
 * location, a wakeup), so a process cannot send them faster than its budget: at most
 * CTXPROF_EV_PER_PROC MAP, EXEC and FORK events per CTXPROF_EV_WINDOW_NS per process, and
 * EXEC_OTHER events (notify_exec_all) at most CTXPROF_EV_PER_PROC per process and
 * CTXPROF_EXEC_OTHER_PER_WINDOW host-wide per window. What the budget refuses is counted
 * (CTXPROF_CNT_EV_LIMITED, CTXPROF_CNT_EXEC_LIMITED). A refused EXEC still counts the exec and
 * marks the location pending (the daemon catches up from the next sample's flags); a refused
 * MAP marks nothing (the locator's retry finds the library). EXIT events are never limited.
 */
#define CTXPROF_EV_WINDOW_NS          1000000000ull /* 1 s */
#define CTXPROF_EV_PER_PROC           32
#define CTXPROF_EXEC_OTHER_PER_WINDOW 1024
/* An EXEC_OTHER event wakes the daemon when none has for this long (host-wide): the process
 * it names may be gone by the daemon's next timed drain (a short job), while a burst of
 * execs still costs at most one wakeup per gap. */
#define CTXPROF_EXEC_OTHER_WAKE_GAP_NS 10000000ull /* 10 ms */

/* A sample lost to a full ring counts as CTXPROF_CNT_LOST_AWAY when the consumer has not been
 * at its ring for this long: a drain interval (it polls at least every 100 ms when idle, and
 * a forced wakeup reaches it within a scheduling latency), so longer means it was blocked,
 * busy elsewhere or starved of CPU; shorter, it was draining and the ring is too small. */
#define CTXPROF_CONSUMER_AWAY_NS 20000000ull /* 20 ms */

/* Per-CPU counters (map `counters`, one entry). Indices into ctxprof_counters.c[]. */
enum ctxprof_counter {
        CTXPROF_CNT_SAMPLES = 0,      /* target samples taken */
        CTXPROF_CNT_LOST,             /* ring full: record dropped */
        CTXPROF_CNT_NO_TP,            /* thread pointer 0: no context read */
        CTXPROF_CNT_SPAN_FAULT,       /* span address/read failures */
        CTXPROF_CNT_LABELSET_FAULT,   /* labelset pointer/header read failures */
        CTXPROF_CNT_LABEL_FAULT,      /* entry/key/value read failures */
        CTXPROF_CNT_USTACK_ERR,       /* bpf_get_stack(user) < 0 */
        CTXPROF_CNT_KSTACK_ERR,       /* bpf_get_stack(kernel) < 0 */
        CTXPROF_CNT_STACK_COPY_ERR,   /* stack copy: first page unreadable */
        CTXPROF_CNT_EVENTS_LOST,      /* both rings full: lifecycle event dropped */
        CTXPROF_CNT_WAKEUPS,          /* forced ring wakeups */
        CTXPROF_CNT_TLS_STALE,        /* location refused: made before the target's last exec */
        CTXPROF_CNT_OTEL_FAULT,       /* otel_thread_ctx_v1 address/pointer/record read failures */
        CTXPROF_CNT_OFFCPU,           /* off-CPU intervals emitted */
        CTXPROF_CNT_OFFCPU_SHORT,     /* intervals under the minimum duration: dropped */
        CTXPROF_CNT_OFFCPU_FULL,      /* switch-out of a target with no free slot: not tracked */
        CTXPROF_CNT_OFFCPU_LOST,      /* ring full at switch-in: interval dropped */
        CTXPROF_CNT_OFFCPU_EXITED,    /* slots freed at thread exit */
        CTXPROF_CNT_OFFCPU_OPEN_EXIT, /* ... of those, with an interval still open: dropped */
        CTXPROF_CNT_KU_SAMPLES,       /* samples unwound in the kernel from unwind tables */
        CTXPROF_CNT_KU_FRAMES,        /* frames those produced */
        CTXPROF_CNT_KU_NOPROC,        /* no mapping list for the process yet: bpf_get_stack */
        CTXPROF_CNT_KU_FP_STEPS,      /* frame-pointer steps: no table, gap or unsupported rule */
        CTXPROF_CNT_KU_UNSUP,         /* ... of which for a rule BPF cannot express */
        CTXPROF_CNT_KU_NOMAP,         /* an ip in no known mapping (unwinding stopped there) */
        /* Event bounds and the library-load hook (see "Event bounds" below) */
        CTXPROF_CNT_EV_LIMITED,   /* MAP/EXEC/FORK events over their process's budget: not sent */
        CTXPROF_CNT_EXEC_LIMITED, /* EXEC_OTHER events over a budget: not sent */
        CTXPROF_CNT_TARGETS_FULL, /* a target's child not made a target: `targets` full */
        CTXPROF_CNT_DL_NOTIFY,    /* library-load hook hits in targets (uprobe or sys_exit) */
        CTXPROF_CNT_FILTERED,     /* no context source read and the filter needs one: not sent */
        /* CTXPROF_CNT_LOST by its cause (they sum to it), from `consumer_ns` (sampler.bpf.c) */
        CTXPROF_CNT_LOST_UNSTARTED, /* the consumer had not drained yet */
        CTXPROF_CNT_LOST_AWAY,      /* no drain for CTXPROF_CONSUMER_AWAY_NS: blocked or starved */
        CTXPROF_CNT_LOST_DRAINING,  /* the consumer was draining: the ring too small for the rate */
        /* Go programs' goroutine labels (tls_target.h, struct ctxprof_go_layout) */
        CTXPROF_CNT_GO_LABELS, /* samples whose goroutine had labels, read */
        CTXPROF_CNT_GO_TORN,   /* ... not read whole: a map growing, a read fault, fewer entries
                                * found than its count (changed while read): no labels */
        CTXPROF_CNT_MAX,
};

struct ctxprof_counters {
        __u64 c[CTXPROF_CNT_MAX];
};
_Static_assert(sizeof(struct ctxprof_counters) == 8 * CTXPROF_CNT_MAX, "counters: no padding");

#endif /* CTXPROF_SAMPLE_H */
