/* SPDX-License-Identifier: MIT */
/*
 * service/daemon.c — the daemon as an object: its configuration and selection (at start from
 * /proc, then at every exec the BPF program reports; mode context's asks answered off the
 * loop by service/select_jobs.c), the sampler, the recordings in the output directory (one for the
 * host, or one per process: recording_set.c; rotated, retained, recovered at start), the
 * uploaders, the status file and the metrics snapshot, all run from one event loop
 * (util/event_loop.h: the sample ring, a signalfd for SIGTERM/SIGINT/SIGHUP, a deadline
 * each). Reloads on SIGHUP and flushes on SIGTERM/SIGINT.
 * Never prints: every line goes to the command's printer (daemon_opts.print), filtered by
 * the configured log level; every library error becomes a log line, never a crash.
 */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "service/config.h"
#include "service/daemon.h"
#include "service/daemon_metrics.h"
#include "service/metrics_http.h"
#include "service/select_jobs.h"
#include "service/session.h"
#include "sink/engine_stats.h"
#include "sink/jfr_sink.h"
#include "service/output_dir.h"
#include "service/privileges.h"
#include "stack/symbolize.h"
#include "util/parser_client.h"
#include "util/parser_lanes.h"
#include "service/recording_set.h"
#include "engine/sample_rate.h"
#include "engine/sampler.h"
#include "stack/modules.h"
#include "stack/perf_map_budget.h"
#include "service/status_file.h"
#include "service/status_health.h"
#include "service/target_select.h"
#include "service/uploader.h"
#include "util/clock.h"
#include "util/event_loop.h"
#include "util/grow.h"
#include "util/proc_id.h"

/* the running processes at start and reload, examined from the loop in slices this long:
 * a drain's budget (engine/sampler_ingest.c, DRAIN_BUDGET_NS): the rings are drained between */
#define SCAN_SLICE_NS    20000000ull /* 20 ms */
#define SCAN_QUEUE_FIRST 1024
#define REAP_MARGIN_NS   1000000000ull /* modules dead this long before a writer's batch */
#define RETAIN_PERIOD_MS 30000

/* read by every thread that logs (uploaders, JFR writers), written by a reload */
static _Atomic int log_level = LOG_INFO;

/* the printer of every log line (the command's), set by daemon_start */
static daemon_print_fn printer;

static void vlog(int level, const char *fmt, va_list ap)
{
        char buf[1024];

        if (level > log_level || !printer)
                return;
        vsnprintf(buf, sizeof(buf), fmt, ap);
        printer(level, buf);
}

__attribute__((format(printf, 2, 3))) static void logm(int level, const char *fmt, ...)
{
        va_list ap;

        va_start(ap, fmt);
        vlog(level, fmt, ap);
        va_end(ap);
}

void daemon_log(int level, const char *fmt, ...)
{
        va_list ap;

        va_start(ap, fmt);
        vlog(level, fmt, ap);
        va_end(ap);
}

struct daemon {
        struct daemon_opts o;
        struct daemon_config cfg;
        struct target_select *sel;
        struct session *ss;            /* the sampler and the parser helper (service/session.h) */
        struct sampler *s;             /* the session's */
        struct recording_set *rs;      /* the open files; NULL between a reload's two halves */
        struct sample_sink cur;        /* rs's sink */
        struct target_stats rs_target; /* what rs's identity reads refused, across reloads */
        int dir_lock;                  /* output directory's writer lock (fd), or -errno */
        uint64_t files_deleted;
        struct recording_set_counters before; /* of the sets replaced by reloads */
        uint64_t started_wall;
        uint64_t pid_start;            /* ours, for status readers (status_health.h) */
        char boot_id[STATUS_BOOT_LEN]; /* "" when unknown */
        char host[64];
        struct metrics_server *metrics; /* [metrics] listen; NULL when off */
        struct daemon_metrics *dm;      /* the series it serves */
        uint64_t status_write_errors;
        unsigned map_entries; /* at the last status (counting walks the kernel map) */
        struct uploader *up[UPLOAD_TARGETS_MAX]; /* one per [upload] section */
        unsigned nup;
        struct select_jobs *asks; /* mode context: processes asked about, off the loop */
        /* the running processes still to examine (scan_proc), in slices (scan_slice) */
        pid_t *scanq;
        size_t nscan, scan_pos, scan_cap;
        unsigned scan_selected;
        struct event_loop *loop; /* signals, the rings, every deadline below */
        int dl_asks, dl_tick, dl_retain, dl_status, dl_metrics, dl_scan;
        int stop; /* SIGTERM/SIGINT, or a ring error */
};

/* What every parsed perf map holds now (the status file and metrics). */
static uint64_t perf_map_bytes_now(void)
{
        struct perf_map_budget_stats pb;

        perf_map_budget_get(&pb);
        return pb.bytes;
}

static const char *split_name(const struct daemon *d)
{
        return d->cfg.split == SPLIT_PROCESS ? "process" : "host";
}

static void rs_log(void *ctx, int level, const char *msg)
{
        (void)ctx;
        logm(level, "%s", msg);
}

static void rs_engine(void *ctx, struct jfr_sink_engine_counters *ec)
{
        struct daemon *d = ctx;

        engine_stats_get(d->s, ec);
}

static int rs_alive(void *ctx, pid_t pid)
{
        struct daemon *d = ctx;

        return sampler_is_target(d->s, pid);
}

/* A finished recording goes to every upload target (queued: the uploaders' threads spool
 * and send it), named and tagged by its process or host (service/upload_series.h). */
static void rs_finished(void *ctx, const struct recording_finished *f)
{
        struct daemon *d = ctx;
        struct upload_job j = {
            .profile_path = f->path,
            .labels_path = f->labels_path, /* the output directory's: copied, kept */
            .from_s = f->start_wall_s,
            .until_s = f->end_wall_s > f->start_wall_s ? f->end_wall_s : f->start_wall_s + 1,
            .id = f->id,
            .procs = f->procs, /* the host file's processes: OTLP per service */
            .n_procs = f->n_procs,
        };

        if (!d->nup)
                return;
        uploader_add(d->up, d->nup, &j);
}

/* An uploader per [upload] section, each with its spool directory (spool-directory/NAME,
 * default DIRECTORY/spool/NAME). 0 or -1 (logged). */
static int start_uploads(struct daemon *d, const struct daemon_config *c)
{
        char dir[PATH_MAX + UPLOAD_NAME_LEN + 8], why[PATH_MAX + 256];
        unsigned i;
        int err;

        for (i = 0; i < c->upload.n; i++) {
                const struct upload_target_config *t = &c->upload.t[i];
                struct uploader_opts o = {
                    .target = t, .cfg = &c->upload, .spool_dir = dir, .ctx = d, .log = rs_log};

                if (c->upload.spool_dir[0])
                        snprintf(dir, sizeof(dir), "%s/%s", c->upload.spool_dir, t->name);
                else
                        snprintf(dir, sizeof(dir), "%s/spool/%s", c->directory, t->name);
                err = uploader_new(&o, &d->up[d->nup], why, sizeof(why));
                if (err) {
                        logm(LOG_ERROR, "upload %s: %s", t->name, why[0] ? why : strerror(-err));
                        return -1;
                }
                d->nup++;
                logm(LOG_INFO, "upload %s: %s (%s), spool %s", t->name, t->url,
                     t->format == UPLOAD_FORMAT_OTLP ? "otlp" : "jfr", dir);
        }
        return 0;
}

static void log_upload_counters(const char *name, const struct upload_counters *cp)
{
        const struct upload_counters c = *cp;
        char fail[256] = "", drop[256] = "";
        size_t fl = 0, dl = 0;
        int i;

        for (i = 1; i < UPLOAD_OUTCOME_N; i++)
                if (c.failures[i] && fl < sizeof(fail))
                        fl += (size_t)snprintf(fail + fl, sizeof(fail) - fl, " %s=%llu",
                                               upload_outcome_name(i),
                                               (unsigned long long)c.failures[i]);
        for (i = 0; i < UPLOAD_DROP_N; i++)
                if (c.dropped[i] && dl < sizeof(drop))
                        dl +=
                            (size_t)snprintf(drop + dl, sizeof(drop) - dl, " %s=%llu",
                                             upload_drop_name(i), (unsigned long long)c.dropped[i]);
        logm(LOG_INFO,
             "upload %s: spooled %llu, delivered %llu (%llu bytes sent), failed attempts:%s, "
             "dropped:%s, left in the spool %llu (%llu bytes)",
             name, (unsigned long long)c.spooled, (unsigned long long)c.uploads_ok,
             (unsigned long long)c.bytes_sent, fl ? fail : " 0", dl ? drop : " 0",
             (unsigned long long)c.spool_files, (unsigned long long)c.spool_bytes);
}

/* Stop every uploader: what they hold stays in their spools for the next start. */
static void stop_uploads(struct daemon *d, uint64_t grace_ms)
{
        while (d->nup) {
                struct uploader *u = d->up[--d->nup];
                struct upload_counters c;
                char name[UPLOAD_NAME_LEN];

                snprintf(name, sizeof(name), "%s", uploader_name(u));
                uploader_stop(u, grace_ms, &c);
                log_upload_counters(name, &c);
        }
}

/* The output and status directories of c: refused (logged, -1) when another user could
 * write them or redirect the daemon's writes (service/trusted_dir.h), so that the daemon
 * stops at start, or a reload keeps the running configuration, instead of losing samples. */
static int check_dirs(const struct daemon_config *c)
{
        char why[PATH_MAX + 128];
        int fd = output_dir_open(c->directory, why, sizeof(why));

        if (fd < 0) {
                logm(LOG_ERROR, "output directory %s: %s", c->directory,
                     fd == -EPERM && why[0] ? why : strerror(-fd));
                return -1;
        }
        close(fd);
        fd = status_file_check(c->status_file, why, sizeof(why));
        if (fd < 0) {
                logm(LOG_ERROR, "status file %s: %s", c->status_file,
                     fd == -EPERM && why[0] ? why : strerror(-fd));
                return -1;
        }
        return 0;
}

/* A recording set for the current output settings; split=host opens its file. 0 or -errno
 * (logged); without memory d->rs stays NULL and samples are dropped. */
static int open_output(struct daemon *d)
{
        struct recording_set_opts o = {
            .cfg = &d->cfg,
            .host = d->host,
            .modules = sampler_modules(d->s),
            .ctx = d,
            .log = rs_log,
            .engine = rs_engine,
            .alive = rs_alive,
            .finished = rs_finished,
            .target = &d->rs_target,
        };

        d->rs = recording_set_new(&o);
        if (!d->rs) {
                logm(LOG_ERROR, "out of memory");
                return -ENOMEM;
        }
        d->cur = recording_set_as_sink(d->rs);
        return recording_set_start(d->rs);
}

/* Finish every file and drop the set (its counters go to d->before). */
static int close_output(struct daemon *d)
{
        struct recording_set_counters c;
        int err;

        if (!d->rs)
                return 0;
        d->cur = (struct sample_sink){0};
        err = recording_set_finish(d->rs);
        recording_set_get_counters(d->rs, &c);
        d->before.files_written += c.files_written;
        d->before.chunks_written += c.chunks_written;
        d->before.bytes_written += c.bytes_written;
        d->before.samples_no_file += c.samples_no_file;
        d->before.samples_overflow += c.samples_overflow;
        recording_set_free(d->rs);
        d->rs = NULL;
        return err;
}

static void retain(struct daemon *d)
{
        struct output_retain_result r;
        int err = output_dir_retain(d->cfg.directory, d->cfg.retain_age_ms, d->cfg.retain_size,
                                    time(NULL), &r);

        if (err) {
                logm(LOG_WARNING, "retention: cannot read %s: %s", d->cfg.directory,
                     strerror(-err));
                return;
        }
        d->files_deleted += r.deleted;
        if (r.deleted)
                logm(LOG_INFO, "retention: deleted %u files (%llu bytes), %llu bytes kept",
                     r.deleted, (unsigned long long)r.bytes_deleted,
                     (unsigned long long)r.bytes_kept);
        if (r.last_error)
                logm(LOG_WARNING, "retention: unlink failed: %s", strerror(-r.last_error));
}

/* The UTC start time in a recording's name (...-YYYYMMDDTHHMMSSZ[-N].jfr), 0 if none. */
static uint64_t name_start(const char *name)
{
        struct tm tm;
        size_t i, n = strlen(name);

        for (i = 0; i + 16 <= n; i++) {
                memset(&tm, 0, sizeof(tm));
                if (name[i + 8] == 'T' && name[i + 15] == 'Z' &&
                    strptime(name + i, "%Y%m%dT%H%M%SZ", &tm) == name + i + 16)
                        return (uint64_t)timegm(&tm);
        }
        return 0;
}

/* A recording recovered at start (in progress at a crash) is delivered like a finished one,
 * with the labels snapshot the previous daemon left beside it. */
static void recovered_upload(void *ctx, const char *name)
{
        struct daemon *d = ctx;
        char path[PATH_MAX + 256], labels[PATH_MAX + 256 + 16];
        struct stat st;
        struct upload_job j = {.profile_path = path};

        if (!d->nup)
                return;
        snprintf(path, sizeof(path), "%s/%s", d->cfg.directory, name);
        snprintf(labels, sizeof(labels), "%s.labels.pb", path); /* renamed by the recovery */
        if (!stat(labels, &st))
                j.labels_path = labels;
        j.until_s = !stat(path, &st) ? (uint64_t)st.st_mtime : (uint64_t)time(NULL);
        j.from_s = name_start(name);
        if (!j.from_s || j.from_s >= j.until_s)
                j.from_s = j.until_s - 1;
        uploader_add(d->up, d->nup, &j);
}

/* Recordings a previous daemon left in progress (crash, SIGKILL) become readable files,
 * unless another daemon writes to the same directory (then they may be its live files). The
 * directory's lock stays held for this daemon's life (d->dir_lock). */
static void recover(struct daemon *d)
{
        struct output_recover_result r;

        d->dir_lock = output_dir_lock(d->cfg.directory);
        if (d->dir_lock == -EWOULDBLOCK) {
                logm(LOG_WARNING,
                     "another ctxprof daemon writes to %s: its recordings in progress are left "
                     "alone (no recovery)",
                     d->cfg.directory);
                return;
        }
        if (d->dir_lock < 0) {
                logm(LOG_WARNING, "cannot lock %s/.ctxprof.lock: %s: no recovery", d->cfg.directory,
                     strerror(-d->dir_lock));
                return;
        }
        if (output_dir_recover_each(d->cfg.directory, &r, recovered_upload, d))
                return;
        if (r.recovered || r.removed)
                logm(LOG_WARNING,
                     "recovered %u recordings left in progress (%llu bytes of partial chunks "
                     "cut), removed %u without a complete chunk",
                     r.recovered, (unsigned long long)r.bytes_trimmed, r.removed);
        if (r.last_error)
                logm(LOG_WARNING, "recovering a recording left in progress failed: %s",
                     strerror(-r.last_error));
}

static void add_target(struct daemon *d, pid_t pid, const char *why)
{
        int err = sampler_add_target(d->s, pid);

        if (err == -ESRCH)
                return;
        if (err)
                logm(LOG_WARNING, "cannot sample process %d: %s", (int)pid, strerror(-err));
        else
                logm(LOG_DEBUG, "sampling process %d (%s)", (int)pid, why);
}

/* Mode context: pid is asked about off the loop (select_jobs.h); watch: an exec. */
static void ask(struct daemon *d, pid_t pid, int watch)
{
        if (select_jobs_ask(d->asks, pid, watch, mono_ns()) == -ENOSPC)
                logm(LOG_DEBUG, "%d processes asked about already: process %d not watched",
                     SELECT_ASKS_MAX, (int)pid);
}

/* Called by the sampler for every exec (see sampler_opts.exec_filter). */
static int exec_filter(void *ctx, pid_t pid, const char *comm)
{
        struct daemon *d = ctx;
        int m = target_select_match(d->sel, pid, comm);

        if (m == TARGET_SELECT_ASK) {
                ask(d, pid, 1);
                return 0;
        }
        if (m > 0)
                logm(LOG_DEBUG, "exec: process %d (%s) selected", (int)pid, comm);
        return m > 0;
}

/* An ask's answer (select_jobs.h): a process that publishes is sampled; one that does not is
 * not (a reload's new selection). */
static void asked(void *ctx, pid_t pid, int publishes)
{
        struct daemon *d = ctx;

        if (publishes && !sampler_is_target(d->s, pid))
                add_target(d, pid, "publishes context");
        else if (!publishes && sampler_is_target(d->s, pid))
                sampler_remove_target(d->s, pid);
}

/* Every running process, against the current selection. */
/* Cgroup selectors are also tested by the kernel at each sample, so a process that moves
 * into a selected cgroup after its exec (systemd, container runtimes) is sampled too. */
static void cgroups_to_kernel(struct daemon *d)
{
        const char *const *paths;
        unsigned n = target_select_cgroups(d->sel, &paths);
        int got = sampler_set_cgroups(d->s, paths, n);

        if (got < 0)
                logm(LOG_WARNING, "cgroup selectors are checked at exec only: %s", strerror(-got));
        else if ((unsigned)got < n)
                logm(LOG_WARNING,
                     "%u of %u cgroup selectors are not cgroups yet (or past %d): those are "
                     "checked at exec only",
                     n - (unsigned)got, n, CTXPROF_MAX_CGROUPS);
}

/* One running process against the current selection: made a target, asked again soon, or
 * (after a reload) dropped. */
static void scan_one(struct daemon *d, pid_t pid)
{
        int m = target_select_match(d->sel, pid, NULL);

        if (m == TARGET_SELECT_ASK) {
                ask(d, pid, 0);
        } else if (m == 1 && !sampler_is_target(d->s, pid)) {
                add_target(d, pid, "running");
                d->scan_selected++;
        } else if (m != 1 && sampler_is_target(d->s, pid)) {
                sampler_remove_target(d->s, pid);
        }
}

/* Every running process is listed now and examined in slices of SCAN_SLICE_NS from the loop
 * (scan_slice): with a thousand processes the first status and the first drain waited 13.7 s
 * for all of them when mode context read their ELF files on the loop (now select_jobs.c). */
static void scan_proc(struct daemon *d)
{
        struct dirent *e;
        DIR *dp;

        cgroups_to_kernel(d);
        dp = opendir("/proc");
        d->nscan = d->scan_pos = 0;
        d->scan_selected = 0;
        if (!dp) {
                logm(LOG_ERROR, "cannot read /proc: %s", strerror(errno));
                return;
        }
        while ((e = readdir(dp))) {
                pid_t pid = proc_id(e->d_name);

                if (!pid)
                        continue;
                if (grow_array((void **)&d->scanq, &d->scan_cap, sizeof(*d->scanq), d->nscan + 1,
                               SCAN_QUEUE_FIRST)) {
                        logm(LOG_ERROR,
                             "no memory to list the running processes: %zu of them "
                             "examined, the others at their next exec",
                             d->nscan);
                        break;
                }
                d->scanq[d->nscan++] = (pid_t)pid;
        }
        closedir(dp);
        logm(LOG_DEBUG, "%zu running processes to examine", d->nscan);
}

/* Whether the scan may examine one more process now. */
static int scan_room(const struct daemon *d)
{
        return target_select_mode(d->sel) != TARGET_MODE_CONTEXT || select_jobs_room(d->asks);
}

/* A slice of the scan: processes examined until SCAN_SLICE_NS has passed. */
static void scan_slice(struct daemon *d)
{
        uint64_t end = mono_ns() + SCAN_SLICE_NS;

        /* mode context: each one is a job's ask, as many as fit (the rest when jobs end) */
        while (d->scan_pos < d->nscan && mono_ns() < end && scan_room(d))
                scan_one(d, d->scanq[d->scan_pos++]);
        if (d->scan_pos == d->nscan && d->nscan) {
                if (target_select_mode(d->sel) == TARGET_MODE_CONTEXT)
                        logm(LOG_INFO,
                             "%zu running processes asked about: each one is sampled "
                             "once it is found to publish context",
                             d->nscan);
                else
                        logm(LOG_INFO, "%u running processes selected", d->scan_selected);
                d->nscan = d->scan_pos = 0;
        }
}

struct status_ctx {
        struct status_text *t;
        struct daemon *d;
};

static void status_target(void *ctx, const struct sampler_target *t)
{
        struct status_ctx *sc = ctx;
        struct status_target st = {
            .pid = (int)t->pid,
            .samples = t->samples,
            .context_samples = t->with_context,
            .stacks_refused = t->stacks_refused,
            .labels_refused = t->labels_refused,
            .threads_refused = t->threads_refused,
            .threads = t->threads,
            .context_located = t->context_located,
            .stuck = t->stuck,
        };
        const char *f = NULL, *slash;

        snprintf(st.comm, sizeof(st.comm), "%s", t->name ? t->name : "");
        /* The file its samples go to now: the host file, or with split=process its own ("-":
         * none open now, or past split-max-open, when they go to the host file) */
        if (sc->d->rs)
                f = recording_set_file(sc->d->rs, sc->d->cfg.split == SPLIT_PROCESS ? t->pid : 0);
        slash = f ? strrchr(f, '/') : NULL;
        snprintf(st.file, sizeof(st.file), "%s", slash ? slash + 1 : "");
        status_text_target(sc->t, &st);
}

/* The output counters of this run: the current set's and those of the sets reloads
 * replaced. */
static void output_counters(struct daemon *d, struct recording_set_counters *rc)
{
        *rc = (struct recording_set_counters){0};
        if (d->rs)
                recording_set_get_counters(d->rs, rc);
        rc->files_written += d->before.files_written;
        rc->chunks_written += d->before.chunks_written;
        rc->bytes_written += d->before.bytes_written;
        rc->samples_overflow += d->before.samples_overflow;
        rc->samples_no_file += d->before.samples_no_file;
}

/* The sampler's counters, with what the target selector's locator refused. */
static void daemon_stats(struct daemon *d, struct sampler_stats *st)
{
        sampler_get_stats(d->s, st);
        struct select_jobs_stats ss;

        target_select_target_stats(d->sel, &st->target);
        target_stats_add(&st->target, &d->rs_target);
        select_jobs_get_stats(d->asks, &ss);
        target_stats_add(&st->target, &ss.target);
}

/* The daemon's record of the status file: its counters, those of the sets reloads replaced
 * included. */
static void status_daemon(struct daemon *d, const char *state, struct status_daemon *sd)
{
        struct sampler_stats st;
        struct recording_set_counters rc;
        struct parser_stats ps;
        struct select_jobs_stats ss;
        const char *cur = d->rs ? recording_set_file(d->rs, 0) : NULL;

        daemon_stats(d, &st);
        output_counters(d, &rc);
        parser_client_stats(session_parser(d->ss), &ps);
        select_jobs_get_stats(d->asks, &ss);
        *sd = (struct status_daemon){
            .pid = (int)getpid(),
            .started = d->started_wall,
            .updated = (uint64_t)time(NULL),
            .pid_start = d->pid_start,
            .period_ms = d->cfg.status_period_ms,
            .samples = st.samples,
            .received = st.received,
            .context_samples = st.with_context,
            .filtered = st.filtered,
            .lost = st.lost,
            .torn = st.ctx.torn_spans,
            .threads = st.threads,
            .targets = sampler_live_targets(d->s),
            .map_entries = d->map_entries = sampler_map_entries(d->s),
            .processes_seen = st.processes,
            .files_written = rc.files_written,
            .files_deleted = d->files_deleted,
            .chunks_written = rc.chunks_written,
            .bytes_written = rc.bytes_written,
            .process_files = rc.open_process_files,
            .overflow_samples = rc.samples_overflow,
            .no_file_samples = rc.samples_no_file,
            .cap_eff = privileges_effective(),
            .parser_pid = (int)parser_client_pid(session_parser(d->ss)),
            .parser_lanes = ps.lanes,
            .parser_evictions = ps.evictions,
            .parser_busy = ps.busy,
            .parser_restarts = ps.restarts,
            .parser_timeouts = ps.timeouts,
            .refused_stacks = st.refused_stacks,
            .refused_labels = st.refused_labels,
            .refused_threads = st.refused_threads,
            .refused_files = st.target.no_mapping + st.target.not_regular + st.target.mismatch +
                             st.target.unresolved + st.target.open_failed + st.target.not_owner +
                             st.target.on_fuse,
            .refused_lines = st.target.lines_too_long,
            .maps_deferred = st.target.maps_deferred,
            .perf_map_refused = st.target.perf_map_budget,
            .perf_map_bytes = perf_map_bytes_now(),
            .pid_recycled = st.target.pid_recycled,
            .modules = st.modules.live,
            .modules_refused = st.modules.full + st.modules.target_full,
            .events_limited = st.events_limited,
            .exec_events_limited = st.exec_events_limited,
            .targets_full = st.targets_full,
            .jobs_abandoned = st.jobs_abandoned,
            .targets_stuck = st.targets_stuck,
            .targets_returned = st.targets_returned,
            .first_wait_skips = st.first_wait_skips,
            .select_examined = ss.examined,
            .select_selected = ss.selected,
            .select_abandoned = ss.abandoned,
            .select_full = ss.full,
        };
        snprintf(sd->load_hook, sizeof(sd->load_hook), "%s", st.hook.name ? st.hook.name : "none");
        snprintf(sd->state, sizeof(sd->state), "%s", state);
        snprintf(sd->boot_id, sizeof(sd->boot_id), "%s", d->boot_id);
        snprintf(sd->mode, sizeof(sd->mode), "%s",
                 sampling_name(SAMPLING_NAMES_MODE, d->cfg.mode % 3));
        snprintf(sd->current_file, sizeof(sd->current_file), "%s", cur ? cur : "");
        snprintf(sd->split, sizeof(sd->split), "%s", split_name(d));
}

/* One "upload" line per target: a paused one (access denied) shows here. */
static void status_uploads(struct daemon *d, struct status_text *t)
{
        for (unsigned i = 0; i < d->nup; i++) {
                struct upload_counters c;
                struct status_upload su = {0};

                uploader_get_counters(d->up[i], &c);
                snprintf(su.name, sizeof(su.name), "%s", uploader_name(d->up[i]));
                snprintf(su.state, sizeof(su.state), "%s", upload_state_name(c.state));
                su.http_status = (int)c.last_http_status;
                su.spool_files = c.spool_files;
                su.spool_bytes = c.spool_bytes;
                su.delivered = c.uploads_ok;
                for (int k = 0; k < UPLOAD_DROP_N; k++)
                        su.dropped += c.dropped[k];
                su.pauses = c.pauses;
                status_text_upload(t, &su);
        }
}

static void write_status(struct daemon *d, const char *state)
{
        struct status_text t = {0};
        struct status_ctx sc = {&t, d};
        struct status_daemon sd;
        int err;

        status_daemon(d, state, &sd);
        status_text_daemon(&t, &sd);
        sampler_foreach_target(d->s, status_target, &sc);
        status_uploads(d, &t);
        if (t.err) {
                logm(LOG_WARNING, "status: out of memory");
                status_text_free(&t);
                return;
        }
        err = status_file_write(d->cfg.status_file, t.p, t.len);
        d->status_write_errors += err != 0;
        if (err)
                logm(LOG_WARNING, "cannot write status file %s: %s", d->cfg.status_file,
                     strerror(-err));
        status_text_free(&t);
}

/* The metrics endpoint's view of the daemon (served from another thread). */
static void publish_metrics(struct daemon *d)
{
        struct daemon_metrics_snapshot ms = {
            .targets = sampler_live_targets(d->s),
            .map_entries = d->map_entries,
            .files_deleted = d->files_deleted,
            .status_write_errors = d->status_write_errors,
            .started = d->started_wall,
            .updated = (uint64_t)time(NULL),
        };

        if (!d->dm)
                return;
        daemon_stats(d, &ms.st);
        output_counters(d, &ms.rc);
        parser_client_stats(session_parser(d->ss), &ms.parser);
        symbolize_parser_failures(&ms.sym_retries, &ms.sym_refused);
        ms.perf_map_bytes = perf_map_bytes_now();
        select_jobs_get_stats(d->asks, &ms.select);
        for (unsigned i = 0; i < d->nup && i < UPLOAD_TARGETS_MAX; i++) {
                snprintf(ms.up[i].name, sizeof(ms.up[i].name), "%s", uploader_name(d->up[i]));
                uploader_get_counters(d->up[i], &ms.up[i].c);
                ms.nup = i + 1;
        }
        daemon_metrics_publish(d->dm, &ms);
}

/* [metrics] listen: bound at start (a taken port, a bad or remote address stop the daemon,
 * exit 1), before the capabilities are dropped (ports below 1024). 0 or -1 (logged). */
static int open_metrics(struct daemon *d)
{
        const char *l = d->cfg.metrics_listen;
        int err;

        if (!l[0])
                return 0;
        err = metrics_server_new(l, d->cfg.metrics_allow_remote, &d->metrics);
        if (err == -EPERM)
                logm(LOG_ERROR,
                     "[metrics] listen = %s is not a loopback address: set allow-remote = yes "
                     "to serve the metrics beyond this host",
                     l);
        else if (err)
                logm(LOG_ERROR, "[metrics] listen = %s: %s%s", l, strerror(-err),
                     err == -EADDRINUSE ? " (another process listens there)" : "");
        if (err)
                return -1;
        d->dm = daemon_metrics_new();
        if (!d->dm || metrics_server_add(d->metrics, daemon_metrics_collect, d->dm)) {
                logm(LOG_ERROR, "out of memory");
                return -1;
        }
        return 0;
}

/* Serve them: after the capability drop, so that its thread holds none of the dropped. */
static int start_metrics(struct daemon *d)
{
        const char *l = d->cfg.metrics_listen; /* HOST:PORT (parsed: it has a ':') */
        int err;

        if (!d->metrics)
                return 0;
        publish_metrics(d);
        err = metrics_server_start(d->metrics);
        if (err) {
                logm(LOG_ERROR, "[metrics] cannot serve %s: %s", l, strerror(-err));
                return -1;
        }
        /* the port the kernel chose for port 0 */
        logm(LOG_INFO, "metrics: serving http://%.*s:%u%s", (int)(strrchr(l, ':') - l), l,
             metrics_server_port(d->metrics), METRICS_PATH);
        return 0;
}

/* The configuration (defaults, file, flags) from the command. 0 or -1 (logged). */
static int build_config(struct daemon *d, struct daemon_config *c)
{
        return d->o.build_config(d->o.ctx, c);
}

static void reload(struct daemon *d)
{
        struct daemon_config nc;
        struct target_select *ns;

        logm(LOG_INFO, "SIGHUP: reloading %s",
             d->o.config_path ? d->o.config_path : "(flags only)");
        if (build_config(d, &nc) || check_dirs(&nc)) {
                logm(LOG_ERROR, "reload failed: keeping the running configuration");
                return;
        }
        if (nc.frequency != d->cfg.frequency || nc.event != d->cfg.event ||
            nc.call_graph != d->cfg.call_graph || nc.offcpu_min_us != d->cfg.offcpu_min_us ||
            nc.ring_size != d->cfg.ring_size)
                logm(LOG_WARNING, "reload: [sampling] changes take effect at the next start");
        nc.frequency = d->cfg.frequency;
        nc.event = d->cfg.event;
        nc.call_graph = d->cfg.call_graph;
        if (strcmp(nc.metrics_listen, d->cfg.metrics_listen) ||
            nc.metrics_allow_remote != d->cfg.metrics_allow_remote)
                logm(LOG_WARNING, "reload: [metrics] changes take effect at the next start");
        memcpy(nc.metrics_listen, d->cfg.metrics_listen, sizeof(nc.metrics_listen));
        nc.metrics_allow_remote = d->cfg.metrics_allow_remote;
        nc.offcpu_min_us = d->cfg.offcpu_min_us;
        nc.ring_size = d->cfg.ring_size;
        ns = target_select_new(&nc);
        if (!ns) {
                logm(LOG_ERROR, "reload failed: out of memory");
                return;
        }
        /* New files with the new output settings (the old ones are finished and renamed). */
        close_output(d);
        if (memcmp(&nc.upload, &d->cfg.upload, sizeof(nc.upload)) ||
            strcmp(nc.directory, d->cfg.directory)) {
                /* the finished files were queued to the old uploaders: they spool them */
                stop_uploads(d, 0);
                if (start_uploads(d, &nc))
                        logm(LOG_ERROR, "reload: uploads are off until the next reload");
        } else {
                /* the same text may name rotated secrets: re-read them, the spools stay */
                for (unsigned i = 0; i < d->nup; i++)
                        uploader_reload_credentials(d->up[i]);
        }
        target_select_free(d->sel);
        d->sel = ns;
        select_jobs_clear(d->asks);
        d->cfg = nc;
        log_level = nc.log_level;
        if (open_output(d))
                logm(LOG_ERROR, "reload: no output file: samples are dropped until the output "
                                "can be opened again");
        scan_proc(d);
        write_status(d, "running");
        logm(LOG_INFO, "configuration reloaded");
}

/* A signal from the loop's signalfd: SIGTERM/SIGINT stop, SIGHUP reloads. */
static void on_signal(void *ctx, int sig)
{
        struct daemon *d = ctx;

        if (sig == SIGHUP)
                reload(d);
        else
                d->stop = 1;
}

/* Start stage, part 1: the configuration, the process-wide settings and the selection. 0,
 * or the exit status (logged). */
static int start_config(struct daemon *d)
{
        sigset_t sigs;
        int err;

        /* Blocked before any thread starts (they inherit the mask): SIGTERM, SIGINT and
         * SIGHUP reach only the loop's signalfd. One that arrives while starting is served
         * once the loop runs. */
        sigemptyset(&sigs);
        sigaddset(&sigs, SIGINT);
        sigaddset(&sigs, SIGTERM);
        sigaddset(&sigs, SIGHUP);
        err = event_loop_new(&d->loop);
        if (!err)
                err = event_loop_add_signals(d->loop, &sigs, on_signal, d);
        if (err) {
                logm(LOG_ERROR, "event loop: %s", strerror(-err));
                return 1;
        }
        if (build_config(d, &d->cfg))
                return 2;
        log_level = d->cfg.log_level;
        umask(027);
        if (check_dirs(&d->cfg) || open_metrics(d))
                return 1;
        if (gethostname(d->host, sizeof(d->host) - 1))
                snprintf(d->host, sizeof(d->host), "host");
        d->started_wall = (uint64_t)time(NULL);
        if (status_health_pid_start(getpid(), &d->pid_start) ||
            status_health_boot_id(d->boot_id, sizeof(d->boot_id)))
                logm(LOG_WARNING, "cannot read /proc/self/stat or the boot id: `ctxprof status` "
                                  "will not tell a reused pid from this daemon");
        d->sel = target_select_new(&d->cfg);
        if (!d->sel) {
                logm(LOG_ERROR, "out of memory");
                return 1;
        }
        err = select_jobs_new(&d->asks);
        if (err) {
                logm(LOG_ERROR, "cannot start the selection jobs: %s", strerror(-err));
                return 1;
        }
        return 0;
}

/* Which library-load hook runs, and why when it is the host-wide fallback. */
static void log_load_hook(struct daemon *d)
{
        struct sampler_stats st;

        sampler_get_stats(d->s, &st);
        logm(st.hook.kind == LOAD_HOOK_SYS_EXIT ? LOG_WARNING : LOG_INFO,
             "library loads seen by %s%s%s%s", st.hook.name, st.hook.why[0] ? " (" : "",
             st.hook.why, st.hook.why[0] ? "): every syscall on the host pays for it" : "");
}

/* Start stage, part 2: the sampler, the output directory (recovered), the signals and the
 * privileges dropped; then the running processes are selected. 0 or -1 (logged). */
/* The dwarf-copy unwinder (and dwarf-check, which runs it) parses each target's .eh_frame
 * and .debug_frame with libdwfl in this process: not in the parser helper. The daemon does
 * that only where it keeps root by request (--no-drop-privileges); else it does not start,
 * saying why (call-graph = dwarf has the tables parsed by the helper). */
static int root_parsing_refused(struct daemon *d, int call_graph)
{
        if ((call_graph != SAMPLER_CG_DWARF_COPY && call_graph != SAMPLER_CG_DWARF_CHECK) ||
            d->o.no_drop)
                return 0;
        logm(LOG_ERROR,
             "call-graph = %s would parse the targets' .eh_frame and .debug_frame with libdwfl "
             "in the daemon, as root, not in the parser helper: use call-graph = dwarf (the "
             "helper builds the tables), or --no-drop-privileges to accept it",
             sampling_name(SAMPLING_NAMES_CALLGRAPH, call_graph));
        return 1;
}

static int loop_setup(struct daemon *d);

static int start_sampling(struct daemon *d)
{
        struct sampler_opts so = {
            .freq = d->cfg.frequency,
            .event = d->cfg.event,
            .call_graph = d->cfg.call_graph,
            .offcpu_min_ns = d->cfg.offcpu_min_us ? d->cfg.offcpu_min_us * NS_PER_US : 1,
            .ring_bytes = (size_t)d->cfg.ring_size,
            .kernel_stacks = 1,
            .follow_children = 1,
            .exec_filter = exec_filter,
            .exec_filter_ctx = d,
        };
        struct session_opts sopt = {.sink = {.ctx = &d->cur, .sample = sample_sink_forward},
                                    .parser_user = d->cfg.parser_user};
        struct session_error e;
        int err;

        if (d->cfg.filter[0]) {
                /* checked by config_set: the error is not reached */
                if (context_filter_add(&so.filter, d->cfg.filter, NULL))
                        return -1;
                logm(LOG_INFO, "context filter: recording only samples matching %s", d->cfg.filter);
        }
        if (root_parsing_refused(d, so.call_graph))
                return -1;
        if (so.freq > sample_rate_cap(so.call_graph, 0)) {
                /* the rule is in engine/sample_rate.h */
                so.freq = sample_rate_cap(so.call_graph, 0);
                logm(LOG_WARNING,
                     "frequency = %u is more than one consumer can carry on this host with "
                     "call-graph = %s: sampling at %u Hz",
                     d->cfg.frequency, so.call_graph ? "dwarf" : "fp", so.freq);
        }
        /* Target ELF/DWARF is parsed by an unprivileged helper (docs/daemon.md, "Trust
         * boundary"), started while we still hold what it needs to give up root. */
        sopt.sampler = so;
        err = session_new(&sopt, &d->ss, &e);
        if (err && e.step == SESSION_STEP_PARSER) {
                logm(LOG_ERROR, "starting the parser helper as user %s failed: %s",
                     d->cfg.parser_user[0] ? d->cfg.parser_user : PARSER_USER_DEFAULT, e.why);
                return -1;
        }
        if (err) {
                logm(LOG_ERROR, "starting the sampler failed at stage %d: %s%s", (int)e.stage,
                     strerror(-err),
                     err == -EPERM || err == -EACCES
                         ? " (needs root or CAP_BPF, CAP_PERFMON, CAP_SYS_PTRACE)"
                         : "");
                return -1;
        }
        d->s = session_sampler(d->ss);
        if (session_debuginfod(d->ss) == 0)
                logm(LOG_INFO, "not using DEBUGINFOD_URLS (CTXPROF_DEBUGINFOD=1 allows it)");
        logm(LOG_INFO,
             "parser helpers: pid %d (root's files); up to %d more, one per owner of other "
             "files and targets' bytes, started when needed",
             (int)parser_client_pid(session_parser(d->ss)), PARSER_LANES_MAX);
        if (so.call_graph == SAMPLER_CG_DWARF_COPY || so.call_graph == SAMPLER_CG_DWARF_CHECK)
                logm(LOG_WARNING,
                     "call-graph = %s unwinds copied stacks with libdwfl in the daemon: the "
                     "targets' .eh_frame and .debug_frame are parsed here, as root, not by the "
                     "parser helper (--no-drop-privileges)",
                     sampling_name(SAMPLING_NAMES_CALLGRAPH, so.call_graph));
        /* Capabilities, the bounding set and no_new_privs are per thread: drop them while
         * this is the only thread, so that every thread created later (the JFR writers, the
         * metrics and upload threads) inherits the reduced set. The BPF objects and perf
         * events are loaded and open by now; what remains needs only the kept set. */
        if (!d->o.no_drop) {
                /* A uprobe perf event needs CAP_SYS_ADMIN here: hook the loaders in use now,
                 * for every process, instead of each new target's (engine/load_hook.h). */
                err = session_hook_loaders(d->ss);
                if (err)
                        logm(LOG_WARNING, "library-load hook for every process failed: %s",
                             strerror(-err));
                err = session_drop_privileges(d->ss, 0);
                if (err) {
                        logm(LOG_ERROR, "dropping capabilities failed: %s", strerror(-err));
                        return -1;
                }
                logm(LOG_INFO, "capabilities dropped (CapEff %llx), no_new_privs set",
                     (unsigned long long)privileges_effective());
        }
        /* the uploader threads, after the drop; before recovery, which hands them its files */
        if (start_uploads(d, &d->cfg))
                return -1;
        recover(d);
        if (open_output(d))
                return -1;
        if (start_metrics(d))
                return -1;
        scan_proc(d);
        if (loop_setup(d)) /* the loop drains from here on */
                return -1;
        write_status(d, "running");
        retain(d);
        logm(LOG_INFO, "started: pid %d, %u Hz, mode %s, output %s, split %s", (int)getpid(),
             d->cfg.frequency, sampling_name(SAMPLING_NAMES_MODE, d->cfg.mode), d->cfg.directory,
             split_name(d));
        log_load_hook(d);
        return 0;
}

static void loop_asks(void *ctx, uint64_t now)
{
        struct daemon *d = ctx;

        select_jobs_poll(d->asks, now, asked, d);
}

static void loop_asks_fd(void *ctx, int fd, uint32_t events)
{
        (void)fd;
        (void)events;
        loop_asks(ctx, mono_ns());
}

static void loop_scan(void *ctx, uint64_t now)
{
        (void)now;
        scan_slice(ctx);
}

static void loop_retain(void *ctx, uint64_t now)
{
        struct daemon *d = ctx;

        retain(d);
        event_loop_set(d->loop, d->dl_retain, now + RETAIN_PERIOD_MS * NS_PER_MS);
}

static void loop_tick(void *ctx, uint64_t now)
{
        struct daemon *d = ctx;

        if (d->rs && recording_set_tick(d->rs, now / NS_PER_MS))
                loop_retain(d, now); /* a file was finished (rotation, process exit) */
}

static void loop_status(void *ctx, uint64_t now)
{
        struct daemon *d = ctx;
        /* modules no process maps, dead before every writer's oldest unwritten batch (with a
         * margin: a sample resolved just before a new file's first batch began): no frame to
         * be written names them */
        uint64_t before = d->rs ? recording_set_written_before(d->rs) : 0;

        if (before > REAP_MARGIN_NS)
                modules_reap(sampler_modules(d->s), before - REAP_MARGIN_NS);
        write_status(d, "running");
        event_loop_set(d->loop, d->dl_status, now + d->cfg.status_period_ms * NS_PER_MS);
}

static void loop_metrics(void *ctx, uint64_t now)
{
        struct daemon *d = ctx;

        publish_metrics(d);
        event_loop_set(d->loop, d->dl_metrics, now + DAEMON_METRICS_PERIOD_MS * NS_PER_MS);
}

/* After every wake (the session set the drain's deadline): a ring error, and the deadlines
 * that follow from what the callbacks changed (a drain, a reload, a new per-process file, a
 * process pending selection). */
static void loop_after(void *ctx, uint64_t now)
{
        struct daemon *d = ctx;
        uint64_t tick = d->rs ? recording_set_next_tick(d->rs, now / NS_PER_MS) : UINT64_MAX;
        int err = session_failed(d->ss);

        if (err && !d->stop) {
                logm(LOG_ERROR, "reading samples failed: %s", strerror(-err));
                d->stop = 1;
        }
        event_loop_set(d->loop, d->dl_asks, select_jobs_next_due(d->asks));
        event_loop_set(d->loop, d->dl_scan,
                       d->scan_pos < d->nscan && scan_room(d) ? now : EVENT_LOOP_NEVER);
        event_loop_set(d->loop, d->dl_tick,
                       tick == UINT64_MAX ? EVENT_LOOP_NEVER : tick * NS_PER_MS);
}

/* Start stage, last step: the loop's fds and deadlines (the signals were blocked at
 * start_config), then the session's: sampling starts, and the loop drains from the next wake
 * on. 0 or -1 (logged). */
static int loop_setup(struct daemon *d)
{
        struct event_loop *l = d->loop;
        uint64_t now = mono_ns();
        int err;

        err = event_loop_add_fd(l, select_jobs_fd(d->asks), EPOLLIN, loop_asks_fd, d);
        if (err) {
                logm(LOG_ERROR, "event loop: %s", strerror(-err));
                return -1;
        }
        d->dl_asks = event_loop_add_deadline(l, loop_asks, d);
        d->dl_scan = event_loop_add_deadline(l, loop_scan, d);
        d->dl_tick = event_loop_add_deadline(l, loop_tick, d);
        d->dl_retain = event_loop_add_deadline(l, loop_retain, d);
        d->dl_status = event_loop_add_deadline(l, loop_status, d);
        d->dl_metrics = event_loop_add_deadline(l, loop_metrics, d);
        event_loop_set(l, d->dl_retain, now + RETAIN_PERIOD_MS * NS_PER_MS);
        event_loop_set(l, d->dl_status, now + d->cfg.status_period_ms * NS_PER_MS);
        if (d->dm)
                event_loop_set(l, d->dl_metrics, now + DAEMON_METRICS_PERIOD_MS * NS_PER_MS);
        loop_after(d, now);
        err = session_start(d->ss, l, loop_after, d);
        if (err) {
                logm(LOG_ERROR, "event loop: %s", strerror(-err));
                return -1;
        }
        return 0;
}

/* Loop stage (daemon.h): sample until SIGTERM/SIGINT (or a ring error); reloads, pending processes,
 * file rotation, retention and the status file on the way, each when it is due. */
void daemon_run(struct daemon *d)
{
        int err = 0;

        while (!d->stop && !err)
                err = event_loop_run_once(d->loop);
        if (err)
                logm(LOG_ERROR, "event loop: %s", strerror(-err));
}

/* Finish stage: drain, write the last chunks, a last retention pass and status. The exit
 * status: 0, or 1 when finishing a file failed. */
int daemon_finish(struct daemon *d)
{
        int err, rc;

        logm(LOG_INFO, "stopping: writing the last chunk");
        err = session_stop(d->ss);
        if (err < 0)
                logm(LOG_WARNING, "draining samples failed: %s", strerror(-err));
        rc = close_output(d) ? 1 : 0;
        stop_uploads(d, d->cfg.upload.stop_grace_ms);
        retain(d);
        write_status(d, "stopped");
        logm(LOG_INFO, "stopped");
        return rc;
}

void daemon_free(struct daemon *d)
{
        if (!d)
                return;
        metrics_server_free(d->metrics); /* its thread stops before what it reports goes */
        daemon_metrics_free(d->dm);
        recording_set_free(d->rs); /* finished, or NULL; a failed start: .part stays */
        stop_uploads(d, 0);
        select_jobs_free(d->asks); /* its jobs read through the session's parser helper */
        session_free(d->ss);       /* every symbolizer is freed by now */
        target_select_free(d->sel);
        free(d->scanq);
        if (d->dir_lock >= 0)
                close(d->dir_lock);
        event_loop_free(d->loop);
        free(d);
}

int daemon_start(const struct daemon_opts *o, struct daemon **out)
{
        struct daemon *d = calloc(1, sizeof(*d)); /* large (pending list): not on the stack */
        int rc;

        *out = NULL;
        printer = o->print;
        if (!d) {
                logm(LOG_ERROR, "out of memory");
                return 1;
        }
        d->o = *o;
        d->dir_lock = -1;
        rc = start_config(d);
        if (rc) {
                stop_uploads(d, 0);
                event_loop_free(d->loop);
                free(d);
                return rc;
        }
        if (start_sampling(d)) {
                daemon_free(d);
                return 1;
        }
        *out = d;
        return 0;
}
