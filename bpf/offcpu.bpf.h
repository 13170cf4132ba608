/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * offcpu.bpf.h — off-CPU intervals of target threads, on tp_btf sched_switch (this kernel
 * has no kprobes, and fentry does not load here; see shared/reference/ebpf-notes.md §4).
 *
 * At a switch-out where a target thread blocks (not preempted, prev_state != TASK_RUNNING)
 * it reads, in the blocking thread's own context (current == prev), the thread's context
 * with the CPU sampler's readers (read_context), its user and kernel stacks and the time
 * into the thread's slot of `offcpu_threads`; sched_wakeup stamps the wakeup; at the
 * thread's next switch-in the slot becomes one CTXPROF_REC_OFFCPU ring record with the
 * blocked duration and the run-queue delay, if the interval lasted at least
 * offcpu_min_ns. The blocking user stack goes through the in-kernel .eh_frame unwinder
 * (kunwind.bpf.h) in every call-graph mode, the kernel stack skips the tracing machinery's
 * frames. A switch of two non-target threads costs the target bitmap test (target_maybe) and
 * no map lookup. Slots are freed at thread exit; every drop is counted (CTXPROF_CNT_OFFCPU_*).
 *
 * Included once, at the end of sampler.bpf.c (maps `targets`, `samples`, `counters` and
 * the helpers target_of/read_context/cur_ids are that file's). Its programs are not loaded
 * unless the daemon asks for off-CPU or wall-clock profiling (bpf_program__set_autoload),
 * and `offcpu_threads` is then shrunk to one entry, so the CPU-only mode pays nothing.
 */
#ifndef CTXPROF_OFFCPU_BPF_H
#define CTXPROF_OFFCPU_BPF_H

#define TASK_RUNNING_STATE 0 /* task->__state of a runnable task */
#define PF_KTHREAD_FLAG    0x00200000
#define PF_EXITING_FLAG                                                                            \
        0x00000004 /* set early in do_exit: the thread never runs user code again                  \
                    */

const volatile __u64 offcpu_min_ns = CTXPROF_OFFCPU_MIN_NS_DEFAULT;
/* 1: blocking user stacks from the in-kernel .eh_frame unwinder (the daemon loads the tables
 * of every target for off-CPU, whatever the call-graph mode) */
const volatile __u32 offcpu_kunwind = 0;

/*
 * The kernel stack taken here starts in the tracing machinery: this program
 * (bpf_prog_..._ctxprof_offcpu_switch) and bpf_trace_run4, always, and __traceiter_sched_switch
 * when more than one program is attached to the tracepoint (the static call then goes to the
 * iterator instead of straight to this program's __bpf_trace_sched_switch thunk, which tail
 * calls bpf_trace_run4). Those frames are skipped in the kernel, so the stack starts at
 * __schedule, as perf's sched:sched_switch stacks do.
 */
#define OFFCPU_KSKIP 2
extern const void __traceiter_sched_switch __ksym __weak;

/* A thread's off-CPU record as built at its switch-out: a ctxprof_offcpu_rec head, then the
 * variable parts (ctxprof/sample.h); sent as it is, base.len bytes, at the switch-in. */
struct offcpu_slot {
        __u8 b[CTXPROF_REC_CTX_MAX];
};

/* One slot per target thread that blocked at least once (key: the kernel's tid). Allocated
 * on first use (no prealloc: 6.4 KiB each), freed at thread exit. Resized before load. */
struct {
        __uint(type, BPF_MAP_TYPE_HASH);
        __uint(max_entries, CTXPROF_OFFCPU_MAX_THREADS_DEFAULT);
        __uint(map_flags, BPF_F_NO_PREALLOC);
        __type(key, __u32);
        __type(value, struct offcpu_slot);
} offcpu_threads SEC(".maps");

/* Source of a new slot's first value (the BPF stack is 512 bytes). */
struct {
        __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
        __uint(max_entries, 1);
        __type(key, __u32);
        __type(value, struct offcpu_slot);
} offcpu_blank SEC(".maps");

/* The slot of thread tid, created when missing; NULL (counted) when the map is full. */
static __always_inline struct offcpu_slot *offcpu_slot(__u32 tid, struct ctxprof_counters *c)
{
        struct offcpu_slot *e = bpf_map_lookup_elem(&offcpu_threads, &tid);
        __u32 zero = 0;

        if (e)
                return e;
        e = bpf_map_lookup_elem(&offcpu_blank, &zero);
        if (!e || bpf_map_update_elem(&offcpu_threads, &tid, e, BPF_NOEXIST)) {
                count(c, CTXPROF_CNT_OFFCPU_FULL);
                return NULL;
        }
        return bpf_map_lookup_elem(&offcpu_threads, &tid);
}

/* The blocked thread's user registers (where it entered the kernel) for the in-kernel
 * unwinder, in this CPU's unwinder scratch; NULL (frame pointers) when it is off or they are
 * unavailable. The scratch is shared with the CPU sampler, which cannot run here: switches
 * run with interrupts off, and the wall mode's cpu-clock events are timer interrupts. */
static __always_inline const __u64 *offcpu_regs(struct ctxprof_sample_rec *r)
{
        struct ku_scratch *sc;
        __u32 zero = 0;

        if (!offcpu_kunwind)
                return NULL;
        sc = bpf_map_lookup_elem(&ku_scratch, &zero);
        if (!sc || task_user_regs(sc->regs, r))
                return NULL;
        return sc->regs;
}

/* prev (== current) blocks: capture its context and stacks into its slot. */
static __always_inline void offcpu_begin(void *ctx, struct task_struct *prev, __u32 state,
                                         __u64 now)
{
        const struct ctxprof_tls_target *t;
        struct ctxprof_offcpu_rec *o;
        struct ctxprof_sample_rec *r;
        struct ctxprof_counters *c;
        __u32 tgid, tid, pos, zero = 0;
        struct offcpu_slot *e;
        __u64 flags;

        /* An exiting thread still switches out (last of all as TASK_DEAD, after
         * sched_process_exit freed its slot): a slot made then would never be freed. */
        if (prev->flags & (PF_KTHREAD_FLAG | PF_EXITING_FLAG))
                return;
        if (cur_ids(&tgid, &tid) || tgid == self_tgid)
                return;
        t = target_of(tgid, &flags);
        if (!t)
                return;
        c = bpf_map_lookup_elem(&counters, &zero);
        e = offcpu_slot(prev->pid, c);
        if (!e)
                return;
        o = (struct ctxprof_offcpu_rec *)e->b;
        o->wake_ns = 0; /* before the slot reads as open (type) to sched_wakeup */
        r = &o->base;
        init_record(r, CTXPROF_REC_OFFCPU, tgid, tid, now, flags, t);
        pos = take_stacks(ctx, r, e->b, sizeof(*o), offcpu_regs(r), tgid, c, 1, kernel_stacks,
                          OFFCPU_KSKIP, (__u64)&__traceiter_sched_switch);
        r->len = read_context(r, e->b, pos, t, tgid, c);
        o->state = state;
        o->duration_ns = 0;
        o->runq_ns = 0;
        o->pad = 0;
}

/* A thread with an open interval runs again: its record into the ring if it lasted long
 * enough, then the slot is closed (a later switch-in of this thread emits nothing). */
static __always_inline void offcpu_end(struct offcpu_slot *e, __u64 now)
{
        struct ctxprof_offcpu_rec *o = (struct ctxprof_offcpu_rec *)e->b;
        __u64 start = o->base.time_ns, wake = o->wake_ns;
        __u32 zero = 0;
        struct ctxprof_counters *c = bpf_map_lookup_elem(&counters, &zero);

        if (now - start < offcpu_min_ns) {
                count(c, CTXPROF_CNT_OFFCPU_SHORT);
        } else {
                o->duration_ns = now - start;
                o->runq_ns = wake >= start && wake <= now ? now - wake : 0;
                if (send_record(&o->base, o->base.len, sizeof(*e), c))
                        count(c, CTXPROF_CNT_OFFCPU_LOST);
                else
                        count(c, CTXPROF_CNT_OFFCPU);
        }
        o->base.type = 0;
}

/*
 * Every context switch on the host comes here. One that neither ends an interval (next is no
 * target's thread) nor starts one (prev is preempted, or no target's) returns after two
 * loads from each task and the target bitmap: no helper call, no map lookup.
 */
SEC("tp_btf/sched_switch")
int BPF_PROG(ctxprof_offcpu_switch, bool preempt, struct task_struct *prev,
             struct task_struct *next, unsigned int prev_state)
{
        /* Preempted (even mid-way through blocking) = still runnable: not off-CPU. */
        int blocks = !preempt && prev_state != TASK_RUNNING_STATE && target_maybe(prev);
        struct offcpu_slot *e;
        __u32 ntid;
        __u64 now;

        if (!blocks && !target_maybe(next))
                return 0;
        if (!sampling_on)
                return 0; /* not started yet (sampler.bpf.c) */
        now = bpf_ktime_get_ns();
        ntid = next->pid;
        e = bpf_map_lookup_elem(&offcpu_threads, &ntid);
        if (e && ((struct ctxprof_offcpu_rec *)e->b)->base.type == CTXPROF_REC_OFFCPU)
                offcpu_end(e, now);
        if (blocks)
                offcpu_begin(ctx, prev, prev_state, now);
        return 0;
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(ctxprof_offcpu_wakeup, struct task_struct *p)
{
        __u32 tid = p->pid;
        struct ctxprof_offcpu_rec *o;
        struct offcpu_slot *e;

        if (!target_maybe(p))
                return 0; /* every wakeup on the host: see ctxprof_offcpu_switch */
        e = bpf_map_lookup_elem(&offcpu_threads, &tid);
        o = e ? (struct ctxprof_offcpu_rec *)e->b : NULL;
        if (o && o->base.type == CTXPROF_REC_OFFCPU && !o->wake_ns)
                o->wake_ns = bpf_ktime_get_ns();
        return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(ctxprof_offcpu_exit, struct task_struct *p)
{
        __u32 tid = p->pid, zero = 0;
        struct ctxprof_counters *c;
        struct offcpu_slot *e;

        if (!target_maybe(p))
                return 0;
        e = bpf_map_lookup_elem(&offcpu_threads, &tid);
        if (!e)
                return 0;
        c = bpf_map_lookup_elem(&counters, &zero);
        /* p is running (it exits): its interval was closed at its switch-in, unless the
         * record of that switch-in never happened (program attached mid-way). */
        if (((struct ctxprof_offcpu_rec *)e->b)->base.type == CTXPROF_REC_OFFCPU)
                count(c, CTXPROF_CNT_OFFCPU_OPEN_EXIT);
        if (!bpf_map_delete_elem(&offcpu_threads, &tid))
                count(c, CTXPROF_CNT_OFFCPU_EXITED);
        return 0;
}

#endif /* CTXPROF_OFFCPU_BPF_H */
