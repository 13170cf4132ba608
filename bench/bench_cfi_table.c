/* SPDX-License-Identifier: MIT */
/*
 * bench_cfi_table.c — table build cost of in-kernel unwinding (stack/cfi_table.c): for each
 * file given (default: Debian's libc and python3), the build time (best of 5), rows, the
 * kernel memory they take (12 bytes a row) and the rows BPF cannot express. Prints only.
 */
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include "stack/cfi_table.h"

#define RUNS 5

int main(int argc, char **argv)
{
        static const char *const dflt[] = {"/lib/x86_64-linux-gnu/libc.so.6", "/usr/bin/python3",
                                           NULL};
        const char *const *files = argc > 1 ? (const char *const *)argv + 1 : dflt;

        printf("%-36s %8s %8s %9s %8s %6s %6s\n", "file", "fdes", "rows", "bytes", "build_ms",
               "unsup", "plt");
        for (; *files; files++) {
                struct cfi_table t = {0};
                double best = 1e18;
                int fd = open(*files, O_RDONLY | O_CLOEXEC), err = fd < 0 ? -1 : 0;

                for (int r = 0; r < RUNS && !err; r++) {
                        cfi_table_free(&t);
                        err = cfi_table_build(fd, &t);
                        if (!err && t.st.build_ns / 1e6 < best)
                                best = t.st.build_ns / 1e6;
                }
                if (fd >= 0)
                        close(fd);
                if (err) {
                        printf("%-36s error %d\n", *files, err);
                        continue;
                }
                printf("%-36s %8u %8zu %9zu %8.1f %6u %6u\n", *files, t.st.fdes, t.n,
                       t.n * sizeof(struct ctxprof_cfi_row), best, t.st.unsup, t.st.plt);
                cfi_table_free(&t);
        }
        return 0;
}
