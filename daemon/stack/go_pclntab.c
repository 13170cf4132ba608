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
#define HDR_PCLN       7
#define HDR_NWORDS     8
#define FUNCTAB_ENTRY  8          /* entryoff u32, funcoff u32 */
#define FUNC_NAME_OFF  4          /* _func.nameOff (int32), after entryOff (uint32) */
#define GO_NFUNC_MAX   (1u << 24) /* 16M functions: far above any real binary */

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
        return 0;
}

/* Entry offset of function i (i <= nfunc: the last one is the end of the code). */
static uint32_t entry_off(const struct go_pclntab *t, uint32_t i)
{
        return rd32(t->p + t->functab + (uint64_t)i * FUNCTAB_ENTRY);
}

const char *go_pclntab_name(const struct go_pclntab *t, uint64_t addr)
{
        uint32_t lo = 0, hi, funcoff;
        uint64_t pc, f, name;
        int32_t name_off;
        const char *s;

        if (!t->p || addr < t->text_start || addr - t->text_start > UINT32_MAX)
                return NULL;
        pc = addr - t->text_start;
        if (pc < entry_off(t, 0) || pc >= entry_off(t, t->nfunc))
                return NULL;
        hi = t->nfunc; /* entry_off(lo) <= pc < entry_off(hi) */
        while (hi - lo > 1) {
                uint32_t mid = lo + (hi - lo) / 2;

                if (entry_off(t, mid) <= pc)
                        lo = mid;
                else
                        hi = mid;
        }
        funcoff = rd32(t->p + t->functab + (uint64_t)lo * FUNCTAB_ENTRY + 4);
        f = t->functab + funcoff;
        if (f > t->len || t->len - f < FUNC_NAME_OFF + sizeof(name_off))
                return NULL;
        memcpy(&name_off, t->p + f + FUNC_NAME_OFF, sizeof(name_off));
        if (name_off < 0)
                return NULL;
        name = t->funcnames + (uint64_t)name_off;
        if (name >= t->len)
                return NULL;
        s = (const char *)t->p + name;
        /* NUL-terminated within the section, and not empty */
        return *s && memchr(s, '\0', t->len - name) ? s : NULL;
}
