/* SPDX-License-Identifier: MIT */
/*
 * parser_spawner.c — the parser helpers' spawner (parser_spawner.h). Must never print, keep a
 * capability besides the three a helper needs, hold a descriptor of the caller's but its
 * socket, or call anything but system calls between its fork and its exit (the caller may
 * have threads).
 */
#include "util/parser_spawner.h"
#include "util/parser_chan.h"
#include "util/parser_client.h"
#include "util/parser_wire.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define CHILD_FD        3 /* the helper's end of its socketpair, in the helper */
#define SELF_EXE        "/proc/self/exe"
#define SPAWNER_COMM    "ctxprof-spawn"
#define SPAWN_TAG_MAX   40  /* a helper's argv[0] */
#define CAP_WORDS       2   /* _LINUX_CAPABILITY_VERSION_3: 64 capabilities in two words */
#define CAP_MAX_PROBE   63  /* the bounding set is probed up to here (EINVAL past the last) */
#define REAP_WAIT_MS    200 /* a child that should end: time to collect its exit status */
#define SPAWNER_EXIT_OK 0
/* the spawner's exit status when a step before serving failed */
enum spawner_exit {
        SPAWNER_EXIT_PDEATHSIG = 60, /* PR_SET_PDEATHSIG, or the caller already gone */
        SPAWNER_EXIT_FDS,            /* close_range */
        SPAWNER_EXIT_BOUNDING,       /* dropping the other capabilities' bounding bits */
        SPAWNER_EXIT_CAPS,           /* capset to the three */
        SPAWNER_EXIT_NNP,            /* PR_SET_NO_NEW_PRIVS */
        SPAWNER_EXIT_CHANNEL,        /* READY not sent */
};

/* PARSER_SPAWN request: who the helper runs as and its argv[0]; the answer's payload is the
 * helper's pid (int32), with the caller's end of its socket. */
struct spawn_req {
        char user[PARSER_USER_MAX + 1];
        char tag[SPAWN_TAG_MAX];
};
_Static_assert(sizeof(struct spawn_req) == PARSER_USER_MAX + 1 + SPAWN_TAG_MAX,
               "spawn_req is a wire struct");

struct parser_spawner {
        pthread_mutex_t lock; /* one request at a time */
        int sock;
        pid_t pid;
        uint32_t seq;
        struct parser_late stale; /* helpers answered too late (their socket closed) */
};

/* The capabilities a helper needs before its exec to give up root (parser_confine.c). */
static const int kept_caps[] = {CAP_SETUID, CAP_SETGID, CAP_SETPCAP};

static uint64_t kept_mask(void)
{
        uint64_t m = 0;

        for (size_t i = 0; i < sizeof(kept_caps) / sizeof(kept_caps[0]); i++)
                m |= 1ull << kept_caps[i];
        return m;
}

/* The spawner's own drop: the bounding set (needs CAP_SETPCAP, first), then the permitted and
 * effective sets to the kept ones it holds, inheritable and ambient empty, no_new_privs. */
static int keep_only_helper_caps(void)
{
        struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3};
        struct __user_cap_data_struct d[CAP_WORDS];
        uint64_t keep = kept_mask(), perm;

        for (int c = 0; c <= CAP_MAX_PROBE; c++) {
                int in = prctl(PR_CAPBSET_READ, c, 0, 0, 0);

                if (in < 0) /* EINVAL: past the kernel's last capability */
                        break;
                if (in == 1 && !(keep >> c & 1) && prctl(PR_CAPBSET_DROP, c, 0, 0, 0))
                        return SPAWNER_EXIT_BOUNDING;
        }
        if (syscall(SYS_capget, &h, d))
                return SPAWNER_EXIT_CAPS;
        perm = ((uint64_t)d[1].permitted << 32 | d[0].permitted) & keep;
        for (int w = 0; w < CAP_WORDS; w++) {
                d[w].permitted = d[w].effective = (uint32_t)(perm >> (32 * w));
                d[w].inheritable = 0;
        }
        if (syscall(SYS_capset, &h, d))
                return SPAWNER_EXIT_CAPS;
        prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); /* EINVAL before 4.3 */
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
                return SPAWNER_EXIT_NNP;
        return 0;
}

/* The helper between clone and exec: only system calls. */
static void exec_helper(int sock, char *user, char *tag)
{
        sigset_t none;

        /* the spawner blocks every signal; the helper's deadline is SIGALRM */
        sigemptyset(&none);
        if (sigprocmask(SIG_SETMASK, &none, NULL) < 0)
                _exit(127);
        if (sock == CHILD_FD) {
                if (fcntl(sock, F_SETFD, 0) < 0)
                        _exit(127);
        } else if (dup2(sock, CHILD_FD) < 0) {
                _exit(127);
        }
        if (close_range(CHILD_FD + 1, ~0u, 0) < 0)
                _exit(127);
        char fdarg[] = {'0' + CHILD_FD, 0};
        char *const argv[] = {tag, PARSER_MODE, fdarg, user, NULL};
        char *const envp[] = {NULL}; /* nothing of ours: no DEBUGINFOD_URLS, no LD_* */
        execve(SELF_EXE, argv, envp);
        _exit(127);
}

/* One request: the helper cloned as the caller's child (CLONE_PARENT), its pid and the
 * caller's end of its socket answered. */
static void serve_one(int sock, const struct parser_head *rh, struct spawn_req *req)
{
        struct parser_head h = {.type = PARSER_SPAWN, .seq = rh->seq};
        int32_t pid32 = 0;
        int sv[2];
        long pid;

        req->user[sizeof(req->user) - 1] = '\0';
        req->tag[sizeof(req->tag) - 1] = '\0';
        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
                h.status = -errno;
                parser_chan_send(sock, &h, NULL, 0, -1);
                return;
        }
        pid = syscall(SYS_clone, CLONE_PARENT | SIGCHLD, 0, 0, 0, 0);
        if (pid == 0)
                exec_helper(sv[1], req->user, req->tag);
        close(sv[1]);
        if (pid < 0) {
                h.status = -errno;
                close(sv[0]);
                parser_chan_send(sock, &h, NULL, 0, -1);
                return;
        }
        pid32 = (int32_t)pid;
        parser_chan_send(sock, &h, &pid32, sizeof(pid32), sv[0]);
        close(sv[0]); /* the caller's now; the helper is its child, not ours */
}

static void __attribute__((noreturn)) spawner_main(int sock, pid_t caller)
{
        struct parser_head h = {.type = PARSER_READY};
        struct spawn_req req;
        sigset_t all;
        int fd, err;

        sigfillset(&all);
        sigprocmask(SIG_SETMASK, &all, NULL);
        if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) || getppid() != caller)
                _exit(SPAWNER_EXIT_PDEATHSIG);
        if ((sock > STDERR_FILENO + 1 && close_range(STDERR_FILENO + 1, (unsigned)sock - 1, 0)) ||
            close_range((unsigned)sock + 1, ~0u, 0))
                _exit(SPAWNER_EXIT_FDS);
        prctl(PR_SET_NAME, SPAWNER_COMM, 0, 0, 0);
        err = keep_only_helper_caps();
        if (err)
                _exit(err);
        if (parser_chan_send(sock, &h, NULL, 0, -1))
                _exit(SPAWNER_EXIT_CHANNEL);
        for (;;) {
                fd = -1;
                memset(&req, 0, sizeof(req));
                err = parser_chan_recv(sock, &h, &req, sizeof(req), &fd, -1);
                if (fd >= 0)
                        close(fd);
                if (err == -EPROTO)
                        continue;
                if (err) /* the caller closed its end, or is gone */
                        _exit(SPAWNER_EXIT_OK);
                if (h.type != PARSER_SPAWN || h.len != sizeof(req)) {
                        h = (struct parser_head){
                            .type = PARSER_SPAWN, .seq = h.seq, .status = -EINVAL};
                        parser_chan_send(sock, &h, NULL, 0, -1);
                        continue;
                }
                serve_one(sock, &h, &req);
        }
}

int parser_reap_child(pid_t pid)
{
        int ws = 0;

        for (int i = 0; i < 2 * REAP_WAIT_MS; i++) {
                if (i == REAP_WAIT_MS)
                        kill(pid, SIGKILL);
                pid_t r = waitpid(pid, &ws, WNOHANG);
                if (r == pid)
                        return ws;
                if (r < 0 && errno != EINTR)
                        return 0;
                usleep(1000);
        }
        return 0;
}

int parser_spawner_start(struct parser_spawner **out)
{
        struct parser_spawner *sp;
        struct parser_head h;
        pid_t caller = getpid(), pid;
        int sv[2], fd = -1, err;

        *out = NULL;
        sp = calloc(1, sizeof(*sp));
        if (!sp)
                return -ENOMEM;
        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
                err = -errno;
                free(sp);
                return err;
        }
        pid = fork();
        if (pid == 0)
                spawner_main(sv[1], caller);
        err = -errno;
        close(sv[1]);
        if (pid < 0) {
                close(sv[0]);
                free(sp);
                return err;
        }
        err = parser_chan_recv(sv[0], &h, NULL, 0, &fd, PARSER_START_MS);
        if (fd >= 0)
                close(fd);
        if (!err && h.type != PARSER_READY)
                err = -EPROTO;
        if (err) {
                int ws;

                close(sv[0]);
                ws = parser_reap_child(pid);
                free(sp);
                /* its step: EPERM for a capability step, else the channel's error */
                return WIFEXITED(ws) && WEXITSTATUS(ws) >= SPAWNER_EXIT_PDEATHSIG &&
                               WEXITSTATUS(ws) <= SPAWNER_EXIT_NNP
                           ? -EPERM
                           : err;
        }
        pthread_mutex_init(&sp->lock, NULL);
        sp->sock = sv[0];
        sp->pid = pid;
        *out = sp;
        return 0;
}

void parser_late_add(struct parser_late *l, pid_t pid)
{
        for (int i = 0; i < PARSER_LATE_MAX; i++)
                if (!l->pid[i]) {
                        l->pid[i] = pid;
                        return;
                }
}

void parser_late_reap(struct parser_late *l)
{
        for (int i = 0; i < PARSER_LATE_MAX; i++)
                if (l->pid[i] && waitpid(l->pid[i], NULL, WNOHANG) != 0)
                        l->pid[i] = 0;
}

/* The answer to request seq: older answers (their request timed out) are dropped, their
 * helper's socket closed (it ends: its READY finds no reader) and the helper reaped later. */
static int await_spawned(struct parser_spawner *sp, uint32_t seq, int deadline_ms, pid_t *pid,
                         int *sock)
{
        for (;;) {
                struct parser_head h;
                int32_t pid32 = 0;
                int fd = -1, err;

                err = parser_chan_recv(sp->sock, &h, &pid32, sizeof(pid32), &fd, deadline_ms);
                if (err)
                        return err;
                if (h.type != PARSER_SPAWN || h.seq != seq) {
                        if (fd >= 0)
                                close(fd);
                        if (h.type == PARSER_SPAWN && !h.status && h.len == sizeof(pid32) &&
                            pid32 > 0)
                                parser_late_add(&sp->stale, pid32);
                        continue;
                }
                if (h.status) {
                        if (fd >= 0)
                                close(fd);
                        return h.status < 0 ? h.status : -EPROTO;
                }
                if (fd < 0 || h.len != sizeof(pid32) || pid32 <= 0) {
                        if (fd >= 0)
                                close(fd);
                        return -EPROTO;
                }
                *pid = pid32;
                *sock = fd;
                return 0;
        }
}

int parser_spawner_spawn(struct parser_spawner *sp, const char *user, const char *tag,
                         int deadline_ms, pid_t *pid, int *sock)
{
        struct spawn_req req;
        struct parser_head h = {.type = PARSER_SPAWN};
        int err;

        if (!sp || sp->sock < 0)
                return -EPIPE;
        memset(&req, 0, sizeof(req));
        if (strlen(user) >= sizeof(req.user) || strlen(tag) >= sizeof(req.tag))
                return -ENAMETOOLONG;
        memcpy(req.user, user, strlen(user));
        memcpy(req.tag, tag, strlen(tag));
        pthread_mutex_lock(&sp->lock);
        parser_late_reap(&sp->stale);
        h.seq = ++sp->seq;
        err = parser_chan_send(sp->sock, &h, &req, sizeof(req), -1);
        if (!err)
                err = await_spawned(sp, h.seq, deadline_ms, pid, sock);
        pthread_mutex_unlock(&sp->lock);
        return err;
}

void parser_spawner_stop(struct parser_spawner *sp)
{
        if (!sp)
                return;
        close(sp->sock);
        parser_reap_child(sp->pid);
        parser_late_reap(&sp->stale);
        pthread_mutex_destroy(&sp->lock);
        free(sp);
}
