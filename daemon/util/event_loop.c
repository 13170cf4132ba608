/* SPDX-License-Identifier: MIT */
/*
 * util/event_loop.c — epoll, a signalfd and a deadline table (see event_loop.h). Owns the
 * epoll and signal fds; never closes an fd it was given; never sleeps longer or shorter than
 * the earliest deadline (rounded up to the millisecond epoll_wait counts in).
 */
#include "util/event_loop.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "util/clock.h"

struct loop_fd {
        int fd; /* -1: free slot */
        event_loop_fd_fn fn;
        void *ctx;
};

struct loop_deadline {
        uint64_t due_ns; /* EVENT_LOOP_NEVER: not set */
        event_loop_due_fn fn;
        void *ctx;
};

struct event_loop {
        int epfd;
        int sigfd; /* -1: no signals */
        event_loop_signal_fn sig_fn;
        void *sig_ctx;
        struct loop_fd fds[EVENT_LOOP_FDS_MAX];
        struct loop_deadline dl[EVENT_LOOP_DEADLINES_MAX];
        int ndl;
        event_loop_due_fn after;
        void *after_ctx;
        uint64_t wakeups;
};

int event_loop_new(struct event_loop **out)
{
        struct event_loop *l = calloc(1, sizeof(*l));
        int i;

        *out = NULL;
        if (!l)
                return -ENOMEM;
        l->epfd = epoll_create1(EPOLL_CLOEXEC);
        if (l->epfd < 0) {
                int err = -errno;

                free(l);
                return err;
        }
        l->sigfd = -1;
        for (i = 0; i < EVENT_LOOP_FDS_MAX; i++)
                l->fds[i].fd = -1;
        *out = l;
        return 0;
}

void event_loop_free(struct event_loop *l)
{
        if (!l)
                return;
        if (l->sigfd >= 0)
                close(l->sigfd);
        close(l->epfd);
        free(l);
}

static struct loop_fd *find_fd(struct event_loop *l, int fd)
{
        for (int i = 0; i < EVENT_LOOP_FDS_MAX; i++)
                if (l->fds[i].fd == fd)
                        return &l->fds[i];
        return NULL;
}

int event_loop_add_fd(struct event_loop *l, int fd, uint32_t events, event_loop_fd_fn fn, void *ctx)
{
        struct loop_fd *f = find_fd(l, -1);
        struct epoll_event ev = {.events = events};

        if (fd < 0)
                return -EBADF;
        if (!f)
                return -ENOSPC;
        ev.data.ptr = f;
        if (epoll_ctl(l->epfd, EPOLL_CTL_ADD, fd, &ev))
                return -errno;
        *f = (struct loop_fd){.fd = fd, .fn = fn, .ctx = ctx};
        return 0;
}

int event_loop_add_fds(struct event_loop *l, const int *fds, unsigned n, uint32_t events,
                       event_loop_fd_fn fn, void *ctx)
{
        for (unsigned i = 0; i < n; i++) {
                int err = event_loop_add_fd(l, fds[i], events, fn, ctx);

                if (err)
                        return err;
        }
        return 0;
}

int event_loop_del_fd(struct event_loop *l, int fd)
{
        struct loop_fd *f = fd >= 0 ? find_fd(l, fd) : NULL;

        if (!f)
                return -ENOENT;
        epoll_ctl(l->epfd, EPOLL_CTL_DEL, fd, NULL);
        f->fd = -1;
        return 0;
}

/* The signalfd is readable: one callback per queued signal. */
static void read_signals(void *ctx, int fd, uint32_t events)
{
        struct event_loop *l = ctx;
        struct signalfd_siginfo si;

        (void)events;
        while (read(fd, &si, sizeof(si)) == (ssize_t)sizeof(si))
                l->sig_fn(l->sig_ctx, (int)si.ssi_signo);
}

int event_loop_add_signals(struct event_loop *l, const sigset_t *set, event_loop_signal_fn fn,
                           void *ctx)
{
        int err;

        if (l->sigfd >= 0)
                return -EBUSY;
        err = pthread_sigmask(SIG_BLOCK, set, NULL);
        if (err)
                return -err;
        l->sigfd = signalfd(-1, set, SFD_NONBLOCK | SFD_CLOEXEC);
        if (l->sigfd < 0)
                return -errno;
        l->sig_fn = fn;
        l->sig_ctx = ctx;
        err = event_loop_add_fd(l, l->sigfd, EPOLLIN, read_signals, l);
        if (err) {
                close(l->sigfd);
                l->sigfd = -1;
        }
        return err;
}

int event_loop_add_deadline(struct event_loop *l, event_loop_due_fn fn, void *ctx)
{
        if (l->ndl == EVENT_LOOP_DEADLINES_MAX)
                return -ENOSPC;
        l->dl[l->ndl] = (struct loop_deadline){.due_ns = EVENT_LOOP_NEVER, .fn = fn, .ctx = ctx};
        return l->ndl++;
}

void event_loop_set(struct event_loop *l, int id, uint64_t due_ns)
{
        if (id >= 0 && id < l->ndl)
                l->dl[id].due_ns = due_ns;
}

uint64_t event_loop_due(const struct event_loop *l, int id)
{
        return id >= 0 && id < l->ndl ? l->dl[id].due_ns : EVENT_LOOP_NEVER;
}

void event_loop_set_after(struct event_loop *l, event_loop_due_fn fn, void *ctx)
{
        l->after = fn;
        l->after_ctx = ctx;
}

/* epoll_wait's timeout until the earliest deadline: -1 (none), else whole ms rounded up, so
 * that a wait never ends just before a deadline and spins. */
static int wait_ms(const struct event_loop *l, uint64_t now)
{
        uint64_t first = EVENT_LOOP_NEVER, ms;

        for (int i = 0; i < l->ndl; i++)
                if (l->dl[i].due_ns < first)
                        first = l->dl[i].due_ns;
        if (first == EVENT_LOOP_NEVER)
                return -1;
        if (first <= now)
                return 0;
        ms = (first - now + NS_PER_MS - 1) / NS_PER_MS;
        return ms > INT_MAX ? INT_MAX : (int)ms;
}

int event_loop_run_once(struct event_loop *l)
{
        struct epoll_event ev[EVENT_LOOP_FDS_MAX];
        uint64_t now = mono_ns();
        int n, i;

        n = epoll_wait(l->epfd, ev, EVENT_LOOP_FDS_MAX, wait_ms(l, now));
        l->wakeups++;
        if (n < 0 && errno != EINTR)
                return -errno;
        for (i = 0; i < n; i++) {
                struct loop_fd *f = ev[i].data.ptr;

                if (f->fd >= 0) /* not removed by an earlier callback of this wake */
                        f->fn(f->ctx, f->fd, ev[i].events);
        }
        now = mono_ns();
        for (i = 0; i < l->ndl; i++) {
                if (l->dl[i].due_ns > now)
                        continue;
                l->dl[i].due_ns = EVENT_LOOP_NEVER; /* the callback sets it again */
                l->dl[i].fn(l->dl[i].ctx, now);
        }
        if (l->after)
                l->after(l->after_ctx, mono_ns());
        return 0;
}

uint64_t event_loop_wakeups(const struct event_loop *l)
{
        return l->wakeups;
}
