/* SPDX-License-Identifier: MIT */
/*
 * upload_spool.c — one target's on-disk queue of profiles (see upload_spool.h). Owns the
 * directory's descriptor and the list of its entries, oldest first. Must never touch a
 * name it did not make (only *.entry and *.tmp of its own format), follow a link, or leave
 * an incomplete entry under an .entry name.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "service/trusted_dir.h"
#include "service/upload_spool.h"
#include "util/fs.h"
#include "util/grow.h"

#define SPOOL_DIR_MODE  0750
#define SPOOL_FILE_MODE 0640
#define ENTRY_SUFFIX    ".entry"
#define TMP_SUFFIX      ".tmp"
#define COPY_BUF        (256u << 10)

struct upload_spool {
        int dfd;
        struct upload_spool_entry *e; /* oldest first (name order), only name/bytes/made_ms */
        size_t n, cap;
        uint64_t bytes;
        uint32_t seq; /* names made in the same nanosecond */
};

static int has_suffix(const char *s, const char *suf)
{
        size_t n = strlen(s), m = strlen(suf);

        return n > m && !strcmp(s + n - m, suf);
}

/* "%016llx-%08x.entry": wall clock ns and a sequence number; 0 when name is not ours. */
static int parse_name(const char *name, uint64_t *made_ms)
{
        unsigned long long ns;
        unsigned seq;
        int len = 0;

        if (strlen(name) != 16 + 1 + 8 + strlen(ENTRY_SUFFIX) ||
            sscanf(name, "%16llx-%8x%n", &ns, &seq, &len) != 2 || len != 25 ||
            strcmp(name + len, ENTRY_SUFFIX))
                return 0;
        *made_ms = ns / 1000000ull;
        return 1;
}

static int cmp_entry(const void *a, const void *b)
{
        return strcmp(((const struct upload_spool_entry *)a)->name,
                      ((const struct upload_spool_entry *)b)->name);
}

static int push(struct upload_spool *s, const char *name, uint64_t bytes, uint64_t made_ms)
{
        int err = grow_array((void **)&s->e, &s->cap, sizeof(*s->e), s->n + 1, 16);

        if (err)
                return err;
        memset(&s->e[s->n], 0, sizeof(s->e[0]));
        snprintf(s->e[s->n].name, sizeof(s->e[0].name), "%s", name);
        s->e[s->n].bytes = bytes;
        s->e[s->n].made_ms = made_ms;
        s->e[s->n].fd = -1;
        s->n++;
        s->bytes += bytes;
        return 0;
}

/* List entries, remove leftovers of an interrupted add. */
static int scan(struct upload_spool *s)
{
        int fd = openat(s->dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
        struct dirent *de;
        struct stat st;
        uint64_t made;
        int err = 0;

        if (!d) {
                err = -errno;
                if (fd >= 0)
                        close(fd);
                return err;
        }
        while (!err && (de = readdir(d))) {
                if (fstatat(s->dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) || !S_ISREG(st.st_mode))
                        continue;
                if (has_suffix(de->d_name, TMP_SUFFIX) && strlen(de->d_name) == 25 + 4)
                        unlinkat(s->dfd, de->d_name, 0); /* an add cut short */
                else if (parse_name(de->d_name, &made))
                        err = push(s, de->d_name, (uint64_t)st.st_size, made);
        }
        closedir(d);
        if (s->n)
                qsort(s->e, s->n, sizeof(*s->e), cmp_entry);
        return err;
}

int upload_spool_open(const char *dir, struct upload_spool **out, char *why, size_t why_len)
{
        struct upload_spool *s = calloc(1, sizeof(*s));
        int err;

        *out = NULL;
        if (!s)
                return -ENOMEM;
        s->dfd = trusted_dir_open(dir, SPOOL_DIR_MODE, why, why_len);
        if (s->dfd < 0) {
                err = s->dfd;
                free(s);
                return err;
        }
        err = scan(s);
        if (err) {
                upload_spool_close(s);
                return err;
        }
        *out = s;
        return 0;
}

void upload_spool_close(struct upload_spool *s)
{
        if (!s)
                return;
        if (s->dfd >= 0)
                close(s->dfd);
        free(s->e);
        free(s);
}

/* Append the rest of src (from its offset) to dst; the byte count in *n. */
static int copy_fd(int dst, int src, char *buf, uint64_t *n)
{
        ssize_t r;
        int err;

        *n = 0;
        for (;;) {
                r = read(src, buf, COPY_BUF);
                if (r < 0 && errno == EINTR)
                        continue;
                if (r < 0)
                        return -errno;
                if (!r)
                        return 0;
                err = write_all(dst, buf, (size_t)r);
                if (err)
                        return err;
                *n += (uint64_t)r;
        }
}

/* The entry's bytes into fd: header (lengths filled in afterwards), extra, profile, labels. */
static int write_entry(int fd, const struct upload_spool_source *src)
{
        struct upload_spool_header h = {.version = UPLOAD_SPOOL_VERSION,
                                        .format = (uint32_t)src->format,
                                        .from_s = src->from_s,
                                        .until_s = src->until_s};
        size_t xl = src->extra ? strnlen(src->extra, UPLOAD_SPOOL_EXTRA - 1) : 0;
        char *buf = malloc(COPY_BUF);
        int err;

        if (!buf)
                return -ENOMEM;
        memcpy(h.magic, UPLOAD_SPOOL_MAGIC, sizeof(h.magic));
        h.extra_len = (uint32_t)xl;
        err = pwrite_all(fd, &h, sizeof(h), 0);
        if (!err && lseek(fd, (off_t)sizeof(h), SEEK_SET) < 0)
                err = -errno;
        if (!err && xl)
                err = write_all(fd, src->extra, xl);
        if (!err)
                err = copy_fd(fd, src->profile_fd, buf, &h.profile_len);
        if (!err && src->labels_fd >= 0)
                err = copy_fd(fd, src->labels_fd, buf, &h.labels_len);
        free(buf);
        if (!err)
                err = pwrite_all(fd, &h, sizeof(h), 0);
        if (!err && fsync(fd))
                err = -errno;
        return err;
}

int upload_spool_add(struct upload_spool *s, const struct upload_spool_source *src, uint64_t now_ms)
{
        char base[32], tmp[UPLOAD_SPOOL_NAME + 8], name[UPLOAD_SPOOL_NAME];
        struct stat st;
        int fd = -1, err, tries;

        for (tries = 0; fd < 0 && tries < 16; tries++) {
                snprintf(base, sizeof(base), "%016llx-%08x",
                         (unsigned long long)now_ms * 1000000ull, s->seq++);
                snprintf(tmp, sizeof(tmp), "%s%s", base, TMP_SUFFIX);
                fd = openat(s->dfd, tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                            SPOOL_FILE_MODE);
                if (fd < 0 && errno != EEXIST)
                        return -errno;
        }
        if (fd < 0)
                return -EEXIST;
        err = write_entry(fd, src);
        if (!err && fstat(fd, &st))
                err = -errno;
        close(fd);
        snprintf(name, sizeof(name), "%s%s", base, ENTRY_SUFFIX);
        /* RENAME_NOREPLACE: never over a name that is there (it cannot be ours: the clock
         * would have to go back into the same nanosecond and sequence) */
        if (!err && renameat2(s->dfd, tmp, s->dfd, name, RENAME_NOREPLACE))
                err = -errno;
        if (!err && fsync(s->dfd))
                err = -errno;
        if (err) {
                unlinkat(s->dfd, tmp, 0);
                return err;
        }
        err = push(s, name, (uint64_t)st.st_size, now_ms);
        if (!err && s->n > 1 && cmp_entry(&s->e[s->n - 2], &s->e[s->n - 1]) > 0)
                qsort(s->e, s->n, sizeof(*s->e), cmp_entry); /* the clock went back */
        return err;
}

static void drop_at(struct upload_spool *s, size_t i)
{
        unlinkat(s->dfd, s->e[i].name, 0);
        s->bytes -= s->e[i].bytes;
        memmove(&s->e[i], &s->e[i + 1], (s->n - i - 1) * sizeof(*s->e));
        s->n--;
}

void upload_spool_trim(struct upload_spool *s, uint64_t max_bytes, uint64_t max_age_ms,
                       uint64_t now_ms, struct upload_spool_dropped *d)
{
        size_t i = 0;

        while (max_age_ms && i < s->n) {
                if (now_ms > s->e[i].made_ms && now_ms - s->e[i].made_ms > max_age_ms) {
                        d->too_old++;
                        d->bytes += s->e[i].bytes;
                        drop_at(s, i);
                        continue;
                }
                i++;
        }
        while (max_bytes && s->n > 1 && s->bytes > max_bytes) {
                d->over_size++;
                d->bytes += s->e[0].bytes;
                drop_at(s, 0);
        }
}

int upload_spool_oldest(struct upload_spool *s, struct upload_spool_entry *e)
{
        struct stat st;
        ssize_t r;
        int err;

        if (!s->n)
                return 0;
        *e = s->e[0];
        e->fd = openat(s->dfd, e->name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (e->fd < 0) {
                err = -errno;
                if (err == -ENOENT) { /* removed behind our back: forget it */
                        s->bytes -= s->e[0].bytes;
                        memmove(&s->e[0], &s->e[1], (s->n - 1) * sizeof(*s->e));
                        s->n--;
                        return -EAGAIN;
                }
                return err;
        }
        r = pread(e->fd, &e->h, sizeof(e->h), 0);
        if (fstat(e->fd, &st) || r != (ssize_t)sizeof(e->h) ||
            memcmp(e->h.magic, UPLOAD_SPOOL_MAGIC, sizeof(e->h.magic)) ||
            e->h.version != UPLOAD_SPOOL_VERSION || e->h.extra_len >= UPLOAD_SPOOL_EXTRA ||
            sizeof(e->h) + e->h.extra_len + e->h.profile_len + e->h.labels_len !=
                (uint64_t)st.st_size ||
            pread(e->fd, e->extra, e->h.extra_len, sizeof(e->h)) != (ssize_t)e->h.extra_len) {
                upload_spool_release(e);
                return -EBADMSG;
        }
        e->extra[e->h.extra_len] = '\0';
        e->profile_off = sizeof(e->h) + e->h.extra_len;
        e->labels_off = e->profile_off + e->h.profile_len;
        return 1;
}

void upload_spool_release(struct upload_spool_entry *e)
{
        if (e->fd >= 0)
                close(e->fd);
        e->fd = -1;
}

int upload_spool_remove(struct upload_spool *s, const struct upload_spool_entry *e)
{
        size_t i;

        for (i = 0; i < s->n; i++)
                if (!strcmp(s->e[i].name, e->name)) {
                        drop_at(s, i);
                        return 0;
                }
        return -ENOENT;
}

void upload_spool_usage(const struct upload_spool *s, uint64_t *files, uint64_t *bytes)
{
        *files = s->n;
        *bytes = s->bytes;
}
