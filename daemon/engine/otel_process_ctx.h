/* SPDX-License-Identifier: MIT */
/*
 * otel_process_ctx.h — one target's OpenTelemetry process context (OTEP 4719): found in
 * /proc/PID/maps (a mapping named [anon_shmem:OTEL_CTX], [anon:OTEL_CTX] or
 * /memfd:OTEL_CTX), read consistently through the header's seqlock by process_vm_readv, and
 * decoded with protobuf-c: the resource attributes (service.name, ...) and
 * threadlocal.attribute_key_map, the names of the thread context's key indexes. The decode
 * runs in the parser helper (util/parser_client.h, engine/pctx_wire.h) once
 * otel_pctx_use_parser named one: this process only reads the bytes and checks the answer.
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

struct parser_client;

#define OTEL_PCTX_MAX_PAYLOAD  (1u << 20) /* 1 MiB: bigger is refused */
#define OTEL_PCTX_MAX_RESOURCE 64
#define OTEL_PCTX_VALUE_MAX    256 /* resource values kept as text up to this many bytes */
#define OTEL_PCTX_QUICK_MAX    16  /* refreshes by the header alone between two maps reads */

struct otel_pctx {
        uint64_t published_ns; /* header timestamp of the payload decoded; 0 = none yet */
        uint64_t next_ns;      /* no refresh before (rate limit, CLOCK_MONOTONIC) */
        uint64_t checked_ns;   /* last refresh attempt */
        uint64_t backoff_ns;   /* the caller's retry interval (grows while nothing changes) */
        uint64_t at;           /* where the mapping's header was last found; 0 = not found */
        unsigned quick_checks; /* refreshes since the last maps read that read only the header */
        char **keys;           /* threadlocal.attribute_key_map; NULL slot = unusable name */
        unsigned n_keys;
        char **res_keys, **res_values; /* resource attributes as strings */
        unsigned n_res;
        const char *service_name; /* into res_values, or NULL */
};

struct otel_pctx_stats {
        uint64_t decoded;       /* payloads read and decoded */
        uint64_t quick;         /* refreshes that found the header unchanged where it was */
        uint64_t absent;        /* refreshes that found no OTEL_CTX mapping */
        uint64_t bad_header;    /* signature or version not OTEP 4719's */
        uint64_t too_large;     /* payload_size over OTEL_PCTX_MAX_PAYLOAD: refused */
        uint64_t torn;          /* being updated (or changed) during every read attempt */
        uint64_t decode_errors; /* the payload is not a ProcessContext protobuf */
        uint64_t too_deep;      /* ... of which nested past PB_NESTING_MAX (engine/pb_nesting.h) */
        uint64_t bad_schema;    /* threadlocal.schema_version not one we read: keys ignored */
        uint64_t bad_keys;      /* key names that are not label keys */
        uint64_t read_faults;   /* header or payload unreadable */
        uint64_t parser_failed; /* the parser helper timed out, died or answered out of form:
                                 * the payload is not tried again until republished */
        uint64_t parser_busy;   /* the helper could not be asked (busy past PARSER_JOB_WAIT_MS,
                                 * or restarting): tried again at the next check */
        struct target_stats target; /* maps lines refused for their length */
};

/*
 * Read pid's process context again if its header's timestamp changed since the last
 * decode. The header is read where it was last found first (pc->at): when it is still there
 * with the decoded timestamp, /proc/PID/maps is not read (quick, counted), but at least
 * every OTEL_PCTX_QUICK_MAX refreshes it is. 1 = decoded anew, 0 = unchanged (or nothing to
 * read: absent counted), -errno
 * (counted; the previous decode, if any, stays). Sets pc->checked_ns = now. The payload is
 * decoded in the parser lane of pid's real uid as read after the payload (util/parser_client.h),
 * owner's (the caller's; UINT32_MAX: not known) when it cannot be read.
 */
int otel_pctx_refresh(pid_t pid, uint32_t owner, struct otel_pctx *pc, uint64_t now,
                      struct otel_pctx_stats *st);
/* 1 if pid maps an OTEL_CTX mapping (one of the names above), 0 if not, -errno (-ESRCH:
 * gone). Reads /proc/PID/maps only (lines refused for their length counted in st). */
int otel_pctx_present(pid_t pid, struct target_stats *st);
/* Release what pc holds (pc itself is the caller's) and zero it. */
void otel_pctx_clear(struct otel_pctx *pc);
/* Payloads are decoded by the parser helper pc from now on (NULL: in this process again).
 * Set before any refresh runs and cleared after the last; pc outlives its use here. */
void otel_pctx_use_parser(struct parser_client *pc);

/* For the parser helper (service/parser_server.c) and the answer's check (pctx_wire.c): */
/* Decode len bytes of a ProcessContext protobuf into *next (zeroed by the caller; freed with
 * otel_pctx_clear), counting in st: 0, -EBADMSG (not one, or nested past PB_NESTING_MAX),
 * -ENOMEM. */
int otel_pctx_decode(const uint8_t *buf, size_t len, struct otel_pctx *next,
                     struct otel_pctx_stats *st);
/* 1 if k is usable as a label key (the label-bytes rule of docs/jfr.md). */
int otel_pctx_key_ok(const char *k);
/* 1 if a resource attribute key = value names the service (service.name, not the SDKs'
 * default unknown_service[:exe]). */
int otel_pctx_names_service(const char *key, const char *value);

#endif
