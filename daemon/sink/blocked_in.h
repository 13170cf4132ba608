/* SPDX-License-Identifier: MIT */
/*
 * blocked_in.h — where an off-CPU interval blocked, named from its symbolized kernel stack:
 * the first kernel frame, leaf first, that is not the scheduler or the tracing machinery
 * that took the stack (__schedule, schedule*, io_schedule*, bpf/trace frames), e.g.
 * futex_wait_queue, do_nanosleep, pipe_read, ep_poll. Pure string work on names; never
 * prints, never allocates.
 */
#ifndef CTXPROF_BLOCKED_IN_H
#define CTXPROF_BLOCKED_IN_H

#include <stddef.h>

/* 1 when a kernel function is part of switching out (skipped when naming the blocker). */
int blocked_in_is_scheduler(const char *function);

/* The blocking function among kernel frame names (leaf first, n of them; NULL entries are
 * unknown frames and end the search), or NULL when every frame is the scheduler's. */
const char *blocked_in_pick(const char *const *kernel_functions, size_t n);

#endif
