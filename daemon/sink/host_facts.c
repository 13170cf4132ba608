/* SPDX-License-Identifier: MIT */
/*
 * host_facts.c — probes the host description the JFR writer records (see host_facts.h).
 * Must never print, fail, or read anything but /etc/os-release, uname(2) and /proc/cpuinfo.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "sink/host_facts.h"

#define OS_RELEASE_PRETTY  "PRETTY_NAME="
#define MAX_CORE_KEYS      256 /* distinct (socket, core) pairs counted */
#define MAX_SOCKET_BITS    64  /* physical ids counted as distinct sockets */
#define CORE_KEY_SOCKET_SH 16  /* core key = socket << 16 | core id */

static void probe_os(struct host_facts *h)
{
        char pretty[256] = "";
        struct utsname u;
        FILE *f = fopen("/etc/os-release", "re");
        if (f) {
                char line[256];
                while (fgets(line, sizeof(line), f))
                        if (!strncmp(line, OS_RELEASE_PRETTY, strlen(OS_RELEASE_PRETTY))) {
                                char *v = line + strlen(OS_RELEASE_PRETTY), *e;
                                if (*v == '"')
                                        v++;
                                if ((e = strpbrk(v, "\"\n")))
                                        *e = 0;
                                snprintf(pretty, sizeof(pretty), "%s\n", v);
                        }
                fclose(f);
        }
        snprintf(h->os_version, sizeof(h->os_version), "unknown");
        if (!uname(&u))
                snprintf(h->os_version, sizeof(h->os_version), "%suname: %s %s %s %s", pretty,
                         u.sysname, u.release, u.version, u.machine);
}

static void probe_cpu(struct host_facts *h)
{
        char line[512];
        uint64_t sock_mask = 0;
        unsigned cores_seen = 0, hw = 0;
        uint32_t core_keys[MAX_CORE_KEYS];
        int phys = 0;
        FILE *f = fopen("/proc/cpuinfo", "re");

        snprintf(h->cpu_name, sizeof(h->cpu_name), "unknown");
        if (f) {
                while (fgets(line, sizeof(line), f)) {
                        char *v = strchr(line, ':');
                        if (!v)
                                continue;
                        v += v[1] == ' ' ? 2 : 1;
                        v[strcspn(v, "\n")] = 0;
                        if (!strncmp(line, "processor", 9))
                                hw++;
                        else if (!strncmp(line, "model name", 10))
                                snprintf(h->cpu_name, sizeof(h->cpu_name), "%s", v);
                        else if (!strncmp(line, "physical id", 11)) {
                                phys = atoi(v);
                                sock_mask |= 1ull << (phys & (MAX_SOCKET_BITS - 1));
                        } else if (!strncmp(line, "core id", 7)) {
                                uint32_t k = ((uint32_t)phys << CORE_KEY_SOCKET_SH) |
                                             ((uint32_t)atoi(v) & 0xffff);
                                unsigned i;
                                for (i = 0; i < cores_seen && core_keys[i] != k; i++)
                                        ;
                                if (i == cores_seen && cores_seen < MAX_CORE_KEYS)
                                        core_keys[cores_seen++] = k;
                        }
                }
                fclose(f);
        }
        snprintf(h->cpu_description, sizeof(h->cpu_description), "%s (%u hardware threads)",
                 h->cpu_name, hw);
        h->info.hw_threads = hw ? hw : (uint32_t)sysconf(_SC_NPROCESSORS_CONF);
        h->info.sockets = (uint32_t)__builtin_popcountll(sock_mask);
        if (!h->info.sockets)
                h->info.sockets = 1;
        h->info.cores = cores_seen ? cores_seen : h->info.hw_threads;
}

void host_facts_probe(struct host_facts *h)
{
        memset(h, 0, sizeof(*h));
        probe_os(h);
        probe_cpu(h);
        h->info.os_version = h->os_version;
        h->info.cpu_name = h->cpu_name;
        h->info.cpu_description = h->cpu_description;
}
