# SPDX-License-Identifier: MIT
# otlp_lib.sh — helpers for the OTLP tests (sourced after sampler_lib.sh or daemon_lib.sh):
# skips (77) without protoc or the UPSTREAM opentelemetry-proto files (../shared/tools, or
# $CTXPROF_TOOLS); T the tools, P the upstream .proto tree, CHECK otlp_check.py, and
# otlp_decode FILE.otlp OUT.txt: protoc --decode against the upstream schema (never the
# project's copy), or fail.
command -v protoc >/dev/null || skip "needs protoc (Debian protobuf-compiler: make deps)"
T=${CTXPROF_TOOLS:-../shared/tools}
P=$T/otel-proto
[ -f "$P/opentelemetry/proto/collector/profiles/v1development/profiles_service.proto" ] ||
	skip "no upstream opentelemetry-proto in $P"
CHECK="python3 $(dirname "${BASH_SOURCE[0]}")/otlp_check.py"
otlp_decode() {
	protoc --proto_path="$P" \
		--decode=opentelemetry.proto.collector.profiles.v1development.ExportProfilesServiceRequest \
		opentelemetry/proto/collector/profiles/v1development/profiles_service.proto <"$1" >"$2" ||
		fail "protoc cannot decode $1 with the upstream schema"
}
