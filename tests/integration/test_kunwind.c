/* SPDX-License-Identifier: MIT */
/* ctxprof-test: parallel check */
/*
 * test_kunwind.c — the in-kernel unwinder's tables in real BPF maps (no sampling): this test
 * process's own mappings are synced; every module's table is built once and loaded byte for
 * byte as cfi_table_build makes it; a second process mapping the same files loads nothing new;
 * tables are released when the last process is forgotten, and their rows reused; a row array
 * too small for libc's table refuses it (counted) and keeps its bound. With a jobs pool the
 * tables are built on its workers and loaded when the jobs are handed back.
 */
#include <bpf/bpf.h>
#include <criterion/criterion.h>
#include <gnu/libc-version.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ctxprof/cfi.h"
#include "ctxprof/tls_target.h"
#include "engine/kunwind.h"
#include "stack/cfi_table.h"

#define LIBC     "/lib/x86_64-linux-gnu/libc.so.6"
#define FAKE_PID 999999 /* a second "process" with the same mappings */

struct env {
        int rows_fd, procs_fd;
        struct modules *mods;
        struct proc_maps *pm;
        struct kunwind *k;
};

static void env_open(struct env *e, uint32_t cap)
{
        e->rows_fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "ku_rows", 4,
                                    sizeof(struct ctxprof_cfi_row), cap, NULL);
        LIBBPF_OPTS(bpf_map_create_opts, o, .map_flags = BPF_F_NO_PREALLOC);
        e->procs_fd = bpf_map_create(BPF_MAP_TYPE_HASH, "ku_procs", 4,
                                     sizeof(struct ctxprof_ku_proc), CTXPROF_MAX_TARGETS, &o);
        if (e->rows_fd < 0 || e->procs_fd < 0)
                cr_skip_test("cannot create BPF maps (needs root)");
        e->mods = modules_new();
        cr_assert_not_null(e->mods);
        cr_assert_eq(proc_maps_open(e->mods, getpid(), &e->pm), 0);
        e->k = kunwind_new(e->mods, e->rows_fd, e->procs_fd, cap);
        cr_assert_not_null(e->k);
}

static void env_close(struct env *e)
{
        kunwind_free(e->k);
        proc_maps_free(e->pm);
        modules_free(e->mods);
        close(e->rows_fd);
        close(e->procs_fd);
}

/* The libc entry of pid's list in the map, or fail. */
static struct ctxprof_ku_map libc_entry(struct env *e, uint32_t pid)
{
        struct ctxprof_ku_proc *v = calloc(1, sizeof(*v));
        struct ctxprof_ku_map best = {0};
        /* a libc function no sanitizer intercepts (ASan's memcpy lives in the test binary) */
        uintptr_t addr = (uintptr_t)&gnu_get_libc_version;

        cr_assert_eq(bpf_map_lookup_elem(e->procs_fd, &pid, v), 0, "no list for %u", pid);
        cr_assert_gt(v->n, 3);
        for (uint32_t i = 0; i < v->n; i++) {
                if (i)
                        cr_assert_geq(v->m[i].start, v->m[i - 1].end, "sorted, disjoint");
                if (v->m[i].start <= addr && addr < v->m[i].end)
                        best = v->m[i];
        }
        free(v);
        cr_assert_gt(best.row_count, 0, "libc's mapping has a table");
        return best;
}

Test(kunwind, tables_loaded_once_shared_and_released, .timeout = 60)
{
        struct kunwind_stats st;
        struct cfi_table t;
        struct env e;
        int fd = open(LIBC, O_RDONLY);

        env_open(&e, CTXPROF_KU_DEFAULT_ROWS);
        cr_assert_eq(kunwind_sync(e.k, getpid(), getuid(), e.pm), 0);
        kunwind_get_stats(e.k, &st);
        cr_assert_geq(st.tables, 3, "exe, libc, ld.so (and the vDSO)");
        cr_assert_eq(st.bytes, st.rows * sizeof(struct ctxprof_cfi_row));
        cr_assert_eq(st.build_errors, 0);

        /* libc's slice holds exactly what cfi_table_build makes */
        struct ctxprof_ku_map m = libc_entry(&e, (uint32_t)getpid());
        cr_assert_eq(cfi_table_build(fd, &t), 0);
        cr_assert_eq(m.row_count, t.n);
        for (uint32_t i = 0; i < t.n; i += 97) {
                struct ctxprof_cfi_row r;
                uint32_t key = m.row_start + i;

                cr_assert_eq(bpf_map_lookup_elem(e.rows_fd, &key, &r), 0);
                cr_assert_eq(memcmp(&r, &t.rows[i], sizeof(r)), 0, "row %u", i);
        }

        /* a second process with the same files: no new table */
        uint64_t builds = st.builds, rows = st.rows;
        cr_assert_eq(kunwind_sync(e.k, FAKE_PID, getuid(), e.pm), 0);
        kunwind_get_stats(e.k, &st);
        cr_assert_eq(st.builds, builds);
        cr_assert_eq(st.rows, rows);
        cr_assert_eq(libc_entry(&e, FAKE_PID).row_start, m.row_start);
        /* a resync of one process keeps its tables */
        cr_assert_eq(kunwind_sync(e.k, getpid(), getuid(), e.pm), 0);
        kunwind_get_stats(e.k, &st);
        cr_assert_eq(st.builds, builds);

        kunwind_forget(e.k, getpid());
        kunwind_get_stats(e.k, &st);
        cr_assert_eq(st.rows, rows, "still mapped by the other process");
        uint32_t key = (uint32_t)getpid();
        struct ctxprof_ku_proc *v = calloc(1, sizeof(*v));
        cr_assert_neq(bpf_map_lookup_elem(e.procs_fd, &key, v), 0, "list deleted");
        free(v);
        kunwind_forget(e.k, FAKE_PID);
        kunwind_get_stats(e.k, &st);
        cr_assert_eq(st.tables, 0);
        cr_assert_eq(st.rows, 0);
        cr_assert_eq(st.bytes_peak, rows * sizeof(struct ctxprof_cfi_row));

        /* released rows are reused: the same slices again from the start */
        cr_assert_eq(kunwind_sync(e.k, getpid(), getuid(), e.pm), 0);
        kunwind_get_stats(e.k, &st);
        cr_assert_eq(st.bytes_peak, rows * sizeof(struct ctxprof_cfi_row), "no growth");
        cr_assert_eq(libc_entry(&e, (uint32_t)getpid()).row_start, m.row_start, "same slice");
        cfi_table_free(&t);
        close(fd);
        env_close(&e);
}

Test(kunwind, bounded_row_array)
{
        struct kunwind_stats st;
        struct env e;

        env_open(&e, 5000); /* libc needs ~28k rows */
        cr_assert_eq(kunwind_sync(e.k, getpid(), getuid(), e.pm), 0);
        kunwind_get_stats(e.k, &st);
        cr_assert_geq(st.full, 1, "libc did not fit");
        cr_assert_leq(st.rows, 5000);
        env_close(&e);
}

static void on_job(void *ctx, uint64_t id, enum target_job_end end, void *arg)
{
        cr_assert_eq(end, TARGET_JOB_FINISHED, "job %llu ended %d", (unsigned long long)id, end);
        cr_assert_eq(kunwind_job_done(ctx, id, end, arg), 1, "job %llu is a build of ours",
                     (unsigned long long)id);
}

/* With a jobs pool the tables are built off the caller's thread: the first sync writes the
 * list without them and says so (1); once the jobs are handed back through kunwind_job_done
 * the tables are loaded byte for byte as before, the generation moved, and the next sync of
 * the list is complete (0) and builds nothing more. A job id not of ours is not taken. */
Test(kunwind, tables_built_on_jobs, .timeout = 60)
{
        struct target_jobs *jobs;
        struct kunwind_stats st;
        struct cfi_table t;
        struct env e;
        int fd = open(LIBC, O_RDONLY);

        env_open(&e, CTXPROF_KU_DEFAULT_ROWS);
        cr_assert_eq(target_jobs_init(&jobs), 0);
        kunwind_use_jobs(e.k, jobs);
        uint64_t gen = kunwind_generation(e.k);
        int ret = kunwind_sync(e.k, getpid(), getuid(), e.pm);
        cr_assert_eq(ret, 1, "tables being built");
        kunwind_get_stats(e.k, &st);
        cr_assert_geq(st.build_jobs, 3, "exe, libc, ld.so on jobs (the vDSO's built here)");
        cr_assert_leq(st.build_jobs, KUNWIND_BUILDS_MAX, "at most KUNWIND_BUILDS_MAX at once");
        /* this test maps more modules than that: the rest are put off and built at a later
         * sync (1 s on) */
        uint64_t deadline = (uint64_t)time(NULL) + 30;
        while (ret == 1 && (uint64_t)time(NULL) < deadline) {
                struct pollfd pf = {.fd = target_jobs_fd(jobs), .events = POLLIN};
                poll(&pf, 1, 100);
                struct timespec now;
                clock_gettime(CLOCK_MONOTONIC, &now);
                target_jobs_collect(jobs, (uint64_t)now.tv_sec * 1000000000ull + now.tv_nsec,
                                    on_job, e.k);
                ret = kunwind_sync(e.k, getpid(), getuid(), e.pm);
        }
        cr_assert_eq(ret, 0, "the list complete in the end");
        kunwind_get_stats(e.k, &st);
        cr_assert_eq(st.builds, st.build_jobs + 1, "every job's table built (and the vDSO's)");
        cr_assert_eq(st.build_errors, 0);
        cr_assert_eq(st.build_abandoned, 0);
        cr_assert_neq(kunwind_generation(e.k), gen);
        uint64_t builds = st.builds;
        cr_assert_eq(kunwind_sync(e.k, getpid(), getuid(), e.pm), 0, "complete now");
        kunwind_get_stats(e.k, &st);
        cr_assert_eq(st.builds, builds, "nothing built again");
        struct ctxprof_ku_map m = libc_entry(&e, (uint32_t)getpid());
        cr_assert_eq(cfi_table_build(fd, &t), 0);
        cr_assert_eq(m.row_count, t.n);
        struct ctxprof_cfi_row r;
        uint32_t key = m.row_start + (uint32_t)t.n / 2;
        cr_assert_eq(bpf_map_lookup_elem(e.rows_fd, &key, &r), 0);
        cr_assert_eq(memcmp(&r, &t.rows[t.n / 2], sizeof(r)), 0);
        cr_assert_eq(kunwind_job_done(e.k, 123456789, TARGET_JOB_FINISHED, NULL), 0,
                     "not one of ours");
        kunwind_forget(e.k, getpid());
        target_jobs_free(jobs);
        cfi_table_free(&t);
        close(fd);
        env_close(&e);
}
