"""``selp bench maintain``: the experiments of [LTZIL10] on one machine.

Per workload (transit-stub ``reachable``, shortest latency and -- Multi AggSel, Fig. 16 -- latency
with hop count, the sensor regions) and strategy
(absorption with BDDs or monomial sets, DRed, recompute): build the view over the whole base
(insert-all), then delete base tuples one at a time, checking after each deletion that every
strategy has the same view. Measured: build time, mean time per deletion, the work DRed does
(derivations enumerated), provenance bytes per tuple, the state's size as stored, the candidates
kept by aggregate selection (absorption's reserve, with its bytes); and, for
absorption with BDDs, the provenance in depth-first variable order against a random arrival
order. With ``mixed``: then a stream that alternates a deletion and an insertion (a new link
or a deleted one re-inserted), timed per change. The paper's distributed costs (shipped
rows/bytes between nodes) are measured by the ``minship-*`` and ``dred-shipping`` strategies,
whose nodes run in this process.
"""

from __future__ import annotations

import csv
import json
import random
import time
from pathlib import Path
from typing import Any, Callable

from selp.database import load_database
from selp.errors import SelpError
from selp.language import parse_program_file
from selp.language.validate import Analysis, analyze
from selp.maintain.absorption import Absorption
from selp.maintain.base import Maintainer
from selp.maintain.dred import DRed
from selp.maintain.formula import DEFAULT_CAP, Blowup
from selp.maintain.recompute import Recompute
from selp.maintain.session import fallback_message, state_bytes
from selp.outfile import open_output, write_text

PROGRAMS = Path(__file__).resolve().parent / "programs"
WORKLOADS = {
    # name: (program, generator, the base relation whose tuples are deleted)
    "reachable": ("reachable.dl", "transit-stub", "link"),
    "shortest": ("shortest.dl", "transit-stub", "link"),
    # [LTZIL10] Fig. 16: Multi AggSel (latency and hops together) against shortest's Single
    "shortest-multi": ("shortest-multi.dl", "transit-stub", "link"),
    "regions": ("regions.dl", "sensor-grid", "triggered"),
}
STRATEGIES: dict[str, Callable[[Analysis, dict], Maintainer]] = {
    # the caps bound a build that would not end (dense networks): past them the row says so
    "absorption-bdd": lambda a, b: Absorption(a, b, formulas="bdd"),
    "absorption-monomials": lambda a, b: Absorption(a, b, formulas="monomials"),
    # transitive closures built by semi-naive rounds instead of elimination (selp.maintain.closure)
    "absorption-bdd-rounds": lambda a, b: Absorption(a, b, formulas="bdd", build="rounds"),
    # every deletion restricted at once, as before deletion by evaluation (pending_cap=0)
    "absorption-bdd-eager": lambda a, b: Absorption(a, b, formulas="bdd", pending_cap=0),
    # the restriction deferred but paid in bulk by the next insertion, as at 7423b6f
    "absorption-bdd-bulk": lambda a, b: _BulkSettle(a, b, formulas="bdd", compact=0, lazy=False),
    # every new link of a closure expanded into the formulas at once, as before held edges
    "absorption-bdd-expand": lambda a, b: Absorption(a, b, formulas="bdd", lazy=False),
    # new links held, but a deletion expands the held ones it disconnects instead of repairing
    # the tuples it killed, as m23g did
    "absorption-bdd-held-expand": lambda a, b: Absorption(a, b, formulas="bdd", repair=False),
    "absorption-monomials-expand": lambda a, b: Absorption(a, b, formulas="monomials", lazy=False),
    "dred": lambda a, b: DRed(a, b),
    "recompute": lambda a, b: Recompute(a, b),
    # the distributed form on 4 nodes, its rounds run in this process (selp.maintain.spark), and
    # DRed counting what it would ship under the same placement: the shipped_* columns
    **{f"minship-{mode}": (lambda mode: lambda a, b: _distributed(a, b, mode))(mode) for mode in ("lazy", "eager", "off")},
    # the same with BDDs, all nodes sharing one CUDD manager (selp.maintain.spark, runner local)
    **{f"minship-{mode}-bdd": (lambda mode: lambda a, b: _distributed(a, b, mode, "bdd"))(mode) for mode in ("lazy", "eager")},
    "dred-shipping": lambda a, b: _distributed(a, b, "dred"),
}


class _BulkSettle(Absorption):
    """Absorption as it was before restriction on read (7423b6f): every stale formula is
    restricted before an insertion is combined with the view (no background compaction), and
    every new edge is expanded at once (no held edges, which came later)."""

    def apply(self, inserts: Any, deletes: Any) -> Any:
        """One batch; an insertion first restricts everything pending."""
        if any(inserts.values()):
            self.settle()
        return super().apply(inserts, deletes)


def _distributed(analysis: Analysis, base: dict, mode: str, formulas: str = "monomials") -> Maintainer:
    from selp.maintain.spark import Distributed, ShippingDRed

    if mode == "dred":
        return ShippingDRed(analysis, base)
    return Distributed(analysis, base, minship=mode, cap=10**9, runner="local", formulas=formulas)


def _state_bytes(m: Maintainer) -> int | None:
    """The state's size as stored; None for a maintainer that is not durable (the distributed
    form with BDDs, a local simulation)."""
    try:
        return state_bytes(m)
    except SelpError:
        return None


def generate(generator: str, out_dir: Path, seed: int, density: int, latencies: str = "paper") -> dict[str, Any]:
    """Write a workload's data (``density``: extra links per stub, or the sensors' range k in
    metres; ``latencies``: the transit-stub links', see :func:`selp.gen.network.transit_stub`);
    its statistics."""
    from selp.gen.network import sensor_grid, transit_stub

    if generator == "transit-stub":
        return transit_stub(out_dir, seed, stub_extra=density, latencies=latencies)
    return sensor_grid(out_dir, seed, k=density)


def run(workloads: list[str], strategies: list[str], deletions: int, seed: int, stub_extra: int | list[int], out_dir: str | Path,
        say: Callable[[str], None] = lambda s: None, grid_k: list[int] | None = None, orders: bool = True, mixed: int = 0,
        latencies: str = "paper") -> list[dict[str, Any]]:
    """Run the experiments, for every density: ``stub_extra`` for the transit-stub workloads,
    ``grid_k`` (the sensors' range, default 20 m) for the sensor grid; writes ``results.csv``,
    ``results.json`` and plots into ``out_dir`` as it goes. ``orders``: also build BDDs in a
    random arrival order, against the depth-first one. ``mixed``: rounds of the mixed stream
    after the deletions (each a deletion then an insertion; 0: none). ``latencies``: the
    transit-stub links' (``paper`` or ``random``)."""
    out = Path(out_dir)
    rows: list[dict[str, Any]] = []
    densities = {"transit-stub": [stub_extra] if isinstance(stub_extra, int) else list(stub_extra), "sensor-grid": grid_k or [20]}
    for w in workloads:
        program, generator, deleted_rel = WORKLOADS[w]
        for density in densities[generator]:
            _workload(w, program, generator, deleted_rel, density, strategies, deletions, seed, out, rows, say, orders, mixed, latencies)
    _write(out, rows)
    plots(rows, out)
    return rows


def _workload(w: str, program: str, generator: str, deleted_rel: str, extra: int, strategies: list[str], deletions: int, seed: int,
              out: Path, rows: list[dict[str, Any]], say: Callable[[str], None], orders: bool = True, mixed: int = 0,
              latencies: str = "paper") -> None:
    data = out / "data" / (f"{w}-extra{extra}" if generator == "transit-stub" else f"{w}-k{extra}")
    stats = generate(generator, data, seed, extra, latencies)
    analysis = analyze(parse_program_file(PROGRAMS / program))
    base = {rel: set(fs) for rel, fs in load_database(analysis, data).facts.items() if rel in analysis.edb}
    victims = sorted(base[deleted_rel], key=repr)
    random.Random(seed).shuffle(victims)
    victims = victims[:deletions]
    built: dict[str, Maintainer] = {}
    for s in strategies:
        t0 = time.perf_counter()
        c0 = time.process_time()
        try:
            m = STRATEGIES[s](analysis, base)
        except Blowup as err:  # recorded, and the strategy sits out the deletions
            rows.append({"workload": w, "strategy": s, "phase": "insert-all", "status": fallback_message(err, DEFAULT_CAP),
                         "seconds": round(time.perf_counter() - t0, 4), "cpu_seconds": round(time.process_time() - c0, 4), **_data(stats)})
            say(f"{w} {s}: {rows[-1]['status']}")
            _write(out, rows)
            continue
        build = time.perf_counter() - t0
        built[s] = m
        say(f"{w} {s}: built in {build:.2f}s")
        rows.append({"workload": w, "strategy": s, "phase": "insert-all", "status": "ok", "seconds": round(build, 4),
                     "cpu_seconds": round(time.process_time() - c0, 4), "derivations": getattr(m, "work", 0),
                     "tuples": sum(map(len, m.view().values())), "state_bytes": _state_bytes(m), **_prov(m), **_reserve(m), **_shipped(m, {}, 1),
                     **_data(stats)})
        _write(out, rows)
    times = {s: 0.0 for s in built}
    cpu = {s: 0.0 for s in built}
    work0 = {s: (getattr(m, "work", 0), getattr(m, "touched", 0), getattr(m, "settled", 0)) for s, m in built.items()}
    shipped0 = {s: dict(getattr(m, "total", {})) for s, m in built.items()}
    for victim in victims:
        views = []
        for s, m in built.items():
            t0 = time.perf_counter()
            c0 = time.process_time()
            m.apply({}, {deleted_rel: {victim}})
            times[s] += time.perf_counter() - t0
            cpu[s] += time.process_time() - c0
            views.append(m.view())
        if any(v != views[0] for v in views):
            raise AssertionError(f"{w}: the strategies disagree after deleting {victim}")
    n = max(len(victims), 1)
    for s, m in built.items():
        rows.append({"workload": w, "strategy": s, "phase": "delete-one", "status": "ok", "seconds": round(times[s] / n, 5),
                     "cpu_seconds": round(cpu[s] / n, 5), "deletions": len(victims),
                     # derivations enumerated (DRed) or formed (absorption), and stored tuples or formulas changed
                     "derivations_per_deletion": (getattr(m, "work", 0) - work0[s][0]) / n,
                     "touched_per_deletion": (getattr(m, "touched", 0) - work0[s][1]) / n,
                     # formulas restricted (absorption: at once with pending_cap=0, else deferred)
                     "settled_per_deletion": (getattr(m, "settled", 0) - work0[s][2]) / n,
                     "tuples": sum(map(len, m.view().values())), "state_bytes": _state_bytes(m), **_prov(m), **_reserve(m), **_shipped(m, shipped0[s], n),
                     **_data(stats)})
        say(f"{w} {s}: {times[s] / n * 1000:.1f} ms per deletion")
    for s, m in built.items():
        if getattr(m, "pending", None):  # what the deletions deferred, paid in one go
            pending, settled = len(m.pending), m.settled
            t0 = time.perf_counter()
            c0 = time.process_time()
            m.settle()
            rows.append({"workload": w, "strategy": s, "phase": "settle-pending", "status": "ok", "seconds": round(time.perf_counter() - t0, 5),
                         "cpu_seconds": round(time.process_time() - c0, 5), "deletions": len(victims), "pending": pending,
                         "settled": m.settled - settled, **_data(stats)})
    _write(out, rows)  # as it goes: the order comparison below can take long on dense graphs
    if mixed and built:
        _mixed(w, deleted_rel, base, victims, built, mixed, seed, stats, rows, say)
        _write(out, rows)
    if orders and "absorption-bdd" in built and not w.startswith("shortest"):
        # absorption-bdd's own build is the depth-first one: its insert-all row is copied, not
        # rebuilt (a minute of CPU at the paper's density)
        dfs = next(r for r in rows if r["workload"] == w and r["links"] == stats.get("directed_links", stats.get("near"))
                   and r["strategy"] == "absorption-bdd" and r["phase"] == "insert-all")
        rows.append({**dfs, "strategy": "absorption-bdd-dfs-order", **_data(stats)})
        for order in ("random",):
            t0 = time.perf_counter()
            c0 = time.process_time()
            try:
                m = Absorption(analysis, base, formulas="bdd", order=order)
            except Blowup as err:  # a poor order can pass the node cap where depth-first does not
                rows.append({"workload": w, "strategy": f"absorption-bdd-{order}-order", "phase": "insert-all", "status": fallback_message(err, DEFAULT_CAP),
                             "seconds": round(time.perf_counter() - t0, 4), "cpu_seconds": round(time.process_time() - c0, 4), **_data(stats)})
                _write(out, rows)
                continue
            rows.append({"workload": w, "strategy": f"absorption-bdd-{order}-order", "phase": "insert-all", "status": "ok",
                         "seconds": round(time.perf_counter() - t0, 4), "cpu_seconds": round(time.process_time() - c0, 4), "tuples": sum(map(len, m.view().values())), **_prov(m), **_data(stats)})
            _write(out, rows)


def mixed_stream(base: set, deleted: list, rounds: int, seed: int) -> list[tuple[str, Any]]:
    """``rounds`` pairs of changes to a relation of ``(src, dst, ...)`` tuples whose present
    tuples are ``base`` (``deleted``: those deleted before): a random present tuple deleted,
    then a tuple inserted -- half the time one deleted earlier, else a new link between two
    nodes not linked yet, with the values after the endpoints of a random present tuple."""
    rng = random.Random(seed + 1)
    present, gone = set(base), list(deleted)
    nodes = sorted({v for f in base for v in f[:2]}, key=repr)
    out: list[tuple[str, Any]] = []
    for _ in range(rounds):
        victim = rng.choice(sorted(present, key=repr))
        present.discard(victim)
        gone.append(victim)
        out.append(("-", victim))
        if rng.random() < 0.5:
            back = gone.pop(rng.randrange(len(gone)))
        else:
            linked = {f[:2] for f in present}
            while True:
                a, b = rng.choice(nodes), rng.choice(nodes)
                if a != b and (a, b) not in linked:
                    break
            back = (a, b, *rng.choice(sorted(present, key=repr))[2:])
        present.add(back)
        out.append(("+", back))
    return out


def _mixed(w: str, rel: str, base: dict, victims: list, built: dict[str, Maintainer], rounds: int, seed: int, stats: dict[str, Any],
           rows: list[dict[str, Any]], say: Callable[[str], None]) -> None:
    """The mixed stream (:func:`mixed_stream`) after the deletions: every strategy applies each
    change, the views are checked to agree, and the time per change is recorded by kind. A
    strategy whose formulas pass their cap on a change (a new link can make the depth-first
    order a poor one) gets a row saying so and leaves the stream."""
    stream = mixed_stream(base[rel] - set(victims), victims, rounds, seed)
    spent = {s: {"-": [0.0, 0.0], "+": [0.0, 0.0]} for s in built}
    settled0 = {s: getattr(m, "settled", 0) for s, m in built.items()}
    shipped0 = {s: dict(getattr(m, "total", {})) for s, m in built.items()}
    built = dict(built)
    for k, (op, fact) in enumerate(stream):
        views = []
        for s, m in list(built.items()):
            t0, c0 = time.perf_counter(), time.process_time()
            try:
                m.apply({rel: {fact}} if op == "+" else {}, {rel: {fact}} if op == "-" else {})
            except Blowup as err:
                rows.append({"workload": w, "strategy": s, "phase": "mixed", "status": f"change {k + 1} ({op}{fact}): {fallback_message(err, DEFAULT_CAP)}",
                             "seconds": round(time.perf_counter() - t0, 4), "cpu_seconds": round(time.process_time() - c0, 4), **_data(stats)})
                say(f"{w} {s}: {rows[-1]['status']}")
                del built[s]
                continue
            spent[s][op][0] += time.perf_counter() - t0
            spent[s][op][1] += time.process_time() - c0
            views.append(m.view())
        if any(v != views[0] for v in views):
            raise AssertionError(f"{w}: the strategies disagree after {op}{fact}")
    n = len(stream)
    for s, m in built.items():
        d, i = spent[s]["-"], spent[s]["+"]
        rows.append({"workload": w, "strategy": s, "phase": "mixed", "status": "ok", "seconds": round((d[0] + i[0]) / n, 5),
                     "cpu_seconds": round((d[1] + i[1]) / n, 5), "changes": n,
                     "delete_seconds": round(d[0] / rounds, 5), "delete_cpu_seconds": round(d[1] / rounds, 5),
                     "insert_seconds": round(i[0] / rounds, 5), "insert_cpu_seconds": round(i[1] / rounds, 5),
                     "settled_per_change": (getattr(m, "settled", 0) - settled0[s]) / n, "pending": len(getattr(m, "pending", ())),
                     "held_edges": _held(m), "expanded_later": getattr(m, "folded", 0),
                     "repaired": getattr(m, "repaired", 0),
                     "tuples": sum(map(len, m.view().values())), **_shipped(m, shipped0[s], n), **_data(stats)})
        say(f"{w} {s}: mixed stream {(d[0] + i[0]) / n * 1000:.1f} ms per change")
    for s, m in built.items():
        # the work held edges defer, paid at once: what an eager expansion would have spent
        # (a row of its own, not part of the stream: the stream never needed it)
        held = _held(m)
        if not held and not getattr(m, "incomplete", None):  # a repaired closure: built again by fold
            continue
        t0, c0 = time.perf_counter(), time.process_time()
        try:
            m.fold()
            status = "ok"
        except Blowup as err:
            status = fallback_message(err, DEFAULT_CAP)
        rows.append({"workload": w, "strategy": s, "phase": "fold-held", "status": status, "seconds": round(time.perf_counter() - t0, 5),
                     "cpu_seconds": round(time.process_time() - c0, 5), "held_edges": held, **_data(stats)})
        say(f"{w} {s}: expanding {held} held edges: {rows[-1]['seconds'] * 1000:.0f} ms ({status})")


def _held(m: Maintainer) -> int:
    """How many new edges ``m`` holds unexpanded, absorbed or waiting (0 for a strategy
    without them)."""
    return sum(map(len, getattr(m, "lazy_edges", {}).values())) + sum(map(len, getattr(m, "partial_edges", {}).values()))


def _prov(m: Maintainer) -> dict[str, Any]:
    p = m.provenance_stats()
    return {"provenance_bytes_per_tuple": round(p["provenance_bytes_per_tuple"], 1), "provenance_bytes": p["provenance_bytes"]}


def _reserve(m: Maintainer) -> dict[str, Any]:
    """The candidates aggregate selection keeps (absorption's reserve: every candidate of a
    group, with its formula) and their formulas' bytes; none for the other strategies."""
    cands = getattr(m, "candidates", None)
    if cands is None:
        return {}
    return {"candidates": sum(len(c) for c in cands.values()), "reserve_bytes": m.provenance_stats().get("reserve_bytes", 0)}


def _shipped(m: Maintainer, before: dict[str, int], n: int) -> dict[str, Any]:
    """Rows and bytes shipped between nodes since ``before``, per ``n`` (the distributed
    strategies only)."""
    total = getattr(m, "total", None)
    if total is None:
        return {}
    return {k: round((total[k] - before.get(k, 0)) / n, 1) for k in ("shipped_rows", "shipped_bytes")}


def _data(stats: dict[str, Any]) -> dict[str, Any]:
    import os
    import subprocess

    try:  # the machine's load as the row was measured (the benchmark shares its cores)
        uptime = subprocess.run(["uptime"], capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        uptime = ""
    return {"data": json.dumps(stats, sort_keys=True), "links": stats.get("directed_links", stats.get("near")),
            "loadavg_1m": round(os.getloadavg()[0], 2), "uptime": uptime}


def plots(rows: list[dict[str, Any]], out: Path) -> list[Path]:
    """Per-deletion time and work by strategy and density, and provenance bytes per tuple in
    depth-first vs arrival order, as PNG files (none without matplotlib)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return []
    made = []
    dels = [r for r in rows if r["phase"] == "delete-one"]
    for metric, label, name in (("seconds", "seconds per deletion (log)", "per-deletion-time.png"),
                                ("derivations_per_deletion", "derivations per deletion (log)", "per-deletion-derivations.png")):
        cases = list(dict.fromkeys((r["workload"], r["links"]) for r in dels))
        strategies = list(dict.fromkeys(r["strategy"] for r in dels))
        if not cases:
            continue
        fig, ax = plt.subplots(figsize=(8, 4))
        width = 0.8 / max(len(strategies), 1)
        for k, s in enumerate(strategies):
            ys = [next((max(r[metric], 1e-6) for r in dels if (r["workload"], r["links"]) == c and r["strategy"] == s), 0) for c in cases]
            ax.bar([i + k * width for i in range(len(cases))], ys, width, label=s)
        ax.set_xticks([i + 0.4 - width / 2 for i in range(len(cases))], [f"{w}\n{n} links" for w, n in cases])
        ax.set_yscale("log")
        ax.set_ylabel(label)
        ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(out / name, dpi=100)
        plt.close(fig)
        made.append(out / name)
    orders = [r for r in rows if r["strategy"].endswith("-order") and r["status"] == "ok"]
    if orders:
        cases = list(dict.fromkeys((r["workload"], r["links"]) for r in orders))
        fig, ax = plt.subplots(figsize=(6, 4))
        for k, order in enumerate(("dfs", "random")):
            ys = [next((r["provenance_bytes_per_tuple"] for r in orders if (r["workload"], r["links"]) == c and f"-{order}-" in r["strategy"]), 0)
                  for c in cases]
            ax.bar([i + k * 0.4 for i in range(len(cases))], ys, 0.4, label=f"{order} order")
        ax.set_xticks([i + 0.2 for i in range(len(cases))], [f"{w}\n{n} links" for w, n in cases])
        ax.set_ylabel("BDD provenance bytes per tuple")
        ax.legend()
        fig.tight_layout()
        fig.savefig(out / "dfs-vs-arrival-order.png", dpi=100)
        plt.close(fig)
        made.append(out / "dfs-vs-arrival-order.png")
    return made


def _write(out: Path, rows: list[dict[str, Any]]) -> None:
    out.mkdir(parents=True, exist_ok=True)
    keys = list(dict.fromkeys(k for r in rows for k in r))
    with open_output(out / "results.csv", newline="") as fh:
        wr = csv.DictWriter(fh, fieldnames=keys)
        wr.writeheader()
        wr.writerows(rows)
    write_text(out / "results.json", json.dumps(rows, indent=2) + "\n")
