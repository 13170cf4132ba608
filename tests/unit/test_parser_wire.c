/* SPDX-License-Identifier: MIT */
/*
 * test_parser_wire.c — the parser helper's answers are hostile: a symbolization answer
 * (stack/sym_wire.h) round-trips, names are cut at SYM_WIRE_NAME_MAX, and every malformed
 * answer (too many entries, lengths past the payload or short of it, a length without its
 * flag) is refused; a framed message (util/parser_chan.h) with its descriptor round-trips
 * over a real SOCK_SEQPACKET socketpair, and one with a bad magic, a head whose len is not
 * the datagram's, or two descriptors is refused with its descriptors closed.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "stack/sym_wire.h"
#include "util/parser_chan.h"

static union {
        char buf[SYM_RESP_MAX];
        uint64_t align;
} resp;
static struct sym_wire_names names;

Test(sym_wire, round_trip_and_cut)
{
        static char longname[SYM_WIRE_NAME_MAX + 100];
        memset(longname, 'x', sizeof(longname) - 1);
        struct elf_sym_entry e[3] = {
            {.function = "inner", .file = "a.c", .line = 7, .inlined = 1},
            {.function = longname, .file = NULL, .line = -1},
            {.function = NULL, .file = "b.c", .line = -1000},
        };
        uint32_t len = sym_wire_encode(e, 3, 1, resp.buf, sizeof(resp.buf));
        cr_assert_eq(sym_wire_decode(resp.buf, len, &names), 0);
        cr_assert_eq(names.n, 3);
        cr_assert_eq(names.dwarf_refused, 1);
        cr_assert_str_eq(names.e[0].function, "inner");
        cr_assert_str_eq(names.e[0].file, "a.c");
        cr_assert_eq(names.e[0].line, 7);
        cr_assert_eq(names.e[0].inlined, 1);
        cr_assert_eq(strlen(names.e[1].function), SYM_WIRE_NAME_MAX);
        cr_assert_null(names.e[1].file);
        cr_assert_null(names.e[2].function);
        cr_assert_eq(names.e[2].line, -1, "a line below -1 is sent as unknown");
}

static uint32_t one_entry(void)
{
        struct elf_sym_entry e = {.function = "f", .file = "g.c", .line = 1};
        return sym_wire_encode(&e, 1, 0, resp.buf, sizeof(resp.buf));
}

Test(sym_wire, malformed_answers_refused)
{
        uint32_t len = one_entry();
        cr_assert_eq(sym_wire_decode(resp.buf, len, &names), 0);
        cr_assert_eq(sym_wire_decode(resp.buf, len - 1, &names), -EPROTO, "short payload");
        cr_assert_eq(sym_wire_decode(resp.buf, len + 1, &names), -EPROTO, "trailing bytes");
        cr_assert_eq(sym_wire_decode(resp.buf, 4, &names), -EPROTO, "no head");

        struct sym_resp_head h = {.n = SYM_WIRE_MAX_ENTRIES + 1};
        memcpy(resp.buf, &h, sizeof(h));
        cr_assert_eq(sym_wire_decode(resp.buf, sizeof(resp.buf), &names), -EPROTO,
                     "too many entries");

        struct sym_wire_entry *w = (struct sym_wire_entry *)(resp.buf + sizeof(h));
        len = one_entry();
        w->function_len = 60000; /* past the payload and past SYM_WIRE_NAME_MAX */
        cr_assert_eq(sym_wire_decode(resp.buf, len, &names), -EPROTO, "length past the end");
        len = one_entry();
        w->has_file = 0; /* file_len without its flag */
        cr_assert_eq(sym_wire_decode(resp.buf, len, &names), -EPROTO, "length without flag");
        len = one_entry();
        w->inlined = 7;
        cr_assert_eq(sym_wire_decode(resp.buf, len, &names), -EPROTO, "inlined not 0/1");
}

static int open_fds(void)
{
        int n = 0;
        for (int fd = 0; fd < 1024; fd++)
                n += fcntl(fd, F_GETFD) >= 0;
        return n;
}

Test(parser_chan, round_trip_with_descriptor)
{
        int sv[2];
        cr_assert_eq(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
        int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
        struct parser_head h = {.type = PARSER_SYM, .seq = 5};
        cr_assert_eq(parser_chan_send(sv[0], &h, "abc", 3, devnull), 0);
        struct parser_head r;
        char buf[8];
        int fd = -1;
        cr_assert_eq(parser_chan_recv(sv[1], &r, buf, sizeof(buf), &fd, 1000), 0);
        cr_assert_eq(r.seq, 5);
        cr_assert_eq(r.len, 3);
        cr_assert_geq(fd, 0);
        close(fd);
        cr_assert_eq(parser_chan_recv(sv[1], &r, buf, sizeof(buf), &fd, 10), -ETIMEDOUT);
        cr_assert_eq(parser_chan_send(sv[0], &h, "too long for buf", 16, -1), 0);
        cr_assert_eq(parser_chan_recv(sv[1], &r, buf, sizeof(buf), &fd, 1000), -EPROTO,
                     "a payload larger than the buffer");
        close(sv[0]);
        cr_assert_eq(parser_chan_recv(sv[1], &r, buf, sizeof(buf), &fd, 1000), -EPIPE);
        close(sv[1]);
        close(devnull);
}

/* A raw datagram: head h, len bytes of payload, nfds copies of fd. */
static void send_raw(int sock, const struct parser_head *h, size_t len, int fd, int nfds)
{
        char payload[16] = {0};
        struct iovec iov[2] = {{(void *)h, sizeof(*h)}, {payload, len}};
        union {
                char buf[CMSG_SPACE(2 * sizeof(int))];
                struct cmsghdr align;
        } u;
        memset(&u, 0, sizeof(u));
        struct msghdr msg = {.msg_iov = iov, .msg_iovlen = 2};
        if (nfds) {
                int fds[2] = {fd, fd};
                msg.msg_control = u.buf;
                msg.msg_controllen = CMSG_SPACE(nfds * sizeof(int));
                struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
                c->cmsg_level = SOL_SOCKET;
                c->cmsg_type = SCM_RIGHTS;
                c->cmsg_len = CMSG_LEN(nfds * sizeof(int));
                memcpy(CMSG_DATA(c), fds, nfds * sizeof(int));
        }
        cr_assert_eq(sendmsg(sock, &msg, 0), (ssize_t)(sizeof(*h) + len));
}

Test(parser_chan, malformed_frames_refused_descriptors_closed)
{
        int sv[2];
        cr_assert_eq(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
        int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
        int before = open_fds();
        struct parser_head r, h = {.magic = PARSER_MAGIC, .type = PARSER_SYM, .len = 4};
        char buf[16];
        int fd;

        struct parser_head bad = h;
        bad.magic = 1;
        send_raw(sv[0], &bad, 4, devnull, 1);
        cr_assert_eq(parser_chan_recv(sv[1], &r, buf, sizeof(buf), &fd, 1000), -EPROTO);
        cr_assert_eq(fd, -1);
        send_raw(sv[0], &h, 8, -1, 0); /* head says 4, datagram carries 8 */
        cr_assert_eq(parser_chan_recv(sv[1], &r, buf, sizeof(buf), &fd, 1000), -EPROTO);
        h.nfds = 2;
        send_raw(sv[0], &h, 4, devnull, 2);
        cr_assert_eq(parser_chan_recv(sv[1], &r, buf, sizeof(buf), &fd, 1000), -EPROTO);
        h.nfds = 0; /* a descriptor the head does not announce */
        send_raw(sv[0], &h, 4, devnull, 1);
        cr_assert_eq(parser_chan_recv(sv[1], &r, buf, sizeof(buf), &fd, 1000), -EPROTO);
        cr_assert_eq(open_fds(), before, "every descriptor of a refused message is closed");
        close(sv[0]);
        close(sv[1]);
        close(devnull);
}
