#!/bin/bash
# SPDX-License-Identifier: MIT
# ctxprof-test: parallel
# JIT frames named from the runtime's perf map (docs/perf-map.md): `ctxprof record -- node
# --perf-basic-prof app.js` names the hot JavaScript functions in the folded output exactly
# as `perf record -g` names them from the same /tmp/perf-PID.map (perf is run on the same
# workload here when it works), with no raw [unknown] address left in node's JIT code.
# The same in a container (pid and mount namespace, private /tmp: /tmp/perf-NSPID.map in the
# target's root), and for the JDK's map (jcmd PID Compiler.perfmap) and a compiled Java method.
# Hostile perf maps (a file the target, or another user, writes) are refused or cut and
# counted, and recording neither blocks nor fails: a 10 MB line and garbage lines
# (perf_map_bad_lines), millions of lines (perf_map_full), a map owned by another user
# (not_owner), a FIFO (not_regular).
. "$(dirname "$0")/sampler_lib.sh"

command -v node >/dev/null || need_oracle "node (nodejs, make deps-test)"

cat >"$TMP/app.js" <<'JS'
function hot(n) { let s = 0; for (let i = 0; i < n; i++) s += Math.sqrt(i) * (i & 7); return s; }
function outer() { let t = 0; for (let k = 0; k < 200; k++) t += hot(20000); return t; }
const end = Date.now() + (+process.argv[2] || 3000);
let r = 0;
while (Date.now() < end) r += outer();
console.log(r > 0 ? "done" : "zero");
JS
MAPS=()
trap 'rm -rf "$TMP" "${MAPS[@]}"' EXIT
CTXPROF=$(realpath "$CTXPROF")
cd "$TMP" || fail "no $TMP" # node and perf write their logs to the working directory

# The frames of app.js (JIT code) in folded file $1, one distinct name a line.
js_names() {
	sed -E 's/ [0-9]+$//' "$1" | tr ';' '\n' | grep -F "$TMP/app.js" | sort -u
}

# Every function perf names in more than 5% of its frames (PERF_NAMES: "COUNT NAME" lines),
# ctxprof names the same way (OURS: one name a line).
same_as_perf() { # PERF_NAMES OURS
	local pt n name
	echo "perf names:"
	sed 's/^/  /' "$1"
	[ -s "$1" ] || fail "perf named no function of the workload"
	pt=$(awk '{ n += $1 } END { print n }' "$1")
	while read -r n name; do
		[ "$n" -gt $((pt / 20)) ] || continue
		# The script's top-level code (no function name: "JS:^ APP/app.js:1:1") runs once
		# and tiers up on its own schedule: one run (perf's, under load) had it baseline-
		# compiled in 400 frames, the other left it in the interpreter, whose frames are
		# node's builtin, not in the perf map. Only named functions compare across runs.
		[[ "$name" =~ ^JS:[*^~+]?\  ]] && { echo "  (not compared: $name, the script's top level)"; continue; }
		grep -qxF "$name" "$2" || fail "perf names '$name' ($n frames), ctxprof does not"
	done <"$1"
}

record_ok 60 -F 499 --format collapsed -o "$TMP/c.folded" -- node --perf-basic-prof "$TMP/app.js" 3000
pid=$(sed -nE '1s/^[^;]*-([0-9]+);.*/\1/p' "$TMP/c.folded")
[ -n "$pid" ] && MAPS+=("/tmp/perf-$pid.map")
[ -s "/tmp/perf-$pid.map" ] || fail "node wrote no /tmp/perf-$pid.map"
js_names "$TMP/c.folded" >"$TMP/ours"
echo "ctxprof names:"
sed 's/^/  /' "$TMP/ours"
grep -qE '^JS:\*hot .*/app\.js:1:[0-9]+$' "$TMP/ours" || fail "hot() not named JS:*hot FILE:LINE:COL"
grep -qE '^JS:\*outer .*/app\.js:2:[0-9]+$' "$TMP/ours" || fail "outer() not named"
# TurboFan inlines hot() into outer(): most samples are in one or the other
js=$(count "$TMP/c.folded" 'JS:\*(hot|outer) ')
total=$(count "$TMP/c.folded" '.')
[ "$js" -gt $((total / 2)) ] || fail "only $js of $total samples in hot() or outer()"
# node's JIT frames all named: no raw address of anonymous code left in node's stacks
raw=$(grep -E '^node-' "$TMP/c.folded" | grep -cE '\[unknown\]\+0x|\[perf-map\]\+0x')
echo "samples $total, in hot() or outer() $js, node stacks with an unnamed JIT frame: $raw"
[ "$raw" -le $((total / 20)) ] || fail "$raw stacks with unnamed anonymous-code frames"

# perf on the same workload: the functions it names from app.js, ctxprof names too.
if perf record -F 499 -g -o "$TMP/perf.data" -- node --perf-basic-prof "$TMP/app.js" 2000 \
	>"$TMP/perf.out" 2>&1 && perf script -i "$TMP/perf.data" -F pid,ip,sym >"$TMP/perf.txt" 2>/dev/null; then
	ppid=$(awk 'NF { print $1; exit }' "$TMP/perf.txt")
	MAPS+=("/tmp/perf-$ppid.map")
	# "IP SYM" lines: the symbol as perf prints it, the frames of app.js, by sample count
	sed -nE 's/^[[:space:]]*[0-9a-f]+ (.*app\.js.*)$/\1/p' "$TMP/perf.txt" | sed -E "s|$TMP/|APP/|" |
		sort | uniq -c | sort -rn >"$TMP/perf.names"
	sed -E "s|$TMP/|APP/|" "$TMP/ours" >"$TMP/ours.app"
	same_as_perf "$TMP/perf.names" "$TMP/ours.app"
else
	cat "$TMP/perf.out"
	oracle_missing "a working perf (linux-perf)"
fi

# In a container: its own pid namespace (node is pid 1 there and writes /tmp/perf-1.map) and
# mount namespace with a private /tmp: the map is reached only through the target's root, by
# the pid the target knows itself by.
record_ok 60 -F 499 --format collapsed -o "$TMP/ns.folded" -- unshare --pid --fork --mount \
	--mount-proc sh -c 'mount -t tmpfs tmpfs /tmp && exec node --perf-basic-prof -e "$0"' \
	"$(cat "$TMP/app.js")"
ns=$(count "$TMP/ns.folded" 'JS:\*(hot|outer) \[eval\]:[12]:')
echo "in a container: $ns samples in JS:*hot/outer [eval]"
[ "$ns" -gt 0 ] || fail "the container's /tmp/perf-1.map not read through the target's root"

# The JDK writes its perf map when asked (jcmd PID Compiler.perfmap, a snapshot of its code
# cache): the compiled Java method is named as perf names it.
JAVA_TIME=5000
jdk_map() { # PIDFILE: asks the JVM for its perf map until it names Hot.hot
	local p
	p=$(cat "$1" 2>/dev/null) && [ -n "$p" ] || return 1
	jcmd "$p" Compiler.perfmap >/dev/null 2>&1 && grep -q 'Hot\.hot' "/tmp/perf-$p.map" 2>/dev/null
}
# runs COMMAND... (a java Hot run under ctxprof or perf) in the background, asks for the map,
# waits for it to end
jdk_run() { # PIDFILE COMMAND...
	local pidfile=$1 pid rc
	shift
	"$@" &
	pid=$!
	wait_for 30 "the JVM's perf map naming Hot.hot" jdk_map "$pidfile"
	MAPS+=("/tmp/perf-$(cat "$pidfile").map")
	wait "$pid"
	rc=$?
	[ $rc = 0 ] || fail "$* failed (exit $rc)"
}
if command -v javac >/dev/null && command -v jcmd >/dev/null; then
	cat >"$TMP/Hot.java" <<'JAVA'
public class Hot {
    static double hot(int n) { double s = 0; for (int i = 0; i < n; i++) s += Math.sqrt(i) * (i & 7); return s; }
    static double outer() { double t = 0; for (int k = 0; k < 200; k++) t += hot(20000 + (k & 1)); return t; }
    public static void main(String[] a) {
        long end = System.currentTimeMillis() + Long.parseLong(a[0]);
        double r = 0;
        while (System.currentTimeMillis() < end) r += outer();
        System.out.println(r > 0 ? "done" : "zero");
    }
}
JAVA
	javac -d "$TMP" "$TMP/Hot.java" || fail "javac failed"
	JAVA_CMD="exec java -XX:+PreserveFramePointer -cp $TMP Hot $JAVA_TIME"
	jdk_run "$TMP/jpid" timeout 60 "$CTXPROF" record --stats-json "$TMP/jstats.json" -F 499 \
		--format collapsed -o "$TMP/j.folded" -- sh -c "echo \$\$ >$TMP/jpid; $JAVA_CMD" >"$TMP/jo" 2>"$TMP/je"
	sed -E 's/ [0-9]+$//' "$TMP/j.folded" | tr ';' '\n' | grep -F 'Hot.' | sort -u >"$TMP/jours"
	echo "ctxprof names (JDK):"
	sed 's/^/  /' "$TMP/jours"
	grep -qxF 'double Hot.hot(int)' "$TMP/jours" || fail "Hot.hot not named as the JDK's map names it"
	if [ -s "$TMP/perf.names" ]; then # perf works here
		jdk_run "$TMP/ppid" perf record -F 499 -g -o "$TMP/jperf.data" -- \
			sh -c "echo \$\$ >$TMP/ppid; $JAVA_CMD" >"$TMP/jperf.out" 2>&1
		perf script -i "$TMP/jperf.data" -F ip,sym 2>/dev/null |
			sed -nE 's/^[[:space:]]*[0-9a-f]+ (.*Hot\..*)$/\1/p' | sort | uniq -c | sort -rn >"$TMP/jperf.names"
		same_as_perf "$TMP/jperf.names" "$TMP/jours"
	fi
else
	oracle_missing "the JDK (javac, jcmd: openjdk-17-jdk-headless)"
fi

# Hostile perf maps, written where node (run without --perf-basic-prof: it writes none) has
# its pid before it starts: the sh's pid, which exec keeps. $PLANT covers every user address:
# read, it names each JIT frame JS:planted.
PLANT="0 7fffffffffff JS:planted"
hostile() { # WHAT NAMED(0|1) SETUP-SHELL-CODE: records; the counters in $TMP/stats.json
	local what=$1 named=$2 setup=$3
	record_ok 60 -F 499 --format collapsed -o "$TMP/h.folded" -- \
		sh -c "m=/tmp/perf-\$\$.map; echo \$m >$TMP/mapname; $setup; exec node $TMP/app.js 1500"
	MAPS+=("$(cat "$TMP/mapname")")
	local n
	n=$(count "$TMP/h.folded" '.')
	echo "$what: samples $n, target_files $(jq -c .target_files "$TMP/stats.json")"
	[ "$n" -gt 100 ] || fail "$what: only $n samples"
	local planted
	planted=$(count "$TMP/h.folded" 'JS:planted')
	if [ "$named" = 1 ]; then
		[ "$planted" -gt 0 ] || fail "$what: the valid line after the refused ones not read"
	else
		[ "$planted" = 0 ] || fail "$what: $planted samples named from what had to be refused"
	fi
	rm -f "$(cat "$TMP/mapname")"
}
hostile "10 MB line" 1 "{ head -c 10000000 /dev/zero | tr '\\\\0' a; echo; echo 'zz not a line'; echo '$PLANT'; } >\$m"
[ "$(stat_json .target_files.perf_map_bad_lines)" -ge 2 ] || fail "10 MB line and garbage not counted"
hostile "3 million lines" 0 "{ seq 3000000 | sed 's/.*/1 1 x/'; echo '$PLANT'; } >\$m"
[ "$(stat_json .target_files.perf_map_full)" -ge 1 ] || fail "3 million lines not cut and counted"
hostile "another user's map" 0 "echo '$PLANT' >\$m; chown nobody \$m"
[ "$(stat_json .target_files.not_owner)" -ge 1 ] || fail "another user's perf map not refused"
hostile "FIFO" 0 "mkfifo \$m"
[ "$(stat_json .target_files.not_regular)" -ge 1 ] || fail "FIFO perf map not refused"
oracle_verdict
echo PASS
