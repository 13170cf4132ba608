#!/bin/bash
# SPDX-License-Identifier: MIT
# The docs name every option the code has: each --flag of each ctxprof command (from the
# program's own --help texts, the source of the man page too) must appear in README.md or
# docs/*.md in a paragraph, table or code block that also names the command, and each daemon config key (config_keys[]
# of daemon/service/config.c, and the *_keys[] arrays of daemon/service/upload_config.c) must
# be a row of a table in docs/daemon.md. Prints one line per omission, naming the file that
# lacks it, and exits 1 when there is one. Reads only; never edits a doc.
#   scripts/check-docs.sh BUILD/ctxprof [ROOT]      ROOT (default .) holds README.md, docs/,
#                                                   daemon/service/
set -uo pipefail
bin=$1
root=${2:-.}
docs=("$root/README.md" "$root"/docs/*.md)
where="README.md, docs/*.md"
[ "$root" = . ] || where="$root/README.md, $root/docs/*.md"
table=$root/docs/daemon.md
table=${table#./}
missing=0
lack() { echo "check-docs: $*"; missing=$((missing + 1)); }

# "sec.key" of config_keys[], then "upload.key" of every *_keys[] of upload_config.c
quoted_in_array() { # file array-name-regex
	awk -v re="$2" '$0 ~ re "\\[\\] = \\{" {on = 1; next} on && /^\};/ {on = 0} on' "$1" |
		grep -o '"[a-z][a-z0-9.-]*"' | tr -d '"'
}
config_keys() {
	quoted_in_array "$root/daemon/service/config.c" 'config_keys'
	quoted_in_array "$root/daemon/service/upload_config.c" '[a-z_]*_keys' | sed 's/^/upload./'
}

# 1. config keys: a table row of docs/daemon.md whose first cells are "SECTION | KEY"
#    ([sampling] keys) or whose first cell lists KEY (the [upload] table: "retry-min, retry-max")
# (one awk for all keys and one for all flags: an awk a key or flag cost tens of seconds on a
# loaded 2-vCPU host)
keys=$(config_keys)
[ -n "$keys" ] || lack "no config keys found in $root/daemon/service/config.c (config_keys[])"
while IFS= read -r k; do
	[ -n "$k" ] || continue
	sec=${k%%.*} key=${k#*.}
	lack "$table: config key [$sec] $key is in no table row (daemon/service/$([ "$sec" = upload ] && echo upload_config.c || echo config.c))"
done < <(awk -F'|' '
	function trim(s) { gsub(/^[ \t`]+|[ \t`]+$/, "", s); return s }
	FNR == NR { if ($0 != "") want[++n] = $0; next }
	/^\|/ {
		c1 = trim($2); c2 = trim($3)
		have[c1 "." c2] = 1
		m = split(c1, w, /, */); for (i = 1; i <= m; i++) have["upload." trim(w[i])] = 1
	}
	END { for (i = 1; i <= n; i++) if (!(want[i] in have)) print want[i] }' <(echo "$keys") "$table")

# 2. flags of every command: `ctxprof CMD --help`; the daemon's --KEY flags are its config
#    keys (checked above)
commands=$("$bin" --help | awk '/^commands:/ {on = 1; next} on && /^$/ {exit} on && NF {print $1}')
[ -n "$commands" ] || lack "'$bin --help' lists no commands"
flags_of() { # command ("" = the top level)
	# shellcheck disable=SC2086
	"$bin" $1 --help 2>&1 | grep -oE -- '(^|[^a-zA-Z0-9-])--[a-z][a-z0-9-]*' | sed 's/^[^-]*//' | sort -u
}
key_names=" $(sed 's/^[a-z]*\.//' <<<"$keys" | tr '\n' ' ') "
pairs=$(for c in "" $commands; do
	for f in $(flags_of "$c"); do
		[ "$f" = --help ] && continue
		[ "$c" = daemon ] && [[ "$key_names" == *" ${f#--} "* ]] && continue
		echo "${c:-ctxprof} $f"
	done
done)
# a doc block (paragraph, table, code block: the text between blank lines) that names the
# flag as a whole option (not a prefix of a longer one) and the command
while read -r c f; do
	[ -n "$c" ] || continue
	[ "$c" = ctxprof ] && c=""
	lack "$where: ctxprof${c:+ $c} $f (in its --help) is in no doc paragraph or table that names '${c:-ctxprof}'"
done < <(awk '
	FNR == NR { if (NF == 2) { cmd[++n] = $1; flag[n] = $2 } next }
	{
		for (i = 1; i <= n; i++)
			if (!(i in found) && index($0, flag[i]) && $0 ~ (flag[i] "([^a-z0-9-]|$)") &&
			    $0 ~ ("(^|[^a-z-])" cmd[i] "([^a-z-]|$)"))
				found[i] = 1
	}
	END { for (i = 1; i <= n; i++) if (!(i in found)) print cmd[i], flag[i] }' <(echo "$pairs") RS= "${docs[@]}")
[ $missing = 0 ] || { echo "check-docs: $missing undocumented (document them where the others are)"; exit 1; }
echo "check-docs: $(wc -w <<<"$keys") config keys and every flag of ctxprof ${commands//$'\n'/, } documented"
