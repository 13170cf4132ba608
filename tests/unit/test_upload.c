/* SPDX-License-Identifier: MIT */
/*
 * test_upload.c — delivery's parts without a network: the [upload] / [upload.NAME]
 * settings (values, errors with their line), the on-disk spool in a real directory (entries
 * read back byte for byte, oldest first, size and age limits that never drop the newest,
 * leftovers of an interrupted add removed at open, a corrupt entry reported), the retry
 * backoff's bounds, the credentials file checks, and a request's timeout against a real HTTP
 * server on 127.0.0.1 (a thread here): time spent in the caller's tick is not counted.
 */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "service/config.h"
#include "service/upload_http.h"
#include "service/upload_spool.h"
#include "service/uploader.h"

static char *write_tmp(const char *text, mode_t mode)
{
        static char path[64];
        int fd;

        snprintf(path, sizeof(path), "/tmp/ctxprof-upl.XXXXXX");
        fd = mkstemp(path);
        cr_assert(fd >= 0);
        cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
        fchmod(fd, mode);
        close(fd);
        return path;
}

static int load(const char *text, struct daemon_config *c, struct config_error *e)
{
        char *p = write_tmp(text, 0600);
        int err;

        config_defaults(c);
        err = config_load(c, p, e);
        unlink(p);
        return err;
}

Test(upload_config, sections_and_defaults)
{
        struct daemon_config c;
        struct config_error e;
        int err = load("[upload]\nurl = https://pyro.example:4040/base\ntags = env=prod,dc=a\n"
                       "spool-size = 1M\nspool-age = 1h\nretry-min = 50ms\nretry-max = 2s\n"
                       "[upload.backup]\nurl = http://127.0.0.1:9/\napplication = web\n"
                       "timeout = 500ms\nheader-file = /etc/ctxprof/token\n",
                       &c, &e);

        cr_assert_eq(err, 0, "line %d %s", e.line, e.key);
        cr_assert_eq(c.upload.n, 2);
        cr_assert_str_eq(c.upload.t[0].name, "default");
        cr_assert_str_eq(c.upload.t[0].url, "https://pyro.example:4040/base");
        cr_assert_str_eq(c.upload.t[0].application, "ctxprof");
        cr_assert_str_eq(c.upload.t[0].tags, "env=prod,dc=a");
        cr_assert_eq(c.upload.t[0].timeout_ms, 30000);
        cr_assert_str_eq(c.upload.t[1].name, "backup");
        cr_assert_str_eq(c.upload.t[1].application, "web");
        cr_assert_eq(c.upload.t[1].timeout_ms, 500);
        cr_assert_str_eq(c.upload.t[1].header_file, "/etc/ctxprof/token");
        cr_assert_eq(c.upload.spool_size, 1u << 20);
        cr_assert_eq(c.upload.spool_age_ms, 3600000);
        cr_assert_eq(c.upload.retry_min_ms, 50);
        cr_assert_eq(c.upload.retry_max_ms, 2000);
}

/* Each bad file fails at the line given, with that error. */
Test(upload_config, errors_name_the_line)
{
        static const struct {
                const char *text;
                int err, line;
        } cases[] = {
            {"[upload]\nurl = http://user:pw@h:1\n", -EINVAL, 2},     /* credentials in URL */
            {"[upload]\nurl = ftp://h\n", -EINVAL, 2},                /* not http(s) */
            {"[upload]\nurl = http://h/ingest?name=x\n", -EINVAL, 2}, /* a query */
            {"[upload]\nurl = http://h\nformat = pprof\n", -ENOTSUP, 3},
            {"[upload]\nurl = http://h\nformat = xml\n", -EINVAL, 3},
            {"[upload]\nurl = http://h\ntags = env\n", -EINVAL, 3},
            {"[upload]\nurl = http://h\nheader-file = token\n", -EINVAL, 3}, /* relative */
            {"[upload]\nurl = http://h\nbogus = 1\n", -ENOENT, 3},
            {"[upload.a b]\nurl = http://h\n", -EINVAL, 2}, /* bad NAME */
            {"[upload.x]\nspool-size = 1M\n", -ENOENT, 2},  /* spool keys: [upload] only */
            {"[upload]\nretry-min = 5s\nretry-max = 1s\n", -EINVAL, 2},
            {"\n[upload.a]\ntimeout = 1s\n", -EINVAL, 3}, /* no url: its first key's line */
        };
        struct daemon_config c;
        struct config_error e;

        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                int err = load(cases[i].text, &c, &e);

                cr_assert_eq(err, cases[i].err, "case %zu: %d", i, err);
                cr_assert_eq(e.line, cases[i].line, "case %zu: line %d", i, e.line);
        }
}

Test(upload_config, twice_and_too_many)
{
        struct daemon_config c;
        struct config_error e;
        char text[2048] = "";

        cr_assert_eq(load("[upload.a]\nurl = http://h\n[upload.b]\nurl = http://h\n"
                          "[upload.a]\nurl = http://i\n",
                          &c, &e),
                     -EEXIST);
        cr_assert_eq(e.line, 6);
        cr_assert_eq(e.first_line, 2);
        for (int i = 0; i <= UPLOAD_TARGETS_MAX; i++)
                snprintf(text + strlen(text), sizeof(text) - strlen(text),
                         "[upload.t%d]\nurl = http://h\n", i);
        cr_assert_eq(load(text, &c, &e), -ENOSPC);
        cr_assert_eq(e.line, 2 * UPLOAD_TARGETS_MAX + 2);
        cr_assert_not_null(e.why);
}

static char spool_dir[64];

static struct upload_spool *spool_open(void)
{
        struct upload_spool *s;
        char why[256];

        if (!spool_dir[0]) {
                snprintf(spool_dir, sizeof(spool_dir), "/tmp/ctxprof-spool.XXXXXX");
                cr_assert_not_null(mkdtemp(spool_dir));
        }
        cr_assert_eq(upload_spool_open(spool_dir, &s, why, sizeof(why)), 0, "%s", why);
        return s;
}

static void spool_rm(void)
{
        char cmd[128];

        snprintf(cmd, sizeof(cmd), "rm -rf %s", spool_dir);
        cr_assert_eq(system(cmd), 0);
        spool_dir[0] = '\0';
}

/* An entry of `len` bytes of profile (byte i = seed + i) and labels "L<seed>". */
static void add(struct upload_spool *s, int seed, size_t len, uint64_t now_ms)
{
        char *buf = malloc(len), lab[16];
        char *pp = write_tmp("", 0600), ppath[64], *lp;
        struct upload_spool_source src = {.format = UPLOAD_FORMAT_JFR,
                                          .from_s = 100 + (uint64_t)seed,
                                          .until_s = 200 + (uint64_t)seed,
                                          .extra = "process=x"};
        int fd;

        snprintf(ppath, sizeof(ppath), "%s", pp);
        for (size_t i = 0; i < len; i++)
                buf[i] = (char)(seed + (int)i);
        fd = open(ppath, O_WRONLY | O_TRUNC);
        cr_assert_eq(write(fd, buf, len), (ssize_t)len);
        close(fd);
        snprintf(lab, sizeof(lab), "L%d", seed);
        lp = write_tmp(lab, 0600);
        src.profile_fd = open(ppath, O_RDONLY);
        src.labels_fd = open(lp, O_RDONLY);
        cr_assert_eq(upload_spool_add(s, &src, now_ms), 0);
        close(src.profile_fd);
        close(src.labels_fd);
        unlink(ppath);
        unlink(lp);
        free(buf);
}

static void check_oldest(struct upload_spool *s, int seed, size_t len)
{
        struct upload_spool_entry e;
        char b[16], lab[16];

        cr_assert_eq(upload_spool_oldest(s, &e), 1);
        cr_assert_eq(e.h.from_s, 100 + (uint64_t)seed);
        cr_assert_eq(e.h.until_s, 200 + (uint64_t)seed);
        cr_assert_eq(e.h.profile_len, len);
        cr_assert_str_eq(e.extra, "process=x");
        cr_assert_eq(pread(e.fd, b, 2, (off_t)e.profile_off), 2);
        cr_assert_eq(b[0], (char)seed);
        cr_assert_eq(b[1], (char)(seed + 1));
        snprintf(lab, sizeof(lab), "L%d", seed);
        cr_assert_eq(e.h.labels_len, strlen(lab));
        cr_assert_eq(pread(e.fd, b, e.h.labels_len, (off_t)e.labels_off), (ssize_t)strlen(lab));
        cr_assert_eq(memcmp(b, lab, strlen(lab)), 0);
        cr_assert_eq(upload_spool_remove(s, &e), 0);
        upload_spool_release(&e);
}

Test(upload_spool, oldest_first_and_survives_reopen, .fini = spool_rm)
{
        struct upload_spool *s = spool_open();
        uint64_t files, bytes;
        char tmp[128];
        int fd;

        add(s, 1, 1000, 1000);
        add(s, 2, 2000, 2000);
        add(s, 3, 3000, 2000); /* same ms: the sequence keeps the order */
        upload_spool_close(s);
        /* an add cut short by a SIGKILL leaves a .tmp: removed at open */
        snprintf(tmp, sizeof(tmp), "%s/00000000000f4240-00000009.tmp", spool_dir);
        fd = open(tmp, O_CREAT | O_WRONLY, 0600);
        cr_assert(fd >= 0);
        close(fd);
        s = spool_open();
        cr_assert_eq(access(tmp, F_OK), -1);
        upload_spool_usage(s, &files, &bytes);
        cr_assert_eq(files, 3);
        cr_assert_gt(bytes, 6000);
        check_oldest(s, 1, 1000);
        check_oldest(s, 2, 2000);
        check_oldest(s, 3, 3000);
        struct upload_spool_entry e;
        cr_assert_eq(upload_spool_oldest(s, &e), 0);
        upload_spool_close(s);
}

Test(upload_spool, limits_drop_oldest_never_newest, .fini = spool_rm)
{
        struct upload_spool *s = spool_open();
        struct upload_spool_dropped d = {0};
        uint64_t files, bytes;

        add(s, 1, 10000, 1000);
        add(s, 2, 10000, 2000);
        add(s, 3, 10000, 3000);
        upload_spool_trim(s, 25000, 0, 3000, &d); /* three of ~10 KB: the oldest goes */
        cr_assert_eq(d.over_size, 1);
        check_oldest(s, 2, 10000);
        add(s, 4, 10000, 4000);
        upload_spool_trim(s, 100, 0, 4000, &d); /* smaller than one: the newest stays */
        cr_assert_eq(d.over_size, 2);
        upload_spool_usage(s, &files, &bytes);
        cr_assert_eq(files, 1);
        check_oldest(s, 4, 10000);
        add(s, 5, 100, 1000);
        add(s, 6, 100, 9000);
        upload_spool_trim(s, 0, 5000, 10000, &d); /* older than 5 s at 10 s: only the first */
        cr_assert_eq(d.too_old, 1);
        check_oldest(s, 6, 100);
        upload_spool_close(s);
}

Test(upload_spool, corrupt_entry, .fini = spool_rm)
{
        struct upload_spool *s = spool_open();
        struct upload_spool_entry e;
        char path[256];

        add(s, 1, 1000, 1000);
        cr_assert_eq(upload_spool_oldest(s, &e), 1);
        snprintf(path, sizeof(path), "%s/%s", spool_dir, e.name);
        upload_spool_release(&e);
        cr_assert_eq(truncate(path, 500), 0); /* shorter than its header says */
        cr_assert_eq(upload_spool_oldest(s, &e), -EBADMSG);
        cr_assert_eq(upload_spool_remove(s, &e), 0);
        cr_assert_eq(upload_spool_oldest(s, &e), 0);
        upload_spool_close(s);
}

Test(upload_retry, backoff_doubles_within_bounds)
{
        cr_assert_eq(upload_backoff_ms(1, 100, 10000, 1.0), 100);
        cr_assert_eq(upload_backoff_ms(1, 100, 10000, 0.0), 50);
        cr_assert_eq(upload_backoff_ms(4, 100, 10000, 1.0), 800);
        cr_assert_eq(upload_backoff_ms(40, 100, 10000, 1.0), 10000);
        cr_assert_eq(upload_backoff_ms(40, 100, 10000, 0.0), 5000);
        for (double r = 0; r <= 1.0; r += 0.125) {
                uint64_t d = upload_backoff_ms(3, 100, 10000, r);
                cr_assert(d >= 200 && d <= 400, "%llu", (unsigned long long)d);
        }
}

/* A credentials file others can read is refused; a 0600 one is taken. */
Test(upload_http, secret_file_modes)
{
        struct upload_target_config t = {
            .name = "t", .url = "http://127.0.0.1:9", .application = "a", .timeout_ms = 1000};
        struct upload_client *cl;
        char why[512], *p;

        p = write_tmp("Authorization: Bearer sekrit\n", 0644);
        snprintf(t.header_file, sizeof(t.header_file), "%s", p);
        cr_assert_eq(upload_client_new(&t, &cl, why, sizeof(why)), -EPERM);
        cr_assert_not_null(strstr(why, "readable"), "%s", why);
        cr_assert_null(strstr(why, "sekrit"));
        chmod(t.header_file, 0600);
        cr_assert_eq(upload_client_new(&t, &cl, why, sizeof(why)), 0, "%s", why);
        upload_client_free(cl);
        unlink(t.header_file);
        p = write_tmp("not a header\n", 0600);
        snprintf(t.header_file, sizeof(t.header_file), "%s", p);
        cr_assert_eq(upload_client_new(&t, &cl, why, sizeof(why)), -EINVAL);
        unlink(t.header_file);
        t.header_file[0] = '\0';
        p = write_tmp("useronly\n", 0600);
        snprintf(t.basic_auth_file, sizeof(t.basic_auth_file), "%s", p);
        cr_assert_eq(upload_client_new(&t, &cl, why, sizeof(why)), -EINVAL);
        unlink(t.basic_auth_file);
}

/* ---- a request against a real HTTP server on 127.0.0.1 (a thread of this test) ---- */

struct one_server {
        int lfd, requests, connections;
        int answer; /* requests answered; those after them never are (the connection held) */
};

/* Reads one request from fd: its headers, then the body its Content-Length announces (the
 * client sends every part's size; a request without one fails the read). 0 or -1. */
static int read_request(int fd)
{
        char buf[65536], *end, *cl;
        size_t n = 0, left;
        ssize_t r;

        while (!(end = memmem(buf, n, "\r\n\r\n", 4))) {
                if (n == sizeof(buf) || (r = read(fd, buf + n, sizeof(buf) - n)) <= 0)
                        return -1;
                n += (size_t)r;
        }
        *end = '\0'; /* the headers, a string */
        if (!(cl = strcasestr(buf, "content-length:")))
                return -1;
        left = strtoul(cl + 15, NULL, 10);
        n -= (size_t)(end + 4 - buf); /* body bytes read with the headers */
        for (left = left > n ? left - n : 0; left; left -= (size_t)r)
                if ((r = read(fd, buf, left < sizeof(buf) ? left : sizeof(buf))) <= 0)
                        return -1;
        return 0;
}

static void *serve(void *arg)
{
        static const char ok[] = "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nok\n";
        struct one_server *s = arg;
        int fd;

        while ((fd = accept(s->lfd, NULL, NULL)) >= 0) {
                __atomic_add_fetch(&s->connections, 1, __ATOMIC_SEQ_CST);
                while (!read_request(fd)) {
                        if (__atomic_add_fetch(&s->requests, 1, __ATOMIC_SEQ_CST) > s->answer)
                                continue; /* read on, answer nothing */
                        if (write(fd, ok, sizeof(ok) - 1) < 0)
                                break;
                }
                close(fd);
        }
        return NULL;
}

static int start_server(struct one_server *s, pthread_t *th)
{
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        socklen_t len = sizeof(a);

        s->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        cr_assert(s->lfd >= 0);
        cr_assert_eq(bind(s->lfd, (struct sockaddr *)&a, sizeof(a)), 0);
        cr_assert_eq(listen(s->lfd, 4), 0);
        cr_assert_eq(getsockname(s->lfd, (struct sockaddr *)&a, &len), 0);
        cr_assert_eq(pthread_create(th, NULL, serve, s), 0);
        return ntohs(a.sin_port);
}

/* The caller's tick spools files while a request is in flight: here it takes 3 times the
 * timeout, as a spool onto a stalled disk (or an OTLP conversion) may. */
static void slow_tick(void *ctx)
{
        int *calls = ctx;

        if ((*calls)++ == 0)
                usleep(1500 * 1000);
}

/* n requests on one client (one connection, kept alive): the last one's result in r. */
static void send_n(int port, int n, struct upload_result *r, int *ticks)
{
        struct upload_target_config t = {.name = "t", .application = "a", .timeout_ms = 500};
        char why[512], *p = write_tmp("a profile's bytes\n", 0600);
        int fd = open(p, O_RDONLY | O_CLOEXEC);
        struct upload_request rq = {.format = UPLOAD_FORMAT_JFR,
                                    .from_s = 1,
                                    .until_s = 2,
                                    .profile_fd = fd,
                                    .profile_len = 18,
                                    .labels_fd = -1,
                                    .tick = slow_tick,
                                    .tick_ctx = ticks};
        struct upload_client *cl;

        unlink(p);
        snprintf(t.url, sizeof(t.url), "http://127.0.0.1:%d", port);
        cr_assert_eq(upload_client_new(&t, &cl, why, sizeof(why)), 0, "%s", why);
        while (n--)
                upload_client_send(cl, &rq, NULL, r);
        upload_client_free(cl);
        close(fd);
}

/* n requests against a server of this test that answers the first `answer` of them: the
 * last one's result, the ticks, and the requests and connections the server saw. */
static void send_to_server(int answer, int n, struct upload_result *r, int *ticks, int *requests,
                           int *connections)
{
        struct one_server s = {.answer = answer};
        pthread_t th;

        send_n(start_server(&s, &th), n, r, ticks);
        shutdown(s.lfd, SHUT_RDWR); /* its accept returns: the thread ends (the client closed) */
        close(s.lfd);
        pthread_join(th, NULL);
        *requests = __atomic_load_n(&s.requests, __ATOMIC_SEQ_CST);
        *connections = __atomic_load_n(&s.connections, __ATOMIC_SEQ_CST);
}

/* Time spent in the tick is not the request's: an answered request is not a timeout (it was
 * with libcurl's own timeout, and the uploader then sent the profile again: delivered twice). */
Test(upload_http, tick_time_is_not_the_requests, .timeout = 60)
{
        struct upload_result r;
        int ticks = 0, requests, connections;

        send_to_server(1, 1, &r, &ticks, &requests, &connections);
        cr_assert_eq(r.outcome, UPLOAD_OK, "outcome %d (%s) after a 1.5 s tick, timeout 500 ms",
                     r.outcome, r.detail);
        cr_assert_eq(requests, 1);
        cr_assert_gt(ticks, 0);
}

/* n requests, the server answering the first n - 1: the last one ends in the request's own
 * timeout, "no answer" (never "not connected"), over `connections` connections. */
static void assert_no_answer(int n, int connections)
{
        struct upload_result r;
        int ticks = 0, req, conn;

        send_to_server(n - 1, n, &r, &ticks, &req, &conn);
        cr_assert_eq(r.outcome, UPLOAD_TIMEOUT, "outcome %d (%s)", r.outcome, r.detail);
        cr_assert_not_null(strstr(r.detail, "no answer within 500 ms"), "%s", r.detail);
        cr_assert_eq(req, n);
        cr_assert_eq(conn, connections, "%d connections: not the case under test", conn);
}

/* A backend that takes the request and never answers: the request's own timeout ends it. */
Test(upload_http, no_answer_times_out, .timeout = 60)
{
        assert_no_answer(1, 1);
}

/* The same on a connection kept alive from an answered request (libcurl's connect time is 0
 * on a reused connection: it must not read as "not connected"). */
Test(upload_http, no_answer_on_a_reused_connection, .timeout = 60)
{
        assert_no_answer(2, 1);
}
