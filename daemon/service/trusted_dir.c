/* SPDX-License-Identifier: MIT */
/*
 * trusted_dir.c — opening the daemon's output and status directories so that no other user
 * can redirect its writes (see trusted_dir.h for the rules). Walks the path one component at
 * a time with O_NOFOLLOW, checking each directory it passes; never prints, never creates
 * anything through a symbolic link.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "service/trusted_dir.h"

#define PARENT_MODE 0755 /* missing parents (the umask applies) */
#define MAX_PARENTS 256  /* ".." steps before giving up (a loop would be a kernel bug) */
#define DIR_FLAGS   (O_RDONLY | O_DIRECTORY | O_CLOEXEC)

__attribute__((format(printf, 3, 4))) static void say(char *why, size_t len, const char *fmt, ...)
{
        va_list ap;

        if (!why || !len)
                return;
        va_start(ap, fmt);
        vsnprintf(why, len, fmt, ap);
        va_end(ap);
}

static int others_write(const struct stat *st)
{
        return (st->st_mode & (S_IWGRP | S_IWOTH)) != 0;
}

/* Root's and our own: the owners whose directories and links may be trusted as parents. */
static int trusted_owner(uid_t uid)
{
        return uid == 0 || uid == geteuid();
}

/* The directory fd, called `name` in messages, as the target itself (last) or a parent. */
static int check(int fd, const char *name, int last, char *why, size_t len)
{
        struct stat st;

        if (fstat(fd, &st))
                return -errno;
        if (last ? st.st_uid != geteuid() : !trusted_owner(st.st_uid)) {
                say(why, len, "%s belongs to uid %u, not to %s (uid %u)", name, (unsigned)st.st_uid,
                    last ? "this process" : "root or this process", (unsigned)geteuid());
                return -EPERM;
        }
        if (others_write(&st) && (last || !(st.st_mode & S_ISVTX))) {
                say(why, len, "%s is writable by %s (mode %04o)%s", name,
                    st.st_mode & S_IWOTH ? "others" : "its group", (unsigned)(st.st_mode & 07777),
                    st.st_mode & S_ISVTX ? ": anyone can plant names in a sticky directory" : "");
                return -EPERM;
        }
        return 0;
}

/* One component below cur (which passed check): open it without following a link,
 * creating it (mode) when missing; a link is followed only under the rules in the header.
 * The descriptor, or -errno. */
static int step(int cur, const char *comp, mode_t mode, const char *shown, int *followed, char *why,
                size_t len)
{
        struct stat lst, dst;
        int fd = openat(cur, comp, DIR_FLAGS | O_NOFOLLOW);

        if (fd < 0 && errno == ENOENT) {
                if (mkdirat(cur, comp, mode) && errno != EEXIST)
                        return -errno;
                fd = openat(cur, comp, DIR_FLAGS | O_NOFOLLOW);
        }
        if (fd >= 0)
                return fd;
        if (errno != ELOOP && errno != ENOTDIR)
                return -errno;
        if (fstatat(cur, comp, &lst, AT_SYMLINK_NOFOLLOW))
                return -errno;
        if (!S_ISLNK(lst.st_mode))
                return -ENOTDIR;
        if (fstat(cur, &dst))
                return -errno;
        if (others_write(&dst) && !trusted_owner(lst.st_uid)) {
                say(why, len,
                    "%s is a symbolic link of uid %u in a directory others can write: not "
                    "followed",
                    shown, (unsigned)lst.st_uid);
                return -EPERM;
        }
        fd = openat(cur, comp, DIR_FLAGS); /* a dangling link: ENOENT, nothing is created */
        if (fd < 0)
                return -errno;
        *followed = 1;
        return fd;
}

/* After a followed link the directories walked are not the result's parents: check those
 * (up to the root of the file system tree this process sees). */
static int check_real_parents(int fd, const char *shown, char *why, size_t len)
{
        struct stat st, pst;
        char name[PATH_MAX + 64];
        int cur = dup(fd), i, err = 0;

        if (cur < 0)
                return -errno;
        snprintf(name, sizeof(name), "a parent of %s (behind a symbolic link)", shown);
        for (i = 0; i < MAX_PARENTS && !err; i++) {
                int p = openat(cur, "..", DIR_FLAGS);

                if (p < 0 || fstat(cur, &st) || fstat(p, &pst)) {
                        err = -errno;
                        if (p >= 0)
                                close(p);
                        break;
                }
                close(cur);
                cur = p;
                if (pst.st_dev == st.st_dev && pst.st_ino == st.st_ino)
                        break; /* ".." of the root is the root */
                err = check(cur, name, 0, why, len);
        }
        close(cur);
        return err ? err : i < MAX_PARENTS ? 0 : -ELOOP;
}

int trusted_dir_open(const char *dir, mode_t mode, char *why, size_t why_len)
{
        char buf[PATH_MAX], shown[PATH_MAX + 1] = "", *comp, *next, *save = NULL;
        int cur, fd, err, followed = 0;
        size_t n = 0;

        say(why, why_len, "%s", "");
        if (dir[0] != '/')
                return -EINVAL;
        if (snprintf(buf, sizeof(buf), "%s", dir) >= (int)sizeof(buf))
                return -ENAMETOOLONG;
        cur = open("/", DIR_FLAGS);
        if (cur < 0)
                return -errno;
        comp = strtok_r(buf, "/", &save);
        err = check(cur, "/", !comp, why, why_len);
        for (; comp && !err; comp = next) {
                next = strtok_r(NULL, "/", &save);
                n += (size_t)snprintf(shown + n, sizeof(shown) - n, "/%s", comp); /* fits: buf */
                if (!strcmp(comp, ".") || !strcmp(comp, "..")) {
                        say(why, why_len, "%s: \".\" and \"..\" are not allowed", dir);
                        err = -EINVAL;
                        break;
                }
                fd = step(cur, comp, next ? PARENT_MODE : mode, shown, &followed, why, why_len);
                close(cur);
                if (fd < 0)
                        return fd;
                cur = fd;
                err = check(cur, shown, !next, why, why_len);
        }
        if (!err && followed)
                err = check_real_parents(cur, shown, why, why_len);
        if (err) {
                close(cur);
                return err;
        }
        return cur;
}
