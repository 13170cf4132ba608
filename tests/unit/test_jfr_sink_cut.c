/* SPDX-License-Identifier: MIT */
/*
 * test_jfr_sink_cut.c — the JFR sink cuts a chunk before its period ends once one of its
 * stores nears its bound (sink/jfr_sink.h, jfr_sink_next_cut), instead of dropping samples
 * or stacks past it: 7/8 of the trace table's new stacks, or of the samples a chunk holds,
 * move the cut to 1 s after the chunk began; the cut is counted (chunks_cut_early), nothing
 * is dropped, and the next chunk has its whole period again.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sink/jfr_sink.h"
#include "stack/frame.h"
#include "stack/modules.h"
#include "util/clock.h"

#define NS_PER_S   1000000000ull
#define PERIOD_NS  (60 * NS_PER_S)
#define TABLE      256u
#define MAX_SAMPLE 800u

struct fixture {
        char dir[64], path[96];
        struct modules *mods;
        struct jfr_sink *s;
        struct sample_sink sink;
};

static void open_sink(struct fixture *f, uint32_t table, size_t max_samples)
{
        snprintf(f->dir, sizeof(f->dir), "/tmp/ctxprof-cut.XXXXXX");
        cr_assert_not_null(mkdtemp(f->dir));
        snprintf(f->path, sizeof(f->path), "%s/cut.jfr", f->dir);
        struct jfr_sink_opts o = {.path = f->path,
                                  .chunk_period_ns = PERIOD_NS,
                                  .table_capacity = table,
                                  .max_samples_per_chunk = max_samples,
                                  .one_target = 1,
                                  .info = {.name = "test"}};
        cr_assert_eq(jfr_sink_new(&o, &f->s), 0);
        f->mods = modules_new();
        cr_assert_not_null(f->mods);
        jfr_sink_set_modules(f->s, f->mods);
        f->sink = jfr_sink_as_sink(f->s);
}

/* One sample whose stack is `which` (a distinct one per value). */
static void put(struct fixture *f, uint64_t which)
{
        struct ctxprof_frame fr[2] = {
            {.offset = 0x1000 + which, .module_id = CTXPROF_MODULE_UNKNOWN},
            {.offset = 0x2000,
             .module_id = CTXPROF_MODULE_UNKNOWN,
             .flags = CTXPROF_FRAME_RETADDR}};
        struct decoded_sample ds = {.pid = 42,
                                    .tid = 42,
                                    .time_ns = mono_ns(),
                                    .comm = "t",
                                    .process = "t",
                                    .image = "t",
                                    .frames = fr,
                                    .n_frames = 2};
        cr_assert_eq(f->sink.sample(f->sink.ctx, &ds), 0, "sample %llu refused",
                     (unsigned long long)which);
}

static void close_sink(struct fixture *f, struct jfr_sink_counters *c)
{
        struct jfr_sink_engine_counters ec = {0};

        cr_assert_eq(jfr_sink_finish(f->s, &ec), 0);
        jfr_sink_get_counters(f->s, c);
        jfr_sink_free(f->s);
        modules_free(f->mods);
        unlink(f->path);
        rmdir(f->dir);
}

/* The chunk (begun after start) is cut 1 s after it began, and the next one has its whole
 * period. */
static void cut_moves_early(struct fixture *f, uint64_t start)
{
        struct jfr_sink_engine_counters ec = {0};
        uint64_t cut = jfr_sink_next_cut(f->s);

        cr_assert_leq(cut, mono_ns() + NS_PER_S, "the cut did not move early");
        cr_assert_geq(cut, start + NS_PER_S, "cut sooner than 1 s after the chunk began");
        cr_assert_eq(jfr_sink_tick(f->s, cut, &ec), 1, "not cut when due");
        cr_assert_geq(jfr_sink_next_cut(f->s), mono_ns() + PERIOD_NS - NS_PER_S,
                      "the next chunk does not get its whole period");
}

Test(jfr_sink_cut, new_stacks_near_the_table_bound)
{
        struct fixture f;
        struct jfr_sink_counters c;
        uint64_t start = mono_ns();

        open_sink(&f, TABLE, 0);
        for (uint64_t i = 0; i + 1 < TABLE * 7 / 8; i++)
                put(&f, i);
        cr_assert_geq(jfr_sink_next_cut(f.s), start + PERIOD_NS - NS_PER_S, "cut early too soon");
        put(&f, TABLE); /* the 7/8th: 224 of 256 */
        cut_moves_early(&f, start);
        for (uint64_t i = 0; i < TABLE / 2; i++)
                put(&f, 1000 + i); /* new stacks, in the next chunk's table */
        close_sink(&f, &c);
        cr_assert_eq(c.chunks_cut_early, 1);
        cr_assert_eq(c.chunks_written, 2);
        cr_assert_eq(c.samples_dropped, 0);
        cr_assert_eq(c.traces_dropped, 0);
        cr_assert_eq(c.samples_written, TABLE * 7 / 8 + TABLE / 2);
}

Test(jfr_sink_cut, samples_near_the_chunk_bound)
{
        struct fixture f;
        struct jfr_sink_counters c;
        uint64_t start = mono_ns();

        open_sink(&f, 0, MAX_SAMPLE);
        for (unsigned i = 0; i + 1 < MAX_SAMPLE * 7 / 8; i++)
                put(&f, 0);
        cr_assert_geq(jfr_sink_next_cut(f.s), start + PERIOD_NS - NS_PER_S, "cut early too soon");
        put(&f, 0);
        cut_moves_early(&f, start);
        for (unsigned i = 0; i < MAX_SAMPLE / 2; i++)
                put(&f, 0);
        close_sink(&f, &c);
        cr_assert_eq(c.chunks_cut_early, 1);
        cr_assert_eq(c.samples_dropped, 0);
        cr_assert_eq(c.samples_written, MAX_SAMPLE * 7 / 8 + MAX_SAMPLE / 2);
}
