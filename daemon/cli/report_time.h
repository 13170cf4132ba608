/* SPDX-License-Identifier: MIT */
/*
 * report_time.h — the time section of `ctxprof report`: per label value and per span, the
 * on-CPU time (jdk.ExecutionSample count x the sampling period), the off-CPU time by
 * blocking kernel function (ctxprof.OffCPU: duration minus run-queue delay, by blockedIn)
 * and the run-queue delay. Owns its tables; prints only to the FILE it is given.
 * One thread.
 */
#ifndef CTXPROF_REPORT_TIME_H
#define CTXPROF_REPORT_TIME_H

#include <stdint.h>
#include <stdio.h>

struct report_time;

struct report_time *report_time_new(void);
void report_time_free(struct report_time *);
/* The groups one event counts in: "KEY=VALUE" per label and "span=HEX" (NULL-terminated
 * strings, at most REPORT_TIME_MAX_GROUPS). */
#define REPORT_TIME_MAX_GROUPS 18
/* One CPU sample of these groups. 0 or -ENOMEM. */
int report_time_cpu(struct report_time *, const char *const *groups, unsigned n);
/* One off-CPU interval of these groups; blocked_in NULL = unknown. 0 or -ENOMEM. */
int report_time_offcpu(struct report_time *, const char *const *groups, unsigned n,
                       const char *blocked_in, uint64_t duration_ns, uint64_t runq_ns);
/* 1 when an off-CPU interval was added (the section is printed only then). */
int report_time_has_offcpu(const struct report_time *);
/* Print the section: groups by total time, at most top groups and top functions each;
 * sample_period_ns converts CPU samples to time (0 = unknown: counts are printed). */
void report_time_print(const struct report_time *, FILE *out, int top, uint64_t sample_period_ns);

#endif
