/* SPDX-License-Identifier: MIT */
/*
 * record_upload.h — `ctxprof record --upload URL`: after the recording is written, send the
 * file (JFR with its FILE.labels.pb, or pprof) to a Pyroscope /ingest endpoint, or (otlp)
 * gzip'd to an OTLP receiver's /v1development/profiles, once, with a few retries, and say
 * how it went. The local file is kept whatever happens. Prints (cli/).
 */
#ifndef CTXPROF_RECORD_UPLOAD_H
#define CTXPROF_RECORD_UPLOAD_H

#include <stdint.h>

#include "service/upload_config.h"

#define RECORD_UPLOAD_FAILED 3 /* record's exit status when the upload failed */

/* The --upload* options seen so far (t.url "" = no upload). */
struct record_upload_opts {
        struct upload_target_config t;
};

/* Defaults for t (application "ctxprof", timeout 30 s). */
void record_upload_defaults(struct record_upload_opts *u);
/* One --upload* option (name without "--upload"/"--upload-": "", "app", "tags",
 * "header-file", "basic-auth-file", "timeout"). 0, or 2 after printing a usage error. */
int record_upload_option(struct record_upload_opts *u, const char *name, const char *arg);
/* Send path (format "jfr": with path.labels.pb when present; "pprof"; "otlp") covering
 * [from_s, until_s]. 0 when the backend accepted it, RECORD_UPLOAD_FAILED otherwise
 * (printed). */
int record_upload(const struct record_upload_opts *u, const char *path, const char *format,
                  uint64_t from_s, uint64_t until_s, int quiet);

#endif
