/* SPDX-License-Identifier: MIT */
/*
 * upload_series.c — a profile's series name and identity tags per upload target (see
 * upload_series.h). Must never let a target's string reach a tag unclean: the identity's
 * names are cleaned by workload_identity.c, its ids are hex or UUIDs.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "service/upload_series.h"

#define NAME_TAG "__name__="

/* The service that names the profile's series at t, or NULL (the application). */
static const char *series_service(const struct upload_target_config *t,
                                  const struct workload_identity *id)
{
        return t->group_by == UPLOAD_GROUP_SERVICE && id && id->pid && id->service[0] ? id->service
                                                                                      : NULL;
}

/* The user's tags (k=v,k=v) set key. */
static int tags_have(const char *tags, const char *key)
{
        size_t kl = strlen(key);

        for (const char *p = tags; *p; p += strcspn(p, ","), p += *p == ',')
                if (!strncmp(p, key, kl) && p[kl] == '=')
                        return 1;
        return 0;
}

/* Append ",k=v" (no comma first) when v is not empty and the user's tags do not set k (they
 * win: upload_http puts them first); -ENAMETOOLONG when it does not fit (nothing appended). */
static int add_tag(char *out, size_t len, size_t *at, const char *tags, const char *k,
                   const char *v)
{
        int n;

        if (!v || !*v || tags_have(tags, k))
                return 0;
        n = snprintf(out + *at, len - *at, "%s%s=%s", *at ? "," : "", k, v);
        if (n < 0 || (size_t)n >= len - *at) {
                out[*at] = '\0';
                return -ENAMETOOLONG;
        }
        *at += (size_t)n;
        return 0;
}

int upload_series_tags(const struct upload_target_config *t, const struct workload_identity *id,
                       const char *job_extra, char *out, size_t len)
{
        const char *svc = series_service(t, id);
        char pid[16] = "";
        size_t at = 0;
        int err = 0;

        out[0] = '\0';
        if (id && id->pid)
                snprintf(pid, sizeof(pid), "%d", (int)id->pid);
        if (svc)
                err |= add_tag(out, len, &at, "", "__name__", svc);
        if (id) {
                err |= add_tag(out, len, &at, t->tags, "host_name", id->host);
                err |= add_tag(out, len, &at, t->tags, "process_pid", pid);
                err |= add_tag(out, len, &at, t->tags, "process_executable_name", id->exe);
                err |= add_tag(out, len, &at, t->tags, "container_id", id->container_id);
                err |= add_tag(out, len, &at, t->tags, "k8s_pod_uid", id->pod_uid);
        }
        if (job_extra && *job_extra) {
                int n = snprintf(out + at, len - at, "%s%s", at ? "," : "", job_extra);

                if (n < 0 || (size_t)n >= len - at) {
                        out[at] = '\0';
                        err = -ENAMETOOLONG;
                }
        }
        return err ? -ENAMETOOLONG : 0;
}

const char *upload_series_name(const char *extra, const char *application, char *app, size_t len)
{
        size_t n;

        if (!extra || strncmp(extra, NAME_TAG, strlen(NAME_TAG))) {
                snprintf(app, len, "%s", application);
                return extra ? extra : "";
        }
        extra += strlen(NAME_TAG);
        n = strcspn(extra, ",");
        snprintf(app, len, "%.*s", (int)n, extra);
        return extra[n] ? extra + n + 1 : extra + n;
}

/* k=v as a resource attribute, unless v is empty, k is taken (service.name and process.pid
 * always are; OTLP keys are unique: the first wins) or there is no room. */
static void add_attr(struct otlp_resource_attrs *a, const char *k, const char *v)
{
        if (!strcmp(k, "service.name") || !strcmp(k, "process.pid"))
                return;
        for (unsigned i = 0; i < a->n; i++)
                if (!strcmp(a->key[i], k))
                        return;
        if (v && *v && a->n < OTLP_RESOURCE_ATTRS_MAX) {
                a->key[a->n] = k;
                a->value[a->n++] = v;
        }
}

void upload_series_otlp(const struct upload_target_config *t, const struct workload_identity *id,
                        struct upload_series_otlp *out)
{
        const char *svc = series_service(t, id);
        char *p;

        memset(out, 0, sizeof(*out));
        out->service = svc ? svc : t->application;
        if (id) {
                /* the user's tags win over the identity, as with Pyroscope */
                out->pid = id->pid;
                if (!tags_have(t->tags, "host.name"))
                        add_attr(&out->attrs, "host.name", id->host);
                if (!tags_have(t->tags, "process.executable.name"))
                        add_attr(&out->attrs, "process.executable.name", id->exe);
                if (!tags_have(t->tags, "container.id"))
                        add_attr(&out->attrs, "container.id", id->container_id);
                if (!tags_have(t->tags, "k8s.pod.uid"))
                        add_attr(&out->attrs, "k8s.pod.uid", id->pod_uid);
        }
        /* the target's tags, checked k=v,k=v (upload_tags_check): split in place */
        snprintf(out->tag_buf, sizeof(out->tag_buf), "%s", t->tags);
        for (p = out->tag_buf; *p;) {
                char *k = p, *eq = strchr(p, '='), *comma;

                if (!eq)
                        break;
                *eq = '\0';
                comma = strchr(eq + 1, ',');
                if (comma)
                        *comma = '\0';
                add_attr(&out->attrs, k, eq + 1);
                p = comma ? comma + 1 : eq + 1 + strlen(eq + 1);
        }
        out->resource = (struct otlp_resource){out->service, out->pid, &out->attrs};
}

int upload_series_set_new(const struct upload_target_config *t,
                          const struct workload_identity *procs, unsigned n,
                          struct upload_series_set *set)
{
        *set = (struct upload_series_set){0};
        if (t->group_by != UPLOAD_GROUP_SERVICE || !procs || !n)
                return 0;
        set->res = calloc(n, sizeof(*set->res));
        if (!set->res)
                return -ENOMEM;
        for (unsigned i = 0; i < n; i++)
                upload_series_otlp(t, &procs[i], &set->res[i]);
        set->n = n;
        return 0;
}

void upload_series_set_free(struct upload_series_set *set)
{
        free(set->res);
        *set = (struct upload_series_set){0};
}

const struct otlp_resource *upload_series_resource_of(void *ctx, uint32_t pid)
{
        const struct upload_series_set *set = ctx;

        for (unsigned i = 0; i < set->n; i++)
                if (set->res[i].pid == (int64_t)pid)
                        return &set->res[i].resource;
        return NULL;
}
