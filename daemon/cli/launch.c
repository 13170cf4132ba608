/* SPDX-License-Identifier: MIT */
/*
 * launch.c — starting `record -- COMMAND` under ptrace (see launch.h). Owns the child's
 * life: fork, the socketpair handshake, the stop at exec, the release and the reaping.
 * Never samples, never touches the output.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/launch.h"

#define EXIT_CANNOT_RUN 127 /* the child's status when COMMAND could not be started */

/* In the child: wait for the parent's go, stop at the exec, run COMMAND. Never returns. */
static void child(int fd, char **argv, const struct sigaction *orig_int,
                  const struct sigaction *orig_term)
{
        char b;

        /* what ctxprof inherited (SIG_IGN under nohup or `cmd &` in a script), not our
         * handlers */
        sigaction(SIGINT, orig_int, NULL);
        sigaction(SIGTERM, orig_term, NULL);
        if (read(fd, &b, 1) != 1)
                _exit(EXIT_CANNOT_RUN);
        /* Stop at the exec so the parent can locate TLS before main runs. */
        if (ptrace(PTRACE_TRACEME, 0, NULL, NULL))
                _exit(EXIT_CANNOT_RUN);
        execvp(argv[0], argv);
        fprintf(stderr, "ctxprof: cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(EXIT_CANNOT_RUN);
}

int launch_fork(struct launch *l, char **argv, const struct sigaction *orig_int,
                const struct sigaction *orig_term)
{
        int fd[2];

        *l = (struct launch){.pid = -1, .sync_fd = -1};
        /* A socket, not a pipe: telling a child that died (Ctrl-C reaches the whole process
         * group) must be an error, not a SIGPIPE. */
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fd)) {
                perror("ctxprof: socketpair");
                return -1;
        }
        l->pid = fork();
        if (l->pid < 0) {
                perror("ctxprof: fork");
                close(fd[0]);
                close(fd[1]);
                return -1;
        }
        if (l->pid == 0) {
                close(fd[1]);
                child(fd[0], argv, orig_int, orig_term);
        }
        close(fd[0]);
        l->sync_fd = fd[1];
        return 0;
}

int launch_exec(struct launch *l, char *const *argv, volatile sig_atomic_t *stop)
{
        int st;
        pid_t w;

        if (*stop)
                return -1;
        if (send(l->sync_fd, "g", 1, MSG_NOSIGNAL) != 1) {
                if (!*stop)
                        perror("ctxprof: starting the command");
                return -1;
        }
        close(l->sync_fd);
        l->sync_fd = -1;
        /* The traced child stops with SIGTRAP right after a successful exec; a signal that
         * reaches it first stops it too and is passed on. */
        for (;;) {
                w = waitpid(l->pid, &st, 0);
                if (w < 0 && errno == EINTR && !*stop)
                        continue;
                if (w != l->pid || !WIFSTOPPED(st))
                        break;
                l->traced = 1;
                if (*stop || WSTOPSIG(st) == SIGTRAP)
                        break;
                ptrace(PTRACE_CONT, l->pid, NULL, (void *)(long)WSTOPSIG(st));
        }
        if (*stop)
                return -1;
        if (w != l->pid || !WIFSTOPPED(st)) {
                fprintf(stderr, "ctxprof: cannot run %s\n", argv[0]);
                l->done = w == l->pid;
                if (l->done)
                        l->status = st;
                return -1;
        }
        return 0;
}

int launch_run(struct launch *l, char *const *argv)
{
        if (ptrace(PTRACE_DETACH, l->pid, NULL, NULL)) {
                fprintf(stderr, "ctxprof: cannot start %s: %s\n", argv[0], strerror(errno));
                return -1;
        }
        l->traced = 0;
        return 0;
}

int launch_ended(struct launch *l)
{
        if (l->pid > 0 && !l->done && waitpid(l->pid, &l->status, WNOHANG) == l->pid)
                l->done = 1;
        return l->done;
}

static void reap(struct launch *l)
{
        while (waitpid(l->pid, &l->status, 0) < 0 && errno == EINTR)
                ;
        l->done = 1;
}

void launch_end(struct launch *l)
{
        if (l->sync_fd >= 0)
                close(l->sync_fd); /* an unstarted child sees EOF and exits */
        l->sync_fd = -1;
        if (l->pid > 0 && l->traced) {
                /* Still stopped under ptrace, the command never ran: a SIGTERM would only
                 * stop it again, for us to handle. */
                kill(l->pid, SIGKILL);
                reap(l);
                l->traced = 0;
        } else if (l->pid > 0 && !l->done) {
                /* The recording is over (duration, signal or error): so is the command. */
                kill(l->pid, SIGTERM);
                reap(l);
        }
}

int launch_exit_status(const struct launch *l)
{
        return WIFEXITED(l->status)     ? WEXITSTATUS(l->status)
               : WIFSIGNALED(l->status) ? 128 + WTERMSIG(l->status)
                                        : 0;
}
