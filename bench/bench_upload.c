/* SPDX-License-Identifier: MIT */
/*
 * bench_upload.c — what delivering one profile costs the daemon's uploader thread, per
 * protocol: jfr (Pyroscope /ingest: the file as written) or otlp (the file converted to one
 * ExportProfilesServiceRequest and gzip'd, as uploader.c does when it spools it); then copy
 * into the spool (write + fsync + rename), read back, send to the receiver over HTTP on
 * loopback (libcurl, kept-alive connection), remove. Thread CPU time per profile
 * (CLOCK_THREAD_CPUTIME_ID: user + system of this thread only) and bytes on the wire
 * (request headers + body, as libcurl counts them).
 *   bench_upload URL PROFILE.jfr LABELS.pb [N [jfr|otlp]]
 * Printed, not asserted.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "service/upload_http.h"
#include "service/upload_spool.h"
#include "sink/jfr_convert.h"
#include "util/gzip.h"

static double thread_ms(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
        return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* The profile's body as the uploader spools it: the file, or (otlp) its conversion gzip'd
 * in a memfd. A descriptor or -1. */
static int profile_body(const char *path, int otlp)
{
        struct jfr_convert_resources res = {0};
        char *buf = NULL;
        size_t len = 0;
        FILE *m;
        int fd = -1;

        if (!otlp)
                return open(path, O_RDONLY);
        m = open_memstream(&buf, &len);
        if (m && !jfr_convert_file(path, "otlp", "ctxprof-bench", &res, m) && !fclose(m))
                fd = gzip_memfd((const uint8_t *)buf, len);
        else if (m)
                fclose(m);
        free(buf);
        return fd < 0 ? -1 : fd;
}

int main(int argc, char **argv)
{
        struct upload_target_config t = {.name = "bench",
                                         .application = "ctxprof-bench",
                                         .tags = "env=bench",
                                         .timeout_ms = 30000};
        char dir[] = "/tmp/ctxprof-bench-spool.XXXXXX", why[512];
        int n = argc > 4 ? atoi(argv[4]) : 20, ok = 0;
        int otlp = argc > 5 && !strcmp(argv[5], "otlp");
        int format = otlp ? UPLOAD_FORMAT_OTLP : UPLOAD_FORMAT_JFR;
        double conv_ms = 0, spool_ms = 0, send_ms = 0;
        uint64_t wire = 0, body = 0;
        struct upload_client *cl;
        struct upload_spool *sp;
        struct stat st;

        if (argc < 4) {
                fprintf(stderr, "usage: bench_upload URL PROFILE.jfr LABELS.pb [N [jfr|otlp]]\n");
                return 2;
        }
        snprintf(t.url, sizeof(t.url), "%s", argv[1]);
        t.format = format;
        if (!mkdtemp(dir) || upload_spool_open(dir, &sp, why, sizeof(why)) ||
            upload_client_new(&t, &cl, why, sizeof(why))) {
                fprintf(stderr, "bench_upload: setup failed: %s\n", why);
                return 1;
        }
        stat(argv[2], &st);
        for (int i = 0; i < n; i++) {
                double tc = thread_ms(), t0, t1, t2;
                struct upload_spool_source src = {.format = format,
                                                  .from_s = 1,
                                                  .until_s = 61,
                                                  .profile_fd = profile_body(argv[2], otlp),
                                                  .labels_fd = otlp ? -1 : open(argv[3], O_RDONLY)};
                struct upload_spool_entry e;
                struct upload_result r;

                if (src.profile_fd < 0)
                        return 1;
                t0 = thread_ms();
                upload_spool_add(sp, &src, (uint64_t)time(NULL) * 1000);
                close(src.profile_fd);
                if (src.labels_fd >= 0)
                        close(src.labels_fd);
                t1 = thread_ms();
                if (upload_spool_oldest(sp, &e) != 1)
                        return 1;
                struct upload_request rq = {.format = format,
                                            .from_s = 1,
                                            .until_s = 61,
                                            .profile_fd = e.fd,
                                            .profile_off = e.profile_off,
                                            .profile_len = e.h.profile_len,
                                            .labels_fd = e.fd,
                                            .labels_off = e.labels_off,
                                            .labels_len = e.h.labels_len};
                upload_client_send(cl, &rq, NULL, &r);
                upload_spool_remove(sp, &e);
                upload_spool_release(&e);
                t2 = thread_ms();
                if (r.outcome == UPLOAD_OK)
                        ok++;
                conv_ms += t0 - tc;
                spool_ms += t1 - t0;
                send_ms += t2 - t1;
                wire = r.bytes_sent;
                body = e.h.profile_len + e.h.labels_len;
        }
        printf("%s upload of one %lld-byte JFR profile (%llu bytes of body%s), %d times, "
               "%d accepted:\n",
               otlp ? "OTLP" : "Pyroscope (jfr)", (long long)st.st_size, (unsigned long long)body,
               otlp ? ": converted, gzip'd" : " with labels", n, ok);
        printf("  uploader thread CPU per profile: %.2f ms (convert + gzip %.2f ms, spool copy + "
               "fsync %.2f ms, HTTP send %.2f ms)\n",
               (conv_ms + spool_ms + send_ms) / n, conv_ms / n, spool_ms / n, send_ms / n);
        printf("  bytes on the wire per profile: %llu (%.1f%% over the body)\n",
               (unsigned long long)wire,
               body ? 100.0 * ((double)wire - (double)body) / (double)body : 0);
        upload_client_free(cl);
        upload_spool_close(sp);
        rmdir(dir);
        return 0;
}
