/* SPDX-License-Identifier: MIT */
/*
 * bench_tls_locate.c — cost of the TLS locator and of the user-space reference reader:
 * tls_locate() on a libctx process (DT_NEEDED libctx.so) and on a process with many mapped
 * libraries but no context (this benchmark itself), then tls_var_address + ctx_read_user
 * per thread. Prints medians; asserts nothing. Run from the build dir's bench/ directory
 * (finds ../tests/fixtures/tls_fx_so).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ctx_read_user.h"
#include "tls/tls_locate.h"
#include "util/clock.h"

static int cmp_double(const void *a, const void *b)
{
        double x = *(const double *)a, y = *(const double *)b;
        return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
        qsort(v, (size_t)n, sizeof(*v), cmp_double);
        return v[n / 2];
}

static double bench_locate(pid_t pid, int n, int *rc_out)
{
        double *t = calloc((size_t)n, sizeof(*t));
        struct ctxprof_tls_target tt;
        for (int i = 0; i < n; i++) {
                double t0 = mono_ns();
                *rc_out = tls_locate(pid, &tt, NULL);
                t[i] = mono_ns() - t0;
        }
        double m = median(t, n);
        free(t);
        return m;
}

int main(int argc, char **argv)
{
        (void)argc;
        char exe[PATH_MAX], fx[PATH_MAX + 64];
        ssize_t len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
        if (len <= 0)
                return 1;
        exe[len] = 0;
        *strrchr(exe, '/') = 0;
        snprintf(fx, sizeof(fx), "%s/../tests/fixtures/tls_fx_so", exe);

        int p[2];
        if (pipe(p) != 0)
                return 1;
        pid_t pid = fork();
        if (pid == 0) {
                dup2(p[1], 1);
                execl(fx, fx, (char *)NULL);
                _exit(127);
        }
        close(p[1]);
        FILE *out = fdopen(p[0], "r");
        char line[256];
        pid_t worker = 0;
        int ready = 0;
        while (!ready && fgets(line, sizeof(line), out)) {
                int tid;
                char role[16];
                if (sscanf(line, "T %d %15s", &tid, role) == 2 && !strcmp(role, "worker"))
                        worker = tid;
                ready = !strncmp(line, "READY", 5);
        }
        if (!ready || !worker) {
                fprintf(stderr, "%s: fixture %s did not start\n", argv[0], fx);
                return 1;
        }
        int rc;
        double m = bench_locate(pid, 200, &rc);
        printf("tls_locate, libctx.so process:          %8.1f us median (rc %d)\n", m / 1e3, rc);
        m = bench_locate(getpid(), 200, &rc);
        printf("tls_locate, no-context process (self):  %8.1f us median (rc %d)\n", m / 1e3, rc);

        struct ctxprof_tls_target t;
        tls_locate(pid, &t, NULL);
        struct user_regs_struct regs;
        int st;
        if (ptrace(PTRACE_SEIZE, worker, 0, 0) != 0 ||
            ptrace(PTRACE_INTERRUPT, worker, 0, 0) != 0 || waitpid(worker, &st, __WALL) != worker ||
            ptrace(PTRACE_GETREGS, worker, 0, &regs) != 0)
                return 1;
        ptrace(PTRACE_DETACH, worker, 0, 0);
        char mp[64];
        snprintf(mp, sizeof(mp), "/proc/%d/mem", pid);
        int mem = open(mp, O_RDONLY);
        enum { N = 20000 };
        static double ts[N];
        struct ctx_user_context c;
        for (int i = 0; i < N; i++) {
                double t0 = mono_ns();
                ctx_read_user(mem, &t, regs.fs_base, &c);
                ts[i] = mono_ns() - t0;
        }
        printf("ctx_read_user (%u labels, span %s):  %8.0f ns median\n", c.nlabels,
               c.span_state == CTX_SPAN_VALID ? "valid" : "none", median(ts, N));
        close(mem);
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        return 0;
}
