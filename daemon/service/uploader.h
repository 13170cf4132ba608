/* SPDX-License-Identifier: MIT */
/*
 * uploader.h — delivery of finished profiles to one upload target, off the sampling
 * thread. The daemon hands each finished recording over (uploader_add: a queue in memory,
 * never blocks on disk or network); the uploader's own thread copies it into the target's
 * on-disk spool (service/upload_spool.h: bounded by size and age, survives a restart and a
 * SIGKILL) and sends the spool's entries oldest first (service/upload_http.h). An entry is
 * removed only when the backend accepted it (2xx) or condemned that profile (400, 413, 422:
 * logged with the reason and counted); every other failure is retried after an exponential
 * backoff with jitter (retry-min doubling up to retry-max, each delay drawn in [d/2, d]), or
 * after the Retry-After of a 429/503 (up to 1 h). A target that denies access (401, 403,
 * 404...: UPLOAD_HTTP_DENIED) is *paused*: the spool is kept whole, the oldest entry is tried
 * again after the same backoff, and the state change is logged once (and counted), not each
 * attempt; uploader_reload_credentials (SIGHUP) re-reads the credentials files and tries at
 * once. What is dropped — refused, spool over its size (oldest first), older than spool-age,
 * unreadable — is counted by reason and logged. A target of format otlp gets each finished
 * JFR file converted (sink/jfr_convert.h, in memory, on the uploader's thread) to one
 * gzip'd ExportProfilesServiceRequest when it is spooled; the profiles an OTLP receiver
 * rejects in a 2xx answer (partial success, not to be retried) are counted and logged.
 *
 * Threads: uploader_add, uploader_get_counters and uploader_stop are called by the daemon's
 * main thread; logging happens on the uploader's thread (the callback must be thread-safe).
 * Never prints.
 */
#ifndef CTXPROF_UPLOADER_H
#define CTXPROF_UPLOADER_H

#include <stdint.h>

#include "service/upload_config.h"
#include "service/upload_http.h"
#include "service/workload_identity.h"

#define UPLOAD_RETRY_AFTER_MAX_MS 3600000ull /* a server cannot make us wait longer */

/* Why entries were dropped without being accepted. */
enum upload_drop {
        UPLOAD_DROP_REFUSED = 0, /* the backend condemned the profile (400, 413, 422) */
        UPLOAD_DROP_SPOOL_FULL,  /* spool-size exceeded: the oldest went */
        UPLOAD_DROP_EXPIRED,     /* older than spool-age */
        UPLOAD_DROP_CORRUPT,     /* an entry that cannot be read back */
        UPLOAD_DROP_SPOOL_ERROR, /* the profile could not be copied into the spool */
        UPLOAD_DROP_N,
};
/* "refused", "spool_full", "expired", "corrupt", "spool_error" */
const char *upload_drop_name(int why);

/* What the last attempt said about the target (a gauge). */
enum upload_state {
        UPLOAD_STATE_OK = 0,   /* no attempt yet, or the last one was answered 2xx/400/413/422 */
        UPLOAD_STATE_RETRYING, /* the last attempt failed: unreachable, timeout, 408/429/5xx */
        UPLOAD_STATE_PAUSED,   /* the target denies access (401/403/404...): spool kept */
        UPLOAD_STATE_N,
};
/* "ok", "retrying", "paused" */
const char *upload_state_name(int state);

/*
 * One target's counters, cumulative since uploader_new (a snapshot: uploader_get_counters).
 * For the metrics endpoint: a counter per field, labelled with the target's name;
 * failures by enum upload_outcome (index UPLOAD_OK unused), drops by enum upload_drop.
 */
struct upload_counters {
        uint64_t spooled;                    /* profiles put into the spool */
        uint64_t uploads_ok;                 /* entries the backend accepted (2xx) */
        uint64_t bytes_sent;                 /* request bytes of accepted uploads */
        uint64_t bytes_attempted;            /* request bytes of every attempt */
        uint64_t failures[UPLOAD_OUTCOME_N]; /* attempts that failed, by outcome */
        uint64_t dropped[UPLOAD_DROP_N];     /* entries dropped, by reason */
        uint64_t dropped_bytes;              /* their bytes */
        uint64_t spool_files, spool_bytes;   /* in the spool now (gauges) */
        uint64_t queue;                      /* handed over, not yet spooled (gauge) */
        long last_http_status;               /* of the last response, 0 = none yet */
        uint64_t last_success_wall_s;        /* 0 = none yet */
        int state;                           /* enum upload_state (gauge) */
        uint64_t pauses;                     /* times the target started denying access */
        uint64_t credential_reloads;         /* credentials files re-read (SIGHUP) */
        uint64_t rejected;                   /* OTLP partial success: profiles refused */
};

/* A finished profile to deliver. Paths are copied; the profile is only read. */
struct upload_job {
        const char *profile_path;
        const char *labels_path; /* NULL = none */
        /* the labels file was made for the uploads only: removed once every target it was
         * handed to has spooled it */
        int remove_labels;
        uint64_t from_s, until_s;
        const char *extra_tags; /* k=v,k=v for this profile only, or NULL */
        /* the process (split = process) or host the profile is of, copied; NULL = unknown (a
         * recovered file). Names its series and tags it: service/upload_series.h */
        const struct workload_identity *id;
        /* the host file: the processes its samples came from (copied; NULL: none known).
         * An OTLP upload grouped by service names each one's samples as its own resource; a
         * Pyroscope one, when they are of several services, spools each one's samples as its
         * own entry (a pprof request of its series; the rest under application) */
        const struct workload_identity *procs;
        unsigned n_procs;
};

struct uploader_opts {
        const struct upload_target_config *target; /* copied */
        const struct upload_config *cfg;           /* spool and retry settings, copied */
        const char *spool_dir;                     /* this target's directory */
        void *ctx;
        void (*log)(void *ctx, int level, const char *msg); /* level: enum log_level */
};

struct uploader;

/* Opens the spool (its leftovers counted), reads the credentials, starts the thread. 0 or
 * -errno; why says what was refused (spool directory, credentials file). */
int uploader_new(const struct uploader_opts *o, struct uploader **out, char *why, size_t why_len);
/* Queue a finished profile for each of the n uploaders (main thread; never blocks on
 * I/O). 0 or -ENOMEM (counted as a spool_error drop and logged). */
int uploader_add(struct uploader *const *u, unsigned n, const struct upload_job *j);
/* Re-read the target's credentials files (main thread, at SIGHUP; never blocks on I/O):
 * the uploader's thread reads them before its next attempt, which it makes at once. A file
 * now refused (missing, malformed, readable by others) is logged and the credentials in use
 * are kept. */
void uploader_reload_credentials(struct uploader *u);
/* Thread-safe snapshot of the counters. */
void uploader_get_counters(struct uploader *u, struct upload_counters *out);
const char *uploader_name(const struct uploader *u);
/* Spool everything queued, keep sending for at most grace_ms (the configured stop-grace at
 * exit, 0 at a reload), then stop (an upload in flight is cut off: its entry stays for the
 * next start) and free. The last counters go to *last (if not NULL). */
void uploader_stop(struct uploader *u, uint64_t grace_ms, struct upload_counters *last);

/* The delay before retry number `failures` (1 = first): min * 2^(failures-1) capped at
 * max, then scaled into [d/2, d] by rnd (uniform in [0, 1]). */
uint64_t upload_backoff_ms(unsigned failures, uint64_t min_ms, uint64_t max_ms, double rnd);

#endif
