/*
 * status_file.h — the daemon's status file: written atomically (temporary file + rename,
 * mode 0644, parent directory created 0755) so a reader never sees half a file. Format: one
 * record per line, "KIND key=value key=value ..." (values never contain spaces or '=').
 * Never prints.
 */
#ifndef CTXPROF_STATUS_FILE_H
#define CTXPROF_STATUS_FILE_H

#include <stddef.h>

/* Replace path with text[0..len). 0 or -errno. */
int status_file_write(const char *path, const char *text, size_t len);
/* Copy s into dst (size len) with spaces, '=', control characters and non-ASCII replaced by
 * '_', so it can be a value. */
void status_file_value(char *dst, size_t len, const char *s);

#endif
