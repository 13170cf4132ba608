/*
 * status_file.c — atomic status file writes (see status_file.h): NAME.tmp created with
 * O_EXCL|O_NOFOLLOW and renamed over NAME, both relative to the directory's descriptor.
 * Never prints.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "service/status_file.h"
#include "service/trusted_dir.h"

#define DIR_MODE  0755
#define FILE_MODE 0644

/* The directory of path (trusted_dir_open, created 0755, owner rwx kept so that writing
 * needs no capability) and the file's name in it. The descriptor or -errno. */
static int open_parent(const char *path, const char **name, char *why, size_t why_len)
{
        char dir[PATH_MAX];
        const char *slash = strrchr(path, '/');
        struct stat st;
        int dfd;

        if (!slash || !slash[1])
                return -EINVAL;
        if ((size_t)(slash - path) >= sizeof(dir))
                return -ENAMETOOLONG;
        memcpy(dir, path, (size_t)(slash - path));
        dir[slash - path] = '\0';
        dfd = trusted_dir_open(dir[0] ? dir : "/", DIR_MODE, why, why_len);
        if (dfd < 0)
                return dfd;
        if (!fstat(dfd, &st) && (st.st_mode & S_IRWXU) != S_IRWXU &&
            fchmod(dfd, (st.st_mode & 07777) | S_IRWXU)) {
                int err = -errno;

                close(dfd);
                return err;
        }
        *name = slash + 1;
        return dfd;
}

int status_file_check(const char *path, char *why, size_t why_len)
{
        const char *name;
        int dfd = open_parent(path, &name, why, why_len);

        if (dfd < 0)
                return dfd;
        close(dfd);
        return 0;
}

static int write_all(int fd, const char *text, size_t len)
{
        size_t off = 0;

        while (off < len) {
                ssize_t n = write(fd, text + off, len - off);

                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return -errno;
                off += (size_t)n;
        }
        return 0;
}

int status_file_write(const char *path, const char *text, size_t len)
{
        char tmp[NAME_MAX + 1];
        const char *name;
        int dfd, fd, err;

        dfd = open_parent(path, &name, NULL, 0);
        if (dfd < 0)
                return dfd;
        if (snprintf(tmp, sizeof(tmp), "%s.tmp", name) >= (int)sizeof(tmp)) {
                close(dfd);
                return -ENAMETOOLONG;
        }
        /* a temporary file left by a crash (the directory is ours alone: nothing else) */
        unlinkat(dfd, tmp, 0);
        fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, FILE_MODE);
        if (fd < 0) {
                err = -errno;
                close(dfd);
                return err;
        }
        err = write_all(fd, text, len);
        if (!err && fchmod(fd, FILE_MODE)) /* the umask applied to openat's mode */
                err = -errno;
        if (close(fd) && !err)
                err = -errno;
        if (!err && renameat(dfd, tmp, dfd, name))
                err = -errno;
        if (err)
                unlinkat(dfd, tmp, 0);
        close(dfd);
        return err;
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
