/* SPDX-License-Identifier: MIT */
/*
 * record_upload.c — `record --upload URL` (see record_upload.h): one profile, sent with
 * service/upload_http.h, retried a few times after a connection failure, a timeout, a 408,
 * 429 or 5xx (honouring Retry-After up to RETRY_AFTER_CAP_MS); not retried when the backend
 * condemned the profile (400, 413, 422) or denied access (401, 403, 404...: the same
 * classification as the daemon's uploader, which drops only the former); never deletes the
 * file.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli/record_upload.h"
#include "service/config.h"
#include "service/upload_http.h"
#include "service/uploader.h"
#include "util/gzip.h"

#define ATTEMPTS           3
#define RETRY_MIN_MS       1000
#define RETRY_MAX_MS       4000
#define RETRY_AFTER_CAP_MS 30000 /* a one-off command does not wait for minutes */
#define COPY_CHUNK         65536

void record_upload_defaults(struct record_upload_opts *u)
{
        memset(u, 0, sizeof(*u));
        snprintf(u->t.name, sizeof(u->t.name), "record");
        snprintf(u->t.application, sizeof(u->t.application), "ctxprof");
        u->t.timeout_ms = 30000;
}

/* The refused value is echoed, except a URL: it may carry a password (user:password@). */
static int bad(const char *name, const char *arg, const char *what)
{
        if (!*name)
                fprintf(stderr, "ctxprof record: --upload URL refused: %s\n", what);
        else
                fprintf(stderr, "ctxprof record: --upload-%s '%s': %s\n", name, arg, what);
        return 2;
}

int record_upload_option(struct record_upload_opts *u, const char *name, const char *arg)
{
        struct upload_target_config *t = &u->t;
        size_t n = strlen(arg);

        if (!*name) {
                if (n >= sizeof(t->url) || upload_url_check(arg))
                        return bad(name, arg,
                                   "http:// or https://HOST[:PORT][/PREFIX], no user:password@ "
                                   "(use --upload-basic-auth-file), no query");
                memcpy(t->url, arg, n + 1);
        } else if (!strcmp(name, "app")) {
                if (!n || n >= sizeof(t->application) || strpbrk(arg, "{}=,\" "))
                        return bad(name, arg, "a name without spaces, { } = , or quotes");
                memcpy(t->application, arg, n + 1);
        } else if (!strcmp(name, "tags")) {
                if (n >= sizeof(t->tags) || upload_tags_check(arg))
                        return bad(name, arg, "k=v,k=v with keys of [A-Za-z0-9_.]");
                memcpy(t->tags, arg, n + 1);
        } else if (!strcmp(name, "header-file") || !strcmp(name, "basic-auth-file")) {
                char *dst = name[0] == 'h' ? t->header_file : t->basic_auth_file;

                if (n >= PATH_MAX)
                        return bad(name, arg, "too long");
                memcpy(dst, arg, n + 1);
        } else if (!strcmp(name, "timeout")) {
                if (config_parse_duration(arg, 100, 3600000, &t->timeout_ms))
                        return bad(name, arg, "a duration from 100ms to 1h");
        }
        return 0;
}

static int open_labels(const char *path, uint64_t *len)
{
        char p[PATH_MAX + 16];
        struct stat st;
        int fd;

        *len = 0;
        snprintf(p, sizeof(p), "%s.labels.pb", path);
        fd = open(p, O_RDONLY | O_CLOEXEC);
        if (fd >= 0 && !fstat(fd, &st))
                *len = (uint64_t)st.st_size;
        return fd;
}

/* An OTLP body: the file at path gzip'd into a memfd. The descriptor or -errno. */
static int gzipped(const char *path)
{
        FILE *f = fopen(path, "re");
        char *buf = NULL;
        size_t len = 0, n;
        FILE *m = open_memstream(&buf, &len);
        char chunk[COPY_CHUNK];
        int err = f && m ? 0 : -errno;

        while (!err && (n = fread(chunk, 1, sizeof(chunk), f)) > 0)
                if (fwrite(chunk, 1, n, m) != n)
                        err = -ENOMEM;
        if (!err && ferror(f))
                err = -EIO;
        if (m && fclose(m) && !err)
                err = -ENOMEM;
        if (f)
                fclose(f);
        if (!err)
                err = gzip_memfd((const uint8_t *)buf, len);
        free(buf);
        return err;
}

/* Send until accepted, refused, or ATTEMPTS tries. */
static int send_with_retries(struct upload_client *cl, const struct upload_request *rq,
                             struct upload_result *r)
{
        unsigned attempt;
        uint64_t delay;

        for (attempt = 1;; attempt++) {
                upload_client_send(cl, rq, NULL, r);
                if (r->outcome == UPLOAD_OK || r->outcome == UPLOAD_HTTP_REFUSED ||
                    r->outcome == UPLOAD_HTTP_DENIED || attempt == ATTEMPTS)
                        return r->outcome;
                delay = r->retry_after_ms
                            ? (r->retry_after_ms < RETRY_AFTER_CAP_MS ? r->retry_after_ms
                                                                      : RETRY_AFTER_CAP_MS)
                            : upload_backoff_ms(attempt, RETRY_MIN_MS, RETRY_MAX_MS, 1.0);
                fprintf(stderr,
                        "ctxprof: upload to %s failed (%s%s%.0ld: %s); retrying in %llu ms\n",
                        upload_client_url(cl), upload_outcome_name(r->outcome),
                        r->http_status ? ", HTTP " : "", r->http_status, r->detail,
                        (unsigned long long)delay);
                usleep((useconds_t)(delay * 1000));
        }
}

int record_upload(const struct record_upload_opts *u, const char *path, const char *format,
                  uint64_t from_s, uint64_t until_s, int quiet)
{
        struct upload_request rq = {
            .from_s = from_s, .until_s = until_s > from_s ? until_s : from_s + 1, .labels_fd = -1};
        struct upload_client *cl;
        struct upload_result r;
        char why[PATH_MAX + 256];
        struct stat st;
        int err;

        rq.format = !strcmp(format, "pprof")  ? UPLOAD_FORMAT_PPROF
                    : !strcmp(format, "otlp") ? UPLOAD_FORMAT_OTLP
                                              : UPLOAD_FORMAT_JFR;
        err = upload_client_new(&u->t, &cl, why, sizeof(why));
        if (err) {
                fprintf(stderr, "ctxprof: upload: %s (%s is kept)\n", why[0] ? why : strerror(-err),
                        path);
                return RECORD_UPLOAD_FAILED;
        }
        if (rq.format == UPLOAD_FORMAT_OTLP)
                rq.profile_fd = gzipped(path);
        else if ((rq.profile_fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
                rq.profile_fd = -errno;
        if (rq.profile_fd < 0 || fstat(rq.profile_fd, &st)) {
                fprintf(stderr, "ctxprof: upload: cannot read %s: %s\n", path,
                        strerror(rq.profile_fd < 0 ? -rq.profile_fd : errno));
                if (rq.profile_fd >= 0)
                        close(rq.profile_fd);
                upload_client_free(cl);
                return RECORD_UPLOAD_FAILED;
        }
        rq.profile_len = (uint64_t)st.st_size;
        if (rq.format == UPLOAD_FORMAT_JFR)
                rq.labels_fd = open_labels(path, &rq.labels_len);
        send_with_retries(cl, &rq, &r);
        if (r.outcome == UPLOAD_OK && r.rejected)
                fprintf(stderr, "ctxprof: %s rejected %llu profiles of %s (partial success: %s)\n",
                        upload_client_url(cl), (unsigned long long)r.rejected, path,
                        r.detail[0] ? r.detail : "no message");
        if (r.outcome == UPLOAD_OK) {
                if (!quiet)
                        fprintf(stderr, "ctxprof: uploaded %s to %s (HTTP %ld, %llu bytes)\n", path,
                                upload_client_url(cl), r.http_status,
                                (unsigned long long)r.bytes_sent);
        } else {
                fprintf(stderr, "ctxprof: upload of %s to %s FAILED (%s%s%.0ld: %s); %s is kept\n",
                        path, upload_client_url(cl), upload_outcome_name(r.outcome),
                        r.http_status ? ", HTTP " : "", r.http_status, r.detail, path);
                if (r.outcome == UPLOAD_HTTP_DENIED)
                        fprintf(stderr, "ctxprof: the backend denies access: check the URL and "
                                        "--upload-header-file / --upload-basic-auth-file\n");
                else if (r.outcome == UPLOAD_HTTP_REFUSED)
                        fprintf(stderr, "ctxprof: the backend refused this profile\n");
        }
        close(rq.profile_fd);
        if (rq.labels_fd >= 0)
                close(rq.labels_fd);
        upload_client_free(cl);
        return r.outcome == UPLOAD_OK ? 0 : RECORD_UPLOAD_FAILED;
}
