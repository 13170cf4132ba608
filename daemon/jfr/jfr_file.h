/* SPDX-License-Identifier: MIT */
/*
 * jfr_file.h — a JFR file as a sequence of complete chunks: finds the complete prefix of any
 * file, recovers a file whose writer died inside an append (trims the torn tail, finds the
 * keys its chunks use), and appends whole chunks so that no reader ever sees a partial one
 * (JFR_FILE_REPLACE) or so that a partial one is cut off again on error (in place).
 * Knows nothing of what is inside a chunk beyond its header. Never prints; returns negative
 * errno. Not thread-safe: one owner calls everything.
 */
#ifndef CTXPROF_JFR_FILE_H
#define CTXPROF_JFR_FILE_H

#include <stddef.h>
#include <stdint.h>

#define JFR_CHUNK_HEADER_SIZE 68 /* fixed-size chunk header, big-endian fields */

/* Open flags. Without JFR_FILE_APPEND an existing file is truncated at open. */
#define JFR_FILE_APPEND   0x1 /* keep an existing file's complete chunks, cut a torn tail */
#define JFR_FILE_NO_FSYNC 0x2 /* no fdatasync after each chunk (benchmarks) */
/* Each append writes the whole new file state (the old chunks are cloned or copied, then
 * the new one appended) to an unnamed file in the same directory, and renames it over the
 * path: a reader, or a SIGKILL at any instant, only ever sees complete chunks. Costs a copy
 * of the file per chunk where the filesystem cannot clone (ext4); free of copies on
 * xfs/btrfs. Only for regular files in a writable directory (else appended in place). */
#define JFR_FILE_REPLACE 0x4

struct jfr_file_counters {
        uint64_t trimmed_bytes;     /* torn tail cut off at open (JFR_FILE_APPEND) */
        uint64_t append_errors;     /* appends that failed (the file kept its complete chunks) */
        uint64_t trim_errors;       /* in place: a failed append's bytes could not be cut off at
                                     * once; retried before the next append and at close */
        uint64_t replaces;          /* appends done by rename (JFR_FILE_REPLACE) */
        uint64_t copied_bytes;      /* bytes copied (not cloned) into replacement files */
        uint64_t replace_fallbacks; /* JFR_FILE_REPLACE given up: the directory is not
                                     * writable (EACCES/EPERM), appends go in place */
};

struct jfr_file;

/* Open (create, mode 0644 minus umask) `path`. With JFR_FILE_APPEND the file is recovered:
 * complete chunks kept, a torn tail cut off, and *key_floor (may be NULL) set to the largest
 * constant-pool key or metadata id any kept chunk uses (0 for a new file), so that a writer
 * continuing the file never reuses one (the JDK keeps a key's first value for the file). */
int jfr_file_open(struct jfr_file **out, const char *path, int flags, uint64_t *key_floor);
/* The same on a file the caller opened (O_RDWR, e.g. with openat and O_NOFOLLOW): fd is
 * taken over (closed by jfr_file_close, or at once on failure); path only names it. */
int jfr_file_open_fd(struct jfr_file **out, int fd, const char *path, int flags,
                     uint64_t *key_floor);
/* Append one complete chunk. On failure the file still holds exactly its complete chunks
 * (or, in place, the torn bytes are counted in trim_errors and cut before the next append)
 * and stays usable. */
int jfr_file_append(struct jfr_file *f, const void *chunk, size_t len);
/* Length of the complete chunks written so far. */
uint64_t jfr_file_size(const struct jfr_file *f);
const char *jfr_file_path(const struct jfr_file *f);
void jfr_file_counters(const struct jfr_file *f, struct jfr_file_counters *out);
/* Cut a leftover torn tail (in place, after a failed trim), then close. 0 or -errno. */
int jfr_file_close(struct jfr_file *f);

/* Scan `fd` from offset 0 and return the length of its prefix made of complete chunks
 * (magic, version, finished state, size within the file). 0 or -errno. */
int jfr_file_complete_prefix(int fd, uint64_t *len);

/* What follows the complete chunks of a file (jfr_file_inspect). */
enum jfr_file_tail {
        JFR_TAIL_NONE,    /* the file is exactly its complete chunks (an empty file too) */
        JFR_TAIL_PARTIAL, /* the start of a chunk cut short: a writer stopped inside it */
        JFR_TAIL_GARBAGE, /* bytes that are not the start of a chunk */
};

/* The complete prefix of `fd` (*good), its size, and what follows the prefix. A file with
 * good == 0 and a garbage tail is not a JFR file. 0 or -errno. */
int jfr_file_inspect(int fd, uint64_t *good, uint64_t *size, enum jfr_file_tail *tail);

#endif
