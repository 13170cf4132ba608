/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_libctx_layout.c — every ABI structure's offsets and sizes against the
 * table in ARCHITECTURE.md / the Custom Labels v1 spec (numbers typed in from those tables,
 * not derived from the header), plus the seed's 4184-byte per-thread buffer as a reader sees
 * it through the published pointers.
 */
#include <criterion/criterion.h>
#include <stdalign.h>

#include "ctx/ctx.h"

extern __thread custom_labels_labelset_t *custom_labels_current_set;
extern __thread struct ctx_span_context ctx_span_context_v1;
extern const uint32_t custom_labels_abi_version;
extern const uint32_t ctx_span_context_abi_version;

Test(libctx_layout, custom_labels_v1)
{
        cr_assert_eq(sizeof(custom_labels_string_t), 16);
        cr_assert_eq(offsetof(custom_labels_string_t, len), 0);
        cr_assert_eq(offsetof(custom_labels_string_t, buf), 8);
        cr_assert_eq(sizeof(custom_labels_label_t), 32);
        cr_assert_eq(offsetof(custom_labels_label_t, key.len), 0);
        cr_assert_eq(offsetof(custom_labels_label_t, key.buf), 8);
        cr_assert_eq(offsetof(custom_labels_label_t, value.len), 16);
        cr_assert_eq(offsetof(custom_labels_label_t, value.buf), 24);
        cr_assert_eq(sizeof(custom_labels_labelset_t), 24);
        cr_assert_eq(offsetof(custom_labels_labelset_t, storage), 0);
        cr_assert_eq(offsetof(custom_labels_labelset_t, count), 8);
        cr_assert_eq(offsetof(custom_labels_labelset_t, capacity), 16);
        cr_assert_eq(sizeof(custom_labels_current_set), 8);
        cr_assert_eq(custom_labels_abi_version, 1);
}

Test(libctx_layout, span_context_v1)
{
        cr_assert_eq(sizeof(struct ctx_span_context), 64);
        cr_assert_eq(alignof(struct ctx_span_context), 64);
        cr_assert_eq(offsetof(struct ctx_span_context, span_id), 0x00);
        cr_assert_eq(offsetof(struct ctx_span_context, root_span_id), 0x08);
        cr_assert_eq(offsetof(struct ctx_span_context, checksum), 0x10);
        cr_assert_eq(offsetof(struct ctx_span_context, tags), 0x18);
        cr_assert_eq(sizeof(((struct ctx_span_context *)0)->tags), 40);
        cr_assert_eq(sizeof(((struct ctx_span_context *)0)->tags[0]), 4);
        cr_assert_eq((uintptr_t)&ctx_span_context_v1 % 64, 0, "TLS record is 64-byte aligned");
        cr_assert_eq(ctx_span_context_abi_version, 1);
}

/* The seed layout, observed the way a reader would: header, 10 label slots right after it,
 * then 10 x (128-byte key + 256-byte value) buffers; 4184 bytes in all. */
Test(libctx_layout, seed_buffer_layout)
{
        cr_assert_eq(ctx_set_span(1, 2), 0);
        cr_assert_eq(ctx_set_label_str("a", "x"), 0);
        cr_assert_eq(ctx_set_label_str("b", "y"), 0);
        const custom_labels_labelset_t *set = custom_labels_current_set;
        const unsigned char *base = (const unsigned char *)set;
        cr_assert_not_null(set);
        cr_assert_eq((const unsigned char *)set->storage, base + 24);
        cr_assert_eq(set->capacity, 10);
        cr_assert_eq(set->count, 4, "2 mirrors + 2 labels");
        for (size_t i = 0; i < set->count; i++) {
                const custom_labels_label_t *l = &set->storage[i];
                cr_assert_eq(l->key.buf, base + 24 + 320 + 384 * i, "key buffer of label %zu", i);
                cr_assert_eq(l->value.buf, base + 24 + 320 + 384 * i + 128, "value of label %zu",
                             i);
        }
        cr_assert_eq(24 + 320 + 384 * 10, 4184);
}
