#!/usr/bin/env bash
# The MPI backend (feature `mpi`), as CI checks it: installs OpenMPI and libclang where
# missing (scripts/install-mpi.sh), then
#   - a binary built without the feature, started by mpirun, fails at init with one
#     clear line naming the feature;
#   - `mpirun -np 4 target/debug/examples/hello`, built with the feature, prints the table;
#   - every example at 4 ranks through `cargo xtask run --backend mpi`;
#   - the serial-reference suites (collectives, p2p, groups, errors, harness, device) with
#     DIST_BACKEND=mpi, every rank started by mpirun.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-mpi.sh
# CI runs as root, which mpirun refuses unless told (dist's launcher passes
# --allow-run-as-root itself; plain mpirun below needs these).
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# Two cores here: more ranks than cores needs --oversubscribe.
mpirun=(mpirun --oversubscribe)

echo "-- without the feature, under mpirun: one clear error at init"
cargo build -q -p dist-runtime --example hello
if out=$("${mpirun[@]}" -np 2 target/debug/examples/hello 2>&1); then
  echo "a build without the mpi feature ran under mpirun:"; echo "$out"; exit 1
fi
grep -q 'has no `mpi` feature: build with `--features dist-runtime/mpi`' <<<"$out" || { echo "$out"; exit 1; }
grep -m1 'error' <<<"$out"

echo "-- clippy with the feature"
cargo clippy -q -p dist-runtime -p dist-tests -p xtask -p cargo-spmd --features dist-runtime/mpi --all-targets -- -D warnings

echo "-- mpirun -np 4 target/debug/examples/hello (built with the feature)"
cargo build -q -p dist-runtime --features mpi --example hello
out=$("${mpirun[@]}" -np 4 target/debug/examples/hello 2>&1)
echo "$out" | tail -6
grep -q 'sum of ranks = 6 (expected 6)' <<<"$out" && grep -q 'mpi backend' <<<"$out"

echo "-- every example at 4 ranks: cargo xtask run --backend mpi"
for ex in hello all_reduce p2p_chain p2p_async groups collectives numerics memory_balance data_parallel \
          tensor_parallel pipeline sequence_parallel; do
  cargo xtask run --backend mpi -n 4 --example "$ex" >/dev/null || { echo "example $ex failed on mpi"; exit 1; }
done

echo "-- the serial-reference suites on DIST_BACKEND=mpi"
DIST_BACKEND=mpi cargo test -q -p dist-tests --features dist-runtime/mpi \
  --test collectives --test p2p --test groups --test errors --test harness --test device
echo "mpi-check: done"
