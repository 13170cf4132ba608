/*
 * status_file.c — atomic status file writes (see status_file.h). Never prints.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "service/status_file.h"

static int mkdir_parents(const char *path)
{
        char tmp[PATH_MAX], *p;

        if (snprintf(tmp, sizeof(tmp), "%s", path) >= (int)sizeof(tmp))
                return -ENAMETOOLONG;
        p = strrchr(tmp, '/');
        if (!p || p == tmp)
                return 0;
        *p = '\0';
        for (p = tmp + 1; *p; p++) {
                if (*p != '/')
                        continue;
                *p = '\0';
                if (mkdir(tmp, 0755) && errno != EEXIST)
                        return -errno;
                *p = '/';
        }
        if (mkdir(tmp, 0755) && errno != EEXIST)
                return -errno;
        return 0;
}

int status_file_write(const char *path, const char *text, size_t len)
{
        char tmp[PATH_MAX];
        size_t off = 0;
        int fd, err;

        if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp))
                return -ENAMETOOLONG;
        err = mkdir_parents(path);
        if (err)
                return err;
        fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
        if (fd < 0)
                return -errno;
        while (off < len) {
                ssize_t n = write(fd, text + off, len - off);

                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        err = -errno;
                        close(fd);
                        unlink(tmp);
                        return err;
                }
                off += (size_t)n;
        }
        if (fchmod(fd, 0644) || close(fd)) {
                err = -errno;
                unlink(tmp);
                return err;
        }
        if (rename(tmp, path)) {
                err = -errno;
                unlink(tmp);
                return err;
        }
        return 0;
}

void status_file_value(char *dst, size_t len, const char *s)
{
        size_t i;

        if (!len)
                return;
        for (i = 0; s && s[i] && i + 1 < len; i++) {
                unsigned char c = (unsigned char)s[i];

                dst[i] = c <= ' ' || c == '=' || c >= 0x7f ? '_' : (char)c;
        }
        dst[i] = '\0';
        if (!i && len > 1) {
                dst[0] = '-';
                dst[1] = '\0';
        }
}
