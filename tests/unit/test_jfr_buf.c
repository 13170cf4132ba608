/* SPDX-License-Identifier: MIT */
/*
 * test_jfr_buf.c — jfr/jfr_buf: the JFR primitive encodings byte for byte (compressed
 * integers with the raw 9th byte, big-endian fixed widths, tag-3 strings, padded varints that
 * can be patched), the decoder's view of truncated input, and the UTF-8 sanitizer every
 * stored string goes through (bad bytes and NUL become U+FFFD, a character is never split).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "jfr/jfr_buf.h"

static struct jfr_buf b;

static void setup(void)
{
        jfr_buf_init(&b);
}
static void teardown(void)
{
        jfr_buf_free(&b);
}
TestSuite(jfr_buf, .init = setup, .fini = teardown);

static void expect_bytes(const void *want, size_t n)
{
        cr_assert_eq(b.err, 0);
        cr_assert_eq(b.len, n, "wrote %zu bytes, want %zu", b.len, n);
        cr_assert_arr_eq(b.data, want, n);
}

Test(jfr_buf, varint_small_values_are_leb128)
{
        static const uint8_t want[] = {0x00, 0x7f, 0x80, 0x01, 0xac, 0x02};

        jfr_buf_varint(&b, 0);
        jfr_buf_varint(&b, 127);
        jfr_buf_varint(&b, 128);
        jfr_buf_varint(&b, 300);
        expect_bytes(want, sizeof(want));
}

Test(jfr_buf, varint_ninth_byte_is_whole)
{
        /* 8 groups of 7 bits, then the top 8 bits raw: UINT64_MAX is 8 x 0xff + 0xff. */
        static const uint8_t want[9] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};

        jfr_buf_varint(&b, UINT64_MAX);
        expect_bytes(want, sizeof(want));
        cr_assert_eq(jfr_varint_len(UINT64_MAX), 9);
        cr_assert_eq(jfr_varint_len((1ull << 56) - 1), 8);
        cr_assert_eq(jfr_varint_len(1ull << 56), 9);
        cr_assert_eq(jfr_varint_len(0), 1);
}

Test(jfr_buf, varint_roundtrips_and_length_agrees)
{
        static const uint64_t v[] = {
            0,          1,          127,        128,        16383,
            16384,      1u << 21,   UINT32_MAX, 1ull << 49, (1ull << 56) - 1,
            1ull << 56, 1ull << 63, UINT64_MAX};

        for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
                uint64_t got;
                size_t used;

                jfr_buf_reset(&b);
                jfr_buf_varint(&b, v[i]);
                cr_assert_eq(b.len, jfr_varint_len(v[i]), "length of %llu",
                             (unsigned long long)v[i]);
                cr_assert_eq(jfr_varint_decode(b.data, b.len, &got, &used), 0);
                cr_assert_eq(got, v[i]);
                cr_assert_eq(used, b.len);
        }
}

Test(jfr_buf, negative_int_is_five_bytes)
{
        uint64_t got;
        size_t used;

        jfr_buf_varint_i32(&b, -1);
        cr_assert_eq(b.len, 5);
        cr_assert_eq(jfr_varint_decode(b.data, b.len, &got, &used), 0);
        cr_assert_eq((int32_t)got, -1);
}

Test(jfr_buf, truncated_varint_is_refused)
{
        static const uint8_t cut[] = {0x80, 0x80, 0x80};
        uint64_t got;
        size_t used;

        cr_assert_eq(jfr_varint_decode(cut, sizeof(cut), &got, &used), -EBADMSG);
        cr_assert_eq(jfr_varint_decode(cut, 0, &got, &used), -EBADMSG);
}

Test(jfr_buf, fixed_width_varint_pads_and_patches)
{
        uint64_t got;
        size_t used;
        size_t off;

        jfr_buf_u8(&b, 0xaa);
        off = jfr_buf_varint_fixed(&b, 5, 4);
        jfr_buf_u8(&b, 0xbb);
        cr_assert_eq(off, 1);
        cr_assert_eq(b.len, 6);
        cr_assert_eq(jfr_varint_decode(b.data + off, 4, &got, &used), 0);
        cr_assert_eq(got, 5);
        cr_assert_eq(used, 4, "padding keeps the field %zu bytes wide", used);

        jfr_buf_patch_varint(&b, off, (1u << 28) - 1, 4);
        cr_assert_eq(jfr_varint_decode(b.data + off, 4, &got, &used), 0);
        cr_assert_eq(got, (1u << 28) - 1);
        cr_assert_eq(used, 4);
        cr_assert_eq(b.data[0], 0xaa);
        cr_assert_eq(b.data[5], 0xbb, "a patch stays inside its field");
}

Test(jfr_buf, fixed_integers_are_big_endian)
{
        static const uint8_t want[] = {0x12, 0x34, 0xde, 0xad, 0xbe, 0xef, 0x01,
                                       0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08};
        size_t off;

        jfr_buf_be16(&b, 0x1234);
        jfr_buf_be32(&b, 0xdeadbeef);
        off = b.len;
        jfr_buf_be64(&b, 0);
        jfr_buf_patch_be64(&b, off, 0x0102030405060708ull);
        expect_bytes(want, sizeof(want));
}

Test(jfr_buf, strings_are_null_or_tag3_utf8)
{
        static const uint8_t want[] = {0x00, 0x03, 0x02, 'o', 'k', 0x03, 0x00};

        jfr_buf_cstring(&b, NULL);
        jfr_buf_cstring(&b, "ok");
        jfr_buf_string(&b, "", 0);
        expect_bytes(want, sizeof(want));
}

Test(jfr_buf, sanitizer_replaces_each_bad_byte_and_nul)
{
        char out[64];
        static const char in[] = "a\xff"
                                 "b\0c\xc0\x80"
                                 "d";
        const char *want = "a\xef\xbf\xbd"
                           "b\xef\xbf\xbd"
                           "c\xef\xbf\xbd\xef\xbf\xbd"
                           "d";
        size_t n = jfr_utf8_sanitize(in, sizeof(in) - 1, out, sizeof(out));

        cr_assert_eq(n, strlen(want));
        cr_assert_str_eq(out, want);
}

Test(jfr_buf, sanitizer_keeps_valid_text_and_rejects_surrogates)
{
        char out[64];
        const char *ok = "h\xc3\xa9llo \xe2\x82\xac \xf0\x9f\x94\xa5";
        size_t n = jfr_utf8_sanitize(ok, strlen(ok), out, sizeof(out));

        cr_assert_eq(n, strlen(ok));
        cr_assert_str_eq(out, ok);

        n = jfr_utf8_sanitize("\xed\xa0\x80", 3, out, sizeof(out)); /* U+D800 */
        cr_assert_eq(n, 9, "a surrogate is three bad bytes, got %zu output bytes", n);
        n = jfr_utf8_sanitize("\xf4\x90\x80\x80", 4, out, sizeof(out)); /* > U+10FFFF */
        cr_assert_eq(n, 12);
}

Test(jfr_buf, sanitizer_never_splits_a_character)
{
        char out[4];
        size_t n = jfr_utf8_sanitize("a\xe2\x82\xac", 4, out, sizeof(out));

        /* room for 3 bytes + NUL: 'a' fits, the 3-byte euro sign does not */
        cr_assert_eq(n, 1);
        cr_assert_str_eq(out, "a");
        n = jfr_utf8_sanitize("abc", 3, out, 1);
        cr_assert_eq(n, 0);
        cr_assert_eq(out[0], 0);
}
