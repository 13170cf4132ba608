/* SPDX-License-Identifier: MIT */
/*
 * module_tally.h — a count per module id (stack/modules.c ids, or CTXPROF_MODULE_*), and
 * the modules counted most: statistics such as "where DWARF unwinding stopped early". Fixed
 * memory: at most MODULE_TALLY_MAX distinct ids, further ids are counted together as
 * `other`. Never allocates, never prints. Not thread-safe (one owner).
 */
#ifndef CTXPROF_MODULE_TALLY_H
#define CTXPROF_MODULE_TALLY_H

#include <stdint.h>

#define MODULE_TALLY_MAX 256

struct module_tally_entry {
        uint32_t module_id;
        uint64_t count;
};

struct module_tally {
        struct module_tally_entry e[MODULE_TALLY_MAX];
        unsigned n;
        uint64_t other; /* counts of ids that found the tally full */
};

/* Zero-initialized memory is an empty tally. */
void module_tally_add(struct module_tally *t, uint32_t module_id);
/* The (up to) max entries with the highest counts, highest first (ties: lower id first).
 * Returns how many were written. */
unsigned module_tally_top(const struct module_tally *t, struct module_tally_entry *out,
                          unsigned max);

#endif
