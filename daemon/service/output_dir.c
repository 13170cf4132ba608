/*
 * output_dir.c — recording files in the output directory (see output_dir.h). Never prints;
 * only ever deletes finished files whose names match its own pattern.
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
#include "util/fs.h"

#define PREFIX "ctxprof-"

#define OUTPUT_DIR_MODE 0750 /* the output directory itself: owner and group only */

int output_dir_prepare(const char *dir)
{
        int err = mkdir_p(dir, OUTPUT_DIR_MODE);

        if (err)
                return err;
        /* mkdir honours the umask; the mode is part of the contract. */
        if (chmod(dir, OUTPUT_DIR_MODE))
                return -errno;
        return 0;
}

/* Host names and commands go into file names: keep [A-Za-z0-9._-], replace the rest; an
 * empty name becomes `empty`. */
static void clean_name(char *dst, size_t len, const char *src, const char *empty)
{
        size_t i;

        for (i = 0; src[i] && i + 1 < len; i++) {
                char c = src[i];

                dst[i] = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                                 (c >= '0' && c <= '9') || c == '.' || c == '-'
                             ? c
                             : '_';
        }
        dst[i] = '\0';
        if (!i)
                snprintf(dst, len, "%s", empty);
}

/* dir/ctxprof-NAME-STAMP[-N].jfr[.part], the first N free. */
static int new_file(const char *dir, const char *name, time_t start, struct output_file *out)
{
        char stamp[32], base[PATH_MAX - 16];
        struct tm tm;
        int i;

        gmtime_r(&start, &tm);
        strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%SZ", &tm);
        for (i = 0; i < 1000; i++) {
                int n;

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
                if (access(out->final, F_OK) && access(out->part, F_OK))
                        return 0;
        }
        return -EEXIST;
}

int output_dir_new_file(const char *dir, const char *host, time_t start, struct output_file *out)
{
        char h[64];

        clean_name(h, sizeof(h), host, "host");
        return new_file(dir, h, start, out);
}

int output_dir_new_process_file(const char *dir, const char *host, pid_t pid, const char *comm,
                                time_t start, struct output_file *out)
{
        char h[64], c[16], name[96];

        clean_name(h, sizeof(h), host, "host");
        clean_name(c, sizeof(c), comm ? comm : "", "unknown");
        snprintf(name, sizeof(name), "%s-%d-%s", h, (int)pid, c);
        return new_file(dir, name, start, out);
}

int output_dir_finish(const struct output_file *f)
{
        return rename(f->part, f->final) ? -errno : 0;
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

        memset(res, 0, sizeof(*res));
        dp = opendir(dir);
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
                e[n].size = (uint64_t)st.st_size;
                total += e[n].size;
                n++;
        }
        if (n)
                qsort(e, n, sizeof(*e), by_age);
        for (i = 0; i < n; i++) {
                int old = max_age_ms && now > e[i].mtime &&
                          (uint64_t)(now - e[i].mtime) * 1000 > max_age_ms;
                int big = max_bytes && total > max_bytes;

                if (!old && !big)
                        break;
                if (unlinkat(dfd, e[i].name, 0)) {
                        res->last_error = -errno;
                        continue;
                }
                res->deleted++;
                res->bytes_deleted += e[i].size;
                total -= e[i].size;
        }
        res->bytes_kept = total;
        free(e);
        closedir(dp);
        return 0;
}

int output_dir_lock(const char *dir)
{
        char path[PATH_MAX];
        int fd;

        if (snprintf(path, sizeof(path), "%s/.ctxprof.lock", dir) >= (int)sizeof(path))
                return -ENAMETOOLONG;
        fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0640);
        if (fd < 0)
                return -errno;
        if (flock(fd, LOCK_EX | LOCK_NB)) {
                int err = -errno;

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
static int recover_one(int dfd, const char *name, struct output_recover_result *res)
{
        char final[256];
        uint64_t good = 0;
        struct stat st;
        int fd, err = 0;

        snprintf(final, sizeof(final), "%.*s", (int)(strlen(name) - 5), name); /* drop .part */
        fd = openat(dfd, name, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
                return -errno;
        if (fstat(fd, &st) || !S_ISREG(st.st_mode))
                err = -EINVAL;
        else
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
        if (good == 0) {
                if (unlinkat(dfd, name, 0))
                        return -errno;
                res->removed++;
                return 0;
        }
        /* never replace a finished recording of the same name */
        if (!faccessat(dfd, final, F_OK, AT_SYMLINK_NOFOLLOW))
                return -EEXIST;
        if (renameat(dfd, name, dfd, final))
                return -errno;
        res->recovered++;
        res->bytes_trimmed += (uint64_t)st.st_size - good;
        return 0;
}

int output_dir_recover(const char *dir, struct output_recover_result *res)
{
        struct dirent *d;
        DIR *dp;

        memset(res, 0, sizeof(*res));
        dp = opendir(dir);
        if (!dp)
                return -errno;
        while ((d = readdir(dp))) {
                if (!is_part(d->d_name) || strlen(d->d_name) >= 256)
                        continue;
                int err = recover_one(dirfd(dp), d->d_name, res);
                if (err)
                        res->last_error = err;
        }
        closedir(dp);
        return 0;
}
