/* SPDX-License-Identifier: MIT */
/*
 * otel_spec_writer.c — the OTEP 4947 / OTEP 4719 writer of the tests (see otel_spec_writer.h),
 * from the specs' text: the TLS pointer otel_thread_ctx_v1 (exported: .dynsym), two records
 * per thread for the pointer-swap protocol, and the OTEL_CTX mapping whose protobuf payload is
 * encoded here by hand (the field numbers of the .proto files in proto/otel), independent of the
 * decoder under test. Never used by the product.
 */
#include "otel_spec_writer.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#ifndef PR_SET_VMA /* musl's headers (musl-gcc) lack them */
#define PR_SET_VMA           0x53564d41
#define PR_SET_VMA_ANON_NAME 0
#endif

#define EXPORT __attribute__((visibility("default")))

/* The OTEP's thread-local pointer: 8 bytes, in .dynsym, NULL = no context.
 * OTELW_PROCESS_ONLY: no such symbol anywhere (an SDK that publishes the process context
 * alone); the thread functions write a variable of another name that no reader looks for. */
#ifdef OTELW_PROCESS_ONLY
#define otel_thread_ctx_v1 otelw_thread_ctx_off
#endif
/* OTELW_HIDDEN_TLS: hidden (only in .symtab), reached with -ftls-model=local-dynamic through
 * a module-relative DTPMOD64 (what the OTel profiler's reference fixture does) */
#ifdef OTELW_HIDDEN_TLS
__attribute__((visibility("hidden"))) __thread void *otel_thread_ctx_v1;
#else
EXPORT __thread void *otel_thread_ctx_v1;
#endif

struct rec {
        uint8_t b[OTELW_REC_MAX + 64]; /* + room for the hostile "past the record" cases */
} __attribute__((aligned(8)));
static __thread struct rec recs[2];
static __thread int live; /* which of recs[] the pointer names (swap protocol) */

static void fence(void)
{
        __atomic_signal_fence(__ATOMIC_SEQ_CST);
}

#define SLOW_SPIN_NS 20000

static void spin(long ns)
{
        struct timespec t0, t;

        clock_gettime(CLOCK_MONOTONIC, &t0);
        do
                clock_gettime(CLOCK_MONOTONIC, &t);
        while ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) < ns);
}

static size_t fill(uint8_t *b, const uint8_t trace_id[16], const uint8_t span_id[8],
                   const struct otelw_attr *a, unsigned n)
{
        size_t off = OTELW_HDR_BYTES;
        uint16_t size;

        memcpy(b, trace_id, 16);
        memcpy(b + 16, span_id, 8);
        b[25] = 1; /* trace_flags: sampled */
        for (unsigned i = 0; i < n; i++) {
                if (off + 2 + a[i].len > OTELW_REC_MAX)
                        abort();
                b[off] = a[i].key;
                b[off + 1] = a[i].len;
                memcpy(b + off + 2, a[i].val, a[i].len);
                off += 2 + (size_t)a[i].len;
        }
        size = (uint16_t)(off - OTELW_HDR_BYTES);
        memcpy(b + 26, &size, 2);
        return off;
}

EXPORT void otelw_set(int protocol, const uint8_t trace_id[16], const uint8_t span_id[8],
                      const struct otelw_attr *a, unsigned n)
{
        if (protocol != OTELW_SWAP) {
                volatile uint8_t *valid = &recs[0].b[24];

                *valid = 0; /* readers: being updated */
                fence();
                otel_thread_ctx_v1 = recs[0].b;
                if (protocol == OTELW_FLIP_SLOW) {
                        memcpy(recs[0].b, trace_id, 16); /* a torn record: new trace, old rest */
                        fence();
                        spin(SLOW_SPIN_NS);
                }
                fill(recs[0].b, trace_id, span_id, a, n);
                fence();
                *valid = 1;
                return;
        }
        struct rec *r = &recs[otel_thread_ctx_v1 == recs[live].b ? !live : live];

        fill(r->b, trace_id, span_id, a, n);
        r->b[24] = 1;
        fence();
        otel_thread_ctx_v1 = r->b; /* the one store a reader sees the switch by */
        fence();
        live = (int)(r - recs);
}

EXPORT void otelw_set_raw(const void *rec, size_t len)
{
        struct rec *r = &recs[otel_thread_ctx_v1 == recs[live].b ? !live : live];

        if (len > sizeof(r->b))
                abort();
        memcpy(r->b, rec, len);
        fence();
        otel_thread_ctx_v1 = r->b;
        fence();
        live = (int)(r - recs);
}

EXPORT void otelw_set_ptr(void *p)
{
        fence();
        otel_thread_ctx_v1 = p;
        fence();
}

EXPORT void otelw_clear(void)
{
        otelw_set_ptr(NULL);
}

/* ---- process context ---------------------------------------------------------------- */

#define PCTX_MAP_BYTES  (512 * 1024) /* room for OTELW_PCTX_DEEP */
#define PCTX_HDR_BYTES  32
#define PCTX_VERSION    2
#define PCTX_HUGE_SIZE  (1u << 31)
#define SCHEMA_VERSION  "tlsdesc_v1_dev"
#define PB_LEN          2 /* wire type: length-delimited */
#define PB_TAG(f, wt)   ((uint8_t)((f) << 3 | (wt)))
#define PB_NEST_MAX     8
#define PB_LEN_RESERVED 3 /* bytes kept for a nested length (< 2^21) */

struct pctx_header {
        char signature[8];
        uint32_t version;
        uint32_t payload_size;
        uint64_t published_at_ns; /* 0 = being updated */
        uint64_t payload;         /* address in this process */
};
_Static_assert(sizeof(struct pctx_header) == PCTX_HDR_BYTES, "OTEP 4719 header: 32 bytes");

/* A protobuf encoder for what ProcessContext needs: strings and nested messages. */
struct pb {
        uint8_t *b;
        size_t n, cap;
        size_t open[PB_NEST_MAX]; /* start of each open message's length */
        int depth;
};

static void pb_byte(struct pb *p, uint8_t v)
{
        if (p->n >= p->cap)
                abort();
        p->b[p->n++] = v;
}

static void pb_varint(struct pb *p, uint64_t v)
{
        while (v >= 0x80) {
                pb_byte(p, (uint8_t)(v | 0x80));
                v >>= 7;
        }
        pb_byte(p, (uint8_t)v);
}

static void pb_str(struct pb *p, unsigned field, const char *s)
{
        size_t len = strlen(s);

        pb_byte(p, PB_TAG(field, PB_LEN));
        pb_varint(p, len);
        if (p->n + len > p->cap)
                abort();
        memcpy(p->b + p->n, s, len);
        p->n += len;
}

/* A nested message: its length is written in PB_LEN_RESERVED bytes (a padded varint). */
static void pb_begin(struct pb *p, unsigned field)
{
        pb_byte(p, PB_TAG(field, PB_LEN));
        p->open[p->depth++] = p->n;
        for (int i = 0; i < PB_LEN_RESERVED; i++)
                pb_byte(p, 0);
}

static void pb_end(struct pb *p)
{
        size_t at = p->open[--p->depth], len = p->n - at - PB_LEN_RESERVED;

        p->b[at] = (uint8_t)(len | 0x80);
        p->b[at + 1] = (uint8_t)(len >> 7 | 0x80);
        p->b[at + 2] = (uint8_t)(len >> 14);
}

/* KeyValue{key, AnyValue{string_value}} as field `field`. */
static void pb_kv_str(struct pb *p, unsigned field, const char *k, const char *v)
{
        pb_begin(p, field);
        pb_str(p, 1, k);
        pb_begin(p, 2);
        pb_str(p, 1, v);
        pb_end(p);
        pb_end(p);
}

static size_t encode_payload(uint8_t *out, size_t cap, const char *service, const char *const *keys,
                             unsigned nkeys)
{
        struct pb p = {.b = out, .cap = cap};

        pb_begin(&p, 1); /* ProcessContext.resource */
        pb_kv_str(&p, 1, "service.name", service);
        pb_kv_str(&p, 1, "service.version", "1.2.3");
        pb_end(&p);
        pb_kv_str(&p, 2, "threadlocal.schema_version", SCHEMA_VERSION);
        pb_begin(&p, 2); /* KeyValue threadlocal.attribute_key_map */
        pb_str(&p, 1, "threadlocal.attribute_key_map");
        pb_begin(&p, 2); /* AnyValue */
        pb_begin(&p, 5); /* ArrayValue */
        for (unsigned i = 0; i < nkeys; i++) {
                pb_begin(&p, 1); /* AnyValue */
                pb_str(&p, 1, keys[i]);
                pb_end(&p);
        }
        pb_end(&p);
        pb_end(&p);
        pb_end(&p);
        return p.n;
}

/* OTELW_PCTX_DEEP: one more attribute whose value nests PCTX_DEEP_LEVELS arrays deep
 * (AnyValue.array_value = 5 -> ArrayValue.values = 1 -> AnyValue ...), around "x". Written
 * outside in: each wrap's length is known (3 bytes of "x" plus 4 per wrap inside it). */
#define PCTX_DEEP_LEVELS 30000

static void pb_deep_value(struct pb *p)
{
        unsigned wraps = 2 * PCTX_DEEP_LEVELS;

        for (unsigned w = 0; w < wraps; w++) {
                size_t len = 3 + (size_t)4 * (wraps - 1 - w);

                pb_byte(p, PB_TAG(w % 2 == 0 ? 5 : 1, PB_LEN));
                pb_byte(p, (uint8_t)(len | 0x80));
                pb_byte(p, (uint8_t)(len >> 7 | 0x80));
                pb_byte(p, (uint8_t)(len >> 14));
        }
        pb_str(p, 1, "x");
}

static struct pctx_header *pctx;

static int pctx_map(int kind)
{
        void *m;

        if (kind == OTELW_PCTX_MEMFD) {
                int fd = memfd_create("OTEL_CTX", MFD_CLOEXEC | MFD_ALLOW_SEALING);

                if (fd < 0)
                        return -errno;
                if (ftruncate(fd, PCTX_MAP_BYTES)) {
                        close(fd);
                        return -errno;
                }
                m = mmap(NULL, PCTX_MAP_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
                close(fd);
        } else {
                m = mmap(NULL, PCTX_MAP_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                         -1, 0);
        }
        if (m == MAP_FAILED)
                return -errno;
        madvise(m, PCTX_MAP_BYTES, MADV_DONTFORK);
        /* memfd: names the mapping [anon_shmem:...] on kernels that show it so; anon: the
         * only name it gets. */
        prctl(PR_SET_VMA, PR_SET_VMA_ANON_NAME, (unsigned long)m, PCTX_MAP_BYTES,
              (unsigned long)"OTEL_CTX");
        pctx = m;
        return 0;
}

EXPORT int otelw_publish_process(int kind, int bad, const char *service, const char *const *keys,
                                 unsigned nkeys)
{
        uint8_t *payload;
        struct timespec ts;
        size_t n;
        int err;

        if (!pctx && (err = pctx_map(kind)))
                return err;
        payload = (uint8_t *)pctx + PCTX_HDR_BYTES;
        /* seqlock: 0 while the header and payload change */
        __atomic_store_n(&pctx->published_at_ns, 0, __ATOMIC_SEQ_CST);
        n = encode_payload(payload, PCTX_MAP_BYTES - PCTX_HDR_BYTES, service, keys, nkeys);
        if (bad == OTELW_PCTX_DEEP) {
                struct pb p = {.b = payload, .n = n, .cap = PCTX_MAP_BYTES - PCTX_HDR_BYTES};

                pb_begin(&p, 2); /* ProcessContext.attributes: KeyValue */
                pb_str(&p, 1, "deep");
                pb_begin(&p, 2); /* KeyValue.value: AnyValue */
                pb_deep_value(&p);
                pb_end(&p);
                pb_end(&p);
                n = p.n;
        }
        if (bad == OTELW_PCTX_CORRUPT)
                memset(payload + n / 3, 0xff, n / 3); /* broken tags and lengths */
        memcpy(pctx->signature, "OTEL_CTX", 8);
        pctx->version = PCTX_VERSION;
        pctx->payload_size = bad == OTELW_PCTX_HUGE ? PCTX_HUGE_SIZE : (uint32_t)n;
        pctx->payload = (uint64_t)(uintptr_t)payload;
        clock_gettime(CLOCK_BOOTTIME, &ts);
        __atomic_thread_fence(__ATOMIC_SEQ_CST);
        __atomic_store_n(&pctx->published_at_ns,
                         (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec,
                         __ATOMIC_SEQ_CST);
        return 0;
}
