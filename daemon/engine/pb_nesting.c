/* SPDX-License-Identifier: MIT */
/*
 * pb_nesting.c — the ProcessContext nesting bound (see pb_nesting.h): a walk of the protobuf
 * wire format that knows which fields of the proto/otel/ schema hold messages, recursing at most
 * max_depth times. It checks structure only; protobuf-c still decodes and validates the
 * values. Never allocates, never prints.
 */
#include <errno.h>

#include "engine/pb_nesting.h"

enum pb_msg {
        PB_NONE,
        PB_PROCESS_CONTEXT,
        PB_RESOURCE,
        PB_KEY_VALUE,
        PB_ANY_VALUE,
        PB_ARRAY,
        PB_KV_LIST
};

enum pb_wire { PB_VARINT = 0, PB_FIXED64 = 1, PB_LEN = 2, PB_FIXED32 = 5 };

#define PB_VARINT_MAX 10 /* bytes of a 64-bit varint */

/* The message type a length-delimited field holds (field numbers from proto/otel/). */
static enum pb_msg child(enum pb_msg m, uint64_t field)
{
        switch (m) {
        case PB_PROCESS_CONTEXT: /* resource = 1, attributes = 2 */
                return field == 1 ? PB_RESOURCE : field == 2 ? PB_KEY_VALUE : PB_NONE;
        case PB_RESOURCE: /* attributes = 1 */
                return field == 1 ? PB_KEY_VALUE : PB_NONE;
        case PB_KEY_VALUE: /* value = 2 */
                return field == 2 ? PB_ANY_VALUE : PB_NONE;
        case PB_ANY_VALUE: /* array_value = 5, kvlist_value = 6 */
                return field == 5 ? PB_ARRAY : field == 6 ? PB_KV_LIST : PB_NONE;
        case PB_ARRAY: /* values = 1 */
                return field == 1 ? PB_ANY_VALUE : PB_NONE;
        case PB_KV_LIST: /* values = 1 */
                return field == 1 ? PB_KEY_VALUE : PB_NONE;
        default:
                return PB_NONE;
        }
}

static int varint(const uint8_t **p, const uint8_t *end, uint64_t *out)
{
        uint64_t v = 0;

        for (unsigned i = 0; i < PB_VARINT_MAX && *p < end; i++) {
                uint8_t b = *(*p)++;

                v |= (uint64_t)(b & 0x7f) << (7 * i);
                if (!(b & 0x80)) {
                        *out = v;
                        return 0;
                }
        }
        return -EBADMSG;
}

static int walk(const uint8_t *p, const uint8_t *end, enum pb_msg m, unsigned depth,
                unsigned max_depth)
{
        if (depth > max_depth)
                return -ELOOP;
        while (p < end) {
                uint64_t key, n;
                int err = varint(&p, end, &key);

                if (err)
                        return err;
                switch (key & 7) {
                case PB_VARINT:
                        if ((err = varint(&p, end, &n)))
                                return err;
                        break;
                case PB_FIXED64:
                case PB_FIXED32: {
                        size_t w = (key & 7) == PB_FIXED64 ? 8 : 4;

                        if ((size_t)(end - p) < w)
                                return -EBADMSG;
                        p += w;
                        break;
                }
                case PB_LEN: {
                        enum pb_msg c;

                        if ((err = varint(&p, end, &n)))
                                return err;
                        if (n > (uint64_t)(end - p))
                                return -EBADMSG;
                        c = child(m, key >> 3);
                        if (c != PB_NONE && (err = walk(p, p + n, c, depth + 1, max_depth)))
                                return err;
                        p += n;
                        break;
                }
                default: /* groups (3, 4) and the unused 6, 7: not in this schema */
                        return -EBADMSG;
                }
        }
        return 0;
}

int pb_nesting_check(const uint8_t *buf, size_t len, unsigned max_depth)
{
        if (!buf && len)
                return -EINVAL;
        return walk(buf, buf + len, PB_PROCESS_CONTEXT, 1, max_depth);
}
