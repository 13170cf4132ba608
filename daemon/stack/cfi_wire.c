/* SPDX-License-Identifier: MIT */
/*
 * cfi_wire.c — PARSER_CFI answers (cfi_wire.h). Must never print, read a descriptor that is
 * not sealed shmem, or let a row it did not check reach the caller.
 */
#include "stack/cfi_wire.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define ERRNO_MAX 4095
/* Seals that make the memfd's size and bytes final (F_SEAL_WRITE is refused while a writable
 * shared mapping exists, so the writer has let go of it too). */
#define CFI_SEALS (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE)

static int fill_memfd(int fd, const struct cfi_table *t, size_t size)
{
        if (ftruncate(fd, (off_t)size))
                return -errno;
        if (!size)
                return 0;
        void *m = mmap(NULL, size, PROT_WRITE, MAP_SHARED, fd, 0);
        if (m == MAP_FAILED)
                return -errno;
        memcpy(m, t->rows, size);
        munmap(m, size);
        return 0;
}

int cfi_wire_export(int status, const struct cfi_table *t, struct cfi_resp *r, int *memfd)
{
        *memfd = -1;
        memset(r, 0, sizeof(*r));
        if (status) {
                r->status = status;
                return 0;
        }
        size_t size = t->n * sizeof(*t->rows);
        int fd = memfd_create("ctxprof-cfi", MFD_CLOEXEC | MFD_ALLOW_SEALING);
        if (fd < 0)
                return -errno;
        int err = fill_memfd(fd, t, size);
        if (!err && fcntl(fd, F_ADD_SEALS, CFI_SEALS | F_SEAL_SEAL))
                err = -errno;
        if (err) {
                close(fd);
                return err;
        }
        *r = (struct cfi_resp){.n = (uint32_t)t->n, .fdes = t->st.fdes, .build_ns = t->st.build_ns};
        *memfd = fd;
        return 0;
}

/* n rows from the sealed memfd fd into out->rows (malloc'ed). */
static int read_rows(int fd, uint32_t n, struct cfi_table *out)
{
        struct stat st;
        size_t size = (size_t)n * sizeof(*out->rows);
        int seals = fcntl(fd, F_GET_SEALS); /* EINVAL on anything but shmem */

        if (seals < 0 || (seals & CFI_SEALS) != CFI_SEALS || fstat(fd, &st) ||
            !S_ISREG(st.st_mode) || (uint64_t)st.st_size != size)
                return -EPROTO;
        out->rows = malloc(size ? size : 1);
        if (!out->rows)
                return -ENOMEM;
        for (size_t got = 0; got < size;) {
                ssize_t r = pread(fd, (char *)out->rows + got, size - got, (off_t)got);
                if (r <= 0)
                        return r < 0 ? -errno : -EPROTO;
                got += (size_t)r;
        }
        out->n = n;
        return 0;
}

/* Every row checked; the counts the caller keeps counted from them. */
static int check_rows(struct cfi_table *t)
{
        for (size_t i = 0; i < t->n; i++) {
                const struct ctxprof_cfi_row *r = &t->rows[i];

                if ((i && r->pc <= t->rows[i - 1].pc) || r->cfa_rule > CTXPROF_CFA_SIGNAL ||
                    r->rbp_rule > CTXPROF_RBP_UNDEF)
                        return -EPROTO;
                t->st.unsup += r->cfa_rule == CTXPROF_CFA_UNSUP;
                t->st.signal += r->cfa_rule == CTXPROF_CFA_SIGNAL;
                t->st.plt += r->cfa_rule == CTXPROF_CFA_PLT;
                t->st.gaps += r->cfa_rule == CTXPROF_CFA_NONE;
        }
        return 0;
}

int cfi_wire_import(const void *buf, uint32_t len, int memfd, uint32_t max_rows,
                    struct cfi_table *out)
{
        struct cfi_resp r;
        int err;

        memset(out, 0, sizeof(*out));
        if (len != sizeof(r))
                return -EPROTO;
        memcpy(&r, buf, sizeof(r));
        if (r.status)
                return r.status < 0 && r.status >= -ERRNO_MAX ? r.status : -EPROTO;
        if (memfd < 0 || r.n > max_rows || r.n > CFI_TABLE_MAX_ROWS)
                return -EPROTO;
        err = read_rows(memfd, r.n, out);
        if (!err)
                err = check_rows(out);
        if (err) {
                cfi_table_free(out);
                return err;
        }
        out->st.fdes = r.fdes;
        out->st.build_ns = r.build_ns;
        return 0;
}
