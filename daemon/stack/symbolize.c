/* SPDX-License-Identifier: MIT */
/*
 * symbolize.c — names for (module, offset) frames. Owns, per module file, its elf_syms
 * session (in process) or its descriptor and token (the parser helper reads it), the
 * (module, offset) result cache, the string pool and the kallsyms table. Trusts no name the
 * helper returns beyond sym_wire_decode's checks: cut, demangled and interned here.
 * Must never print, never read a live process, never return a frame-dropping error for a
 * frame it merely cannot name, never open a file by a name (the module's ELF or perf map
 * comes from the registry's descriptor, debug files from debuginfo_find.h), never keep a name or a
 * cache entry past its bound (symbolize.h).
 */
#include "stack/symbolize.h"
#include "stack/elf_syms.h"
#include "stack/sym_wire.h"
#include "stack/perf_map.h"
#include "util/clock.h"
#include "util/hash.h"
#include "util/parser_client.h"
#include "util/parser_wire.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* C++ names: libstdc++'s __cxa_demangle (package libstdc++6, on every Debian system: gcc and
 * every C++ program depend on it; it is GCC's own demangler, kept in step with the C++ ABI
 * that g++ emits, and gets Debian's security updates). Loaded with dlopen so that no binary
 * linking libctxprof.a needs -lstdc++; without it names stay mangled (never an error). */
typedef char *(*demangle_fn)(const char *mangled, char *buf, size_t *len, int *status);
#define LIBSTDCXX "libstdc++.so.6"

#define NCACHE_BUCKETS (1u << 16)
#define NSTR_BUCKETS   (1u << 14)

/* The parser helper every symbolizer of this process asks, when set (symbolize_use_parser),
 * and the source of the tokens that name open modules to it. */
static struct parser_client *parser;
static uint64_t next_token;

struct sym_module {
        struct elf_syms *es; /* in-process ELF session; NULL when closed, failed or remote */
        int fd;              /* the module's descriptor while open for the parser helper */
        uint64_t token;      /* names this open module to the helper (sym_wire.h) */
        int failed;          /* the file cannot be read as ELF: every frame stays unresolved */
        int helper_failures; /* requests that timed out, killed or confused the helper */
        uint64_t retry_ns;   /* after a helper failure: not asked before this (monotonic) */
        int dwarf_counted;   /* the helper said its DWARF was refused, and it was counted */
        uint64_t last_use;
        uint64_t string_bytes; /* interned strings first met in this module */
        size_t cache_bytes;    /* result cache entries of this module */
        uint64_t serial;       /* modules_serial of its id when first seen */
        int is_perf_map;       /* a process's perf map (stack/perf_map.h), not an ELF file */
        struct perf_map *pmap; /* its parsed entries, when is_perf_map */
        uint64_t pmap_read_ns; /* when its new lines were last read */
};

struct cache_ent {
        struct cache_ent *next;
        uint64_t offset;
        uint32_t module_id;
        int n;
        struct sym_frame f[];
};

struct str_ent {
        struct str_ent *next;
        uint32_t hash;
        char s[];
};

struct ksym {
        uint64_t addr;
        const char *name;
};

struct symbolizer {
        pthread_mutex_t lock;
        struct modules *mods;
        struct sym_module **smods; /* index = module id */
        size_t nsmods;
        unsigned nopen;
        uint64_t tick;
        struct cache_ent **cache;
        size_t cache_bytes;
        struct str_ent **strs;
        int kallsyms_loaded;
        struct ksym *ksyms;
        size_t nksyms;
        char *kbuf;
        demangle_fn demangle;
        struct symbolizer_stats st;
        uint64_t mods_gen; /* modules_generation when the caches below were filled */
};

/* Counters are written under s->lock and read without it (symbolizer_stats). */
#define ST_ADD(s, field, n) __atomic_fetch_add(&(s)->st.field, (n), __ATOMIC_RELAXED)
_Static_assert(sizeof(struct symbolizer_stats) % sizeof(uint64_t) == 0,
               "symbolizer_stats holds uint64_t counters only (read one by one)");

#define UTF8_MAX_CONT 3 /* continuation bytes of one UTF-8 character */

/* Where to cut s (longer than max bytes) to at most max bytes: before the character that
 * byte max continues, at most UTF8_MAX_CONT bytes back (bytes that are not UTF-8 are cut
 * at max). */
static size_t utf8_cut(const char *s, size_t max)
{
        size_t n = max;
        while (n > 0 && max - n < UTF8_MAX_CONT && ((unsigned char)s[n] & 0xC0) == 0x80)
                n--;
        return ((unsigned char)s[n] & 0xC0) == 0x80 ? max : n;
}

/* str in the string pool, charged to module m (NULL: to none), cut to SYM_NAME_MAX bytes.
 * NULL when a bound of the pool is reached (counted): the frame then has no such name. */
static const char *intern(struct symbolizer *s, struct sym_module *m, const char *str)
{
        if (!str)
                return NULL;
        char cut[SYM_NAME_MAX + 1];
        size_t len = strnlen(str, SYM_NAME_MAX + 1);
        if (len > SYM_NAME_MAX) {
                len = utf8_cut(str, SYM_NAME_MAX);
                memcpy(cut, str, len);
                cut[len] = 0;
                str = cut;
                ST_ADD(s, names_cut, 1);
        }
        uint32_t h = (uint32_t)fnv1a64(str, len);
        struct str_ent **b = &s->strs[h % NSTR_BUCKETS];
        for (struct str_ent *e = *b; e; e = e->next)
                if (e->hash == h && !strcmp(e->s, str))
                        return e->s;
        size_t need = sizeof(struct str_ent) + len + 1;
        if (s->st.string_bytes + need > SYM_STRINGS_MAX ||
            (m && m->string_bytes + need > SYM_MODULE_STRINGS_MAX)) {
                ST_ADD(s, strings_refused, 1);
                return NULL;
        }
        struct str_ent *e = malloc(need);
        if (!e)
                return NULL;
        e->hash = h;
        memcpy(e->s, str, len + 1);
        ST_ADD(s, string_bytes, need);
        if (m)
                m->string_bytes += need;
        e->next = *b;
        *b = e;
        return e->s;
}

/* Demangled (C++ "_Z..." of at most SYM_NAME_MAX bytes: the demangler never sees a longer
 * one) or as is; interned. */
static const char *intern_name(struct symbolizer *s, struct sym_module *m, const char *name)
{
        if (!name)
                return NULL;
        if (name[0] == '_' && name[1] == 'Z' && strnlen(name, SYM_NAME_MAX + 1) <= SYM_NAME_MAX) {
                int status = -1;
                char *d = s->demangle ? s->demangle(name, NULL, NULL, &status) : NULL;
                if (d && status == 0) {
                        const char *r = intern(s, m, d);
                        free(d);
                        return r;
                }
                free(d);
        }
        return intern(s, m, name);
}

struct symbolizer *symbolizer_new(struct modules *mods)
{
        if (!mods)
                return NULL;
        struct symbolizer *s = calloc(1, sizeof(*s));
        if (!s)
                return NULL;
        s->mods = mods;
        s->cache = calloc(NCACHE_BUCKETS, sizeof(*s->cache));
        s->strs = calloc(NSTR_BUCKETS, sizeof(*s->strs));
        if (!s->cache || !s->strs || pthread_mutex_init(&s->lock, NULL)) {
                free(s->cache);
                free(s->strs);
                free(s);
                return NULL;
        }
        /* Never dlclose'd: libstdc++ may have registered exit-time destructors. */
        void *cxx = dlopen(LIBSTDCXX, RTLD_NOW | RTLD_LOCAL);
        if (cxx)
                s->demangle = (demangle_fn)dlsym(cxx, "__cxa_demangle");
        return s;
}

static void smod_close(struct symbolizer *s, struct sym_module *m)
{
        if (m->es || m->fd >= 0)
                s->nopen--;
        elf_syms_free(m->es);
        m->es = NULL;
        if (m->fd >= 0)
                close(m->fd);
        m->fd = -1;
}

static void cache_clear(struct symbolizer *s)
{
        for (size_t i = 0; i < s->nsmods; i++)
                if (s->smods[i])
                        s->smods[i]->cache_bytes = 0;
        for (size_t i = 0; i < NCACHE_BUCKETS; i++) {
                struct cache_ent *e = s->cache[i];
                while (e) {
                        struct cache_ent *nx = e->next;
                        free(e);
                        e = nx;
                }
                s->cache[i] = NULL;
        }
        s->cache_bytes = 0;
}

/* The registry retired ids (modules_reap): forget the modules whose id names another module
 * now (or none), and the frames cached for them. */
static void forget_modules(struct symbolizer *s)
{
        int gone = 0;
        for (size_t i = 0; i < s->nsmods; i++) {
                if (s->smods[i] && s->smods[i]->serial != modules_serial(s->mods, (uint32_t)i)) {
                        smod_close(s, s->smods[i]);
                        perf_map_free(s->smods[i]->pmap);
                        free(s->smods[i]);
                        s->smods[i] = NULL;
                        gone = 1;
                }
        }
        for (size_t i = 0; gone && i < NCACHE_BUCKETS; i++) {
                for (struct cache_ent **pp = &s->cache[i]; *pp;) {
                        struct cache_ent *e = *pp;
                        if (e->module_id >= CTXPROF_MODULE_FIRST &&
                            (e->module_id >= s->nsmods || !s->smods[e->module_id])) {
                                *pp = e->next;
                                s->cache_bytes -= sizeof(*e) + (size_t)e->n * sizeof(e->f[0]);
                                free(e);
                        } else {
                                pp = &e->next;
                        }
                }
        }
}

void symbolizer_free(struct symbolizer *s)
{
        if (!s)
                return;
        cache_clear(s);
        for (size_t i = 0; i < s->nsmods; i++) {
                if (s->smods[i]) {
                        smod_close(s, s->smods[i]);
                        perf_map_free(s->smods[i]->pmap);
                        free(s->smods[i]);
                }
        }
        free(s->smods);
        free(s->cache);
        for (size_t i = 0; i < NSTR_BUCKETS; i++) {
                struct str_ent *e = s->strs[i];
                while (e) {
                        struct str_ent *nx = e->next;
                        free(e);
                        e = nx;
                }
        }
        free(s->strs);
        free(s->ksyms);
        free(s->kbuf);
        pthread_mutex_destroy(&s->lock);
        free(s);
}

void symbolizer_stats(struct symbolizer *s, struct symbolizer_stats *out)
{
        const uint64_t *in;
        uint64_t *o = (uint64_t *)out;

        if (!s || !out)
                return;
        in = (const uint64_t *)&s->st;
        /* Not under s->lock: a writer holds it while the parser helper answers (up to its
         * deadline), and the daemon's loop asks for these. Each counter is exact, the set
         * is not one instant's. */
        for (size_t i = 0; i < sizeof(*out) / sizeof(*o); i++)
                o[i] = __atomic_load_n(&in[i], __ATOMIC_RELAXED);
}

/* ---- kernel ---------------------------------------------------------------------------- */

static int cmp_ksym(const void *a, const void *b)
{
        const struct ksym *x = a, *y = b;
        return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static void kallsyms_load(struct symbolizer *s)
{
        s->kallsyms_loaded = 1;
        FILE *f = fopen("/proc/kallsyms", "re");
        if (!f)
                return;
        char *line = NULL;
        size_t cap = 0, n = 0, ncap = 0, blen = 0, bcap = 0;
        ssize_t len;
        struct ksym *v = NULL;
        size_t *offs = NULL; /* name offsets into kbuf until it stops moving */
        char *buf = NULL;
        while ((len = getline(&line, &cap, f)) > 0) {
                unsigned long long addr;
                char type;
                int np = 0;
                if (sscanf(line, "%llx %c %n", &addr, &type, &np) < 2 || np <= 0)
                        continue;
                if (addr == 0 || !(type == 't' || type == 'T' || type == 'w' || type == 'W'))
                        continue;
                char *name = line + np;
                name[strcspn(name, " \t\n")] = 0; /* drop "[module]" */
                size_t nl = strlen(name);
                if (n == ncap) {
                        ncap = ncap ? 2 * ncap : 65536;
                        struct ksym *nv = realloc(v, ncap * sizeof(*nv));
                        size_t *no = realloc(offs, ncap * sizeof(*no));
                        if (nv)
                                v = nv;
                        if (no)
                                offs = no;
                        if (!nv || !no)
                                goto fail;
                }
                if (blen + nl + 1 > bcap) {
                        bcap = bcap ? 2 * bcap : (1u << 20);
                        while (bcap < blen + nl + 1)
                                bcap *= 2;
                        char *nb = realloc(buf, bcap);
                        if (!nb)
                                goto fail;
                        buf = nb;
                }
                memcpy(buf + blen, name, nl + 1);
                v[n].addr = addr;
                offs[n] = blen;
                blen += nl + 1;
                n++;
        }
        for (size_t i = 0; i < n; i++)
                v[i].name = buf + offs[i];
        qsort(v, n, sizeof(*v), cmp_ksym);
        s->ksyms = v;
        s->nksyms = n;
        s->kbuf = buf;
        free(offs);
        free(line);
        fclose(f);
        return;
fail:
        free(v);
        free(offs);
        free(buf);
        free(line);
        fclose(f);
}

static const char *kernel_name(struct symbolizer *s, uint64_t addr)
{
        if (!s->kallsyms_loaded)
                kallsyms_load(s);
        size_t lo = 0, hi = s->nksyms;
        while (lo < hi) { /* first symbol with addr > target */
                size_t mid = lo + (hi - lo) / 2;
                if (s->ksyms[mid].addr <= addr)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        if (lo == 0)
                return NULL;
        const struct ksym *k = &s->ksyms[lo - 1];
        /* Past the last symbol by a lot: not text we know. */
        if (lo == s->nksyms && addr - k->addr > (1u << 20))
                return NULL;
        return k->name;
}

/* ---- user modules ---------------------------------------------------------------------- */

static void evict_lru(struct symbolizer *s)
{
        struct sym_module *old = NULL;
        for (size_t i = 0; i < s->nsmods; i++) {
                struct sym_module *m = s->smods[i];
                if (m && (m->es || m->fd >= 0) && (!old || m->last_use < old->last_use))
                        old = m;
        }
        if (old)
                smod_close(s, old);
}

/* A perf-map module: its map, read through the registry's descriptor (stack/perf_map.h). */
static int pmap_open(struct symbolizer *s, uint32_t id, struct sym_module *m)
{
        int fd = modules_open(s->mods, id);
        if (fd < 0)
                return fd;
        m->pmap = perf_map_new(fd);
        return m->pmap ? 0 : -ENOMEM;
}

static int smod_open(struct symbolizer *s, uint32_t id, struct sym_module *m)
{
        struct module_info info;
        if (modules_info(s->mods, id, &info) < 0)
                return -ENOENT;
        if (!strcmp(info.path, PERF_MAP_MODULE)) {
                m->is_perf_map = 1;
                return pmap_open(s, id, m);
        }
        int fd = modules_open(s->mods, id);
        if (fd < 0)
                return fd;
        if (s->nopen >= SYM_MAX_OPEN)
                evict_lru(s);
        if (parser) { /* the helper opens it, from this descriptor sent with each request */
                m->fd = fd;
                m->token = __atomic_add_fetch(&next_token, 1, __ATOMIC_RELAXED);
                s->nopen++;
                return 0;
        }
        int refused = 0, err = 0;
        m->es = elf_syms_open(fd, info.path, &refused, &err);
        if (refused)
                ST_ADD(s, dwarf_refused, 1);
        if (!m->es)
                return err;
        s->nopen++;
        return 0;
}

static struct sym_module *smod_get(struct symbolizer *s, uint32_t id)
{
        if (id >= s->nsmods) {
                size_t nn = s->nsmods ? s->nsmods : 64;
                while (nn <= id)
                        nn *= 2;
                struct sym_module **nv = realloc(s->smods, nn * sizeof(*nv));
                if (!nv)
                        return NULL;
                memset(nv + s->nsmods, 0, (nn - s->nsmods) * sizeof(*nv));
                s->smods = nv;
                s->nsmods = nn;
        }
        struct sym_module *m = s->smods[id];
        if (!m) {
                m = calloc(1, sizeof(*m));
                if (!m)
                        return NULL;
                m->fd = -1;
                m->serial = modules_serial(s->mods, id);
                s->smods[id] = m;
        }
        m->last_use = ++s->tick;
        if (!m->es && m->fd < 0 && !m->pmap && !m->failed &&
            (!m->retry_ns || mono_ns() >= m->retry_ns)) {
                int err = smod_open(s, id, m);
                /* An id the registry does not know yet (another thread is registering it)
                 * is not a broken file: try again next time instead of failing it for good. */
                if (err < 0 && err != -ENOENT) {
                        m->failed = 1;
                        ST_ADD(s, module_errors, 1);
                }
        }
        return m->es || m->fd >= 0 || m->pmap ? m : NULL;
}

/* A JIT frame (off: the address) by the process's perf map, re-read when it does not name
 * the address yet (the runtime appends as it compiles), at most every SYM_PERF_MAP_REREAD_NS:
 * a target appending a line before each lookup cannot make every lookup re-sort its map.
 * The name as written, like perf. */
static int resolve_perf_map(struct symbolizer *s, struct sym_module *m, uint64_t off,
                            struct sym_frame *out)
{
        const char *name = perf_map_lookup(m->pmap, off);
        uint64_t now = mono_ns();
        if (!name && (!m->pmap_read_ns || now - m->pmap_read_ns >= SYM_PERF_MAP_REREAD_NS)) {
                m->pmap_read_ns = now;
                perf_map_update(m->pmap, modules_target_stats(s->mods));
                name = perf_map_lookup(m->pmap, off);
        }
        out[0] = (struct sym_frame){.function = intern(s, m, name), .file = NULL, .line = -1};
        return out[0].function ? 1 : 0;
}

/* The raw names of an ELF frame into out (interned, demangled, charged to m). */
static int intern_entries(struct symbolizer *s, struct sym_module *m, const struct elf_sym_entry *e,
                          int n, struct sym_frame *out)
{
        for (int i = 0; i < n; i++)
                out[i] = (struct sym_frame){.function = intern_name(s, m, e[i].function),
                                            .file = intern(s, m, e[i].file),
                                            .line = e[i].line,
                                            .inlined = e[i].inlined};
        /* Without a name the one entry says nothing the caller would not print itself. */
        return n == 1 && !out[0].function ? 0 : n;
}

/* parser_retries and parser_refused of every symbolizer this process had (they come and go
 * with recordings): what symbolize_parser_failures reports. */
static uint64_t helper_retries, helper_refused;

void symbolize_parser_failures(uint64_t *retries, uint64_t *refused)
{
        *retries = __atomic_load_n(&helper_retries, __ATOMIC_RELAXED);
        *refused = __atomic_load_n(&helper_refused, __ATOMIC_RELAXED);
}

/* An ELF frame through the parser helper: its entries, or 0. A module whose request times
 * out, kills the helper or gets a malformed answer is closed and asked again after a pause
 * (SYM_HELPER_RETRY_NS), refused for good at the SYM_HELPER_FAILURES_MAX-th time; a request
 * not sent (its lane busy past PARSER_WRITER_WAIT_MS with another thread's request, or no
 * helper running: another module's request killed the last one, and the next
 * start is rate-limited) blames nothing. Both are -EAGAIN: the frame is unnamed this once
 * (not cached), asked again later. */
static int resolve_remote(struct symbolizer *s, struct sym_module *m, uint64_t off,
                          struct sym_frame *out, int max)
{
        static _Thread_local union {
                char buf[SYM_RESP_MAX];
                uint64_t align;
        } resp;
        static _Thread_local struct sym_wire_names names;
        struct sym_req req = {.token = m->token, .offset = off};
        uint32_t got = 0;
        int err = parser_client_try_call(parser, PARSER_WRITER_WAIT_MS, PARSER_SYM, &req,
                                         sizeof(req), m->fd, resp.buf, sizeof(resp.buf), &got);
        if (!err)
                err = sym_wire_decode(resp.buf, got, &names);
        if (err == -ETIMEDOUT || err == -EPIPE || err == -EPROTO) {
                smod_close(s, m);
                if (++m->helper_failures >= SYM_HELPER_FAILURES_MAX) {
                        ST_ADD(s, parser_refused, 1);
                        __atomic_fetch_add(&helper_refused, 1, __ATOMIC_RELAXED);
                        m->failed = 1;
                        return 0;
                }
                ST_ADD(s, parser_retries, 1);
                __atomic_fetch_add(&helper_retries, 1, __ATOMIC_RELAXED);
                m->retry_ns = mono_ns() + (SYM_HELPER_RETRY_NS << (m->helper_failures - 1));
                return -EAGAIN;
        }
        if (err == -EAGAIN || err == -EBUSY) /* not sent: blames nothing */
                return -EAGAIN;
        if (err == -EINVAL) { /* not ELF: as in this process, failed for good */
                ST_ADD(s, module_errors, 1);
                m->failed = 1;
                smod_close(s, m);
        }
        if (err)
                return 0;
        if (names.dwarf_refused && !m->dwarf_counted) {
                m->dwarf_counted = 1;
                ST_ADD(s, dwarf_refused, 1);
        }
        return intern_entries(s, m, names.e, names.n < max ? names.n : max, out);
}

static int resolve_user(struct symbolizer *s, uint32_t id, uint64_t off, struct sym_frame *out,
                        int max)
{
        struct sym_module *m = smod_get(s, id);
        if (!m) { /* a module waiting to be asked again: not an answer to remember */
                const struct sym_module *w = id < s->nsmods ? s->smods[id] : NULL;
                return w && !w->failed && w->retry_ns && mono_ns() < w->retry_ns ? -EAGAIN : 0;
        }
        if (m->pmap)
                return resolve_perf_map(s, m, off, out);
        if (m->fd >= 0)
                return resolve_remote(s, m, off, out, max);
        struct elf_sym_entry e[SYM_MAX_INLINE];
        int n = elf_syms_resolve(m->es, off, e, max < SYM_MAX_INLINE ? max : SYM_MAX_INLINE);
        return intern_entries(s, m, e, n, out);
}

void symbolize_use_parser(struct parser_client *pc)
{
        parser = pc;
}

static void copy_out(const struct sym_frame *src, int n, struct sym_frame *out, int max)
{
        if (n <= max) {
                memcpy(out, src, (size_t)n * sizeof(*out));
                return;
        }
        /* Keep the innermost entries and the real function last. */
        memcpy(out, src, (size_t)(max - 1) * sizeof(*out));
        out[max - 1] = src[n - 1];
}

int symbolize(struct symbolizer *s, const struct ctxprof_frame *f, struct sym_frame *out, int max)
{
        if (!s || !f || !out || max < 1)
                return -EINVAL;
        uint64_t off = f->offset;
        if ((f->flags & CTXPROF_FRAME_RETADDR) && off > 0)
                off--;
        uint32_t h = (uint32_t)((off * 0x9e3779b97f4a7c15ull) >> 40) ^ f->module_id * 2654435761u;
        h %= NCACHE_BUCKETS;

        pthread_mutex_lock(&s->lock);
        uint64_t gen = modules_generation(s->mods);
        if (gen != s->mods_gen) {
                forget_modules(s);
                s->mods_gen = gen;
        }
        ST_ADD(s, lookups, 1);
        for (struct cache_ent *e = s->cache[h]; e; e = e->next) {
                if (e->module_id == f->module_id && e->offset == off) {
                        ST_ADD(s, cache_hits, 1);
                        copy_out(e->f, e->n, out, max < e->n ? max : e->n);
                        int r = max < e->n ? max : e->n;
                        pthread_mutex_unlock(&s->lock);
                        return r;
                }
        }
        struct sym_frame tmp[SYM_MAX_INLINE];
        int n = 0;
        if (f->module_id == CTXPROF_MODULE_KERNEL) {
                const char *name = kernel_name(s, off);
                if (name) {
                        tmp[0] = (struct sym_frame){.function = name, .file = NULL, .line = -1};
                        n = 1;
                }
        } else if (f->module_id >= CTXPROF_MODULE_FIRST) {
                n = resolve_user(s, f->module_id, off, tmp, SYM_MAX_INLINE);
        }
        int cacheable = n >= 0; /* < 0: the helper could not be asked now */
        if (n < 0)
                n = 0;
        if (n == 0) {
                struct module_info mi;
                ST_ADD(s, unresolved, 1);
                tmp[0] = (struct sym_frame){.function = NULL, .file = NULL, .line = -1};
                n = 1;
                /* Not yet registered: the answer may change, so do not remember it. */
                if (f->module_id >= CTXPROF_MODULE_FIRST &&
                    modules_info(s->mods, f->module_id, &mi))
                        cacheable = 0;
        }
        struct sym_module *m = f->module_id >= CTXPROF_MODULE_FIRST && f->module_id < s->nsmods
                                   ? s->smods[f->module_id]
                                   : NULL;
        size_t need = sizeof(struct cache_ent) + (size_t)n * sizeof(tmp[0]);
        if (m && m->is_perf_map)
                cacheable = 0; /* a JIT's address may name other code later */
        if (cacheable && m && m->cache_bytes + need > SYM_MODULE_CACHE_BYTES) {
                cacheable = 0; /* one module (one target's file) cannot fill the cache */
                ST_ADD(s, cache_refused, 1);
        }
        if (cacheable && s->cache_bytes + need > SYM_CACHE_BYTES) {
                cache_clear(s);
                ST_ADD(s, cache_clears, 1);
        }
        struct cache_ent *e = cacheable ? malloc(need) : NULL;
        if (e) {
                e->module_id = f->module_id;
                e->offset = off;
                e->n = n;
                memcpy(e->f, tmp, (size_t)n * sizeof(tmp[0]));
                e->next = s->cache[h];
                s->cache[h] = e;
                s->cache_bytes += need;
                if (m)
                        m->cache_bytes += need;
        }
        int r = n < max ? n : max;
        copy_out(tmp, n, out, r);
        pthread_mutex_unlock(&s->lock);
        return r;
}
