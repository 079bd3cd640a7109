"""Print the m23e tables (mixed streams, shipped rows) from a run of m23e-run.sh."""

from __future__ import annotations

import csv
import sys
from pathlib import Path


def rows(path: Path) -> list[dict[str, str]]:
    """The rows of one results.csv, none when the run did not write it."""
    return list(csv.DictReader(open(path))) if path.exists() else []


def ms(r: dict[str, str], wall: str, cpu: str) -> str:
    """'wall (CPU)' in ms."""
    return f"{float(r[wall]) * 1000:,.1f} ({float(r[cpu]) * 1000:,.1f})" if r.get(wall) else "—"


def main(out: Path) -> None:
    print("| links | strategy | delete-only: per deletion | mixed: per change | mixed: deletion | mixed: insertion | restricted / change | load |")
    print("|---|---|--:|--:|--:|--:|--:|--:|")
    for x in (2, 8):
        got = rows(out / "mixed-stream" / f"extra{x}" / "results.csv")
        for s in ("absorption-bdd", "absorption-bdd-bulk", "dred"):
            d = next((r for r in got if r["strategy"] == s and r["phase"] == "delete-one"), {})
            m = next((r for r in got if r["strategy"] == s and r["phase"] == "mixed"), {})
            mixed = ms(m, "seconds", "cpu_seconds") if m.get("status") == "ok" else (m.get("status") or "—")
            print(f"| {d.get('links', '?')} | {s} | {ms(d, 'seconds', 'cpu_seconds')} | {mixed} | {ms(m, 'delete_seconds', 'delete_cpu_seconds')} | "
                  f"{ms(m, 'insert_seconds', 'insert_cpu_seconds')} | {m.get('settled_per_change', '—')} | {m.get('loadavg_1m', d.get('loadavg_1m', '?'))} |")
    print()
    print("| links | strategy | shipped rows / deletion | shipped bytes / deletion | per deletion ms, wall (CPU) | load |")
    print("|---|---|--:|--:|--:|--:|")
    for x in (2, 8):
        for r in rows(out / "shipping-bdd" / f"extra{x}" / "results.csv"):
            if r["phase"] == "delete-one":
                print(f"| {r['links']} | {r['strategy']} | {float(r['shipped_rows']):,.1f} | {float(r['shipped_bytes']):,.0f} | {ms(r, 'seconds', 'cpu_seconds')} | {r['loadavg_1m']} |")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
