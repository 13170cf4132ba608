/* SPDX-License-Identifier: MIT */
/*
 * libctx/otel_process.c — the OpenTelemetry Process Context (OTEP 4719): the OTEL_CTX mapping
 * and its 32-byte header, the ProcessContext protobuf payload (resource + the OTEP 4947
 * threadlocal.* attributes), first publication at load time and republication with the
 * seqlock when the key map grows or the resource changes.
 * Must never: allocate on the republish path (it may run in a signal handler that
 * registered a new key: the message is built in static arrays and packed by protobuf-c into
 * pre-mapped buffers); wait for the publish lock (try-lock; the holder re-checks); leave
 * monotonic_published_at_ns at a value a reader already saw for other bytes.
 *
 * Mapping: memfd "OTEL_CTX" (MFD_CLOEXEC|MFD_ALLOW_SEALING|MFD_NOEXEC_SEAL, retried without
 * the last flag on kernels before 6.3), one page, MAP_PRIVATE, fd closed; else anonymous
 * memory. MADV_DONTFORK on it and on the payload buffers; prctl(PR_SET_VMA_ANON_NAME,
 * "OTEL_CTX") always (it fails on a memfd mapping; the OTEP asks for the call regardless).
 * A forked child starts with no process context (pthread_atfork resets our state); its
 * next publication (a new key, ctx_set_resource) creates its own mapping.
 *
 * Seqlock (the OTEP's updating protocol): published_at = 0 (a seq_cst exchange: a full
 * barrier), payload pointer and size, published_at = max(CLOCK_BOOTTIME now, previous + 1)
 * (a seq_cst store: earlier stores are visible first). Two payload
 * buffers alternate, so the bytes a reader may still be copying are only overwritten by the
 * publication after next (and the changed timestamp tells the reader to retry anyway).
 */
#include <errno.h> /* program_invocation_short_name */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "otel/processcontext.pb-c.h"

#ifndef PR_SET_VMA
#define PR_SET_VMA           0x53564d41
#define PR_SET_VMA_ANON_NAME 0
#endif
#ifndef MFD_NOEXEC_SEAL
#define MFD_NOEXEC_SEAL 0x0008U
#endif

#define PAYLOAD_MAX     (64u * 1024u) /* 256 keys x 128 B + resource: well below */
#define RES_MAX         16u           /* resource attributes */
#define RES_VALUE_MAX   255u
#define UNKNOWN_SERVICE "unknown_service" /* the SDKs' default service.name, + ":exe" */
#define RES_KEY_MAX     CTX_MAX_KEY_LEN

typedef Opentelemetry__Proto__Common__V1__KeyValue KeyValue;
typedef Opentelemetry__Proto__Common__V1__AnyValue AnyValue;
typedef Opentelemetry__Proto__Common__V1__ArrayValue ArrayValue;
typedef Opentelemetry__Proto__Resource__V1__Resource Resource;
typedef Opentelemetry__Proto__Processcontext__V1development__ProcessContext ProcessContext;

static struct {
        char key[RES_KEY_MAX + 1];
        char value[RES_VALUE_MAX + 1];
} res[RES_MAX];
static unsigned nres;

static struct otel_process_ctx_header *hdr;
static size_t map_len;
static uint8_t *payload[2];
static unsigned cur_buf;
static int pub_lock;
static uint64_t want_gen;

/* The message, in static storage (built under pub_lock). */
static KeyValue kv_res[RES_MAX], kv_attr[2];
static AnyValue av_res[RES_MAX], av_attr[2], av_keys[OTEL_THREAD_CTX_MAX_KEYS];
static KeyValue *p_res[RES_MAX], *p_attr[2];
static AnyValue *p_keys[OTEL_THREAD_CTX_MAX_KEYS];
static ArrayValue keys_array;
static Resource resource;
static ProcessContext message;

static void init_kv(KeyValue *kv, AnyValue *av, const char *key, const char *str)
{
        opentelemetry__proto__common__v1__key_value__init(kv);
        opentelemetry__proto__common__v1__any_value__init(av);
        kv->key = (char *)key;
        kv->value = av;
        av->value_case = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE;
        av->string_value = (char *)str;
}

static size_t build_and_pack(uint8_t *out)
{
        opentelemetry__proto__resource__v1__resource__init(&resource);
        for (unsigned i = 0; i < nres; i++) {
                init_kv(&kv_res[i], &av_res[i], res[i].key, res[i].value);
                p_res[i] = &kv_res[i];
        }
        resource.n_attributes = nres;
        resource.attributes = p_res;

        init_kv(&kv_attr[0], &av_attr[0], OTEL_SCHEMA_VERSION_KEY, OTEL_SCHEMA_VERSION);
        opentelemetry__proto__common__v1__array_value__init(&keys_array);
        unsigned nk = ctxi_key_count();
        for (unsigned i = 0; i < nk; i++) {
                size_t len;
                opentelemetry__proto__common__v1__any_value__init(&av_keys[i]);
                av_keys[i].value_case =
                    OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE;
                av_keys[i].string_value = (char *)ctxi_key_name(i, &len);
                p_keys[i] = &av_keys[i];
        }
        keys_array.n_values = nk;
        keys_array.values = p_keys;
        init_kv(&kv_attr[1], &av_attr[1], OTEL_KEY_MAP_KEY, "");
        av_attr[1].value_case = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_ARRAY_VALUE;
        av_attr[1].array_value = &keys_array;
        p_attr[0] = &kv_attr[0];
        p_attr[1] = &kv_attr[1];

        opentelemetry__proto__processcontext__v1development__process_context__init(&message);
        message.resource = &resource;
        message.n_attributes = 2;
        message.attributes = p_attr;
        size_t n =
            opentelemetry__proto__processcontext__v1development__process_context__get_packed_size(
                &message);
        if (n > PAYLOAD_MAX)
                return 0;
        return opentelemetry__proto__processcontext__v1development__process_context__pack(&message,
                                                                                          out);
}

static uint64_t boottime_ns(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_BOOTTIME, &ts);
        return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void name_mapping(void)
{
        (void)prctl(PR_SET_VMA, PR_SET_VMA_ANON_NAME, (unsigned long)hdr, map_len,
                    (unsigned long)OTEL_PROCESS_CTX_NAME);
}

/* The mapping and the payload buffers (first publication in this process). */
static int create_mapping(void)
{
        long page = sysconf(_SC_PAGESIZE);
        map_len = page > 0 ? (size_t)page : 4096;
        void *m = MAP_FAILED;
        int fd =
            memfd_create(OTEL_PROCESS_CTX_NAME, MFD_CLOEXEC | MFD_ALLOW_SEALING | MFD_NOEXEC_SEAL);
        if (fd < 0)
                fd = memfd_create(OTEL_PROCESS_CTX_NAME, MFD_CLOEXEC | MFD_ALLOW_SEALING);
        if (fd >= 0) {
                if (ftruncate(fd, (off_t)map_len) == 0)
                        m = mmap(NULL, map_len, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
                close(fd);
        }
        if (m == MAP_FAILED)
                m = mmap(NULL, map_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m == MAP_FAILED)
                return -ENOMEM;
        uint8_t *p =
            mmap(NULL, 2 * PAYLOAD_MAX, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) {
                munmap(m, map_len);
                return -ENOMEM;
        }
        if (madvise(m, map_len, MADV_DONTFORK) != 0 ||
            madvise(p, 2 * PAYLOAD_MAX, MADV_DONTFORK) != 0) {
                munmap(m, map_len);
                munmap(p, 2 * PAYLOAD_MAX);
                return -ENOMEM;
        }
        payload[0] = p;
        payload[1] = p + PAYLOAD_MAX;
        hdr = m;
        return 0;
}

/* Under pub_lock. */
static int publish_locked(void)
{
        if (!hdr) {
                int err = create_mapping();
                if (err)
                        return err;
        }
        unsigned b = cur_buf ^ 1;
        size_t n = build_and_pack(payload[b]);
        if (n == 0)
                return -E2BIG;
        cur_buf = b;
        uint64_t prev = __atomic_load_n(&hdr->monotonic_published_at_ns, __ATOMIC_RELAXED);
        uint64_t now = boottime_ns();
        if (now <= prev)
                now = prev + 1;
        int first = hdr->signature[0] == 0;
        /* seqlock writer: an acq_rel exchange (later stores stay after it), the payload
         * fields, a release store of the new timestamp (earlier stores stay before it) */
        (void)__atomic_exchange_n(&hdr->monotonic_published_at_ns, 0, __ATOMIC_SEQ_CST);
        __atomic_store_n(&hdr->version, OTEL_PROCESS_CTX_VERSION, __ATOMIC_RELAXED);
        __atomic_store_n(&hdr->payload, (uint64_t)(uintptr_t)payload[b], __ATOMIC_RELAXED);
        __atomic_store_n(&hdr->payload_size, (uint32_t)n, __ATOMIC_RELAXED);
        __atomic_store_n(&hdr->monotonic_published_at_ns, now, __ATOMIC_SEQ_CST);
        if (first) { /* the signature goes last at the first publication (one 8-byte store) */
                uint64_t sig;
                memcpy(&sig, OTEL_PROCESS_CTX_SIGNATURE, sizeof(sig));
                __atomic_store_n((uint64_t *)(void *)hdr->signature, sig, __ATOMIC_SEQ_CST);
        }
        name_mapping();
        return 0;
}

/* Publish until no newer request is left; never waits for the lock. */
void ctxi_process_republish(void)
{
        if (!ctxi_on(CTX_ABI_OTEL_PROCESS))
                return;
        __atomic_fetch_add(&want_gen, 1, __ATOMIC_SEQ_CST);
        for (;;) {
                int zero = 0;
                if (!__atomic_compare_exchange_n(&pub_lock, &zero, 1, 0, __ATOMIC_SEQ_CST,
                                                 __ATOMIC_SEQ_CST))
                        return; /* the holder sees want_gen changed and publishes again */
                uint64_t g;
                do {
                        g = __atomic_load_n(&want_gen, __ATOMIC_SEQ_CST);
                        if (publish_locked() != 0)
                                CTXI_COUNT(otel_publish_failed);
                } while (__atomic_load_n(&want_gen, __ATOMIC_SEQ_CST) != g);
                __atomic_store_n(&pub_lock, 0, __ATOMIC_SEQ_CST);
                if (__atomic_load_n(&want_gen, __ATOMIC_SEQ_CST) == g)
                        return;
        }
}

/* Resource attributes (under pub_lock or before any thread can publish). */
static int res_set(const char *key, const char *value, size_t vlen)
{
        if (vlen > RES_VALUE_MAX || strlen(key) > RES_KEY_MAX)
                return -EINVAL;
        unsigned i = 0;
        while (i < nres && strcmp(res[i].key, key) != 0)
                i++;
        if (i == nres) {
                if (nres == RES_MAX)
                        return -ENOSPC;
                strcpy(res[nres].key, key);
                nres++;
        }
        memcpy(res[i].value, value, vlen);
        res[i].value[vlen] = '\0';
        return 0;
}

static const char *res_get(const char *key)
{
        for (unsigned i = 0; i < nres; i++)
                if (!strcmp(res[i].key, key))
                        return res[i].value;
        return NULL;
}

static int hexval(char c)
{
        return c >= '0' && c <= '9'   ? c - '0'
               : c >= 'a' && c <= 'f' ? c - 'a' + 10
               : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                      : -1;
}

/* Copy [s, s+n) percent-decoding it and trimming spaces (W3C Baggage style, as the OTel
 * SDK spec asks for OTEL_RESOURCE_ATTRIBUTES). Returns the decoded length or -1. */
static long decode(const char *s, size_t n, char *out, size_t cap)
{
        while (n && s[0] == ' ')
                s++, n--;
        while (n && s[n - 1] == ' ')
                n--;
        size_t o = 0;
        for (size_t i = 0; i < n; i++) {
                char c = s[i];
                if (c == '%' && i + 2 < n && hexval(s[i + 1]) >= 0 && hexval(s[i + 2]) >= 0) {
                        c = (char)(hexval(s[i + 1]) * 16 + hexval(s[i + 2]));
                        i += 2;
                }
                if (o >= cap)
                        return -1;
                out[o++] = c;
        }
        return (long)o;
}

static void parse_resource_env(const char *e)
{
        while (e && *e) {
                size_t n = strcspn(e, ",");
                const char *eq = memchr(e, '=', n);
                if (eq) {
                        char k[RES_KEY_MAX + 1], v[RES_VALUE_MAX + 1];
                        long kl = decode(e, (size_t)(eq - e), k, RES_KEY_MAX);
                        long vl = decode(eq + 1, n - (size_t)(eq - e) - 1, v, RES_VALUE_MAX);
                        if (kl > 0 && vl >= 0) {
                                k[kl] = '\0';
                                (void)res_set(k, v, (size_t)vl);
                        }
                }
                e += n;
                if (*e == ',')
                        e++;
        }
}

static void random_uuid(char out[37])
{
        uint8_t u[16];
        if (getrandom(u, sizeof(u), 0) != (ssize_t)sizeof(u)) {
                uint64_t t = boottime_ns() ^ ((uint64_t)getpid() << 32);
                memcpy(u, &t, 8);
                t *= CTX_SPAN_CHECKSUM_K;
                memcpy(u + 8, &t, 8);
        }
        u[6] = (uint8_t)((u[6] & 0x0f) | 0x40); /* version 4 */
        u[8] = (uint8_t)((u[8] & 0x3f) | 0x80); /* variant 10 */
        static const char hx[] = "0123456789abcdef";
        size_t o = 0;
        for (int i = 0; i < 16; i++) {
                if (i == 4 || i == 6 || i == 8 || i == 10)
                        out[o++] = '-';
                out[o++] = hx[u[i] >> 4];
                out[o++] = hx[u[i] & 15];
        }
        out[o] = '\0';
}

static void reset_in_child(void)
{
        hdr = NULL; /* MADV_DONTFORK: neither the header nor the payloads exist here */
        payload[0] = payload[1] = NULL;
        pub_lock = 0;
}

__attribute__((constructor)) static void process_ctx_init(void)
{
        parse_resource_env(getenv("OTEL_RESOURCE_ATTRIBUTES"));
        const char *sn = getenv("OTEL_SERVICE_NAME");
        if (sn && *sn)
                (void)res_set("service.name", sn, strnlen(sn, RES_VALUE_MAX + 1));
        if (!res_get("service.name")) {
                /* the SDKs' default: "unknown_service:" + the executable's name */
                char def[RES_VALUE_MAX + 1];
                int n = snprintf(def, sizeof(def), "%s:%s", UNKNOWN_SERVICE,
                                 program_invocation_short_name);

                (void)res_set("service.name", def,
                              n > 0 && (size_t)n < sizeof(def) ? (size_t)n : strlen(def));
        }
        if (!res_get("service.instance.id")) {
                char id[37];
                random_uuid(id);
                (void)res_set("service.instance.id", id, 36);
        }
        (void)pthread_atfork(NULL, NULL, reset_in_child);
        ctxi_process_republish();
}

int ctx_set_resource(const char *service_name, const char *service_version,
                     const char *service_instance_id, const char *deployment_environment)
{
        const char *keys[] = {"service.name", "service.version", "service.instance.id",
                              "deployment.environment.name"};
        const char *vals[] = {service_name, service_version, service_instance_id,
                              deployment_environment};
        for (int i = 0; i < 4; i++)
                if (vals[i] && strlen(vals[i]) > RES_VALUE_MAX)
                        return -EINVAL;
        int zero = 0;
        while (!__atomic_compare_exchange_n(&pub_lock, &zero, 1, 0, __ATOMIC_SEQ_CST,
                                            __ATOMIC_SEQ_CST))
                zero = 0;
        int err = 0;
        for (int i = 0; i < 4 && !err; i++)
                if (vals[i])
                        err = res_set(keys[i], vals[i], strlen(vals[i]));
        __atomic_store_n(&pub_lock, 0, __ATOMIC_SEQ_CST);
        ctxi_process_republish();
        return err;
}
