/* SPDX-License-Identifier: MIT */
/*
 * metrics_http.h — the daemon's metrics endpoint: `GET /metrics` (and HEAD) on one TCP
 * address answers the Prometheus text format (service/metrics_text.h) that the registered
 * collectors write. Served by libmicrohttpd on its own thread, so a scrape never runs on the
 * sampling thread: whatever a collector reports must be safe to read from another thread
 * (a snapshot under its own lock, atomics). Anything else than GET/HEAD /metrics is 404 (path)
 * or 405 (method); connections are limited in number, memory and idle time so that a
 * misbehaving client cannot grow the daemon.
 *
 * Lifecycle (all calls from one thread, the daemon's main): metrics_server_new binds and
 * listens (before the privilege drop, so a port below 1024 works, and so that a taken port
 * stops the daemon at start with a clear error); metrics_server_add registers collectors;
 * metrics_server_start starts the thread (after the privilege drop: threads keep the
 * capabilities of the thread that created them); metrics_server_free stops it. Never prints.
 */
#ifndef CTXPROF_METRICS_HTTP_H
#define CTXPROF_METRICS_HTTP_H

#include <stddef.h>
#include <sys/socket.h>

#include "service/metrics_text.h"

#define METRICS_PATH           "/metrics"
#define METRICS_LISTEN_LEN     64 /* "[IPv6]:PORT" */
#define METRICS_COLLECTORS_MAX 16
#define METRICS_CONN_MAX       128   /* connections at once; more are closed at once */
#define METRICS_CONN_TIMEOUT_S 10    /* an idle connection is closed after this */
#define METRICS_CONN_MEMORY    32768 /* bytes of request a connection may hold */

/* A listen address: "HOST:PORT" with HOST an IPv4 address, "[IPv6]" or "localhost"
 * (127.0.0.1), PORT 0..65535 (0: any free port, see metrics_server_port). */
struct metrics_addr {
        struct sockaddr_storage ss;
        socklen_t len;
        int loopback; /* 127.0.0.0/8 or ::1 */
};

/* Parse s. 0 or -EINVAL (not HOST:PORT with a numeric or "localhost" host). */
int metrics_addr_parse(const char *s, struct metrics_addr *out);

/* Called at each scrape on the server's thread, in the order added: appends its series to t.
 * Must not block for long and must not call metrics_server_add. */
typedef void (*metrics_collect_fn)(void *ctx, struct metrics_text *t);

struct metrics_server;

/* Bind and listen on listen ("HOST:PORT"). -EINVAL bad address; -EPERM an address that is
 * not loopback while allow_remote is 0; -EADDRINUSE the port is taken; -EADDRNOTAVAIL no
 * such local address; -EACCES a port below 1024 without CAP_NET_BIND_SERVICE; -ENOMEM. */
int metrics_server_new(const char *listen, int allow_remote, struct metrics_server **out);
/* Register a collector. 0, or -ENOSPC past METRICS_COLLECTORS_MAX. */
int metrics_server_add(struct metrics_server *m, metrics_collect_fn fn, void *ctx);
/* Start serving. 0 or -errno (libmicrohttpd failed to start its thread). */
int metrics_server_start(struct metrics_server *m);
/* The port it listens on (the kernel's choice for port 0). */
unsigned metrics_server_port(const struct metrics_server *m);
/* Stop serving (waits for the thread) and free; NULL is fine. */
void metrics_server_free(struct metrics_server *m);

#endif
