/* SPDX-License-Identifier: MIT */
/*
 * parser_client.c — starting, calling, killing and restarting the parser helper
 * (parser_client.h). Must never print, wait on the helper past a deadline, trust an answer's
 * framing, or leave a helper unreaped.
 */
#include "util/parser_client.h"
#include "util/clock.h"
#include "util/parser_chan.h"
#include "util/parser_lanes.h"
#include "util/parser_spawner.h"
#include "util/parser_wire.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NS_PER_MS 1000000ull
#define ERRNO_MAX 4095 /* a helper status below -ERRNO_MAX is not an errno */
#define TAG_MAX   40   /* a helper's argv[0]: which lane it is */

/* One helper process and its request lock: a lane (parser_client.h: files only root could
 * have written go to the system lane, everything else to its owner's). */
struct lane {
        pthread_mutex_t lock;
        char user[PARSER_USER_MAX + 1];
        char tag[TAG_MAX]; /* argv[0] of its helper: "ctxprof-parser:system", ":uid=N" */
        struct parser_spawner *spawner; /* the client's: starts its helper */
        uint32_t owner;                 /* a user lane: the owner its helper serves (when keyed) */
        int keyed;
        pid_t pid; /* 0: none running */
        int sock;
        uint32_t seq;
        uint64_t started_ns; /* last start */
        int starts;
        struct parser_late late; /* helpers not ended in time, reaped later */
        struct parser_stats st;
        /* What parser_client_stats and _pid read: a copy made after each request under its
         * own lock, so that the loop never waits for a request another thread holds. */
        pthread_mutex_t snap_lock;
        struct parser_stats snap;
        pid_t snap_pid;
        uint64_t busy; /* atomic: try_call refusals */
};

struct parser_client {
        struct parser_spawner *spawner; /* forked first: the only holder of CAP_SETUID & co */
        struct lane system;
        /* table_lock: the table, retired, evictions, lanes_full and a user lane's change of
         * owner; held for bookkeeping only, never during a request. Order: a lane's lock,
         * then table_lock, then a lane's snap_lock. */
        pthread_mutex_t table_lock;
        struct parser_lane_table table;
        struct lane users[PARSER_LANES_MAX];
        struct parser_stats retired; /* the counters of user lanes given to another owner */
        uint64_t evictions, lanes_full;
};

/* Publish st and pid for the readers (pc->lock held). */
static void publish(struct lane *pc)
{
        pthread_mutex_lock(&pc->snap_lock);
        pc->snap = pc->st;
        pc->snap_pid = pc->pid;
        pthread_mutex_unlock(&pc->snap_lock);
}

/* Publish and release pc->lock: the end of every locked section that may change st or pid. */
static void unlock(struct lane *pc)
{
        publish(pc);
        pthread_mutex_unlock(&pc->lock);
}

static const char *const step_names[] = {
    [PARSER_EXIT_ARGS - PARSER_EXIT_ARGS] = "bad command line",
    [PARSER_EXIT_USER - PARSER_EXIT_ARGS] = "the parser user does not exist",
    [PARSER_EXIT_FDS - PARSER_EXIT_ARGS] = "closing inherited descriptors failed",
    [PARSER_EXIT_PDEATHSIG - PARSER_EXIT_ARGS] = "PR_SET_PDEATHSIG failed",
    [PARSER_EXIT_RLIMIT - PARSER_EXIT_ARGS] = "setting RLIMIT_AS/NOFILE/CORE failed",
    [PARSER_EXIT_DUMPABLE - PARSER_EXIT_ARGS] = "PR_SET_DUMPABLE 0 failed",
    [PARSER_EXIT_GROUPS - PARSER_EXIT_ARGS] = "setgroups(0) failed",
    [PARSER_EXIT_GID - PARSER_EXIT_ARGS] = "setresgid to the parser user failed",
    [PARSER_EXIT_BOUNDING - PARSER_EXIT_ARGS] = "clearing the capability bounding set failed",
    [PARSER_EXIT_UID - PARSER_EXIT_ARGS] = "setresuid to the parser user failed",
    [PARSER_EXIT_CAPS - PARSER_EXIT_ARGS] = "capabilities remain after the uid change",
    [PARSER_EXIT_NNP - PARSER_EXIT_ARGS] = "PR_SET_NO_NEW_PRIVS failed",
    [PARSER_EXIT_SECCOMP - PARSER_EXIT_ARGS] = "loading the seccomp filter failed",
    [PARSER_EXIT_CHANNEL - PARSER_EXIT_ARGS] = "the helper could not answer on its socket",
};

void parser_exit_reason(int ws, char *buf, size_t len)
{
        if (WIFEXITED(ws)) {
                int c = WEXITSTATUS(ws);
                if (c >= PARSER_EXIT_ARGS && c <= PARSER_EXIT_LAST)
                        snprintf(buf, len, "parser helper: %s (exit %d)",
                                 step_names[c - PARSER_EXIT_ARGS], c);
                else
                        snprintf(buf, len, "parser helper exited with %d%s", c,
                                 c == 127 ? " (exec of /proc/self/exe failed)" : "");
        } else if (WIFSIGNALED(ws)) {
                snprintf(buf, len, "parser helper killed by signal %d%s", WTERMSIG(ws),
                         WTERMSIG(ws) == SIGSYS ? " (a system call outside its seccomp filter)"
                                                : "");
        } else {
                snprintf(buf, len, "parser helper did not start");
        }
}

/* The helper's end: its socket closed (an idle helper exits), SIGKILL (refused once it runs
 * as its own uid: a busy one ends at its own deadline), reaped within that deadline. */
static void kill_reap(struct lane *pc)
{
        if (pc->sock >= 0)
                close(pc->sock);
        if (pc->pid > 0) {
                kill(pc->pid, SIGKILL);
                int reaped = 0;
                for (int i = 0; !reaped && i < PARSER_SELF_DEADLINE_MS; i++) {
                        pid_t r = waitpid(pc->pid, NULL, WNOHANG);
                        reaped = r == pc->pid || (r < 0 && errno != EINTR);
                        if (!reaped)
                                usleep(1000);
                }
                if (!reaped) { /* stopped, or stuck: reaped later when it ends */
                        pc->st.unreaped++;
                        parser_late_add(&pc->late, pc->pid);
                }
        }
        pc->pid = 0;
        pc->sock = -1;
}

static int spawn(struct lane *pc, int deadline_ms, char *why, size_t whylen)
{
        pid_t pid = 0;
        int sock = -1;
        /* a start, even one the spawner fails: the restart limit holds for it too */
        pc->started_ns = mono_ns();
        pc->starts++;
        int err = parser_spawner_spawn(pc->spawner, pc->user, pc->tag, deadline_ms, &pid, &sock);
        if (err) {
                snprintf(why, whylen, "the helper spawner: %s",
                         err == -EPIPE ? "gone" : strerror(-err));
                return err == -EPIPE ? -ECHILD : err;
        }
        struct parser_head h;
        int fd = -1;
        err = parser_chan_recv(sock, &h, NULL, 0, &fd, deadline_ms);
        if (fd >= 0)
                close(fd);
        if (!err && h.type != PARSER_READY)
                err = -EPROTO;
        if (err) {
                close(sock);
                parser_exit_reason(parser_reap_child(pid), why, whylen);
                return err == -EPIPE ? -ECHILD : err;
        }
        pc->pid = pid;
        pc->sock = sock;
        return 0;
}

/* A lane with no helper yet (user lanes start theirs at their first request). */
static void lane_init(struct lane *l, const char *user, struct parser_spawner *spawner)
{
        memset(l, 0, sizeof(*l));
        l->sock = -1;
        l->spawner = spawner;
        snprintf(l->user, sizeof(l->user), "%s", user && *user ? user : PARSER_USER_DEFAULT);
        pthread_mutex_init(&l->lock, NULL);
        pthread_mutex_init(&l->snap_lock, NULL);
}

/* Free a lane's locks (its helper ended or never started). */
static void lane_destroy(struct lane *l)
{
        pthread_mutex_destroy(&l->lock);
        pthread_mutex_destroy(&l->snap_lock);
}

/* Waits for a request in progress (at most its deadline), then ends the lane's helper. */
static void lane_stop(struct lane *l)
{
        pthread_mutex_lock(&l->lock);
        kill_reap(l);
        pthread_mutex_unlock(&l->lock);
        lane_destroy(l);
}

static void prestart_lane(struct parser_client *pc, uint32_t owner);

int parser_client_start(const char *user, struct parser_client **out, char *why, size_t whylen)
{
        *out = NULL;
        if (user && strlen(user) > PARSER_USER_MAX) {
                snprintf(why, whylen, "parser user name longer than %d bytes", PARSER_USER_MAX);
                return -ENAMETOOLONG;
        }
        struct parser_client *pc = calloc(1, sizeof(*pc));
        if (!pc)
                return -ENOMEM;
        /* the spawner first, while the caller still holds what a helper needs to give up
         * root: after the caller's drop, only the spawner keeps it */
        int err = parser_spawner_start(&pc->spawner);
        if (err) {
                snprintf(why, whylen, "the helper spawner did not start: %s", strerror(-err));
                free(pc);
                return err;
        }
        lane_init(&pc->system, user, pc->spawner);
        snprintf(pc->system.tag, sizeof(pc->system.tag), "ctxprof-parser:system");
        /* the system lane's helper now: a parser user that does not exist, or a confinement
         * step that fails, stops the caller at its start, not at its first request */
        err = spawn(&pc->system, PARSER_START_MS, why, whylen);
        if (err) {
                lane_destroy(&pc->system);
                parser_spawner_stop(pc->spawner);
                free(pc);
                return err;
        }
        publish(&pc->system);
        pthread_mutex_init(&pc->table_lock, NULL);
        for (int i = 0; i < PARSER_LANES_MAX; i++)
                lane_init(&pc->users[i], user, pc->spawner);
        prestart_lane(pc, 0);
        *out = pc;
        return 0;
}

void parser_client_stop(struct parser_client *pc)
{
        if (!pc)
                return;
        /* A target job's worker is never waited for (engine/target_jobs.h), so one may still
         * be in a request when the sampler is gone: let it end (its deadline bounds the wait)
         * before the helpers and this struct go. */
        lane_stop(&pc->system);
        for (int i = 0; i < PARSER_LANES_MAX; i++)
                lane_stop(&pc->users[i]);
        pthread_mutex_destroy(&pc->table_lock);
        parser_spawner_stop(pc->spawner);
        free(pc);
}

/* The owner whose lane parses the file fd: PARSER_OWNER_SYSTEM for a file only root could
 * have written (a regular file owned by uid 0, writable by no group and no other user), its
 * owner's uid for another user's file, PARSER_OWNER_SHARED for a file of root's that others
 * may write, PARSER_OWNER_UNKNOWN when it cannot be told. */
static uint32_t file_owner(int fd)
{
        struct stat sb;
        if (fd < 0 || fstat(fd, &sb))
                return PARSER_OWNER_UNKNOWN;
        if (sb.st_uid != 0)
                return sb.st_uid >= PARSER_OWNER_SYSTEM ? PARSER_OWNER_UNKNOWN : sb.st_uid;
        if (S_ISREG(sb.st_mode) && !(sb.st_mode & (S_IWGRP | S_IWOTH)))
                return PARSER_OWNER_SYSTEM;
        return PARSER_OWNER_SHARED;
}

/* A running helper, started again when the last start is PARSER_RESTART_MIN_MS old. */
static int ensure_running(struct lane *pc)
{
        char why[128];
        parser_late_reap(&pc->late);
        if (pc->pid > 0)
                return 0;
        if (pc->starts && mono_ns() - pc->started_ns < PARSER_RESTART_MIN_MS * NS_PER_MS)
                return -EAGAIN;
        pc->st.restarts += pc->starts > 0; /* a user lane's first helper is no restart */
        return spawn(pc, PARSER_DEADLINE_MS, why, sizeof(why)) ? -EAGAIN : 0;
}

static int await_answer(struct lane *pc, uint16_t type, void *resp, uint32_t cap, uint32_t *got,
                        int *rfd, uint64_t deadline)
{
        struct parser_head h;
        int fd = -1;
        uint64_t now = mono_ns();
        int ms = now < deadline ? (int)((deadline - now) / NS_PER_MS) : 0;
        int err = parser_chan_recv(pc->sock, &h, resp, cap, &fd, ms);
        if (err == -ETIMEDOUT) {
                pc->st.timeouts++;
                return err;
        }
        if (err == -EPIPE) {
                pc->st.deaths++;
                return err;
        }
        if (!err && (h.type != type || h.seq != pc->seq || h.status > 0 || h.status < -ERRNO_MAX ||
                     (h.nfds && !rfd))) /* only the answers asked for carry a descriptor */
                err = -EPROTO;
        if (err) {
                if (fd >= 0)
                        close(fd);
                pc->st.bad_answers++;
                return -EPROTO;
        }
        *got = h.len;
        if (rfd)
                *rfd = fd;
        return h.status;
}

/* One request, pc->lock held (and released here). */
static int call_locked(struct lane *pc, uint16_t type, const void *req, uint32_t len, int fd,
                       void *resp, uint32_t cap, uint32_t *got, int *rfd)
{
        int err = ensure_running(pc);
        if (err) {
                pc->st.refused++;
                unlock(pc);
                return err;
        }
        uint64_t deadline = mono_ns() + PARSER_DEADLINE_MS * NS_PER_MS;
        struct parser_head h = {.type = type, .seq = ++pc->seq};
        pc->st.calls++;
        pc->st.pctx_calls += type == PARSER_PCTX;
        pc->st.tls_calls += type == PARSER_TLS;
        pc->st.cfi_calls += type == PARSER_CFI;
        err = parser_chan_send(pc->sock, &h, req, len, fd);
        if (err) { /* it died before this request (killed, or by the last one): once more */
                pc->st.deaths++;
                kill_reap(pc);
                err = ensure_running(pc);
                if (err)
                        pc->st.refused++;
                if (!err) {
                        h = (struct parser_head){.type = type, .seq = ++pc->seq};
                        err = parser_chan_send(pc->sock, &h, req, len, fd) ? -EPIPE : 0;
                }
        }
        if (!err)
                err = await_answer(pc, type, resp, cap, got, rfd, deadline);
        if (err == -ETIMEDOUT || err == -EPIPE || err == -EPROTO)
                kill_reap(pc);
        unlock(pc);
        return err;
}

/* The lane's request lock within wait_ms (0: at once): 0, or -EBUSY counted in busy. */
static int lock_within(struct lane *l, unsigned wait_ms)
{
        int err;
        if (!wait_ms) {
                err = pthread_mutex_trylock(&l->lock);
        } else {
                uint64_t until_ns = mono_ns() + wait_ms * NS_PER_MS;
                struct timespec until = {.tv_sec = (time_t)(until_ns / NS_PER_SEC),
                                         .tv_nsec = (long)(until_ns % NS_PER_SEC)};
                err = pthread_mutex_clocklock(&l->lock, CLOCK_MONOTONIC, &until);
        }
        if (!err)
                return 0;
        __atomic_fetch_add(&l->busy, 1, __ATOMIC_RELAXED);
        return -EBUSY;
}

/* User lane l (its lock held, its slot pinned for owner) made owner's: the helper of the
 * owner it served before, if any, ended (it is idle: no request of that owner holds the
 * slot), its counters kept in retired, its restart limit reset. */
static void lane_take(struct parser_client *pc, struct lane *l, uint32_t owner)
{
        kill_reap(l);
        pthread_mutex_lock(&pc->table_lock);
        const uint64_t *s = (const uint64_t *)&l->st;
        uint64_t *d = (uint64_t *)&pc->retired;
        for (size_t k = 0; k < sizeof(l->st) / sizeof(uint64_t); k++)
                d[k] += s[k];
        memset(&l->st, 0, sizeof(l->st));
        l->owner = owner;
        l->keyed = 1;
        l->starts = 0;
        l->started_ns = 0;
        snprintf(l->tag, sizeof(l->tag), "ctxprof-parser:uid=%u", owner);
        publish(l);
        pthread_mutex_unlock(&pc->table_lock);
}

/* Start owner's lane's helper now rather than at its first request (a start takes tens of
 * milliseconds, which the first process context of the owner would wait): root's, whose
 * processes are most targets (containers). A failed start is tried again at that request. */
static void prestart_lane(struct parser_client *pc, uint32_t owner)
{
        char why[128];
        int evicted;
        pthread_mutex_lock(&pc->table_lock);
        int slot = parser_lanes_pin(&pc->table, owner, &evicted);
        pthread_mutex_unlock(&pc->table_lock);
        if (slot < 0)
                return;
        struct lane *l = &pc->users[slot];
        pthread_mutex_lock(&l->lock);
        lane_take(pc, l, owner);
        if (!spawn(l, PARSER_START_MS, why, sizeof(why)))
                unlock(l);
        else
                pthread_mutex_unlock(&l->lock);
        pthread_mutex_lock(&pc->table_lock);
        parser_lanes_unpin(&pc->table, slot);
        pthread_mutex_unlock(&pc->table_lock);
}

/* One request in owner's lane (PARSER_OWNER_SYSTEM: the system lane), waiting at most
 * wait_ms for another thread's request there. */
static int request(struct parser_client *pc, uint32_t owner, unsigned wait_ms, uint16_t type,
                   const void *req, uint32_t len, int fd, void *resp, uint32_t cap, uint32_t *got,
                   int *rfd)
{
        *got = 0;
        if (rfd)
                *rfd = -1;
        if (owner == PARSER_OWNER_SYSTEM) {
                int err = lock_within(&pc->system, wait_ms);
                return err ? err
                           : call_locked(&pc->system, type, req, len, fd, resp, cap, got, rfd);
        }
        int evicted;
        pthread_mutex_lock(&pc->table_lock);
        int slot = parser_lanes_pin(&pc->table, owner, &evicted);
        if (slot < 0)
                pc->lanes_full++;
        pc->evictions += slot >= 0 && evicted;
        pthread_mutex_unlock(&pc->table_lock);
        if (slot < 0) { /* every lane is in a request for another owner */
                __atomic_fetch_add(&pc->system.busy, 1, __ATOMIC_RELAXED);
                return -EBUSY;
        }
        struct lane *l = &pc->users[slot];
        int err = lock_within(l, wait_ms);
        if (!err) {
                if (!l->keyed || l->owner != owner)
                        lane_take(pc, l, owner);
                err = call_locked(l, type, req, len, fd, resp, cap, got, rfd);
        }
        pthread_mutex_lock(&pc->table_lock);
        parser_lanes_unpin(&pc->table, slot);
        pthread_mutex_unlock(&pc->table_lock);
        return err;
}

int parser_client_try_call(struct parser_client *pc, unsigned wait_ms, uint16_t type,
                           const void *req, uint32_t len, int fd, void *resp, uint32_t cap,
                           uint32_t *got)
{
        return request(pc, file_owner(fd), wait_ms, type, req, len, fd, resp, cap, got, NULL);
}

int parser_client_try_call_fd(struct parser_client *pc, unsigned wait_ms, uint16_t type,
                              const void *req, uint32_t len, int fd, void *resp, uint32_t cap,
                              uint32_t *got, int *rfd)
{
        return request(pc, file_owner(fd), wait_ms, type, req, len, fd, resp, cap, got, rfd);
}

int parser_client_try_call_as(struct parser_client *pc, uint32_t owner, unsigned wait_ms,
                              uint16_t type, const void *req, uint32_t len, int fd, void *resp,
                              uint32_t cap, uint32_t *got)
{
        if (owner >= PARSER_OWNER_SYSTEM) /* a target's bytes never reach the system lane */
                owner = PARSER_OWNER_UNKNOWN;
        return request(pc, owner, wait_ms, type, req, len, fd, resp, cap, got, NULL);
}

/* *out += l's published counters and busy refusals (snap_lock taken here); 1 when it has a
 * helper running. */
static int add_lane(struct parser_stats *out, struct lane *l)
{
        pthread_mutex_lock(&l->snap_lock);
        const uint64_t *s = (const uint64_t *)&l->snap;
        uint64_t *d = (uint64_t *)out;
        for (size_t k = 0; k < sizeof(*out) / sizeof(uint64_t); k++)
                d[k] += s[k];
        int running = l->snap_pid > 0;
        pthread_mutex_unlock(&l->snap_lock);
        out->busy += __atomic_load_n(&l->busy, __ATOMIC_RELAXED);
        return running;
}

void parser_client_stats(struct parser_client *pc, struct parser_stats *out)
{
        memset(out, 0, sizeof(*out));
        if (!pc)
                return;
        pthread_mutex_lock(&pc->table_lock);
        *out = pc->retired;
        add_lane(out, &pc->system);
        for (int i = 0; i < PARSER_LANES_MAX; i++)
                out->lanes += (uint64_t)add_lane(out, &pc->users[i]);
        out->evictions = pc->evictions;
        out->lanes_full = pc->lanes_full;
        pthread_mutex_unlock(&pc->table_lock);
}

pid_t parser_client_pid(struct parser_client *pc)
{
        if (!pc)
                return 0;
        pthread_mutex_lock(&pc->system.snap_lock);
        pid_t p = pc->system.snap_pid;
        pthread_mutex_unlock(&pc->system.snap_lock);
        return p;
}
