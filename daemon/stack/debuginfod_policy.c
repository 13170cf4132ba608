/* SPDX-License-Identifier: MIT */
/*
 * debuginfod_policy.c — the rule of debuginfod_policy.h. Never prints.
 */
#include <stdlib.h>
#include <string.h>

#include "stack/debuginfod_policy.h"

int debuginfod_policy_apply(void)
{
        const char *urls = getenv("DEBUGINFOD_URLS");
        const char *opt = getenv("CTXPROF_DEBUGINFOD");

        if (!urls || !urls[0])
                return -1;
        if (opt && !strcmp(opt, "1")) {
                setenv("DEBUGINFOD_TIMEOUT", DEBUGINFOD_TIMEOUT_S, 0);
                return 1;
        }
        unsetenv("DEBUGINFOD_URLS");
        return 0;
}
