/* SPDX-License-Identifier: MIT */
/*
 * test_recording_set.c — the daemon's open recordings without BPF, in a real directory:
 * with split=process, a sample whose per-process file cannot be created goes to the shared
 * host file (counted as overflow, not dropped), and the failed per-process open does not
 * stop the host file from being opened; a sink whose writer thread cannot start (RLIMIT_AS)
 * leaves no empty .part behind; a process that execs under a new name has its old file
 * finished at the next tick, not inside the sample callback; a tick reads the engine's
 * counters only when it cuts a chunk, and recording_set_next_tick names that time.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "service/config.h"
#include "service/recording_set.h"
#include "util/clock.h"

static int n_errors;

static void count_log(void *ctx, int level, const char *msg)
{
        (void)ctx;
        (void)msg;
        if (level <= LOG_ERROR)
                n_errors++;
}

/* A directory whose path is just short enough for the host file's name
 * (DIR/ctxprof-h-YYYYMMDDTHHMMSSZ.jfr.part) and too long for a per-process one
 * (DIR/ctxprof-h-PID-COMM-...): output_dir refuses names within 16 bytes of PATH_MAX. */
static void long_dir(char *dir, size_t len)
{
        const size_t want = PATH_MAX - 16 - 10 - 27 - 1; /* host base name: dir + 27 chars */
        size_t n;

        snprintf(dir, len, "/tmp/ctxprof-rs.XXXXXX");
        cr_assert(mkdtemp(dir));
        n = strlen(dir);
        while (n < want) {
                size_t part = want - n - 1 > 200 ? 200 : want - n - 1;

                dir[n++] = '/';
                memset(dir + n, 'd', part);
                n += part;
                dir[n] = '\0';
                cr_assert(!mkdir(dir, 0755) || errno == EEXIST, "mkdir: %s", strerror(errno));
        }
        cr_assert_eq(strlen(dir), want);
}

static void rm_long_dir(char *dir, size_t top)
{
        char cmd[64];

        dir[top] = '\0';
        snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
        cr_assert_eq(system(cmd), 0);
}

Test(recording_set, process_file_fails_host_file_takes_the_samples)
{
        static char dir[PATH_MAX];
        struct daemon_config cfg;
        struct recording_set_counters c;
        struct ctxprof_frame fr = {.offset = 0x1234, .module_id = CTXPROF_MODULE_UNKNOWN};
        struct decoded_sample ds = {.pid = getpid(),
                                    .tid = getpid(),
                                    .comm = "t",
                                    .process = "t",
                                    .frames = &fr,
                                    .n_frames = 1};
        struct recording_set_opts o = {.cfg = &cfg, .host = "h", .log = count_log};
        struct recording_set *rs;
        struct sample_sink sink;
        const char *host;
        int i;

        long_dir(dir, sizeof(dir));
        config_defaults(&cfg);
        snprintf(cfg.directory, sizeof(cfg.directory), "%s", dir);
        cfg.split = SPLIT_PROCESS;
        rs = recording_set_new(&o);
        cr_assert(rs);
        cr_assert_eq(recording_set_start(rs), 0);
        sink = recording_set_as_sink(rs);
        for (i = 0; i < 3; i++)
                cr_assert_eq(sink.sample(sink.ctx, &ds), 0);
        recording_set_get_counters(rs, &c);
        cr_expect_eq(c.samples_no_file, 0, "%llu samples dropped",
                     (unsigned long long)c.samples_no_file);
        cr_expect_eq(c.samples_overflow, 3, "%llu samples in the host file, want 3",
                     (unsigned long long)c.samples_overflow);
        cr_expect_eq(c.open_process_files, 0);
        cr_expect_null(recording_set_file(rs, ds.pid));
        host = recording_set_file(rs, 0);
        cr_assert(host, "no host file open");
        cr_expect(!access(host, F_OK), "%s does not exist", host);
        cr_expect_eq(n_errors, 1, "%d errors logged (want 1: the per-process file)", n_errors);
        cr_expect_eq(recording_set_finish(rs), 0);
        recording_set_get_counters(rs, &c);
        cr_expect_eq(c.files_written, 1);
        recording_set_free(rs);
        rm_long_dir(dir, strlen("/tmp/ctxprof-rs.XXXXXX"));
}

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SANITIZED 1 /* their shadow memory does not fit under RLIMIT_AS */
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define SANITIZED 1
#endif
#endif

#ifndef SANITIZED
static unsigned long vm_size_kb(void)
{
        char line[256];
        unsigned long kb = 0;
        FILE *f = fopen("/proc/self/status", "r");

        cr_assert(f);
        while (fgets(line, sizeof(line), f))
                if (sscanf(line, "VmSize: %lu kB", &kb) == 1)
                        break;
        fclose(f);
        return kb;
}
#endif

/* The sink's file is created, then its writer thread cannot start (no address space left for
 * the thread's stack): the empty .part is removed, not left behind at every retry. */
Test(recording_set, sink_that_cannot_start_leaves_no_part)
{
#ifdef SANITIZED
        cr_skip_test("RLIMIT_AS under a sanitizer");
#else
        char dir[] = "/tmp/ctxprof-rs.XXXXXX", cmd[64];
        struct daemon_config cfg;
        struct recording_set_opts o = {.cfg = &cfg, .host = "h", .log = count_log};
        struct recording_set *rs;
        struct rlimit rl;
        int err;

        cr_assert(mkdtemp(dir));
        config_defaults(&cfg);
        snprintf(cfg.directory, sizeof(cfg.directory), "%s", dir);
        cfg.max_stacks = 16; /* a small trace table: it fits, the 8 MiB thread stack does not */
        cr_assert_eq(getrlimit(RLIMIT_STACK, &rl), 0);
        if (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur < (8u << 20))
                cr_skip_test("thread stacks smaller than 8 MiB");
        rs = recording_set_new(&o);
        cr_assert(rs);
        rl.rlim_cur = rl.rlim_max = (vm_size_kb() << 10) + (3u << 20);
        cr_assert_eq(setrlimit(RLIMIT_AS, &rl), 0);
        err = recording_set_start(rs);
        cr_expect_neq(err, 0, "the sink started under RLIMIT_AS");
        cr_expect_null(recording_set_file(rs, 0));
        snprintf(cmd, sizeof(cmd), "ls -A %s | grep -q .", dir);
        cr_expect_neq(system(cmd), 0, "files left in %s", dir);
        recording_set_free(rs);
        snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
        cr_assert_eq(system(cmd), 0);
#endif
}

static int n_files(const char *dir, const char *suffix)
{
        char cmd[128];
        FILE *p;
        int n = -1;

        snprintf(cmd, sizeof(cmd), "ls %s | grep -c '%s$'", dir, suffix);
        p = popen(cmd, "r");
        cr_assert(p);
        cr_assert_eq(fscanf(p, "%d", &n), 1);
        pclose(p);
        return n;
}

static uint64_t mono_ms_now(void)
{
        struct timespec ts;

        cr_assert_eq(clock_gettime(CLOCK_MONOTONIC, &ts), 0);
        return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* A process that execs under a new name gets a new file at once; the old one starts being
 * finished at the next tick, outside the sample callback (at once when its slot is needed),
 * and a later tick completes it once its writer is done (ticks never wait for a writer). */
static void exec_under_new_name(unsigned max_open, int finished_at_once)
{
        char dir[] = "/tmp/ctxprof-rs.XXXXXX", cmd[64], old[PATH_MAX];
        struct daemon_config cfg;
        struct ctxprof_frame fr = {.offset = 0x1234, .module_id = CTXPROF_MODULE_UNKNOWN};
        struct decoded_sample ds = {.pid = getpid(),
                                    .tid = getpid(),
                                    .comm = "a",
                                    .process = "a",
                                    .frames = &fr,
                                    .n_frames = 1};
        struct recording_set_opts o = {.cfg = &cfg, .host = "h", .log = count_log};
        struct recording_set_counters c;
        struct recording_set *rs;
        struct sample_sink sink;
        const char *f;
        uint64_t deadline;
        unsigned done = 0;

        cr_assert(mkdtemp(dir));
        config_defaults(&cfg);
        snprintf(cfg.directory, sizeof(cfg.directory), "%s", dir);
        cfg.split = SPLIT_PROCESS;
        cfg.split_max_open = max_open;
        rs = recording_set_new(&o);
        cr_assert(rs);
        cr_assert_eq(recording_set_start(rs), 0);
        sink = recording_set_as_sink(rs);
        cr_assert_eq(sink.sample(sink.ctx, &ds), 0);
        f = recording_set_file(rs, ds.pid);
        cr_assert(f);
        snprintf(old, sizeof(old), "%s", f);
        sleep(1); /* a new second: the new file's name differs by its time, not a suffix */
        ds.comm = ds.process = "b";
        cr_assert_eq(sink.sample(sink.ctx, &ds), 0);
        f = recording_set_file(rs, ds.pid);
        cr_assert(f);
        cr_expect_str_neq(f, old, "no new file after the exec");
        recording_set_get_counters(rs, &c);
        cr_expect_eq(c.open_process_files, finished_at_once ? 1 : 2);
        if (!finished_at_once) {
                cr_expect_eq(n_files(dir, ".jfr"), 0, "finished before the tick");
                cr_expect_eq(access(old, F_OK), 0);
        }
        /* a fact, with a deadline: the old file's writer ends in the background */
        deadline = mono_ms_now() + 10000;
        do {
                done += recording_set_tick(rs, mono_ms_now());
                if (n_files(dir, ".jfr") == 1)
                        break;
                usleep(10000);
        } while (mono_ms_now() < deadline);
        cr_expect_eq(done, 1, "ticks finished %u files", done);
        cr_expect_eq(n_files(dir, ".jfr"), 1, "the old file was not finished by the ticks");
        cr_expect_eq(n_files(dir, ".jfr.part"), 1);
        recording_set_get_counters(rs, &c);
        cr_expect_eq(c.open_process_files, 1);
        cr_expect_eq(c.samples_overflow, 0);
        cr_expect_eq(recording_set_finish(rs), 0);
        cr_expect_eq(n_files(dir, ".jfr"), 2);
        recording_set_free(rs);
        snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
        cr_assert_eq(system(cmd), 0);
}

Test(recording_set, exec_under_new_name_finishes_the_old_file_after_the_tick)
{
        exec_under_new_name(4, 0);
}

Test(recording_set, exec_under_new_name_at_the_cap_starts_finishing_the_old_file_at_once)
{
        exec_under_new_name(1, 1);
}

static int n_engine_reads;

static void count_engine(void *ctx, struct jfr_sink_engine_counters *out)
{
        (void)ctx;
        (void)out;
        n_engine_reads++;
}

/* The engine's counters cost a per-CPU map read and info syscalls: a tick reads them only
 * when a chunk is cut, and recording_set_next_tick says when that is. */
Test(recording_set, tick_reads_engine_counters_only_at_a_cut)
{
        char dir[] = "/tmp/ctxprof-rs.XXXXXX", cmd[64];
        struct daemon_config cfg;
        struct recording_set_opts o = {
            .cfg = &cfg, .host = "h", .log = count_log, .engine = count_engine};
        struct recording_set *rs;
        uint64_t now, due;
        int i;

        cr_assert(mkdtemp(dir));
        config_defaults(&cfg);
        snprintf(cfg.directory, sizeof(cfg.directory), "%s", dir);
        cfg.chunk_period_ms = 60000;
        rs = recording_set_new(&o);
        cr_assert(rs);
        cr_assert_eq(recording_set_start(rs), 0);
        now = mono_ms();
        due = recording_set_next_tick(rs, now);
        cr_expect(due > now + 59000 && due <= now + 60001, "next tick in %lld ms",
                  (long long)(due - now));
        n_engine_reads = 0;
        for (i = 0; i < 100; i++)
                recording_set_tick(rs, now + (uint64_t)i);
        cr_expect_eq(n_engine_reads, 0, "ticks before the cut read the engine %d times",
                     n_engine_reads);
        recording_set_tick(rs, due);
        cr_expect_eq(n_engine_reads, 1, "the cut read the engine %d times", n_engine_reads);
        cr_expect_gt(recording_set_next_tick(rs, due), due, "the next cut is not later");
        cr_assert_eq(recording_set_finish(rs), 0);
        recording_set_free(rs);
        snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
        cr_assert_eq(system(cmd), 0);
}
