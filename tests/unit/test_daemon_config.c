/* SPDX-License-Identifier: MIT */
/*
 * test_daemon_config.c — the daemon's library parts without BPF: config parsing (INI with
 * inline comments, bad values with their line, flags), container id matching, output file
 * naming (host and per-process) and retention by age and size in a real directory.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include "service/config.h"
#include "service/output_dir.h"
#include "engine/sampler.h"
#include "service/target_select.h"

static char *write_tmp(const char *text)
{
        static char path[64];
        int fd;

        snprintf(path, sizeof(path), "/tmp/ctxprof-conf.XXXXXX");
        fd = mkstemp(path);
        cr_assert(fd >= 0);
        cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
        close(fd);
        return path;
}

Test(config, full_file_with_inline_comments)
{
        struct daemon_config c;
        struct config_error e;
        char *p =
            write_tmp("[sampling]\nfrequency = 49  ; Hz\nevent = cycles\ncall-graph = dwarf\n"
                      "[targets]\nmode = selectors\ncomm = nginx*, myapp ; names\n"
                      "exe = /usr/bin/myapp\ncgroup = /system.slice/a.service\n"
                      "container = 0123abcd\n[output]\ndirectory = /srv/p\n"
                      "chunk-period = 30s\nrotate = size\nrotate-period = 10m\n"
                      "rotate-size = 64M\nretain-age = 7d\nretain-size = 1G\nsplit = process\n"
                      "split-max-open = 8 ; files\n"
                      "[daemon]\nlog-level = debug\nstatus-file = /run/x/status\n");

        config_defaults(&c);
        cr_assert_eq(config_load(&c, p, &e), 0, "line %d %s", e.line, e.key);
        unlink(p);
        cr_assert_eq(c.frequency, 49);
        cr_assert_eq(c.event, SAMPLER_EV_CYCLES);
        cr_assert_eq(c.call_graph, 1);
        cr_assert_eq(c.mode, TARGET_MODE_SELECTORS);
        cr_assert_str_eq(c.comm, "nginx*, myapp");
        cr_assert_str_eq(c.directory, "/srv/p");
        cr_assert_eq(c.chunk_period_ms, 30000);
        cr_assert_eq(c.rotate, ROTATE_SIZE);
        cr_assert_eq(c.rotate_period_ms, 600000);
        cr_assert_eq(c.rotate_size, 64ull << 20);
        cr_assert_eq(c.retain_age_ms, 7ull * 86400000);
        cr_assert_eq(c.retain_size, 1ull << 30);
        cr_assert_eq(c.split, SPLIT_PROCESS);
        cr_assert_eq(c.split_max_open, 8);
        cr_assert_eq(c.log_level, LOG_DEBUG);
        cr_assert_str_eq(c.status_file, "/run/x/status");
}

Test(config, bad_value_reports_line_and_keeps_settings)
{
        struct daemon_config c;
        struct config_error e;
        char *p = write_tmp("[sampling]\nfrequency = 7\n[output]\nrotate-size = lots\n");

        config_defaults(&c);
        cr_assert_eq(config_load(&c, p, &e), -EINVAL);
        cr_assert_eq(e.line, 4);
        cr_assert_str_eq(e.key, "output.rotate-size");
        cr_assert_eq(c.frequency, 99, "a failed load changed the settings");
        p = write_tmp("[sampling]\nfrequncy = 7\n");
        cr_assert_eq(config_load(&c, p, &e), -ENOENT);
        unlink(p);
        cr_assert_eq(config_load(&c, "/nonexistent/ctxprof.conf", &e), -ENOENT);
        cr_assert_eq(c.split, SPLIT_HOST);
        cr_assert_eq(c.split_max_open, 32);
        cr_assert_eq(config_set(&c, NULL, "split", "process"), 0);
        cr_assert_eq(c.split, SPLIT_PROCESS);
        cr_assert_eq(config_set(&c, NULL, "split", "thread"), -EINVAL);
        cr_assert_eq(config_set(&c, NULL, "split-max-open", "0"), -EINVAL);
        cr_assert_eq(config_set(&c, NULL, "split-max-open", "1025"), -EINVAL);
        cr_assert_eq(config_set(&c, NULL, "split-max-open", "2x"), -EINVAL);
        cr_assert_eq(config_set(&c, "output", "split-max-open", "1024"), 0);
        cr_assert_eq(c.split_max_open, 1024);
        cr_assert_eq(c.max_stacks, 0, "default: the trace table's own");
        cr_assert_eq(config_set(&c, NULL, "max-stacks", "255"), -EINVAL);
        cr_assert_eq(config_set(&c, NULL, "max-stacks", "262145"), -EINVAL);
        cr_assert_eq(config_set(&c, NULL, "max-stacks", "4k"), -EINVAL);
        cr_assert_eq(config_set(&c, "output", "max-stacks", "65536"), 0);
        cr_assert_eq(c.max_stacks, 65536);
        cr_assert_eq(config_set(&c, NULL, "directory", "relative/dir"), -EINVAL);
        cr_assert_eq(config_set(&c, NULL, "frequency", "0"), -EINVAL);
        cr_assert_eq(config_set(&c, NULL, "rotate-period", "5m"), 0);
        cr_assert_eq(c.rotate_period_ms, 300000);
        /* the status file's period: 2 s unless set, 1 s to 1 min (its `updated` counts
         * seconds: two rewrites in one second would look like one) */
        cr_assert_eq(c.status_period_ms, 2000);
        cr_assert_eq(config_set(&c, NULL, "status-period", "500ms"), -EINVAL);
        cr_assert_eq(config_set(&c, NULL, "status-period", "61s"), -EINVAL);
        cr_assert_eq(c.status_period_ms, 2000, "a refused value was stored");
        cr_assert_eq(config_set(&c, "daemon", "status-period", "1s"), 0);
        cr_assert_eq(c.status_period_ms, 1000);
}

/* Durations and sizes are parsed in integers: an overflow or an absurd value is an error,
 * never a wrapped number (18446744073710ms used to become ~0.45 ms once in nanoseconds). */
Test(config, durations_and_sizes_refuse_overflow_and_absurd_values)
{
        struct daemon_config c;
        uint64_t v = 7;

        cr_assert_eq(config_parse_duration("1.5s", 0, CONFIG_DURATION_MAX_MS, &v), 0);
        cr_assert_eq(v, 1500);
        cr_assert_eq(config_parse_duration("2h", 0, CONFIG_DURATION_MAX_MS, &v), 0);
        cr_assert_eq(v, 7200000);
        cr_assert_eq(config_parse_duration("3650d", 0, CONFIG_DURATION_MAX_MS, &v), 0);
        cr_assert_eq(config_parse_duration("3651d", 0, CONFIG_DURATION_MAX_MS, &v), -ERANGE);
        cr_assert_eq(config_parse_duration("18446744073710ms", 0, UINT64_MAX, &v), 0,
                     "fits in 64 bits as ms");
        cr_assert_eq(config_parse_duration("18446744073710ms", 0, CONFIG_DURATION_MAX_MS, &v),
                     -ERANGE);
        cr_assert_eq(config_parse_duration("99999999999d", 0, CONFIG_DURATION_MAX_MS, &v), -ERANGE);
        cr_assert_eq(config_parse_duration("999999999999d", 0, UINT64_MAX, &v), -ERANGE,
                     "overflows 64 bits");
        cr_assert_eq(config_parse_duration("99999999999999999999", 0, UINT64_MAX, &v), -ERANGE);
        v = 7;
        for (const char *const *bad =
                 (const char *const[]){"", "s", "-1s", "+1s", " 1s", "1e3", "0x10", "inf", "nan",
                                       "1.s", ".5s", "1 s", "1w", "1.0000000001s", NULL};
             *bad; bad++)
                cr_assert_eq(config_parse_duration(*bad, 0, UINT64_MAX, &v), -EINVAL, "'%s'", *bad);
        cr_assert_eq(v, 7, "a refused value was stored");
        cr_assert_eq(config_parse_size("1.5K", 0, CONFIG_SIZE_MAX, &v), 0);
        cr_assert_eq(v, 1536);
        cr_assert_eq(config_parse_size("64MiB", 0, CONFIG_SIZE_MAX, &v), 0);
        cr_assert_eq(v, 64ull << 20);
        cr_assert_eq(config_parse_size("1.999999999T", 0, CONFIG_SIZE_MAX, &v), 0);
        cr_assert_eq(v,
                     (1ull << 40) + (uint64_t)(((unsigned __int128)999999999 << 40) / 1000000000));
        cr_assert_eq(config_parse_size("1025T", 0, CONFIG_SIZE_MAX, &v), -ERANGE);
        cr_assert_eq(config_parse_size("99999999T", 0, UINT64_MAX, &v), -ERANGE);

        config_defaults(&c);
        cr_assert_eq(config_set(&c, NULL, "chunk-period", "18446744073710ms"), -EINVAL);
        cr_assert_eq(config_set(&c, NULL, "chunk-period", "99999999999d"), -EINVAL);
        cr_assert_eq(config_set(&c, NULL, "chunk-period", "2h"), -EINVAL, "over 1h");
        cr_assert_eq(config_set(&c, NULL, "chunk-period", "99ms"), -EINVAL);
        cr_assert_eq(c.chunk_period_ms, 60000, "a refused value was stored");
        cr_assert_eq(config_set(&c, NULL, "chunk-period", "1h"), 0);
        cr_assert_eq(c.chunk_period_ms, 3600000);
        cr_assert_eq(config_set(&c, NULL, "retain-age", "99999999999d"), -EINVAL);
        cr_assert_eq(config_set(&c, NULL, "retain-age", "0"), 0);
        cr_assert_eq(config_set(&c, NULL, "rotate-size", "4095"), -EINVAL);
        cr_assert_eq(config_set(&c, NULL, "retain-size", "18446744073709551616"), -EINVAL);
        cr_assert_str_eq(config_values("output.chunk-period"), "a duration from 100ms to 1h");
        cr_assert_str_eq(config_values("chunk-period"), "a duration from 100ms to 1h");
        cr_assert_null(config_values("directory"));
}

/* [sampling] filter: kept as written when every term parses, refused (settings unchanged)
 * when one does not; the daemon's sampler gets the same terms. */
Test(config, context_filter)
{
        struct daemon_config c;
        struct config_error e;
        struct context_filter f = {0};
        char *p = write_tmp("[sampling]\nfilter = route=/checkout,!tier=free\n");

        config_defaults(&c);
        cr_assert_str_eq(c.filter, "", "no filter by default");
        cr_assert_eq(config_load(&c, p, &e), 0);
        unlink(p);
        cr_assert_str_eq(c.filter, "route=/checkout,!tier=free");
        cr_assert_eq(context_filter_add(&f, c.filter, NULL), 0);
        cr_assert_eq(f.n, 2);
        cr_assert_eq(config_set(&c, NULL, "filter", "has-context"), 0);
        cr_assert_str_eq(c.filter, "has-context");
        cr_assert_eq(config_set(&c, NULL, "filter", "=x"), -EINVAL);
        cr_assert_eq(config_set(&c, "sampling", "filter", "a,,b"), -EINVAL);
        cr_assert_str_eq(c.filter, "has-context", "a refused filter changed the setting");
        cr_assert_not_null(config_values("sampling.filter"));
        p = write_tmp("[sampling]\nfilter = !\n");
        cr_assert_eq(config_load(&c, p, &e), -EINVAL);
        unlink(p);
        cr_assert_eq(e.line, 2);
        cr_assert_str_eq(e.key, "sampling.filter");
}

Test(config, duplicate_key_names_both_lines)
{
        struct daemon_config c;
        struct config_error e;
        char *p = write_tmp("[output]\nchunk-period = 10s\n; comment\n[daemon]\nlog-level = info\n"
                            "[output]\nchunk-period = 20s\n");

        config_defaults(&c);
        cr_assert_eq(config_load(&c, p, &e), -EEXIST);
        unlink(p);
        cr_assert_eq(e.line, 7);
        cr_assert_eq(e.first_line, 2);
        cr_assert_str_eq(e.key, "output.chunk-period");
        cr_assert_eq(c.chunk_period_ms, 60000, "a failed load changed the settings");
        /* a continuation line (leading white space) is the same key again for libinih */
        p = write_tmp("[targets]\ncomm = a,\n  b\n");
        cr_assert_eq(config_load(&c, p, &e), -EINVAL);
        unlink(p);
        cr_assert_eq(e.line, 3);
}

/* libinih cuts a line at 200 bytes and miscounts the lines after it: a long line is refused
 * with its own number, and the lines around it keep theirs. */
Test(config, long_line_has_its_own_line_number)
{
        struct daemon_config c;
        struct config_error e;
        static char text[200000];
        int n;

        n = snprintf(text, sizeof(text), "[targets]\nmode = selectors\ncomm = ");
        memset(text + n, 'x', 100000);
        n += 100000;
        snprintf(text + n, sizeof(text) - (size_t)n, "\nexe = /bin/true\n");
        char *p = write_tmp(text);

        config_defaults(&c);
        cr_assert_eq(config_load(&c, p, &e), -E2BIG);
        unlink(p);
        cr_assert_eq(e.line, 3);
        cr_assert_str_eq(c.comm, "", "a failed load changed the settings");

        /* the longest line libinih keeps whole is accepted, one more byte is not */
        n = snprintf(text, sizeof(text), "[targets]\n\ncomm = ");
        memset(text + n, 'y', CONFIG_LINE_MAX - 7);
        snprintf(text + n + CONFIG_LINE_MAX - 7, 100, "\nfrequency\n");
        p = write_tmp(text);
        cr_assert_eq(config_load(&c, p, &e), -EINVAL, "the bad line after the long one");
        cr_assert_eq(e.line, 4);
        unlink(p);
        text[n + CONFIG_LINE_MAX - 7] = 'y';
        snprintf(text + n + CONFIG_LINE_MAX - 6, 100, "\n");
        p = write_tmp(text);
        cr_assert_eq(config_load(&c, p, &e), -E2BIG);
        cr_assert_eq(e.line, 3);
        unlink(p);
}

Test(target_select, container_ids)
{
        cr_assert(target_select_container_match(
            "/system.slice/docker-0123abcdef0123456789abcdef.scope", "0123abcd"));
        cr_assert(target_select_container_match("/kubepods/pod1/cri-containerd-ABCDEF012345.scope",
                                                "abcdef"));
        cr_assert_not(target_select_container_match("/system.slice/x-0123abcd.scope", "0123abcd"),
                      "8 hex digits are no container id");
        cr_assert_not(target_select_container_match("/docker/ffff0123abcdef0123", "0123abcd"));
}

static void touch(const char *dir, const char *name, size_t size, time_t age)
{
        char path[512];
        struct timeval tv[2];
        FILE *f;

        snprintf(path, sizeof(path), "%s/%s", dir, name);
        f = fopen(path, "w");
        cr_assert(f);
        for (size_t i = 0; i < size; i++)
                fputc('x', f);
        fclose(f);
        gettimeofday(&tv[0], NULL);
        tv[0].tv_sec -= age;
        tv[1] = tv[0];
        cr_assert_eq(utimes(path, tv), 0);
}

/* Names planted before the daemon writes (a dangling link under the next .part or .jfr name,
 * as an attacker would leave for a root daemon) are skipped, never followed: nothing is
 * created through a link, and the recording takes the next free name. */
Test(output_dir, planted_links_are_never_followed)
{
        char dir[] = "/tmp/ctxprof-out.XXXXXX", out[64], path[600], victim[600], why[256];
        struct output_file f;
        int dfd;

        cr_assert(mkdtemp(dir));
        snprintf(out, sizeof(out), "%s/out", dir);
        snprintf(victim, sizeof(victim), "%s/victim", dir);
        dfd = output_dir_open(out, why, sizeof(why));
        cr_assert_geq(dfd, 0, "%s", why);
        snprintf(path, sizeof(path), "%s/ctxprof-h-19710101T000000Z.jfr.part", out);
        cr_assert_eq(symlink(victim, path), 0);
        snprintf(path, sizeof(path), "%s/ctxprof-h-19710101T000000Z-1.jfr", out);
        cr_assert_eq(symlink(victim, path), 0);
        cr_assert_eq(output_dir_new_file(dfd, out, "h", 86400 * 365, &f), 0);
        close(f.fd);
        cr_assert(strstr(f.part, "19710101T000000Z-2.jfr.part"), "%s", f.part);
        cr_assert_neq(access(victim, F_OK), 0, "a file was created through a planted link");
        /* the finished name taken meanwhile: the rename never replaces it */
        cr_assert_eq(symlink(victim, f.final), 0);
        cr_assert_eq(output_dir_finish(dfd, &f), -EEXIST);
        cr_assert_neq(access(victim, F_OK), 0);
        close(dfd);
        snprintf(path, sizeof(path), "rm -rf %s", dir);
        cr_assert_eq(system(path), 0);
}

/* A directory others can write (sticky or not), or one reached through a link planted in
 * such a directory, is refused with a reason; a root-owned directory inside a sticky one is
 * fine. */
Test(output_dir, refuses_directories_others_can_write)
{
        char dir[] = "/tmp/ctxprof-out.XXXXXX", path[600], why[256];
        int dfd;

        cr_assert(mkdtemp(dir));
        snprintf(path, sizeof(path), "%s/open", dir);
        cr_assert_eq(mkdir(path, 0700), 0);
        cr_assert_eq(chmod(path, 0777), 0);
        cr_assert_eq(output_dir_open(path, why, sizeof(why)), -EPERM);
        cr_assert(strstr(why, "writable by others"), "%s", why);
        cr_assert_eq(chmod(path, 01777), 0);
        cr_assert_eq(output_dir_open(path, why, sizeof(why)), -EPERM, "sticky is refused too");
        cr_assert(strstr(why, "sticky"), "%s", why);
        cr_assert_eq(chmod(path, 0770), 0);
        cr_assert_eq(output_dir_open(path, why, sizeof(why)), -EPERM);
        cr_assert(strstr(why, "its group"), "%s", why);
        cr_assert_eq(chmod(path, 01777), 0);
        snprintf(path, sizeof(path), "%s/open/mine", dir);
        dfd = output_dir_open(path, why, sizeof(why));
        cr_assert_geq(dfd, 0, "a directory of ours below a sticky one: %s", why);
        close(dfd);
        snprintf(path, sizeof(path), "%s/open/../open/mine", dir);
        cr_assert_eq(output_dir_open(path, why, sizeof(why)), -EINVAL);
        cr_assert_eq(output_dir_open("relative/dir", why, sizeof(why)), -EINVAL);
        if (geteuid() == 0) {
                char link[600];

                /* a link of another user in the sticky directory: not followed */
                snprintf(path, sizeof(path), "%s/open/mine", dir);
                snprintf(link, sizeof(link), "%s/open/link", dir);
                cr_assert_eq(symlink(path, link), 0);
                cr_assert_eq(lchown(link, 65534, 65534), 0);
                cr_assert_eq(output_dir_open(link, why, sizeof(why)), -EPERM);
                cr_assert(strstr(why, "symbolic link of uid 65534"), "%s", why);
                /* the same link of root's: followed */
                cr_assert_eq(lchown(link, 0, 0), 0);
                dfd = output_dir_open(link, why, sizeof(why));
                cr_assert_geq(dfd, 0, "%s", why);
                close(dfd);
                /* a directory of another user */
                cr_assert_eq(chown(path, 65534, 65534), 0);
                cr_assert_eq(output_dir_open(path, why, sizeof(why)), -EPERM);
                cr_assert(strstr(why, "belongs to uid 65534"), "%s", why);
        }
        snprintf(path, sizeof(path), "rm -rf %s", dir);
        cr_assert_eq(system(path), 0);
}

Test(output_dir, names_and_retention)
{
        char dir[] = "/tmp/ctxprof-out.XXXXXX", sub[64], path[600], why[256];
        struct output_file f1, f2;
        struct output_retain_result r;
        struct stat st;
        int dfd;

        cr_assert(mkdtemp(dir));
        snprintf(sub, sizeof(sub), "%s/a/b", dir);
        dfd = output_dir_open(sub, why, sizeof(why));
        cr_assert_geq(dfd, 0, "%s: %s", strerror(-dfd), why);
        cr_assert_eq(stat(sub, &st), 0);
        cr_assert_eq(st.st_mode & 0777, 0750);

        cr_assert_eq(output_dir_new_file(dfd, sub, "my host!", 86400 * 365, &f1), 0);
        snprintf(path, sizeof(path), "%s/ctxprof-my_host_-19710101T000000Z.jfr.part", sub);
        cr_assert_str_eq(f1.part, path);
        cr_assert_eq(fstat(f1.fd, &st), 0);
        cr_assert_eq(st.st_mode & 0777, 0640);
        cr_assert_eq(stat(f1.part, &st), 0, "the .part is created at once");
        close(f1.fd);
        cr_assert_eq(output_dir_new_file(dfd, sub, "my host!", 86400 * 365, &f2), 0);
        close(f2.fd);
        cr_assert(strstr(f2.final, "19710101T000000Z-1.jfr"), "%s", f2.final);
        cr_assert_eq(output_dir_finish(dfd, &f1), 0);
        cr_assert_eq(access(f1.final, F_OK), 0);
        cr_assert_eq(output_dir_discard(dfd, &f2), 0);
        cr_assert_neq(access(f2.part, F_OK), 0);

        /* per process: pid and command (sanitized, <= 15 characters) before the time */
        cr_assert_eq(
            output_dir_new_process_file(dfd, sub, "h", 4242, "my app/x:1", 86400 * 365, &f2), 0);
        close(f2.fd);
        snprintf(path, sizeof(path), "%s/ctxprof-h-4242-my_app_x_1-19710101T000000Z.jfr", sub);
        cr_assert_str_eq(f2.final, path);
        cr_assert(strstr(f2.part, "19710101T000000Z.jfr.part"), "%s", f2.part);
        cr_assert_eq(output_dir_new_process_file(dfd, sub, "h", 7, "", 86400 * 365, &f2), 0);
        close(f2.fd);
        cr_assert(strstr(f2.final, "/ctxprof-h-7-unknown-19710101T000000Z.jfr"), "%s", f2.final);
        cr_assert_eq(
            output_dir_new_process_file(dfd, sub, "h", 7, "a-very-long-command-name", 0, &f2), 0);
        close(f2.fd);
        cr_assert(strstr(f2.final, "/ctxprof-h-7-a-very-long-com-19700101T000000Z.jfr"), "%s",
                  f2.final);

        /* age: 3 days old goes with a 2-day limit; .part and foreign files never go */
        touch(sub, "ctxprof-h-20200101T000000Z.jfr", 100, 3 * 86400);
        touch(sub, "ctxprof-h-20200102T000000Z.jfr.part", 100, 3 * 86400);
        touch(sub, "notes.jfr", 100, 3 * 86400);
        touch(sub, "ctxprof-h-20200103T000000Z.jfr", 100, 60);
        touch(sub, "ctxprof-h-20200104T000000Z.jfr", 100, 30);
        cr_assert_eq(output_dir_retain(sub, 2 * 86400000ull, 0, time(NULL), &r), 0);
        cr_assert_eq(r.deleted, 1);
        snprintf(path, sizeof(path), "%s/ctxprof-h-20200101T000000Z.jfr", sub);
        cr_assert_neq(access(path, F_OK), 0);
        /* size: 2 x 100 + f1 (0) -> keep 150: the older one goes */
        cr_assert_eq(output_dir_retain(sub, 0, 150, time(NULL), &r), 0);
        cr_assert_eq(r.deleted, 1);
        snprintf(path, sizeof(path), "%s/ctxprof-h-20200104T000000Z.jfr", sub);
        cr_assert_eq(access(path, F_OK), 0, "the newest file was deleted");
        snprintf(path, sizeof(path), "%s/ctxprof-h-20200102T000000Z.jfr.part", sub);
        cr_assert_eq(access(path, F_OK), 0, "a .part was deleted");
        snprintf(path, sizeof(path), "%s/notes.jfr", sub);
        cr_assert_eq(access(path, F_OK), 0, "a foreign file was deleted");
        /* a recording larger than the limit on its own (the one just finished) stays: the
         * size limit never leaves the directory without a recording */
        touch(sub, "ctxprof-h-20200105T000000Z.jfr", 300, -10);
        cr_assert_eq(output_dir_retain(sub, 0, 50, time(NULL), &r), 0);
        cr_assert_eq(r.deleted, 2, "deleted %u", r.deleted);
        snprintf(path, sizeof(path), "%s/ctxprof-h-20200105T000000Z.jfr", sub);
        cr_assert_eq(access(path, F_OK), 0, "the newest recording was deleted");
        cr_assert_eq(r.bytes_kept, 300);
        close(dfd);
        snprintf(path, sizeof(path), "rm -rf %s", dir);
        cr_assert_eq(system(path), 0);
}

/* Pyroscope's labels snapshot NAME.jfr.labels.pb follows its recording through every step:
 * created as a .part beside it, renamed with it, removed with it (discard, recovery of a
 * .part without a chunk, retention), and counted in the retained size. */
Test(output_dir, labels_snapshot_follows_its_recording)
{
        char dir[] = "/tmp/ctxprof-out.XXXXXX", sub[64], path[PATH_MAX + 32], why[256];
        struct output_retain_result r;
        struct output_recover_result rr;
        struct output_file f1, f2;
        int dfd;

        cr_assert(mkdtemp(dir));
        snprintf(sub, sizeof(sub), "%s/o", dir);
        dfd = output_dir_open(sub, why, sizeof(why));
        cr_assert_geq(dfd, 0, "%s", why);
        cr_assert_eq(output_dir_new_file(dfd, sub, "h", 86400 * 365, &f1), 0);
        cr_assert_geq(f1.labels_fd, 0);
        cr_assert_eq(write(f1.labels_fd, "12345", 5), 5);
        close(f1.fd);
        close(f1.labels_fd);
        snprintf(path, sizeof(path), "%s.labels.pb.part", f1.final);
        cr_assert_eq(access(path, F_OK), 0, "no %s", path);
        cr_assert_eq(output_dir_finish(dfd, &f1), 0);
        snprintf(path, sizeof(path), "%s.labels.pb", f1.final);
        cr_assert_eq(access(path, F_OK), 0, "the snapshot was not renamed with its recording");

        cr_assert_eq(output_dir_new_file(dfd, sub, "h", 86400 * 365, &f2), 0);
        close(f2.fd);
        close(f2.labels_fd);
        cr_assert_eq(output_dir_discard(dfd, &f2), 0);
        snprintf(path, sizeof(path), "%s.labels.pb.part", f2.final);
        cr_assert_neq(access(path, F_OK), 0, "a discarded recording left its snapshot");

        /* a .part without one complete chunk, left by a crash: both go */
        touch(sub, "ctxprof-h-20200101T000000Z.jfr.part", 0, 60);
        touch(sub, "ctxprof-h-20200101T000000Z.jfr.labels.pb.part", 10, 60);
        cr_assert_eq(output_dir_recover(sub, &rr), 0);
        cr_assert_eq(rr.removed, 1);
        snprintf(path, sizeof(path), "%s/ctxprof-h-20200101T000000Z.jfr.labels.pb.part", sub);
        cr_assert_neq(access(path, F_OK), 0, "recovery left the snapshot of a removed .part");

        /* retention: the old recording goes with its snapshot; sizes include snapshots */
        touch(sub, "ctxprof-h-20200102T000000Z.jfr", 100, 3 * 86400);
        touch(sub, "ctxprof-h-20200102T000000Z.jfr.labels.pb", 40, 3 * 86400);
        cr_assert_eq(output_dir_retain(sub, 2 * 86400000ull, 0, time(NULL), &r), 0);
        cr_assert_eq(r.deleted, 1);
        cr_assert_eq(r.bytes_deleted, 140);
        cr_assert_eq(r.bytes_kept, 5, "kept %llu", (unsigned long long)r.bytes_kept);
        snprintf(path, sizeof(path), "%s/ctxprof-h-20200102T000000Z.jfr.labels.pb", sub);
        cr_assert_neq(access(path, F_OK), 0, "retention left the snapshot of a deleted recording");
        snprintf(path, sizeof(path), "%s.labels.pb", f1.final);
        cr_assert_eq(access(path, F_OK), 0, "the kept recording lost its snapshot");
        close(dfd);
        snprintf(path, sizeof(path), "rm -rf %s", dir);
        cr_assert_eq(system(path), 0);
}
