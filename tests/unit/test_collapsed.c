/* SPDX-License-Identifier: MIT */
/*
 * test_collapsed.c — the collapsed-stack writer: aggregation by (process, thread, labels,
 * span, stack), labels sorted by key at the root and escaped (%XX), libctx's span mirror
 * labels dropped, ';' and control bytes in frame names sanitized, kernel
 * and unknown frames named without a symbolizer, [truncated] / [no stack] markers, and one
 * "frames count" line per key that flamegraph.pl's /^(.*)\s+(\d+)$/ accepts.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "sink/collapsed.h"
#include "stack/modules.h"

static char *write_mods(struct collapsed *c, struct modules *mods)
{
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);

        cr_assert(f);
        cr_assert_eq(collapsed_write(c, f, mods), 0);
        fclose(f);
        return buf;
}

static char *write_all(struct collapsed *c)
{
        return write_mods(c, NULL);
}

static struct decoded_sample sample(const struct ctxprof_frame *fr, unsigned n)
{
        struct decoded_sample s;

        memset(&s, 0, sizeof(s));
        s.pid = 42;
        s.tid = 43;
        s.comm = "worker";
        s.process = "app";
        s.frames = fr;
        s.n_frames = n;
        return s;
}

Test(collapsed, aggregates_and_names_frames)
{
        struct ctxprof_frame fr[2] = {
            {0x1234, CTXPROF_MODULE_KERNEL, CTXPROF_FRAME_KERNEL}, /* leaf */
            {0xabc, CTXPROF_MODULE_UNKNOWN, CTXPROF_FRAME_RETADDR},
        };
        struct collapsed *c = collapsed_new(0);
        struct decoded_sample s = sample(fr, 2);
        char *out;

        cr_assert(c);
        cr_assert_eq(collapsed_add(c, &s), 0);
        cr_assert_eq(collapsed_add(c, &s), 0);
        cr_assert_eq(collapsed_lines(c), 1);
        cr_assert_eq(collapsed_samples(c), 2);
        out = write_all(c);
        cr_assert_str_eq(out, "app-42;worker;[unknown]+0xabc;0x1234_[k] 2\n");
        free(out);
        collapsed_free(c);
}

Test(collapsed, labels_sorted_sanitized_and_split)
{
        struct ctxprof_frame fr[1] = {{0x10, CTXPROF_MODULE_UNKNOWN, 0}};
        struct collapsed *c = collapsed_new(1);
        struct decoded_sample s = sample(fr, 1);
        char *out;

        s.n_labels = 2;
        s.labels[0] = (struct decoded_label){"zeta", 4, "a;b\n", 4, 0};
        s.labels[1] = (struct decoded_label){"alpha", 5, "1", 1, 0};
        s.has_span = 1;
        s.span_id = 0xA;
        cr_assert_eq(collapsed_add(c, &s), 0);
        s.labels[1].value = "2"; /* another label value: another line */
        cr_assert_eq(collapsed_add(c, &s), 0);
        cr_assert_eq(collapsed_lines(c), 2);
        out = write_all(c);
        cr_assert(
            strstr(out,
                   "app-42;worker;alpha=1;zeta=a%3Bb%0A;span=000000000000000a;[unknown]+0x10 1\n"),
            "got: %s", out);
        cr_assert(
            strstr(out,
                   "app-42;worker;alpha=2;zeta=a%3Bb%0A;span=000000000000000a;[unknown]+0x10 1\n"),
            "got: %s", out);
        free(out);
        collapsed_free(c);
}

Test(collapsed, markers_and_growth)
{
        struct ctxprof_frame fr[1] = {{0, CTXPROF_MODULE_UNKNOWN, 0}};
        struct collapsed *c = collapsed_new(0);
        struct decoded_sample s = sample(fr, 0);
        char *out;
        unsigned i;

        s.truncated = 1;
        cr_assert_eq(collapsed_add(c, &s), 0);
        out = write_all(c);
        cr_assert_str_eq(out, "app-42;worker;[truncated];[no stack] 1\n");
        free(out);
        /* many distinct keys: the table grows and keeps every count */
        s.truncated = 0;
        s.n_frames = 1;
        for (i = 0; i < 5000; i++) {
                fr[0].offset = i % 2500;
                cr_assert_eq(collapsed_add(c, &s), 0);
        }
        cr_assert_eq(collapsed_lines(c), 2501);
        cr_assert_eq(collapsed_samples(c), 5001);
        collapsed_free(c);
}

/* A frame of a registered module that cannot be named (its file is gone): module base name
 * + offset, and the build id that names the exact file. */
Test(collapsed, unresolved_frame_keeps_module_and_build_id)
{
        static const unsigned char bid[] = {0xde, 0xad, 0xbe, 0xef, 0x01};
        struct module_key key = {
            .build_id = bid, .build_id_len = sizeof(bid), .path = "/nonexistent/dir/libgone.so"};
        struct modules *mods = modules_new();
        uint32_t id;

        cr_assert(mods);
        cr_assert_eq(modules_intern(mods, &key, -1, &id), 0);
        struct ctxprof_frame fr[1] = {{0x10, id, 0}};
        struct collapsed *c = collapsed_new(0);
        struct decoded_sample s = sample(fr, 1);
        cr_assert_eq(collapsed_add(c, &s), 0);
        char *out = write_mods(c, mods);
        cr_assert_str_eq(out, "app-42;worker;libgone.so+0x10[deadbeef01] 1\n");
        free(out);
        collapsed_free(c);
        modules_free(mods);
}

/* libctx mirrors the span as labels span-id / root-span-id: they would make every request's
 * line distinct (and show the span twice with --span-frames). Dropped when they repeat the
 * validated span; equal label sets in any order fold into one line; a key with '=' or ';'
 * stays unambiguous. */
Test(collapsed, span_mirrors_dropped_and_keys_escaped)
{
        struct ctxprof_frame fr[1] = {{0x10, CTXPROF_MODULE_UNKNOWN, 0}};
        struct collapsed *c = collapsed_new(0);
        struct decoded_sample s = sample(fr, 1);
        char *out;

        s.has_span = 1;
        for (uint64_t req = 1; req <= 50; req++) {
                char span[24], root[24];
                snprintf(span, sizeof(span), "%llu", (unsigned long long)(req * 16 + 1));
                snprintf(root, sizeof(root), "%llu", (unsigned long long)req);
                s.span_id = req * 16 + 1;
                s.root_span_id = req;
                s.n_labels = 4;
                /* the order the writer happened to use alternates */
                s.labels[req & 1 ? 0 : 3] =
                    (struct decoded_label){"span-id", 7, span, strlen(span), 0};
                s.labels[1] = (struct decoded_label){"root-span-id", 12, root, strlen(root), 0};
                s.labels[2] = (struct decoded_label){"route", 5, "/a", 2, 0};
                s.labels[req & 1 ? 3 : 0] = (struct decoded_label){"a=b;c", 5, "x=y%", 4, 0};
                cr_assert_eq(collapsed_add(c, &s), 0);
        }
        /* a mirror that disagrees with the span record is the target's own label: kept */
        s.labels[0] = (struct decoded_label){"span-id", 7, "99", 2, 0};
        s.n_labels = 1;
        cr_assert_eq(collapsed_add(c, &s), 0);
        cr_assert_eq(collapsed_lines(c), 2);
        out = write_all(c);
        cr_assert(strstr(out, "app-42;worker;a%3Db%3Bc=x=y%25;route=/a;[unknown]+0x10 50\n"),
                  "got: %s", out);
        cr_assert(strstr(out, "app-42;worker;span-id=99;[unknown]+0x10 1\n"), "got: %s", out);
        free(out);
        collapsed_free(c);
}
