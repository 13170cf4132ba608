/* SPDX-License-Identifier: MIT */
/*
 * jfr_reader.c — metadata-driven JFR reader (see jfr_reader.h). Owns the file image and
 * per-chunk arenas. Must never read outside the image, recurse without a bound, allocate
 * without a cap, or print. Corrupt input is -EBADMSG.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "jfr/jfr_buf.h"
#include "jfr/jfr_dict.h"
#include "jfr/jfr_reader.h"
#include "util/grow.h"

#define MAX_FILE  (1ull << 30)
#define MAX_ARENA (256ull << 20)
#define MAX_DEPTH 24
#define HEADER    68

#define POOL_FIRST_CAP 16 /* constant pool entries at first growth */

enum prim { P_NONE, P_BOOL, P_BYTE, P_SHORT, P_CHAR, P_INT, P_LONG, P_FLOAT, P_DOUBLE, P_STRING };

/* ---- arena: bump allocation in blocks, capped ---- */
struct block {
        struct block *next;
        size_t used, cap;
        max_align_t data[];
};

struct arena {
        struct block *head;
        size_t total;
};

static void *arena_alloc(struct arena *a, size_t n)
{
        n = (n + 15) & ~(size_t)15;
        if (n > MAX_ARENA || a->total + n > MAX_ARENA)
                return NULL;
        if (!a->head || a->head->cap - a->head->used < n) {
                size_t cap = n > (64u << 10) ? n : (64u << 10);
                struct block *b = malloc(sizeof(*b) + cap);
                if (!b)
                        return NULL;
                b->next = a->head;
                b->used = 0;
                b->cap = cap;
                a->head = b;
        }
        void *p = (char *)a->head->data + a->head->used;
        a->head->used += n;
        a->total += n;
        memset(p, 0, n);
        return p;
}

/* Forget all allocations but keep the newest block for reuse (per-event arena). */
static void arena_reset(struct arena *a)
{
        while (a->head && a->head->next) {
                struct block *b = a->head->next;
                a->head->next = b->next;
                free(b);
        }
        if (a->head)
                a->head->used = 0;
        a->total = 0;
}

static void arena_free(struct arena *a)
{
        while (a->head) {
                struct block *b = a->head;
                a->head = b->next;
                free(b);
        }
        a->total = 0;
}

/* ---- bounded cursor ---- */
struct cur {
        const uint8_t *p;
        uint64_t pos, end;
        int err;
};

static uint64_t rd_varint(struct cur *c)
{
        uint64_t v = 0;
        size_t used;
        if (c->err || c->pos >= c->end ||
            jfr_varint_decode(c->p + c->pos, (size_t)(c->end - c->pos), &v, &used)) {
                c->err = 1;
                return 0;
        }
        c->pos += used;
        return v;
}

static uint64_t rd_be(struct cur *c, unsigned n)
{
        uint64_t v = 0;
        if (c->err || c->end - c->pos < n) {
                c->err = 1;
                return 0;
        }
        for (unsigned i = 0; i < n; i++)
                v = v << 8 | c->p[c->pos + i];
        c->pos += n;
        return v;
}

static uint64_t remaining(const struct cur *c)
{
        return c->err ? 0 : c->end - c->pos;
}

/* ---- reader ---- */
struct pool {
        struct jfr_u64map index; /* key -> slot in vals */
        struct jfr_value *vals;
        uint32_t n, cap;
};

struct jfr_reader {
        uint8_t *owned;
        const uint8_t *data;
        uint64_t len;
        uint64_t next_chunk; /* offset of the next chunk header */
        uint64_t trailing;
        int done;
        struct jfr_chunk_info chunk;
        struct arena meta, ev; /* per chunk: types + pools; per event */
        struct jfr_type *types;
        uint32_t ntypes;
        struct jfr_u64map type_index;
        struct pool *pools; /* one per type */
        const struct jfr_type *string_type;
        uint64_t ev_pos, bad_events;
};

int jfr_reader_open_mem(const void *data, size_t len, struct jfr_reader **out)
{
        struct jfr_reader *r = calloc(1, sizeof(*r));
        if (!r)
                return -ENOMEM;
        r->data = data;
        r->len = len;
        *out = r;
        return 0;
}

int jfr_reader_open(const char *path, struct jfr_reader **out)
{
        *out = NULL;
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        struct stat st;
        int err = 0;
        uint8_t *buf = NULL;
        if (fstat(fd, &st))
                err = -errno;
        else if (!S_ISREG(st.st_mode))
                err = -EINVAL;
        else if ((uint64_t)st.st_size > MAX_FILE)
                err = -EFBIG;
        else if (!(buf = malloc(st.st_size ? (size_t)st.st_size : 1)))
                err = -ENOMEM;
        size_t got = 0;
        while (!err && got < (size_t)st.st_size) {
                ssize_t n = pread(fd, buf + got, (size_t)st.st_size - got, (off_t)got);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0) {
                        err = n < 0 ? -errno : -EIO;
                        break;
                }
                got += (size_t)n;
        }
        close(fd);
        if (!err)
                err = jfr_reader_open_mem(buf, got, out);
        if (err) {
                free(buf);
                return err;
        }
        (*out)->owned = buf;
        return 0;
}

static void drop_chunk(struct jfr_reader *r)
{
        if (r->pools)
                for (uint32_t i = 0; i < r->ntypes; i++) {
                        jfr_u64map_free(&r->pools[i].index);
                        free(r->pools[i].vals);
                }
        free(r->pools);
        r->pools = NULL;
        arena_free(&r->meta);
        arena_free(&r->ev);
        jfr_u64map_free(&r->type_index);
        r->types = NULL;
        r->ntypes = 0;
        r->string_type = NULL;
}

void jfr_reader_close(struct jfr_reader *r)
{
        if (!r)
                return;
        drop_chunk(r);
        free(r->owned);
        free(r);
}

const struct jfr_chunk_info *jfr_reader_chunk(const struct jfr_reader *r)
{
        return &r->chunk;
}

uint64_t jfr_reader_trailing_bytes(const struct jfr_reader *r)
{
        return r->trailing;
}

uint64_t jfr_reader_bad_events(const struct jfr_reader *r)
{
        return r->bad_events;
}

static const struct jfr_type *type_by_id(const struct jfr_reader *r, uint64_t id)
{
        uint32_t i;
        return jfr_u64map_get(&r->type_index, id, &i) ? &r->types[i] : NULL;
}

const struct jfr_type *jfr_reader_type(const struct jfr_reader *r, const char *name)
{
        for (uint32_t i = 0; i < r->ntypes; i++)
                if (!strcmp(r->types[i].name, name))
                        return &r->types[i];
        return NULL;
}

/* ---- strings ---- */
static char *put_utf8(char *o, uint32_t cp)
{
        if (cp < 0x80) {
                *o++ = (char)cp;
        } else if (cp < 0x800) {
                *o++ = (char)(0xc0 | cp >> 6);
                *o++ = (char)(0x80 | (cp & 0x3f));
        } else {
                *o++ = (char)(0xe0 | cp >> 12);
                *o++ = (char)(0x80 | ((cp >> 6) & 0x3f));
                *o++ = (char)(0x80 | (cp & 0x3f));
        }
        return o;
}

/* Decodes a string field. Sets *out (NULL for null), or for tag 2 *ref = key (ret 2).
 * Returns 0/2, or -1 on corrupt input. */
static int rd_string(struct cur *c, struct arena *a, const char **out, uint64_t *ref)
{
        uint64_t tag = rd_varint(c), n;
        char *s, *o;
        *out = NULL;
        switch (c->err ? 99 : tag) {
        case 0:
                return 0;
        case 1:
                *out = "";
                return 0;
        case 2:
                *ref = rd_varint(c);
                return c->err ? -1 : 2;
        case 3:
        case 5:
                n = rd_varint(c);
                if (c->err || n > remaining(c) || !(s = arena_alloc(a, (size_t)n * 2 + 1)))
                        return -1;
                o = s;
                for (uint64_t i = 0; i < n; i++) {
                        uint8_t b = c->p[c->pos + i];
                        o = tag == 3 ? (*o = (char)b, o + 1) : put_utf8(o, b);
                }
                *o = 0;
                c->pos += n;
                *out = s;
                return 0;
        case 4:
                n = rd_varint(c);
                if (c->err || n > remaining(c) || !(s = arena_alloc(a, (size_t)n * 3 + 1)))
                        return -1;
                o = s;
                for (uint64_t i = 0; i < n && !c->err; i++)
                        o = put_utf8(o, (uint32_t)(rd_varint(c) & 0xffff));
                *o = 0;
                *out = s;
                return c->err ? -1 : 0;
        default:
                c->err = 1;
                return -1;
        }
}

/* ---- metadata ---- */
struct elem {
        const char *name;
        const char **attr; /* key, value pairs */
        uint32_t nattr, nchild;
        struct elem *child;
};

static const char *attr(const struct elem *e, const char *k)
{
        for (uint32_t i = 0; i < e->nattr; i++)
                if (!strcmp(e->attr[2 * i], k))
                        return e->attr[2 * i + 1];
        return NULL;
}

static int parse_elem(struct jfr_reader *r, struct cur *c, const char **strs, uint64_t nstr,
                      struct elem *e, int depth)
{
        if (depth > MAX_DEPTH)
                return -EBADMSG;
        uint64_t name = rd_varint(c), na = rd_varint(c);
        if (c->err || name >= nstr || !strs[name] || na > remaining(c) / 2)
                return -EBADMSG;
        e->name = strs[name];
        e->nattr = (uint32_t)na;
        e->attr = arena_alloc(&r->meta, (size_t)na * 2 * sizeof(char *) + 1);
        if (!e->attr)
                return -ENOMEM;
        for (uint64_t i = 0; i < 2 * na; i++) {
                uint64_t s = rd_varint(c);
                if (c->err || s >= nstr || !strs[s])
                        return -EBADMSG;
                e->attr[i] = strs[s];
        }
        uint64_t nc = rd_varint(c);
        if (c->err || nc > remaining(c) / 3)
                return -EBADMSG;
        e->nchild = (uint32_t)nc;
        e->child = arena_alloc(&r->meta, (size_t)nc * sizeof(struct elem) + 1);
        if (!e->child)
                return -ENOMEM;
        for (uint64_t i = 0; i < nc; i++) {
                int err = parse_elem(r, c, strs, nstr, &e->child[i], depth + 1);
                if (err)
                        return err;
        }
        return 0;
}

static int parse_u64(const char *s, uint64_t *v)
{
        char *end;
        if (!s || !*s)
                return -EBADMSG;
        errno = 0;
        *v = strtoull(s, &end, 10);
        return errno || *end ? -EBADMSG : 0;
}

static int prim_of(const char *n)
{
        static const struct {
                const char *name;
                int p;
        } t[] = {{"boolean", P_BOOL}, {"byte", P_BYTE},     {"short", P_SHORT},
                 {"char", P_CHAR},    {"int", P_INT},       {"long", P_LONG},
                 {"float", P_FLOAT},  {"double", P_DOUBLE}, {"java.lang.String", P_STRING}};
        for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
                if (!strcmp(n, t[i].name))
                        return t[i].p;
        return P_NONE;
}

static int build_types(struct jfr_reader *r, const struct elem *root)
{
        const struct elem *md = NULL;
        for (uint32_t i = 0; i < root->nchild; i++)
                if (!strcmp(root->child[i].name, "metadata"))
                        md = &root->child[i];
        if (!md)
                return -EBADMSG;
        r->types = arena_alloc(&r->meta, (size_t)md->nchild * sizeof(struct jfr_type) + 1);
        if (!r->types)
                return -ENOMEM;
        uint64_t label_id = UINT64_MAX;
        for (uint32_t i = 0; i < md->nchild; i++) {
                const struct elem *e = &md->child[i];
                if (strcmp(e->name, "class"))
                        continue;
                struct jfr_type *t = &r->types[r->ntypes];
                t->name = attr(e, "name");
                if (!t->name || parse_u64(attr(e, "id"), &t->id) || type_by_id(r, t->id))
                        return -EBADMSG;
                t->super_type = attr(e, "superType");
                t->simple = attr(e, "simpleType") != NULL;
                t->primitive = prim_of(t->name);
                if (jfr_u64map_put(&r->type_index, t->id, r->ntypes))
                        return -ENOMEM;
                if (!strcmp(t->name, "jdk.jfr.Label"))
                        label_id = t->id;
                if (t->primitive == P_STRING)
                        r->string_type = t;
                r->ntypes++;
        }
        for (uint32_t i = 0, ti = 0; i < md->nchild; i++) {
                const struct elem *e = &md->child[i];
                if (strcmp(e->name, "class"))
                        continue;
                struct jfr_type *t = &r->types[ti++];
                t->fields = arena_alloc(&r->meta, (size_t)e->nchild * sizeof(struct jfr_field) + 1);
                if (!t->fields)
                        return -ENOMEM;
                for (uint32_t j = 0; j < e->nchild; j++) {
                        const struct elem *fe = &e->child[j];
                        if (strcmp(fe->name, "field"))
                                continue;
                        struct jfr_field *f = &t->fields[t->nfields++];
                        uint64_t cls;
                        f->name = attr(fe, "name");
                        if (!f->name || parse_u64(attr(fe, "class"), &cls) ||
                            !(f->type = type_by_id(r, cls)))
                                return -EBADMSG;
                        f->constant_pool = attr(fe, "constantPool") != NULL;
                        const char *dim = attr(fe, "dimension");
                        f->array = dim && strcmp(dim, "0");
                        for (uint32_t k = 0; k < fe->nchild; k++) {
                                uint64_t ac;
                                if (!strcmp(fe->child[k].name, "annotation") &&
                                    !parse_u64(attr(&fe->child[k], "class"), &ac) && ac == label_id)
                                        f->label = attr(&fe->child[k], "value");
                        }
                }
        }
        return 0;
}

static int read_metadata(struct jfr_reader *r, uint64_t start, uint64_t end)
{
        struct cur c = {r->data, start, end, 0};
        uint64_t size = rd_varint(&c);
        if (c.err || size < 2 || size > end - start)
                return -EBADMSG;
        c.end = start + size;
        if (rd_varint(&c) != 0)
                return -EBADMSG;
        rd_varint(&c); /* start */
        rd_varint(&c); /* duration */
        r->chunk.metadata_id = rd_varint(&c);
        uint64_t nstr = rd_varint(&c);
        if (c.err || nstr > remaining(&c))
                return -EBADMSG;
        const char **strs = arena_alloc(&r->meta, (size_t)nstr * sizeof(char *) + 1);
        if (!strs)
                return -ENOMEM;
        for (uint64_t i = 0; i < nstr; i++) {
                uint64_t ref;
                if (rd_string(&c, &r->meta, &strs[i], &ref) != 0)
                        return -EBADMSG;
        }
        struct elem root;
        int err = parse_elem(r, &c, strs, nstr, &root, 0);
        return err ? err : build_types(r, &root);
}

/* ---- values ---- */
static int parse_value(struct jfr_reader *r, struct arena *a, struct cur *c,
                       const struct jfr_type *t, struct jfr_value *v, int depth);

static int parse_one(struct jfr_reader *r, struct arena *a, struct cur *c,
                     const struct jfr_field *f, struct jfr_value *v, int depth)
{
        if (f->constant_pool) {
                v->kind = JFR_V_REF;
                v->type = f->type;
                v->u = rd_varint(c);
                return c->err ? -EBADMSG : 0;
        }
        return parse_value(r, a, c, f->type, v, depth + 1);
}

static int parse_value(struct jfr_reader *r, struct arena *a, struct cur *c,
                       const struct jfr_type *t, struct jfr_value *v, int depth)
{
        if (depth > MAX_DEPTH)
                return -EBADMSG;
        v->type = t;
        switch (t->primitive) {
        case P_BOOL:
        case P_BYTE:
                v->kind = JFR_V_INT;
                v->u = rd_be(c, 1);
                break;
        case P_SHORT:
        case P_CHAR:
        case P_INT:
        case P_LONG:
                v->kind = JFR_V_INT;
                v->u = rd_varint(c);
                break;
        case P_FLOAT: {
                uint32_t b = (uint32_t)rd_be(c, 4);
                float f;
                memcpy(&f, &b, 4);
                v->kind = JFR_V_DOUBLE;
                v->d = f;
                break;
        }
        case P_DOUBLE: {
                uint64_t b = rd_be(c, 8);
                memcpy(&v->d, &b, 8);
                v->kind = JFR_V_DOUBLE;
                break;
        }
        case P_STRING: {
                uint64_t key = 0;
                int k = rd_string(c, a, &v->s, &key);
                if (k < 0)
                        return -EBADMSG;
                v->kind = k == 2 ? JFR_V_REF : v->s ? JFR_V_STRING : JFR_V_NULL;
                if (k == 2)
                        v->u = key;
                break;
        }
        default:
                v->kind = JFR_V_OBJECT;
                v->n = t->nfields;
                v->items = arena_alloc(a, (size_t)t->nfields * sizeof(struct jfr_value) + 1);
                if (!v->items)
                        return -ENOMEM;
                for (uint32_t i = 0; i < t->nfields; i++) {
                        const struct jfr_field *f = &t->fields[i];
                        struct jfr_value *fv = &v->items[i];
                        if (!f->array) {
                                int err = parse_one(r, a, c, f, fv, depth);
                                if (err)
                                        return err;
                                continue;
                        }
                        uint64_t n = rd_varint(c);
                        if (c->err || n > remaining(c) || n > (1u << 24))
                                return -EBADMSG;
                        fv->kind = JFR_V_ARRAY;
                        fv->type = f->type;
                        fv->n = (uint32_t)n;
                        fv->items = arena_alloc(a, (size_t)n * sizeof(struct jfr_value) + 1);
                        if (!fv->items)
                                return -ENOMEM;
                        for (uint64_t j = 0; j < n; j++) {
                                int err = parse_one(r, a, c, f, &fv->items[j], depth);
                                if (err)
                                        return err;
                        }
                }
        }
        return c->err ? -EBADMSG : 0;
}

static int read_checkpoint(struct jfr_reader *r, uint64_t start, uint64_t end)
{
        struct cur c = {r->data, start, end, 0};
        uint64_t size = rd_varint(&c);
        if (c.err || size < 2 || size > end - start)
                return -EBADMSG;
        c.end = start + size;
        if (rd_varint(&c) != 1)
                return -EBADMSG;
        rd_varint(&c);
        rd_varint(&c);
        int64_t delta = (int64_t)rd_varint(&c);
        rd_be(&c, 1); /* checkpoint type */
        uint64_t npools = rd_varint(&c);
        if (c.err || npools > remaining(&c))
                return -EBADMSG;
        for (uint64_t i = 0; i < npools; i++) {
                uint64_t tid = rd_varint(&c), count = rd_varint(&c);
                const struct jfr_type *t = type_by_id(r, tid);
                if (c.err || !t || count > remaining(&c))
                        return -EBADMSG;
                struct pool *p = &r->pools[t - r->types];
                for (uint64_t j = 0; j < count; j++) {
                        uint64_t key = rd_varint(&c);
                        struct jfr_value v;
                        if (key > r->chunk.max_pool_key)
                                r->chunk.max_pool_key = key;
                        memset(&v, 0, sizeof(v));
                        int err = parse_value(r, &r->meta, &c, t, &v, 0);
                        if (err)
                                return err;
                        uint32_t slot;
                        if (jfr_u64map_get(&p->index, key, &slot))
                                continue; /* first definition wins */
                        err = grow_array_u32((void **)&p->vals, &p->cap, sizeof(*p->vals),
                                             (size_t)p->n + 1, POOL_FIRST_CAP);
                        if (err)
                                return err;
                        /* pool values live in a growing array: store by copy */
                        p->vals[p->n] = v;
                        if (jfr_u64map_put(&p->index, key, p->n))
                                return -ENOMEM;
                        p->n++;
                }
        }
        if (c.err || c.pos != c.end)
                return -EBADMSG;
        return delta < 0 ? (-delta > (int64_t)start ? -EBADMSG : 1) : 0;
}

int jfr_reader_next_chunk(struct jfr_reader *r)
{
        if (r->done)
                return 0;
        drop_chunk(r);
        uint64_t off = r->next_chunk;
        if (off == r->len) {
                r->done = 1;
                return 0;
        }
        r->done = 1; /* until this chunk proves complete */
        r->trailing = r->len - off;
        struct cur c = {r->data, off, r->len, 0};
        if (r->len - off < HEADER || memcmp(r->data + off, "FLR\0", 4))
                return -EBADMSG;
        c.pos += 4;
        struct jfr_chunk_info *ci = &r->chunk;
        memset(ci, 0, sizeof(*ci));
        ci->offset = off;
        ci->major = (uint16_t)rd_be(&c, 2);
        ci->minor = (uint16_t)rd_be(&c, 2);
        ci->size = rd_be(&c, 8);
        uint64_t cp = rd_be(&c, 8), md = rd_be(&c, 8);
        ci->start_nanos = rd_be(&c, 8);
        ci->duration_nanos = rd_be(&c, 8);
        ci->start_ticks = rd_be(&c, 8);
        ci->ticks_per_second = rd_be(&c, 8);
        uint8_t state = (uint8_t)rd_be(&c, 1);
        if ((ci->major != 1 && ci->major != 2) || ci->size < HEADER || ci->size > r->len - off ||
            state != 0 || md < HEADER || md >= ci->size ||
            (cp && (cp < HEADER || cp >= ci->size)) || !ci->ticks_per_second)
                return -EBADMSG;
        uint64_t end = off + ci->size;
        int err = read_metadata(r, off + md, end);
        if (err)
                return err == -ENOMEM ? err : -EBADMSG;
        r->pools = calloc(r->ntypes ? r->ntypes : 1, sizeof(struct pool));
        if (!r->pools)
                return -ENOMEM;
        /* walk the checkpoint chain back from the last one; offsets strictly decrease */
        for (uint64_t pos = cp ? off + cp : 0, hops = 0; pos; hops++) {
                uint64_t before = pos;
                struct cur h = {r->data, pos, end, 0};
                rd_varint(&h);
                rd_varint(&h);
                rd_varint(&h);
                rd_varint(&h);
                int64_t delta = (int64_t)rd_varint(&h);
                if (h.err || hops > 100000)
                        return -EBADMSG;
                err = read_checkpoint(r, pos, end);
                if (err < 0)
                        return err == -ENOMEM ? err : -EBADMSG;
                if (!err)
                        break;
                pos = (uint64_t)((int64_t)pos + delta);
                if (pos >= before || pos < off + HEADER)
                        return -EBADMSG;
        }
        r->ev_pos = off + HEADER;
        r->next_chunk = end;
        r->trailing = r->len - end;
        r->done = 0;
        return 1;
}

int jfr_reader_next_event(struct jfr_reader *r, struct jfr_event *ev)
{
        uint64_t end = r->chunk.offset + r->chunk.size;
        if (!r->types)
                return 0;
        while (r->ev_pos < end) {
                struct cur c = {r->data, r->ev_pos, end, 0};
                uint64_t size = rd_varint(&c);
                if (c.err || size < 2 || size > end - r->ev_pos) {
                        r->ev_pos = end;
                        return -EBADMSG;
                }
                uint64_t at = r->ev_pos;
                c.end = at + size;
                r->ev_pos += size;
                uint64_t tid = rd_varint(&c);
                const struct jfr_type *t = type_by_id(r, tid);
                if (c.err || tid < 2 || !t || !t->super_type ||
                    strcmp(t->super_type, "jdk.jfr.Event"))
                        continue;
                arena_reset(&r->ev);
                struct jfr_value *v = arena_alloc(&r->ev, sizeof(*v));
                if (!v)
                        return -ENOMEM;
                if (parse_value(r, &r->ev, &c, t, v, 0) || v->kind != JFR_V_OBJECT) {
                        r->bad_events++;
                        continue;
                }
                ev->type = t;
                ev->value = v;
                ev->offset = at;
                ev->start_ticks = v->n && v->items[0].kind == JFR_V_INT ? v->items[0].u : 0;
                return 1;
        }
        return 0;
}

const struct jfr_value *jfr_value_resolve(const struct jfr_reader *r, const struct jfr_value *v)
{
        for (int hops = 0; v && hops < 16; hops++) {
                if (v->kind == JFR_V_REF) {
                        const struct jfr_type *t = v->type;
                        uint32_t slot;
                        if (!t || !r->pools || t < r->types || t >= r->types + r->ntypes)
                                return NULL;
                        const struct pool *p = &r->pools[t - r->types];
                        if (!jfr_u64map_get(&p->index, v->u, &slot))
                                return NULL;
                        v = &p->vals[slot];
                } else if (v->kind == JFR_V_OBJECT && v->type && v->type->simple && v->n == 1) {
                        v = &v->items[0];
                } else {
                        return v->kind == JFR_V_NULL ? NULL : v;
                }
        }
        return NULL;
}

const struct jfr_value *jfr_value_field(const struct jfr_reader *r, const struct jfr_value *obj,
                                        const char *name)
{
        if (obj && obj->kind == JFR_V_REF)
                obj = jfr_value_resolve(r, obj);
        if (!obj || obj->kind != JFR_V_OBJECT || !obj->type)
                return NULL;
        for (uint32_t i = 0; i < obj->n && i < obj->type->nfields; i++)
                if (!strcmp(obj->type->fields[i].name, name))
                        return jfr_value_resolve(r, &obj->items[i]);
        return NULL;
}

const char *jfr_value_str(const struct jfr_reader *r, const struct jfr_value *v)
{
        v = jfr_value_resolve(r, v);
        return v && v->kind == JFR_V_STRING ? v->s : NULL;
}

int jfr_value_u64(const struct jfr_reader *r, const struct jfr_value *v, uint64_t *out)
{
        v = jfr_value_resolve(r, v);
        if (!v || v->kind != JFR_V_INT)
                return -EINVAL;
        *out = v->u;
        return 0;
}
