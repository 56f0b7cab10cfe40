#!/usr/bin/env bash
# run_all.sh - rebuild and rerun the peer collective benchmarks, write results/*.tsv
# and results/summary.md.
#
#   RESULTS=target/peers bash scripts/peers/run_all.sh                 # full run (~15-20 min on 2 cores)
#   RESULTS=target/peers RUNS=1 RANKS="2" MAXB=1048576 SKIP_GLOO=1 bash scripts/peers/run_all.sh   # quick smoke run
#
# Env knobs:
#   RUNS=2            separate launches per configuration (noise: report spread)
#   REPS=3            timed loops per (op,size) inside one launch
#   RANKS="2 4 8"     world sizes
#   MAXB=67108864     largest size in bytes (8B,1KiB,64KiB,1MiB,16MiB,64MiB)
#   BUDGET=0.25       seconds per timed loop cap
#   SKIP_GLOO=1       skip torch/gloo; SKIP_MPI=1 skip OpenMPI; SKIP_MEMCPY=1
#   PEERS_VENV=DIR     venv with torch (created if missing; default ~/.cache/dist-peers/venv)
#   PEERS_OPS=allreduce,bcast         subset of ops (both peers honour it)
#   EXTRA_BENCH='rustshm=/path/to/bench --nranks {n}'  extra ';'-separated
#       name=command entries; {n} is replaced by the rank count; the command
#       must print the same TSV columns on stdout (impl op ranks bytes rep iters
#       us algbw_GBps busbw_GBps). It runs interleaved with the peers, in the
#       same launches loop, so all backends see the same machine noise.
#   MPI_NOCMA=1       also run OpenMPI with btl_vader_single_copy_mechanism=none
#                     (impl 'mpi-nocma'; CMA is slower than copy-in/out here for >=16MiB)
#   KEEP_OLD=1        do not wipe results/*.tsv first
#   RESULTS=DIR       where results and builds go (default: results/ beside this script)
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
RES="${RESULTS:-$HERE/results}"
BUILD="$RES/build"
RUNS="${RUNS:-2}"
REPS="${REPS:-3}"
RANKS="${RANKS:-2 4 8}"
MAXB="${MAXB:-67108864}"
BUDGET="${BUDGET:-0.25}"
PEERS_VENV="${PEERS_VENV:-$HOME/.cache/dist-peers/venv}"
MPIRUN=(mpirun --allow-run-as-root --oversubscribe)
export OMP_NUM_THREADS=1

mkdir -p "$RES" "$BUILD"
[ "${KEEP_OLD:-0}" = 1 ] || rm -f "$RES"/*.tsv "$RES"/summary.md "$RES"/env.txt "$RES"/*.log

# ---- install (idempotent) -------------------------------------------------
if [ "${SKIP_MPI:-0}" != 1 ] && ! command -v mpicc >/dev/null; then
  apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y openmpi-bin libopenmpi-dev
fi
if [ "${SKIP_GLOO:-0}" != 1 ] && ! "$PEERS_VENV/bin/python" -c 'import torch' 2>/dev/null; then
  # PyPI's default Linux torch wheel: ~540 MB + ~4.5 GB of nvidia/cuda wheels
  # (the CPU-only index is not reachable here; torch --no-deps fails to import
  # without libcublasLt). ~2 min, 5.4 GB on disk.
  python3 -m venv "$PEERS_VENV"
  "$PEERS_VENV/bin/pip" install torch numpy
fi

# ---- build -----------------------------------------------------------------
[ "${SKIP_MPI:-0}" = 1 ] || mpicc -O2 -Wall -o "$BUILD/mpi_coll" "$HERE/mpi_coll.c"
gcc -O3 -march=native -Wall -pthread -o "$BUILD/memcpy_bw" "$HERE/memcpy_bw.c"

# ---- environment record ----------------------------------------------------
{
  echo "date: $(date -Is)"; uname -a; lscpu | grep -E 'Model name|^CPU\(s\)|Hypervisor|L3'
  free -g | head -2
  [ "${SKIP_MPI:-0}" = 1 ] || { mpirun --version | head -1
    ompi_info --param btl vader --level 9 | grep -E '"btl_vader_single_copy_mechanism"|"btl_vader_backing_directory"'; }
  [ "${SKIP_GLOO:-0}" = 1 ] || "$PEERS_VENV/bin/python" -c 'import torch;print("torch", torch.__version__)'
  echo "RUNS=$RUNS REPS=$REPS RANKS=$RANKS MAXB=$MAXB BUDGET=$BUDGET EXTRA_BENCH=${EXTRA_BENCH:-}"
} > "$RES/env.txt" 2>&1

# ---- run -------------------------------------------------------------------
for run in $(seq 1 "$RUNS"); do
  if [ "${SKIP_MEMCPY:-0}" != 1 ]; then
    echo "[$(date +%T)] memcpy run $run (load: $(cut -d' ' -f1-3 /proc/loadavg))"
    "$BUILD/memcpy_bw" 2 10 256 > "$RES/memcpy_run$run.tsv"
  fi
  for n in $RANKS; do
    if [ "${SKIP_MPI:-0}" != 1 ]; then
      echo "[$(date +%T)] mpi n=$n run $run (load: $(cut -d' ' -f1-3 /proc/loadavg))"
      "${MPIRUN[@]}" -np "$n" "$BUILD/mpi_coll" "$REPS" "$MAXB" "$BUDGET" \
        > "$RES/mpi_n${n}_run$run.tsv" 2>> "$RES/mpi.log"
    fi
    if [ "${MPI_NOCMA:-0}" = 1 ]; then   # variant: vader without CMA single-copy
      echo "[$(date +%T)] mpi-nocma n=$n run $run"
      "${MPIRUN[@]}" -np "$n" --mca btl_vader_single_copy_mechanism none "$BUILD/mpi_coll" \
        "$REPS" "$MAXB" "$BUDGET" 2>> "$RES/mpi.log" | sed '2,$s/^mpi\t/mpi-nocma\t/' \
        > "$RES/mpi-nocma_n${n}_run$run.tsv"
    fi
    if [ "${SKIP_GLOO:-0}" != 1 ]; then
      echo "[$(date +%T)] gloo n=$n run $run (load: $(cut -d' ' -f1-3 /proc/loadavg))"
      "$PEERS_VENV/bin/python" "$HERE/gloo_coll.py" --nranks "$n" --reps "$REPS" \
        --max-bytes "$MAXB" --budget "$BUDGET" \
        > "$RES/gloo_n${n}_run$run.tsv" 2>> "$RES/gloo.log"
    fi
    if [ -n "${EXTRA_BENCH:-}" ]; then
      IFS=';' read -ra extras <<< "$EXTRA_BENCH"
      for e in "${extras[@]}"; do
        name="${e%%=*}"; cmd="${e#*=}"; cmd="${cmd//\{n\}/$n}"
        echo "[$(date +%T)] $name n=$n run $run"
        bash -c "$cmd" > "$RES/${name}_n${n}_run$run.tsv" 2>> "$RES/${name}.log"
      done
    fi
  done
done
echo "[$(date +%T)] done"
python3 "$HERE/summarize.py" "$RES" > /dev/null
echo "summary: $RES/summary.md"
