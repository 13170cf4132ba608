/* SPDX-License-Identifier: MIT */
/*
 * pb_nesting.h — a bound on how deep a target's OTEP 4719 ProcessContext payload nests,
 * checked on the raw protobuf wire format before protobuf-c unpacks it. protobuf-c recurses
 * once per nested message with no limit of its own, and AnyValue -> ArrayValue -> AnyValue ...
 * can nest as deep as the payload is long: about 10 000 levels (74 KB) overflow the
 * sampling thread's stack. A hostile target must not be able to kill the daemon that way.
 * Reads only the bytes given; never allocates, never prints.
 */
#ifndef CTXPROF_PB_NESTING_H
#define CTXPROF_PB_NESTING_H

#include <stddef.h>
#include <stdint.h>

/* Deepest message nesting accepted: a ProcessContext is 1, its Resource 2, a KeyValue 3, its
 * AnyValue 4; each array or key-value list inside a value adds 2. Real resources use < 10. */
#define PB_NESTING_MAX 32

/* 0 when buf[0..len) is a well-formed ProcessContext whose messages nest at most max_depth
 * deep (unknown fields are skipped, as protobuf-c does); -ELOOP when deeper; -EBADMSG when
 * the wire format is broken (a length past the end, a group, a bad wire type). */
int pb_nesting_check(const uint8_t *buf, size_t len, unsigned max_depth);

#endif
