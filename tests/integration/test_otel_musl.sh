#!/bin/bash
# SPDX-License-Identifier: MIT
# ctxprof-test: parallel
# The OpenTelemetry thread context of musl processes (musl-gcc, Debian's musl-tools: mapped
# as /usr/lib/x86_64-linux-musl/libc.so, a name no pattern matches), written by
# tests/workloads/otel_spec_writer.c in a legacy general-dynamic library (DTPMOD64: musl's
# DTV), a TLSDESC library (static offset), an initial-exec library, and the TLSDESC library
# dlopen'ed (musl gives it dynamic TLS: musl's DTV). Every work_A/work_B sample has exactly
# its phase's context and the process is named checkout-svc (otel_exact, otel_lib.sh).
. "$(dirname "$0")/sampler_lib.sh"
. "$(dirname "$0")/otel_lib.sh"
[ -x "$WL/wl_otel_musl_gd" ] || need_oracle "musl-gcc (musl-tools; rebuild with make test-bins)"

otel_exact musl_gd "$WL/wl_otel_musl_gd"
otel_exact musl_desc "$WL/wl_otel_musl_desc"
otel_exact musl_ie "$WL/wl_otel_musl_ie"
WL_OTEL_LIB=$(realpath "$WL/libotelw_musl_desc.so") otel_exact musl_dlopen "$WL/wl_otel_musl_dlopen"
echo PASS
