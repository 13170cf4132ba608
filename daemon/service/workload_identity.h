/* SPDX-License-Identifier: MIT */
/*
 * workload_identity.h — who a recorded process is, for the series it is uploaded as: its
 * service (the OpenTelemetry service.name it publishes, else its executable's base name), its
 * pid and executable name, and the container id and Kubernetes pod uid its cgroup path names
 * (docker/containerd/cri-o scopes `.../docker-<64 hex>.scope`,
 * `.../cri-containerd-<64 hex>.scope`, `.../crio-<64 hex>.scope`, cgroupfs `.../<64 hex>`;
 * kubelet slices `.../kubepods-burstable-pod<uid with _>.slice/...` or
 * `/kubepods/burstable/pod<uid>/...`). Everything here comes from the target: names are
 * cleaned (util/name.h) and cut to their field, ids are taken only when they have exactly
 * their shape (64 hex digits; a UUID), and /proc/PID/cgroup is read with a line cap (a longer
 * line is counted, never parsed). Never prints, never allocates.
 */
#ifndef CTXPROF_WORKLOAD_IDENTITY_H
#define CTXPROF_WORKLOAD_IDENTITY_H

#include <stdint.h>
#include <sys/types.h>

#include "util/target_stats.h"

#define WORKLOAD_NAME_LEN      128 /* service and executable names, cleaned */
#define WORKLOAD_HOST_LEN      64
#define WORKLOAD_CONTAINER_LEN 65 /* 64 lowercase hex digits */
#define WORKLOAD_POD_LEN       37 /* a UUID, lowercase, with '-' */

struct workload_identity {
        char service[WORKLOAD_NAME_LEN];           /* "" = none (the host file) */
        char host[WORKLOAD_HOST_LEN];              /* host.name */
        pid_t pid;                                 /* 0 = none (the host file) */
        char exe[WORKLOAD_NAME_LEN];               /* process.executable.name, "" = unknown */
        char container_id[WORKLOAD_CONTAINER_LEN]; /* "" = none */
        char pod_uid[WORKLOAD_POD_LEN];            /* "" = none */
};

/* What one cgroup path says: *container_id and *pod_uid ("" = not named). The innermost
 * match wins. */
void workload_cgroup_parse(const char *path, char container_id[WORKLOAD_CONTAINER_LEN],
                           char pod_uid[WORKLOAD_POD_LEN]);

/* The identity of process pid: exe from /proc/PID/exe, container and pod from the cgroup v2
 * line of /proc/PID/cgroup (lines too long counted in st, may be NULL), service = service
 * (NULL or "": the executable's name, else `fallback`), host copied. Always fills *id (a
 * field it cannot read stays ""). start (non-zero): the process's start time (its identity,
 * util/proc_pin.h); when pid is another process's now, nothing of /proc/PID is read (counted
 * pid_recycled): both files are read through one /proc/PID, whose process has that start. */
void workload_identity_read(pid_t pid, uint64_t start, const char *service, const char *fallback,
                            const char *host, struct workload_identity *id,
                            struct target_stats *st);

/* The service of id set to service (a service.name the process published later). */
void workload_identity_set_service(struct workload_identity *id, const char *service);

#endif
