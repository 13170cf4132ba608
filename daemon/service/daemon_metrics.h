/* SPDX-License-Identifier: MIT */
/*
 * daemon_metrics.h — the daemon's own series on the metrics endpoint: samples, lost, torn
 * reads, unwind failures, targets, files, errors, uploads and the BPF program's cost. The sampling
 * thread publishes a snapshot of its counters (daemon_metrics_publish, a copy under a mutex
 * held for nothing else); the endpoint's thread renders the last snapshot
 * (daemon_metrics_collect, a metrics_collect_fn). So a scrape never reads the sampler, and
 * the values are as old as the last publish (ctxprof_last_update_timestamp_seconds says
 * when: a stuck sampling loop shows there). Never prints.
 */
#ifndef CTXPROF_DAEMON_METRICS_H
#define CTXPROF_DAEMON_METRICS_H

#include <stdint.h>

#include "engine/sampler.h"
#include "service/metrics_text.h"
#include "service/recording_set.h"
#include "service/select_jobs.h"
#include "service/uploader.h"
#include "util/parser_client.h"

#define DAEMON_METRICS_PERIOD_MS 1000 /* the daemon publishes this often */

/* One [upload] target's counters, by the name of its section. */
struct daemon_metrics_upload {
        char name[UPLOAD_NAME_LEN];
        struct upload_counters c; /* uploader_get_counters */
};

/* The counters of one moment, filled by the sampling thread. */
struct daemon_metrics_snapshot {
        struct sampler_stats st;          /* sampler_get_stats */
        struct recording_set_counters rc; /* every recording set of this run, summed */
        unsigned targets, map_entries;
        uint64_t files_deleted;
        uint64_t status_write_errors; /* the status file could not be rewritten */
        uint64_t started, updated;    /* wall clock seconds: the daemon's start, this snapshot */
        struct daemon_metrics_upload up[UPLOAD_TARGETS_MAX];
        unsigned nup;
        struct parser_stats parser;        /* the parser helper (util/parser_client.h) */
        uint64_t sym_retries, sym_refused; /* symbolize_parser_failures */
        uint64_t perf_map_bytes;           /* held by parsed perf maps (perf_map_budget.h) */
        struct select_jobs_stats select;   /* mode context's asks (select_jobs.h) */
};

struct daemon_metrics;

struct daemon_metrics *daemon_metrics_new(void); /* NULL: ENOMEM */
/* Replace the snapshot (any thread; a copy under the lock). */
void daemon_metrics_publish(struct daemon_metrics *dm, const struct daemon_metrics_snapshot *s);
/* metrics_collect_fn: the last snapshot as series (nothing before the first publish). */
void daemon_metrics_collect(void *dm, struct metrics_text *t);
void daemon_metrics_free(struct daemon_metrics *dm);

#endif
