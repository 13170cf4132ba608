/* SPDX-License-Identifier: MIT */
/*
 * recording_set.c — the daemon's open recordings (see recording_set.h). Owns the per-process
 * table (at most max_open entries, a linear scan behind a last-hit cache: samples of one
 * process come in runs), the shared host recording, the symbolizer every per-process sink
 * shares, the output directory's descriptor, and the counters of files already finished.
 * Must never print, delete a recording (only its own empty .part when the sink fails to
 * start or not one chunk could be written), hold more than max_open per-process sinks open
 * and max_open being finished, or wait in a tick for a writer (writers symbolize through the
 * parser helper, seconds for a hostile module): a file is finished in two steps, its last
 * chunk cut at once and the rest done when its writer has ended (reap_closed).
 *
 * Why a process's file is finished a second after it stops being a target and not at its
 * exit event: the sampler hands over every sample a process took before its exit event when
 * both come through the sample ring (in ring order), but an exit event that found that ring
 * full comes through the `events` spill ring, consumed after it, so samples committed in
 * between are handled a poll after the exit; the second covers them (the sampler keeps a
 * dead process's mappings for the same second). Finishing later would only leave a finished
 * process's .part open for up to a chunk period.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "service/output_dir.h"
#include "service/recording_set.h"
#include "engine/sampling_names.h"
#include "stack/symbolize.h"
#include "util/clock.h"

#define PROCESS_TABLE_CAPACITY 4096  /* distinct stacks per chunk of one process */
#define GONE_GRACE_MS          1000  /* see the file comment */
#define IDENTITY_CACHE         16    /* identities of finished per-process files kept */
#define ALIVE_CHECK_MS         250   /* how often per-process targets are checked */
#define OPEN_RETRY_MS          10000 /* after a failed open: no new file for this long */
#define OVERFLOW_LOG_MS        60000 /* "too many processes" at most this often */
#define SIZE_CHECK_MS          1000  /* rotate = size: the bytes written are looked at this often */
#define CUT_RETRY_MS           100   /* a chunk due but its writer behind: look again */
/* The shared symbolizer's interned strings are freed only with it: it is recreated whenever
 * no per-process file is open, and when they pass this size every per-process file is
 * finished (each reopens at its process's next sample) so that it can be. */
#define SHARED_SYM_MAX_BYTES (64ull << 20)
/* A per-process file being finished (its writer still writing and symbolizing, in the
 * background: the loop never waits for it) is looked at again this often. */
#define CLOSING_POLL_MS 20

struct recording {
        pid_t pid;                          /* 0 = the host (shared) recording */
        char process[CTXPROF_COMM_LEN + 1]; /* the sampler's process name at the first sample */
        char image[CTXPROF_COMM_LEN + 1];   /* its image's name then (never the service) */
        int otel_named;                     /* process is the service.name it published */
        char comm[CTXPROF_COMM_LEN + 1];    /* for the file name: executable's base name */
        char name[64];                      /* jdk.ActiveRecording name */
        struct workload_identity id;        /* what its uploads are named and tagged by */
        struct output_file file;
        struct jfr_sink *js;
        struct sample_sink sink;
        uint64_t start_ms; /* CLOCK_MONOTONIC */
        uint64_t start_wall_s;
        uint64_t gone_ms; /* first seen not a target, 0 = a target */
        int retired;      /* to be finished at the next tick (not inside the sample callback) */
        uint64_t samples; /* routed to this file */
        struct jfr_sink_engine_counters base; /* engine counters when opened */
        uint64_t failed_logged;               /* chunks_failed when last logged */
        uint64_t written_at_failure;          /* chunks_written then (to log the recovery) */
};

/* The processes of the host file open now, for its uploads (recording_finished). */
struct host_procs {
        struct workload_identity id[RECORDING_HOST_SERIES_MAX];
        uint8_t otel[RECORDING_HOST_SERIES_MAX]; /* its service is its service.name */
        unsigned n, last;                        /* last: the last hit */
        uint64_t grouped;                        /* samples of processes past the bound */
        pid_t refused;                           /* the last process past it */
};

struct recording_set {
        struct recording_set_opts o;
        struct daemon_config cfg;
        char host[64];
        int split;
        /* split=process: shared by the per-process sinks (not the host file's); NULL = each
         * its own. Recreated in recording_set_tick, see SHARED_SYM_MAX_BYTES. */
        struct symbolizer *sym;
        struct recording host_rec;
        int have_host;
        struct recording **procs; /* cfg.split_max_open slots */
        unsigned nprocs;
        /* split=process: files whose last chunk is cut and whose writer has not finished
         * yet (cfg.split_max_open slots: when full, one is waited for) */
        struct recording **closing;
        unsigned nclosing;
        struct recording *last; /* last hit */
        uint64_t last_open_ms;  /* split=host: last retry of the host file */
        /* split=process, 0 = none: the last failed open of a per-process file (no new one is
         * tried for OPEN_RETRY_MS) and of the shared host file (its own retry: a sample whose
         * process file cannot be opened still goes there) */
        uint64_t proc_fail_ms, host_fail_ms;
        uint64_t overflow_logged_ms, alive_checked_ms;
        uint64_t last_tick_ms;           /* the last recording_set_tick (a cut it left for later) */
        struct recording_set_counters c; /* files finished so far (+ sample counters) */
        int dfd; /* the output directory (output_dir_open), -1 until opened */
        /* split=process: the identities of the last per-process files finished. A process's
         * next file (after a rotation, or for samples it took just before it exited, handled
         * after) keeps its name and tags though /proc/PID may no longer say them. */
        struct {
                pid_t pid;
                char process[CTXPROF_COMM_LEN + 1];
                struct workload_identity id;
        } closed[IDENTITY_CACHE];
        unsigned closed_next;
        struct host_procs host_procs;
};

__attribute__((format(printf, 3, 4))) static void logr(struct recording_set *rs, int level,
                                                       const char *fmt, ...)
{
        char buf[PATH_MAX + 256];
        va_list ap;

        if (!rs->o.log)
                return;
        va_start(ap, fmt);
        vsnprintf(buf, sizeof(buf), fmt, ap);
        va_end(ap);
        rs->o.log(rs->o.ctx, level, buf);
}

static void engine(struct recording_set *rs, struct jfr_sink_engine_counters *ec)
{
        memset(ec, 0, sizeof(*ec));
        if (rs->o.engine)
                rs->o.engine(rs->o.ctx, ec);
}

/* The engine counters of one tick, fetched when a file first needs them (a chunk cut, a file
 * finished) and at most once: each fetch is a per-CPU BPF map lookup, object info queries
 * and with off-CPU a walk of its map. A tick that cuts nothing reads none. */
struct engine_now {
        struct recording_set *rs;
        int have;
        struct jfr_sink_engine_counters ec;
};

static const struct jfr_sink_engine_counters *engine_now(struct engine_now *e)
{
        if (!e->have)
                engine(e->rs, &e->ec);
        e->have = 1;
        return &e->ec;
}

/* This file's share of the engine counters `now` (see struct engine_now). With split=process
 * `samples` is the file's own (the rest is host-wide: the BPF counters are not per process). */
static void rec_counters(struct recording_set *rs, const struct recording *r,
                         const struct jfr_sink_engine_counters *now,
                         struct jfr_sink_engine_counters *ec)
{
        *ec = *now;
        ec->samples -= r->base.samples;
        ec->lost -= r->base.lost;
        ec->torn_span_reads -= r->base.torn_span_reads;
        ec->label_faults -= r->base.label_faults;
        ec->unwind_errors -= r->base.unwind_errors;
        for (size_t i = 0; i < JFR_CTX_MISSING_N; i++)
                ec->ctx_missing[i] -= r->base.ctx_missing[i];
        if (rs->split == SPLIT_PROCESS)
                ec->samples = r->samples;
}

/* The command in a file name: the service (its OpenTelemetry service.name, else the
 * executable's base name, else the sampler's process name: workload_identity.h, cleaned), cut
 * to 15 characters like a comm, the same for a process found at exec or by the /proc scan,
 * whatever its main thread calls itself. */
static void command_of(const struct workload_identity *id, char *out, size_t len)
{
        snprintf(out, len, "%.*s", CTXPROF_COMM_LEN - 1, id->service);
}

/* The output directory's descriptor, opened (and checked) again when it is not open or the
 * directory was removed meanwhile (it is recreated). 0 or -errno (logged). */
static int out_dir(struct recording_set *rs)
{
        char why[PATH_MAX + 128];
        struct stat st;

        if (rs->dfd >= 0 && !fstat(rs->dfd, &st) && st.st_nlink > 0)
                return 0;
        if (rs->dfd >= 0)
                close(rs->dfd);
        rs->dfd = output_dir_open(rs->cfg.directory, why, sizeof(why));
        if (rs->dfd >= 0)
                return 0;
        if (rs->dfd == -EPERM && why[0])
                logr(rs, LOG_ERROR, "output directory refused: %s", why);
        else
                logr(rs, LOG_ERROR, "cannot create %s: %s", rs->cfg.directory, strerror(-rs->dfd));
        return rs->dfd;
}

/* 1 and *id when a file of this process (same pid, same process name: no exec since) was
 * finished lately; the entry is used up. */
static int cached_identity(struct recording_set *rs, pid_t pid, const char *process,
                           struct workload_identity *id)
{
        for (unsigned i = 0; i < IDENTITY_CACHE; i++)
                if (rs->closed[i].pid == pid && !strcmp(rs->closed[i].process, process)) {
                        *id = rs->closed[i].id;
                        rs->closed[i].pid = 0;
                        return 1;
                }
        return 0;
}

static void cache_identity(struct recording_set *rs, const struct recording *r)
{
        unsigned i = rs->closed_next++ % IDENTITY_CACHE;

        rs->closed[i].pid = r->pid;
        snprintf(rs->closed[i].process, sizeof(rs->closed[i].process), "%s", r->process);
        rs->closed[i].id = r->id;
}

static int open_rec(struct recording_set *rs, struct recording *r, pid_t pid, uint64_t start,
                    const char *process, const char *service, const char *image)
{
        struct timespec ts;
        struct jfr_sink_opts jo = {
            .chunk_period_ns = rs->cfg.chunk_period_ms * 1000000ull,
            .table_capacity = rs->cfg.max_stacks, /* host file: 0 = the table's 16384 */
            .info = {.name = "ctxprof",
                     .event = sampling_name(SAMPLING_NAMES_EVENT, rs->cfg.event),
                     .frequency_hz = rs->cfg.frequency,
                     .callgraph = sampling_name(SAMPLING_NAMES_CALLGRAPH, rs->cfg.call_graph),
                     .filter = rs->cfg.filter},
        };
        int err, err2;

        r->pid = pid;
        snprintf(r->process, sizeof(r->process), "%s", process ? process : "");
        snprintf(r->image, sizeof(r->image), "%s", image ? image : "");
        r->otel_named = service && *service;
        if (pid) {
                /* the target's own strings: made safe for file names, logs and upload tags */
                if (!cached_identity(rs, pid, r->process, &r->id))
                        workload_identity_read(pid, start, service, r->process, rs->host, &r->id,
                                               rs->o.target);
                command_of(&r->id, r->comm, sizeof(r->comm));
        } else {
                memset(&r->id, 0, sizeof(r->id));
                snprintf(r->id.host, sizeof(r->id.host), "%s", rs->host);
        }
        err = out_dir(rs);
        if (err)
                return err;
        clock_gettime(CLOCK_REALTIME, &ts);
        if (pid)
                err = output_dir_new_process_file(rs->dfd, rs->cfg.directory, rs->host, pid,
                                                  r->comm, ts.tv_sec, &r->file);
        else
                err =
                    output_dir_new_file(rs->dfd, rs->cfg.directory, rs->host, ts.tv_sec, &r->file);
        if (err) {
                logr(rs, LOG_ERROR, "no file name free in %s: %s", rs->cfg.directory,
                     strerror(-err));
                return err;
        }
        if (pid) {
                snprintf(r->name, sizeof(r->name), "ctxprof pid %d (%s)", (int)pid, r->comm);
                jo.info.name = r->name;
                jo.table_capacity =
                    rs->cfg.max_stacks ? rs->cfg.max_stacks : PROCESS_TABLE_CAPACITY;
                jo.symbolizer = rs->sym;
                jo.one_target = 1;
        }
        jo.path = r->file.part;
        r->start_wall_s = (uint64_t)ts.tv_sec;
        jo.use_fd = 1;
        jo.fd = r->file.fd; /* the sink's from here on */
        jo.labels_snapshot = 1;
        jo.labels_fd = r->file.labels_fd; /* NAME.jfr.labels.pb.part, the sink's too */
        jo.info.start_wall_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
        err = jfr_sink_new(&jo, &r->js);
        if (err) {
                logr(rs, LOG_ERROR, "cannot write %s: %s", r->file.part, strerror(-err));
                /* output_dir created the empty file (O_EXCL): it is ours to remove */
                err2 = output_dir_discard(rs->dfd, &r->file);
                if (err2 && err2 != -ENOENT)
                        logr(rs, LOG_WARNING, "cannot remove %s: %s", r->file.part,
                             strerror(-err2));
                return err;
        }
        jfr_sink_set_modules(r->js, rs->o.modules);
        r->sink = jfr_sink_as_sink(r->js);
        r->start_ms = mono_ms();
        r->gone_ms = 0;
        r->samples = 0;
        r->failed_logged = r->written_at_failure = 0;
        engine(rs, &r->base);
        if (pid)
                logr(rs, LOG_INFO, "recording process %d (%s) to %s", (int)pid, r->comm,
                     r->file.part);
        else
                logr(rs, LOG_INFO, "recording to %s", r->file.part);
        return 0;
}

/* The labels snapshot beside the finished recording: output_dir_finish renamed it with it. */
static void snapshot_path(const struct recording *r, char *out, size_t len)
{
        snprintf(out, len, "%s.labels.pb", r->file.final);
}

static void report_finished(struct recording_set *rs, const struct recording *r)
{
        char labels[PATH_MAX + 16];
        struct recording_finished f = {
            .path = r->file.final,
            .pid = r->pid,
            .comm = r->pid ? r->comm : "",
            .id = &r->id,
            .procs = r->pid ? NULL : rs->host_procs.id,
            .n_procs = r->pid ? 0 : rs->host_procs.n,
            .start_wall_s = r->start_wall_s,
            .end_wall_s = (uint64_t)time(NULL),
        };

        if (!rs->o.finished)
                return;
        if (!r->pid && rs->host_procs.grouped)
                logr(rs, LOG_WARNING,
                     "%s: %llu samples of processes past the first %d of the file are uploaded "
                     "under the application, not their service",
                     r->file.final, (unsigned long long)rs->host_procs.grouped,
                     RECORDING_HOST_SERIES_MAX);
        snapshot_path(r, labels, sizeof(labels));
        f.labels_path = labels;
        rs->o.finished(rs->o.ctx, &f);
}

/* Last chunk, rename to .jfr. The sink is gone afterwards. */
static void close_rec_begin(struct recording_set *rs, struct recording *r,
                            const struct jfr_sink_engine_counters *now)
{
        struct jfr_sink_engine_counters ec;

        rec_counters(rs, r, now, &ec);
        r->sink = (struct sample_sink){0};
        jfr_sink_finish_begin(r->js, &ec);
}

/* The second half of close_rec: waits for r's writer (at once when jfr_sink_finish_done). */
static int close_rec_end(struct recording_set *rs, struct recording *r)
{
        struct jfr_sink_counters jc;
        int err, rc = 0;

        err = jfr_sink_finish_end(r->js);
        jfr_sink_get_counters(r->js, &jc);
        if (err)
                logr(rs, LOG_ERROR, "writing %s failed: %s (%llu chunks readable, %llu failed)",
                     r->file.part, strerror(-err), (unsigned long long)jc.chunks_written,
                     (unsigned long long)jc.chunks_failed);
        /* A chunk that failed earlier (a disk full for a while) was logged and counted when it
         * happened; what the caller is told is whether the file ends with its last chunk. */
        if (err && jc.latest_error)
                rc = jc.latest_error;
        jfr_sink_free(r->js);
        r->js = NULL;
        rs->c.chunks_written += jc.chunks_written;
        rs->c.bytes_written += jc.bytes_written;
        if (!jc.chunks_written) {
                /* not one chunk could be written (a full disk): an empty NAME.jfr would only
                 * be a file the JDK rejects; the loss was logged as each chunk failed */
                logr(rs, LOG_WARNING, "%s has no complete chunk (%llu samples lost): removed",
                     r->file.part, (unsigned long long)jc.samples_dropped);
                err = output_dir_discard(rs->dfd, &r->file);
                if (err)
                        logr(rs, LOG_ERROR, "cannot remove %s: %s", r->file.part, strerror(-err));
                return rc; /* output_dir_discard removed its labels snapshot too */
        }
        err = output_dir_finish(rs->dfd, &r->file);
        if (err) {
                logr(rs, LOG_ERROR, "cannot rename %s: %s", r->file.part, strerror(-err));
                return err;
        }
        rs->c.files_written++;
        report_finished(rs, r);
        logr(rs, LOG_INFO, "wrote %s: %llu chunks, %llu bytes, %llu samples", r->file.final,
             (unsigned long long)jc.chunks_written, (unsigned long long)jc.bytes_written,
             (unsigned long long)jc.samples_written);
        return rc;
}

static int close_rec(struct recording_set *rs, struct recording *r,
                     const struct jfr_sink_engine_counters *now)
{
        close_rec_begin(rs, r, now);
        return close_rec_end(rs, r);
}

static int open_host(struct recording_set *rs)
{
        int err = open_rec(rs, &rs->host_rec, 0, 0, NULL, NULL, NULL);

        rs->host_procs.n = rs->host_procs.last = 0;
        rs->host_procs.grouped = 0;
        rs->host_procs.refused = 0;

        rs->have_host = !err;
        return err;
}

static int close_host(struct recording_set *rs, const struct jfr_sink_engine_counters *now)
{
        if (!rs->have_host)
                return 0;
        rs->have_host = 0;
        return close_rec(rs, &rs->host_rec, now);
}

/* Finishes closing[i] (waiting for its writer unless it is done) and frees it. */
static int reap_closing(struct recording_set *rs, unsigned i)
{
        struct recording *r = rs->closing[i];
        int err = close_rec_end(rs, r);

        rs->closing[i] = rs->closing[--rs->nclosing];
        rs->closing[rs->nclosing] = NULL;
        free(r);
        return err;
}

/* The files whose writers are done (wait: all of them, waiting). How many were finished; the
 * first error in *err when err is not NULL. */
static unsigned reap_closed(struct recording_set *rs, int wait, int *err)
{
        unsigned i = 0, n = 0;
        int e;

        while (i < rs->nclosing) {
                if (!wait && !jfr_sink_finish_done(rs->closing[i]->js)) {
                        i++;
                        continue;
                }
                e = reap_closing(rs, i); /* the last entry moved to i */
                if (e && err && !*err)
                        *err = e;
                n++;
        }
        return n;
}

/* Starts finishing procs[i]: its last chunk is cut at once, its writer finishes in the
 * background (reap_closed). With every closing slot taken, one of them is waited for. */
static void close_proc(struct recording_set *rs, unsigned i,
                       const struct jfr_sink_engine_counters *now)
{
        struct recording *r = rs->procs[i];

        close_rec_begin(rs, r, now);
        cache_identity(rs, r);
        rs->procs[i] = rs->procs[--rs->nprocs];
        rs->procs[rs->nprocs] = NULL;
        if (rs->last == r)
                rs->last = NULL;
        if (rs->nclosing == rs->cfg.split_max_open)
                reap_closing(rs, 0);
        rs->closing[rs->nclosing++] = r;
}

struct recording_set *recording_set_new(const struct recording_set_opts *o)
{
        struct recording_set *rs = calloc(1, sizeof(*rs));

        if (!rs)
                return NULL;
        rs->o = *o;
        rs->dfd = -1;
        rs->cfg = *o->cfg;
        rs->o.cfg = &rs->cfg;
        snprintf(rs->host, sizeof(rs->host), "%s", o->host ? o->host : "");
        rs->split = rs->cfg.split;
        if (rs->split == SPLIT_PROCESS) {
                if (!rs->cfg.split_max_open)
                        rs->cfg.split_max_open = 1;
                rs->procs = calloc(rs->cfg.split_max_open, sizeof(*rs->procs));
                rs->closing = calloc(rs->cfg.split_max_open, sizeof(*rs->closing));
                if (!rs->procs || !rs->closing) {
                        free(rs->procs);
                        free(rs->closing);
                        free(rs);
                        return NULL;
                }
        }
        return rs;
}

int recording_set_start(struct recording_set *rs)
{
        int err;

        if (rs->split != SPLIT_PROCESS)
                return open_host(rs);
        err = out_dir(rs);
        if (err)
                return err;
        /* One cache for every process: they share libc and friends. NULL: each sink its own. */
        if (rs->o.modules && !rs->sym)
                rs->sym = symbolizer_new(rs->o.modules);
        return 0;
}

/* r's process published its service.name after its first samples in r, with the same image
 * (not an exec): r's upload is that service's series too, though r is finished like a file
 * of another command (its name says the executable; the next file's, the service). */
static void service_arrived(struct recording *r, const char *service, const char *image)
{
        if (r->otel_named || !service || !*service ||
            strncmp(r->image, image ? image : "", CTXPROF_COMM_LEN))
                return;
        workload_identity_set_service(&r->id, service);
        r->otel_named = 1;
}

/* split=process: the open recording of this process, opened if there is room; NULL when the
 * sample has to go to the shared file. */
static struct recording *proc_rec(struct recording_set *rs, const struct decoded_sample *ds)
{
        const char *process = ds->process ? ds->process : "";
        struct recording *r = rs->last;
        pid_t pid = ds->pid;
        unsigned i;
        uint64_t now;

        if (!r || r->pid != pid) {
                r = NULL;
                for (i = 0; i < rs->nprocs; i++)
                        if (rs->procs[i]->pid == pid && !rs->procs[i]->retired) {
                                r = rs->procs[i];
                                break;
                        }
        }
        if (r && strncmp(r->process, process, CTXPROF_COMM_LEN)) {
                service_arrived(r, ds->service, ds->image);
                /* exec'ed into another command (or the pid was reused), or named by the
                 * service.name it published since (see service_arrived): a new file. The old
                 * one is finished at the next tick, not inside the sample callback. It keeps
                 * its slot until then; with no slot left for the new file it is finished
                 * here, as the new file needs it (close_proc: its writer ends in the
                 * background). */
                logr(rs, LOG_DEBUG, "process %d is now %s: finishing its %s file", (int)pid,
                     process, r->process);
                if (rs->nprocs < rs->cfg.split_max_open) {
                        r->retired = 1;
                        r->sink = (struct sample_sink){0};
                } else {
                        struct jfr_sink_engine_counters ec;

                        for (i = 0; rs->procs[i] != r; i++)
                                ;
                        engine(rs, &ec);
                        close_proc(rs, i, &ec);
                }
                rs->last = NULL;
                r = NULL;
        }
        if (r) {
                rs->last = r;
                return r;
        }
        now = mono_ms();
        if (rs->nprocs >= rs->cfg.split_max_open) {
                if (!rs->overflow_logged_ms || now - rs->overflow_logged_ms >= OVERFLOW_LOG_MS) {
                        rs->overflow_logged_ms = now;
                        logr(rs, LOG_WARNING,
                             "%u per-process files open (split-max-open): samples of process %d "
                             "(%s) and further ones go to the shared host file",
                             rs->nprocs, (int)pid, process);
                }
                return NULL;
        }
        if (rs->proc_fail_ms && now - rs->proc_fail_ms < OPEN_RETRY_MS)
                return NULL;
        r = calloc(1, sizeof(*r));
        if (!r || open_rec(rs, r, pid, ds->start, process, ds->service, ds->image)) {
                free(r);
                rs->proc_fail_ms = now ? now : 1;
                return NULL; /* to the shared host file */
        }
        rs->proc_fail_ms = 0;
        rs->procs[rs->nprocs++] = r;
        rs->last = r;
        return r;
}

/* The host file's identity of the sample's process: read at its first sample in the file
 * (its service updated when it publishes a service.name later), bounded. */
static void host_process(struct recording_set *rs, const struct decoded_sample *ds)
{
        struct host_procs *h = &rs->host_procs;
        unsigned i = h->last;

        if (!ds->pid)
                return;
        if (ds->pid == h->refused) {
                rs->c.samples_grouped++;
                h->grouped++;
                return;
        }
        if (i >= h->n || h->id[i].pid != ds->pid)
                for (i = 0; i < h->n && h->id[i].pid != ds->pid; i++)
                        ;
        if (i == h->n) {
                if (h->n == RECORDING_HOST_SERIES_MAX) {
                        rs->c.samples_grouped++;
                        h->grouped++;
                        h->refused = ds->pid;
                        return;
                }
                workload_identity_read(ds->pid, ds->start, ds->service, ds->process, rs->host,
                                       &h->id[i], rs->o.target);
                h->otel[i] = ds->service && *ds->service;
                h->n++;
        } else if (!h->otel[i] && ds->service && *ds->service) {
                workload_identity_set_service(&h->id[i], ds->service);
                h->otel[i] = 1;
        }
        h->last = i;
}

static int route(void *ctx, const struct decoded_sample *ds)
{
        struct recording_set *rs = ctx;
        struct recording *r;

        if (rs->split == SPLIT_PROCESS) {
                r = proc_rec(rs, ds);
                if (r) {
                        r->samples++;
                        return r->sink.sample(r->sink.ctx, ds);
                }
                if (!rs->have_host) {
                        uint64_t now = mono_ms();

                        if (!rs->host_fail_ms || now - rs->host_fail_ms >= OPEN_RETRY_MS) {
                                if (open_host(rs))
                                        rs->host_fail_ms = now ? now : 1;
                                else
                                        rs->host_fail_ms = 0;
                        }
                }
                if (rs->have_host)
                        rs->c.samples_overflow++;
        }
        if (!rs->have_host) {
                rs->c.samples_no_file++;
                return 0;
        }
        rs->host_rec.samples++;
        if (rs->o.finished)
                host_process(rs, ds);
        return rs->host_rec.sink.sample(rs->host_rec.sink.ctx, ds);
}

struct sample_sink recording_set_as_sink(struct recording_set *rs)
{
        return (struct sample_sink){.ctx = rs, .sample = route};
}

/* Cut a chunk when its period is over; 1 = the file is due for rotation. */
static int tick_rec(struct recording_set *rs, struct recording *r, uint64_t now,
                    struct engine_now *eng)
{
        struct jfr_sink_engine_counters ec;
        struct jfr_sink_counters jc;

        if (now * NS_PER_MS >= jfr_sink_next_cut(r->js)) {
                rec_counters(rs, r, engine_now(eng), &ec);
                jfr_sink_tick(r->js, now * NS_PER_MS, &ec);
        }
        jfr_sink_get_counters(r->js, &jc);
        /* Chunks the writer could not append (disk full, I/O error) are lost, the file keeps
         * its complete chunks and the next chunk is tried again: say so once per change. */
        if (jc.chunks_failed > r->failed_logged) {
                logr(rs, LOG_ERROR,
                     "writing a chunk to %s failed: %s (%llu chunks lost so far, %llu samples; "
                     "the file keeps its complete chunks, the next chunk is tried again)",
                     r->file.part, strerror(-jc.last_error), (unsigned long long)jc.chunks_failed,
                     (unsigned long long)jc.samples_dropped);
                r->failed_logged = jc.chunks_failed;
                r->written_at_failure = jc.chunks_written;
        } else if (r->failed_logged && jc.chunks_written > r->written_at_failure &&
                   !jc.latest_error) {
                logr(rs, LOG_INFO, "writing to %s again", r->file.part);
                r->written_at_failure = UINT64_MAX; /* until the next failure */
        }
        return rs->cfg.rotate == ROTATE_PERIOD ? now - r->start_ms >= rs->cfg.rotate_period_ms
                                               : jc.bytes_written >= rs->cfg.rotate_size;
}

/* Free the shared symbolizer's names once no sink can use them any more: when no
 * per-process file is open or being finished (their writers use it), or (finishing every
 * per-process file first, freed at a later tick) when they have grown past
 * SHARED_SYM_MAX_BYTES. */
static void renew_symbolizer(struct recording_set *rs, struct engine_now *eng)
{
        struct symbolizer_stats st;

        if (!rs->sym)
                return;
        symbolizer_stats(rs->sym, &st);
        if (rs->nprocs && st.string_bytes > SHARED_SYM_MAX_BYTES) {
                logr(rs, LOG_INFO,
                     "symbol names of sampled processes take %llu MiB: finishing the %u "
                     "per-process files to free them (each reopens at its next sample)",
                     (unsigned long long)(st.string_bytes >> 20), rs->nprocs);
                while (rs->nprocs)
                        close_proc(rs, rs->nprocs - 1, engine_now(eng));
        }
        /* the writers of files being finished still use it */
        if (rs->nprocs || rs->nclosing || !st.lookups)
                return;
        logr(rs, LOG_DEBUG, "no per-process file open: freeing %llu bytes of symbol names",
             (unsigned long long)st.string_bytes);
        symbolizer_free(rs->sym);
        rs->sym = symbolizer_new(rs->o.modules); /* NULL: each sink its own */
}

uint64_t recording_set_written_before(struct recording_set *rs)
{
        uint64_t t = UINT64_MAX, w;

        if (rs->have_host && rs->host_rec.js && (w = jfr_sink_written_before(rs->host_rec.js)) < t)
                t = w;
        for (unsigned i = 0; i < rs->nprocs; i++)
                if (rs->procs[i]->js && (w = jfr_sink_written_before(rs->procs[i]->js)) < t)
                        t = w;
        for (unsigned i = 0; i < rs->nclosing; i++)
                if ((w = jfr_sink_written_before(rs->closing[i]->js)) < t)
                        t = w;
        return t;
}

unsigned recording_set_tick(struct recording_set *rs, uint64_t now)
{
        struct engine_now eng = {.rs = rs};
        unsigned finished = 0, i = 0;
        int check = now - rs->alive_checked_ms >= ALIVE_CHECK_MS;

        rs->last_tick_ms = now;
        if (rs->have_host && tick_rec(rs, &rs->host_rec, now, &eng)) {
                close_host(rs, engine_now(&eng));
                finished++;
                /* split=process: the shared file opens again when a sample needs it */
                if (rs->split != SPLIT_PROCESS)
                        open_host(rs);
        }
        if (rs->split != SPLIT_PROCESS && !rs->have_host &&
            now - rs->last_open_ms >= OPEN_RETRY_MS) {
                /* The output failed (disk full, directory removed): retry. */
                rs->last_open_ms = now;
                open_host(rs);
        }
        if (check)
                rs->alive_checked_ms = now;
        while (i < rs->nprocs) {
                struct recording *r = rs->procs[i];

                if (r->retired) {
                        close_proc(rs, i, engine_now(&eng)); /* the last entry moved to i */
                        continue;
                }
                if (check) {
                        if (rs->o.alive && !rs->o.alive(rs->o.ctx, r->pid)) {
                                if (!r->gone_ms)
                                        r->gone_ms = now ? now : 1;
                        } else {
                                r->gone_ms = 0;
                        }
                }
                if ((r->gone_ms && now - r->gone_ms >= GONE_GRACE_MS) ||
                    tick_rec(rs, r, now, &eng)) {
                        close_proc(rs, i, engine_now(&eng)); /* the last entry moved to i */
                        continue;
                }
                i++;
        }
        finished += reap_closed(rs, 0, NULL);
        if (rs->split == SPLIT_PROCESS)
                renew_symbolizer(rs, &eng);
        return finished;
}

static uint64_t min_u64(uint64_t a, uint64_t b)
{
        return a < b ? a : b;
}

/* When r needs a tick: its chunk's cut (rounded up to the ms the tick counts in), its
 * rotation. */
static uint64_t rec_due(const struct recording_set *rs, const struct recording *r, uint64_t now)
{
        uint64_t due = (jfr_sink_next_cut(r->js) + NS_PER_MS - 1) / NS_PER_MS;

        /* Due but not cut by the last tick (its writer behind): look again CUT_RETRY_MS after
         * that tick; the size, SIZE_CHECK_MS after it. Not after `now`: asked at every wake,
         * that would push an overdue tick forward for as long as something else (the ring)
         * wakes the loop more often. */
        (void)now;
        if (due <= rs->last_tick_ms)
                due = rs->last_tick_ms + CUT_RETRY_MS;
        if (rs->cfg.rotate == ROTATE_PERIOD)
                return min_u64(due, r->start_ms + rs->cfg.rotate_period_ms);
        return min_u64(due, rs->last_tick_ms + SIZE_CHECK_MS);
}

uint64_t recording_set_next_tick(const struct recording_set *rs, uint64_t now)
{
        uint64_t due = UINT64_MAX;

        if (rs->have_host)
                due = rec_due(rs, &rs->host_rec, now);
        else if (rs->split != SPLIT_PROCESS)
                due = rs->last_open_ms + OPEN_RETRY_MS;
        if (rs->nprocs)
                due = min_u64(due, rs->alive_checked_ms + ALIVE_CHECK_MS);
        for (unsigned i = 0; i < rs->nprocs; i++)
                due = min_u64(due, rs->procs[i]->retired ? now : rec_due(rs, rs->procs[i], now));
        if (rs->nclosing)
                due = min_u64(due, rs->last_tick_ms + CLOSING_POLL_MS);
        return due;
}

int recording_set_finish(struct recording_set *rs)
{
        struct jfr_sink_engine_counters eng;
        int err, rc = 0;

        engine(rs, &eng);
        while (rs->nprocs)
                close_proc(rs, rs->nprocs - 1, &eng);
        reap_closed(rs, 1, &rc);
        err = close_host(rs, &eng);
        return rc ? rc : err;
}

void recording_set_free(struct recording_set *rs)
{
        unsigned i;

        if (!rs)
                return;
        /* Not finished: the writers stop, the .part files stay (every chunk readable). */
        for (i = 0; i < rs->nprocs; i++) {
                jfr_sink_free(rs->procs[i]->js);
                free(rs->procs[i]);
        }
        for (i = 0; i < rs->nclosing; i++) { /* their last chunk cut: the writers finish it */
                jfr_sink_free(rs->closing[i]->js);
                free(rs->closing[i]);
        }
        if (rs->have_host)
                jfr_sink_free(rs->host_rec.js);
        symbolizer_free(rs->sym); /* after the sinks: their writers used it */
        if (rs->dfd >= 0)
                close(rs->dfd);
        free(rs->procs);
        free(rs->closing);
        free(rs);
}

static void add_sink_counters(struct recording_set_counters *out, struct jfr_sink *js)
{
        struct jfr_sink_counters jc;

        jfr_sink_get_counters(js, &jc);
        out->chunks_written += jc.chunks_written;
        out->bytes_written += jc.bytes_written;
}

void recording_set_get_counters(struct recording_set *rs, struct recording_set_counters *out)
{
        unsigned i;

        *out = rs->c;                         /* finished files */
        out->open_process_files = rs->nprocs; /* with the retired ones (until the tick) */
        for (i = 0; i < rs->nprocs; i++)
                add_sink_counters(out, rs->procs[i]->js);
        for (i = 0; i < rs->nclosing; i++)
                add_sink_counters(out, rs->closing[i]->js);
        if (rs->have_host)
                add_sink_counters(out, rs->host_rec.js);
}

const char *recording_set_file(struct recording_set *rs, pid_t pid)
{
        unsigned i;

        if (!pid)
                return rs->have_host ? rs->host_rec.file.part : NULL;
        for (i = 0; i < rs->nprocs; i++)
                if (rs->procs[i]->pid == pid && !rs->procs[i]->retired)
                        return rs->procs[i]->file.part;
        return NULL;
}
