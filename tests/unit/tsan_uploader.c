/*
 * tsan_uploader.c — the uploader's threads: the main thread hands profiles over
 * (uploader_add) and reads the counters while the uploader's thread spools them and fails
 * to send them (nothing listens on the port); at stop every profile is in the spool, none
 * dropped, and a new uploader on the same spool finds them all. Also under TSan.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "service/uploader.h"

#define JOBS 40

Test(uploader, add_while_failing_then_stop_keeps_everything)
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
        cr_assert_not_null(mkdtemp(dir));
        fd = mkstemp(prof);
        cr_assert(fd >= 0);
        cr_assert_eq(write(fd, "FLR\0profile", 11), 11);
        close(fd);
        struct uploader_opts o = {.target = &t, .cfg = &cfg, .spool_dir = dir};
        cr_assert_eq(uploader_new(&o, &u, why, sizeof(why)), 0, "%s", why);
        for (int i = 0; i < JOBS; i++) {
                struct upload_job j = {.profile_path = prof, .from_s = 1, .until_s = 2};

                cr_assert_eq(uploader_add(&u, 1, &j), 0);
                uploader_get_counters(u, &c);
                usleep(1000);
        }
        uploader_stop(u, 0, &c);
        cr_assert_eq(c.spooled, JOBS);
        cr_assert_eq(c.uploads_ok, 0);
        cr_assert_gt(c.failures[UPLOAD_CONNECT], 0);
        cr_assert_eq(c.dropped[UPLOAD_DROP_SPOOL_ERROR] + c.dropped[UPLOAD_DROP_SPOOL_FULL], 0);
        cr_assert_eq(c.spool_files, JOBS);
        cr_assert_eq(c.queue, 0);
        /* the next daemon's uploader takes the spool over */
        cr_assert_eq(uploader_new(&o, &u, why, sizeof(why)), 0, "%s", why);
        uploader_get_counters(u, &c);
        cr_assert_eq(c.spool_files, JOBS);
        uploader_stop(u, 0, NULL);
        unlink(prof);
        snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
        cr_assert_eq(system(cmd), 0);
}
