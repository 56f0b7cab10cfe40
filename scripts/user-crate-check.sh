#!/usr/bin/env bash
# A user's view of dist, as CI runs it: install the launcher with `cargo install`, then
# drive tests/user-crate (a crate outside this workspace, depending on dist-runtime by
# path, with entries in five modules across three files plus a binary and an
# integration test) with `cargo spmd` and plain `cargo test`.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
target="${CARGO_TARGET_DIR:-$root/target}/user-crate"
. "$root/scripts/install-launcher.sh"
# One target directory for every crate outside the workspace that CI builds (this one,
# the starter, the corpus): the runtime's dependencies compile once for all of them.
export CARGO_TARGET_DIR="$(dirname "$target")/outside"
mkdir -p "$target"
cd "$root/tests/user-crate"
# The workspace's locked versions, so a new release upstream cannot break this check.
cp "$root/Cargo.lock" Cargo.lock
fail() { echo "user-crate-check: $*" >&2; exit 1; }

echo "-- cargo spmd run -n 8 (the binary's main)"
out=$(cargo spmd run -n 8 2>/dev/null) || fail "cargo spmd run -n 8 failed (rerun it to see the build)"
echo "$out"
grep -q "trainer: sum of ranks 28 on 8 ranks" <<<"$out" || fail "main did not report the sum on 8 ranks"

echo "-- a job whose main is #[spmd] gets no note that no rank joined it"
err=$(cargo spmd run -n 2 2>&1 >/dev/null) || fail "cargo spmd run -n 2 failed: $err"
if grep -q "no rank joined" <<<"$err"; then fail "an #[spmd] main was taken for a plain one: $err"; fi

echo "-- cargo spmd run --list"
list=$(cargo spmd run --list 2>/dev/null)
echo "$list"
for e in trainer::main trainer::train_entry trainer::bench::all_reduce_16m trainer::comms::share_loss \
         trainer::comms::ring::pass_token; do
  grep -qx "$e" <<<"$list" || fail "entry $e is not listed"
done

echo "-- every entry by name, at 1, 3 and 4 ranks"
for n in 1 3 4; do
  out=$(cargo spmd run -n $n --entry train_entry 2>/dev/null)
  grep -q "loss sum .* on $n ranks" <<<"$out" || fail "train_entry on $n ranks: $out"
  out=$(cargo spmd run -n $n --entry comms::share_loss 2>/dev/null)
  [ "$(grep -c 'share_loss: rank .* got 42.5' <<<"$out")" = "$n" ] || fail "share_loss on $n ranks: $out"
  out=$(cargo spmd run -n $n --entry trainer::comms::ring::pass_token 2>/dev/null)
  [ "$(grep -c 'pass_token: rank' <<<"$out")" = "$n" ] || fail "pass_token on $n ranks: $out"
done

echo "-- the debug-build benchmark entry runs and checks its sums (its timing is not judged here)"
cargo spmd run -n 2 --entry all_reduce_16m 2>/dev/null | grep "median" || fail "all_reduce_16m failed"

echo "-- a wrong entry name is one clear error before any rank starts"
if err=$(cargo spmd run -n 2 --entry nope 2>&1); then fail "--entry nope succeeded"; fi
grep -q 'no #\[spmd\] entry named "nope"' <<<"$err" || fail "unclear error for --entry nope: $err"

echo "-- DIST_BACKEND from the environment is honoured (and checked)"
if err=$(DIST_BACKEND=bogus cargo spmd run -n 2 2>&1); then fail "DIST_BACKEND=bogus succeeded"; fi
grep -q 'DIST_BACKEND="bogus" is not one of' <<<"$err" || fail "DIST_BACKEND was not read: $err"

echo "-- a failing rank stops the job and is named"
if err=$(cargo spmd run -n 3 -- --fail-on 1 2>&1); then fail "a failing rank exited 0"; fi
grep -q 'rank 1 failed first (exit code 1)' <<<"$err" || fail "the failing rank was not named: $err"
grep -q '\[rank 1\] error: .*rank 1 was asked to fail' <<<"$err" || fail "the rank's own error is missing: $err"

echo "-- a strict entry over the library's ParallelState and helpers in two module files"
for n in 1 2 4 6; do
  out=$(cargo spmd run -n $n --entry pipeline_train -- --steps $((n + 1)) 2>/dev/null) || fail "pipeline_train on $n ranks failed"
  grep -q "pipeline_train: $((n + 1)) steps of 4 micro-batches" <<<"$out" || fail "pipeline_train on $n ranks: $out"
done

echo "-- a bug planted in a helper of another module file is a compile error naming it"
pipeline=src/parallel/pipeline.rs
cp "$pipeline" "$target/pipeline.rs.orig"
trap 'cp "$target/pipeline.rs.orig" "$root/tests/user-crate/src/parallel/pipeline.rs"' EXIT
python3 - "$pipeline" <<'PY'
import sys
p = sys.argv[1]
s = open(p).read()
bug = "ps.pp.recv(s - 1, ACT, act)?;\n        ps.pp.send(s - 1, ACT, act)?;"
s2 = s.replace("ps.pp.recv(s - 1, ACT, act)?;", bug, 1)
assert s2 != s, "the planted line was not found"
open(p, "w").write(s2)
PY
if err=$(cargo build 2>&1); then fail "the planted unmatched send compiled"; fi
grep -q 'has no matching `recv`' <<<"$err" || fail "the planted bug was not reported: $err"
grep -q 'at src/parallel/pipeline.rs:[0-9]*)' <<<"$err" && grep -q 'src/parallel/pipeline.rs:[0-9]* is in `forward`' <<<"$err" || fail "the report does not name the helper's file: $err"
cp "$target/pipeline.rs.orig" "$pipeline"
trap - EXIT

echo "-- two nodes on this host, torchrun style: a launcher per node, one job of 4 ranks"
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
nodes="--nnodes 2 --nproc-per-node 2 --master-addr 127.0.0.1 --master-port $port --timeout 120"
cargo spmd run $nodes --node-rank 1 > "$target/node1.log" 2>&1 &
node1=$!
out=$(cargo spmd run $nodes --node-rank 0 2>&1) || { cat "$target/node1.log"; fail "node 0 failed: $out"; }
wait $node1 || fail "node 1 failed: $(cat "$target/node1.log")"
grep -q "\[rank 0\] trainer: sum of ranks 6 on 4 ranks" <<<"$out" || fail "node 0 did not report the sum on 4 ranks: $out"

echo "-- cargo test: distributed tests in the library, its modules, the binary and tests/"
out=$(cargo test 2>&1) || { echo "$out"; fail "cargo test failed"; }
for t in tests::lib_sums comms::tests::share_loss_reaches_every_stage comms::ring::tests::token_goes_around \
         comms::tests::mesh_async_scan_and_user_reduction \
         tests::main_module_test gathers_in_rank_order halo::exchanges_with_neighbours halo::library_entry_runs_from_a_test; do
  grep -q "test $t ... ok" <<<"$out" || { echo "$out"; fail "test $t did not pass"; }
done
echo "-- cargo spmd check: what the compile-time check proved, per entry"
out=$(cargo spmd check 2>&1) || { echo "$out"; fail "cargo spmd check failed on the user crate"; }
grep -A1 -x "src/main.rs: \`main\`" <<<"$out" | grep -q "proven at world sizes \[1,2,3" ||
  { echo "$out"; fail "cargo spmd check did not list main as proven"; }
# A helper in another file with an error at one size and, at a smaller one, a construct
# the check cannot follow: both are listed (every construct of a helper shares its
# call's line in the entry; only an error naming the construct's own place hides it).
scratch="$target/check-scratch"
rm -rf "$scratch" && mkdir -p "$scratch/src"
cp "$root/Cargo.lock" "$scratch/Cargo.lock"
cat > "$scratch/Cargo.toml" <<TOML
[package]
name = "check_scratch"
version = "0.1.0"
edition = "2021"
[dependencies]
dist-runtime = { path = "$root/dist-runtime" }
[profile.dev.package.dist-runtime]
opt-level = 2
[profile.dev.package.dist-macros]
opt-level = 3
[workspace]
TOML
cat > "$scratch/src/main.rs" <<'RS'
use dist_runtime::prelude::*;
mod halo;

#[spmd(sizes = 2..=3)]
fn main(world: Comm<World>) -> dist_runtime::Result<()> {
    halo::exchange(&world)?;
    Ok(())
}
RS
cat > "$scratch/src/halo.rs" <<'RS'
use dist_runtime::prelude::*;

const T: Tag<u32> = Tag::new(1);

pub fn exchange(world: &Comm<World>) -> dist_runtime::Result<()> {
    let (r, n) = (world.rank(), world.size());
    let mut got = [0u32];
    if n == 3 {
        if r < 2 {
            world.recv(1 - r, T, &mut got)?;
            world.send(1 - r, T, &[r as u32])?;
        }
    } else {
        let peer = std::process::id() as usize % n;
        world.sendrecv(peer, T, &[r as u32], peer, &mut got)?;
    }
    Ok(())
}
RS
out=$(cd "$scratch" && cargo spmd check 2>&1) && { echo "$out"; fail "cargo spmd check passed a deadlock"; }
grep -q "left to run time: \[2\]" <<<"$out" && grep -q "not followed (line 6): the peer \`peer\` of \`sendrecv\`.*src/halo.rs:15" <<<"$out" &&
  grep -q "error: line 6: deadlock at world size 3.*src/halo.rs:10" <<<"$out" ||
  { echo "$out"; fail "cargo spmd check did not list the helper's construct beside its error"; }

echo "user-crate-check: ok"
