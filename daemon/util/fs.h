/* SPDX-License-Identifier: MIT */
/*
 * util/fs.h — the file-system loops every writer needs: `mkdir -p` and writes that finish
 * (short writes continued, EINTR retried). Errors are negative errno values.
 *
 * Never prints, never follows policy: modes are the caller's, ownership and symlink checks
 * are the caller's (a component that exists is left as it is, whatever it is).
 */
#ifndef CTXPROF_UTIL_FS_H
#define CTXPROF_UTIL_FS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Mode of the parent directories mkdir_p creates (the last component gets the caller's). */
#define MKDIR_P_PARENT_MODE 0755

/* Create dir and its missing parents, like `mkdir -p`: parents with MKDIR_P_PARENT_MODE, dir
 * itself with mode (both minus the umask, as mkdir(2) does). Components that exist are
 * accepted as they are. 0, -ENAMETOOLONG or mkdir's -errno. */
int mkdir_p(const char *dir, mode_t mode);

/* mkdir_p of the directory holding the file `path` (nothing to do for "name" or "/name"). */
int mkdir_parents(const char *path, mode_t mode);

/* All len bytes to fd, continuing after short writes and EINTR. 0, -EIO (write returned 0)
 * or write's -errno (bytes before the failure may have been written). */
int write_all(int fd, const void *buf, size_t len);

/* The same with pwrite at file offset off. */
int pwrite_all(int fd, const void *buf, size_t len, uint64_t off);

#endif
