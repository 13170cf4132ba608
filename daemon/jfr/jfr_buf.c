/* SPDX-License-Identifier: MIT */
/*
 * jfr_buf.c — byte buffer and JFR primitive encodings (see jfr_buf.h). Owns only memory;
 * never prints, never does I/O.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "jfr/jfr_buf.h"
#include "util/grow.h"

#define BUF_FIRST_CAP 256 /* bytes at first growth */

void jfr_buf_init(struct jfr_buf *b)
{
        memset(b, 0, sizeof(*b));
}

void jfr_buf_free(struct jfr_buf *b)
{
        free(b->data);
        memset(b, 0, sizeof(*b));
}

int jfr_buf_reserve(struct jfr_buf *b, size_t more)
{
        if (b->err)
                return b->err;
        if (more <= b->cap - b->len)
                return 0;
        if (more > SIZE_MAX - b->len ||
            grow_array((void **)&b->data, &b->cap, 1, b->len + more, BUF_FIRST_CAP))
                b->err = -ENOMEM;
        return b->err;
}

void jfr_buf_put(struct jfr_buf *b, const void *p, size_t n)
{
        if (!n || jfr_buf_reserve(b, n))
                return;
        memcpy(b->data + b->len, p, n);
        b->len += n;
}

void jfr_buf_u8(struct jfr_buf *b, uint8_t v)
{
        if (jfr_buf_reserve(b, 1))
                return;
        b->data[b->len++] = v;
}

void jfr_buf_be16(struct jfr_buf *b, uint16_t v)
{
        uint8_t t[2] = {(uint8_t)(v >> 8), (uint8_t)v};
        jfr_buf_put(b, t, 2);
}

void jfr_buf_be32(struct jfr_buf *b, uint32_t v)
{
        uint8_t t[4] = {(uint8_t)(v >> 24), (uint8_t)(v >> 16), (uint8_t)(v >> 8), (uint8_t)v};
        jfr_buf_put(b, t, 4);
}

static void be64(uint8_t *t, uint64_t v)
{
        for (int i = 7; i >= 0; i--, v >>= 8)
                t[i] = (uint8_t)v;
}

void jfr_buf_be64(struct jfr_buf *b, uint64_t v)
{
        uint8_t t[8];
        be64(t, v);
        jfr_buf_put(b, t, 8);
}

void jfr_buf_patch_be64(struct jfr_buf *b, size_t off, uint64_t v)
{
        if (!b->err && off + 8 <= b->len)
                be64(b->data + off, v);
}

size_t jfr_varint_len(uint64_t v)
{
        size_t n = 1;
        while (n < 9 && v >= 0x80) {
                v >>= 7;
                n++;
        }
        return n;
}

/* Encode into t[0..width): groups of 7 bits, continuation bit on all but the last;
 * the 9th byte (if reached) carries 8 raw bits. */
static void encode(uint8_t *t, uint64_t v, unsigned width)
{
        for (unsigned i = 0; i < width; i++) {
                if (i == 8) {
                        t[i] = (uint8_t)v;
                        return;
                }
                t[i] = (uint8_t)(v & 0x7f);
                v >>= 7;
                if (i + 1 < width)
                        t[i] |= 0x80;
        }
}

void jfr_buf_varint(struct jfr_buf *b, uint64_t v)
{
        uint8_t t[9];
        unsigned n = (unsigned)jfr_varint_len(v);
        encode(t, v, n);
        jfr_buf_put(b, t, n);
}

size_t jfr_buf_varint_fixed(struct jfr_buf *b, uint64_t v, unsigned width)
{
        uint8_t t[9];
        size_t off = b->len;
        encode(t, v, width);
        jfr_buf_put(b, t, width);
        return off;
}

void jfr_buf_patch_varint(struct jfr_buf *b, size_t off, uint64_t v, unsigned width)
{
        if (!b->err && off + width <= b->len)
                encode(b->data + off, v, width);
}

void jfr_buf_string(struct jfr_buf *b, const char *s, size_t len)
{
        if (!s) {
                jfr_buf_u8(b, 0);
                return;
        }
        jfr_buf_u8(b, 3);
        jfr_buf_varint(b, len);
        jfr_buf_put(b, s, len);
}

int jfr_varint_decode(const uint8_t *p, size_t avail, uint64_t *out, size_t *used)
{
        uint64_t v = 0;
        for (size_t i = 0; i < 9; i++) {
                if (i >= avail)
                        return -EBADMSG;
                if (i == 8) {
                        v |= (uint64_t)p[i] << 56;
                        *out = v;
                        *used = 9;
                        return 0;
                }
                v |= (uint64_t)(p[i] & 0x7f) << (7 * i);
                if (!(p[i] & 0x80)) {
                        *out = v;
                        *used = i + 1;
                        return 0;
                }
        }
        return -EBADMSG; /* not reached */
}

/* Length of the valid UTF-8 sequence at s (1..4), or 0 if invalid (or NUL). */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
        unsigned c = s[0];
        if (c == 0)
                return 0;
        if (c < 0x80)
                return 1;
        size_t len;
        uint32_t cp, min;
        if ((c & 0xe0) == 0xc0) {
                len = 2, cp = c & 0x1f, min = 0x80;
        } else if ((c & 0xf0) == 0xe0) {
                len = 3, cp = c & 0x0f, min = 0x800;
        } else if ((c & 0xf8) == 0xf0) {
                len = 4, cp = c & 0x07, min = 0x10000;
        } else {
                return 0;
        }
        if (len > n)
                return 0;
        for (size_t i = 1; i < len; i++) {
                if ((s[i] & 0xc0) != 0x80)
                        return 0;
                cp = (cp << 6) | (s[i] & 0x3f);
        }
        if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
                return 0;
        return len;
}

size_t jfr_utf8_sanitize(const char *in, size_t len, char *out, size_t out_cap)
{
        static const char repl[] = "\xef\xbf\xbd";
        const unsigned char *s = (const unsigned char *)in;
        size_t o = 0;
        if (!out_cap)
                return 0;
        for (size_t i = 0; i < len;) {
                size_t n = utf8_seq(s + i, len - i);
                const char *src = n ? in + i : repl;
                size_t w = n ? n : 3;
                if (o + w + 1 > out_cap)
                        break;
                memcpy(out + o, src, w);
                o += w;
                i += n ? n : 1;
        }
        out[o] = 0;
        return o;
}
