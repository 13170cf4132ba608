/* SPDX-License-Identifier: MIT */
/*
 * libctx/labelset.c — careful in-place edits of one Custom Labels v1 label set (a pool slot):
 * reset, copy, put (replace or add), remove, clear, and truncation at a UTF-8 boundary.
 * Must never: allocate, lock, call anything that is not async-signal-safe, free or move a
 * buffer, or let a reader see a key whose value bytes or length are being rewritten.
 *
 * Invariants of a slot's set (the writer is the owning thread only):
 *  - storage == labels and capacity == 10 forever; label i's strings always live in buf[i]
 *    (value.buf == buf[i].val always, key.buf is buf[i].key or NULL).
 *  - entries [0, count) are what readers look at; entries >= count are writer-private.
 *    count >= 2: entries 0/1 are the span mirrors (span.c), hidden (key.buf NULL) when off.
 *  - within [0, count) an entry with key.buf == NULL is a hole; its bytes may be rewritten.
 *  - no key appears twice among the user entries (so "first duplicate wins" never matters,
 *    except that a user "span-id" label loses to the mirror in entry 0).
 *
 * Why each reader sees, per key, the old value, the new value, or (during its own update)
 * none — never mixed bytes and never a length that does not match the bytes:
 *  - replace: key.buf = NULL (one 8-byte store: the key disappears), ORDER, rewrite value
 *    bytes and value.len, ORDER, key.buf = buf (one store: the key reappears with the new
 *    value complete). A reader that sees key.buf != NULL therefore sees bytes and length
 *    written entirely before it (new) or entirely untouched (old).
 *  - add into a hole: all fields written while key.buf == NULL, ORDER, key.buf = buf.
 *  - append: the entry at `count` is invisible; fill it, ORDER, count + 1 (one store).
 *  - remove: key.buf = NULL (one store), ORDER, then shrink count over trailing holes.
 *  - clear: count = 2 (one store: every user label disappears at once).
 * ORDER is atomic_signal_fence (a compiler barrier). That is sufficient because the readers
 * the ABI admits only look at a thread that is not running: (1) a signal handler, perf NMI or
 * BPF program that interrupted this thread on its own CPU — a CPU observes its own stores in
 * program order and interrupts are taken between instructions, so only the compiler could
 * reorder the stores, which the fence forbids; (2) a reader on another CPU while this thread
 * is descheduled — the context switch (scheduler run-queue lock, full barriers on the
 * switching CPU) orders every store this thread made before the switch ahead of anything the
 * reader does after learning that the thread is off-CPU. (On x86-64, TSO even makes a racing
 * cross-CPU reader see the stores in program order, but the ABI does not promise that case
 * and neither do we: such a reader may copy value bytes while they are being rewritten.)
 * Each published field is written with one aligned relaxed atomic store, so the compiler can
 * neither split nor elide it.
 */
#include <string.h>

#include "labelset_edit.h"

static const char mirror_key0[] = CTX_SPAN_ID_KEY;
static const char mirror_key1[] = CTX_ROOT_SPAN_ID_KEY;

/* ctxi_utf8_cut for len > max: if the cut byte is a continuation byte (10xxxxxx), back off
 * over at most 3 of them to the character's lead byte; input that is not UTF-8 there is cut
 * at max. */
size_t ctxi_utf8_cut_slow(const char *p, size_t max, int *truncated)
{
        *truncated = 1;
        size_t n = max;
        for (int k = 0; k < 3 && n > 0 && ((unsigned char)p[n] & 0xC0) == 0x80; k++)
                n--;
        if (((unsigned char)p[n] & 0xC0) == 0x80)
                n = max; /* not UTF-8 at the cut: keep the bytes */
        return n;
}

void ctxi_set_reset(struct ctxi_slot *s)
{
        s->set.storage = s->labels;
        s->set.capacity = CTX_MAX_LABELS;
        s->set.count = CTX_RESERVED_LABELS;
        for (unsigned i = 0; i < CTX_MAX_LABELS; i++) {
                s->labels[i].key.buf = NULL;
                s->labels[i].key.len = 0;
                s->labels[i].value.buf = s->buf[i].val;
                s->labels[i].value.len = 0;
                s->kidx[i] = CTXI_NO_KEY;
        }
        s->hint = 0;
        memcpy(s->buf[0].key, mirror_key0, sizeof(mirror_key0) - 1);
        s->labels[0].key.len = sizeof(mirror_key0) - 1;
        memcpy(s->buf[1].key, mirror_key1, sizeof(mirror_key1) - 1);
        s->labels[1].key.len = sizeof(mirror_key1) - 1;
        s->prev = NULL;
        s->mirror_shown = 0;
        s->mirror_span = 0;
        s->mirror_root = 0;
}

/* dst is unpublished (no reader can reach it): plain stores. */
void ctxi_set_copy(struct ctxi_slot *dst, const struct ctxi_slot *src)
{
        size_t count = src->set.count;
        dst->set.storage = dst->labels;
        dst->set.capacity = CTX_MAX_LABELS;
        dst->set.count = count;
        for (unsigned i = 0; i < CTX_MAX_LABELS; i++) {
                const custom_labels_label_t *sl = &src->labels[i];
                custom_labels_label_t *dl = &dst->labels[i];
                dl->value.buf = dst->buf[i].val;
                dl->key.buf = NULL;
                dl->key.len = 0;
                dl->value.len = 0;
                dst->kidx[i] = src->kidx[i];
                dst->hint = src->hint;
                if (i >= count || (!sl->key.buf && i >= CTX_RESERVED_LABELS))
                        continue;
                dl->key.len = sl->key.len;
                memcpy(dst->buf[i].key, src->buf[i].key, sl->key.len);
                if (sl->key.buf) {
                        dl->value.len = sl->value.len;
                        memcpy(dst->buf[i].val, src->buf[i].val, sl->value.len);
                        dl->key.buf = dst->buf[i].key;
                }
        }
        dst->mirror_shown = src->mirror_shown;
        dst->mirror_span = src->mirror_span;
        dst->mirror_root = src->mirror_root;
}

/* Add key at hole (or append after count): the entry is invisible while it is filled. */
int ctxi_set_add(struct ctxi_slot *s, int hole, int k, const char *key, size_t klen,
                 const char *val, size_t vlen)
{
        size_t count = s->set.count;
        size_t j = hole >= 0 ? (size_t)hole : count;
        if (j >= CTX_MAX_LABELS)
                return -ENOSPC;
        custom_labels_label_t *l = &s->labels[j];
        s->kidx[j] = (int16_t)k;
        s->hint = (uint8_t)j;
        /* entry j is hidden (a hole) or beyond count: nobody reads these bytes */
        ctxi_copy_small(s->buf[j].key, key, klen);
        ctxi_copy_small(s->buf[j].val, val, vlen);
        CTXI_ST(l->key.len, klen);
        CTXI_ST(l->value.len, vlen);
        CTXI_ST(l->value.buf, (const unsigned char *)s->buf[j].val);
        if (j < count) {
                CTXI_ORDER();
                CTXI_ST(l->key.buf, (const unsigned char *)s->buf[j].key);
        } else {
                CTXI_ST(l->key.buf, (const unsigned char *)s->buf[j].key);
                CTXI_ORDER();
                CTXI_ST(s->set.count, j + 1);
        }
        return 0;
}

int ctxi_set_put(struct ctxi_slot *s, int k, const char *key, size_t klen, const char *val,
                 size_t vlen)
{
        int truncated = 0, hole;
        klen = ctxi_utf8_cut(key, klen, CTX_MAX_KEY_LEN, &truncated);
        int i = ctxi_set_find(s, k, key, klen, &hole);
        int err = ctxi_set_put_at(s, i, hole, k, key, klen, val, vlen);
        return err == 0 && truncated ? CTX_TRUNCATED : err;
}

int ctxi_set_remove(struct ctxi_slot *s, const char *key, size_t klen)
{
        int truncated = 0;
        klen = ctxi_utf8_cut(key, klen, CTX_MAX_KEY_LEN, &truncated);
        size_t count = s->set.count;
        int hole;
        int i = ctxi_set_find(s, CTXI_NO_KEY, key, klen, &hole);
        if (i < 0)
                return 0;
        CTXI_ST(s->labels[i].key.buf, NULL);
        CTXI_ORDER();
        size_t n = count;
        while (n > CTX_RESERVED_LABELS && !s->labels[n - 1].key.buf)
                n--;
        if (n != count)
                CTXI_ST(s->set.count, n);
        return 0;
}

void ctxi_set_clear(struct ctxi_slot *s)
{
        CTXI_ST(s->set.count, (size_t)CTX_RESERVED_LABELS);
}
