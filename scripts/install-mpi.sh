#!/usr/bin/env bash
# What the `mpi` feature needs to build and run: an MPI (OpenMPI: mpirun, headers,
# mpicc) and libclang (rsmpi generates its bindings with bindgen). Installs them with
# apt where they are missing; the default build needs neither.
set -euo pipefail
need=()
command -v mpirun >/dev/null && command -v mpicc >/dev/null || need+=(openmpi-bin libopenmpi-dev)
# libclang itself, as bindgen looks for it (libclang-cpp, which other packages such as
# Slurm's bring, is not it).
ls /usr/lib/llvm-*/lib/libclang.so* /usr/lib/llvm-*/lib/libclang-[0-9]*.so* /usr/lib/x86_64-linux-gnu/libclang.so* \
  /usr/lib/x86_64-linux-gnu/libclang-[0-9]*.so* >/dev/null 2>&1 || need+=(libclang-dev)
if [ ${#need[@]} -eq 0 ]; then
  echo "install-mpi: MPI and libclang are here ($(mpirun --version 2>/dev/null | head -1))"
  exit 0
fi
echo "install-mpi: installing ${need[*]}"
export DEBIAN_FRONTEND=noninteractive
sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
$sudo apt-get install -y -q "${need[@]}" >/dev/null 2>&1 || { $sudo apt-get update -q >/dev/null && $sudo apt-get install -y -q "${need[@]}" >/dev/null; }
mpirun --version | head -1
