/* SPDX-License-Identifier: MIT */
/*
 * ctx_read_user.h — reference reader of one thread's context (Custom Labels v1 labelset and
 * the checksummed span record) through /proc/PID/mem, following the reader rules of the
 * spec, not our writer's habits. Used by tests and to validate what the BPF side reports.
 * Reads only; never prints; bounded work whatever the target wrote.
 */
#ifndef CTXPROF_CTX_READ_USER_H
#define CTXPROF_CTX_READ_USER_H

#include <stdint.h>

#include "ctxprof/tls_target.h"

#define CTX_READ_MAX_LABELS 10  /* distinct labels kept */
#define CTX_READ_MAX_SLOTS  16  /* label slots examined (count may be anything) */
#define CTX_READ_MAX_KEY    128 /* bytes kept per key; longer keys are cut */
#define CTX_READ_MAX_VAL    256 /* bytes kept per value */

struct ctx_user_label {
        uint64_t key_len, val_len;      /* lengths the target claims */
        uint32_t key_n, val_n;          /* bytes kept in key/val (<= caps) */
        char key[CTX_READ_MAX_KEY + 1]; /* NUL-terminated copy (may contain NULs) */
        char val[CTX_READ_MAX_VAL + 1];
};

enum ctx_span_state {
        CTX_SPAN_ABSENT = 0, /* no span variable for this thread (not located / no block) */
        CTX_SPAN_NONE = 1,   /* record all zero (never set) or span id 0 (cleared) */
        CTX_SPAN_TORN = 2,   /* checksum 0 with ids set, or a mismatching checksum */
        CTX_SPAN_VALID = 3,
};

struct ctx_user_context {
        int labels_present; /* 1 = the thread has a labelset (set pointer not NULL) */
        int labels_error;   /* 0, or -errno (e.g. -EFAULT: the set or a label was unreadable) */
        unsigned nlabels;
        struct ctx_user_label labels[CTX_READ_MAX_LABELS];
        int span_state; /* enum ctx_span_state */
        uint64_t span_id, root_span_id;
        uint32_t tags[10];
};

/*
 * Read the context of the thread whose thread pointer is tp. 0 = *out filled (possibly
 * empty); -ESRCH = process gone. Per-part failures land in out->labels_error / span_state:
 * a hostile labelset yields an error or fewer labels, never garbage beyond the caps.
 * Rules: NULL set = no labels; key.buf NULL = slot skipped; value.buf NULL on a live key =
 * slot skipped; the first of duplicate keys wins (keys compared by claimed length and the
 * kept bytes).
 */
int ctx_read_user(int mem_fd, const struct ctxprof_tls_target *t, uint64_t tp,
                  struct ctx_user_context *out);

/* The label with this key in ctx, or NULL. */
const struct ctx_user_label *ctx_user_label_find(const struct ctx_user_context *ctx,
                                                 const char *key);

#endif
