/* SPDX-License-Identifier: MIT */
/*
 * jfr_buf.h — growable byte buffer with the JFR primitive encodings: compressed integers
 * (LEB128 capped at 9 bytes, the 9th byte raw, as the JDK reader decodes them), big-endian
 * fixed-width integers, tag-3 UTF-8 strings, and fixed-width padded varints for back-patching.
 * Owns only memory. Never prints; allocation failure is sticky (b->err = -ENOMEM) so a long
 * run of puts needs one check at the end.
 */
#ifndef CTXPROF_JFR_BUF_H
#define CTXPROF_JFR_BUF_H

#include <stddef.h>
#include <stdint.h>

struct jfr_buf {
        uint8_t *data;
        size_t len, cap;
        int err; /* 0 or -ENOMEM once any put failed; later puts are no-ops */
};

void jfr_buf_init(struct jfr_buf *b);
void jfr_buf_free(struct jfr_buf *b);
static inline void jfr_buf_reset(struct jfr_buf *b)
{
        b->len = 0;
        b->err = 0;
}
int jfr_buf_reserve(struct jfr_buf *b, size_t more); /* 0 or -ENOMEM (also sets b->err) */
void jfr_buf_put(struct jfr_buf *b, const void *p, size_t n);
void jfr_buf_u8(struct jfr_buf *b, uint8_t v);
void jfr_buf_be16(struct jfr_buf *b, uint16_t v);
void jfr_buf_be32(struct jfr_buf *b, uint32_t v);
void jfr_buf_be64(struct jfr_buf *b, uint64_t v);
/* Compressed integer: 1..9 bytes. Signed values are written as their two's complement:
 * a negative long is 9 bytes; use jfr_buf_varint_i32 for a negative int (5 bytes). */
void jfr_buf_varint(struct jfr_buf *b, uint64_t v);
static inline void jfr_buf_varint_i32(struct jfr_buf *b, int32_t v)
{
        jfr_buf_varint(b, (uint32_t)v);
}
/* Number of bytes jfr_buf_varint would write. */
size_t jfr_varint_len(uint64_t v);
/* A varint of exactly `width` bytes (1..9) with continuation padding; v must fit in
 * 7*width bits (width 9: any value). Returns the offset of the field for jfr_buf_patch. */
size_t jfr_buf_varint_fixed(struct jfr_buf *b, uint64_t v, unsigned width);
void jfr_buf_patch_varint(struct jfr_buf *b, size_t off, uint64_t v, unsigned width);
void jfr_buf_patch_be64(struct jfr_buf *b, size_t off, uint64_t v);
/* String field: NULL -> tag 0; otherwise tag 3 + byte length + bytes (caller sanitizes). */
void jfr_buf_string(struct jfr_buf *b, const char *s, size_t len);
static inline void jfr_buf_cstring(struct jfr_buf *b, const char *s)
{
        jfr_buf_string(b, s, s ? __builtin_strlen(s) : 0);
}

/* Decoding (the reader and tests): 0 ok, -EBADMSG when the bytes run out before the varint
 * ends. Consumes at most 9 bytes, the 9th whole. */
int jfr_varint_decode(const uint8_t *p, size_t avail, uint64_t *out, size_t *used);

/* Copy `len` bytes of `in` to `out` as valid UTF-8 without NUL: every invalid sequence
 * (bad lead, truncated, overlong, surrogate, > U+10FFFF) and every NUL byte becomes U+FFFD.
 * Stops before `out_cap` would be exceeded (never splits a character) and NUL-terminates
 * (out_cap >= 1). Returns the output length. Used for every string the writer stores. */
size_t jfr_utf8_sanitize(const char *in, size_t len, char *out, size_t out_cap);

#endif
