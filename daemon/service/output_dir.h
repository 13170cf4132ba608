/*
 * output_dir.h — the daemon's output directory: created 0750, recordings named
 * ctxprof-HOST-YYYYMMDDTHHMMSSZ[-N].jfr (UTC start time: names sort by time), or, one per
 * process, ctxprof-HOST-PID-COMM-YYYYMMDDTHHMMSSZ[-N].jfr (a process's files sort by time),
 * written as NAME.jfr.part and renamed to NAME.jfr when finished; retention deletes the
 * oldest finished recordings by age and total size. Never prints; never touches a file whose
 * name it did not make.
 */
#ifndef CTXPROF_OUTPUT_DIR_H
#define CTXPROF_OUTPUT_DIR_H

#include <limits.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

/* Create dir (and missing parents) with mode 0750; an existing dir is chmod'ed to 0750.
 * 0 or -errno. */
int output_dir_prepare(const char *dir);

/* The paths of a new recording started at `start` (UTC), unique in dir: part (being written)
 * and final (after output_dir_finish). 0, -ENAMETOOLONG or -EEXIST (no free name). */
struct output_file {
        char part[PATH_MAX];
        char final[PATH_MAX];
};
int output_dir_new_file(const char *dir, const char *host, time_t start, struct output_file *out);
/* The same for the recording of one process: pid and its command (characters other than
 * [A-Za-z0-9._-] become '_', at most 15 kept) go into the name. */
int output_dir_new_process_file(const char *dir, const char *host, pid_t pid, const char *comm,
                                time_t start, struct output_file *out);
/* Rename part -> final. 0 or -errno. */
int output_dir_finish(const struct output_file *f);

struct output_retain_result {
        unsigned deleted;
        uint64_t bytes_deleted, bytes_kept;
        int last_error; /* -errno of the last failed unlink, 0 if none */
};
/* Delete finished recordings (ctxprof-*.jfr) older than max_age_ms (0 = no age limit), then
 * the oldest until their total size is <= max_bytes (0 = no size limit). Files in progress
 * (.part) are never deleted. now = wall clock. 0 or -errno (directory unreadable). */
int output_dir_retain(const char *dir, uint64_t max_age_ms, uint64_t max_bytes, time_t now,
                      struct output_retain_result *res);

/* Take the directory's writer lock: an exclusive flock on DIR/.ctxprof.lock (created 0640),
 * held until the returned descriptor is closed (or the process ends). -EWOULDBLOCK when
 * another process holds it: another daemon writes here, and its files in progress are not
 * ours to recover. Other -errno on failure. */
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
 * recording of its own in dir. 0 or -errno (directory unreadable). */
int output_dir_recover(const char *dir, struct output_recover_result *res);

#endif
