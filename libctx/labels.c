/* SPDX-License-Identifier: MIT */
/*
 * libctx/labels.c — the public label calls: argument checks, the same-thread reentrancy
 * guard, the calling thread's set, then the careful edit in labelset.c.
 * Must never allocate, lock or make a system call; never scan an unbounded string (the _str
 * forms read at most one byte past the limit to find a UTF-8 boundary).
 */
#include <string.h>

#include "internal.h"

int ctx_set_label(const char *key, size_t key_len, const char *val, size_t val_len)
{
        if (!key || key_len == 0 || (!val && val_len))
                return -EINVAL;
        int err = ctxi_enter();
        if (err)
                return err;
        struct ctxi_slot *s = ctxi_thread_slot(&err);
        if (s)
                err = ctxi_set_put(s, key, key_len, val ? val : "", val_len);
        ctxi_leave();
        return err;
}

int ctx_set_label_str(const char *key, const char *val)
{
        if (!key || !val)
                return -EINVAL;
        return ctx_set_label(key, strnlen(key, CTX_MAX_KEY_LEN + 1), val,
                             strnlen(val, CTX_MAX_VALUE_LEN + 1));
}

int ctx_remove_label(const char *key, size_t key_len)
{
        if (!key || key_len == 0)
                return -EINVAL;
        int err = ctxi_enter();
        if (err)
                return err;
        custom_labels_labelset_t *cur = CTXI_LD(ctxi_current_set);
        if (cur) /* no set yet: nothing to remove, and no need to take a slot */
                err = ctxi_set_remove(ctxi_slot_of(cur), key, key_len);
        ctxi_leave();
        return err;
}

int ctx_remove_label_str(const char *key)
{
        if (!key)
                return -EINVAL;
        return ctx_remove_label(key, strnlen(key, CTX_MAX_KEY_LEN + 1));
}

int ctx_clear_labels(void)
{
        int err = ctxi_enter();
        if (err)
                return err;
        custom_labels_labelset_t *cur = CTXI_LD(ctxi_current_set);
        if (cur)
                ctxi_set_clear(ctxi_slot_of(cur));
        ctxi_leave();
        return 0;
}
