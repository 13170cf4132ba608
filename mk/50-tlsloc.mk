# SPDX-License-Identifier: MIT
# TLS locator: fixture processes for tests/unit/test_tls_locate.c, built into
# $(B)/tests/fixtures/. Owner of this fragment: tlsloc.
#
# One fixture source (tests/fixtures/tls_fixture.c) linked every way libctx can end up in a
# process: as a DT_NEEDED shared library (TLSDESC), as libctx.a in a PIE and in a non-PIE
# executable (symbols exported with libctx.dynlist), in a non-PIE without the dynamic list
# (.symtab only, local-exec), dlopen'ed, and not at all. The stand-in writer
# (tests/fixtures/ctx_standin.c) is a third-party writer of the same ABIs: it publishes
# hand-crafted label sets, and its GD-dialect build exercises the DTPMOD64/DTPOFF64 path.
FX        := $(B)/tests/fixtures
FX_TLS    := -ftls-model=global-dynamic -mtls-dialect=gnu2
FX_CFLAGS  = $(ALL_CFLAGS) -fPIC
FX_BINS   := $(addprefix $(FX)/,tls_fx_so tls_fx_pie tls_fx_nopie tls_fx_nodynlist \
                tls_fx_dlopen tls_fx_none tls_fx_gd tls_fx_raw tls_fx_maponly tls_fx_late)
TEST_TARGETS += $(FX)/libctxstandin.so $(FX)/libctxstandin_gd.so $(FX_BINS)

$(FX)/ctx_standin.o: tests/fixtures/ctx_standin.c
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(FX_CFLAGS) $(FX_TLS) -c $< -o $@
$(FX)/ctx_standin_gd.o: tests/fixtures/ctx_standin.c
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(FX_CFLAGS) -ftls-model=global-dynamic -c $< -o $@
$(FX)/libctxstandin.so: $(FX)/ctx_standin.o
	$(Q)$(CC) -shared -Wl,-soname,libctxstandin.so $(ALL_LDFLAGS) -o $@ $<
$(FX)/libctxstandin_gd.so: $(FX)/ctx_standin_gd.o
	$(Q)$(CC) -shared -Wl,-soname,libctxstandin_gd.so $(ALL_LDFLAGS) -o $@ $<

FX_SRC  := tests/fixtures/tls_fixture.c
FX_LINK  = $(CC) $(ALL_CFLAGS) -o $@
FX_RPATH := -Wl,-rpath,'$$ORIGIN'
FX_LIBCTX_RPATH := -Wl,-rpath,'$$ORIGIN/../..'
FX_DYNLIST := -Wl,--dynamic-list=libctx/libctx.dynlist

$(FX)/tls_fx_so: $(FX_SRC) $(B)/libctx.so
	@echo "  FIXTURE $@"
	$(Q)mkdir -p $(@D)
	$(Q)$(FX_LINK) $< -L$(B) -lctx $(FX_LIBCTX_RPATH) $(ALL_LDFLAGS) -lpthread
$(FX)/tls_fx_pie: $(FX_SRC) $(LIBCTX_A) libctx/libctx.dynlist
	$(Q)mkdir -p $(@D)
	$(Q)$(FX_LINK) -fPIE -pie $< $(LIBCTX_A) $(FX_DYNLIST) $(ALL_LDFLAGS) -lpthread
$(FX)/tls_fx_nopie: $(FX_SRC) $(LIBCTX_A) libctx/libctx.dynlist
	$(Q)mkdir -p $(@D)
	$(Q)$(FX_LINK) -fno-pie -no-pie $< $(LIBCTX_A) $(FX_DYNLIST) $(ALL_LDFLAGS) -lpthread
# local-exec, symbols only in .symtab (no dynamic list): the locator's .symtab fallback
$(FX)/tls_fx_nodynlist: $(FX_SRC) $(LIBCTX_A)
	$(Q)mkdir -p $(@D)
	$(Q)$(FX_LINK) -fno-pie -no-pie $< $(LIBCTX_A) $(ALL_LDFLAGS) -lpthread
$(FX)/tls_fx_dlopen: $(FX_SRC)
	$(Q)mkdir -p $(@D)
	$(Q)$(FX_LINK) -DFX_DLOPEN $< $(ALL_LDFLAGS) -ldl -lpthread
$(FX)/tls_fx_none: $(FX_SRC)
	$(Q)mkdir -p $(@D)
	$(Q)$(FX_LINK) -DFX_NONE $< $(ALL_LDFLAGS) -lpthread
# dlopens libctx only when told (stdin): context that appears after the first look
$(FX)/tls_fx_late: tests/fixtures/tls_fx_late.c
	$(Q)mkdir -p $(@D)
	$(Q)$(FX_LINK) $< $(ALL_LDFLAGS) -ldl
# maps a library like ld.so but never relocates it: the "not relocated yet" state
$(FX)/tls_fx_maponly: tests/fixtures/tls_fx_maponly.c
	$(Q)mkdir -p $(@D)
	$(Q)$(FX_LINK) $< $(ALL_LDFLAGS)
# the stand-in writer: hand-crafted sets (TLSDESC) and the GD dialect (DTPMOD64/DTPOFF64)
$(FX)/tls_fx_raw: $(FX_SRC) $(FX)/libctxstandin.so
	$(Q)$(FX_LINK) -DFX_RAW $< -L$(FX) -lctxstandin $(FX_RPATH) $(ALL_LDFLAGS) -lpthread
$(FX)/tls_fx_gd: $(FX_SRC) $(FX)/libctxstandin_gd.so
	$(Q)$(FX_LINK) $< -L$(FX) -lctxstandin_gd $(FX_RPATH) $(ALL_LDFLAGS) -lpthread

# benchmark: tls_locate and ctx_read_user costs (printed, not asserted)
BENCHES += $(B)/bench/bench_tls_locate
$(B)/bench/bench_tls_locate: bench/bench_tls_locate.c $(TEST_HELPERS) $(B)/libctxprof.a $(FX)/tls_fx_so
	@echo "  LD      $@"
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(ALL_CFLAGS) -Idaemon -Itests -o $@ $< $(TEST_HELPERS) $(B)/libctxprof.a $(DAEMON_LIBS) $(ALL_LDFLAGS)
