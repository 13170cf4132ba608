# libctx: the in-process context library. Built with gcc (clang 14 cannot emit TLSDESC).
# Owner of this fragment: libctx.
LIBCTX_SOVER   := 1
LIBCTX_VERSION := 1.0.0
LIBCTX_SRCS    := $(wildcard libctx/*.c)
LIBCTX_PIC_OBJS := $(patsubst %.c,$(B)/pic/%.o,$(LIBCTX_SRCS))
LIBCTX_OBJS    := $(patsubst %.c,$(B)/%.o,$(LIBCTX_SRCS))
# TLS model flags required by the Custom Labels ABI for a shared object.
LIBCTX_TLS     := -ftls-model=global-dynamic -mtls-dialect=gnu2

LIBCTX_SO  := $(B)/libctx.so.$(LIBCTX_VERSION)
LIBCTX_A   := $(B)/libctx.a
ALL_TARGETS += $(LIBCTX_SO) $(B)/libctx.so $(LIBCTX_A)

$(B)/pic/libctx/%.o: libctx/%.c
	@echo "  CC      $< (pic)"
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(ALL_CFLAGS) -fPIC $(LIBCTX_TLS) -fvisibility=hidden -MMD -MP -c $< -o $@

$(LIBCTX_SO): $(LIBCTX_PIC_OBJS) libctx/libctx.map
	@echo "  LD      $@"
	$(Q)$(CC) -shared -Wl,-soname,libctx.so.$(LIBCTX_SOVER) -Wl,--version-script=libctx/libctx.map \
		-Wl,-z,now -Wl,-z,relro $(ALL_LDFLAGS) -o $@ $(LIBCTX_PIC_OBJS) -lpthread

$(B)/libctx.so: $(LIBCTX_SO)
	$(Q)ln -sf $(notdir $<) $(B)/libctx.so.$(LIBCTX_SOVER) && ln -sf $(notdir $<) $@

$(LIBCTX_A): $(LIBCTX_PIC_OBJS)
	$(Q)rm -f $@ && ar rcs $@ $^

-include $(wildcard $(B)/pic/libctx/*.d)
