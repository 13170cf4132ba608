/* SPDX-License-Identifier: MIT */
/*
 * task_events.h — per-thread sampling events (`record`: a PID list or a command), so that
 * processes that are not targets take no sampling interrupt at any rate: each thread of a
 * target when it is added gets a perf event of its own (pid = tid, cpu = -1) that the threads
 * it creates inherit (and, following children, the processes it forks), with the sampling
 * program attached through a BPF link. The daemon's whole-host and selector modes keep one
 * event per CPU (sampler_bpf.c).
 *
 * Semantics as `perf record -p`: the threads are listed once when the target is added; a
 * thread created during that listing by one whose event is not open yet is not sampled. No
 * thread ever has two events. Events are closed only when sampling stops: a target's child
 * keeps sampling through its parent's event after the parent exits.
 *
 * Owns the link descriptors (one per listed thread). Driven by the sampler's thread only.
 * Never prints; errors are negative errno.
 */
#ifndef CTXPROF_TASK_EVENTS_H
#define CTXPROF_TASK_EVENTS_H

#include <linux/perf_event.h>
#include <sys/types.h>

struct task_events;

/* A set for the program prog_fd and the sampling attributes attr (copied; inherit is set
 * here). follow_children: forked processes inherit too, else only new threads. NULL on
 * -ENOMEM. */
struct task_events *task_events_new(int prog_fd, const struct perf_event_attr *attr,
                                    int follow_children);
/* Opens and attaches the events of pid's threads. 0; -ESRCH when the process is gone (or
 * none of its threads could be opened because they exited); -EMFILE and other errors of
 * perf_event_open / BPF_LINK_CREATE as they are. */
int task_events_add(struct task_events *te, pid_t pid);
/* Events open now. */
unsigned task_events_count(const struct task_events *te);
/* Checks that attr opens as a per-thread event on the calling thread (rate, PMU, permission):
 * 0 or the negative errno perf_event_open gave. */
int task_events_probe(const struct perf_event_attr *attr);
/* Closes every event: sampling of every target stops. NULL is fine. */
void task_events_free(struct task_events *te);

#endif
