#!/bin/bash
# SPDX-License-Identifier: MIT
# Every source file names its folder's licence (scripts/spdx.sh --check), and the tool works
# and can fail: in a planted tree, files without the line and one with the wrong licence are
# named; --apply adds the right line in each file's comment syntax (after a shebang or a
# doctype), leaves the wrong one and third-party code alone, and a second --apply changes
# nothing.
set -u
cd "$(dirname "$0")/../.." || exit 1
fail() { echo "FAIL: $*"; exit 1; }

out=$(scripts/spdx.sh --check 2>&1) || fail "source files without their licence line:"$'\n'"$out"$'\n'"(run scripts/spdx.sh --apply)"
echo "$out"

t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
mkdir -p "$t/scripts" "$t/bpf" "$t/daemon/cli" "$t/tests" "$t/web/vendor"
cp scripts/spdx.sh "$t/scripts/"
printf '/* a BPF program */\nint x;\n' >"$t/bpf/p.bpf.c"
printf '/* MIT */\n/* SPDX-License-Identifier: MIT */\nint y;\n' >"$t/bpf/wrong.h"
printf '/*\n * main.c\n */\nint main(void) { return 0; }\n' >"$t/daemon/cli/main.c"
printf '#!/bin/bash\necho hi\n' >"$t/tests/test_x.sh"
chmod +x "$t/tests/test_x.sh"
printf '<!DOCTYPE html>\n<html></html>\n' >"$t/web/page.html"
printf '!function(){}\n' >"$t/web/vendor/lib.min.js"
files=(bpf/p.bpf.c bpf/wrong.h daemon/cli/main.c tests/test_x.sh web/page.html web/vendor/lib.min.js)
spdx() { (cd "$t" && scripts/spdx.sh "$@" "${files[@]}"); }

out=$(spdx --check) && fail "a planted tree without licence lines passed"
for want in "bpf/p.bpf.c: no SPDX-License-Identifier line (its folder's licence: GPL-2.0-only OR BSD-2-Clause" \
	"daemon/cli/main.c: no SPDX-License-Identifier line (its folder's licence: MIT" \
	"tests/test_x.sh: no SPDX" "web/page.html: no SPDX" \
	"bpf/wrong.h: SPDX-License-Identifier: MIT, but its folder's licence is GPL-2.0-only OR BSD-2-Clause"; do
	grep -qF "spdx: $want" <<<"$out" || fail "not reported: $want"$'\n'"$out"
done
grep -q vendor <<<"$out" && fail "third-party web/vendor/ code was checked: $out"
echo "ok: --check names the files without a line and the one with the wrong licence"

spdx --apply >/dev/null && fail "--apply passed with a wrong licence left"
[ "$(head -n 1 "$t/bpf/p.bpf.c")" = "/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */" ] ||
	fail "bpf/p.bpf.c: $(head -n 1 "$t/bpf/p.bpf.c")"
[ "$(head -n 1 "$t/daemon/cli/main.c")" = "/* SPDX-License-Identifier: MIT */" ] || fail "main.c: $(head -n 1 "$t/daemon/cli/main.c")"
[ "$(sed -n 1,2p "$t/tests/test_x.sh")" = $'#!/bin/bash\n# SPDX-License-Identifier: MIT' ] ||
	fail "test_x.sh: $(sed -n 1,2p "$t/tests/test_x.sh")"
[ -x "$t/tests/test_x.sh" ] || fail "--apply lost the execute bit"
[ "$(sed -n 2p "$t/web/page.html")" = "<!-- SPDX-License-Identifier: MIT -->" ] || fail "page.html: $(head -n 2 "$t/web/page.html")"
[ "$(cat "$t/web/vendor/lib.min.js")" = '!function(){}' ] || fail "third-party code was edited"
[ "$(grep -c SPDX "$t/bpf/wrong.h")" = 1 ] || fail "--apply touched the file with the wrong licence"
sums=$(cd "$t" && md5sum "${files[@]}")
spdx --apply >/dev/null
[ "$sums" = "$(cd "$t" && md5sum "${files[@]}")" ] || fail "a second --apply changed files"
sed -i 's/SPDX-License-Identifier: MIT/SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause/' "$t/bpf/wrong.h"
out=$(spdx --check) || fail "--check fails after --apply and the fix:"$'\n'"$out"
echo "ok: --apply adds the right line per folder and syntax, leaves the rest, and is idempotent"
echo PASS
