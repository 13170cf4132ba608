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
#include "util/fs.h"

int status_file_write(const char *path, const char *text, size_t len)
{
        char tmp[PATH_MAX];
        int fd, err;

        if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp))
                return -ENAMETOOLONG;
        err = mkdir_parents(path, MKDIR_P_PARENT_MODE);
        if (err)
                return err;
        fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
        if (fd < 0)
                return -errno;
        err = write_all(fd, text, len);
        if (err) {
                close(fd);
                unlink(tmp);
                return err;
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
