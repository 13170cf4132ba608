/* SPDX-License-Identifier: MIT */
/*
 * otel_process_ctx.c — discovery, seqlock read and protobuf decoding of a target's OTEP 4719
 * process context (see otel_process_ctx.h). Reads the target only through /proc/PID/maps and
 * process_vm_readv (its memory; never /proc/PID/mem, whose read of a FUSE-backed page holds
 * the target's mmap lock while the server stalls); must never write to it, never trust a size or
 * pointer from it beyond the bounds checked here, never print.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ctxprof/sample.h"
#include "engine/context_decode.h"
#include "engine/otel_decode.h"
#include "engine/otel_process_ctx.h"
#include "engine/pb_nesting.h"
#include "engine/pctx_wire.h"
#include "engine/procs.h"
#include "processcontext.pb-c.h"
#include "tls/tls_locate.h"
#include "util/fs.h"
#include "util/maps_line.h"
#include "util/parser_client.h"
#include "util/parser_wire.h"

#define PCTX_SIGNATURE     "OTEL_CTX"
#define PCTX_SIGNATURE_LEN 8
#define PCTX_VERSION       2
#define PCTX_READ_TRIES    3
#define KEY_MAP_ATTR       "threadlocal.attribute_key_map"
#define SCHEMA_ATTR        "threadlocal.schema_version"
#define SERVICE_NAME_ATTR  "service.name"
#define UNKNOWN_SERVICE    "unknown_service" /* OTel SDKs' default service.name prefix */

typedef Opentelemetry__Proto__Processcontext__V1development__ProcessContext ProcessContext;
typedef Opentelemetry__Proto__Common__V1__KeyValue KeyValue;
typedef Opentelemetry__Proto__Common__V1__AnyValue AnyValue;

struct pctx_header {
        char signature[PCTX_SIGNATURE_LEN];
        uint32_t version;
        uint32_t payload_size;
        uint64_t published_at_ns; /* 0 = being updated */
        uint64_t payload;
};
_Static_assert(sizeof(struct pctx_header) == 32, "OTEP 4719 header: 32 bytes");

/* Schemas whose key map means "thread context key indexes" (OTEP 4947). */
static const char *const known_schemas[] = {"tlsdesc_v1_dev", "tls_v1"};

/* 1 if a /proc/PID/maps name is the OTEP's: [anon_shmem:OTEL_CTX], [anon:OTEL_CTX] or
 * /memfd:OTEL_CTX (a memfd mapping may say " (deleted)" after it). */
static int is_pctx_name(const char *name)
{
        static const char memfd[] = "/memfd:OTEL_CTX";

        if (!strcmp(name, "[anon_shmem:OTEL_CTX]") || !strcmp(name, "[anon:OTEL_CTX]"))
                return 1;
        if (strncmp(name, memfd, sizeof(memfd) - 1))
                return 0;
        name += sizeof(memfd) - 1;
        return !*name || !strcmp(name, " (deleted)");
}

struct find_ctx {
        uint64_t start;
        int found;
};

static int find_cb(const struct maps_line *l, void *arg)
{
        struct find_ctx *fc = arg;

        if (!is_pctx_name(l->path) || l->end - l->start < sizeof(struct pctx_header))
                return 0;
        fc->start = l->start;
        fc->found = 1;
        return 1;
}

/* Start address of pid's OTEL_CTX mapping (maps read by util/maps_line.h: a line too long is
 * counted in st and never parsed): 0, -ENOENT (none), -ESRCH. */
static int find_mapping(pid_t pid, uint64_t *start, struct target_stats *st)
{
        struct find_ctx fc = {0};
        int err = maps_foreach(pid, find_cb, &fc, st);

        if (err < 0)
                return err;
        if (!fc.found)
                return -ENOENT;
        *start = fc.start;
        return 0;
}

/* 1 if h has OTEP 4719's signature and the version we read. */
static int header_is_ours(const struct pctx_header *h)
{
        return !memcmp(h->signature, PCTX_SIGNATURE, PCTX_SIGNATURE_LEN) &&
               h->version == PCTX_VERSION;
}

/* One consistent copy of the payload (seqlock): 0 and *buf (malloc'ed), or -errno. */
static int read_payload(pid_t pid, uint64_t at, struct pctx_header *h, uint8_t **buf,
                        struct otel_pctx_stats *st)
{
        for (int tries = 0; tries < PCTX_READ_TRIES; tries++) {
                struct pctx_header again;
                uint8_t *b;
                int rc = tls_vm_read(pid, at, h, sizeof(*h));

                if (rc)
                        return rc;
                if (!header_is_ours(h)) {
                        st->bad_header++;
                        return -EPROTO;
                }
                if (!h->published_at_ns)
                        continue; /* being updated */
                if (h->payload_size > OTEL_PCTX_MAX_PAYLOAD) {
                        st->too_large++;
                        return -EFBIG;
                }
                b = malloc(h->payload_size ? h->payload_size : 1);
                if (!b)
                        return -ENOMEM;
                rc = tls_vm_read(pid, h->payload, b, h->payload_size);
                if (!rc)
                        rc = tls_vm_read(pid, at, &again, sizeof(again));
                if (rc) {
                        free(b);
                        return rc;
                }
                if (again.published_at_ns == h->published_at_ns &&
                    again.payload_size == h->payload_size && again.payload == h->payload) {
                        *buf = b;
                        return 0;
                }
                free(b); /* republished while we read: again */
        }
        st->torn++;
        return -EAGAIN;
}

/* An AnyValue as text (strings as they are; numbers and booleans printed); NULL = none. */
static char *value_text(const AnyValue *v)
{
        char num[32];

        if (!v)
                return NULL;
        switch (v->value_case) {
        case OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE:
                return strndup(v->string_value, OTEL_PCTX_VALUE_MAX);
        case OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_INT_VALUE:
                snprintf(num, sizeof(num), "%" PRId64, v->int_value);
                return strdup(num);
        case OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_BOOL_VALUE:
                return strdup(v->bool_value ? "true" : "false");
        default:
                return NULL;
        }
}

/* The parser helper that decodes payloads (NULL: this process does). */
static struct parser_client *parser;

void otel_pctx_use_parser(struct parser_client *pc)
{
        __atomic_store_n(&parser, pc, __ATOMIC_RELEASE); /* jobs may be refreshing already */
}

int otel_pctx_key_ok(const char *k)
{
        size_t n = strlen(k);

        return n && n <= CTXPROF_LABEL_KEY_MAX &&
               utf8_valid_prefix((const unsigned char *)k, n) == n;
}

static void free_strings(char **v, unsigned n)
{
        for (unsigned i = 0; i < n && v; i++)
                free(v[i]);
        free(v);
}

void otel_pctx_clear(struct otel_pctx *pc)
{
        free_strings(pc->keys, pc->n_keys);
        free_strings(pc->res_keys, pc->n_res);
        free_strings(pc->res_values, pc->n_res);
        memset(pc, 0, sizeof(*pc));
}

/* threadlocal.attribute_key_map into next->keys. 0 or -ENOMEM. */
static int take_keys(const AnyValue *v, struct otel_pctx *next, struct otel_pctx_stats *st)
{
        const Opentelemetry__Proto__Common__V1__ArrayValue *a;
        size_t n;

        if (!v || v->value_case != OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_ARRAY_VALUE ||
            !v->array_value)
                return 0;
        a = v->array_value;
        n = a->n_values < OTEL_MAX_KEYS ? a->n_values : OTEL_MAX_KEYS;
        next->keys = calloc(n ? n : 1, sizeof(char *));
        if (!next->keys)
                return -ENOMEM;
        next->n_keys = (unsigned)n;
        for (size_t i = 0; i < n; i++) {
                const AnyValue *k = a->values[i];

                if (!k ||
                    k->value_case !=
                        OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE ||
                    !otel_pctx_key_ok(k->string_value)) {
                        st->bad_keys++;
                        continue; /* NULL slot: attributes with this index are dropped */
                }
                if (!(next->keys[i] = strdup(k->string_value)))
                        return -ENOMEM;
        }
        return 0;
}

/* ProcessContext.attributes: the schema version and the key map. 0 or -errno. */
static int take_attributes(const ProcessContext *m, struct otel_pctx *next,
                           struct otel_pctx_stats *st)
{
        const AnyValue *keys = NULL;
        int schema_ok = 1;

        for (size_t i = 0; i < m->n_attributes; i++) {
                const KeyValue *kv = m->attributes[i];

                if (!kv || !kv->key)
                        continue;
                if (!strcmp(kv->key, KEY_MAP_ATTR))
                        keys = kv->value;
                else if (!strcmp(kv->key, SCHEMA_ATTR)) {
                        char *s = value_text(kv->value);

                        schema_ok = 0;
                        for (size_t j = 0;
                             s && j < sizeof(known_schemas) / sizeof(known_schemas[0]); j++)
                                schema_ok |= !strcmp(s, known_schemas[j]);
                        free(s);
                }
        }
        if (!schema_ok) {
                st->bad_schema++;
                return 0; /* a key map for another reader: no names */
        }
        return take_keys(keys, next, st);
}

/* ProcessContext.resource: its attributes as text. 0 or -ENOMEM. */
static int take_resource(const ProcessContext *m, struct otel_pctx *next)
{
        size_t n;

        if (!m->resource || !m->resource->n_attributes)
                return 0;
        n = m->resource->n_attributes;
        if (n > OTEL_PCTX_MAX_RESOURCE)
                n = OTEL_PCTX_MAX_RESOURCE;
        next->res_keys = calloc(n, sizeof(char *));
        next->res_values = calloc(n, sizeof(char *));
        if (!next->res_keys || !next->res_values)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                const KeyValue *kv = m->resource->attributes[i];
                char *v = kv && kv->key ? value_text(kv->value) : NULL;

                if (!v)
                        continue;
                next->res_keys[next->n_res] = strndup(kv->key, CTXPROF_LABEL_KEY_MAX);
                next->res_values[next->n_res] = v;
                if (!next->res_keys[next->n_res]) {
                        free(v);
                        return -ENOMEM;
                }
                if (otel_pctx_names_service(kv->key, v))
                        next->service_name = v;
                next->n_res++;
        }
        return 0;
}

int otel_pctx_names_service(const char *key, const char *value)
{
        /* the SDKs' default "unknown_service[:exe]" names nothing: the executable names the
         * process then, as for a process without a context */
        return !strcmp(key, SERVICE_NAME_ATTR) && *value &&
               strncmp(value, UNKNOWN_SERVICE, strlen(UNKNOWN_SERVICE));
}

int otel_pctx_decode(const uint8_t *buf, size_t len, struct otel_pctx *next,
                     struct otel_pctx_stats *st)
{
        ProcessContext *m;
        int err = pb_nesting_check(buf, len, PB_NESTING_MAX);

        /* protobuf-c recurses without a limit: a deep payload would overflow this stack */
        if (err) {
                if (err == -ELOOP)
                        st->too_deep++;
                st->decode_errors++;
                return -EBADMSG;
        }
        m = opentelemetry__proto__processcontext__v1development__process_context__unpack(NULL, len,
                                                                                         buf);
        if (!m) {
                st->decode_errors++;
                return -EBADMSG;
        }
        err = take_resource(m, next);
        if (!err)
                err = take_attributes(m, next, st);
        opentelemetry__proto__processcontext__v1development__process_context__free_unpacked(m,
                                                                                            NULL);
        return err;
}

/* The payload decoded by the parser helper of owner's lane: it goes in a memfd (up to
 * OTEL_PCTX_MAX_PAYLOAD, more than one message holds), the answer is checked by pctx_wire_decode.
 * The decode's result, or -EPROTO with parser_failed counted when the helper timed out, died or
 * answered out of form. */
static int decode_remote(struct parser_client *pc, uint32_t owner, const uint8_t *buf, uint32_t len,
                         struct otel_pctx *next, struct otel_pctx_stats *st)
{
        static _Thread_local union {
                char buf[PCTX_RESP_MAX];
                uint64_t align;
        } resp;
        struct pctx_req req = {.payload_size = len};
        uint32_t got = 0;
        int fd = memfd_create("ctxprof-otel-ctx", MFD_CLOEXEC);
        int err;

        if (fd < 0)
                return -errno;
        err = write_all(fd, buf, len);
        if (!err)
                err = parser_client_try_call_as(pc, owner, PARSER_JOB_WAIT_MS, PARSER_PCTX, &req,
                                                sizeof(req), fd, resp.buf, sizeof(resp.buf), &got);
        close(fd);
        if (!err)
                err = pctx_wire_decode(resp.buf, got, next, st);
        if (err == -ETIMEDOUT || err == -EPIPE || err == -EPROTO) {
                st->parser_failed++;
                return -EPROTO;
        }
        return err;
}

/* Whose lane decodes pid's payload: its real uid as read after the payload was (a process
 * seen first as root that changed its uid since has its new owner's bytes in memory: never
 * root's lane for them), else owner (the caller's, read when the process was first seen). */
static uint32_t payload_owner(pid_t pid, uint32_t owner)
{
        uint32_t now = procs_read_owner(pid);

        return now == PROC_OWNER_UNKNOWN ? owner : now;
}

int otel_pctx_present(pid_t pid, struct target_stats *st)
{
        uint64_t at;
        int err = find_mapping(pid, &at, st);

        return err == -ENOENT ? 0 : err ? err : 1;
}

/* 1 if the header decoded last is still where it was found, with the same timestamp: a
 * quick look (one process_vm_readv) that lets the maps read wait, at most OTEL_PCTX_QUICK_MAX
 * times in a row (a second mapping published elsewhere is found by the maps read). */
static int unchanged_where_found(pid_t pid, struct otel_pctx *pc)
{
        struct pctx_header h;

        if (!pc->at || !pc->published_ns || pc->quick_checks >= OTEL_PCTX_QUICK_MAX)
                return 0;
        if (tls_vm_read(pid, pc->at, &h, sizeof(h)) || !header_is_ours(&h) ||
            h.published_at_ns != pc->published_ns)
                return 0;
        pc->quick_checks++;
        return 1;
}

int otel_pctx_refresh(pid_t pid, uint32_t owner, struct otel_pctx *pc, uint64_t now,
                      struct otel_pctx_stats *st)
{
        struct otel_pctx next = {0};
        struct pctx_header h;
        uint64_t at;
        uint8_t *buf = NULL;
        int err;

        pc->checked_ns = now;
        if (unchanged_where_found(pid, pc)) {
                st->quick++;
                return 0;
        }
        pc->quick_checks = 0;
        pc->at = 0;
        err = find_mapping(pid, &at, &st->target);
        if (err) {
                if (err == -ENOENT)
                        st->absent++;
                return err == -ENOENT ? 0 : err;
        }
        pc->at = at;
        /* process_vm_readv, not /proc/PID/mem: a payload in a FUSE-backed page waits for
         * its server without holding the target's mmap lock (tls/tls_locate.h) */
        err = tls_vm_read(pid, at, &h, sizeof(h));
        if (!err && h.published_at_ns && h.published_at_ns == pc->published_ns)
                return 0; /* unchanged since the last decode */
        if (!err)
                err = read_payload(pid, at, &h, &buf, st);
        if (err) {
                if (err == -EFAULT)
                        st->read_faults++;
                return err;
        }
        struct parser_client *helper = __atomic_load_n(&parser, __ATOMIC_ACQUIRE);
        err = helper
                  ? decode_remote(helper, payload_owner(pid, owner), buf, h.payload_size, &next, st)
                  : otel_pctx_decode(buf, h.payload_size, &next, st);
        free(buf);
        if (err) {
                otel_pctx_clear(&next);
                /* a payload that does not decode (or stalled, killed or confused the helper)
                 * is not tried again until it changes; one the helper was not asked about
                 * (busy, or restarting) is, at the next check */
                if (err != -EBUSY && err != -EAGAIN)
                        pc->published_ns = h.published_at_ns;
                else
                        st->parser_busy++;
                return err;
        }
        next.published_ns = h.published_at_ns;
        next.at = at;
        next.next_ns = pc->next_ns;
        next.backoff_ns = pc->backoff_ns;
        next.checked_ns = now;
        otel_pctx_clear(pc);
        *pc = next;
        st->decoded++;
        return 1;
}
