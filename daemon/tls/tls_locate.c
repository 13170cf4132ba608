/* SPDX-License-Identifier: MIT */
/*
 * tls_locate.c — per target process: walks /proc/PID/maps (util/maps_line.h), reads each
 * executable-mapped ELF file (only through util/target_open.h) with elf_tls.c, picks the
 * object that *defines* each of our TLS variables, and turns its access model into a
 * struct ctxprof_tls_var using the live loader state read from /proc/PID/mem:
 *
 *   executable, no relocation (local-exec)  tp_offset = st_value - exec block offset
 *     (also when its TPOFF64 slot is not relocated yet: the exe's block is always first)
 *   R_X86_64_TPOFF64 (initial-exec)         tp_offset = the GOT slot
 *   R_X86_64_TLSDESC                        {entry, arg}: arg < 0 static tp offset;
 *                                           arg a pointer → {module, offset} → DTV
 *   R_X86_64_DTPMOD64 (+ DTPOFF64)          {module, offset} → DTV
 *
 * DTV layouts (x86-64, dtv pointer at tp + 8 for both libcs):
 *   glibc: dtv_t is 16 bytes {val, to_free}; the length (max valid module id) is
 *          dtv[-1].counter, dtv[0] is the generation; an unallocated block is -1 (or 0 when
 *          the thread's DTV predates the dlopen).
 *   musl:  8-byte entries, dtv[0] = module count; blocks are installed eagerly at dlopen
 *          (musl never gives a dlopen'ed module static TLS: its TLSDESC arg is always a
 *          pointer to {tls_id, offset, next}, so the same decoding applies). The main
 *          executable's static offset differs from glibc's only for unaligned PT_TLS
 *          p_vaddr (see elf_tls_exec_block_offset). musl is decided from the ELF, never
 *          from file names (Debian's musl maps as /usr/lib/x86_64-linux-musl/libc.so): a
 *          mapped object whose .dynsym defines musl's dynamic-linker entry __dls3 (musl's
 *          libc.so is its own loader), looked for only when a variable needs the DTV.
 *
 * Must never print, never write to the target, never trust a value read from it without a
 * range check, never open a file it names but through util/target_open.h.
 */
#include "tls/tls_locate.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/uio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ctx/abi.h"
#include "tls/elf_tls.h"
#include "util/clock.h"
#include "util/grow.h"
#include "util/hash.h"
#include "util/maps_line.h"
#include "util/target_open.h"

#define MAX_OBJECTS 4096

#define OBJECTS_FIRST_CAP 64 /* mapped objects at first growth */
/* static TLS offsets are small negatives (glibc: static TLS size, a few KiB) */
#define MAX_STATIC_TLS (1LL << 31)
#define MAX_MODULE_ID  (1u << 20)
#define USER_ADDR_MAX  0x00007fffffffffffULL

/* OTEP 4947: the thread context pointer; an 8-byte TLS symbol in .dynsym (or .symtab). */
#define OTEL_THREAD_CTX_SYM  "otel_thread_ctx_v1"
#define OTEL_THREAD_CTX_SIZE 8

/* DTV layouts (see the header comment) */
#define GLIBC_DTV_STRIDE    16
#define GLIBC_DTV_LEN_INDEX (-1)
#define MUSL_DTV_STRIDE     8
#define MUSL_DTV_LEN_INDEX  0
/* musl's libc.so is its own dynamic linker: only it defines this stage of it */
#define MUSL_LOADER_SYM "__dls3"

/* Go's TLS slot for the current goroutine (linux/amd64): a local TLS symbol of the
 * executable where it has a PT_TLS (cgo), else the slot at fs:-8 (runtime.settls). */
#define GO_TLSG_SYM  "runtime.tlsg"
#define GO_TLS_SLOT  (-8)
#define GO_TLSG_SIZE 8

enum { SYM_LABELS, SYM_LABELS_VERSION, SYM_SPAN, SYM_SPAN_VERSION, SYM_OTEL, SYM_GO_TLSG, NSYMS };
static const char *const sym_names[NSYMS] = {
    [SYM_LABELS] = CUSTOM_LABELS_CURRENT_SET_SYM,
    [SYM_LABELS_VERSION] = CUSTOM_LABELS_ABI_VERSION_SYM,
    [SYM_SPAN] = CTX_SPAN_CONTEXT_SYM,
    [SYM_SPAN_VERSION] = CTX_SPAN_CONTEXT_ABI_VERSION_SYM,
    [SYM_OTEL] = OTEL_THREAD_CTX_SYM,
    [SYM_GO_TLSG] = GO_TLSG_SYM,
};

struct object {
        struct target_file tf; /* its first mapping (lowest address); tf.path owned */
        uint64_t pgoff;
        int exec; /* some mapping of it is executable */
};

int tls_mem_read(int mem_fd, uint64_t addr, void *buf, size_t len)
{
        if (addr > USER_ADDR_MAX || len > USER_ADDR_MAX - addr)
                return -EFAULT;
        size_t done = 0;
        while (done < len) {
                ssize_t r = pread(mem_fd, (char *)buf + done, len - done, (off_t)(addr + done));
                if (r < 0) {
                        if (errno == EINTR)
                                continue;
                        return errno == ESRCH ? -ESRCH : -EFAULT;
                }
                if (r == 0)
                        return -EFAULT;
                done += (size_t)r;
        }
        return 0;
}

int tls_vm_read(pid_t pid, uint64_t addr, void *buf, size_t len)
{
        if (addr > USER_ADDR_MAX || len > USER_ADDR_MAX - addr)
                return -EFAULT;
        size_t done = 0;
        while (done < len) {
                struct iovec local = {(char *)buf + done, len - done};
                struct iovec remote = {(void *)(uintptr_t)(addr + done), len - done};
                ssize_t r = process_vm_readv(pid, &local, 1, &remote, 1, 0);
                if (r < 0) {
                        if (errno == EINTR)
                                continue;
                        return errno == ESRCH ? -ESRCH : errno == EPERM ? -EPERM : -EFAULT;
                }
                if (r == 0)
                        return -EFAULT;
                done += (size_t)r;
        }
        return 0;
}

static int read_u64(int mem_fd, uint64_t addr, uint64_t *v)
{
        return tls_mem_read(mem_fd, addr, v, sizeof(*v));
}

/* The locator reads the target's memory (its loader's relocated slots, addresses the target
 * chose) with process_vm_readv, never /proc/PID/mem: see tls_vm_read. */
static int read_u64_vm(pid_t pid, uint64_t addr, uint64_t *v)
{
        return tls_vm_read(pid, addr, v, sizeof(*v));
}

static void free_objects(struct object *objs, int n)
{
        for (int i = 0; i < n; i++)
                free((char *)objs[i].tf.path);
        free(objs);
}

struct read_ctx {
        struct object *objs;
        size_t cap;
        int n, lines;
};

static int object_cb(const struct maps_line *l, void *arg)
{
        struct read_ctx *rc = arg;

        rc->lines++;
        if (l->ino == 0 || l->path[0] != '/')
                return 0;
        int i;
        for (i = 0; i < rc->n; i++)
                if (rc->objs[i].tf.ino == l->ino && rc->objs[i].tf.dev == l->dev)
                        break;
        if (i == rc->n) {
                if (rc->n == MAX_OBJECTS)
                        return 0; /* bounded: ignore the rest */
                if (grow_array((void **)&rc->objs, &rc->cap, sizeof(*rc->objs), (size_t)rc->n + 1,
                               OBJECTS_FIRST_CAP))
                        return -ENOMEM;
                struct object *o = &rc->objs[rc->n];
                memset(o, 0, sizeof(*o));
                char *path = strdup(l->path);
                if (!path)
                        return -ENOMEM;
                rc->n++;
                o->tf = target_file_of(l);
                o->tf.path = path;
                o->pgoff = l->pgoff;
        }
        if (strchr(l->perms, 'x'))
                rc->objs[i].exec = 1;
        return 0;
}

/* Parse /proc/PID/maps (util/maps_line.h: lines capped, a too long one refused and counted in
 * st) into unique files (*objs, owned by the caller, free_objects). Returns the count or
 * -errno. */
static int read_objects(pid_t pid, struct object **objsp, struct target_stats *st)
{
        struct read_ctx rc = {0};
        int err = maps_foreach(pid, object_cb, &rc, st);

        if (!err && rc.lines == 0)
                err = -ESRCH; /* zombie: no address space */
        if (err) {
                free_objects(rc.objs, rc.n);
                return err;
        }
        *objsp = rc.objs;
        return rc.n;
}

static int is_user_pointer(uint64_t v)
{
        return v > 0xffffffffULL && v <= USER_ADDR_MAX;
}

static int static_offset_ok(int64_t off)
{
        return off < 0 && off > -MAX_STATIC_TLS;
}

/* glibc's layout; tls_locate switches to musl's (dtv_stride 8) when the process runs musl */
static void set_dtv(struct ctxprof_tls_var *v, uint64_t module, uint64_t offset)
{
        v->mode = CTXPROF_TLS_DTV;
        v->dtv_stride = GLIBC_DTV_STRIDE;
        v->module = module;
        v->offset = offset;
}

static int resolve_reloc(pid_t pid, const struct elf_tls_info *info, const struct elf_tls_sym *s,
                         uint64_t bias, struct ctxprof_tls_var *v);

/* The main executable's TLS block is the first below tp (glibc and musl alike), so its
 * variables' offsets follow from the file alone: local-exec code needs no relocation, and
 * before the loader has filled a TPOFF64/TLSDESC slot (process stopped at exec) this is
 * still the right answer. */
static int exec_static(const struct elf_tls_info *info, const struct elf_tls_sym *s,
                       struct ctxprof_tls_var *v)
{
        if (s->value >= info->tls_memsz)
                return -EPROTO;
        v->mode = CTXPROF_TLS_STATIC;
        v->tp_offset = (int64_t)s->value - (int64_t)elf_tls_exec_block_offset(info);
        if (static_offset_ok(v->tp_offset))
                return 0;
        memset(v, 0, sizeof(*v));
        return -EPROTO;
}

/* One TLS variable defined in object o (file info, symbol s, load bias). */
static int resolve_var(pid_t pid, const struct elf_tls_info *info, const struct elf_tls_sym *s,
                       uint64_t bias, struct ctxprof_tls_var *v)
{
        memset(v, 0, sizeof(*v));
        int rc = resolve_reloc(pid, info, s, bias, v);
        if (rc == -EAGAIN && info->is_executable)
                return exec_static(info, s, v);
        if (rc)
                memset(v, 0, sizeof(*v));
        return rc;
}

/* The variable through its relocation, from the live slot the loader filled in. */
static int resolve_reloc(pid_t pid, const struct elf_tls_info *info, const struct elf_tls_sym *s,
                         uint64_t bias, struct ctxprof_tls_var *v)
{
        uint64_t w[2];
        int rc;
        switch (s->reloc) {
        case ELF_TLS_RELOC_TLSDESC:
                rc = tls_vm_read(pid, bias + s->reloc_where, w, sizeof(w));
                if (rc)
                        return rc;
                if (w[0] == 0 || w[1] == 0)
                        return -EAGAIN; /* the loader has not processed it yet */
                if (static_offset_ok((int64_t)w[1])) {
                        v->mode = CTXPROF_TLS_STATIC;
                        v->tp_offset = (int64_t)w[1];
                        return 0;
                }
                if (!is_user_pointer(w[1]))
                        return -EPROTO;
                /* dynamic TLS: arg -> {module, offset, ...} (glibc tlsdesc_dynamic_arg, musl) */
                uint64_t mo[2];
                rc = tls_vm_read(pid, w[1], mo, sizeof(mo));
                if (rc)
                        return rc;
                if (mo[0] == 0 || mo[0] > MAX_MODULE_ID)
                        return -EPROTO;
                set_dtv(v, mo[0], mo[1]);
                return 0;
        case ELF_TLS_RELOC_TPOFF64:
                rc = read_u64_vm(pid, bias + s->reloc_where, &w[0]);
                if (rc)
                        return rc;
                if (w[0] == 0)
                        return -EAGAIN;
                if (!static_offset_ok((int64_t)w[0]))
                        return -EPROTO;
                v->mode = CTXPROF_TLS_STATIC;
                v->tp_offset = (int64_t)w[0];
                return 0;
        case ELF_TLS_RELOC_DTPMOD64:
                rc = read_u64_vm(pid, bias + s->reloc_where, &w[0]);
                if (rc)
                        return rc;
                if (w[0] == 0)
                        return -EAGAIN;
                if (w[0] > MAX_MODULE_ID)
                        return -EPROTO;
                w[1] = s->value + (uint64_t)s->reloc_addend;
                if (s->dtpoff_where) {
                        rc = read_u64_vm(pid, bias + s->dtpoff_where, &w[1]);
                        if (rc)
                                return rc;
                }
                set_dtv(v, w[0], w[1]);
                return 0;
        default:
                /* local-exec in the main executable */
                return info->is_executable ? exec_static(info, s, v) : -ENOTSUP;
        }
}

/* 1 = version symbol absent or == 1 (or unreadable: not a reason to give up), 0 = other. */
static int version_ok(pid_t pid, const struct elf_tls_sym *s, uint64_t bias)
{
        if (!s->defined || s->type == STT_TLS || s->size != 4)
                return 1;
        uint32_t ver;
        if (tls_vm_read(pid, bias + s->value, &ver, sizeof(ver)) != 0)
                return 1;
        return ver == 1;
}

/* keep the most useful error: ESRCH > EAGAIN > anything else */
static int merge_err(int acc, int rc)
{
        if (rc == 0 || acc == -ESRCH)
                return acc;
        if (acc == 0 || rc == -ESRCH || rc == -EAGAIN)
                return rc;
        return acc;
}

/*
 * Files known to define none of our variables. A process without context is located again
 * every few seconds (a dlopen may bring libctx), and reading every one of its ELF files each
 * time would cost the daemon more than sampling does; with this set a retry reads the maps
 * and stats each file. A file is known by device, inode, size and modification time (of the
 * mapped file itself, as target_open_path checked it): a freed inode number reused by a rebuilt
 * binary (`cc -o app` on ext4) must not inherit the old file's verdict. The set is emptied
 * when full. Shared by all callers, under a lock (held for a lookup only).
 */
#define NOCTX_SLOTS 4096 /* power of two; at most 3/4 used */
struct noctx_key {
        uint64_t dev, ino, size;
        int64_t mtime_ns;
};
static struct {
        pthread_mutex_t lock;
        unsigned used;
        struct noctx_key slot[NOCTX_SLOTS]; /* ino 0 = empty */
} noctx = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* The identity of the file open (O_PATH) at fd, checked by target_open_path; 0 or -errno. */
static int noctx_key_of(int fd, struct noctx_key *k)
{
        struct stat st;

        if (fstat(fd, &st) || !st.st_ino)
                return -ENOENT;
        *k = (struct noctx_key){.dev = (uint64_t)st.st_dev,
                                .ino = (uint64_t)st.st_ino,
                                .size = (uint64_t)st.st_size,
                                .mtime_ns = timespec_ns(&st.st_mtim)};
        return 0;
}

static uint64_t file_key_hash(const struct noctx_key *k)
{
        return hash_mix64(k->ino ^ k->dev << 40 ^ k->size << 20 ^ (uint64_t)k->mtime_ns);
}

/* 1 if the file k names is known to hold none of our variables; with add, remember that. */
static int noctx_check(const struct noctx_key *k, int add)
{
        uint64_t h = file_key_hash(k);
        int found = 0;

        pthread_mutex_lock(&noctx.lock);
        if (add && noctx.used >= NOCTX_SLOTS / 4 * 3) {
                memset(noctx.slot, 0, sizeof(noctx.slot));
                noctx.used = 0;
        }
        for (unsigned i = (unsigned)(h >> 32) & (NOCTX_SLOTS - 1);;
             i = (i + 1) & (NOCTX_SLOTS - 1)) {
                struct noctx_key *e = &noctx.slot[i];

                if (!e->ino) {
                        if (add) {
                                *e = *k;
                                noctx.used++;
                        }
                        break;
                }
                if (!memcmp(e, k, sizeof(*k))) {
                        found = 1;
                        break;
                }
        }
        pthread_mutex_unlock(&noctx.lock);
        return found;
}

/*
 * Files known to define one of our variables, with what their scan found. 1,000 processes
 * linking the same libctx.so would otherwise send it to the parser helper 1,000 times at
 * their first locate, and again at each selector check and re-locate. Known by the same
 * identity as noctx (device, inode, size, modification time); a slot is overwritten by the
 * next file whose key hashes to it. Under a lock held for a copy only.
 */
#define CTX_FILE_SLOTS 64 /* power of two */
static struct {
        pthread_mutex_t lock;
        struct ctx_file {
                struct noctx_key key; /* ino 0 = empty */
                struct elf_tls_info info;
                struct elf_tls_sym syms[NSYMS];
        } slot[CTX_FILE_SLOTS];
} ctx_files = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* 1 and *info, syms filled if the file k names was scanned before and defines a variable;
 * with add, remember info and syms for it instead. */
static int ctx_file_cache(const struct noctx_key *k, int add, struct elf_tls_info *info,
                          struct elf_tls_sym *syms)
{
        struct ctx_file *e = &ctx_files.slot[(file_key_hash(k) >> 32) & (CTX_FILE_SLOTS - 1)];
        int found = 0;

        pthread_mutex_lock(&ctx_files.lock);
        if (add) {
                e->key = *k;
                e->info = *info;
                memcpy(e->syms, syms, sizeof(e->syms));
        } else if (e->key.ino && !memcmp(&e->key, k, sizeof(*k))) {
                *info = e->info;
                memcpy(syms, e->syms, sizeof(e->syms));
                found = 1;
        }
        pthread_mutex_unlock(&ctx_files.lock);
        return found;
}

/* A Go executable's goroutine-labels layout (tls/elf_go.h) and its goroutine slot: what BPF
 * follows, or CTXPROF_GO_LABELS_UNKNOWN (no labels read) when either is not known; NONE for
 * a program that never sets labels (nothing to read, nothing to count). */
static void go_layout(const struct elf_tls_info *info, const struct elf_tls_sym *tlsg,
                      struct ctxprof_go_layout *g)
{
        struct ctxprof_tls_var v;

        memset(g, 0, sizeof(*g));
        if (!info->go.sets_labels)
                return;
        g->kind = CTXPROF_GO_LABELS_UNKNOWN;
        if (info->go.source != ELF_GO_DWARF && info->go.source != ELF_GO_VERSION)
                return;
        if (!info->has_tls)
                g->g_tp_offset = GO_TLS_SLOT;
        else if (tlsg->defined && tlsg->type == STT_TLS && tlsg->size == GO_TLSG_SIZE &&
                 exec_static(info, tlsg, &v) == 0)
                g->g_tp_offset = (int32_t)v.tp_offset;
        else if (info->tls_memsz == GO_TLSG_SIZE) /* no .symtab: the block is the slot alone */
                g->g_tp_offset = -(int32_t)elf_tls_exec_block_offset(info);
        else
                return;
        g->g_m = info->go.g_m;
        g->m_curg = info->go.m_curg;
        g->g_labels = info->go.g_labels;
        g->kind = CTXPROF_GO_LABELS_HMAP;
}

static int uses_dtv(const struct ctxprof_tls_target *t)
{
        return t->labels.mode == CTXPROF_TLS_DTV || t->span.mode == CTXPROF_TLS_DTV ||
               t->otel.mode == CTXPROF_TLS_DTV;
}

/* 1 if one of the mapped objects is musl's libc, by its ELF (MUSL_LOADER_SYM in .dynsym), 0
 * if none is, -EBUSY when the parser helper could not be asked (the answer is unknown). */
static int is_musl(pid_t pid, const struct object *objs, int n, struct target_stats *st)
{
        static const char *const marker[] = {MUSL_LOADER_SYM};

        for (int i = 0; i < n; i++) {
                struct elf_tls_info info;
                struct elf_tls_sym sym;
                int opath, fd, rc;

                if (!objs[i].exec || (opath = target_open_path(pid, &objs[i].tf, st)) < 0)
                        continue;
                fd = target_reopen(opath, st);
                close(opath);
                if (fd < 0)
                        continue;
                rc = elf_tls_scan(fd, marker, 1, ELF_TLS_NO_DWARF, &info, &sym);
                close(fd);
                if (rc == -EBUSY)
                        return rc;
                if (!rc && sym.defined && sym.in_dynsym && sym.type == STT_FUNC)
                        return 1;
        }
        return 0;
}

/* musl's DTV: 8-byte entries, dtv[0] = module count. */
static void use_musl_dtv(struct ctxprof_tls_target *t)
{
        struct ctxprof_tls_var *vars[] = {&t->labels, &t->span, &t->otel};

        t->dtv.len_index = MUSL_DTV_LEN_INDEX;
        for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
                if (vars[i]->mode == CTXPROF_TLS_DTV)
                        vars[i]->dtv_stride = MUSL_DTV_STRIDE;
}

/* The scan of the object open (O_PATH) at opath: 0 and *info, syms when it defines one of our
 * variables, 1 when it defines none, -EBUSY (the helper was not asked: busy with other
 * requests past PARSER_JOB_WAIT_MS) or another -errno (not ELF, corrupt, unreadable).
 * Both verdicts are remembered by the file's identity (noctx, ctx_files). */
static int scan_object(int opath, int symbols_only, struct elf_tls_info *info,
                       struct elf_tls_sym *syms, struct target_stats *st)
{
        struct noctx_key key;
        int keyed = noctx_key_of(opath, &key) == 0;

        if (keyed && noctx_check(&key, 0))
                return 1;
        if (keyed && ctx_file_cache(&key, 0, info, syms))
                return 0;
        int fd = target_reopen(opath, st);
        if (fd < 0)
                return fd;
        unsigned flags = ELF_TLS_NEED_TLS | (symbols_only ? ELF_TLS_NO_DWARF : 0);
        int rc = elf_tls_scan(fd, sym_names, NSYMS, flags, info, syms);
        close(fd);
        if (rc)
                return rc;
        if (!syms[SYM_LABELS].defined && !syms[SYM_SPAN].defined && !syms[SYM_OTEL].defined &&
            !info->go.sets_labels) {
                if (keyed)
                        noctx_check(&key, 1);
                return 1;
        }
        /* a Go program's layout without its DWARF (symbols_only) is not what a locate needs */
        if (keyed && !(symbols_only && info->go.sets_labels))
                ctx_file_cache(&key, 1, info, syms);
        return 0;
}

/* tls_locate, or with symbols_only tls_declares_context: 1 at the first module that defines a
 * context variable, the target's memory never read. */
static int locate(pid_t pid, struct ctxprof_tls_target *out, struct target_stats *st,
                  int symbols_only)
{
        memset(out, 0, sizeof(*out));
        struct object *objs = NULL;
        int n = read_objects(pid, &objs, st);
        out->dtv.dtv_offset = 8;
        out->dtv.len_index = GLIBC_DTV_LEN_INDEX;
        out->dtv.has_len = 1;
        if (n < 0)
                return n;

        int err = 0, found_labels = 0, found_span = 0, found_otel = 0, found_go = 0;
        for (int i = 0; i < n && !(found_labels && found_span && found_otel); i++) {
                const struct object *o = &objs[i];
                if (!o->exec)
                        continue;
                int opath = target_open_path(pid, &o->tf, st);
                if (opath < 0) {
                        if (opath == -ENOENT && kill(pid, 0) != 0 && errno == ESRCH) {
                                err = -ESRCH;
                                break;
                        }
                        continue; /* refused or unreadable: cannot be ours to know about */
                }
                struct elf_tls_info info;
                struct elf_tls_sym syms[NSYMS];
                int rc = scan_object(opath, symbols_only, &info, syms, st);
                close(opath);
                if (rc == -EBUSY) {
                        err = -EBUSY;
                        break;
                }
                if (rc)
                        continue; /* not ELF, corrupt, ours to skip: not a context source */
                int has_labels =
                    !found_labels && syms[SYM_LABELS].defined && syms[SYM_LABELS].type == STT_TLS;
                int has_span =
                    !found_span && syms[SYM_SPAN].defined && syms[SYM_SPAN].type == STT_TLS;
                int has_otel = !found_otel && syms[SYM_OTEL].defined &&
                               syms[SYM_OTEL].type == STT_TLS &&
                               syms[SYM_OTEL].size == OTEL_THREAD_CTX_SIZE;
                int has_go = !found_go && info.is_executable && info.go.source != ELF_GO_NONE;
                if (!has_labels && !has_span && !has_otel && !has_go)
                        continue;
                if (has_go) {
                        found_go = 1;
                        go_layout(&info, &syms[SYM_GO_TLSG], &out->go);
                }
                /* a Go program that sets labels: its layout is the locate's to find (DWARF) */
                if (symbols_only && (has_labels || has_span || has_otel || info.go.sets_labels)) {
                        found_labels = found_span = found_otel = 1;
                        err = 1;
                        break;
                }
                if (symbols_only || (!has_labels && !has_span && !has_otel))
                        continue;
                uint64_t bias;
                if (elf_tls_load_bias(&info, o->tf.start, o->pgoff, &bias) != 0) {
                        err = merge_err(err, -ENOEXEC);
                        continue;
                }
                if (has_labels) {
                        found_labels = 1;
                        if (version_ok(pid, &syms[SYM_LABELS_VERSION], bias))
                                err = merge_err(err, resolve_var(pid, &info, &syms[SYM_LABELS],
                                                                 bias, &out->labels));
                }
                if (has_span) {
                        found_span = 1;
                        if (version_ok(pid, &syms[SYM_SPAN_VERSION], bias))
                                err = merge_err(err, resolve_var(pid, &info, &syms[SYM_SPAN], bias,
                                                                 &out->span));
                }
                if (has_otel) {
                        found_otel = 1;
                        err = merge_err(err,
                                        resolve_var(pid, &info, &syms[SYM_OTEL], bias, &out->otel));
                }
        }
        if (!symbols_only && err != -EBUSY && uses_dtv(out)) {
                int musl = is_musl(pid, objs, n, st);
                if (musl < 0) /* a wrong guess would read the DTV with the wrong layout */
                        err = musl;
                else if (musl)
                        use_musl_dtv(out);
        }
        free_objects(objs, n);
        if (err && err != -ESRCH && kill(pid, 0) != 0 && errno == ESRCH)
                err = -ESRCH;
        return err;
}

int tls_locate(pid_t pid, struct ctxprof_tls_target *out, struct target_stats *st)
{
        return locate(pid, out, st, 0);
}

int tls_declares_context(pid_t pid, struct target_stats *st)
{
        struct ctxprof_tls_target unused;

        return locate(pid, &unused, st, 1);
}

int tls_var_address(int mem_fd, const struct ctxprof_tls_target *t, const struct ctxprof_tls_var *v,
                    uint64_t tp, uint64_t *addr)
{
        if (tp == 0)
                return -ENOENT;
        if (v->mode == CTXPROF_TLS_STATIC) {
                *addr = tp + (uint64_t)v->tp_offset;
                return 0;
        }
        if (v->mode != CTXPROF_TLS_DTV || v->dtv_stride == 0)
                return -ENOENT;
        uint64_t dtv, block;
        int rc = read_u64(mem_fd, tp + (uint64_t)(int64_t)t->dtv.dtv_offset, &dtv);
        if (rc)
                return rc;
        if (dtv == 0 || dtv == UINT64_MAX)
                return -ENOENT;
        if (t->dtv.has_len) {
                uint64_t len;
                rc = read_u64(mem_fd, dtv + (uint64_t)((int64_t)t->dtv.len_index * v->dtv_stride),
                              &len);
                if (rc)
                        return rc;
                /* glibc: valid module ids are 1..dtv[-1]; musl: 1..dtv[0] */
                if (v->module > len)
                        return -ENOENT;
        }
        rc = read_u64(mem_fd, dtv + v->module * v->dtv_stride, &block);
        if (rc)
                return rc;
        if (block == 0 || block == UINT64_MAX)
                return -ENOENT;
        *addr = block + v->offset;
        return 0;
}
