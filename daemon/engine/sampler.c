/* SPDX-License-Identifier: MIT */
/*
 * sampler.c — the sampling engine's public API glue (see sampler.h): targets (add, remove,
 * cgroups, the per-process plumbing ingestion shares: the in-kernel unwinder's mapping list,
 * the library-load hook, forgetting a target), the drain loop (sampler_poll, sampler_stop,
 * when the next drain is due) and what the engine reports (targets, statistics). BPF
 * lifecycle is in sampler_bpf.c, ring records to decoded samples in sampler_ingest.c, their
 * shared state in sampler_int.h. Must never print, never decode a ring record itself, and
 * never let a dead or hostile target stop ingestion.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "engine/kunwind.h"
#include "engine/load_hook.h"
#include "engine/sampler_counters.h"
#include "engine/sampler_int.h"
#include "engine/target_jobs.h"
#include "engine/task_events.h"
#include "sampler.skel.h"
#include "stack/proc_maps.h"
#include "util/clock.h"
#include "util/proc_lines.h"

/* sampler_locate_wait waits for the targets' locations (jobs on workers, engine/procs.c)
 * until no job has finished for ADD_LOCATE_WAIT_NS (long enough for a real process, short
 * beside a stalled one), and LOCATE_WAIT_MAX_NS at most in all: many targets (record -p with
 * a thousand PIDs) are located on two workers, and the recording does not wait for them
 * all; the rest are located while it samples. */
#define ADD_LOCATE_WAIT_NS 250000000ull  /* 250 ms */
#define LOCATE_WAIT_MAX_NS 2000000000ull /* 2 s */
/* sampler_stop handles what the rings hold for at most this long; the rest (a full ring of
 * DWARF records can take seconds to unwind on a busy host) is counted, not handled, so a
 * stop (SIGINT, SIGTERM, the end of -d) is prompt. */
#define STOP_DRAIN_BUDGET_NS 1000000000ull /* 1 s */
/* Records come without a wakeup (bpf/sampler.bpf.c): the caller's loop drains them by
 * sampler_next_due. With a live target, samples wait at most DRAIN_PERIOD_NS; without one,
 * only other processes' exec notifications (daemon) wait, up to DRAIN_IDLE_NS, so that an
 * idle daemon sleeps. A target's exec or library load wakes the consumer at once. */
#define DRAIN_PERIOD_NS 100000000ull  /* 100 ms */
#define DRAIN_IDLE_NS   1000000000ull /* 1 s */
#define SWEEP_PERIOD_NS 5000000000ull /* safety net for a missed exit event */

/* BPF's target bitmap (target_bits in bpf/sampler.bpf.c): pid may be a target from now on. */
static void mark_target(struct sampler *s, pid_t pid)
{
        const unsigned nbits = sizeof(s->skel->bss->target_bits) * CHAR_BIT;
        unsigned bit = (unsigned)pid % nbits;

        __atomic_fetch_or(&s->skel->bss->target_bits[bit / 64], 1ull << (bit % 64),
                          __ATOMIC_RELAXED);
}

/* In-kernel unwinding: write p's mapping list (tables of new modules loaded). refresh: read
 * /proc/PID/maps again first (a library was mapped). A read put off (stack/maps_budget.h)
 * leaves the list incomplete: tried again KUNWIND_RETRY_NS later, with the read. */
void ku_sync(struct sampler *s, struct proc *p, int refresh)
{
        if (!s->ku || !p || !p->alive)
                return;
        int err = 0;
        if (!p->maps)
                err = proc_maps_open_pinned(s->modules, &p->pin, &p->maps);
        else if (refresh || p->ku_maps_stale)
                err = proc_maps_refresh(p->maps);
        if (err == -EAGAIN) {
                p->ku_maps_stale = 1;
                p->ku_incomplete = 1;
                p->ku_sync_ns = mono_ns();
        }
        if (err)
                return;
        p->ku_maps_stale = 0;
        p->ku_sync_ns = mono_ns();
        p->ku_gen = kunwind_generation(s->ku);
        int ret = kunwind_sync(s->ku, p->pid, p->owner, p->maps);
        if (ret < 0)
                s->st.ku_sync_errors++;
        if (ret == 0 && (p->ku_incomplete || !p->ku_ready_ns))
                p->ku_ready_ns = p->ku_sync_ns;
        p->ku_incomplete = ret > 0;
}

/* Attach p's library-load hook if it has none: at attach, and at a process's first sample
 * (a child or an exec'ed image too short-lived to be sampled never costs a probe). A location
 * still searching retries at once: a library loaded before the probe was there is found. */
void hook_proc(struct sampler *s, struct proc *p)
{
        if (!s->hook || p->load_hooked || !p->alive)
                return;
        /* the parser helper busy with another thread's request: again at the next sample */
        p->load_hooked = load_hook_attach(s->hook, p->pid) != -EBUSY;
        if (p->tls_state == PROC_TLS_SEARCHING)
                p->tls_next_ns = 0;
}

/* p is no target any more: what the sampler keeps for it goes (not the BPF targets map). */
void forget_target(struct sampler *s, struct proc *p)
{
        if (s->ku)
                kunwind_forget(s->ku, p->pid);
        if (s->hook && p->load_hooked)
                load_hook_detach(s->hook, p->pid);
        p->load_hooked = 0;
        proc_mark_dead(p, 1, mono_ns());
}

struct proc *sampler_proc_new(struct sampler *s, pid_t pid, const char *comm)
{
        struct proc *p = procs_new(&s->procs, pid, comm, mono_ns());

        if (p && s->unwinder)
                dwarf_unwinder_forget(s->unwinder, pid);
        return p;
}

/* Targets whose exit the daemon missed leave the map (BPF removes the others at their exit). */
static void sweep_dead(struct sampler *s)
{
        size_t i;

        for (i = 0; i < s->procs.n; i++)
                if (s->procs.v[i].alive && proc_exited(&s->procs.v[i]))
                        sampler_remove_target(s, s->procs.v[i].pid);
}

/* Insert pid into `targets` as pending; a full map first loses its dead entries. 0 or -errno. */
static int insert_target(struct sampler *s, pid_t pid)
{
        struct ctxprof_tls_target pending = {.flags = CTXPROF_TLS_F_PENDING};
        int fd = bpf_map__fd(s->skel->maps.targets);
        __u32 key = (__u32)pid;

        if (!bpf_map_update_elem(fd, &key, &pending, BPF_NOEXIST) || errno == EEXIST)
                return 0;
        if (errno != E2BIG)
                return -errno;
        sweep_dead(s);
        if (!bpf_map_update_elem(fd, &key, &pending, BPF_NOEXIST) || errno == EEXIST)
                return 0;
        s->st.targets_full++;
        return -ENOSPC;
}

int sampler_add_target(struct sampler *s, pid_t pid)
{
        uint64_t now = mono_ns();
        struct proc *p;
        char path[64];
        int err;

        if (pid <= 0)
                return -EINVAL;
        snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
        if (access(path, F_OK))
                return -ESRCH;
        /* Reading the target's memory is what context needs: check it up front. */
        snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
        {
                int fd = open(path, O_RDONLY | O_CLOEXEC);

                if (fd < 0)
                        return errno == ENOENT ? -ESRCH : -errno;
                close(fd);
        }
        p = procs_find(&s->procs, pid);
        if (!p || !p->alive)
                p = sampler_proc_new(s, pid, NULL);
        if (!p)
                return -ENOSPC;
        /* A target before it is located: an exec from now on is counted (and reported), so
         * the location below is checked against it. Until it is published, the entry says
         * pending: samples count only with context (engine/procs.c says why). The bitmap
         * first: BPF looks at the map only for a marked tgid. */
        mark_target(s, pid);
        err = insert_target(s, pid);
        if (err) {
                proc_mark_dead(p, 0, mono_ns());
                return err;
        }
        /* An exit between the checks above and the insert emitted no event: look again. */
        if (proc_exited(p)) {
                sampler_remove_target(s, pid);
                return -ESRCH;
        }
        /* Per task: its threads' events, after the insert (BPF knows the target first). */
        if (s->task_events) {
                err = task_events_add(s->task_events, pid);
                s->st.task_events = task_events_count(s->task_events);
                if (err) {
                        sampler_remove_target(s, pid);
                        return err;
                }
        }
        /* Located by a job off this thread: record waits for all its targets' jobs at once
         * (sampler_locate_wait, before sampling starts and its command runs), so that
         * context comes from the first sample where possible. The daemon (targets chosen by
         * exec_filter) never blocks its loop on one target: its samples wait for the
         * location through the pending mark, and under churn a wait per new process left
         * most of them unattached (test_daemon_split_churn). */
        proc_location_pending(p, now);
        proc_locate_tls(&s->procs, p, now);
        hook_proc(s, p);
        ku_sync(s, p, 0);
        return 0;
}

/* Where the cgroup v2 hierarchy is mounted (the first cgroup2 line of /proc/self/mounts). */
static int cgroup2_root(char *buf, size_t len)
{
        char dev[256], dir[PATH_MAX], type[64], *line;
        struct proc_lines r;
        int err = proc_lines_open(&r, "/proc/self/mounts", PROC_LINE_MAX_MAPS, NULL);

        if (err)
                return err;
        err = -ENOENT;
        /* capped lines: a mount point a user chose cannot end in a line of its own */
        while (proc_lines_next(&r, &line, NULL) > 0)
                if (sscanf(line, "%255s %4095s %63s", dev, dir, type) == 3 &&
                    !strcmp(type, "cgroup2")) {
                        err = snprintf(buf, len, "%s", dir) < (int)len ? 0 : -ENAMETOOLONG;
                        break;
                }
        proc_lines_close(&r);
        return err;
}

int sampler_set_cgroups(struct sampler *s, const char *const *paths, unsigned n)
{
        int mfd = bpf_map__fd(s->skel->maps.cgroups);
        char root[PATH_MAX], path[2 * PATH_MAX];
        unsigned used = 0, i;
        int err = 0;

        s->skel->bss->ncgroups = 0; /* no slot is read while the set changes */
        if (n && (err = cgroup2_root(root, sizeof(root))) < 0)
                return err;
        for (i = 0; i < n && used < CTXPROF_MAX_CGROUPS; i++) {
                __u32 key = used;
                int fd;

                snprintf(path, sizeof(path), "%s%s", root, paths[i]);
                fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (fd < 0)
                        continue;
                if (!bpf_map_update_elem(mfd, &key, &fd, BPF_ANY))
                        used++;
                close(fd); /* the map holds its own reference */
        }
        s->skel->bss->ncgroups = used;
        return (int)used;
}

static void ku_job_done(void *ctx, uint64_t id, enum target_job_end end, void *arg)
{
        kunwind_job_done(ctx, id, end, arg);
}

/* Unwind tables built since: loaded, and every list that lacked one written again now,
 * before its process's next sample rather than at it. */
static void ku_collect(struct sampler *s)
{
        if (!s->ku_jobs)
                return;
        target_jobs_collect(s->ku_jobs, mono_ns(), ku_job_done, s->ku);
        if (kunwind_generation(s->ku) == s->ku_gen)
                return;
        s->ku_gen = kunwind_generation(s->ku);
        for (size_t i = 0; i < s->procs.n; i++)
                if (s->procs.v[i].alive && s->procs.v[i].ku_incomplete)
                        ku_sync(s, &s->procs.v[i], 0);
}

static void housekeeping(struct sampler *s)
{
        uint64_t now = mono_ns();

        /* Safety net for a missed exit event (events ring full): every 5 s. */
        if (now - s->last_sweep_ns > SWEEP_PERIOD_NS) {
                s->last_sweep_ns = now;
                sweep_dead(s);
        }
        target_jobs_collect(s->jobs, now, procs_job_done, &s->procs);
        procs_locate_due(&s->procs, now);
        ku_collect(s);
}

/* The earliest deadline of a running job of either pool (locating, unwind tables), or
 * UINT64_MAX. */
static uint64_t jobs_next_deadline(struct sampler *s)
{
        uint64_t next = s->jobs ? target_jobs_next_deadline(s->jobs) : UINT64_MAX;

        if (s->ku_jobs && target_jobs_next_deadline(s->ku_jobs) < next)
                next = target_jobs_next_deadline(s->ku_jobs);
        return next;
}

/* Wait up to timeout_ms for the sample ring or a finished target job (whose result the
 * housekeeping applies), or until the next job deadline; then consume the ring. */
static int poll_rings_and_jobs(struct sampler *s, int timeout_ms)
{
        struct pollfd pf[3] = {
            {.fd = ring_buffer__epoll_fd(s->rb), .events = POLLIN},
            {.fd = target_jobs_fd(s->jobs), .events = POLLIN},
            {.fd = s->ku_jobs ? target_jobs_fd(s->ku_jobs) : -1, .events = POLLIN}};
        uint64_t next = jobs_next_deadline(s), now = mono_ns();

        if (next != UINT64_MAX) {
                uint64_t ms = next > now ? (next - now + NS_PER_MS - 1) / NS_PER_MS : 0;

                if (timeout_ms < 0 || ms < (uint64_t)timeout_ms)
                        timeout_ms = (int)ms;
        }
        if (timeout_ms && poll(pf, 3, timeout_ms) < 0 && errno == EINTR)
                return -EINTR;
        return ring_buffer__poll(s->rb, 0);
}

static void release_dead(struct sampler *s)
{
        size_t i;

        for (i = 0; i < s->procs.n; i++) {
                struct proc *p = &s->procs.v[i];

                if (!p->forget_pending)
                        continue;
                p->forget_pending = 0;
                if (s->unwinder)
                        dwarf_unwinder_forget(s->unwinder, p->pid);
        }
}

int sampler_remove_target(struct sampler *s, pid_t pid)
{
        struct proc *p = procs_find(&s->procs, pid);
        __u32 key = (__u32)pid;
        int err = 0;

        if (bpf_map_delete_elem(bpf_map__fd(s->skel->maps.targets), &key))
                err = -errno;
        bpf_map_delete_elem(bpf_map__fd(s->skel->maps.exec_gens), &key);
        if (p && p->alive) {
                forget_target(s, p);
                return 0;
        }
        if (s->ku)
                kunwind_forget(s->ku, pid);
        if (s->hook)
                load_hook_detach(s->hook, pid);
        return err;
}

int sampler_hook_loader_wide(struct sampler *s)
{
        return s->hook ? load_hook_loader_wide(s->hook) : 0;
}

int sampler_is_target(struct sampler *s, pid_t pid)
{
        const struct proc *p = procs_find(&s->procs, pid);

        return p && p->alive;
}

void sampler_foreach_target(struct sampler *s, sampler_target_fn fn, void *ctx)
{
        uint64_t now = mono_ns();
        size_t i;

        for (i = 0; i < s->procs.n; i++) {
                struct proc *p = &s->procs.v[i];
                struct sampler_target t;

                if (!p->alive)
                        continue;
                t = (struct sampler_target){.pid = p->pid,
                                            .name = p->name,
                                            .samples = p->samples,
                                            .with_context = p->with_context,
                                            .stacks_refused = p->stacks_refused,
                                            .labels_refused = p->labels_refused,
                                            .threads_refused = p->threads_refused,
                                            .threads = proc_threads(p, now),
                                            .context_located = p->tls_state == PROC_TLS_LOCATED,
                                            .stuck = p->stuck};
                fn(ctx, &t);
        }
}

unsigned sampler_map_entries(struct sampler *s)
{
        return bpf_map_count_u32(bpf_map__fd(s->skel->maps.targets));
}

/* Consume one ring within the current drain's budget: 0 or -errno (a cut is no error). */
static int drain_ring(struct sampler *s, struct ring_buffer *rb)
{
        int n;

        if (s->drain_cut)
                return 0;
        n = ring_buffer__consume(rb);
        return n < 0 && n != DRAIN_CUT && n != -EINTR ? n : 0;
}

/* Start a drain: its budget counts from its first record, or is unlimited (UINT64_MAX). */
static void drain_begin(struct sampler *s, uint64_t deadline_ns)
{
        s->drain_deadline_ns = deadline_ns;
        s->drain_count = 0;
        s->drain_cut = 0;
}

void sampler_locate_wait(struct sampler *s)
{
        procs_jobs_wait(&s->procs, ADD_LOCATE_WAIT_NS, mono_ns() + LOCATE_WAIT_MAX_NS);
}

/* Written at most once a millisecond: consumer_ns shares a cache line with sampling_on, which
 * every sample's program reads. */
#define CONSUMER_SEEN_EVERY_NS NS_PER_MS

/* BPF tells a sample lost while this thread drains from one lost while it is away
 * (count_lost, sampler.bpf.c): it is at the ring before it waits, after, and while it drains. */
void consumer_seen(struct sampler *s, uint64_t now)
{
        if (now - s->consumer_ns < CONSUMER_SEEN_EVERY_NS)
                return;
        s->consumer_ns = now;
        __atomic_store_n(&s->skel->bss->consumer_ns, now, __ATOMIC_RELAXED);
}

void sampler_start(struct sampler *s)
{
        __atomic_store_n(&s->skel->bss->sampling_on, 1, __ATOMIC_RELEASE);
}

int sampler_poll(struct sampler *s, int timeout_ms)
{
        int n, err, pending_release = 0, samples_cut;
        unsigned total;
        size_t i;

        sampler_start(s); /* (a no-op once started) */
        for (i = 0; i < s->procs.n; i++)
                pending_release |= s->procs.v[i].forget_pending;
        /* Wake up for a pending TLS retry: context starts as early as possible. */
        if (!s->stopped)
                timeout_ms = procs_retry_timeout(&s->procs, mono_ns(), timeout_ms);
        /* The last drain left records behind: no reason to wait. */
        if (s->drain_cut)
                timeout_ms = 0;
        drain_begin(s, 0);
        consumer_seen(s, mono_ns());
        n = poll_rings_and_jobs(s, timeout_ms);
        s->last_drain_ns = mono_ns();
        consumer_seen(s, s->last_drain_ns);
        if (n < 0 && n != DRAIN_CUT && n != -EINTR)
                return n;
        /* poll returns on timeout without consuming records submitted with no wakeup */
        err = drain_ring(s, s->rb);
        if (err)
                return err;
        total = s->drain_count;
        samples_cut = s->drain_cut;
        /* The spill ring holds only lifecycle events (cheap to handle) and gets a budget of
         * its own, so a sample ring that always fills its budget cannot starve it. */
        drain_begin(s, 0);
        err = drain_ring(s, s->rb_spill);
        if (err)
                return err;
        total += s->drain_count;
        s->drain_cut |= samples_cut;
        if (pending_release)
                release_dead(s);
        procs_compact(&s->procs, mono_ns());
        if (!s->stopped)
                housekeeping(s);
        return total > INT_MAX ? INT_MAX : (int)total;
}

unsigned sampler_fds(struct sampler *s, int *fds, unsigned max)
{
        unsigned n = 0;

        if (n < max)
                fds[n++] = ring_buffer__epoll_fd(s->rb);
        if (n < max && s->jobs) /* a finished target job (engine/target_jobs.h) */
                fds[n++] = target_jobs_fd(s->jobs);
        if (n < max && s->ku_jobs) /* a built unwind table */
                fds[n++] = target_jobs_fd(s->ku_jobs);
        return n;
}

uint64_t sampler_next_due(struct sampler *s)
{
        uint64_t now = mono_ns(), due;
        int ms;

        if (s->stopped)
                return UINT64_MAX;
        if (s->drain_cut)
                return now; /* records left by the last drain's budget */
        due = s->last_drain_ns + (sampler_live_targets(s) ? DRAIN_PERIOD_NS : DRAIN_IDLE_NS);
        /* execs of other processes keep coming: the rest of a burst, without BPF's wakeup */
        if (s->exec_other_ns + CTXPROF_EXEC_OTHER_WAKE_GAP_NS > s->last_drain_ns &&
            s->last_drain_ns + CTXPROF_EXEC_OTHER_WAKE_GAP_NS < due)
                due = s->last_drain_ns + CTXPROF_EXEC_OTHER_WAKE_GAP_NS;
        if (s->procs.n && s->last_sweep_ns + SWEEP_PERIOD_NS < due)
                due = s->last_sweep_ns + SWEEP_PERIOD_NS;
        ms = procs_retry_timeout(&s->procs, now, INT_MAX);
        if (ms != INT_MAX && now + (uint64_t)ms * NS_PER_MS < due)
                due = now + (uint64_t)ms * NS_PER_MS;
        if (jobs_next_deadline(s) < due) /* a job to abandon */
                due = jobs_next_deadline(s);
        return due;
}

int sampler_stop(struct sampler *s)
{
        int i, n, k, total = 0;

        if (!s->stopped) {
                for (i = 0; i < s->ncpu; i++) {
                        bpf_link__destroy(s->links[i]);
                        s->links[i] = NULL;
                }
                task_events_free(s->task_events);
                s->task_events = NULL;
                s->stopped = 1;
        }
        /* No new samples: what the rings hold is finite, handled within STOP_DRAIN_BUDGET_NS
         * (drain_spent cuts each pass; then the rest is counted). */
        drain_begin(s, mono_ns() + STOP_DRAIN_BUDGET_NS);
        for (;;) {
                if (s->drain_cut)
                        s->discarding = 1;
                n = ring_buffer__consume(s->rb);
                if (n == DRAIN_CUT)
                        continue;
                if (n < 0)
                        return n;
                k = ring_buffer__consume(s->rb_spill);
                if (k == DRAIN_CUT)
                        continue;
                if (k < 0)
                        return k;
                if (!n && !k)
                        return total;
                total += n + k;
        }
}

unsigned sampler_live_targets(struct sampler *s)
{
        unsigned n = 0;
        size_t i;

        for (i = 0; i < s->procs.n; i++)
                n += s->procs.v[i].alive ? 1 : 0;
        return n;
}

void sampler_get_stats(struct sampler *s, struct sampler_stats *out)
{
        *out = s->st;
        out->processes = s->procs.processes;
        out->ring_bytes = s->ring_bytes;
        out->tls_located = s->procs.tls_located;
        out->tls_errors = s->procs.tls_errors;
        out->go_located = s->procs.go_located;
        out->go_layout_unknown = s->procs.go_layout_unknown;
        out->targets_stuck = s->procs.stuck;
        out->targets_returned = s->procs.stuck_returned;
        out->first_wait_skips = s->procs.first_wait_skips;
        if (s->jobs) {
                struct target_jobs_stats js;

                target_jobs_get_stats(s->jobs, &js);
                out->jobs_abandoned = js.abandoned;
                out->jobs_refused = js.refused;
                out->jobs_refused_owner = js.refused_owner;
                out->jobs_stuck_workers = js.stuck;
        }
        out->target = (struct target_stats){0};
        target_stats_add(&out->target, modules_target_stats(s->modules));
        target_stats_add(&out->target, &s->procs.target);
        target_stats_add(&out->target, &s->st.pctx.target);
        dwarf_unwinder_target_stats(s->unwinder, &out->target);
        modules_get_stats(s->modules, &out->modules);
        sampler_counters_read(bpf_map__fd(s->skel->maps.counters), s->ncpu, out);
        if (s->hook)
                load_hook_stats(s->hook, &out->hook);
        if (s->ku)
                kunwind_get_stats(s->ku, &out->ku_tables);
        bpf_prog_run_time(bpf_program__fd(s->skel->progs.ctxprof_sample), &out->bpf_run_ns,
                          &out->bpf_run_cnt);
        if (SAMPLER_EV_HAS_OFFCPU(s->opts.event)) {
                bpf_prog_run_time(bpf_program__fd(s->skel->progs.ctxprof_offcpu_switch),
                                  &out->offcpu_bpf_run_ns, &out->offcpu_bpf_run_cnt);
                out->offcpu_slots = bpf_map_count_u32(bpf_map__fd(s->skel->maps.offcpu_threads));
        }
}

unsigned sampler_unwind_stops(struct sampler *s, struct module_tally_entry *out, unsigned max,
                              uint64_t *other)
{
        if (other)
                *other = s->unwind_stops.other;
        return module_tally_top(&s->unwind_stops, out, max);
}

struct modules *sampler_modules(struct sampler *s)
{
        return s->modules;
}
