/* SPDX-License-Identifier: MIT */
/*
 * record_stats.c — `record`'s counters at exit, on stderr and as JSON (see record_stats.h).
 * Reads the sampler's and the outputs' counters; changes nothing.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cli/json_out.h"
#include "cli/record_stats.h"
#include "ctxprof/sample.h"
#include "stack/symbolize.h"
#include "util/parser_client.h"
#include "stack/sigbus_guard.h"
#include "util/clock.h"

#define UNWIND_STOPS_SHOWN 5 /* modules named in the "stopped early" line */

/* The base name of the module an unwind stop tally entry names, or "[unknown]". */
static const char *stop_module_name(struct sampler *s, const struct module_tally_entry *e)
{
        struct module_info mi;
        const char *slash;

        if (e->module_id == CTXPROF_MODULE_UNKNOWN ||
            modules_info(sampler_modules(s), e->module_id, &mi))
                return "[unknown]";
        slash = strrchr(mi.path, '/');
        return slash ? slash + 1 : mi.path;
}

/* The modules where DWARF unwinding stopped early most often, as one line. */
static void print_unwind_stops(struct sampler *s)
{
        struct module_tally_entry top[UNWIND_STOPS_SHOWN];
        uint64_t other;
        unsigned i, n = sampler_unwind_stops(s, top, UNWIND_STOPS_SHOWN, &other);

        if (!n)
                return;
        fputs("ctxprof: dwarf unwinding stopped early in:", stderr);
        for (i = 0; i < n; i++)
                fprintf(stderr, "%s %s %llu", i ? "," : "", stop_module_name(s, &top[i]),
                        (unsigned long long)top[i].count);
        if (other)
                fprintf(stderr, ", other modules %llu", (unsigned long long)other);
        fputc('\n', stderr);
}

void record_stats_print(struct sampler *s, struct collapsed *c)
{
        struct sampler_stats st;
        char lines[48] = "", bpf[48] = "", bus[64] = "";

        if (c)
                snprintf(lines, sizeof(lines), ", lines %zu", collapsed_lines(c));
        sampler_get_stats(s, &st);
        if (st.bpf_run_cnt && st.samples) /* kernel.bpf_stats_enabled=1 */
                snprintf(bpf, sizeof(bpf), ", BPF %llu ns/sample",
                         (unsigned long long)(st.bpf_run_ns / st.samples));
        if (sigbus_guard_repaired())
                snprintf(bus, sizeof(bus), ", pages of truncated files read as zeros %llu",
                         (unsigned long long)sigbus_guard_repaired());
        fprintf(
            stderr,
            "ctxprof: samples %llu (received %llu, %llu with context), lost %llu (the sample ring "
            "was full: %llu before the consumer started, %llu while it was away from the ring "
            "over %llu ms, blocked or starved of CPU, %llu while it drained, a ring too small "
            "for the rate: --ring-size), not read at stop %llu, no stack %llu, "
            "torn span reads %llu, label read faults %llu, labels dropped %llu, "
            "stale TLS locations refused %llu, stacks not DWARF-unwound %llu (frame pointers "
            "used instead), stacks cut short %llu (DWARF unwinding stopped before the outermost "
            "frame: a stack deeper than the 16 KiB copied per sample, or code without unwind "
            "info), events lost %llu, threads %llu, processes %llu%s%s%s\n",
            (unsigned long long)st.samples, (unsigned long long)st.received,
            (unsigned long long)st.with_context, (unsigned long long)st.lost,
            (unsigned long long)st.lost_unstarted, (unsigned long long)st.lost_away,
            (unsigned long long)(CTXPROF_CONSUMER_AWAY_NS / NS_PER_MS),
            (unsigned long long)st.lost_draining, (unsigned long long)st.stop_discarded,
            (unsigned long long)st.no_stack, (unsigned long long)st.ctx.torn_spans,
            (unsigned long long)(st.label_faults + st.labelset_faults),
            (unsigned long long)st.ctx.dropped, (unsigned long long)st.tls_stale,
            (unsigned long long)st.unwind_errors, (unsigned long long)st.unwind_truncated,
            (unsigned long long)st.events_lost, (unsigned long long)st.threads,
            (unsigned long long)st.processes, lines, bpf, bus);
        print_unwind_stops(s);
        if (st.filtered)
                fprintf(stderr,
                        "ctxprof: context filter (--filter): %llu samples did not match and were "
                        "not recorded (%llu of them in BPF, before the ring; %llu received)\n",
                        (unsigned long long)st.filtered, (unsigned long long)st.filtered_in_kernel,
                        (unsigned long long)st.received);
        if (st.hook.kind != LOAD_HOOK_UPROBE || st.events_limited || st.exec_events_limited ||
            st.targets_full)
                fprintf(stderr,
                        "ctxprof: library loads seen by %s%s%s; events over a budget: a "
                        "process's %llu, exec notifications %llu; targets refused (map full) "
                        "%llu\n",
                        st.hook.name ? st.hook.name : "none", st.hook.why[0] ? ": " : "",
                        st.hook.why, (unsigned long long)st.events_limited,
                        (unsigned long long)st.exec_events_limited,
                        (unsigned long long)st.targets_full);
        if (st.offcpu_received || st.offcpu || st.offcpu_short || st.offcpu_full)
                fprintf(stderr,
                        "ctxprof: off-CPU intervals %llu (received %llu), shorter than the "
                        "minimum (dropped in the kernel) %llu, not tracked (no free thread slot) "
                        "%llu, lost (ring full) %llu, slots freed at thread exit %llu (%llu "
                        "still open), slots in use %llu\n",
                        (unsigned long long)st.offcpu, (unsigned long long)st.offcpu_received,
                        (unsigned long long)st.offcpu_short, (unsigned long long)st.offcpu_full,
                        (unsigned long long)st.offcpu_lost, (unsigned long long)st.offcpu_exited,
                        (unsigned long long)st.offcpu_open_exit,
                        (unsigned long long)st.offcpu_slots);
        if (st.ku_samples || st.ku_noproc)
                fprintf(stderr,
                        "ctxprof: in-kernel unwinding: %llu samples, %llu frames, %llu "
                        "frame-pointer steps (%llu for rules BPF cannot express), %llu samples "
                        "before the process's mappings were loaded; tables: peak %llu (%llu KiB), "
                        "%llu built in %llu ms, %llu without one\n",
                        (unsigned long long)st.ku_samples, (unsigned long long)st.ku_frames,
                        (unsigned long long)st.ku_fp_steps, (unsigned long long)st.ku_unsup,
                        (unsigned long long)st.ku_noproc,
                        (unsigned long long)st.ku_tables.tables_peak,
                        (unsigned long long)(st.ku_tables.bytes_peak / 1024),
                        (unsigned long long)st.ku_tables.builds,
                        (unsigned long long)(st.ku_tables.build_ns / 1000000),
                        (unsigned long long)st.ku_tables.build_errors);
        fprintf(stderr,
                "ctxprof: samples without context: taken before the location (not recorded) "
                "%llu, stale location %llu, not located %llu, no thread pointer %llu, "
                "no storage for the thread %llu, read faults %llu, nothing set %llu\n",
                (unsigned long long)st.ctx_missing.pending,
                (unsigned long long)st.ctx_missing.stale,
                (unsigned long long)st.ctx_missing.not_located,
                (unsigned long long)st.ctx_missing.no_tp,
                (unsigned long long)st.ctx_missing.unreachable,
                (unsigned long long)st.ctx_missing.read_fault,
                (unsigned long long)st.ctx_missing.not_set);
}

/* Samples without context, by why (sampler_stats.ctx_missing), as one JSON object. */
static void json_ctx_missing(FILE *f, const struct sampler_stats *st)
{
        fprintf(f,
                ",\n  \"ctx_missing\": {\"before_location\": %" PRIu64 ", \"stale\": %" PRIu64
                ", \"not_located\": %" PRIu64 ", \"no_thread_pointer\": %" PRIu64
                ", \"no_storage\": %" PRIu64 ", \"read_fault\": %" PRIu64 ", \"not_set\": %" PRIu64
                "}",
                st->ctx_missing.pending, st->ctx_missing.stale, st->ctx_missing.not_located,
                st->ctx_missing.no_tp, st->ctx_missing.unreachable, st->ctx_missing.read_fault,
                st->ctx_missing.not_set);
}

/* One "key": value pair of the stats object (after the first). */
static void num(FILE *f, const char *key, uint64_t v)
{
        fprintf(f, ",\n  \"%s\": %" PRIu64, key, v);
}

/* The OpenTelemetry thread and process context counters (sampler_stats), as one object:
 * every record or process context refused, and why. */
static void json_otel(FILE *f, const struct sampler_stats *st)
{
        const struct otel_decode_stats *o = &st->otel;
        const struct otel_pctx_stats *p = &st->pctx;

        fprintf(f,
                ",\n  \"otel\": {\"records\": %" PRIu64 ", \"read_faults\": %" PRIu64
                ", \"not_valid\": %" PRIu64 ", \"zero_ids\": %" PRIu64 ", \"oversized\": %" PRIu64
                ", \"malformed\": %" PRIu64 ", \"duplicates\": %" PRIu64
                ", \"unknown_keys\": %" PRIu64 ", \"values_truncated\": %" PRIu64
                ", \"labels_dropped\": %" PRIu64 ", \"shadowed\": %" PRIu64
                ", \"root_span_bad\": %" PRIu64,
                o->records, st->otel_faults, o->not_valid, o->zero_ids, o->oversized, o->malformed,
                o->duplicates, o->unknown_keys, o->values_truncated, o->labels_dropped, o->shadowed,
                o->root_span_bad);
        fprintf(f,
                ", \"process_context\": {\"decoded\": %" PRIu64 ", \"quick\": %" PRIu64
                ", \"absent\": %" PRIu64 ", \"bad_header\": %" PRIu64 ", \"too_large\": %" PRIu64
                ", \"torn\": %" PRIu64 ", \"decode_errors\": %" PRIu64 ", \"too_deep\": %" PRIu64
                ", \"bad_schema\": %" PRIu64 ", \"bad_keys\": %" PRIu64
                ", \"read_faults\": %" PRIu64 ", \"parser_failed\": %" PRIu64
                ", \"parser_busy\": %" PRIu64 "}}",
                p->decoded, p->quick, p->absent, p->bad_header, p->too_large, p->torn,
                p->decode_errors, p->too_deep, p->bad_schema, p->bad_keys, p->read_faults,
                p->parser_failed, p->parser_busy);
}

/* "target_files": hostile target input the daemon refused, by reason (util/target_stats.h),
 * and the files it did open. */
static void json_target(FILE *f, const struct target_stats *t)
{
        fprintf(
            f,
            ",\n  \"target_files\": {\"opened\": %" PRIu64 ", \"opened_by_path\": %" PRIu64
            ", \"no_mapping\": %" PRIu64 ", \"not_regular\": %" PRIu64 ", \"mismatch\": %" PRIu64
            ", \"unresolved\": %" PRIu64 ", \"open_failed\": %" PRIu64
            ", \"lines_too_long\": %" PRIu64 ", \"not_owner\": %" PRIu64
            ", \"perf_map_bad_lines\": %" PRIu64 ", \"perf_map_full\": %" PRIu64
            ", \"perf_map_budget\": %" PRIu64 ", \"on_fuse\": %" PRIu64
            ", \"maps_deferred\": %" PRIu64 ", \"pid_recycled\": %" PRIu64 "}",
            t->opened, t->opened_by_path, t->no_mapping, t->not_regular, t->mismatch, t->unresolved,
            t->open_failed, t->lines_too_long, t->not_owner, t->perf_map_bad_lines,
            t->perf_map_full, t->perf_map_budget, t->on_fuse, t->maps_deferred, t->pid_recycled);
}

/* "kunwind": the in-kernel unwinder's counters and the memory of its tables. */
static void json_kunwind(FILE *f, const struct sampler_stats *st)
{
        const struct kunwind_stats *t = &st->ku_tables;
        const struct {
                const char *key;
                uint64_t v;
        } kv[] = {
            {"samples", st->ku_samples},
            {"frames", st->ku_frames},
            {"no_mapping_list", st->ku_noproc},
            {"fp_steps", st->ku_fp_steps},
            {"unsupported_rule_steps", st->ku_unsup},
            {"unknown_mapping", st->ku_nomap},
            {"sync_errors", st->ku_sync_errors},
            {"compared", st->ku_compared},
            {"equal", st->ku_equal},
            {"not_ready", st->ku_not_ready},
            {"tables", t->tables},
            {"rows", t->rows},
            {"row_capacity", t->row_cap},
            {"table_bytes", t->bytes},
            {"peak_tables", t->tables_peak},
            {"peak_table_bytes", t->bytes_peak},
            {"builds", t->builds},
            {"build_errors", t->build_errors},
            {"builds_deferred", t->build_deferred},
            {"build_jobs", t->build_jobs},
            {"build_jobs_abandoned", t->build_abandoned},
            {"tables_not_fitting", t->full},
            {"build_ms", t->build_ns / 1000000},
            {"unsupported_rows", t->unsup_rows},
        };

        fputs(",\n  \"kunwind\": {", f);
        for (size_t i = 0; i < sizeof(kv) / sizeof(kv[0]); i++)
                fprintf(f, "%s\"%s\": %" PRIu64, i ? ", " : "", kv[i].key, kv[i].v);
        fputc('}', f);
}

static void json_unwind_stops(FILE *f, struct sampler *s)
{
        struct module_tally_entry top[UNWIND_STOPS_SHOWN];
        uint64_t other = 0;
        unsigned i, n = sampler_unwind_stops(s, top, UNWIND_STOPS_SHOWN, &other);

        fputs(",\n  \"unwind_stops\": [", f);
        for (i = 0; i < n; i++) {
                fputs(i ? ", {\"module\": " : "{\"module\": ", f);
                json_string(f, stop_module_name(s, &top[i]));
                fprintf(f, ", \"count\": %" PRIu64 "}", top[i].count);
        }
        fputs("]", f);
        num(f, "unwind_stops_other_modules", other);
}

/* Off-CPU counters (event off-cpu / wall; zeros otherwise), as one JSON object. */
/* The library-load hook in use and the event bounds (ctxprof/sample.h, "Event bounds"). */
static void json_hooks(FILE *f, const struct sampler_stats *st)
{
        const struct load_hook_stats *h = &st->hook;

        fputs(",\n  \"load_hook\": {\"kind\": ", f);
        json_string(f, h->name ? h->name : "none");
        fputs(", \"why\": ", f);
        json_string(f, h->why);
        fprintf(f,
                ", \"hits\": %" PRIu64 ", \"attached\": %" PRIu64 ", \"active\": %" PRIu64
                ", \"no_loader\": %" PRIu64 ", \"errors\": %" PRIu64 "}",
                st->dl_notify, h->attached, h->active, h->no_loader, h->errors);
        fprintf(f,
                ",\n  \"event_bounds\": {\"events_limited\": %" PRIu64
                ", \"exec_events_limited\": %" PRIu64 ", \"targets_full\": %" PRIu64 "}",
                st->events_limited, st->exec_events_limited, st->targets_full);
        fprintf(f,
                ",\n  \"target_jobs\": {\"abandoned\": %" PRIu64 ", \"refused\": %" PRIu64
                ", \"refused_owner\": %" PRIu64 ", \"stuck_workers\": %" PRIu64
                ", \"targets_stuck\": %" PRIu64 ", \"targets_returned\": %" PRIu64
                ", \"tls_located\": %" PRIu64 ", \"tls_errors\": %" PRIu64
                ", \"first_wait_skips\": %" PRIu64 "}",
                st->jobs_abandoned, st->jobs_refused, st->jobs_refused_owner,
                st->jobs_stuck_workers, st->targets_stuck, st->targets_returned, st->tls_located,
                st->tls_errors, st->first_wait_skips);
}

/* "go": Go programs and their goroutine labels (docs/go.md). */
static void json_go(FILE *f, const struct sampler_stats *st)
{
        fprintf(f,
                ",\n  \"go\": {\"located\": %" PRIu64 ", \"layout_unknown\": %" PRIu64
                ", \"labels\": %" PRIu64 ", \"torn\": %" PRIu64 "}",
                st->go_located, st->go_layout_unknown, st->go_labels, st->go_torn);
}

static void json_offcpu(FILE *f, const struct sampler_stats *st)
{
        fprintf(f,
                ",\n  \"offcpu\": {\"intervals\": %" PRIu64 ", \"received\": %" PRIu64
                ", \"short\": %" PRIu64 ", \"no_slot\": %" PRIu64 ", \"lost\": %" PRIu64
                ", \"exited\": %" PRIu64 ", \"open_at_exit\": %" PRIu64 ", \"slots\": %" PRIu64
                ", \"bpf_run_ns\": %" PRIu64 ", \"bpf_run_cnt\": %" PRIu64 "}",
                st->offcpu, st->offcpu_received, st->offcpu_short, st->offcpu_full, st->offcpu_lost,
                st->offcpu_exited, st->offcpu_open_exit, st->offcpu_slots, st->offcpu_bpf_run_ns,
                st->offcpu_bpf_run_cnt);
}

static void json_jfr(FILE *f, const struct jfr_sink_counters *jc)
{
        fprintf(f,
                ",\n  \"jfr\": {\"chunks_written\": %" PRIu64 ", \"bytes_written\": %" PRIu64
                ", \"samples_written\": %" PRIu64 ", \"samples_dropped\": %" PRIu64
                ", \"trace_table_bytes\": %" PRIu64 ", \"traces_dropped\": %" PRIu64
                ", \"chunks_cut_early\": %" PRIu64,
                jc->chunks_written, jc->bytes_written, jc->samples_written, jc->samples_dropped,
                jc->table_memory_bytes, jc->traces_dropped, jc->chunks_cut_early);
        /* samples that lost a new stack / label set / thread / resource to a store's bound */
        fprintf(f,
                ", \"refused\": {\"stacks\": %" PRIu64 ", \"label_sets\": %" PRIu64
                ", \"threads\": %" PRIu64 ", \"processes\": %" PRIu64 "}}",
                jc->refused.stacks, jc->refused.label_sets, jc->refused.threads,
                jc->refused.processes);
}

/* The parser helper's counters (util/parser_client.h), and the symbolizer's failures on it. */
static void json_parser(FILE *f, const struct parser_stats *ps)
{
        uint64_t retries, refused;

        symbolize_parser_failures(&retries, &refused);
        fprintf(f,
                ",\n  \"parser\": {\"calls\": %" PRIu64 ", \"pctx_calls\": %" PRIu64
                ", \"tls_calls\": %" PRIu64 ", \"cfi_calls\": %" PRIu64 ", \"busy\": %" PRIu64
                ", \"restarts\": %" PRIu64 ", \"timeouts\": %" PRIu64 ", \"deaths\": %" PRIu64
                ", \"bad_answers\": %" PRIu64 ", \"refused\": %" PRIu64 ", \"unreaped\": %" PRIu64
                ", \"lanes\": %" PRIu64 ", \"lane_evictions\": %" PRIu64
                ", \"lanes_full\": %" PRIu64 ", \"sym_module_retries\": %" PRIu64
                ", \"sym_modules_refused\": %" PRIu64 "}",
                ps->calls, ps->pctx_calls, ps->tls_calls, ps->cfi_calls, ps->busy, ps->restarts,
                ps->timeouts, ps->deaths, ps->bad_answers, ps->refused, ps->unreaped, ps->lanes,
                ps->evictions, ps->lanes_full, retries, refused);
}

int record_stats_write_json(const char *path, struct sampler *s, struct collapsed *c,
                            const struct jfr_sink_counters *jc, const struct parser_stats *ps)
{
        struct sampler_stats st;
        FILE *f = fopen(path, "we");

        if (!f) {
                fprintf(stderr, "ctxprof: cannot write %s: %s\n", path, strerror(errno));
                return -1;
        }
        sampler_get_stats(s, &st);
        fprintf(f, "{\n  \"samples\": %" PRIu64, st.samples);
        num(f, "received", st.received);
        num(f, "received_bytes", st.received_bytes); /* ring bytes those records took */
        num(f, "with_context", st.with_context);
        num(f, "filtered", st.filtered);
        num(f, "filtered_in_kernel", st.filtered_in_kernel);
        num(f, "lost", st.lost);
        num(f, "lost_before_consumer", st.lost_unstarted);
        num(f, "lost_consumer_away", st.lost_away);
        num(f, "lost_consumer_draining", st.lost_draining);
        num(f, "not_read_at_stop", st.stop_discarded);
        num(f, "no_stack", st.no_stack);
        num(f, "torn_span_reads", st.ctx.torn_spans);
        num(f, "label_read_faults", st.label_faults + st.labelset_faults);
        num(f, "labels_dropped", st.ctx.dropped);
        num(f, "stale_tls_locations_refused", st.tls_stale);
        num(f, "unwind_errors", st.unwind_errors);
        num(f, "unwind_truncated", st.unwind_truncated);
        num(f, "events_lost", st.events_lost);
        num(f, "threads", st.threads);
        num(f, "processes", st.processes);
        num(f, "ring_bytes", st.ring_bytes);
        num(f, "perf_events_per_thread", st.task_events);
        num(f, "refused_stacks", st.refused_stacks);
        num(f, "refused_label_sets", st.refused_labels);
        num(f, "refused_threads", st.refused_threads);
        /* 0 unless kernel.bpf_stats_enabled=1 */
        num(f, "bpf_ns_per_sample", st.bpf_run_cnt && st.samples ? st.bpf_run_ns / st.samples : 0);
        num(f, "bpf_runs", st.bpf_run_cnt); /* the sampling program's runs, every process's */
        num(f, "bpf_load_kernel_us", st.bpf_load_kernel_us);
        num(f, "bpf_verified_insns", st.bpf_verified_insns);
        num(f, "truncated_file_pages_read_as_zeros", sigbus_guard_repaired());
        json_unwind_stops(f, s);
        json_ctx_missing(f, &st);
        json_otel(f, &st);
        json_target(f, &st.target);
        fprintf(f,
                ",\n  \"modules\": {\"live\": %" PRIu64 ", \"dead\": %" PRIu64
                ", \"retired\": %" PRIu64 ", \"refused_global\": %" PRIu64
                ", \"refused_target\": %" PRIu64 "}",
                st.modules.live, st.modules.dead, st.modules.retired, st.modules.full,
                st.modules.target_full);
        json_offcpu(f, &st);
        json_go(f, &st);
        json_kunwind(f, &st);
        json_hooks(f, &st);
        if (c)
                num(f, "collapsed_lines", collapsed_lines(c));
        if (jc)
                json_jfr(f, jc);
        if (ps)
                json_parser(f, ps);
        fputs("\n}\n", f);
        if (ferror(f) | fclose(f)) {
                fprintf(stderr, "ctxprof: writing %s failed: %s\n", path, strerror(errno));
                return -1;
        }
        return 0;
}
