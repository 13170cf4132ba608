/* SPDX-License-Identifier: MIT */
/*
 * test_record_view.c — splitting variable-length sample records (ctxprof/sample.h) into their
 * parts: a well-formed record of each type tiles exactly, and every count or length that
 * says more than the caps or the record's size (a record holds lengths a target controls)
 * refuses the whole record instead of pointing past it.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include "engine/record_view.h"

static uint64_t buf[CTXPROF_REC_MAX / 8 + 1];

/* An fp record: 3 user ips, 2 kernel ips, one label "k"="vv", a 28-byte OTel header. */
static size_t fp_record(void)
{
        struct ctxprof_sample_rec *r = (struct ctxprof_sample_rec *)buf;
        uint8_t *p = (uint8_t *)buf;
        struct ctxprof_label_rec *h;
        size_t pos = sizeof(*r);

        memset(buf, 0, sizeof(buf));
        r->type = CTXPROF_REC_SAMPLE;
        r->n_ustack = 3;
        r->n_kstack = 2;
        for (unsigned i = 0; i < 5; i++)
                ((uint64_t *)(p + pos))[i] = 0x1000 + i;
        pos += 5 * 8;
        h = (struct ctxprof_label_rec *)(p + pos);
        h->flags = CTXPROF_LF_PRESENT;
        h->key_len = 1;
        h->val_len = 2;
        h->key_bytes = 1;
        h->val_bytes = 2;
        memcpy(h + 1, "kvv", 3);
        r->n_labels = 1;
        r->labels_len = CTXPROF_LABEL_REC_SIZE(1, 2);
        pos += r->labels_len;
        r->flags = CTXPROF_SF_OTEL | CTXPROF_SF_LABELSET;
        r->otel_len = CTXPROF_OTEL_HDR;
        pos += CTXPROF_REC_ROUND(CTXPROF_OTEL_HDR);
        r->len = (uint32_t)pos;
        return pos;
}

Test(record_view, parts_of_a_well_formed_record)
{
        struct record_view v;
        size_t n = fp_record();

        cr_assert_eq(n, 128 + 40 + 32 + 32);
        cr_assert_eq(record_view_parse(buf, n, &v), 0);
        cr_assert(v.n_ustack == 3 && v.ustack[0] == 0x1000 && v.ustack[2] == 0x1002);
        cr_assert(v.n_kstack == 2 && v.kstack[0] == 0x1003);
        cr_assert(v.n_labels == 1 && !memcmp(v.labels[0].key, "k", 1) &&
                  !memcmp(v.labels[0].val, "vv", 2));
        cr_assert_eq(v.otel_len, CTXPROF_OTEL_HDR);
        cr_assert(!v.copy && !v.off && !v.stack_len);
}

Test(record_view, dwarf_stack_is_the_rest_of_the_record)
{
        struct ctxprof_sample_copy_rec *d = (struct ctxprof_sample_copy_rec *)buf;
        struct record_view v;
        size_t n = sizeof(*d) + 4096;

        memset(buf, 0, sizeof(buf));
        d->base.type = CTXPROF_REC_SAMPLE_COPY;
        d->stack_len = 4096;
        d->base.len = (uint32_t)n;
        cr_assert_eq(record_view_parse(buf, n, &v), 0);
        cr_assert(v.copy == d && v.stack_len == 4096 && v.stack == (uint8_t *)(d + 1));
        d->stack_len = 4104; /* past the record */
        cr_assert_eq(record_view_parse(buf, n, &v), -EBADMSG);
        d->stack_len = 4088; /* leaves bytes nothing accounts for */
        cr_assert_eq(record_view_parse(buf, n, &v), -EBADMSG);
}

Test(record_view, every_lie_refuses_the_record)
{
        struct ctxprof_sample_rec *r = (struct ctxprof_sample_rec *)buf;
        struct ctxprof_label_rec *h;
        struct record_view v;
        size_t n;

#define REFUSED(field, value)                                                                      \
        do {                                                                                       \
                n = fp_record();                                                                   \
                field = value;                                                                     \
                cr_assert_eq(record_view_parse(buf, n, &v), -EBADMSG, #field " = " #value);        \
        } while (0)
        REFUSED(r->type, CTXPROF_REC_EVENT);
        REFUSED(r->len, 4096);
        REFUSED(r->n_ustack, CTXPROF_MAX_USTACK + 1);
        REFUSED(r->n_ustack, 4);
        REFUSED(r->n_kstack, 0xffffffffu);
        REFUSED(r->n_labels, 2);
        REFUSED(r->n_labels, CTXPROF_MAX_LABELS + 1);
        REFUSED(r->labels_len, 8);
        REFUSED(r->labels_len, 0xfffffff0u);
        REFUSED(r->otel_len, 640 + 8);
        REFUSED(r->otel_len, 100);
        h = (struct ctxprof_label_rec *)((uint8_t *)buf + 128 + 40);
        REFUSED(h->key_bytes, CTXPROF_LABEL_KEY_MAX + 1);
        REFUSED(h->val_bytes, 0xffff);
        REFUSED(h->val_bytes, 12); /* the entry would run past the labels part */
#undef REFUSED
        n = fp_record();
        cr_assert_eq(record_view_parse(buf, n - 8, &v), -EBADMSG); /* a cut record */
        cr_assert_eq(record_view_parse(buf, 100, &v), -EBADMSG);   /* shorter than a head */
        cr_assert_eq(record_view_parse((uint8_t *)buf + 4, n, &v), -EBADMSG); /* misaligned */
}
