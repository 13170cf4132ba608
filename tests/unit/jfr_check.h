/* SPDX-License-Identifier: MIT */
/*
 * jfr_check.h — test helper: runs the JDK on a JFR file (jfr summary, jfr print,
 * jfr print --json, and tests/java/JfrCheck through RecordingFile) and returns JfrCheck's
 * canonical dump. Header-only, static functions; for tests only.
 */
#ifndef CTXPROF_TEST_JFR_CHECK_H
#define CTXPROF_TEST_JFR_CHECK_H

#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* Run argv, capture stdout (and stderr into *err_out if non-NULL). Returns the exit status
 * (-1 if it did not exit normally). Output strings are malloc'd. */
static int run_capture(char *const argv[], char **out, char **err_out)
{
        char outp[] = "/tmp/jfrtest-outXXXXXX", errp[] = "/tmp/jfrtest-errXXXXXX";
        int ofd = mkstemp(outp), efd = mkstemp(errp);
        cr_assert(ofd >= 0 && efd >= 0);
        pid_t pid = fork();
        cr_assert(pid >= 0);
        if (pid == 0) {
                dup2(ofd, 1);
                dup2(efd, 2);
                execvp(argv[0], argv);
                _exit(127);
        }
        int st;
        cr_assert(waitpid(pid, &st, 0) == pid);
        char **dst[2] = {out, err_out};
        int fds[2] = {ofd, efd};
        for (int i = 0; i < 2; i++) {
                off_t n = lseek(fds[i], 0, SEEK_END);
                if (dst[i]) {
                        *dst[i] = calloc(1, (size_t)n + 1);
                        cr_assert(pread(fds[i], *dst[i], (size_t)n, 0) == n);
                }
                close(fds[i]);
        }
        unlink(outp);
        unlink(errp);
        return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static const char *test_build(void)
{
        const char *b = getenv("TEST_BUILD");
        return b && *b ? b : "build";
}

/* An oracle (a real reader the test checks against: the JDK, ../shared/tools) is missing.
 * CI (CI=true) must have every one: there the test fails. Elsewhere the test case ends
 * here, skipped with the reason (cr_skip_test; tests/run.sh reports a program whose every
 * case skipped as SKIPPED); never a pass that did not check. */
static void oracle_missing(const char *what)
{
        const char *ci = getenv("CI");

        if (ci && !strcmp(ci, "true"))
                cr_assert_fail("%s missing: CI must have it (make deps-test; shared/tools)", what);
        cr_skip_test("%s missing, not checked", what);
}

/* 1 if the JDK tools are here. */
static int have_jdk(void)
{
        return system("command -v jfr >/dev/null 2>&1 && command -v java >/dev/null 2>&1") == 0;
}

/* The JDK (jfr, java) or the test case goes no further (see oracle_missing). */
__attribute__((unused)) static void need_jdk(void)
{
        if (!have_jdk())
                oracle_missing("the JDK (jfr, java on PATH)");
}

/* Every JDK consumer must read `path` without error. Returns JfrCheck's dump (malloc'd). */
static char *jdk_check(const char *path)
{
        char *out, *err;
        char *summary[] = {"jfr", "summary", (char *)path, NULL};
        char *print[] = {"jfr", "print", (char *)path, NULL};
        char *json[] = {"jfr", "print", "--json", (char *)path, NULL};
        char *const *cmds[] = {summary, print, json};
        for (int i = 0; i < 3; i++) {
                int rc = run_capture(cmds[i], &out, &err);
                cr_assert_eq(rc, 0, "jfr %s %s failed (%d): %s", cmds[i][1], path, rc, err);
                cr_assert(!strstr(err, "xception") && !strstr(out, "xception") && !err[0],
                          "jfr %s %s: %s", cmds[i][1], path, err);
                cr_assert(strlen(out) > 0);
                free(out);
                free(err);
        }
        char cp[512];
        snprintf(cp, sizeof(cp), "%s/java", test_build());
        char *check[] = {"java", "-XX:TieredStopAtLevel=1", "-cp", cp, "JfrCheck", (char *)path,
                         NULL};
        int rc = run_capture(check, &out, &err);
        cr_assert_eq(rc, 0, "JfrCheck %s failed (%d): %s", path, rc, err);
        free(err);
        return out;
}

/* async-profiler's converter (a positional reader): ../shared/tools unless CTXPROF_TOOLS
 * says where the tools are; without it the case ends (oracle_missing). */
__attribute__((unused)) static const char *apconv_jar(void)
{
        static char jar[512];
        const char *t = getenv("CTXPROF_TOOLS");
        snprintf(jar, sizeof(jar), "%s/async-profiler-converter/jfr-converter.jar",
                 t && *t ? t : "../shared/tools");
        if (access(jar, R_OK))
                oracle_missing(jar);
        return jar;
}

/* The converter's -t collapsed output of the last apconv_check (truncated to fit). */
static char apconv_threads[1 << 16];

/* The converter must turn `path` into collapsed stacks, a flame graph (html) and pprof
 * without an error, and its collapsed sample total must be `samples`. */
__attribute__((unused)) static void apconv_check(const char *path, long samples)
{
        apconv_threads[0] = 0;
        const char *jar = apconv_jar();
        /* collapsed twice: split by thread (-t), and --cpu (only STATE_DEFAULT samples) */
        static const char *const fmts[] = {"collapsed", "collapsed", "html", "pprof"};
        for (int i = 0; i < 4; i++) {
                char dst[300], *out, *err;
                snprintf(dst, sizeof(dst), "%s.%d.%s", path, i, fmts[i]);
                char *argv[] = {
                    "java",          "-XX:TieredStopAtLevel=1", "-jar",       (char *)jar, "-o",
                    (char *)fmts[i], i == 1 ? "--cpu" : "-t",   (char *)path, dst,         NULL};
                int rc = run_capture(argv, &out, &err);
                cr_assert_eq(rc, 0, "jfr-converter -o %s %s failed (%d): %s", fmts[i], path, rc,
                             err);
                cr_assert(!strstr(err, "xception"), "jfr-converter -o %s %s: %s", fmts[i], path,
                          err);
                struct stat sb;
                cr_assert(stat(dst, &sb) == 0 && (sb.st_size > 0 || !samples), "%s empty", dst);
                if (i < 2) {
                        FILE *f = fopen(dst, "r");
                        char line[8192];
                        long total = 0;
                        size_t kept = 0;
                        while (f && fgets(line, sizeof(line), f)) {
                                char *sp = strrchr(line, ' ');
                                total += sp ? atol(sp + 1) : 0;
                                size_t l = strlen(line);
                                if (i == 0 && kept + l < sizeof(apconv_threads))
                                        memcpy(apconv_threads + kept, line, l + 1), kept += l;
                        }
                        if (f)
                                fclose(f);
                        cr_assert_eq(total, samples,
                                     "jfr-converter collapsed %s: %ld samples, want %ld", path,
                                     total, samples);
                }
                unlink(dst);
                free(out);
                free(err);
        }
}

/* What Pyroscope gets: grafana's parser (pyrojfr, in the tools) must see `ctx` samples with
 * a contextId and `span` with a spanId, and PyroCheck must find each contextId's labels in
 * the snapshot `pb` equal to the sample's labels. */
__attribute__((unused)) static void pyro_check(const char *path, const char *pb, long ctx,
                                               long span)
{
        const char *t = getenv("CTXPROF_TOOLS");
        char tool[512], *out, *err, cp[512];
        snprintf(cp, sizeof(cp), "%s/java", test_build());
        char *check[] = {
            "java", "-XX:TieredStopAtLevel=1", "-cp", cp, "PyroCheck", (char *)path, (char *)pb,
            NULL};
        int rc = run_capture(check, &out, &err);
        cr_assert_eq(rc, 0, "PyroCheck %s failed (%d): %s%s", path, rc, out, err);
        free(out);
        free(err);
        /* last: without the parser the case ends here (oracle_missing) */
        snprintf(tool, sizeof(tool), "%s/pyroscope-jfr/pyrojfr", t && *t ? t : "../shared/tools");
        if (access(tool, X_OK))
                oracle_missing(tool);
        char *argv[] = {tool, (char *)path, NULL};
        cr_assert_eq(run_capture(argv, &out, &err), 0, "pyrojfr %s: %s%s", path, out, err);
        const char *c = strstr(out, "with contextId != 0 (Pyroscope labels): ");
        const char *s = strstr(out, "with spanId != 0 on jdk.ExecutionSample");
        cr_assert(c && s, "pyrojfr output: %s", out);
        long nc = atol(strchr(c, ':') + 1), ns = atol(strchr(s, ':') + 1);
        cr_assert(nc == ctx && ns == span,
                  "pyrojfr: %ld with contextId (want %ld), %ld "
                  "with spanId (want %ld)\n%s",
                  nc, ctx, ns, span, out);
        free(out);
        free(err);
}

#endif
