#!/usr/bin/env bash
# The checks of the NCCL backend that need a GPU: the probe, every device op against a
# serial reference on 1, 2 and 4 ranks (ranks share the GPUs where there are fewer, over
# NCCL's loopback sockets: DIST_SHARE_GPU=1), a mismatch and a deadline, then the bench.
# Needs the NVIDIA driver (libcuda.so.1) and NCCL >= 2.18 (libnccl.so; e.g. Debian's
# libnccl-dev, or the nvidia-nccl-cu12/cu13 wheel, whose lib/ this script links).
#
#   scripts/gpu-check.sh                 # build here (cargo), then run here
#   scripts/gpu-check.sh --bundle DIR    # build here into DIR, run nothing: copy DIR to a
#                                        # GPU machine without Rust and run DIR/run.sh there
#   BENCH_MAX=1G scripts/gpu-check.sh
set -euo pipefail
cd "$(dirname "$0")/.."
bundle=""
if [ "${1:-}" = "--bundle" ]; then bundle="${2:?--bundle DIR}"; fi
dir="${bundle:-target/gpu-check}"
mkdir -p "$dir"

echo "== build (release, nccl feature) into $dir"
cargo build --release -q -p dist-bench --features dist-bench/nccl
cargo build --release -q --example hello --features dist-runtime/nccl
test_exe=$(cargo test --release -q -p dist-tests --features nccl --test nccl --no-run --message-format=json 2>/dev/null |
  python3 -c 'import json,sys
for l in sys.stdin:
    m = json.loads(l)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["name"] == "nccl": print(m["executable"])' | tail -1)
cp target/release/dist-bench target/release/examples/hello "$test_exe" "$dir/"
mv "$dir/$(basename "$test_exe")" "$dir/nccl-tests"

cat > "$dir/run.sh" <<'RUN'
#!/usr/bin/env bash
# Runs the prebuilt GPU checks in this folder (made by scripts/gpu-check.sh); every step
# bounded in time. Exit status: 0 when every step passed.
set -uo pipefail
cd "$(dirname "$0")"
fail=0
step() { local t=$1; shift; echo "== $*"; timeout -k 5 "$t" "$@"; local rc=$?; [ $rc -eq 0 ] || { echo "!! failed ($rc): $*"; fail=1; }; }
if command -v nvidia-smi >/dev/null; then nvidia-smi -L; else echo "gpu-check: no nvidia-smi (driver tools) here"; fi
# NCCL: the system's (ldconfig) or a pip wheel's. cudarc loads `libnccl.so` (the dev
# name), which a wheel lacks: link it in a folder of our own.
if ! ldconfig -p 2>/dev/null | grep -q 'libnccl.so '; then
  for d in $(python3 -c 'import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], "lib"))' 2>/dev/null); do
    mkdir -p /tmp/dist-nccl-lib && ln -sf "$d/libnccl.so.2" /tmp/dist-nccl-lib/libnccl.so
    export LD_LIBRARY_PATH="/tmp/dist-nccl-lib:$d:${LD_LIBRARY_PATH:-}"
  done
fi
export DIST_BACKEND=nccl
step 60 ./hello
step 400 ./nccl-tests --ignored --nocapture --test-threads=1
gpus=$(nvidia-smi -L 2>/dev/null | wc -l); [ "$gpus" -ge 1 ] || gpus=1
if [ "$gpus" -ge 2 ]; then
  for n in 2 4 8; do [ "$n" -le "$gpus" ] && step 300 ./dist-bench -n "$n" --backend nccl --max-bytes "${BENCH_MAX:-256M}"; done
else
  echo "gpu-check: one GPU: a 1-rank bench (ranks sharing a GPU talk over sockets: not a speed to report)"
  step 120 ./dist-bench -n 1 --backend nccl --ops all_reduce,broadcast --max-bytes "${BENCH_MAX:-256M}"
fi
[ $fail -eq 0 ] && echo "gpu-check: all passed" || echo "gpu-check: FAILED (see !! lines)"
exit $fail
RUN
chmod +x "$dir/run.sh"
if [ -n "$bundle" ]; then
  echo "gpu-check: bundle in $dir ($(du -sh "$dir" | cut -f1)); on the GPU machine run $dir/run.sh"
  exit 0
fi
exec "$dir/run.sh"
