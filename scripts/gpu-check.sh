#!/usr/bin/env bash
# The checks of the NCCL backend that need GPUs: run on a machine with an NVIDIA GPU,
# its driver (libcuda.so.1) and NCCL (libnccl.so.2; e.g. `pip install nvidia-nccl-cu12`
# and put its lib directory on LD_LIBRARY_PATH).
#
#   scripts/gpu-check.sh            # tests on 1, 2, 4, 8 GPUs as visible, then the bench
#   BENCH_MAX=1G scripts/gpu-check.sh
set -euo pipefail
cd "$(dirname "$0")/.."

if command -v nvidia-smi >/dev/null; then nvidia-smi -L; else echo "gpu-check: no nvidia-smi (driver tools) here"; fi
# Find a pip-installed NCCL if the system has none.
if ! ldconfig -p 2>/dev/null | grep -q libnccl.so.2; then
  for d in $(python3 -c 'import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], "lib"))' 2>/dev/null); do
    export LD_LIBRARY_PATH="$d:${LD_LIBRARY_PATH:-}"
  done
fi

echo "== probe"
cargo run -q -p xtask -- run -n 1 --example hello --backend nccl

echo "== GPU tests (tests/nccl.rs, ignored without a GPU)"
DIST_BACKEND=nccl cargo test -p dist-tests --features nccl --test nccl -- --ignored --nocapture

echo "== bench"
gpus=$(nvidia-smi -L 2>/dev/null | wc -l || echo 1)
for n in 1 2 4 8; do
  [ "$n" -le "$gpus" ] || break
  [ "$n" -ge 2 ] || continue
  cargo xtask bench -n "$n" --backend nccl --max-bytes "${BENCH_MAX:-256M}"
done
if [ "$gpus" -lt 2 ]; then
  echo "gpu-check: one GPU: the bench needs 2 ranks on distinct GPUs, running a 1-rank all_reduce instead"
  cargo xtask bench -n 1 --backend nccl --ops all_reduce,broadcast --max-bytes "${BENCH_MAX:-256M}"
fi
echo "gpu-check: done"
