#!/usr/bin/env bash
# The MPI backend (feature `mpi`), as CI checks it: installs OpenMPI and libclang where
# missing (scripts/install-mpi.sh), then
#   - a binary built without the feature, started by mpirun, fails at init with one
#     clear line naming the feature;
#   - every example at 4 ranks through `cargo xtask run --backend mpi`;
#   - `mpirun -np 4 target/debug/examples/hello`, built with the feature, prints the table;
#   - the serial-reference suites (collectives, p2p, groups, errors, harness, device) with
#     DIST_BACKEND=mpi, every rank started by mpirun;
#   - tests/user-crate (outside the workspace) through the installed `cargo spmd
#     run --backend mpi` and `DIST_BACKEND=mpi cargo test --features dist-runtime/mpi`.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-mpi.sh
# CI runs as root, which mpirun refuses unless told (dist's launcher passes
# --allow-run-as-root itself; plain mpirun below needs these).
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# Two cores here: more ranks than cores needs --oversubscribe.
mpirun=(mpirun --oversubscribe)

# The binaries below are built the way the launcher builds them (`cargo xtask run`,
# with its profile settings), so each is compiled once for the runs and for mpirun.
echo "-- [$SECONDS s] without the feature, under mpirun: one clear error at init"
cargo xtask run -n 1 --example hello >/dev/null
if out=$("${mpirun[@]}" -np 2 target/debug/examples/hello 2>&1); then
  echo "a build without the mpi feature ran under mpirun:"; echo "$out"; exit 1
fi
grep -q 'has no `mpi` feature: build with `--features dist-runtime/mpi`' <<<"$out" || { echo "$out"; exit 1; }
grep -m1 'error' <<<"$out"

# (Its code is linted by CI's clippy pass, which builds every feature at once.)

echo "-- [$SECONDS s] every example at 4 ranks: cargo xtask run --backend mpi"
for ex in hello all_reduce p2p_chain p2p_async groups collectives numerics memory_balance data_parallel \
          tensor_parallel fsdp pipeline sequence_parallel; do
  cargo xtask run --backend mpi -n 4 --example "$ex" >/dev/null || { echo "example $ex failed on mpi"; exit 1; }
done

echo "-- [$SECONDS s] mpirun -np 4 target/debug/examples/hello (built with the feature by the loop above)"
out=$("${mpirun[@]}" -np 4 target/debug/examples/hello 2>&1)
echo "$out" | tail -6
grep -q 'sum of ranks = 6 (expected 6)' <<<"$out" && grep -q 'mpi backend' <<<"$out"

echo "-- [$SECONDS s] DIST_SHARE_GPU=1 in a job across hosts (a rank told so by mpirun's variables): one error, before MPI starts"
if out=$(env OMPI_COMM_WORLD_RANK=1 OMPI_COMM_WORLD_SIZE=4 OMPI_COMM_WORLD_LOCAL_RANK=1 OMPI_COMM_WORLD_LOCAL_SIZE=2 \
    DIST_SHARE_GPU=1 timeout 60 target/debug/examples/hello 2>&1); then
  echo "DIST_SHARE_GPU=1 across hosts was accepted:"; echo "$out"; exit 1
fi
grep -q 'DIST_SHARE_GPU=1 lets the ranks of one host share its GPUs, but this job has 4 ranks of which 2' <<<"$out" ||
  { echo "$out"; exit 1; }

echo "-- [$SECONDS s] chaos under mpirun: a killed rank named by the launcher; a stopped rank a stall the job rides out"
cargo xtask chaos --backend mpi --runs 4 -n 4
cargo xtask chaos --backend mpi --fault stop --runs 4 -n 4

echo "-- [$SECONDS s] the serial-reference suites on DIST_BACKEND=mpi"
DIST_BACKEND=mpi cargo test -q -p dist-tests --features dist-runtime/mpi \
  --test collectives --test p2p --test groups --test errors --test harness --test device --test shared
echo "-- [$SECONDS s] a user's crate outside the workspace (tests/user-crate) on mpi: installed launcher, cargo test"
root=$(pwd)
. scripts/install-launcher.sh
(
  export CARGO_TARGET_DIR="$root/target/outside"
  cd tests/user-crate
  cp "$root/Cargo.lock" Cargo.lock
  out=$(cargo spmd run --backend mpi -n 4 2>/dev/null) || { cargo spmd run --backend mpi -n 4; exit 1; }
  grep -q "trainer: sum of ranks 6 on 4 ranks" <<<"$out" || { echo "$out"; exit 1; }
  out=$(cargo spmd run --backend mpi -n 3 --entry trainer::comms::ring::pass_token 2>/dev/null)
  [ "$(grep -c 'pass_token: rank' <<<"$out")" = 3 ] || { echo "$out"; exit 1; }
  if err=$(cargo spmd run --backend mpi -n 3 -- --fail-on 1 2>&1); then echo "a failing rank exited 0 on mpi"; exit 1; fi
  grep -q 'rank 1 failed first (exit code 1)' <<<"$err" || { echo "$err"; exit 1; }
  out=$(DIST_BACKEND=mpi cargo test --features dist-runtime/mpi 2>&1) || { echo "$out"; exit 1; }
  for t in tests::lib_sums comms::ring::tests::token_goes_around tests::main_module_test gathers_in_rank_order; do
    grep -q "test $t ... ok" <<<"$out" || { echo "$out"; echo "test $t did not pass on mpi"; exit 1; }
  done
  echo "   cargo spmd run --backend mpi, --entry, a failing rank and DIST_BACKEND=mpi cargo test: ok"
)
echo "mpi-check: done"
