/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/test_libctx_elf.c — the built artefacts as an out-of-process reader sees them,
 * read with libelf/gelf: libctx.so (and libcustomlabels-ctx.so) reach both TLS variables
 * through R_X86_64_TLSDESC relocations naming them, export exactly the ABI symbols and the
 * API with the right types/sizes/values, carry the expected SONAME; libctx.a linked into a
 * PIE with libctx.dynlist still exports the four ABI symbols (and without it does not, which
 * shows this check can fail). Artefacts are found below $TEST_BUILD (default "build").
 */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAXSYMS 256 /* sanitizer builds export their own symbols too */

struct dynsym {
        char name[64];
        unsigned char type, bind;
        uint64_t size, value;
        int defined;
};

struct elfinfo {
        int ndyn;
        struct dynsym dyn[MAXSYMS];
        int tlsdesc_current_set, tlsdesc_span, tlsdesc_anon, tlsdesc_otel;
        char soname[64];
        uint32_t abi_version_value, span_abi_version_value;
};

static const char *build_dir(void)
{
        const char *b = getenv("TEST_BUILD");
        return b && *b ? b : "build";
}

static uint32_t read_u32_at(Elf *e, uint64_t vaddr)
{
        Elf_Scn *scn = NULL;
        GElf_Shdr sh;
        while ((scn = elf_nextscn(e, scn))) {
                gelf_getshdr(scn, &sh);
                if (sh.sh_type == SHT_NOBITS || vaddr < sh.sh_addr ||
                    vaddr + 4 > sh.sh_addr + sh.sh_size)
                        continue;
                Elf_Data *d = elf_getdata(scn, NULL);
                uint32_t v;
                memcpy(&v, (char *)d->d_buf + (vaddr - sh.sh_addr), 4);
                return v;
        }
        return 0xFFFFFFFF;
}

static void load(const char *file, struct elfinfo *info)
{
        char path[512];
        snprintf(path, sizeof(path), "%s/%s", build_dir(), file);
        memset(info, 0, sizeof(*info));
        cr_assert_neq(elf_version(EV_CURRENT), EV_NONE);
        int fd = open(path, O_RDONLY);
        cr_assert_geq(fd, 0, "open %s (built by make?)", path);
        Elf *e = elf_begin(fd, ELF_C_READ, NULL);
        cr_assert_not_null(e, "%s: %s", path, elf_errmsg(-1));
        Elf_Scn *scn = NULL;
        GElf_Shdr sh;
        while ((scn = elf_nextscn(e, scn))) {
                cr_assert_not_null(gelf_getshdr(scn, &sh));
                Elf_Data *d = elf_getdata(scn, NULL);
                if (sh.sh_type == SHT_DYNSYM) {
                        for (size_t i = 1; i < sh.sh_size / sh.sh_entsize; i++) {
                                GElf_Sym s;
                                gelf_getsym(d, (int)i, &s);
                                const char *n = elf_strptr(e, sh.sh_link, s.st_name);
                                if (!n || GELF_ST_BIND(s.st_info) == STB_LOCAL)
                                        continue;
                                cr_assert_lt(info->ndyn, MAXSYMS);
                                struct dynsym *o = &info->dyn[info->ndyn++];
                                snprintf(o->name, sizeof(o->name), "%s", n);
                                o->type = GELF_ST_TYPE(s.st_info);
                                o->bind = GELF_ST_BIND(s.st_info);
                                o->size = s.st_size;
                                o->value = s.st_value;
                                o->defined = s.st_shndx != SHN_UNDEF;
                        }
                } else if (sh.sh_type == SHT_RELA) {
                        Elf_Scn *symscn = elf_getscn(e, sh.sh_link);
                        GElf_Shdr symsh;
                        gelf_getshdr(symscn, &symsh);
                        Elf_Data *symd = elf_getdata(symscn, NULL);
                        for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
                                GElf_Rela r;
                                gelf_getrela(d, (int)i, &r);
                                if (GELF_R_TYPE(r.r_info) != R_X86_64_TLSDESC)
                                        continue;
                                size_t si = GELF_R_SYM(r.r_info);
                                if (si == 0) {
                                        info->tlsdesc_anon++;
                                        continue;
                                }
                                GElf_Sym s;
                                gelf_getsym(symd, (int)si, &s);
                                const char *n = elf_strptr(e, symsh.sh_link, s.st_name);
                                if (n && !strcmp(n, "custom_labels_current_set"))
                                        info->tlsdesc_current_set++;
                                if (n && !strcmp(n, "ctx_span_context_v1"))
                                        info->tlsdesc_span++;
                                if (n && !strcmp(n, "otel_thread_ctx_v1"))
                                        info->tlsdesc_otel++;
                        }
                } else if (sh.sh_type == SHT_DYNAMIC) {
                        for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
                                GElf_Dyn dy;
                                gelf_getdyn(d, (int)i, &dy);
                                if (dy.d_tag == DT_SONAME)
                                        snprintf(info->soname, sizeof(info->soname), "%s",
                                                 elf_strptr(e, sh.sh_link, dy.d_un.d_val));
                        }
                }
        }
        for (int i = 0; i < info->ndyn; i++) {
                if (!strcmp(info->dyn[i].name, "custom_labels_abi_version") && info->dyn[i].defined)
                        info->abi_version_value = read_u32_at(e, info->dyn[i].value);
                if (!strcmp(info->dyn[i].name, "ctx_span_context_abi_version") &&
                    info->dyn[i].defined)
                        info->span_abi_version_value = read_u32_at(e, info->dyn[i].value);
        }
        elf_end(e);
        close(fd);
}

static const struct dynsym *find(const struct elfinfo *info, const char *name)
{
        for (int i = 0; i < info->ndyn; i++)
                if (!strcmp(info->dyn[i].name, name) && info->dyn[i].defined)
                        return &info->dyn[i];
        return NULL;
}

static void check_abi_symbols(const struct elfinfo *info, const char *what)
{
        const struct dynsym *s = find(info, "custom_labels_current_set");
        cr_assert_not_null(s, "%s: custom_labels_current_set not exported", what);
        cr_assert_eq(s->type, STT_TLS);
        cr_assert_eq(s->size, 8);
        cr_assert_eq(s->bind, STB_GLOBAL);
        s = find(info, "ctx_span_context_v1");
        cr_assert_not_null(s, "%s: ctx_span_context_v1 not exported", what);
        cr_assert_eq(s->type, STT_TLS);
        cr_assert_eq(s->size, 64);
        s = find(info, "custom_labels_abi_version");
        cr_assert_not_null(s, "%s: custom_labels_abi_version not exported", what);
        cr_assert_eq(s->type, STT_OBJECT);
        cr_assert_eq(s->size, 4);
        cr_assert_eq(info->abi_version_value, 1);
        s = find(info, "ctx_span_context_abi_version");
        cr_assert_not_null(s, "%s: ctx_span_context_abi_version not exported", what);
        cr_assert_eq(s->size, 4);
        cr_assert_eq(info->span_abi_version_value, 1);
}

static const char *const api[] = {
    "ctx_thread_init",      "ctx_reserve",      "ctx_set_span",           "ctx_clear_span",
    "ctx_set_tag",          "ctx_set_label",    "ctx_set_label_str",      "ctx_remove_label",
    "ctx_remove_label_str", "ctx_clear_labels", "ctx_set_span_mirroring", "ctx_with_labels",
    "ctx_get_stats",        "ctx_set_abis",     "ctx_get_abis",           "ctx_set_trace",
    "ctx_clear_trace",      "ctx_register_key", "ctx_set_attr",           "ctx_set_resource",
};

static void check_shared(const char *file, const char *soname)
{
        struct elfinfo info;
        load(file, &info);
        cr_assert_geq(info.tlsdesc_current_set, 1,
                      "%s: no R_X86_64_TLSDESC for custom_labels_current_set", file);
        cr_assert_geq(info.tlsdesc_span, 1, "%s: no R_X86_64_TLSDESC for ctx_span_context_v1",
                      file);
        cr_assert_str_eq(info.soname, soname);
        check_abi_symbols(&info, file);
        const struct dynsym *o = find(&info, "otel_thread_ctx_v1");
        cr_assert_not_null(o, "%s: otel_thread_ctx_v1 not exported", file);
        cr_assert_eq(o->type, STT_TLS);
        cr_assert_eq(o->size, 8);
        cr_assert_geq(info.tlsdesc_otel, 1, "%s: no R_X86_64_TLSDESC for otel_thread_ctx_v1", file);
        size_t nexp = 5;
        for (size_t i = 0; i < sizeof(api) / sizeof(api[0]); i++) {
                const struct dynsym *s = find(&info, api[i]);
                cr_assert_not_null(s, "%s: API %s not exported", file, api[i]);
                cr_assert_eq(s->type, STT_FUNC);
                nexp++;
        }
        /* the version script exports nothing else (sanitizer builds add their own symbols) */
        if (!getenv("TEST_BUILD") || !strstr(getenv("TEST_BUILD"), "san")) {
                size_t ndef = 0;
                for (int i = 0; i < info.ndyn; i++)
                        if (info.dyn[i].defined) {
                                ndef++;
                                cr_assert(!strncmp(info.dyn[i].name, "ctx_", 4) ||
                                              !strncmp(info.dyn[i].name, "custom_labels_", 14) ||
                                              !strcmp(info.dyn[i].name, "otel_thread_ctx_v1"),
                                          "%s exports %s", file, info.dyn[i].name);
                        }
                cr_assert_eq(ndef, nexp, "%s: %zu exported, want %zu", file, ndef, nexp);
        }
}

Test(libctx_elf, shared_object)
{
        check_shared("libctx.so.1.0.0", "libctx.so.1");
}

Test(libctx_elf, customlabels_named_shared_object)
{
        check_shared("libcustomlabels-ctx.so", "libcustomlabels-ctx.so");
}

Test(libctx_elf, archive_linked_into_executable)
{
        struct elfinfo info;
        load("tests/fixtures/libctx_exe", &info);
        check_abi_symbols(&info, "libctx_exe (with libctx.dynlist)");
        cr_assert_not_null(find(&info, "otel_thread_ctx_v1"),
                           "libctx_exe: otel_thread_ctx_v1 not exported by the dynamic list");
        load("tests/fixtures/libctx_exe_nodynlist", &info);
        cr_assert_null(find(&info, "custom_labels_current_set"),
                       "without the dynamic list the symbol should not be exported");
        /* and the executable works */
        char path[512];
        snprintf(path, sizeof(path), "%s/tests/fixtures/libctx_exe", build_dir());
        pid_t pid = fork();
        cr_assert_geq(pid, 0);
        if (pid == 0) {
                execl(path, path, (char *)NULL);
                _exit(127);
        }
        int st;
        cr_assert_eq(waitpid(pid, &st, 0), pid);
        cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "fixture exit status %d", st);
}
