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

enum rotate_mode { ROTATE_PERIOD = 0, ROTATE_SIZE };
enum split_mode { SPLIT_HOST = 0, SPLIT_PROCESS };
enum log_level { LOG_ERROR = 3, LOG_WARNING = 4, LOG_INFO = 6, LOG_DEBUG = 7 };

#define CONFIG_LIST_LEN       1024
#define CONFIG_SPLIT_OPEN_MAX 1024   /* largest split-max-open */
#define CONFIG_FREQ_MAX       100000 /* samples per second per CPU (perf's own ceiling) */
/* max-stacks: each stack slot costs about 1.6 KiB (three trace tables with frame arenas) */
#define CONFIG_MAX_STACKS_MIN 256
#define CONFIG_MAX_STACKS_MAX 262144

struct daemon_config {
        /* [sampling] */
        unsigned frequency; /* Hz per CPU */
        int event;          /* enum sampler_event */
        int dwarf;          /* enum sampler_callgraph */
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
};

void config_defaults(struct daemon_config *c);
/* Set one key. 0 ok, -ENOENT unknown section/key, -EINVAL bad value, -ENOTSUP a value that
 * is valid but not implemented. section NULL = find the key in any section (flags). */
int config_set(struct daemon_config *c, const char *section, const char *key, const char *value);
/* Read an INI file over *c. 0 ok; -errno when it cannot be read; -EINVAL/-ENOENT/-ENOTSUP
 * for a bad line, whose number goes to *bad_line (and the key to key_out, if given). On
 * error *c is unchanged. */
int config_load(struct daemon_config *c, const char *path, int *bad_line, char *key_out,
                size_t key_len);
/* Every key as "section.key" (NULL-terminated), for flag parsing and documentation. */
extern const char *const config_keys[];

/* "30", "30s", "500ms", "10m", "2h", "7d" -> ms. 0 or -EINVAL. */
int config_parse_duration(const char *s, uint64_t *ms);
/* "4096", "64K", "64M", "1G" (binary units) -> bytes. 0 or -EINVAL. */
int config_parse_size(const char *s, uint64_t *bytes);
/* A plain decimal count in [min, max]. 0 or -EINVAL. */
int config_parse_count(const char *s, unsigned min, unsigned max, unsigned *out);

#endif
