/* SPDX-License-Identifier: MIT */
/*
 * sampler.c — the sampling engine (see sampler.h). Owns the BPF skeleton, the per-CPU perf
 * events and their links, the two rings, and per-process ingestion state (TLS location,
 * /proc/PID/maps cache, DWARF unwinder). Turns raw records into decoded samples for a sink.
 * Must never print, never trust a record field beyond the caps of ctxprof/sample.h, and
 * never let a dead or hostile target stop ingestion.
 *
 * Ordering: BPF writes lifecycle events (fork, exec, exit) into the sample ring itself, and
 * one callback handles both kinds of record in ring order. So every sample a process took
 * before it exec'ed is resolved against the old image (name, mappings, DWARF unwinder) and
 * every sample it took before it exited is still DWARF-unwound; none taken after is handled
 * before the event. Only events that found the sample ring full come through the `events`
 * ring, consumed after the sample ring; for those, a process's unwinder state is released
 * one poll after its exit, and its mappings stay cached a second longer (procs_compact).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/perf_event.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "ctxprof/cfi.h"
#include "engine/ktrace_text.h"
#include "engine/kunwind.h"
#include "engine/load_hook.h"
#include "engine/procs.h"
#include "engine/record_view.h"
#include "engine/sampler.h"
#include "engine/sampler_counters.h"
#include "engine/target_jobs.h"
#include "sampler.skel.h"
#include "tls/tls_locate.h"
#include "stack/proc_maps.h"
#include "stack/unwind_dwarf.h"
#include "util/clock.h"
#include "util/proc_lines.h"

#define DEFAULT_RING_BYTES (8u << 20)
#define PROC_PID_INIT_INO  0xEFFFFFFCu /* the host's PID namespace (linux/proc_ns.h) */
/*
 * One sampler_poll drains for at most DRAIN_BUDGET_NS, counted from its first record, so the
 * caller's deadlines (duration, chunk rotation, status, signals) are seen at least that often
 * whatever the sample rate. libbpf 1.1 has no ring_buffer__consume_n; its ring loop stops when
 * a callback returns < 0, after moving the consumer past that record (which was handled), so
 * on_record returns DRAIN_CUT once the budget is spent. The clock is read after every
 * record (a vDSO call, small beside decoding a sample). What the budget leaves in the ring is read
 * by the next poll; what no longer fits there is counted as lost by BPF.
 */
#define DRAIN_BUDGET_NS 20000000ull /* 20 ms */
/* sampler_add_target waits this long at most for the new target's location (a job on a
 * worker, engine/procs.c): long enough for a real process, short beside a stalled one. */
#define ADD_LOCATE_WAIT_NS 250000000ull /* 250 ms */
#define DRAIN_CUT          (-ECANCELED)
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

struct tid_set {
        uint32_t *slots; /* 0 = empty */
        size_t cap, n;
};

struct sampler {
        struct sampler_opts opts;
        struct sample_sink sink;
        struct sampler_bpf *skel;
        int ncpu;
        int *perf_fds; /* -1 when closed/owned by a link */
        struct bpf_link **links;
        struct ring_buffer *rb;       /* ring `samples`: samples and lifecycle events */
        struct ring_buffer *rb_spill; /* ring `events`: events that found `samples` full */
        struct modules *modules;
        struct dwarf_unwinder *unwinder; /* dwarf-copy, dwarf-check */
        struct kunwind *ku; /* dwarf, dwarf-check, off-CPU: the in-kernel unwinder's tables */
        struct ktrace_text *ktrace; /* kernel stacks: the BPF machinery's text, dropped */
        struct load_hook *hook;     /* how a target's library loads are noticed */
        struct procs procs;
        struct target_jobs *jobs; /* locating runs there, off this loop (engine/target_jobs.h) */
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
        /* scratch for one decoded sample */
        struct ctxprof_frame frames[CTXPROF_MAX_FRAMES];
        uint64_t ips[CTXPROF_MAX_FRAMES];
        char comm[CTXPROF_COMM_LEN + 1];
        struct otel_ctx otel;
        struct decoded_resource resource;
};

static int tid_set_add(struct tid_set *s, uint32_t tid)
{
        size_t i;

        if (!tid)
                return 0;
        if ((s->n + 1) * 2 > s->cap) {
                size_t ncap = s->cap ? s->cap * 2 : 1024;
                uint32_t *ns = calloc(ncap, sizeof(*ns));

                if (!ns)
                        return -ENOMEM;
                for (i = 0; i < s->cap; i++) {
                        size_t j;

                        if (!s->slots[i])
                                continue;
                        for (j = (s->slots[i] * 2654435761u) & (ncap - 1); ns[j];
                             j = (j + 1) & (ncap - 1))
                                ;
                        ns[j] = s->slots[i];
                }
                free(s->slots);
                s->slots = ns;
                s->cap = ncap;
        }
        for (i = (tid * 2654435761u) & (s->cap - 1); s->slots[i]; i = (i + 1) & (s->cap - 1))
                if (s->slots[i] == tid)
                        return 0;
        s->slots[i] = tid;
        s->n++;
        return 1;
}

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

/* BPF's target bitmap (target_bits in bpf/sampler.bpf.c): pid may be a target from now on. */
static void mark_target(struct sampler *s, pid_t pid)
{
        const unsigned nbits = sizeof(s->skel->bss->target_bits) * CHAR_BIT;
        unsigned bit = (unsigned)pid % nbits;

        __atomic_fetch_or(&s->skel->bss->target_bits[bit / 64], 1ull << (bit % 64),
                          __ATOMIC_RELAXED);
}

/* In-kernel unwinding: write p's mapping list (tables of new modules loaded). refresh: read
 * /proc/PID/maps again first (a library was mapped). */
static void ku_sync(struct sampler *s, struct proc *p, int refresh)
{
        if (!s->ku || !p || !p->alive)
                return;
        if (!p->maps && proc_maps_open(s->modules, p->pid, &p->maps))
                return;
        if (refresh && proc_maps_refresh(p->maps))
                return;
        p->ku_sync_ns = mono_ns();
        if (kunwind_sync(s->ku, p->pid, p->maps))
                s->st.ku_sync_errors++;
}

/* Attach p's library-load hook if it has none: at attach, and at a process's first sample
 * (a child or an exec'ed image too short-lived to be sampled never costs a probe). A location
 * still searching retries at once: a library loaded before the probe was there is found. */
static void hook_proc(struct sampler *s, struct proc *p)
{
        if (!s->hook || p->load_hooked || !p->alive)
                return;
        p->load_hooked = 1;
        load_hook_attach(s->hook, p->pid);
        if (p->tls_state == PROC_TLS_SEARCHING)
                p->tls_next_ns = 0;
}

/* p is no target any more: what the sampler keeps for it goes (not the BPF targets map). */
static void forget_target(struct sampler *s, struct proc *p)
{
        if (s->ku)
                kunwind_forget(s->ku, p->pid);
        if (s->hook && p->load_hooked)
                load_hook_detach(s->hook, p->pid);
        p->load_hooked = 0;
        proc_mark_dead(p, 1, mono_ns());
}

/* Targets whose exit the daemon missed leave the map (BPF removes the others at their exit). */
static void sweep_dead(struct sampler *s)
{
        size_t i;

        for (i = 0; i < s->procs.n; i++)
                if (s->procs.v[i].alive && proc_gone(s->procs.v[i].pid))
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
                p = procs_new(&s->procs, pid, NULL, mono_ns());
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
        if (proc_gone(pid)) {
                sampler_remove_target(s, pid);
                return -ESRCH;
        }
        /* Located before sampler_add_target returns (before a started command runs), or
         * retried from sampler_poll: context from the first sample where possible. The job
         * runs off this thread; it is waited for ADD_LOCATE_WAIT_NS at most. */
        proc_location_pending(p, now);
        proc_locate_tls(&s->procs, p, now);
        proc_locate_wait(&s->procs, p, now + ADD_LOCATE_WAIT_NS);
        /* Hooked once located: attaching takes milliseconds its samples would wait for. */
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

/* DWARF unwinding stopped early at ip (a return address unless it is the leaf). */
static void count_unwind_stop(struct sampler *s, struct proc *p, uint64_t ip, int retaddr)
{
        struct ctxprof_frame f;

        if (!p->maps || proc_maps_resolve(p->maps, retaddr ? ip - 1 : ip, &f))
                f.module_id = CTXPROF_MODULE_UNKNOWN;
        module_tally_add(&s->unwind_stops, f.module_id);
}

/* ip list (leaf first) -> frames appended at s->frames[*n...]. */
static void add_user_frames(struct sampler *s, struct proc *p, const uint64_t *ips, unsigned cnt,
                            unsigned *n, int *truncated)
{
        unsigned i;

        for (i = 0; i < cnt; i++) {
                struct ctxprof_frame *f;

                if (*n >= CTXPROF_MAX_FRAMES) {
                        *truncated = 1;
                        return;
                }
                f = &s->frames[*n];
                if (!p->maps || proc_maps_resolve(p->maps, ips[i], f)) {
                        f->offset = ips[i];
                        f->module_id = CTXPROF_MODULE_UNKNOWN;
                }
                f->flags = i ? CTXPROF_FRAME_RETADDR : 0;
                (*n)++;
        }
}

/* A sample without context: counts why. 1 = the sample is not to be recorded. */
static int count_ctx_missing(struct sampler_ctx_missing *m, const struct ctxprof_sample_rec *r,
                             const struct proc *p)
{
        const uint32_t addr = CTXPROF_SE_SPAN_ADDR | CTXPROF_SE_LABELS_ADDR | CTXPROF_SE_OTEL_ADDR;
        const uint32_t read = CTXPROF_SE_SPAN_READ | CTXPROF_SE_LABELS_READ | CTXPROF_SE_OTEL_READ;

        if (r->flags & CTXPROF_SF_PENDING) {
                m->pending++;
                return 1;
        }
        if (r->flags & CTXPROF_SF_TLS_STALE)
                m->stale++;
        else if (!r->tls_generation || (p->published.labels.mode == CTXPROF_TLS_NONE &&
                                        p->published.span.mode == CTXPROF_TLS_NONE &&
                                        p->published.otel.mode == CTXPROF_TLS_NONE))
                m->not_located++;
        else if (!(r->flags & CTXPROF_SF_TP))
                m->no_tp++;
        else if (r->errors & read)
                m->read_fault++;
        else if (r->errors & addr)
                m->unreachable++;
        else
                m->not_set++;
        return 0;
}

/* Read p's OpenTelemetry process context again when it may have changed (engine/procs.c
 * says when; a job off this thread). */
static void otel_refresh_due(struct sampler *s, struct proc *p, const struct otel_ctx *c)
{
        proc_pctx_refresh(&s->procs, p, mono_ns(), c && otel_has_unknown_key(c, p->otel.n_keys));
}

/*
 * The sample's context when its thread published a valid OpenTelemetry record: that record
 * alone (trace, span, attributes), never mixed with the Custom Labels or span record of the
 * same thread, which may have been written at another moment (docs/jfr.md, "Context
 * sources").
 */
static void use_otel(struct sampler *s, struct proc *p, struct decoded_sample *ds)
{
        if (ds->has_span || ds->n_labels)
                s->st.otel.shadowed++;
        otel_refresh_due(s, p, &s->otel);
        ds->n_labels = otel_labels(&s->otel, (const char *const *)p->otel.keys, p->otel.n_keys,
                                   ds->labels, CTXPROF_MAX_LABELS, &s->st.otel);
        ds->has_span = !s->otel.no_ids;
        ds->span_id = s->otel.no_ids ? 0 : otel_span_u64(&s->otel);
        ds->root_span_id = s->otel.local_root_span_id;
}

/* p exec'ed: new mappings, new unwinding state, TLS located again from scratch. */
static void sampler_new_image(struct sampler *s, struct proc *p)
{
        proc_new_image(&s->procs, p, mono_ns());
        if (s->hook && p->load_hooked) {
                load_hook_detach(s->hook, p->pid); /* the new image's loader: at its sample */
                p->load_hooked = 0;
        }
        if (s->unwinder)
                dwarf_unwinder_forget(s->unwinder, p->pid);
        ku_sync(s, p, 0);
}

/* dwarf-check: the in-kernel stack (ustack) against libdwfl's (ips) of the same sample. When
 * libdwfl stopped at the end of the stack copy, only its frames are compared. */
static void ku_compare(struct sampler *s, const struct record_view *v, const uint64_t *ips, int cnt,
                       int dwfl_truncated)
{
        unsigned nu = v->n_ustack, want = (unsigned)cnt, i;

        if (!(v->r->flags & CTXPROF_SF_KUNWIND) || cnt <= 0)
                return;
        s->st.ku_compared++;
        if (dwfl_truncated && nu > want)
                nu = want;
        if (want > CTXPROF_MAX_USTACK)
                want = CTXPROF_MAX_USTACK;
        if (nu != want)
                return;
        for (i = 0; i < nu; i++)
                if (v->ustack[i] != ips[i])
                        return;
        s->st.ku_equal++;
}

/* In-kernel stack of r: statistics, and a resync when it met an unknown mapping. */
static int ku_account(struct sampler *s, struct proc *p, const struct record_view *v)
{
        const struct ctxprof_sample_rec *r = v->r;
        unsigned nu = v->n_ustack;

        if (!(r->flags & CTXPROF_SF_KUNWIND))
                return 0;
        if ((r->flags & CTXPROF_SF_KU_NOMAP) && p->alive &&
            mono_ns() - p->ku_sync_ns >= PROC_MAPS_REFRESH_NS)
                ku_sync(s, p, 1);
        if ((r->flags & CTXPROF_SF_KU_COMPLETE) || !nu || nu >= CTXPROF_MAX_USTACK)
                return 0;
        s->st.unwind_truncated++;
        count_unwind_stop(s, p, v->ustack[nu - 1], nu > 1);
        return 1;
}

/* Stage 1 of a sample: the record split into its parts, every length checked against its
 * size (engine/record_view.c). 0, or -EBADMSG (counted). */
static int check_record(struct sampler *s, const void *data, size_t size, struct record_view *v)
{
        if (record_view_parse(data, size, v)) {
                s->st.bad_records++;
                return -EBADMSG;
        }
        if (v->off)
                s->st.offcpu_received++;
        s->st.received++;
        s->st.received_bytes += size;
        return 0;
}

/* Stage 2: the sampled process (added when a cgroup selected it or its fork event is still
 * behind), its location state brought up to what the record says. NULL: counted. */
static struct proc *sample_proc(struct sampler *s, const struct ctxprof_sample_rec *r)
{
        struct proc *p = procs_find(&s->procs, (pid_t)r->tgid);

        if ((!p || !p->alive) && (r->flags & CTXPROF_SF_CGROUP) &&
            !sampler_add_target(s, (pid_t)r->tgid))
                p = procs_find(&s->procs, (pid_t)r->tgid); /* in a selected cgroup: a target now */
        if (!p) {
                char path[32];

                /* a forked child seen before its event (or whose event the budget refused) */
                p = procs_new(&s->procs, (pid_t)r->tgid, NULL, mono_ns());
                snprintf(path, sizeof(path), "/proc/%u", r->tgid);
                if (p && access(path, F_OK)) /* a late sample of a process already gone */
                        proc_mark_dead(p, 0, mono_ns());
        }
        if (!p) {
                s->st.sink_errors++;
                return NULL;
        }
        p->samples++;
        /* BPF refused a location made before an exec we have not handled. The EXEC event is
         * normally right behind in the ring and does this; should it have been lost (both
         * rings full), nothing else would ever locate the new image. */
        if ((r->flags & CTXPROF_SF_TLS_STALE) && p->alive && p->tls_state != PROC_TLS_SEARCHING)
                sampler_new_image(s, p);
        /* Pending in BPF but not here: the event that said so was lost (rings full). */
        if ((r->flags & CTXPROF_SF_PENDING) && !p->pending_since_ns && p->alive)
                proc_location_pending(p, mono_ns());
        if (!p->maps && p->alive)
                proc_maps_open(s->modules, p->pid, &p->maps);
        hook_proc(s, p);
        if (tid_set_add(&s->tids, r->tid) > 0)
                s->st.threads++;
        return p;
}

/* Stage 3: ids, times and the thread's context into *ds. 0, or 1 when the sample is not
 * recorded (taken before the location, see engine/procs.c). */
static int decode_context(struct sampler *s, struct proc *p, const struct record_view *v,
                          struct decoded_sample *ds)
{
        const struct ctxprof_sample_rec *r = v->r;
        const struct ctxprof_offcpu_rec *off = v->off;

        memset(ds, 0, sizeof(*ds));
        ds->pid = (pid_t)r->tgid;
        ds->tid = (pid_t)r->tid;
        ds->cpu = r->cpu;
        ds->time_ns = r->time_ns;
        memcpy(s->comm, r->comm, CTXPROF_COMM_LEN);
        s->comm[CTXPROF_COMM_LEN] = '\0';
        ds->comm = s->comm;
        ds->process = p->name;
        if (off) {
                ds->off_cpu = 1;
                ds->duration_ns = off->duration_ns;
                ds->runq_ns = off->runq_ns;
                ds->off_state = off->state;
        }
        /* BPF read context only with a location made for the image the thread runs (exec
         * count check, ctxprof/tls_target.h), so what it read belongs to this process. */
        ds->has_span = context_decode_span(r, &ds->span_id, &ds->root_span_id, &s->st.ctx);
        ds->n_labels = context_decode_labels(v, ds->labels, &s->st.ctx);
        /* a zero-id record (no span active) does not hide libctx's span record or Custom
         * Labels: libctx's ctx_set_span writes zero ids there and the span beside it */
        if (otel_decode(v, &s->otel, &s->st.otel) &&
            !(s->otel.no_ids && (ds->has_span || ds->n_labels)))
                use_otel(s, p, ds);
        else /* the process context alone names a process too (OTEP 4719) */
                otel_refresh_due(s, p, NULL);
        if (p->otel.service_name)
                ds->process = ds->service = p->otel.service_name; /* the OTel resource's */
        if (p->otel.n_res) {
                s->resource = (struct decoded_resource){.version = p->otel.published_ns,
                                                        .n = p->otel.n_res,
                                                        .keys = p->otel.res_keys,
                                                        .values = p->otel.res_values};
                ds->resource = &s->resource;
        }
        if (ds->has_span || ds->n_labels) {
                s->st.with_context++;
                p->with_context++;
        } else if (count_ctx_missing(&s->st.ctx_missing, r, p)) {
                p->samples--;
                return 1;
        }
        return 0;
}

/* Stage 4: kernel frames, then user frames (libdwfl on the copied stack in dwarf-copy and
 * dwarf-check, else what BPF took), into s->frames. Returns the frame count. */
static unsigned build_frames(struct sampler *s, struct proc *p, const struct record_view *v,
                             int *truncated)
{
        const struct ctxprof_sample_rec *r = v->r;
        const struct ctxprof_sample_copy_rec *d = v->copy;
        unsigned i, n = 0, nk = v->n_kstack, nu = v->n_ustack;

        /* a stack taken in (or interrupting) a BPF program starts with the tracing
         * machinery's frames, ours: never shown (BPF skips them where it knows how many) */
        i = (unsigned)ktrace_text_skip(s->ktrace, v->kstack, nk);
        for (; i < nk && n < CTXPROF_MAX_FRAMES; i++, n++) {
                s->frames[n].offset = v->kstack[i];
                s->frames[n].module_id = CTXPROF_MODULE_KERNEL;
                s->frames[n].flags = CTXPROF_FRAME_KERNEL | (i ? CTXPROF_FRAME_RETADDR : 0);
        }
        if (d && (r->flags & CTXPROF_SF_REGS) && v->stack_len && s->unwinder) {
                int ut = 0, cnt;

                cnt = p->alive
                          ? dwarf_unwind(s->unwinder, p->pid, (const uint64_t *)d->regs, v->stack,
                                         v->stack_len, s->ips, CTXPROF_MAX_FRAMES, &ut)
                          : -ESRCH;
                if (cnt > 0) {
                        ku_compare(s, v, s->ips, cnt, ut);
                        add_user_frames(s, p, s->ips, (unsigned)cnt, &n, truncated);
                        if (ut) {
                                *truncated = 1;
                                s->st.unwind_truncated++;
                                /* (at the frame limit it did not stop: it was cut) */
                                if (cnt < CTXPROF_MAX_FRAMES)
                                        count_unwind_stop(s, p, s->ips[cnt - 1], cnt > 1);
                        }
                } else {
                        s->st.unwind_errors++;
                        if (cnt != -ESRCH) /* a live process whose leaf did not unwind */
                                count_unwind_stop(s, p, d->regs[CTXPROF_REG_IP], 0);
                        add_user_frames(s, p, v->ustack, nu, &n, truncated);
                }
        } else {
                *truncated = ku_account(s, p, v);
                add_user_frames(s, p, v->ustack, nu, &n, truncated);
        }
        if (!n)
                s->st.no_stack++;
        return n;
}

/* What the sink said of p's sample: an error, or parts refused by a store's bound. */
static void note_sink_result(struct sampler *s, struct proc *p, int rc)
{
        if (rc < 0) {
                s->st.sink_errors++;
                return;
        }
        if (rc & SAMPLE_SINK_STACK_REFUSED) {
                p->stacks_refused++;
                s->st.refused_stacks++;
        }
        if (rc & SAMPLE_SINK_LABELS_REFUSED) {
                p->labels_refused++;
                s->st.refused_labels++;
        }
        if (rc & SAMPLE_SINK_THREAD_REFUSED) {
                p->threads_refused++;
                s->st.refused_threads++;
        }
}

/* One sample or off-CPU record from the ring, by stage, to the sink. */
static int handle_sample(struct sampler *s, const void *data, size_t size)
{
        struct record_view v;
        struct decoded_sample ds;
        struct proc *p;
        int truncated = 0;

        if (check_record(s, data, size, &v))
                return 0;
        p = sample_proc(s, v.r);
        if (!p || decode_context(s, p, &v, &ds))
                return 0;
        if (!context_filter_match(&s->opts.filter, &ds)) {
                s->st.filtered++;
                return 0;
        }
        ds.frames = s->frames;
        ds.n_frames = build_frames(s, p, &v, &truncated);
        ds.truncated = truncated;
        note_sink_result(s, p, s->sink.sample ? s->sink.sample(s->sink.ctx, &ds) : 0);
        return 0;
}

static int handle_event(struct sampler *s, const void *data, size_t size)
{
        const struct ctxprof_event_rec *e = data;
        char comm[CTXPROF_COMM_LEN + 1];
        struct proc *p;

        if (size < sizeof(*e)) {
                s->st.bad_records++;
                return 0;
        }
        memcpy(comm, e->comm, CTXPROF_COMM_LEN);
        comm[CTXPROF_COMM_LEN] = '\0';
        p = procs_find(&s->procs, (pid_t)e->tgid);
        switch (e->event) {
        case CTXPROF_EV_FORK:
                if (!p || !p->alive)
                        p = procs_new(&s->procs, (pid_t)e->tgid, comm, mono_ns());
                ku_sync(s, p, 0);
                break;
        case CTXPROF_EV_EXEC_OTHER:
                /* Not a target (exec_filter mode): the filter decides. */
                if (s->opts.exec_filter &&
                    s->opts.exec_filter(s->opts.exec_filter_ctx, (pid_t)e->tgid, comm) > 0)
                        sampler_add_target(s, (pid_t)e->tgid);
                break;
        case CTXPROF_EV_EXEC:
                if (s->opts.exec_filter &&
                    s->opts.exec_filter(s->opts.exec_filter_ctx, (pid_t)e->tgid, comm) == 0) {
                        sampler_remove_target(s, (pid_t)e->tgid);
                        break;
                }
                p = procs_find(&s->procs, (pid_t)e->tgid);
                if (!p || !p->alive) {
                        ku_sync(s, procs_new(&s->procs, (pid_t)e->tgid, comm, mono_ns()), 0);
                        break;
                }
                snprintf(p->name, sizeof(p->name), "%s", comm);
                sampler_new_image(s, p);
                break;
        case CTXPROF_EV_MAP:
                /* BPF marked the location pending: locate again at the end of this poll. */
                if (p && p->alive)
                        proc_location_pending(p, mono_ns());
                ku_sync(s, p, 1); /* a library: its table, before its first sample if we can */
                break;
        case CTXPROF_EV_EXIT:
                /* BPF took it out of its maps at the exit (a reused pid may be a new target
                 * there already): only our side is left. */
                if (p && p->alive)
                        forget_target(s, p);
                break;
        default:
                s->st.bad_records++;
        }
        return 0;
}

/* 1 when the drain's time budget is spent (the record just handled still counts). */
static int drain_spent(struct sampler *s)
{
        if (!s->drain_count++) {
                if (!s->drain_deadline_ns)
                        s->drain_deadline_ns = mono_ns() + DRAIN_BUDGET_NS;
                return 0;
        }
        if (mono_ns() < s->drain_deadline_ns)
                return 0;
        s->drain_cut = 1;
        s->st.drains_cut++;
        return 1;
}

/* Both rings: records are handled in the order BPF reserved them. */
static int on_record(void *ctx, void *data, size_t size)
{
        struct sampler *s = ctx;

        if (s->discarding) {
                s->st.stop_discarded++;
                return 0;
        }
        if (s->record_delay_ns) {
                /* Tests: a consumer slower than the sample rate (a loaded host). */
                struct timespec d = {.tv_nsec = (long)s->record_delay_ns};

                nanosleep(&d, NULL);
        }
        if (size < sizeof(__u32))
                s->st.bad_records++;
        else if (*(const __u32 *)data == CTXPROF_REC_EVENT)
                handle_event(s, data, size);
        else
                handle_sample(s, data, size);
        return drain_spent(s) ? DRAIN_CUT : 0;
}

static int open_perf_event(const struct sampler_opts *o, int cpu)
{
        struct perf_event_attr a;

        memset(&a, 0, sizeof(a));
        a.size = sizeof(a);
        if (o->event == SAMPLER_EV_CYCLES) {
                a.type = PERF_TYPE_HARDWARE;
                a.config = PERF_COUNT_HW_CPU_CYCLES;
        } else {
                a.type = PERF_TYPE_SOFTWARE;
                a.config = PERF_COUNT_SW_CPU_CLOCK;
        }
        a.freq = 1;
        a.sample_freq = o->freq;
        return (int)syscall(__NR_perf_event_open, &a, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
}

#define DWARF_RING_BYTES    (32u << 20) /* dwarf records carry a 16 KiB stack copy each */
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
        ring = o->ring_bytes ? o->ring_bytes : DEFAULT_RING_BYTES;
        if (cg_copies(o->call_graph) && !o->ring_bytes)
                ring = DWARF_RING_BYTES;
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

/* Stage PERF: one sampling event per possible CPU (an offline one is skipped). */
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
        if (!attached && SAMPLER_EV_HAS_PERF(s->opts.event))
                return -ENODEV;
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
                *stage = SAMPLER_STAGE_LOAD;
                err = sampler_bpf__load(s->skel);
        }
        if (!err) {
                s->procs.targets_fd = bpf_map__fd(s->skel->maps.targets);
                s->procs.exec_gens_fd = bpf_map__fd(s->skel->maps.exec_gens);
                if (uses_ku(o)) {
                        s->ku = kunwind_new(s->modules, bpf_map__fd(s->skel->maps.ku_rows),
                                            bpf_map__fd(s->skel->maps.ku_procs),
                                            bpf_map__max_entries(s->skel->maps.ku_rows));
                        if (!s->ku)
                                err = -ENOMEM;
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
}

/* Wait up to timeout_ms for the sample ring or a finished target job (whose result the
 * housekeeping applies), or until the next job deadline; then consume the ring. */
static int poll_rings_and_jobs(struct sampler *s, int timeout_ms)
{
        struct pollfd pf[2] = {{.fd = ring_buffer__epoll_fd(s->rb), .events = POLLIN},
                               {.fd = target_jobs_fd(s->jobs), .events = POLLIN}};
        uint64_t next = target_jobs_next_deadline(s->jobs), now = mono_ns();

        if (next != UINT64_MAX) {
                uint64_t ms = next > now ? (next - now + NS_PER_MS - 1) / NS_PER_MS : 0;

                if (timeout_ms < 0 || ms < (uint64_t)timeout_ms)
                        timeout_ms = (int)ms;
        }
        if (timeout_ms && poll(pf, 2, timeout_ms) < 0 && errno == EINTR)
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
        size_t i;

        for (i = 0; i < s->procs.n; i++) {
                const struct proc *p = &s->procs.v[i];
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

int sampler_poll(struct sampler *s, int timeout_ms)
{
        int n, err, pending_release = 0, samples_cut;
        unsigned total;
        size_t i;

        for (i = 0; i < s->procs.n; i++)
                pending_release |= s->procs.v[i].forget_pending;
        /* Wake up for a pending TLS retry: context starts as early as possible. */
        if (!s->stopped)
                timeout_ms = procs_retry_timeout(&s->procs, mono_ns(), timeout_ms);
        /* The last drain left records behind: no reason to wait. */
        if (s->drain_cut)
                timeout_ms = 0;
        drain_begin(s, 0);
        n = poll_rings_and_jobs(s, timeout_ms);
        s->last_drain_ns = mono_ns();
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
        if (s->procs.n && s->last_sweep_ns + SWEEP_PERIOD_NS < due)
                due = s->last_sweep_ns + SWEEP_PERIOD_NS;
        ms = procs_retry_timeout(&s->procs, now, INT_MAX);
        if (ms != INT_MAX && now + (uint64_t)ms * NS_PER_MS < due)
                due = now + (uint64_t)ms * NS_PER_MS;
        if (s->jobs && target_jobs_next_deadline(s->jobs) < due) /* a job to abandon */
                due = target_jobs_next_deadline(s->jobs);
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
        out->tls_located = s->procs.tls_located;
        out->tls_errors = s->procs.tls_errors;
        out->targets_stuck = s->procs.stuck;
        if (s->jobs) {
                struct target_jobs_stats js;

                target_jobs_get_stats(s->jobs, &js);
                out->jobs_abandoned = js.abandoned;
                out->jobs_refused = js.refused;
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

void sampler_free(struct sampler *s)
{
        int c;

        if (!s)
                return;
        ring_buffer__free(s->rb);
        ring_buffer__free(s->rb_spill);
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
        procs_free(&s->procs);
        free(s->tids.slots);
        dwarf_unwinder_free(s->unwinder);
        kunwind_free(s->ku);
        ktrace_text_free(s->ktrace);
        modules_free(s->modules);
        free(s);
}
