# SPDX-License-Identifier: MIT
# BPF programs: bpf/NAME.bpf.c -> clang -target bpf -> $(B)/gen/NAME.skel.h (struct NAME_bpf).
#
# vmlinux.h is generated at build time from the running kernel's BTF, not committed:
# it is 2.8 MB of generated text tied to one kernel, regenerating takes 0.2 s, and CO-RE
# relocations make the compiled object portable to other BTF kernels anyway. A build host
# without /sys/kernel/btf/vmlinux can pass VMLINUX_BTF=/path/to/vmlinux (any BTF file).
VMLINUX_BTF ?= /sys/kernel/btf/vmlinux
BPF_SRCS  := $(wildcard bpf/*.bpf.c)
BPF_SKELS := $(patsubst bpf/%.bpf.c,$(B)/gen/%.skel.h,$(BPF_SRCS))
BPF_CFLAGS := -O2 -g -target bpf -D__TARGET_ARCH_x86 -Wall -Werror -Iinclude -Ibpf -I$(B)/gen
ALL_TARGETS += $(BPF_SKELS)

$(B)/gen/vmlinux.h:
	$(Q)mkdir -p $(@D)
	@test -r $(VMLINUX_BTF) || { echo "no kernel BTF at $(VMLINUX_BTF): set VMLINUX_BTF" >&2; exit 1; }
	$(Q)$(BPFTOOL) btf dump file $(VMLINUX_BTF) format c > $@.tmp && mv $@.tmp $@

$(B)/bpf/%.bpf.o: bpf/%.bpf.c $(B)/gen/vmlinux.h
	@echo "  BPF     $<"
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) $(BPF_CFLAGS) -MMD -MP -MT $@ -c $< -o $@.full
	$(Q)$(LLVM_STRIP) -g $@.full -o $@ && rm -f $@.full

$(B)/gen/%.skel.h: $(B)/bpf/%.bpf.o
	$(Q)$(BPFTOOL) gen skeleton $< > $@.tmp && mv $@.tmp $@
# Kept, not deleted as an intermediate: once its .d names it, a deleted object is a missing
# target, and the next make (a packaging test's `make install` while other tests run the
# binary) rebuilt the skeleton and relinked build/ctxprof under them ("Text file busy").
.SECONDARY: $(patsubst bpf/%.bpf.c,$(B)/bpf/%.bpf.o,$(BPF_SRCS))

-include $(wildcard $(B)/bpf/*.d)
