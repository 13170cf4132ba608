/* SPDX-License-Identifier: MIT */
/*
 * go_pclntab.c — the .gopclntab reader (see go_pclntab.h): its header (runtime.pcHeader), the
 * function table (runtime.functab: entry offset, _func offset; 32-bit each since Go 1.18) and
 * the first two fields of runtime._func (entryOff, nameOff), which every layout since 1.18
 * shares. Owns nothing; must never read outside the section or trust an order the table
 * claims (a binary search over unsorted entries only finds a wrong name of the same table).
 */
#include "stack/go_pclntab.h"

#include <errno.h>
#include <string.h>

#define GO_MAGIC_118 0xfffffff0u /* Go 1.18, 1.19 */
#define GO_MAGIC_120 0xfffffff1u /* Go 1.20 and later */
/* pcHeader: magic u32, pad1 u8, pad2 u8, minLC u8, ptrSize u8, then 8 words: nfunc, nfiles,
 * textStart, funcnameOffset, cuOffset, filetabOffset, pctabOffset, pclnOffset */
#define HDR_WORDS_AT   8
#define HDR_NFUNC      0
#define HDR_TEXT_START 2
#define HDR_FUNCNAMES  3
#define HDR_PCTAB      6
#define HDR_PCLN       7
#define HDR_NWORDS     8
#define FUNCTAB_ENTRY  8          /* entryoff u32, funcoff u32 */
#define FUNC_NAME_OFF  4          /* _func.nameOff (int32), after entryOff (uint32) */
#define GO_NFUNC_MAX   (1u << 24) /* 16M functions: far above any real binary */

/* Go 1.18-1.19 (GO_MAGIC_118): runtime._func {entryOff u32, nameOff i32, args, deferreturn,
 * pcsp, pcfile, pcln, npcdata u32 @28, cuOffset, funcID u8, flag u8, _ u8, nfuncdata u8 @39},
 * then pcdata [npcdata]u32, funcdata [nfuncdata]u32 (offsets into go:func.*, ~0 = none);
 * runtime.inlinedCall {parent i16, funcID u8, _ u8, file i32, line i32, func_ i32 @12
 * (nameOff), parentPc i32 @16}; runtime.moduledata: pcHeader @0, text @176, gofunc @304. */
#define FUNC118_NPCDATA   28
#define FUNC118_NFUNCDATA 39
#define FUNC118_PCDATA    40
#define PCDATA_INLTREE    2
#define FUNCDATA_INLTREE  3
#define FUNCDATA_NONE     0xffffffffu
#define INL118_SIZE       20
#define INL118_NAMEOFF    12
#define INL118_PARENTPC   16
#define MODDATA118_TEXT   176
#define MODDATA118_GOFUNC 304
#define PCVALUE_STEPS_MAX (1u << 20) /* pc-value pairs decoded for one lookup at most */

static uint32_t rd32(const uint8_t *p)
{
        uint32_t v;

        memcpy(&v, p, sizeof(v));
        return v;
}

static uint64_t rd_word(const uint8_t *p, unsigned ptr_size)
{
        uint64_t v = 0;

        memcpy(&v, p, ptr_size); /* little-endian: the low bytes first */
        return v;
}

int go_pclntab_init(struct go_pclntab *t, const void *data, size_t len, uint64_t text_addr)
{
        const uint8_t *p = data;
        uint64_t w[HDR_NWORDS], nfunc;
        unsigned ps, i;

        memset(t, 0, sizeof(*t));
        if (!p || len < HDR_WORDS_AT)
                return -ENOTSUP;
        if ((rd32(p) != GO_MAGIC_118 && rd32(p) != GO_MAGIC_120) || p[4] || p[5])
                return -ENOTSUP;
        ps = p[7];
        if (ps != 4 && ps != 8)
                return -ENOTSUP;
        if (len < HDR_WORDS_AT + (size_t)HDR_NWORDS * ps)
                return -EINVAL;
        for (i = 0; i < HDR_NWORDS; i++)
                w[i] = rd_word(p + HDR_WORDS_AT + (size_t)i * ps, ps);
        nfunc = w[HDR_NFUNC];
        if (!nfunc || nfunc > GO_NFUNC_MAX || w[HDR_FUNCNAMES] >= len || w[HDR_PCLN] >= len ||
            (len - w[HDR_PCLN]) / FUNCTAB_ENTRY < nfunc + 1)
                return -EINVAL;
        t->p = p;
        t->len = len;
        t->nfunc = (uint32_t)nfunc;
        t->text_start = w[HDR_TEXT_START] ? w[HDR_TEXT_START] : text_addr;
        t->funcnames = w[HDR_FUNCNAMES];
        t->functab = w[HDR_PCLN];
        t->magic = rd32(p);
        t->pctab = w[HDR_PCTAB] < len ? w[HDR_PCTAB] : 0;
        return 0;
}

/* Entry offset of function i (i <= nfunc: the last one is the end of the code). */
static uint32_t entry_off(const struct go_pclntab *t, uint32_t i)
{
        return rd32(t->p + t->functab + (uint64_t)i * FUNCTAB_ENTRY);
}

/* The index of the function whose code holds pc (relative to text_start), or -1. */
static int64_t func_index(const struct go_pclntab *t, uint64_t pc)
{
        uint32_t lo = 0, hi;

        if (pc < entry_off(t, 0) || pc >= entry_off(t, t->nfunc))
                return -1;
        hi = t->nfunc; /* entry_off(lo) <= pc < entry_off(hi) */
        while (hi - lo > 1) {
                uint32_t mid = lo + (hi - lo) / 2;

                if (entry_off(t, mid) <= pc)
                        lo = mid;
                else
                        hi = mid;
        }
        return lo;
}

/* The offset of function i's _func in the section when need bytes of it are inside, or 0. */
static uint64_t func_at(const struct go_pclntab *t, uint32_t i, uint64_t need)
{
        uint32_t funcoff = rd32(t->p + t->functab + (uint64_t)i * FUNCTAB_ENTRY + 4);
        uint64_t f = t->functab + funcoff;

        return f <= t->len && t->len - f >= need ? f : 0;
}

/* The name at nameOff name_off of the name table, NUL-terminated in the section, or NULL. */
static const char *name_of(const struct go_pclntab *t, int32_t name_off)
{
        uint64_t name;
        const char *s;

        if (name_off < 0)
                return NULL;
        name = t->funcnames + (uint64_t)name_off;
        if (name >= t->len)
                return NULL;
        s = (const char *)t->p + name;
        /* NUL-terminated within the section, and not empty */
        return *s && memchr(s, '\0', t->len - name) ? s : NULL;
}

const char *go_pclntab_name(const struct go_pclntab *t, uint64_t addr)
{
        int32_t name_off;
        int64_t i;
        uint64_t f;

        if (!t->p || addr < t->text_start || addr - t->text_start > UINT32_MAX)
                return NULL;
        i = func_index(t, addr - t->text_start);
        if (i < 0 || !(f = func_at(t, (uint32_t)i, FUNC_NAME_OFF + sizeof(name_off))))
                return NULL;
        memcpy(&name_off, t->p + f + FUNC_NAME_OFF, sizeof(name_off));
        return name_of(t, name_off);
}

int go_pclntab_find_gofunc(const struct go_pclntab *t, uint64_t pclntab_addr, const void *noptrdata,
                           size_t len, uint64_t *gofunc)
{
        const uint8_t *p = noptrdata;

        if (!t->p || t->magic != GO_MAGIC_118 || !p || len < MODDATA118_GOFUNC + 8)
                return -ENOENT;
        for (size_t off = 0; off <= len - (MODDATA118_GOFUNC + 8); off += 8) {
                uint64_t w, text, g;

                memcpy(&w, p + off, 8);
                if (w != pclntab_addr)
                        continue;
                memcpy(&text, p + off + MODDATA118_TEXT, 8);
                memcpy(&g, p + off + MODDATA118_GOFUNC, 8);
                if (text == t->text_start && g) {
                        *gofunc = g;
                        return 0;
                }
        }
        return -ENOENT;
}

static uint32_t uvarint(const uint8_t *p, uint64_t len, uint64_t *at, int *ok)
{
        uint32_t v = 0;

        for (unsigned shift = 0; shift < 35; shift += 7) {
                if (*at >= len) {
                        *ok = 0;
                        return 0;
                }
                uint8_t b = p[(*at)++];
                v |= (uint32_t)(b & 0x7f) << shift;
                if (!(b & 0x80))
                        return v;
        }
        *ok = 0;
        return 0;
}

/* The value of the pc-value table at offset off of pctab for pc (function-relative: the
 * function starts at entry), as runtime.pcvalue: -1 before the first pair, and when the
 * table is malformed. */
static int32_t pcvalue(const struct go_pclntab *t, uint32_t off, uint64_t entry, uint64_t pc)
{
        uint64_t at = t->pctab + off, cur = entry;
        int32_t val = -1;
        int ok = 1;

        if (!t->pctab || at >= t->len)
                return -1;
        for (unsigned n = 0; n < PCVALUE_STEPS_MAX; n++) {
                uint32_t uv = uvarint(t->p, t->len, &at, &ok);

                if (!ok || (uv == 0 && n))
                        return -1;
                val += (int32_t)(uv & 1 ? ~(uv >> 1) : uv >> 1);
                cur += uvarint(t->p, t->len, &at, &ok) * (uint64_t)t->p[6]; /* minLC */
                if (!ok)
                        return -1;
                if (pc < cur)
                        return val;
        }
        return -1;
}

int go_pclntab_frames(const struct go_pclntab *t, uint64_t addr, const char **names, int max)
{
        uint32_t npcdata, inl_pc = FUNCDATA_NONE, inl_tree = FUNCDATA_NONE;
        uint64_t f, pc, entry;
        int32_t name_off;
        int64_t i;
        int n = 0;

        if (!t->p || max < 1 || addr < t->text_start || addr - t->text_start > UINT32_MAX)
                return 0;
        pc = addr - t->text_start;
        i = func_index(t, pc);
        if (i < 0 || !(f = func_at(t, (uint32_t)i, FUNC_NAME_OFF + sizeof(name_off))))
                return 0;
        entry = entry_off(t, (uint32_t)i);
        memcpy(&name_off, t->p + f + FUNC_NAME_OFF, sizeof(name_off));
        if (t->magic == GO_MAGIC_118 && t->gofunc && func_at(t, (uint32_t)i, FUNC118_PCDATA)) {
                uint8_t nfuncdata = t->p[f + FUNC118_NFUNCDATA];
                uint64_t fd;

                memcpy(&npcdata, t->p + f + FUNC118_NPCDATA, 4);
                fd = f + FUNC118_PCDATA + (uint64_t)npcdata * 4;
                if (npcdata > PCDATA_INLTREE && nfuncdata > FUNCDATA_INLTREE && fd <= t->len &&
                    t->len - fd >= (uint64_t)nfuncdata * 4) {
                        inl_pc = rd32(t->p + f + FUNC118_PCDATA + PCDATA_INLTREE * 4);
                        inl_tree = rd32(t->p + fd + FUNCDATA_INLTREE * 4);
                }
        }
        /* innermost first: each inlined call at pc, then its caller at the call's pc */
        while (inl_pc && inl_pc != FUNCDATA_NONE && inl_tree != FUNCDATA_NONE && n < max - 1) {
                int32_t ix = pcvalue(t, inl_pc, entry, pc), nm, parent_pc;
                uint64_t at;
                const char *s;

                if (ix < 0)
                        break;
                at = (uint64_t)inl_tree + (uint64_t)ix * INL118_SIZE;
                if (at > t->gofunc_len || t->gofunc_len - at < INL118_SIZE)
                        break;
                memcpy(&nm, t->gofunc + at + INL118_NAMEOFF, 4);
                memcpy(&parent_pc, t->gofunc + at + INL118_PARENTPC, 4);
                if (!(s = name_of(t, nm)) || parent_pc < 0 ||
                    (uint64_t)parent_pc >= entry_off(t, (uint32_t)i + 1) - entry)
                        break; /* a call site outside the function */
                names[n++] = s;
                pc = entry + (uint64_t)parent_pc;
        }
        if ((names[n] = name_of(t, name_off)))
                n++;
        return n;
}
