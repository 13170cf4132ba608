/* SPDX-License-Identifier: MIT */
/*
 * upload_config.h — the daemon's [upload] settings: where finished profiles are sent
 * (several targets: [upload] and [upload.NAME] sections), how (format, application name,
 * tags, credentials' files, timeout, CA file) and the on-disk spool that holds them until a
 * backend accepted them (directory, size and age limits, retry intervals). Owns parsing and
 * validation of these keys only; config.c hands it every key of an upload section. Never
 * prints, never reads a credentials file (service/upload_http.h does, at start).
 */
#ifndef CTXPROF_UPLOAD_CONFIG_H
#define CTXPROF_UPLOAD_CONFIG_H

#include <limits.h>
#include <stdint.h>

#define UPLOAD_TARGETS_MAX  8    /* [upload] + [upload.NAME] sections */
#define UPLOAD_NAME_LEN     32   /* NAME of [upload.NAME]: [A-Za-z0-9_-], names the spool */
#define UPLOAD_URL_LEN      1024 /* http(s)://host[:port][/prefix] */
#define UPLOAD_APP_LEN      128  /* Pyroscope application name */
#define UPLOAD_TAGS_LEN     512  /* k=v,k=v */
#define UPLOAD_DEFAULT_NAME "default"

/* OTLP: the profile is an OTLP ExportProfilesServiceRequest, gzip'd, POSTed to
 * URL/v1development/profiles (the daemon converts its JFR files, sink/jfr_convert.h) */
enum upload_format { UPLOAD_FORMAT_JFR = 0, UPLOAD_FORMAT_PPROF, UPLOAD_FORMAT_OTLP };

/* What names a profile's series: its process's service (split = process; the host file and
 * recovered files keep `application`), or `application` for every profile. */
enum upload_group { UPLOAD_GROUP_SERVICE = 0, UPLOAD_GROUP_NONE };

struct upload_target_config {
        char name[UPLOAD_NAME_LEN];       /* "default" for [upload], NAME for [upload.NAME] */
        char url[UPLOAD_URL_LEN];         /* base URL; "/ingest" (OTLP: "/v1development/profiles")
                                           * is appended; "" = section unused */
        int format;                       /* enum upload_format */
        char application[UPLOAD_APP_LEN]; /* series name (Pyroscope's name=, OTLP's service.name)
                                           * of what no service names (upload_series.h) */
        char tags[UPLOAD_TAGS_LEN];       /* static tags k=v,k=v */
        char header_file[PATH_MAX];       /* lines "Name: value" sent as headers (secret) */
        char basic_auth_file[PATH_MAX];   /* "user:password" (secret) */
        char ca_file[PATH_MAX];           /* "" = the system CA store */
        uint64_t timeout_ms;              /* a whole request */
        int group_by;                     /* enum upload_group */
        int line;                         /* first line of its section, for messages */
};

struct upload_config {
        struct upload_target_config t[UPLOAD_TARGETS_MAX];
        unsigned n;               /* sections seen (a section without url is an error) */
        char spool_dir[PATH_MAX]; /* "" = OUTPUT_DIRECTORY/spool; one subdirectory per target */
        uint64_t spool_size;      /* bytes per target; oldest dropped beyond */
        uint64_t spool_age_ms;    /* entries older are dropped (0 = never) */
        uint64_t retry_min_ms;    /* first retry delay; doubles per failure (with jitter) */
        uint64_t retry_max_ms;    /* largest delay (Retry-After may ask for more, up to 1 h) */
        uint64_t stop_grace_ms;   /* at SIGTERM: keep sending this long, then stop */
        uint64_t keys_seen[1 + UPLOAD_TARGETS_MAX]; /* bitmask per section (global + targets) */
        int keys_line[1 + UPLOAD_TARGETS_MAX][16];  /* where each key was set */
};

/* Defaults (no target). */
void upload_config_defaults(struct upload_config *u);
/* 1 when section is "upload" or "upload.NAME". */
int upload_config_is_section(const char *section);
/* Set key of section ("upload" / "upload.NAME") from the file's line `line`. 0; -ENOENT an
 * unknown key; -EINVAL a bad value (or a bad NAME: [A-Za-z0-9_-], at most 31); -ENOSPC
 * more than UPLOAD_TARGETS_MAX sections; -ENOTSUP a value that is valid but not implemented (format
 * = pprof in the daemon, which writes JFR); -EEXIST the key was set before in this section
 * (*first_line says where). */
int upload_config_set(struct upload_config *u, const char *section, const char *key,
                      const char *value, int line, int *first_line);
/* After the whole file: every section has a url. 0 or -EINVAL (*line: the section's). */
int upload_config_check(const struct upload_config *u, int *line, const char **why);
/* What key accepts, for an error message; NULL when nothing to add. */
const char *upload_config_values(const char *key);

/* "http://h[:p]/x" or "https://...": no credentials in it (user:pass@ goes in
 * basic-auth-file), no query or fragment. 0 or -EINVAL. */
int upload_url_check(const char *url);
/* "k=v[,k=v...]" (or ""): keys of [A-Za-z0-9_.] (Pyroscope label names), values without
 * , { } = " or control characters. 0 or -EINVAL. */
int upload_tags_check(const char *tags);

#endif
