/*
 * symbolize.h — (module, offset) frames to function names, inline frames and file:line, with
 * elfutils (symbol tables; DWARF from the file or a separate debug file found by build id
 * under /usr/lib/debug/.build-id), C++ names demangled with libstdc++'s __cxa_demangle, and
 * kernel frames from /proc/kallsyms. Never prints; never drops a frame: what cannot be named
 * comes back as one entry with function NULL so the caller prints module+0xOFFSET.
 *
 * Thread safety: all calls are serialized by an internal lock (any thread may call).
 * Who subtracts 1: symbolize() does, for frames flagged CTXPROF_FRAME_RETADDR (return
 * addresses point after the call; the call's own line/inline chain is at offset - 1).
 * Memory bound: at most SYM_CACHE_MAX cached frames (the cache is emptied when full; strings
 * stay), at most SYM_MAX_OPEN modules open in elfutils at once (least recently used closed
 * first). Interned strings (names, file names) live until symbolizer_free: they are bounded
 * by the distinct symbols of the code that was sampled.
 */
#ifndef CTXPROF_SYMBOLIZE_H
#define CTXPROF_SYMBOLIZE_H

#include "stack/frame.h"
#include "stack/modules.h"

#define SYM_CACHE_MAX  (1u << 18)
#define SYM_MAX_OPEN   256
#define SYM_MAX_INLINE 16 /* inline depth kept per frame */

struct symbolizer;
struct sym_frame {
        const char *function; /* demangled; NULL if unknown */
        const char *file;     /* NULL if unknown */
        int line;             /* -1 if unknown */
        int inlined;          /* 1 = inlined into the next entry */
};

struct symbolizer *symbolizer_new(struct modules *);
void symbolizer_free(struct symbolizer *);
/* One frame -> up to max entries (innermost inline first, the real function last).
 * Returns the count (>= 1 on success; a frame with no name yields one entry with
 * function NULL so the caller prints module+0xOFFSET). Strings stay valid until
 * symbolizer_free. Kernel frames via /proc/kallsyms. Cached per (build id, offset).
 * -EINVAL for bad arguments (max < 1), -ENOMEM. */
int symbolize(struct symbolizer *, const struct ctxprof_frame *f, struct sym_frame *out, int max);

struct symbolizer_stats {
        uint64_t lookups, cache_hits, unresolved, module_errors;
        uint64_t string_bytes; /* interned strings held (freed only by symbolizer_free) */
};
void symbolizer_stats(struct symbolizer *, struct symbolizer_stats *out);

#endif
