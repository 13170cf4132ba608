/* SPDX-License-Identifier: MIT */
/*
 * engine/sampler_bpf.c — the sampler's BPF lifecycle: the state that needs no kernel object,
 * the skeleton opened and configured (read-only data, map sizes, off-CPU programs), loaded,
 * the perf events opened and attached (one per CPU, or record's per-thread set of
 * engine/task_events.h), the library-load hook, the two ring consumers;
 * sampler_new runs these stages in order and sampler_free undoes them all. Must never print,
 * never handle a ring record (sampler_ingest.c) and never touch a target process.
 */
#include <errno.h>
#include <linux/perf_event.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "ctxprof/cfi.h"
#include "engine/ktrace_text.h"
#include "engine/kunwind.h"
#include "engine/load_hook.h"
#include "engine/sampler_counters.h"
#include "engine/sampler_int.h"
#include "engine/target_jobs.h"
#include "engine/task_events.h"
#include "sampler.skel.h"

/* The sample ring, sized for the rate (sampler_ring_bytes): RING_SECONDS of every CPU's
 * samples at the rate asked, at RING_REC_BYTES each (a frame-pointer record with a deep
 * user stack and a kernel stack; measured: 8 MiB held 0.25 s of 16 CPUs x 4000 Hz) or
 * RING_COPY_REC_BYTES (one with a 16 KiB stack copy), between the floors and the ceiling. */
#define DEFAULT_RING_BYTES  (8u << 20)
#define RING_SECONDS        1 /* a consumer held up this long (a chunk cut, a slow disk) loses none */
#define RING_REC_BYTES      512u
#define RING_COPY_REC_BYTES (17u << 10)
#define RING_AUTO_MAX_BYTES (128ull << 20)
#define PROC_PID_INIT_INO   0xEFFFFFFCu /* the host's PID namespace (linux/proc_ns.h) */

/* Modes: which of the two unwinders run (sampling_names.h). */
static int cg_copies(int cg)
{
        return cg == SAMPLER_CG_DWARF_COPY || cg == SAMPLER_CG_DWARF_CHECK;
}
static int cg_kunwind(int cg)
{
        return cg == SAMPLER_CG_DWARF || cg == SAMPLER_CG_DWARF_CHECK;
}
/* The in-kernel unwinder's tables are loaded for it, and for the blocking stacks of off-CPU
 * intervals in every call-graph mode (docs/offcpu.md). */
static int uses_ku(const struct sampler_opts *o)
{
        return cg_kunwind(o->call_graph) || SAMPLER_EV_HAS_OFFCPU(o->event);
}

/* The sampling event's attributes, per CPU or per thread alike. */
static void perf_attr(const struct sampler_opts *o, struct perf_event_attr *a)
{
        memset(a, 0, sizeof(*a));
        a->size = sizeof(*a);
        if (o->event == SAMPLER_EV_CYCLES) {
                a->type = PERF_TYPE_HARDWARE;
                a->config = PERF_COUNT_HW_CPU_CYCLES;
        } else {
                a->type = PERF_TYPE_SOFTWARE;
                a->config = PERF_COUNT_SW_CPU_CLOCK;
        }
        a->freq = 1;
        a->sample_freq = o->freq;
}

static int open_perf_event(const struct sampler_opts *o, int cpu)
{
        struct perf_event_attr a;

        perf_attr(o, &a);
        return (int)syscall(__NR_perf_event_open, &a, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
}

#define DWARF_RING_BYTES    (32u << 20) /* dwarf-copy's floor: records of 16 KiB and more */
#define NS_PER_MS           1000000ull
#define LOCATE_DELAY_MAX_MS 1000
#define RECORD_DELAY_MAX_US 10000
#define NS_PER_US           1000ull

/* Stage BTF: the state that needs no kernel object (tables, caches, unwinder). */
static int sampler_alloc(const struct sampler_opts *o, const struct sample_sink *sink,
                         struct sampler *s)
{
        /* Fault injection for tests/integration/test_sampler_exec_tls.sh only: a delay (ms, at
         * most LOCATE_DELAY_MAX_MS) between locating a process's TLS and publishing it. */
        const char *d = getenv("CTXPROF_TEST_LOCATE_DELAY_MS");
        long ms = d ? strtol(d, NULL, 10) : 0;

        s->opts = *o;
        if (sink)
                s->sink = *sink;
        s->modules = modules_new();
        if (!s->modules || procs_init(&s->procs, s->modules))
                return -ENOMEM;
        if (target_jobs_init(&s->jobs))
                return -ENOMEM;
        s->procs.jobs = s->jobs;
        s->procs.pctx_stats = &s->st.pctx;
        if (ms > 0)
                s->procs.locate_delay_ns =
                    (uint64_t)(ms < LOCATE_DELAY_MAX_MS ? ms : LOCATE_DELAY_MAX_MS) * NS_PER_MS;
        /* ... for test_daemon_first_look.sh: a delay (ms, at most LOCATE_DELAY_MAX_MS) before
         * each process-context read, a slow job ... */
        d = getenv("CTXPROF_TEST_PCTX_DELAY_MS");
        ms = d ? strtol(d, NULL, 10) : 0;
        if (ms > 0)
                s->procs.pctx_delay_ns =
                    (uint64_t)(ms < LOCATE_DELAY_MAX_MS ? ms : LOCATE_DELAY_MAX_MS) * NS_PER_MS;
        /* ... and for test_record_load.sh: a delay (us, at most RECORD_DELAY_MAX_US) per
         * record, a consumer slower than the samples it gets. */
        d = getenv("CTXPROF_TEST_RECORD_DELAY_US");
        ms = d ? strtol(d, NULL, 10) : 0;
        if (ms > 0)
                s->record_delay_ns =
                    (uint64_t)(ms < RECORD_DELAY_MAX_US ? ms : RECORD_DELAY_MAX_US) * NS_PER_US;
        if (cg_copies(o->call_graph)) {
                s->unwinder = dwarf_unwinder_new();
                if (!s->unwinder)
                        return -ENOMEM;
        }
        return 0;
}

/* Kernel CPU time of the calling thread, µs (the BPF verifier runs in the loader's bpf()). */
static uint64_t thread_kernel_us(void)
{
        struct rusage ru;

        if (getrusage(RUSAGE_THREAD, &ru))
                return 0;
        return (uint64_t)ru.ru_stime.tv_sec * 1000000u + (uint64_t)ru.ru_stime.tv_usec;
}

/* The verifier's work for every loaded program of obj (instructions processed). */
static uint64_t verified_insns(struct bpf_object *obj)
{
        struct bpf_program *p;
        uint64_t sum = 0;

        bpf_object__for_each_program(p, obj)
        {
                if (bpf_program__autoload(p))
                        sum += bpf_prog_verified_insns(bpf_program__fd(p));
        }
        return sum;
}

static size_t pow2_at_least(uint64_t v)
{
        size_t r = (size_t)sysconf(_SC_PAGESIZE);

        while (r < v && r < ((size_t)1 << 40))
                r <<= 1;
        return r;
}

size_t sampler_ring_bytes(const struct sampler_opts *o, unsigned ncpu)
{
        uint64_t floor = cg_copies(o->call_graph) ? DWARF_RING_BYTES : DEFAULT_RING_BYTES;
        uint64_t rec = cg_copies(o->call_graph) ? RING_COPY_REC_BYTES : RING_REC_BYTES;
        uint64_t want = (uint64_t)(ncpu ? ncpu : 1) * o->freq * rec * RING_SECONDS;

        if (o->ring_bytes)
                return pow2_at_least(o->ring_bytes);
        if (!SAMPLER_EV_HAS_PERF(o->event) || want < floor)
                want = floor;
        if (want > RING_AUTO_MAX_BYTES)
                want = RING_AUTO_MAX_BYTES;
        return pow2_at_least(want);
}

/* The off-CPU programs (bpf/offcpu.bpf.h) are loaded only for the off-cpu and wall events;
 * otherwise their slot map shrinks to one entry, so the CPU-only mode costs nothing. */
static int sampler_offcpu_config(struct sampler *s)
{
        const struct sampler_opts *o = &s->opts;
        struct bpf_program *progs[] = {s->skel->progs.ctxprof_offcpu_switch,
                                       s->skel->progs.ctxprof_offcpu_wakeup,
                                       s->skel->progs.ctxprof_offcpu_exit};
        int on = SAMPLER_EV_HAS_OFFCPU(o->event), err;
        size_t i;

        for (i = 0; i < sizeof(progs) / sizeof(progs[0]); i++)
                if ((err = bpf_program__set_autoload(progs[i], on)))
                        return err;
        s->skel->rodata->offcpu_min_ns =
            o->offcpu_min_ns ? o->offcpu_min_ns : CTXPROF_OFFCPU_MIN_NS_DEFAULT;
        s->skel->rodata->offcpu_kunwind = on ? 1 : 0;
        return bpf_map__set_max_entries(s->skel->maps.offcpu_threads,
                                        !on ? 1
                                        : o->offcpu_max_threads
                                            ? o->offcpu_max_threads
                                            : CTXPROF_OFFCPU_MAX_THREADS_DEFAULT);
}

/* Rows of `ku_rows`: CTXPROF_KU_DEFAULT_ROWS, or CTXPROF_KU_ROWS (tests: a small bound). */
static uint32_t ku_row_cap(void)
{
        const char *e = getenv("CTXPROF_KU_ROWS");
        long v = e ? strtol(e, NULL, 10) : 0;

        return v > 0 && v <= (long)CTXPROF_KU_DEFAULT_ROWS * 16 ? (uint32_t)v
                                                                : CTXPROF_KU_DEFAULT_ROWS;
}

/* Entries of `targets`: CTXPROF_MAX_TARGETS, or CTXPROF_TEST_MAX_TARGETS (tests: a map a
 * fork bomb fills under a small pids.max; at least TEST_MIN_TARGETS). */
#define TEST_MIN_TARGETS 8
static uint32_t targets_cap(void)
{
        const char *e = getenv("CTXPROF_TEST_MAX_TARGETS");
        long v = e ? strtol(e, NULL, 10) : 0;

        return v >= TEST_MIN_TARGETS && v < CTXPROF_MAX_TARGETS ? (uint32_t)v : CTXPROF_MAX_TARGETS;
}

/* Stage OPEN: the BPF object, configured (read-only data, ring size) before load. */
static int sampler_open_bpf(struct sampler *s)
{
        const struct sampler_opts *o = &s->opts;
        struct stat ns;
        size_t ring;
        int err;

        s->skel = sampler_bpf__open();
        if (!s->skel)
                return -errno ? -errno : -EINVAL;
        s->skel->rodata->stack_copy_mode = cg_copies(o->call_graph) ? 1 : 0;
        s->skel->rodata->kunwind = cg_kunwind(o->call_graph) ? 1 : 0;
        s->skel->rodata->kernel_stacks = o->kernel_stacks ? 1 : 0;
        s->skel->rodata->follow_children = o->follow_children ? 1 : 0;
        s->skel->rodata->notify_exec_all = o->exec_filter ? 1 : 0;
        s->skel->rodata->filter_needs_context = context_filter_needs_context(&o->filter);
        s->skel->rodata->self_tgid = (__u32)getpid();
        /* In a PID namespace other than the host's (a sidecar), BPF translates every pid to
         * the ones this process sees in /proc. */
        if (!stat("/proc/self/ns/pid", &ns) && ns.st_ino != PROC_PID_INIT_INO) {
                s->skel->rodata->pidns_dev = (__u64)ns.st_dev;
                s->skel->rodata->pidns_ino = (__u64)ns.st_ino;
        }
        ring = sampler_ring_bytes(o, (unsigned)libbpf_num_possible_cpus());
        s->ring_bytes = ring;
        s->skel->rodata->wakeup_bytes = ring / 4;
        /* The row array is allocated whole at load: only when it is used. */
        if (bpf_map__set_max_entries(s->skel->maps.ku_rows, uses_ku(o) ? ku_row_cap() : 1))
                return -EINVAL;
        if (bpf_map__set_max_entries(s->skel->maps.targets, targets_cap()))
                return -EINVAL;
        /* Attached by load_hook_new: per target, or sys_exit as the fallback. */
        bpf_program__set_autoattach(s->skel->progs.ctxprof_dl_notify, false);
        bpf_program__set_autoattach(s->skel->progs.ctxprof_sys_exit, false);
        err = sampler_offcpu_config(s);
        return err ? err : bpf_map__set_max_entries(s->skel->maps.samples, (__u32)ring);
}

/* Stage PERF: one sampling event per possible CPU (an offline one is skipped); per task, an
 * event on this thread checks the attributes (rate, PMU, permission) here, and each target's
 * threads get theirs when it is added (sampler_add_target). */
static int sampler_open_perf(struct sampler *s)
{
        int i;

        s->ncpu = libbpf_num_possible_cpus();
        if (s->ncpu <= 0)
                return s->ncpu ? s->ncpu : -EINVAL;
        s->perf_fds = calloc((size_t)s->ncpu, sizeof(int));
        s->links = calloc((size_t)s->ncpu, sizeof(*s->links));
        if (!s->perf_fds || !s->links)
                return -ENOMEM;
        for (i = 0; i < s->ncpu; i++)
                s->perf_fds[i] = -1;
        if (!SAMPLER_EV_HAS_PERF(s->opts.event))
                return 0; /* off-CPU only: the sched_switch program is the sampler */
        if (s->opts.per_task) {
                struct perf_event_attr a;

                perf_attr(&s->opts, &a);
                return task_events_probe(&a);
        }
        for (i = 0; i < s->ncpu; i++) {
                s->perf_fds[i] = open_perf_event(&s->opts, i);
                if (s->perf_fds[i] < 0 && errno != ENODEV) /* ENODEV: possible but offline */
                        return -errno;
        }
        return 0;
}

/* Stage ATTACH: the sampling program to every perf event, then the lifecycle programs. */
static int sampler_attach(struct sampler *s)
{
        int i, attached = 0, err;

        for (i = 0; i < s->ncpu; i++) {
                if (s->perf_fds[i] < 0)
                        continue;
                s->links[i] =
                    bpf_program__attach_perf_event(s->skel->progs.ctxprof_sample, s->perf_fds[i]);
                if (!s->links[i])
                        return -errno;
                /* The link owns the perf fd from here on (bpf_link__destroy closes it). */
                s->perf_fds[i] = -1;
                attached++;
        }
        if (s->opts.per_task && SAMPLER_EV_HAS_PERF(s->opts.event)) {
                struct perf_event_attr a;

                perf_attr(&s->opts, &a);
                s->task_events = task_events_new(bpf_program__fd(s->skel->progs.ctxprof_sample), &a,
                                                 s->opts.follow_children);
                if (!s->task_events)
                        return -ENOMEM;
        } else if (!attached && SAMPLER_EV_HAS_PERF(s->opts.event)) {
                return -ENODEV;
        }
        err = sampler_bpf__attach(s->skel); /* the tp_btf lifecycle programs */
        if (err)
                return err;
        /* The library-load hook: per-target uprobes, or sys_exit where the kernel has none. */
        s->hook =
            load_hook_new(s->skel->progs.ctxprof_dl_notify, s->skel->progs.ctxprof_sys_exit, &err);
        return err;
}

/* Stage RING: the consumers of both rings. */
static int sampler_open_rings(struct sampler *s)
{
        s->rb = ring_buffer__new(bpf_map__fd(s->skel->maps.samples), on_record, s, NULL);
        if (!s->rb)
                return -errno;
        /* Never polled: events land there only while `samples` is full, and then samples
         * force wakeups of their own. */
        s->rb_spill = ring_buffer__new(bpf_map__fd(s->skel->maps.events), on_record, s, NULL);
        if (!s->rb_spill)
                return -errno;
        return 0;
}

int sampler_new(const struct sampler_opts *o, const struct sample_sink *sink, struct sampler **out,
                enum sampler_stage *stage)
{
        struct sampler *s;
        int err;

        *out = NULL;
        *stage = SAMPLER_STAGE_BTF;
        if (access("/sys/kernel/btf/vmlinux", R_OK))
                return -ENOTSUP;
        s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        err = sampler_alloc(o, sink, s);
        if (!err) {
                *stage = SAMPLER_STAGE_OPEN;
                err = sampler_open_bpf(s);
        }
        if (!err) {
                uint64_t before = thread_kernel_us();

                *stage = SAMPLER_STAGE_LOAD;
                err = sampler_bpf__load(s->skel);
                s->st.bpf_load_kernel_us = thread_kernel_us() - before;
        }
        if (!err)
                s->st.bpf_verified_insns = verified_insns(s->skel->obj);
        if (!err) {
                s->procs.targets_fd = bpf_map__fd(s->skel->maps.targets);
                s->procs.exec_gens_fd = bpf_map__fd(s->skel->maps.exec_gens);
                if (uses_ku(o)) {
                        s->ku = kunwind_new(s->modules, bpf_map__fd(s->skel->maps.ku_rows),
                                            bpf_map__fd(s->skel->maps.ku_procs),
                                            bpf_map__max_entries(s->skel->maps.ku_rows));
                        /* its tables are built off this loop, on a pool of their own: never
                         * queued behind locating jobs (a new process's first samples take
                         * frame-pointer steps until its tables are in) */
                        if (!s->ku || target_jobs_init(&s->ku_jobs))
                                err = -ENOMEM;
                        else
                                kunwind_use_jobs(s->ku, s->ku_jobs);
                }
                /* after the load: our programs' images are in kallsyms now */
                if (!err && o->kernel_stacks && !(s->ktrace = ktrace_text_load()))
                        err = -ENOMEM;
        }
        if (!err) {
                *stage = SAMPLER_STAGE_PERF;
                err = sampler_open_perf(s);
        }
        if (!err) {
                *stage = SAMPLER_STAGE_ATTACH;
                err = sampler_attach(s);
        }
        if (!err) {
                *stage = SAMPLER_STAGE_RING;
                err = sampler_open_rings(s);
        }
        if (err) {
                sampler_free(s);
                return err < 0 ? err : -EINVAL;
        }
        *stage = SAMPLER_STAGE_NONE;
        *out = s;
        return 0;
}

void sampler_free(struct sampler *s)
{
        int c;

        if (!s)
                return;
        ring_buffer__free(s->rb);
        ring_buffer__free(s->rb_spill);
        task_events_free(s->task_events);
        if (s->links)
                for (c = 0; c < s->ncpu; c++)
                        bpf_link__destroy(s->links[c]);
        if (s->perf_fds)
                for (c = 0; c < s->ncpu; c++)
                        if (s->perf_fds[c] >= 0)
                                close(s->perf_fds[c]);
        free(s->links);
        free(s->perf_fds);
        load_hook_free(s->hook);
        sampler_bpf__destroy(s->skel);
        target_jobs_free(s->jobs); /* never waits for a worker stuck in a target */
        target_jobs_free(s->ku_jobs);
        procs_free(&s->procs);
        free(s->tids.slots);
        dwarf_unwinder_free(s->unwinder);
        kunwind_free(s->ku);
        ktrace_text_free(s->ktrace);
        modules_free(s->modules);
        free(s);
}
