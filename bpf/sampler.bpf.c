// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * sampler.bpf.c — the perf_event sampling program and the process lifecycle tracepoints.
 *
 * Runs on the interrupted thread: filters by tgid (map `targets`), reads the thread's span
 * record and Custom Labels set with bounded bpf_probe_read_user calls at the addresses the
 * daemon's TLS locator described, takes the user (frame pointer) and kernel stacks, and in
 * stack-copy modes (dwarf-copy, dwarf-check) the user registers plus a page-wise copy of the
 * user stack. It never interprets
 * target memory (no checksum check, no duplicate handling): it copies raw bytes and lengths
 * and lets user space decide. Every failed read means "absent" and is counted.
 *
 * A record is assembled in a per-CPU scratch buffer (rec_bufs) and sent with
 * bpf_ringbuf_output of its exact size: it carries the frames, label bytes and OTel bytes it
 * holds, not its caps (ctxprof/sample.h). Records go with BPF_RB_NO_WAKEUP (a wakeup costs
 * ~6 µs per record on this VM);
 * the consumer polls on a timer, and a wakeup is forced above `wakeup_bytes` of pending data.
 * Lifecycle events share the sample ring (in order with the samples); only those that make a
 * target's context wait (its exec, a library it loaded) wake the consumer, and only for
 * `record` (see prompt_events); every event is bounded per process (ctxprof/sample.h,
 * "Event bounds").
 *
 * Host-wide hooks (sched_process_fork/exec/exit) run for every task on the host: each returns
 * after one hash lookup for a non-target. The library-load hook is per target (a uprobe on
 * its ld.so's _dl_debug_state, attached by daemon/engine/load_hook.c); tp_btf/sys_exit, which
 * every syscall of every task would pay for, is attached only where uprobes are unavailable.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>

#include "ctxprof/tls_target.h"
#include "ctxprof/sample.h"
#include "ctx_read.bpf.h"

#if defined(__TARGET_ARCH_x86)
#include "arch_x86.h"
#else
#error "no BPF arch header for this target: see bpf/arch_x86.h"
#endif

#include "kunwind.bpf.h"

/* GPL-compatible for the kernel (GPL-only helpers); the SPDX line above, README "Licence" */
char LICENSE[] SEC("license") = "Dual BSD/GPL";

#ifndef E2BIG
#define E2BIG 7 /* a full hash map refuses an insert with -E2BIG */
#endif

const volatile __u32 stack_copy_mode = 0; /* 1: CTXPROF_REC_SAMPLE_COPY records */
const volatile __u32 kunwind = 0;         /* 1: user stacks from the .eh_frame tables */
const volatile __u32 kernel_stacks = 1;   /* 1: also take the kernel stack */
const volatile __u32 follow_children = 0; /* 1: processes forked by targets become targets */
const volatile __u64 wakeup_bytes = 256 * 1024;
const volatile __u32 notify_exec_all = 0; /* 1 (daemon): report every exec to user space */
const volatile __u32 self_tgid = 0;       /* never reported: ctxprof itself */
/* 1: the context filter keeps only samples with context (engine/context_filter.h,
 * context_filter_needs_context), so a sample that read none is dropped here, before the ring */
const volatile __u32 filter_needs_context = 0;
/* Sidecar: when pidns_ino != 0, every pid (map keys, records) is the one seen in that PID
 * namespace (st_dev/st_ino of the daemon's /proc/self/ns/pid); tasks outside it are ignored. */
const volatile __u64 pidns_dev = 0;
const volatile __u64 pidns_ino = 0;

/* tgid/tid of the current task in the daemon's namespace. 0 = ok, -1 = outside it. */
static __always_inline int cur_ids(__u32 *tgid, __u32 *tid)
{
        if (pidns_ino) {
                struct bpf_pidns_info ns;

                if (bpf_get_ns_current_pid_tgid(pidns_dev, pidns_ino, &ns, sizeof(ns)))
                        return -1;
                *tgid = ns.tgid;
                *tid = ns.pid;
                return 0;
        }
        __u64 id = bpf_get_current_pid_tgid();

        *tgid = id >> 32;
        *tid = (__u32)id;
        return 0;
}

/* PID namespace levels looked at (the host is level 0; a sidecar is usually at 1). */
#define MAX_PIDNS_DEPTH 8

/* A (non-current) task's tgid in the daemon's namespace: walk its group leader's pid
 * numbers for the level whose namespace is ours. 0 = not visible there. */
static __always_inline __u32 task_tgid_ns(struct task_struct *t)
{
        struct pid *pid;
        unsigned level;
        int i;

        if (!pidns_ino)
                return BPF_CORE_READ(t, tgid);
        pid = BPF_CORE_READ(t, group_leader, thread_pid);
        level = BPF_CORE_READ(pid, level);
        for (i = 0; i < MAX_PIDNS_DEPTH; i++) {
                if ((unsigned)i > level)
                        break;
                if (BPF_CORE_READ(pid, numbers[i].ns, ns.inum) == (__u32)pidns_ino)
                        return BPF_CORE_READ(pid, numbers[i].nr);
        }
        return 0;
}

struct {
        __uint(type, BPF_MAP_TYPE_HASH);
        __uint(max_entries, CTXPROF_MAX_TARGETS);
        __type(key, __u32); /* tgid */
        __type(value, struct ctxprof_tls_target);
} targets SEC(".maps");

/* Execs per target (see ctxprof/tls_target.h): written here only, no entry = 0. */
struct {
        __uint(type, BPF_MAP_TYPE_HASH);
        __uint(max_entries, CTXPROF_MAX_TARGETS);
        __type(key, __u32); /* tgid */
        __type(value, __u64);
} exec_gens SEC(".maps");

static __always_inline __u64 exec_gen_of(__u32 tgid)
{
        __u64 *g = bpf_map_lookup_elem(&exec_gens, &tgid);

        return g ? *g : 0;
}

/* Daemon cgroup selectors: a process in one of these cgroups (or below) is sampled even
 * before the daemon put it into `targets` (it moved in after its exec, say); the daemon adds
 * it on its first sample (CTXPROF_SF_CGROUP). Slots 0..ncgroups-1 are used. */
struct {
        __uint(type, BPF_MAP_TYPE_CGROUP_ARRAY);
        __uint(max_entries, CTXPROF_MAX_CGROUPS);
        __type(key, __u32);
        __type(value, __u32);
} cgroups SEC(".maps");
__u32 ncgroups = 0; /* written by the daemon at run time (selectors reload) */
/* 0 until user space can drain the rings (sampler_start): a target's sample or off-CPU
 * interval before that is not taken, as perf takes none before it starts, instead of filling
 * the ring while targets are added and located (and then lost). Tested after the checks that
 * dismiss a non-target: those pay nothing for it. */
__u32 sampling_on = 0;
/* CLOCK_MONOTONIC ns of the consumer's last visit to its ring (before and after it waits,
 * and while it drains), written by user space (sampler.c); 0 before its first: the cause of
 * a sample lost to a full ring (count_lost). */
volatile __u64 consumer_ns = 0;
static const struct ctxprof_tls_target no_location = {};

/*
 * A bitmap over kernel tgids (bit tgid % TARGET_BITS) with a bit set for every process that
 * is or was a target: set by the daemon before it adds a target, and here when a fork makes
 * one; never cleared (a stale bit only costs the map lookup it saves). Programs that run for
 * every task on the host (sched_switch) test it first, with two loads and no helper call.
 * Not usable when pids are translated (sidecar: the daemon knows no kernel tgid) or cgroup
 * selectors pick processes the targets map does not hold: target_maybe says yes then.
 */
#define TARGET_BITS (1u << 16)
__u64 target_bits[TARGET_BITS / 64];

static __always_inline void target_mark(__u32 tgid)
{
        __sync_fetch_and_or(&target_bits[(tgid / 64) % (TARGET_BITS / 64)], 1ull << (tgid % 64));
}

/* 0 when task t is certainly not (and never was) a target; 1 when it may be. */
static __always_inline int target_maybe(const struct task_struct *t)
{
        __u32 tgid = t->tgid;

        if (pidns_ino || ncgroups)
                return 1;
        return (target_bits[(tgid / 64) % (TARGET_BITS / 64)] >> (tgid % 64)) & 1;
}

static __always_inline int in_selected_cgroup(void)
{
        for (__u32 i = 0; i < CTXPROF_MAX_CGROUPS; i++) {
                if (i >= ncgroups)
                        break;
                if (bpf_current_task_under_cgroup(&cgroups, i) == 1)
                        return 1;
        }
        return 0;
}

/* The target entry of the current task (tgid in the daemon's namespace), or for a process
 * in a selected cgroup that the daemon has not located yet, an empty location (*flags says
 * so); NULL = not sampled. Shared by every program that filters targets. */
static __always_inline const struct ctxprof_tls_target *target_of(__u32 tgid, __u64 *flags)
{
        const struct ctxprof_tls_target *t = bpf_map_lookup_elem(&targets, &tgid);

        *flags = 0;
        if (t)
                return t;
        if (!ncgroups || !in_selected_cgroup())
                return NULL;
        *flags = CTXPROF_SF_CGROUP | CTXPROF_SF_PENDING;
        return &no_location; /* stacks now, context once the daemon located it */
}

/* The current thread's context into the record r == buf being built (thread pointer, span;
 * labels and the OTel record as the parts that start at pos): every context reader is called
 * here, for the CPU sampler and the off-CPU program alike. Returns where those parts end. */
static __always_inline __u32 read_context(struct ctxprof_sample_rec *r, __u8 *buf, __u32 pos,
                                          const struct ctxprof_tls_target *t, __u32 tgid,
                                          struct ctxprof_counters *c)
{
        __u64 tp = arch_thread_pointer(bpf_get_current_task_btf());

        r->tp = tp;
        if (t->exec_gen != exec_gen_of(tgid)) {
                /* Located in an image the process has exec'ed away from: its offsets mean
                 * nothing here (the daemon locates again after the exec event). */
                if (ctxprof_tls_target_any(t)) {
                        r->flags |= CTXPROF_SF_TLS_STALE;
                        count(c, CTXPROF_CNT_TLS_STALE);
                }
        } else if (tp) {
                r->flags |= CTXPROF_SF_TP;
                read_span(r, t, tp, c);
                /* one labels part: a Custom Labels set, else a Go goroutine's labels, both
                 * from pos (the verifier then bounds the part once, not twice) */
                __u32 lpos = read_labels(r, buf, pos, t, tp, c);

                if (!(r->flags & CTXPROF_SF_LABELSET))
                        lpos = read_go_labels(r, buf, pos, t, tp, c);
                pos = read_otel(r, buf, lpos, t, tp, c);
        } else {
                count(c, CTXPROF_CNT_NO_TP);
        }
        return pos;
}

/* The head of a record about the current thread. Scratch buffers and reused map slots are
 * not zeroed: everything read conditionally is cleared here. */
static __always_inline void init_record(struct ctxprof_sample_rec *r, __u32 type, __u32 tgid,
                                        __u32 tid, __u64 now, __u64 flags,
                                        const struct ctxprof_tls_target *t)
{
        r->type = type;
        r->tgid = tgid;
        r->tid = tid;
        r->cpu = bpf_get_smp_processor_id();
        r->time_ns = now;
        r->flags = (__u32)flags;
        r->errors = 0;
        r->tls_generation = t->generation;
        if (t->flags & CTXPROF_TLS_F_PENDING)
                r->flags |= CTXPROF_SF_PENDING;
        r->label_count = 0;
        r->n_labels = 0;
        r->n_ustack = 0;
        r->n_kstack = 0;
        r->labels_len = 0;
        __builtin_memset(&r->span, 0, sizeof(r->span));
        r->otel_ptr = 0;
        r->otel_len = 0;
        r->len = 0;
        bpf_get_current_comm(r->comm, sizeof(r->comm));
}

/* Samples and, in order with them, lifecycle events. */
struct {
        __uint(type, BPF_MAP_TYPE_RINGBUF);
        __uint(max_entries, 8 * 1024 * 1024); /* resized by the daemon before load */
} samples SEC(".maps");

/* Whether a target's exec or library load wakes the consumer (~6 µs in the target): for
 * `record` (a few chosen targets), yes; for the daemon (notify_exec_all: possibly every
 * process on the host), only for a process whose context was located (t, before the event):
 * the others wait for its 100 ms timer, their samples meanwhile known to be pending. */
static __always_inline int prompt_events(const struct ctxprof_tls_target *t)
{
        return !notify_exec_all || ctxprof_tls_target_any(t);
}

/* Event budgets per process (tgid): see "Event bounds" in ctxprof/sample.h. LRU: a process
 * that no longer sends events loses its slot first. */
struct ev_budget {
        __u64 window_ns; /* start of the current window */
        __u32 n;         /* events sent in it */
        __u32 pad;
};
struct {
        __uint(type, BPF_MAP_TYPE_LRU_HASH);
        __uint(max_entries, CTXPROF_MAX_TARGETS);
        __type(key, __u32); /* tgid */
        __type(value, struct ev_budget);
} ev_budgets SEC(".maps");

/* The host-wide EXEC_OTHER budget (one slot). */
struct {
        __uint(type, BPF_MAP_TYPE_ARRAY);
        __uint(max_entries, 1);
        __type(key, __u32);
        __type(value, struct ev_budget);
} exec_budget SEC(".maps");

/* One more event from budget b at now, if it allows max per window (racy across CPUs by a few
 * events at a window's edge: a bound, not an exact count). 1 = send it. */
static __always_inline int budget_take(struct ev_budget *b, __u64 now, __u32 max)
{
        if (now - b->window_ns >= CTXPROF_EV_WINDOW_NS) {
                b->window_ns = now;
                b->n = 0;
        }
        if (b->n >= max)
                return 0;
        b->n++;
        return 1;
}

/* Process tgid's budget: 1 = the event may be sent. */
static __always_inline int proc_budget(__u32 tgid, __u64 now)
{
        struct ev_budget *b = bpf_map_lookup_elem(&ev_budgets, &tgid);
        struct ev_budget fresh = {.window_ns = now, .n = 1};

        if (b)
                return budget_take(b, now, CTXPROF_EV_PER_PROC);
        bpf_map_update_elem(&ev_budgets, &tgid, &fresh, BPF_ANY);
        return 1;
}

/* Lifecycle events only while `samples` is full. */
struct {
        __uint(type, BPF_MAP_TYPE_RINGBUF);
        __uint(max_entries, 256 * 1024);
} events SEC(".maps");

struct {
        __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
        __uint(max_entries, 1);
        __type(key, __u32);
        __type(value, struct ctxprof_counters);
} counters SEC(".maps");

/* Every record is assembled here, then sent with the exact size (bpf_ringbuf_reserve takes
 * only a constant size, and the largest record is 22 KiB where most need a few hundred
 * bytes). One per CPU: a perf_event program does not nest on its CPU. */
struct rec_buf {
        __u8 b[CTXPROF_REC_MAX];
};

struct {
        __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
        __uint(max_entries, 1);
        __type(key, __u32);
        __type(value, struct rec_buf);
} rec_bufs SEC(".maps");

/* The saved user registers of the current task (enum ctxprof_reg order) into o: where it
 * entered the kernel. 0, or -1 (CTXPROF_SE_REGS on r). */
static __always_inline int task_user_regs(__u64 *o, struct ctxprof_sample_rec *r)
{
        struct pt_regs *ur = (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());
        struct pt_regs kregs;

        if (!ur || bpf_probe_read_kernel(&kregs, sizeof(kregs), ur)) {
                r->errors |= CTXPROF_SE_REGS;
                return -1;
        }
        arch_regs_from_ptregs(o, &kregs);
        r->flags |= CTXPROF_SF_REGS;
        return 0;
}

/* The interrupted user registers (enum ctxprof_reg order) into o; flags or errors on r.
 * 0, or -1 when they are unavailable. */
static __always_inline int user_regs(struct bpf_perf_event_data *ctx, __u64 *o,
                                     struct ctxprof_sample_rec *r)
{
        if (!arch_user_mode(ctx))
                return task_user_regs(o, r);
        r->flags |= CTXPROF_SF_USER_MODE | CTXPROF_SF_REGS;
        arch_regs_from_ctx(o, ctx);
        return 0;
}

/* take_stacks: a function at most this long (the tracepoint iterator, a short loop over its
 * probes) that is skipped when it is the top frame after the skipped ones */
#define KSKIP_FN_MAX_SIZE 0x400

/*
 * The ustack and kstack parts at buf + pos (pos: the end of the record's head). User ips:
 * from the in-kernel .eh_frame unwinder when regs are given and the process has tables, else
 * by frame pointers (bpf_get_stack); kernel ips (if kernel) skipping kskip frames (the
 * tracing machinery of the program that asks), and one more when the top one is in the
 * function at kskip_fn (0: none). Returns where the parts end.
 */
static __always_inline __u32 take_stacks(void *ctx, struct ctxprof_sample_rec *r, __u8 *buf,
                                         __u32 pos, const __u64 *regs, __u32 tgid,
                                         struct ctxprof_counters *c, int user, int kernel,
                                         __u64 kskip, __u64 kskip_fn)
{
        __u32 nu = 0, nk = 0;
        __u64 *ks;
        long n;

        if (pos > CTXPROF_REC_HEAD_MAX)
                return pos;
        if (user && regs && !ku_unwind(r, (__u64 *)(buf + pos), regs, tgid, c)) {
                nu = r->n_ustack;
        } else if (user) {
                n = bpf_get_stack(ctx, buf + pos, 8 * CTXPROF_MAX_USTACK, BPF_F_USER_STACK);
                if (n < 0) {
                        r->errors |= CTXPROF_SE_USTACK;
                        count(c, CTXPROF_CNT_USTACK_ERR);
                } else {
                        nu = n / 8;
                }
        }
        if (nu > CTXPROF_MAX_USTACK)
                nu = CTXPROF_MAX_USTACK;
        r->n_ustack = nu;
        pos += 8 * nu;
        if (!kernel)
                return pos;
        ks = (__u64 *)(buf + pos);
        n = bpf_get_stack(ctx, ks, 8 * CTXPROF_MAX_KSTACK, kskip & BPF_F_SKIP_FIELD_MASK);
        if (kskip_fn && n > 0 && ks[0] - kskip_fn < KSKIP_FN_MAX_SIZE)
                n = bpf_get_stack(ctx, ks, 8 * CTXPROF_MAX_KSTACK,
                                  (kskip + 1) & BPF_F_SKIP_FIELD_MASK);
        if (n < 0) {
                r->errors |= CTXPROF_SE_KSTACK;
                count(c, CTXPROF_CNT_KSTACK_ERR);
        } else {
                nk = n / 8;
        }
        if (nk > CTXPROF_MAX_KSTACK)
                nk = CTXPROF_MAX_KSTACK;
        r->n_kstack = nk;
        return pos + 8 * nk;
}

/* The record r (len bytes, built in a map value of at least max bytes) into the sample ring,
 * without waking the consumer unless wakeup_bytes are pending. 0, or -1 (ring full). */
static __always_inline int send_record(struct ctxprof_sample_rec *r, __u64 len, __u32 max,
                                       struct ctxprof_counters *c)
{
        __u64 flags = BPF_RB_NO_WAKEUP;

        asm volatile("" : "+r"(len)); /* see copy_user_stack */
        if (len > max)
                return -1;
        r->len = len;
        if (bpf_ringbuf_query(&samples, BPF_RB_AVAIL_DATA) >= wakeup_bytes) {
                flags = BPF_RB_FORCE_WAKEUP;
                count(c, CTXPROF_CNT_WAKEUPS);
        }
        return bpf_ringbuf_output(&samples, r, len, flags) ? -1 : 0;
}

/* A sample the full ring refused, counted with its cause: the consumer had not started, was
 * away from its ring (blocked, busy elsewhere, starved of CPU) or was draining it. */
static __always_inline void count_lost(struct ctxprof_counters *c)
{
        __u64 seen = consumer_ns;

        count(c, CTXPROF_CNT_LOST);
        if (!seen)
                count(c, CTXPROF_CNT_LOST_UNSTARTED);
        else if (bpf_ktime_get_ns() - seen > CTXPROF_CONSUMER_AWAY_NS)
                count(c, CTXPROF_CNT_LOST_AWAY);
        else
                count(c, CTXPROF_CNT_LOST_DRAINING);
}

/*
 * Dwarf mode: the user stack from sp, page by page, as the record's last part at buf + pos.
 * bpf_probe_read_user is all-or-nothing, and a thread's stack often ends a few KiB above sp
 * (env/auxv on the main thread, the TCB on others), so a single 16 KiB read would nearly
 * always fail. Returns where the record ends.
 */
static __always_inline __u32 copy_user_stack(struct ctxprof_sample_copy_rec *d, __u8 *buf,
                                             __u32 pos, struct ctxprof_counters *c)
{
        __u64 sp, first, off;
        __u8 *dst;
        int i;

        /* clang knows pos is 8-aligned and would test pos > CTXPROF_REC_CTX_MAX + 7, a bound
         * the verifier cannot use: hide what it knows */
        asm volatile("" : "+r"(pos));
        if (!(d->base.flags & CTXPROF_SF_REGS) || pos > CTXPROF_REC_CTX_MAX)
                return pos;
        dst = buf + pos;
        sp = d->regs[CTXPROF_REG_SP];
        first = ARCH_PAGE_SIZE - (sp & (ARCH_PAGE_SIZE - 1));
        if (first > ARCH_PAGE_SIZE)
                first = ARCH_PAGE_SIZE;
        if (bpf_probe_read_user(dst, first, (void *)sp)) {
                d->base.errors |= CTXPROF_SE_STACK_COPY;
                count(c, CTXPROF_CNT_STACK_COPY_ERR);
                return pos;
        }
        off = first;
        for (i = 0; i < CTXPROF_STACK_COPY / ARCH_PAGE_SIZE - 1; i++) {
                if (off > CTXPROF_STACK_COPY - ARCH_PAGE_SIZE)
                        break;
                if (bpf_probe_read_user(dst + off, ARCH_PAGE_SIZE, (void *)(sp + off)))
                        break;
                off += ARCH_PAGE_SIZE;
        }
        d->stack_len = off;
        return pos + off;
}

/* The registers the in-kernel unwinder starts from (the stack-copy record's, or this CPU's
 * unwinder scratch), NULL when it is off or they are unavailable. */
static __always_inline const __u64 *kunwind_regs(struct bpf_perf_event_data *ctx,
                                                 struct ctxprof_sample_rec *r,
                                                 struct ctxprof_sample_copy_rec *d)
{
        struct ku_scratch *sc;
        __u32 zero = 0;

        if (!kunwind)
                return NULL;
        if (d && !(r->flags & CTXPROF_SF_REGS)) {
                /* a real branch: clang would select the pointer with a mask, which the
                 * verifier refuses (bitwise operation on a pointer) */
                asm volatile("" ::: "memory");
                return NULL;
        }
        if (d)
                return d->regs;
        sc = bpf_map_lookup_elem(&ku_scratch, &zero);
        if (!sc || user_regs(ctx, sc->regs, r))
                return NULL;
        return sc->regs;
}

SEC("perf_event")
int ctxprof_sample(struct bpf_perf_event_data *ctx)
{
        __u32 tgid, tid, pos, zero = 0;
        struct ctxprof_sample_copy_rec *d = NULL;
        struct ctxprof_sample_rec *r;
        const struct ctxprof_tls_target *t;
        struct ctxprof_counters *c;
        struct rec_buf *buf;
        __u64 flags;

        if (cur_ids(&tgid, &tid))
                return 0;
        t = target_of(tgid, &flags);
        if (!t || !sampling_on)
                return 0;
        c = bpf_map_lookup_elem(&counters, &zero);
        count(c, CTXPROF_CNT_SAMPLES);
        buf = bpf_map_lookup_elem(&rec_bufs, &zero);
        if (!buf)
                return 0;
        r = (struct ctxprof_sample_rec *)buf->b;
        init_record(r, stack_copy_mode ? CTXPROF_REC_SAMPLE_COPY : CTXPROF_REC_SAMPLE, tgid, tid,
                    bpf_ktime_get_ns(), flags, t);
        pos = sizeof(*r);
        if (stack_copy_mode) {
                d = (struct ctxprof_sample_copy_rec *)buf->b;
                d->stack_len = 0;
                user_regs(ctx, d->regs, r);
                pos = sizeof(*d);
        }
        /* user stack: in-kernel .eh_frame unwinding, or frame pointers where it cannot */
        /* a sample that interrupted user mode has no kernel stack: no helper call for it */
        pos = take_stacks(ctx, r, buf->b, pos, kunwind_regs(ctx, r, d), tgid, c, 1,
                          kernel_stacks && !arch_user_mode(ctx), 0, 0);
        pos = read_context(r, buf->b, pos, t, tgid, c);
        /* No context source was read (and none is pending, which the daemon holds back and
         * counts on its own): whatever the daemon would decode has no span and no label, so
         * a filter that needs context drops it. Counted, never sent. */
        if (filter_needs_context &&
            !(r->flags & (CTXPROF_SF_SPAN_READ | CTXPROF_SF_LABELSET | CTXPROF_SF_OTEL |
                          CTXPROF_SF_PENDING | CTXPROF_SF_TLS_STALE))) {
                count(c, CTXPROF_CNT_FILTERED);
                return 0;
        }
        if (d)
                pos = copy_user_stack(d, buf->b, pos, c);
        if (send_record(r, pos, sizeof(*buf), c))
                count_lost(c);
        return 0;
}

/*
 * A lifecycle event goes into the sample ring, behind every sample reserved before it, so the
 * daemon handles an exec or an exit only after the samples the old image took (see
 * ctxprof/sample.h). If that ring is full, into `events`, so that the event is not lost.
 */
static __always_inline void emit_event(__u32 event, __u32 tgid, __u32 tid, __u32 parent,
                                       struct task_struct *task, int wake)
{
        __u64 flags = BPF_RB_NO_WAKEUP;
        struct ctxprof_event_rec *e;
        __u32 zero = 0;

        e = bpf_ringbuf_reserve(&samples, sizeof(*e), 0);
        if (!e)
                e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
        if (!e) {
                count(bpf_map_lookup_elem(&counters, &zero), CTXPROF_CNT_EVENTS_LOST);
                return;
        }
        e->type = CTXPROF_REC_EVENT;
        e->event = event;
        e->tgid = tgid;
        e->tid = tid;
        e->parent_tgid = parent;
        e->pad = 0;
        e->time_ns = bpf_ktime_get_ns();
        BPF_CORE_READ_STR_INTO(&e->comm, task, comm);
        /* An event that holds a target's context back (exec, library loaded) is wanted
         * promptly; the others wait for the consumer's timer like samples do. */
        if (wake || bpf_ringbuf_query(&samples, BPF_RB_AVAIL_DATA) >= wakeup_bytes)
                flags = BPF_RB_FORCE_WAKEUP;
        bpf_ringbuf_submit(e, flags);
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(ctxprof_fork, struct task_struct *parent, struct task_struct *child)
{
        __u32 ptgid, ctgid, zero = 0;
        struct ctxprof_tls_target child_loc = {};
        const struct ctxprof_tls_target *pt;

        if (parent->tgid == child->tgid || !follow_children)
                return 0; /* a new thread: already covered by the tgid filter */
        ptgid = task_tgid_ns(parent);
        ctgid = task_tgid_ns(child);
        if (!ptgid || !ctgid)
                return 0;
        pt = bpf_map_lookup_elem(&targets, &ptgid);
        if (!pt)
                return 0;
        /* Sample the child at once, with context: it runs the parent's image, so the parent's
         * location is the child's until the daemon locates it (after the event). A new
         * process has exec'ed 0 times (an entry left by an earlier one with this pid would
         * only make its first location look stale). */
        child_loc = *pt;
        child_loc.exec_gen = 0;
        bpf_map_delete_elem(&exec_gens, &ctgid);
        target_mark(ctgid); /* before the entry: see target_bits */
        if (bpf_map_update_elem(&targets, &ctgid, &child_loc, BPF_NOEXIST) == -E2BIG) {
                /* Dead targets leave the map at their exit (ctxprof_exit): these are live. */
                count(bpf_map_lookup_elem(&counters, &zero), CTXPROF_CNT_TARGETS_FULL);
                return 0;
        }
        /* The child samples with context without the event; the daemon learns of it at its
         * first sample when a fork loop spent the parent's budget. */
        if (!proc_budget(ptgid, bpf_ktime_get_ns())) {
                count(bpf_map_lookup_elem(&counters, &zero), CTXPROF_CNT_EV_LIMITED);
                return 0;
        }
        emit_event(CTXPROF_EV_FORK, ctgid, ctgid, ptgid, child, 0);
        return 0;
}

/* The last EXEC_OTHER wakeup (bpf_ktime_get_ns), host-wide. */
__u64 exec_other_woke_ns;

/* Whether this EXEC_OTHER event wakes the daemon (CTXPROF_EXEC_OTHER_WAKE_GAP_NS): racy across
 * CPUs by a wakeup or two at a gap's edge, a bound, not an exact count. */
static __always_inline int exec_other_wake(__u64 now)
{
        if (now - exec_other_woke_ns < CTXPROF_EXEC_OTHER_WAKE_GAP_NS)
                return 0;
        exec_other_woke_ns = now;
        return 1;
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(ctxprof_exec, struct task_struct *p)
{
        __u32 tgid, tid, zero = 0;
        struct ctxprof_tls_target none = {};
        const struct ctxprof_tls_target *t;
        struct ev_budget *host;
        __u64 gen, now;
        int wake;

        if (cur_ids(&tgid, &tid)) /* p is current */
                return 0;
        t = bpf_map_lookup_elem(&targets, &tgid);
        if (!t) {
                if (!notify_exec_all || tgid == self_tgid)
                        return 0;
                /* The daemon decides whether the new image is to be sampled: within the
                 * process's and the host's budgets, waking it at most once per
                 * CTXPROF_EXEC_OTHER_WAKE_GAP_NS (the rest of a burst waits for the drain it
                 * schedules itself), so that a short process is taken before it exits. */
                now = bpf_ktime_get_ns();
                host = bpf_map_lookup_elem(&exec_budget, &zero);
                if (!host || !budget_take(host, now, CTXPROF_EXEC_OTHER_PER_WINDOW) ||
                    !proc_budget(tgid, now)) {
                        count(bpf_map_lookup_elem(&counters, &zero), CTXPROF_CNT_EXEC_LIMITED);
                        return 0;
                }
                emit_event(CTXPROF_EV_EXEC_OTHER, tgid, tid, 0, p, exec_other_wake(now));
                return 0;
        }
        /* The old image's TLS layout is gone: count the exec first, so that a location of
         * the old image published from now on (the daemon may be writing one) is refused,
         * then no context reads until the daemon locates again. Only this thread is left in
         * the process: nothing else updates its count. */
        wake = prompt_events(t); /* the old image's location, before it goes */
        gen = exec_gen_of(tgid) + 1;
        bpf_map_update_elem(&exec_gens, &tgid, &gen, BPF_ANY);
        none.exec_gen = gen;
        none.flags = CTXPROF_TLS_F_PENDING; /* until the daemon located the new image */
        bpf_map_update_elem(&targets, &tgid, &none, BPF_EXIST);
        /* The old image's mappings: frame pointers until the daemon wrote the new ones. */
        bpf_map_delete_elem(&ku_procs, &tgid);
        /* Over budget (an exec loop): the daemon relocates from the next sample's pending
         * flag instead. */
        if (!proc_budget(tgid, bpf_ktime_get_ns())) {
                count(bpf_map_lookup_elem(&counters, &zero), CTXPROF_CNT_EV_LIMITED);
                return 0;
        }
        emit_event(CTXPROF_EV_EXEC, tgid, tid, 0, p, wake);
        return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(ctxprof_exit, struct task_struct *p)
{
        __u32 tgid, tid;

        if (cur_ids(&tgid, &tid)) /* p is current */
                return 0;
        if (!bpf_map_lookup_elem(&targets, &tgid))
                return 0;
        if (BPF_CORE_READ(p, signal, live.counter) != 0)
                return 0; /* other threads remain */
        /* A dead process leaves the map now, not when the daemon reads the event: a full
         * map (a fork bomb) holds live targets only, and a pid reused before the daemon
         * caught up is not removed by the old process's exit. */
        bpf_map_delete_elem(&targets, &tgid);
        bpf_map_delete_elem(&exec_gens, &tgid);
        bpf_map_delete_elem(&ev_budgets, &tgid);
        emit_event(CTXPROF_EV_EXIT, tgid, tid, 0, p, 0);
        return 0;
}

/* bpf_find_vma callback: is the mapping at the address backed by a file? */
static long vma_has_file(struct task_struct *task, struct vm_area_struct *vma, void *data)
{
        *(int *)data = BPF_CORE_READ(vma, vm_file) != 0;
        return 0;
}

#define SYS_MMAP        9 /* x86-64 syscall numbers */
#define SYS_MPROTECT    10
#define MMAP_PROT_READ  0x1
#define MMAP_PROT_EXEC  0x4
#define MMAP_ANONYMOUS  0x20
#define SYSCALL_ERR_MAX 4095 /* a return value in [-4095, -1] is -errno */

/*
 * A target's mappings changed in a way that may bring a TLS variable (a library loaded or
 * unloaded): within the process's event budget, its location is marked pending, so the
 * samples taken until the daemon located again are known to be taken without it, and the
 * daemon is told (CTXPROF_EV_MAP). Over the budget (a dlopen loop), nothing is marked: a
 * pending mark the daemon would clear only at its next look would hold back the process's
 * samples most of the time; the locator's own retry (while a variable is missing) and the
 * in-kernel unwinder's unknown-mapping resync find what was loaded.
 */
static __always_inline void mappings_changed(struct ctxprof_tls_target *t, __u32 tgid, __u32 tid)
{
        struct ctxprof_counters *c;
        __u32 zero = 0;

        c = bpf_map_lookup_elem(&counters, &zero);
        count(c, CTXPROF_CNT_DL_NOTIFY);
        if (!proc_budget(tgid, bpf_ktime_get_ns())) {
                count(c, CTXPROF_CNT_EV_LIMITED);
                return;
        }
        __sync_fetch_and_or(&t->flags, CTXPROF_TLS_F_PENDING);
        emit_event(CTXPROF_EV_MAP, tgid, tid, 0, bpf_get_current_task_btf(), prompt_events(t));
}

/*
 * The library-load hook: a uprobe on _dl_debug_state in the target's dynamic loader (the
 * r_debug notification debuggers use; glibc and musl call it around every dlopen and
 * dlclose). Attached per target process with a pid filter (daemon/engine/load_hook.c), so
 * only targets trap, once per notification. glibc notifies RT_CONSISTENT before it relocates
 * a dlopen'ed library: the daemon's locator retries while TLS descriptors are unresolved.
 */
SEC("uprobe")
int ctxprof_dl_notify(struct pt_regs *ctx)
{
        struct ctxprof_tls_target *t;
        __u32 tgid, tid;

        if (cur_ids(&tgid, &tid))
                return 0;
        t = bpf_map_lookup_elem(&targets, &tgid);
        if (t)
                mappings_changed(t, tgid, tid);
        return 0;
}

/*
 * The last fallback of the library-load hook (no uprobes, or CTXPROF_TEST_HOOK=sys_exit):
 * a target mapped a file that may hold a TLS variable: the executable part of a library
 * (mmap of a file with PROT_EXEC: ld.so loading it), or made a file mapping read-only
 * (mprotect to PROT_READ: ld.so's RELRO step, which comes right after the library's
 * relocations, TLS descriptors included, are done). Runs at every syscall exit of every
 * task, and attached, every syscall on the host takes the tracing slow path (+75% for a
 * getppid() here): the syscall number is checked first, the targets map only for those two.
 */
SEC("tp_btf/sys_exit")
int BPF_PROG(ctxprof_sys_exit, struct pt_regs *regs, long ret)
{
        struct ctxprof_tls_target *t;
        __u64 nr, prot;
        __u32 tgid, tid;
        int file = 0;

        nr = BPF_CORE_READ(regs, orig_ax);
        if (nr != SYS_MMAP && nr != SYS_MPROTECT)
                return 0;
        if ((unsigned long)ret >= (unsigned long)-SYSCALL_ERR_MAX)
                return 0;
        if (cur_ids(&tgid, &tid))
                return 0;
        t = bpf_map_lookup_elem(&targets, &tgid);
        if (!t)
                return 0;
        prot = BPF_CORE_READ(regs, dx);
        if (nr == SYS_MMAP) {
                if (!(prot & MMAP_PROT_EXEC) || (BPF_CORE_READ(regs, r10) & MMAP_ANONYMOUS))
                        return 0;
        } else {
                if (prot != MMAP_PROT_READ)
                        return 0;
                bpf_find_vma(bpf_get_current_task_btf(), BPF_CORE_READ(regs, di), vma_has_file,
                             &file, 0);
                if (!file)
                        return 0;
        }
        mappings_changed(t, tgid, tid);
        return 0;
}

/* Off-CPU intervals (tp_btf sched_switch/sched_wakeup): loaded only when asked for. */
#include "offcpu.bpf.h"
