/* SPDX-License-Identifier: MIT */
/*
 * upload_http.c — one Pyroscope /ingest or OTLP /v1development/profiles request through
 * libcurl (see upload_http.h). Owns the curl handle (reused: one connection kept alive per
 * target), the credentials read from their files and the request URL. Must never put a
 * credential in a URL or a message, follow a redirect, accept an unverified TLS peer, or
 * load a body into memory (an OTLP body comes gzip'd, from a descriptor, like the others).
 */
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "opentelemetry/proto/collector/profiles/v1development/profiles_service.pb-c.h"
#include "service/upload_http.h"
#include "service/upload_series.h"
#include "service/upload_spool.h"
#include "util/clock.h"

#define SECRET_MAX         4096 /* bytes of a credentials file */
#define CONNECT_TIMEOUT_MS 10000
#define URL_MAX            (UPLOAD_URL_LEN + 3 * (UPLOAD_APP_LEN + 2 * UPLOAD_TAGS_LEN) + 128)
#define SPY_NAME           "ctxprof"
#define OTLP_PATH          "/v1development/profiles"
#define RESPONSE_MAX       4096 /* bytes of an answer kept: a message, an OTLP response */
/* the answers that condemn the profile sent, not the target */
#define HTTP_BAD_REQUEST   400
#define HTTP_TOO_LARGE     413
#define HTTP_UNPROCESSABLE 422

struct upload_client {
        struct upload_target_config t;
        CURL *h;
        struct curl_slist *headers;
        char userpwd[SECRET_MAX];
        char url[URL_MAX]; /* of the last request */
};

/* A part's bytes: [off, off + len) of fd. */
struct part_src {
        int fd;
        uint64_t off, len, pos;
};

struct response {
        char *buf;
        size_t len, cap;
};

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc;

static void curl_init(void)
{
        curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

const char *upload_outcome_name(int outcome)
{
        static const char *const names[UPLOAD_OUTCOME_N] = {
            "ok",         "connect",      "timeout",     "network",
            "http_retry", "http_refused", "http_denied", "aborted"};

        return outcome >= 0 && outcome < UPLOAD_OUTCOME_N ? names[outcome] : "?";
}

/* path's content (NUL-terminated, at most SECRET_MAX - 1 bytes) when only root or this
 * user can read or change it. */
static int read_secret(const char *path, char *buf, size_t len, char *why, size_t why_len)
{
        int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
        struct stat st;
        ssize_t n;

        if (fd < 0) {
                snprintf(why, why_len, "%s: %s", path, strerror(errno));
                return -errno;
        }
        if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
                close(fd);
                snprintf(why, why_len, "%s: not a regular file", path);
                return -EPERM;
        }
        if ((st.st_uid != 0 && st.st_uid != geteuid()) ||
            (st.st_mode & (S_IROTH | S_IWOTH | S_IWGRP))) {
                close(fd);
                snprintf(why, why_len,
                         "%s: a secret must belong to root or this user and not be readable by "
                         "others or writable by its group (chmod 0600 or 0640)",
                         path);
                return -EPERM;
        }
        n = read(fd, buf, len - 1);
        close(fd);
        if (n < 0 || (size_t)n == len - 1) {
                snprintf(why, why_len, "%s: %s", path,
                         n < 0 ? strerror(errno) : "larger than 4 KiB");
                return n < 0 ? -EIO : -EINVAL;
        }
        buf[n] = '\0';
        return 0;
}

/* Each non-empty line "Name: value" becomes a request header. */
static int add_header_lines(struct upload_client *c, char *text, char *why, size_t why_len)
{
        char *save = NULL, *line;
        struct curl_slist *l;

        for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
                size_t n = strlen(line), name;

                while (n && (line[n - 1] == '\r' || line[n - 1] == ' '))
                        line[--n] = '\0';
                if (!n)
                        continue;
                name = strcspn(line, ": \t");
                if (!name || line[name] != ':') {
                        snprintf(why, why_len, "%s: a line is not \"Name: value\"",
                                 c->t.header_file);
                        return -EINVAL;
                }
                l = curl_slist_append(c->headers, line);
                if (!l)
                        return -ENOMEM;
                c->headers = l;
        }
        return 0;
}

static int load_credentials(struct upload_client *c, char *why, size_t why_len)
{
        char buf[SECRET_MAX];
        int err = 0;

        if (c->t.header_file[0]) {
                err = read_secret(c->t.header_file, buf, sizeof(buf), why, why_len);
                if (!err)
                        err = add_header_lines(c, buf, why, why_len);
                explicit_bzero(buf, sizeof(buf));
                if (err)
                        return err;
        }
        if (c->t.basic_auth_file[0]) {
                err =
                    read_secret(c->t.basic_auth_file, c->userpwd, sizeof(c->userpwd), why, why_len);
                if (err)
                        return err;
                c->userpwd[strcspn(c->userpwd, "\r\n")] = '\0';
                if (!strchr(c->userpwd, ':')) {
                        snprintf(why, why_len, "%s: not \"user:password\"", c->t.basic_auth_file);
                        return -EINVAL;
                }
        }
        return 0;
}

int upload_client_new(const struct upload_target_config *t, struct upload_client **out, char *why,
                      size_t why_len)
{
        struct upload_client *c;
        struct curl_slist *l;
        int err;

        *out = NULL;
        why[0] = '\0';
        pthread_once(&curl_once, curl_init);
        if (curl_init_rc != CURLE_OK)
                return -ENOMEM;
        c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        c->t = *t;
        c->h = curl_easy_init();
        /* no "Expect: 100-continue" round trip before a large body */
        l = c->h ? curl_slist_append(NULL, "Expect:") : NULL;
        if (!l) {
                upload_client_free(c);
                return -ENOMEM;
        }
        c->headers = l;
        err = load_credentials(c, why, why_len);
        if (err) {
                upload_client_free(c);
                return err;
        }
        *out = c;
        return 0;
}

void upload_client_free(struct upload_client *c)
{
        if (!c)
                return;
        if (c->h)
                curl_easy_cleanup(c->h);
        curl_slist_free_all(c->headers); /* may hold a credential: freed, not logged */
        explicit_bzero(c->userpwd, sizeof(c->userpwd));
        free(c);
}

const char *upload_client_url(const struct upload_client *c)
{
        return c->url[0] ? c->url : c->t.url;
}

static size_t part_read(char *buf, size_t size, size_t nitems, void *arg)
{
        struct part_src *p = arg;
        size_t want = size * nitems;
        ssize_t n;

        if (p->pos >= p->len)
                return 0;
        if (want > p->len - p->pos)
                want = (size_t)(p->len - p->pos);
        n = pread(p->fd, buf, want, (off_t)(p->off + p->pos));
        if (n <= 0)
                return CURL_READFUNC_ABORT; /* the entry is shorter than its header says */
        p->pos += (uint64_t)n;
        return (size_t)n;
}

static int part_seek(void *arg, curl_off_t offset, int origin)
{
        struct part_src *p = arg;

        if (origin != SEEK_SET || offset < 0 || (uint64_t)offset > p->len)
                return CURL_SEEKFUNC_FAIL;
        p->pos = (uint64_t)offset;
        return CURL_SEEKFUNC_OK;
}

/* The start of the response body (for a refusal's message); the rest is discarded. */
static size_t on_body(char *data, size_t size, size_t nmemb, void *arg)
{
        struct response *r = arg;
        size_t n = size * nmemb, room = r->cap - 1 - r->len;

        memcpy(r->buf + r->len, data, n < room ? n : room);
        r->len += n < room ? n : room;
        r->buf[r->len] = '\0';
        return n;
}

/* What the progress callback needs: the caller's abort flag and tick, and the request's
 * own clock. Both timeouts (connect, whole request) are on the request's time less the
 * ticks': a tick spools the files finished meanwhile (a copy, an fsync, an OTLP conversion),
 * and counted against the request it turned answered requests into timeouts, sent again:
 * delivered twice. */
enum { NOT_TIMED_OUT, TIMED_OUT_CONNECT, TIMED_OUT_ANSWER };
struct progress {
        const _Atomic int *abort;
        const struct upload_request *rq;
        CURL *h;
        uint64_t start_ns, tick_ns, timeout_ns, connect_timeout_ns;
        int connected, timed_out;
};

/* Called by libcurl at least once a second, connected or not, answer or not. */
static int on_progress(void *arg, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
        struct progress *p = arg;
        uint64_t t0 = mono_ns(), t1 = t0, own;
        curl_off_t ready_us = 0;

        (void)dt, (void)ut;
        if (p->rq->tick) {
                p->rq->tick(p->rq->tick_ctx);
                t1 = mono_ns();
                p->tick_ns += t1 - t0;
        }
        own = t1 - p->start_ns - p->tick_ns;
        /* ready to send: PRETRANSFER, not CONNECT, whose time is 0 on a reused connection */
        if (!p->connected &&
            (un > 0 || dn > 0 ||
             (!curl_easy_getinfo(p->h, CURLINFO_PRETRANSFER_TIME_T, &ready_us) && ready_us > 0)))
                p->connected = 1;
        if (!p->connected && own > p->connect_timeout_ns)
                p->timed_out = TIMED_OUT_CONNECT;
        else if (own > p->timeout_ns)
                p->timed_out = TIMED_OUT_ANSWER;
        return p->timed_out || (p->abort && *p->abort);
}

/* name=APP{tags,extra}, from, until, format: the query of Pyroscope's /ingest. */
static int build_url(struct upload_client *c, const struct upload_request *rq)
{
        char app[UPLOAD_APP_LEN], name[UPLOAD_APP_LEN + UPLOAD_TAGS_LEN + UPLOAD_SPOOL_EXTRA + 4];
        const char *x = upload_series_name(rq->extra_tags, c->t.application, app, sizeof(app));
        size_t bl = strlen(c->t.url);
        char *esc;
        int n;

        x = *x ? x : NULL;
        snprintf(name, sizeof(name), "%s{%s%s%s}", app, c->t.tags, c->t.tags[0] && x ? "," : "",
                 x ? x : "");
        esc = curl_easy_escape(c->h, name, 0);
        if (!esc)
                return -ENOMEM;
        while (bl && c->t.url[bl - 1] == '/')
                bl--;
        if (rq->format == UPLOAD_FORMAT_OTLP)
                n = snprintf(c->url, sizeof(c->url), "%.*s" OTLP_PATH, (int)bl, c->t.url);
        else
                n = snprintf(c->url, sizeof(c->url),
                             "%.*s/ingest?name=%s&from=%llu&until=%llu&format=%s&spyName=%s",
                             (int)bl, c->t.url, esc, (unsigned long long)rq->from_s,
                             (unsigned long long)rq->until_s,
                             rq->format == UPLOAD_FORMAT_PPROF ? "pprof" : "jfr", SPY_NAME);
        curl_free(esc);
        return n < (int)sizeof(c->url) ? 0 : -ENAMETOOLONG;
}

static int add_part(curl_mime *m, const char *name, struct part_src *src)
{
        curl_mimepart *p = curl_mime_addpart(m);

        if (!p || curl_mime_name(p, name) || curl_mime_filename(p, name) ||
            curl_mime_type(p, "application/octet-stream") ||
            curl_mime_data_cb(p, (curl_off_t)src->len, part_read, part_seek, NULL, src))
                return -ENOMEM;
        return 0;
}

/* The body: multipart m (Pyroscope), or the bytes of raw (OTLP). */
static void set_body(CURL *h, curl_mime *m, struct part_src *raw)
{
        if (m) {
                curl_easy_setopt(h, CURLOPT_MIMEPOST, m);
                return;
        }
        curl_easy_setopt(h, CURLOPT_POST, 1L);
        curl_easy_setopt(h, CURLOPT_READFUNCTION, part_read);
        curl_easy_setopt(h, CURLOPT_READDATA, raw);
        curl_easy_setopt(h, CURLOPT_SEEKFUNCTION, part_seek);
        curl_easy_setopt(h, CURLOPT_SEEKDATA, raw);
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)raw->len);
}

static void set_options(struct upload_client *c, curl_mime *m, struct part_src *raw,
                        struct curl_slist *headers, struct response *body, struct progress *pg,
                        char *errbuf)
{
        CURL *h = c->h;

        curl_easy_reset(h); /* keeps the connection cache */
        curl_easy_setopt(h, CURLOPT_URL, c->url);
        curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
        curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
        set_body(h, m, raw);
        curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
        curl_easy_setopt(h, CURLOPT_USERAGENT, "ctxprof");
        /* the timeouts are on_progress's (ticks excluded); libcurl's connect timeout only
         * keeps its default of 300 s out of the way */
        curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 1L);
        curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 2L);
        if (c->t.ca_file[0])
                curl_easy_setopt(h, CURLOPT_CAINFO, c->t.ca_file);
        if (c->userpwd[0]) {
                curl_easy_setopt(h, CURLOPT_HTTPAUTH, CURLAUTH_BASIC);
                curl_easy_setopt(h, CURLOPT_USERPWD, c->userpwd);
        }
        curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
        curl_easy_setopt(h, CURLOPT_WRITEDATA, body);
        curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
        curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
        curl_easy_setopt(h, CURLOPT_XFERINFODATA, (void *)pg);
        curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
}

static int classify(CURLcode rc, long status, const struct progress *pg)
{
        switch (rc) {
        case CURLE_OK:
                break;
        case CURLE_COULDNT_RESOLVE_HOST:
        case CURLE_COULDNT_RESOLVE_PROXY:
        case CURLE_COULDNT_CONNECT:
        case CURLE_SSL_CONNECT_ERROR:
        case CURLE_PEER_FAILED_VERIFICATION:
        case CURLE_SSL_CACERT_BADFILE:
                return UPLOAD_CONNECT;
        case CURLE_OPERATION_TIMEDOUT:
                return UPLOAD_TIMEOUT;
        case CURLE_ABORTED_BY_CALLBACK:
                if (pg->timed_out)
                        return UPLOAD_TIMEOUT;
                return pg->abort && *pg->abort ? UPLOAD_ABORTED : UPLOAD_NETWORK;
        default:
                return UPLOAD_NETWORK;
        }
        if (status >= 200 && status < 300)
                return UPLOAD_OK;
        if (status == 408 || status == 429 || status >= 500)
                return UPLOAD_HTTP_RETRY;
        /* only an answer about the request itself condemns the profile; an auth error (a
         * token rotated early) or a wrong path must not empty the spool */
        if (status == HTTP_BAD_REQUEST || status == HTTP_TOO_LARGE || status == HTTP_UNPROCESSABLE)
                return UPLOAD_HTTP_REFUSED;
        return UPLOAD_HTTP_DENIED;
}

/* The target's headers plus an OTLP body's content type and encoding (a new list to free),
 * or the target's own (NULL *own). 0 or -ENOMEM. */
static int request_headers(struct upload_client *c, int otlp, struct curl_slist **out,
                           struct curl_slist **own)
{
        static const char *const extra[] = {"Content-Type: application/x-protobuf",
                                            "Content-Encoding: gzip"};
        struct curl_slist *l = NULL, *n;

        *own = NULL;
        *out = c->headers;
        if (!otlp)
                return 0;
        for (const struct curl_slist *i = c->headers; i; i = i->next) {
                if (!(n = curl_slist_append(l, i->data)))
                        goto fail;
                l = n;
        }
        for (size_t i = 0; i < sizeof(extra) / sizeof(extra[0]); i++) {
                if (!(n = curl_slist_append(l, extra[i])))
                        goto fail;
                l = n;
        }
        *out = *own = l;
        return 0;
fail:
        curl_slist_free_all(l); /* may hold a credential: freed, not logged */
        return -ENOMEM;
}

/* An OTLP receiver's 2xx answer: its partial success (rejected profiles, message). */
static void otlp_partial(const struct response *body, struct upload_result *res)
{
        Opentelemetry__Proto__Collector__Profiles__V1development__ExportProfilesServiceResponse *r =
            opentelemetry__proto__collector__profiles__v1development__export_profiles_service_response__unpack(
                NULL, body->len, (const uint8_t *)body->buf);

        res->detail[0] = '\0';
        if (!r)
                return; /* an empty answer is a full success; another one is not ours to judge */
        if (r->partial_success && r->partial_success->rejected_profiles > 0) {
                res->rejected = (uint64_t)r->partial_success->rejected_profiles;
                snprintf(res->detail, sizeof(res->detail), "%s",
                         r->partial_success->error_message ? r->partial_success->error_message
                                                           : "");
        }
        opentelemetry__proto__collector__profiles__v1development__export_profiles_service_response__free_unpacked(
            r, NULL);
}

int upload_client_send(struct upload_client *c, const struct upload_request *rq,
                       const _Atomic int *abort, struct upload_result *res)
{
        struct part_src prof = {rq->profile_fd, rq->profile_off, rq->profile_len, 0};
        struct part_src lab = {rq->labels_fd, rq->labels_off, rq->labels_len, 0};
        char errbuf[CURL_ERROR_SIZE] = "", bodybuf[RESPONSE_MAX] = "";
        struct response body = {bodybuf, 0, sizeof(bodybuf)};
        struct curl_slist *headers, *own = NULL;
        int otlp = rq->format == UPLOAD_FORMAT_OTLP;
        curl_off_t up = 0, retry = 0;
        curl_mime *m = NULL;
        long hdr = 0;
        CURLcode rc;
        int err;

        memset(res, 0, sizeof(*res));
        err = build_url(c, rq);
        if (!err)
                err = request_headers(c, otlp, &headers, &own);
        if (!err && !otlp)
                m = curl_mime_init(c->h);
        if (err || (!otlp && !m) ||
            (m && add_part(m, rq->format == UPLOAD_FORMAT_PPROF ? "profile" : "jfr", &prof)) ||
            (m && rq->format == UPLOAD_FORMAT_JFR && rq->labels_fd >= 0 && rq->labels_len &&
             add_part(m, "labels", &lab))) {
                curl_mime_free(m);
                curl_slist_free_all(own);
                res->outcome = UPLOAD_NETWORK;
                snprintf(res->detail, sizeof(res->detail), "cannot build the request: %s",
                         strerror(err ? -err : ENOMEM));
                return res->outcome;
        }
        uint64_t connect_ms =
            c->t.timeout_ms < CONNECT_TIMEOUT_MS ? c->t.timeout_ms : CONNECT_TIMEOUT_MS;
        struct progress pg = {.abort = abort,
                              .rq = rq,
                              .h = c->h,
                              .start_ns = mono_ns(),
                              .timeout_ns = c->t.timeout_ms * NS_PER_MS,
                              .connect_timeout_ns = connect_ms * NS_PER_MS};

        set_options(c, m, &prof, headers, &body, &pg, errbuf);
        rc = curl_easy_perform(c->h);
        curl_easy_getinfo(c->h, CURLINFO_RESPONSE_CODE, &res->http_status);
        curl_easy_getinfo(c->h, CURLINFO_REQUEST_SIZE, &hdr);
        curl_easy_getinfo(c->h, CURLINFO_SIZE_UPLOAD_T, &up);
        curl_easy_getinfo(c->h, CURLINFO_RETRY_AFTER, &retry);
        curl_easy_setopt(c->h, CURLOPT_MIMEPOST, NULL);
        curl_easy_setopt(c->h, CURLOPT_HTTPHEADER, NULL);
        curl_mime_free(m);
        curl_slist_free_all(own);
        res->outcome = classify(rc, res->http_status, &pg);
        res->bytes_sent = (uint64_t)(hdr > 0 ? hdr : 0) + (uint64_t)(up > 0 ? up : 0);
        if ((res->http_status == 429 || res->http_status == 503) && retry > 0)
                res->retry_after_ms = (uint64_t)retry * 1000ull;
        if (pg.timed_out)
                snprintf(res->detail, sizeof(res->detail),
                         "%s within %llu ms (%llu ms spooling meanwhile not counted)",
                         pg.timed_out == TIMED_OUT_CONNECT ? "not connected" : "no answer",
                         (unsigned long long)(pg.timed_out == TIMED_OUT_CONNECT ? connect_ms
                                                                                : c->t.timeout_ms),
                         (unsigned long long)(pg.tick_ns / NS_PER_MS));
        else if (rc != CURLE_OK)
                snprintf(res->detail, sizeof(res->detail), "%s",
                         errbuf[0] ? errbuf : curl_easy_strerror(rc));
        else if (otlp && res->outcome == UPLOAD_OK)
                otlp_partial(&body, res);
        else
                snprintf(res->detail, sizeof(res->detail), "%s", bodybuf);
        res->detail[strcspn(res->detail, "\r\n")] = '\0';
        return res->outcome;
}
