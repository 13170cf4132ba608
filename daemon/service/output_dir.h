/* SPDX-License-Identifier: MIT */
/*
 * output_dir.h — the daemon's output directory: opened only when no other user can write it
 * or redirect it (service/trusted_dir.h), created 0750, every file made relative to its
 * descriptor without following links; recordings named
 * ctxprof-HOST-YYYYMMDDTHHMMSSZ[-N].jfr (UTC start time: names sort by time), or, one per
 * process, ctxprof-HOST-PID-COMM-YYYYMMDDTHHMMSSZ[-N].jfr (a process's files sort by time),
 * written as NAME.jfr.part and renamed to NAME.jfr when finished, each with its Pyroscope
 * labels snapshot NAME.jfr.labels.pb[.part] that follows it in every step (created, renamed,
 * recovered, discarded, deleted, counted in the size); retention deletes the oldest finished
 * recordings by age and total size. Never prints; never touches a file whose
 * name it did not make.
 */
#ifndef CTXPROF_OUTPUT_DIR_H
#define CTXPROF_OUTPUT_DIR_H

#include <limits.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

/* Open the output directory dir, creating it (mode 0750) and missing parents, and chmod it
 * 0750. Refused (-EPERM, why says which directory and why) unless this process owns it,
 * nobody else can write it and no other user can change the path to it: see
 * service/trusted_dir.h. The directory's descriptor (O_CLOEXEC) or -errno. */
int output_dir_open(const char *dir, char *why, size_t why_len);

/* A new recording in the directory dfd (called dir in the paths) started at `start` (UTC):
 * NAME.jfr.part is created (O_CREAT|O_EXCL|O_NOFOLLOW, mode 0640) with the first free NAME,
 * one whose .part and .jfr are both absent — whatever is there, a symbolic link included,
 * is never opened or replaced. fd: the .part, open for reading and writing, the caller's to
 * close. 0, -ENAMETOOLONG, -EEXIST (no free name) or -errno. */
struct output_file {
        int fd;
        int labels_fd;        /* NAME.jfr.labels.pb.part (write only), the caller's to close */
        char part[PATH_MAX];  /* dir/NAME.jfr.part, for messages */
        char final[PATH_MAX]; /* dir/NAME.jfr after output_dir_finish */
};
int output_dir_new_file(int dfd, const char *dir, const char *host, time_t start,
                        struct output_file *out);
/* The same for the recording of one process: pid and its command (characters other than
 * [A-Za-z0-9._-] become '_', at most 15 kept) go into the name. */
int output_dir_new_process_file(int dfd, const char *dir, const char *host, pid_t pid,
                                const char *comm, time_t start, struct output_file *out);
/* Rename NAME.jfr.part -> NAME.jfr in dfd, never replacing an existing NAME.jfr. 0 or -errno. */
int output_dir_finish(int dfd, const struct output_file *f);
/* Remove NAME.jfr.part (a recording without one complete chunk: nothing to keep). */
int output_dir_discard(int dfd, const struct output_file *f);

struct output_retain_result {
        unsigned deleted;
        uint64_t bytes_deleted, bytes_kept;
        int last_error; /* -errno of the last failed unlink, 0 if none */
};
/* Delete finished recordings (ctxprof-*.jfr) older than max_age_ms (0 = no age limit), then
 * the oldest until their total size is <= max_bytes (0 = no size limit), except the newest:
 * a recording larger than max_bytes on its own is kept rather than leave none at all. Files
 * in progress (.part) are never deleted. now = wall clock. The directory is opened with
 * output_dir_open. 0 or -errno (directory refused or unreadable). */
int output_dir_retain(const char *dir, uint64_t max_age_ms, uint64_t max_bytes, time_t now,
                      struct output_retain_result *res);

/* Take the directory's writer lock: an exclusive flock on DIR/.ctxprof.lock (created 0640,
 * never through a symbolic link; an existing one must be a regular file of this process's
 * euid with one link), held until the returned descriptor is closed (or the process ends).
 * -EWOULDBLOCK when another process holds it: another daemon writes here, and its files in progress
 * are not ours to recover. Other -errno on failure. */
int output_dir_lock(const char *dir);

struct output_recover_result {
        unsigned recovered;     /* .part files trimmed to their complete chunks, renamed .jfr */
        unsigned removed;       /* .part files without one complete chunk, deleted */
        uint64_t bytes_trimmed; /* partial chunks cut off the recovered files */
        int last_error;         /* -errno of the last file that could not be handled, 0 if none */
};
/* Finish the recordings a previous daemon left in progress (NAME.jfr.part of a crash or a
 * kill): each is cut back to its complete chunks and renamed to NAME.jfr (so retention sees
 * it and the JDK can read it; its modification time is kept), or deleted when not one chunk
 * is complete. Call only while holding output_dir_lock, before this process starts a
 * recording of its own in dir. Only regular files with one link are touched (never through
 * a symbolic link). 0 or -errno (directory refused or unreadable). */
int output_dir_recover(const char *dir, struct output_recover_result *res);
/* The same, calling recovered(ctx, NAME.jfr) for each file recovered (e.g. to upload it). */
int output_dir_recover_each(const char *dir, struct output_recover_result *res,
                            void (*recovered)(void *ctx, const char *name), void *ctx);

#endif
