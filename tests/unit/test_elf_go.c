/* SPDX-License-Identifier: MIT */
/*
 * test_elf_go.c — a Go executable's version and labels layout (tls/elf_go.c) from build
 * info planted here with objcopy into a copy of a C fixture (its DWARF has no runtime.g, so
 * the layout comes from the version table): go1.19.8 gives the table's offsets; a version no
 * table knows, build info before Go 1.18 (no inline strings), a version length past the
 * section or an over-long varint give a Go program of unknown layout (no labels read); no
 * build info or a wrong magic is not a Go program. The real thing (DWARF, stripped, cgo):
 * tests/integration/test_record_go.sh.
 */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "stack_sampler.h"
#include "tls/elf_go.h"

#define MAGIC "\xff Go buildinf:"

static char fixture[512], dir[] = "/tmp/ctxprof-elf-go-XXXXXX";

static void setup(void)
{
        snprintf(fixture, sizeof(fixture), "%s/tests/fixtures/fx_qsort", test_build_dir());
        cr_assert_not_null(mkdtemp(dir));
        cr_assert_eq(elf_version(EV_CURRENT) == EV_NONE, 0);
}

static void teardown(void)
{
        char cmd[600];
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
        cr_assert_eq(system(cmd), 0);
}

TestSuite(elf_go, .init = setup, .fini = teardown, .timeout = 60);

/* The fixture with a .go.buildinfo holding blob[0..len) (none when blob is NULL), read. */
static struct elf_go_info read_with(const void *blob, size_t len)
{
        char bin[600], out[600], cmd[2048];
        struct elf_go_info go;
        FILE *f;
        Elf *e;
        int fd;

        snprintf(out, sizeof(out), "%s/prog", dir);
        if (blob) {
                snprintf(bin, sizeof(bin), "%s/blob", dir);
                cr_assert_not_null(f = fopen(bin, "w"));
                cr_assert_eq(fwrite(blob, 1, len, f), len);
                fclose(f);
                snprintf(cmd, sizeof(cmd), "objcopy --add-section .go.buildinfo='%s' '%s' '%s'",
                         bin, fixture, out);
        } else {
                snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", fixture, out);
        }
        cr_assert_eq(system(cmd), 0, "%s", cmd);
        cr_assert_geq(fd = open(out, O_RDONLY), 0);
        cr_assert_not_null(e = elf_begin(fd, ELF_C_READ, NULL));
        elf_go_read(e, &go, 1);
        elf_end(e);
        close(fd);
        return go;
}

/* Build info as Go 1.18+ writes it: magic, pointer size, flags, padding to 32, then the
 * version as a uvarint length and its bytes. */
static size_t buildinfo(uint8_t *b, uint8_t flags, const char *version)
{
        size_t n = strlen(version);

        memset(b, 0, 64);
        memcpy(b, MAGIC, 14);
        b[14] = 8;
        b[15] = flags;
        b[32] = (uint8_t)n;
        memcpy(b + 33, version, n);
        return 64;
}

Test(elf_go, version_table_when_no_dwarf_layout)
{
        if (system("command -v objcopy >/dev/null"))
                cr_skip_test("needs objcopy (binutils) to plant the build info");
        uint8_t b[64];
        struct elf_go_info go = read_with(b, buildinfo(b, 2, "go1.19.8"));
        struct elf_go_info want = {0};

        cr_assert_eq(go.source, ELF_GO_VERSION);
        cr_assert(go.major == 1 && go.minor == 19);
        cr_assert_eq(go.sets_labels, 0, "no .gopclntab naming runtime/pprof.SetGoroutineLabels");
        cr_assert_eq(elf_go_table(1, 19, &want), 0);
        cr_assert(go.g_m == want.g_m && go.m_curg == want.m_curg && go.g_labels == want.g_labels);
        cr_assert(go.g_m && go.m_curg && go.g_labels, "the table has offsets for 1.19");
}

Test(elf_go, unknown_or_unreadable_versions_have_no_layout)
{
        if (system("command -v objcopy >/dev/null"))
                cr_skip_test("needs objcopy (binutils) to plant the build info");
        uint8_t b[64];
        struct elf_go_info go;

        go = read_with(b, buildinfo(b, 2, "go1.99.1"));
        cr_assert(go.source == ELF_GO_UNKNOWN && go.minor == 99 && !go.g_m && !go.g_labels,
                  "a version no table knows");
        go = read_with(b, buildinfo(b, 0, "go1.19.8"));
        cr_assert(go.source == ELF_GO_UNKNOWN && !go.minor, "strings behind pointers (Go < 1.18)");
        buildinfo(b, 2, "go1.19.8");
        b[32] = 40; /* past the section's end */
        go = read_with(b, 64);
        cr_assert(go.source == ELF_GO_UNKNOWN && !go.minor, "a length past the section");
        buildinfo(b, 2, "go1.19.8");
        memset(b + 32, 0xff, 32); /* a varint that never ends */
        go = read_with(b, 64);
        cr_assert(go.source == ELF_GO_UNKNOWN && !go.minor, "an endless varint");
        go = read_with(b, buildinfo(b, 2, "devel go1.22-abc"));
        cr_assert(go.source == ELF_GO_UNKNOWN && !go.minor, "a development version");
}

Test(elf_go, not_a_go_program)
{
        if (system("command -v objcopy >/dev/null"))
                cr_skip_test("needs objcopy (binutils) to plant the build info");
        uint8_t b[64];
        struct elf_go_info go;

        go = read_with(NULL, 0);
        cr_assert_eq(go.source, ELF_GO_NONE, "no build info");
        buildinfo(b, 2, "go1.19.8");
        b[1] = 'g';
        go = read_with(b, 64);
        cr_assert_eq(go.source, ELF_GO_NONE, "a wrong magic");
        buildinfo(b, 2, "go1.19.8");
        go = read_with(b, 20);
        cr_assert_eq(go.source, ELF_GO_NONE, "build info shorter than its header");
}
