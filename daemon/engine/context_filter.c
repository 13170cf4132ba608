/* SPDX-License-Identifier: MIT */
/*
 * context_filter.c — parsing and matching of context filters (see context_filter.h). Owns
 * the syntax and its meaning; never allocates, never prints, never sees a raw record.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "engine/context_filter.h"

#define TERM_SEP          ','
#define SPAN_ID_KEY       "span_id"
#define SPAN_ID_HEX_CHARS 16

/* One term, s[0..len), into *t. 0 or -EINVAL with *why. */
static int parse_term(const char *s, size_t len, struct context_filter_term *t, const char **why)
{
        const char *eq;
        size_t klen;

        memset(t, 0, sizeof(*t));
        if (!len) {
                *why = "an empty term (two commas, or one at either end)";
                return -EINVAL;
        }
        if (*s == '!') {
                t->negate = 1;
                s++;
                len--;
        }
        if (len == strlen("has-context") && !memcmp(s, "has-context", len)) {
                t->kind = CONTEXT_FILTER_HAS_CONTEXT;
                return 0;
        }
        if (len == strlen("has-no-context") && !memcmp(s, "has-no-context", len)) {
                t->kind = CONTEXT_FILTER_HAS_NO_CONTEXT;
                return 0;
        }
        eq = memchr(s, '=', len);
        klen = eq ? (size_t)(eq - s) : len;
        if (!klen) {
                *why = "a term without a key (KEY, KEY=VALUE, !KEY=VALUE, has-context or "
                       "has-no-context)";
                return -EINVAL;
        }
        if (klen > CTXPROF_LABEL_KEY_MAX) {
                *why = "a key longer than a label key can be (128 bytes)";
                return -EINVAL;
        }
        memcpy(t->key, s, klen);
        t->key_len = (unsigned)klen;
        t->kind = CONTEXT_FILTER_HAS_KEY;
        if (!eq)
                return 0;
        len -= klen + 1;
        if (len > CTXPROF_LABEL_VAL_MAX) {
                *why = "a value longer than a label value can be (256 bytes)";
                return -EINVAL;
        }
        memcpy(t->value, eq + 1, len);
        t->value_len = (unsigned)len;
        t->kind = CONTEXT_FILTER_HAS_ENTRY;
        return 0;
}

int context_filter_add(struct context_filter *f, const char *spec, const char **why)
{
        struct context_filter_term terms[CONTEXT_FILTER_MAX_TERMS];
        const char *dummy, *p = spec, *end;
        unsigned n = 0, i;
        int err;

        if (!why)
                why = &dummy;
        for (;;) {
                end = strchr(p, TERM_SEP);
                if (!end)
                        end = p + strlen(p);
                if (f->n + n == CONTEXT_FILTER_MAX_TERMS) {
                        *why = "more than 16 terms";
                        return -E2BIG;
                }
                err = parse_term(p, (size_t)(end - p), &terms[n], why);
                if (err)
                        return err;
                n++;
                if (!*end)
                        break;
                p = end + 1;
        }
        for (i = 0; i < n; i++)
                f->t[f->n++] = terms[i];
        return 0;
}

/* The sample's value for key t->key: its first label of that name (the decoder dropped
 * later duplicates), or span_id from a valid span record. 1 and *v, *vlen, else 0. */
static int find_value(const struct context_filter_term *t, const struct decoded_sample *s,
                      char *hex, const char **v, size_t *vlen)
{
        unsigned i;

        for (i = 0; i < s->n_labels; i++) {
                const struct decoded_label *l = &s->labels[i];

                if (l->key_len == t->key_len && !memcmp(l->key, t->key, t->key_len)) {
                        *v = l->value;
                        *vlen = l->value_len;
                        return 1;
                }
        }
        if (s->has_span && t->key_len == strlen(SPAN_ID_KEY) &&
            !memcmp(t->key, SPAN_ID_KEY, t->key_len)) {
                snprintf(hex, SPAN_ID_HEX_CHARS + 1, "%016" PRIx64, s->span_id);
                *v = hex;
                *vlen = SPAN_ID_HEX_CHARS;
                return 1;
        }
        return 0;
}

static int term_holds(const struct context_filter_term *t, const struct decoded_sample *s)
{
        char hex[SPAN_ID_HEX_CHARS + 1];
        const char *v;
        size_t vlen;

        switch (t->kind) {
        case CONTEXT_FILTER_HAS_CONTEXT:
                return s->has_span || s->n_labels;
        case CONTEXT_FILTER_HAS_NO_CONTEXT:
                return !s->has_span && !s->n_labels;
        case CONTEXT_FILTER_HAS_KEY:
                return find_value(t, s, hex, &v, &vlen);
        case CONTEXT_FILTER_HAS_ENTRY:
                return find_value(t, s, hex, &v, &vlen) && vlen == t->value_len &&
                       !memcmp(v, t->value, vlen);
        default:
                return 0;
        }
}

int context_filter_match(const struct context_filter *f, const struct decoded_sample *s)
{
        unsigned i;

        for (i = 0; i < f->n; i++)
                if (term_holds(&f->t[i], s) == f->t[i].negate)
                        return 0;
        return 1;
}

int context_filter_needs_context(const struct context_filter *f)
{
        for (unsigned i = 0; i < f->n; i++) {
                const struct context_filter_term *t = &f->t[i];

                if (t->kind == CONTEXT_FILTER_HAS_NO_CONTEXT ? t->negate : !t->negate)
                        return 1;
        }
        return 0;
}
