/* SPDX-License-Identifier: MIT */
/*
 * libctx/abi_switch.c — which ABIs libctx writes: the process-wide CTX_ABI_* mask, its
 * default (all), the CTX_ABIS environment variable (read once, before the other constructors)
 * and ctx_set_abis/ctx_get_abis. Owns nothing else; must never allocate or print.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

unsigned ctxi_abis = CTX_ABI_ALL;

static const struct {
        const char *name;
        unsigned bits;
} abi_names[] = {
    {"custom-labels", CTX_ABI_CUSTOM_LABELS},
    {"span", CTX_ABI_SPAN_RECORD},
    {"otel-thread", CTX_ABI_OTEL_THREAD},
    {"otel-process", CTX_ABI_OTEL_PROCESS},
    {"otel", CTX_ABI_OTEL_THREAD | CTX_ABI_OTEL_PROCESS},
    {"all", CTX_ABI_ALL},
    {"none", 0},
};

/* "a,b,c" -> mask; unknown names are ignored (an empty or all-unknown list keeps the default) */
static unsigned parse_abis(const char *s, unsigned dflt)
{
        unsigned mask = 0;
        int known = 0;
        while (*s) {
                size_t n = strcspn(s, ",");
                for (size_t i = 0; i < sizeof(abi_names) / sizeof(abi_names[0]); i++) {
                        if (strlen(abi_names[i].name) == n && !strncmp(s, abi_names[i].name, n)) {
                                mask |= abi_names[i].bits;
                                known = 1;
                        }
                }
                s += n;
                if (*s == ',')
                        s++;
        }
        return known ? mask : dflt;
}

__attribute__((constructor(101))) static void abi_switch_init(void)
{
        const char *e = getenv("CTX_ABIS");
        if (e)
                ctxi_abis = parse_abis(e, CTX_ABI_ALL);
}

void ctx_set_abis(unsigned mask)
{
        __atomic_store_n(&ctxi_abis, mask & CTX_ABI_ALL, __ATOMIC_RELAXED);
}

unsigned ctx_get_abis(void)
{
        return __atomic_load_n(&ctxi_abis, __ATOMIC_RELAXED);
}
