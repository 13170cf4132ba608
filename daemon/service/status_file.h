/* SPDX-License-Identifier: MIT */
/*
 * status_file.h — the daemon's status file: its text format, encoded and parsed here, and
 * its atomic replacement (temporary file + rename, mode 0644, parent directory created 0755,
 * never through a symbolic link and never in a directory another user can write) so a reader
 * never sees half a file.
 *
 * Format: one record per line, "KIND key=value key=value ...\n"; values never contain
 * spaces, '=' or control characters (status_file_value), an empty string is "-". The first
 * line is the daemon record ("daemon pid=... state=... ..."), then one "target ..." line per
 * sampled process, then one "upload ..." line per upload target. Readers look fields up by key and
 * ignore keys they do not know. Never prints.
 */
#ifndef CTXPROF_STATUS_FILE_H
#define CTXPROF_STATUS_FILE_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#define STATUS_FILE_DEFAULT "/run/ctxprof/status"
#define STATUS_NAME_LEN     16  /* state, mode, split */
#define STATUS_COMM_LEN     64  /* a target's process name */
#define STATUS_FILE_LEN     256 /* a target's file (base name) */
#define STATUS_MAX_FIELDS   64  /* most key=value pairs a parsed record keeps */

#define STATUS_FILE_PERIOD_MS 2000 /* the daemon rewrites its status file this often */
#define STATUS_BOOT_LEN       40   /* boot id: a UUID and its NUL, rounded */

/* The daemon line. */
struct status_daemon {
        int pid;
        char state[STATUS_NAME_LEN]; /* "running", "stopped" */
        uint64_t started, updated;   /* wall clock, seconds since the epoch */
        /* who wrote it, so that a reader can tell a dead daemon (service/status_health.h):
         * the pid's start time (ticks after boot, /proc/PID/stat), this boot's id, and the
         * rewrite period */
        uint64_t pid_start;
        char boot_id[STATUS_BOOT_LEN];
        uint64_t period_ms;
        char mode[STATUS_NAME_LEN]; /* target mode name (sampling_names.h) */
        uint64_t samples, received, context_samples, lost, torn, threads;
        uint64_t filtered; /* samples the context filter ([sampling] filter) dropped */
        unsigned targets, map_entries;
        uint64_t processes_seen, files_written, files_deleted, chunks_written, bytes_written;
        char current_file[PATH_MAX + 8]; /* the host file; "" = none open */
        char split[STATUS_NAME_LEN];     /* "host", "process" */
        unsigned process_files;
        uint64_t overflow_samples, no_file_samples;
        uint64_t cap_eff; /* written in hex, as /proc/PID/status shows CapEff */
        /* samples that lost a new stack / label set / thread to a store's bound (all targets) */
        uint64_t refused_stacks, refused_labels, refused_threads;
        /* hostile target input refused (util/target_stats.h): files a target named that were
         * not opened, /proc lines over their cap */
        uint64_t refused_files, refused_lines;
        /* reads of a target's /proc/PID/maps put off (stack/maps_budget.h) */
        uint64_t maps_deferred;
        /* perf-map reads the perf-map budget or a user's share refused, and the bytes all
         * parsed perf maps hold now (stack/perf_map_budget.h) */
        uint64_t perf_map_refused, perf_map_bytes;
        /* reads of a pinned target refused: its pid went to another process (util/proc_pin.h) */
        uint64_t pid_recycled;
        /* modules registered (alive, or dead and not yet retired); registrations refused by
         * the registry's global or per-process bound */
        uint64_t modules, modules_refused;
        /* the library-load hook in use ("uprobe", "sys_exit") and the event bounds
         * (sampler_stats: events_limited, exec_events_limited, targets_full) */
        char load_hook[STATUS_NAME_LEN];
        uint64_t events_limited, exec_events_limited, targets_full;
        /* the parser helpers (util/parser_client.h): the system lane's pid (0: none
         * running), user lanes with a helper now, user lanes given to another owner, requests
         * not sent for a busy lane, helpers started again, requests past their deadline */
        int parser_pid;
        uint64_t parser_lanes, parser_evictions, parser_busy;
        uint64_t parser_restarts, parser_timeouts;
        /* target jobs past their deadline (abandoned), the targets they marked stuck and
         * those no longer stuck (sampler_stats: jobs_abandoned, targets_stuck,
         * targets_returned) */
        uint64_t jobs_abandoned, targets_stuck, targets_returned;
        uint64_t first_wait_skips; /* first-look waits not made: their budget was spent */
        /* mode context's asks (select_jobs_stats: examined, selected, abandoned, full) */
        uint64_t select_examined, select_selected, select_abandoned, select_full;
};

/* One "target" line: a sampled process. */
struct status_target {
        int pid;
        char comm[STATUS_COMM_LEN];
        uint64_t samples, context_samples;
        unsigned threads;
        int context_located;        /* "yes" / "no" */
        char file[STATUS_FILE_LEN]; /* its samples' file (base name); "" = none */
        /* its samples that lost a new stack / label set / thread to its share of a store */
        uint64_t stacks_refused, labels_refused, threads_refused;
        int stuck; /* "yes": a job on it passed its deadline (no more jobs, no context) */
};

/* One "upload" line: an upload target's state (service/uploader.h's names and counters). */
struct status_upload {
        char name[STATUS_COMM_LEN];
        char state[STATUS_NAME_LEN]; /* "ok", "retrying", "paused" */
        int http_status;             /* of the last answer, 0 = none */
        uint64_t spool_files, spool_bytes, delivered, dropped, pauses;
};

/* The text of a status file, grown as records are appended (free with status_text_free). */
struct status_text {
        char *p;
        size_t len, cap;
        int err; /* -ENOMEM once an append failed (the text is then incomplete) */
};

void status_text_daemon(struct status_text *t, const struct status_daemon *d);
void status_text_target(struct status_text *t, const struct status_target *tg);
void status_text_upload(struct status_text *t, const struct status_upload *up);
void status_text_free(struct status_text *t);

/* One parsed line: KIND and its key=value pairs, pointing into the line (which it edits). */
struct status_record {
        const char *kind;
        const char *key[STATUS_MAX_FIELDS], *val[STATUS_MAX_FIELDS];
        int n;
};

/* Split one line (modified in place) into a record. Tokens without '=' are skipped, pairs
 * past STATUS_MAX_FIELDS dropped. 0, or -EINVAL for a line with no KIND (blank). */
int status_record_parse(char *line, struct status_record *r);
/* The value of key, or NULL when the record has none. */
const char *status_record_get(const struct status_record *r, const char *key);
/* A parsed daemon / target record into its struct. 0; -EINVAL when r is another kind or a
 * value is malformed (a number with other characters, or too large); -ENOENT when a field is
 * missing (a truncated line). *out is then partly filled. */
int status_record_daemon(const struct status_record *r, struct status_daemon *out);
int status_record_target(const struct status_record *r, struct status_target *out);

/* Replace path with text[0..len). Its directory is opened as service/trusted_dir.h says
 * (created 0755; -EPERM when another user could write or redirect it), PATH.tmp is
 * created there without following a link and renamed over PATH. 0 or -errno. */
int status_file_write(const char *path, const char *text, size_t len);
/* Whether status_file_write can use path's directory (created if missing): 0, or -errno
 * (-EPERM: why says which directory and why). For a clear refusal at start. */
int status_file_check(const char *path, char *why, size_t why_len);
/* Copy s into dst (size len) with spaces, '=', control characters and non-ASCII replaced by
 * '_', so it can be a value; an empty s becomes "-". */
void status_file_value(char *dst, size_t len, const char *s);

#endif
