/* SPDX-License-Identifier: MIT */
/*
 * metrics_text.c — the Prometheus text exposition format (see metrics_text.h): names
 * checked, HELP and label values escaped, values formatted as Prometheus parses them. Never
 * prints.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "service/metrics_text.h"
#include "util/grow.h"
#include "util/hash.h"

#define TEXT_FIRST 4096 /* first allocation */
#define NUM_MAX    32   /* a formatted value */

static const char *const type_names[] = {
    [METRICS_COUNTER] = "counter",
    [METRICS_GAUGE] = "gauge",
    [METRICS_UNTYPED] = "untyped",
};

static void put(struct metrics_text *t, const char *s, size_t n)
{
        int err;

        if (t->err == -ENOMEM)
                return;
        err = grow_array((void **)&t->p, &t->cap, 1, t->len + n + 1, TEXT_FIRST);
        if (err) {
                t->err = -ENOMEM;
                return;
        }
        memcpy(t->p + t->len, s, n);
        t->len += n;
        t->p[t->len] = '\0';
}

static void puts_(struct metrics_text *t, const char *s)
{
        put(t, s, strlen(s));
}

/* s with '\\' and newline escaped, and '"' too in a label value (quote = 1). */
static void put_escaped(struct metrics_text *t, const char *s, int quote)
{
        const char *run = s;

        for (; *s; s++) {
                const char *esc = *s == '\\'           ? "\\\\"
                                  : *s == '\n'         ? "\\n"
                                  : quote && *s == '"' ? "\\\""
                                                       : NULL;

                if (!esc)
                        continue;
                put(t, run, (size_t)(s - run));
                puts_(t, esc);
                run = s + 1;
        }
        put(t, run, (size_t)(s - run));
}

static void refuse(struct metrics_text *t)
{
        t->refused++;
        if (!t->err)
                t->err = -EINVAL;
}

int metrics_name_ok(const char *s, int label)
{
        size_t i;

        if (!s || !*s || strlen(s) > METRICS_NAME_MAX || (label && !strncmp(s, "__", 2)))
                return 0;
        for (i = 0; s[i]; i++) {
                char c = s[i];
                int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
                         (!label && c == ':') || (i > 0 && c >= '0' && c <= '9');

                if (!ok)
                        return 0;
        }
        return 1;
}

void metrics_text_family(struct metrics_text *t, const char *name, enum metrics_type type,
                         const char *help)
{
        uint64_t h;
        unsigned i;

        t->family[0] = '\0'; /* until declared: its samples are refused */
        if (!metrics_name_ok(name, 0) || (unsigned)type > METRICS_UNTYPED ||
            t->nseen == METRICS_FAMILIES_MAX) {
                refuse(t);
                return;
        }
        h = fnv1a64(name, strlen(name));
        for (i = 0; i < t->nseen; i++)
                if (t->seen[i] == h) {
                        refuse(t);
                        return;
                }
        t->seen[t->nseen++] = h;
        snprintf(t->family, sizeof(t->family), "%s", name);
        t->family_type = type;
        puts_(t, "# HELP ");
        puts_(t, name);
        puts_(t, " ");
        put_escaped(t, help ? help : "", 0);
        puts_(t, "\n# TYPE ");
        puts_(t, name);
        puts_(t, " ");
        puts_(t, type_names[type]);
        puts_(t, "\n");
}

/* name{labels} VALUE\n, or nothing (refused) when a name is bad or the sample is outside
 * its family. */
static void sample(struct metrics_text *t, const char *name, const struct metrics_label *labels,
                   size_t nlabels, const char *value)
{
        size_t i;

        if (!name || strcmp(name, t->family) || (nlabels && !labels)) {
                refuse(t);
                return;
        }
        for (i = 0; i < nlabels; i++)
                if (!metrics_name_ok(labels[i].name, 1) || !labels[i].value) {
                        refuse(t);
                        return;
                }
        puts_(t, name);
        for (i = 0; i < nlabels; i++) {
                puts_(t, i ? "," : "{");
                puts_(t, labels[i].name);
                puts_(t, "=\"");
                put_escaped(t, labels[i].value, 1);
                puts_(t, "\"");
        }
        puts_(t, nlabels ? "} " : " ");
        puts_(t, value);
        puts_(t, "\n");
}

void metrics_text_u64(struct metrics_text *t, const char *name, const struct metrics_label *labels,
                      size_t nlabels, uint64_t value)
{
        char v[NUM_MAX];

        snprintf(v, sizeof(v), "%" PRIu64, value);
        sample(t, name, labels, nlabels, v);
}

void metrics_text_double(struct metrics_text *t, const char *name,
                         const struct metrics_label *labels, size_t nlabels, double value)
{
        char v[NUM_MAX];

        if (t->family_type == METRICS_COUNTER && value < 0) {
                refuse(t);
                return;
        }
        if (isnan(value))
                snprintf(v, sizeof(v), "NaN");
        else if (isinf(value))
                snprintf(v, sizeof(v), "%sInf", value > 0 ? "+" : "-");
        else
                snprintf(v, sizeof(v), "%.17g", value); /* round-trips a double exactly */
        sample(t, name, labels, nlabels, v);
}

void metrics_text_one(struct metrics_text *t, const char *name, enum metrics_type type,
                      const char *help, uint64_t value)
{
        unsigned refused = t->refused;

        metrics_text_family(t, name, type, help);
        if (t->refused == refused)
                metrics_text_u64(t, name, NULL, 0, value);
}

void metrics_text_free(struct metrics_text *t)
{
        free(t->p);
        *t = (struct metrics_text){0};
}
