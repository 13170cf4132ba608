/* SPDX-License-Identifier: MIT */
/*
 * config.h — the daemon's settings: defaults, the INI file (parsed with libinih) and the
 * command-line flags that override it (one flag per key, named like the key). Owns parsing
 * and validation of every value; never prints, never touches the system beyond reading the
 * file.
 */
#ifndef CTXPROF_CONFIG_H
#define CTXPROF_CONFIG_H

#include <limits.h>
#include <stdint.h>

#include "engine/sampling_names.h" /* enum sampler_event, target_mode */
#include "service/metrics_http.h"  /* METRICS_LISTEN_LEN */
#include "service/upload_config.h"
#include "util/parser_client.h" /* PARSER_USER_MAX */

enum rotate_mode { ROTATE_PERIOD = 0, ROTATE_SIZE };
enum split_mode { SPLIT_HOST = 0, SPLIT_PROCESS };
enum log_level { LOG_ERROR = 3, LOG_WARNING = 4, LOG_INFO = 6, LOG_DEBUG = 7 };

#define CONFIG_LIST_LEN       1024
#define CONFIG_SPLIT_OPEN_MAX 1024   /* largest split-max-open */
#define CONFIG_FREQ_MAX       100000 /* samples per second per CPU (perf's own ceiling) */
/* max-stacks: each stack slot costs about 1.6 KiB (three trace tables with frame arenas) */
#define CONFIG_MAX_STACKS_MIN 256
#define CONFIG_RING_SIZE_MAX  (1ull << 30) /* the sample ring: 1 GiB of kernel memory at most */
#define CONFIG_MAX_STACKS_MAX 262144
/* Durations (ms) and sizes (bytes): anything longer than ten years or larger than a PiB is a
 * typo, and stays far from the 64-bit nanosecond and byte arithmetic that uses them. A chunk
 * is the unit that survives a crash and its samples wait in memory: 100 ms to 1 h. */
#define CONFIG_DURATION_MAX_MS      (3650ull * 86400000ull)
#define CONFIG_CHUNK_PERIOD_MIN_MS  100ull
#define CONFIG_CHUNK_PERIOD_MAX_MS  3600000ull
#define CONFIG_ROTATE_PERIOD_MIN_MS 1000ull
/* the status file's rewrite period: its `updated` field counts seconds, so that two rewrites
 * never show the same one; a reader calls it stale after STATUS_STALE_PERIODS of them */
#define CONFIG_STATUS_PERIOD_MIN_MS  1000ull
#define CONFIG_STATUS_PERIOD_MAX_MS  60000ull
#define CONFIG_SIZE_MAX              (1ull << 50)
#define CONFIG_ROTATE_SIZE_MIN       4096ull
#define CONFIG_OFFCPU_MIN_DEFAULT_US 1000ull       /* 1 ms */
#define CONFIG_OFFCPU_MIN_MAX_US     3600000000ull /* 1 h */
/* libinih (Debian's build) reads lines of at most INI_MAX_LINE = 200 bytes with "\r\n\0"
 * and silently cuts longer ones; config_load refuses them instead. */
#define CONFIG_LINE_MAX 197

struct daemon_config {
        /* [sampling] */
        unsigned frequency;     /* Hz per CPU */
        int event;              /* enum sampler_event */
        int call_graph;         /* enum sampler_callgraph */
        uint64_t offcpu_min_us; /* event off-cpu/wall: shorter intervals are dropped */
        uint64_t ring_size;     /* the sample ring, bytes (0 = sampler_ring_bytes' default) */
        /* context filter (engine/context_filter.h), checked when set; "" = none */
        char filter[CONFIG_LIST_LEN];
        /* [targets] */
        int mode;                        /* enum target_mode */
        char comm[CONFIG_LIST_LEN];      /* comma-separated globs */
        char exe[CONFIG_LIST_LEN];       /* comma-separated globs */
        char cgroup[CONFIG_LIST_LEN];    /* comma-separated cgroup v2 path prefixes */
        char container[CONFIG_LIST_LEN]; /* comma-separated container id prefixes */
        /* [output] */
        char directory[PATH_MAX];
        uint64_t chunk_period_ms;
        int rotate; /* enum rotate_mode */
        uint64_t rotate_period_ms;
        uint64_t rotate_size;    /* bytes */
        uint64_t retain_age_ms;  /* 0 = keep forever */
        uint64_t retain_size;    /* bytes, 0 = no limit */
        int split;               /* enum split_mode */
        unsigned split_max_open; /* split=process: most per-process recordings open at once */
        unsigned max_stacks;     /* distinct stacks per chunk of one recording; 0 = default */
        /* [daemon] */
        int log_level; /* enum log_level */
        char status_file[PATH_MAX];
        uint64_t status_period_ms;             /* the status file is rewritten this often */
        char parser_user[PARSER_USER_MAX + 1]; /* "" = PARSER_USER_DEFAULT */
        /* [metrics] */
        char metrics_listen[METRICS_LISTEN_LEN]; /* "HOST:PORT" (service/metrics_http.h); "" = no
                                                    endpoint */
        int metrics_allow_remote;                /* an address other than loopback is allowed */
        /* [upload], [upload.NAME] (not flags) */
        struct upload_config upload;
};

void config_defaults(struct daemon_config *c);
/* Set one key. 0 ok, -ENOENT unknown section/key, -EINVAL bad value (out of range
 * included), -ENOTSUP a value that is valid but not implemented. section NULL = find the key
 * in any section (flags). */
int config_set(struct daemon_config *c, const char *section, const char *key, const char *value);
/* What key ("section.key" or "key") accepts, e.g. "a duration from 100ms to 1h", for an
 * error message; NULL when its values are a plain list or a path. */
const char *config_values(const char *key);

struct config_error {
        int line;        /* the bad line, 0 if none */
        int first_line;  /* -EEXIST: where the key was set before */
        char key[64];    /* "section.key", "" if none */
        const char *why; /* a sentence that says more, NULL if none */
};
/* Read an INI file over *c. 0 ok; -errno when it cannot be read; for a bad line (number
 * and key in *e): -EINVAL/-ENOENT/-ENOTSUP as config_set, -EEXIST a key set twice (the
 * earlier line in e->first_line), -E2BIG a line longer than CONFIG_LINE_MAX; -ENOSPC too many
 * [upload.NAME] sections. On error *c is unchanged. */
int config_load(struct daemon_config *c, const char *path, struct config_error *e);
/* Every key as "section.key" (NULL-terminated), for flag parsing and documentation. */
extern const char *const config_keys[];

/* "30", "30s", "1.5s", "500ms", "10m", "2h", "7d" -> ms in [min_ms, max_ms]. 0, -EINVAL
 * (not a duration) or -ERANGE (outside the range, overflow included). */
int config_parse_duration(const char *s, uint64_t min_ms, uint64_t max_ms, uint64_t *ms);
/* The same in microseconds, with "us" too: "500us", "1.5ms", "2s" ("" = seconds). */
int config_parse_duration_us(const char *s, uint64_t min_us, uint64_t max_us, uint64_t *us);
/* "4096", "64K", "64M", "1G", "1GiB" (binary units) -> bytes in [min, max]. 0, -EINVAL or
 * -ERANGE. */
int config_parse_size(const char *s, uint64_t min, uint64_t max, uint64_t *bytes);
/* A plain decimal count in [min, max]. 0 or -EINVAL. */
int config_parse_count(const char *s, unsigned min, unsigned max, unsigned *out);

#endif
