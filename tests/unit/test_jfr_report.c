/* SPDX-License-Identifier: MIT */
/*
 * test_jfr_report.c — the JFR reader and `ctxprof report`: they read back what the writer
 * wrote (threads, stacks, labels, span ids), tolerate a trailing partial chunk, and survive
 * truncated and bit-flipped files without crashing (run under ASan in the asan variant).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "jfr/jfr_reader.h"
#include "jfr/jfr_writer.h"
#include "unit/jfr_check.h"

#define T0    5000000000ull
#define WALL0 1700000000000000000ull

static const struct jfr_frame frames[] = {
    {"leaf_fn", "libleaf.so", 12, JFR_FRAME_NATIVE},
    {"ns::Outer::run()", "app", -1, JFR_FRAME_CPP},
};

/* 3 chunks x 30 samples; route label alternates /a (2 of 3) and /b; span = i + 1. */
static void write_file(const char *path)
{
        struct jfr_writer *w;
        struct jfr_recording_info info = {"report", "cpu-clock", 99, "fp", WALL0, NULL, NULL};
        cr_assert_eq(jfr_writer_open(&w, path, JFR_WRITER_NO_FSYNC, &info), 0);
        for (int c = 0; c < 3; c++) {
                uint64_t t = T0 + (uint64_t)c * 1000000000;
                cr_assert_eq(jfr_writer_begin_chunk(w, WALL0 + (uint64_t)c * 1000000000, t), 0);
                cr_assert_eq(jfr_writer_add_thread(w, 300, "reporter", NULL), 0);
                cr_assert_eq(jfr_writer_add_stack(w, 1, frames, 2, 0), 0);
                cr_assert_eq(jfr_writer_add_stack(w, 2, frames + 1, 1, 0), 0);
                struct jfr_label a = {"http.route", "/a", 10, 2}, b = {"http.route", "/b", 10, 2};
                cr_assert_eq(jfr_writer_add_labels(w, 1, &a, 1), 0);
                cr_assert_eq(jfr_writer_add_labels(w, 2, &b, 1), 0);
                for (int i = 0; i < 30; i++) {
                        struct jfr_sample s = {t + (uint64_t)i * 10000000,
                                               i % 3 ? 1u : 2u,
                                               (uint64_t)i + 1,
                                               1ull << 63,
                                               i % 3 ? 1u : 2u,
                                               300};
                        cr_assert_eq(jfr_writer_add_sample(w, &s), 0);
                }
                cr_assert_eq(jfr_writer_finish_chunk(w, t + 500000000, NULL), 0);
        }
        jfr_writer_close(w);
}

static char *slurp(const char *path, size_t *len)
{
        FILE *f = fopen(path, "rb");
        cr_assert(f);
        fseek(f, 0, SEEK_END);
        *len = (size_t)ftell(f);
        rewind(f);
        char *b = malloc(*len + 1);
        cr_assert_eq(fread(b, 1, *len, f), *len);
        fclose(f);
        return b;
}

/* Walk everything the report walks; returns the number of events, or -1 on error. */
static long walk(const void *data, size_t len, uint64_t *span_sum)
{
        struct jfr_reader *r;
        cr_assert_eq(jfr_reader_open_mem(data, len, &r), 0);
        long events = 0;
        int rc;
        while ((rc = jfr_reader_next_chunk(r)) == 1) {
                struct jfr_event ev;
                while (jfr_reader_next_event(r, &ev) == 1) {
                        events++;
                        const struct jfr_value *st = jfr_value_field(r, ev.value, "stackTrace");
                        const struct jfr_value *fr = jfr_value_field(r, st, "frames");
                        for (uint32_t i = 0; fr && fr->kind == JFR_V_ARRAY && i < fr->n; i++) {
                                const struct jfr_value *m =
                                    jfr_value_field(r, &fr->items[i], "method");
                                (void)jfr_value_str(r, jfr_value_field(r, m, "name"));
                                (void)jfr_value_str(
                                    r, jfr_value_field(r, jfr_value_field(r, m, "type"), "name"));
                        }
                        const struct jfr_value *th = jfr_value_field(r, ev.value, "sampledThread");
                        (void)jfr_value_str(r, jfr_value_field(r, th, "osName"));
                        uint64_t v;
                        if (span_sum && !strcmp(ev.type->name, "jdk.ExecutionSample") &&
                            !jfr_value_u64(r, jfr_value_field(r, ev.value, "spanId"), &v))
                                *span_sum += v;
                        for (uint32_t i = 0; i < ev.type->nfields && i < ev.value->n; i++)
                                (void)jfr_value_str(r, &ev.value->items[i]);
                }
        }
        jfr_reader_close(r);
        return rc < 0 ? -1 : events;
}

Test(jfr_reader, reads_back_writer_output)
{
        char path[128];
        snprintf(path, sizeof(path), "/tmp/ctxprof-report-%d.jfr", (int)getpid());
        write_file(path);
        struct jfr_reader *r;
        cr_assert_eq(jfr_reader_open(path, &r), 0);
        int chunks = 0, samples = 0, ctx = 0;
        uint64_t spans = 0, last_md = 0;
        while (jfr_reader_next_chunk(r) == 1) {
                chunks++;
                cr_assert_neq(jfr_reader_chunk(r)->metadata_id, last_md, "metadata id reused");
                last_md = jfr_reader_chunk(r)->metadata_id;
                struct jfr_event ev;
                while (jfr_reader_next_event(r, &ev) == 1) {
                        if (!strcmp(ev.type->name, "jdk.ExecutionSample")) {
                                samples++;
                                cr_assert_eq(ev.type->nfields, 9);
                                const struct jfr_value *th =
                                    jfr_value_field(r, ev.value, "sampledThread");
                                cr_assert_str_eq(jfr_value_str(r, jfr_value_field(r, th, "osName")),
                                                 "reporter");
                                uint64_t span, root;
                                ctx++;
                                cr_assert_eq(
                                    jfr_value_u64(r, jfr_value_field(r, ev.value, "spanId"), &span),
                                    0);
                                cr_assert_eq(
                                    jfr_value_u64(
                                        r, jfr_value_field(r, ev.value, "localRootSpanId"), &root),
                                    0);
                                cr_assert_eq(root, 1ull << 63);
                                spans += span;
                                /* the labels: a chain of ctxprof.types.Context nodes */
                                const struct jfr_value *c =
                                    jfr_value_resolve(r, jfr_value_field(r, ev.value, "context"));
                                const char *key = jfr_value_str(r, jfr_value_field(r, c, "key"));
                                const char *route =
                                    jfr_value_str(r, jfr_value_field(r, c, "value"));
                                cr_assert(key && !strcmp(key, "http.route"));
                                cr_assert(route && (!strcmp(route, "/a") || !strcmp(route, "/b")));
                                cr_assert_null(jfr_value_resolve(r, jfr_value_field(r, c, "next")));
                        }
                }
        }
        cr_assert_eq(chunks, 3);
        cr_assert_eq(samples, 90);
        cr_assert_eq(ctx, 90);
        cr_assert_eq(spans, 3 * (30 * 31 / 2));
        cr_assert_eq(jfr_reader_trailing_bytes(r), 0);
        jfr_reader_close(r);
        /* the file the report tests read is valid for the JDK too */
        need_jdk();
        free(jdk_check(path));
        unlink(path);
}

Test(jfr_report, command_on_writer_file_and_partial_tail)
{
        char path[128], cmd[256];
        snprintf(path, sizeof(path), "/tmp/ctxprof-report-cmd-%d.jfr", (int)getpid());
        write_file(path);
        snprintf(cmd, sizeof(cmd), "%s/ctxprof", test_build());
        char *argv[] = {cmd, "report", path, NULL};
        char *out, *err;
        cr_assert_eq(run_capture(argv, &out, &err), 0, "%s", err);
        cr_assert(strstr(out, "chunks:   3\n"), "%s", out);
        cr_assert(strstr(out, "jdk.ExecutionSample                      90"), "%s", out);
        cr_assert(strstr(out, "samples:  90, with context (labels or a span) 90"), "%s", out);
        cr_assert(strstr(out, "90  reporter (tid 300)"), "%s", out);
        cr_assert(strstr(out, "http.route:\n    /a = 60 samples\n"), "%s", out);
        cr_assert(strstr(out, "    /b = 30 samples\n"), "%s", out);
        cr_assert(strstr(out, "100.0%       60  leaf_fn (libleaf.so) <- ns::Outer::run() (app)"),
                  "%s", out);
        cr_assert(strstr(out, "100.0%       30  ns::Outer::run() (app)"), "%s", out);
        free(out);
        free(err);

        /* a writer killed inside its append: a partial chunk after the complete ones */
        size_t len;
        char *img = slurp(path, &len);
        FILE *f = fopen(path, "ab");
        cr_assert(f);
        cr_assert_eq(fwrite(img, 1, len / 5, f), len / 5);
        fclose(f);
        /* the complete chunks are reported, the torn tail is a warning with its size */
        cr_assert_eq(run_capture(argv, &out, &err), 0, "%s", err);
        cr_assert(strstr(out, "chunks:   3 (then"), "%s", out);
        cr_assert(strstr(out, "/a = 60 samples"), "%s", out);
        char want[320];
        snprintf(want, sizeof(want), "warning: %s: the last %zu bytes are a chunk cut short", path,
                 len / 5);
        cr_assert(strstr(err, want), "want '%s' in:\n%s", want, err);
        free(out);
        free(err);

        /* bytes after the complete chunks that are not a chunk: corrupt, exit 1 */
        f = fopen(path, "wb");
        cr_assert(f && fwrite(img, 1, len, f) == len && fwrite("garbage!", 1, 8, f) == 8);
        fclose(f);
        cr_assert_eq(run_capture(argv, &out, &err), 1);
        cr_assert(strstr(out, "/a = 60 samples"), "%s", out);
        cr_assert(strstr(err, "corrupt or incomplete chunk after 3 complete chunks"), "%s", err);
        free(out);
        free(err);
        free(img);
        unlink(path);
}

/* `report` on what is not a readable recording: the error alone (no empty report), exit 1. */
static void report_fails_quietly(const char *path, const void *data, size_t len, const char *msg)
{
        char cmd[256], *out, *err;
        FILE *f = fopen(path, "wb");
        cr_assert(f && fwrite(data, 1, len, f) == len);
        fclose(f);
        snprintf(cmd, sizeof(cmd), "%s/ctxprof", test_build());
        char *argv[] = {cmd, "report", (char *)path, NULL};
        cr_assert_eq(run_capture(argv, &out, &err), 1, "%s", err);
        cr_assert_str_empty(out, "printed a report for a file with no chunk:\n%s", out);
        cr_assert(strstr(err, msg), "want '%s' in: %s", msg, err);
        free(out);
        free(err);
}

Test(jfr_report, command_on_non_jfr_prints_only_an_error)
{
        char path[128];
        snprintf(path, sizeof(path), "/tmp/ctxprof-report-bad-%d.jfr", (int)getpid());
        write_file(path);
        size_t len;
        char *img = slurp(path, &len);
        const char text[] = "#!/bin/sh\necho this is a shell script, not a flight recording\n";
        report_fails_quietly(path, text, sizeof(text) - 1, "not a JFR file");
        report_fails_quietly(path, "", 0, "empty file");
        report_fails_quietly(path, img, len / 5, "no complete chunk");
        /* a first chunk whose header is right but whose metadata is not */
        size_t first = 0;
        for (int i = 8; i < 16; i++)
                first = first << 8 | (unsigned char)img[i];
        size_t md = 0;
        for (int i = 24; i < 32; i++)
                md = md << 8 | (unsigned char)img[i];
        memset(img + md, 0xff, first - md);
        report_fails_quietly(path, img, first, "corrupt or incomplete chunk after 0 complete");
        free(img);
        unlink(path);
}

Test(jfr_reader, survives_truncated_and_bit_flipped_files, .timeout = 300)
{
        char path[128];
        snprintf(path, sizeof(path), "/tmp/ctxprof-fuzz-%d.jfr", (int)getpid());
        write_file(path);
        size_t len;
        char *img = slurp(path, &len);
        uint64_t sum = 0;
        long full = walk(img, len, &sum);
        cr_assert_gt(full, 90);
        /* every truncation point in the first chunk's header/events, then every 13 bytes */
        for (size_t cut = 0; cut < len; cut += cut < 300 ? 1 : 13) {
                char *t = malloc(cut ? cut : 1);
                memcpy(t, img, cut);
                long n = walk(t, cut, NULL);
                cr_assert(n == -1 || n < full || cut == len);
                free(t);
        }
        /* random corruption: flipped bits, random bytes, bytes set to 0x80/0xff (varint food) */
        uint64_t x = 0x2545F4914F6CDD1Dull;
        char *m = malloc(len);
        for (int iter = 0; iter < 4000; iter++) {
                memcpy(m, img, len);
                int nmut = 1 + iter % 4;
                for (int k = 0; k < nmut; k++) {
                        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
                        size_t pos = (size_t)(x >> 16) % len;
                        switch (x % 4) {
                        case 0:
                                m[pos] ^= (char)(1 << (x >> 8) % 8);
                                break;
                        case 1:
                                m[pos] = (char)(x >> 24);
                                break;
                        case 2:
                                m[pos] = (char)0x80;
                                break;
                        default:
                                m[pos] = (char)0xff;
                        }
                }
                walk(m, len, NULL);
        }
        /* the command on a few corrupted files: a status, never a signal */
        char cmd[256], bad[160];
        snprintf(cmd, sizeof(cmd), "%s/ctxprof", test_build());
        snprintf(bad, sizeof(bad), "%s.bad", path);
        for (int i = 0; i < 8; i++) {
                memcpy(m, img, len);
                for (size_t p = 68 + (size_t)i * 97; p < len; p += 211)
                        m[p] = (char)(0x80 | i);
                FILE *f = fopen(bad, "wb");
                cr_assert(f && fwrite(m, 1, len, f) == len);
                fclose(f);
                char *argv[] = {cmd, "report", bad, NULL};
                char *out, *err;
                int rc = run_capture(argv, &out, &err);
                cr_assert(rc == 0 || rc == 1, "report exit %d on corrupt file: %s", rc, err);
                free(out);
                free(err);
        }
        free(m);
        free(img);
        unlink(bad);
        unlink(path);
}

Test(jfr_reader, rejects_non_jfr)
{
        struct jfr_reader *r;
        const char junk[] = "this is not a flight recording, not even close............"
                            "...................";
        cr_assert_eq(jfr_reader_open_mem(junk, sizeof(junk), &r), 0);
        cr_assert_eq(jfr_reader_next_chunk(r), -EBADMSG);
        cr_assert_eq(jfr_reader_trailing_bytes(r), sizeof(junk));
        jfr_reader_close(r);
        cr_assert_eq(jfr_reader_open("/nonexistent/x.jfr", &r), -ENOENT);
}
