/* SPDX-License-Identifier: MIT */
/*
 * test_jfr_writer.c — the JFR writer against the real JDK: every file written here must pass
 * jfr summary / print / print --json, and RecordingFile (tests/java/JfrCheck) must return
 * exactly the threads, frames and context values the test put in. Also: varint edge
 * values, hostile label bytes, thread renames and tid reuse, multi-chunk files, a writer
 * killed mid-chunk, and a full disk.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>

#include "jfr/jfr_buf.h"
#include "jfr/jfr_writer.h"
#include "unit/jfr_check.h"

#define T0    5000000000ull /* CLOCK_MONOTONIC ns of the first chunk's start */
#define WALL0 1700000000000000000ull

static char expect[1 << 20];
static size_t explen;

static void exp_add(const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(expect + explen, sizeof(expect) - explen, fmt, ap);
        va_end(ap);
        cr_assert(n > 0 && (size_t)n < sizeof(expect) - explen);
        explen += (size_t)n;
}

/* The S/C lines of a JfrCheck dump (drops the N count lines). */
static char *sample_lines(const char *dump)
{
        char *s = strdup(dump), *n = strstr(s, "\nN ");
        if (!strncmp(s, "N ", 2))
                s[0] = 0;
        else if (n)
                n[1] = 0;
        return s;
}

static int count_of(const char *dump, const char *type)
{
        char key[128];
        snprintf(key, sizeof(key), "N %s ", type);
        const char *p = strstr(dump, key);
        return p ? atoi(p + strlen(key)) : 0;
}

static void tmp_path(char *buf, size_t n, const char *name)
{
        snprintf(buf, n, "/tmp/ctxprof-jfrtest-%d-%s.jfr", (int)getpid(), name);
}

static struct jfr_writer *open_writer(const char *path, int flags)
{
        struct jfr_writer *w;
        struct jfr_recording_info info = {"test", "cpu-clock", 99, "fp", WALL0, NULL, NULL};
        int err = jfr_writer_open(&w, path, flags | JFR_WRITER_NO_FSYNC, &info);
        cr_assert_eq(err, 0, "open %s: %d", path, err);
        return w;
}

static const struct jfr_frame stack_a[] = {
    {"do_syscall_64", "[kernel.kallsyms]", -1, JFR_FRAME_KERNEL},
    {"std::vector<int>::push_back(int const&)", "libapp.so", 42, JFR_FRAME_CPP},
    {"compute_hash", "libc.so.6", -1, JFR_FRAME_NATIVE},
};
#define STACK_A                                                                                    \
        "F|[kernel.kallsyms].do_syscall_64:-1:Kernel|libapp.so.std::vector<int>::push_back(int "   \
        "const&):42:C++|libc.so.6.compute_hash:-1:Native"
static const struct jfr_frame stack_b[] = {
    {"main", "app", 7, JFR_FRAME_NATIVE},
};
#define STACK_B "T|app.main:7:Native"

/* Add one sample and the lines JfrCheck must print for it. labels = the expected
 * " field(key)=value" text for the context line ("" if none). */
static void sample(struct jfr_writer *w, uint64_t t, pid_t tid, const char *tname, uint64_t trace,
                   const char *stack, uint64_t span, uint64_t root, uint32_t ctx,
                   const char *labels)
{
        struct jfr_sample s = {t, trace, span, root, ctx, tid};
        cr_assert_eq(jfr_writer_add_sample(w, &s), 0);
        exp_add("S thread=%s/%d state=STATE_DEFAULT stack=%s\n", tname, (int)tid, stack);
        if (span || root || labels[0])
                exp_add("C thread=%s/%d span=%llu root=%llu%s stack=%s\n", tname, (int)tid,
                        (unsigned long long)span, (unsigned long long)root, labels, stack);
}

/* Finish the chunk and append its labels snapshot to PATH.labels.pb, as `record` does. */
static void finish(struct jfr_writer *w, const char *path, uint64_t end)
{
        char pb[300];
        size_t len;
        cr_assert_eq(jfr_writer_finish_chunk(w, end, NULL), 0);
        const void *snap = jfr_writer_labels_snapshot(w, &len);
        snprintf(pb, sizeof(pb), "%s.labels.pb", path);
        FILE *f = fopen(pb, "a");
        cr_assert(f && fwrite(snap, 1, len, f) == len && !fclose(f));
}

/* Pyroscope's view: `labelled` samples with a contextId (labels in the snapshot), `spans`
 * with a spanId. */
static void check_pyroscope(const char *path, long labelled, long spans)
{
        char pb[300];
        snprintf(pb, sizeof(pb), "%s.labels.pb", path);
        pyro_check(path, pb, labelled, spans);
        unlink(pb);
}

static void check_file(const char *path, int samples)
{
        char *dump = jdk_check(path);
        char *lines = sample_lines(dump);
        cr_assert_str_eq(lines, expect, "JfrCheck read back:\n%s\nexpected:\n%s", lines, expect);
        cr_assert_eq(count_of(dump, "jdk.ExecutionSample"), samples);
        apconv_check(path, samples);
        free(lines);
        free(dump);
}

Test(jfr_buf, varint_edges)
{
        struct {
                uint64_t v;
                size_t len;
        } cases[] = {{0, 1},          {127, 1},        {128, 2},        {(1ull << 56) - 1, 8},
                     {1ull << 56, 9}, {1ull << 63, 9}, {UINT64_MAX, 9}, {0xF1E2D3C4B5A69788ull, 9}};
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                struct jfr_buf b;
                jfr_buf_init(&b);
                jfr_buf_varint(&b, cases[i].v);
                cr_assert_eq(b.len, cases[i].len, "value %llx: %zu bytes",
                             (unsigned long long)cases[i].v, b.len);
                cr_assert_eq(jfr_varint_len(cases[i].v), cases[i].len);
                uint64_t back;
                size_t used;
                cr_assert_eq(jfr_varint_decode(b.data, b.len, &back, &used), 0);
                cr_assert_eq(back, cases[i].v);
                cr_assert_eq(used, b.len);
                /* truncated input is an error, never a read past the end */
                cr_assert_eq(jfr_varint_decode(b.data, b.len - 1, &back, &used), -EBADMSG);
                jfr_buf_free(&b);
        }
        /* the reference example from the format notes */
        struct jfr_buf b;
        jfr_buf_init(&b);
        jfr_buf_varint(&b, 0xF1E2D3C4B5A69788ull);
        cr_assert_arr_eq(b.data, "\x88\xaf\x9a\xad\xcb\xf8\xb4\xf1\xf1", 9);
        jfr_buf_reset(&b);
        jfr_buf_varint_i32(&b, -1);
        cr_assert_eq(b.len, 5);
        cr_assert_arr_eq(b.data, "\xff\xff\xff\xff\x0f", 5);
        jfr_buf_reset(&b);
        size_t off = jfr_buf_varint_fixed(&b, 0, 5);
        jfr_buf_patch_varint(&b, off, 300, 5);
        uint64_t v;
        size_t used;
        cr_assert_eq(jfr_varint_decode(b.data, b.len, &v, &used), 0);
        cr_assert(v == 300 && used == 5);
        jfr_buf_free(&b);
}

Test(jfr_buf, utf8_sanitize)
{
        char out[64];
        cr_assert_eq(jfr_utf8_sanitize("ok", 2, out, sizeof(out)), 2);
        cr_assert_str_eq(out, "ok");
        jfr_utf8_sanitize("a\0b", 3, out, sizeof(out));
        cr_assert_str_eq(out, "a\xef\xbf\xbd"
                              "b");
        jfr_utf8_sanitize("\xc3\xa9\xff\xc3", 4, out, sizeof(out)); /* é, bad byte, cut seq */
        cr_assert_str_eq(out, "\xc3\xa9\xef\xbf\xbd\xef\xbf\xbd");
        jfr_utf8_sanitize("\xed\xa0\x80", 3, out, sizeof(out)); /* surrogate */
        cr_assert_str_eq(out, "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");
        jfr_utf8_sanitize("\xc0\xaf", 2, out, sizeof(out)); /* overlong '/' */
        cr_assert_str_eq(out, "\xef\xbf\xbd\xef\xbf\xbd");
        cr_assert_eq(jfr_utf8_sanitize("\xe2\x82\xac\xe2\x82\xac", 6, out, 5), 3); /* no split */
}

/* Span ids at the varint edges, empty strings, hostile label bytes. */
Test(jfr_writer, edge_values_read_back_by_jdk)
{
        need_jdk();
        char path[256];
        tmp_path(path, sizeof(path), "edges");
        explen = 0;
        struct jfr_writer *w = open_writer(path, 0);
        cr_assert_eq(jfr_writer_begin_chunk(w, WALL0, T0), 0);
        cr_assert_eq(jfr_writer_add_thread(w, 11, "worker", NULL), 0);
        cr_assert_eq(jfr_writer_add_thread(w, 12, "", NULL), 0);
        cr_assert_eq(jfr_writer_add_thread(w, 13, "bad\xff\xfe", NULL), 0);
        cr_assert_eq(jfr_writer_add_stack(w, 1, stack_a, 3, 0), 0);
        cr_assert_eq(jfr_writer_add_stack(w, 1, stack_a, 3, 0), -EEXIST);
        cr_assert_eq(jfr_writer_add_stack(w, 2, stack_b, 1, 1), 0);
        struct jfr_frame odd[] = {{"", NULL, 0, JFR_FRAME_NATIVE}, {NULL, "", -1, 99}};
        cr_assert_eq(jfr_writer_add_stack(w, 3, odd, 2, 0), 0);
        cr_assert_eq(jfr_writer_add_stack(w, 4, NULL, 0, 0), 0);
        struct jfr_label l1[] = {{"http.route", "/api/v1", 10, 7}, {"tenant", "", 6, 0}};
        struct jfr_label l2[] = {{"ten\0ant", "acme\0x\xff", 7, 7},
                                 {"class", "\xc3\xa9t\xc3\xa9", 5, 5},
                                 {"1st", "x", 3, 1},
                                 {"tenant", "first", 6, 5},
                                 {"tenant", "second", 6, 6},
                                 {NULL, "skipped", 0, 7},
                                 {"spanId", "clash", 6, 5}};
        cr_assert_eq(jfr_writer_add_labels(w, 7, l1, 2), 0);
        cr_assert_eq(jfr_writer_add_labels(w, 8, l2, 7), 0);
        cr_assert_eq(jfr_writer_add_labels(w, 8, l2, 1), -EEXIST);

        uint64_t spans[] = {(1ull << 56) - 1, 1ull << 56, 1ull << 63, UINT64_MAX, 1};
        uint64_t t = T0 + 1000;
        for (size_t i = 0; i < 5; i++, t += 10000000)
                sample(w, t, 11, "worker", 1, STACK_A, spans[i], spans[4 - i], 0, "");
        sample(w, t += 1000, 11, "worker", 1, STACK_A, 0, 0, 7, " http.route=/api/v1 tenant=");
        /* labels sorted by key bytes; the first of duplicate keys wins */
        sample(w, t += 1000, 12, "", 2, STACK_B, 0, 42, 8,
               " 1st=x class=\xc3\xa9t\xc3\xa9 spanId=clash tenant=first ten\xef\xbf\xbd"
               "ant=acme\xef\xbf\xbdx\xef\xbf\xbd");
        sample(w, t += 1000, 13, "bad\xef\xbf\xbd\xef\xbf\xbd", 3,
               "F|.:-1:Native|.[unknown]:-1:Native", 0, 0, 0, "");
        /* an empty stack gets a frame, so that readers that drop empty stacks count it */
        sample(w, t += 1000, 13, "bad\xef\xbf\xbd\xef\xbf\xbd", 4, "F|.[no stack]:-1:Native", 0, 0,
               99, "");
        /* an unknown trace id and an undeclared tid still make a readable sample */
        sample(w, t += 1000, 14, "tid-14", 12345, "T|.[unknown stack]:-1:Native", 0, 0, 0, "");
        finish(w, path, t + 1000);
        struct jfr_writer_counters c;
        jfr_writer_counters(w, &c);
        cr_assert_gt(c.bytes, 68);
        cr_assert_eq(c.unknown_stacks, 1);
        cr_assert_eq(c.unknown_threads, 1);
        jfr_writer_close(w);
        check_file(path, 10);
        check_pyroscope(path, 2, 5); /* context 99 was never added: no labels */
        unlink(path);
}

Test(jfr_writer, thread_renamed_and_tid_reused)
{
        need_jdk();
        char path[256];
        tmp_path(path, sizeof(path), "threads");
        explen = 0;
        struct jfr_writer *w = open_writer(path, 0);
        uint64_t t = T0;
        cr_assert_eq(jfr_writer_begin_chunk(w, WALL0, T0), 0);
        cr_assert_eq(jfr_writer_add_thread(w, 100, "alpha", NULL), 0);
        cr_assert_eq(jfr_writer_add_stack(w, 1, stack_a, 3, 0), 0);
        sample(w, t += 1000, 100, "alpha", 1, STACK_A, 5, 5, 0, "");
        /* alpha exits; a new thread gets tid 100 within the same chunk */
        cr_assert_eq(jfr_writer_add_thread(w, 100, "beta", NULL), 0);
        sample(w, t += 1000, 100, "beta", 1, STACK_A, 6, 6, 0, "");
        cr_assert_eq(jfr_writer_finish_chunk(w, t + 1000, NULL), 0);

        cr_assert_eq(jfr_writer_begin_chunk(w, WALL0 + 1000000000, T0 + 1000000000), 0);
        t = T0 + 1000000000;
        cr_assert_eq(jfr_writer_add_stack(w, 1, stack_b, 1, 1), 0); /* same trace id, new stack */
        cr_assert_eq(jfr_writer_add_thread(w, 100, "gamma", NULL), 0); /* renamed */
        cr_assert_eq(jfr_writer_add_thread(w, 200, "alpha", NULL), 0);
        sample(w, t += 1000, 100, "gamma", 1, STACK_B, 0, 0, 0, "");
        sample(w, t += 1000, 200, "alpha", 1, STACK_B, 0, 0, 0, "");
        cr_assert_eq(jfr_writer_finish_chunk(w, t + 1000, NULL), 0);

        /* third chunk: beta again on tid 100 (an identity from an earlier chunk) */
        cr_assert_eq(jfr_writer_begin_chunk(w, WALL0 + 2000000000, T0 + 2000000000), 0);
        t = T0 + 2000000000;
        cr_assert_eq(jfr_writer_add_thread(w, 100, "beta", NULL), 0);
        cr_assert_eq(jfr_writer_add_stack(w, 9, stack_a, 3, 0), 0);
        sample(w, t += 1000, 100, "beta", 9, STACK_A, 0, 0, 0, "");
        cr_assert_eq(jfr_writer_finish_chunk(w, t + 1000, NULL), 0);
        jfr_writer_close(w);
        check_file(path, 5);
        /* thread pool keys are the OS tids (a reader that shows the key shows the tid); the
         * second identity of tid 100 gets a key above every tid */
        if (apconv_threads[0]) {
                cr_assert(strstr(apconv_threads, "[alpha tid=100]"), "%s", apconv_threads);
                cr_assert(strstr(apconv_threads, "[alpha tid=200]"), "%s", apconv_threads);
                cr_assert(!strstr(apconv_threads, "[beta tid=100]"), "%s", apconv_threads);
        }
        unlink(path);
}

/* Chunks with different label keys: each chunk's metadata must be read (new metadata id). */
static const char *path_of_chunks; /* where finish() puts the labels snapshot */
static void write_chunks(struct jfr_writer *w, int first, int n, int per_chunk)
{
        for (int c = first; c < first + n; c++) {
                uint64_t t = T0 + (uint64_t)c * 1000000000;
                cr_assert_eq(jfr_writer_begin_chunk(w, WALL0 + (uint64_t)c * 1000000000, t), 0);
                char key[16], val[16], tname[16], lab[64];
                snprintf(key, sizeof(key), "k%d", c);
                snprintf(tname, sizeof(tname), "w%d", c % 3);
                cr_assert_eq(jfr_writer_add_thread(w, 1000 + c % 3, tname, NULL), 0);
                cr_assert_eq(jfr_writer_add_stack(w, 5, (c & 1) ? stack_a : stack_b,
                                                  (c & 1) ? 3 : 1, !(c & 1)),
                             0);
                for (int i = 0; i < per_chunk; i++) {
                        snprintf(val, sizeof(val), "v%d", i % 4);
                        struct jfr_label l = {key, val, strlen(key), strlen(val)};
                        if (i < 4)
                                cr_assert_eq(jfr_writer_add_labels(w, (uint32_t)(i + 1), &l, 1), 0);
                        snprintf(lab, sizeof(lab), " %s=%s", key, val);
                        sample(w, t + (uint64_t)i * 1000, 1000 + c % 3, tname, 5,
                               (c & 1) ? STACK_A : STACK_B, (uint64_t)(i / 3 + 1) << 60, 77,
                               (uint32_t)(i % 4 + 1), lab);
                }
                finish(w, path_of_chunks, t + 999000000);
        }
}

Test(jfr_writer, multi_chunk_read_back_completely)
{
        need_jdk();
        char path[256];
        tmp_path(path, sizeof(path), "multi");
        explen = 0;
        struct jfr_writer *w = open_writer(path, 0);
        path_of_chunks = path;
        write_chunks(w, 0, 6, 40);
        jfr_writer_close(w);
        check_file(path, 240);
        check_pyroscope(path, 240, 240);
        unlink(path);
}

/* A child writes chunks in a loop and is SIGKILLed. Every finished chunk must stay readable;
 * reopening with JFR_WRITER_APPEND trims a partial tail and continues the file. */
Test(jfr_writer, sigkill_mid_chunk_leaves_finished_chunks, .timeout = 240)
{
        need_jdk();
        char path[256];
        tmp_path(path, sizeof(path), "kill");
        path_of_chunks = path;
        int trimmed_runs = 0;
        for (int run = 0; run < 3; run++) {
                int pfd[2];
                cr_assert_eq(pipe(pfd), 0);
                pid_t pid = fork();
                cr_assert(pid >= 0);
                if (pid == 0) {
                        close(pfd[0]);
                        struct jfr_writer *w;
                        struct jfr_recording_info info = {"kill", "cpu-clock", 99,  "fp",
                                                          WALL0,  NULL,        NULL};
                        if (jfr_writer_open(&w, path, 0, &info))
                                _exit(1);
                        explen = 0;
                        for (int c = 0;; c++) {
                                write_chunks(w, c, 1, 1000);
                                explen = 0;
                                if (write(pfd[1], "x", 1) != 1)
                                        _exit(2);
                        }
                }
                close(pfd[1]);
                char x;
                int done = 0;
                while (done < 2 + run && read(pfd[0], &x, 1) == 1)
                        done++;
                cr_assert_eq(done, 2 + run, "child died early");
                struct timespec ts = {0, (run * 7919 % 13) * 1000000L};
                nanosleep(&ts, NULL);
                kill(pid, SIGKILL);
                int st;
                waitpid(pid, &st, 0);
                while (read(pfd[0], &x, 1) == 1)
                        done++;
                close(pfd[0]);

                if (run == 2) { /* make sure the trim path runs: a half-written chunk */
                        int afd = open(path, O_RDWR | O_APPEND);
                        char head[1000];
                        cr_assert(afd >= 0 && pread(afd, head, sizeof(head), 0) == 1000);
                        cr_assert_eq(write(afd, head, sizeof(head)), 1000);
                        close(afd);
                }
                int fd = open(path, O_RDONLY);
                cr_assert(fd >= 0);
                struct stat sb;
                uint64_t good;
                cr_assert_eq(fstat(fd, &sb), 0);
                cr_assert_eq(jfr_file_complete_prefix(fd, &good), 0);
                close(fd);
                cr_assert_geq(good, 68 * (uint64_t)done, "finished chunks lost");
                cr_assert(run != 2 || (uint64_t)sb.st_size >= good + 1000);
                if ((uint64_t)sb.st_size != good && run != 2)
                        trimmed_runs++;
                /* continue the file: trims a partial tail, keeps complete chunks */
                struct jfr_writer *w = open_writer(path, JFR_WRITER_APPEND);
                struct jfr_writer_counters c;
                jfr_writer_counters(w, &c);
                cr_assert_eq(c.trimmed_bytes, (uint64_t)sb.st_size - good);
                explen = 0;
                write_chunks(w, 101, 1, 5); /* new keys must not alias old ones */
                jfr_writer_close(w);
                char *dump = jdk_check(path);
                int n = count_of(dump, "jdk.ExecutionSample");
                cr_assert_geq(n, done * 1000 + 5, "run %d: %d samples for %d finished chunks", run,
                              n, done);
                cr_assert_eq((n - 5) % 1000, 0);
                /* the appended chunk's context (new keys, new metadata) reads back */
                cr_assert(strstr(dump, expect), "appended chunk missing:\n%s", expect);
                free(dump);
        }
        printf("kills that landed inside an append write (partial tail trimmed on reopen): %d "
               "of 2 (run 3 gets a synthetic half-written chunk)\n",
               trimmed_runs);
        unlink(path);
        strcat(path, ".labels.pb");
        unlink(path);
}

static int write_until_error(const char *path, int *chunks_ok)
{
        struct jfr_writer *w;
        struct jfr_recording_info info = {"full", "cpu-clock", 99, "fp", WALL0, NULL, NULL};
        int err = jfr_writer_open(&w, path, 0, &info);
        if (err)
                return err;
        *chunks_ok = 0;
        for (int c = 0; c < 1000; c++) {
                explen = 0;
                uint64_t t = T0 + (uint64_t)c * 1000000000;
                cr_assert_eq(jfr_writer_begin_chunk(w, WALL0, t), 0);
                cr_assert_eq(jfr_writer_add_stack(w, 5, stack_a, 3, 0), 0);
                for (int i = 0; i < 500; i++) {
                        struct jfr_sample s = {
                            t + (uint64_t)i * 1000, 5, (uint64_t)i << 40, 9, 0, 77};
                        cr_assert_eq(jfr_writer_add_sample(w, &s), 0);
                }
                err = jfr_writer_finish_chunk(w, t + 1000000, NULL);
                if (err)
                        break;
                (*chunks_ok)++;
        }
        jfr_writer_close(w);
        return err;
}

static void check_full_file(const char *path, int chunks_ok)
{
        int fd = open(path, O_RDONLY);
        struct stat sb;
        uint64_t good;
        cr_assert(fd >= 0 && fstat(fd, &sb) == 0);
        cr_assert_eq(jfr_file_complete_prefix(fd, &good), 0);
        close(fd);
        cr_assert_eq((uint64_t)sb.st_size, good, "partial chunk left behind");
        char *dump = jdk_check(path);
        cr_assert_eq(count_of(dump, "jdk.ExecutionSample"), chunks_ok * 500);
        apconv_check(path, chunks_ok * 500);
        free(dump);
}

Test(jfr_writer, full_disk_enospc, .timeout = 120)
{
        need_jdk();
        char dir[] = "/tmp/ctxprof-jfrtest-tmpfsXXXXXX", path[300];
        cr_assert(mkdtemp(dir));
        if (mount("tmpfs", dir, "tmpfs", 0, "size=96k")) {
                int e = errno;
                rmdir(dir);
                cr_skip_test("cannot mount a small tmpfs (%s); see file_size_limit_efbig",
                             strerror(e));
        }
        snprintf(path, sizeof(path), "%s/full.jfr", dir);
        int ok = 0;
        int err = write_until_error(path, &ok);
        cr_assert_eq(err, -ENOSPC, "got %d", err);
        cr_assert_gt(ok, 0);
        /* copy out before checking: the JDK needs no space on the full fs, but keep it simple */
        check_full_file(path, ok);
        umount2(dir, MNT_DETACH);
        rmdir(dir);
}

Test(jfr_writer, file_size_limit_efbig, .timeout = 120)
{
        need_jdk();
        char path[256];
        tmp_path(path, sizeof(path), "efbig");
        pid_t pid = fork();
        cr_assert(pid >= 0);
        if (pid == 0) {
                struct rlimit rl = {100000, 100000};
                signal(SIGXFSZ, SIG_IGN);
                setrlimit(RLIMIT_FSIZE, &rl);
                int ok = 0, err = write_until_error(path, &ok);
                _exit(err == -EFBIG && ok > 0 && ok < 200 ? ok : 255);
        }
        int st;
        cr_assert_eq(waitpid(pid, &st, 0), pid);
        cr_assert(WIFEXITED(st) && WEXITSTATUS(st) != 255, "child: status %d", st);
        check_full_file(path, WEXITSTATUS(st));
        unlink(path);
}

/* A recording with no sample at all (the target was idle): every reader still opens it. */
Test(jfr_writer, empty_recording_reads_everywhere)
{
        need_jdk();
        char path[256];
        tmp_path(path, sizeof(path), "empty");
        explen = 0;
        struct jfr_writer *w = open_writer(path, 0);
        cr_assert_eq(jfr_writer_begin_chunk(w, WALL0, T0), 0);
        cr_assert_eq(jfr_writer_finish_chunk(w, T0 + 1000000, NULL), 0);
        jfr_writer_close(w);
        check_file(path, 0);
        unlink(path);
}

/* Label sets live in a constant pool, not in event fields: a chunk with hundreds of distinct
 * keys keeps every label of every sample (the old one-field-per-key layout capped a chunk at
 * 64 keys and dropped the rest). */
#define MANY_KEYS 300
Test(jfr_writer, many_label_keys_all_kept)
{
        need_jdk();
        char path[256];
        tmp_path(path, sizeof(path), "manykeys");
        explen = 0;
        struct jfr_writer *w = open_writer(path, 0);
        cr_assert_eq(jfr_writer_begin_chunk(w, WALL0, T0), 0);
        cr_assert_eq(jfr_writer_add_thread(w, 5, "w", NULL), 0);
        cr_assert_eq(jfr_writer_add_stack(w, 1, stack_b, 1, 1), 0);
        for (uint32_t i = 0; i < MANY_KEYS; i++) {
                char key[16], val[16], lab[48];
                snprintf(key, sizeof(key), "key%03u", i);
                snprintf(val, sizeof(val), "v%u", i % 7);
                struct jfr_label l[2] = {{key, val, strlen(key), strlen(val)},
                                         {"route", "/a", 5, 2}};
                cr_assert_eq(jfr_writer_add_labels(w, i + 1, l, 2), 0);
                snprintf(lab, sizeof(lab), " %s=%s route=/a", key, val);
                sample(w, T0 + i * 1000ull, 5, "w", 1, STACK_B, 0, 0, i + 1, lab);
        }
        finish(w, path, T0 + 1000000);
        struct jfr_writer_counters c;
        jfr_writer_counters(w, &c);
        cr_assert_eq(c.dropped_label_keys, 0);
        cr_assert_eq(c.context_samples, MANY_KEYS);
        jfr_writer_close(w);
        check_file(path, MANY_KEYS);
        check_pyroscope(path, MANY_KEYS, 0);
        unlink(path);
}

/* A thread renaming itself without end cannot grow a file's identity table past
 * JFR_THREAD_IDENTITIES_MAX: further identities become one placeholder, counted. */
Test(jfr_writer, thread_identities_bounded, .timeout = 120)
{
        char path[256];
        tmp_path(path, sizeof(path), "threadcap");
        struct jfr_writer *w = open_writer(path, 0);
        const unsigned extra = 10;

        cr_assert_eq(jfr_writer_begin_chunk(w, WALL0, T0), 0);
        for (unsigned i = 0; i < JFR_THREAD_IDENTITIES_MAX + extra; i++) {
                char name[16];
                snprintf(name, sizeof(name), "n%u", i);
                cr_assert_eq(jfr_writer_add_thread(w, 77, name, NULL), 0, "identity %u", i);
        }
        cr_assert_eq(jfr_writer_add_thread(w, 77, "n5", NULL), 0, "a known identity stays");
        struct jfr_writer_counters c;
        jfr_writer_counters(w, &c);
        cr_assert_eq(c.thread_identities_refused, extra + 1);
        cr_assert_eq(jfr_writer_finish_chunk(w, T0 + 1000, NULL), 0);
        jfr_writer_close(w);
        unlink(path);
}
