/* SPDX-License-Identifier: MIT */
/*
 * trusted_dir.h — opening a directory that the daemon (usually root) writes to, so that no
 * other user can steer where its files go: no planted symlink, no directory of theirs, no
 * path through a directory they can change. The caller then creates its files relative to
 * the returned descriptor (openat with O_CREAT|O_EXCL|O_NOFOLLOW, renameat, unlinkat), so a
 * later rename of a parent changes nothing. Never prints; a refusal comes back as -EPERM
 * with a sentence saying which directory and why.
 *
 * The rules (the kernel's protected_symlinks idea, made independent of the sysctl):
 *  - the directory itself is owned by this process's euid and not writable by group or
 *    others — a sticky world-writable directory like /tmp is refused too: anyone can plant
 *    names in it;
 *  - every parent (each directory walked through, and the real parents of the result) is
 *    owned by root or the euid and not writable by group or others unless it is sticky
 *    (in a sticky /tmp nobody else can rename or replace the root-owned entry below it);
 *  - a symbolic link in the path is followed only when the directory holding it is not
 *    writable by others, or when the link belongs to root or the euid (links made by the
 *    administrator, e.g. /var/lib/ctxprof -> /data/ctxprof, keep working);
 *  - missing components are created (parents 0755, the last one with the caller's mode),
 *    never through a link; "." and ".." components are refused.
 */
#ifndef CTXPROF_TRUSTED_DIR_H
#define CTXPROF_TRUSTED_DIR_H

#include <stddef.h>
#include <sys/types.h>

/* Open the absolute path `dir` (O_RDONLY|O_DIRECTORY|O_CLOEXEC), creating what is missing
 * (the last component with mode `mode`). Returns the descriptor or -errno; -EPERM when a
 * rule above refuses it (why, if not NULL, says which directory and why), -EINVAL for a
 * relative path or a "."/".." component. */
int trusted_dir_open(const char *dir, mode_t mode, char *why, size_t why_len);

#endif
