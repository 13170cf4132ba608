/* SPDX-License-Identifier: MIT */
/*
 * target_select.c — target selection (see target_select.h). Reads /proc and, in
 * target_select_context only, the ELF files a process maps; never prints, never writes to a
 * process or a map.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/otel_process_ctx.h"
#include "service/target_select.h"
#include "util/proc_lines.h"
#include "tls/tls_locate.h"

#define MAX_ITEMS 32

struct list {
        char buf[CONFIG_LIST_LEN];
        const char *item[MAX_ITEMS];
        int n;
};

struct target_select {
        int mode;
        struct list comm, exe, cgroup, container;
        /* what its /proc reads refused (a const selector still counts) */
        struct target_stats *target;
};

static void split_list(struct list *l, const char *s)
{
        char *p, *save = NULL, *tok;

        snprintf(l->buf, sizeof(l->buf), "%s", s);
        l->n = 0;
        for (tok = strtok_r(l->buf, ",", &save); tok && l->n < MAX_ITEMS;
             tok = strtok_r(NULL, ",", &save)) {
                while (isspace((unsigned char)*tok))
                        tok++;
                p = tok + strlen(tok);
                while (p > tok && isspace((unsigned char)p[-1]))
                        *--p = '\0';
                if (*tok)
                        l->item[l->n++] = tok;
        }
}

struct target_select *target_select_new(const struct daemon_config *c)
{
        struct target_select *t = calloc(1, sizeof(*t));

        if (t && !(t->target = calloc(1, sizeof(*t->target)))) {
                free(t);
                t = NULL;
        }
        if (!t)
                return NULL;
        t->mode = c->mode;
        split_list(&t->comm, c->comm);
        split_list(&t->exe, c->exe);
        split_list(&t->cgroup, c->cgroup);
        split_list(&t->container, c->container);
        return t;
}

void target_select_free(struct target_select *t)
{
        if (t)
                free(t->target);
        free(t);
}

void target_select_target_stats(const struct target_select *t, struct target_stats *sum)
{
        if (t && sum)
                target_stats_add(sum, t->target);
}

int target_select_mode(const struct target_select *t)
{
        return t->mode;
}

unsigned target_select_cgroups(const struct target_select *t, const char *const **paths)
{
        *paths = t->cgroup.item;
        return t->mode == TARGET_MODE_SELECTORS ? (unsigned)t->cgroup.n : 0;
}

static int read_file(pid_t pid, const char *what, char *buf, size_t len)
{
        char path[64];
        ssize_t n;
        int fd;

        snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, what);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return errno == ENOENT ? -ESRCH : -errno;
        n = read(fd, buf, len - 1);
        close(fd);
        if (n < 0)
                return errno == ESRCH ? -ESRCH : -errno;
        buf[n] = '\0';
        return (int)n;
}

static int glob_any(const struct list *l, const char *s)
{
        int i;

        for (i = 0; i < l->n; i++)
                if (!fnmatch(l->item[i], s, 0))
                        return 1;
        return 0;
}

int target_select_container_match(const char *path, const char *prefix)
{
        size_t plen = strlen(prefix);
        const char *p = path;

        while (*p) {
                const char *q = p;

                while (isxdigit((unsigned char)*q))
                        q++;
                if (q - p >= 12 && (size_t)(q - p) >= plen && !strncasecmp(p, prefix, plen))
                        return 1;
                p = *q ? q + 1 : q;
        }
        return 0;
}

/* Every line of /proc/PID/cgroup: "ID:CONTROLLERS:PATH"; v2 has ID 0 and no controllers.
 * Lines are capped (util/proc_lines.h): a path too long is refused and counted, never cut to
 * a prefix that could match. 1 match, 0 none, -errno. */
static int cgroup_match(const struct target_select *t, pid_t pid)
{
        char fn[64], *line;
        struct proc_lines r;
        int i, err, found = 0;

        snprintf(fn, sizeof(fn), "/proc/%d/cgroup", (int)pid);
        err = proc_lines_open(&r, fn, PROC_LINE_MAX_MAPS, t->target);
        if (err)
                return err;
        while (!found && (err = proc_lines_next(&r, &line, NULL)) > 0) {
                char *path = strchr(line, ':');

                if (!path || !(path = strchr(path + 1, ':')))
                        continue;
                path++;
                for (i = 0; i < t->container.n; i++)
                        found |= target_select_container_match(path, t->container.item[i]);
                if (strncmp(line, "0::", 3))
                        continue; /* cgroup prefixes are v2 paths */
                for (i = 0; i < t->cgroup.n; i++) {
                        size_t n = strlen(t->cgroup.item[i]);

                        if (!strncmp(path, t->cgroup.item[i], n) &&
                            (path[n] == '\0' || path[n] == '/' || t->cgroup.item[i][n - 1] == '/'))
                                found = 1;
                }
        }
        proc_lines_close(&r);
        return found ? 1 : err;
}

int target_select_context(pid_t pid, struct target_stats *st)
{
        int err = tls_declares_context(pid, st);
        int busy;

        if (err == -ESRCH || err == 1)
                return err;
        busy = err == -EBUSY;
        /* an OpenTelemetry process context alone (OTEP 4719) names the service */
        err = otel_pctx_present(pid, st);
        if (err == -ESRCH)
                return -ESRCH;
        return err == 1 ? 1 : busy ? TARGET_SELECT_BUSY : TARGET_SELECT_LATER;
}

int target_select_match(const struct target_select *t, pid_t pid, const char *comm)
{
        char buf[4096], exe[4096], path[64];
        ssize_t n;
        int err;

        if (pid <= 0 || pid == getpid())
                return 0;
        /* Kernel threads have no executable. */
        snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
        n = readlink(path, exe, sizeof(exe) - 1);
        if (n < 0)
                return 0; /* kernel thread, gone, or not ours to read */
        exe[n] = '\0';

        switch (t->mode) {
        case TARGET_MODE_ALL:
                return 1;
        case TARGET_MODE_CONTEXT:
                /* its ELF files and maps: off the loop (target_select_context) */
                return TARGET_SELECT_ASK;
        case TARGET_MODE_SELECTORS:
                break;
        default:
                return -EINVAL;
        }
        if (t->comm.n) {
                if (!comm) {
                        err = read_file(pid, "comm", buf, 32);
                        if (err < 0)
                                return err;
                        buf[strcspn(buf, "\n")] = '\0';
                        comm = buf;
                }
                if (glob_any(&t->comm, comm))
                        return 1;
                /* A process that renamed its main thread (prctl PR_SET_NAME) is still known
                 * by its executable's name, cut like comm to 15 characters. */
                const char *base = strrchr(exe, '/');
                const char *src = base ? base + 1 : exe;
                char name[16];
                size_t nl = strnlen(src, sizeof(name) - 1);

                memcpy(name, src, nl);
                name[nl] = '\0';
                if (glob_any(&t->comm, name))
                        return 1;
        }
        if (t->exe.n) {
                /* " (deleted)" after an upgrade: the path the process was started from. */
                size_t l = strlen(exe);

                if (l > 10 && !strcmp(exe + l - 10, " (deleted)"))
                        exe[l - 10] = '\0';
                if (glob_any(&t->exe, exe))
                        return 1;
        }
        if (t->cgroup.n || t->container.n) {
                err = cgroup_match(t, pid);
                if (err)
                        return err;
        }
        return 0;
}
