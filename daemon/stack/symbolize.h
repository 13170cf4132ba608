/* SPDX-License-Identifier: MIT */
/*
 * symbolize.h — (module, offset) frames to function names, inline frames and file:line, with
 * elfutils (symbol tables; DWARF from the file or a separate debug file found by build id
 * under /usr/lib/debug/.build-id or, opted in, from debuginfod: debuginfo_find.h), C++ names
 * demangled with libstdc++'s __cxa_demangle, kernel frames from /proc/kallsyms, and JIT frames
 * (a PERF_MAP_MODULE module: offset = address) from the process's perf map as written, read
 * through the registry's descriptor as the runtime appends (stack/perf_map.h; never cached:
 * the address may hold other code later). Never
 * prints; never drops a frame: what cannot be named comes back as one entry with function
 * NULL so the caller prints module+0xOFFSET. The module's own ELF is read only from the
 * descriptor modules_open() gives, never opened by name.
 *
 * The ELF/DWARF reading itself is stack/elf_syms.h, in this process or, once
 * symbolize_use_parser was called, in the unprivileged parser helper.
 * Thread safety: all calls are serialized by an internal lock (any thread may call).
 * Who subtracts 1: symbolize() does, for frames flagged CTXPROF_FRAME_RETADDR (return
 * addresses point after the call; the call's own line/inline chain is at offset - 1).
 * Memory bound (each bound counted in symbolizer_stats when hit):
 *   - at most SYM_CACHE_BYTES of cached frames, emptied when full (cache_clears; an entry is
 *     24 bytes plus 24 per name of its inline chain), at most SYM_MODULE_CACHE_BYTES of them
 *     of one module (its other frames are resolved, not cached: cache_refused);
 *   - at most SYM_MAX_OPEN modules open in elfutils at once (least recently used closed);
 *   - function and file names are cut to SYM_NAME_MAX bytes at a UTF-8 character boundary
 *     (names_cut; a longer mangled C++ name is not demangled) and interned; interned strings
 *     live until symbolizer_free, at most SYM_STRINGS_MAX bytes in all and
 *     SYM_MODULE_STRINGS_MAX bytes first met in one module (a name past either is not kept:
 *     the frame has no such name, strings_refused).
 */
#ifndef CTXPROF_SYMBOLIZE_H
#define CTXPROF_SYMBOLIZE_H

#include "stack/frame.h"
#include "stack/modules.h"

#define SYM_CACHE_BYTES        (32u << 20) /* result cache, all modules */
#define SYM_MODULE_CACHE_BYTES (8u << 20)  /* result cache entries of one module */
#define SYM_MAX_OPEN           256
#define SYM_MAX_INLINE         16   /* inline depth kept per frame */
#define SYM_NAME_MAX           4096 /* bytes of one function or file name */
#define SYM_STRINGS_MAX        (128ull << 20)
#define SYM_MODULE_STRINGS_MAX (16ull << 20)
/* A perf map that does not name a JIT address is re-read at most this often. */
#define SYM_PERF_MAP_REREAD_NS 100000000ull /* 100 ms */
/* A module whose request timed out, killed the helper or got an answer out of format is
 * asked again after SYM_HELPER_RETRY_NS, doubled each time, and refused for good at the
 * SYM_HELPER_FAILURES_MAX-th such request: the helper may have been stalled or killed by
 * something else (a module is not to blame for every death), but a module that kills it
 * each time must not keep restarting it. */
#define SYM_HELPER_RETRY_NS     10000000000ull /* 10 s */
#define SYM_HELPER_FAILURES_MAX 3

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
        uint64_t string_bytes;    /* interned strings held (freed only by symbolizer_free) */
        uint64_t names_cut;       /* names longer than SYM_NAME_MAX, cut */
        uint64_t strings_refused; /* names not kept: SYM_[MODULE_]STRINGS_MAX reached */
        uint64_t cache_refused;   /* frames not cached: SYM_MODULE_CACHE_BYTES reached */
        uint64_t cache_clears;    /* times the cache was emptied at SYM_CACHE_BYTES */
        uint64_t dwarf_refused;   /* modules whose DWARF would need a file by name */
        uint64_t parser_refused;  /* modules refused after the parser helper timed out, died
                                   * or answered out of format on SYM_HELPER_FAILURES_MAX of
                                   * their frames */
        uint64_t parser_retries;  /* ... a first or later such failure: the module is asked
                                   * again after SYM_HELPER_RETRY_NS (doubled each time) */
};
void symbolizer_stats(struct symbolizer *, struct symbolizer_stats *out);

/* From now on every symbolizer of this process has module ELF/DWARF parsed by the parser
 * helper pc (util/parser_client.h: the module's descriptor goes with each request, the names
 * come back and are checked, cut, demangled and interned here; a module whose request times
 * out or kills the helper is asked again later, refused at the SYM_HELPER_FAILURES_MAX-th
 * time: parser_retries, parser_refused). Call once at setup, before any
 * symbolizer is used; pc must outlive them. NULL: parse in this process. */
struct parser_client;
void symbolize_use_parser(struct parser_client *pc);
/* parser_retries and parser_refused summed over every symbolizer this process has had (each
 * recording's comes and goes), since the start. Any thread. */
void symbolize_parser_failures(uint64_t *retries, uint64_t *refused);

#endif
