/* SPDX-License-Identifier: MIT */
/*
 * pctx_wire.h — a PARSER_PCTX request and its answer (util/parser_wire.h): the daemon sends an
 * OTEP 4719 process context's payload, read from the target, in a memfd sent with the
 * request; the parser helper decodes the protobuf (engine/otel_process_ctx.h) and answers
 * with plain strings: the key map (a NULL slot for a key name that is not a label key), the
 * resource attributes as text, which of them is service.name, and the decode's counters.
 * The decoder checks every count, length and name against the same rules as the in-process
 * decode, because the helper's answer is as hostile as the payload it parsed. Never prints.
 */
#ifndef CTXPROF_PCTX_WIRE_H
#define CTXPROF_PCTX_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "ctxprof/sample.h"
#include "engine/otel_decode.h"
#include "engine/otel_process_ctx.h"

struct pctx_req {
        uint32_t payload_size; /* bytes of the memfd sent with it, <= OTEL_PCTX_MAX_PAYLOAD */
        uint32_t pad;
};
_Static_assert(sizeof(struct pctx_req) == 8, "pctx_req is a wire struct");

#define PCTX_WIRE_NULL   0xffffu /* a string's length: the slot holds no string */
#define PCTX_WIRE_NO_SVC 0xffffu /* service: no resource attribute names the service */

struct pctx_resp_head {
        int32_t err;      /* the decode's: 0, -EBADMSG (not a ProcessContext), -ENOMEM */
        uint16_t n_keys;  /* <= OTEL_MAX_KEYS */
        uint16_t n_res;   /* <= OTEL_PCTX_MAX_RESOURCE */
        uint16_t service; /* index of service.name's value in the resource, or PCTX_WIRE_NO_SVC */
        uint8_t too_deep; /* the decode's counters (engine/otel_process_ctx.h) */
        uint8_t bad_schema;
        uint32_t bad_keys;
};
_Static_assert(sizeof(struct pctx_resp_head) == 16, "pctx_resp_head is a wire struct");

/* The largest answer: every key and resource attribute at its cap, each with a 2-byte length. */
#define PCTX_RESP_MAX                                                                              \
        (sizeof(struct pctx_resp_head) + OTEL_MAX_KEYS * (2 + CTXPROF_LABEL_KEY_MAX) +             \
         OTEL_PCTX_MAX_RESOURCE * (4 + CTXPROF_LABEL_KEY_MAX + OTEL_PCTX_VALUE_MAX))

/* The answer for a decode that returned err, with pc's strings and st's counters, into buf
 * (cap >= PCTX_RESP_MAX); its length (0 if cap is short). */
uint32_t pctx_wire_encode(int err, const struct otel_pctx *pc, const struct otel_pctx_stats *st,
                          void *buf, size_t cap);
/* Checks len bytes of buf and decodes them into *pc (zeroed first; strings malloc'ed, freed by
 * otel_pctx_clear) and adds the counters to *st: the helper's decode result (0, -EBADMSG,
 * -ENOMEM), or -EPROTO (a malformed answer: *pc is left empty) or -ENOMEM. */
int pctx_wire_decode(const void *buf, uint32_t len, struct otel_pctx *pc,
                     struct otel_pctx_stats *st);

#endif
