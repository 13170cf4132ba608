/* SPDX-License-Identifier: MIT */
/*
 * util/event_loop.h — the one event loop `record` and the daemon run on: epoll over file
 * descriptors with a callback each (a ring's epoll fd, a signalfd, a socket or eventfd another
 * module hands over) and a table of deadlines (CLOCK_MONOTONIC ns) with a callback each. A
 * wait sleeps exactly until the earliest deadline or an fd event: nothing polls on a period.
 *
 * A deadline fires once: its callback sets it again (event_loop_set) if it is periodic. After
 * every wake the `after` callback (optional) runs, so that an owner can move the deadlines
 * that follow from state the callbacks changed (a sampler's next drain, a chunk's cut).
 *
 * Knows nothing of what it serves; never prints; errors are negative errno.
 * Thread safety: one thread owns a loop (every call, every callback on it).
 */
#ifndef CTXPROF_UTIL_EVENT_LOOP_H
#define CTXPROF_UTIL_EVENT_LOOP_H

#include <signal.h>
#include <stdint.h>

#define EVENT_LOOP_FDS_MAX       16
#define EVENT_LOOP_DEADLINES_MAX 16
#define EVENT_LOOP_NEVER         UINT64_MAX /* a deadline that is not set */

struct event_loop;

/* An fd is ready (events: EPOLLIN ...). */
typedef void (*event_loop_fd_fn)(void *ctx, int fd, uint32_t events);
/* A deadline is due; now is CLOCK_MONOTONIC ns. */
typedef void (*event_loop_due_fn)(void *ctx, uint64_t now_ns);
/* Signals read from the loop's signalfd, one call each. */
typedef void (*event_loop_signal_fn)(void *ctx, int sig);

int event_loop_new(struct event_loop **out);
/* Closes the signalfd (the signals stay blocked); never the fds it was given. NULL is fine. */
void event_loop_free(struct event_loop *);

/* Watch fd for events (EPOLLIN, ...): fn runs on the loop's thread while it is ready (level
 * triggered). -ENOSPC past EVENT_LOOP_FDS_MAX, or epoll_ctl's -errno. */
int event_loop_add_fd(struct event_loop *, int fd, uint32_t events, event_loop_fd_fn fn, void *ctx);
/* event_loop_add_fd for each of n fds, with the same callback. 0 or the first -errno. */
int event_loop_add_fds(struct event_loop *, const int *fds, unsigned n, uint32_t events,
                       event_loop_fd_fn fn, void *ctx);
/* Stop watching fd (before it is closed). -ENOENT if it is not watched. */
int event_loop_del_fd(struct event_loop *, int fd);

/* Block the signals of set in the calling thread (call it before creating threads: they
 * inherit the mask) and deliver them through a signalfd: fn runs on the loop's thread for
 * each. One set per loop. 0 or -errno. */
int event_loop_add_signals(struct event_loop *, const sigset_t *set, event_loop_signal_fn fn,
                           void *ctx);

/* A deadline slot (not set: EVENT_LOOP_NEVER); its id for event_loop_set, or -ENOSPC. */
int event_loop_add_deadline(struct event_loop *, event_loop_due_fn fn, void *ctx);
/* Fire deadline id at due_ns (CLOCK_MONOTONIC; in the past = at the next wake), or never. */
void event_loop_set(struct event_loop *, int id, uint64_t due_ns);
/* When deadline id fires next (EVENT_LOOP_NEVER: not set). */
uint64_t event_loop_due(const struct event_loop *, int id);
/* Runs after every wake, once the due callbacks ran (NULL: none). */
void event_loop_set_after(struct event_loop *, event_loop_due_fn fn, void *ctx);

/* Sleep until the earliest deadline or an fd event (or a signal handler's EINTR), then run
 * the callbacks of the ready fds and of every due deadline, then `after`. 0 or -errno. */
int event_loop_run_once(struct event_loop *);
/* Times a wait returned (for tests and statistics). */
uint64_t event_loop_wakeups(const struct event_loop *);

#endif
