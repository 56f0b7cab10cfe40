#!/usr/bin/env python3
"""Condenses the peers harness summary (RESULTS/summary.md) into the tables of
docs/performance.md: busbw of dist, OpenMPI and gloo per op and size, with dist/MPI
ratios, and the 8 B all_reduce latency.

    python3 scripts/perf_table.py target/peers/summary.md
"""
import re
import sys

path = sys.argv[1] if len(sys.argv) > 1 else "target/peers/summary.md"
text = open(path).read()
tables = {}  # (kind, n) -> {(op, bytes): {impl: value}}
for m in re.finditer(r"## (busbw GB/s|time per op, us), n=(\d+) ranks\n\n\| op \| bytes \| (.*?) \|\n\|[-|]+\|\n((?:\|.*\|\n)+)", text):
    kind, n, impls = m.group(1), int(m.group(2)), [x.strip() for x in m.group(3).split("|")]
    rows = {}
    for line in m.group(4).strip().splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        vals = {}
        for impl, c in zip(impls, cells[2:]):
            v = c.split(" ")[0].rstrip("*")
            vals[impl] = float(v) if v not in ("", "-") else None
        rows[(cells[0], cells[1])] = vals
    tables[(kind, n)] = rows

ns = sorted({n for (_, n) in tables})
ops = ["allreduce", "reduce_scatter", "bcast", "allgather", "alltoall", "pingpong"]
sizes = ["64KiB", "1MiB", "16MiB", "64MiB"]


def fmt(v):
    return "–" if v is None else (f"{v:.3g}" if v < 100 else f"{v:.0f}")


print("busbw GB/s: dist / OpenMPI / gloo, and dist ÷ OpenMPI\n")
print("| op | bytes | " + " | ".join(f"n={n}" for n in ns) + " |")
print("|---|---|" + "---|" * len(ns))
for op in ops:
    for b in sizes:
        cells = []
        for n in ns:
            r = tables.get(("busbw GB/s", n), {}).get((op, b))
            if not r:
                cells.append("–")
                continue
            d, mpi, g = r.get("dist"), r.get("mpi"), r.get("gloo")
            ratio = f"**{d / mpi:.2f}×**" if d and mpi else "–"
            cells.append(f"{fmt(d)} / {fmt(mpi)} / {fmt(g)} — {ratio}")
        print(f"| {op} | {b} | " + " | ".join(cells) + " |")
print("\n8 B all_reduce, µs per op: dist / OpenMPI / gloo\n")
print("| n | dist | OpenMPI | gloo |")
print("|---|---|---|---|")
for n in ns:
    r = tables.get(("time per op, us", n), {}).get(("allreduce", "8B"), {})
    print(f"| {n} | {fmt(r.get('dist'))} | {fmt(r.get('mpi'))} | {fmt(r.get('gloo'))} |")
mem = re.search(r"memcpy.*", text)
