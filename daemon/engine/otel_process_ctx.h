/* SPDX-License-Identifier: MIT */
/*
 * otel_process_ctx.h — one target's OpenTelemetry process context (OTEP 4719): found in
 * /proc/PID/maps (a mapping named [anon_shmem:OTEL_CTX], [anon:OTEL_CTX] or
 * /memfd:OTEL_CTX), read consistently through the header's seqlock from /proc/PID/mem, and
 * decoded with protobuf-c: the resource attributes (service.name, ...) and
 * threadlocal.attribute_key_map, the names of the thread context's key indexes.
 *
 * Hostile input is bounded: a payload over OTEL_PCTX_MAX_PAYLOAD is refused, a key name that
 * is not a label key (empty, over CTXPROF_LABEL_KEY_MAX, not UTF-8) is kept as a NULL slot
 * (its attributes are dropped), at most OTEL_MAX_KEYS keys and OTEL_PCTX_MAX_RESOURCE
 * resource attributes are kept. Never prints; errors are negative errno.
 * Thread safety: one thread (the sampler's) per struct.
 */
#ifndef CTXPROF_OTEL_PROCESS_CTX_H
#define CTXPROF_OTEL_PROCESS_CTX_H

#include <stdint.h>
#include <sys/types.h>

#include "util/target_stats.h"

#define OTEL_PCTX_MAX_PAYLOAD  (1u << 20) /* 1 MiB: bigger is refused */
#define OTEL_PCTX_MAX_RESOURCE 64

struct otel_pctx {
        uint64_t published_ns; /* header timestamp of the payload decoded; 0 = none yet */
        uint64_t next_ns;      /* no refresh before (rate limit, CLOCK_MONOTONIC) */
        uint64_t checked_ns;   /* last refresh attempt */
        uint64_t backoff_ns;   /* the caller's retry interval (grows while nothing changes) */
        char **keys;           /* threadlocal.attribute_key_map; NULL slot = unusable name */
        unsigned n_keys;
        char **res_keys, **res_values; /* resource attributes as strings */
        unsigned n_res;
        const char *service_name; /* into res_values, or NULL */
};

struct otel_pctx_stats {
        uint64_t decoded;       /* payloads read and decoded */
        uint64_t absent;        /* refreshes that found no OTEL_CTX mapping */
        uint64_t bad_header;    /* signature or version not OTEP 4719's */
        uint64_t too_large;     /* payload_size over OTEL_PCTX_MAX_PAYLOAD: refused */
        uint64_t torn;          /* being updated (or changed) during every read attempt */
        uint64_t decode_errors; /* the payload is not a ProcessContext protobuf */
        uint64_t too_deep;      /* ... of which nested past PB_NESTING_MAX (engine/pb_nesting.h) */
        uint64_t bad_schema;    /* threadlocal.schema_version not one we read: keys ignored */
        uint64_t bad_keys;      /* key names that are not label keys */
        uint64_t read_faults;   /* header or payload unreadable */
        struct target_stats target; /* maps lines refused for their length */
};

/*
 * Read pid's process context again if its header's timestamp changed since the last
 * decode: 1 = decoded anew, 0 = unchanged (or nothing to read: absent counted), -errno
 * (counted; the previous decode, if any, stays). Sets pc->checked_ns = now.
 */
int otel_pctx_refresh(pid_t pid, struct otel_pctx *pc, uint64_t now, struct otel_pctx_stats *st);
/* 1 if pid maps an OTEL_CTX mapping (one of the names above), 0 if not, -errno (-ESRCH:
 * gone). Reads /proc/PID/maps only (lines refused for their length counted in st). */
int otel_pctx_present(pid_t pid, struct target_stats *st);
/* Release what pc holds (pc itself is the caller's) and zero it. */
void otel_pctx_clear(struct otel_pctx *pc);

#endif
