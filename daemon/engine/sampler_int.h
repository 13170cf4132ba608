/* SPDX-License-Identifier: MIT */
/*
 * engine/sampler_int.h — the sampler's private state (struct sampler) and the few functions
 * its files share: sampler.c (public API glue, targets, the drain loop), sampler_bpf.c (BPF
 * lifecycle) and sampler_ingest.c (ring records to decoded samples). Included only by those
 * three files; everything else sees the opaque struct sampler of engine/sampler.h. Must never
 * hold code, and never be included outside engine/sampler*.c.
 */
#ifndef CTXPROF_ENGINE_SAMPLER_INT_H
#define CTXPROF_ENGINE_SAMPLER_INT_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/procs.h"
#include "engine/sampler.h"
#include "stack/unwind_dwarf.h"

/* on_record's return once the drain budget is spent (sampler_ingest.c, DRAIN_BUDGET_NS) */
#define DRAIN_CUT (-ECANCELED)

struct tid_set {
        uint32_t *slots; /* 0 = empty */
        size_t cap, n;
};

struct sampler {
        struct sampler_opts opts;
        struct sample_sink sink;
        struct sampler_bpf *skel;
        size_t ring_bytes; /* the sample ring's size (sampler_ring_bytes) */
        int ncpu;
        int *perf_fds; /* -1 when closed/owned by a link */
        struct bpf_link **links;
        struct task_events *task_events; /* opts.per_task: the targets' threads' events */
        struct ring_buffer *rb;          /* ring `samples`: samples and lifecycle events */
        struct ring_buffer *rb_spill;    /* ring `events`: events that found `samples` full */
        struct modules *modules;
        struct dwarf_unwinder *unwinder; /* dwarf-copy, dwarf-check */
        struct kunwind *ku; /* dwarf, dwarf-check, off-CPU: the in-kernel unwinder's tables */
        struct ktrace_text *ktrace; /* kernel stacks: the BPF machinery's text, dropped */
        struct load_hook *hook;     /* how a target's library loads are noticed */
        struct procs procs;
        struct target_jobs *jobs;    /* locating runs there, off this loop (engine/target_jobs.h) */
        struct target_jobs *ku_jobs; /* unwind tables are built there (kunwind), or NULL */
        uint64_t ku_gen;             /* kunwind_generation the incomplete lists were synced at */
        struct tid_set tids;
        struct sampler_stats st;
        struct module_tally unwind_stops; /* module where DWARF unwinding stopped early */
        int stopped;
        /* the drain of the current sampler_poll: see DRAIN_BUDGET_NS */
        uint64_t drain_deadline_ns; /* 0 = no record yet in this drain; UINT64_MAX = no limit */
        unsigned drain_count;       /* records handled in this drain */
        int drain_cut;              /* the budget was spent: records are left in the ring */
        int discarding;             /* sampler_stop past its budget: records only counted */
        uint64_t record_delay_ns;   /* CTXPROF_TEST_RECORD_DELAY_US, see on_record */
        uint64_t last_sweep_ns;
        uint64_t last_drain_ns; /* the last sampler_poll (see sampler_next_due) */
        uint64_t consumer_ns;   /* the last value written to BPF's consumer_ns */
        /* when the last EXEC_OTHER event was handled (mono ns): BPF wakes the consumer at
         * most once per CTXPROF_EXEC_OTHER_WAKE_GAP_NS, so the rest of a burst waits for a
         * drain the consumer schedules itself (sampler_next_due) */
        uint64_t exec_other_ns;
        /* scratch for one decoded sample */
        struct ctxprof_frame frames[CTXPROF_MAX_FRAMES];
        uint64_t ips[CTXPROF_MAX_FRAMES];
        char comm[CTXPROF_COMM_LEN + 1];
        struct otel_ctx otel;
        struct decoded_resource resource;
};

/* sampler.c: a target's per-process plumbing, also used by ingestion */
void ku_sync(struct sampler *s, struct proc *p, int refresh);
void hook_proc(struct sampler *s, struct proc *p);
void forget_target(struct sampler *s, struct proc *p);
/* A new entry for the process that has pid now (procs_new), with no state left of an
 * earlier process of that pid (the DWARF unwinder's cache is per pid); NULL when full. */
struct proc *sampler_proc_new(struct sampler *s, pid_t pid, const char *comm);

/* sampler_ingest.c: the callback of both rings (libbpf ring_buffer_sample_fn) */
int on_record(void *ctx, void *data, size_t size);

/* This thread is at its ring now (mono ns): see consumer_seen in sampler.c. */
void consumer_seen(struct sampler *s, uint64_t now);

#endif
