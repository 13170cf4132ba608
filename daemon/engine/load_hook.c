/* SPDX-License-Identifier: MIT */
/*
 * load_hook.c — the library-load hook per target (see load_hook.h). Owns the uprobe links
 * (one per target), the sys_exit fallback's link and a small cache of loader symbol offsets.
 * Must never print, never open a target's file but through an O_PATH descriptor of its
 * /proc/PID/map_files entry checked to be the regular file the maps line names (the kernel
 * gets /proc/self/fd/N of that descriptor, never a path the target could swap), and never
 * attach anything host-wide while uprobes work.
 *
 * Which loader: the interpreter the kernel mapped at exec (AT_BASE in /proc/PID/auxv); with
 * none (a static executable, or ld.so run as the program), the executable itself, where a
 * static glibc keeps its own _dl_debug_state for static dlopen. A process whose file has no
 * such symbol (a static executable without one, a stripped musl loader) cannot load a library
 * the debugger way: it gets no hook (counted as no_loader), and the locator's slow retry
 * still covers it.
 */
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "ctxprof/tls_target.h" /* CTXPROF_MAX_TARGETS */
#include "engine/load_hook.h"
#include "engine/mm_stall.h"
#include "tls/elf_tls.h"
#include "util/clock.h"
#include "util/maps_line.h"
#include "util/proc_id.h"
#include "util/target_open.h"

#define LOADER_SYM      "_dl_debug_state"
#define AUXV_MAX_BYTES  4096 /* auxv holds a few dozen pairs */
#define SYM_CACHE_SLOTS 8    /* distinct loaders (glibc, musl, a container's) */
#define FD_HEADROOM     256  /* descriptors beyond those per target the process keeps */
/* Descriptors each target may hold: its probe here, and its pin three times (util/proc_pin.h:
 * the process table's, its maps cache's and its job's while one runs). */
#define FDS_PER_TARGET  4
#define UPROBE_PMU_TYPE "/sys/bus/event_source/devices/uprobe/type"
#define FUSE_MAGIC      0x65735546 /* a FUSE file's reads are served by a user process */

struct hooked {
        pid_t pid;
        struct bpf_link *link;
};

struct sym_cache {
        dev_t dev;
        ino_t ino;
        off_t size;
        int64_t mtime_ns;
        int64_t offset; /* file offset of LOADER_SYM; -1: the file has none */
};

struct load_hook {
        struct bpf_program *uprobe, *sys_exit;
        struct bpf_link *sys_exit_link; /* the fallback, once attached */
        int kind;
        char why[sizeof(((struct load_hook_stats *)0)->why)];
        struct hooked *v; /* CTXPROF_MAX_TARGETS slots, n used */
        size_t n;
        /* uprobe-loader: the loader files hooked (identity) and their links */
        struct {
                dev_t dev;
                ino_t ino;
                struct bpf_link *link;
        } loader[LOAD_HOOK_MAX_LOADERS];
        size_t nloaders;
        struct sym_cache cache[SYM_CACHE_SLOTS];
        unsigned cache_next;
        struct load_hook_stats st;
};

/* The mapping that starts at (or, with exact = 0, contains) addr. */
struct find_map {
        uint64_t addr;
        int exact, found;
        struct maps_line line;
};

static int find_map_cb(const struct maps_line *l, void *arg)
{
        struct find_map *f = arg;

        if (f->exact ? l->start != f->addr : (f->addr < l->start || f->addr >= l->end))
                return 0;
        if (!l->path[0] || l->path[0] == '[')
                return 0; /* anonymous or special: no file to probe */
        f->line = *l;
        f->line.path = NULL; /* not valid after the callback */
        f->found = 1;
        return 1;
}

/* AT_BASE (the interpreter's load address) and AT_ENTRY of pid. 0 or -errno. */
static int read_auxv(pid_t pid, uint64_t *base, uint64_t *entry)
{
        uint64_t av[AUXV_MAX_BYTES / sizeof(uint64_t)];
        char path[64];
        ssize_t n;
        size_t i;
        int fd;

        snprintf(path, sizeof(path), "/proc/%d/auxv", (int)pid);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return errno == ENOENT ? -ESRCH : -errno;
        n = read(fd, av, sizeof(av));
        close(fd);
        if (n < 0)
                return -errno;
        *base = *entry = 0;
        for (i = 0; i + 1 < (size_t)n / sizeof(uint64_t) && av[i] != AT_NULL; i += 2) {
                if (av[i] == AT_BASE)
                        *base = av[i + 1];
                else if (av[i] == AT_ENTRY)
                        *entry = av[i + 1];
        }
        return 0;
}

/* An O_PATH descriptor of the file mapped by line l of pid, checked to be that regular
 * file (util/target_open.h; the descriptor pins it: nothing is opened by path after this).
 * -errno. */
static int open_mapped(pid_t pid, const struct maps_line *l, struct stat *st)
{
        struct target_file tf = target_file_of(l);
        struct statfs fs;
        int fd;

        fd = target_open_path(pid, &tf, NULL);
        if (fd < 0)
                return fd == -ENOENT ? -ESRCH : -EPERM;
        if (fstat(fd, st)) {
                close(fd);
                return -EPERM;
        }
        /* Reading it (its symbols) must not wait for whoever serves a FUSE mount. */
        if (fstatfs(fd, &fs) || fs.f_type == FUSE_MAGIC) {
                close(fd);
                return -EPERM;
        }
        return fd;
}

/* The file offset of LOADER_SYM in the file pinned by pathfd (-1: none), or -errno. */
static int64_t loader_sym_offset(struct load_hook *h, int pathfd, const struct stat *st)
{
        const char *names[] = {LOADER_SYM};
        int64_t mtime = timespec_ns(&st->st_mtim);
        struct elf_tls_info info;
        struct elf_tls_sym sym;
        struct sym_cache *c;
        int64_t off = -1;
        unsigned i;
        int fd, err;

        for (i = 0; i < SYM_CACHE_SLOTS; i++) {
                c = &h->cache[i];
                if (c->ino == st->st_ino && c->dev == st->st_dev && c->size == st->st_size &&
                    c->mtime_ns == mtime && c->ino) {
                        h->st.elf_cached++;
                        return c->offset;
                }
        }
        /* A regular file (checked): opening it for reading runs no driver and cannot block. */
        fd = target_reopen(pathfd, NULL);
        if (fd < 0)
                return fd;
        /* on the sampling loop: never waits for the parser helper (-EBUSY: tried again at the
         * process's next sample, hook_proc) */
        err = elf_tls_scan_nowait(fd, names, 1, ELF_TLS_NO_DWARF, &info, &sym);
        close(fd);
        if (err)
                return err;
        if (sym.defined && sym.type == STT_FUNC)
                for (i = 0; i < info.nloads; i++)
                        if (sym.value >= info.loads[i].vaddr &&
                            sym.value - info.loads[i].vaddr < info.loads[i].filesz) {
                                off = (int64_t)(sym.value - info.loads[i].vaddr +
                                                info.loads[i].offset);
                                break;
                        }
        c = &h->cache[h->cache_next++ % SYM_CACHE_SLOTS];
        *c = (struct sym_cache){.dev = st->st_dev,
                                .ino = st->st_ino,
                                .size = st->st_size,
                                .mtime_ns = mtime,
                                .offset = off};
        return off;
}

/* pid's loader: an O_PATH descriptor, the probe's file offset and (out, may be NULL) the
 * file's identity. 0, 1 = pid has no loader that can be probed, or -errno. */
static int find_loader(struct load_hook *h, pid_t pid, int *pathfd, uint64_t *offset,
                       struct stat *out)
{
        struct find_map f = {0};
        uint64_t base, entry;
        struct stat st;
        int64_t off;
        int err, fd;

        err = read_auxv(pid, &base, &entry);
        if (err)
                return err;
        f.addr = base ? base : entry;
        f.exact = base != 0;
        if (!f.addr)
                return 1;
        err = maps_foreach(pid, find_map_cb, &f, NULL);
        if (err < 0)
                return err;
        if (!f.found)
                return 1;
        fd = open_mapped(pid, &f.line, &st);
        if (fd < 0)
                return fd;
        off = loader_sym_offset(h, fd, &st);
        if (off < 0) {
                close(fd);
                return off == -1 ? 1 : (int)off;
        }
        *pathfd = fd;
        *offset = (uint64_t)off;
        if (out)
                *out = st;
        return 0;
}

static struct hooked *find_hooked(struct load_hook *h, pid_t pid)
{
        size_t i;

        for (i = 0; i < h->n; i++)
                if (h->v[i].pid == pid)
                        return &h->v[i];
        return NULL;
}

/* Errors of the kernel or this process, not of one target: no target can be hooked. */
static int systemic(int err)
{
        return err == -EACCES || err == -EPERM || err == -EMFILE || err == -ENFILE ||
               err == -ENOSYS || err == -EOPNOTSUPP || err == -ENODEV;
}

/* Every target from now on through sys_exit (the uprobes go: one notification each). */
static int fall_back(struct load_hook *h, const char *why, int err)
{
        size_t i;

        h->sys_exit_link = bpf_program__attach(h->sys_exit);
        if (!h->sys_exit_link)
                return -errno;
        for (i = 0; i < h->n; i++)
                bpf_link__destroy(h->v[i].link);
        h->n = 0;
        h->st.active = 0;
        h->kind = LOAD_HOOK_SYS_EXIT;
        snprintf(h->why, sizeof(h->why), "%s%s%s", why, err ? ": " : "", err ? strerror(-err) : "");
        return 0;
}

/* A thread of the host holding a memory map in a FUSE wait (engine/mm_stall.h): attaching a
 * uprobe now would wait for it, with every fork() on the host. Every target from now on
 * through sys_exit instead (fall_back: 0), or 1 when there is no such thread. Asked just
 * before a uprobe is attached at setup (the probe, the loaders hooked for every process);
 * a target's own uprobe (the per-target kind, before the privilege drop only) is not. */
static int stall_fall_back(struct load_hook *h)
{
        pid_t pid = 0, tid = 0;
        char why[sizeof(h->why)];

        if (mm_stall_find(&pid, &tid) != 1)
                return 1;
        snprintf(why, sizeof(why), "thread %d of pid %d holds a memory map in a FUSE wait",
                 (int)tid, (int)pid);
        return fall_back(h, why, 0);
}

/* Attach the uprobe on pid's loader, for pid only (probe_pid = pid) or for every process
 * using that loader file (probe_pid = -1). 0, 1 (no loader), or -errno. */
static int attach_uprobe(struct load_hook *h, pid_t pid, pid_t probe_pid, struct bpf_link **out)
{
        LIBBPF_OPTS(bpf_uprobe_opts, opts, .retprobe = false);
        uint64_t offset = 0;
        char path[48];
        int err, fd = -1;

        /* What the target has or shows (its files, its /proc entries) fails for it alone:
         * never an error that would switch every target to the fallback (systemic). */
        err = find_loader(h, pid, &fd, &offset, NULL);
        if (err)
                return err == -EBUSY ? err : err < 0 ? -ENOENT : err;
        /* The kernel resolves the path itself: our descriptor, so the file checked. */
        snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
        *out = bpf_program__attach_uprobe_opts(h->uprobe, probe_pid, path, (size_t)offset, &opts);
        err = *out ? 0 : -errno;
        close(fd);
        return err;
}

/* Is the file st already hooked loader-wide? */
static int loader_hooked(const struct load_hook *h, const struct stat *st)
{
        size_t i;

        for (i = 0; i < h->nloaders; i++)
                if (h->loader[i].dev == st->st_dev && h->loader[i].ino == st->st_ino)
                        return 1;
        return 0;
}

/* Hook pid's loader for every process, unless it is hooked already. */
static void hook_loader_of(struct load_hook *h, pid_t pid)
{
        struct bpf_link *link = NULL;
        uint64_t offset;
        struct stat st;
        int fd;

        if (h->nloaders == LOAD_HOOK_MAX_LOADERS)
                return;
        /* the identity first: most processes share a loader already hooked */
        if (find_loader(h, pid, &fd, &offset, &st))
                return;
        close(fd);
        if (loader_hooked(h, &st) || attach_uprobe(h, pid, -1, &link))
                return;
        h->loader[h->nloaders].dev = st.st_dev;
        h->loader[h->nloaders].ino = st.st_ino;
        h->loader[h->nloaders++].link = link;
}

int load_hook_loader_wide(struct load_hook *h)
{
        struct dirent *de;
        DIR *d;
        size_t i;
        int err;

        if (h->kind != LOAD_HOOK_UPROBE)
                return 0;
        err = stall_fall_back(h);
        if (err <= 0)
                return err;
        hook_loader_of(h, getpid()); /* the host's own loader first */
        d = opendir("/proc");
        if (!d)
                return -errno;
        while ((de = readdir(d)) && h->nloaders < LOAD_HOOK_MAX_LOADERS) {
                pid_t pid = proc_id(de->d_name);

                if (pid)
                        hook_loader_of(h, pid);
        }
        closedir(d);
        if (!h->nloaders)
                return -ENOENT;
        for (i = 0; i < h->n; i++)
                bpf_link__destroy(h->v[i].link);
        h->n = 0;
        h->st.active = 0;
        h->st.loaders = h->nloaders;
        h->kind = LOAD_HOOK_UPROBE_LOADER;
        return 0;
}

int load_hook_attach(struct load_hook *h, pid_t pid)
{
        struct bpf_link *link = NULL;
        struct hooked *e;
        int err;

        if (h->kind != LOAD_HOOK_UPROBE)
                return 0;
        load_hook_detach(h, pid); /* an exec: the new image's loader */
        if (h->n == CTXPROF_MAX_TARGETS) {
                h->st.errors++;
                return -ENOSPC;
        }
        err = attach_uprobe(h, pid, pid, &link);
        if (err == 1) {
                h->st.no_loader++;
                return 0;
        }
        if (err == -EBUSY)
                return err; /* the parser helper was busy: not an error of the target's */
        if (err) {
                if (systemic(err) && !fall_back(h, "a uprobe could not be attached", err))
                        return 0;
                h->st.errors++;
                return err;
        }
        e = &h->v[h->n++];
        e->pid = pid;
        e->link = link;
        h->st.attached++;
        h->st.active = h->n;
        return 0;
}

void load_hook_detach(struct load_hook *h, pid_t pid)
{
        struct hooked *e = find_hooked(h, pid);

        if (!e)
                return;
        bpf_link__destroy(e->link);
        *e = h->v[--h->n];
        h->st.active = h->n;
}

/* FDS_PER_TARGET descriptors per target: raise the soft limit to what that needs, if allowed. */
static void fd_room(void)
{
        struct rlimit r;
        rlim_t want;

        if (getrlimit(RLIMIT_NOFILE, &r))
                return;
        want = r.rlim_cur + (rlim_t)FDS_PER_TARGET * CTXPROF_MAX_TARGETS + FD_HEADROOM;
        if (r.rlim_cur == RLIM_INFINITY || r.rlim_cur >= want)
                return;
        r.rlim_cur = r.rlim_max != RLIM_INFINITY && r.rlim_max < want ? r.rlim_max : want;
        setrlimit(RLIMIT_NOFILE, &r);
}

struct load_hook *load_hook_new(struct bpf_program *uprobe, struct bpf_program *sys_exit, int *err)
{
        const char *force = getenv("CTXPROF_TEST_HOOK");
        struct load_hook *h = calloc(1, sizeof(*h));
        struct bpf_link *self = NULL;
        int e;

        *err = -ENOMEM;
        if (!h || !(h->v = calloc(CTXPROF_MAX_TARGETS, sizeof(*h->v)))) {
                free(h);
                return NULL;
        }
        h->uprobe = uprobe;
        h->sys_exit = sys_exit;
        h->kind = LOAD_HOOK_UPROBE;
        fd_room(); /* the pins need it whichever hook runs */
        if (force && !strcmp(force, "sys_exit")) {
                e = fall_back(h, "forced (CTXPROF_TEST_HOOK=sys_exit)", 0);
        } else if (access(UPROBE_PMU_TYPE, R_OK)) {
                e = fall_back(h, "the kernel has no uprobe PMU", 0);
        } else if ((e = stall_fall_back(h)) <= 0) {
                /* sys_exit (e = 0), or the fallback failed */
        } else {
                /* The probe: our own loader, attached and detached (we are no target). */
                e = attach_uprobe(h, getpid(), getpid(), &self);
                if (!e) {
                        bpf_link__destroy(self);
                } else {
                        e = fall_back(h, "uprobe probe failed", e < 0 ? e : -ENOENT);
                }
        }
        if (e) {
                *err = e;
                load_hook_free(h);
                return NULL;
        }
        *err = 0;
        return h;
}

void load_hook_stats(const struct load_hook *h, struct load_hook_stats *out)
{
        *out = h->st;
        out->kind = h->kind;
        out->name = h->kind == LOAD_HOOK_UPROBE          ? "uprobe"
                    : h->kind == LOAD_HOOK_UPROBE_LOADER ? "uprobe-loader"
                                                         : "sys_exit";
        snprintf(out->why, sizeof(out->why), "%s", h->why);
}

void load_hook_free(struct load_hook *h)
{
        size_t i;

        if (!h)
                return;
        for (i = 0; i < h->n; i++)
                bpf_link__destroy(h->v[i].link);
        for (i = 0; i < h->nloaders; i++)
                bpf_link__destroy(h->loader[i].link);
        bpf_link__destroy(h->sys_exit_link);
        free(h->v);
        free(h);
}
