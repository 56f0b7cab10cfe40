#!/usr/bin/env bash
# The compile-time check's cost on a package spread over many files, for the cost table
# of docs/static-checks.md: generates a crate (outside the workspace, dist-runtime by
# path) whose strict #[spmd] entry in src/main.rs calls one helper in each of FILES-1
# module files (each a pipeline over 8 microbatches, a ring of sendrecv and an
# all_reduce, on its own tags), builds it with DIST_CHECK_TIMES, and prints the line:
# file, entry, check time, interpreter steps. Not a CI step (timings are the machine's).
#   FILES=20 scripts/check-cost.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
files=${FILES:-20}
dir=${CHECK_COST_DIR:-/tmp/dist-check-cost}
rm -rf "$dir/src"
mkdir -p "$dir/src"
cat >"$dir/Cargo.toml" <<EOF
[package]
name = "check-cost"
version = "0.1.0"
edition = "2021"

[dependencies]
dist-runtime = { path = "$root/dist-runtime" }

[profile.dev.package.dist-macros]
opt-level = 3

[workspace]
EOF
cp "$root/Cargo.lock" "$dir/Cargo.lock"
{
  echo "use dist_runtime::prelude::*;"
  for k in $(seq 1 $((files - 1))); do printf 'mod m%02d;\n' "$k"; done
  echo
  echo "#[spmd(strict)]"
  echo "fn main(world: Comm<World>) -> dist_runtime::Result<()> {"
  for k in $(seq 1 $((files - 1))); do printf '    m%02d::step(&world)?;\n' "$k"; done
  echo "    Ok(())"
  echo "}"
} >"$dir/src/main.rs"
for k in $(seq 1 $((files - 1))); do
  cat >"$dir/src/$(printf 'm%02d' "$k").rs" <<EOF
use dist_runtime::prelude::*;

const ACT: Tag<f32> = Tag::new($((3 * k)));
const RING: Tag<u64> = Tag::new($((3 * k + 1)));

/// Module $k's part of a step: a pipeline over 8 microbatches, a ring, an all_reduce.
pub fn step(world: &Comm<World>) -> dist_runtime::Result<()> {
    let (r, n) = (world.rank(), world.size());
    for mb in 0..8 {
        let mut act = [mb as f32; 4];
        if r > 0 {
            world.recv(r - 1, ACT, &mut act)?;
        }
        if r + 1 < n {
            world.send(r + 1, ACT, &act)?;
        }
    }
    for step in 0..n.saturating_sub(1) {
        let mut got = [0u64; 2];
        world.sendrecv((r + 1) % n, RING, &[step as u64; 2], (r + n - 1) % n, &mut got)?;
    }
    let mut g = [1.0f32; 16];
    world.all_reduce(&mut g, ReduceOp::Sum)?;
    Ok(())
}
EOF
done
lines=$(cat "$dir"/src/*.rs | wc -l)
rm -f "$dir/times.tsv"
(cd "$dir" && CARGO_TARGET_DIR="$root/target/check-cost" cargo build -q 2>&1 | tail -3)
(cd "$dir" && touch src/main.rs && DIST_CHECK_TIMES="$dir/times.tsv" CARGO_TARGET_DIR="$root/target/check-cost" cargo build -q)
echo "$files files, $lines lines: $(cat "$dir/times.tsv")"
