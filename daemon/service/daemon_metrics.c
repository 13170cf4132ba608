/* SPDX-License-Identifier: MIT */
/*
 * daemon_metrics.c — the daemon's series (see daemon_metrics.h): a snapshot the sampling
 * thread publishes, rendered by the metrics thread from tables of (name, field). Never
 * prints, never reads the sampler itself.
 */
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>

#include "service/daemon_metrics.h"

#define NS_PER_S 1e9

struct daemon_metrics {
        pthread_mutex_t lock;
        struct daemon_metrics_snapshot s;
        int published;
};

/* One unlabelled series: a uint64_t field of the snapshot. */
struct series {
        const char *name;
        enum metrics_type type;
        const char *help;
        size_t off;
};

#define S(n, t, h, f)                                                                              \
        {                                                                                          \
                n, t, h, offsetof(struct daemon_metrics_snapshot, f)                               \
        }

static const struct series plain[] = {
    S("ctxprof_samples_total", METRICS_COUNTER,
      "Samples the BPF program recorded into the ring buffer.", st.samples),
    S("ctxprof_samples_received_total", METRICS_COUNTER,
      "Samples the daemon read from the ring buffer.", st.received),
    S("ctxprof_samples_with_context_total", METRICS_COUNTER,
      "Samples with a valid span or at least one label.", st.with_context),
    S("ctxprof_samples_filtered_total", METRICS_COUNTER,
      "Samples whose context did not match [sampling] filter: counted, not recorded.", st.filtered),
    S("ctxprof_samples_lost_total", METRICS_COUNTER,
      "Samples lost in the kernel: the ring buffer was full.", st.lost),
    S("ctxprof_samples_no_stack_total", METRICS_COUNTER, "Samples without any frame.", st.no_stack),
    S("ctxprof_samples_overflow_total", METRICS_COUNTER,
      "split = process: samples past split-max-open, written to the host file.",
      rc.samples_overflow),
    S("ctxprof_samples_no_file_total", METRICS_COUNTER,
      "Samples dropped because no recording file could be opened.", rc.samples_no_file),
    S("ctxprof_torn_span_reads_total", METRICS_COUNTER,
      "Span contexts read while being written (checksum mismatch): reported as no span.",
      st.ctx.torn_spans),
    S("ctxprof_unwind_errors_total", METRICS_COUNTER,
      "DWARF unwinding failures (the frame-pointer stack was used).", st.unwind_errors),
    S("ctxprof_unwind_truncated_total", METRICS_COUNTER,
      "DWARF unwinding that stopped before the outermost frame.", st.unwind_truncated),
    S("ctxprof_offcpu_intervals_total", METRICS_COUNTER,
      "Off-CPU intervals the BPF program reported (--event off-cpu or wall).", st.offcpu),
    S("ctxprof_threads_seen_total", METRICS_COUNTER, "Distinct threads sampled.", st.threads),
    S("ctxprof_parser_restarts_total", METRICS_COUNTER,
      "Parser helpers started after the first (one timed out, died or answered out of format).",
      parser.restarts),
    S("ctxprof_parser_lanes", METRICS_GAUGE,
      "Parser helpers running for one owner's files and process contexts (besides root's).",
      parser.lanes),
    S("ctxprof_parser_lane_evictions_total", METRICS_COUNTER,
      "Parser lanes given to another owner (the least recently used idle one).", parser.evictions),
    S("ctxprof_parser_busy_total", METRICS_COUNTER,
      "Parser requests not sent: their lane was in another request past the wait, or every "
      "lane was.",
      parser.busy),
    S("ctxprof_parser_timeouts_total", METRICS_COUNTER,
      "Parser helper requests past their deadline (the module is refused, the helper ended).",
      parser.timeouts),
    S("ctxprof_symbolizer_module_retries_total", METRICS_COUNTER,
      "Modules whose names the parser helper failed on (timed out, died, answered out of "
      "format), asked again later.",
      sym_retries),
    S("ctxprof_symbolizer_modules_refused_total", METRICS_COUNTER,
      "Modules the parser helper failed on three times: their frames stay unnamed.", sym_refused),
    S("ctxprof_perf_map_bytes", METRICS_GAUGE,
      "Bytes every parsed perf map holds (entries and names), within the perf-map budget "
      "(stack/perf_map_budget.h).",
      perf_map_bytes),
    S("ctxprof_modules", METRICS_GAUGE,
      "Code files in the module registry: mapped by a target, or dead and kept until the "
      "chunks naming them are written.",
      st.modules.live),
    S("ctxprof_modules_retired_total", METRICS_COUNTER,
      "Modules no target maps any more, retired (descriptor closed, id reused).",
      st.modules.retired),
    S("ctxprof_maps_reads_deferred_total", METRICS_COUNTER,
      "Reads of a target's /proc/PID/maps put off: over the sampling loop's time budget for "
      "them, or over the process's own share (stack/maps_budget.h).",
      st.target.maps_deferred),
    S("ctxprof_pid_recycled_total", METRICS_COUNTER,
      "Reads of a target refused because its pid went to another process since it was first "
      "seen (util/proc_pin.h): never attributed to the old target.",
      st.target.pid_recycled),
    S("ctxprof_target_files_opened_total", METRICS_COUNTER,
      "Files targets map, opened after their identity was checked (util/target_open.h).",
      st.target.opened),
    S("ctxprof_processes_seen_total", METRICS_COUNTER, "Target processes known (added, forked).",
      st.processes),
    S("ctxprof_files_written_total", METRICS_COUNTER, "Recording files finished and renamed.",
      rc.files_written),
    S("ctxprof_files_deleted_total", METRICS_COUNTER, "Recording files deleted by retention.",
      files_deleted),
    S("ctxprof_chunks_written_total", METRICS_COUNTER, "JFR chunks written.", rc.chunks_written),
    S("ctxprof_bytes_written_total", METRICS_COUNTER, "Bytes of recordings written.",
      rc.bytes_written),
    S("ctxprof_start_time_seconds", METRICS_GAUGE, "When the daemon started (Unix time).", started),
    S("ctxprof_last_update_timestamp_seconds", METRICS_GAUGE,
      "When the sampling loop last published these values (Unix time; every second while it "
      "runs).",
      updated),
};

/* Families with one label: (label value, field) pairs. */
struct labelled {
        const char *name, *help, *label;
        struct {
                const char *value;
                size_t off;
        } v[12];
};

#define V(val, f)                                                                                  \
        {                                                                                          \
                val, offsetof(struct daemon_metrics_snapshot, f)                                   \
        }

static const struct labelled labelled[] = {
    {"ctxprof_read_faults_total",
     "Reads of a thread's context that faulted in the BPF program (reported as no context).",
     "what",
     {V("span", st.span_faults), V("labelset", st.labelset_faults), V("label", st.label_faults),
      V("otel", st.otel_faults)}},
    {"ctxprof_select_total",
     "Mode context's asks whether a process publishes context, answered off the sampling loop "
     "(service/select_jobs.h): examined (answers), selected (it publishes), abandoned (its job "
     "passed its deadline or was refused: not selected), full (not asked: 1024 asks waiting).",
     "outcome",
     {V("examined", select.examined), V("selected", select.selected),
      V("abandoned", select.abandoned), V("full", select.full)}},
    {"ctxprof_go_total",
     "Go programs and their goroutine labels (docs/go.md): located (programs located with a "
     "labels layout), layout_unknown (Go programs whose layout is not known: no labels read), "
     "labels (samples whose goroutine labels were read), torn (samples whose labels were not "
     "read whole: a map growing or too large, a fault, entries changed while read).",
     "what",
     {V("located", st.go_located), V("layout_unknown", st.go_layout_unknown),
      V("labels", st.go_labels), V("torn", st.go_torn)}},
    {"ctxprof_samples_lost_by_cause_total",
     "ctxprof_samples_lost_total by cause: before (the consumer had not drained yet), away (no "
     "drain for 20 ms: the daemon was blocked, busy elsewhere or starved of CPU), draining (the "
     "ring is too small for the rate: raise ring-size).",
     "cause",
     {V("before", st.lost_unstarted), V("away", st.lost_away), V("draining", st.lost_draining)}},
    {"ctxprof_offcpu_dropped_total",
     "Off-CPU intervals not reported, by reason: short (under the minimum duration), full (no "
     "free slot at switch-out), lost (ring full), open_exit (the thread exited while blocked).",
     "reason",
     {V("short", st.offcpu_short), V("full", st.offcpu_full), V("lost", st.offcpu_lost),
      V("open_exit", st.offcpu_open_exit)}},
    {"ctxprof_stack_errors_total",
     "Stacks the BPF program could not take (the sample keeps the other stack).",
     "stack",
     {V("user", st.ustack_errors), V("kernel", st.kstack_errors), V("copy", st.stack_copy_errors)}},
    {"ctxprof_samples_refused_total",
     "Samples that lost part of what they carried to a bounded per-chunk store, by store: "
     "stacks (a new stack past its process's share of the trace table, written as [unknown "
     "stack]), labels (a new label set past its share of the label store, written without), "
     "threads (a new thread past its share of the thread table, written as the main thread).",
     "store",
     {V("stacks", st.refused_stacks), V("labels", st.refused_labels),
      V("threads", st.refused_threads)}},
    {"ctxprof_events_limited_total",
     "Events the BPF programs did not send, by kind: process (MAP/EXEC/FORK events over their "
     "process's budget), exec (exec of a non-target over a budget), targets_full (a target's "
     "child not added: the targets map was full of live processes).",
     "kind",
     {V("process", st.events_limited), V("exec", st.exec_events_limited),
      V("targets_full", st.targets_full)}},
    {"ctxprof_target_jobs_total",
     "Work on a target run off the sampling loop (engine/target_jobs.h), by outcome: abandoned "
     "(past its deadline, its worker left blocked), refused (every worker stuck), "
     "refused_owner (not run: the target's owner already holds 2 workers stuck), "
     "targets_stuck (targets marked: no more jobs, sampled without context), targets_returned "
     "(no longer: the stuck job's worker came back), first_wait_skips (a new process's first "
     "process-context look not waited for: the loop's budget for such waits was spent).",
     "outcome",
     {V("abandoned", st.jobs_abandoned), V("refused", st.jobs_refused),
      V("refused_owner", st.jobs_refused_owner), V("targets_stuck", st.targets_stuck),
      V("targets_returned", st.targets_returned), V("first_wait_skips", st.first_wait_skips)}},
    {"ctxprof_errors_total",
     "Errors by kind: sink (a sample the output refused), bad_record (a malformed ring record), "
     "tls_locate (a process whose context variables could not be located), event_lost (a "
     "process lifecycle event lost in the kernel), status_write (the status file not "
     "rewritten).",
     "kind",
     {V("sink", st.sink_errors), V("bad_record", st.bad_records), V("tls_locate", st.tls_errors),
      V("event_lost", st.events_lost), V("status_write", status_write_errors)}},
    {"ctxprof_target_refused_total",
     "Hostile target input refused, by reason: line_too_long (a /proc line over its cap, never "
     "parsed), no_mapping (a maps line whose range is not mapped: forged), not_regular (a FIFO, "
     "device, socket or directory), mismatch (another file than the maps line's dev:inode), "
     "unresolved (the path does not resolve inside the target's root), open_failed, not_owner (a "
     "perf map owned by another user than the target's), perf_map_bad_line (a perf-map line "
     "too long or not START SIZE name, skipped), perf_map_full (a perf map read up to its cap), "
     "perf_map_budget (a perf-map read refused: every map's budget or its user's share spent), "
     "on_fuse (a file on a FUSE mount: its reads could block for good).",
     "reason",
     {V("line_too_long", st.target.lines_too_long), V("no_mapping", st.target.no_mapping),
      V("not_regular", st.target.not_regular), V("mismatch", st.target.mismatch),
      V("unresolved", st.target.unresolved), V("open_failed", st.target.open_failed),
      V("not_owner", st.target.not_owner), V("perf_map_bad_line", st.target.perf_map_bad_lines),
      V("perf_map_full", st.target.perf_map_full), V("perf_map_budget", st.target.perf_map_budget),
      V("on_fuse", st.target.on_fuse)}},
    {"ctxprof_modules_refused_total",
     "Module registrations refused by a bound (the frames stay unknown): global (MODULES_MAX "
     "modules registered) or target (one process over PROC_MAPS_MAX_MODULES mappings).",
     "bound",
     {V("global", st.modules.full), V("target", st.modules.target_full)}},
};

static uint64_t field(const struct daemon_metrics_snapshot *s, size_t off)
{
        return *(const uint64_t *)((const char *)s + off);
}

/* The BPF program's run time, when the kernel counts it (kernel.bpf_stats_enabled = 1). */
static void bpf_cost(const struct daemon_metrics_snapshot *s, struct metrics_text *t)
{
        if (!s->st.bpf_run_cnt)
                return;
        metrics_text_family(t, "ctxprof_bpf_run_seconds_total", METRICS_COUNTER,
                            "Kernel time spent in the sampling BPF program, every invocation "
                            "(only while kernel.bpf_stats_enabled = 1).");
        metrics_text_double(t, "ctxprof_bpf_run_seconds_total", NULL, 0,
                            (double)s->st.bpf_run_ns / NS_PER_S);
        metrics_text_one(t, "ctxprof_bpf_runs_total", METRICS_COUNTER,
                         "Invocations of the sampling BPF program (only while "
                         "kernel.bpf_stats_enabled = 1).",
                         s->st.bpf_run_cnt);
        if (s->st.samples) {
                /* In seconds: Prometheus names carry base units (promtool refuses "_ns_"). */
                metrics_text_family(t, "ctxprof_bpf_seconds_per_sample", METRICS_GAUGE,
                                    "BPF run time divided by the samples recorded, since the "
                                    "start: what one recorded sample costs, filtered "
                                    "invocations included (bpfNsPerSample in "
                                    "ctxprof.Statistics, in seconds).");
                metrics_text_double(t, "ctxprof_bpf_seconds_per_sample", NULL, 0,
                                    (double)s->st.bpf_run_ns / s->st.samples / NS_PER_S);
        }
}

/* The library-load hook in use (an info gauge: 1 for the hook's name) and its hits. */
static void load_hook(const struct daemon_metrics_snapshot *s, struct metrics_text *t)
{
        struct metrics_label lb = {"hook", s->st.hook.name ? s->st.hook.name : "none"};

        metrics_text_family(t, "ctxprof_load_hook_info", METRICS_GAUGE,
                            "How library loads in targets are noticed: uprobe (per target, on "
                            "its ld.so's _dl_debug_state) or sys_exit (the fallback: every "
                            "syscall on the host pays).");
        metrics_text_u64(t, "ctxprof_load_hook_info", &lb, 1, 1);
        metrics_text_one(t, "ctxprof_load_hook_hits_total", METRICS_COUNTER,
                         "Library-load notifications seen in targets.", s->st.dl_notify);
}

/* One family with a sample per [upload] target: a uint64_t field of struct upload_counters. */
static void upload_family(const struct daemon_metrics_snapshot *s, struct metrics_text *t,
                          const char *name, enum metrics_type type, const char *help, size_t off)
{
        metrics_text_family(t, name, type, help);
        for (unsigned i = 0; i < s->nup; i++) {
                struct metrics_label lb = {"target", s->up[i].name};

                metrics_text_u64(t, name, &lb, 1,
                                 *(const uint64_t *)((const char *)&s->up[i].c + off));
        }
}

/* Upload series, by target; failures by outcome and drops by reason as a second label. */
static void uploads(const struct daemon_metrics_snapshot *s, struct metrics_text *t)
{
        unsigned i;
        int k;

        if (!s->nup)
                return;
        upload_family(s, t, "ctxprof_upload_success_total", METRICS_COUNTER,
                      "Profiles the backend accepted (2xx).",
                      offsetof(struct upload_counters, uploads_ok));
        upload_family(s, t, "ctxprof_upload_bytes_total", METRICS_COUNTER,
                      "Request bytes of accepted uploads.",
                      offsetof(struct upload_counters, bytes_sent));
        upload_family(s, t, "ctxprof_upload_attempted_bytes_total", METRICS_COUNTER,
                      "Request bytes of every upload attempt, failed ones included.",
                      offsetof(struct upload_counters, bytes_attempted));
        upload_family(s, t, "ctxprof_upload_spool_files", METRICS_GAUGE,
                      "Profiles waiting in the spool.",
                      offsetof(struct upload_counters, spool_files));
        upload_family(s, t, "ctxprof_upload_spool_bytes", METRICS_GAUGE,
                      "Bytes waiting in the spool.", offsetof(struct upload_counters, spool_bytes));
        upload_family(s, t, "ctxprof_upload_queue", METRICS_GAUGE,
                      "Finished profiles handed to the uploader, not yet in the spool.",
                      offsetof(struct upload_counters, queue));
        upload_family(s, t, "ctxprof_upload_pauses_total", METRICS_COUNTER,
                      "Times the target started denying access (401, 403, 404...): paused, "
                      "its spool kept.",
                      offsetof(struct upload_counters, pauses));
        upload_family(s, t, "ctxprof_upload_rejected_total", METRICS_COUNTER,
                      "Profiles an OTLP receiver rejected in an accepted request (partial "
                      "success).",
                      offsetof(struct upload_counters, rejected));
        upload_family(s, t, "ctxprof_upload_credential_reloads_total", METRICS_COUNTER,
                      "Credentials files re-read (SIGHUP).",
                      offsetof(struct upload_counters, credential_reloads));
        metrics_text_family(t, "ctxprof_upload_state", METRICS_GAUGE,
                            "1 for the target's state: ok, retrying (unreachable, 408, 429, "
                            "5xx) or paused (access denied: 401, 403, 404...).");
        for (i = 0; i < s->nup; i++)
                for (k = 0; k < UPLOAD_STATE_N; k++) {
                        struct metrics_label lb[2] = {{"target", s->up[i].name},
                                                      {"state", upload_state_name(k)}};

                        metrics_text_u64(t, "ctxprof_upload_state", lb, 2, s->up[i].c.state == k);
                }
        metrics_text_family(t, "ctxprof_upload_failures_total", METRICS_COUNTER,
                            "Upload attempts that failed, by outcome (the profile stays in the "
                            "spool unless the outcome also counts a drop).");
        for (i = 0; i < s->nup; i++)
                for (k = 1; k < UPLOAD_OUTCOME_N; k++) {
                        struct metrics_label lb[2] = {{"target", s->up[i].name},
                                                      {"outcome", upload_outcome_name(k)}};

                        metrics_text_u64(t, "ctxprof_upload_failures_total", lb, 2,
                                         s->up[i].c.failures[k]);
                }
        metrics_text_family(t, "ctxprof_upload_dropped_total", METRICS_COUNTER,
                            "Profiles given up on, by reason: refused (400, 413, 422), spool_full, "
                            "expired, "
                            "corrupt, spool_error.");
        for (i = 0; i < s->nup; i++)
                for (k = 0; k < UPLOAD_DROP_N; k++) {
                        struct metrics_label lb[2] = {{"target", s->up[i].name},
                                                      {"reason", upload_drop_name(k)}};

                        metrics_text_u64(t, "ctxprof_upload_dropped_total", lb, 2,
                                         s->up[i].c.dropped[k]);
                }
}

static void render(const struct daemon_metrics_snapshot *s, struct metrics_text *t)
{
        size_t i, j;

        for (i = 0; i < sizeof(plain) / sizeof(plain[0]); i++)
                metrics_text_one(t, plain[i].name, plain[i].type, plain[i].help,
                                 field(s, plain[i].off));
        metrics_text_one(t, "ctxprof_targets", METRICS_GAUGE, "Processes sampled now.", s->targets);
        metrics_text_one(t, "ctxprof_targets_map_entries", METRICS_GAUGE,
                         "Entries in the kernel's targets map.", s->map_entries);
        for (i = 0; i < sizeof(labelled) / sizeof(labelled[0]); i++) {
                const struct labelled *l = &labelled[i];

                metrics_text_family(t, l->name, METRICS_COUNTER, l->help);
                for (j = 0; j < sizeof(l->v) / sizeof(l->v[0]) && l->v[j].value; j++) {
                        struct metrics_label lb = {l->label, l->v[j].value};

                        metrics_text_u64(t, l->name, &lb, 1, field(s, l->v[j].off));
                }
        }
        bpf_cost(s, t);
        load_hook(s, t);
        uploads(s, t);
}

struct daemon_metrics *daemon_metrics_new(void)
{
        struct daemon_metrics *dm = calloc(1, sizeof(*dm));

        if (dm)
                pthread_mutex_init(&dm->lock, NULL);
        return dm;
}

void daemon_metrics_publish(struct daemon_metrics *dm, const struct daemon_metrics_snapshot *s)
{
        pthread_mutex_lock(&dm->lock);
        dm->s = *s;
        dm->published = 1;
        pthread_mutex_unlock(&dm->lock);
}

void daemon_metrics_collect(void *ctx, struct metrics_text *t)
{
        struct daemon_metrics *dm = ctx;
        struct daemon_metrics_snapshot s;
        int published;

        pthread_mutex_lock(&dm->lock);
        s = dm->s;
        published = dm->published;
        pthread_mutex_unlock(&dm->lock);
        if (published)
                render(&s, t);
}

void daemon_metrics_free(struct daemon_metrics *dm)
{
        if (!dm)
                return;
        pthread_mutex_destroy(&dm->lock);
        free(dm);
}
