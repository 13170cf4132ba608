/* SPDX-License-Identifier: MIT */
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
#include "engine/context_filter.h"
#include "engine/sampling_names.h"
#include "service/metrics_http.h"
#include "service/status_file.h"

const char *const config_keys[] = {
    /* [sampling] */
    "sampling.frequency",
    "sampling.event",
    "sampling.call-graph",
    "sampling.offcpu-min",
    "sampling.ring-size",
    "sampling.filter",
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
    "daemon.status-period",
    "daemon.parser-user",
    /* [metrics] */
    "metrics.listen",
    "metrics.allow-remote",
    NULL,
};

void config_defaults(struct daemon_config *c)
{
        memset(c, 0, sizeof(*c));
        c->frequency = 99;
        c->event = SAMPLER_EV_CPU_CLOCK;
        c->offcpu_min_us = CONFIG_OFFCPU_MIN_DEFAULT_US;
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
        c->status_period_ms = STATUS_FILE_PERIOD_MS;
        upload_config_defaults(&c->upload);
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

struct unit {
        const char *name; /* compared without case */
        uint64_t mult;
};

/* DIGITS[.DIGITS]UNIT -> value * the unit's multiplier (fraction digits: at most
 * MAX_FRACTION_DIGITS, the result rounded down), in integers: no sign, exponent, hex, inf or
 * white space, and an overflow is -ERANGE, never a wrapped value. */
#define MAX_FRACTION_DIGITS 9
static int parse_scaled(const char *s, const struct unit *units, size_t nunits, uint64_t *out)
{
        uint64_t whole = 0, frac = 0, scale = 1, v, f;
        int digits = 0, overflow = 0;
        size_t i;

        for (; *s >= '0' && *s <= '9'; s++, digits++)
                overflow |= __builtin_mul_overflow(whole, 10, &whole) ||
                            __builtin_add_overflow(whole, (uint64_t)(*s - '0'), &whole);
        if (!digits)
                return -EINVAL;
        if (*s == '.') {
                for (s++, digits = 0; *s >= '0' && *s <= '9'; s++, digits++) {
                        if (digits == MAX_FRACTION_DIGITS)
                                return -EINVAL;
                        frac = frac * 10 + (uint64_t)(*s - '0');
                        scale *= 10;
                }
                if (!digits)
                        return -EINVAL;
        }
        for (i = 0; i < nunits; i++)
                if (!strcasecmp(s, units[i].name))
                        break;
        if (i == nunits)
                return -EINVAL;
        /* frac < scale: the fraction's part is below the multiplier (the product needs 128
         * bits: 10^9 * 2^40) */
        f = (uint64_t)((unsigned __int128)frac * units[i].mult / scale);
        if (overflow || __builtin_mul_overflow(whole, units[i].mult, &v) ||
            __builtin_add_overflow(v, f, &v))
                return -ERANGE;
        *out = v;
        return 0;
}

static int in_range(int err, uint64_t v, uint64_t min, uint64_t max, uint64_t *out)
{
        if (err)
                return err;
        if (v < min || v > max)
                return -ERANGE;
        *out = v;
        return 0;
}

int config_parse_duration(const char *s, uint64_t min_ms, uint64_t max_ms, uint64_t *ms)
{
        static const struct unit units[] = {{"", 1000},   {"s", 1000},       {"ms", 1},
                                            {"m", 60000}, {"h", 3600000ull}, {"d", 86400000ull}};
        uint64_t v = 0;
        int err = parse_scaled(s, units, sizeof(units) / sizeof(units[0]), &v);

        return in_range(err, v, min_ms, max_ms, ms);
}

int config_parse_duration_us(const char *s, uint64_t min_us, uint64_t max_us, uint64_t *us)
{
        static const struct unit units[] = {{"", 1000000}, {"s", 1000000},  {"ms", 1000},
                                            {"us", 1},     {"m", 60000000}, {"h", 3600000000ull}};
        uint64_t v = 0;
        int err = parse_scaled(s, units, sizeof(units) / sizeof(units[0]), &v);

        return in_range(err, v, min_us, max_us, us);
}

int config_parse_size(const char *s, uint64_t min, uint64_t max, uint64_t *bytes)
{
        static const struct unit units[] = {{"", 1},
                                            {"b", 1},
                                            {"k", 1ull << 10},
                                            {"kb", 1ull << 10},
                                            {"kib", 1ull << 10},
                                            {"m", 1ull << 20},
                                            {"mb", 1ull << 20},
                                            {"mib", 1ull << 20},
                                            {"g", 1ull << 30},
                                            {"gb", 1ull << 30},
                                            {"gib", 1ull << 30},
                                            {"t", 1ull << 40},
                                            {"tb", 1ull << 40},
                                            {"tib", 1ull << 40}};
        uint64_t v = 0;
        int err = parse_scaled(s, units, sizeof(units) / sizeof(units[0]), &v);

        return in_range(err, v, min, max, bytes);
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

/* [sampling] filter: kept as text (the daemon adds it to the sampler's options), checked
 * here so that a bad one is an error of the file or the flag. */
static int set_filter(struct daemon_config *c, const char *v)
{
        struct context_filter f = {0};

        if (context_filter_add(&f, v, NULL))
                return -EINVAL;
        return set_str(c->filter, sizeof(c->filter), v);
}

static int set_metrics(struct daemon_config *c, const char *key, const char *v)
{
        static const char *const yesno[] = {"no", "yes", NULL};
        struct metrics_addr a;

        if (!strcmp(key, "listen"))
                return metrics_addr_parse(v, &a)
                           ? -EINVAL
                           : set_str(c->metrics_listen, sizeof(c->metrics_listen), v);
        if (!strcmp(key, "allow-remote"))
                return pick(v, yesno, &c->metrics_allow_remote);
        return -ENOENT;
}

static int set_value(struct daemon_config *c, const char *sec, const char *key, const char *v)
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
                        return pick_name(v, SAMPLING_NAMES_CALLGRAPH, &c->call_graph);
                if (!strcmp(key, "offcpu-min"))
                        return config_parse_duration_us(v, 0, CONFIG_OFFCPU_MIN_MAX_US,
                                                        &c->offcpu_min_us);
                if (!strcmp(key, "filter"))
                        return set_filter(c, v);
                if (!strcmp(key, "ring-size"))
                        return config_parse_size(v, 0, CONFIG_RING_SIZE_MAX, &c->ring_size);
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
                if (!strcmp(key, "chunk-period"))
                        return config_parse_duration(v, CONFIG_CHUNK_PERIOD_MIN_MS,
                                                     CONFIG_CHUNK_PERIOD_MAX_MS,
                                                     &c->chunk_period_ms);
                if (!strcmp(key, "rotate"))
                        return pick(v, rotates, &c->rotate);
                if (!strcmp(key, "rotate-period"))
                        return config_parse_duration(v, CONFIG_ROTATE_PERIOD_MIN_MS,
                                                     CONFIG_DURATION_MAX_MS, &c->rotate_period_ms);
                if (!strcmp(key, "rotate-size"))
                        return config_parse_size(v, CONFIG_ROTATE_SIZE_MIN, CONFIG_SIZE_MAX,
                                                 &c->rotate_size);
                if (!strcmp(key, "retain-age"))
                        return config_parse_duration(v, 0, CONFIG_DURATION_MAX_MS,
                                                     &c->retain_age_ms);
                if (!strcmp(key, "retain-size"))
                        return config_parse_size(v, 0, CONFIG_SIZE_MAX, &c->retain_size);
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
                if (!strcmp(key, "parser-user"))
                        return *v ? set_str(c->parser_user, sizeof(c->parser_user), v) : -EINVAL;
                if (!strcmp(key, "status-file"))
                        return *v == '/' ? set_str(c->status_file, sizeof(c->status_file), v)
                                         : -EINVAL;
                if (!strcmp(key, "status-period"))
                        return config_parse_duration(v, CONFIG_STATUS_PERIOD_MIN_MS,
                                                     CONFIG_STATUS_PERIOD_MAX_MS,
                                                     &c->status_period_ms);
        } else if (!strcmp(sec, "metrics")) {
                return set_metrics(c, key, v);
        }
        return -ENOENT;
}

/* set_value; out of range is a bad value like any other (config_values says the range) */
static int set_key(struct daemon_config *c, const char *sec, const char *key, const char *v)
{
        int err = set_value(c, sec, key, v);

        return err == -ERANGE ? -EINVAL : err;
}

const char *config_values(const char *key)
{
        static const struct {
                const char *key, *values;
        } help[] = {
            {"frequency", "a count from 1 to 100000"},
            {"offcpu-min", "a duration up to 1h (e.g. 500us, 2ms; 0 = every interval)"},
            {"ring-size", "a size up to 1G (0 = sized by CPUs and frequency)"},
            {"filter", "TERM[,TERM...], each has-context, has-no-context, KEY, KEY=VALUE, !KEY "
                       "or !KEY=VALUE (at most 16)"},
            {"chunk-period", "a duration from 100ms to 1h"},
            {"rotate-period", "a duration from 1s to 3650d"},
            {"status-period", "a duration from 1s to 1m"},
            {"retain-age", "a duration up to 3650d (0 = keep forever)"},
            {"rotate-size", "a size from 4K to 1024T"},
            {"retain-size", "a size up to 1024T (0 = no limit)"},
            {"split-max-open", "a count from 1 to 1024"},
            {"max-stacks", "a count from 256 to 262144"},
            {"listen", "HOST:PORT, HOST an IPv4 address, [IPv6] or localhost"},
        };
        const char *dot = strchr(key, '.');
        size_t i;

        if (upload_config_is_section(key))
                return upload_config_values(key);
        for (i = 0; i < sizeof(help) / sizeof(help[0]); i++)
                if (!strcmp(dot ? dot + 1 : key, help[i].key))
                        return help[i].values;
        return NULL;
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

#define NKEYS 32 /* room for config_keys */

struct load_ctx {
        struct daemon_config *c;
        FILE *f;
        char *buf; /* getline's */
        size_t cap;
        int lineno;      /* of the line inih has just been given */
        int continued;   /* that line starts with white space: a continuation for inih */
        int too_long;    /* the line number of a line over CONFIG_LINE_MAX */
        int seen[NKEYS]; /* line where each config_keys[i] was set, 0 = not yet */
        int err;
        struct config_error *e;
};

/* inih's line reader (ini_parse_stream): whole lines with getline, counted here so that
 * every line number is right, and a line inih would cut (over its buffer) stops the parse
 * instead. */
static char *read_line(char *str, int num, void *stream)
{
        struct load_ctx *l = stream;
        ssize_t n = getline(&l->buf, &l->cap, l->f);

        if (n < 0)
                return NULL;
        l->lineno++;
        while (n > 0 && (l->buf[n - 1] == '\n' || l->buf[n - 1] == '\r'))
                n--;
        if (n > CONFIG_LINE_MAX || n + 3 > num) {
                l->too_long = l->lineno;
                return NULL;
        }
        memcpy(str, l->buf, (size_t)n);
        str[n] = '\0';
        l->continued = n > 0 && (str[0] == ' ' || str[0] == '\t');
        return str;
}

static int key_index(const char *section, const char *name)
{
        size_t sl = strlen(section);
        int i;

        for (i = 0; config_keys[i]; i++)
                if (!strncmp(config_keys[i], section, sl) && config_keys[i][sl] == '.' &&
                    !strcmp(config_keys[i] + sl + 1, name))
                        return i;
        return -1;
}

static int fail(struct load_ctx *l, int err, const char *section, const char *name)
{
        l->err = err;
        l->e->line = l->lineno;
        snprintf(l->e->key, sizeof(l->e->key), "%s.%s", section, name);
        return 0; /* stop */
}

/* [upload] / [upload.NAME]: upload_config.c's keys (with their own duplicate check). */
static int on_upload_line(struct load_ctx *l, const char *section, const char *name,
                          const char *value)
{
        int first, err = upload_config_set(&l->c->upload, section, name, value, l->lineno, &first);

        if (!err)
                return 1;
        if (err == -EEXIST)
                l->e->first_line = first;
        else if (err == -ENOSPC)
                l->e->why = "too many upload sections (at most 8)";
        else if (err == -ENOTSUP)
                l->e->why = "the daemon writes JFR: format = pprof is for record --upload";
        return fail(l, err == -ERANGE ? -EINVAL : err, section, name);
}

static int on_line(void *user, const char *section, const char *name, const char *value)
{
        struct load_ctx *l = user;
        int i, err;

        if (l->err)
                return 0;
        /* inih hands a continuation line over as the same key again: no value of ours spans
         * lines */
        if (l->continued)
                return fail(l, -EINVAL, section, name);
        if (upload_config_is_section(section))
                return on_upload_line(l, section, name, value);
        i = key_index(section, name);
        if (i >= 0 && l->seen[i]) {
                l->e->first_line = l->seen[i];
                return fail(l, -EEXIST, section, name);
        }
        err = set_key(l->c, section, name, value);
        if (err)
                return fail(l, err, section, name);
        if (i >= 0)
                l->seen[i] = l->lineno;
        return 1;
}

int config_load(struct daemon_config *c, const char *path, struct config_error *e)
{
        struct daemon_config tmp = *c;
        struct load_ctx l = {.c = &tmp, .e = e};
        int rc;

        _Static_assert(sizeof(config_keys) / sizeof(config_keys[0]) <= NKEYS, "NKEYS");
        memset(e, 0, sizeof(*e));
        l.f = fopen(path, "re");
        if (!l.f)
                return -errno;
        rc = ini_parse_stream(read_line, &l, on_line, &l);
        fclose(l.f);
        free(l.buf);
        if (rc < 0)
                return rc == -2 ? -ENOMEM : -EIO;
        /* inih goes on after a bad line: the first of the three kinds of error is the one */
        if (rc > 0 && (!l.err || rc < e->line) && (!l.too_long || rc < l.too_long)) {
                memset(e, 0, sizeof(*e));
                e->line = rc; /* a line inih cannot parse */
                return -EINVAL;
        }
        if (l.too_long && (!l.err || l.too_long < e->line)) {
                memset(e, 0, sizeof(*e));
                e->line = l.too_long;
                return -E2BIG;
        }
        if (l.err)
                return l.err;
        if (upload_config_check(&tmp.upload, &e->line, &e->why))
                return -EINVAL;
        *c = tmp;
        return 0;
}
