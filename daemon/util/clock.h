/* SPDX-License-Identifier: MIT */
/*
 * util/clock.h — the daemon's clocks as plain integers: CLOCK_MONOTONIC in nanoseconds and
 * milliseconds (timeouts, periods, rate limits, sample times) and CLOCK_REALTIME in
 * nanoseconds (wall time written into files). Header only; includes no daemon header.
 *
 * Never fails: clock_gettime cannot fail for these two clocks with a valid pointer.
 */
#ifndef CTXPROF_UTIL_CLOCK_H
#define CTXPROF_UTIL_CLOCK_H

#include <stdint.h>
#include <time.h>

#define NS_PER_SEC 1000000000ull
#define NS_PER_MS  1000000ull
#define NS_PER_US  1000ull
#define MS_PER_SEC 1000ull

static inline uint64_t clock_ns(clockid_t id)
{
        struct timespec ts;

        clock_gettime(id, &ts);
        return (uint64_t)ts.tv_sec * NS_PER_SEC + (uint64_t)ts.tv_nsec;
}

/* A timespec (a file's mtime, ctime) in nanoseconds. */
static inline int64_t timespec_ns(const struct timespec *t)
{
        return (int64_t)t->tv_sec * (int64_t)NS_PER_SEC + t->tv_nsec;
}

/* CLOCK_MONOTONIC, ns: what bpf_ktime_get_ns and the sample records use. */
static inline uint64_t mono_ns(void)
{
        return clock_ns(CLOCK_MONOTONIC);
}

/* CLOCK_MONOTONIC, ms (truncated). */
static inline uint64_t mono_ms(void)
{
        return mono_ns() / NS_PER_MS;
}

/* CLOCK_REALTIME, ns since the epoch. */
static inline uint64_t wall_ns(void)
{
        return clock_ns(CLOCK_REALTIME);
}

#endif
