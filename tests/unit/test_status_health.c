/* SPDX-License-Identifier: MIT */
/*
 * test_status_health.c — the verdict of `ctxprof status` (service/status_health.c): what a
 * status file claims against a real child process that lives, is a zombie, is reaped, and
 * against a reused pid, another boot and a file older than its rewrite period.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "service/status_health.h"

/* A claim written now by process pid, as the daemon writes it. */
static struct status_claim claim_of(pid_t pid, uint64_t *start, char *boot)
{
        cr_assert_eq(status_health_pid_start(pid, start), 0);
        cr_assert_eq(status_health_boot_id(boot, STATUS_BOOT_LEN), 0);
        cr_assert_eq(strlen(boot), 36, "boot id '%s'", boot);
        return (struct status_claim){
            .running = 1,
            .pid = pid,
            .pid_start = *start,
            .boot_id = boot,
            .updated = (uint64_t)time(NULL),
            .period_ms = 2000,
        };
}

static enum status_health verdict(const struct status_claim *c, char *why, size_t len)
{
        struct status_probe p;

        status_health_probe(c->pid, &p);
        return status_health_judge(c, &p, why, len);
}

Test(status_health, child_alive_zombie_reaped)
{
        char boot[STATUS_BOOT_LEN], why[256];
        uint64_t start;
        pid_t kid = fork();
        int st;

        cr_assert_geq(kid, 0);
        if (!kid) {
                pause();
                _exit(0);
        }
        struct status_claim c = claim_of(kid, &start, boot);

        cr_assert_eq(verdict(&c, why, sizeof(why)), STATUS_HEALTH_RUNNING, "%s", why);
        cr_assert_str_eq(why, "");
        kill(kid, SIGKILL);
        /* a zombie (not reaped yet) is dead: the test's own daemon is one after kill -9 */
        for (int i = 0; i < 2000 && status_health_pid_start(kid, &start) != -ESRCH; i++)
                usleep(1000);
        cr_assert_eq(verdict(&c, why, sizeof(why)), STATUS_HEALTH_DEAD);
        cr_assert_not_null(strstr(why, "is gone"), "%s", why);
        cr_assert_eq(waitpid(kid, &st, 0), kid);
        cr_assert_eq(verdict(&c, why, sizeof(why)), STATUS_HEALTH_DEAD, "%s", why);
}

Test(status_health, reused_pid_other_boot_stale_stopped)
{
        char boot[STATUS_BOOT_LEN], why[256];
        uint64_t start;
        struct status_claim c = claim_of(getpid(), &start, boot), x;

        cr_assert_eq(verdict(&c, why, sizeof(why)), STATUS_HEALTH_RUNNING, "%s", why);
        /* the same pid started at another time: another process */
        x = c;
        x.pid_start = start + 1;
        cr_assert_eq(verdict(&x, why, sizeof(why)), STATUS_HEALTH_DEAD);
        cr_assert_not_null(strstr(why, "another process"), "%s", why);
        /* an older file without the start time cannot tell: the pid lives */
        x.pid_start = 0;
        cr_assert_eq(verdict(&x, why, sizeof(why)), STATUS_HEALTH_RUNNING, "%s", why);
        x = c;
        x.boot_id = "00000000-0000-0000-0000-000000000000";
        cr_assert_eq(verdict(&x, why, sizeof(why)), STATUS_HEALTH_DEAD);
        cr_assert_not_null(strstr(why, "rebooted"), "%s", why);
        /* stale: alive, but not rewritten for more than STATUS_STALE_PERIODS periods */
        x = c;
        x.updated -= STATUS_STALE_PERIODS * 2 - 1; /* within the allowance */
        cr_assert_eq(verdict(&x, why, sizeof(why)), STATUS_HEALTH_RUNNING, "%s", why);
        x.updated -= 3;
        cr_assert_eq(verdict(&x, why, sizeof(why)), STATUS_HEALTH_STALE);
        cr_assert_not_null(strstr(why, "stalled"), "%s", why);
        /* a period the file does not give: the daemon's default */
        x.period_ms = 0;
        cr_assert_eq(verdict(&x, why, sizeof(why)), STATUS_HEALTH_STALE);
        /* a clean stop is a stop whatever the process does now */
        x = c;
        x.running = 0;
        cr_assert_eq(verdict(&x, NULL, 0), STATUS_HEALTH_STOPPED);
        cr_assert_str_eq(status_health_name(STATUS_HEALTH_STALE), "stale");
}

Test(status_health, pid_start_of_nobody)
{
        uint64_t t;

        cr_assert_eq(status_health_pid_start(0x3fffffff, &t), -ESRCH);
}
