/*
 * ctx_shim.c — TEMPORARY stand-in for libctx (branch libctx not merged yet) so the sampler's
 * workloads can publish context: implements ctx_set_span / ctx_clear_span /
 * ctx_set_label_str / ctx_clear_labels of the libctx contract, with the published layouts of
 * include/ctx/abi.h and the same consistency promise for a reader interrupting the thread
 * (signal fences order the stores as seen from the thread's own CPU). Test code only; never
 * linked into ctxprof. Remove when the workloads link libctx.a.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "ctx/abi.h"

#define SHIM_LABELS 10
#define SHIM_KEY    128
#define SHIM_VAL    256

__attribute__((visibility("default"))) __thread custom_labels_labelset_t *custom_labels_current_set;
__attribute__((visibility("default"))) __thread struct ctx_span_context ctx_span_context_v1;
__attribute__((visibility("default"))) const uint32_t custom_labels_abi_version = 1;
__attribute__((visibility("default"))) const uint32_t ctx_span_context_abi_version = 1;

struct shim_set {
        custom_labels_labelset_t set;
        custom_labels_label_t labels[SHIM_LABELS];
        unsigned char keys[SHIM_LABELS][SHIM_KEY];
        unsigned char vals[SHIM_LABELS][2][SHIM_VAL]; /* double-buffered values */
        int cur[SHIM_LABELS];
};
static __thread struct shim_set shim;

#define FENCE() __atomic_signal_fence(__ATOMIC_SEQ_CST)

int ctx_set_span(uint64_t span_id, uint64_t root_span_id)
{
        struct ctx_span_context *c = &ctx_span_context_v1;

        c->checksum = 0;
        FENCE();
        c->span_id = span_id;
        c->root_span_id = root_span_id;
        FENCE();
        c->checksum = ctx_span_checksum(span_id, root_span_id);
        return 0;
}

int ctx_clear_span(void)
{
        ctx_span_context_v1.checksum = 0;
        return 0;
}

int ctx_set_label_str(const char *key, const char *val)
{
        size_t kl = strlen(key), vl = strlen(val), i;
        int b;

        if (kl > SHIM_KEY || vl > SHIM_VAL)
                return -EINVAL;
        if (!custom_labels_current_set) {
                shim.set.storage = shim.labels;
                shim.set.capacity = SHIM_LABELS;
                FENCE();
                custom_labels_current_set = &shim.set;
        }
        for (i = 0; i < shim.set.count; i++)
                if (shim.labels[i].key.len == kl && !memcmp(shim.keys[i], key, kl))
                        break;
        if (i == shim.set.count) {
                if (i == SHIM_LABELS)
                        return -ENOSPC;
                memcpy(shim.keys[i], key, kl);
                memcpy(shim.vals[i][0], val, vl);
                shim.cur[i] = 0;
                shim.labels[i].key.len = kl;
                shim.labels[i].value.len = vl;
                shim.labels[i].value.buf = shim.vals[i][0];
                FENCE();
                shim.labels[i].key.buf = shim.keys[i];
                FENCE();
                shim.set.count = i + 1;
                return 0;
        }
        /* Hide the label, write the other buffer, publish, show it again. */
        b = !shim.cur[i];
        shim.labels[i].key.buf = NULL;
        FENCE();
        memcpy(shim.vals[i][b], val, vl);
        shim.labels[i].value.len = vl;
        shim.labels[i].value.buf = shim.vals[i][b];
        shim.cur[i] = b;
        FENCE();
        shim.labels[i].key.buf = shim.keys[i];
        return 0;
}

int ctx_clear_labels(void)
{
        custom_labels_current_set = NULL;
        FENCE();
        shim.set.count = 0;
        return 0;
}
