#!/usr/bin/env python3
# Interleaved A/B of dist-bench configurations (environment variables), medians of busbw:
#   python3 scripts/ab.py N ROUNDS OPS SIZES base "VAR=1" "VAR=2 OTHER=x" ...
# from the repository root, after `cargo build --release -p dist-bench`.
import subprocess, sys, collections, statistics, os
# usage: ab.py n rounds ops sizes cfg1 cfg2 ...   (cfg: "A=1 B=2" or "base")
n, rounds, ops, sizes = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
cfgs = sys.argv[5:]
res = collections.defaultdict(list)
for r in range(rounds):
    for c in cfgs:
        env = dict(os.environ)
        if c != "base":
            for kv in c.split():
                k, v = kv.split("="); env[k] = v
        out = subprocess.run(["target/release/dist-bench", "-n", n, "--ops", ops, "--sizes", sizes, "--reps", "2", "--budget", "0.1", "--tsv"], env=env, capture_output=True, text=True).stdout
        for line in out.splitlines():
            f = line.split("\t")
            if len(f) < 9 or f[0] == "impl": continue
            res[(f[1], int(f[3]), c)].append(float(f[8]))
keys = sorted({(k[0], k[1]) for k in res})
print("op size " + " | ".join(cfgs))
for op, sz in keys:
    base = statistics.median(res[(op, sz, cfgs[0])])
    cells = []
    for c in cfgs:
        v = res[(op, sz, c)]
        m = statistics.median(v)
        cells.append(f"{m:8.3f} ({m/base:4.2f})")
    print(f"{op:14s} {sz:9d} " + " | ".join(cells))
