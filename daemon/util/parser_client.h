/* SPDX-License-Identifier: MIT */
/*
 * parser_client.h — the daemon's side of its parser helper: a process started by fork + exec
 * of /proc/self/exe in PARSER_MODE (service/parser_server.h confines it: no root, no
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
 * Two helpers (lanes), each as above with its own lock, deadline and restarts: one for files
 * only root could have written (owned by uid 0, writable by no group and no other user: the
 * system's libraries and binaries), one for everything else (any other user's files, and
 * bytes from a target's memory, which come in a memfd). A user whose crafted files stall,
 * crash or confuse a helper thus only ever costs the users' lane: the frames, unwind tables
 * and context variables of root's files are still parsed meanwhile.
 */
#ifndef CTXPROF_PARSER_CLIENT_H
#define CTXPROF_PARSER_CLIENT_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define PARSER_DEADLINE_MS    2000 /* one request, and the helper's start */
#define PARSER_RESTART_MIN_MS 1000 /* between two starts of the helper */
#define PARSER_JOB_WAIT_MS    200  /* a target job's wait for another thread's request */
/* The helper's own deadline for one request (a timer whose SIGALRM ends it): the daemon,
 * uid 0 without CAP_KILL, cannot signal a helper running as another uid, so a helper stuck
 * in a request ends itself this long after receiving it; the daemon waits that long for it
 * to be reaped, at most. */
#define PARSER_SELF_DEADLINE_MS (PARSER_DEADLINE_MS + 500)
#define PARSER_USER_DEFAULT     "nobody"
#define PARSER_UID_FALLBACK     65534 /* when there is no user named PARSER_USER_DEFAULT */
#define PARSER_USER_MAX         64    /* bytes of a parser user name */

enum parser_lane {
        PARSER_LANE_SYSTEM, /* files owned by uid 0 and writable by no one else */
        PARSER_LANE_USERS,  /* every other file, and a target's bytes (memfd) */
        PARSER_LANES,
};

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
};
_Static_assert(sizeof(struct parser_stats) % sizeof(uint64_t) == 0,
               "parser_stats is summed over the lanes as an array of uint64_t");

/* Starts the helpers (one per lane) as user (NULL or "": PARSER_USER_DEFAULT) and waits for
 * each to say it is confined. 0, or -errno with the reason in why (the step a helper failed
 * at). */
int parser_client_start(const char *user, struct parser_client **out, char *why, size_t whylen);
/* Waits for a request in progress (at most its deadline), then ends the helpers and frees pc.
 * Every caller must have stopped asking (the *_use_parser(NULL) calls come first). */
void parser_client_stop(struct parser_client *);
/* One request of type with len bytes of req and fd (>= 0: passed with it, not taken); the
 * answer's payload into resp (cap bytes), its size into *got. The helper's status (0 or
 * -errno); -ETIMEDOUT, -EPIPE (the helper died), -EPROTO: the request (its file, its
 * payload) stalled, killed or confused the helper; -EAGAIN: not sent, no helper running
 * (a start failed or is rate-limited: another request killed the last one), nothing to
 * blame the request for. */
int parser_client_call(struct parser_client *, uint16_t type, const void *req, uint32_t len, int fd,
                       void *resp, uint32_t cap, uint32_t *got);
/* The same for a caller that must not wait long for other threads' requests: -EBUSY (counted
 * in busy) when another thread's request still holds the helper after wait_ms (0: at once,
 * for the sampling loop; target jobs wait PARSER_JOB_WAIT_MS, well inside their deadline). */
int parser_client_try_call(struct parser_client *, unsigned wait_ms, uint16_t type, const void *req,
                           uint32_t len, int fd, void *resp, uint32_t cap, uint32_t *got);
/* The same for a request whose answer may carry a descriptor: *rfd (-1 when none) is then
 * the caller's to close, whatever the status. An answer with a descriptor to any other call
 * is out of format (-EPROTO). */
int parser_client_try_call_fd(struct parser_client *, unsigned wait_ms, uint16_t type,
                              const void *req, uint32_t len, int fd, void *resp, uint32_t cap,
                              uint32_t *got, int *rfd);
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
/* The counters (summed over the lanes) and a lane's running helper (0 when none) as of the
 * last request's end: never waits for a request in progress (the sampling loop reads them).
 * parser_client_pid is the system lane's. */
void parser_client_stats(struct parser_client *, struct parser_stats *out);
pid_t parser_client_lane_pid(struct parser_client *, enum parser_lane lane);
pid_t parser_client_pid(struct parser_client *);
/* What the helper's wait status says: which confinement step failed, or how it ended. */
void parser_exit_reason(int wstatus, char *buf, size_t len);

#endif
