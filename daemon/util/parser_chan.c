/* SPDX-License-Identifier: MIT */
/*
 * parser_chan.c — one framed message over a SOCK_SEQPACKET socket (parser_chan.h). Must never
 * print, block past the caller's timeout, or keep a descriptor of a refused message.
 */
#include "util/parser_chan.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

int parser_chan_send(int sock, struct parser_head *h, const void *payload, uint32_t len, int fd)
{
        if (len > PARSER_PAYLOAD_MAX)
                return -EMSGSIZE;
        h->magic = PARSER_MAGIC;
        h->len = len;
        h->nfds = fd >= 0;
        struct iovec iov[2] = {{h, sizeof(*h)}, {(void *)payload, len}};
        union {
                char buf[CMSG_SPACE(sizeof(int))];
                struct cmsghdr align;
        } u;
        struct msghdr msg = {.msg_iov = iov, .msg_iovlen = len ? 2 : 1};
        if (fd >= 0) {
                memset(&u, 0, sizeof(u));
                msg.msg_control = u.buf;
                msg.msg_controllen = sizeof(u.buf);
                struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
                c->cmsg_level = SOL_SOCKET;
                c->cmsg_type = SCM_RIGHTS;
                c->cmsg_len = CMSG_LEN(sizeof(int));
                memcpy(CMSG_DATA(c), &fd, sizeof(int));
        }
        ssize_t n;
        do
                n = sendmsg(sock, &msg, MSG_NOSIGNAL);
        while (n < 0 && errno == EINTR);
        if (n < 0)
                return errno == ECONNRESET ? -EPIPE : -errno;
        return (size_t)n == sizeof(*h) + len ? 0 : -EPROTO;
}

/* The descriptors a message carried: the first into *fd, any other closed. Returns how many. */
static int take_fds(struct msghdr *msg, int *fd)
{
        int count = 0;
        for (struct cmsghdr *c = CMSG_FIRSTHDR(msg); c; c = CMSG_NXTHDR(msg, c)) {
                if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
                        continue;
                size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
                for (size_t i = 0; i < n; i++) {
                        int f;
                        memcpy(&f, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
                        if (*fd < 0)
                                *fd = f;
                        else
                                close(f);
                        count++;
                }
        }
        return count;
}

static int wait_readable(int sock, int timeout_ms)
{
        struct pollfd p = {.fd = sock, .events = POLLIN};
        int r;
        do
                r = poll(&p, 1, timeout_ms);
        while (r < 0 && errno == EINTR);
        if (r < 0)
                return -errno;
        return r == 0 ? -ETIMEDOUT : 0;
}

int parser_chan_recv(int sock, struct parser_head *h, void *buf, uint32_t cap, int *fd,
                     int timeout_ms)
{
        *fd = -1;
        int err = wait_readable(sock, timeout_ms);
        if (err)
                return err;
        struct iovec iov[2] = {{h, sizeof(*h)}, {buf, cap}};
        union {
                char buf[CMSG_SPACE(sizeof(int) * 4)];
                struct cmsghdr align;
        } u;
        struct msghdr msg = {
            .msg_iov = iov, .msg_iovlen = 2, .msg_control = u.buf, .msg_controllen = sizeof(u.buf)};
        ssize_t n;
        do
                n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
        while (n < 0 && errno == EINTR);
        if (n < 0)
                return errno == ECONNRESET ? -EPIPE : -errno;
        if (n == 0)
                return -EPIPE;
        int nfds = take_fds(&msg, fd);
        if ((msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) || (size_t)n < sizeof(*h) ||
            h->magic != PARSER_MAGIC || h->len > cap || (size_t)n != sizeof(*h) + h->len ||
            h->nfds != nfds || nfds > 1) {
                if (*fd >= 0)
                        close(*fd);
                *fd = -1;
                return -EPROTO;
        }
        return 0;
}
