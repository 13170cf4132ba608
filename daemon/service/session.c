/* SPDX-License-Identifier: MIT */
/*
 * service/session.c — one recording session (service/session.h): the sampler, the parser
 * helper and the readers it serves, confinement, and the sampler's part of the owner's event
 * loop. Owns no target, no sink, no output and no message: `record` (cli/cmd_record.c) and
 * the daemon (service/daemon.c) bring those. Must never print or wait on a target.
 */
#include <errno.h>
#include <malloc.h>
#include <stdlib.h>
#include <sys/epoll.h>

#include "engine/otel_process_ctx.h"
#include "service/privileges.h"
#include "service/session.h"
#include "stack/cfi_table.h"
#include "stack/debuginfod_policy.h"
#include "stack/symbolize.h"
#include "tls/elf_tls.h"

/* Allocations from this size up get their own mapping, returned to the kernel when freed.
 * glibc's default raises this threshold after the first such free (up to 32 MiB), so the next
 * chunk's sample arrays, grown by doubling, come from the heap instead, where every freed
 * smaller copy stays resident: 78 B of RSS per buffered sample against 59 B with the
 * threshold fixed (2 busy processes at 20 kHz, 4 s vs 16 s; issue 32 asks <= 64 B). */
#define MMAP_THRESHOLD_BYTES (128u << 10)

struct session {
        struct sampler *s;
        struct parser_client *parser; /* NULL: parsed in this process */
        int debuginfod;               /* debuginfod_policy_apply's result */
        struct event_loop *l;         /* the owner's, from session_start */
        int dl_drain;                 /* the drain's deadline on l */
        int failed;                   /* a drain's error: the owner stops */
        session_after_fn after;
        void *after_ctx;
};

/* Every reader of target files goes through p (NULL: back to parsing in this process). */
static void use_parser(struct parser_client *p)
{
        symbolize_use_parser(p);
        otel_pctx_use_parser(p);
        elf_tls_use_parser(p);
        cfi_table_use_parser(p);
}

int session_new(const struct session_opts *o, struct session **out, struct session_error *e)
{
        struct session *ss = calloc(1, sizeof(*ss));
        int err;

        *out = NULL;
        *e = (struct session_error){0};
        if (!ss)
                return -ENOMEM;
        ss->dl_drain = -1;
        mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES); /* process-wide: see the header */
        ss->debuginfod = debuginfod_policy_apply();      /* before any Dwfl: see the header */
        err = sampler_new(&o->sampler, &o->sink, &ss->s, &e->stage);
        if (err) {
                e->step = SESSION_STEP_SAMPLER;
                free(ss);
                return err;
        }
        if (!(o->no_parser_with_debuginfod && ss->debuginfod == 1)) {
                err = parser_client_start(o->parser_user, &ss->parser, e->why, sizeof(e->why));
                if (err) {
                        e->step = SESSION_STEP_PARSER;
                        sampler_free(ss->s);
                        free(ss);
                        return err;
                }
                use_parser(ss->parser);
        }
        *out = ss;
        return 0;
}

struct sampler *session_sampler(struct session *ss)
{
        return ss->s;
}

struct parser_client *session_parser(struct session *ss)
{
        return ss ? ss->parser : NULL;
}

int session_debuginfod(const struct session *ss)
{
        return ss->debuginfod;
}

int session_hook_loaders(struct session *ss)
{
        return sampler_hook_loader_wide(ss->s);
}

int session_drop_privileges(struct session *ss, unsigned flags)
{
        (void)ss;
        return privileges_drop(flags);
}

static void drain(void *ctx, uint64_t now)
{
        struct session *ss = ctx;
        int err = sampler_poll(ss->s, 0);

        (void)now;
        if (err < 0 && err != -EINTR && !ss->failed)
                ss->failed = err;
}

static void ring_readable(void *ctx, int fd, uint32_t events)
{
        (void)fd;
        (void)events;
        drain(ctx, 0);
}

/* After every wake: when the next drain is due (records left behind, a retry, the sweep),
 * then the owner's deadlines. */
static void after_wake(void *ctx, uint64_t now)
{
        struct session *ss = ctx;

        event_loop_set(ss->l, ss->dl_drain, sampler_next_due(ss->s));
        if (ss->after)
                ss->after(ss->after_ctx, now);
}

int session_start(struct session *ss, struct event_loop *l, session_after_fn after, void *ctx)
{
        int fds[SAMPLER_FDS_MAX], err;
        unsigned nfds = sampler_fds(ss->s, fds, SAMPLER_FDS_MAX);

        err = event_loop_add_fds(l, fds, nfds, EPOLLIN, ring_readable, ss);
        if (err)
                return err;
        ss->dl_drain = event_loop_add_deadline(l, drain, ss);
        if (ss->dl_drain < 0)
                return ss->dl_drain;
        ss->l = l;
        ss->after = after;
        ss->after_ctx = ctx;
        event_loop_set_after(l, after_wake, ss);
        sampler_start(ss->s);
        event_loop_set(l, ss->dl_drain, sampler_next_due(ss->s));
        return 0;
}

int session_failed(const struct session *ss)
{
        return ss->failed;
}

int session_stop(struct session *ss)
{
        return sampler_stop(ss->s);
}

void session_free(struct session *ss)
{
        if (!ss)
                return;
        sampler_free(ss->s);
        use_parser(NULL); /* every symbolizer is freed by now, and the sampler with its jobs */
        parser_client_stop(ss->parser);
        free(ss);
}
