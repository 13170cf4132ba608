/* SPDX-License-Identifier: MIT */
/*
 * test_otel_decode.c — the OTEP 4947 reader rules on hand-built sample records (what
 * bpf/ctx_read.bpf.h would copy): valid flag, all-zero ids (attributes kept), the last
 * duplicate key index wins, entries past attrs_data_size drop every attribute but keep trace
 * and span, oversized records keep their complete entries within the budget, key indexes the
 * key map does not name are dropped, values cut at invalid UTF-8, labels named trace_id /
 * span_id in hex, Datadog's datadog.local_root_span_id as the local root span id.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "engine/otel_decode.h"

/* The record's head and the bytes of its otel part, as BPF copied them. */
static struct {
        struct ctxprof_sample_rec head;
        struct {
                uint8_t rec[CTXPROF_OTEL_REC_MAX];
                uint32_t len;
        } otel;
        uint32_t flags;
} rec;
static uint64_t buf[CTXPROF_REC_CTX_MAX / 8];
static struct record_view view;
static struct otel_decode_stats st;
static struct otel_ctx ctx;
static const char *const keys[] = {"http.route", "tier", NULL, "trace_id"};

/* A valid record with the given entry bytes (attrs_data_size = n). */
static void make(const void *entries, uint16_t n)
{
        memset(&rec, 0, sizeof(rec));
        memset(&st, 0, sizeof(st));
        rec.flags = CTXPROF_SF_OTEL;
        for (int i = 0; i < 16; i++)
                rec.otel.rec[i] = (uint8_t)(0xa0 + i);
        for (int i = 0; i < 8; i++)
                rec.otel.rec[16 + i] = (uint8_t)(0xb0 + i);
        rec.otel.rec[24] = 1;
        memcpy(rec.otel.rec + 26, &n, 2);
        memcpy(rec.otel.rec + CTXPROF_OTEL_HDR, entries, n);
        rec.otel.len = CTXPROF_OTEL_HDR + n;
        rec.head.otel_ptr = 0x1000;
}

/* The sample record holding it, laid out as BPF sends it, split as the sampler does. */
static const struct record_view *record(void)
{
        size_t size = sizeof(rec.head) + CTXPROF_REC_ROUND((size_t)rec.otel.len);

        rec.head.type = CTXPROF_REC_SAMPLE;
        rec.head.flags = rec.flags;
        rec.head.otel_len = rec.otel.len;
        rec.head.len = (uint32_t)size;
        memset(buf, 0, sizeof(buf));
        memcpy(buf, &rec.head, sizeof(rec.head));
        memcpy((uint8_t *)buf + sizeof(rec.head), rec.otel.rec, rec.otel.len);
        cr_assert_eq(record_view_parse(buf, size, &view), 0);
        return &view;
}

static unsigned labels(struct decoded_label *out)
{
        cr_assert_eq(otel_decode(record(), &ctx, &st), 1);
        return otel_labels(&ctx, keys, 4, out, CTXPROF_MAX_LABELS, &st);
}

static const char *value_of(const struct decoded_label *l, unsigned n, const char *key)
{
        static char buf[300];

        for (unsigned i = 0; i < n; i++)
                if (l[i].key_len == strlen(key) && !memcmp(l[i].key, key, l[i].key_len)) {
                        memcpy(buf, l[i].value, l[i].value_len);
                        buf[l[i].value_len] = '\0';
                        return buf;
                }
        return NULL;
}

Test(otel_decode, ids_in_hex_and_last_duplicate_wins)
{
        struct decoded_label out[CTXPROF_MAX_LABELS];
        unsigned n;

        make("\x00\x06/wrong\x01\x04gold\x00\x02/a", 18);
        n = labels(out);
        cr_assert_eq(n, 4);
        cr_assert_str_eq(value_of(out, n, "trace_id"), "a0a1a2a3a4a5a6a7a8a9aaabacadaeaf");
        cr_assert_str_eq(value_of(out, n, "span_id"), "b0b1b2b3b4b5b6b7");
        cr_assert_str_eq(value_of(out, n, "http.route"), "/a");
        cr_assert_str_eq(value_of(out, n, "tier"), "gold");
        cr_assert_eq(st.duplicates, 1);
        cr_assert_eq(otel_span_u64(&ctx), 0xb0b1b2b3b4b5b6b7ull);
}

Test(otel_decode, zero_ids_keep_the_attributes)
{
        struct decoded_label out[CTXPROF_MAX_LABELS];
        unsigned n;

        make("\x00\x02/a\x01\x04gold", 10);
        memset(rec.otel.rec, 0, 24);
        rec.otel.rec[25] = 0; /* trace_flags: older writers write 0 */
        n = labels(out);
        cr_assert_eq(n, 2);
        cr_assert_str_eq(value_of(out, n, "http.route"), "/a");
        cr_assert_str_eq(value_of(out, n, "tier"), "gold");
        cr_assert_null(value_of(out, n, "trace_id"));
        cr_assert(ctx.no_ids);
        cr_assert_eq(st.zero_ids, 1);
        cr_assert_eq(st.records, 0);
}

Test(otel_decode, not_valid_and_zero_ids_without_attributes_are_no_context)
{
        make("", 0);
        rec.otel.rec[24] = 0;
        cr_assert_eq(otel_decode(record(), &ctx, &st), 0);
        cr_assert_eq(st.not_valid, 1);
        make("", 0);
        memset(rec.otel.rec + 16, 0, 8);
        cr_assert_eq(otel_decode(record(), &ctx, &st), 0);
        cr_assert_eq(st.zero_ids, 1);
        make("", 0);
        rec.flags = 0;
        cr_assert_eq(otel_decode(record(), &ctx, &st), 0);
}

Test(otel_decode, entry_past_the_record_drops_every_attribute)
{
        struct decoded_label out[CTXPROF_MAX_LABELS];

        /* tier=gold, then an entry claiming 200 bytes in a 4-byte remainder */
        make("\x01\x04gold\x00\xc8/a/b", 10);
        cr_assert_eq(labels(out), 2); /* trace_id and span_id only */
        cr_assert_eq(st.malformed, 1);
        make("\x01", 1); /* half an entry header */
        cr_assert_eq(labels(out), 2);
        cr_assert_eq(st.malformed, 1);
}

Test(otel_decode, oversized_record_keeps_the_complete_entries_within_the_budget)
{
        struct decoded_label out[CTXPROF_MAX_LABELS];
        uint8_t e[CTXPROF_OTEL_REC_MAX - CTXPROF_OTEL_HDR];
        uint16_t big = 65535;
        size_t off = 0;
        unsigned n;

        /* tier=gold, then http.route=/a..., padding duplicates of tier=gold up to 10 bytes
         * before the budget's end, then http.route with 40 bytes that cross it */
        memcpy(e, "\x01\x04gold\x00\x02/a", 10);
        off = 10;
        while (off + 6 <= sizeof(e) - 10) {
                memcpy(e + off, "\x01\x04gold", 6);
                off += 6;
        }
        e[off] = 0;
        e[off + 1] = 40;
        memset(e + off + 2, 'x', sizeof(e) - off - 2);
        make(e, sizeof(e)); /* what BPF copies of an over-budget record: the budget's bytes */
        memcpy(rec.otel.rec + 26, &big, 2);
        rec.flags |= CTXPROF_SF_OTEL_CUT;
        n = labels(out);
        cr_assert_eq(n, 4);
        cr_assert_str_eq(value_of(out, n, "http.route"), "/a"); /* the cut entry is left out */
        cr_assert_str_eq(value_of(out, n, "tier"), "gold");
        cr_assert_eq(st.oversized, 1);
        cr_assert_eq(st.malformed, 0);
        /* a copy that does not match the size is refused */
        make("\x00\x02/a", 4);
        rec.otel.len = CTXPROF_OTEL_HDR + 2;
        cr_assert_eq(labels(out), 2);
        cr_assert_eq(st.malformed, 1);
}

Test(otel_decode, datadog_local_root_span_id)
{
        static const char *const dd[] = {"datadog.local_root_span_id", "tier"};
        struct decoded_label out[CTXPROF_MAX_LABELS];
        unsigned n;

        make("\x00\x10"
             "00000000075bcd15"
             "\x01\x02ok",
             22);
        cr_assert_eq(otel_decode(record(), &ctx, &st), 1);
        n = otel_labels(&ctx, dd, 2, out, CTXPROF_MAX_LABELS, &st);
        cr_assert_eq(n, 4);
        cr_assert_eq(ctx.local_root_span_id, 123456789);
        cr_assert_str_eq(value_of(out, n, "datadog.local_root_span_id"), "00000000075bcd15");
        /* uppercase, or not 16 digits: no root span id, counted */
        static const struct {
                const char *entry;
                uint16_t len;
        } bad[] = {{"\x00\x10"
                    "00000000075BCD15",
                    18},
                   {"\x00\x03"
                    "abc",
                    5}};
        for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                make(bad[i].entry, bad[i].len);
                cr_assert_eq(otel_decode(record(), &ctx, &st), 1);
                otel_labels(&ctx, dd, 2, out, CTXPROF_MAX_LABELS, &st);
                cr_assert_eq(ctx.local_root_span_id, 0);
                cr_assert_eq(st.root_span_bad, 1);
        }
}

Test(otel_decode, unknown_and_unusable_keys_are_dropped)
{
        struct decoded_label out[CTXPROF_MAX_LABELS];
        unsigned n;

        /* key 200 (beyond the map), key 2 (NULL name), key 3 named trace_id, then tier */
        make("\xc8\x01x\x02\x01y\x03\x01z\x01\x02ok", 13);
        n = labels(out);
        cr_assert_eq(n, 3);
        cr_assert_str_eq(value_of(out, n, "tier"), "ok");
        cr_assert_str_eq(value_of(out, n, "trace_id"), "a0a1a2a3a4a5a6a7a8a9aaabacadaeaf");
        cr_assert_eq(st.unknown_keys, 2);
        cr_assert_eq(st.labels_dropped, 1);
        cr_assert(otel_has_unknown_key(&ctx, 4));
}

Test(otel_decode, invalid_utf8_values_are_cut)
{
        struct decoded_label out[CTXPROF_MAX_LABELS];
        unsigned n;

        make("\x01\x05ok\xff\xfe!\x00\x03\xc3\xa9x", 12);
        n = labels(out);
        cr_assert_str_eq(value_of(out, n, "tier"), "ok");
        cr_assert_str_eq(value_of(out, n, "http.route"), "\xc3\xa9x");
        cr_assert_eq(st.values_truncated, 1);
}
