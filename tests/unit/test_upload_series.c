/* SPDX-License-Identifier: MIT */
/*
 * test_upload_series.c — one series per service: container ids and pod uids read off cgroup
 * paths of docker, containerd, cri-o and the kubelet (systemd and cgroupfs drivers), and
 * nothing read off paths that only look like them; a process's identity read from its real
 * /proc (this test's own); the Pyroscope name and tags and the OTLP resource per target
 * (group-by = service or none), taken apart again as the request is built.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "service/upload_series.h"
#include "service/workload_identity.h"
#include "util/proc_pin.h"

#define CID  "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define UID  "8f4a1b2c-3d4e-5f60-7182-93a4b5c6d7e8"
#define UID_ "8f4a1b2c_3d4e_5f60_7182_93a4b5c6d7e8"

static void parse(const char *path, const char *cid, const char *uid)
{
        char c[WORKLOAD_CONTAINER_LEN], u[WORKLOAD_POD_LEN];

        workload_cgroup_parse(path, c, u);
        cr_expect_str_eq(c, cid, "%s: container %s", path, c);
        cr_expect_str_eq(u, uid, "%s: pod %s", path, u);
}

Test(workload_identity, cgroup_paths)
{
        parse("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_
              ".slice/cri-containerd-" CID ".scope",
              CID, UID);
        parse("/kubepods.slice/kubepods-pod" UID_ ".slice/crio-" CID ".scope", CID, UID);
        parse("/kubepods/burstable/pod" UID "/" CID, CID, UID);
        parse("/system.slice/docker-" CID ".scope", CID, "");
        parse("/docker/" CID, CID, "");
        parse("/user.slice/user-1000.slice/session-3.scope", "", "");
        parse("/", "", "");
        parse("", "", "");
        /* upper case is made lower; the systemd '_' of a uid becomes '-' */
        parse("/kubepods-besteffort-pod8F4A1B2C_3D4E_5F60_7182_93A4B5C6D7E8.slice/docker-"
              "0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF.scope",
              CID, UID);
        /* look-alikes: one digit short or long, a non-hex byte, no dash, a uuid out of shape,
         * a pod outside a kubepods slice, trailing bytes */
        parse("/docker-" CID "0.scope", "", "");
        parse("/docker-"
              "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdeg"
              ".scope",
              "", "");
        parse("/docker" CID ".scope", "", "");
        parse("/kubepods-pod8f4a1b2c3d4e_5f60_7182_93a4b5c6d7e8x.slice", "", "");
        parse("/evil-pod" UID_ ".slice", "", "");
        parse("/pod" UID "x/" CID "x", "", "");
        parse("/docker-" CID ".scope,k=v", "", "");
}

Test(workload_identity, own_process)
{
        struct workload_identity id;
        workload_identity_read(getpid(), 0, "svc, with {bad}=bytes\n", "x", "h1", &id, NULL);
        cr_expect_str_eq(id.service, "svc__with__bad__bytes_");
        cr_expect_str_eq(id.host, "h1");
        cr_expect_eq(id.pid, getpid());
        cr_expect_str_eq(id.exe, "test_upload_series");
        workload_identity_read(getpid(), 0, NULL, "x", "h1", &id, NULL);
        cr_expect_str_eq(id.service, "test_upload_series", "no service.name: the executable");
}

/* A sample's process is known by its start time too: /proc/PID of a process with another
 * start (the pid went to another process) is not read, and that is counted. */
Test(workload_identity, another_process_by_its_start)
{
        struct workload_identity id;
        struct target_stats st = {0};
        uint64_t start;
        int dir = proc_pid_dir(getpid());

        cr_assert(dir >= 0);
        cr_assert_eq(proc_stat_start(dir, &start), 0);
        close(dir);
        workload_identity_read(getpid(), start, NULL, "x", "h1", &id, &st);
        cr_expect_str_eq(id.exe, "test_upload_series", "its own start: read");
        cr_expect_eq(st.pid_recycled, 0);
        workload_identity_read(getpid(), start + 1, NULL, "x", "h1", &id, &st);
        cr_expect_str_eq(id.exe, "", "another start: /proc/PID is another process's");
        cr_expect_str_eq(id.service, "x", "named by the caller's fallback");
        cr_expect_eq(st.pid_recycled, 1);
}

static struct workload_identity ident(void)
{
        struct workload_identity id = {.pid = 42};

        strcpy(id.service, "checkout");
        strcpy(id.host, "node-1");
        strcpy(id.exe, "java");
        strcpy(id.container_id, CID);
        strcpy(id.pod_uid, UID);
        return id;
}

Test(upload_series, pyroscope_name_and_tags)
{
        struct upload_target_config t = {.application = "app", .group_by = UPLOAD_GROUP_SERVICE};
        struct workload_identity id = ident();
        char tags[UPLOAD_SERIES_EXTRA_LEN], app[UPLOAD_APP_LEN];
        const char *rest;

        cr_assert_eq(upload_series_tags(&t, &id, NULL, tags, sizeof(tags)), 0);
        cr_expect_str_eq(tags,
                         "__name__=checkout,host_name=node-1,process_pid=42,"
                         "process_executable_name=java,container_id=" CID ",k8s_pod_uid=" UID);
        rest = upload_series_name(tags, t.application, app, sizeof(app));
        cr_expect_str_eq(app, "checkout");
        cr_expect_str_eq(rest, "host_name=node-1,process_pid=42,process_executable_name=java,"
                               "container_id=" CID ",k8s_pod_uid=" UID);
        /* group-by = none: the application names it, the identity still tags it */
        t.group_by = UPLOAD_GROUP_NONE;
        cr_assert_eq(upload_series_tags(&t, &id, "a=b", tags, sizeof(tags)), 0);
        rest = upload_series_name(tags, t.application, app, sizeof(app));
        cr_expect_str_eq(app, "app");
        cr_expect(strstr(rest, "process_pid=42") == rest + strlen("host_name=node-1,"));
        cr_expect(!strcmp(rest + strlen(rest) - 4, ",a=b"));
        /* the host file: host only, the application */
        t.group_by = UPLOAD_GROUP_SERVICE;
        struct workload_identity host = {0};
        strcpy(host.host, "node-1");
        cr_assert_eq(upload_series_tags(&t, &host, NULL, tags, sizeof(tags)), 0);
        cr_expect_str_eq(tags, "host_name=node-1");
        cr_expect_str_eq(upload_series_name(tags, "app", app, sizeof(app)), "host_name=node-1");
        cr_expect_str_eq(app, "app");
        /* no identity, no extra (record --upload, recovered files) */
        cr_assert_eq(upload_series_tags(&t, NULL, NULL, tags, sizeof(tags)), 0);
        cr_expect_str_eq(tags, "");
        cr_expect_str_eq(upload_series_name(NULL, "app", app, sizeof(app)), "");
        /* a user's tag of the same key wins (upload_http puts the user's tags first) */
        strcpy(t.tags, "env=a,host_name=h2");
        cr_assert_eq(upload_series_tags(&t, &id, NULL, tags, sizeof(tags)), 0);
        cr_expect(!strstr(tags, "host_name"), "%s", tags);
        cr_expect(strstr(tags, "process_pid=42"), "%s", tags);
        t.tags[0] = '\0';
        /* too small: whole tags only */
        cr_expect_eq(upload_series_tags(&t, &id, NULL, tags, 40), -ENAMETOOLONG);
        cr_expect_str_eq(tags, "__name__=checkout,host_name=node-1");
}

Test(upload_series, otlp_resource)
{
        struct upload_target_config t = {.application = "app",
                                         .tags = "env=prod,team=a,host.name=x,service.name=y,env=z",
                                         .group_by = UPLOAD_GROUP_SERVICE};
        struct workload_identity id = ident();
        struct upload_series_otlp r;
        char all[1024] = "";

        /* the user's tags win over the identity's keys (not over service.name and
         * process.pid: the series), a repeated tag is taken once */
        upload_series_otlp(&t, &id, &r);
        cr_expect_str_eq(r.service, "checkout");
        cr_expect_eq(r.pid, 42);
        for (unsigned i = 0; i < r.attrs.n; i++)
                snprintf(all + strlen(all), sizeof(all) - strlen(all), "%s=%s;", r.attrs.key[i],
                         r.attrs.value[i]);
        cr_expect_str_eq(all, "process.executable.name=java;container.id=" CID ";k8s.pod.uid=" UID
                              ";env=prod;team=a;host.name=x;");
        t.group_by = UPLOAD_GROUP_NONE;
        upload_series_otlp(&t, &id, &r);
        cr_expect_str_eq(r.service, "app");
        upload_series_otlp(&t, NULL, &r);
        cr_expect_str_eq(r.service, "app");
        cr_expect_eq(r.pid, 0);
        cr_expect_eq(r.attrs.n, 3); /* env, team, host.name: nothing names a host */
}
