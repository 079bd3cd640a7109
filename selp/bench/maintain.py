"""``selp bench maintain``: the experiments of [LTZIL10] on one machine.

Per workload (transit-stub ``reachable`` and shortest latency, the sensor regions) and strategy
(absorption with BDDs or monomial sets, DRed, recompute): build the view over the whole base
(insert-all), then delete base tuples one at a time, checking after each deletion that every
strategy has the same view. Measured: build time, mean time per deletion, the work DRed does
(derivations enumerated), provenance bytes per tuple, the state's size as stored; and, for
absorption with BDDs, the provenance in depth-first variable order against a random arrival
order. The paper's distributed costs (shipped rows/bytes between nodes) are not measured: the
view is maintained in one process.
"""

from __future__ import annotations

import csv
import json
import random
import time
from pathlib import Path
from typing import Any, Callable

from selp.database import load_database, write_text
from selp.language import parse_program_file
from selp.language.validate import Analysis, analyze
from selp.maintain.absorption import Absorption
from selp.maintain.base import Maintainer
from selp.maintain.dred import DRed
from selp.maintain.recompute import Recompute
from selp.maintain.session import state_bytes

PROGRAMS = Path(__file__).resolve().parent / "programs"
WORKLOADS = {
    # name: (program, generator, the base relation whose tuples are deleted)
    "reachable": ("reachable.dl", "transit-stub", "link"),
    "shortest": ("shortest.dl", "transit-stub", "link"),
    "regions": ("regions.dl", "sensor-grid", "triggered"),
}
STRATEGIES: dict[str, Callable[[Analysis, dict], Maintainer]] = {
    "absorption-bdd": lambda a, b: Absorption(a, b, cap=10**9, formulas="bdd"),
    "absorption-monomials": lambda a, b: Absorption(a, b, cap=10**9, formulas="monomials"),
    "dred": lambda a, b: DRed(a, b),
    "recompute": lambda a, b: Recompute(a, b),
    # the distributed form on 4 nodes, its rounds run in this process (selp.maintain.spark), and
    # DRed counting what it would ship under the same placement: the shipped_* columns
    **{f"minship-{mode}": (lambda mode: lambda a, b: _distributed(a, b, mode))(mode) for mode in ("lazy", "eager", "off")},
    "dred-shipping": lambda a, b: _distributed(a, b, "dred"),
}


def _distributed(analysis: Analysis, base: dict, mode: str) -> Maintainer:
    from selp.maintain.spark import Distributed, ShippingDRed

    if mode == "dred":
        return ShippingDRed(analysis, base)
    return Distributed(analysis, base, minship=mode, cap=10**9, runner="local")


def generate(generator: str, out_dir: Path, seed: int, stub_extra: int) -> dict[str, Any]:
    """Write a workload's data; its statistics."""
    from selp.gen.network import sensor_grid, transit_stub

    if generator == "transit-stub":
        return transit_stub(out_dir, seed, stub_extra=stub_extra)
    return sensor_grid(out_dir, seed)


def run(workloads: list[str], strategies: list[str], deletions: int, seed: int, stub_extra: int, out_dir: str | Path,
        say: Callable[[str], None] = lambda s: None) -> list[dict[str, Any]]:
    """Run the experiments; writes ``results.csv`` and ``results.json`` into ``out_dir``."""
    out = Path(out_dir)
    rows: list[dict[str, Any]] = []
    for w in workloads:
        program, generator, deleted_rel = WORKLOADS[w]
        data = out / "data" / w
        stats = generate(generator, data, seed, stub_extra)
        analysis = analyze(parse_program_file(PROGRAMS / program))
        base = {rel: set(fs) for rel, fs in load_database(analysis, data).facts.items() if rel in analysis.edb}
        victims = sorted(base[deleted_rel], key=repr)
        random.Random(seed).shuffle(victims)
        victims = victims[:deletions]
        built: dict[str, Maintainer] = {}
        for s in strategies:
            t0 = time.perf_counter()
            m = STRATEGIES[s](analysis, base)
            build = time.perf_counter() - t0
            built[s] = m
            say(f"{w} {s}: built in {build:.2f}s")
            rows.append({"workload": w, "strategy": s, "phase": "insert-all", "seconds": round(build, 4),
                         "tuples": sum(map(len, m.view().values())), "state_bytes": state_bytes(m), **_prov(m), **_shipped(m, {}, 1), **_data(stats)})
        times = {s: 0.0 for s in strategies}
        work0 = {s: getattr(m, "work", 0) for s, m in built.items()}
        shipped0 = {s: dict(getattr(m, "total", {})) for s, m in built.items()}
        for victim in victims:
            views = []
            for s, m in built.items():
                t0 = time.perf_counter()
                m.apply({}, {deleted_rel: {victim}})
                times[s] += time.perf_counter() - t0
                views.append(m.view())
            if any(v != views[0] for v in views):
                raise AssertionError(f"{w}: the strategies disagree after deleting {victim}")
        for s, m in built.items():
            n = max(len(victims), 1)
            rows.append({"workload": w, "strategy": s, "phase": "delete-one", "seconds": round(times[s] / n, 5),
                         "deletions": len(victims), "work_per_deletion": (getattr(m, "work", 0) - work0[s]) / n,
                         "tuples": sum(map(len, m.view().values())), "state_bytes": state_bytes(m), **_prov(m), **_shipped(m, shipped0[s], n),
                         **_data(stats)})
            say(f"{w} {s}: {times[s] / n * 1000:.1f} ms per deletion")
        _write(out, rows)  # as it goes: the order comparison below can take long on dense graphs
        if "absorption-bdd" in strategies and w != "shortest":
            for order in ("dfs", "random"):
                t0 = time.perf_counter()
                m = Absorption(analysis, base, cap=10**9, formulas="bdd", order=order)
                rows.append({"workload": w, "strategy": f"absorption-bdd-{order}-order", "phase": "insert-all",
                             "seconds": round(time.perf_counter() - t0, 4), "tuples": sum(map(len, m.view().values())), **_prov(m), **_data(stats)})
                _write(out, rows)
    _write(out, rows)
    return rows


def _prov(m: Maintainer) -> dict[str, Any]:
    p = m.provenance_stats()
    return {"provenance_bytes_per_tuple": round(p["provenance_bytes_per_tuple"], 1), "provenance_bytes": p["provenance_bytes"]}


def _shipped(m: Maintainer, before: dict[str, int], n: int) -> dict[str, Any]:
    """Rows and bytes shipped between nodes since ``before``, per ``n`` (the distributed
    strategies only)."""
    total = getattr(m, "total", None)
    if total is None:
        return {}
    return {k: round((total[k] - before.get(k, 0)) / n, 1) for k in ("shipped_rows", "shipped_bytes")}


def _data(stats: dict[str, Any]) -> dict[str, Any]:
    import os

    return {"data": json.dumps(stats, sort_keys=True), "loadavg_1m": round(os.getloadavg()[0], 2)}


def _write(out: Path, rows: list[dict[str, Any]]) -> None:
    out.mkdir(parents=True, exist_ok=True)
    keys = list(dict.fromkeys(k for r in rows for k in r))
    with open(out / "results.csv", "w", newline="", encoding="utf-8") as fh:
        wr = csv.DictWriter(fh, fieldnames=keys)
        wr.writeheader()
        wr.writerows(rows)
    write_text(out / "results.json", json.dumps(rows, indent=2) + "\n")
