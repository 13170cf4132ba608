/* SPDX-License-Identifier: MIT */
/*
 * test_otlp.c — the OTLP profiles encoder: the output decodes (protobuf-c, upstream schema)
 * to one resource per process (service.name, process.pid) with one profile, every
 * dictionary table holding its zero value at index 0, one sample per distinct (stack,
 * context) with [count], stacks leaf first with the pseudo frame at the root end, context
 * labels as attributes, an OpenTelemetry trace context (trace_id + span_id labels) as a Link
 * (and not repeated as attributes), a span without trace id as a span_id attribute, named
 * frames with their lines and functions, and a mapping's build id; a JFR file converted for
 * an upload split by process (the JFR thread's pid) gives one resource per process named.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "opentelemetry/proto/collector/profiles/v1development/profiles_service.pb-c.h"
#include "jfr/jfr_writer.h"
#include "sink/frame_names.h"
#include "sink/jfr_convert.h"
#include "sink/otlp.h"

#define MAX_OUT (1 << 20)
#define MOD_APP 7

typedef Opentelemetry__Proto__Collector__Profiles__V1development__ExportProfilesServiceRequest
    Request;
typedef Opentelemetry__Proto__Profiles__V1development__ProfilesDictionary Dictionary;
typedef Opentelemetry__Proto__Profiles__V1development__Sample Sample;

/* Frames of module MOD_APP are named fn_OFFSET in app.c, line = offset. */
static int test_frame(void *ctx, const struct ctxprof_frame *fr, struct sym_frame *out, int max)
{
        static char name[32];

        (void)ctx;
        if (fr->module_id != MOD_APP || max < 1)
                return 0;
        snprintf(name, sizeof(name), "fn_%llu", (unsigned long long)fr->offset);
        out[0] = (struct sym_frame){.function = name, .file = "app.c", .line = (int)fr->offset};
        return 1;
}

static int test_module(void *ctx, uint32_t id, struct module_info *out)
{
        (void)ctx;
        if (id != MOD_APP)
                return -1;
        *out = (struct module_info){"/usr/bin/app", "abcdef0123"};
        return 0;
}

static Request *encode_decode(struct collapsed *c)
{
        static const struct frame_names names = {NULL, test_frame, test_module};
        struct otlp_meta m = {.period_ns = 10000000, .start_ns = 7, .duration_ns = 5};
        static unsigned char buf[MAX_OUT];
        FILE *f = tmpfile();
        size_t n;

        cr_assert(f);
        cr_assert_eq(otlp_write(c, f, &names, &m), 0);
        rewind(f);
        n = fread(buf, 1, sizeof(buf), f);
        fclose(f);
        cr_assert(n > 0 && n < sizeof(buf));
        return opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__unpack(
            NULL, n, buf);
}

/* The value of the sample's string attribute key, or NULL. */
static const char *attr(const Dictionary *d, const Sample *s, const char *key)
{
        for (size_t i = 0; i < s->n_attribute_indices; i++) {
                const Opentelemetry__Proto__Profiles__V1development__KeyValueAndUnit *a =
                    d->attribute_table[s->attribute_indices[i]];

                if (!strcmp(d->string_table[a->key_strindex], key))
                        return a->value->string_value;
        }
        return NULL;
}

static const char *function_of(const Dictionary *d, int32_t loc)
{
        const Opentelemetry__Proto__Profiles__V1development__Location *l = d->location_table[loc];

        if (!l->n_lines)
                return NULL;
        return d->string_table[d->function_table[l->lines[0]->function_index]->name_strindex];
}

Test(otlp, request_layout_links_and_attributes)
{
        struct ctxprof_frame fr[2] = {
            {0x10, MOD_APP, 0}, /* leaf */
            {0x20, MOD_APP, CTXPROF_FRAME_RETADDR},
        };
        struct decoded_sample s = {
            .pid = 42, .tid = 43, .comm = "worker", .process = "svc", .frames = fr, .n_frames = 2};
        struct collapsed *c = collapsed_new(1);
        const char *trace = "0102030405060708090a0b0c0d0e0f10", *span = "1112131415161718";
        Request *rq;
        Dictionary *d;
        int seen_link = 0, seen_span = 0, seen_trunc = 0;

        cr_assert(c);
        /* 1: OTel trace context, twice */
        s.n_labels = 3;
        s.labels[0] = (struct decoded_label){"trace_id", 8, trace, 32, 0};
        s.labels[1] = (struct decoded_label){"span_id", 7, span, 16, 0};
        s.labels[2] = (struct decoded_label){"route", 5, "/a", 2, 0};
        s.has_span = 1;
        s.span_id = 0x1112131415161718ull;
        cr_assert_eq(collapsed_add(c, &s), 0);
        cr_assert_eq(collapsed_add(c, &s), 0);
        /* 2: a libctx span, no trace id */
        s.n_labels = 1;
        s.labels[0] = (struct decoded_label){"route", 5, "/b", 2, 0};
        s.span_id = 0xab;
        cr_assert_eq(collapsed_add(c, &s), 0);
        /* 3: truncated, another process */
        s.pid = 77;
        s.process = "other";
        s.has_span = 0;
        s.n_labels = 0;
        s.truncated = 1;
        cr_assert_eq(collapsed_add(c, &s), 0);

        rq = encode_decode(c);
        cr_assert(rq, "protobuf-c cannot decode the output");
        d = rq->dictionary;
        cr_assert(d);
        cr_assert_str_eq(d->string_table[0], "");
        cr_assert(d->n_mapping_table > 1 && d->n_location_table > 1 && d->n_function_table > 1 &&
                  d->n_link_table == 2 && d->n_attribute_table > 1 && d->n_stack_table > 1);
        cr_assert_eq(d->mapping_table[0]->filename_strindex, 0);
        cr_assert_eq(d->location_table[0]->n_lines, 0);
        cr_assert_eq(d->stack_table[0]->n_location_indices, 0);
        cr_assert_eq(d->link_table[0]->trace_id.len, 16);
        cr_assert_eq(d->link_table[1]->trace_id.data[0], 0x01);
        cr_assert_eq(d->link_table[1]->trace_id.data[15], 0x10);
        cr_assert_eq(d->link_table[1]->span_id.len, 8);
        cr_assert_eq(d->link_table[1]->span_id.data[7], 0x18);
        cr_assert_str_eq(d->string_table[d->mapping_table[1]->filename_strindex], "/usr/bin/app");
        cr_assert_eq(d->mapping_table[1]->n_attribute_indices, 1);
        cr_assert_str_eq(
            d->attribute_table[d->mapping_table[1]->attribute_indices[0]]->value->string_value,
            "abcdef0123");
        cr_assert_eq(rq->n_resource_profiles, 2, "one resource per process");
        for (size_t r = 0; r < rq->n_resource_profiles; r++) {
                const Opentelemetry__Proto__Profiles__V1development__ResourceProfiles *rp =
                    rq->resource_profiles[r];
                const Opentelemetry__Proto__Profiles__V1development__Profile *p;

                cr_assert_eq(rp->resource->n_attributes, 2);
                cr_assert_str_eq(rp->resource->attributes[0]->key, "service.name");
                cr_assert_str_eq(rp->resource->attributes[1]->key, "process.pid");
                cr_assert_eq(rp->n_scope_profiles, 1);
                cr_assert_str_eq(rp->scope_profiles[0]->scope->name, "ctxprof");
                cr_assert_eq(rp->scope_profiles[0]->n_profiles, 1);
                p = rp->scope_profiles[0]->profiles[0];
                cr_assert_eq(p->period, 10000000);
                cr_assert_eq(p->time_unix_nano, 7);
                cr_assert_eq(p->duration_nano, 5);
                cr_assert_str_eq(d->string_table[p->sample_type->type_strindex], "samples");
                cr_assert_str_eq(d->string_table[p->period_type->type_strindex], "cpu");
                for (size_t i = 0; i < p->n_samples; i++) {
                        const Sample *sm = p->samples[i];
                        const Opentelemetry__Proto__Profiles__V1development__Stack *st =
                            d->stack_table[sm->stack_index];

                        cr_assert_eq(sm->n_values, 1);
                        cr_assert_str_eq(attr(d, sm, "thread.name"), "worker");
                        cr_assert_str_eq(function_of(d, st->location_indices[0]), "fn_16",
                                         "leaf first");
                        if (sm->link_index) {
                                seen_link = 1;
                                cr_assert_eq(sm->values[0], 2);
                                cr_assert_str_eq(attr(d, sm, "route"), "/a");
                                cr_assert_null(attr(d, sm, "trace_id"), "the link says it");
                                cr_assert_null(attr(d, sm, "span_id"), "the link says it");
                        } else if (attr(d, sm, "span_id")) {
                                seen_span = 1;
                                cr_assert_str_eq(attr(d, sm, "span_id"), "00000000000000ab");
                                cr_assert_str_eq(attr(d, sm, "route"), "/b");
                        } else {
                                seen_trunc = 1;
                                cr_assert_str_eq(rp->resource->attributes[0]->value->string_value,
                                                 "other");
                                cr_assert_eq(st->n_location_indices, 3);
                                cr_assert_str_eq(function_of(d, st->location_indices[2]),
                                                 "[truncated]", "the marker at the root end");
                        }
                }
        }
        cr_assert(seen_link && seen_span && seen_trunc);
        opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__free_unpacked(
            rq, NULL);
        collapsed_free(c);
}

/* resource_of for split_by_thread_pid: process 500 is svc-a (with one attribute), the rest
 * unknown */
static const struct otlp_resource *known_500(void *ctx, uint32_t pid)
{
        static const struct otlp_resource_attrs a = {1, {"container.id"}, {"c0ffee"}};
        static const struct otlp_resource r = {"svc-a", 500, &a};

        (void)ctx;
        return pid == 500 ? &r : NULL;
}

/* A JFR whose threads name their process (jfr_writer_add_thread_of), converted for an upload
 * split by process: the samples of process 500 are its resource's, those of process 600 (not
 * known to resource_of) and of a thread without a pid go into the one resource of the
 * caller's process, without process.pid. */
Test(otlp, split_by_thread_pid)
{
        static const struct jfr_frame fr = {"work", "app", 3, JFR_FRAME_NATIVE};
        struct jfr_recording_info info = {"split", "cpu-clock", 99, "fp", 1000, NULL, NULL};
        struct jfr_convert_resources res = {.resource_of = known_500};
        static unsigned char buf[MAX_OUT];
        char path[] = "/tmp/ctxprof-otlp-split.XXXXXX";
        int fd = mkstemp(path);
        struct jfr_writer *w;
        Request *rq;
        FILE *f = tmpfile();
        size_t n;
        uint64_t counts[2] = {0};

        cr_assert(fd >= 0 && f);
        close(fd);
        cr_assert_eq(jfr_writer_open(&w, path, JFR_WRITER_NO_FSYNC, &info), 0);
        cr_assert_eq(jfr_writer_begin_chunk(w, 1000, 5000), 0);
        cr_assert_eq(jfr_writer_add_thread_of(w, 501, 500, "a-worker", NULL), 0);
        cr_assert_eq(jfr_writer_add_thread_of(w, 601, 600, "b-worker", NULL), 0);
        cr_assert_eq(jfr_writer_add_thread(w, 700, "no-pid", NULL), 0);
        cr_assert_eq(jfr_writer_add_stack(w, 1, &fr, 1, 0), 0);
        for (int i = 0; i < 12; i++) {
                struct jfr_sample s = {.ticks = 5000 + (uint64_t)i,
                                       .trace_id = 1,
                                       .tid = i < 7    ? 501
                                              : i < 10 ? 601
                                                       : 700};
                cr_assert_eq(jfr_writer_add_sample(w, &s), 0);
        }
        cr_assert_eq(jfr_writer_finish_chunk(w, 6000, NULL), 0);
        jfr_writer_close(w);
        cr_assert_eq(jfr_convert_file(path, "otlp", "host-app", &res, f), 0);
        unlink(path);
        rewind(f);
        n = fread(buf, 1, sizeof(buf), f);
        fclose(f);
        rq =
            opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__unpack(
                NULL, n, buf);
        cr_assert(rq);
        cr_assert_eq(rq->n_resource_profiles, 2, "process 500, and the rest");
        for (size_t r = 0; r < 2; r++) {
                const Opentelemetry__Proto__Profiles__V1development__ResourceProfiles *rp =
                    rq->resource_profiles[r];
                const Opentelemetry__Proto__Profiles__V1development__Profile *p =
                    rp->scope_profiles[0]->profiles[0];
                int named = !strcmp(rp->resource->attributes[0]->value->string_value, "svc-a");

                if (named) {
                        cr_assert_eq(rp->resource->n_attributes, 3);
                        cr_assert_str_eq(rp->resource->attributes[1]->key, "process.pid");
                        cr_assert_eq(rp->resource->attributes[1]->value->int_value, 500);
                        cr_assert_str_eq(rp->resource->attributes[2]->key, "container.id");
                } else {
                        cr_assert_str_eq(rp->resource->attributes[0]->value->string_value,
                                         "host-app");
                        cr_assert_eq(rp->resource->n_attributes, 1, "no process.pid");
                }
                for (size_t i = 0; i < p->n_samples; i++)
                        counts[named] += (uint64_t)p->samples[i]->values[0];
        }
        cr_assert_eq(counts[1], 7);
        cr_assert_eq(counts[0], 5);
        opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__free_unpacked(
            rq, NULL);
}
