/* SPDX-License-Identifier: MIT */
/*
 * cmd_daemon.c — `ctxprof daemon`: the long-running profiler. Reads the configuration (INI
 * file + flags), selects targets (at start from /proc, then at every exec the BPF program
 * reports), samples them into JFR recordings in the output directory (one for the host, or
 * one per process: recording_set.c; rotated, retained), rewrites the status file every few
 * seconds, reloads on SIGHUP and flushes on SIGTERM/SIGINT.
 * Logs to stderr with sd-daemon level prefixes (<3> error ... <7> debug). The only file of
 * the daemon that prints; every library error becomes a log line, never a crash.
 */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "cli/cmd.h"
#include "service/config.h"
#include "service/daemon_metrics.h"
#include "service/metrics_http.h"
#include "sink/engine_stats.h"
#include "sink/jfr_sink.h"
#include "service/output_dir.h"
#include "service/privileges.h"
#include "service/recording_set.h"
#include "engine/sample_rate.h"
#include "stack/debuginfod_policy.h"
#include "engine/sampler.h"
#include "stack/modules.h"
#include "service/status_file.h"
#include "service/status_health.h"
#include "service/target_select.h"
#include "service/uploader.h"
#include "util/clock.h"
#include "util/proc_lines.h"

#define MAX_FLAGS        64
#define PEND_MAX         1024
#define PEND_WINDOW_NS   3000000000ull /* context mode: give a new image 3 s to publish */
#define REAP_MARGIN_NS   1000000000ull /* modules dead this long before a writer's batch */
#define RETAIN_PERIOD_MS 30000

static volatile sig_atomic_t stop_requested, reload_requested;
/* read by every thread that logs (uploaders, JFR writers), written by a reload */
static _Atomic int log_level = LOG_INFO;

static void on_stop(int sig)
{
        (void)sig;
        stop_requested = 1;
}

static void on_hup(int sig)
{
        (void)sig;
        reload_requested = 1;
}

__attribute__((format(printf, 2, 3))) static void logm(int level, const char *fmt, ...)
{
        char buf[1024];
        va_list ap;

        if (level > log_level)
                return;
        va_start(ap, fmt);
        vsnprintf(buf, sizeof(buf), fmt, ap);
        va_end(ap);
        fprintf(stderr, "<%d>ctxprof: %s\n", level, buf);
}

struct pending {
        pid_t pid;
        uint64_t first_ns, next_ns;
};

struct daemon {
        const char *config_path;
        const char *flag_key[MAX_FLAGS], *flag_val[MAX_FLAGS];
        char flag_buf[MAX_FLAGS][64]; /* the flags' keys */
        int nflags;
        int no_drop; /* --no-drop-privileges */
        struct daemon_config cfg;
        struct target_select *sel;
        struct sampler *s;
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
        struct pending pend[PEND_MAX];
        int npend;
};

static const char *split_name(const struct daemon *d)
{
        return d->cfg.split == SPLIT_PROCESS ? "process" : "host";
}

static int libbpf_log(enum libbpf_print_level level, const char *fmt, va_list ap)
{
        char buf[1024];

        if (level != LIBBPF_WARN || log_level < LOG_DEBUG)
                return 0;
        vsnprintf(buf, sizeof(buf), fmt, ap);
        buf[strcspn(buf, "\n")] = '\0';
        fprintf(stderr, "<7>ctxprof: libbpf: %s\n", buf);
        return 0;
}

static const char *config_error(int err)
{
        switch (err) {
        case -ENOENT:
                return "unknown setting";
        case -ENOTSUP:
                return "not implemented in this version";
        case -EINVAL:
                return "bad value";
        case -EEXIST:
                return "set twice";
        case -E2BIG:
                return "line too long (libinih reads at most 197 characters; use the flag)";
        default:
                return strerror(-err);
        }
}

/* Defaults, then the file (if any), then the flags. 0 or -1 (logged). */
static int build_config(struct daemon *d, struct daemon_config *c)
{
        struct config_error e = {0};
        const char *values;
        int i, err;

        config_defaults(c);
        err = d->config_path ? config_load(c, d->config_path, &e) : 0;
        values = e.why ? e.why : err == -EINVAL && e.key[0] ? config_values(e.key) : NULL;
        if (err == -EEXIST)
                logm(LOG_ERROR, "%s:%d: %s set twice (first on line %d)", d->config_path, e.line,
                     e.key, e.first_line);
        else if (err && e.line > 0)
                logm(LOG_ERROR, "%s:%d: %s%s%s%s%s%s", d->config_path, e.line, config_error(err),
                     e.key[0] ? ": " : "", e.key, values ? " (" : "", values ? values : "",
                     values ? ")" : "");
        else if (err)
                logm(LOG_ERROR, "cannot read %s: %s", d->config_path, strerror(-err));
        if (err)
                return -1;
        for (i = 0; i < d->nflags; i++) {
                err = config_set(c, NULL, d->flag_key[i], d->flag_val[i]);
                values = err == -EINVAL ? config_values(d->flag_key[i]) : NULL;
                if (err) {
                        logm(LOG_ERROR, "--%s %s: %s%s%s%s", d->flag_key[i], d->flag_val[i],
                             config_error(err), values ? " (" : "", values ? values : "",
                             values ? ")" : "");
                        return -1;
                }
        }
        return 0;
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

static void pend_add(struct daemon *d, pid_t pid)
{
        uint64_t now = mono_ns();
        int i;

        for (i = 0; i < d->npend; i++)
                if (d->pend[i].pid == pid) {
                        d->pend[i].first_ns = now;
                        d->pend[i].next_ns = now + 20000000ull;
                        return;
                }
        if (d->npend == PEND_MAX) {
                logm(LOG_DEBUG, "pending list full: process %d not watched", (int)pid);
                return;
        }
        d->pend[d->npend++] = (struct pending){pid, now, now + 20000000ull};
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

/* Called by the sampler for every exec (see sampler_opts.exec_filter). */
static int exec_filter(void *ctx, pid_t pid, const char *comm)
{
        struct daemon *d = ctx;
        int m = target_select_match(d->sel, pid, comm);

        if (m == TARGET_SELECT_LATER) {
                pend_add(d, pid);
                return 0;
        }
        if (m > 0)
                logm(LOG_DEBUG, "exec: process %d (%s) selected", (int)pid, comm);
        return m > 0;
}

/* Context mode: retry the processes that exec'ed recently until they publish or the window
 * closes. */
static void pend_poll(struct daemon *d)
{
        uint64_t now = mono_ns();
        int i = 0;

        while (i < d->npend) {
                struct pending *p = &d->pend[i];
                int m;

                if (now < p->next_ns) {
                        i++;
                        continue;
                }
                m = target_select_match(d->sel, p->pid, NULL);
                if (m == 1 && !sampler_is_target(d->s, p->pid))
                        add_target(d, p->pid, "publishes context");
                if (m != TARGET_SELECT_LATER || now - p->first_ns > PEND_WINDOW_NS) {
                        d->pend[i] = d->pend[--d->npend];
                        continue;
                }
                p->next_ns = now + (now - p->first_ns) / 2 + 20000000ull;
                i++;
        }
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

static void scan_proc(struct daemon *d)
{
        cgroups_to_kernel(d);
        struct dirent *e;
        DIR *dp = opendir("/proc");
        unsigned n = 0;

        if (!dp) {
                logm(LOG_ERROR, "cannot read /proc: %s", strerror(errno));
                return;
        }
        while ((e = readdir(dp))) {
                char *end;
                long pid = strtol(e->d_name, &end, 10);
                int m;

                if (*end || pid <= 0)
                        continue;
                m = target_select_match(d->sel, (pid_t)pid, NULL);
                if (m == 1 && !sampler_is_target(d->s, (pid_t)pid)) {
                        add_target(d, (pid_t)pid, "running");
                        n++;
                } else if (m != 1 && sampler_is_target(d->s, (pid_t)pid)) {
                        sampler_remove_target(d->s, (pid_t)pid);
                }
        }
        closedir(dp);
        logm(LOG_INFO, "%u running processes selected", n);
}

/* Threads of pid, from /proc/PID/status (lines capped: util/proc_lines.h). */
static unsigned proc_threads(pid_t pid)
{
        char path[64], *line;
        unsigned n = 0;
        struct proc_lines r;

        snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
        if (proc_lines_open(&r, path, PROC_LINE_MAX_SHORT, NULL))
                return 0;
        while (proc_lines_next(&r, &line, NULL) > 0)
                if (sscanf(line, "Threads: %u", &n) == 1)
                        break;
        proc_lines_close(&r);
        return n;
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
            .threads = proc_threads(t->pid),
            .context_located = t->context_located,
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
        target_select_target_stats(d->sel, &st->target);
        target_stats_add(&st->target, &d->rs_target);
}

/* The daemon's record of the status file: its counters, those of the sets reloads replaced
 * included. */
static void status_daemon(struct daemon *d, const char *state, struct status_daemon *sd)
{
        struct sampler_stats st;
        struct recording_set_counters rc;
        const char *cur = d->rs ? recording_set_file(d->rs, 0) : NULL;

        daemon_stats(d, &st);
        output_counters(d, &rc);
        *sd = (struct status_daemon){
            .pid = (int)getpid(),
            .started = d->started_wall,
            .updated = (uint64_t)time(NULL),
            .pid_start = d->pid_start,
            .period_ms = STATUS_FILE_PERIOD_MS,
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
            .refused_stacks = st.refused_stacks,
            .refused_labels = st.refused_labels,
            .refused_threads = st.refused_threads,
            .refused_files = st.target.no_mapping + st.target.not_regular + st.target.mismatch +
                             st.target.unresolved + st.target.open_failed + st.target.not_owner,
            .refused_lines = st.target.lines_too_long,
            .modules = st.modules.live,
            .modules_refused = st.modules.full + st.modules.target_full,
            .events_limited = st.events_limited,
            .exec_events_limited = st.exec_events_limited,
            .targets_full = st.targets_full,
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

static void reload(struct daemon *d)
{
        struct daemon_config nc;
        struct target_select *ns;

        logm(LOG_INFO, "SIGHUP: reloading %s", d->config_path ? d->config_path : "(flags only)");
        if (build_config(d, &nc) || check_dirs(&nc)) {
                logm(LOG_ERROR, "reload failed: keeping the running configuration");
                return;
        }
        if (nc.frequency != d->cfg.frequency || nc.event != d->cfg.event ||
            nc.dwarf != d->cfg.dwarf || nc.offcpu_min_us != d->cfg.offcpu_min_us)
                logm(LOG_WARNING, "reload: [sampling] changes take effect at the next start");
        nc.frequency = d->cfg.frequency;
        nc.event = d->cfg.event;
        nc.dwarf = d->cfg.dwarf;
        if (strcmp(nc.metrics_listen, d->cfg.metrics_listen) ||
            nc.metrics_allow_remote != d->cfg.metrics_allow_remote)
                logm(LOG_WARNING, "reload: [metrics] changes take effect at the next start");
        memcpy(nc.metrics_listen, d->cfg.metrics_listen, sizeof(nc.metrics_listen));
        nc.metrics_allow_remote = d->cfg.metrics_allow_remote;
        nc.offcpu_min_us = d->cfg.offcpu_min_us;
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
        d->npend = 0;
        d->cfg = nc;
        log_level = nc.log_level;
        if (open_output(d))
                logm(LOG_ERROR, "reload: no output file: samples are dropped until the output "
                                "can be opened again");
        scan_proc(d);
        write_status(d, "running");
        logm(LOG_INFO, "configuration reloaded");
}

static void help(FILE *f)
{
        int i;

        fprintf(f, "usage: ctxprof daemon [--config FILE] [--KEY VALUE ...]\n"
                   "\n"
                   "Profile the selected processes of this host continuously into rotated JFR\n"
                   "recordings. Settings come from FILE (INI, see docs/daemon.md) and from flags,\n"
                   "which override it; every key is also a flag:\n");
        for (i = 0; config_keys[i]; i++)
                fprintf(f, "  --%s VALUE%s", strchr(config_keys[i], '.') + 1,
                        i % 3 == 2 ? "\n" : "");
        fprintf(f, "\n\nSIGHUP reloads FILE; SIGTERM/SIGINT write the last chunk and exit 0.\n"
                   "Needs root (CAP_BPF, CAP_PERFMON, CAP_SYS_PTRACE ...; see docs/daemon.md).\n");
}

/* Parse stage: --help, --no-drop-privileges, --config FILE and --KEY VALUE / --KEY=VALUE
 * flags (kept for build_config). -1 to go on, else the exit status. */
static int parse_flags(struct daemon *d, int argc, char **argv)
{
        int i;

        for (i = 1; i < argc; i++) {
                const char *a = argv[i];

                if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
                        help(stdout);
                        return 0;
                }
                if (!strcmp(a, "--no-drop-privileges")) {
                        d->no_drop = 1;
                        continue;
                }
                if (strncmp(a, "--", 2) || !a[2]) {
                        fprintf(stderr, "ctxprof daemon: unexpected argument '%s'\n", a);
                        help(stderr);
                        return 2;
                }
                a += 2;
                const char *eq = strchr(a, '='), *val;
                char *key = d->flag_buf[d->nflags % MAX_FLAGS];
                size_t kl = eq ? (size_t)(eq - a) : strlen(a);

                if (eq) {
                        val = eq + 1;
                } else if (i + 1 < argc) {
                        val = argv[++i];
                } else {
                        fprintf(stderr, "ctxprof daemon: --%s needs a value\n", a);
                        return 2;
                }
                if (kl >= sizeof(d->flag_buf[0]) || d->nflags == MAX_FLAGS) {
                        fprintf(stderr, "ctxprof daemon: bad option --%s\n", a);
                        return 2;
                }
                memcpy(key, a, kl);
                key[kl] = '\0';
                if (!strcmp(key, "config")) {
                        d->config_path = val;
                        continue;
                }
                d->flag_key[d->nflags] = key;
                d->flag_val[d->nflags] = val;
                d->nflags++;
        }
        return -1;
}

/* Start stage, part 1: the configuration, the process-wide settings and the selection. 0,
 * or the exit status (logged). */
static int start_config(struct daemon *d)
{
        if (build_config(d, &d->cfg))
                return 2;
        log_level = d->cfg.log_level;
        umask(027);
        if (check_dirs(&d->cfg) || open_metrics(d))
                return 1;
        libbpf_set_print(libbpf_log);
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
static int start_sampling(struct daemon *d)
{
        struct sampler_opts so = {
            .freq = d->cfg.frequency,
            .event = d->cfg.event,
            .dwarf = d->cfg.dwarf,
            .offcpu_min_ns = d->cfg.offcpu_min_us ? d->cfg.offcpu_min_us * NS_PER_US : 1,
            .kernel_stacks = 1,
            .follow_children = 1,
            .exec_filter = exec_filter,
            .exec_filter_ctx = d,
        };
        struct sample_sink sink = {.ctx = &d->cur, .sample = sample_sink_forward};
        enum sampler_stage stage;
        struct sigaction sa;
        int err;

        if (d->cfg.filter[0]) {
                /* checked by config_set: the error is not reached */
                if (context_filter_add(&so.filter, d->cfg.filter, NULL))
                        return -1;
                logm(LOG_INFO, "context filter: recording only samples matching %s", d->cfg.filter);
        }
        if (debuginfod_policy_apply() == 0) /* before any Dwfl: see the header */
                logm(LOG_INFO, "not using DEBUGINFOD_URLS (CTXPROF_DEBUGINFOD=1 allows it)");
        if (so.freq > sample_rate_cap(so.dwarf, 0)) {
                /* the rule is in engine/sample_rate.h */
                so.freq = sample_rate_cap(so.dwarf, 0);
                logm(LOG_WARNING,
                     "frequency = %u is more than one consumer can carry on this host with "
                     "call-graph = %s: sampling at %u Hz",
                     d->cfg.frequency, so.dwarf ? "dwarf" : "fp", so.freq);
        }
        err = sampler_new(&so, &sink, &d->s, &stage);
        if (err) {
                logm(LOG_ERROR, "starting the sampler failed at stage %d: %s%s", (int)stage,
                     strerror(-err),
                     err == -EPERM || err == -EACCES
                         ? " (needs root or CAP_BPF, CAP_PERFMON, CAP_SYS_PTRACE)"
                         : "");
                return -1;
        }
        /* Capabilities, the bounding set and no_new_privs are per thread: drop them while
         * this is the only thread, so that every thread created later (the JFR writers, the
         * metrics and upload threads) inherits the reduced set. The BPF objects and perf
         * events are loaded and open by now; what remains needs only the kept set. */
        if (!d->no_drop) {
                /* A uprobe perf event needs CAP_SYS_ADMIN here: hook the loaders in use now,
                 * for every process, instead of each new target's (engine/load_hook.h). */
                err = sampler_hook_loader_wide(d->s);
                if (err)
                        logm(LOG_WARNING, "library-load hook for every process failed: %s",
                             strerror(-err));
                err = privileges_drop();
                if (err)
                        logm(LOG_WARNING, "dropping capabilities failed: %s", strerror(-err));
                else
                        logm(LOG_INFO, "capabilities dropped (CapEff %llx), no_new_privs set",
                             (unsigned long long)privileges_effective());
        }
        /* the uploader threads, after the drop; before recovery, which hands them its files */
        if (start_uploads(d, &d->cfg))
                return -1;
        recover(d);
        if (open_output(d))
                return -1;
        memset(&sa, 0, sizeof(sa));
        sa.sa_handler = on_stop;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGINT, &sa, NULL);
        sigaction(SIGTERM, &sa, NULL);
        sa.sa_handler = on_hup;
        sigaction(SIGHUP, &sa, NULL);
        if (start_metrics(d))
                return -1;
        scan_proc(d);
        write_status(d, "running");
        retain(d);
        logm(LOG_INFO, "started: pid %d, %u Hz, mode %s, output %s, split %s", (int)getpid(),
             d->cfg.frequency, sampling_name(SAMPLING_NAMES_MODE, d->cfg.mode), d->cfg.directory,
             split_name(d));
        log_load_hook(d);
        return 0;
}

/* Loop stage: sample until SIGTERM/SIGINT (or a ring error); reloads, pending processes,
 * file rotation, retention and the status file on the way. */
static void run(struct daemon *d)
{
        uint64_t last_status = 0, last_retain = 0, last_metrics = 0;
        int err;

        while (!stop_requested) {
                uint64_t now;

                err = sampler_poll(d->s, 100);
                if (err < 0 && err != -EINTR) {
                        logm(LOG_ERROR, "reading samples failed: %s", strerror(-err));
                        break;
                }
                if (reload_requested) {
                        reload_requested = 0;
                        reload(d);
                }
                pend_poll(d);
                now = mono_ns() / 1000000;
                if (d->rs && recording_set_tick(d->rs, now)) {
                        retain(d); /* a file was finished (rotation, process exit) */
                        last_retain = now;
                }
                if (now - last_retain >= RETAIN_PERIOD_MS) {
                        retain(d);
                        last_retain = now;
                }
                if (now - last_status >= STATUS_FILE_PERIOD_MS) {
                        /* modules no process maps, dead before every writer's oldest
                         * unwritten batch (with a margin: a sample resolved just before
                         * a new file's first batch began): no frame to be written names
                         * them */
                        uint64_t before = d->rs ? recording_set_written_before(d->rs) : 0;
                        if (before > REAP_MARGIN_NS)
                                modules_reap(sampler_modules(d->s), before - REAP_MARGIN_NS);
                        write_status(d, "running");
                        last_status = now;
                }
                if (d->dm && now - last_metrics >= DAEMON_METRICS_PERIOD_MS) {
                        publish_metrics(d);
                        last_metrics = now;
                }
        }
}

/* Finish stage: drain, write the last chunks, a last retention pass and status. The exit
 * status: 0, or 1 when finishing a file failed. */
static int finish(struct daemon *d)
{
        int err, rc;

        logm(LOG_INFO, "stopping: writing the last chunk");
        err = sampler_stop(d->s);
        if (err < 0)
                logm(LOG_WARNING, "draining samples failed: %s", strerror(-err));
        rc = close_output(d) ? 1 : 0;
        stop_uploads(d, d->cfg.upload.stop_grace_ms);
        retain(d);
        write_status(d, "stopped");
        logm(LOG_INFO, "stopped");
        return rc;
}

static void release(struct daemon *d)
{
        metrics_server_free(d->metrics); /* its thread stops before what it reports goes */
        daemon_metrics_free(d->dm);
        recording_set_free(d->rs); /* finished, or NULL; a failed start: .part stays */
        stop_uploads(d, 0);
        sampler_free(d->s);
        target_select_free(d->sel);
        if (d->dir_lock >= 0)
                close(d->dir_lock);
}

static int cmd_daemon(int argc, char **argv)
{
        static struct daemon dd; /* large (pending list): not on the stack */
        struct daemon *d = &dd;
        int rc = 1;

        memset(d, 0, sizeof(*d));
        d->dir_lock = -1;
        rc = parse_flags(d, argc, argv);
        if (rc >= 0)
                return rc;
        rc = start_config(d);
        if (rc) {
                stop_uploads(d, 0);
                return rc;
        }
        rc = 1;
        if (!start_sampling(d)) {
                run(d);
                rc = finish(d);
        }
        release(d);
        return rc;
}

const struct ctxprof_cmd daemon_cmd = {"daemon", "profile selected processes continuously",
                                       cmd_daemon};
