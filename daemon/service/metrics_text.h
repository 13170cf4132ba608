/* SPDX-License-Identifier: MIT */
/*
 * metrics_text.h — the Prometheus text exposition format (version 0.0.4), written into a
 * growing buffer: what a collector appends to when the metrics endpoint is scraped
 * (service/metrics_http.h). Owns escaping and the format's rules, so a collector cannot
 * produce a text Prometheus rejects:
 *
 *   # HELP NAME HELP-TEXT          ('\' and newline escaped)
 *   # TYPE NAME counter|gauge|untyped
 *   NAME{LABEL="VALUE",...} VALUE  (label values: '\', '"' and newline escaped)
 *
 * Every sample belongs to the family declared just before it (metrics_text_family), and a
 * family is declared once per text. A bad name (metric: [a-zA-Z_:][a-zA-Z0-9_:]*; label:
 * [a-zA-Z_][a-zA-Z0-9_]*, not starting with "__"), a family declared twice, a sample outside
 * its family or a counter that is negative sets err (-EINVAL) and writes nothing for that
 * call; later calls still append, so one bad collector does not hide the others. Not
 * thread-safe: one text per scrape. Never prints.
 */
#ifndef CTXPROF_METRICS_TEXT_H
#define CTXPROF_METRICS_TEXT_H

#include <stddef.h>
#include <stdint.h>

#define METRICS_TEXT_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"
#define METRICS_NAME_MAX          128 /* longest metric or label name */
#define METRICS_FAMILIES_MAX      256 /* families in one text */

enum metrics_type { METRICS_COUNTER, METRICS_GAUGE, METRICS_UNTYPED };

struct metrics_label {
        const char *name, *value; /* value: any UTF-8 */
};

struct metrics_text {
        char *p; /* the text (NUL-terminated once anything was written); free with
                    metrics_text_free */
        size_t len, cap;
        int err;          /* first error: -EINVAL (a refused call) or -ENOMEM (text incomplete) */
        unsigned refused; /* calls refused */
        /* the families declared so far (for the "once" and "inside its family" rules) */
        char family[METRICS_NAME_MAX + 1];
        enum metrics_type family_type;
        uint64_t seen[METRICS_FAMILIES_MAX]; /* hashes of the declared names */
        unsigned nseen;
};

/* Declare family name: its HELP and TYPE lines. */
void metrics_text_family(struct metrics_text *t, const char *name, enum metrics_type type,
                         const char *help);
/* One sample of the current family (name must be that family's): labels may be NULL when
 * nlabels is 0. The value as an exact integer / as a double (NaN, +Inf, -Inf allowed; a
 * counter's must not be negative). */
void metrics_text_u64(struct metrics_text *t, const char *name, const struct metrics_label *labels,
                      size_t nlabels, uint64_t value);
void metrics_text_double(struct metrics_text *t, const char *name,
                         const struct metrics_label *labels, size_t nlabels, double value);
/* A whole family with one unlabelled sample (the common case). */
void metrics_text_one(struct metrics_text *t, const char *name, enum metrics_type type,
                      const char *help, uint64_t value);
void metrics_text_free(struct metrics_text *t);
/* 1 if s is a valid metric name (label = 0) or label name (label = 1). */
int metrics_name_ok(const char *s, int label);

#endif
