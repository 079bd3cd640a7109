"""Pooled medians of several rerun.sh outputs (every run of every file, per tree and command) and
the targets' ratios. Usage: python3 pool.py interleaved-2.txt interleaved-7.txt interleaved-8.txt"""
import re, statistics, sys
pool: dict[tuple[str, str], list[float]] = {}
for f in sys.argv[1:]:
    for line in open(f):
        m = re.match(r"(base|branch)\s+(eval|top1|top3|top7)\s+median.*runs (.*)", line)
        if m:
            pool.setdefault((m[1], m[2]), []).extend(float(x) for x in m[3].split())
for t in ("base", "branch"):
    med = {n: statistics.median(pool[t, n]) for n in ("eval", "top1", "top3", "top7")}
    print(f"{t:6} " + "  ".join(f"{n} {v:.3f}" for n, v in med.items())
          + f"  top-1/eval {med['top1'] / med['eval']:.3f}  top-3/eval {med['top3'] / med['eval']:.3f}"
          + f"  top-7/top-1 {med['top7'] / med['top1']:.3f}  ({len(pool[t, 'top7'])} runs each)")
