/* SPDX-License-Identifier: MIT */
/*
 * elf_go.c — a Go executable's version and goroutine-labels layout (see elf_go.h). The
 * version is the build info's inline string (Go 1.18 and later); the layout comes from the
 * DWARF types the Go linker writes into the runtime unit (runtime.g, runtime.m,
 * runtime/pprof.labelMap and the map's hash<string,string> and bucket<string,string>), each
 * checked against what the BPF reader assumes (ctxprof/tls_target.h), else from the table
 * below. Owns nothing; reads only within the sections libelf returned, and visits a bounded
 * number of DWARF entries.
 */
#include "tls/elf_go.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <gelf.h>
#include <string.h>

#define BUILDINFO_SECTION   ".go.buildinfo"
#define BUILDINFO_MAGIC     "\xff Go buildinf:"
#define BUILDINFO_MAGIC_LEN 14
#define BUILDINFO_FLAGS     15  /* after the magic and the pointer size */
#define BUILDINFO_INLINE    0x2 /* flags: strings inline (Go 1.18+), not behind pointers */
#define BUILDINFO_VERSION   32  /* where the inline version string's uvarint length starts */
#define GO_VERSION_MAX      64  /* a longer version string is not one */

/* .debug_info larger (uncompressed) than this is not read (the version table then): libdw
 * inflates it whole, ~5 MB in 50 ms here, and the helper's request ends at 2 s */
#define DWARF_INFO_MAX (64u << 20)
#define DWARF_DIES_MAX (1u << 22) /* top-level entries visited at most */
#define DW_AT_GO_KIND  0x2900     /* Go's DWARF extension: the reflect.Kind of a type */
#define GO_KIND_MAP    21
#define GO_TYPES_UNIT  "runtime"
#define GO_DWARF_TYPES 5 /* the types dwarf_type looks for */

/* Every goroutine label is set through this function (pprof.Do calls it); a program that
 * never calls it has it removed by the linker, and its name with it. */
#define GO_SET_LABELS_FUNC "runtime/pprof.SetGoroutineLabels"
#define GO_PCLNTAB_MAX     (512u << 20) /* a larger function table is not searched */

/* The classic map's layout the BPF reader follows (ctxprof/tls_target.h), Go 1.0 to 1.23. */
#define HMAP_COUNT         0
#define HMAP_B             9
#define HMAP_BUCKETS       16
#define HMAP_OLDBUCKETS    24
#define BUCKET_KEYS        8
#define BUCKET_VALUES      136
#define BUCKET_OVERFLOW    264
#define GO_LAST_HMAP_MINOR 23 /* Go 1.24 replaced the labels map and the map itself */

/* Versions whose offsets were read from a binary's DWARF on linux/amd64 (the tests check
 * the table against the DWARF of the Go they build with). */
static const struct {
        uint8_t major, minor;
        uint16_t g_m, m_curg, g_labels;
} go_table[] = {
    {1, 19, 48, 192, 360},
};

int elf_go_table(unsigned major, unsigned minor, struct elf_go_info *go)
{
        for (size_t i = 0; i < sizeof(go_table) / sizeof(go_table[0]); i++)
                if (go_table[i].major == major && go_table[i].minor == minor) {
                        go->g_m = go_table[i].g_m;
                        go->m_curg = go_table[i].m_curg;
                        go->g_labels = go_table[i].g_labels;
                        return 0;
                }
        return -ENOENT;
}

static Elf_Scn *section_named(Elf *e, const char *want, GElf_Shdr *sh)
{
        size_t shstrndx;

        if (elf_getshdrstrndx(e, &shstrndx) != 0)
                return NULL;
        for (Elf_Scn *scn = elf_nextscn(e, NULL); scn; scn = elf_nextscn(e, scn)) {
                const char *name;

                if (!gelf_getshdr(scn, sh) || !(name = elf_strptr(e, shstrndx, sh->sh_name)))
                        continue;
                if (!strcmp(name, want))
                        return scn;
        }
        return NULL;
}

/* "go1.19.8", "go1.21rc2": 1 and 19, 1 and 21. */
static void parse_version(const char *s, size_t len, struct elf_go_info *go)
{
        unsigned major = 0, minor = 0;
        size_t i = 2;

        if (len < 5 || memcmp(s, "go", 2))
                return;
        for (; i < len && s[i] >= '0' && s[i] <= '9' && major < 100; i++)
                major = major * 10 + (unsigned)(s[i] - '0');
        if (i >= len || s[i] != '.')
                return;
        for (i++; i < len && s[i] >= '0' && s[i] <= '9' && minor < 1000; i++)
                minor = minor * 10 + (unsigned)(s[i] - '0');
        if (!major || major > 255 || minor > 255)
                return;
        go->major = (uint8_t)major;
        go->minor = (uint8_t)minor;
}

/* 1 when e has Go build info (its version into go when readable), 0 when it has none. */
static int read_buildinfo(Elf *e, struct elf_go_info *go)
{
        GElf_Shdr sh;
        Elf_Scn *scn = section_named(e, BUILDINFO_SECTION, &sh);
        Elf_Data *d;
        const uint8_t *p;
        uint64_t len = 0;
        size_t i, shift = 0;

        if (!scn || sh.sh_type == SHT_NOBITS)
                return 0;
        d = elf_getdata(scn, NULL);
        if (!d || !d->d_buf || d->d_size < BUILDINFO_VERSION + 1)
                return 0;
        p = d->d_buf;
        if (memcmp(p, BUILDINFO_MAGIC, BUILDINFO_MAGIC_LEN))
                return 0;
        if (!(p[BUILDINFO_FLAGS] & BUILDINFO_INLINE))
                return 1; /* Go before 1.18: a Go program, its version behind pointers */
        for (i = BUILDINFO_VERSION; i < d->d_size && shift < 14; i++, shift += 7) {
                len |= (uint64_t)(p[i] & 0x7f) << shift;
                if (!(p[i] & 0x80))
                        break;
        }
        if (i >= d->d_size || len > GO_VERSION_MAX || len > d->d_size - i - 1)
                return 1;
        parse_version((const char *)p + i + 1, (size_t)len, go);
        return 1;
}

/* 1 when .gopclntab names GO_SET_LABELS_FUNC (its function names are NUL-terminated). */
static int sets_labels(Elf *e)
{
        static const char want[] = GO_SET_LABELS_FUNC; /* with its NUL */
        GElf_Shdr sh;
        Elf_Scn *scn = section_named(e, ".gopclntab", &sh);
        Elf_Data *d;

        if (!scn || sh.sh_type == SHT_NOBITS || sh.sh_size > GO_PCLNTAB_MAX)
                return 0;
        d = elf_getdata(scn, NULL);
        return d && d->d_buf && memmem(d->d_buf, d->d_size, want, sizeof(want)) != NULL;
}

/* What the DWARF walk finds. -1 = not found. */
struct go_dwarf {
        int64_t g_m, g_labels, m_curg;
        int64_t hmap_count, hmap_b, hmap_buckets, hmap_oldbuckets;
        int64_t bkt_keys, bkt_values, bkt_overflow;
        int label_map; /* -1 not found, 0 found and not a map, 1 a map */
        int found;     /* of the five types */
};

static int64_t member_offset(Dwarf_Die *st, const char *want)
{
        Dwarf_Die m;
        unsigned budget = 4096;

        if (dwarf_child(st, &m) != 0)
                return -1;
        do {
                Dwarf_Attribute a;
                Dwarf_Word off;
                const char *name;

                if (dwarf_tag(&m) != DW_TAG_member || !(name = dwarf_diename(&m)) ||
                    strcmp(name, want))
                        continue;
                if (!dwarf_attr(&m, DW_AT_data_member_location, &a) || dwarf_formudata(&a, &off) ||
                    off > UINT16_MAX)
                        return -1;
                return (int64_t)off;
        } while (--budget && dwarf_siblingof(&m, &m) == 0);
        return -1;
}

static void dwarf_type(Dwarf_Die *d, struct go_dwarf *w)
{
        const char *name = dwarf_diename(d);
        int tag = dwarf_tag(d);

        if (!name)
                return;
        if (tag == DW_TAG_structure_type && !strcmp(name, "runtime.g")) {
                w->g_m = member_offset(d, "m");
                w->g_labels = member_offset(d, "labels");
                w->found++;
        } else if (tag == DW_TAG_structure_type && !strcmp(name, "runtime.m")) {
                w->m_curg = member_offset(d, "curg");
                w->found++;
        } else if (tag == DW_TAG_structure_type && !strcmp(name, "hash<string,string>")) {
                w->hmap_count = member_offset(d, "count");
                w->hmap_b = member_offset(d, "B");
                w->hmap_buckets = member_offset(d, "buckets");
                w->hmap_oldbuckets = member_offset(d, "oldbuckets");
                w->found++;
        } else if (tag == DW_TAG_structure_type && !strcmp(name, "bucket<string,string>")) {
                w->bkt_keys = member_offset(d, "keys");
                w->bkt_values = member_offset(d, "values");
                w->bkt_overflow = member_offset(d, "overflow");
                w->found++;
        } else if (tag == DW_TAG_typedef && !strcmp(name, "runtime/pprof.labelMap")) {
                Dwarf_Attribute a;
                Dwarf_Word kind = 0;

                w->label_map = dwarf_attr(d, DW_AT_GO_KIND, &a) && !dwarf_formudata(&a, &kind) &&
                               kind == GO_KIND_MAP;
                w->found++;
        }
}

/* 0 when the DWARF was walked (what it has in *w), -ENOENT when there is none to read. */
static int read_dwarf(Elf *e, struct go_dwarf *w)
{
        GElf_Shdr sh;
        Elf_Scn *scn = section_named(e, ".debug_info", &sh);
        Dwarf_Off off = 0, next;
        unsigned budget = DWARF_DIES_MAX;
        size_t hsize;
        Dwarf *dw;

        memset(w, 0xff, sizeof(*w)); /* every offset -1 */
        w->label_map = -1;
        w->found = 0;
        if (!scn || sh.sh_type == SHT_NOBITS)
                return -ENOENT;
        if (sh.sh_flags & SHF_COMPRESSED) {
                GElf_Chdr ch;

                if (!gelf_getchdr(scn, &ch) || ch.ch_size > DWARF_INFO_MAX)
                        return -ENOENT;
        } else if (sh.sh_size > DWARF_INFO_MAX) {
                return -ENOENT;
        }
        dw = dwarf_begin_elf(e, DWARF_C_READ, NULL);
        if (!dw)
                return -ENOENT;
        while (w->found < GO_DWARF_TYPES && budget &&
               dwarf_nextcu(dw, off, &next, &hsize, NULL, NULL, NULL) == 0) {
                const char *name;
                Dwarf_Die cu, d;

                /* Go's linker puts every type in the runtime package's unit */
                if (dwarf_offdie(dw, off + hsize, &cu) && (name = dwarf_diename(&cu)) &&
                    !strcmp(name, GO_TYPES_UNIT) && dwarf_child(&cu, &d) == 0) {
                        do
                                dwarf_type(&d, w);
                        while (w->found < GO_DWARF_TYPES && --budget &&
                               dwarf_siblingof(&d, &d) == 0);
                }
                off = next;
        }
        dwarf_end(dw);
        return 0;
}

/* The map's layout as DWARF states it, where it states it, is the one BPF follows. */
static int hmap_layout_ok(const struct go_dwarf *w)
{
        if (w->hmap_count != -1 || w->hmap_b != -1 || w->hmap_buckets != -1) {
                if (w->hmap_count != HMAP_COUNT || w->hmap_b != HMAP_B ||
                    w->hmap_buckets != HMAP_BUCKETS || w->hmap_oldbuckets != HMAP_OLDBUCKETS)
                        return 0;
        }
        if (w->bkt_keys != -1 || w->bkt_values != -1 || w->bkt_overflow != -1) {
                if (w->bkt_keys != BUCKET_KEYS || w->bkt_values != BUCKET_VALUES ||
                    w->bkt_overflow != BUCKET_OVERFLOW)
                        return 0;
        }
        return 1;
}

void elf_go_read(Elf *e, struct elf_go_info *go, int use_dwarf)
{
        struct go_dwarf w;
        int classic;

        memset(go, 0, sizeof(*go));
        if (!read_buildinfo(e, go))
                return;
        go->source = ELF_GO_UNKNOWN;
        go->sets_labels = (uint8_t)sets_labels(e);
        /* A classic map when the DWARF says labelMap is a map, else when the version is one
         * that had them. */
        classic = go->major == 1 && go->minor && go->minor <= GO_LAST_HMAP_MINOR;
        if (use_dwarf && read_dwarf(e, &w) == 0 && w.g_m >= 0 && w.g_labels >= 0 && w.m_curg >= 0) {
                if (w.label_map == 0 || !hmap_layout_ok(&w))
                        return; /* a layout the BPF reader does not follow */
                if (w.label_map == 1 || classic) {
                        go->g_m = (uint16_t)w.g_m;
                        go->g_labels = (uint16_t)w.g_labels;
                        go->m_curg = (uint16_t)w.m_curg;
                        go->source = ELF_GO_DWARF;
                }
                return;
        }
        if (elf_go_table(go->major, go->minor, go) == 0)
                go->source = ELF_GO_VERSION;
}
