/* SPDX-License-Identifier: MIT */
/*
 * bench_upload.c — what delivering one profile costs the daemon's uploader thread: copy
 * into the spool (write + fsync + rename), read back, send to a Pyroscope-shaped receiver
 * over HTTP on loopback (libcurl, kept-alive connection), remove. Thread CPU time per
 * profile (CLOCK_THREAD_CPUTIME_ID: user + system of this thread only) and bytes on the
 * wire (request headers + multipart body, as libcurl counts them).
 *   bench_upload URL PROFILE.jfr LABELS.pb [N]
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

static double thread_ms(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
        return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
        struct upload_target_config t = {.name = "bench",
                                         .application = "ctxprof-bench",
                                         .tags = "env=bench",
                                         .timeout_ms = 30000};
        char dir[] = "/tmp/ctxprof-bench-spool.XXXXXX", why[512];
        int n = argc > 4 ? atoi(argv[4]) : 20, ok = 0;
        double spool_ms = 0, send_ms = 0;
        uint64_t wire = 0, body = 0;
        struct upload_client *cl;
        struct upload_spool *sp;
        struct stat st;

        if (argc < 4) {
                fprintf(stderr, "usage: bench_upload URL PROFILE.jfr LABELS.pb [N]\n");
                return 2;
        }
        snprintf(t.url, sizeof(t.url), "%s", argv[1]);
        if (!mkdtemp(dir) || upload_spool_open(dir, &sp, why, sizeof(why)) ||
            upload_client_new(&t, &cl, why, sizeof(why))) {
                fprintf(stderr, "bench_upload: setup failed: %s\n", why);
                return 1;
        }
        stat(argv[2], &st);
        for (int i = 0; i < n; i++) {
                struct upload_spool_source src = {.format = UPLOAD_FORMAT_JFR,
                                                  .from_s = 1,
                                                  .until_s = 61,
                                                  .profile_fd = open(argv[2], O_RDONLY),
                                                  .labels_fd = open(argv[3], O_RDONLY)};
                struct upload_spool_entry e;
                struct upload_result r;
                double t0 = thread_ms(), t1, t2;

                upload_spool_add(sp, &src, (uint64_t)time(NULL) * 1000);
                close(src.profile_fd);
                close(src.labels_fd);
                t1 = thread_ms();
                if (upload_spool_oldest(sp, &e) != 1)
                        return 1;
                struct upload_request rq = {.format = UPLOAD_FORMAT_JFR,
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
                spool_ms += t1 - t0;
                send_ms += t2 - t1;
                wire = r.bytes_sent;
                body = e.h.profile_len + e.h.labels_len;
        }
        printf("upload of one %lld-byte JFR profile (+ labels, %llu bytes in all), %d times, "
               "%d accepted:\n",
               (long long)st.st_size, (unsigned long long)body, n, ok);
        printf("  uploader thread CPU per profile: %.2f ms (spool copy + fsync %.2f ms, "
               "HTTP send %.2f ms)\n",
               (spool_ms + send_ms) / n, spool_ms / n, send_ms / n);
        printf("  bytes on the wire per profile: %llu (%.1f%% over the body)\n",
               (unsigned long long)wire,
               body ? 100.0 * ((double)wire - (double)body) / (double)body : 0);
        upload_client_free(cl);
        upload_spool_close(sp);
        rmdir(dir);
        return 0;
}
