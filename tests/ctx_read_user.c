/* SPDX-License-Identifier: MIT */
/*
 * ctx_read_user.c — the reference user-space reader of one thread's context through
 * /proc/PID/mem: Custom Labels v1 labelset (reader rules of the spec) and the checksummed
 * span record. Bounded: at most CTX_READ_MAX_SLOTS slots and capped string copies, whatever
 * count/len the target claims. Never prints, never writes to the target.
 */
#include "ctx_read_user.h"

#include <errno.h>
#include <string.h>

#include "ctx/abi.h"
#include "tls/tls_locate.h"

static int copy_string(int mem_fd, const custom_labels_string_t *s, char *dst, size_t cap,
                       uint32_t *kept)
{
        size_t n = s->len < cap ? s->len : cap;
        *kept = (uint32_t)n;
        dst[n] = 0;
        if (n == 0)
                return 0;
        return tls_mem_read(mem_fd, (uint64_t)(uintptr_t)s->buf, dst, n);
}

static int same_key(const struct ctx_user_label *a, const struct ctx_user_label *b)
{
        return a->key_len == b->key_len && a->key_n == b->key_n &&
               memcmp(a->key, b->key, a->key_n) == 0;
}

static int read_labels(int mem_fd, uint64_t var, struct ctx_user_context *out)
{
        uint64_t set_ptr;
        int rc = tls_mem_read(mem_fd, var, &set_ptr, sizeof(set_ptr));
        if (rc)
                return rc;
        if (set_ptr == 0)
                return 0; /* NULL set: no labels */
        out->labels_present = 1;
        custom_labels_labelset_t set;
        rc = tls_mem_read(mem_fd, set_ptr, &set, sizeof(set));
        if (rc)
                return rc;
        size_t slots = set.count < CTX_READ_MAX_SLOTS ? set.count : CTX_READ_MAX_SLOTS;
        for (size_t i = 0; i < slots && out->nlabels < CTX_READ_MAX_LABELS; i++) {
                custom_labels_label_t l;
                rc = tls_mem_read(mem_fd, (uint64_t)(uintptr_t)set.storage + i * sizeof(l), &l,
                                  sizeof(l));
                if (rc)
                        return rc;
                if (l.key.buf == NULL || l.value.buf == NULL)
                        continue;
                struct ctx_user_label *dst = &out->labels[out->nlabels];
                dst->key_len = l.key.len;
                dst->val_len = l.value.len;
                rc = copy_string(mem_fd, &l.key, dst->key, CTX_READ_MAX_KEY, &dst->key_n);
                if (rc)
                        return rc;
                int dup = 0;
                for (unsigned j = 0; j < out->nlabels && !dup; j++)
                        dup = same_key(&out->labels[j], dst);
                if (dup)
                        continue; /* first of duplicate keys wins */
                rc = copy_string(mem_fd, &l.value, dst->val, CTX_READ_MAX_VAL, &dst->val_n);
                if (rc)
                        return rc;
                out->nlabels++;
        }
        return 0;
}

static void read_span(int mem_fd, uint64_t var, struct ctx_user_context *out)
{
        struct ctx_span_context rec;
        if (tls_mem_read(mem_fd, var, &rec, sizeof(rec)) != 0)
                return; /* ABSENT */
        memcpy(out->tags, rec.tags, sizeof(out->tags));
        if (rec.checksum == 0) {
                out->span_state =
                    rec.span_id == 0 && rec.root_span_id == 0 ? CTX_SPAN_NONE : CTX_SPAN_TORN;
                return;
        }
        if (rec.checksum != ctx_span_checksum(rec.span_id, rec.root_span_id)) {
                out->span_state = CTX_SPAN_TORN;
                return;
        }
        if (rec.span_id == 0) {
                out->span_state = CTX_SPAN_NONE;
                return;
        }
        out->span_state = CTX_SPAN_VALID;
        out->span_id = rec.span_id;
        out->root_span_id = rec.root_span_id;
}

int ctx_read_user(int mem_fd, const struct ctxprof_tls_target *t, uint64_t tp,
                  struct ctx_user_context *out)
{
        memset(out, 0, sizeof(*out));
        uint64_t addr;
        int rc = tls_var_address(mem_fd, t, &t->labels, tp, &addr);
        if (rc == 0)
                rc = read_labels(mem_fd, addr, out);
        if (rc == -ESRCH)
                return rc;
        if (rc && rc != -ENOENT) {
                out->labels_error = rc;
                out->nlabels = 0; /* a partial read is not a label set */
        }
        rc = tls_var_address(mem_fd, t, &t->span, tp, &addr);
        if (rc == -ESRCH)
                return rc;
        if (rc == 0)
                read_span(mem_fd, addr, out);
        return 0;
}

const struct ctx_user_label *ctx_user_label_find(const struct ctx_user_context *ctx,
                                                 const char *key)
{
        size_t n = strlen(key);
        for (unsigned i = 0; i < ctx->nlabels; i++)
                if (ctx->labels[i].key_n == n && ctx->labels[i].key_len == n &&
                    memcmp(ctx->labels[i].key, key, n) == 0)
                        return &ctx->labels[i];
        return NULL;
}
