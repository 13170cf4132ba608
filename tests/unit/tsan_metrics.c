/* SPDX-License-Identifier: MIT */
/*
 * tsan_metrics.c — the metrics endpoint under concurrency (also run under TSan): the
 * daemon's snapshot published from one thread while libmicrohttpd's thread renders it for
 * scrapes, and a collector registered while scrapes run. Every scrape sees one whole
 * snapshot (its fields all from the same publish), never a mix.
 * Plain program, not Criterion: Criterion cannot start under TSan on this machine (see
 * tsan_modules.c).
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "service/daemon_metrics.h"
#include "service/metrics_http.h"

#define SCRAPES 200

/* a failed check: say which and exit 1 */
#define CHECK(cond)                                                                                \
        do {                                                                                       \
                if (!(cond)) {                                                                     \
                        fprintf(stderr, "FAIL: %s:%d: %s\n", __FILE__, __LINE__, #cond);           \
                        exit(1);                                                                   \
                }                                                                                  \
        } while (0)

static atomic_int done;

static void *publisher(void *arg)
{
        struct daemon_metrics *dm = arg;
        struct daemon_metrics_snapshot s = {0};
        uint64_t i;

        for (i = 1; !atomic_load(&done); i++) {
                /* every field of one publish carries the same number */
                s.st.samples = s.st.received = s.st.lost = i;
                s.targets = (unsigned)i;
                s.updated = i;
                daemon_metrics_publish(dm, &s);
        }
        return NULL;
}

static void get(unsigned port, char *out, size_t len)
{
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((in_port_t)port)};
        const char *req = "GET /metrics HTTP/1.0\r\n\r\n";
        size_t got = 0;
        ssize_t n;
        int fd = socket(AF_INET, SOCK_STREAM, 0);

        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        CHECK(connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0);
        CHECK(write(fd, req, strlen(req)) == (ssize_t)strlen(req));
        while (got + 1 < len && (n = read(fd, out + got, len - 1 - got)) > 0)
                got += (size_t)n;
        out[got] = '\0';
        close(fd);
}

static unsigned long long value(const char *text, const char *series)
{
        char key[128];
        const char *p;

        snprintf(key, sizeof(key), "\n%s ", series);
        p = strstr(text, key);
        if (!p)
                fprintf(stderr, "no %s in:\n%s\n", series, text);
        CHECK(p);
        return strtoull(p + strlen(key), NULL, 10);
}

static void late(void *ctx, struct metrics_text *t)
{
        (void)ctx;
        metrics_text_one(t, "late_total", METRICS_COUNTER, "added while serving", 1);
}

int main(void)
{
        static char buf[65536];
        struct daemon_metrics *dm = daemon_metrics_new();
        struct metrics_server *m;
        pthread_t th;
        int i, seen = 0;

        CHECK(dm);
        CHECK(metrics_server_new("127.0.0.1:0", 0, &m) == 0);
        CHECK(metrics_server_add(m, daemon_metrics_collect, dm) == 0);
        CHECK(metrics_server_start(m) == 0);
        CHECK(pthread_create(&th, NULL, publisher, dm) == 0);
        for (i = 0; i < SCRAPES; i++) {
                unsigned long long s;

                if (i == SCRAPES / 2)
                        CHECK(metrics_server_add(m, late, NULL) == 0);
                get(metrics_server_port(m), buf, sizeof(buf));
                if (!strstr(buf, "\nctxprof_samples_total "))
                        continue; /* before the first publish */
                seen++;
                s = value(buf, "ctxprof_samples_total");
                CHECK(value(buf, "ctxprof_samples_received_total") == s);
                CHECK(value(buf, "ctxprof_samples_lost_total") == s);
                CHECK(value(buf, "ctxprof_last_update_timestamp_seconds") == s);
                if (i > SCRAPES / 2)
                        CHECK(strstr(buf, "\nlate_total 1\n"));
        }
        CHECK(seen > SCRAPES / 2);
        atomic_store(&done, 1);
        pthread_join(th, NULL);
        metrics_server_free(m);
        daemon_metrics_free(dm);
        printf("ok: %d scrapes, %d with a snapshot, while publishing\n", SCRAPES, seen);
        return 0;
}
