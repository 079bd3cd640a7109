"""Multi AggSel (shortest-multi) against Single (shortest) from the runs below this folder: a
markdown table on stdout and multi-vs-single.png. Usage: python3 table.py [DIR]"""

from __future__ import annotations

import csv
import sys
from pathlib import Path

here = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).parent)
rows = [r for f in sorted(here.glob("extra*/results.csv")) for r in csv.DictReader(open(f))]
key = lambda r: (int(r["links"]), r["strategy"])  # noqa: E731
cases = sorted({key(r) for r in rows if r["status"] == "ok"})


def pick(links: int, strategy: str, workload: str, phase: str) -> dict | None:
    return next((r for r in rows if key(r) == (links, strategy) and r["workload"] == workload and r["phase"] == phase), None)


def ms(r: dict | None, col: str = "seconds") -> str:
    return "—" if r is None else f"{float(r[col]) * 1000:,.0f}"


print("| links | strategy | build ms single / multi | per deletion ms single / multi (CPU) | multi/single per deletion (CPU) |"
      " candidates single / multi | provenance bytes single / multi | load |")
print("|--:|---|--:|--:|--:|--:|--:|--:|")
ratios: dict[str, list[tuple[int, float]]] = {}
for links, s in cases:
    b1, b2 = pick(links, s, "shortest", "insert-all"), pick(links, s, "shortest-multi", "insert-all")
    d1, d2 = pick(links, s, "shortest", "delete-one"), pick(links, s, "shortest-multi", "delete-one")
    if None in (b1, b2, d1, d2):
        continue
    ratio = float(d2["cpu_seconds"]) / float(d1["cpu_seconds"])  # CPU: steadier than wall on a loaded machine
    ratios.setdefault(s, []).append((links, ratio))
    print(f"| {links} | {s} | {ms(b1)} / {ms(b2)} | {ms(d1)} / {ms(d2)} ({ms(d1, 'cpu_seconds')} / {ms(d2, 'cpu_seconds')}) |"
          f" {ratio:.2f} | {d1.get('candidates') or '—'} / {d2.get('candidates') or '—'} |"
          f" {d1.get('provenance_bytes') or '—'} / {d2.get('provenance_bytes') or '—'} | {d1['loadavg_1m']}–{d2['loadavg_1m']} |")
try:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    sys.exit(0)
fig, ax = plt.subplots(figsize=(7, 4))
for s, pts in sorted(ratios.items()):
    pts.sort()
    ax.plot([p for p, _ in pts], [r for _, r in pts], marker="o", label=s)
ax.axhline(1.0, color="grey", lw=0.8)
ax.axhline(0.5, color="red", lw=0.8, ls="--", label="paper: Multi ≈ ½ Single")
ax.set_xlabel("directed links (transit-stub, 100 nodes)")
ax.set_ylabel("per-deletion CPU time, Multi / Single")
ax.legend(fontsize=8)
fig.tight_layout()
fig.savefig(here / "multi-vs-single.png", dpi=100)
