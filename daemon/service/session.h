/* SPDX-License-Identifier: MIT */
/*
 * service/session.h — one recording session: what `ctxprof record` and the daemon both run.
 * It owns the sampler (BPF, perf events, rings), the parser helper that parses the targets'
 * ELF/DWARF without privilege (and points the symbolizer, TLS, OpenTelemetry and CFI readers
 * at it), the confinement steps (the loader-wide library-load hook, the capability drop) and
 * the sampler's part of the event loop: the rings' fds, the drain deadline, a ring error.
 *
 * Its owner brings the rest: the targets (a PID list or a command for `record`, a selector for
 * the daemon), the sink the samples go to, the event loop with its own fds and deadlines, and
 * when to stop. One thread (the owner's loop) calls every function. Never prints: errors are
 * -errno, and session_new says which step failed.
 */
#ifndef CTXPROF_SERVICE_SESSION_H
#define CTXPROF_SERVICE_SESSION_H

#include <stdint.h>

#include "engine/sampler.h"
#include "engine/sample_sink.h"
#include "util/event_loop.h"
#include "util/parser_client.h"

struct session_opts {
        struct sampler_opts sampler;
        struct sample_sink sink; /* its ctx outlives the session */
        const char *parser_user; /* the parser helper's user; NULL or "": PARSER_USER_DEFAULT */
        /* record: with DEBUGINFOD_URLS allowed (CTXPROF_DEBUGINFOD=1), no parser helper (it
         * has no network): the targets' files are parsed in this process */
        int no_parser_with_debuginfod;
};

/* The step of session_new that failed. */
enum session_step {
        SESSION_STEP_SAMPLER = 1, /* sampler_new: session_error.stage says where */
        SESSION_STEP_PARSER,      /* parser_client_start: session_error.why says why */
};

struct session_error {
        enum session_step step;
        enum sampler_stage stage; /* SESSION_STEP_SAMPLER */
        char why[160];            /* SESSION_STEP_PARSER */
};

struct session;

/* The process's allocator set for a recording (large buffers in their own mappings, given
 * back when freed: a chunk's memory does not stay behind as heap), the debuginfod policy
 * applied (stack/debuginfod_policy.h: before any Dwfl, after a launched command was forked,
 * which keeps its environment), the sampler loaded with its perf events open (sampling not
 * started), the parser helper started. 0 and *out, or -errno with *e; nothing to free then. */
int session_new(const struct session_opts *o, struct session **out, struct session_error *e);

struct sampler *session_sampler(struct session *);
/* The parser helper, or NULL when the targets' files are parsed in this process (or ss is
 * NULL). */
struct parser_client *session_parser(struct session *);
/* debuginfod_policy_apply's result at session_new: 1 opted in, 0 refused, -1 not set. */
int session_debuginfod(const struct session *);

/* Confinement, in the owner's order, while it is the only thread (capabilities are per
 * thread): hook the loaders every process uses now, for every process, before any target is
 * added (a uprobe needs CAP_SYS_ADMIN, which the drop takes; engine/load_hook.h); then drop
 * every capability but the running set (service/privileges.h, flags as privileges_drop's).
 * 0 or -errno. */
int session_hook_loaders(struct session *);
int session_drop_privileges(struct session *, unsigned flags);

/* Called after every wake of the loop, once the session has set its own deadlines. */
typedef void (*session_after_fn)(void *ctx, uint64_t now);

/* Sampling starts (engine/sampler.h, sampler_start) and the loop l drains the rings from now
 * on: their fds and the drain deadline are added to l, whose after-wake callback becomes the
 * session's, calling after(ctx, now) last. Call it when the targets are added and the sinks
 * are ready, just before the loop runs (and before a launched command is let run). 0 or
 * -errno (nothing added to l is removed: free l). */
int session_start(struct session *, struct event_loop *l, session_after_fn after, void *ctx);
/* The error that made a drain fail (the owner stops: report it), or 0. */
int session_failed(const struct session *);
/* No new samples; what the rings hold is drained into the sink. Records consumed, or -errno. */
int session_stop(struct session *);
/* The sampler freed, the readers pointed away from the parser helper and the helper stopped.
 * After every sink that resolves frames is finished (the module registry goes with the
 * sampler). NULL is fine. */
void session_free(struct session *);

#endif
