/* SPDX-License-Identifier: MIT */
/*
 * blocked_in.c — naming the blocking kernel function of an off-CPU interval (see
 * blocked_in.h). Owns the list of scheduler and tracing function prefixes; must never
 * look at user frames or guess from anything but the names.
 */
#include <string.h>

#include "sink/blocked_in.h"

/* Frames above the blocker in a stack taken at sched_switch: the tracepoint's own frames
 * (BPF trampolines, __traceiter_*), then the scheduler core and its wrappers. */
static const char *const scheduler_prefixes[] = {
    "__schedule",  "schedule",      "io_schedule",  "preempt_schedule", "__cond_resched",
    "__bpf_trace", "bpf_trace_run", "bpf_",         "__traceiter_",     "trace_",
    "__traceiter", "perf_trace_",   "__sched_text",
};

int blocked_in_is_scheduler(const char *function)
{
        size_t i;

        if (!function)
                return 0;
        for (i = 0; i < sizeof(scheduler_prefixes) / sizeof(scheduler_prefixes[0]); i++)
                if (!strncmp(function, scheduler_prefixes[i], strlen(scheduler_prefixes[i])))
                        return 1;
        return 0;
}

const char *blocked_in_pick(const char *const *kernel_functions, size_t n)
{
        size_t i;

        for (i = 0; i < n; i++) {
                if (!kernel_functions[i])
                        return NULL;
                if (!blocked_in_is_scheduler(kernel_functions[i]))
                        return kernel_functions[i];
        }
        return NULL;
}
