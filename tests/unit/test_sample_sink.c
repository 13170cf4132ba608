/* SPDX-License-Identifier: MIT */
/*
 * test_sample_sink.c — engine/sample_sink.h's forwarder: it reaches the sink it points to as
 * that sink is at each sample (a sink set or replaced after the sampler was made is used),
 * passes the sink's answer back, and a sample with no sink behind it comes back -ENODEV, so
 * that the sampler counts it as not written.
 */
#include <criterion/criterion.h>
#include <errno.h>

#include "engine/sample_sink.h"

struct seen {
        int calls;
        const struct decoded_sample *last;
        int answer;
};

static int record(void *ctx, const struct decoded_sample *s)
{
        struct seen *w = ctx;

        w->calls++;
        w->last = s;
        return w->answer;
}

Test(sample_sink, forwards_to_the_current_sink)
{
        struct decoded_sample ds = {.pid = 42};
        struct seen a = {0}, b = {.answer = -EIO};
        struct sample_sink cur = {.ctx = &a, .sample = record};
        struct sample_sink fwd = {.ctx = &cur, .sample = sample_sink_forward};

        cr_assert_eq(fwd.sample(fwd.ctx, &ds), 0);
        cr_assert_eq(a.calls, 1);
        cr_assert_eq(a.last, &ds);

        cur = (struct sample_sink){.ctx = &b, .sample = record}; /* output replaced */
        cr_assert_eq(fwd.sample(fwd.ctx, &ds), -EIO, "the sink's error is passed back");
        cr_assert_eq(a.calls, 1);
        cr_assert_eq(b.calls, 1);
}

Test(sample_sink, no_sink_is_an_error_not_a_write)
{
        struct decoded_sample ds = {.pid = 42};
        struct sample_sink cur = {0};

        cr_assert_eq(sample_sink_forward(&cur, &ds), -ENODEV);
}
