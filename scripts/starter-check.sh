#!/usr/bin/env bash
# The README's "From your own crate" section, followed to the letter in a temp dir:
# install the launcher, `cargo new`, `cargo add dist-runtime --path`, then the three
# files exactly as the README shows them (hidden `# ` doctest lines dropped), then
# `cargo spmd run -n 8` and `cargo test`.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
target="${CARGO_TARGET_DIR:-$root/target}/starter"
. "$root/scripts/install-launcher.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "starter-check: $*" >&2; exit 1; }

cd "$work"
cargo new --quiet trainer
cd trainer
cargo add --quiet dist-runtime --path "$root/dist-runtime"
# The workspace's locked versions, so a new release upstream cannot break this check.
cp "$root/Cargo.lock" Cargo.lock
python3 - "$root/README.md" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
found = 0
for m in re.finditer(r"<!-- starter: (\S+)( \(appended\))? -->\n```\w*\n(.*?)```", text, re.S):
    path, append, body = m.group(1), m.group(2), m.group(3)
    lines = [l for l in body.splitlines() if not (l == "#" or l.startswith("# "))]
    import os
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "a" if append else "w") as f:
        f.write("\n".join(lines) + "\n")
    found += 1
if found != 3:
    sys.exit(f"expected 3 starter files in the README, found {found}")
PY
# (The target directory the other crates outside the workspace share: see user-crate-check.sh.)
export CARGO_TARGET_DIR="$(dirname "$target")/outside"
out=$(cargo spmd run -n 8 2>/dev/null) || fail "cargo spmd run -n 8 failed"
echo "$out" | head -3
[ "$(grep -c 'rank [0-7] of 8: \[28.0, 28.0, 28.0, 28.0\]' <<<"$out")" = 8 ] || fail "unexpected output: $out"
out=$(cargo test 2>&1) || { echo "$out"; fail "cargo test failed"; }
grep -q "test token_goes_around ... ok" <<<"$out" || { echo "$out"; fail "token_goes_around did not pass"; }
grep -q "test collectives::max_is_the_last_rank ... ok" <<<"$out" || { echo "$out"; fail "max_is_the_last_rank did not pass"; }
echo "starter-check: ok"
