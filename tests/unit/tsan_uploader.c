/* SPDX-License-Identifier: MIT */
/*
 * tsan_uploader.c — the uploader's threads: the main thread hands profiles over
 * (uploader_add) and reads the counters while the uploader's thread spools them and fails
 * to send them (nothing listens on the port); at stop every profile is in the spool, none
 * dropped, and a new uploader on the same spool finds them all. Also under TSan, so a plain
 * program (tests/plain_check.h): Criterion's runner cannot start there.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "plain_check.h"
#include "service/uploader.h"

#define JOBS                40
#define FAILED_SEND_WAIT_MS 30000

int main(void)
{
        struct upload_config cfg;
        struct upload_target_config t = {
            .name = "t", .url = "http://127.0.0.1:1", .application = "a", .timeout_ms = 1000};
        char dir[] = "/tmp/ctxprof-tsan-spool.XXXXXX", prof[] = "/tmp/ctxprof-tsan-prof.XXXXXX";
        char why[512], cmd[128];
        struct uploader *u;
        struct upload_counters c;
        int fd;

        upload_config_defaults(&cfg);
        cfg.retry_min_ms = 10;
        cfg.retry_max_ms = 20;
        CHECK(mkdtemp(dir), "mkdtemp");
        fd = mkstemp(prof);
        CHECK(fd >= 0, "mkstemp");
        CHECK(write(fd, "FLR\0profile", 11) == 11, "write");
        close(fd);
        struct uploader_opts o = {.target = &t, .cfg = &cfg, .spool_dir = dir};
        CHECK(uploader_new(&o, &u, why, sizeof(why)) == 0, "uploader_new: %s", why);
        for (int i = 0; i < JOBS; i++) {
                struct upload_job j = {.profile_path = prof, .from_s = 1, .until_s = 2};

                CHECK(uploader_add(&u, 1, &j) == 0, "uploader_add %d", i);
                uploader_get_counters(u, &c);
                usleep(1000);
        }
        /* the uploader's thread has tried a send and failed: a fact to wait for (on a loaded
         * host under ASan it had not, 40 ms in), not a time */
        for (int ms = 0; ms < FAILED_SEND_WAIT_MS; ms += 10) {
                uploader_get_counters(u, &c);
                if (c.failures[UPLOAD_CONNECT] > 0)
                        break;
                usleep(10 * 1000);
        }
        uploader_stop(u, 0, &c);
        CHECK(c.spooled == JOBS, "c.spooled: %llu, want %llu", (unsigned long long)(c.spooled),
              (unsigned long long)(JOBS));
        CHECK(c.uploads_ok == 0, "c.uploads_ok: %llu, want %llu",
              (unsigned long long)(c.uploads_ok), (unsigned long long)(0));
        CHECK(c.failures[UPLOAD_CONNECT] > 0, "no failed connect counted");
        CHECK(c.dropped[UPLOAD_DROP_SPOOL_ERROR] + c.dropped[UPLOAD_DROP_SPOOL_FULL] == 0,
              "c.dropped[UPLOAD_DROP_SPOOL_ERROR] + c.dropped[UPLOAD_DROP_SPOOL_FULL]: %llu, want "
              "%llu",
              (unsigned long long)(c.dropped[UPLOAD_DROP_SPOOL_ERROR] +
                                   c.dropped[UPLOAD_DROP_SPOOL_FULL]),
              (unsigned long long)(0));
        CHECK(c.spool_files == JOBS, "c.spool_files: %llu, want %llu",
              (unsigned long long)(c.spool_files), (unsigned long long)(JOBS));
        CHECK(c.queue == 0, "c.queue: %llu, want %llu", (unsigned long long)(c.queue),
              (unsigned long long)(0));
        /* the next daemon's uploader takes the spool over */
        CHECK(uploader_new(&o, &u, why, sizeof(why)) == 0, "uploader_new: %s", why);
        uploader_get_counters(u, &c);
        CHECK(c.spool_files == JOBS, "c.spool_files: %llu, want %llu",
              (unsigned long long)(c.spool_files), (unsigned long long)(JOBS));
        uploader_stop(u, 0, NULL);
        unlink(prof);
        snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
        CHECK(system(cmd) == 0, "%s", cmd);
        printf("ok: %d profiles spooled while every send failed, all kept, taken over\n", JOBS);
        return 0;
}
