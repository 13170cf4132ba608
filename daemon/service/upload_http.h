/* SPDX-License-Identifier: MIT */
/*
 * upload_http.h — one upload of one profile, through libcurl, to Grafana Pyroscope's ingest
 * API:
 *   POST URL/ingest?name=APP{tag=v,...}&from=S&until=S&format=jfr|pprof&spyName=ctxprof
 * as multipart/form-data: format=jfr sends parts `jfr` (the JFR file) and `labels` (the
 * LabelsSnapshot protobuf that names each contextId's labels; omitted when empty);
 * format=pprof one part `profile` (gzip'd profile.proto); or, format=otlp, to an OTLP/HTTP
 * receiver: POST URL/v1development/profiles, the body a gzip'd ExportProfilesServiceRequest
 * as given (Content-Type application/x-protobuf, Content-Encoding gzip), the answer an
 * ExportProfilesServiceResponse whose partial success is returned. Bodies are read from descriptors
 * at given offsets (pread), never copied into memory. TLS verifies the peer with the system
 * CA store (or ca-file); credentials come from files (header-file: "Name: value" lines;
 * basic-auth-file: "user:password"), read once by upload_client_new, which refuses a file
 * other users can read or write. Never prints.
 *
 * Thread: a client is used by one thread at a time (the uploader's, or record's).
 */
#ifndef CTXPROF_UPLOAD_HTTP_H
#define CTXPROF_UPLOAD_HTTP_H

#include <stddef.h>
#include <stdint.h>

#include "service/upload_config.h"

/* Why an attempt did not end in 2xx. */
enum upload_outcome {
        UPLOAD_OK = 0,       /* 2xx: accepted */
        UPLOAD_CONNECT,      /* could not connect (DNS, refused, TLS handshake) */
        UPLOAD_TIMEOUT,      /* the request took longer than the timeout */
        UPLOAD_NETWORK,      /* the connection broke mid-request or mid-response */
        UPLOAD_HTTP_RETRY,   /* 408, 429, 5xx: try again later */
        UPLOAD_HTTP_REFUSED, /* 400, 413, 422: this profile will never be taken */
        /* 401, 403, 404 and every other answer (3xx: no redirect is followed, 405, 409...):
         * the target refuses access or is not there; not this profile's fault, so it is kept
         * and sent again once the target (or its credentials) is fixed */
        UPLOAD_HTTP_DENIED,
        UPLOAD_ABORTED, /* the caller's abort flag was set */
        UPLOAD_OUTCOME_N,
};
/* "ok", "connect", "timeout", "network", "http_retry", "http_refused", "http_denied",
 * "aborted" */
const char *upload_outcome_name(int outcome);

/* What one request carries. */
struct upload_request {
        int format; /* enum upload_format */
        uint64_t from_s, until_s;
        const char *extra_tags; /* added to the target's tags (k=v,k=v), or NULL */
        int profile_fd;
        uint64_t profile_off, profile_len;
        int labels_fd; /* -1 or labels_len 0: no labels part */
        uint64_t labels_off, labels_len;
        /* Optional: called on the sending thread while the request is in flight (libcurl's
         * progress callback: about once a second, more often while bytes move), so the caller
         * can do work that must not wait for a slow backend. Must not send. */
        void (*tick)(void *ctx);
        void *tick_ctx;
};

struct upload_result {
        int outcome;             /* enum upload_outcome */
        long http_status;        /* 0 when no response */
        uint64_t retry_after_ms; /* Retry-After of a 429/503, 0 if none */
        uint64_t bytes_sent;     /* request bytes on the wire (headers + body) */
        /* OTLP, 2xx: profiles the receiver rejected (partial success; detail: its message) */
        uint64_t rejected;
        char detail[160]; /* libcurl's error, or the start of the response body */
};

struct upload_client;

/* A client for target t: reads its credentials files (refused, -EPERM with why, when not a
 * regular file owned by root or this user, or readable/writable by others); -EINVAL with
 * why for a malformed one; -ENOMEM. */
int upload_client_new(const struct upload_target_config *t, struct upload_client **out, char *why,
                      size_t why_len);
void upload_client_free(struct upload_client *c);
/* Send one request (blocking, at most the target's timeout). *abort != 0 (read from
 * another thread, e.g. a stop) ends it early with UPLOAD_ABORTED. Fills *res; returns
 * res->outcome. */
int upload_client_send(struct upload_client *c, const struct upload_request *rq,
                       const _Atomic int *abort, struct upload_result *res);
/* The URL a request goes to (credentials never are in it), for messages. */
const char *upload_client_url(const struct upload_client *c);

#endif
