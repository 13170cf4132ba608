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
 * offcpu_min_ns. A non-target switch costs one hash lookup (next) and the tgid filter
 * (prev). Slots are freed at thread exit; every drop is counted (CTXPROF_CNT_OFFCPU_*).
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

/* One slot per target thread that blocked at least once (key: the kernel's tid). Allocated
 * on first use (no prealloc: 5.6 KiB each), freed at thread exit. Resized before load. */
struct {
        __uint(type, BPF_MAP_TYPE_HASH);
        __uint(max_entries, CTXPROF_OFFCPU_MAX_THREADS_DEFAULT);
        __uint(map_flags, BPF_F_NO_PREALLOC);
        __type(key, __u32);
        __type(value, struct ctxprof_offcpu_rec);
} offcpu_threads SEC(".maps");

/* Source of a new slot's first value (the BPF stack is 512 bytes). */
struct {
        __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
        __uint(max_entries, 1);
        __type(key, __u32);
        __type(value, struct ctxprof_offcpu_rec);
} offcpu_blank SEC(".maps");

/* The slot of thread tid, created when missing; NULL (counted) when the map is full. */
static __always_inline struct ctxprof_offcpu_rec *offcpu_slot(__u32 tid, struct ctxprof_counters *c)
{
        struct ctxprof_offcpu_rec *e = bpf_map_lookup_elem(&offcpu_threads, &tid);
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

/* prev (== current) blocks: capture its context and stacks into its slot. */
static __always_inline void offcpu_begin(void *ctx, struct task_struct *prev, __u32 state,
                                         __u64 now)
{
        const struct ctxprof_tls_target *t;
        struct ctxprof_offcpu_rec *e;
        struct ctxprof_sample_rec *r;
        struct ctxprof_counters *c;
        __u32 tgid, tid, zero = 0;
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
        e->wake_ns = 0; /* before the slot reads as open (type) to sched_wakeup */
        r = &e->base;
        init_record(r, CTXPROF_REC_OFFCPU, tgid, tid, now, flags, t);
        read_context(r, t, tgid, c);
        take_stacks(ctx, r, c, 1, 1);
        e->state = state;
        e->duration_ns = 0;
        e->runq_ns = 0;
        e->pad = 0;
}

/* A thread with an open interval runs again: one ring record if it lasted long enough. */
static __always_inline void offcpu_end(struct ctxprof_offcpu_rec *e, __u64 now)
{
        struct ctxprof_offcpu_rec *o;
        __u32 zero = 0;
        __u64 start = e->base.time_ns, wake = e->wake_ns, flags;
        struct ctxprof_counters *c = bpf_map_lookup_elem(&counters, &zero);

        e->base.type = 0; /* closed: a later switch-in of this thread emits nothing */
        if (now - start < offcpu_min_ns) {
                count(c, CTXPROF_CNT_OFFCPU_SHORT);
                return;
        }
        o = bpf_ringbuf_reserve(&samples, sizeof(*o), 0);
        if (!o) {
                count(c, CTXPROF_CNT_OFFCPU_LOST);
                return;
        }
        if (bpf_probe_read_kernel(o, sizeof(*o), e)) {
                bpf_ringbuf_discard(o, 0);
                count(c, CTXPROF_CNT_OFFCPU_LOST);
                return;
        }
        o->base.type = CTXPROF_REC_OFFCPU;
        o->duration_ns = now - start;
        o->runq_ns = wake >= start && wake <= now ? now - wake : 0;
        count(c, CTXPROF_CNT_OFFCPU);
        flags = BPF_RB_NO_WAKEUP;
        if (bpf_ringbuf_query(&samples, BPF_RB_AVAIL_DATA) >= wakeup_bytes)
                flags = BPF_RB_FORCE_WAKEUP;
        bpf_ringbuf_submit(o, flags);
}

SEC("tp_btf/sched_switch")
int BPF_PROG(ctxprof_offcpu_switch, bool preempt, struct task_struct *prev,
             struct task_struct *next, unsigned int prev_state)
{
        __u64 now = bpf_ktime_get_ns();
        __u32 ntid = next->pid;
        struct ctxprof_offcpu_rec *e = bpf_map_lookup_elem(&offcpu_threads, &ntid);

        if (e && e->base.type == CTXPROF_REC_OFFCPU)
                offcpu_end(e, now);
        /* Preempted (even mid-way through blocking) = still runnable: not off-CPU. */
        if (preempt || prev_state == TASK_RUNNING_STATE)
                return 0;
        offcpu_begin(ctx, prev, prev_state, now);
        return 0;
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(ctxprof_offcpu_wakeup, struct task_struct *p)
{
        __u32 tid = p->pid;
        struct ctxprof_offcpu_rec *e = bpf_map_lookup_elem(&offcpu_threads, &tid);

        if (e && e->base.type == CTXPROF_REC_OFFCPU && !e->wake_ns)
                e->wake_ns = bpf_ktime_get_ns();
        return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(ctxprof_offcpu_exit, struct task_struct *p)
{
        __u32 tid = p->pid, zero = 0;
        struct ctxprof_offcpu_rec *e = bpf_map_lookup_elem(&offcpu_threads, &tid);
        struct ctxprof_counters *c;

        if (!e)
                return 0;
        c = bpf_map_lookup_elem(&counters, &zero);
        /* p is running (it exits): its interval was closed at its switch-in, unless the
         * record of that switch-in never happened (program attached mid-way). */
        if (e->base.type == CTXPROF_REC_OFFCPU)
                count(c, CTXPROF_CNT_OFFCPU_OPEN_EXIT);
        if (!bpf_map_delete_elem(&offcpu_threads, &tid))
                count(c, CTXPROF_CNT_OFFCPU_EXITED);
        return 0;
}

#endif /* CTXPROF_OFFCPU_BPF_H */
