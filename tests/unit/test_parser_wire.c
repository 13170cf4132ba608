/* SPDX-License-Identifier: MIT */
/*
 * test_parser_wire.c — the parser helper's answers are hostile: a symbolization answer
 * (stack/sym_wire.h) round-trips, names are cut at SYM_WIRE_NAME_MAX, and every malformed
 * answer (too many entries, lengths past the payload or short of it, a length without its
 * flag) is refused; a framed message (util/parser_chan.h) with its descriptor round-trips
 * over a real SOCK_SEQPACKET socketpair, and one with a bad magic, a head whose len is not
 * the datagram's, or two descriptors is refused with its descriptors closed. A process-context
 * answer (engine/pctx_wire.h) round-trips with its NULL key slots, service and counters, and
 * one the in-process decode could not have produced (too many keys, a key that is not a label
 * key, a NUL inside a string, a service index that is not service.name, bytes left over) is
 * refused with nothing kept. A thread-local-variable request (tls/tls_wire.h) carries its
 * names (one too long is refused before sending; one without its NUL is refused by the
 * helper), and its answer (a Go program's layout included) round-trips; one with a count,
 * flag or relocation kind out of range, a size not the struct's, an error the scan cannot
 * give, a Go layout source out of range or offsets without a layout is refused.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "engine/pctx_wire.h"
#include "stack/sym_wire.h"
#include "tls/tls_wire.h"
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

static union {
        char buf[PCTX_RESP_MAX];
        uint64_t align;
} presp;

/* A decoded context with keys {"http.route", NULL, "tier"} and resource service.name=svc,
 * zone=eu: its answer's length. */
static uint32_t pctx_answer(void)
{
        char *keys[] = {"http.route", NULL, "tier"};
        char *rk[] = {"zone", "service.name"}, *rv[] = {"eu", "svc"};
        struct otel_pctx pc = {.keys = keys,
                               .n_keys = 3,
                               .res_keys = rk,
                               .res_values = rv,
                               .n_res = 2,
                               .service_name = rv[1]};
        struct otel_pctx_stats st = {.bad_keys = 1, .bad_schema = 0, .too_deep = 0};
        return pctx_wire_encode(0, &pc, &st, presp.buf, sizeof(presp.buf));
}

Test(pctx_wire, round_trip)
{
        struct otel_pctx pc;
        struct otel_pctx_stats st = {0};
        uint32_t len = pctx_answer();
        cr_assert_gt(len, sizeof(struct pctx_resp_head));
        cr_assert_eq(pctx_wire_decode(presp.buf, len, &pc, &st), 0);
        cr_assert_eq(pc.n_keys, 3);
        cr_assert_str_eq(pc.keys[0], "http.route");
        cr_assert_null(pc.keys[1]);
        cr_assert_str_eq(pc.keys[2], "tier");
        cr_assert_eq(pc.n_res, 2);
        cr_assert_str_eq(pc.res_keys[0], "zone");
        cr_assert_str_eq(pc.res_values[0], "eu");
        cr_assert_str_eq(pc.service_name, "svc");
        cr_assert_eq(pc.service_name, pc.res_values[1]);
        cr_assert_eq(st.bad_keys, 1);
        otel_pctx_clear(&pc);

        struct otel_pctx none = {0};
        struct otel_pctx_stats deep = {.too_deep = 1, .decode_errors = 1};
        len = pctx_wire_encode(-EBADMSG, &none, &deep, presp.buf, sizeof(presp.buf));
        memset(&st, 0, sizeof(st));
        cr_assert_eq(pctx_wire_decode(presp.buf, len, &pc, &st), -EBADMSG);
        cr_assert_eq(st.too_deep, 1);
        cr_assert_eq(st.decode_errors, 1);
        cr_assert_eq(pc.n_keys + pc.n_res, 0);
}

/* The answer with its head changed by f, or a byte at off set to b (off < 0: none). */
static int pctx_altered(void (*f)(struct pctx_resp_head *), long off, char b, uint32_t len)
{
        struct pctx_resp_head h;
        struct otel_pctx pc;
        struct otel_pctx_stats st = {0};
        pctx_answer();
        memcpy(&h, presp.buf, sizeof(h));
        if (f)
                f(&h);
        memcpy(presp.buf, &h, sizeof(h));
        if (off >= 0)
                presp.buf[off] = b;
        int err = pctx_wire_decode(presp.buf, len, &pc, &st);
        cr_assert(err || pc.n_keys, "decoded");
        cr_assert(!err || (!pc.keys && !pc.res_keys && !pc.n_keys && !pc.n_res),
                  "a refused answer keeps nothing");
        if (!err)
                otel_pctx_clear(&pc);
        return err;
}

static void many_keys(struct pctx_resp_head *h)
{
        h->n_keys = OTEL_MAX_KEYS + 1;
}
static void one_key_less(struct pctx_resp_head *h)
{
        h->n_keys = 2;
}
static void service_zone(struct pctx_resp_head *h)
{
        h->service = 0;
}
static void service_past(struct pctx_resp_head *h)
{
        h->service = 2;
}
static void err_with_keys(struct pctx_resp_head *h)
{
        h->err = -EBADMSG;
}
static void odd_err(struct pctx_resp_head *h)
{
        h->err = -EPERM;
}
static void deep_2(struct pctx_resp_head *h)
{
        h->too_deep = 2;
}

Test(pctx_wire, malformed_answers_refused)
{
        uint32_t len = pctx_answer();
        size_t key0 = sizeof(struct pctx_resp_head) + 2; /* first byte of "http.route" */
        cr_assert_eq(pctx_altered(NULL, -1, 0, len), 0);
        cr_assert_eq(pctx_altered(NULL, -1, 0, len - 1), -EPROTO, "short");
        cr_assert_eq(pctx_altered(NULL, -1, 0, sizeof(struct pctx_resp_head) - 1), -EPROTO);
        cr_assert_eq(pctx_altered(many_keys, -1, 0, len), -EPROTO, "too many keys");
        cr_assert_eq(pctx_altered(one_key_less, -1, 0, len), -EPROTO, "bytes left over");
        cr_assert_eq(pctx_altered(service_zone, -1, 0, len), -EPROTO, "service not service.name");
        cr_assert_eq(pctx_altered(service_past, -1, 0, len), -EPROTO, "service index past");
        cr_assert_eq(pctx_altered(err_with_keys, -1, 0, len), -EPROTO, "error with strings");
        cr_assert_eq(pctx_altered(odd_err, -1, 0, len), -EPROTO, "an error decode cannot give");
        cr_assert_eq(pctx_altered(deep_2, -1, 0, len), -EPROTO, "a flag not 0 or 1");
        cr_assert_eq(pctx_altered(NULL, (long)key0 + 4, 0, len), -EPROTO, "NUL inside a key");
        cr_assert_eq(pctx_altered(NULL, (long)key0, (char)0xff, len), -EPROTO,
                     "a key that is not UTF-8");
        cr_assert_eq(pctx_altered(NULL, (long)key0 - 2, (char)0xfe, len), -EPROTO,
                     "a key length past its cap");
}

Test(tls_wire, request_names)
{
        static struct tls_req r;
        const char *names[] = {"custom_labels_current_set", "otel_thread_ctx_v1"};
        const char *got[ELF_TLS_MAX_NAMES];
        cr_assert_eq(tls_wire_request(names, 2, 1, &r), 0);
        cr_assert_eq(tls_wire_names(&r, got), 0);
        cr_assert_eq(r.n, 2);
        cr_assert_eq(r.flags, 1);
        cr_assert_str_eq(got[1], "otel_thread_ctx_v1");

        static char longname[TLS_WIRE_NAME_MAX + 1];
        memset(longname, 'x', TLS_WIRE_NAME_MAX);
        const char *too_long[] = {longname};
        cr_assert_eq(tls_wire_request(too_long, 1, 0, &r), -ENAMETOOLONG);
        cr_assert_eq(tls_wire_request(names, ELF_TLS_MAX_NAMES + 1, 0, &r), -EINVAL);

        cr_assert_eq(tls_wire_request(names, 2, 0, &r), 0);
        memset(r.names[1], 'y', TLS_WIRE_NAME_MAX); /* no NUL */
        cr_assert_eq(tls_wire_names(&r, got), -EINVAL);
        cr_assert_eq(tls_wire_request(names, 2, 0, &r), 0);
        r.n = ELF_TLS_MAX_NAMES + 1;
        cr_assert_eq(tls_wire_names(&r, got), -EINVAL);

        cr_assert_eq(tls_wire_request(names, 2, ELF_TLS_NEED_TLS | ELF_TLS_NO_DWARF, &r), 0);
        cr_assert_eq(tls_wire_names(&r, got), 0);
        cr_assert_eq(tls_wire_request(names, 2, 0x4, &r), -EINVAL, "a flag no scan knows");
        r.flags = 0x4;
        cr_assert_eq(tls_wire_names(&r, got), -EINVAL, "the helper refuses it too");
}

static struct tls_resp tresp;

static void tls_answer(void)
{
        struct elf_tls_info info = {.e_type = 3,
                                    .is_executable = 1,
                                    .has_tls = 1,
                                    .tls_vaddr = 0x3000,
                                    .tls_memsz = 0x40,
                                    .tls_align = 8,
                                    .nloads = 2};
        info.loads[1] = (struct elf_tls_load){.vaddr = 0x1000, .offset = 0x1000, .filesz = 9};
        info.go = (struct elf_go_info){.source = ELF_GO_DWARF,
                                       .major = 1,
                                       .minor = 19,
                                       .sets_labels = 1,
                                       .g_m = 48,
                                       .m_curg = 192,
                                       .g_labels = 360};
        struct elf_tls_sym syms[2] = {{.defined = 1,
                                       .in_dynsym = 1,
                                       .type = 6,
                                       .value = 0x10,
                                       .size = 16,
                                       .reloc = ELF_TLS_RELOC_TLSDESC,
                                       .reloc_where = 0x4000,
                                       .reloc_addend = -8},
                                      {0}};
        tls_wire_encode(0, &info, syms, 2, &tresp);
}

Test(tls_wire, answer_round_trip)
{
        struct elf_tls_info info;
        struct elf_tls_sym syms[2];
        tls_answer();
        cr_assert_eq(tls_wire_decode(&tresp, sizeof(tresp), 2, &info, syms), 0);
        cr_assert_eq(info.nloads, 2);
        cr_assert_eq(info.loads[1].filesz, 9);
        cr_assert_eq(info.tls_vaddr, 0x3000);
        cr_assert_eq(info.is_executable, 1);
        cr_assert_eq(syms[0].reloc, ELF_TLS_RELOC_TLSDESC);
        cr_assert_eq(syms[0].reloc_addend, -8);
        cr_assert_eq(syms[0].size, 16);
        cr_assert_eq(syms[1].defined, 0);
        cr_assert(info.go.source == ELF_GO_DWARF && info.go.minor == 19 && info.go.sets_labels &&
                      info.go.g_m == 48 && info.go.m_curg == 192 && info.go.g_labels == 360,
                  "a Go layout crosses as sent");

        struct elf_tls_info none = {0};
        tls_wire_encode(-EINVAL, &none, syms, 2, &tresp);
        cr_assert_eq(tls_wire_decode(&tresp, sizeof(tresp), 2, &info, syms), -ENOEXEC,
                     "a failure of the file's is sent as -ENOEXEC");
}

Test(tls_wire, malformed_answers_refused)
{
        struct elf_tls_info info;
        struct elf_tls_sym syms[2];
        tls_answer();
        cr_assert_eq(tls_wire_decode(&tresp, sizeof(tresp) - 1, 2, &info, syms), -EPROTO);
        cr_assert_eq(tls_wire_decode(&tresp, sizeof(tresp), 1, &info, syms), -EPROTO,
                     "a count not the request's");
        tresp.nloads = ELF_TLS_MAX_LOADS + 1;
        cr_assert_eq(tls_wire_decode(&tresp, sizeof(tresp), 2, &info, syms), -EPROTO);
        tls_answer();
        tresp.syms[1].reloc = ELF_TLS_RELOC_DTPMOD64 + 1;
        cr_assert_eq(tls_wire_decode(&tresp, sizeof(tresp), 2, &info, syms), -EPROTO);
        tls_answer();
        tresp.syms[0].defined = 2;
        cr_assert_eq(tls_wire_decode(&tresp, sizeof(tresp), 2, &info, syms), -EPROTO);
        tls_answer();
        tresp.has_tls = 7;
        cr_assert_eq(tls_wire_decode(&tresp, sizeof(tresp), 2, &info, syms), -EPROTO);
        tls_answer();
        tresp.ret = -EPERM;
        cr_assert_eq(tls_wire_decode(&tresp, sizeof(tresp), 2, &info, syms), -EPROTO);
        tls_answer();
        tresp.go.source = ELF_GO_UNKNOWN + 1;
        cr_assert_eq(tls_wire_decode(&tresp, sizeof(tresp), 2, &info, syms), -EPROTO,
                     "a Go layout source the helper never sends");
        tls_answer();
        tresp.go.source = ELF_GO_UNKNOWN;
        cr_assert_eq(tls_wire_decode(&tresp, sizeof(tresp), 2, &info, syms), -EPROTO,
                     "offsets without a layout");
        tls_answer();
        tresp.go.sets_labels = 2;
        cr_assert_eq(tls_wire_decode(&tresp, sizeof(tresp), 2, &info, syms), -EPROTO);
        tls_answer();
        tresp.go.pad3 = 1;
        cr_assert_eq(tls_wire_decode(&tresp, sizeof(tresp), 2, &info, syms), -EPROTO);
}
