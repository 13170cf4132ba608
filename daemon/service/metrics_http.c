/* SPDX-License-Identifier: MIT */
/*
 * metrics_http.c — the metrics endpoint (see metrics_http.h): our listening socket handed to
 * libmicrohttpd, which serves it on its internal thread; each scrape runs the collectors
 * into a fresh text. Owns the socket and the thread; never touches the sampler or any other
 * subsystem directly (only through the collectors), never prints.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "service/metrics_http.h"

#define LISTEN_BACKLOG 64
#define PORT_MAX       65535

struct collector {
        metrics_collect_fn fn;
        void *ctx;
};

struct metrics_server {
        int fd; /* ours until started (then libmicrohttpd's copy serves) */
        unsigned port;
        struct MHD_Daemon *mhd;
        pthread_mutex_t lock; /* the collectors and the counters below */
        struct collector col[METRICS_COLLECTORS_MAX];
        unsigned ncol;
        uint64_t scrapes, refused; /* scrapes served; collector calls the writer refused */
};

static int parse_port(const char *s, in_port_t *port)
{
        char *end;
        unsigned long n;

        if (*s < '0' || *s > '9')
                return -EINVAL;
        errno = 0;
        n = strtoul(s, &end, 10);
        if (errno || *end || n > PORT_MAX)
                return -EINVAL;
        *port = htons((in_port_t)n);
        return 0;
}

int metrics_addr_parse(const char *s, struct metrics_addr *out)
{
        char host[METRICS_LISTEN_LEN];
        const char *colon;
        size_t hl;

        memset(out, 0, sizeof(*out));
        if (!s || strlen(s) >= sizeof(host))
                return -EINVAL;
        if (s[0] == '[') {
                struct sockaddr_in6 *a = (struct sockaddr_in6 *)&out->ss;
                const char *close = strchr(s, ']');

                if (!close || close[1] != ':')
                        return -EINVAL;
                hl = (size_t)(close - s - 1);
                memcpy(host, s + 1, hl);
                host[hl] = '\0';
                a->sin6_family = AF_INET6;
                if (inet_pton(AF_INET6, host, &a->sin6_addr) != 1 ||
                    parse_port(close + 2, &a->sin6_port))
                        return -EINVAL;
                out->len = sizeof(*a);
                out->loopback = IN6_IS_ADDR_LOOPBACK(&a->sin6_addr);
                return 0;
        }
        struct sockaddr_in *a = (struct sockaddr_in *)&out->ss;

        colon = strchr(s, ':');
        if (!colon || strchr(colon + 1, ':'))
                return -EINVAL;
        hl = (size_t)(colon - s);
        memcpy(host, s, hl);
        host[hl] = '\0';
        a->sin_family = AF_INET;
        if (!strcmp(host, "localhost"))
                a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        else if (inet_pton(AF_INET, host, &a->sin_addr) != 1)
                return -EINVAL;
        if (parse_port(colon + 1, &a->sin_port))
                return -EINVAL;
        out->len = sizeof(*a);
        out->loopback = (ntohl(a->sin_addr.s_addr) >> 24) == IN_LOOPBACKNET;
        return 0;
}

static int listen_on(const struct metrics_addr *a, unsigned *port)
{
        struct sockaddr_storage got;
        socklen_t len = sizeof(got);
        int one = 1, err;
        int fd = socket(a->ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

        if (fd < 0)
                return -errno;
        /* a restarted daemon binds again at once (connections of the last one in TIME_WAIT);
         * SO_REUSEADDR never lets two sockets listen on one port */
        if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
            (a->ss.ss_family == AF_INET6 &&
             setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one))) ||
            bind(fd, (const struct sockaddr *)&a->ss, a->len) || listen(fd, LISTEN_BACKLOG) ||
            getsockname(fd, (struct sockaddr *)&got, &len)) {
                err = -errno;
                close(fd);
                return err;
        }
        *port = ntohs(got.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&got)->sin6_port
                                                : ((struct sockaddr_in *)&got)->sin_port);
        return fd;
}

int metrics_server_new(const char *listen, int allow_remote, struct metrics_server **out)
{
        struct metrics_addr a;
        struct metrics_server *m;
        int err = metrics_addr_parse(listen, &a);

        *out = NULL;
        if (err)
                return err;
        if (!a.loopback && !allow_remote)
                return -EPERM;
        m = calloc(1, sizeof(*m));
        if (!m)
                return -ENOMEM;
        m->fd = listen_on(&a, &m->port);
        if (m->fd < 0) {
                err = m->fd;
                free(m);
                return err;
        }
        pthread_mutex_init(&m->lock, NULL);
        *out = m;
        return 0;
}

int metrics_server_add(struct metrics_server *m, metrics_collect_fn fn, void *ctx)
{
        int err = 0;

        pthread_mutex_lock(&m->lock);
        if (m->ncol == METRICS_COLLECTORS_MAX)
                err = -ENOSPC;
        else
                m->col[m->ncol++] = (struct collector){fn, ctx};
        pthread_mutex_unlock(&m->lock);
        return err;
}

/* The text of one scrape: every collector's series, then the endpoint's own. */
static void collect(struct metrics_server *m, struct metrics_text *t)
{
        unsigned i;

        pthread_mutex_lock(&m->lock);
        m->scrapes++;
        for (i = 0; i < m->ncol; i++)
                m->col[i].fn(m->col[i].ctx, t);
        m->refused += t->refused;
        metrics_text_one(t, "ctxprof_metrics_scrapes_total", METRICS_COUNTER,
                         "Scrapes of this endpoint served, this one included.", m->scrapes);
        metrics_text_one(t, "ctxprof_metrics_refused_series_total", METRICS_COUNTER,
                         "Series or families a collector wrote that break the text format "
                         "(left out of the answer).",
                         m->refused);
        pthread_mutex_unlock(&m->lock);
}

static enum MHD_Result reply(struct MHD_Connection *c, unsigned code, const char *body)
{
        struct MHD_Response *r =
            MHD_create_response_from_buffer(strlen(body), (void *)body, MHD_RESPMEM_PERSISTENT);
        enum MHD_Result ret;

        if (!r)
                return MHD_NO;
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/plain; charset=utf-8");
        if (code == MHD_HTTP_METHOD_NOT_ALLOWED)
                MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
        ret = MHD_queue_response(c, code, r);
        MHD_destroy_response(r);
        return ret;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload,
                                  size_t *upload_size, void **req)
{
        struct metrics_server *m = cls;
        struct metrics_text t = {0};
        struct MHD_Response *r;
        enum MHD_Result ret;

        (void)version;
        (void)upload;
        (void)upload_size;
        (void)req;
        if (strcmp(url, METRICS_PATH))
                return reply(c, MHD_HTTP_NOT_FOUND,
                             "not found: the metrics are at " METRICS_PATH "\n");
        if (strcmp(method, MHD_HTTP_METHOD_GET) && strcmp(method, MHD_HTTP_METHOD_HEAD))
                return reply(c, MHD_HTTP_METHOD_NOT_ALLOWED, "method not allowed\n");
        collect(m, &t);
        if (t.err == -ENOMEM || !t.p) {
                metrics_text_free(&t);
                return reply(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory\n");
        }
        r = MHD_create_response_from_buffer(t.len, t.p, MHD_RESPMEM_MUST_FREE);
        if (!r) {
                metrics_text_free(&t);
                return MHD_NO;
        }
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, METRICS_TEXT_CONTENT_TYPE);
        ret = MHD_queue_response(c, MHD_HTTP_OK, r);
        MHD_destroy_response(r);
        return ret;
}

int metrics_server_start(struct metrics_server *m)
{
        /* libmicrohttpd closes the socket it serves when it stops: it gets a copy */
        int fd = fcntl(m->fd, F_DUPFD_CLOEXEC, 0);

        if (fd < 0)
                return -errno;
        m->mhd = MHD_start_daemon(
            MHD_USE_AUTO_INTERNAL_THREAD, 0, NULL, NULL, on_request, m, MHD_OPTION_LISTEN_SOCKET,
            (MHD_socket)fd, MHD_OPTION_CONNECTION_LIMIT, (unsigned)METRICS_CONN_MAX,
            MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)METRICS_CONN_TIMEOUT_S,
            MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)METRICS_CONN_MEMORY, MHD_OPTION_END);
        if (!m->mhd)
                return -EIO; /* it says no more (the copy may leak: the daemon stops) */
        close(m->fd);
        m->fd = -1;
        return 0;
}

unsigned metrics_server_port(const struct metrics_server *m)
{
        return m->port;
}

void metrics_server_free(struct metrics_server *m)
{
        if (!m)
                return;
        if (m->mhd)
                MHD_stop_daemon(m->mhd);
        if (m->fd >= 0)
                close(m->fd);
        pthread_mutex_destroy(&m->lock);
        free(m);
}
