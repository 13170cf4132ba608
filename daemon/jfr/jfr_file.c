/* SPDX-License-Identifier: MIT */
/*
 * jfr_file.c — the chunk-level file (see jfr_file.h): complete-prefix scan, recovery of a
 * torn file, and appends that never leave a partial chunk where a reader can see it.
 * Owns the output fd. Must never: print, leave a partial chunk in a JFR_FILE_REPLACE file
 * (not even for an instant), or leave a failed in-place append's bytes uncounted.
 *
 * Why a rename: the kernel copies a write() page by page and stops at a pending SIGKILL
 * between pages, so a large append can always be cut short; the JDK rejects the whole file
 * when anything follows its last complete chunk. A rename is the only atomic way to make a
 * file longer by more than a page, so JFR_FILE_REPLACE builds the next state beside the
 * file and renames it over.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/fs.h> /* FICLONE */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "jfr/jfr_file.h"
#include "util/fs.h"
#include "jfr/jfr_reader.h"

#define JFR_MAGIC         "FLR\0"
#define STATE_OFFSET      64 /* header byte: 0 = finished chunk */
#define SIZE_OFFSET       8  /* header: chunk size, u8 big-endian */
#define METADATA_OFFSET   24 /* header: metadata event offset, u8 big-endian */
#define COPY_BUFFER_BYTES (1u << 20)

struct jfr_file {
        int fd, flags, replace;
        char *path;       /* as opened (the ActiveRecording destination) */
        char *target;     /* JFR_FILE_REPLACE: the name renamed over (symlinks resolved) */
        const char *base; /* its last component, in target */
        int dirfd;        /* JFR_FILE_REPLACE: target's directory */
        uint64_t good;    /* file length made of complete chunks */
        int tail_dirty;   /* in place: bytes after `good` that a failed ftruncate left */
        struct jfr_file_counters c;
};

static uint64_t be64_at(const uint8_t *p)
{
        uint64_t v = 0;
        for (int i = 0; i < 8; i++)
                v = v << 8 | p[i];
        return v;
}

int jfr_file_complete_prefix(int fd, uint64_t *len)
{
        struct stat st;
        if (fstat(fd, &st))
                return -errno;
        uint64_t size = (uint64_t)st.st_size, off = 0;
        while (size - off >= JFR_CHUNK_HEADER_SIZE) {
                uint8_t h[JFR_CHUNK_HEADER_SIZE];
                ssize_t r = pread(fd, h, sizeof(h), (off_t)off);
                if (r < 0)
                        return -errno;
                if (r != JFR_CHUNK_HEADER_SIZE || memcmp(h, JFR_MAGIC, 4))
                        break;
                uint16_t major = (uint16_t)(h[4] << 8 | h[5]);
                uint64_t csize = be64_at(h + SIZE_OFFSET), md = be64_at(h + METADATA_OFFSET);
                if ((major != 1 && major != 2) || h[STATE_OFFSET] != 0 ||
                    csize < JFR_CHUNK_HEADER_SIZE || csize > size - off ||
                    md < JFR_CHUNK_HEADER_SIZE || md >= csize)
                        break;
                off += csize;
        }
        *len = off;
        return 0;
}

int jfr_file_inspect(int fd, uint64_t *good, uint64_t *size, enum jfr_file_tail *tail)
{
        struct stat st;
        uint8_t h[JFR_CHUNK_HEADER_SIZE];
        int err = jfr_file_complete_prefix(fd, good);
        if (!err && fstat(fd, &st))
                err = -errno;
        if (err)
                return err;
        *size = (uint64_t)st.st_size;
        *tail = JFR_TAIL_NONE;
        if (*size == *good)
                return 0;
        uint64_t rest = *size - *good;
        size_t want = rest < sizeof(h) ? (size_t)rest : sizeof(h);
        ssize_t n = pread(fd, h, want, (off_t)*good);
        if (n < 0)
                return -errno;
        /* a torn chunk starts like a chunk: the magic (or as much of it as there is), a
         * known version, and a size that runs past the end of the file */
        size_t magic = (size_t)n < 4 ? (size_t)n : 4;
        int partial = (size_t)n == want && !memcmp(h, JFR_MAGIC, magic);
        if (partial && (size_t)n == sizeof(h))
                partial = (h[5] == 1 || h[5] == 2) && !h[4] && be64_at(h + SIZE_OFFSET) > rest;
        *tail = partial ? JFR_TAIL_PARTIAL : JFR_TAIL_GARBAGE;
        return 0;
}

/* Largest constant-pool key or metadata id in the file's (complete) chunks. */
static int key_floor_of(int fd, uint64_t *floor)
{
        char path[64];
        struct jfr_reader *r;
        int err;

        *floor = 0;
        snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
        if ((err = jfr_reader_open(path, &r)))
                return err;
        while ((err = jfr_reader_next_chunk(r)) == 1) {
                const struct jfr_chunk_info *ci = jfr_reader_chunk(r);
                *floor = ci->max_pool_key > *floor ? ci->max_pool_key : *floor;
                *floor = ci->metadata_id > *floor ? ci->metadata_id : *floor;
        }
        jfr_reader_close(r);
        return err < 0 ? err : 0;
}

/* JFR_FILE_APPEND: keep the complete chunks and cut a torn tail. */
static int recover(struct jfr_file *f, uint64_t *key_floor)
{
        struct stat st;
        int err = jfr_file_complete_prefix(f->fd, &f->good);
        if (!err && fstat(f->fd, &st))
                err = -errno;
        if (!err && (uint64_t)st.st_size > f->good) {
                f->c.trimmed_bytes = (uint64_t)st.st_size - f->good;
                if (ftruncate(f->fd, (off_t)f->good))
                        err = -errno;
        }
        if (!err && f->good && key_floor)
                err = key_floor_of(f->fd, key_floor);
        return err;
}

/* JFR_FILE_REPLACE on a regular file: remember the real name and its directory. */
/* The name a new state of the file has between its link and its rename: one per file, so
 * that a writer killed in between (SIGKILL: nothing of ours runs) leaves this one at most,
 * which the next writer of the file removes (setup_replace, link_next). */
static void tmp_name(const struct jfr_file *f, char *name, size_t cap)
{
        snprintf(name, cap, ".%.200s.ctxprof.tmp", f->base);
}

static int setup_replace(struct jfr_file *f)
{
        char name[NAME_MAX + 1];

        struct stat st;
        if (fstat(f->fd, &st))
                return -errno;
        if (!S_ISREG(st.st_mode))
                return 0; /* a FIFO, /dev/stdout...: appended in place */
        f->target = realpath(f->path, NULL);
        if (!f->target)
                return -errno;
        char *slash = strrchr(f->target, '/'); /* realpath: absolute, never ends in '/' */
        f->base = slash + 1;
        *slash = 0;
        f->dirfd = open(slash == f->target ? "/" : f->target, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        *slash = '/';
        if (f->dirfd < 0)
                return -errno;
        tmp_name(f, name, sizeof(name));
        unlinkat(f->dirfd, name, 0); /* a killed writer's: ENOENT as a rule */
        f->replace = 1;
        return 0;
}

int jfr_file_open(struct jfr_file **out, const char *path, int flags, uint64_t *key_floor)
{
        *out = NULL;
        if (!path)
                return -EINVAL;
        int fd = open(
            path, O_RDWR | O_CREAT | O_CLOEXEC | ((flags & JFR_FILE_APPEND) ? 0 : O_TRUNC), 0644);
        if (fd < 0)
                return -errno;
        return jfr_file_open_fd(out, fd, path, flags, key_floor);
}

int jfr_file_open_fd(struct jfr_file **out, int fd, const char *path, int flags,
                     uint64_t *key_floor)
{
        *out = NULL;
        if (key_floor)
                *key_floor = 0;
        if (!path) {
                close(fd);
                return -EINVAL;
        }
        struct jfr_file *f = calloc(1, sizeof(*f));
        if (!f) {
                close(fd);
                return -ENOMEM;
        }
        f->flags = flags;
        f->fd = fd;
        f->dirfd = -1;
        f->path = strdup(path);
        int err = !f->path ? -ENOMEM : 0;
        if (!err && (flags & JFR_FILE_APPEND))
                err = recover(f, key_floor);
        if (!err && (flags & JFR_FILE_REPLACE))
                err = setup_replace(f);
        if (err) {
                jfr_file_close(f);
                return err;
        }
        *out = f;
        return 0;
}

/* In place: the chunk at the end of the complete chunks; on failure cut it off again. */
static int append_in_place(struct jfr_file *f, const void *chunk, size_t len)
{
        if (f->tail_dirty) {
                if (ftruncate(f->fd, (off_t)f->good))
                        return -errno;
                f->tail_dirty = 0;
        }
        int err = pwrite_all(f->fd, chunk, len, f->good);
        if (!err && !(f->flags & JFR_FILE_NO_FSYNC) && fdatasync(f->fd))
                err = -errno;
        if (err) {
                /* cut the partial chunk off; the file keeps its complete chunks. If that
                 * fails too, the write error is the one returned, the torn tail is counted
                 * and cut before the next append or at close. */
                if (ftruncate(f->fd, (off_t)f->good)) {
                        f->tail_dirty = 1;
                        f->c.trim_errors++;
                }
                return err;
        }
        f->good += len;
        return 0;
}

/* Copy the first `len` bytes of src into the empty dst: clone (xfs, btrfs), else an
 * in-kernel copy, else read/write. */
static int copy_prefix(struct jfr_file *f, int src, int dst, uint64_t len)
{
        if (!len || !ioctl(dst, FICLONE, src))
                return 0;
        loff_t in = 0, out = 0;
        while ((uint64_t)in < len) {
                ssize_t n = copy_file_range(src, &in, dst, &out, (size_t)(len - (uint64_t)in), 0);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        break;
        }
        f->c.copied_bytes += (uint64_t)in;
        if ((uint64_t)in == len)
                return 0;
        /* copy_file_range unsupported here (EXDEV, EOPNOTSUPP...): by hand */
        char *buf = malloc(COPY_BUFFER_BYTES);
        if (!buf)
                return -ENOMEM;
        int err = 0;
        while (!err && (uint64_t)in < len) {
                size_t want = len - (uint64_t)in < COPY_BUFFER_BYTES ? (size_t)(len - (uint64_t)in)
                                                                     : COPY_BUFFER_BYTES;
                ssize_t n = pread(src, buf, want, in);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        err = n < 0 ? -errno : -EIO;
                else if (!(err = pwrite_all(dst, buf, (size_t)n, (uint64_t)in))) {
                        in += n;
                        f->c.copied_bytes += (uint64_t)n;
                }
        }
        free(buf);
        return err;
}

/* An unnamed file in the target's directory (a named one where O_TMPFILE is not
 * supported), with the old file's mode and owner. *name is set when it has a name. */
static int open_next(struct jfr_file *f, char *name, size_t cap)
{
        struct stat st;
        int fd;

        name[0] = 0;
        if (fstat(f->fd, &st))
                return -errno;
        fd = openat(f->dirfd, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
        if (fd < 0 && (errno == EOPNOTSUPP || errno == EISDIR || errno == ENOENT)) {
                tmp_name(f, name, cap);
                for (int tries = 0; tries < 2; tries++) {
                        fd = openat(f->dirfd, name,
                                    O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
                        if (fd >= 0 || errno != EEXIST)
                                break;
                        unlinkat(f->dirfd, name, 0); /* left by a writer killed here */
                }
        }
        if (fd < 0)
                return -errno;
        /* best effort: a dropped capability may forbid giving the file to its old owner */
        (void)!fchown(fd, st.st_uid, st.st_gid);
        if (fchmod(fd, st.st_mode & 07777)) {
                int err = -errno;
                close(fd);
                return err;
        }
        return fd;
}

/* Give the unnamed file `fd` the name `name` in the target's directory. */
static int link_next(struct jfr_file *f, int fd, char *name, size_t cap)
{
        char proc[64];

        tmp_name(f, name, cap);
        snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
        for (int tries = 0; tries < 2; tries++) {
                if (!linkat(AT_FDCWD, proc, f->dirfd, name, AT_SYMLINK_FOLLOW))
                        return 0;
                if (errno != EEXIST)
                        return -errno;
                unlinkat(f->dirfd, name, 0); /* left by a run killed right here */
        }
        return -EEXIST;
}

/* JFR_FILE_REPLACE: old chunks + the new one into a new file, renamed over the target. */
static int append_replace(struct jfr_file *f, const void *chunk, size_t len)
{
        char name[NAME_MAX + 1];
        int fd = open_next(f, name, sizeof(name));
        if (fd < 0)
                return fd;
        int err = copy_prefix(f, f->fd, fd, f->good);
        if (!err)
                err = pwrite_all(fd, chunk, len, f->good);
        if (!err && !(f->flags & JFR_FILE_NO_FSYNC) && fdatasync(fd))
                err = -errno;
        if (!err && !name[0])
                err = link_next(f, fd, name, sizeof(name));
        if (!err && renameat(f->dirfd, name, f->dirfd, f->base))
                err = -errno;
        if (err) {
                if (name[0])
                        unlinkat(f->dirfd, name, 0);
                close(fd);
                return err;
        }
        if (!(f->flags & JFR_FILE_NO_FSYNC))
                fsync(f->dirfd); /* the rename itself; the data is already safe */
        close(f->fd);
        f->fd = fd;
        f->good += len;
        f->c.replaces++;
        return 0;
}

int jfr_file_append(struct jfr_file *f, const void *chunk, size_t len)
{
        int err = f->replace ? append_replace(f, chunk, len) : append_in_place(f, chunk, len);
        if (f->replace && (err == -EACCES || err == -EPERM)) {
                /* a file we may write in a directory we may not: nothing was changed, and
                 * appending in place beats writing nothing */
                f->replace = 0;
                f->c.replace_fallbacks++;
                err = append_in_place(f, chunk, len);
        }
        if (err)
                f->c.append_errors++;
        return err;
}

uint64_t jfr_file_size(const struct jfr_file *f)
{
        return f->good;
}

const char *jfr_file_path(const struct jfr_file *f)
{
        return f->path;
}

void jfr_file_counters(const struct jfr_file *f, struct jfr_file_counters *out)
{
        *out = f->c;
}

int jfr_file_close(struct jfr_file *f)
{
        int err = 0;
        if (!f)
                return 0;
        if (f->fd >= 0 && f->tail_dirty && ftruncate(f->fd, (off_t)f->good))
                err = -errno;
        if (f->fd >= 0)
                close(f->fd);
        if (f->dirfd >= 0)
                close(f->dirfd);
        free(f->path);
        free(f->target);
        free(f);
        return err;
}
