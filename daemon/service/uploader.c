/* SPDX-License-Identifier: MIT */
/*
 * uploader.c — one upload target's delivery thread (see uploader.h). Owns the in-memory
 * queue of finished profiles, the target's spool and HTTP client, the retry state and the
 * counters. Must never block the caller of uploader_add on disk or network, remove a spool
 * entry the backend did not accept (except the counted drops: an answer that denies access
 * to the target is never one), or print.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "service/config.h"
#include "service/upload_series.h"
#include "service/upload_spool.h"
#include "service/uploader.h"
#include "sink/jfr_convert.h"
#include "util/clock.h"
#include "util/gzip.h"

#define IDLE_WAKE_MS 1000 /* spool age limit checked at least this often */

/* Files of one finished profile, shared by the queues of every target it went to. */
struct job_files {
        atomic_uint refs;
        int remove_labels;
        char *profile, *labels; /* labels NULL = none */
};

struct qjob {
        struct qjob *next;
        struct job_files *f;
        uint64_t from_s, until_s;
        char extra[UPLOAD_SPOOL_EXTRA];
        int have_id;
        struct workload_identity id;     /* the process (or host) the profile is of */
        struct workload_identity *procs; /* the host file's processes, or NULL */
        unsigned n_procs;
};

_Static_assert(UPLOAD_SERIES_EXTRA_LEN <= UPLOAD_SPOOL_EXTRA, "a spool entry holds the tags");

struct uploader {
        struct upload_target_config t;
        struct upload_config cfg;
        void *ctx;
        void (*log)(void *ctx, int level, const char *msg);
        struct upload_spool *sp;  /* the thread's */
        struct upload_client *cl; /* the thread's */
        pthread_t th;
        pthread_mutex_t mu; /* guards the queue, stopping, c */
        pthread_cond_t cv;
        struct qjob *head, *tail;
        int stopping;
        int reload;                /* uploader_reload_credentials asked */
        uint64_t stop_deadline_ms; /* monotonic */
        _Atomic int abort;         /* cut off an upload in flight */
        struct upload_counters c;
        /* the thread's retry state */
        unsigned failures;
        uint64_t next_try_ms; /* monotonic, 0 = now */
        long denied_status;   /* HTTP status of the denial that paused the target */
        unsigned rnd_seed;
};

const char *upload_drop_name(int why)
{
        static const char *const names[UPLOAD_DROP_N] = {"refused", "spool_full", "expired",
                                                         "corrupt", "spool_error"};

        return why >= 0 && why < UPLOAD_DROP_N ? names[why] : "?";
}

__attribute__((format(printf, 3, 4))) static void logu(struct uploader *u, int level,
                                                       const char *fmt, ...)
{
        char buf[1024];
        int n;
        va_list ap;

        if (!u->log)
                return;
        n = snprintf(buf, sizeof(buf), "upload %s: ", u->t.name);
        va_start(ap, fmt);
        vsnprintf(buf + n, sizeof(buf) - (size_t)n, fmt, ap);
        va_end(ap);
        u->log(u->ctx, level, buf);
}

uint64_t upload_backoff_ms(unsigned failures, uint64_t min_ms, uint64_t max_ms, double rnd)
{
        uint64_t d = min_ms;
        unsigned i;

        for (i = 1; i < failures && d < max_ms; i++)
                d *= 2;
        if (d > max_ms)
                d = max_ms;
        if (rnd < 0)
                rnd = 0;
        if (rnd > 1)
                rnd = 1;
        return d / 2 + (uint64_t)((double)(d - d / 2) * rnd);
}

static void files_put(struct job_files *f)
{
        if (atomic_fetch_sub(&f->refs, 1) != 1)
                return;
        if (f->remove_labels && f->labels)
                unlink(f->labels);
        free(f->profile);
        free(f->labels);
        free(f);
}

const char *upload_state_name(int state)
{
        static const char *const names[UPLOAD_STATE_N] = {"ok", "retrying", "paused"};

        return state >= 0 && state < UPLOAD_STATE_N ? names[state] : "?";
}

static void qjob_free(struct qjob *q)
{
        if (q)
                free(q->procs);
        free(q);
}

/* ---- main thread ---- */

/* j's processes name u's series: an upload by service of a host file (OTLP: one resource
 * each; Pyroscope: one request each when they are of more than one service, split_pyroscope). */
static int wants_procs(const struct uploader *u, const struct upload_job *j)
{
        return j->n_procs && j->procs && u->t.group_by == UPLOAD_GROUP_SERVICE;
}

int uploader_add(struct uploader *const *ups, unsigned n, const struct upload_job *j)
{
        struct job_files *f = calloc(1, sizeof(*f));
        struct qjob *q[UPLOAD_TARGETS_MAX] = {0};
        unsigned i;

        if (f) {
                f->profile = strdup(j->profile_path);
                f->labels = j->labels_path ? strdup(j->labels_path) : NULL;
                f->remove_labels = j->remove_labels;
                atomic_init(&f->refs, n);
        }
        for (i = 0; i < n && i < UPLOAD_TARGETS_MAX; i++)
                if ((q[i] = calloc(1, sizeof(*q[i]))) && wants_procs(ups[i], j) &&
                    (q[i]->procs = malloc(j->n_procs * sizeof(*j->procs)))) {
                        memcpy(q[i]->procs, j->procs, j->n_procs * sizeof(*j->procs));
                        q[i]->n_procs = j->n_procs;
                }
        for (i = 0; i < n; i++)
                if (!q[i] || !f || !f->profile || (j->labels_path && !f->labels) ||
                    (wants_procs(ups[i], j) && !q[i]->procs))
                        break;
        if (i < n) {
                for (i = 0; i < n; i++) {
                        pthread_mutex_lock(&ups[i]->mu);
                        ups[i]->c.dropped[UPLOAD_DROP_SPOOL_ERROR]++;
                        pthread_mutex_unlock(&ups[i]->mu);
                        logu(ups[i], LOG_ERROR, "%s not delivered: out of memory", j->profile_path);
                        qjob_free(q[i]);
                }
                if (f) {
                        free(f->profile);
                        free(f->labels);
                }
                free(f);
                return -ENOMEM;
        }
        for (i = 0; i < n; i++) {
                q[i]->f = f;
                q[i]->from_s = j->from_s;
                q[i]->until_s = j->until_s;
                snprintf(q[i]->extra, sizeof(q[i]->extra), "%s",
                         j->extra_tags ? j->extra_tags : "");
                q[i]->have_id = j->id != NULL;
                if (j->id)
                        q[i]->id = *j->id;
                pthread_mutex_lock(&ups[i]->mu);
                if (ups[i]->tail)
                        ups[i]->tail->next = q[i];
                else
                        ups[i]->head = q[i];
                ups[i]->tail = q[i];
                ups[i]->c.queue++;
                pthread_cond_signal(&ups[i]->cv);
                pthread_mutex_unlock(&ups[i]->mu);
        }
        return 0;
}

void uploader_get_counters(struct uploader *u, struct upload_counters *out)
{
        pthread_mutex_lock(&u->mu);
        *out = u->c;
        pthread_mutex_unlock(&u->mu);
}

void uploader_reload_credentials(struct uploader *u)
{
        pthread_mutex_lock(&u->mu);
        u->reload = 1;
        pthread_cond_signal(&u->cv);
        pthread_mutex_unlock(&u->mu);
}

const char *uploader_name(const struct uploader *u)
{
        return u->t.name;
}

/* ---- the uploader's thread ---- */

static void gauges(struct uploader *u)
{
        uint64_t files, bytes;

        upload_spool_usage(u->sp, &files, &bytes);
        pthread_mutex_lock(&u->mu);
        u->c.spool_files = files;
        u->c.spool_bytes = bytes;
        pthread_mutex_unlock(&u->mu);
}

static void count_drops(struct uploader *u, const struct upload_spool_dropped *d)
{
        if (!d->too_old && !d->over_size && !d->corrupt)
                return;
        pthread_mutex_lock(&u->mu);
        u->c.dropped[UPLOAD_DROP_EXPIRED] += d->too_old;
        u->c.dropped[UPLOAD_DROP_SPOOL_FULL] += d->over_size;
        u->c.dropped_bytes += d->bytes;
        pthread_mutex_unlock(&u->mu);
        if (d->over_size)
                logu(u, LOG_WARNING,
                     "spool over spool-size: dropped the %u oldest profiles not yet delivered",
                     d->over_size);
        if (d->too_old)
                logu(u, LOG_WARNING, "dropped %u profiles older than spool-age, not delivered",
                     d->too_old);
}

static void trim(struct uploader *u)
{
        struct upload_spool_dropped d = {0};

        upload_spool_trim(u->sp, u->cfg.spool_size, u->cfg.spool_age_ms,
                          (uint64_t)time(NULL) * 1000, &d);
        count_drops(u, &d);
}

/* The OTLP body of a finished JFR file: converted, gzip'd, in a memfd at offset 0. The
 * descriptor or -errno. */
static int otlp_body(struct uploader *u, const struct qjob *q)
{
        struct upload_series_otlp res;
        struct upload_series_set set;
        struct jfr_convert_resources cr;
        char *buf = NULL;
        size_t len = 0;
        FILE *m = open_memstream(&buf, &len);
        int err = upload_series_set_new(&u->t, q->procs, q->n_procs, &set);

        upload_series_otlp(&u->t, q->have_id ? &q->id : NULL, &res);
        cr = (struct jfr_convert_resources){res.pid, &res.attrs,
                                            set.n ? upload_series_resource_of : NULL, &set};
        if (!err)
                err = m ? jfr_convert_file(q->f->profile, "otlp", res.service, &cr, m) : -ENOMEM;
        upload_series_set_free(&set);

        if (m && fclose(m) && !err)
                err = -ENOMEM;
        if (!err)
                err = gzip_memfd((const uint8_t *)buf, len);
        free(buf);
        return err;
}

/* A Pyroscope upload of a host file whose known processes are of more than one service: one
 * request per process (else the file goes whole, as written, under the application). */
static int split_pyroscope(const struct uploader *u, const struct qjob *q)
{
        if (u->t.format != UPLOAD_FORMAT_JFR || u->t.group_by != UPLOAD_GROUP_SERVICE)
                return 0;
        for (unsigned i = 1; i < q->n_procs; i++)
                if (strcmp(q->procs[i].service, q->procs[0].service))
                        return 1;
        return 0;
}

/* One series of a split host file: pid's samples (0: those of no known process) as a gzip'd
 * pprof in a memfd, spooled with the tags of id (the process's; the host's for pid 0).
 * Nothing is spooled for a process without samples. 0 or -errno. */
static int spool_pid(struct uploader *u, struct qjob *q, struct jfr_convert *rc, uint32_t pid,
                     const struct workload_identity *id)
{
        char tags[UPLOAD_SERIES_EXTRA_LEN];
        struct upload_spool_source src = {.format = UPLOAD_FORMAT_PPROF,
                                          .from_s = q->from_s,
                                          .until_s = q->until_s,
                                          .extra = tags,
                                          .labels_fd = -1};
        FILE *f;
        int err, dupfd;

        if (!jfr_convert_samples_of(rc, pid))
                return 0;
        if (upload_series_tags(&u->t, id, q->extra, tags, sizeof(tags)))
                logu(u, LOG_WARNING, "tags of %s (pid %u) cut to %zu bytes: %s", q->f->profile, pid,
                     sizeof(tags) - 1, tags);
        src.profile_fd = memfd_create("ctxprof-pprof", MFD_CLOEXEC);
        if (src.profile_fd < 0)
                return -errno;
        dupfd = dup(src.profile_fd);
        f = dupfd >= 0 ? fdopen(dupfd, "w") : NULL;
        err = f ? jfr_convert_write_pid(rc, f, pid) : -errno;
        if (!f && dupfd >= 0)
                close(dupfd);
        if (f && fclose(f) && !err)
                err = -EIO;
        if (!err && lseek(src.profile_fd, 0, SEEK_SET) < 0)
                err = -errno;
        if (!err)
                err = upload_spool_add(u->sp, &src, (uint64_t)wall_ns() / 1000000ull);
        close(src.profile_fd);
        if (!err) {
                pthread_mutex_lock(&u->mu);
                u->c.spooled++;
                pthread_mutex_unlock(&u->mu);
        }
        return err;
}

/* A host file split for Pyroscope: read once, then one spool entry per process with samples
 * and one for the rest. Each entry is delivered (and removed) on its own: a retry resends
 * only the series not yet accepted. 0 or -errno (the entries spooled before stay). */
static int spool_split(struct uploader *u, struct qjob *q)
{
        struct upload_series_set set;
        struct jfr_convert *rc = jfr_convert_new("pprof", u->t.application);
        int err = upload_series_set_new(&u->t, q->procs, q->n_procs, &set);
        struct jfr_convert_resources cr = {0, NULL, upload_series_resource_of, &set};

        if (!err)
                err = rc ? jfr_convert_read_file(rc, q->f->profile, &cr) : -ENOMEM;
        for (unsigned i = 0; !err && i < q->n_procs; i++)
                err = spool_pid(u, q, rc, (uint32_t)q->procs[i].pid, &q->procs[i]);
        if (!err)
                err = spool_pid(u, q, rc, 0, q->have_id ? &q->id : NULL);
        jfr_convert_free(rc);
        upload_series_set_free(&set);
        return err;
}

/* Copy one finished profile into the spool, with the tags of its series. */
static void spool_job(struct uploader *u, struct qjob *q)
{
        char tags[UPLOAD_SERIES_EXTRA_LEN];
        struct upload_spool_source src = {.format = u->t.format,
                                          .from_s = q->from_s,
                                          .until_s = q->until_s,
                                          .extra = tags,
                                          .labels_fd = -1};
        int err;

        if (split_pyroscope(u, q)) {
                err = spool_split(u, q);
                goto done;
        }
        if (upload_series_tags(&u->t, q->have_id ? &q->id : NULL, q->extra, tags, sizeof(tags)))
                logu(u, LOG_WARNING, "tags of %s cut to %zu bytes: %s", q->f->profile,
                     sizeof(tags) - 1, tags);
        if (u->t.format == UPLOAD_FORMAT_OTLP)
                src.profile_fd = otlp_body(u, q);
        else if ((src.profile_fd = open(q->f->profile, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) < 0)
                src.profile_fd = -errno;
        err = src.profile_fd < 0 ? src.profile_fd : 0;
        if (!err && q->f->labels && u->t.format != UPLOAD_FORMAT_OTLP) {
                src.labels_fd = open(q->f->labels, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
                if (src.labels_fd < 0 && errno != ENOENT)
                        err = -errno;
        }
        if (!err)
                err = upload_spool_add(u->sp, &src, (uint64_t)wall_ns() / 1000000ull);
        if (src.profile_fd >= 0)
                close(src.profile_fd);
        if (src.labels_fd >= 0)
                close(src.labels_fd);
        if (!err) {
                pthread_mutex_lock(&u->mu);
                u->c.spooled++;
                pthread_mutex_unlock(&u->mu);
        }
done:
        pthread_mutex_lock(&u->mu);
        if (err)
                u->c.dropped[UPLOAD_DROP_SPOOL_ERROR]++;
        u->c.queue--;
        pthread_mutex_unlock(&u->mu);
        if (err)
                logu(u, LOG_ERROR, "cannot spool %s: %s: it is not delivered (the file stays)",
                     q->f->profile, strerror(-err));
        else
                logu(u, LOG_DEBUG, "spooled %s", q->f->profile);
        files_put(q->f);
        qjob_free(q);
}

/* Take the queue and spool it; 1 when stopping was asked. */
static int spool_queued(struct uploader *u)
{
        struct qjob *q, *next;
        int stopping;

        pthread_mutex_lock(&u->mu);
        q = u->head;
        u->head = u->tail = NULL;
        stopping = u->stopping;
        pthread_mutex_unlock(&u->mu);
        for (; q; q = next) {
                next = q->next;
                spool_job(u, q);
        }
        return stopping;
}

/* upload_request.tick: profiles finished while a request hangs are spooled at once, not
 * after it (a SIGKILL in between would lose them uncounted). No trim here: the entry in
 * flight must stay. */
static void spool_during_send(void *ctx)
{
        spool_queued(ctx);
}

static int drain_queue(struct uploader *u)
{
        int stopping = spool_queued(u);

        trim(u);
        gauges(u);
        return stopping;
}

/* Sleep until the next try (or IDLE_WAKE_MS when there is nothing to send), a new job or a
 * stop. */
static void wait_for_work(struct uploader *u, int have_entries)
{
        uint64_t now = mono_ms(), until = now + IDLE_WAKE_MS;
        struct timespec ts;

        if (have_entries && u->next_try_ms > now && u->next_try_ms < until)
                until = u->next_try_ms;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        ts.tv_sec += (time_t)((until - now) / 1000);
        ts.tv_nsec += (long)((until - now) % 1000) * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
                ts.tv_sec++;
                ts.tv_nsec -= 1000000000L;
        }
        pthread_mutex_lock(&u->mu);
        if (!u->head && !u->stopping && !u->reload)
                pthread_cond_timedwait(&u->cv, &u->mu, &ts);
        pthread_mutex_unlock(&u->mu);
}

static void set_state(struct uploader *u, int state)
{
        pthread_mutex_lock(&u->mu);
        u->c.pauses += state == UPLOAD_STATE_PAUSED && u->c.state != UPLOAD_STATE_PAUSED;
        u->c.state = state;
        pthread_mutex_unlock(&u->mu);
}

/* A denial (401, 403, 404...): logged when the target starts denying, or denies with another
 * status, not at each attempt; the spool stays whole. */
static void on_denied(struct uploader *u, const struct upload_result *r, uint64_t delay)
{
        uint64_t files, bytes;

        if (u->c.state == UPLOAD_STATE_PAUSED && u->denied_status == r->http_status)
                return;
        u->denied_status = r->http_status;
        upload_spool_usage(u->sp, &files, &bytes);
        logu(u, LOG_ERROR,
             "%s denies access (HTTP %ld: %s): paused, the %llu profiles in the spool are kept "
             "and tried again with backoff up to retry-max (next in %llu ms); fix the URL or "
             "the credentials files and send SIGHUP",
             upload_client_url(u->cl), r->http_status, r->detail, (unsigned long long)files,
             (unsigned long long)delay);
        set_state(u, UPLOAD_STATE_PAUSED);
}

static void on_failure(struct uploader *u, const struct upload_spool_entry *e,
                       const struct upload_result *r)
{
        uint64_t delay;

        u->failures++;
        delay = upload_backoff_ms(u->failures, u->cfg.retry_min_ms, u->cfg.retry_max_ms,
                                  (double)rand_r(&u->rnd_seed) / RAND_MAX);
        if (r->retry_after_ms)
                delay = r->retry_after_ms < UPLOAD_RETRY_AFTER_MAX_MS ? r->retry_after_ms
                                                                      : UPLOAD_RETRY_AFTER_MAX_MS;
        u->next_try_ms = mono_ms() + delay;
        if (r->outcome == UPLOAD_HTTP_DENIED) {
                on_denied(u, r, delay);
                return;
        }
        if (u->c.state == UPLOAD_STATE_PAUSED)
                logu(u, LOG_INFO, "no longer denied access (%s): retrying",
                     upload_outcome_name(r->outcome));
        set_state(u, UPLOAD_STATE_RETRYING);
        /* 1st, 2nd, 4th, 8th ... failure in a row: a backend down for hours logs a few lines */
        if (!(u->failures & (u->failures - 1)))
                logu(u, LOG_WARNING,
                     "sending %s to %s failed (%s%s%.0ld: %s), attempt %u; next in %llu ms%s",
                     e->name, upload_client_url(u->cl), upload_outcome_name(r->outcome),
                     r->http_status ? ", HTTP " : "", r->http_status, r->detail, u->failures,
                     (unsigned long long)delay, r->retry_after_ms ? " (Retry-After)" : "");
}

static void on_result(struct uploader *u, struct upload_spool_entry *e,
                      const struct upload_result *r)
{
        int drop = r->outcome == UPLOAD_HTTP_REFUSED, ok = r->outcome == UPLOAD_OK;

        pthread_mutex_lock(&u->mu);
        u->c.bytes_attempted += r->bytes_sent;
        if (r->http_status)
                u->c.last_http_status = r->http_status;
        if (ok) {
                u->c.uploads_ok++;
                u->c.bytes_sent += r->bytes_sent;
                u->c.last_success_wall_s = (uint64_t)time(NULL);
                u->c.rejected += r->rejected;
        } else if (r->outcome != UPLOAD_ABORTED) {
                u->c.failures[r->outcome]++;
        }
        if (drop) {
                u->c.dropped[UPLOAD_DROP_REFUSED]++;
                u->c.dropped_bytes += e->bytes;
        }
        pthread_mutex_unlock(&u->mu);
        if (ok && r->rejected)
                logu(u, LOG_WARNING,
                     "%s accepted %s in part: %llu profiles rejected (partial success: %s)",
                     upload_client_url(u->cl), e->name, (unsigned long long)r->rejected,
                     r->detail[0] ? r->detail : "no message");
        if (ok || drop) {
                if (drop)
                        logu(u, LOG_ERROR, "%s refused %s (HTTP %ld: %s): dropped",
                             upload_client_url(u->cl), e->name, r->http_status, r->detail);
                else if (u->failures)
                        logu(u, LOG_INFO, "delivering again after %u failed attempts%s",
                             u->failures,
                             u->c.state == UPLOAD_STATE_PAUSED ? " (access denied until now)" : "");
                upload_spool_remove(u->sp, e);
                u->failures = 0;
                u->next_try_ms = 0;
                set_state(u, UPLOAD_STATE_OK);
                return;
        }
        if (r->outcome != UPLOAD_ABORTED)
                on_failure(u, e, r);
}

/* SIGHUP: a new client with the credentials files as they are now, tried at once; the old
 * one stays when they are refused. */
static void reload_credentials(struct uploader *u)
{
        struct upload_client *nc;
        char why[PATH_MAX + 256];
        int want, err;

        pthread_mutex_lock(&u->mu);
        want = u->reload;
        u->reload = 0;
        pthread_mutex_unlock(&u->mu);
        if (!want)
                return;
        err = upload_client_new(&u->t, &nc, why, sizeof(why));
        if (err) {
                logu(u, LOG_ERROR, "credentials not re-read: %s: the previous ones stay in use",
                     why[0] ? why : strerror(-err));
                return;
        }
        upload_client_free(u->cl);
        u->cl = nc;
        pthread_mutex_lock(&u->mu);
        u->c.credential_reloads++;
        pthread_mutex_unlock(&u->mu);
        logu(u, LOG_INFO, "credentials re-read%s", u->next_try_ms ? ": trying again now" : "");
        u->next_try_ms = 0;
}

/* Send the oldest entry once. */
static void send_oldest(struct uploader *u)
{
        struct upload_spool_entry e;
        struct upload_result r;
        int rc = upload_spool_oldest(u->sp, &e);

        if (rc == -EBADMSG) {
                logu(u, LOG_ERROR, "spool entry %s is unreadable: dropped", e.name);
                pthread_mutex_lock(&u->mu);
                u->c.dropped[UPLOAD_DROP_CORRUPT]++;
                u->c.dropped_bytes += e.bytes;
                pthread_mutex_unlock(&u->mu);
                upload_spool_remove(u->sp, &e);
                return;
        }
        if (rc <= 0) {
                if (rc < 0 && rc != -EAGAIN) {
                        logu(u, LOG_ERROR, "cannot open spool entry %s: %s", e.name, strerror(-rc));
                        u->next_try_ms = mono_ms() + u->cfg.retry_max_ms;
                }
                return;
        }
        struct upload_request rq = {
            .format = (int)e.h.format,
            .from_s = e.h.from_s,
            .until_s = e.h.until_s,
            .extra_tags = e.extra,
            .profile_fd = e.fd,
            .profile_off = e.profile_off,
            .profile_len = e.h.profile_len,
            .labels_fd = e.fd,
            .labels_off = e.labels_off,
            .labels_len = e.h.labels_len,
            .tick = spool_during_send,
            .tick_ctx = u,
        };
        upload_client_send(u->cl, &rq, &u->abort, &r);
        on_result(u, &e, &r);
        upload_spool_release(&e);
        gauges(u);
}

static void *uploader_main(void *arg)
{
        struct uploader *u = arg;
        uint64_t files, bytes;

        for (;;) {
                int stopping = drain_queue(u);
                uint64_t now;

                reload_credentials(u);
                now = mono_ms();
                upload_spool_usage(u->sp, &files, &bytes);
                if (stopping && (!files || now >= u->stop_deadline_ms || u->failures))
                        break; /* what is left is sent by the next daemon */
                if (files && now >= u->next_try_ms)
                        send_oldest(u);
                else
                        wait_for_work(u, files > 0);
        }
        return NULL;
}

int uploader_new(const struct uploader_opts *o, struct uploader **out, char *why, size_t why_len)
{
        struct uploader *u = calloc(1, sizeof(*u));
        uint64_t files, bytes;
        pthread_condattr_t ca;
        int err;

        *out = NULL;
        why[0] = '\0';
        if (!u)
                return -ENOMEM;
        u->t = *o->target;
        u->cfg = *o->cfg;
        u->ctx = o->ctx;
        u->log = o->log;
        u->rnd_seed = (unsigned)(wall_ns() ^ (uint64_t)getpid());
        err = upload_spool_open(o->spool_dir, &u->sp, why, why_len);
        if (err) {
                if (!why[0])
                        snprintf(why, why_len, "spool %s: %s", o->spool_dir, strerror(-err));
                free(u);
                return err;
        }
        err = upload_client_new(&u->t, &u->cl, why, why_len);
        if (err) {
                upload_spool_close(u->sp);
                free(u);
                return err;
        }
        upload_spool_usage(u->sp, &files, &bytes);
        u->c.spool_files = files;
        u->c.spool_bytes = bytes;
        if (files)
                logu(u, LOG_INFO, "%llu profiles (%llu bytes) in the spool from before: sending",
                     (unsigned long long)files, (unsigned long long)bytes);
        pthread_mutex_init(&u->mu, NULL);
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_cond_init(&u->cv, &ca);
        pthread_condattr_destroy(&ca);
        err = -pthread_create(&u->th, NULL, uploader_main, u);
        if (!err)
                pthread_setname_np(u->th, "ctxprof-upload"); /* for top -H, benches */
        if (err) {
                upload_client_free(u->cl);
                upload_spool_close(u->sp);
                free(u);
                return err;
        }
        *out = u;
        return 0;
}

void uploader_stop(struct uploader *u, uint64_t grace_ms, struct upload_counters *last)
{
        struct timespec ts;

        if (!u)
                return;
        pthread_mutex_lock(&u->mu);
        u->stopping = 1;
        u->stop_deadline_ms = mono_ms() + grace_ms;
        pthread_cond_signal(&u->cv);
        pthread_mutex_unlock(&u->mu);
        /* an upload in flight past the grace is cut off (its entry stays) */
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += (time_t)(grace_ms / 1000) + 1;
        if (pthread_timedjoin_np(u->th, NULL, &ts)) {
                atomic_store(&u->abort, 1);
                pthread_join(u->th, NULL);
        }
        if (last)
                *last = u->c; /* the thread is gone */
        upload_client_free(u->cl);
        upload_spool_close(u->sp);
        pthread_cond_destroy(&u->cv);
        pthread_mutex_destroy(&u->mu);
        free(u);
}
