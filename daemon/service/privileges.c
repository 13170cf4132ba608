/* SPDX-License-Identifier: MIT */
/*
 * privileges.c — capability drop with libcap (see privileges.h). Never prints.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/capability.h>

#include "service/privileges.h"

static const cap_value_t keep[] = {CAP_SYS_PTRACE, CAP_CHECKPOINT_RESTORE, CAP_DAC_READ_SEARCH,
                                   CAP_SYSLOG};
#define NKEEP ((int)(sizeof(keep) / sizeof(keep[0])))

int privileges_drop(unsigned flags)
{
        cap_t cur = cap_get_proc(), nw = NULL;
        cap_value_t held[NKEEP + 1];
        int i, n = 0, err = 0;
        cap_value_t c;

        if (!cur)
                return -errno;
        for (i = 0; i < NKEEP; i++) {
                cap_flag_value_t v = CAP_CLEAR;

                if (!cap_get_flag(cur, keep[i], CAP_PERMITTED, &v) && v == CAP_SET)
                        held[n++] = keep[i];
        }
        if (flags & PRIVILEGES_KEEP_DAC_OVERRIDE) {
                cap_flag_value_t v = CAP_CLEAR;

                if (!cap_get_flag(cur, CAP_DAC_OVERRIDE, CAP_PERMITTED, &v) && v == CAP_SET)
                        held[n++] = CAP_DAC_OVERRIDE;
        }
        nw = cap_init();
        if (!nw) {
                err = -errno;
                goto out;
        }
        if (n && (cap_set_flag(nw, CAP_EFFECTIVE, n, held, CAP_SET) ||
                  cap_set_flag(nw, CAP_PERMITTED, n, held, CAP_SET))) {
                err = -errno;
                goto out;
        }
        /* The bounding set needs CAP_SETPCAP, so it goes first, while we still hold it. */
        for (c = 0; c <= CAP_LAST_CAP; c++) {
                int kept = 0;

                for (i = 0; i < n; i++)
                        kept |= held[i] == c;
                if (!kept && CAP_IS_SUPPORTED(c) && cap_get_bound(c) == 1)
                        cap_drop_bound(c); /* EPERM without CAP_SETPCAP: best effort */
        }
        cap_reset_ambient();
        if (cap_set_proc(nw)) {
                err = -errno;
                goto out;
        }
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
                err = -errno;
out:
        cap_free(cur);
        if (nw)
                cap_free(nw);
        return err;
}

uint64_t privileges_effective(void)
{
        char line[256];
        uint64_t v = 0;
        FILE *f = fopen("/proc/self/status", "re");

        if (!f)
                return 0;
        while (fgets(line, sizeof(line), f))
                if (!strncmp(line, "CapEff:", 7)) {
                        sscanf(line + 7, "%" SCNx64, &v);
                        break;
                }
        fclose(f);
        return v;
}
