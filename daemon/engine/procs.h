/* SPDX-License-Identifier: MIT */
/*
 * procs.h — the sampler's per-process table: one entry per target process (name, cached
 * /proc/PID/maps, counts) and the state machine that locates its TLS variables and publishes
 * the location into the BPF `targets` map (retried while the loader runs or a dlopen may
 * come, redone after an exec). Owns nothing of BPF but two map fds it is given; never prints.
 *
 * Locating runs as a job (engine/target_jobs.h) on a worker, one job per process at a time,
 * with a deadline (TLS_JOB_DEADLINE_NS); the result is applied when the sampler collects it
 * (procs_job_done). A process whose job passed its deadline is *stuck*: it gets no more jobs,
 * and its samples are recorded with what is known (no context meanwhile). When the stuck
 * job's worker comes back (the read it waited on was answered, or failed), the process is
 * no longer stuck and is located again, TLS_STUCK_RETURNS_MAX times; after that it stays
 * stuck (a target that stalls a worker each time).
 *
 * Thread safety: driven by the sampler's thread only (the jobs own copies of what they need).
 */
#ifndef CTXPROF_PROCS_H
#define CTXPROF_PROCS_H

#include <stdint.h>
#include <sys/types.h>

#include "ctxprof/sample.h"
#include "ctxprof/tls_target.h"
#include "engine/otel_process_ctx.h"
#include "engine/target_jobs.h"
#include "stack/modules.h"
#include "stack/proc_maps.h"
#include "util/proc_pin.h"

#define PROCS_MAX         CTXPROF_MAX_TARGETS /* entries of the table, as many as the BPF `targets` map */
#define PROCS_INDEX_SLOTS (2 * PROCS_MAX) /* a power of two: at most half used */

/* Where a process is in locating its TLS variables. */
enum proc_tls_state {
        PROC_TLS_SEARCHING = 0, /* to locate (again): retried at tls_next_ns */
        PROC_TLS_LOCATED,       /* both variables located and published */
        PROC_TLS_GAVE_UP,       /* gone, not in the map, or too many errors */
};

#define PROC_OWNER_UNKNOWN UINT32_MAX /* struct proc.owner when /proc/PID/status said none */
/* The real uid of pid (its /proc/PID/status Uid: line, not the owner of /proc/PID: a process
 * that is not dumpable shows root there), PROC_OWNER_UNKNOWN when it cannot be read. */
uint32_t procs_read_owner(pid_t pid);

struct proc {
        pid_t pid;
        struct proc_pin pin; /* pidfd_open at procs_new (util/proc_pin.h): its reads check it */
        uint32_t owner;      /* real uid at procs_new: target_jobs_submit's owner */
        int alive;
        int forget_pending; /* exit seen: release unwinder state after the next drain */
        enum proc_tls_state tls_state;
        int tls_errors;
        uint64_t tls_next_ns;      /* next attempt */
        uint64_t tls_since_ns;     /* start of the current location round (add/exec) */
        uint64_t generation;       /* locations published (ctxprof_tls_target.generation) */
        uint64_t pending_since_ns; /* the map entry is marked pending since; 0 = not */
        struct ctxprof_tls_target published; /* the last location published */
        uint64_t dead_since_ns; /* when alive dropped to 0 (slot reused a second later) */
        uint64_t samples, with_context;
        /* samples whose new stack / label set / thread a sink refused: the process had used its
         * share of a bounded store (SAMPLE_SINK_*_REFUSED) */
        uint64_t stacks_refused, labels_refused, threads_refused;
        char name[CTXPROF_COMM_LEN + 1];
        struct proc_maps *maps; /* NULL until opened */
        struct otel_pctx otel;  /* its OpenTelemetry process context (OTEP 4719), if any */
        int otel_keys_wanted;   /* a sample since the last look named keys it does not have */
        unsigned threads;       /* its live threads when last counted (proc_threads) */
        uint64_t threads_ns;    /* ... at this time; 0 = never */
        uint64_t ku_sync_ns;    /* its in-kernel unwinding mapping list was last written */
        int ku_incomplete;      /* ... without a table being built or put off (kunwind_sync
                                 * returned 1) */
        uint64_t ku_gen;        /* kunwind_generation at that write */
        int ku_maps_stale;      /* a read of its maps for the list was put off: read at the
                                 * next write (stack/maps_budget.h) */
        uint64_t ku_ready_ns;   /* the first write since which the list is complete */
        int load_hooked;        /* its library-load hook is attached (engine/load_hook.c) */
        uint64_t job_id;        /* its locating job in flight (target_jobs id), 0 = none */
        uint64_t image;         /* images seen (exec): a job for an older one is discarded */
        int locate_again;       /* a file was mapped while its job ran: locate once more */
        int stuck;              /* a job of it passed its deadline: no more jobs for it */
        uint64_t stuck_job;     /* that job (target_jobs id), until its worker comes back */
        int stuck_returns;      /* times a stuck job of it came back */
};

struct procs {
        struct proc *v; /* PROCS_MAX slots, n used, newest last */
        size_t n;
        size_t live; /* of those, alive at the last procs_locate_due */
        /* pid -> its newest entry in v, for procs_find at every sample: open addressing over
         * PROCS_INDEX_SLOTS, written by procs_new, rebuilt by procs_compact (which moves
         * entries); {pid, index + 1}, index + 1 = 0: empty */
        struct proc_slot {
                int32_t pid;
                uint32_t idx1;
        } * index;
        struct modules *modules;  /* for the maps caches (not owned) */
        int targets_fd;           /* BPF map `targets` (not owned) */
        int exec_gens_fd;         /* BPF map `exec_gens` (not owned) */
        uint64_t locate_delay_ns; /* tests only: CTXPROF_TEST_LOCATE_DELAY_MS */
        uint64_t pctx_delay_ns;   /* tests only: CTXPROF_TEST_PCTX_DELAY_MS */
        struct target_jobs *jobs; /* where locating runs (not owned); NULL = in the caller */
        struct otel_pctx_stats *pctx_stats; /* process-context counters (not owned), or NULL */
        /* counters (struct sampler_stats reports them) */
        uint64_t processes;         /* entries created */
        uint64_t tls_located;       /* locations published */
        uint64_t tls_errors;        /* locations that failed */
        uint64_t go_located;        /* Go programs (images) located with a labels layout */
        uint64_t go_layout_unknown; /* ... with none known: their labels are not read */
        uint64_t stuck;             /* processes marked stuck (a job past its deadline) */
        uint64_t stuck_returned;    /* ... no longer stuck: the stuck job's worker came back */
        uint64_t first_wait_skips;  /* a first process-context look's waits not made: the
                                     * loop's budget for them was spent (procs.c) */
        /* that budget (procs.c, PCTX_FIRST_WAIT_BURST_NS): tokens left, refilled at */
        uint64_t first_wait_tokens_ns, first_wait_at_ns;
        struct target_stats target; /* the locator's refusals (maps lines, files) */
};

/* An empty table. The map fds may be set later (before any location). 0 or -ENOMEM. */
int procs_init(struct procs *t, struct modules *modules);
void procs_free(struct procs *t);

/* The newest entry for pid (a reused pid maps to the latest process), or NULL. */
struct proc *procs_find(struct procs *t, pid_t pid);
/* A new live entry (name from comm, else /proc/PID/comm, else "pid-N"); NULL when full
 * even after dropping long-dead entries. */
struct proc *procs_new(struct procs *t, pid_t pid, const char *comm, uint64_t now);
/* p stopped being a target at now; forget: release its unwinder state after the next drain. */
void proc_mark_dead(struct proc *p, int forget, uint64_t now);
/* Drop entries dead for more than a second (their queued samples are long consumed). */
void procs_compact(struct procs *t, uint64_t now);

/* p exec'ed: its mappings are read again and its TLS is located from scratch. */
void proc_new_image(struct procs *t, struct proc *p, uint64_t now);
/* The map entry of p was marked pending at now (attach, exec, or BPF saw a file mapped):
 * locate at the next chance, whatever the state. */
void proc_location_pending(struct proc *p, uint64_t now);
/* BPF saw p map a file at some point before now and marked its entry pending then. A location
 * published since (made from maps read before the file was there, or finding nothing) cleared
 * that mark, and the samples of code in the new file would go unlabelled until the next
 * location: the mark is set again, then as proc_location_pending. */
void proc_mapped(struct procs *t, struct proc *p, uint64_t now);
/* Locate p's TLS variables if a retry is due (a job, when t->jobs is set: published when it
 * ends, see procs_job_done), and publish them into `targets`. */
void proc_locate_tls(struct procs *t, struct proc *p, uint64_t now);
/* p's job in flight, if any: wait for it until the monotonic time until_ns and apply it. */
void proc_locate_wait(struct procs *t, struct proc *p, uint64_t until_ns);
/* Every job in flight: waited for and applied, until none is left, or no job has finished
 * for idle_ns (one stalled target holds the caller no longer), or the time until_ns. */
void procs_jobs_wait(struct procs *t, uint64_t idle_ns, uint64_t until_ns);
/* Read p's OpenTelemetry process context again when it may have changed: PCTX_CHECK_NS
 * since the last look, or keys_missing (a sample names a key index the key map does not
 * have yet: a key is published before a thread uses it). A job (when t->jobs is set):
 * p->otel changes when it ends; a process's first look waits for it, briefly. */
void proc_pctx_refresh(struct procs *t, struct proc *p, uint64_t now, int keys_missing);
/* Look for p's perf map when its maps cache wants it (a sample landed in anonymous code:
 * proc_maps_perf_map_wanted): a job (when t->jobs is set; the path is the target's to name,
 * and a FUSE mount on it could stall the lookup), whose result becomes the module of p's
 * anonymous code when it ends. */
void proc_perf_map_due(struct procs *t, struct proc *p, uint64_t now);
/* A target_job_done for t->jobs (ctx = t): a job of a process ended (arg), was abandoned or
 * refused (the process marked stuck), or came back after that (it may be no longer). */
void procs_job_done(void *ctx, uint64_t id, enum target_job_end end, void *arg);
/* Run every due retry. */
void procs_locate_due(struct procs *t, uint64_t now);
/* timeout_ms, shortened to the next pending retry (rounded up to whole ms). */
int procs_retry_timeout(const struct procs *t, uint64_t now, int timeout_ms);

/* 1 if pid no longer runs (gone, zombie or dead): its exit tracepoint has fired. */
int proc_gone(pid_t pid);
/* p's live threads, counted again when the count is older than its lifetime, between
 * PROC_THREADS_STALE_NS - PROC_THREADS_SPREAD_NS and PROC_THREADS_STALE_NS by its pid (so
 * targets added together are not all counted again by the same status write): one stat of
 * /proc/PID/task (procfs gives it two links more than the process has threads); 0 when it is
 * gone. For status, never per sample. */
#define PROC_THREADS_STALE_NS  10000000000ull /* 10 s */
#define PROC_THREADS_SPREAD_NS 8000000000ull  /* 8 s: over four 2 s status writes */
unsigned proc_threads(struct proc *p, uint64_t now);
/* 1 if p's process no longer runs: its pin says it exited (proc_gone(p->pid) would see
 * whatever process holds the pid now); by pid when p could not be pinned. */
int proc_exited(const struct proc *p);

#endif
