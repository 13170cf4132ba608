/* SPDX-License-Identifier: MIT */
/*
 * util/gzip.h — gzip (RFC 1952, zlib's deflate) of a buffer already in memory: to a FILE
 * (pprof's profile.pb.gz) or to an anonymous memory file (an OTLP upload body, sent from a
 * descriptor). Never prints.
 */
#ifndef CTXPROF_UTIL_GZIP_H
#define CTXPROF_UTIL_GZIP_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* buf[0..len) gzip'd to out, flushed. 0, -EIO (a write or compression error) or -ENOMEM. */
int gzip_write(FILE *out, const uint8_t *buf, size_t len);
/* buf[0..len) gzip'd into a new memfd (close-on-exec), positioned at 0: the descriptor,
 * or -errno. */
int gzip_memfd(const uint8_t *buf, size_t len);

#endif
