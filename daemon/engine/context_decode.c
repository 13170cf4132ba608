/* SPDX-License-Identifier: MIT */
/*
 * context_decode.c — validation of raw span records and Custom Labels v1 entries copied by
 * bpf/sampler.bpf.c (rules in context_decode.h), from a record split by record_view.c. Must
 * never trust a length from the record beyond the caps of ctxprof/sample.h and the bytes the
 * entry carries, never read outside the record, never print.
 */
#include <stdio.h>
#include <string.h>

#include "ctx/abi.h"
#include "engine/context_decode.h"

int context_decode_span(const struct ctxprof_sample_rec *r, uint64_t *span, uint64_t *root,
                        struct context_decode_stats *st)
{
        const struct ctxprof_span_raw *s = &r->span;

        if (!(r->flags & CTXPROF_SF_SPAN_READ))
                return 0;
        if (!s->span_id && !s->root_span_id && !s->checksum)
                return 0; /* never set on this thread */
        if (!s->checksum || s->checksum != ctx_span_checksum(s->span_id, s->root_span_id)) {
                st->torn_spans++;
                return 0;
        }
        *span = s->span_id;
        *root = s->root_span_id;
        st->spans++;
        return 1;
}

size_t utf8_valid_prefix(const unsigned char *s, size_t len)
{
        size_t i = 0;

        while (i < len) {
                unsigned char c = s[i];
                size_t n, k;
                uint32_t cp;

                if (!c)
                        break; /* NUL ends the text (a C writer's terminator) */
                if (c < 0x80) {
                        i++;
                        continue;
                }
                if ((c & 0xE0) == 0xC0) {
                        n = 2;
                        cp = c & 0x1F;
                } else if ((c & 0xF0) == 0xE0) {
                        n = 3;
                        cp = c & 0x0F;
                } else if ((c & 0xF8) == 0xF0) {
                        n = 4;
                        cp = c & 0x07;
                } else {
                        break;
                }
                if (i + n > len)
                        break;
                for (k = 1; k < n; k++) {
                        if ((s[i + k] & 0xC0) != 0x80)
                                break;
                        cp = (cp << 6) | (s[i + k] & 0x3F);
                }
                if (k < n)
                        break;
                /* overlong forms, surrogates, beyond U+10FFFF */
                if ((n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) ||
                    (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF)
                        break;
                i += n;
        }
        return i;
}

/* 1 when entry l's key was read (whatever its value): it takes part in the duplicate rule. */
static int key_read(const struct ctxprof_label_rec *l)
{
        return (l->flags & CTXPROF_LF_PRESENT) &&
               !(l->flags & (CTXPROF_LF_ENTRY_FAULT | CTXPROF_LF_KEY_NULL | CTXPROF_LF_KEY_FAULT));
}

unsigned context_decode_labels(const struct record_view *v, struct decoded_label *out,
                               struct context_decode_stats *st)
{
        const struct ctxprof_sample_rec *r = v->r;
        unsigned n = 0, i, j, m;
        int unknown_key = 0; /* an earlier entry's key could not be read */

        if (!(r->flags & CTXPROF_SF_LABELSET))
                return 0;
        if (r->flags & CTXPROF_SF_LABELS_CUT)
                st->sets_cut++;
        m = v->n_labels < CTXPROF_MAX_LABELS ? v->n_labels : CTXPROF_MAX_LABELS;
        for (i = 0; i < m; i++) {
                const struct ctxprof_label_rec *l = v->labels[i].h;
                const uint8_t *key = v->labels[i].key, *val = v->labels[i].val;
                size_t klen, vlen, vcut;
                int dup = 0;

                if (!(l->flags & CTXPROF_LF_PRESENT) || (l->flags & CTXPROF_LF_ENTRY_FAULT) ||
                    (l->flags & CTXPROF_LF_KEY_FAULT)) {
                        unknown_key = 1;
                        st->dropped++;
                        continue;
                }
                if (l->flags & CTXPROF_LF_KEY_NULL) {
                        st->null_keys++;
                        continue;
                }
                /* Any later label might be a duplicate of a key we could not read: the first
                 * occurrence must win, so deliver nothing we cannot prove is the first. */
                if (unknown_key) {
                        st->dropped++;
                        continue;
                }
                if (l->flags & (CTXPROF_LF_VAL_NULL | CTXPROF_LF_VAL_FAULT) ||
                    l->key_len > CTXPROF_LABEL_KEY_MAX) {
                        st->dropped++;
                        continue;
                }
                klen = (size_t)l->key_len;
                vlen =
                    l->val_len > CTXPROF_LABEL_VAL_MAX ? CTXPROF_LABEL_VAL_MAX : (size_t)l->val_len;
                /* a read key and value are copied whole up to the caps: anything else is
                 * not what the target held */
                if (l->key_bytes != klen || l->val_bytes != vlen) {
                        st->dropped++;
                        continue;
                }
                if (!klen || utf8_valid_prefix(key, klen) != klen) {
                        st->dropped++;
                        continue;
                }
                /*
                 * Duplicates are decided against every earlier readable entry with this key,
                 * including entries dropped for their value: the first occurrence wins even when
                 * we could not read it, so a later duplicate must never stand in for it.
                 */
                for (j = 0; j < i && !dup; j++) {
                        const struct ctxprof_label_rec *e = v->labels[j].h;

                        if (key_read(e) && e->key_len == l->key_len && e->key_bytes == klen &&
                            !memcmp(v->labels[j].key, key, klen))
                                dup = 1;
                }
                if (dup) {
                        st->duplicates++;
                        continue;
                }
                vcut = utf8_valid_prefix(val, vlen);
                out[n].key = (const char *)key;
                out[n].key_len = klen;
                out[n].value = (const char *)val;
                out[n].value_len = vcut;
                out[n].value_truncated = vcut != l->val_len;
                if (out[n].value_truncated)
                        st->values_truncated++;
                st->labels++;
                n++;
        }
        return n;
}

/* The value of label key (NUL-terminated) in l[0..n), or NULL (*len set). */
static const char *label_value(const struct decoded_label *l, unsigned n, const char *key,
                               size_t *len)
{
        size_t klen = strlen(key);

        for (unsigned i = 0; i < n; i++)
                if (l[i].key_len == klen && !memcmp(l[i].key, key, klen)) {
                        *len = l[i].value_len;
                        return l[i].value;
                }
        return NULL;
}

/* s[0..len) as a number in base 16 (exactly 16 digits) or 10 (1 to 20, no overflow). */
static int parse_id(const char *s, size_t len, int base, uint64_t *out)
{
        uint64_t v = 0;

        if (!s || !len || len > (base == 16 ? 16u : 20u) || (base == 16 && len != 16))
                return 0;
        for (size_t i = 0; i < len; i++) {
                char c = s[i];
                unsigned d;

                if (c >= '0' && c <= '9')
                        d = (unsigned)(c - '0');
                else if (base == 16 && c >= 'a' && c <= 'f')
                        d = (unsigned)(c - 'a' + 10);
                else if (base == 16 && c >= 'A' && c <= 'F')
                        d = (unsigned)(c - 'A' + 10);
                else
                        return 0;
                if (v > (UINT64_MAX - d) / (unsigned)base)
                        return 0;
                v = v * (unsigned)base + d;
        }
        *out = v;
        return 1;
}

int context_go_span(const struct decoded_label *l, unsigned n, uint64_t *span, uint64_t *root)
{
        const char *v;
        size_t len = 0;

        *root = 0;
        v = label_value(l, n, "span_id", &len);
        if (parse_id(v, len, 16, span) && *span)
                return 1;
        v = label_value(l, n, "span id", &len);
        if (!parse_id(v, len, 10, span) || !*span)
                return 0;
        v = label_value(l, n, "local root span id", &len);
        if (!parse_id(v, len, 10, root))
                *root = 0;
        return 1;
}

#define U64_DIGITS_MAX 20 /* UINT64_MAX in decimal */

/* 1 when text[0..len) is v in decimal as "%llu" writes it (no sign, no leading zero). Once
 * or twice per sample with libctx's mirrored span labels: snprintf there was ~10% of the
 * consumer's CPU. */
static int is_decimal_of(const char *text, size_t len, uint64_t v)
{
        char dec[U64_DIGITS_MAX];
        size_t n = 0;

        do {
                dec[U64_DIGITS_MAX - 1 - n++] = (char)('0' + v % 10);
                v /= 10;
        } while (v);
        return n == len && !memcmp(dec + U64_DIGITS_MAX - n, text, n);
}

int context_is_span_mirror(const struct decoded_sample *ds, const struct decoded_label *l)
{
        uint64_t v;

        if (!ds->has_span)
                return 0;
        if (l->key_len == 7 && !memcmp(l->key, "span-id", 7))
                v = ds->span_id;
        else if (l->key_len == 12 && !memcmp(l->key, "root-span-id", 12))
                v = ds->root_span_id;
        else
                return 0;
        return is_decimal_of(l->value, l->value_len, v);
}
