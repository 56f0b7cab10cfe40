#!/usr/bin/env bash
# srun, for real: a one-node Slurm cluster on this machine (munged, slurmctld and slurmd
# started by hand in a temporary directory that SLURM_CONF points at; nothing under /etc,
# ports 16817-16818 on loopback; ../shared/CLUSTER-TESTING.md) runs dist's binaries the
# way a cluster user starts them:
#
# - built with the `mpi` feature, `srun --mpi=pmix -n 4` runs `hello` (the rank table)
#   and `collectives` (every collective checked against a serial reference) unchanged:
#   no MASTER_ADDR, the world is MPI's (Open MPI over Slurm's PMIx);
# - two job steps of one allocation at the same time (`salloc -n 8`, two
#   `srun --exact -n 4`) are two worlds that do not mix;
# - a rank killed mid-job (SIGKILL, under the `chaos` workload) ends the step within
#   seconds, named first ("task 1: Killed"): Slurm's PMIx plugin cancels the step when a
#   task dies (as mpirun aborts the job), so the survivors are stopped by Slurm rather
#   than by dist's failure notice, and nothing hangs;
# - a binary built without the feature runs a one-node step on shared memory (plain
#   `srun -n 4`, two steps side by side too), and stops a step across nodes with one
#   clear line.
#
# Needs root (the daemons run as root); installs slurm-wlm and munge with apt where they
# are missing, and skips with a message where it cannot. Every wait is bounded; the
# daemons are stopped on exit.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(id -u)" -ne 0 ]; then echo "slurm-check: needs root to run the Slurm daemons; skipped"; exit 0; fi
scripts/install-mpi.sh >/dev/null
need=()
command -v srun >/dev/null && command -v slurmctld >/dev/null && command -v slurmd >/dev/null || need+=(slurm-wlm)
command -v munged >/dev/null || need+=(munge)
# Slurm's PMIx plugin loads libpmix at run time (Open MPI's package brings the library).
ls /usr/lib/x86_64-linux-gnu/pmix2/lib/libpmix.so* >/dev/null 2>&1 || need+=(libpmix2)
if [ ${#need[@]} -gt 0 ]; then
  echo "slurm-check: installing ${need[*]}"
  export DEBIAN_FRONTEND=noninteractive
  if ! { apt-get install -y -q "${need[@]}" >/dev/null 2>&1 ||
         { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q "${need[@]}" >/dev/null 2>&1; }; }; then
    echo "slurm-check: cannot install ${need[*]} here; skipped"; exit 0
  fi
fi

echo "-- build (without and with the mpi feature)"
cargo build -q -p dist-runtime --example hello
cp target/debug/examples/hello target/debug/examples/hello-shm-only
cargo build -q -p dist-runtime --features mpi --example hello --example collectives --example chaos

work=$(mktemp -d /tmp/slurm-check.XXXXXX)
chmod 755 "$work"
pids=()
cleanup() {
  # Keep the script's own status: a daemon still writing its log or spool while the
  # directory goes must not turn a passing check red (seen in CI: "Directory not empty").
  local rc=$? p
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  [ -f "$work/munged.pid" ] && pids+=("$(cat "$work/munged.pid")") && kill "${pids[-1]}" 2>/dev/null || true
  for _ in $(seq 1 50); do
    local alive=""
    for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
    [ -z "$alive" ] && break
    sleep 0.1
  done
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  # step daemons (slurmstepd) outlive slurmd; they are the ones holding the spool
  for p in $(pgrep -x slurmstepd 2>/dev/null); do
    tr '\0' '\n' < "/proc/$p/environ" 2>/dev/null | grep -qx "SLURM_CONF=$work/slurm.conf" && kill -9 "$p" 2>/dev/null
  done
  for _ in $(seq 1 20); do
    rm -rf "$work" 2>/dev/null && break
    sleep 0.2
  done
  [ -d "$work" ] && echo "slurm-check: note: $work could not be removed yet (a daemon still writing)"
  exit "$rc"
}
trap cleanup EXIT

mkdir -m 700 "$work/key"; mkdir -m 755 "$work/sock" "$work/state" "$work/spool"
head -c 1024 /dev/urandom > "$work/key/munge.key"; chmod 600 "$work/key/munge.key"
munged -f -S "$work/sock/munge.socket.2" --key-file="$work/key/munge.key" --log-file="$work/munged.log" \
  --pid-file="$work/munged.pid" --seed-file="$work/munged.seed" ||
  { echo "slurm-check: munged would not start here; skipped"; exit 0; }

host=$(hostname -s)
cat > "$work/slurm.conf" <<EOF
ClusterName=distcheck
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$work/sock/munge.socket.2
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd.pid
SlurmctldPort=16817
SlurmdPort=16818
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SlurmdParameters=config_overrides
ReturnToService=2
MpiDefault=none
SlurmctldLogFile=$work/slurmctld.log
SlurmdLogFile=$work/slurmd.log
NodeName=$host NodeAddr=127.0.0.1 CPUs=16 State=UNKNOWN
PartitionName=check Nodes=$host Default=YES MaxTime=10 State=UP OverSubscribe=FORCE
EOF
export SLURM_CONF=$work/slurm.conf
slurmctld -D -f "$SLURM_CONF" > "$work/slurmctld.out" 2>&1 & pids+=($!)
slurmd -D -f "$SLURM_CONF" > "$work/slurmd.out" 2>&1 & pids+=($!)
up=""
for _ in $(seq 1 100); do
  if sinfo -h -o %T 2>/dev/null | grep -q idle; then up=1; break; fi
  sleep 0.2
done
if [ -z "$up" ]; then
  echo "slurm-check: the Slurm daemons did not come up in 20 s; skipped"
  tail -5 "$work/slurmctld.log" "$work/slurmd.log" 2>/dev/null || true
  exit 0
fi
fail() { echo "slurm-check: FAILED: $*"; exit 1; }

echo "-- srun --mpi=pmix -n 4 hello (built with the mpi feature)"
out=$(timeout 60 srun --mpi=pmix -n 4 target/debug/examples/hello 2>&1) || fail "hello under srun: $out"
echo "$out" | tail -6
echo "$out" | grep -q "hello from 4 ranks" || fail "hello did not see a world of 4: $out"
[ "$(echo "$out" | grep -c "mpi backend")" -eq 4 ] || fail "hello's 4 ranks did not all run on the MPI backend: $out"

echo "-- srun --mpi=pmix -n 4 collectives (serial references)"
out=$(timeout 120 srun --mpi=pmix -n 4 target/debug/examples/collectives 2>&1) || fail "collectives under srun: $out"
echo "$out" | tail -3

echo "-- two steps of one allocation at the same time (salloc -n 8, two srun --exact -n 4)"
out=$(timeout 120 salloc -n 8 bash -c '
  srun --exact --mpi=pmix -n 4 target/debug/examples/hello > "$0/step1" 2>&1 & a=$!
  srun --exact --mpi=pmix -n 4 target/debug/examples/hello > "$0/step2" 2>&1 & b=$!
  wait $a && wait $b' "$work" 2>&1) || fail "two steps: $out $(cat "$work"/step1 "$work"/step2 2>/dev/null)"
for s in step1 step2; do
  grep -q "hello from 4 ranks" "$work/$s" || fail "$s did not see a world of 4: $(cat "$work/$s")"
done
echo "both steps ran worlds of 4"

echo "-- a rank killed mid-job ends the step, named first (chaos workload, SIGKILL)"
start=$(date +%s%N)
CHAOS_SECS=60 DIST_TIMEOUT=60 timeout 90 srun --mpi=pmix -n 3 target/debug/examples/chaos > "$work/chaos.out" 2>&1 &
job=$!
victim=""
for _ in $(seq 1 100); do
  # Rank 1's process: the one whose environment says SLURM_PROCID=1.
  for p in $(pgrep -f "target/debug/examples/chaos" || true); do
    if tr '\0' '\n' < /proc/$p/environ 2>/dev/null | grep -qx "SLURM_PROCID=1"; then victim=$p; fi
  done
  [ -n "$victim" ] && break
  sleep 0.1
done
[ -n "$victim" ] || fail "rank 1 of chaos never started: $(cat "$work/chaos.out")"
sleep 2
killed=$(date +%s%N)
kill -9 "$victim"
rc=0; wait $job || rc=$?
ms=$(( ($(date +%s%N) - killed) / 1000000 ))
out=$(cat "$work/chaos.out")
[ $rc -ne 0 ] || fail "the step succeeded with a rank killed: $out"
[ $rc -ne 124 ] || fail "the step hung after rank 1 was killed: $out"
echo "$out" | grep -E "task 1|rank 1" | head -2
first=$(echo "$out" | grep -m1 -E "task [0-9,]+: Killed|rank [0-9]+ (failed|exited|was killed)" || true)
echo "$first" | grep -qE "task 1: |rank 1 " || fail "the killed rank is not the one named first: $out"
echo "the step ended $ms ms after rank 1 was killed (exit $rc)"

echo "-- without the mpi feature, one node: plain srun runs on shared memory (a port from the job and step)"
out=$(timeout 60 srun -n 4 target/debug/examples/hello-shm-only 2>&1) || fail "plain srun on one node: $out"
echo "$out" | grep -q "hello from 4 ranks" || fail "hello did not see a world of 4: $out"
[ "$(echo "$out" | grep -c "shm backend")" -eq 4 ] || fail "hello's 4 ranks did not all run on shm: $out"
out=$(timeout 120 salloc -n 8 bash -c '
  srun --exact -n 4 target/debug/examples/hello-shm-only > "$0/shm1" 2>&1 & a=$!
  srun --exact -n 4 target/debug/examples/hello-shm-only > "$0/shm2" 2>&1 & b=$!
  wait $a && wait $b' "$work" 2>&1) || fail "two shm steps: $out $(cat "$work"/shm1 "$work"/shm2 2>/dev/null)"
for s in shm1 shm2; do
  grep -q "hello from 4 ranks" "$work/$s" || fail "$s did not see a world of 4: $(cat "$work/$s")"
done
echo "two plain srun steps side by side ran worlds of 4 on shm"
echo "-- without the mpi feature, a step across nodes (as Slurm tells a rank): one clear line"
if out=$(SLURM_PROCID=1 SLURM_NTASKS=2 SLURM_STEP_NUM_NODES=2 SLURM_JOB_ID=9 SLURM_STEP_ID=0 \
    timeout 60 target/debug/examples/hello-shm-only 2>&1); then
  fail "a build without the mpi feature ran a step across nodes: $out"
fi
echo "$out" | grep -q "no \`mpi\` feature" || fail "unclear error: $out"
echo "$out" | head -1
echo "slurm-check: ok"
