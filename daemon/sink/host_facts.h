/* SPDX-License-Identifier: MIT */
/*
 * host_facts.h — what the JFR files say about the machine (jdk.OSInformation,
 * jdk.CPUInformation): OS release and uname, CPU model, sockets, cores, hardware threads,
 * probed from /etc/os-release, uname(2) and /proc/cpuinfo. Owns the strings it returns.
 * Never prints and never fails: anything unreadable becomes "unknown" or a count from
 * sysconf.
 */
#ifndef CTXPROF_HOST_FACTS_H
#define CTXPROF_HOST_FACTS_H

#include "jfr/jfr_writer.h"

#define HOST_FACTS_OS_MAX  512
#define HOST_FACTS_CPU_MAX 256

struct host_facts {
        struct jfr_host_info info; /* points into the buffers below */
        char os_version[HOST_FACTS_OS_MAX];
        char cpu_name[HOST_FACTS_CPU_MAX];
        char cpu_description[HOST_FACTS_CPU_MAX + 64];
};

void host_facts_probe(struct host_facts *h);

#endif
