/* SPDX-License-Identifier: MIT */
/*
 * output_dir.c — recording files in the output directory (see output_dir.h). Never prints;
 * only ever deletes finished files whose names match its own pattern (and a .part it has
 * just created); every file is reached relative to the directory's descriptor, without
 * following a symbolic link.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "jfr/jfr_writer.h"
#include "service/output_dir.h"
#include "util/name.h"
#include "service/trusted_dir.h"
#include "util/fs.h"

#define LABELS_SUFFIX   ".labels.pb"
#define PREFIX          "ctxprof-"
#define DIR_MODE        0750
#define FILE_MODE       0640
#define LOCK_NAME       ".ctxprof.lock"
#define MAX_SAME_SECOND 1000 /* -1 ... -999 after a name taken in the same second */

int output_dir_open(const char *dir, char *why, size_t why_len)
{
        int dfd = trusted_dir_open(dir, DIR_MODE, why, why_len);

        /* mkdir honours the umask, and an existing directory keeps its mode: the mode is part
         * of the contract (and owner rwx is what writing needs once capabilities are gone) */
        if (dfd >= 0 && fchmod(dfd, DIR_MODE)) {
                int err = -errno;

                close(dfd);
                return err;
        }
        return dfd;
}

static const char *base_name(const char *path)
{
        const char *slash = strrchr(path, '/');

        return slash ? slash + 1 : path;
}

/* NAME.jfr[.part] -> NAME.jfr.labels.pb[.part]: the Pyroscope labels snapshot that goes
 * with a recording (docs/jfr.md), in the same state. */
static void labels_name(char *out, size_t cap, const char *jfr)
{
        const char *b = base_name(jfr);
        size_t n = strlen(b);
        int part = n > 5 && !strcmp(b + n - 5, ".part");

        snprintf(out, cap, "%.*s" LABELS_SUFFIX "%s", (int)(n - (part ? 5 : 0)), b,
                 part ? ".part" : "");
}

/* Create NAME.jfr.part in dfd unless NAME.jfr or NAME.jfr.part exists in any form. The
 * descriptor, -EEXIST (taken) or -errno. */
static int create_part(int dfd, const struct output_file *f)
{
        struct stat st;
        int fd;

        if (!fstatat(dfd, base_name(f->final), &st, AT_SYMLINK_NOFOLLOW))
                return -EEXIST;
        if (errno != ENOENT)
                return -errno;
        fd = openat(dfd, base_name(f->part), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                    FILE_MODE);
        if (fd < 0)
                return -errno;
        if (fchmod(fd, FILE_MODE)) { /* the umask applied to openat's mode */
                int err = -errno;

                close(fd);
                unlinkat(dfd, base_name(f->part), 0);
                return err;
        }
        return fd;
}

/* The labels snapshot's .part beside f's: created the same way, its descriptor or -errno. */
static int create_labels_part(int dfd, const struct output_file *f)
{
        char name[NAME_MAX + 1];
        int fd;

        labels_name(name, sizeof(name), f->part);
        fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, FILE_MODE);
        if (fd < 0)
                return -errno;
        if (fchmod(fd, FILE_MODE)) {
                int err = -errno;

                close(fd);
                unlinkat(dfd, name, 0);
                return err;
        }
        return fd;
}

/* dir/ctxprof-NAME-STAMP[-N].jfr[.part], the first N free. */
static int new_file(int dfd, const char *dir, const char *name, time_t start,
                    struct output_file *out)
{
        char stamp[32], base[PATH_MAX - 16];
        struct tm tm;
        int i;

        gmtime_r(&start, &tm);
        strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%SZ", &tm);
        for (i = 0; i < MAX_SAME_SECOND; i++) {
                int n, fd;

                if (i)
                        n = snprintf(base, sizeof(base), "%s/" PREFIX "%s-%s-%d", dir, name, stamp,
                                     i);
                else
                        n = snprintf(base, sizeof(base), "%s/" PREFIX "%s-%s", dir, name, stamp);
                if (n < 0 || (size_t)n + 10 >= sizeof(base))
                        return -ENAMETOOLONG;
                memcpy(out->final, base, (size_t)n);
                memcpy(out->final + n, ".jfr", 5);
                memcpy(out->part, base, (size_t)n);
                memcpy(out->part + n, ".jfr.part", 10);
                fd = create_part(dfd, out);
                if (fd >= 0) {
                        out->fd = fd;
                        out->labels_fd = create_labels_part(dfd, out);
                        if (out->labels_fd >= 0)
                                return 0;
                        fd = out->labels_fd;
                        close(out->fd);
                        unlinkat(dfd, base_name(out->part), 0);
                }
                if (fd != -EEXIST)
                        return fd;
        }
        return -EEXIST;
}

int output_dir_new_file(int dfd, const char *dir, const char *host, time_t start,
                        struct output_file *out)
{
        char h[64];

        name_clean(h, sizeof(h), host, "host");
        return new_file(dfd, dir, h, start, out);
}

int output_dir_new_process_file(int dfd, const char *dir, const char *host, pid_t pid,
                                const char *comm, time_t start, struct output_file *out)
{
        char h[64], c[16], name[96];

        name_clean(h, sizeof(h), host, "host");
        name_clean(c, sizeof(c), comm ? comm : "", "unknown");
        snprintf(name, sizeof(name), "%s-%d-%s", h, (int)pid, c);
        return new_file(dfd, dir, name, start, out);
}

/* Rename from -> to in dfd unless `to` exists. 0 or -errno (-EEXIST). */
static int rename_noreplace(int dfd, const char *from, const char *to)
{
        struct stat st;

        if (!renameat2(dfd, from, dfd, to, RENAME_NOREPLACE))
                return 0;
        if (errno != EINVAL)
                return -errno;
        /* a file system without RENAME_NOREPLACE: only this daemon (the directory is not
         * writable by anyone else) could create `to` between the check and the rename */
        if (!fstatat(dfd, to, &st, AT_SYMLINK_NOFOLLOW))
                return -EEXIST;
        return renameat(dfd, from, dfd, to) ? -errno : 0;
}

int output_dir_finish(int dfd, const struct output_file *f)
{
        char from[NAME_MAX + 1], to[NAME_MAX + 1];
        int err = rename_noreplace(dfd, base_name(f->part), base_name(f->final));

        labels_name(from, sizeof(from), f->part);
        labels_name(to, sizeof(to), f->final);
        return err ? err : rename_noreplace(dfd, from, to);
}

int output_dir_discard(int dfd, const struct output_file *f)
{
        char labels[NAME_MAX + 1];

        labels_name(labels, sizeof(labels), f->part);
        unlinkat(dfd, labels, 0);
        return unlinkat(dfd, base_name(f->part), 0) ? -errno : 0;
}

/* The directory (output_dir_open) as a listing whose dirfd the entries are reached by. NULL
 * with errno set. */
static DIR *open_listing(const char *dir)
{
        int dfd = output_dir_open(dir, NULL, 0);
        DIR *dp;

        if (dfd < 0) {
                errno = -dfd;
                return NULL;
        }
        dp = fdopendir(dfd);
        if (!dp) {
                int err = errno;

                close(dfd);
                errno = err;
        }
        return dp;
}

struct entry {
        char name[256];
        time_t mtime;
        uint64_t size;
};

static int by_age(const void *a, const void *b)
{
        const struct entry *x = a, *y = b;

        if (x->mtime != y->mtime)
                return x->mtime < y->mtime ? -1 : 1;
        /* same mtime: by name, i.e. by start time for host files (HOST-TIME) and by pid, then
         * start time, for per-process files (HOST-PID-COMM-TIME) */
        return strcmp(x->name, y->name);
}

/* Size of the labels snapshot beside the finished recording `name`, 0 if none. */
static uint64_t labels_size(int dfd, const char *name)
{
        char labels[NAME_MAX + 1];
        struct stat st;

        labels_name(labels, sizeof(labels), name);
        if (fstatat(dfd, labels, &st, AT_SYMLINK_NOFOLLOW) || !S_ISREG(st.st_mode))
                return 0;
        return (uint64_t)st.st_size;
}

static int is_finished(const char *name)
{
        size_t n = strlen(name);

        return !strncmp(name, PREFIX, strlen(PREFIX)) && n > 4 && !strcmp(name + n - 4, ".jfr");
}

int output_dir_retain(const char *dir, uint64_t max_age_ms, uint64_t max_bytes, time_t now,
                      struct output_retain_result *res)
{
        struct entry *e = NULL;
        size_t n = 0, cap = 0, i;
        uint64_t total = 0;
        struct dirent *d;
        DIR *dp;
        int dfd;

        char labels[NAME_MAX + 1];

        memset(res, 0, sizeof(*res));
        dp = open_listing(dir);
        if (!dp)
                return -errno;
        dfd = dirfd(dp);
        while ((d = readdir(dp))) {
                struct stat st;

                if (!is_finished(d->d_name) || strlen(d->d_name) >= sizeof(e->name))
                        continue;
                if (fstatat(dfd, d->d_name, &st, AT_SYMLINK_NOFOLLOW) || !S_ISREG(st.st_mode))
                        continue;
                if (n == cap) {
                        size_t nc = cap ? cap * 2 : 64;
                        struct entry *ne = realloc(e, nc * sizeof(*e));

                        if (!ne) {
                                free(e);
                                closedir(dp);
                                return -ENOMEM;
                        }
                        e = ne;
                        cap = nc;
                }
                snprintf(e[n].name, sizeof(e[n].name), "%s", d->d_name);
                e[n].mtime = st.st_mtime;
                e[n].size = (uint64_t)st.st_size + labels_size(dfd, d->d_name);
                total += e[n].size;
                n++;
        }
        if (n)
                qsort(e, n, sizeof(*e), by_age);
        for (i = 0; i < n; i++) {
                int old = max_age_ms && now > e[i].mtime &&
                          (uint64_t)(now - e[i].mtime) * 1000 > max_age_ms;
                /* never the newest: a recording larger than the limit on its own (typically
                 * the one just finished) is better kept than leave nothing at all */
                int big = max_bytes && total > max_bytes && i + 1 < n;

                if (!old && !big)
                        break;
                if (unlinkat(dfd, e[i].name, 0)) {
                        res->last_error = -errno;
                        continue;
                }
                labels_name(labels, sizeof(labels), e[i].name);
                if (unlinkat(dfd, labels, 0) && errno != ENOENT)
                        res->last_error = -errno;
                res->deleted++;
                res->bytes_deleted += e[i].size;
                total -= e[i].size;
        }
        res->bytes_kept = total;
        free(e);
        closedir(dp);
        return 0;
}

/* A file of ours to open or change: a regular file of this euid with no other name (a hard
 * link planted before the directory was ours would point somewhere else). */
static int ours(int fd)
{
        struct stat st;

        if (fstat(fd, &st))
                return -errno;
        return S_ISREG(st.st_mode) && st.st_uid == geteuid() && st.st_nlink == 1 ? 0 : -EPERM;
}

int output_dir_lock(const char *dir)
{
        int dfd = output_dir_open(dir, NULL, 0), fd, err;

        if (dfd < 0)
                return dfd;
        /* not O_EXCL: the lock file stays from one daemon to the next (only its flock says
         * whether a daemon runs); O_NOFOLLOW and ours() keep it from being anything else */
        fd = openat(dfd, LOCK_NAME, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, FILE_MODE);
        err = fd < 0 ? -errno : ours(fd);
        close(dfd);
        if (!err && flock(fd, LOCK_EX | LOCK_NB))
                err = -errno;
        if (err) {
                if (fd >= 0)
                        close(fd);
                return err;
        }
        return fd;
}

static int is_part(const char *name)
{
        size_t n = strlen(name);

        return !strncmp(name, PREFIX, strlen(PREFIX)) && n > 9 &&
               !strcmp(name + n - 9, ".jfr.part");
}

/* One leftover NAME.jfr.part: trim to its complete chunks and rename, or delete. */
static int recover_one(int dfd, const char *name, struct output_recover_result *res,
                       void (*recovered)(void *ctx, const char *name), void *ctx)
{
        char final[256], lpart[NAME_MAX + 1], lfinal[NAME_MAX + 1];
        uint64_t good = 0;
        struct stat st;
        int fd, err = 0;

        snprintf(final, sizeof(final), "%.*s", (int)(strlen(name) - 5), name); /* drop .part */
        fd = openat(dfd, name, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
                return -errno;
        err = ours(fd);
        if (!err && fstat(fd, &st))
                err = -errno;
        if (!err)
                err = jfr_file_complete_prefix(fd, &good);
        if (!err && good > 0 && (uint64_t)st.st_size > good && ftruncate(fd, (off_t)good))
                err = -errno;
        if (!err && good > 0 && fdatasync(fd))
                err = -errno;
        /* ftruncate made it "modified now": retention orders files by age, and this one is as
         * old as the crash that left it */
        if (!err && good > 0 && (uint64_t)st.st_size > good) {
                struct timespec t[2] = {st.st_atim, st.st_mtim};

                futimens(fd, t);
        }
        close(fd);
        if (err)
                return err;
        labels_name(lpart, sizeof(lpart), name);
        labels_name(lfinal, sizeof(lfinal), final);
        if (good == 0) {
                if (unlinkat(dfd, name, 0))
                        return -errno;
                unlinkat(dfd, lpart, 0);
                res->removed++;
                return 0;
        }
        err = rename_noreplace(dfd, name, final); /* never over a finished recording */
        if (err)
                return err;
        /* its labels snapshot (maybe with the contexts of the chunk cut off: harmless) */
        if (!faccessat(dfd, lpart, F_OK, AT_SYMLINK_NOFOLLOW))
                rename_noreplace(dfd, lpart, lfinal);
        res->recovered++;
        res->bytes_trimmed += (uint64_t)st.st_size - good;
        if (recovered)
                recovered(ctx, final);
        return 0;
}

int output_dir_recover(const char *dir, struct output_recover_result *res)
{
        return output_dir_recover_each(dir, res, NULL, NULL);
}

int output_dir_recover_each(const char *dir, struct output_recover_result *res,
                            void (*recovered)(void *ctx, const char *name), void *ctx)
{
        struct dirent *d;
        DIR *dp;

        memset(res, 0, sizeof(*res));
        dp = open_listing(dir);
        if (!dp)
                return -errno;
        while ((d = readdir(dp))) {
                if (!is_part(d->d_name) || strlen(d->d_name) >= 256)
                        continue;
                int err = recover_one(dirfd(dp), d->d_name, res, recovered, ctx);
                if (err)
                        res->last_error = err;
        }
        closedir(dp);
        return 0;
}
