/* SPDX-License-Identifier: MIT */
/*
 * upload_config.c — the [upload] / [upload.NAME] keys (see upload_config.h): defaults,
 * per-key validation, duplicate keys per section. Never prints, never reads a file.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "service/config.h"
#include "service/upload_config.h"

#define TIMEOUT_MIN_MS 100ull
#define TIMEOUT_MAX_MS 3600000ull
#define RETRY_MIN_MS   10ull /* small values are for tests */
#define SPOOL_SIZE_MIN 4096ull
#define DEFAULT_APP    "ctxprof"
#define SECTION_PREFIX "upload"
#define GLOBAL_SECTION 0 /* keys_seen index of the spool/retry keys */

/* Keys of a target (any upload section) and of the spool (only [upload]); the index is the
 * bit in keys_seen. */
static const char *const target_keys[] = {
    "url",     "format",  "application", "tags", "header-file", "basic-auth-file",
    "ca-file", "timeout", "group-by",    NULL,
};
static const char *const spool_keys[] = {
    "spool-directory", "spool-size", "spool-age", "retry-min", "retry-max", "stop-grace", NULL,
};
#define SPOOL_KEY_BIT 9 /* spool_keys[i] is bit SPOOL_KEY_BIT + i */

void upload_config_defaults(struct upload_config *u)
{
        memset(u, 0, sizeof(*u));
        u->spool_size = 256ull << 20;
        u->spool_age_ms = 24ull * 3600 * 1000;
        u->retry_min_ms = 1000;
        u->retry_max_ms = 300000;
        u->stop_grace_ms = 5000;
}

int upload_config_is_section(const char *section)
{
        size_t n = strlen(SECTION_PREFIX);

        return !strncmp(section, SECTION_PREFIX, n) && (!section[n] || section[n] == '.');
}

static int name_ok(const char *s)
{
        size_t i;

        if (!*s || strlen(s) >= UPLOAD_NAME_LEN)
                return 0;
        for (i = 0; s[i]; i++)
                if (!(s[i] >= 'a' && s[i] <= 'z') && !(s[i] >= 'A' && s[i] <= 'Z') &&
                    !(s[i] >= '0' && s[i] <= '9') && s[i] != '-' && s[i] != '_')
                        return 0;
        return 1;
}

int upload_url_check(const char *url)
{
        const char *host, *end;

        if (!strncmp(url, "http://", 7))
                host = url + 7;
        else if (!strncmp(url, "https://", 8))
                host = url + 8;
        else
                return -EINVAL;
        end = host + strcspn(host, "/");
        if (end == host || memchr(host, '@', (size_t)(end - host)))
                return -EINVAL; /* no host, or credentials in the URL */
        if (strpbrk(url, "?# \t\r\n"))
                return -EINVAL;
        return 0;
}

int upload_tags_check(const char *s)
{
        int in_key = 1, klen = 0, vlen = 0;

        if (!*s)
                return 0;
        for (; *s; s++) {
                if (*s == '{' || *s == '}' || *s == '"' || (unsigned char)*s < 0x20)
                        return -EINVAL;
                if (in_key) {
                        if (*s == '=') {
                                if (!klen)
                                        return -EINVAL;
                                in_key = 0;
                                vlen = 0;
                        } else if ((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
                                   (*s >= '0' && *s <= '9') || *s == '_' || *s == '.') {
                                klen++;
                        } else {
                                return -EINVAL;
                        }
                } else if (*s == ',') {
                        if (!vlen)
                                return -EINVAL;
                        in_key = 1;
                        klen = 0;
                } else if (*s == '=') {
                        return -EINVAL;
                } else {
                        vlen++;
                }
        }
        return !in_key && vlen > 0 ? 0 : -EINVAL;
}

static int set_path(char *dst, size_t len, const char *v)
{
        if (*v != '/' || strlen(v) >= len)
                return -EINVAL;
        snprintf(dst, len, "%s", v);
        return 0;
}

static int set_target(struct upload_target_config *t, const char *key, const char *v)
{
        if (!strcmp(key, "url")) {
                if (strlen(v) >= sizeof(t->url) || upload_url_check(v))
                        return -EINVAL;
                snprintf(t->url, sizeof(t->url), "%s", v);
                return 0;
        }
        if (!strcmp(key, "format")) {
                if (!strcmp(v, "jfr") || !strcmp(v, "otlp")) {
                        t->format = v[0] == 'j' ? UPLOAD_FORMAT_JFR : UPLOAD_FORMAT_OTLP;
                        return 0;
                }
                /* valid for `record --upload`; the daemon writes JFR only */
                return !strcmp(v, "pprof") ? -ENOTSUP : -EINVAL;
        }
        if (!strcmp(key, "application")) {
                if (!*v || strlen(v) >= sizeof(t->application) || strpbrk(v, "{}=,\" "))
                        return -EINVAL;
                snprintf(t->application, sizeof(t->application), "%s", v);
                return 0;
        }
        if (!strcmp(key, "tags")) {
                if (strlen(v) >= sizeof(t->tags) || upload_tags_check(v))
                        return -EINVAL;
                snprintf(t->tags, sizeof(t->tags), "%s", v);
                return 0;
        }
        if (!strcmp(key, "header-file"))
                return set_path(t->header_file, sizeof(t->header_file), v);
        if (!strcmp(key, "basic-auth-file"))
                return set_path(t->basic_auth_file, sizeof(t->basic_auth_file), v);
        if (!strcmp(key, "ca-file"))
                return set_path(t->ca_file, sizeof(t->ca_file), v);
        if (!strcmp(key, "timeout"))
                return config_parse_duration(v, TIMEOUT_MIN_MS, TIMEOUT_MAX_MS, &t->timeout_ms);
        if (!strcmp(key, "group-by")) {
                if (strcmp(v, "service") && strcmp(v, "none"))
                        return -EINVAL;
                t->group_by = v[0] == 's' ? UPLOAD_GROUP_SERVICE : UPLOAD_GROUP_NONE;
                return 0;
        }
        return -ENOENT;
}

static int set_spool(struct upload_config *u, const char *key, const char *v)
{
        if (!strcmp(key, "spool-directory"))
                return set_path(u->spool_dir, sizeof(u->spool_dir), v);
        if (!strcmp(key, "spool-size"))
                return config_parse_size(v, SPOOL_SIZE_MIN, CONFIG_SIZE_MAX, &u->spool_size);
        if (!strcmp(key, "spool-age"))
                return config_parse_duration(v, 0, CONFIG_DURATION_MAX_MS, &u->spool_age_ms);
        if (!strcmp(key, "retry-min"))
                return config_parse_duration(v, RETRY_MIN_MS, TIMEOUT_MAX_MS, &u->retry_min_ms);
        if (!strcmp(key, "retry-max"))
                return config_parse_duration(v, RETRY_MIN_MS, TIMEOUT_MAX_MS, &u->retry_max_ms);
        if (!strcmp(key, "stop-grace"))
                return config_parse_duration(v, 0, TIMEOUT_MAX_MS, &u->stop_grace_ms);
        return -ENOENT;
}

/* The target of section, added at its first key. NULL: bad name (-EINVAL) or too many. */
static struct upload_target_config *target_of(struct upload_config *u, const char *section,
                                              int line, int *err)
{
        const char *name = section[strlen(SECTION_PREFIX)] ? section + strlen(SECTION_PREFIX) + 1
                                                           : UPLOAD_DEFAULT_NAME;
        unsigned i;

        if (!name_ok(name)) {
                *err = -EINVAL;
                return NULL;
        }
        for (i = 0; i < u->n; i++)
                if (!strcmp(u->t[i].name, name))
                        return &u->t[i];
        if (u->n == UPLOAD_TARGETS_MAX) {
                *err = -ENOSPC;
                return NULL;
        }
        struct upload_target_config *t = &u->t[u->n++];

        memset(t, 0, sizeof(*t));
        snprintf(t->name, sizeof(t->name), "%s", name);
        snprintf(t->application, sizeof(t->application), "%s", DEFAULT_APP);
        t->timeout_ms = 30000;
        t->line = line;
        return t;
}

static int key_bit(const char *key)
{
        int i;

        for (i = 0; target_keys[i]; i++)
                if (!strcmp(key, target_keys[i]))
                        return i;
        for (i = 0; spool_keys[i]; i++)
                if (!strcmp(key, spool_keys[i]))
                        return SPOOL_KEY_BIT + i;
        return -1;
}

/* The first line key was set on in this section (0 = not yet), then remember line. */
static int seen(struct upload_config *u, unsigned slot, int bit, int line)
{
        int first = u->keys_line[slot][bit];

        if (first)
                return first;
        u->keys_line[slot][bit] = line;
        return 0;
}

int upload_config_set(struct upload_config *u, const char *section, const char *key,
                      const char *value, int line, int *first_line)
{
        int bit = key_bit(key), err = 0;
        struct upload_target_config *t;

        _Static_assert(SPOOL_KEY_BIT + 6 <= 16, "keys_line");
        *first_line = 0;
        if (bit < 0)
                return -ENOENT;
        if (bit >= SPOOL_KEY_BIT) {
                if (section[strlen(SECTION_PREFIX)])
                        return -ENOENT; /* spool keys: [upload] only */
                *first_line = seen(u, GLOBAL_SECTION, bit, line);
                return *first_line ? -EEXIST : set_spool(u, key, value);
        }
        t = target_of(u, section, line, &err);
        if (!t)
                return err;
        *first_line = seen(u, 1 + (unsigned)(t - u->t), bit, line);
        return *first_line ? -EEXIST : set_target(t, key, value);
}

int upload_config_check(const struct upload_config *u, int *line, const char **why)
{
        unsigned i;

        for (i = 0; i < u->n; i++)
                if (!u->t[i].url[0]) {
                        *line = u->t[i].line;
                        *why = "an upload section needs url";
                        return -EINVAL;
                }
        if (u->retry_min_ms > u->retry_max_ms) {
                *line = u->keys_line[GLOBAL_SECTION][SPOOL_KEY_BIT + 3];
                *why = "retry-min is larger than retry-max";
                return -EINVAL;
        }
        return 0;
}

const char *upload_config_values(const char *key)
{
        static const struct {
                const char *key, *values;
        } help[] = {
            {"url", "http:// or https://HOST[:PORT][/PREFIX], no user:password@, no query"},
            {"format", "jfr (Pyroscope's /ingest) or otlp (OTLP/HTTP /v1development/profiles; "
                       "pprof is for record --upload)"},
            {"application", "a name without spaces, { } = , or quotes"},
            {"tags", "k=v,k=v with keys of [A-Za-z0-9_.]"},
            {"header-file", "an absolute path"},
            {"basic-auth-file", "an absolute path"},
            {"ca-file", "an absolute path"},
            {"timeout", "a duration from 100ms to 1h"},
            {"group-by", "service (one series per service, split = process) or none (every "
                         "profile named by application)"},
            {"spool-directory", "an absolute path"},
            {"spool-size", "a size from 4K to 1024T"},
            {"spool-age", "a duration up to 3650d (0 = keep until sent)"},
            {"retry-min", "a duration from 10ms to 1h"},
            {"retry-max", "a duration from 10ms to 1h"},
            {"stop-grace", "a duration up to 1h"},
        };
        const char *dot = strrchr(key, '.');
        size_t i;

        for (i = 0; i < sizeof(help) / sizeof(help[0]); i++)
                if (!strcmp(dot ? dot + 1 : key, help[i].key))
                        return help[i].values;
        return NULL;
}
