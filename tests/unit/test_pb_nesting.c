/* SPDX-License-Identifier: MIT */
/*
 * test_pb_nesting.c — engine/pb_nesting: a ProcessContext that protobuf-c itself packed passes;
 * values nested PB_NESTING_MAX deep pass and one level more is refused (-ELOOP), as are
 * 10 000 levels (the payload that overflowed the daemon's stack inside protobuf-c); a length
 * past the end, a truncated varint and a group are -EBADMSG. Each payload is built here
 * byte by byte from the field numbers of proto/otel/, inside out.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "engine/pb_nesting.h"
#include "otel/processcontext.pb-c.h"

#define TAG(field, wire) ((uint8_t)((field) << 3 | (wire)))
#define LEN              2

/* A payload built backwards: bytes are prepended before p, within buf[0..cap). */
struct rev {
        uint8_t *buf, *p;
        size_t cap;
};

static void rev_init(struct rev *r, size_t cap)
{
        r->buf = malloc(cap);
        cr_assert_not_null(r->buf);
        r->cap = cap;
        r->p = r->buf + cap;
}

static void prepend(struct rev *r, const void *b, size_t n)
{
        cr_assert_geq((size_t)(r->p - r->buf), n);
        r->p -= n;
        memcpy(r->p, b, n);
}

static size_t rev_len(const struct rev *r)
{
        return (size_t)(r->buf + r->cap - r->p);
}

/* Wrap everything from `from` bytes before the end as field `field` (length-delimited). */
static void wrap(struct rev *r, size_t inner_len, unsigned field)
{
        uint8_t v[10];
        size_t n = 0;
        uint64_t x = inner_len;

        do {
                v[n] = (uint8_t)(x & 0x7f);
                x >>= 7;
                if (x)
                        v[n] |= 0x80;
                n++;
        } while (x);
        prepend(r, v, n);
        uint8_t t = TAG(field, LEN);
        prepend(r, &t, 1);
}

/* ProcessContext { attributes = KeyValue { key "k", value = AnyValue nested `arrays` deep } }:
 * the innermost AnyValue is string_value "x"; its depth is 3 + 2 * arrays. */
static struct rev nested(unsigned arrays)
{
        struct rev r;
        static const uint8_t str[] = {TAG(1, LEN), 1, 'x'}; /* AnyValue.string_value */
        static const uint8_t key[] = {TAG(1, LEN), 1, 'k'}; /* KeyValue.key */

        rev_init(&r, 64 + (size_t)arrays * 8);
        prepend(&r, str, sizeof(str));
        for (unsigned i = 0; i < arrays; i++) {
                wrap(&r, rev_len(&r), 1); /* ArrayValue.values = 1 (an AnyValue) */
                wrap(&r, rev_len(&r), 5); /* AnyValue.array_value = 5 */
        }
        wrap(&r, rev_len(&r), 2); /* KeyValue.value = 2 */
        prepend(&r, key, sizeof(key));
        wrap(&r, rev_len(&r), 2); /* ProcessContext.attributes = 2 */
        return r;
}

Test(pb_nesting, what_protobuf_c_packs_passes)
{
        Opentelemetry__Proto__Common__V1__AnyValue sv =
            OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__INIT;
        Opentelemetry__Proto__Common__V1__KeyValue kv =
            OPENTELEMETRY__PROTO__COMMON__V1__KEY_VALUE__INIT;
        Opentelemetry__Proto__Common__V1__KeyValue *kvs[] = {&kv};
        Opentelemetry__Proto__Resource__V1__Resource res =
            OPENTELEMETRY__PROTO__RESOURCE__V1__RESOURCE__INIT;
        Opentelemetry__Proto__Processcontext__V1development__ProcessContext pc =
            OPENTELEMETRY__PROTO__PROCESSCONTEXT__V1DEVELOPMENT__PROCESS_CONTEXT__INIT;
        uint8_t buf[256];

        sv.value_case = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE;
        sv.string_value = "checkout";
        kv.key = "service.name";
        kv.value = &sv;
        res.n_attributes = 1;
        res.attributes = kvs;
        pc.resource = &res;
        pc.n_attributes = 1;
        pc.attributes = kvs;
        size_t n =
            opentelemetry__proto__processcontext__v1development__process_context__pack(&pc, buf);
        cr_assert_lt(n, sizeof(buf));
        cr_assert_eq(pb_nesting_check(buf, n, PB_NESTING_MAX), 0);
        cr_assert_eq(pb_nesting_check(NULL, 0, PB_NESTING_MAX), 0, "an empty message is valid");
}

Test(pb_nesting, the_bound_is_exact)
{
        unsigned ok = (PB_NESTING_MAX - 3) / 2; /* deepest AnyValue at 3 + 2 * ok <= MAX */
        struct rev a = nested(ok), b = nested(ok + 1);

        cr_assert_eq(pb_nesting_check(a.p, rev_len(&a), PB_NESTING_MAX), 0);
        cr_assert_eq(pb_nesting_check(b.p, rev_len(&b), PB_NESTING_MAX), -ELOOP);
        free(a.buf);
        free(b.buf);
}

Test(pb_nesting, ten_thousand_levels_are_refused)
{
        struct rev r = nested(10000);

        cr_assert_gt(rev_len(&r), 50000);
        cr_assert_eq(pb_nesting_check(r.p, rev_len(&r), PB_NESTING_MAX), -ELOOP);
        free(r.buf);
}

Test(pb_nesting, broken_wire_format_is_refused)
{
        struct rev r = nested(2);
        size_t n = rev_len(&r);
        static const uint8_t group[] = {TAG(2, 3)};
        static const uint8_t cut_varint[] = {TAG(3, 0), 0x80};

        cr_assert_eq(pb_nesting_check(r.p, n - 1, PB_NESTING_MAX), -EBADMSG,
                     "a length past the end");
        cr_assert_eq(pb_nesting_check(group, sizeof(group), PB_NESTING_MAX), -EBADMSG);
        cr_assert_eq(pb_nesting_check(cut_varint, sizeof(cut_varint), PB_NESTING_MAX), -EBADMSG);
        free(r.buf);
}
