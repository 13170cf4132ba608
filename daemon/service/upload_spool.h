/* SPDX-License-Identifier: MIT */
/*
 * upload_spool.h — the on-disk queue of profiles waiting to be uploaded to one target: a
 * directory (opened with service/trusted_dir.h: nobody else can write or redirect it) of
 * entry files, each one self-contained: a fixed header, the metadata the upload needs
 * (time range, extra tags) and the profile and labels-snapshot bytes. An entry is written
 * as NAME.tmp and renamed to NAME.entry once complete (fsync'd), so a crash or SIGKILL
 * leaves only complete entries plus .tmp files that the next open removes. Names sort by
 * the time the entry was made: the oldest is sent (and dropped) first. An entry stays until
 * upload_spool_remove: one whose upload was cut off is sent again.
 *
 * Limits: a total size (the oldest entries are dropped to stay below, never the newest) and
 * an age (older entries are dropped); what was dropped is returned for the caller to count
 * and log. Never prints. Not thread-safe: one thread (the target's uploader) uses a spool.
 */
#ifndef CTXPROF_UPLOAD_SPOOL_H
#define CTXPROF_UPLOAD_SPOOL_H

#include <stddef.h>
#include <stdint.h>

#define UPLOAD_SPOOL_MAGIC   "CTXSPOOL"
#define UPLOAD_SPOOL_VERSION 1
#define UPLOAD_SPOOL_EXTRA   1024 /* extra tags "k=v,k=v" of one entry */
#define UPLOAD_SPOOL_NAME    40   /* "%016llx-%08x.entry" + NUL */

/* The header at offset 0 of an entry file (little-endian, as the host writes it: a spool
 * is read by the daemon that wrote it or its successor on the same machine). */
struct upload_spool_header {
        char magic[8];    /* UPLOAD_SPOOL_MAGIC, no NUL */
        uint32_t version; /* UPLOAD_SPOOL_VERSION */
        uint32_t format;  /* enum upload_format */
        uint64_t from_s;  /* the profile's time range, wall clock seconds */
        uint64_t until_s;
        uint64_t profile_len; /* bytes after the extra tags */
        uint64_t labels_len;  /* bytes after the profile (0 = no labels snapshot) */
        uint32_t extra_len;   /* bytes of extra tags right after the header */
        uint32_t reserved;
};
_Static_assert(sizeof(struct upload_spool_header) == 56, "spool header is 56 bytes");

/* What goes into an entry: the profile and labels are read from descriptors (from their
 * current offset to the end). */
struct upload_spool_source {
        int format;
        uint64_t from_s, until_s;
        const char *extra; /* extra tags (k=v,k=v) or NULL */
        int profile_fd;
        int labels_fd; /* -1 = none */
};

/* One entry, as listed (oldest first) and as opened for sending. */
struct upload_spool_entry {
        char name[UPLOAD_SPOOL_NAME];
        uint64_t bytes;   /* file size */
        uint64_t made_ms; /* wall clock ms when it was spooled (from the name) */
        /* upload_spool_open: */
        int fd;
        struct upload_spool_header h;
        char extra[UPLOAD_SPOOL_EXTRA];
        uint64_t profile_off, labels_off;
};

struct upload_spool_dropped {
        unsigned too_old, over_size, corrupt;
        uint64_t bytes;
};

struct upload_spool;

/* Open (create, mode 0750) dir as trusted_dir_open does; remove .tmp leftovers and list the
 * entries. why: the refusal's reason (-EPERM). 0 or -errno. */
int upload_spool_open(const char *dir, struct upload_spool **out, char *why, size_t why_len);
void upload_spool_close(struct upload_spool *s);
/* Write a new entry from src (temp + fsync + rename). 0 or -errno (nothing left behind). */
int upload_spool_add(struct upload_spool *s, const struct upload_spool_source *src,
                     uint64_t now_ms);
/* Drop entries older than max_age_ms (0 = no limit), then the oldest until the total is at
 * most max_bytes, never the newest entry. Adds what it dropped to *d. */
void upload_spool_trim(struct upload_spool *s, uint64_t max_bytes, uint64_t max_age_ms,
                       uint64_t now_ms, struct upload_spool_dropped *d);
/* The oldest entry, opened and its header checked: 1, 0 when the spool is empty, -EBADMSG
 * for a corrupt entry (the caller removes it), other -errno. Close with
 * upload_spool_release. */
int upload_spool_oldest(struct upload_spool *s, struct upload_spool_entry *e);
void upload_spool_release(struct upload_spool_entry *e);
/* Delete an entry (sent, or refused by the backend). 0 or -errno. */
int upload_spool_remove(struct upload_spool *s, const struct upload_spool_entry *e);
/* Entries and their bytes now. */
void upload_spool_usage(const struct upload_spool *s, uint64_t *files, uint64_t *bytes);

#endif
