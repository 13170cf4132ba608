#!/bin/bash
# SPDX-License-Identifier: MIT
# ctxprof-test: pair, own
# OpenTelemetry thread context (OTEP 4947) and process context (OTEP 4719) read from a writer
# written from the specs (tests/workloads/otel_spec_writer.c, no libctx), in every link mode
# the OTEP requires: in the executable (local-exec, exported with --export-dynamic-symbol), in
# a TLSDESC shared library, a legacy general-dynamic one (DTPMOD64/DTPOFF64: the DTV walk),
# an initial-exec one (TPOFF64), dlopen'ed (static TLS from the surplus) and dlopen'ed with
# dynamic TLS (GLIBC_TUNABLES=glibc.rtld.optional_static_tls=0: the DTV walk of a TLSDESC).
# In each, over thousands of samples: every sample under work_A carries trace A, span A and
# the attributes of A named by the process context's key map (the last duplicate of
# http.route wins), every sample under work_B those of B; 0 wrong. The process is named by
# its service.name.
. "$(dirname "$0")/sampler_lib.sh"
. "$(dirname "$0")/otel_lib.sh"

run_mode exe - "$WL/wl_otel"
run_mode tlsdesc - "$WL/wl_otel_desc"
run_mode gd - "$WL/wl_otel_gd"
run_mode ie - "$WL/wl_otel_ie"
run_mode dlopen - "$WL/wl_otel_dlopen"
run_mode dlopen_dtv GLIBC_TUNABLES=glibc.rtld.optional_static_tls=0 "$WL/wl_otel_dlopen"
echo PASS
