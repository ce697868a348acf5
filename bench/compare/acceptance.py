#!/usr/bin/env python3
"""acceptance.py [REPORT]: the single-host speed targets (issue 5, BASELINES.md) checked
against a report that `make bench` wrote (default bench/results/latest.md): one row per
target with what the report measured and whether it holds. "Better MPI" is the faster of
Open MPI and MPICH at that size (malloc buffers, collie's default column); latencies come
from the report's smallest-size table. Exit status 0 when every target holds."""
import re
import sys


def number(cell):
    """A table cell as a float ('1,234*' -> 1234.0), or None ('–')."""
    try:
        return float(cell.replace(",", "").replace("*", ""))
    except ValueError:
        return None


def busbw_tables(md):
    """{(collective, ranks): {size: {column: busbw}}} from the per-collective tables."""
    tables = {}
    for m in re.finditer(r"^### (\w+), (\d+) ranks\n\n(\|.*\n)\|.*\n((?:\|.*\n)+)", md, re.M):
        head = [h.strip() for h in m.group(3).strip().strip("|").split("|")]
        rows = {}
        for line in m.group(4).splitlines():
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            rows[cells[0]] = {h: number(c) for h, c in zip(head[1:], cells[1:])}
        tables[(m.group(1), int(m.group(2)))] = rows
    return tables


def latencies(md):
    """{(collective, ranks): (collie, Open MPI, MPICH)} in us at the smallest size."""
    out = {}
    pattern = r"^\| (\w+) \| (\d) \| \d+ B \| ([\d.,]+) \| [\d.,]+ \| ([\d.,*]+) \| ([\d.,*]+) \|"
    for m in re.finditer(pattern, md, re.M):
        out[(m.group(1), int(m.group(2)))] = tuple(number(m.group(i)) for i in (3, 4, 5))
    return out


def main():
    md = open(sys.argv[1] if len(sys.argv) > 1 else "bench/results/latest.md").read()
    tables, lat = busbw_tables(md), latencies(md)
    probe = number(re.search(r"TCP over loopback, 4 MiB writes.*?\| ([\d.]+) GB/s /", md).group(1))
    rows = []

    def check(what, measured, holds):
        rows.append((what, measured, holds))

    def mpi(r):
        return max(r[k] for k in ("Open MPI", "MPICH") if r.get(k) is not None)

    r = tables[("allreduce", 2)]["64 MiB"]
    check("allreduce 2r 64 MiB >= 3x better MPI", f"{r['collie'] / mpi(r):.2f}x", r["collie"] >= 3 * mpi(r))
    check("allreduce 2r 64 MiB >= half the single-copy floor (2.2 of 4.4 GB/s)", f"{r['collie']:.2f} GB/s",
          r["collie"] >= 2.2)
    c, o, m = lat[("allreduce", 2)]
    check("allreduce 2r 8 B latency <= better MPI", f"{c} us vs {min(o, m)}", c <= min(o, m))
    r = tables[("allreduce", 4)]["64 MiB"]
    check("allreduce 4r 64 MiB >= 3x better MPI", f"{r['collie'] / mpi(r):.2f}x", r["collie"] >= 3 * mpi(r))
    c, o, m = lat[("allreduce", 4)]
    check("allreduce 4r 8 B <= half of Open MPI", f"{c} us vs {o}", c <= o / 2)
    c, o, m = lat[("allreduce", 8)]
    check("allreduce 8r 8 B: microseconds, no collapse", f"{c} us", c < 100)
    for coll in ("allgather", "reduce_scatter", "broadcast", "alltoall"):
        for n in (2, 4):
            for size in ("1 MiB", "64 MiB"):
                r = tables[(coll, n)][size]
                x, reg = r["collie"] / mpi(r), r["collie, collie_mem_alloc"] / mpi(r)
                check(f"{coll} {n}r {size} >= 1.5x better MPI", f"{x:.2f}x (collie_mem_alloc {reg:.2f}x)", x >= 1.5)
    r = tables[("allreduce", 2)]["64 MiB"]
    tcp, gloo = r["collie tcp"], max(r["Gloo ring"], r["Gloo halving-doubling"])
    check("TCP 2r 64 MiB allreduce >= 70% of the one-way loopback probe",
          f"{tcp:.2f} GB/s = {100 * tcp / probe:.0f}% of {probe}", tcp >= 0.7 * probe)
    check("TCP 2r 64 MiB allreduce >= 3x Gloo", f"{tcp / gloo:.2f}x", tcp >= 3 * gloo)

    print("| acceptance point | measured | holds |\n|---|---|---|")
    for what, measured, holds in rows:
        print(f"| {what} | {measured} | {'yes' if holds else '**no**'} |")
    held = sum(1 for row in rows if row[2])
    print(f"\n{held} of {len(rows)} hold")
    return 0 if held == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
