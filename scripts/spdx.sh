#!/bin/bash
# SPDX-License-Identifier: MIT
# Every source file of the tree names its licence on an SPDX-License-Identifier line near its
# top (README.md, "Licence"; texts in LICENSES/). The licence follows the folder:
#   bpf/                GPL-2.0-only OR BSD-2-Clause
#   everything else     MIT
# Source files: C/C++ (.c .h .cpp), shell (.sh, .ci/run), Python, Java, JavaScript, proto,
# make (.mk, Makefile, packaging/debian/rules) and the HTML template; never web/vendor/ or proto/otel/opentelemetry/
# (third-party code under its own licence) or generated files (nothing under build/ is
# tracked).
#   scripts/spdx.sh --check [FILE...]   one line per file without the line or with another
#                                       licence than its folder's; exit 1 if any
#   scripts/spdx.sh --apply [FILE...]   add the line to every file without one (after a
#                                       shebang or a doctype line), in the file's comment
#                                       syntax; a file that names another licence is left
#                                       alone and reported. Idempotent.
# Without FILEs: every file git knows (tracked and new, not ignored) below the top directory.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2

licence_of() { # path: into $want
	case "$1" in
	bpf/*) want="GPL-2.0-only OR BSD-2-Clause" ;;
	*) want=MIT ;;
	esac
}

is_source() { # path
	case "$1" in
	web/vendor/* | proto/otel/opentelemetry/* | node_modules/* | build/*) return 1 ;;
	*.c | *.h | *.cpp | *.sh | *.py | *.java | *.js | *.proto | *.mk | *.html) return 0 ;;
	Makefile | */Makefile | packaging/debian/rules | .ci/run) return 0 ;;
	esac
	return 1
}

# the SPDX line in the file's comment syntax
spdx_line() { # path licence
	case "$1" in
	*.c | *.h | *.cpp | *.java | *.js | *.proto) echo "/* SPDX-License-Identifier: $2 */" ;;
	*.html) echo "<!-- SPDX-License-Identifier: $2 -->" ;;
	*) echo "# SPDX-License-Identifier: $2" ;;
	esac
}

# the identifier the file declares in its first 5 lines into $have ("" if none); bash only:
# four processes a file cost tens of seconds on a loaded 2-vCPU host
spdx_re='SPDX-License-Identifier: *(.*[^ ]) *$'
end_re='^(.*[^ ]) *(\*/|-->)$'
declared() { # path
	local line n=0
	have=
	while [ $n -lt 5 ] && IFS= read -r line; do
		n=$((n + 1))
		[[ $line =~ $spdx_re ]] || continue
		have=${BASH_REMATCH[1]}
		[[ $have =~ $end_re ]] && have=${BASH_REMATCH[1]}
		return 0
	done <"$1"
}

add_line() { # path line: after a first line that must stay first (#!, <!DOCTYPE)
	local f=$1 line=$2 tmp
	tmp=$(mktemp "$f.spdx.XXXXXX") || return 1
	if head -n 1 "$f" | grep -qE '^(#!|<!DOCTYPE)'; then
		{ head -n 1 "$f"; echo "$line"; tail -n +2 "$f"; } >"$tmp"
	else
		{ echo "$line"; cat "$f"; } >"$tmp"
	fi
	chmod --reference="$f" "$tmp" && mv "$tmp" "$f"
}

mode=${1:-}
case "$mode" in --check | --apply) shift ;; *) echo "usage: $0 --check|--apply [FILE...]" >&2; exit 2 ;; esac
if [ $# -gt 0 ]; then
	files=("$@")
else
	mapfile -t files < <(git ls-files --cached --others --exclude-standard | sort -u)
fi

bad=0 added=0 n=0
for f in "${files[@]}"; do
	is_source "$f" && [ -f "$f" ] || continue
	n=$((n + 1))
	licence_of "$f"
	declared "$f"
	if [ -z "$have" ]; then
		if [ "$mode" = --apply ]; then
			add_line "$f" "$(spdx_line "$f" "$want")" || { echo "spdx: $f: cannot rewrite"; bad=$((bad + 1)); }
			added=$((added + 1))
		else
			echo "spdx: $f: no SPDX-License-Identifier line (its folder's licence: $want; run scripts/spdx.sh --apply)"
			bad=$((bad + 1))
		fi
	elif [ "$have" != "$want" ]; then
		echo "spdx: $f: SPDX-License-Identifier: $have, but its folder's licence is $want"
		bad=$((bad + 1))
	fi
done
if [ "$mode" = --apply ]; then
	echo "spdx: $added of $n source files given an SPDX line"
else
	[ $bad = 0 ] && echo "spdx: all $n source files name their folder's licence"
fi
[ $bad = 0 ]
