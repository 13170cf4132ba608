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

/* 1 if the JDK tools are here (else the caller skips). */
static int have_jdk(void)
{
        return system("command -v jfr >/dev/null 2>&1 && command -v java >/dev/null 2>&1") == 0;
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

#endif
