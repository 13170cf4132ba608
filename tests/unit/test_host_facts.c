/* SPDX-License-Identifier: MIT */
/*
 * test_host_facts.c — the host description the JFR files carry (sink/host_facts.c), probed
 * on this machine: the kernel from uname(2), hardware threads as /proc/cpuinfo lists them,
 * and the strings the writer receives point into the struct.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "sink/host_facts.h"

Test(host_facts, describes_this_machine)
{
        struct host_facts h;
        struct utsname u;
        host_facts_probe(&h);
        cr_assert_eq(uname(&u), 0);
        cr_assert(strstr(h.info.os_version, "uname: Linux"), "%s", h.info.os_version);
        cr_assert(strstr(h.info.os_version, u.release), "%s", h.info.os_version);
        cr_assert_eq(h.info.os_version, h.os_version);
        cr_assert_eq(h.info.cpu_name, h.cpu_name);
        cr_assert_str_neq(h.info.cpu_name, "");

        FILE *f = fopen("/proc/cpuinfo", "re");
        char line[512];
        unsigned processors = 0;
        cr_assert(f);
        while (fgets(line, sizeof(line), f))
                processors += !strncmp(line, "processor", 9);
        fclose(f);
        cr_assert_eq(h.info.hw_threads,
                     processors ? processors : (unsigned)sysconf(_SC_NPROCESSORS_CONF));
        cr_assert(h.info.sockets >= 1 && h.info.sockets <= h.info.hw_threads);
        cr_assert(h.info.cores >= h.info.sockets && h.info.cores <= h.info.hw_threads);
        char want[64];
        snprintf(want, sizeof(want), "(%u hardware threads)", processors);
        cr_assert(strstr(h.info.cpu_description, want), "%s", h.info.cpu_description);
}
