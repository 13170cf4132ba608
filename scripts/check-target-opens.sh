#!/bin/bash
# SPDX-License-Identifier: MIT
# check-target-opens.sh — no file a target names is opened but through util/target_open.h.
#
# Every line of daemon/*/*.c (comments and string literals left out) that calls an opener
# (open, openat, openat2, open64, fopen, freopen, creat, opendir, SYS_open*) or names an
# elfutils file finder (dwfl_*find_elf, dwfl_standard_find_debuginfo: they open files by the
# names a target's maps or ELF notes give) must be in a file of scripts/target-opens.allow,
# and a file may have at most the count of such lines listed there. Exit 1 with file:line of
# every line beyond that.
#   scripts/check-target-opens.sh [DAEMON_DIR [ALLOW_FILE]]
set -u
dir=${1:-daemon}
allow=${2:-$(dirname "$0")/target-opens.allow}
opener='(^|[^A-Za-z0-9_>.])(open|openat|openat2|open64|fopen|freopen|creat|opendir)[[:space:]]*\(|SYS_open|dwfl_[a-z_]*find_elf|dwfl_standard_find_debuginfo'

declare -A max
while IFS=$'\t' read -r file n _; do
	[[ -z "$file" || "$file" == \#* ]] && continue
	max[$file]=$n
done <"$allow"

# every hit of every file from one awk, "FILE:LINE:CODE" (a sed and two greps a file cost tens
# of seconds on a loaded 2-vCPU host); code only: /* ... */ and // comments, comment
# continuation lines and string literals dropped
declare -A hits
while IFS= read -r h; do
	f=${h%%:*}
	hits[$f]+="${h#*:}"$'\n'
done < <(awk -v re="$opener" '{
	l = $0
	gsub(/"([^"\\]|\\.)*"/, "\"\"", l)
	gsub(/\/\*.*\*\//, "", l)
	sub(/\/\/.*/, "", l)
	if (l ~ /^[ \t]*(\*|\/\*)/) next
	if (l ~ re) print FILENAME ":" FNR ":" l
}' "$dir"/*/*.c "$dir"/*/*.h)

bad=0
for f in "$dir"/*/*.c "$dir"/*/*.h; do
	rel=${f#"$dir"/}
	[ -n "${hits[$f]:-}" ] || continue
	n=$(printf '%s' "${hits[$f]}" | wc -l)
	allowed=${max[$rel]:-0}
	if [ "$n" -gt "$allowed" ]; then
		while IFS= read -r h; do
			echo "$f:${h%%:*}: ${h#*:}" >&2
		done < <(printf '%s' "${hits[$f]}")
		echo "$f: $n lines open a file or name an elfutils file finder, $allowed allowed ($allow): open a file a target names only through util/target_open.h" >&2
		bad=1
	elif [ "$n" -lt "$allowed" ]; then
		echo "note: $rel has $n such lines, $allowed allowed: lower its count in $allow" >&2
	fi
done
[ $bad = 0 ] && echo "target opens: every open in $dir is in $allow"
exit $bad
