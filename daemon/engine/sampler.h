/* SPDX-License-Identifier: MIT */
/*
 * sampler.h — the sampling engine: loads bpf/sampler.bpf.c, opens one perf event per CPU,
 * keeps the BPF `targets` map current (TLS location per process, retried and redone on exec),
 * consumes the sample and lifecycle rings on the caller's thread and hands every sample,
 * decoded (span validated, labels per the Custom Labels v1 reader rules, frames as
 * (module, offset)), to a struct sample_sink. Never prints: every failure is a negative
 * errno plus, for setup, the stage that failed.
 *
 * Thread safety: one thread drives a struct sampler (new, add_target, poll, stats, free).
 */
#ifndef CTXPROF_SAMPLER_H
#define CTXPROF_SAMPLER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "engine/context_decode.h"
#include "engine/context_filter.h"
#include "engine/otel_decode.h"
#include "engine/otel_process_ctx.h"
#include "engine/kunwind.h"
#include "engine/load_hook.h"
#include "stack/module_tally.h"
#include "stack/modules.h"
#include "engine/sample_sink.h"
#include "engine/sampling_names.h"

struct sampler_opts {
        unsigned freq;  /* samples per second per CPU (perf freq mode) */
        int event;      /* enum sampler_event */
        int call_graph; /* enum sampler_callgraph: fp, dwarf (in-kernel), dwarf-copy, dwarf-check */
        int kernel_stacks;   /* 1: kernel frames too */
        int follow_children; /* 1: processes forked by targets become targets */
        /* 1 (record): each target's threads get sampling events of their own, inherited by
         * the threads (and, following children, the processes) they create, so non-targets
         * take no sampling interrupt (engine/task_events.h); 0 (the daemon): one per CPU */
        int per_task;
        size_t ring_bytes; /* sample ring size (rounded up to a power of two); 0 = sized by
                            * CPUs x rate (sampler_ring_bytes) */
        /* event off-cpu / wall: intervals shorter than this are dropped in the kernel
         * (0 = CTXPROF_OFFCPU_MIN_NS_DEFAULT); threads tracked at once (0 = default) */
        uint64_t offcpu_min_ns;
        unsigned offcpu_max_threads;
        /* Optional (the daemon): called from sampler_poll for every exec on the host of a
         * process other than ctxprof itself. For a non-target, > 0 makes it a target; for a
         * target, 0 drops it (its new image no longer matches), > 0 keeps it. May call
         * sampler_add_target / sampler_remove_target. */
        int (*exec_filter)(void *ctx, pid_t pid, const char *comm);
        void *exec_filter_ctx;
        /* Samples whose context does not pass this are counted (filtered) and dropped before
         * their stack is built; no terms = keep every sample (engine/context_filter.h). */
        struct context_filter filter;
};

/* Which setup step failed (for an actionable message in the command). */
enum sampler_stage {
        SAMPLER_STAGE_NONE = 0,
        SAMPLER_STAGE_BTF,    /* no /sys/kernel/btf/vmlinux */
        SAMPLER_STAGE_OPEN,   /* BPF object open */
        SAMPLER_STAGE_LOAD,   /* BPF load / verification */
        SAMPLER_STAGE_PERF,   /* perf_event_open */
        SAMPLER_STAGE_ATTACH, /* attaching programs */
        SAMPLER_STAGE_RING,   /* ring buffer setup */
};

/* Samples without context, by why (each sample counted once, under the first reason that
 * applies, in this order). Only `pending` samples are not recorded; the others are, without
 * context. A thread that never set context is counted under unreachable or not_set. */
struct sampler_ctx_missing {
        uint64_t pending;     /* taken while the location was being made (attach, exec, a
                               * library mapped): not recorded (see engine/procs.c) */
        uint64_t stale;       /* location made before the process's last exec (refused) */
        uint64_t not_located; /* the process has no location (no libctx variable found) */
        uint64_t no_tp;       /* the thread pointer was 0 */
        uint64_t unreachable; /* the variable has no storage for this thread (a dynamic TLS
                               * block it never allocated) */
        uint64_t read_fault;  /* reading the variable faulted */
        uint64_t not_set;     /* read fine: no span and no label set (or a torn span) */
};

struct sampler_stats {
        /* from the BPF counters (summed over CPUs) */
        uint64_t samples, lost, no_tp, span_faults, labelset_faults, label_faults;
        uint64_t ustack_errors, kstack_errors, stack_copy_errors, events_lost, wakeups;
        uint64_t tls_stale; /* samples whose location was made before the target's last exec */
        /* `lost` by cause (they sum to it): before the consumer's first drain, while it was
         * away from the ring (CTXPROF_CONSUMER_AWAY_NS: blocked, busy elsewhere, starved of
         * CPU), while it was draining (the ring too small for the rate) */
        uint64_t lost_unstarted, lost_away, lost_draining;
        /* off-CPU (event off-cpu / wall): intervals emitted, dropped under the minimum,
         * not tracked for lack of a slot, lost (ring full), slots freed at thread exit and
         * of those still open; slots in use now; the sched_switch program's run time */
        uint64_t offcpu, offcpu_short, offcpu_full, offcpu_lost, offcpu_exited, offcpu_open_exit;
        uint64_t offcpu_slots, offcpu_bpf_run_ns, offcpu_bpf_run_cnt;
        uint64_t offcpu_received; /* off-CPU records consumed (part of received) */
        /* in-kernel unwinding (--call-graph dwarf, dwarf-check): samples unwound, frames,
         * samples of processes without a mapping list yet (frame pointers instead),
         * frame-pointer steps (no table, a gap, a rule BPF cannot express), of which for
         * unexpressible rules, samples that met an unknown mapping */
        uint64_t ku_samples, ku_frames, ku_noproc, ku_fp_steps, ku_unsup, ku_nomap;
        uint64_t ku_sync_errors;        /* mapping lists that could not be written */
        uint64_t ku_compared;           /* dwarf-check: samples unwound both ways */
        uint64_t ku_equal;              /* ... whose two stacks were equal */
        uint64_t ku_not_ready;          /* dwarf-check: samples not compared, taken while their
                                         * process's list lacked a table being built (BPF took
                                         * frame-pointer steps there) */
        struct kunwind_stats ku_tables; /* the tables in the kernel (memory, builds) */
        /* the kernel's run-time stats of the sampling program (every invocation, targets or
         * not): 0/0 unless kernel.bpf_stats_enabled=1 */
        uint64_t bpf_run_ns, bpf_run_cnt;
        uint64_t bpf_load_kernel_us; /* kernel CPU of loading the programs (the verifier) */
        uint64_t bpf_verified_insns; /* instructions the verifier processed, every program */
        /* from ingestion */
        uint64_t received;           /* sample records consumed */
        uint64_t received_bytes;     /* bytes of those records (ring use per sample) */
        uint64_t with_context;       /* samples with a valid span or at least one label */
        uint64_t filtered;           /* dropped by the context filter (opts.filter), in all */
        uint64_t filtered_in_kernel; /* ... of those, in BPF: no context read, never received */
        uint64_t no_stack;           /* samples with no frame at all */
        uint64_t unwind_errors;      /* dwarf_unwind failures (fell back to the FP stack) */
        uint64_t unwind_truncated;   /* dwarf_unwind stopped before the outermost frame */
        uint64_t bad_records;        /* records of unexpected size/type */
        uint64_t sink_errors;
        /* samples that lost a new stack / label set / thread to a sink's store bound (the sum
         * over processes; SAMPLE_SINK_*_REFUSED) */
        uint64_t refused_stacks, refused_labels, refused_threads;
        uint64_t drains_cut;     /* polls that left records in the ring (time budget spent) */
        uint64_t stop_discarded; /* records left in the rings when sampler_stop ran out of time */
        uint64_t threads;        /* distinct tids seen */
        uint64_t processes;      /* targets known (added, forked) */
        uint64_t ring_bytes;     /* the sample ring's size (sampler_ring_bytes) */
        uint64_t task_events;    /* per_task: the targets' threads' events opened */
        uint64_t tls_located;    /* successful TLS locations (incl. redo after exec) */
        /* Go programs (ctxprof/tls_target.h): located with a labels layout, located with none
         * known (no labels read), samples with goroutine labels, and without for a torn read */
        uint64_t go_located, go_layout_unknown, go_labels, go_torn;
        uint64_t tls_errors; /* locations that failed for good */
        /* target jobs (engine/target_jobs.h): jobs past their deadline (their worker left
         * blocked), jobs not run (every worker stuck), jobs not run because their target's
         * owner already holds TARGET_JOBS_STUCK_PER_OWNER workers stuck, workers stuck now,
         * targets marked stuck (no more jobs; sampled without context), and targets no
         * longer stuck (the stuck job's worker came back: engine/procs.h) */
        uint64_t jobs_abandoned, jobs_refused, jobs_refused_owner, jobs_stuck_workers,
            targets_stuck, targets_returned, first_wait_skips;
        struct context_decode_stats ctx;
        struct sampler_ctx_missing ctx_missing;
        /* OpenTelemetry thread context (OTEP 4947) and process context (OTEP 4719) */
        uint64_t otel_faults; /* BPF: pointer or record unreadable (wild pointer, ...) */
        struct otel_decode_stats otel;
        struct otel_pctx_stats pctx;
        /* hostile target input refused (util/target_stats.h): /proc lines over their cap,
         * mapped files not opened (no such mapping, not a regular file, another inode) */
        struct target_stats target;
        struct modules_stats modules; /* the module registry (stack/modules.h) */
        /* Event bounds and the library-load hook (ctxprof/sample.h, engine/load_hook.h):
         * MAP/EXEC/FORK events a process sent over its budget, EXEC_OTHER events over a
         * budget (not sent: counted), targets not added because `targets` was full of live
         * ones, library-load hook hits in targets; the hook in use and its counters */
        uint64_t events_limited, exec_events_limited, targets_full, dl_notify;
        struct load_hook_stats hook;
};

struct sampler;

/* Check the kernel, load BPF, open perf events on every online CPU and attach.
 * sink->sample is called from sampler_poll(). On failure returns -errno and *stage. */
int sampler_new(const struct sampler_opts *o, const struct sample_sink *sink, struct sampler **out,
                enum sampler_stage *stage);
/* The sample ring's size for o on ncpu CPUs: o->ring_bytes rounded up to a power of two, or
 * by default one second of every CPU's samples at o->freq (512 B a sample, 17 KiB with a
 * stack copy), at least 8 MiB (32 MiB with a copy), at most 128 MiB. */
size_t sampler_ring_bytes(const struct sampler_opts *o, unsigned ncpu);
/* Sampling starts: until this is called, the BPF programs take no sample and no off-CPU
 * interval (the perf events run, the lifecycle events are reported). Call it when the
 * consumer's loop is about to drain, after the targets are added and before a launched
 * command is let run; sampler_poll calls it too, should the caller not have. */
void sampler_start(struct sampler *);
/* Start sampling process pid (and its future threads). -ESRCH no such process, -EPERM/-EACCES
 * not permitted, -ENOSPC more than CTXPROF_MAX_TARGETS. Its TLS is located by a job
 * (sampler_locate_wait waits for it; else it is taken from sampler_poll); samples taken
 * before count only if they have context. */
int sampler_add_target(struct sampler *, pid_t pid);
/* Wait for the location jobs of the targets added (all at once: until none is left, a
 * stalled one 250 ms at most, 2 s in all), so that their first samples have context. For a
 * caller that adds its targets before sampling starts (record); never the daemon's loop. */
void sampler_locate_wait(struct sampler *);
/* Sample every process in these cgroup v2 paths (as in /proc/PID/cgroup, "/a/b") or below
 * them, checked in the kernel at each sample: such a process becomes a target (with
 * context) at its first sample, whenever it moved in. Replaces the previous set; at most
 * CTXPROF_MAX_CGROUPS. Returns how many could be opened (a cgroup that does not exist yet is
 * skipped: the caller's exec-time selection still sees it later), or -errno. */
int sampler_set_cgroups(struct sampler *, const char *const *paths, unsigned n);
/* Before dropping CAP_SYS_ADMIN (the daemon): per-target library-load uprobes cannot be
 * opened without it, so hook the loaders every process uses now instead (see
 * engine/load_hook.h). 0 or -errno (the hook is unchanged). */
int sampler_hook_loader_wide(struct sampler *);
/* Stop sampling process pid (its queued samples are still delivered). -ENOENT not a target. */
int sampler_remove_target(struct sampler *, pid_t pid);
/* 1 if pid is a live target. */
int sampler_is_target(struct sampler *, pid_t pid);
/* One live target, for status reporting (strings valid during the callback only). */
struct sampler_target {
        pid_t pid;
        const char *name;
        uint64_t samples, with_context; /* samples consumed for it; those with context */
        uint64_t stacks_refused, labels_refused, threads_refused; /* by a store's bound */
        unsigned threads;    /* live threads, counted at most PROC_THREADS_STALE_NS ago */
        int context_located; /* its Custom Labels / span variables are located */
        int stuck;           /* a job on it passed its deadline: no more jobs, no context */
};
typedef void (*sampler_target_fn)(void *ctx, const struct sampler_target *t);
void sampler_foreach_target(struct sampler *, sampler_target_fn fn, void *ctx);
/* Entries in the kernel's targets map (walks the map; for tests and status). */
unsigned sampler_map_entries(struct sampler *);
/* Wait up to timeout_ms, then consume both rings. Returns records consumed or -errno. An
 * event loop calls it with 0 when sampler_ring_fd is readable or sampler_next_due is reached. */
int sampler_poll(struct sampler *, int timeout_ms);
/* The fds an event loop watches for the sampler (EPOLLIN; owned by the sampler): the sample
 * ring's epoll fd, readable when a record woke the consumer (most records do not: see
 * sampler_next_due), and any other fd whose readiness makes sampler_poll due. Up to max into
 * fds; returns how many. */
#define SAMPLER_FDS_MAX 4
unsigned sampler_fds(struct sampler *, int *fds, unsigned max);
/* When sampler_poll is due next (CLOCK_MONOTONIC ns): records submitted without a wakeup
 * (100 ms with a live target, 1 s without), a TLS retry, the dead-process sweep; at once when
 * the last drain left records behind; UINT64_MAX once stopped. */
uint64_t sampler_next_due(struct sampler *);
/* Stop the perf events (no new samples) and consume everything still in the rings. */
int sampler_stop(struct sampler *);
void sampler_get_stats(struct sampler *, struct sampler_stats *out);
/* Where DWARF unwinding stopped early (truncated, or failed in a live process), by the module
 * of the frame it stopped at (CTXPROF_MODULE_UNKNOWN: an address no mapping covers): up to
 * max modules, most stops first; returns how many. *other (may be NULL): stops in modules
 * beyond the tally's bound (MODULE_TALLY_MAX). */
unsigned sampler_unwind_stops(struct sampler *, struct module_tally_entry *out, unsigned max,
                              uint64_t *other);
/* Number of targets still alive (the command stops when it reaches 0 with -p). */
unsigned sampler_live_targets(struct sampler *);
/* The module registry frames refer to (owned by the sampler; valid until sampler_free). */
struct modules *sampler_modules(struct sampler *);
void sampler_free(struct sampler *);

#endif
