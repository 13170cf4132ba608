/* SPDX-License-Identifier: MIT */
/*
 * parser_server.c — the parser helper's request loop (parser_server.h). Must never print,
 * serve before parser_confine succeeded, or keep a descriptor past PARSER_MAX_MODULES.
 */
#include "service/parser_server.h"
#include "engine/otel_process_ctx.h"
#include "engine/pctx_wire.h"
#include "service/parser_confine.h"
#include "stack/cfi_wire.h"
#include "stack/elf_syms.h"
#include "stack/sym_wire.h"
#include "tls/elf_tls.h"
#include "tls/tls_wire.h"
#include "util/parser_chan.h"
#include "util/parser_client.h"
#include "util/parser_wire.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#define REQ_MAX sizeof(struct tls_req) /* bytes of the largest request payload */
_Static_assert(sizeof(struct tls_req) >= sizeof(struct sym_req) &&
                   sizeof(struct tls_req) >= sizeof(struct pctx_req) &&
                   sizeof(struct tls_req) >= sizeof(struct cfi_req),
               "REQ_MAX holds every request");
/* bytes of the largest answer */
#define RESP_MAX (SYM_RESP_MAX > PCTX_RESP_MAX ? SYM_RESP_MAX : PCTX_RESP_MAX)
_Static_assert(RESP_MAX <= PARSER_PAYLOAD_MAX, "an answer fits one message");

struct open_module {
        uint64_t token; /* 0: free slot */
        struct elf_syms *es;
        uint64_t last_use;
};

struct server {
        int sock;
        struct open_module mods[PARSER_MAX_MODULES];
        uint64_t tick;
        union {
                char buf[RESP_MAX];
                uint64_t align;
        } resp;
};

/* The module for token: open already, or from fd (taken). NULL with *err when not ELF. */
static struct elf_syms *module_for(struct server *sv, uint64_t token, int fd, int *refused,
                                   int *err)
{
        struct open_module *slot = NULL;
        for (int i = 0; i < PARSER_MAX_MODULES; i++) {
                struct open_module *m = &sv->mods[i];
                if (m->token == token && m->es) {
                        if (fd >= 0)
                                close(fd);
                        m->last_use = ++sv->tick;
                        return m->es;
                }
                if (!slot || !m->es || (slot->es && m->last_use < slot->last_use))
                        slot = m;
        }
        if (fd < 0) {
                *err = -EBADF;
                return NULL;
        }
        elf_syms_free(slot->es);
        *slot = (struct open_module){0};
        struct elf_syms *es = elf_syms_open(fd, "module", refused, err);
        if (es)
                *slot = (struct open_module){.token = token, .es = es, .last_use = ++sv->tick};
        return es;
}

static int serve_sym(struct server *sv, const struct parser_head *h, const void *req, int fd,
                     uint32_t *len)
{
        struct sym_req r;
        if (h->len != sizeof(r)) {
                if (fd >= 0)
                        close(fd);
                return -EINVAL;
        }
        memcpy(&r, req, sizeof(r));
        int refused = 0, err = 0;
        struct elf_syms *es = module_for(sv, r.token, fd, &refused, &err);
        if (!es)
                return err;
        struct elf_sym_entry e[SYM_WIRE_MAX_ENTRIES];
        int n = elf_syms_resolve(es, r.offset, e, SYM_WIRE_MAX_ENTRIES);
        *len = sym_wire_encode(e, n, refused, sv->resp.buf, sizeof(sv->resp.buf));
        return 0;
}

/* What the ELF file in fd (taken) says about the request's thread-local variable names. */
static int serve_tls(struct server *sv, const struct parser_head *h, const void *req, int fd,
                     uint32_t *len)
{
        struct tls_req r;
        const char *names[ELF_TLS_MAX_NAMES];
        int err = -EINVAL;
        if (h->len == sizeof(r) && fd >= 0) {
                memcpy(&r, req, sizeof(r));
                err = tls_wire_names(&r, names);
        }
        if (err) {
                if (fd >= 0)
                        close(fd);
                return err;
        }
        struct elf_tls_info info;
        struct elf_tls_sym syms[ELF_TLS_MAX_NAMES];
        int ret = elf_tls_scan_local(fd, names, r.n, r.flags, &info, syms);
        close(fd);
        _Static_assert(sizeof(struct tls_resp) <= RESP_MAX, "a TLS answer fits");
        tls_wire_encode(ret, &info, syms, r.n, (struct tls_resp *)(void *)sv->resp.buf);
        *len = sizeof(struct tls_resp);
        return 0;
}

/* The unwind table of the ELF file in fd (taken): its answer, and the rows in *rfd. */
static int serve_cfi(struct server *sv, const struct parser_head *h, const void *req, int fd,
                     uint32_t *len, int *rfd)
{
        struct cfi_req r;
        struct cfi_table t = {0};
        if (h->len != sizeof(r) || fd < 0) {
                if (fd >= 0)
                        close(fd);
                return -EINVAL;
        }
        memcpy(&r, req, sizeof(r));
        int status = cfi_table_build_local(fd, &t);
        close(fd);
        if (!status && t.n > r.max_rows)
                status = -EFBIG;
        _Static_assert(sizeof(struct cfi_resp) <= RESP_MAX, "a CFI answer fits");
        int err = cfi_wire_export(status, &t, (struct cfi_resp *)(void *)sv->resp.buf, rfd);
        cfi_table_free(&t);
        if (err)
                return err;
        *len = sizeof(struct cfi_resp);
        return 0;
}

/* The payload in fd, size bytes as the request says and fstat confirms: 0 and *out
 * (malloc'ed), or -errno. */
static int read_payload(int fd, uint32_t size, uint8_t **out)
{
        struct stat st;
        if (fstat(fd, &st) || !S_ISREG(st.st_mode) || (uint64_t)st.st_size != size ||
            size > OTEL_PCTX_MAX_PAYLOAD)
                return -EINVAL;
        uint8_t *b = malloc(size ? size : 1);
        if (!b)
                return -ENOMEM;
        for (uint32_t got = 0; got < size;) {
                ssize_t n = pread(fd, b + got, size - got, got);
                if (n <= 0) {
                        free(b);
                        return n < 0 ? -errno : -EIO;
                }
                got += (uint32_t)n;
        }
        *out = b;
        return 0;
}

/* Decodes the process context in fd (taken): its answer, whatever the decode found. */
static int serve_pctx(struct server *sv, const struct parser_head *h, const void *req, int fd,
                      uint32_t *len)
{
        struct pctx_req r;
        if (h->len != sizeof(r) || fd < 0) {
                if (fd >= 0)
                        close(fd);
                return -EINVAL;
        }
        memcpy(&r, req, sizeof(r));
        uint8_t *buf = NULL;
        int err = read_payload(fd, r.payload_size, &buf);
        close(fd);
        if (err)
                return err;
        struct otel_pctx pc = {0};
        struct otel_pctx_stats st = {0};
        err = otel_pctx_decode(buf, r.payload_size, &pc, &st);
        free(buf);
        *len = pctx_wire_encode(err, &pc, &st, sv->resp.buf, sizeof(sv->resp.buf));
        otel_pctx_clear(&pc);
        return 0;
}

static int serve(struct server *sv)
{
        for (;;) {
                struct parser_head h;
                char req[REQ_MAX];
                int fd = -1;
                int err = parser_chan_recv(sv->sock, &h, req, sizeof(req), &fd, -1);
                if (err == -EPIPE)
                        return 0;
                if (err)
                        return PARSER_EXIT_CHANNEL;
                uint32_t len = 0;
                int status, rfd = -1;
                const struct itimerval self_deadline = {
                    .it_value = {.tv_sec = PARSER_SELF_DEADLINE_MS / 1000,
                                 .tv_usec = PARSER_SELF_DEADLINE_MS % 1000 * 1000}};
                const struct itimerval off = {0};
                setitimer(ITIMER_REAL, &self_deadline, NULL); /* SIGALRM ends us */
                if (h.type == PARSER_SYM) {
                        status = serve_sym(sv, &h, req, fd, &len);
                } else if (h.type == PARSER_PCTX) {
                        status = serve_pctx(sv, &h, req, fd, &len);
                } else if (h.type == PARSER_TLS) {
                        status = serve_tls(sv, &h, req, fd, &len);
                } else if (h.type == PARSER_CFI) {
                        status = serve_cfi(sv, &h, req, fd, &len, &rfd);
                } else {
                        if (fd >= 0)
                                close(fd);
                        status = -EOPNOTSUPP;
                }
                struct parser_head a = {.type = h.type, .seq = h.seq, .status = status};
                err = parser_chan_send(sv->sock, &a, sv->resp.buf, status ? 0 : len, rfd);
                if (rfd >= 0)
                        close(rfd);
                if (err)
                        return PARSER_EXIT_CHANNEL;
                setitimer(ITIMER_REAL, &off, NULL);
        }
}

int parser_server_main(int argc, char **argv)
{
        if (argc != 4 || strlen(argv[2]) != 1 || argv[2][0] < '3' || argv[2][0] > '9')
                return PARSER_EXIT_ARGS;
        int sock = argv[2][0] - '0';
        int code = parser_confine(sock, argv[3]);
        if (code)
                return code;
        struct server *sv = calloc(1, sizeof(*sv));
        struct parser_head ready = {.type = PARSER_READY};
        if (!sv || parser_chan_send(sock, &ready, NULL, 0, -1))
                return PARSER_EXIT_CHANNEL;
        sv->sock = sock;
        return serve(sv);
}
