/*
 * config.c — daemon settings (see config.h): defaults, libinih parsing and per-key
 * validation. Never prints; an invalid file leaves the caller's settings untouched.
 */
#include <errno.h>
#include <ini.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "service/config.h"
#include "engine/sampling_names.h"
#include "service/status_file.h"

const char *const config_keys[] = {
    /* [sampling] */
    "sampling.frequency",
    "sampling.event",
    "sampling.call-graph",
    /* [targets] */
    "targets.mode",
    "targets.comm",
    "targets.exe",
    "targets.cgroup",
    "targets.container",
    /* [output] */
    "output.directory",
    "output.chunk-period",
    "output.rotate",
    "output.rotate-period",
    "output.rotate-size",
    "output.retain-age",
    "output.retain-size",
    "output.split",
    "output.split-max-open",
    "output.max-stacks",
    /* [daemon] */
    "daemon.log-level",
    "daemon.status-file",
    NULL,
};

void config_defaults(struct daemon_config *c)
{
        memset(c, 0, sizeof(*c));
        c->frequency = 99;
        c->event = SAMPLER_EV_CPU_CLOCK;
        c->mode = TARGET_MODE_CONTEXT;
        snprintf(c->directory, sizeof(c->directory), "/var/lib/ctxprof");
        c->chunk_period_ms = 60000;
        c->rotate = ROTATE_PERIOD;
        c->rotate_period_ms = 10 * 60000;
        c->rotate_size = 64ull << 20;
        c->retain_age_ms = 7ull * 24 * 3600 * 1000;
        c->retain_size = 1ull << 30;
        c->split = SPLIT_HOST;
        c->split_max_open = 32;
        c->log_level = LOG_INFO;
        snprintf(c->status_file, sizeof(c->status_file), "%s", STATUS_FILE_DEFAULT);
}

int config_parse_count(const char *s, unsigned min, unsigned max, unsigned *out)
{
        char *end;
        unsigned long n;

        if (*s < '0' || *s > '9')
                return -EINVAL; /* strtoul would take a sign or white space */
        errno = 0;
        n = strtoul(s, &end, 10);
        if (errno || *end || n < min || n > max)
                return -EINVAL;
        *out = (unsigned)n;
        return 0;
}

int config_parse_duration(const char *s, uint64_t *ms)
{
        static const struct {
                const char *unit;
                double mult;
        } units[] = {{"", 1000},   {"s", 1000},    {"ms", 1},
                     {"m", 60000}, {"h", 3600000}, {"d", 86400000.0}};
        char *end;
        double v;
        size_t i;

        errno = 0;
        v = strtod(s, &end);
        if (errno || end == s || v < 0 || v > 1e15)
                return -EINVAL;
        for (i = 0; i < sizeof(units) / sizeof(units[0]); i++)
                if (!strcmp(end, units[i].unit)) {
                        *ms = (uint64_t)(v * units[i].mult);
                        return 0;
                }
        return -EINVAL;
}

int config_parse_size(const char *s, uint64_t *bytes)
{
        char *end;
        double v;
        int shift = 0;

        errno = 0;
        v = strtod(s, &end);
        if (errno || end == s || v < 0 || v > 1e18)
                return -EINVAL;
        if (*end && end[1] && strcasecmp(end + 1, "iB") && strcasecmp(end + 1, "B"))
                return -EINVAL;
        switch (*end) {
        case '\0':
                break;
        case 'k':
        case 'K':
                shift = 10;
                break;
        case 'm':
        case 'M':
                shift = 20;
                break;
        case 'g':
        case 'G':
                shift = 30;
                break;
        case 't':
        case 'T':
                shift = 40;
                break;
        default:
                return -EINVAL;
        }
        *bytes = (uint64_t)(v * (double)(1ull << shift));
        return 0;
}

static int set_str(char *dst, size_t len, const char *v)
{
        if (strlen(v) >= len)
                return -EINVAL;
        snprintf(dst, len, "%s", v);
        return 0;
}

static int pick(const char *v, const char *const *names, int *out)
{
        int i;

        for (i = 0; names[i]; i++)
                if (!strcmp(v, names[i])) {
                        *out = i;
                        return 0;
                }
        return -EINVAL;
}

/* A name of the sampling names table (event, call-graph, mode). */
static int pick_name(const char *v, enum sampling_name_set set, int *out)
{
        int i = sampling_name_parse(set, v);

        if (i < 0)
                return i;
        *out = i;
        return 0;
}

static int set_key(struct daemon_config *c, const char *sec, const char *key, const char *v)
{
        static const char *const rotates[] = {"period", "size", NULL};
        static const char *const splits[] = {"host", "process", NULL};
        static const char *const levels[] = {"error", "warning", "info", "debug", NULL};
        static const int level_val[] = {LOG_ERROR, LOG_WARNING, LOG_INFO, LOG_DEBUG};
        int i, err;

        if (!strcmp(sec, "sampling")) {
                if (!strcmp(key, "frequency"))
                        return config_parse_count(v, 1, CONFIG_FREQ_MAX, &c->frequency);
                if (!strcmp(key, "event"))
                        return pick_name(v, SAMPLING_NAMES_EVENT, &c->event);
                if (!strcmp(key, "call-graph"))
                        return pick_name(v, SAMPLING_NAMES_CALLGRAPH, &c->dwarf);
        } else if (!strcmp(sec, "targets")) {
                if (!strcmp(key, "mode"))
                        return pick_name(v, SAMPLING_NAMES_MODE, &c->mode);
                if (!strcmp(key, "comm"))
                        return set_str(c->comm, sizeof(c->comm), v);
                if (!strcmp(key, "exe"))
                        return set_str(c->exe, sizeof(c->exe), v);
                if (!strcmp(key, "cgroup"))
                        return set_str(c->cgroup, sizeof(c->cgroup), v);
                if (!strcmp(key, "container"))
                        return set_str(c->container, sizeof(c->container), v);
        } else if (!strcmp(sec, "output")) {
                if (!strcmp(key, "directory"))
                        return *v == '/' ? set_str(c->directory, sizeof(c->directory), v) : -EINVAL;
                if (!strcmp(key, "chunk-period")) {
                        uint64_t ms;

                        err = config_parse_duration(v, &ms);
                        if (err || ms < 100)
                                return -EINVAL;
                        c->chunk_period_ms = ms;
                        return 0;
                }
                if (!strcmp(key, "rotate"))
                        return pick(v, rotates, &c->rotate);
                if (!strcmp(key, "rotate-period")) {
                        uint64_t ms;

                        err = config_parse_duration(v, &ms);
                        if (err || ms < 1000)
                                return -EINVAL;
                        c->rotate_period_ms = ms;
                        return 0;
                }
                if (!strcmp(key, "rotate-size")) {
                        uint64_t b;

                        err = config_parse_size(v, &b);
                        if (err || b < 4096)
                                return -EINVAL;
                        c->rotate_size = b;
                        return 0;
                }
                if (!strcmp(key, "retain-age"))
                        return config_parse_duration(v, &c->retain_age_ms);
                if (!strcmp(key, "retain-size"))
                        return config_parse_size(v, &c->retain_size);
                if (!strcmp(key, "split"))
                        return pick(v, splits, &c->split);
                if (!strcmp(key, "split-max-open"))
                        return config_parse_count(v, 1, CONFIG_SPLIT_OPEN_MAX, &c->split_max_open);
                if (!strcmp(key, "max-stacks"))
                        return config_parse_count(v, CONFIG_MAX_STACKS_MIN, CONFIG_MAX_STACKS_MAX,
                                                  &c->max_stacks);
        } else if (!strcmp(sec, "daemon")) {
                if (!strcmp(key, "log-level")) {
                        err = pick(v, levels, &i);
                        if (err)
                                return err;
                        c->log_level = level_val[i];
                        return 0;
                }
                if (!strcmp(key, "status-file"))
                        return *v == '/' ? set_str(c->status_file, sizeof(c->status_file), v)
                                         : -EINVAL;
        }
        return -ENOENT;
}

int config_set(struct daemon_config *c, const char *section, const char *key, const char *value)
{
        size_t i, n;

        if (section)
                return set_key(c, section, key, value);
        for (i = 0; config_keys[i]; i++) {
                const char *dot = strchr(config_keys[i], '.');
                char sec[16];

                n = (size_t)(dot - config_keys[i]);
                if (strcmp(dot + 1, key) || n >= sizeof(sec))
                        continue;
                memcpy(sec, config_keys[i], n);
                sec[n] = '\0';
                return set_key(c, sec, key, value);
        }
        return -ENOENT;
}

struct load_ctx {
        struct daemon_config *c;
        int err;
        int line;
        char key[64];
};

static int on_line(void *user, const char *section, const char *name, const char *value)
{
        struct load_ctx *l = user;
        int err;

        if (l->err)
                return 0;
        err = set_key(l->c, section, name, value);
        if (err) {
                l->err = err;
                snprintf(l->key, sizeof(l->key), "%s.%s", section, name);
                return 0; /* stop: inih reports this line's number */
        }
        return 1;
}

int config_load(struct daemon_config *c, const char *path, int *bad_line, char *key_out,
                size_t key_len)
{
        struct daemon_config tmp = *c;
        struct load_ctx l = {.c = &tmp};
        FILE *f;
        int rc;

        *bad_line = 0;
        if (key_out && key_len)
                key_out[0] = '\0';
        f = fopen(path, "re");
        if (!f)
                return -errno;
        rc = ini_parse_file(f, on_line, &l);
        fclose(f);
        if (rc) {
                *bad_line = rc > 0 ? rc : 0;
                if (key_out && key_len)
                        snprintf(key_out, key_len, "%s", l.key);
                if (l.err)
                        return l.err;
                return rc == -2 ? -ENOMEM : -EINVAL;
        }
        *c = tmp;
        return 0;
}
