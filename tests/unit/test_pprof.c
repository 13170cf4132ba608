/* SPDX-License-Identifier: MIT */
/*
 * test_pprof.c — the pprof encoder: the gzip'd output decodes (zlib + protobuf-c) to one
 * sample per distinct (stack, context) with [count, count * period], the string table
 * starting with "", labels as sample labels (span_id in hex, each label key), locations
 * leaf first and shared between samples, period and duration set; by_pid keeps one
 * process's samples (a Pyroscope upload of a host file, one request per process).
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "profile.pb-c.h"
#include "sink/pprof.h"

#define MAX_RAW (1 << 20)

static Perftools__Profiles__Profile *encode_decode_meta(struct collapsed *c,
                                                        const struct pprof_meta *mp)
{
        struct pprof_meta m = *mp;
        static unsigned char gz[MAX_RAW], raw[MAX_RAW];
        FILE *f = tmpfile();
        size_t n;
        z_stream z = {0};

        cr_assert(f);
        cr_assert_eq(pprof_write(c, f, NULL, &m), 0);
        rewind(f);
        n = fread(gz, 1, sizeof(gz), f);
        fclose(f);
        cr_assert(n > 0);
        cr_assert_eq(inflateInit2(&z, 15 + 16), Z_OK);
        z.next_in = gz;
        z.avail_in = (uInt)n;
        z.next_out = raw;
        z.avail_out = sizeof(raw);
        cr_assert_eq(inflate(&z, Z_FINISH), Z_STREAM_END);
        n = sizeof(raw) - z.avail_out;
        inflateEnd(&z);
        return perftools__profiles__profile__unpack(NULL, n, raw);
}

static Perftools__Profiles__Profile *encode_decode(struct collapsed *c)
{
        struct pprof_meta m = {.period_ns = 10000000, .start_ns = 1, .duration_ns = 5};

        return encode_decode_meta(c, &m);
}

static const char *label(const Perftools__Profiles__Profile *p,
                         const Perftools__Profiles__Sample *s, const char *key)
{
        for (size_t i = 0; i < s->n_label; i++)
                if (!strcmp(p->string_table[s->label[i]->key], key))
                        return p->string_table[s->label[i]->str];
        return NULL;
}

Test(pprof, one_sample_per_stack_and_context)
{
        struct ctxprof_frame fr[2] = {
            {0x1234, CTXPROF_MODULE_KERNEL, CTXPROF_FRAME_KERNEL}, /* leaf */
            {0xabc, CTXPROF_MODULE_UNKNOWN, CTXPROF_FRAME_RETADDR},
        };
        struct decoded_sample s = {
            .pid = 42, .tid = 43, .comm = "worker", .process = "app", .frames = fr, .n_frames = 2};
        struct collapsed *c = collapsed_new(1);
        Perftools__Profiles__Profile *p;
        int seen_a = 0, seen_b = 0;

        cr_assert(c);
        s.n_labels = 1;
        s.labels[0] = (struct decoded_label){"route", 5, "/a", 2, 0};
        s.has_span = 1;
        s.span_id = 0xab;
        cr_assert_eq(collapsed_add(c, &s), 0);
        cr_assert_eq(collapsed_add(c, &s), 0);
        s.labels[0].value = "/b";
        s.has_span = 0;
        cr_assert_eq(collapsed_add(c, &s), 0);
        p = encode_decode(c);
        cr_assert(p, "protobuf-c cannot decode the output");
        cr_assert_str_eq(p->string_table[0], "");
        cr_assert_eq(p->period, 10000000);
        cr_assert_eq(p->duration_nanos, 5);
        cr_assert_eq(p->n_sample_type, 2);
        cr_assert_eq(p->n_sample, 2);
        cr_assert_eq(p->n_location, 2, "locations are shared between samples");
        for (size_t i = 0; i < p->n_sample; i++) {
                const Perftools__Profiles__Sample *sm = p->sample[i];
                const char *route = label(p, sm, "route");

                cr_assert_eq(sm->n_location_id, 2);
                cr_assert_eq(p->location[sm->location_id[0] - 1]->address, 0x1234, "leaf first");
                cr_assert_str_eq(label(p, sm, "thread"), "worker");
                cr_assert(route);
                if (!strcmp(route, "/a")) {
                        seen_a = 1;
                        cr_assert_eq(sm->value[0], 2);
                        cr_assert_eq(sm->value[1], 2 * 10000000);
                        cr_assert_str_eq(label(p, sm, "span_id"), "00000000000000ab");
                } else {
                        seen_b = 1;
                        cr_assert_str_eq(route, "/b");
                        cr_assert_eq(sm->value[0], 1);
                        cr_assert_null(label(p, sm, "span_id"));
                }
        }
        cr_assert(seen_a && seen_b);
        perftools__profiles__profile__free_unpacked(p, NULL);
        collapsed_free(c);
}

/* The samples of process pid in p (their `samples` values), checking each one's pid label. */
static int64_t samples_of(const Perftools__Profiles__Profile *p, int64_t pid)
{
        int64_t n = 0;

        for (size_t i = 0; i < p->n_sample; i++) {
                const Perftools__Profiles__Sample *sm = p->sample[i];

                for (size_t j = 0; j < sm->n_label; j++)
                        if (!strcmp(p->string_table[sm->label[j]->key], "pid"))
                                cr_assert_eq(sm->label[j]->num, pid, "a sample of another process");
                n += sm->value[0];
        }
        return n;
}

Test(pprof, by_pid_keeps_one_process)
{
        struct ctxprof_frame fr = {0x1234, CTXPROF_MODULE_UNKNOWN, CTXPROF_FRAME_RETADDR};
        struct decoded_sample s = {.comm = "t", .process = "app", .frames = &fr, .n_frames = 1};
        struct collapsed *c = collapsed_new(1);
        const uint32_t pids[] = {0, 7, 9, 11};
        const int64_t counts[] = {1, 2, 3, 0};

        cr_assert(c);
        for (unsigned i = 0; i < 3; i++)
                for (int64_t k = 0; k < counts[i]; k++) {
                        s.pid = (pid_t)pids[i];
                        s.tid = s.pid;
                        cr_assert_eq(collapsed_add(c, &s), 0);
                }
        for (unsigned i = 0; i < 4; i++) {
                struct pprof_meta m = {.period_ns = 1000, .by_pid = 1, .pid = pids[i]};
                Perftools__Profiles__Profile *p = encode_decode_meta(c, &m);

                cr_assert(p);
                cr_assert_eq(samples_of(p, pids[i]), counts[i], "pid %u", pids[i]);
                perftools__profiles__profile__free_unpacked(p, NULL);
        }
        collapsed_free(c);
}
