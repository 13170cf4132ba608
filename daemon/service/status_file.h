/*
 * status_file.h — the daemon's status file: written atomically (temporary file + rename,
 * mode 0644, parent directory created 0755, never through a symbolic link and never in a
 * directory another user can write) so a reader never sees half a file. Format: one
 * record per line, "KIND key=value key=value ..." (values never contain spaces or '=').
 * Never prints.
 */
#ifndef CTXPROF_STATUS_FILE_H
#define CTXPROF_STATUS_FILE_H

#include <stddef.h>

/* Replace path with text[0..len). Its directory is opened as service/trusted_dir.h says
 * (created 0755; -EPERM when another user could write or redirect it), PATH.tmp is
 * created there without following a link and renamed over PATH. 0 or -errno. */
int status_file_write(const char *path, const char *text, size_t len);
/* Whether status_file_write can use path's directory (created if missing): 0, or -errno
 * (-EPERM: why says which directory and why). For a clear refusal at start. */
int status_file_check(const char *path, char *why, size_t why_len);
/* Copy s into dst (size len) with spaces, '=', control characters and non-ASCII replaced by
 * '_', so it can be a value. */
void status_file_value(char *dst, size_t len, const char *s);

#endif
