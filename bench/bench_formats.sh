#!/bin/bash
# SPDX-License-Identifier: MIT
# Output size per format on the labelled demo: five `ctxprof record -p` of the same demo_app
# (2 workers, spans + route/tier labels) run side by side for BENCH_SECONDS (default 60) at
# 99 Hz, one each to JFR, pprof (.pb.gz), OTLP (.otlp), folded and HTML; bytes per sample of
# each (samples: what reached that output). Then async-profiler's converter (../shared/tools)
# turns the same JFR into pprof (gzip'd, `-o pb.gz`) and OTLP (`-o otlp`), printed beside
# ctxprof's own, and `ctxprof report --format otlp` converts the same JFR. Issue 11's goals
# (JFR <= 20 B/sample with context; pprof smaller than the converter's) are printed, not
# asserted. The runs share 2 vCPUs with the demo: sample counts differ by a few percent.
set -u
B=${BENCH_BUILD:-build}
secs=${BENCH_SECONDS:-60}
cd "$(dirname "$0")/.."
[ "$(id -u)" = 0 ] || { echo "bench_formats: SKIPPED (needs root)"; exit 0; }
CONV=${CTXPROF_TOOLS:-../shared/tools}/async-profiler-converter/jfr-converter.jar
tmp=$(mktemp -d)
app=
trap 'rm -rf "$tmp"; [ -n "$app" ] && kill $app 2>/dev/null' EXIT
"$B/demo/demo_app" $((secs + 30)) 2 &
app=$!
sleep 0.5
pids=()
for f in demo.jfr demo.pb.gz demo.otlp demo.folded demo.html; do
	"$B/ctxprof" record -q -p $app -d "${secs}s" --stats-json "$tmp/$f.stats" -o "$tmp/$f" \
		2>"$tmp/$f.err" &
	pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || { cat "$tmp"/*.err; exit 1; }; done
kill $app
wait $app 2>/dev/null
app=

# samples that reached an output: received less those held back before a TLS location
reached() { jq -r '.received - .ctx_missing.before_location' "$1"; }
line() { # NAME FILE SAMPLES [NOTE]
	awk -v name="$1" -v s="$(stat -c %s "$2")" -v n="$3" -v note="${4:-}" \
		'BEGIN { printf "  %-28s %9d bytes %7d samples %6.1f B/sample %s\n", name, s, n, n ? s / n : 0, note }'
}
echo "output size, demo_app ${secs}s at 99 Hz, 5 recorders side by side:"
jfr_n=$("$B/ctxprof" report "$tmp/demo.jfr" | awk '$1 == "jdk.ExecutionSample" { print $2 }')
ctx=$("$B/ctxprof" report "$tmp/demo.jfr" | sed -n 's/^samples: .*with context (labels or a span) //p')
line "JFR" "$tmp/demo.jfr" "${jfr_n:-0}" "(${ctx:-0} with context; goal 20)"
[ -f "$tmp/demo.jfr.labels.pb" ] && line "  + labels.pb (Pyroscope)" "$tmp/demo.jfr.labels.pb" "${jfr_n:-0}"
pp_n=$(reached "$tmp/demo.pb.gz.stats")
line "pprof (gzip)" "$tmp/demo.pb.gz" "$pp_n"
gzip -dc "$tmp/demo.pb.gz" >"$tmp/demo.pb"
line "pprof (uncompressed)" "$tmp/demo.pb" "$pp_n"
ot_n=$(reached "$tmp/demo.otlp.stats")
line "OTLP (uncompressed)" "$tmp/demo.otlp" "$ot_n"
gzip -c "$tmp/demo.otlp" >"$tmp/demo.otlp.gz"
line "OTLP (gzip, as uploaded)" "$tmp/demo.otlp.gz" "$ot_n"
"$B/ctxprof" report --format otlp -o "$tmp/rep.otlp" "$tmp/demo.jfr" 2>/dev/null &&
	line "OTLP from the JFR (report)" "$tmp/rep.otlp" "${jfr_n:-0}"
line "folded" "$tmp/demo.folded" "$(awk '{ n += $NF } END { print n + 0 }' "$tmp/demo.folded")"
line "HTML (page + profile)" "$tmp/demo.html" "$(reached "$tmp/demo.html.stats")" \
	"($(stat -c %s build/gen/flame_page.html 2>/dev/null || echo '?') bytes are the page itself)"
if [ -f "$CONV" ] && command -v java >/dev/null; then
	if java -jar "$CONV" -o pb.gz "$tmp/demo.jfr" "$tmp/ap.pb.gz" >/dev/null 2>"$tmp/ap.err" &&
		java -jar "$CONV" -o pprof "$tmp/demo.jfr" "$tmp/ap.pb" >/dev/null 2>>"$tmp/ap.err"; then
		line "async-profiler pprof (gzip)" "$tmp/ap.pb.gz" "${jfr_n:-0}" "(same JFR; no labels, no spans)"
		line "async-profiler pprof (raw)" "$tmp/ap.pb" "${jfr_n:-0}"
		if java -jar "$CONV" -o otlp "$tmp/demo.jfr" "$tmp/ap.otlp" >/dev/null 2>>"$tmp/ap.err"; then
			line "async-profiler OTLP (raw)" "$tmp/ap.otlp" "${jfr_n:-0}" "(same JFR; no labels, per-sample timestamps)"
		fi
	else
		echo "  async-profiler converter failed: $(head -3 "$tmp/ap.err")"
	fi
else
	echo "  async-profiler converter: SKIPPED (needs $CONV and java)"
fi
