/* SPDX-License-Identifier: MIT */
/*
 * engine/sampler_ingest.c — ring records to decoded samples: the callback of both rings, a
 * sample by stage (the record checked, its process, its context, its frames) to the sink,
 * lifecycle events (fork, exec, library map, exit) to the process table, and the drain budget
 * counted per record. Must never print, never trust a record field beyond the caps of
 * ctxprof/sample.h (engine/record_view.c checks them), never let a dead or hostile target
 * stop ingestion, and never open, attach or free a BPF object (sampler_bpf.c).
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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "engine/context_decode.h"
#include "engine/context_filter.h"
#include "engine/ktrace_text.h"
#include "engine/otel_decode.h"
#include "engine/record_view.h"
#include "engine/sampler_int.h"
#include "stack/proc_maps.h"
#include "util/clock.h"

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
        else if (!r->tls_generation || !ctxprof_tls_target_any(&p->published))
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
 * libdwfl stopped at the end of the stack copy, only its frames are compared. A sample taken
 * while p's list lacked a table that was being built (the kernel took frame-pointer steps
 * there: a cost of building off the loop, not a disagreement) is counted apart. */
static void ku_compare(struct sampler *s, const struct proc *p, const struct record_view *v,
                       const uint64_t *ips, int cnt, int dwfl_truncated)
{
        unsigned nu = v->n_ustack, want = (unsigned)cnt, i;

        if (!(v->r->flags & CTXPROF_SF_KUNWIND) || cnt <= 0)
                return;
        if (p->ku_incomplete || v->r->time_ns < p->ku_ready_ns) {
                s->st.ku_not_ready++; /* not the unwinders' disagreement: a table was missing */
                return;
        }
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

/* p's list for the in-kernel unwinder, written again when r met an ip in no mapping of it (a
 * library mapped since), or when the list lacked a table that has been loaded since (or that
 * was put off and is due). */
static void ku_resync(struct sampler *s, struct proc *p, const struct ctxprof_sample_rec *r)
{
        /* the clock only for the rare sample that may need it: this runs for every sample */
        if (!s->ku || !(r->flags & CTXPROF_SF_KUNWIND) || !p->alive)
                return;
        if ((r->flags & CTXPROF_SF_KU_NOMAP) && mono_ns() - p->ku_sync_ns >= PROC_MAPS_REFRESH_NS)
                ku_sync(s, p, 1);
        else if (p->ku_incomplete && (kunwind_generation(s->ku) != p->ku_gen ||
                                      mono_ns() - p->ku_sync_ns >= KUNWIND_RETRY_NS))
                ku_sync(s, p, 0);
}

/* In-kernel stack of r: statistics, and a resync when it met an unknown mapping. */
static int ku_account(struct sampler *s, struct proc *p, const struct record_view *v)
{
        const struct ctxprof_sample_rec *r = v->r;
        unsigned nu = v->n_ustack;

        if (!(r->flags & CTXPROF_SF_KUNWIND))
                return 0;
        ku_resync(s, p, r);
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
                /* a forked child seen before its event (or whose event the budget refused) */
                p = sampler_proc_new(s, (pid_t)r->tgid, NULL);
                if (p && proc_exited(p)) /* a late sample of a process already gone */
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
                proc_maps_open_pinned(s->modules, &p->pin, &p->maps);
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
        ds->process = ds->image = p->name;
        ds->start = p->pin.start;
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
        if (!ds->has_span && (r->flags & CTXPROF_SF_GO_LABELS))
                ds->has_span =
                    context_go_span(ds->labels, ds->n_labels, &ds->span_id, &ds->root_span_id);
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
                uint64_t reports = dwarf_unwinder_reports(s->unwinder);
                int ut = 0, cnt;

                ku_resync(s, p, r); /* dwarf-check: the in-kernel side's list */
                cnt = p->alive
                          ? dwarf_unwind(s->unwinder, p->pid, (const uint64_t *)d->regs, v->stack,
                                         v->stack_len, s->ips, CTXPROF_MAX_FRAMES, &ut)
                          : -ESRCH;
                /* When libdwfl read p's maps and opened its files (by pid) in this call, they
                 * were p's only if p still lives (util/proc_pin.h); else its state, cached per
                 * pid, goes too. State read earlier, while p lived, stays good. */
                if (cnt > 0 && dwarf_unwinder_reports(s->unwinder) != reports &&
                    proc_pin_check(&p->pin, &s->st.target)) {
                        dwarf_unwinder_forget(s->unwinder, p->pid);
                        cnt = -ESRCH;
                }
                if (cnt > 0) {
                        ku_compare(s, p, v, s->ips, cnt, ut);
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
        if (p->maps && proc_maps_perf_map_wanted(p->maps)) /* a frame in anonymous code */
                proc_perf_map_due(&s->procs, p, mono_ns());
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
                        p = sampler_proc_new(s, (pid_t)e->tgid, comm);
                ku_sync(s, p, 0);
                break;
        case CTXPROF_EV_EXEC_OTHER:
                /* Not a target (exec_filter mode): the filter decides. */
                s->exec_other_ns = mono_ns();
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
                        ku_sync(s, sampler_proc_new(s, (pid_t)e->tgid, comm), 0);
                        break;
                }
                snprintf(p->name, sizeof(p->name), "%s", comm);
                sampler_new_image(s, p);
                break;
        case CTXPROF_EV_MAP:
                /* BPF marked the location pending: locate again at the end of this poll. */
                if (p && p->alive)
                        proc_mapped(&s->procs, p, mono_ns());
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
        uint64_t now = mono_ns();

        consumer_seen(s, now); /* draining: a sample lost now is not lost while away */
        if (!s->drain_count++) {
                if (!s->drain_deadline_ns)
                        s->drain_deadline_ns = now + DRAIN_BUDGET_NS;
                return 0;
        }
        if (now < s->drain_deadline_ns)
                return 0;
        s->drain_cut = 1;
        s->st.drains_cut++;
        return 1;
}

/* Both rings: records are handled in the order BPF reserved them. */
int on_record(void *ctx, void *data, size_t size)
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
