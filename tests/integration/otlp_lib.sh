# SPDX-License-Identifier: MIT
# otlp_lib.sh — helpers for the OTLP tests (sourced after sampler_lib.sh or daemon_lib.sh):
# skips (77) without protoc or the UPSTREAM opentelemetry-proto files (../shared/tools, or
# $CTXPROF_TOOLS); T the tools, P the upstream .proto tree, CHECK otlp_check.py,
# otlp_decode FILE.otlp OUT.txt: protoc --decode against the upstream schema (never the
# project's copy), or fail; otlp_sent_samples and written_samples: the samples of every
# request received (decoded) and of every finished file in $OUT.
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
# the samples of every OTLP request received ($RECV/req-N/otlp.txt, decoded)
otlp_sent_samples() {
	local d
	for d in "$RECV"/req-[0-9]*; do
		[ -f "$d/otlp.txt" ] && $CHECK stacks "$d/otlp.txt"
	done | awk '{ n += $NF } END { print n + 0 }'
}
# the samples of every finished file in $OUT (`ctxprof report --format collapsed`)
written_samples() {
	local f
	for f in "$OUT"/ctxprof-*.jfr; do
		"$CTXPROF" report --format collapsed "$f" 2>/dev/null
	done | awk '{ n += $NF } END { print n + 0 }'
}
