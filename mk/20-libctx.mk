# SPDX-License-Identifier: MIT
# libctx: the in-process context library. Built with gcc (clang 14 cannot emit TLSDESC).
# Owner of this fragment: libctx.
#
# Products (below $(B)):
#   libctx.so.$(LIBCTX_VERSION), libctx.so.1 (SONAME), libctx.so   shared library
#   libcustomlabels-ctx.so   the same objects under a name third-party Custom Labels readers
#                            (parca's fork of the OTel eBPF profiler) recognise: they match
#                            the loaded file against `libcustomlabels.*\.so$`, so this one has
#                            an unversioned SONAME (a versioned file name would not match)
#   libctx.a                 for executables; link with -Wl,--dynamic-list=libctx/libctx.dynlist
#   libctx.pc                pkg-config (the dynamic list is in Libs.private, i.e. --static)
#   tests/fixtures/libctx_exe[_nodynlist]   libctx.a linked into a PIE with/without the list
#   bench/bench_libctx[_static]             benchmarks (make bench)
LIBCTX_SOVER   := 1
LIBCTX_VERSION := 1.0.0
LIBCTX_SRCS    := $(wildcard libctx/*.c)
LIBCTX_PIC_OBJS := $(patsubst %.c,$(B)/pic/%.o,$(LIBCTX_SRCS))
# The archive's objects: the same sources with initial-exec TLS (see libctx.a below).
LIBCTX_IE_OBJS := $(patsubst %.c,$(B)/ie/%.o,$(LIBCTX_SRCS))
# TLS model flags required by the Custom Labels ABI for a shared object.
LIBCTX_TLS     := -ftls-model=global-dynamic -mtls-dialect=gnu2
LIBCTX_LDFLAGS := -shared -Wl,--version-script=libctx/libctx.map -Wl,-z,now -Wl,-z,relro -Wl,-z,nodelete \
                  -Wl,--no-undefined

# The OTel process context payload is encoded with protobuf-c (mk/25-otelproto.mk).
# (mk/25-otelproto.mk is read after this file: its names are spelled out here for the
# prerequisite lists, which make expands immediately.)
LIBCTX_LIBS := -lprotobuf-c -lpthread
LIBCTX_PROTO_A := $(B)/libotelproto.a
LIBCTX_PROTO_O := $(addprefix $(B)/gen/otel/,processcontext.pb-c.o \
                    opentelemetry/proto/common/v1/common.pb-c.o \
                    opentelemetry/proto/resource/v1/resource.pb-c.o)
LIBCTX_PROTO_H := $(LIBCTX_PROTO_O:.o=.h)

LIBCTX_SO  := $(B)/libctx.so.$(LIBCTX_VERSION)
LIBCTX_CL  := $(B)/libcustomlabels-ctx.so
LIBCTX_A   := $(B)/libctx.a
LIBCTX_PC  := $(B)/libctx.pc
LIBCTX_FIXTURES := $(B)/tests/fixtures/libctx_exe $(B)/tests/fixtures/libctx_exe_nodynlist
ALL_TARGETS += $(LIBCTX_SO) $(B)/libctx.so $(LIBCTX_CL) $(LIBCTX_A) $(LIBCTX_PC)
TEST_TARGETS += $(LIBCTX_FIXTURES)
BENCHES += $(B)/bench/bench_libctx $(B)/bench/bench_libctx_static

$(B)/pic/libctx/%.o: libctx/%.c | $(LIBCTX_PROTO_H)
	@echo "  CC      $< (pic)"
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(ALL_CFLAGS) -fPIC $(LIBCTX_TLS) -fvisibility=hidden -MMD -MP -c $< -o $@

# The archive is linked into executables only (docs/libctx.md, Linking), whose TLS is always in
# the static block at a link-time offset from %fs: initial-exec is sound there, and the linker
# turns it into that constant. The TLSDESC sequence of the shared object's objects was relaxed
# by the linker to the same constant but still cost a move, a 2-byte nop and, because gcc had
# seen a call, a frame: set-span 62 -> 56 instructions, 3.4-3.5 -> 3.3 ns (bench_libctx_static).
# Still position-independent (-fPIC): PIE is the default executable.
$(B)/ie/libctx/%.o: libctx/%.c | $(LIBCTX_PROTO_H)
	@echo "  CC      $< (pic, initial-exec)"
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(ALL_CFLAGS) -fPIC -ftls-model=initial-exec -DCTXI_ARCHIVE \
		-fvisibility=hidden -MMD -MP -c $< -o $@

$(LIBCTX_SO): $(LIBCTX_PIC_OBJS) $(LIBCTX_PROTO_A) libctx/libctx.map
	@echo "  LD      $@"
	$(Q)$(CC) $(LIBCTX_LDFLAGS) -Wl,-soname,libctx.so.$(LIBCTX_SOVER) $(ALL_LDFLAGS) \
		-o $@ $(LIBCTX_PIC_OBJS) $(LIBCTX_PROTO_A) $(LIBCTX_LIBS)

$(LIBCTX_CL): $(LIBCTX_PIC_OBJS) $(LIBCTX_PROTO_A) libctx/libctx.map
	@echo "  LD      $@"
	$(Q)$(CC) $(LIBCTX_LDFLAGS) -Wl,-soname,libcustomlabels-ctx.so $(ALL_LDFLAGS) \
		-o $@ $(LIBCTX_PIC_OBJS) $(LIBCTX_PROTO_A) $(LIBCTX_LIBS)

$(B)/libctx.so: $(LIBCTX_SO)
	$(Q)ln -sf $(notdir $<) $(B)/libctx.so.$(LIBCTX_SOVER) && ln -sf $(notdir $<) $@

# The archive carries the generated protobuf code and Debian's protobuf-c runtime object
# (position-independent), so that every existing `libctx.a -lpthread` link keeps working;
# -lprotobuf-c in libctx.pc's Libs.private is then redundant but harmless. All of it is
# prelinked into one object (ld -r) whose only global symbols are libctx.map's: the bundled
# opentelemetry__proto__* and protobuf_c_* definitions are local, so they can neither clash
# with nor silently replace (or be replaced by) a program's own copies (libctxprof.a, another
# OTel protobuf build, another protobuf-c) — the archive-member lottery of which copy wins.
PROTOBUF_C_A := $(firstword $(wildcard /usr/lib/$(shell $(CC) -print-multiarch)/libprotobuf-c.a \
                                       /usr/lib/libprotobuf-c.a))
$(LIBCTX_A): $(LIBCTX_IE_OBJS) $(LIBCTX_PROTO_O) libctx/libctx.map
	$(Q)rm -f $@ && d=$$(mktemp -d) && \
		if [ -n "$(PROTOBUF_C_A)" ]; then (cd $$d && ar x $(PROTOBUF_C_A)); fi && \
		$(CC) -r -nostdlib -o $$d/libctx-all.o $(LIBCTX_IE_OBJS) $(LIBCTX_PROTO_O) \
			$$(ls $$d/*.o 2>/dev/null) && \
		sed -n 's/^ *\([a-z_0-9]*\);$$/\1/p' libctx/libctx.map >$$d/keep && \
		objcopy --keep-global-symbols=$$d/keep $$d/libctx-all.o && \
		ar rcs $@ $$d/libctx-all.o && rm -rf $$d

$(LIBCTX_PC): libctx/libctx.pc.in mk/20-libctx.mk
	$(Q)mkdir -p $(@D)
	$(Q)sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@LIBDIR@|$(LIBDIR)|g' -e 's|@VERSION@|$(LIBCTX_VERSION)|g' $< > $@

# Fixtures for tests/unit/test_libctx_elf.c: the archive linked into a PIE, with and without
# the dynamic list (the second one proves the test can tell the difference).
$(B)/tests/fixtures/libctx_exe: tests/fixtures/libctx_exe.c $(LIBCTX_A) libctx/libctx.dynlist
	@echo "  LD      $@"
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(ALL_CFLAGS) -o $@ $< $(LIBCTX_A) -Wl,--dynamic-list=libctx/libctx.dynlist \
		$(LIBCTX_LIBS) $(ALL_LDFLAGS)
$(B)/tests/fixtures/libctx_exe_nodynlist: tests/fixtures/libctx_exe.c $(LIBCTX_A)
	@echo "  LD      $@"
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(ALL_CFLAGS) -o $@ $< $(LIBCTX_A) $(LIBCTX_LIBS) $(ALL_LDFLAGS)

# Benchmarks: against the shared object (TLSDESC calls, the common case) and the archive.
$(B)/bench/bench_libctx: bench/bench_libctx.c $(B)/libctx.so
	@echo "  LD      $@"
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(ALL_CFLAGS) -o $@ $< -L$(B) -lctx -Wl,-rpath,'$$ORIGIN/..' $(LIBCTX_LIBS) $(ALL_LDFLAGS)
$(B)/bench/bench_libctx_static: bench/bench_libctx.c $(LIBCTX_A)
	@echo "  LD      $@"
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(ALL_CFLAGS) -DBENCH_LIBCTX_STATIC -o $@ $< $(LIBCTX_A) \
		-Wl,--dynamic-list=libctx/libctx.dynlist $(LIBCTX_LIBS) $(ALL_LDFLAGS)

# make install-libctx PREFIX=/usr/local DESTDIR= [LIBDIR=$(PREFIX)/lib]
# (Debian passes its multiarch LIBDIR). libcustomlabels-ctx.so is not a public library (no
# versioned SONAME is possible, see above): it goes to the private $(LIBDIR)/libctx/, which an
# application that wants it links with -L and a run path (docs/libctx.md, *File name*).
LIBDIR ?= $(PREFIX)/lib
.PHONY: install-libctx
install-libctx: $(LIBCTX_SO) $(B)/libctx.so $(LIBCTX_CL) $(LIBCTX_A) $(LIBCTX_PC)
	install -d $(DESTDIR)$(LIBDIR)/pkgconfig $(DESTDIR)$(LIBDIR)/libctx \
		$(DESTDIR)$(PREFIX)/include/ctx $(DESTDIR)$(PREFIX)/share/libctx
	install -m 644 include/ctx/ctx.h include/ctx/abi.h include/ctx/ctx_inline.h $(DESTDIR)$(PREFIX)/include/ctx/
	install -m 644 $(LIBCTX_SO) $(DESTDIR)$(LIBDIR)/
	install -m 644 $(LIBCTX_CL) $(DESTDIR)$(LIBDIR)/libctx/
	ln -sf libctx.so.$(LIBCTX_VERSION) $(DESTDIR)$(LIBDIR)/libctx.so.$(LIBCTX_SOVER)
	ln -sf libctx.so.$(LIBCTX_VERSION) $(DESTDIR)$(LIBDIR)/libctx.so
	install -m 644 $(LIBCTX_A) $(DESTDIR)$(LIBDIR)/
	install -m 644 $(LIBCTX_PC) $(DESTDIR)$(LIBDIR)/pkgconfig/
	install -m 644 libctx/libctx.dynlist $(DESTDIR)$(PREFIX)/share/libctx/

-include $(wildcard $(B)/pic/libctx/*.d $(B)/ie/libctx/*.d)
