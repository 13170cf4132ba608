/* SPDX-License-Identifier: MIT */
/*
 * parser_client.h — the daemon's side of its parser helper: a process started by clone + exec
 * of /proc/self/exe in PARSER_MODE by the spawner the client forks first (parser_spawner.h:
 * the caller keeps no privilege for restarts; the helper is still the caller's child), and
 * confined by service/parser_server.h (no root, no
 * capabilities, seccomp), holding the other end of a SOCK_SEQPACKET socketpair and nothing
 * else. One request at a time per helper (callers from any thread are serialized by a lock), each
 * with a deadline: on timeout, on the helper's death or on an answer that breaks the framing the
 * helper's socket is closed, it is sent SIGKILL (which only works while it still has the
 * daemon's uid: it ends itself at PARSER_SELF_DEADLINE_MS otherwise) and reaped, the request
 * fails, and the next request starts a new one
 * (at most one start per PARSER_RESTART_MIN_MS; a request in between fails at once). A
 * request that finds the helper already gone (killed between requests) starts it and is sent
 * again once. The
 * helper's answers are hostile like the bytes they come from: the framing is checked here
 * (parser_chan.h), each payload by its decoder. Never prints.
 *
 * Lanes: one helper per owner of the bytes, each as above with its own lock, deadline and
 * restarts. The system lane parses the files only root could have written (owned by uid 0,
 * writable by no group and no other user: the system's libraries and binaries); it is started
 * with the client. A user lane parses one owner's files (the file's owner) and the bytes a
 * target's memory gives (a memfd: the owner is the process's real uid, which the caller
 * passes); at most PARSER_LANES_MAX of them (util/parser_lanes.h), each started at its first
 * request; an owner without one takes the least recently used lane no request holds (its
 * helper ended: an eviction), or, when every lane is in a request, is refused (-EBUSY). So a
 * user whose crafted files or process context stall, crash or flood a helper costs only its
 * own lane: root's files, and every other user's files and process contexts, are parsed by
 * helpers its bytes never reach. Every helper runs as the same parser user: separate
 * processes, each not dumpable and under seccomp, are what keep them apart (docs/daemon.md).
 */
#ifndef CTXPROF_PARSER_CLIENT_H
#define CTXPROF_PARSER_CLIENT_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define PARSER_DEADLINE_MS 2000 /* one request, and a helper's start once running */
/* the first helpers' start, in parser_client_start (the caller's setup, before any sampling):
 * exec, the dynamic loader and the confinement steps took over 2 s on a loaded 2-vCPU host,
 * and `record` failed to start (its helper killed at the deadline) */
#define PARSER_START_MS       10000
#define PARSER_RESTART_MIN_MS 1000 /* between two starts of the helper */
#define PARSER_JOB_WAIT_MS    200  /* a target job's wait for another thread's request */
/* the symbolizer's (the writer thread's) wait for another thread's request in its lane: one
 * request's deadline, then the frame stays unnamed this once */
#define PARSER_WRITER_WAIT_MS PARSER_DEADLINE_MS
/* The helper's own deadline for one request (a timer whose SIGALRM ends it): the daemon,
 * uid 0 without CAP_KILL, cannot signal a helper running as another uid, so a helper stuck
 * in a request ends itself this long after receiving it; the daemon waits that long for it
 * to be reaped, at most. */
#define PARSER_SELF_DEADLINE_MS (PARSER_DEADLINE_MS + 500)
#define PARSER_USER_DEFAULT     "nobody"
#define PARSER_UID_FALLBACK     65534 /* when there is no user named PARSER_USER_DEFAULT */
#define PARSER_USER_MAX         64    /* bytes of a parser user name */

/* Lane owners besides uids (no uid takes these values: (uid_t)-1 is none, -2 unused here) */
#define PARSER_OWNER_UNKNOWN UINT32_MAX       /* a file or process whose owner is not known */
#define PARSER_OWNER_SHARED  (UINT32_MAX - 1) /* a file of root's that others may write */
#define PARSER_OWNER_SYSTEM  (UINT32_MAX - 2) /* the system lane (root's files only) */

struct parser_client;
struct parser_stats {
        uint64_t calls;       /* requests sent */
        uint64_t pctx_calls;  /* ... of which process contexts to decode (PARSER_PCTX) */
        uint64_t tls_calls;   /* ... of which ELF files' thread-local variables (PARSER_TLS) */
        uint64_t cfi_calls;   /* ... of which ELF files' unwind tables (PARSER_CFI) */
        uint64_t busy;        /* requests from the sampling loop or a target job not sent: the
                               * helper was busy with another thread's (tried again later) */
        uint64_t restarts;    /* helpers started after the first */
        uint64_t timeouts;    /* requests past PARSER_DEADLINE_MS (helper killed) */
        uint64_t deaths;      /* helpers found dead or closed mid-request */
        uint64_t bad_answers; /* answers that broke the framing (helper killed) */
        uint64_t refused;     /* requests not sent (-EAGAIN): restart rate limit, start failed */
        uint64_t unreaped;    /* helpers not ended PARSER_SELF_DEADLINE_MS after a failure
                               * (stopped or stuck): reaped at a later request */
        /* the client's, not a lane's (0 in a lane's counters): */
        uint64_t evictions;  /* user lanes given to another owner (their idle helper ended) */
        uint64_t lanes_full; /* requests refused (in busy too): every user lane in a request */
        uint64_t lanes;      /* user lanes with a helper running now (a gauge) */
};
_Static_assert(sizeof(struct parser_stats) % sizeof(uint64_t) == 0,
               "parser_stats is summed over the lanes as an array of uint64_t");

/* Forks the helper spawner (so: before the caller drops its capabilities), then starts the
 * system lane's helper as user (NULL or "": PARSER_USER_DEFAULT; the user lanes'
 * run as the same user, started later) and waits for it to say it is confined. 0, or -errno
 * with the reason in why (the step the helper failed at). */
int parser_client_start(const char *user, struct parser_client **out, char *why, size_t whylen);
/* Waits for a request in progress (at most its deadline), then ends the helpers and frees pc.
 * Every caller must have stopped asking (the *_use_parser(NULL) calls come first). */
void parser_client_stop(struct parser_client *);
/* One request of type with len bytes of req and fd (>= 0: passed with it, not taken), about
 * the file fd (its lane: its owner's, or the system lane); the answer's payload into resp
 * (cap bytes), its size into *got. The helper's status (0 or -errno); -ETIMEDOUT, -EPIPE (the
 * helper died), -EPROTO: the request (its file, its payload) stalled, killed or confused the
 * helper; -EAGAIN: not sent, no helper running (a start failed or is rate-limited: another
 * request killed the last one), nothing to blame the request for; -EBUSY (counted in busy):
 * another thread's request still held the lane after wait_ms (0: at once, for the sampling
 * loop; target jobs wait PARSER_JOB_WAIT_MS, well inside their deadline; the writer
 * PARSER_WRITER_WAIT_MS), or every user lane is in a request for another owner (lanes_full).
 * No call waits longer than wait_ms for another's request, then its own deadline. */
int parser_client_try_call(struct parser_client *, unsigned wait_ms, uint16_t type, const void *req,
                           uint32_t len, int fd, void *resp, uint32_t cap, uint32_t *got);
/* The same for a request whose answer may carry a descriptor: *rfd (-1 when none) is then
 * the caller's to close, whatever the status. An answer with a descriptor to any other call
 * is out of format (-EPROTO). */
int parser_client_try_call_fd(struct parser_client *, unsigned wait_ms, uint16_t type,
                              const void *req, uint32_t len, int fd, void *resp, uint32_t cap,
                              uint32_t *got, int *rfd);
/* The same for bytes a target's memory gives (fd: a memfd of them), parsed in the lane of
 * owner, the target's real uid (PARSER_OWNER_UNKNOWN when not known; never the system
 * lane's). */
int parser_client_try_call_as(struct parser_client *, uint32_t owner, unsigned wait_ms,
                              uint16_t type, const void *req, uint32_t len, int fd, void *resp,
                              uint32_t cap, uint32_t *got);
/* A failed request's error as a caller that parses one file sees it: -EPROTO when the file
 * stalled, killed or confused the helper (-ETIMEDOUT, -EPIPE, -EPROTO); -EBUSY when the
 * request was never sent (-EAGAIN: no helper running now; -EBUSY), which blames nothing:
 * ask again later. Any other error as it is. */
static inline int parser_client_file_error(int err)
{
        if (err == -ETIMEDOUT || err == -EPIPE)
                return -EPROTO;
        return err == -EAGAIN ? -EBUSY : err;
}
/* The counters (summed over the lanes, with those of lanes given to another owner) and the
 * system lane's running helper (0 when none) as of the last request's end: never waits for a
 * request in progress (the sampling loop reads them). A helper's argv[0] says its lane
 * ("ctxprof-parser:system", "ctxprof-parser:uid=N"). */
void parser_client_stats(struct parser_client *, struct parser_stats *out);
pid_t parser_client_pid(struct parser_client *);
/* What the helper's wait status says: which confinement step failed, or how it ended. */
void parser_exit_reason(int wstatus, char *buf, size_t len);

#endif
