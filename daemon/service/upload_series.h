/* SPDX-License-Identifier: MIT */
/*
 * upload_series.h — the series a finished profile is uploaded as, per target: its name (the
 * process's service with group-by = service, else the target's application) and the identity
 * that goes with it (host, pid, executable, container, pod: service/workload_identity.h).
 * Pyroscope (/ingest) gets them as the `name=` and tags `host_name`, `process_pid`,
 * `process_executable_name`, `container_id`, `k8s_pod_uid` (Pyroscope's spelling of the
 * OpenTelemetry keys); the name travels in the spool entry's extra tags as a leading
 * `__name__=NAME` (Pyroscope's own label for the application), which upload_series_name takes
 * out again when the request is built. OTLP gets one resource with `service.name`,
 * `process.pid`, `host.name`, `process.executable.name`, `container.id`, `k8s.pod.uid` and
 * the target's tags as string attributes; a host file's samples go into one resource per
 * process they came from (upload_series_set); a Pyroscope upload of a host file of several
 * services is one request per process, tagged as a process's own profile (service/uploader.c).
 * Never prints; allocates only the set.
 */
#ifndef CTXPROF_UPLOAD_SERIES_H
#define CTXPROF_UPLOAD_SERIES_H

#include <stddef.h>
#include <stdint.h>

#include "service/upload_config.h"
#include "service/workload_identity.h"
#include "sink/otlp.h"

#define UPLOAD_SERIES_EXTRA_LEN 1024 /* extra tags of one profile, with __name__= */

/* The extra tags of a Pyroscope upload of a profile of id (NULL: none) to target t: the name
 * (when t groups by service and id has one), the identity's tags, then job_extra (k=v,k=v or
 * NULL). 0 or -ENAMETOOLONG (out holds what fitted, whole tags only). */
int upload_series_tags(const struct upload_target_config *t, const struct workload_identity *id,
                       const char *job_extra, char *out, size_t len);

/* The application of a request with these extra tags: a leading __name__=NAME's NAME, else
 * application, into app; the remaining tags (possibly "") are returned. */
const char *upload_series_name(const char *extra, const char *application, char *app, size_t len);

/* What an OTLP upload of a profile of id (NULL: none) to target t says of its resource. The
 * strings point into id, t and tag_buf. */
struct upload_series_otlp {
        const char *service;
        int64_t pid;
        struct otlp_resource_attrs attrs;
        struct otlp_resource resource; /* the three above, for sink/otlp.h */
        char tag_buf[UPLOAD_TAGS_LEN];
};
void upload_series_otlp(const struct upload_target_config *t, const struct workload_identity *id,
                        struct upload_series_otlp *out);

/* The resources of an OTLP upload of a host file to t, one per process it names
 * (upload_job.procs), for jfr_convert_resources.resource_of. */
struct upload_series_set {
        unsigned n;
        struct upload_series_otlp *res; /* n of them, by process */
};
/* Fills *set for procs[0..n) when t groups by service (else set->n = 0: the file is one
 * series). 0 or -ENOMEM. */
int upload_series_set_new(const struct upload_target_config *t,
                          const struct workload_identity *procs, unsigned n,
                          struct upload_series_set *set);
void upload_series_set_free(struct upload_series_set *set);
/* The resource of process pid (ctx: a struct upload_series_set), NULL: not one of them. */
const struct otlp_resource *upload_series_resource_of(void *ctx, uint32_t pid);

#endif
