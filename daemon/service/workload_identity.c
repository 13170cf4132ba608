/* SPDX-License-Identifier: MIT */
/*
 * workload_identity.c — a process's service, executable, container and pod (see
 * workload_identity.h). Owns the cgroup path grammar of container runtimes and the kubelet.
 * Must never trust a byte of what it reads: ids are copied only when every byte has their
 * shape, names only through name_clean; never prints.
 */
#include <ctype.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "service/workload_identity.h"
#include "util/name.h"
#include "util/proc_lines.h"
#include "util/proc_pin.h"

#define CONTAINER_HEX 64
#define UUID_CHARS    36
#define DELETED       " (deleted)"

/* s[0..n) is n lowercase-able hex digits. */
static int all_hex(const char *s, size_t n)
{
        for (size_t i = 0; i < n; i++)
                if (!isxdigit((unsigned char)s[i]))
                        return 0;
        return 1;
}

/* A container id in one path component c[0..n): "<64 hex>", or "PREFIX-<64 hex>.scope"
 * (docker, cri-containerd, crio, libpod: systemd's cgroup driver). */
static int component_container(const char *c, size_t n, char out[WORKLOAD_CONTAINER_LEN])
{
        static const char scope[] = ".scope";
        const char *hex = NULL;

        if (n == CONTAINER_HEX)
                hex = c;
        else if (n > CONTAINER_HEX + sizeof(scope) &&
                 !memcmp(c + n - (sizeof(scope) - 1), scope, sizeof(scope) - 1) &&
                 c[n - (sizeof(scope) - 1) - CONTAINER_HEX - 1] == '-')
                hex = c + n - (sizeof(scope) - 1) - CONTAINER_HEX;
        if (!hex || !all_hex(hex, CONTAINER_HEX))
                return 0;
        for (size_t i = 0; i < CONTAINER_HEX; i++)
                out[i] = (char)tolower((unsigned char)hex[i]);
        out[CONTAINER_HEX] = '\0';
        return 1;
}

/* A pod uid in one component: "pod<uuid>" (cgroupfs) or "kubepods[-QOS]-pod<uuid with _>.slice"
 * (systemd). The uuid: 8-4-4-4-12 hex digits. */
static int component_pod(const char *c, size_t n, char out[WORKLOAD_POD_LEN])
{
        static const char slice[] = ".slice";
        char uid[WORKLOAD_POD_LEN];
        const char *u;

        if (n == 3 + UUID_CHARS && !memcmp(c, "pod", 3)) {
                u = c + 3;
        } else if (n > 3 + UUID_CHARS + sizeof(slice) - 1 && !memcmp(c, "kubepods", 8) &&
                   !memcmp(c + n - (sizeof(slice) - 1), slice, sizeof(slice) - 1)) {
                u = c + n - (sizeof(slice) - 1) - UUID_CHARS;
                if (memcmp(u - 4, "-pod", 4))
                        return 0;
        } else {
                return 0;
        }
        for (size_t i = 0; i < UUID_CHARS; i++) {
                int dash = i == 8 || i == 13 || i == 18 || i == 23;

                if (dash ? u[i] != '-' && u[i] != '_' : !isxdigit((unsigned char)u[i]))
                        return 0;
                uid[i] = dash ? '-' : (char)tolower((unsigned char)u[i]);
        }
        uid[UUID_CHARS] = '\0';
        memcpy(out, uid, sizeof(uid));
        return 1;
}

void workload_cgroup_parse(const char *path, char container_id[WORKLOAD_CONTAINER_LEN],
                           char pod_uid[WORKLOAD_POD_LEN])
{
        const char *p = path;

        container_id[0] = pod_uid[0] = '\0';
        while (*p) {
                size_t n = strcspn(p, "/");

                component_container(p, n, container_id); /* the innermost wins */
                component_pod(p, n, pod_uid);
                p += n;
                if (*p)
                        p++;
        }
}

/* The cgroup v2 path ("0::PATH") of procdir's process into the identity. */
static void read_cgroup(int procdir, struct workload_identity *id, struct target_stats *st)
{
        char *line;
        struct proc_lines r;

        if (proc_lines_openat(&r, procdir, "cgroup", PROC_LINE_MAX_SHORT, st))
                return;
        while (proc_lines_next(&r, &line, NULL) > 0)
                if (!strncmp(line, "0::", 3)) {
                        workload_cgroup_parse(line + 3, id->container_id, id->pod_uid);
                        break;
                }
        proc_lines_close(&r);
}

/* /proc/PID of the process with start time start (any when 0): a descriptor or -1. */
static int identity_dir(pid_t pid, uint64_t start, struct target_stats *st)
{
        uint64_t now_start;
        int dir = proc_pid_dir(pid);

        if (dir < 0 || !start)
                return dir;
        int r = proc_stat_start(dir, &now_start);

        if (r || now_start != start) {
                if (!r) /* another process holds the pid now */
                        target_stats_count(TARGET_STATS_FIELD(st, pid_recycled));
                close(dir);
                return -1;
        }
        return dir;
}

void workload_identity_read(pid_t pid, uint64_t start, const char *service, const char *fallback,
                            const char *host, struct workload_identity *id, struct target_stats *st)
{
        char exe[PATH_MAX];
        const char *base = "";
        ssize_t n = -1;
        int dir = identity_dir(pid, start, st);

        memset(id, 0, sizeof(*id));
        id->pid = pid;
        snprintf(id->host, sizeof(id->host), "%s", host ? host : "");
        if (dir >= 0)
                n = readlinkat(dir, "exe", exe, sizeof(exe) - 1);
        if (n > 0) {
                exe[n] = '\0';
                if ((size_t)n > strlen(DELETED) && !strcmp(exe + n - strlen(DELETED), DELETED))
                        exe[n - strlen(DELETED)] = '\0';
                base = strrchr(exe, '/');
                base = base ? base + 1 : exe;
                name_clean(id->exe, sizeof(id->exe), base, "");
        }
        if (service && *service)
                name_clean(id->service, sizeof(id->service), service, "unknown");
        else
                name_clean(id->service, sizeof(id->service),
                           id->exe[0] ? id->exe
                           : fallback ? fallback
                                      : "",
                           "unknown");
        if (dir >= 0) {
                read_cgroup(dir, id, st);
                close(dir);
        }
}

void workload_identity_set_service(struct workload_identity *id, const char *service)
{
        name_clean(id->service, sizeof(id->service), service, "unknown");
}
