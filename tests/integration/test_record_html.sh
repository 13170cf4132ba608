#!/bin/bash
# SPDX-License-Identifier: MIT
# ctxprof-test: parallel
# HTML flame graph (`report --html FILE.jfr`, `record -o FILE.html`): headless Chromium
# (Debian's, driven by playwright-core, tests/js/flame_check.js) opens the page from
# file:// with every other request refused; the graph renders with no script error; the
# unfiltered root is every sample; choosing route=/checkout in the filter narrows the graph
# to exactly the samples `ctxprof report` attributes to /checkout, with handle_checkout and
# neither handle_search nor handle_login in it; splitting by tier puts a tier=VALUE frame
# per tier above the root that add up to it; searching finds handle_checkout's samples and
# clicking its frame zooms it to the chart's width. Screenshots: $B/test-artifacts/html_*.png.
. "$(dirname "$0")/sampler_lib.sh"

[ -x /usr/bin/chromium ] || need_oracle "Debian's chromium (make deps-test)"
[ -f node_modules/playwright-core/package.json ] || need_oracle "playwright-core in node_modules (make deps-test)"
command -v node >/dev/null || need_oracle "node (make deps-test)"
ART=$B/test-artifacts
mkdir -p "$ART"
DEMO=$B/demo/demo_app
CHECKOUT='["label","route","/checkout"]'

# flame_check PAGE SHOT [FILTER [GROUP]] > $TMP/fc.json (what the page shows, as JSON)
flame_check() {
	rm -rf "$TMP/chromium-profile"
	timeout 120 node tests/js/flame_check.js "$1" "$2" "$TMP/chromium-profile" "${@:3}" \
		>"$TMP/fc.json" 2>"$TMP/fc.err" || {
		cat "$TMP/fc.err"
		fail "chromium could not open or drive $1"
	}
}
fc() { jq -r "$1" "$TMP/fc.json"; }
# checks common to every page: offline, no script error, the filter shows the right stacks
check_page() { # TOTAL CHECKOUT
	[ "$(fc '.requests_blocked | length')" = 0 ] || fail "the page asked the network: $(fc .requests_blocked)"
	[ "$(fc '.errors | length')" = 0 ] || fail "script errors: $(fc .errors)"
	[ "$(fc .initial.shown)" = "$1" ] || fail "page shows $(fc .initial.shown) samples, want $1"
	[[ "$(fc .initial.root)" == "all ($1 samples, 100.00%)" ]] || fail "root frame: $(fc .initial.root)"
	[ "$(fc .initial.frames)" -gt 3 ] || fail "no flame graph drawn ($(fc .initial.frames) frames)"
	[ "$(fc .filtered.shown)" = "$2" ] ||
		fail "route=/checkout shows $(fc .filtered.shown) samples, want $2"
	[[ "$(fc .filtered.root)" == "all ($2 samples, 100.00%)" ]] ||
		fail "root frame after the filter: $(fc .filtered.root)"
	fc '.filtered.names[]' | grep -qx handle_checkout || fail "no handle_checkout under /checkout"
	! fc '.filtered.names[]' | grep -qx 'handle_search\|handle_login' ||
		fail "another route's handler under /checkout: $(fc .filtered.names)"
	# search (the library's total of the matching frames) and zoom (a click widens a frame
	# to the whole chart)
	local found
	found=$(fc .search | sed -n "s/^search: \([0-9]*\) of $2 total samples.*/\1/p")
	[ -n "$found" ] && [ "$found" -gt 0 ] && [ "$found" -le "$2" ] ||
		fail "search for handle_checkout: '$(fc .search)'"
	awk -v f="$(fc .zoom.frame_width)" -v c="$(fc .zoom.chart_width)" \
		'BEGIN { exit !(c > 0 && f > c - 1 && f < c + 1) }' ||
		fail "zoom: the clicked frame is $(fc .zoom.frame_width) of $(fc .zoom.chart_width) px"
	# split by tier: one tier=VALUE frame per tier, adding up to the root
	local sum
	sum=$(fc '.filtered.groups[]' | sed -n 's/^tier=[a-z]* (\([0-9]*\) samples.*/\1/p' |
		awk '{ n += $1 } END { print n + 0 }')
	[ "$(fc '.filtered.groups | length')" = 3 ] && [ "$sum" = "$2" ] ||
		fail "split by tier: $(fc .filtered.groups), want 3 tiers adding up to $2"
}

# report --html of a recording, against ctxprof report's own totals
record_ok 60 -d 4s -o "$TMP/d.jfr" -- "$DEMO" 8 2
"$CTXPROF" report "$TMP/d.jfr" >"$TMP/report" || fail "ctxprof report failed"
total=$(sed -n 's/^samples: *\([0-9]*\),.*/\1/p' "$TMP/report")
checkout=$(sed -n 's|^    /checkout = \([0-9]*\) samples$|\1|p' "$TMP/report")
[ -n "$total" ] && [ -n "$checkout" ] && [ "$checkout" -gt 0 ] ||
	fail "no /checkout total in ctxprof report"
"$CTXPROF" report --html -o "$TMP/d.html" "$TMP/d.jfr" || fail "report --html failed"
flame_check "$TMP/d.html" "$ART/html_report.png" "$CHECKOUT" '["key","tier"]'
echo "report --html: $(fc .initial.root); /checkout $(fc .filtered.root) (report: $checkout of $total)"
check_page "$total" "$checkout"
for r in /checkout /search /login; do
	fc '.options[]' | grep -qxF "[\"label\",\"route\",\"$r\"]" || fail "no filter option route=$r"
done

# record -o FILE.html: the page's total is what reached the output
record_ok 60 -d 4s -o "$TMP/r.html" -- "$DEMO" 8 2
stats=$(($(stat_json .received) - $(stat_json .ctx_missing.before_location)))
# the samples the embedded profile attributes to /checkout (rows: [count, stack, thread,
# span, key, value, ...] over strings)
rchk=$(python3 - "$TMP/r.html" <<'PY'
import json, re, sys
page = open(sys.argv[1], encoding="utf-8").read()
p = json.loads(re.search(r'<script type="application/json" id="profile">\n(.*?)\n</script>', page, re.S).group(1))
s = p["strings"]
print(sum(r[0] for r in p["rows"] if any(s[r[i]] == "route" and s[r[i + 1]] == "/checkout" for i in range(4, len(r), 2))))
PY
)
flame_check "$TMP/r.html" "$ART/html_record.png" "$CHECKOUT" '["key","tier"]'
echo "record -o x.html: $(fc .initial.root) (recorded $stats); /checkout $(fc .filtered.root) (embedded: $rchk)"
check_page "$stats" "$rchk"
echo PASS
