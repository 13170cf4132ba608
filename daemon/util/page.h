/* SPDX-License-Identifier: MIT */
/*
 * util/page.h — the page size of this machine: mappings start at file offsets and addresses
 * that are multiples of it, for every process (it is the kernel's). Header only; includes no
 * daemon header; never fails.
 */
#ifndef CTXPROF_UTIL_PAGE_H
#define CTXPROF_UTIL_PAGE_H

#include <stdint.h>
#include <unistd.h>

#define PAGE_SIZE_FALLBACK 4096 /* if sysconf cannot tell (it always can on Linux) */

static inline uint64_t page_size(void)
{
        long ps = sysconf(_SC_PAGESIZE);

        return ps > 0 ? (uint64_t)ps : PAGE_SIZE_FALLBACK;
}

#endif
