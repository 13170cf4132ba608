/* SPDX-License-Identifier: MIT */
/*
 * fuse_stall.c — a hostile FUSE server for the hostile-target tests (run as root by
 * tests/hostile/hostile_lib.sh, start_fuse_stall). Written directly against /dev/fuse (no
 * libfuse): it mounts DIR and serves one regular file, DIR/lib.so, whose content is a copy of
 * SRC. What it answers is the attack:
 *
 *   reads   READs starting below GOOD bytes are answered; every later one is never answered
 *           (the reader sits in the kernel until the connection is aborted)
 *   opens   the first OPENS OPENs are answered; every later one is never answered
 *   lookups the first LOOKUPS LOOKUPs (of any name) are answered; every later one is never
 *           answered (a path through the mount, not in the kernel's cache, never resolves)
 *
 * so an attacker process can open and mmap the file (PROT_READ|PROT_EXEC: no read happens),
 * and whoever reads (or, with --opens 1, opens) it after that blocks. It never exits on its
 * own: the test unmounts DIR (MNT_DETACH) and aborts the connection
 * (/sys/fs/fuse/connections/N/abort), then kills it.
 *
 *   fuse_stall DIR SRC UID GID [--good BYTES] [--opens N] [--lookups N]
 *
 * Prints "ready DEV" (DEV = the connection number, the mount's minor device) once mounted.
 * Test-only code: never linked into the product.
 */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/fuse.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <unistd.h>

#define ROOT_INO     1
#define FILE_INO     2
#define FILE_NAME    "lib.so"
#define REQ_BUF      (FUSE_MIN_READ_BUFFER + (1 << 20))
#define MAX_WRITE    (128 * 1024)
#define ATTR_VALID_S 3600

struct server {
        int fd;
        const uint8_t *data;
        size_t size;
        uint64_t good;     /* READs at offsets below this are answered */
        long opens_left;   /* OPENs still answered; < 0 = all */
        long lookups_left; /* LOOKUPs still answered; < 0 = all */
        uint32_t uid, gid;
        unsigned long stalled; /* requests never answered */
};

static void reply(struct server *s, uint64_t unique, int error, const void *arg, size_t len)
{
        struct fuse_out_header h = {
            .len = (uint32_t)(sizeof(h) + len), .error = error, .unique = unique};
        struct iovec iov[2] = {{&h, sizeof(h)}, {(void *)arg, len}};

        if (writev(s->fd, iov, len ? 2 : 1) < 0 && errno != ENOENT)
                perror("fuse_stall: writev");
}

static void fill_attr(const struct server *s, uint64_t ino, struct fuse_attr *a)
{
        memset(a, 0, sizeof(*a));
        a->ino = ino;
        a->uid = s->uid;
        a->gid = s->gid;
        a->blksize = 4096;
        if (ino == ROOT_INO) {
                a->mode = S_IFDIR | 0755;
                a->nlink = 2;
        } else {
                a->mode = S_IFREG | 0755;
                a->nlink = 1;
                a->size = s->size;
                a->blocks = (s->size + 511) / 512;
        }
}

static void do_init(struct server *s, const struct fuse_in_header *in, const void *arg)
{
        const struct fuse_init_in *ii = arg;
        struct fuse_init_out o = {0};

        o.major = FUSE_KERNEL_VERSION;
        o.minor = ii->minor < FUSE_KERNEL_MINOR_VERSION ? ii->minor : FUSE_KERNEL_MINOR_VERSION;
        o.max_readahead = ii->max_readahead;
        o.max_write = MAX_WRITE;
        o.max_background = 16;
        o.congestion_threshold = 12;
        reply(s, in->unique, 0, &o, sizeof(o));
}

static void do_lookup(struct server *s, const struct fuse_in_header *in, const char *name)
{
        struct fuse_entry_out e = {0};

        if (s->lookups_left == 0) {
                s->stalled++;
                fprintf(stderr, "fuse_stall: LOOKUP of %s by pid %u left unanswered\n", name,
                        in->pid);
                return;
        }
        if (s->lookups_left > 0)
                s->lookups_left--;
        if (in->nodeid != ROOT_INO || strcmp(name, FILE_NAME)) {
                reply(s, in->unique, -ENOENT, NULL, 0);
                return;
        }
        e.nodeid = FILE_INO;
        e.generation = 1;
        e.entry_valid = ATTR_VALID_S;
        e.attr_valid = ATTR_VALID_S;
        fill_attr(s, FILE_INO, &e.attr);
        reply(s, in->unique, 0, &e, sizeof(e));
}

static void do_getattr(struct server *s, const struct fuse_in_header *in)
{
        struct fuse_attr_out o = {0};

        o.attr_valid = ATTR_VALID_S;
        fill_attr(s, in->nodeid, &o.attr);
        reply(s, in->unique, 0, &o, sizeof(o));
}

static void do_open(struct server *s, const struct fuse_in_header *in)
{
        struct fuse_open_out o = {0};

        if (in->opcode == FUSE_OPEN && s->opens_left == 0) {
                s->stalled++;
                fprintf(stderr, "fuse_stall: OPEN by pid %u left unanswered\n", in->pid);
                return;
        }
        if (in->opcode == FUSE_OPEN && s->opens_left > 0)
                s->opens_left--;
        o.fh = 1;
        reply(s, in->unique, 0, &o, sizeof(o));
}

static void do_read(struct server *s, const struct fuse_in_header *in, const void *arg)
{
        const struct fuse_read_in *r = arg;
        size_t n = 0;

        if (in->opcode == FUSE_READ && r->offset >= s->good) {
                s->stalled++;
                fprintf(stderr, "fuse_stall: READ at %llu by pid %u left unanswered\n",
                        (unsigned long long)r->offset, in->pid);
                return;
        }
        if (in->opcode == FUSE_READ && r->offset < s->size)
                n = s->size - r->offset < r->size ? s->size - r->offset : r->size;
        reply(s, in->unique, 0, in->opcode == FUSE_READ ? s->data + r->offset : NULL, n);
}

static void do_readdir(struct server *s, const struct fuse_in_header *in, const void *arg)
{
        const struct fuse_read_in *r = arg;
        char buf[256];
        size_t len = 0;

        if (r->offset == 0) {
                struct fuse_dirent *d = (struct fuse_dirent *)buf;

                d->ino = FILE_INO;
                d->off = 1;
                d->namelen = sizeof(FILE_NAME) - 1;
                d->type = DT_REG;
                memcpy(d->name, FILE_NAME, d->namelen);
                len = FUSE_DIRENT_SIZE(d);
        }
        reply(s, in->unique, 0, buf, len);
}

static void do_statfs(struct server *s, const struct fuse_in_header *in)
{
        struct fuse_statfs_out o = {0};

        o.st.bsize = 4096;
        o.st.frsize = 4096;
        o.st.namelen = 255;
        reply(s, in->unique, 0, &o, sizeof(o));
}

static void serve_one(struct server *s, const uint8_t *req)
{
        const struct fuse_in_header *in = (const void *)req;
        const void *arg = req + sizeof(*in);

        switch (in->opcode) {
        case FUSE_INIT:
                do_init(s, in, arg);
                break;
        case FUSE_LOOKUP:
                do_lookup(s, in, arg);
                break;
        case FUSE_GETATTR:
                do_getattr(s, in);
                break;
        case FUSE_OPEN:
        case FUSE_OPENDIR:
                do_open(s, in);
                break;
        case FUSE_READ:
        case FUSE_READDIR:
                in->opcode == FUSE_READ ? do_read(s, in, arg) : do_readdir(s, in, arg);
                break;
        case FUSE_STATFS:
                do_statfs(s, in);
                break;
        case FUSE_RELEASE:
        case FUSE_RELEASEDIR:
        case FUSE_FLUSH:
        case FUSE_ACCESS:
                reply(s, in->unique, 0, NULL, 0);
                break;
        case FUSE_FORGET:
        case FUSE_BATCH_FORGET:
        case FUSE_INTERRUPT:
                break; /* no reply: the stalled request stays stalled */
        case FUSE_DESTROY:
                reply(s, in->unique, 0, NULL, 0);
                exit(0);
        default:
                reply(s, in->unique, -ENOSYS, NULL, 0);
                break;
        }
}

static int load(const char *path, uint8_t **data, size_t *size)
{
        struct stat st;
        int fd = open(path, O_RDONLY | O_CLOEXEC);

        if (fd < 0 || fstat(fd, &st))
                return -1;
        *size = (size_t)st.st_size;
        *data = malloc(*size ? *size : 1);
        if (!*data || pread(fd, *data, *size, 0) != (ssize_t)*size)
                return -1;
        close(fd);
        return 0;
}

int main(int argc, char **argv)
{
        struct server s = {.good = UINT64_MAX, .opens_left = -1, .lookups_left = -1};
        char opts[256];
        uint8_t *req;
        uint8_t *data;

        if (argc < 5) {
                fprintf(stderr, "usage: fuse_stall DIR SRC UID GID [--good BYTES] [--opens N] "
                                "[--lookups N]\n");
                return 2;
        }
        for (int i = 5; i + 1 < argc; i += 2) {
                if (!strcmp(argv[i], "--good"))
                        s.good = strtoull(argv[i + 1], NULL, 0);
                else if (!strcmp(argv[i], "--opens"))
                        s.opens_left = strtol(argv[i + 1], NULL, 0);
                else if (!strcmp(argv[i], "--lookups"))
                        s.lookups_left = strtol(argv[i + 1], NULL, 0);
        }
        if (load(argv[2], &data, &s.size)) {
                perror(argv[2]);
                return 1;
        }
        s.data = data;
        s.uid = (uint32_t)strtoul(argv[3], NULL, 0);
        s.gid = (uint32_t)strtoul(argv[4], NULL, 0);
        s.fd = open("/dev/fuse", O_RDWR | O_CLOEXEC);
        if (s.fd < 0) {
                perror("/dev/fuse");
                return 1;
        }
        snprintf(opts, sizeof(opts), "fd=%d,rootmode=40000,user_id=%u,group_id=%u,allow_other",
                 s.fd, s.uid, s.gid);
        if (mount("ctxfuse", argv[1], "fuse", MS_NOSUID | MS_NODEV, opts)) {
                perror("mount fuse");
                return 1;
        }
        req = malloc(REQ_BUF);
        if (!req)
                return 1;
        for (int ready = 0;;) {
                ssize_t n = read(s.fd, req, REQ_BUF);

                if (n < 0) {
                        if (errno == EINTR || errno == EAGAIN || errno == ENOENT)
                                continue;
                        if (errno != ENODEV)
                                perror("fuse_stall: read /dev/fuse");
                        return 0; /* unmounted or aborted */
                }
                if ((size_t)n < sizeof(struct fuse_in_header))
                        continue;
                serve_one(&s, req);
                if (!ready && ((struct fuse_in_header *)req)->opcode == FUSE_INIT) {
                        ready = 1;
                        fprintf(stdout, "ready\n");
                        fflush(stdout);
                }
        }
}
