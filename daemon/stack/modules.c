/* SPDX-License-Identifier: MIT */
/*
 * modules.c — the registry of code files (see modules.h). Owns the module table, its lookup
 * hash, the references proc_maps tables hold and the descriptors it keeps so files stay
 * readable after their process exits. Must never print, never open a file but through
 * util/target_open.h, never retire an id before modules_reap says the writers are past it.
 */
#include "stack/modules.h"
#include "stack/frame.h"
#include "stack/maps_budget.h"
#include "stack/sigbus_guard.h"
#include "util/clock.h"
#include "util/grow.h"
#include "util/hash.h"
#include "util/target_open.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define NBUCKETS 4096u

#define BYID_FIRST_CAP 64 /* modules at first growth */

struct module_entry {
        struct module_entry *next; /* hash chain */
        char *key;                 /* "b:<hex>" or "f:<dev>:<ino>:<path>" */
        uint32_t hash;
        char *path;
        char build_id_hex[2 * MODULES_BUILD_ID_MAX + 1];
        unsigned char build_id[MODULES_BUILD_ID_MAX];
        size_t build_id_len;
        dev_t dev;
        ino_t ino;
        int fd; /* -1 if none kept */
        uint32_t id;
        /* the latest process seen mapping it (reopened through it when no fd is kept) */
        pid_t mapper;
        uint64_t map_start, map_end;
        uint64_t serial;  /* unique over the registry's life: tells a reused id apart */
        uint32_t refs;    /* proc_maps table entries that point at it */
        uint64_t dead_ns; /* CLOCK_MONOTONIC when refs fell to 0; 0 while referenced */
        /* the file fd holds, as fstat saw it when kept (what by_file indexes it by) */
        struct file_id {
                dev_t dev;
                ino_t ino;
                off_t size;
                int64_t mtime_ns, ctime_ns;
        } fid;
        struct module_entry *file_next; /* by_file chain; in it while fd is kept */
};
_Static_assert(sizeof(struct file_id) == 40, "file_id is compared with memcmp: no padding");

struct modules {
        pthread_mutex_t lock;
        struct module_entry *buckets[NBUCKETS];
        /* entries with a kept fd by that file's device and inode: a process mapping a file
         * the registry holds open is given its module without opening or parsing the file */
        struct module_entry *by_file[NBUCKETS];
        struct module_entry **byid; /* index = id - CTXPROF_MODULE_FIRST; NULL = retired */
        size_t n, cap;              /* ids minted (byid's length), its capacity */
        uint32_t *free_ids;         /* retired ids, reused first */
        size_t nfree, free_cap;
        unsigned nfds;
        uint64_t generation; /* bumped by every reap that retired an id */
        uint64_t serials;    /* serials given */
        struct modules_stats st;
        struct target_stats topen;      /* files refused to the registry's callers */
        struct maps_budget maps_budget; /* its callers' /proc/PID/maps reads (proc_maps.c) */
};

struct modules *modules_new(void)
{
        if (sigbus_guard_install() < 0)
                return NULL;
        struct modules *m = calloc(1, sizeof(*m));
        if (!m)
                return NULL;
        if (pthread_mutex_init(&m->lock, NULL)) {
                free(m);
                return NULL;
        }
        if (maps_budget_init(&m->maps_budget)) {
                pthread_mutex_destroy(&m->lock);
                free(m);
                return NULL;
        }
        return m;
}

static void entry_free(struct module_entry *e)
{
        if (!e)
                return;
        if (e->fd >= 0)
                close(e->fd);
        free(e->key);
        free(e->path);
        free(e);
}

void modules_free(struct modules *m)
{
        if (!m)
                return;
        for (size_t i = 0; i < m->n; i++)
                entry_free(m->byid[i]);
        free(m->byid);
        free(m->free_ids);
        maps_budget_destroy(&m->maps_budget);
        pthread_mutex_destroy(&m->lock);
        free(m);
}

static struct module_entry *entry_get(struct modules *m, uint32_t id)
{
        if (id < CTXPROF_MODULE_FIRST || id - CTXPROF_MODULE_FIRST >= m->n)
                return NULL;
        return m->byid[id - CTXPROF_MODULE_FIRST]; /* NULL once retired */
}

int modules_info(struct modules *m, uint32_t id, struct module_info *out)
{
        if (!m || !out)
                return -EINVAL;
        pthread_mutex_lock(&m->lock);
        struct module_entry *e = entry_get(m, id);
        if (e) {
                out->path = e->path;
                out->build_id_hex = e->build_id_hex;
        }
        pthread_mutex_unlock(&m->lock);
        return e ? 0 : -ENOENT;
}

/* The lookup key: "b:<build id>", else the file's identity. While the registry holds a
 * descriptor of the file its inode cannot be freed, so dev:inode alone names it (a renamed
 * file stays one module: "p:"); without one, an inode number may be reused by another file,
 * so the path is part of the key ("f:"). */
static char *make_key(const struct module_key *k, const char *hex, int pinned)
{
        char *key = NULL;
        int r;
        if (k->build_id_len)
                r = asprintf(&key, "b:%s", hex);
        else if (pinned)
                r = asprintf(&key, "p:%llx:%llu", (unsigned long long)k->dev,
                             (unsigned long long)k->ino);
        else
                r = asprintf(&key, "f:%llx:%llu:%s", (unsigned long long)k->dev,
                             (unsigned long long)k->ino, k->path);
        return r < 0 ? NULL : key;
}

static struct module_entry *lookup(struct modules *m, const char *key, uint32_t h)
{
        for (struct module_entry *e = m->buckets[h % NBUCKETS]; e; e = e->next)
                if (e->hash == h && !strcmp(e->key, key))
                        return e;
        return NULL;
}

/* One more reference on e (a dead entry comes back to life). */
static void entry_ref(struct modules *m, struct module_entry *e)
{
        if (!e->refs++ && e->dead_ns) {
                e->dead_ns = 0;
                m->st.dead--;
        }
}

/* A free id: a retired one first. 0 when MODULES_MAX entries live. */
static uint32_t id_take(struct modules *m)
{
        if (m->st.live >= MODULES_MAX)
                return 0;
        if (m->nfree)
                return m->free_ids[--m->nfree];
        if (grow_array((void **)&m->byid, &m->cap, sizeof(*m->byid), m->n + 1, BYID_FIRST_CAP))
                return 0;
        m->byid[m->n] = NULL;
        return (uint32_t)m->n++ + CTXPROF_MODULE_FIRST;
}

/* The mapping k was seen in: modules_open reopens the file through it (util/target_open.h). */
static void remember_mapper(struct module_entry *e, const struct module_key *k)
{
        if (k->pid <= 0)
                return;
        e->mapper = k->pid;
        e->map_start = k->map_start;
        e->map_end = k->map_end;
        e->dev = k->dev;
        e->ino = k->ino;
}

/* The identity of the file open at fd; -errno when fstat fails. */
static int file_id_of(int fd, struct file_id *id)
{
        struct stat st;

        if (fstat(fd, &st))
                return -errno;
        *id = (struct file_id){.dev = st.st_dev,
                               .ino = st.st_ino,
                               .size = st.st_size,
                               .mtime_ns = timespec_ns(&st.st_mtim),
                               .ctime_ns = timespec_ns(&st.st_ctim)};
        return 0;
}

static uint32_t file_hash(dev_t dev, ino_t ino)
{
        return (uint32_t)(hash_mix64((uint64_t)ino ^ (uint64_t)dev << 32) >> 32);
}

/* Keep fd (the caller's, duplicated) as e's, and index e by its file. */
static void keep_fd(struct modules *m, struct module_entry *e, int fd)
{
        if (m->nfds >= MODULES_MAX_FDS)
                return;
        e->fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
        if (e->fd < 0)
                return;
        m->nfds++;
        if (file_id_of(e->fd, &e->fid))
                return;
        uint32_t h = file_hash(e->fid.dev, e->fid.ino) % NBUCKETS;
        e->file_next = m->by_file[h];
        m->by_file[h] = e;
}

/* Take e out of the by_file index (if it is in it). */
static void unindex_file(struct modules *m, struct module_entry *e)
{
        if (e->fd < 0)
                return;
        for (struct module_entry **pp = &m->by_file[file_hash(e->fid.dev, e->fid.ino) % NBUCKETS];
             *pp; pp = &(*pp)->file_next)
                if (*pp == e) {
                        *pp = e->file_next;
                        return;
                }
}

int modules_ref_file(struct modules *m, const struct module_key *k, uint32_t *id)
{
        struct file_id now;
        int found = 0;

        if (!m || !k || !id)
                return 0;
        pthread_mutex_lock(&m->lock);
        for (struct module_entry *e = m->by_file[file_hash(k->dev, k->ino) % NBUCKETS]; e;
             e = e->file_next) {
                if (e->fid.dev != k->dev || e->fid.ino != k->ino)
                        continue;
                /* the kept fd pins the inode, so (dev, inode) is still this file; a file
                 * rewritten in place since (same inode, new contents) is read again */
                if (file_id_of(e->fd, &now) || memcmp(&now, &e->fid, sizeof(now)))
                        continue;
                remember_mapper(e, k);
                entry_ref(m, e);
                *id = e->id;
                m->st.reused++;
                found = 1;
                break;
        }
        pthread_mutex_unlock(&m->lock);
        return found;
}

int modules_intern(struct modules *m, const struct module_key *k, int fd, uint32_t *id)
{
        if (!m || !k || !k->path || !id || k->build_id_len > MODULES_BUILD_ID_MAX ||
            (k->build_id_len && !k->build_id))
                return -EINVAL;
        char hex[2 * MODULES_BUILD_ID_MAX + 1];
        for (size_t i = 0; i < k->build_id_len; i++)
                snprintf(hex + 2 * i, 3, "%02x", k->build_id[i]);
        hex[2 * k->build_id_len] = 0;
        char *pkey = make_key(k, hex, 1), *fkey = make_key(k, hex, 0);
        if (!pkey || !fkey) {
                free(pkey);
                free(fkey);
                return -ENOMEM;
        }
        uint32_t ph = (uint32_t)fnv1a64(pkey, strlen(pkey));
        uint32_t fh = (uint32_t)fnv1a64(fkey, strlen(fkey));
        int ret = 0;

        pthread_mutex_lock(&m->lock);
        struct module_entry *e = lookup(m, pkey, ph);
        if (!e)
                e = lookup(m, fkey, fh);
        if (e) {
                /* Known file: adopt a descriptor if we have none yet (first sight may have
                 * been without access). */
                if (e->fd < 0 && fd >= 0)
                        keep_fd(m, e, fd);
                remember_mapper(e, k);
                entry_ref(m, e);
                *id = e->id;
                goto out;
        }
        e = calloc(1, sizeof(*e));
        char *path = strdup(k->path);
        uint32_t nid = e && path ? id_take(m) : 0;
        if (!nid) {
                free(e);
                free(path);
                ret = -ENOMEM;
                if (m->st.live >= MODULES_MAX) {
                        m->st.full++;
                        ret = -ENOSPC;
                }
                goto out;
        }
        e->fd = -1;
        if (fd >= 0)
                keep_fd(m, e, fd);
        int pinned = e->fd >= 0 && !k->build_id_len;
        e->key = pinned ? pkey : fkey;
        e->hash = pinned ? ph : fh;
        if (pinned)
                pkey = NULL;
        else
                fkey = NULL;
        e->path = path;
        if (k->build_id_len)
                memcpy(e->build_id, k->build_id, k->build_id_len);
        e->build_id_len = k->build_id_len;
        memcpy(e->build_id_hex, hex, sizeof(hex));
        e->dev = k->dev;
        e->ino = k->ino;
        remember_mapper(e, k);
        e->refs = 1;
        e->serial = ++m->serials;
        e->next = m->buckets[e->hash % NBUCKETS];
        m->buckets[e->hash % NBUCKETS] = e;
        e->id = nid;
        m->byid[nid - CTXPROF_MODULE_FIRST] = e;
        m->st.live++;
        *id = nid;
out:
        pthread_mutex_unlock(&m->lock);
        free(pkey);
        free(fkey);
        return ret;
}

void modules_ref(struct modules *m, uint32_t id)
{
        if (!m)
                return;
        pthread_mutex_lock(&m->lock);
        struct module_entry *e = entry_get(m, id);
        if (e)
                entry_ref(m, e);
        pthread_mutex_unlock(&m->lock);
}

void modules_unref(struct modules *m, uint32_t id)
{
        if (!m)
                return;
        pthread_mutex_lock(&m->lock);
        struct module_entry *e = entry_get(m, id);
        if (e && e->refs && !--e->refs) {
                e->dead_ns = mono_ns();
                m->st.dead++;
        }
        pthread_mutex_unlock(&m->lock);
}

/* Take e out of the lookup hash. */
static void unhash(struct modules *m, struct module_entry *e)
{
        for (struct module_entry **pp = &m->buckets[e->hash % NBUCKETS]; *pp; pp = &(*pp)->next)
                if (*pp == e) {
                        *pp = e->next;
                        return;
                }
}

unsigned modules_reap(struct modules *m, uint64_t before_ns)
{
        unsigned n = 0;
        if (!m)
                return 0;
        pthread_mutex_lock(&m->lock);
        for (size_t i = 0; i < m->n && m->st.dead; i++) {
                struct module_entry *e = m->byid[i];
                if (!e || e->refs || !e->dead_ns || e->dead_ns >= before_ns)
                        continue;
                /* the free list holds at most every id minted: room was made below */
                if (grow_array((void **)&m->free_ids, &m->free_cap, sizeof(*m->free_ids),
                               m->nfree + 1, BYID_FIRST_CAP))
                        break;
                unhash(m, e);
                unindex_file(m, e);
                if (e->fd >= 0)
                        m->nfds--;
                m->byid[i] = NULL;
                m->free_ids[m->nfree++] = e->id;
                entry_free(e);
                m->st.dead--;
                m->st.live--;
                m->st.retired++;
                n++;
        }
        if (n)
                m->generation++;
        pthread_mutex_unlock(&m->lock);
        return n;
}

uint64_t modules_serial(struct modules *m, uint32_t id)
{
        if (!m)
                return 0;
        pthread_mutex_lock(&m->lock);
        struct module_entry *e = entry_get(m, id);
        uint64_t serial = e ? e->serial : 0;
        pthread_mutex_unlock(&m->lock);
        return serial;
}

uint64_t modules_generation(struct modules *m)
{
        if (!m)
                return 0;
        pthread_mutex_lock(&m->lock);
        uint64_t g = m->generation;
        pthread_mutex_unlock(&m->lock);
        return g;
}

void modules_count_target_full(struct modules *m)
{
        if (!m)
                return;
        pthread_mutex_lock(&m->lock);
        m->st.target_full++;
        pthread_mutex_unlock(&m->lock);
}

void modules_get_stats(struct modules *m, struct modules_stats *out)
{
        if (!m || !out)
                return;
        pthread_mutex_lock(&m->lock);
        *out = m->st;
        pthread_mutex_unlock(&m->lock);
}

int modules_read_build_id(int fd, unsigned char *buf, size_t bufsz)
{
        if (fd < 0 || !buf)
                return -EINVAL;
        if (elf_version(EV_CURRENT) == EV_NONE)
                return -ENOTSUP;
        Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
        if (!elf)
                return -EINVAL;
        int ret = 0;
        if (elf_kind(elf) != ELF_K_ELF) {
                ret = -EINVAL;
                goto out;
        }
        size_t nphdr;
        if (elf_getphdrnum(elf, &nphdr) != 0) {
                ret = -EINVAL;
                goto out;
        }
        /* Program headers first (what the loader maps), sections as a fallback. */
        for (int pass = 0; pass < 2 && ret == 0; pass++) {
                size_t n = pass == 0 ? nphdr : 0;
                Elf_Scn *scn = NULL;
                for (size_t i = 0;; i++) {
                        Elf_Data *data = NULL;
                        if (pass == 0) {
                                if (i >= n)
                                        break;
                                GElf_Phdr ph;
                                if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_NOTE)
                                        continue;
                                data = elf_getdata_rawchunk(elf, (int64_t)ph.p_offset, ph.p_filesz,
                                                            ph.p_align == 8 ? ELF_T_NHDR8
                                                                            : ELF_T_NHDR);
                        } else {
                                scn = elf_nextscn(elf, scn);
                                if (!scn)
                                        break;
                                GElf_Shdr sh;
                                if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
                                        continue;
                                data = elf_getdata(scn, NULL);
                        }
                        if (!data)
                                continue;
                        size_t off = 0, name_off, desc_off;
                        GElf_Nhdr nh;
                        while ((off = gelf_getnote(data, off, &nh, &name_off, &desc_off)) > 0) {
                                if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
                                    !memcmp((char *)data->d_buf + name_off, "GNU", 4) &&
                                    nh.n_descsz > 0) {
                                        if (nh.n_descsz > bufsz ||
                                            nh.n_descsz > MODULES_BUILD_ID_MAX) {
                                                ret = -EOVERFLOW;
                                                goto out;
                                        }
                                        memcpy(buf, (char *)data->d_buf + desc_off, nh.n_descsz);
                                        ret = (int)nh.n_descsz;
                                        goto out;
                                }
                        }
                }
        }
out:
        elf_end(elf);
        return ret;
}

int modules_open(struct modules *m, uint32_t id)
{
        if (!m)
                return -EINVAL;
        unsigned char bid[MODULES_BUILD_ID_MAX];
        size_t bid_len = 0;
        struct target_file tf = {0};
        pid_t mapper = 0;
        int fd = -1;

        pthread_mutex_lock(&m->lock);
        struct module_entry *e = entry_get(m, id);
        if (e) {
                if (e->fd >= 0)
                        fd = fcntl(e->fd, F_DUPFD_CLOEXEC, 0);
                if (e->build_id_len)
                        memcpy(bid, e->build_id, e->build_id_len);
                bid_len = e->build_id_len;
                mapper = e->mapper;
                tf = (struct target_file){
                    .start = e->map_start, .end = e->map_end, .dev = e->dev, .ino = e->ino};
        }
        pthread_mutex_unlock(&m->lock);
        if (!e)
                return -ENOENT;
        if (fd >= 0)
                return fd;
        /* No kept descriptor: only the mapping it was last seen in, never a path. */
        if (mapper <= 0)
                return -ENOENT;
        fd = target_open(mapper, &tf, &m->topen);
        if (fd < 0)
                return fd == -ESTALE ? -ESTALE : -ENOENT;
        if (bid_len) {
                unsigned char now[MODULES_BUILD_ID_MAX];
                int r = modules_read_build_id(fd, now, sizeof(now));
                if (r != (int)bid_len || memcmp(now, bid, bid_len)) {
                        close(fd);
                        return -ESTALE;
                }
        }
        return fd;
}

struct target_stats *modules_target_stats(struct modules *m)
{
        return m ? &m->topen : NULL;
}

struct maps_budget *modules_maps_budget(struct modules *m)
{
        return &m->maps_budget;
}
