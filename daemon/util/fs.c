/* SPDX-License-Identifier: MIT */
/*
 * fs.c — `mkdir -p` and writes that finish (see fs.h). Never prints.
 */
#include <errno.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/fs.h"

/* mkdir -p of the first len bytes of path. */
static int mkdir_p_len(const char *path, size_t len, mode_t mode)
{
        char tmp[PATH_MAX];

        if (len >= sizeof(tmp))
                return -ENAMETOOLONG;
        if (!len)
                return 0;
        memcpy(tmp, path, len);
        tmp[len] = '\0';
        for (char *p = tmp + 1; *p; p++) {
                if (*p != '/')
                        continue;
                *p = '\0';
                if (mkdir(tmp, MKDIR_P_PARENT_MODE) && errno != EEXIST)
                        return -errno;
                *p = '/';
        }
        if (mkdir(tmp, mode) && errno != EEXIST)
                return -errno;
        return 0;
}

int mkdir_p(const char *dir, mode_t mode)
{
        return mkdir_p_len(dir, strlen(dir), mode);
}

int mkdir_parents(const char *path, mode_t mode)
{
        const char *slash = strrchr(path, '/');

        if (!slash || slash == path)
                return 0;
        return mkdir_p_len(path, (size_t)(slash - path), mode);
}

/* One loop for write and pwrite: off < 0 = write. */
static int write_loop(int fd, const void *buf, size_t len, int64_t off)
{
        const char *p = buf;

        while (len) {
                ssize_t n = off < 0 ? write(fd, p, len) : pwrite(fd, p, len, (off_t)off);

                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (n == 0)
                        return -EIO;
                p += n;
                len -= (size_t)n;
                if (off >= 0)
                        off += n;
        }
        return 0;
}

int write_all(int fd, const void *buf, size_t len)
{
        return write_loop(fd, buf, len, -1);
}

int pwrite_all(int fd, const void *buf, size_t len, uint64_t off)
{
        if (off > INT64_MAX)
                return -EINVAL;
        return write_loop(fd, buf, len, (int64_t)off);
}
