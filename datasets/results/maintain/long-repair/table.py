"""Print the mixed-stream table of run.sh's OUT directory: per density and code (base / this
tree), per strategy, the delete-only and mixed-stream costs per change, ms wall (CPU).
Usage: table.py OUT [LABEL=m23h] [PREFIX=tree-extra] [DENSITIES="8 2"] (mixed-held/run.sh's
directories: m23g extra "2 8")."""

from __future__ import annotations

import csv
import sys
from pathlib import Path


def ms(row: dict, wall: str, cpu: str) -> str:
    if not row.get(wall):
        return ""
    return f"{float(row[wall]) * 1000:,.1f} ({float(row[cpu]) * 1000:,.1f})"


def main(out: Path, label: str = "m23h", prefix: str = "tree-extra", densities: str = "8 2") -> None:
    print("| links | code | strategy | delete-only: per deletion | mixed: per change | mixed: deletion | mixed: insertion | held / expanded later / repaired | fold-held at the end | load |")
    print("|---|---|---|--:|--:|--:|--:|--:|--:|--:|")
    for x in densities.split():
        for code, sub in (("base", f"base-extra{x}"), (label, f"{prefix}{x}")):
            path = out / sub / "results.csv"
            if not path.exists():
                continue
            rows = list(csv.DictReader(path.open()))
            for s in dict.fromkeys(r["strategy"] for r in rows):
                mine = [r for r in rows if r["strategy"] == s]
                dele = next((r for r in mine if r["phase"] == "delete-one"), {})
                mixed = next((r for r in mine if r["phase"] == "mixed"), {})
                fold = next((r for r in mine if r["phase"] == "fold-held"), {})
                links = next((r["links"] for r in mine if r.get("links")), x)
                load = mixed.get("loadavg_1m") or dele.get("loadavg_1m", "")
                if mixed and mixed["status"] != "ok":
                    per, d, i = mixed["status"], "", ""
                else:
                    per, d, i = ms(mixed, "seconds", "cpu_seconds"), ms(mixed, "delete_seconds", "delete_cpu_seconds"), ms(mixed, "insert_seconds", "insert_cpu_seconds")
                held = f"{mixed.get('held_edges', '')} / {mixed.get('expanded_later', '')} / {mixed.get('repaired', '') or '—'}" if mixed.get("held_edges") not in (None, "") else "—"
                f = f"{ms(fold, 'seconds', 'cpu_seconds')} {fold['status'] if fold.get('status') not in (None, 'ok') else ''}".strip() if fold else "—"
                print(f"| {links} | {code} | {s} | {ms(dele, 'seconds', 'cpu_seconds')} | {per} | {d} | {i} | {held} | {f} | {load} |")


if __name__ == "__main__":
    main(Path(sys.argv[1]), *sys.argv[2:5])
