/* SPDX-License-Identifier: MIT */
/*
 * test_metrics_text.c — the Prometheus text writer (service/metrics_text.c), the listen
 * address parser and the endpoint (service/metrics_http.c): exact bytes for HELP/TYPE and
 * samples, escaping of HELP text and label values, special float values, every rule the
 * writer enforces (bad names, reserved label names, a family twice, a sample outside its
 * family, a negative counter) refused without a byte written; addresses accepted and
 * refused; and a real server on 127.0.0.1 answering a collector's text, 404 and 405, and
 * refusing a remote address without the opt-in and a port that is taken.
 */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "service/config.h"
#include "service/metrics_http.h"
#include "service/metrics_text.h"

Test(metrics_text, family_and_samples)
{
        struct metrics_text t = {0};
        struct metrics_label l[2] = {{"kind", "sink"}, {"b", ""}};

        metrics_text_family(&t, "ctxprof_x_total", METRICS_COUNTER, "Things done.");
        metrics_text_u64(&t, "ctxprof_x_total", NULL, 0, 18446744073709551615ull);
        metrics_text_u64(&t, "ctxprof_x_total", l, 2, 7);
        metrics_text_one(&t, "g:sub", METRICS_GAUGE, "", 0);
        metrics_text_family(&t, "u", METRICS_UNTYPED, "u");
        metrics_text_double(&t, "u", l, 1, 0.5);
        metrics_text_double(&t, "u", NULL, 0, NAN);
        metrics_text_double(&t, "u", &l[1], 1, INFINITY);
        metrics_text_double(&t, "u", NULL, 0, -INFINITY);
        cr_assert_eq(t.err, 0);
        cr_assert_str_eq(t.p, "# HELP ctxprof_x_total Things done.\n"
                              "# TYPE ctxprof_x_total counter\n"
                              "ctxprof_x_total 18446744073709551615\n"
                              "ctxprof_x_total{kind=\"sink\",b=\"\"} 7\n"
                              "# HELP g:sub \n"
                              "# TYPE g:sub gauge\n"
                              "g:sub 0\n"
                              "# HELP u u\n"
                              "# TYPE u untyped\n"
                              "u{kind=\"sink\"} 0.5\n"
                              "u NaN\n"
                              "u{b=\"\"} +Inf\n"
                              "u -Inf\n");
        cr_assert_eq(t.len, strlen(t.p));
        metrics_text_free(&t);
        cr_assert_null(t.p);
}

Test(metrics_text, escaping)
{
        struct metrics_text t = {0};
        struct metrics_label l = {"path", "C:\\dir\n\"q\" \xc3\xa9{}=,"};

        metrics_text_family(&t, "m", METRICS_GAUGE, "a \\ b\nc \"kept\"");
        metrics_text_u64(&t, "m", &l, 1, 1);
        cr_assert_eq(t.err, 0);
        /* HELP escapes only backslash and newline; label values also the double quote */
        cr_assert_str_eq(t.p, "# HELP m a \\\\ b\\nc \"kept\"\n"
                              "# TYPE m gauge\n"
                              "m{path=\"C:\\\\dir\\n\\\"q\\\" \xc3\xa9{}=,\"} 1\n");
        metrics_text_free(&t);
}

Test(metrics_text, doubles_round_trip)
{
        static const double v[] = {0.1, 1e300, 5e-324, 123456789.125, 0};
        struct metrics_text t = {0};
        const char *p;
        size_t i;

        metrics_text_family(&t, "d", METRICS_GAUGE, "d");
        for (i = 0; i < sizeof(v) / sizeof(v[0]); i++)
                metrics_text_double(&t, "d", NULL, 0, v[i]);
        cr_assert_eq(t.err, 0);
        p = strstr(t.p, "\nd ");
        for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
                cr_assert_not_null(p);
                cr_assert_eq(strtod(p + 3, NULL), v[i], "%s", p);
                p = strstr(p + 1, "\nd ");
        }
        metrics_text_free(&t);
}

/* A refused call writes nothing and is counted; the calls after it still work. */
static void refused(void (*call)(struct metrics_text *), const char *why)
{
        struct metrics_text t = {0};
        size_t len;

        metrics_text_family(&t, "ok", METRICS_COUNTER, "ok");
        len = t.len;
        call(&t);
        cr_assert_eq(t.err, -EINVAL, "%s: accepted", why);
        cr_assert_eq(t.refused, 1, "%s", why);
        cr_assert_eq(t.len, len, "%s: wrote %s", why, t.p + len);
        metrics_text_one(&t, "after", METRICS_GAUGE, "still", 3);
        cr_assert_not_null(strstr(t.p, "\nafter 3\n"), "%s", why);
        cr_assert_eq(t.refused, 1, "%s", why);
        metrics_text_free(&t);
}

static void bad_name(struct metrics_text *t)
{
        metrics_text_family(t, "9lives", METRICS_GAUGE, "x");
}
static void bad_char(struct metrics_text *t)
{
        metrics_text_family(t, "a-b", METRICS_GAUGE, "x");
}
static void empty_name(struct metrics_text *t)
{
        metrics_text_family(t, "", METRICS_GAUGE, "x");
}
static void twice(struct metrics_text *t)
{
        metrics_text_family(t, "ok", METRICS_GAUGE, "again");
}
static void outside(struct metrics_text *t)
{
        metrics_text_u64(t, "other", NULL, 0, 1);
}
static void bad_label(struct metrics_text *t)
{
        struct metrics_label l = {"a:b", "v"};

        metrics_text_u64(t, "ok", &l, 1, 1);
}
static void reserved_label(struct metrics_text *t)
{
        struct metrics_label l = {"__name__", "v"};

        metrics_text_u64(t, "ok", &l, 1, 1);
}
static void null_value(struct metrics_text *t)
{
        struct metrics_label l = {"a", NULL};

        metrics_text_u64(t, "ok", &l, 1, 1);
}
static void negative_counter(struct metrics_text *t)
{
        metrics_text_double(t, "ok", NULL, 0, -1);
}
static void bad_type(struct metrics_text *t)
{
        metrics_text_family(t, "h", (enum metrics_type)7, "x");
}

Test(metrics_text, rules)
{
        refused(bad_name, "a name starting with a digit");
        refused(bad_char, "a '-' in a name");
        refused(empty_name, "an empty name");
        refused(twice, "a family declared twice");
        refused(outside, "a sample outside its family");
        refused(bad_label, "a ':' in a label name");
        refused(reserved_label, "a label name starting with __");
        refused(null_value, "a label without a value");
        refused(negative_counter, "a negative counter");
        refused(bad_type, "an unknown type");
}

/* After a refused family, its samples are refused too (no samples under another's HELP). */
Test(metrics_text, samples_of_a_refused_family)
{
        struct metrics_text t = {0};

        metrics_text_one(&t, "a", METRICS_GAUGE, "a", 1);
        metrics_text_family(&t, "a", METRICS_GAUGE, "a again");
        metrics_text_u64(&t, "a", NULL, 0, 2);
        cr_assert_eq(t.refused, 2);
        cr_assert_str_eq(t.p, "# HELP a a\n# TYPE a gauge\na 1\n");
        metrics_text_free(&t);
}

Test(metrics_text, addresses)
{
        static const char *const good[] = {"127.0.0.1:9464", "localhost:0", "[::1]:65535",
                                           "0.0.0.0:80",     "[::]:1",      "10.1.2.3:9464"};
        static const int loop[] = {1, 1, 1, 0, 0, 0};
        static const char *const bad[] = {
            "127.0.0.1",       "127.0.0.1:",
            ":9464",           "127.0.0.1:65536",
            "127.0.0.1:-1",    "::1:9464",
            "[::1]9464",       "[::1:9464",
            "host.example:80", "127.0.0.1:80x",
            "1.2.3:9464",      "127.0.0.1: 80",
            "127.0.0.1:+80",   "",
        };
        struct metrics_addr a;
        size_t i;

        for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
                cr_assert_eq(metrics_addr_parse(good[i], &a), 0, "%s refused", good[i]);
                cr_assert_eq(a.loopback, loop[i], "%s", good[i]);
        }
        for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                cr_assert_eq(metrics_addr_parse(bad[i], &a), -EINVAL, "%s accepted", bad[i]);
        cr_assert_eq(metrics_addr_parse(NULL, &a), -EINVAL);
}

static void collect_test(void *ctx, struct metrics_text *t)
{
        struct metrics_label l = {"v", "a\"b"};

        (void)ctx;
        metrics_text_family(t, "t_total", METRICS_COUNTER, "test");
        metrics_text_u64(t, "t_total", &l, 1, 42);
        metrics_text_family(t, "bad name", METRICS_GAUGE, "refused, counted");
}

/* One request on a new connection; the whole answer (the server closes). */
static void http(unsigned port, const char *req, char *out, size_t len)
{
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((in_port_t)port)};
        size_t got = 0;
        ssize_t n;
        int fd = socket(AF_INET, SOCK_STREAM, 0);

        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        cr_assert_geq(fd, 0);
        cr_assert_eq(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
        cr_assert_eq(write(fd, req, strlen(req)), (ssize_t)strlen(req));
        while (got + 1 < len && (n = read(fd, out + got, len - 1 - got)) > 0)
                got += (size_t)n;
        out[got] = '\0';
        close(fd);
}

Test(metrics_http, serves_collectors)
{
        struct metrics_server *m, *m2;
        char buf[8192], listen[32];
        unsigned port;

        cr_assert_eq(metrics_server_new("127.0.0.1:0", 0, &m), 0);
        cr_assert_eq(metrics_server_add(m, collect_test, NULL), 0);
        cr_assert_eq(metrics_server_start(m), 0);
        port = metrics_server_port(m);
        cr_assert_gt(port, 0);
        http(port, "GET /metrics HTTP/1.0\r\n\r\n", buf, sizeof(buf));
        cr_assert(!strncmp(buf, "HTTP/1.0 200", 12) || !strncmp(buf, "HTTP/1.1 200", 12), "%s",
                  buf);
        cr_assert_not_null(strstr(buf, "Content-Type: " METRICS_TEXT_CONTENT_TYPE "\r\n"), "%s",
                           buf);
        cr_assert_not_null(strstr(buf, "\r\n\r\n# HELP t_total test\n# TYPE t_total counter\n"
                                       "t_total{v=\"a\\\"b\"} 42\n"),
                           "%s", buf);
        cr_assert_not_null(strstr(buf, "\nctxprof_metrics_scrapes_total 1\n"), "%s", buf);
        cr_assert_not_null(strstr(buf, "\nctxprof_metrics_refused_series_total 1\n"), "%s", buf);
        http(port, "GET /other HTTP/1.0\r\n\r\n", buf, sizeof(buf));
        cr_assert_not_null(strstr(buf, " 404 "), "%s", buf);
        http(port, "DELETE /metrics HTTP/1.0\r\n\r\n", buf, sizeof(buf));
        cr_assert_not_null(strstr(buf, " 405 "), "%s", buf);
        cr_assert_not_null(strstr(buf, "Allow: GET, HEAD\r\n"), "%s", buf);
        /* the port is taken now */
        snprintf(listen, sizeof(listen), "127.0.0.1:%u", port);
        cr_assert_eq(metrics_server_new(listen, 0, &m2), -EADDRINUSE);
        cr_assert_null(m2);
        metrics_server_free(m);
        /* and free again once the server is gone (SO_REUSEADDR: no TIME_WAIT wait) */
        cr_assert_eq(metrics_server_new(listen, 0, &m2), 0);
        metrics_server_free(m2);
}

Test(metrics_http, remote_needs_opt_in)
{
        struct metrics_server *m;

        cr_assert_eq(metrics_server_new("0.0.0.0:0", 0, &m), -EPERM);
        cr_assert_null(m);
        cr_assert_eq(metrics_server_new("127.0.0.1", 0, &m), -EINVAL);
        cr_assert_eq(metrics_server_new("0.0.0.0:0", 1, &m), 0); /* not started: no thread */
        metrics_server_free(m);
}

Test(metrics_config, keys)
{
        struct daemon_config c;

        config_defaults(&c);
        cr_assert_str_eq(c.metrics_listen, ""); /* off by default */
        cr_assert_eq(c.metrics_allow_remote, 0);
        cr_assert_eq(config_set(&c, "metrics", "listen", "127.0.0.1:9464"), 0);
        cr_assert_str_eq(c.metrics_listen, "127.0.0.1:9464");
        cr_assert_eq(config_set(&c, "metrics", "listen", "127.0.0.1"), -EINVAL);
        cr_assert_eq(config_set(&c, "metrics", "listen", "[::1]:65536"), -EINVAL);
        cr_assert_str_eq(c.metrics_listen, "127.0.0.1:9464");         /* unchanged by a bad value */
        cr_assert_eq(config_set(&c, NULL, "allow-remote", "yes"), 0); /* the flag */
        cr_assert_eq(c.metrics_allow_remote, 1);
        cr_assert_eq(config_set(&c, "metrics", "allow-remote", "maybe"), -EINVAL);
        cr_assert_eq(config_set(&c, "metrics", "port", "1"), -ENOENT);
        cr_assert_not_null(config_values("metrics.listen"));
}
