/* SPDX-License-Identifier: MIT */
/*
 * test_status_file.c — the daemon's status file format (service/status_file.c): a daemon
 * record and target records encoded, written atomically to a real file, read back and
 * parsed give the same values; a truncated file, a missing field and malformed values are
 * refused with -ENOENT / -EINVAL, never read as zeros; values are made safe to embed.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "service/status_file.h"

static struct status_daemon sample_daemon(void)
{
        struct status_daemon d = {
            .pid = 4242,
            .started = 1790000000,
            .updated = 1790000123,
            .samples = 123456789012ull,
            .received = 123456789000ull,
            .context_samples = 77,
            .lost = 3,
            .torn = 2,
            .threads = 19,
            .targets = 5,
            .map_entries = 6,
            .processes_seen = 9,
            .files_written = 11,
            .files_deleted = 1,
            .chunks_written = 42,
            .bytes_written = 1ull << 40,
            .process_files = 4,
            .overflow_samples = 8,
            .no_file_samples = 10,
            .refused_stacks = 12,
            .refused_labels = 13,
            .refused_threads = 14,
            .cap_eff = 0x1ffffffffffull,
        };

        strcpy(d.state, "running");
        strcpy(d.mode, "selectors");
        strcpy(d.current_file, "/var/lib/ctxprof/ctxprof-host-20260101T000000Z.jfr.part");
        strcpy(d.split, "process");
        return d;
}

static struct status_target sample_target(int pid, const char *comm, int located)
{
        struct status_target t = {.pid = pid,
                                  .samples = 1000,
                                  .context_samples = 990,
                                  .threads = 7,
                                  .stacks_refused = 3,
                                  .labels_refused = 4,
                                  .threads_refused = 5};

        t.context_located = located;
        snprintf(t.comm, sizeof(t.comm), "%s", comm);
        snprintf(t.file, sizeof(t.file), "ctxprof-host-%d.jfr.part", pid);
        return t;
}

/* The text, written with status_file_write and read back whole. */
static char *through_file(const struct status_text *t)
{
        char dir[] = "/tmp/ctxprof-status.XXXXXX", path[128];
        struct stat st;
        char *buf;
        FILE *f;

        cr_assert_not_null(mkdtemp(dir));
        snprintf(path, sizeof(path), "%s/run/status", dir); /* parent created */
        cr_assert_eq(status_file_write(path, t->p, t->len), 0);
        cr_assert_eq(stat(path, &st), 0);
        cr_assert_eq(st.st_mode & 0777, 0644);
        buf = calloc(1, (size_t)st.st_size + 1);
        f = fopen(path, "r");
        cr_assert_not_null(f);
        cr_assert_eq(fread(buf, 1, (size_t)st.st_size, f), (size_t)st.st_size);
        fclose(f);
        unlink(path);
        snprintf(path, sizeof(path), "%s/run", dir);
        rmdir(path);
        rmdir(dir);
        return buf;
}

Test(status_file, round_trip)
{
        struct status_daemon d = sample_daemon(), d2;
        struct status_target t[2] = {sample_target(100, "nginx", 1), sample_target(200, "", 0)}, t2;
        struct status_text text = {0};
        struct status_record r;
        char *buf, *line, *save = NULL;
        int n = 0;

        status_text_daemon(&text, &d);
        status_text_target(&text, &t[0]);
        status_text_target(&text, &t[1]);
        cr_assert_eq(text.err, 0);
        buf = through_file(&text);
        /* the format the readers know: the daemon line first, then one line per target */
        cr_assert(!strncmp(buf, "daemon pid=4242 state=running started=1790000000 ", 49), "%s",
                  buf);
        cr_assert_not_null(strstr(buf, " cap_eff=1ffffffffff\n"));
        cr_assert_not_null(strstr(buf, "\ntarget pid=200 comm=- samples=1000 "));

        for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save), n++) {
                cr_assert_eq(status_record_parse(line, &r), 0);
                if (n == 0) {
                        struct status_text again = {0};

                        cr_assert_eq(status_record_daemon(&r, &d2), 0);
                        cr_assert_eq(d2.pid, d.pid);
                        cr_assert_eq(d2.samples, d.samples);
                        cr_assert_eq(d2.bytes_written, d.bytes_written);
                        cr_assert_eq(d2.cap_eff, d.cap_eff);
                        cr_assert_str_eq(d2.current_file, d.current_file);
                        cr_assert_str_eq(d2.split, d.split);
                        /* every field: the decoded record encodes to the same line */
                        status_text_daemon(&again, &d2);
                        cr_assert_eq(again.err, 0);
                        cr_assert_eq(again.len, (size_t)(strchr(text.p, '\n') - text.p) + 1);
                        cr_assert(!strncmp(again.p, text.p, again.len), "%s", again.p);
                        status_text_free(&again);
                        cr_assert_eq(status_record_target(&r, &t2), -EINVAL);
                        continue;
                }
                memset(&t2, 0xa5, sizeof(t2));
                cr_assert_eq(status_record_target(&r, &t2), 0);
                cr_assert_eq(t2.pid, t[n - 1].pid);
                cr_assert_str_eq(t2.comm, t[n - 1].comm); /* "" -> "-" -> "" */
                cr_assert_eq(t2.samples, t[n - 1].samples);
                cr_assert_eq(t2.context_samples, t[n - 1].context_samples);
                cr_assert_eq(t2.threads, t[n - 1].threads);
                cr_assert_eq(t2.context_located, t[n - 1].context_located);
                cr_assert_str_eq(t2.file, t[n - 1].file);
                cr_assert_eq(t2.stacks_refused, 3);
                cr_assert_eq(t2.labels_refused, 4);
                cr_assert_eq(t2.threads_refused, 5);
        }
        cr_assert_eq(n, 3);
        free(buf);
        status_text_free(&text);
}

/* A line cut anywhere (a file truncated by a full disk or read by hand) never parses as a
 * daemon record with fields silently zero. */
Test(status_file, truncated)
{
        struct status_daemon d = sample_daemon(), d2;
        struct status_text text = {0};
        struct status_record r;
        char line[1024];
        size_t cut, ok = 0;

        status_text_daemon(&text, &d);
        cr_assert_eq(text.err, 0);
        for (cut = 0; cut < text.len; cut++) {
                int err;

                memcpy(line, text.p, cut);
                line[cut] = '\0';
                if (status_record_parse(line, &r)) {
                        cr_assert_eq(cut, 0); /* only an empty line has no kind */
                        continue;
                }
                err = status_record_daemon(&r, &d2);
                if (!err) {
                        /* only a cut inside the last value (cap_eff), which then reads as a
                         * shorter hex number, or no cut at all */
                        cr_assert(cut >= text.len - strlen("1ffffffffff\n") + 1, "cut %zu", cut);
                        ok++;
                        continue;
                }
                cr_assert(err == -ENOENT || err == -EINVAL, "cut %zu: %d", cut, err);
        }
        cr_assert_leq(ok, strlen("1ffffffffff"));
        status_text_free(&text);
}

Test(status_file, missing_field)
{
        char line[] = "target pid=7 comm=a samples=1 context_samples=1 threads=1 file=x";
        char line2[] =
            "target pid=7 comm=a samples=1 context_samples=1 threads=1 context=yes "
            "file=x stacks_refused=0 labels_refused=0 threads_refused=0 stuck=no extra=1";
        struct status_target t;
        struct status_record r;

        cr_assert_eq(status_record_parse(line, &r), 0);
        cr_assert_str_eq(r.kind, "target");
        cr_assert_str_eq(status_record_get(&r, "comm"), "a");
        cr_assert_null(status_record_get(&r, "context"));
        cr_assert_eq(status_record_target(&r, &t), -ENOENT);
        /* unknown keys are ignored: a newer daemon's file still reads */
        cr_assert_eq(status_record_parse(line2, &r), 0);
        cr_assert_eq(status_record_target(&r, &t), 0);
        cr_assert_eq(t.context_located, 1);
}

Test(status_file, malformed_values)
{
        static const char *const bad[] = {
            "target pid=-7 comm=a samples=1 context_samples=1 threads=1 context=yes file=x",
            "target pid=7 comm=a samples=1x context_samples=1 threads=1 context=yes file=x",
            "target pid=7 comm=a samples=1 context_samples=1 threads=99999999999 context=yes "
            "file=x",
            "target pid=7 comm=a samples=1 context_samples=1 threads=1 context=maybe file=x",
            "target pid=7 comm=a samples= context_samples=1 threads=1 context=yes file=x",
            "target pid=7 comm=a samples=184467440737095516160 context_samples=1 threads=1 "
            "context=yes file=x",
        };
        char line[256];
        struct status_target t;
        struct status_record r;
        size_t i;

        for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                snprintf(line, sizeof(line), "%s", bad[i]);
                cr_assert_eq(status_record_parse(line, &r), 0);
                cr_assert_eq(status_record_target(&r, &t), -EINVAL, "accepted: %s", bad[i]);
        }
        snprintf(line, sizeof(line), "   \n");
        cr_assert_eq(status_record_parse(line, &r), -EINVAL);
}

Test(status_file, values_are_embeddable)
{
        struct status_target t = sample_target(1, "a b=c\td\xc3\xa9", 1), t2;
        struct status_text text = {0};
        struct status_record r;

        status_text_target(&text, &t);
        cr_assert_eq(text.err, 0);
        cr_assert_not_null(strstr(text.p, " comm=a_b_c_d__ "), "%s", text.p);
        cr_assert_eq(status_record_parse(text.p, &r), 0);
        cr_assert_eq(status_record_target(&r, &t2), 0);
        cr_assert_str_eq(t2.comm, "a_b_c_d__");
        status_text_free(&text);
}
