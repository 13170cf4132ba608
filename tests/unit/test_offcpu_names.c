/* SPDX-License-Identifier: MIT */
/*
 * test_offcpu_names.c — the pure parts of off-CPU profiling: the blocking function named
 * from a kernel stack as sched_switch's BPF program takes it (sink/blocked_in.c), the event
 * names off-cpu/wall (engine/sampling_names.c) and the offcpu-min setting
 * (service/config.c).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stddef.h>

#include "engine/sampling_names.h"
#include "service/config.h"
#include "sink/blocked_in.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

/* Stacks as bpf_get_stack returns them at tp_btf/sched_switch on this kernel (leaf first). */
Test(blocked_in, skips_the_tracing_and_scheduler_frames)
{
        const char *nanosleep[] = {"bpf_prog_30e57aea808ec504_ctxprof_offcpu_switch",
                                   "bpf_trace_run4",
                                   "__schedule",
                                   "schedule",
                                   "do_nanosleep",
                                   "hrtimer_nanosleep"};
        const char *futex[] = {"__bpf_trace_sched_switch",
                               "__traceiter_sched_switch",
                               "__schedule",
                               "schedule",
                               "futex_do_wait",
                               "__futex_wait"};
        const char *io[] = {"__schedule", "schedule", "io_schedule", "folio_wait_bit_common"};
        const char *timeout[] = {"schedule", "schedule_timeout", "ep_poll", "do_epoll_wait"};

        cr_assert_str_eq(blocked_in_pick(nanosleep, N(nanosleep)), "do_nanosleep");
        cr_assert_str_eq(blocked_in_pick(futex, N(futex)), "futex_do_wait");
        cr_assert_str_eq(blocked_in_pick(io, N(io)), "folio_wait_bit_common");
        cr_assert_str_eq(blocked_in_pick(timeout, N(timeout)), "ep_poll");
}

Test(blocked_in, nothing_but_the_scheduler_or_an_unknown_frame_is_unnamed)
{
        const char *sched[] = {"__schedule", "schedule"};
        const char *unknown[] = {"__schedule", NULL, "do_nanosleep"};

        cr_assert_null(blocked_in_pick(sched, N(sched)));
        cr_assert_null(blocked_in_pick(unknown, N(unknown)));
        cr_assert_null(blocked_in_pick(NULL, 0));
        cr_assert_not(blocked_in_is_scheduler("anon_pipe_read"));
        cr_assert(blocked_in_is_scheduler("preempt_schedule_common"));
}

Test(offcpu_names, events_and_what_they_open)
{
        cr_assert_eq(sampling_name_parse(SAMPLING_NAMES_EVENT, "off-cpu"), SAMPLER_EV_OFFCPU);
        cr_assert_eq(sampling_name_parse(SAMPLING_NAMES_EVENT, "wall"), SAMPLER_EV_WALL);
        cr_assert_str_eq(sampling_name(SAMPLING_NAMES_EVENT, SAMPLER_EV_WALL), "wall");
        cr_assert_eq(sampling_name_parse(SAMPLING_NAMES_EVENT, "offcpu"), -EINVAL);
        cr_assert(SAMPLER_EV_HAS_OFFCPU(SAMPLER_EV_WALL) && SAMPLER_EV_HAS_PERF(SAMPLER_EV_WALL));
        cr_assert(SAMPLER_EV_HAS_OFFCPU(SAMPLER_EV_OFFCPU));
        cr_assert_not(SAMPLER_EV_HAS_PERF(SAMPLER_EV_OFFCPU));
        cr_assert_not(SAMPLER_EV_HAS_OFFCPU(SAMPLER_EV_CPU_CLOCK));
}

Test(offcpu_names, offcpu_min_setting)
{
        struct daemon_config c;
        uint64_t us = 0;

        config_defaults(&c);
        cr_assert_eq(c.offcpu_min_us, CONFIG_OFFCPU_MIN_DEFAULT_US);
        cr_assert_eq(config_set(&c, "sampling", "offcpu-min", "250us"), 0);
        cr_assert_eq(c.offcpu_min_us, 250);
        cr_assert_eq(config_set(&c, "sampling", "offcpu-min", "1.5ms"), 0);
        cr_assert_eq(c.offcpu_min_us, 1500);
        cr_assert_eq(config_set(&c, "sampling", "event", "wall"), 0);
        cr_assert_eq(c.event, SAMPLER_EV_WALL);
        cr_assert_eq(config_set(&c, "sampling", "offcpu-min", "2h"), -EINVAL);
        cr_assert_eq(config_set(&c, "sampling", "offcpu-min", "-1ms"), -EINVAL);
        cr_assert_eq(config_parse_duration_us("2s", 0, CONFIG_OFFCPU_MIN_MAX_US, &us), 0);
        cr_assert_eq(us, 2000000);
}
