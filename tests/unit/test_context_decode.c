/* SPDX-License-Identifier: MIT */
/*
 * test_context_decode.c — the Custom Labels v1 reader rules and span checksum validation on
 * hand-built sample records (what the BPF program would copy, laid out as it does:
 * variable-length entries): NULL keys, first duplicate wins, over-long keys dropped, values
 * cut at UTF-8 boundaries, faults poisoning later entries, torn and never-set spans, entries
 * whose bytes are not their lengths; a Go tracer's span among goroutine labels.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "ctx/abi.h"
#include "engine/context_decode.h"

struct lab {
        const char *k, *v;
        uint64_t klen, vlen;
        uint32_t fl;
};

static struct ctxprof_sample_rec rec; /* the head the tests set; labels come from entries[] */
static struct lab entries[CTXPROF_MAX_LABELS];
static unsigned nlabs;
static uint64_t buf[CTXPROF_REC_MAX / 8];
static struct record_view view;
static struct context_decode_stats st;

static void reset(void)
{
        memset(&rec, 0, sizeof(rec));
        memset(&st, 0, sizeof(st));
        nlabs = 0;
        rec.flags = CTXPROF_SF_LABELSET;
}

static void put(int i, const char *k, uint64_t klen, const char *v, uint64_t vlen, uint32_t fl)
{
        entries[i] = (struct lab){.k = k, .v = v, .klen = klen, .vlen = vlen, .fl = fl};
        if ((unsigned)i + 1 > nlabs)
                nlabs = i + 1;
}

static size_t min_sz(uint64_t a, size_t cap)
{
        return a < cap ? (size_t)a : cap;
}

/* The record as bpf/ctx_read.bpf.h writes it: a key or value read is copied up to its cap,
 * nothing after a NULL or a fault. */
static const struct record_view *record(void)
{
        uint8_t *p = (uint8_t *)buf;
        size_t pos = sizeof(rec);

        memset(buf, 0, sizeof(buf));
        for (unsigned i = 0; i < nlabs; i++) {
                struct ctxprof_label_rec *h = (struct ctxprof_label_rec *)(p + pos);
                const struct lab *l = &entries[i];
                size_t kb = 0, vb = 0;

                h->flags = CTXPROF_LF_PRESENT | l->fl;
                h->key_len = l->klen;
                h->val_len = l->vlen;
                if (l->k && !(l->fl & (CTXPROF_LF_ENTRY_FAULT | CTXPROF_LF_KEY_NULL |
                                       CTXPROF_LF_KEY_FAULT))) {
                        kb = min_sz(l->klen, CTXPROF_LABEL_KEY_MAX);
                        memcpy(h + 1, l->k, kb);
                        if (l->v && !(l->fl & (CTXPROF_LF_VAL_NULL | CTXPROF_LF_VAL_FAULT))) {
                                vb = min_sz(l->vlen, CTXPROF_LABEL_VAL_MAX);
                                memcpy((uint8_t *)(h + 1) + kb, l->v, vb);
                        }
                }
                h->key_bytes = (uint16_t)kb;
                h->val_bytes = (uint16_t)vb;
                pos += CTXPROF_LABEL_REC_SIZE(kb, vb);
        }
        rec.type = CTXPROF_REC_SAMPLE;
        rec.n_labels = nlabs;
        rec.labels_len = (uint32_t)(pos - sizeof(rec));
        rec.len = (uint32_t)pos;
        memcpy(buf, &rec, sizeof(rec));
        cr_assert_eq(record_view_parse(buf, pos, &view), 0);
        return &view;
}

Test(context_decode, null_key_and_first_duplicate_wins)
{
        struct decoded_label out[CTXPROF_MAX_LABELS];
        unsigned n;

        reset();
        put(0, NULL, 3, "x", 1, CTXPROF_LF_KEY_NULL);
        put(1, "dup", 3, "first", 5, 0);
        put(2, "dup", 3, "second", 6, 0);
        put(3, "ok", 2, "1", 1, 0);
        n = context_decode_labels(record(), out, &st);
        cr_assert_eq(n, 2);
        cr_assert(out[0].key_len == 3 && !memcmp(out[0].key, "dup", 3));
        cr_assert(out[0].value_len == 5 && !memcmp(out[0].value, "first", 5));
        cr_assert(out[1].key_len == 2 && !memcmp(out[1].value, "1", 1));
        cr_assert_eq(st.null_keys, 1);
        cr_assert_eq(st.duplicates, 1);
}

Test(context_decode, duplicate_of_a_dropped_first_is_not_promoted)
{
        struct decoded_label out[CTXPROF_MAX_LABELS];

        reset();
        put(0, "k", 1, NULL, 5, CTXPROF_LF_VAL_FAULT); /* first k unreadable value */
        put(1, "k", 1, "WRONG", 5, 0);
        cr_assert_eq(context_decode_labels(record(), out, &st), 0);
}

Test(context_decode, unreadable_key_poisons_later_entries)
{
        struct decoded_label out[CTXPROF_MAX_LABELS];

        reset();
        put(0, "a", 1, "1", 1, 0);
        put(1, NULL, 2, NULL, 0, CTXPROF_LF_KEY_FAULT);
        put(2, "b", 1, "2", 1, 0);
        cr_assert_eq(context_decode_labels(record(), out, &st), 1);
        cr_assert_eq(out[0].key[0], 'a');
}

Test(context_decode, long_keys_dropped_long_values_cut_at_utf8)
{
        struct decoded_label out[CTXPROF_MAX_LABELS];
        char val[CTXPROF_LABEL_VAL_MAX], key[1000];
        unsigned n;

        memset(val, 'x', sizeof(val));
        memset(key, 'k', sizeof(key));
        /* a 2-byte character straddling the cap: must be cut before it */
        val[CTXPROF_LABEL_VAL_MAX - 1] = (char)0xC3;
        reset();
        put(0, key, sizeof(key), "v", 1, 0);
        put(1, "big", 3, val, 1ull << 40, 0);
        put(2, "bad\xff", 4, "1", 1, 0);
        put(3, "v", 1, "ab\xff\xfe", 4, 0);
        n = context_decode_labels(record(), out, &st);
        cr_assert_eq(n, 2);
        cr_assert_eq(out[0].value_len, CTXPROF_LABEL_VAL_MAX - 1);
        cr_assert(out[0].value_truncated);
        cr_assert_eq(out[1].value_len, 2);
        cr_assert_eq(st.dropped, 2);
}

Test(context_decode, no_labelset_and_count_cut)
{
        struct decoded_label out[CTXPROF_MAX_LABELS];

        reset();
        rec.flags = 0;
        put(0, "a", 1, "1", 1, 0);
        cr_assert_eq(context_decode_labels(record(), out, &st), 0);
        reset();
        rec.flags |= CTXPROF_SF_LABELS_CUT;
        rec.label_count = 1000; /* more than were read */
        put(0, "a", 1, "1", 1, 0);
        cr_assert_eq(context_decode_labels(record(), out, &st), 1);
        cr_assert_eq(st.sets_cut, 1);
}

/* A read key or value whose bytes in the record are not its length up to the cap is not
 * what the target held: dropped, and it cannot be the first of a duplicate key. */
Test(context_decode, copied_bytes_must_match_the_lengths)
{
        struct decoded_label out[CTXPROF_MAX_LABELS];
        struct ctxprof_label_rec *h;

        reset();
        put(0, "ab", 2, "xyz", 3, 0);
        put(1, "ab", 2, "second", 6, 0);
        record();
        h = (struct ctxprof_label_rec *)((uint8_t *)buf + sizeof(rec));
        h->key_len = 1; /* says 1 byte, carries 2 */
        cr_assert_eq(record_view_parse(buf, rec.len, &view), 0);
        cr_assert_eq(context_decode_labels(&view, out, &st), 1);
        cr_assert(out[0].value_len == 6 && !memcmp(out[0].value, "second", 6));
        h->key_len = 2;
        h->val_len = 300; /* a cut value carries the cap's bytes, not 3 */
        cr_assert_eq(record_view_parse(buf, rec.len, &view), 0);
        cr_assert_eq(context_decode_labels(&view, out, &st), 0); /* the first "ab" wins */
        cr_assert_eq(st.dropped, 2);
}

Test(context_decode, span_checksum)
{
        uint64_t s = 0, r = 0;

        reset();
        cr_assert_eq(context_decode_span(&rec, &s, &r, &st), 0); /* not read */
        rec.flags = CTXPROF_SF_SPAN_READ;
        cr_assert_eq(context_decode_span(&rec, &s, &r, &st), 0); /* never set */
        cr_assert_eq(st.torn_spans, 0);
        rec.span.span_id = 7;
        rec.span.root_span_id = 9;
        rec.span.checksum = 0; /* being written */
        cr_assert_eq(context_decode_span(&rec, &s, &r, &st), 0);
        rec.span.checksum = ctx_span_checksum(7, 8); /* mixed old/new */
        cr_assert_eq(context_decode_span(&rec, &s, &r, &st), 0);
        cr_assert_eq(st.torn_spans, 2);
        rec.span.checksum = ctx_span_checksum(7, 9);
        cr_assert_eq(context_decode_span(&rec, &s, &r, &st), 1);
        cr_assert(s == 7 && r == 9);
}

Test(context_decode, utf8_prefix)
{
        cr_assert_eq(utf8_valid_prefix((const unsigned char *)"abc", 3), 3);
        cr_assert_eq(utf8_valid_prefix((const unsigned char *)"a\xc3\xa9", 3), 3);
        cr_assert_eq(utf8_valid_prefix((const unsigned char *)"a\xc3", 2), 1);
        cr_assert_eq(utf8_valid_prefix((const unsigned char *)"\xc0\x80", 2), 0); /* overlong */
        cr_assert_eq(utf8_valid_prefix((const unsigned char *)"\xed\xa0\x80", 3),
                     0); /* surrogate */
}

/* The label-bytes rule (docs/jfr.md): keys that are empty, too long, not UTF-8 or hold a NUL
 * are dropped, never repaired; values are cut at the cap, at the first invalid byte and at
 * the first NUL, on a character boundary. */
Test(context_decode, label_bytes_rule)
{
        struct decoded_label out[CTXPROF_MAX_LABELS];
        char longkey[CTXPROF_LABEL_KEY_MAX + 1], longval[CTXPROF_LABEL_VAL_MAX + 8];
        unsigned n;

        memset(longkey, 'k', sizeof(longkey));
        memset(longval, 'v', sizeof(longval));
        memcpy(longval + CTXPROF_LABEL_VAL_MAX - 1, "\xc3\xa9", 2); /* splits at the cap */
        reset();
        put(0, "", 0, "empty key", 9, 0);
        put(1, longkey, sizeof(longkey), "x", 1, 0);
        put(2, "k\xff", 2, "bad key", 7, 0);
        put(3, "k\0ey", 4, "nul key", 7, 0);
        put(4, "nul", 3, "ab\0cd", 5, 0);
        put(5, "bad", 3, "ab\xc3(", 4, 0);
        put(6, "long", 4, longval, sizeof(longval), 0);
        put(7, "ok", 2, "\xc3\xa9t\xc3\xa9", 5, 0);
        n = context_decode_labels(record(), out, &st);
        cr_assert_eq(n, 4);
        cr_assert_eq(st.dropped, 4);
        cr_assert_eq(st.values_truncated, 3);
        cr_assert(out[0].key_len == 3 && !memcmp(out[0].key, "nul", 3));
        cr_assert(out[0].value_len == 2 && !memcmp(out[0].value, "ab", 2));
        cr_assert(out[1].value_len == 2 && !memcmp(out[1].value, "ab", 2));
        cr_assert_eq(out[2].value_len, CTXPROF_LABEL_VAL_MAX - 1);
        cr_assert(out[3].value_len == 5 && out[3].value_truncated == 0);
}

/* Go tracers' spans among goroutine labels: OpenTelemetry's 16 hex digits ("span_id"), else
 * dd-trace-go's decimal "span id" with its "local root span id"; anything else (a zero id,
 * a wrong length, a digit out of base, an overflow) is no span. */
Test(context_decode, go_span_labels)
{
#define L(k, v)                                                                                    \
        {                                                                                          \
                .key = k, .key_len = sizeof(k) - 1, .value = v, .value_len = sizeof(v) - 1         \
        }
        const struct decoded_label otel[] = {L("route", "/r1"), L("span_id", "00000000000a00F3")};
        const struct decoded_label dd[] = {L("local root span id", "7"), L("span id", "45059")};
        const struct decoded_label dd_noroot[] = {L("span id", "18446744073709551615"),
                                                  L("local root span id", "x")};
        const struct decoded_label bad[][1] = {{L("span_id", "0000000000000000")},
                                               {L("span_id", "a00f3")},
                                               {L("span_id", "00000000000a00g3")},
                                               {L("span id", "18446744073709551616")},
                                               {L("span id", "-5")},
                                               {L("span id", "0")},
                                               {L("span-id", "12")}};
#undef L
        uint64_t span = 0, root = 1;

        cr_assert_eq(context_go_span(otel, 2, &span, &root), 1);
        cr_assert(span == 0xa00f3 && root == 0);
        cr_assert_eq(context_go_span(dd, 2, &span, &root), 1);
        cr_assert(span == 45059 && root == 7);
        cr_assert_eq(context_go_span(dd_noroot, 2, &span, &root), 1);
        cr_assert(span == UINT64_MAX && root == 0, "an unreadable root is 0, the span kept");
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                cr_assert_eq(context_go_span(bad[i], 1, &span, &root), 0, "case %zu", i);
        cr_assert_eq(context_go_span(otel, 0, &span, &root), 0, "no labels");
}

/* A label that repeats the span in decimal (libctx's span-id / root-span-id) is recognised
 * only when its text is exactly "%llu" of the span: not with a leading zero, a sign, another
 * number or another key, and not without a valid span. */
Test(context_decode, span_mirror_is_the_exact_decimal)
{
        struct decoded_sample ds = {
            .has_span = 1, .span_id = 18446744073709551615ull, .root_span_id = 0};
        struct {
                const char *key, *value;
                int mirror;
        } cases[] = {
            {"span-id", "18446744073709551615", 1},
            {"span-id", "018446744073709551615", 0},
            {"span-id", "1844674407370955161", 0},
            {"span-id", "18446744073709551614", 0},
            {"span-id", "+18446744073709551615", 0},
            {"root-span-id", "0", 1},
            {"root-span-id", "00", 0},
            {"root-span-id", "", 0},
            {"span_id", "18446744073709551615", 0},
        };

        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                struct decoded_label l = {.key = cases[i].key,
                                          .key_len = strlen(cases[i].key),
                                          .value = cases[i].value,
                                          .value_len = strlen(cases[i].value)};

                cr_assert_eq(context_is_span_mirror(&ds, &l), cases[i].mirror, "%s=%s",
                             cases[i].key, cases[i].value);
        }
        ds.has_span = 0;
        struct decoded_label l = {
            .key = "root-span-id", .key_len = 12, .value = "0", .value_len = 1};
        cr_assert_eq(context_is_span_mirror(&ds, &l), 0, "no valid span: no mirror");
}
