#!/usr/bin/env bash
# The checks of the NCCL backend that need a GPU: the probe, every device op against a
# serial reference on 1, 2 and 4 ranks (ranks share the GPUs where there are fewer, over
# NCCL's loopback sockets: DIST_SHARE_GPU=1), a mismatch, the deadlines of a collective and
# of a first send whose peer never comes, then the bench.
# Needs the NVIDIA driver (libcuda.so.1) and NCCL >= 2.18 (Debian's libnccl2/-dev, or the
# nvidia-nccl-cu12/cu13 wheel: the runner links libnccl.so.2 as libnccl.so where needed).
#
#   scripts/gpu-check.sh                 # build here (cargo), then run here
#   scripts/gpu-check.sh --bundle DIR    # build here into DIR, run nothing: copy DIR to a
#                                        # GPU machine without Rust (glibc at least as new
#                                        # as here) and run DIR/run.sh there
#   BENCH_MAX=1G scripts/gpu-check.sh
set -euo pipefail
bundle=""
case "${1:-}" in
  "") ;;
  --bundle) bundle="${2:?--bundle DIR}"; mkdir -p "$bundle"; bundle=$(cd "$bundle" && pwd) ;;
  *) echo "usage: $0 [--bundle DIR]" >&2; exit 2 ;;
esac
cd "$(dirname "$0")/.."
dir="${bundle:-$PWD/target/gpu-check}"
mkdir -p "$dir"

# GPU_CHECK_PROFILE=dev: CI's check that the bundle builds and fails clearly without a
# GPU, sharing the dev build it already has (the GPU machine gets release, the default).
profile="${GPU_CHECK_PROFILE:-release}"
echo "== build ($profile, nccl feature) into $dir"
# Executables as cargo reports them (so CARGO_TARGET_DIR is honoured), diagnostics shown.
exes() {
  python3 -c 'import json,sys
for l in sys.stdin:
    m = json.loads(l)
    if m.get("reason") == "compiler-artifact" and m.get("executable"): print(m["target"]["name"], m["executable"])'
}
{
  cargo build --profile "$profile" -p dist-bench --features dist-bench/nccl --message-format=json-render-diagnostics
  cargo build --profile "$profile" -p dist-runtime --example hello --features dist-runtime/nccl --message-format=json-render-diagnostics
  cargo test --profile "$profile" -p dist-tests --features nccl --test nccl --no-run --message-format=json-render-diagnostics
} | exes > "$dir/.exes"
for want in dist-bench:dist-bench hello:hello nccl:nccl-tests; do
  exe=$(awk -v n="${want%%:*}" '$1 == n { print $2 }' "$dir/.exes" | tail -1)
  [ -n "$exe" ] || { echo "gpu-check: cargo reported no executable for ${want%%:*}" >&2; exit 1; }
  cp "$exe" "$dir/${want##*:}"
done
rm -f "$dir/.exes"

cat > "$dir/run.sh" <<'RUN'
#!/usr/bin/env bash
# Runs the prebuilt GPU checks in this folder (made by scripts/gpu-check.sh); every step
# bounded in time. Exit status: 0 when every step passed.
set -uo pipefail
cd "$(dirname "$0")"
fail=0
step() { local t=$1; shift; echo "== $*"; timeout -k 5 "$t" "$@"; local rc=$?; [ $rc -eq 0 ] || { echo "!! failed ($rc): $*"; fail=1; }; }
if command -v nvidia-smi >/dev/null; then nvidia-smi -L; else echo "gpu-check: no nvidia-smi (driver tools) here"; fi
# dist's bindings (cudarc) open NCCL as libnccl.so, the development name; where only the
# runtime's libnccl.so.2 is installed (Debian's libnccl2, or a pip wheel), link it here.
if ! ldconfig -p 2>/dev/null | grep 'libnccl\.so ' >/dev/null; then
  so2=$(ldconfig -p 2>/dev/null | awk '/libnccl\.so\.2 / { print $NF; exit }')
  [ -n "$so2" ] || so2=$(python3 -c 'import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], "lib", "libnccl.so.2"))' 2>/dev/null || true)
  if [ -n "$so2" ] && [ -e "$so2" ]; then
    mkdir -p nccl-lib && ln -sf "$so2" nccl-lib/libnccl.so
    export LD_LIBRARY_PATH="$PWD/nccl-lib:$(dirname "$so2"):${LD_LIBRARY_PATH:-}"
    echo "gpu-check: NCCL from $so2"
  fi
fi
export DIST_BACKEND=nccl
step 60 ./hello
step 400 ./nccl-tests --ignored --nocapture --test-threads=1
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true); [ "${gpus:-0}" -ge 1 ] || gpus=1
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
