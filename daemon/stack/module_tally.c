/* SPDX-License-Identifier: MIT */
/*
 * module_tally.c — counts per module id (see module_tally.h). A linear scan over at most
 * MODULE_TALLY_MAX entries: it is fed once per event worth counting (an unwind that stopped
 * early), not once per frame.
 */
#include "stack/module_tally.h"

void module_tally_add(struct module_tally *t, uint32_t module_id)
{
        unsigned i;

        for (i = 0; i < t->n; i++) {
                if (t->e[i].module_id == module_id) {
                        t->e[i].count++;
                        return;
                }
        }
        if (t->n == MODULE_TALLY_MAX) {
                t->other++;
                return;
        }
        t->e[t->n].module_id = module_id;
        t->e[t->n].count = 1;
        t->n++;
}

static int before(const struct module_tally_entry *a, const struct module_tally_entry *b)
{
        return a->count > b->count || (a->count == b->count && a->module_id < b->module_id);
}

unsigned module_tally_top(const struct module_tally *t, struct module_tally_entry *out,
                          unsigned max)
{
        unsigned i, j, n = 0;

        /* Insertion into the short output list: max is a handful. */
        for (i = 0; i < t->n; i++) {
                const struct module_tally_entry *e = &t->e[i];

                if (n == max && (!n || !before(e, &out[n - 1])))
                        continue;
                j = n < max ? n++ : n - 1;
                while (j > 0 && before(e, &out[j - 1])) {
                        out[j] = out[j - 1];
                        j--;
                }
                out[j] = *e;
        }
        return n;
}
