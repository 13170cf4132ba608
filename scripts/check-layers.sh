#!/bin/bash
# SPDX-License-Identifier: MIT
# check-layers.sh — the daemon's include rule, checked: includes only go down the stages.
#
#   cli → service → sink → {engine, jfr, stack}; engine → {tls, stack}; every stage → util
#
# (→ is transitive: cli may include anything below it.) Every include of a daemon header
# names its folder ("engine/sampler.h"); public headers from include/ (ctx/, ctxprof/),
# the generated BPF skeletons and protobuf-c code (*.pb-c.h) are allowed everywhere. Exit 1
# with file:line of each upward, unqualified or unknown include, and of each include cycle.
#   scripts/check-layers.sh [DAEMON_DIR]
set -u
dir=${1:-daemon}

declare -A below=(
	[cli]="service sink engine jfr stack tls util"
	[service]="sink engine jfr stack tls util"
	[sink]="engine jfr stack tls util"
	[engine]="tls stack util"
	[jfr]="util"
	[stack]="util"
	[tls]="util"
	[util]=""
)

bad=0
edges=$(mktemp)
trap 'rm -f "$edges" "$edges.err"' EXIT

include_re='^[[:space:]]*#[[:space:]]*include[[:space:]]*"([^"]*)"'
complain() { echo "$1: $2" >&2; bad=1; }

# the folders first, then every include line of every file from one grep (a process per
# file or per line costs tens of seconds on a loaded 2-vCPU host)
for f in "$dir"/*/*.[ch]; do
	rel=${f#"$dir"/}
	layer=${rel%%/*}
	[ -n "${below[$layer]+set}" ] ||
		complain "$f" "folder '$layer' is not a stage this check knows (add it to scripts/check-layers.sh)"
done
while IFS=: read -r f ln text; do
	rel=${f#"$dir"/}
	layer=${rel%%/*}
	[ -n "${below[$layer]+set}" ] || continue
	[[ $text =~ $include_re ]] || continue
	inc=${BASH_REMATCH[1]}
	case $inc in ctx/* | ctxprof/* | *.skel.h | *.pb-c.h) continue ;; esac
	if [[ $inc != */* ]]; then
		complain "$f:$ln" "#include \"$inc\" must name its stage folder"
		continue
	fi
	if [ ! -f "$dir/$inc" ]; then
		complain "$f:$ln" "#include \"$inc\": no such header in $dir/"
		continue
	fi
	target=${inc%%/*}
	echo "$rel $inc"
	[ "$target" = "$layer" ] && continue
	case " ${below[$layer]} " in
	*" $target "*) ;;
	*) complain "$f:$ln" "#include \"$inc\" goes up or across: $layer may include only ${below[$layer]:-nothing}" ;;
	esac
done < <(grep -Hn '#[[:space:]]*include' "$dir"/*/*.[ch]) >"$edges"

# tsort reports every cycle of the file graph on stderr ("input contains a loop").
if ! tsort "$edges" >/dev/null 2>"$edges.err"; then
	complain "include cycle" "$(grep -v 'input contains a loop' "$edges.err" | sed 's/^tsort: //' | tr '\n' ' ')"
fi

[ $bad = 0 ] && echo "layers: $(wc -l <"$edges") includes, all going down the stages"
exit $bad
