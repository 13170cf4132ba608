/* SPDX-License-Identifier: MIT */
/*
 * util/gzip.c — gzip of a buffer in memory (see gzip.h). Owns nothing past the call.
 */
#include <errno.h>
#include <sys/mman.h>
#include <unistd.h>
#include <zlib.h>

#include "util/gzip.h"

#define GZIP_WINDOW   (15 + 16) /* zlib: 32 KiB window, gzip header and trailer */
#define GZIP_MEMLEVEL 8
#define OUT_CHUNK     65536

int gzip_write(FILE *out, const uint8_t *buf, size_t len)
{
        unsigned char chunk[OUT_CHUNK];
        z_stream z = {0};
        int zr;

        if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, GZIP_WINDOW, GZIP_MEMLEVEL,
                         Z_DEFAULT_STRATEGY) != Z_OK)
                return -ENOMEM;
        z.next_in = (unsigned char *)buf;
        z.avail_in = (uInt)len; /* profiles stay far below 4 GiB */
        do {
                z.next_out = chunk;
                z.avail_out = sizeof(chunk);
                zr = deflate(&z, Z_FINISH);
                if (zr == Z_STREAM_ERROR || fwrite(chunk, 1, sizeof(chunk) - z.avail_out, out) !=
                                                sizeof(chunk) - z.avail_out) {
                        deflateEnd(&z);
                        return -EIO;
                }
        } while (zr != Z_STREAM_END);
        deflateEnd(&z);
        if (fflush(out) || ferror(out))
                return -EIO;
        return 0;
}

int gzip_memfd(const uint8_t *buf, size_t len)
{
        int fd = memfd_create("ctxprof-gzip", MFD_CLOEXEC), dfd, err;
        FILE *f;

        if (fd < 0)
                return -errno;
        dfd = dup(fd);
        f = dfd >= 0 ? fdopen(dfd, "w") : NULL;
        if (!f) {
                err = -errno;
                if (dfd >= 0)
                        close(dfd);
                close(fd);
                return err;
        }
        err = gzip_write(f, buf, len);
        if (fclose(f) && !err)
                err = -EIO;
        if (!err && lseek(fd, 0, SEEK_SET) < 0)
                err = -errno;
        if (err) {
                close(fd);
                return err;
        }
        return fd;
}
