/* SPDX-License-Identifier: MIT */
/*
 * status_health.c — is the daemon of a status file alive (see status_health.h): the verdict
 * from what the file claims and what /proc says. Never prints; sends no signal (kill(pid, 0) only
 * asks).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "service/status_file.h"
#include "service/status_health.h"

#define STAT_START_FIELD 22 /* starttime in /proc/PID/stat (proc(5)), counted from 1 */
#define STAT_BUF_LEN     1024

enum status_health status_health_judge(const struct status_claim *c, const struct status_probe *p,
                                       char *why, size_t why_len)
{
        uint64_t period = c->period_ms ? c->period_ms : STATUS_FILE_PERIOD_MS;
        uint64_t age = p->now > c->updated ? p->now - c->updated : 0;
        char tmp[8];

        if (!why) {
                why = tmp;
                why_len = sizeof(tmp);
        }
        why[0] = '\0';
        if (!c->running) {
                snprintf(why, why_len, "stopped cleanly %llu s ago", (unsigned long long)age);
                return STATUS_HEALTH_STOPPED;
        }
        if (c->boot_id && c->boot_id[0] && p->boot_id[0] && strcmp(c->boot_id, p->boot_id)) {
                snprintf(why, why_len, "the host rebooted since the status was written");
                return STATUS_HEALTH_DEAD;
        }
        if (c->pid > 0 && !p->exists) {
                snprintf(why, why_len,
                         "process %d is gone (killed or crashed), last status %llu s ago",
                         (int)c->pid, (unsigned long long)age);
                return STATUS_HEALTH_DEAD;
        }
        if (c->pid > 0 && c->pid_start && p->pid_start && c->pid_start != p->pid_start) {
                snprintf(why, why_len,
                         "process %d is gone (its pid is another process's now), last status "
                         "%llu s ago",
                         (int)c->pid, (unsigned long long)age);
                return STATUS_HEALTH_DEAD;
        }
        if (age * 1000 > STATUS_STALE_PERIODS * period) {
                snprintf(why, why_len,
                         "alive but stalled: status not rewritten for %llu s (every %llu ms "
                         "expected)",
                         (unsigned long long)age, (unsigned long long)period);
                return STATUS_HEALTH_STALE;
        }
        return STATUS_HEALTH_RUNNING;
}

int status_health_pid_start(pid_t pid, uint64_t *ticks)
{
        char path[64], buf[STAT_BUF_LEN], *p, *save = NULL, *end;
        ssize_t n;
        int fd, field;

        snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return errno == ENOENT ? -ESRCH : -errno;
        n = read(fd, buf, sizeof(buf) - 1);
        close(fd);
        if (n <= 0)
                return n < 0 ? -errno : -ESRCH;
        buf[n] = '\0';
        /* the command name (field 2) may hold spaces and ')': fields go on after the last ')' */
        p = strrchr(buf, ')');
        if (!p || p[1] != ' ')
                return -EINVAL;
        if (p[2] == 'Z' || p[2] == 'X' || p[2] == 'x')
                return -ESRCH; /* dead, not reaped yet */
        for (field = 3, p = strtok_r(p + 2, " ", &save); p; p = strtok_r(NULL, " ", &save), field++)
                if (field == STAT_START_FIELD) {
                        errno = 0;
                        *ticks = strtoull(p, &end, 10);
                        return errno || *end ? -EINVAL : 0;
                }
        return -EINVAL;
}

int status_health_boot_id(char *buf, size_t len)
{
        int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
        ssize_t n;

        if (fd < 0)
                return -errno;
        n = read(fd, buf, len ? len - 1 : 0);
        close(fd);
        if (n < 0)
                return -errno;
        buf[n] = '\0';
        buf[strcspn(buf, "\n")] = '\0';
        return 0;
}

void status_health_probe(pid_t pid, struct status_probe *p)
{
        memset(p, 0, sizeof(*p));
        p->now = (uint64_t)time(NULL);
        if (status_health_boot_id(p->boot_id, sizeof(p->boot_id)))
                p->boot_id[0] = '\0';
        if (pid <= 0)
                return;
        /* Only the start time tells a pid reused by another process from ours; when /proc
         * cannot be read (hidepid), existence is what kill(0) would say: EPERM = exists. */
        switch (status_health_pid_start(pid, &p->pid_start)) {
        case 0:
                p->exists = 1;
                break;
        case -ESRCH:
                break;
        default:
                p->pid_start = 0;
                p->exists = kill(pid, 0) == 0 || errno == EPERM;
        }
}

const char *status_health_name(enum status_health h)
{
        static const char *const names[] = {
            [STATUS_HEALTH_RUNNING] = "running",
            [STATUS_HEALTH_STOPPED] = "stopped",
            [STATUS_HEALTH_DEAD] = "dead",
            [STATUS_HEALTH_STALE] = "stale",
        };

        return (unsigned)h < sizeof(names) / sizeof(names[0]) ? names[h] : "unknown";
}
