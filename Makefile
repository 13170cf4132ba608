# SPDX-License-Identifier: MIT
# ctxprof — the only build entry.
#
#   make            build the product: libctx (.so/.a/.pc), the BPF skeletons, the ctxprof
#                   binary and its man page; needs the build dependencies only (`make deps`)
#   make test       install missing packages (build + test), build normal + ASan/UBSan + TSan
#                   variants with the test programs, run every test, print one summary line
#   make bench      build and run the benchmarks (numbers printed, nothing asserted)
#   make demo       profile the built-in demo workload and write a JFR file
#   make deps       install the Debian packages the build needs (Debian's Build-Depends)
#   make deps-test  install what the tests and benchmarks need on top (Debian and npm)
#   make install    PREFIX=/usr/local DESTDIR=
#
# Every rule writes below $(B). Sanitizer variants are the same rules run again with
# B=build/asan or B=build/tsan and extra flags (see `test`). Each area of the tree
# owns one fragment in mk/*.mk that appends to the variables below; no fragment
# edits another's.

B        ?= build
V        ?= 0
PREFIX   ?= /usr/local
DESTDIR  ?=
SANFLAGS ?=

CC       := gcc
CLANG    ?= clang
BPFTOOL  ?= bpftool
LLVM_STRIP ?= $(shell command -v llvm-strip-14 || command -v llvm-strip || echo llvm-strip)

WARN     := -Wall -Wextra -Werror
CFLAGS   ?= -O2 -g
# -fno-omit-frame-pointer: ctxprof and its tests are profiled by ctxprof itself.
ALL_CFLAGS = -std=gnu11 $(WARN) $(CFLAGS) -fno-omit-frame-pointer -D_GNU_SOURCE \
             -Iinclude -I$(B)/gen -I$(B)/gen/otel $(SANFLAGS)
ALL_LDFLAGS = $(LDFLAGS) $(SANFLAGS)

# Filled in by the fragments.
UNIT_TESTS  :=   # Criterion/plain test executables, run in the normal and ASan variants
PLAIN_TESTS :=   # lints and packaging checks: the normal variant only
ROOT_TESTS  :=   # need root + BTF + perf events; run in the normal variant only
ROOT_SAN_TESTS := # root tests also run in the ASan/UBSan variant (process churn)
TSAN_TESTS  :=   # concurrent code: also run in the TSan variant
BENCHES     :=   # programs or scripts run by `make bench`
ALL_TARGETS :=   # what `make` builds: the product, from the build dependencies alone
TEST_TARGETS :=  # what tests and benches run besides the product (fixtures, workloads,
                 # checkers); built by `make test-bins`, may need test dependencies
CLEAN_EXTRA :=

ifeq ($(V),0)
Q := @
else
Q :=
endif

.PHONY: all
all: deps-check real-all

include $(sort $(wildcard mk/*.mk))

.PHONY: real-all
real-all: $(ALL_TARGETS)

# ---------------------------------------------------------------------------
# packages: build dependencies (mk/*.pkgs, Debian's Build-Depends) apart from what the tests
# and benchmarks need on top (mk/*.test.pkgs and the npm packages of package-lock.json)
.PHONY: deps deps-check deps-test
deps:
	$(Q)scripts/deps.sh install build

deps-check:
	$(Q)scripts/deps.sh check build

deps-test: deps
	$(Q)scripts/deps.sh install test
	$(Q)scripts/npm-deps.sh install

# ---------------------------------------------------------------------------
# tests: three variants, one runner, one summary
$(B)/tests.list: FORCE
	$(Q)mkdir -p $(B)
	$(Q){ for t in $(UNIT_TESTS); do echo "unit $$t"; done; \
	      for t in $(filter-out $(ROOT_SAN_TESTS),$(ROOT_TESTS)); do echo "root $$t"; done; \
	      for t in $(ROOT_SAN_TESTS); do echo "rootsan $$t"; done; \
	      for t in $(TSAN_TESTS); do echo "tsan $$t"; done; \
	      for t in $(PLAIN_TESTS); do echo "plain $$t"; done; } > $@.tmp && mv $@.tmp $@

.PHONY: test-bins
test-bins: real-all $(TEST_TARGETS) $(UNIT_TESTS) $(ROOT_TESTS) $(TSAN_TESTS) $(PLAIN_TESTS) $(B)/tests.list

# the TSan variant runs its tsan_* unit tests only (tests/run.sh): not the rest of test-bins
.PHONY: tsan-bins
tsan-bins: $(TSAN_TESTS) $(B)/tests.list

ASAN := -fsanitize=address,undefined -fno-sanitize-recover=undefined
TSAN := -fsanitize=thread
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
# tests side by side: waiting more than computing, they overlap beyond the CPUs (two more jobs
# than CPUs: the side-by-side phase took 289 s on 2 CPUs, against 315-348 s with one more)
TEST_JOBS ?= $(shell echo $$(( $$(nproc 2>/dev/null || echo 2) + 2 )))

# tests/run.sh runs up to $(JOBS) tests side by side (the root tests marked so: their own
# targets, no rate) and the rest alone. `make check` is the tier for every change: the normal
# build's unit, lint and packaging tests and the root tests marked `ctxprof-test: check`.
.PHONY: test check
test: deps-test
	$(Q)$(MAKE) --no-print-directory -j$(JOBS) test-bins
	$(Q)$(MAKE) --no-print-directory -j$(JOBS) B=build/asan SANFLAGS="$(ASAN)" test-bins
	$(Q)$(MAKE) --no-print-directory -j$(JOBS) B=build/tsan SANFLAGS="$(TSAN)" tsan-bins
	$(Q)tests/run.sh -j $(TEST_JOBS) build build/asan build/tsan

check: deps-test
	$(Q)$(MAKE) --no-print-directory -j$(JOBS) test-bins
	$(Q)tests/run.sh -j $(TEST_JOBS) --tier check build

.PHONY: bench
bench: deps-test
	$(Q)$(MAKE) --no-print-directory real-all $(TEST_TARGETS) $(BENCHES)
	$(Q)for b in $(BENCHES); do echo "== $$b"; $$b || echo "bench $$b failed (exit $$?)"; done

# ---------------------------------------------------------------------------
# formatting: the tests run `format-check`
FORMAT_SRCS = $(shell git ls-files '*.c' '*.h' 2>/dev/null | grep -v '^include/vmlinux')
.PHONY: format format-check
format:
	$(Q)clang-format -i $(FORMAT_SRCS)
format-check:
	$(Q)clang-format --dry-run --Werror $(FORMAT_SRCS)

.PHONY: clean
clean:
	rm -rf build $(CLEAN_EXTRA)

.PHONY: FORCE
FORCE:
