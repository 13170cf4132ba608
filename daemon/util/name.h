/* SPDX-License-Identifier: MIT */
/*
 * name.h — a name taken from a target (its comm, executable, OTel service.name) made safe for
 * file names, log lines and backend tags: every byte outside [A-Za-z0-9._-] becomes '_'. A
 * target controls these strings; a ',' '}' '=' or newline in one must not add a Pyroscope
 * tag, end a tag set or forge a log line. Never allocates, never prints.
 */
#ifndef CTXPROF_UTIL_NAME_H
#define CTXPROF_UTIL_NAME_H

#include <stddef.h>
#include <stdio.h>

/* dst (len >= 1) = src cleaned, cut to len - 1 bytes; `empty` when nothing is left. */
static inline void name_clean(char *dst, size_t len, const char *src, const char *empty)
{
        size_t i;

        for (i = 0; src[i] && i + 1 < len; i++) {
                char c = src[i];

                dst[i] = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                                 (c >= '0' && c <= '9') || c == '.' || c == '-' || c == '_'
                             ? c
                             : '_';
        }
        dst[i] = '\0';
        if (!i)
                snprintf(dst, len, "%s", empty);
}

#endif
