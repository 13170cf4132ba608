/* SPDX-License-Identifier: MIT */
/*
 * sym_wire.c — encoding and checking a PARSER_SYM answer (sym_wire.h). Must never print or
 * read past the payload it is given.
 */
#include "stack/sym_wire.h"

#include <errno.h>
#include <string.h>

static uint16_t put_str(const char *s, char *dst, size_t *used, size_t cap)
{
        if (!s)
                return 0;
        size_t n = strnlen(s, SYM_WIRE_NAME_MAX);
        if (*used + n > cap)
                n = cap - *used;
        memcpy(dst + *used, s, n);
        *used += n;
        return (uint16_t)n;
}

uint32_t sym_wire_encode(const struct elf_sym_entry *e, int n, int dwarf_refused, void *buf,
                         size_t cap)
{
        if (n < 0)
                n = 0;
        if (n > SYM_WIRE_MAX_ENTRIES)
                n = SYM_WIRE_MAX_ENTRIES;
        struct sym_resp_head h = {.n = (uint32_t)n, .dwarf_refused = dwarf_refused != 0};
        size_t head = sizeof(h) + (size_t)n * sizeof(struct sym_wire_entry);
        if (cap < head)
                return 0;
        char *p = buf;
        size_t used = head;
        memcpy(p, &h, sizeof(h));
        for (int i = 0; i < n; i++) {
                struct sym_wire_entry w = {.line = e[i].line < -1 ? -1 : e[i].line,
                                           .inlined = e[i].inlined != 0,
                                           .has_function = e[i].function != NULL,
                                           .has_file = e[i].file != NULL};
                w.function_len = put_str(e[i].function, p, &used, cap);
                w.file_len = put_str(e[i].file, p, &used, cap);
                memcpy(p + sizeof(h) + (size_t)i * sizeof(w), &w, sizeof(w));
        }
        return (uint32_t)used;
}

/* len bytes at *src as a NUL-terminated string in out->strs; NULL when !has. */
static const char *take_str(const char **src, uint16_t len, int has, char **dst)
{
        if (!has)
                return NULL;
        char *s = *dst;
        memcpy(s, *src, len);
        s[len] = 0;
        *src += len;
        *dst += len + 1;
        return s;
}

int sym_wire_decode(const void *buf, uint32_t len, struct sym_wire_names *out)
{
        struct sym_resp_head h;
        if (len < sizeof(h))
                return -EPROTO;
        memcpy(&h, buf, sizeof(h));
        if (h.n > SYM_WIRE_MAX_ENTRIES || h.dwarf_refused > 1)
                return -EPROTO;
        size_t head = sizeof(h) + h.n * sizeof(struct sym_wire_entry);
        if (len < head)
                return -EPROTO;
        struct sym_wire_entry w[SYM_WIRE_MAX_ENTRIES];
        memcpy(w, (const char *)buf + sizeof(h), h.n * sizeof(w[0]));
        size_t total = head;
        for (uint32_t i = 0; i < h.n; i++) {
                if (w[i].function_len > SYM_WIRE_NAME_MAX || w[i].file_len > SYM_WIRE_NAME_MAX ||
                    (!w[i].has_function && w[i].function_len) ||
                    (!w[i].has_file && w[i].file_len) || w[i].inlined > 1 ||
                    w[i].has_function > 1 || w[i].has_file > 1 || w[i].line < -1)
                        return -EPROTO;
                total += (size_t)w[i].function_len + w[i].file_len;
        }
        if (total != len)
                return -EPROTO;
        const char *src = (const char *)buf + head;
        char *dst = out->strs;
        for (uint32_t i = 0; i < h.n; i++) {
                out->e[i].function = take_str(&src, w[i].function_len, w[i].has_function, &dst);
                out->e[i].file = take_str(&src, w[i].file_len, w[i].has_file, &dst);
                out->e[i].line = w[i].line;
                out->e[i].inlined = w[i].inlined;
        }
        out->n = (int)h.n;
        out->dwarf_refused = (int)h.dwarf_refused;
        return 0;
}
