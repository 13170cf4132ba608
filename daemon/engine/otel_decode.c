/* SPDX-License-Identifier: MIT */
/*
 * otel_decode.c — validation of OTEP 4947 records copied by bpf/ctx_read.bpf.h and their
 * labels (rules in otel_decode.h). Must never read outside the sample record (every length
 * is checked against the otel part's length, itself capped by CTXPROF_OTEL_REC_MAX and the
 * record's size in record_view.c), never print.
 */
#include <string.h>

#include "engine/context_decode.h"
#include "engine/otel_decode.h"

#define OTEL_VALID_OFF   24
#define OTEL_FLAGS_OFF   25
#define OTEL_SIZE_OFF    26
#define OTEL_ENTRY_HDR   2 /* key_index, len */
#define OTEL_ATTRS_BYTES (CTXPROF_OTEL_REC_MAX - CTXPROF_OTEL_HDR)

static int all_zero(const uint8_t *b, size_t n)
{
        for (size_t i = 0; i < n; i++)
                if (b[i])
                        return 0;
        return 1;
}

/* The entries of a valid record into c->attrs (last duplicate wins). 0, or -1 when one
 * entry goes past attrs_data_size (then no attribute is delivered). prefix: a is the first
 * size bytes of longer entries (over budget): the complete entries in it are kept and the
 * one cut at the end is left out (0). */
static int parse_attrs(const uint8_t *a, size_t size, int prefix, struct otel_ctx *c,
                       struct otel_decode_stats *st)
{
        static const unsigned none = OTEL_MAX_KEYS;
        unsigned slot[OTEL_MAX_KEYS];
        size_t off = 0;

        for (unsigned k = 0; k < OTEL_MAX_KEYS; k++)
                slot[k] = none;
        c->n_attrs = 0;
        while (off < size) {
                uint8_t key, len;

                if (size - off < OTEL_ENTRY_HDR)
                        return prefix ? 0 : -1;
                key = a[off];
                len = a[off + 1];
                if (size - off - OTEL_ENTRY_HDR < len)
                        return prefix ? 0 : -1;
                if (slot[key] == none) {
                        slot[key] = c->n_attrs++;
                } else {
                        st->duplicates++; /* this later entry replaces the earlier one */
                }
                c->attrs[slot[key]] =
                    (struct otel_attr){.key = key, .len = len, .val = a + off + OTEL_ENTRY_HDR};
                off += OTEL_ENTRY_HDR + (size_t)len;
        }
        return 0;
}

int otel_decode(const struct record_view *v, struct otel_ctx *c, struct otel_decode_stats *st)
{
        const uint8_t *rec = v->otel;
        size_t len = v->otel_len;
        uint16_t size;
        int cut;

        if (!(v->r->flags & CTXPROF_SF_OTEL) || len < CTXPROF_OTEL_HDR ||
            len > CTXPROF_OTEL_REC_MAX)
                return 0;
        if (rec[OTEL_VALID_OFF] != 1) {
                st->not_valid++;
                return 0;
        }
        memcpy(c->trace_id, rec, OTEL_TRACE_ID_BYTES);
        memcpy(c->span_id, rec + OTEL_TRACE_ID_BYTES, OTEL_SPAN_ID_BYTES);
        c->no_ids =
            all_zero(c->trace_id, OTEL_TRACE_ID_BYTES) || all_zero(c->span_id, OTEL_SPAN_ID_BYTES);
        c->trace_flags = rec[OTEL_FLAGS_OFF]; /* never required: older writers write 0 */
        c->n_attrs = 0;
        memcpy(&size, rec + OTEL_SIZE_OFF, sizeof(size));
        cut = size > OTEL_ATTRS_BYTES;
        if (cut) {
                st->oversized++; /* BPF copied the budget's worth: its complete entries */
                size = OTEL_ATTRS_BYTES;
        }
        if (len != CTXPROF_OTEL_HDR + (size_t)size) {
                /* BPF copies exactly the entries the size names: anything else is not a
                 * copy of this record's entries */
                st->malformed++;
        } else if (parse_attrs(rec + CTXPROF_OTEL_HDR, size, cut, c, st)) {
                c->n_attrs = 0;
                st->malformed++;
        }
        if (c->no_ids) {
                st->zero_ids++; /* no span active: the attributes still apply */
                return c->n_attrs > 0;
        }
        st->records++;
        return 1;
}

uint64_t otel_span_u64(const struct otel_ctx *c)
{
        uint64_t v = 0;

        for (unsigned i = 0; i < OTEL_SPAN_ID_BYTES; i++)
                v = v << 8 | c->span_id[i];
        return v;
}

static void to_hex(char *out, const uint8_t *b, size_t n)
{
        static const char digits[] = "0123456789abcdef";

        for (size_t i = 0; i < n; i++) {
                out[2 * i] = digits[b[i] >> 4];
                out[2 * i + 1] = digits[b[i] & 0xf];
        }
}

/* Datadog's local root span id value: exactly 16 lowercase hex digits. 0, or -1. */
static int parse_root_span(const uint8_t *v, size_t len, uint64_t *out)
{
        uint64_t id = 0;

        if (len != OTEL_DD_ROOT_HEX)
                return -1;
        for (size_t i = 0; i < len; i++) {
                unsigned d;

                if (v[i] >= '0' && v[i] <= '9')
                        d = v[i] - '0';
                else if (v[i] >= 'a' && v[i] <= 'f')
                        d = v[i] - 'a' + 10;
                else
                        return -1;
                id = id << 4 | d;
        }
        *out = id;
        return 0;
}

static int is_id_key(const char *k)
{
        return !strcmp(k, "trace_id") || !strcmp(k, "span_id");
}

unsigned otel_labels(struct otel_ctx *c, const char *const *keys, unsigned n_keys,
                     struct decoded_label *out, unsigned max, struct otel_decode_stats *st)
{
        unsigned n = 0;

        c->local_root_span_id = 0;
        if (max < 2)
                return 0;
        if (c->no_ids)
                goto attrs;
        to_hex(c->hex, c->trace_id, OTEL_TRACE_ID_BYTES);
        to_hex(c->hex + 2 * OTEL_TRACE_ID_BYTES, c->span_id, OTEL_SPAN_ID_BYTES);
        out[n++] = (struct decoded_label){
            .key = "trace_id", .key_len = 8, .value = c->hex, .value_len = 2 * OTEL_TRACE_ID_BYTES};
        out[n++] = (struct decoded_label){.key = "span_id",
                                          .key_len = 7,
                                          .value = c->hex + 2 * OTEL_TRACE_ID_BYTES,
                                          .value_len = 2 * OTEL_SPAN_ID_BYTES};
attrs:
        for (unsigned i = 0; i < c->n_attrs; i++) {
                const struct otel_attr *a = &c->attrs[i];
                size_t vcut;

                if (a->key >= n_keys || !keys[a->key]) {
                        st->unknown_keys++;
                        continue;
                }
                if (n == max || is_id_key(keys[a->key])) {
                        st->labels_dropped++;
                        continue;
                }
                if (!strcmp(keys[a->key], OTEL_DD_ROOT_KEY) &&
                    parse_root_span(a->val, a->len, &c->local_root_span_id))
                        st->root_span_bad++;
                vcut = utf8_valid_prefix(a->val, a->len);
                if (vcut != a->len)
                        st->values_truncated++;
                out[n++] = (struct decoded_label){.key = keys[a->key],
                                                  .key_len = strlen(keys[a->key]),
                                                  .value = (const char *)a->val,
                                                  .value_len = vcut,
                                                  .value_truncated = vcut != a->len};
        }
        return n;
}

int otel_has_unknown_key(const struct otel_ctx *c, unsigned n_keys)
{
        for (unsigned i = 0; i < c->n_attrs; i++)
                if (c->attrs[i].key >= n_keys)
                        return 1;
        return 0;
}
