"""``selp bench adapt``: the experiments of [GI12] §V on one machine.

A SWISS-PROT-like mapping program (:mod:`selp.gen.mapping_changes`: 16 sources of ``rows``
tuples, 24 views of 1–4 rules) is evaluated once on one Z-relation engine with its provenance
tables. Each trial draws a new program P′ by ``n`` random changes of the paper's mix (optionally
with ``updates`` data changes per source, pending as ``S@delta``) and computes P′'s instance
twice on that engine: **recomputation** from scratch (the input plans; timed: execution only)
and **adaptation** (:func:`selp.adapt.adapt.adapt`; timed: statistics, plan search and
execution — [GI12]'s "reformulation, optimization and execution"), with and without the old
provenance tables. Every relation of P′ (views, changed sources, provenance tables) must hold
the same Z-relation, counts included, both ways, else the run stops. Time is normalised per
relation to its recomputation.

Experiments (``experiment`` column): ``mix`` — ``mix`` changes (24: Figures 5 and 6), and
``mix+updates`` with the data changes too (Figures 8 and 9); ``kind`` — one change of each kind
(Figure 7: only the views it changed are averaged); ``sweep`` — 0 to 128 changes (Figure 10).
"""

from __future__ import annotations

import json
import os
import re
import statistics
import subprocess
from pathlib import Path
from typing import Any, Callable

from selp.adapt.adapt import DELTA, NEW, PROV, ViewPlan, adapt, materialise
from selp.adapt.registry import z_engine
from selp.adapt.zprogram import ZEngine, to_text
from selp.gen.mapping_changes import (
    MIX,
    Workload,
    changed,
    data_updates,
    initial,
    source_data,
)
from selp.language.parser import parse_program
from selp.outfile import write_text

Say = Callable[[str], None]
SWEEP = (0, 1, 2, 4, 8, 16, 24, 32, 64, 128)
_DERIVED = re.compile(r"_c\d+$")
EXPECTED = "@expected"  # the recomputed instance, kept for the comparison
FLOOR_S = 0.01  # seconds: on a shared machine a scheduler time slice; timings below it are not told apart


def _kind_of(relation: str, w: Workload) -> str:
    rel = relation[: -len(NEW)]
    if rel.endswith(PROV):
        return "provenance table"
    return "view" if rel in w.views else "changed source"


def _view_changes(w: Workload) -> dict[str, list[str]]:
    """Per view of P′, the kinds of the changes that touched it (a source column change touches
    every view reading the source)."""
    reads = {v: {_base(rel) for r in rs for rel, _ in r.body} for v, rs in w.views.items()}
    out: dict[str, list[str]] = {v: [] for v in w.views}
    for kind, touched in w.changes:
        for v in w.views:
            if touched == v or touched in reads[v]:
                out[v].append(kind)
    return out


def _base(rel: str) -> str:
    while _DERIVED.search(rel):
        rel = _DERIVED.sub("", rel)
    return rel


def _plan_summary(vp: ViewPlan, old_views: set[str]) -> tuple[str, str, int]:
    """``(plan, reads, rules)``: "recompute" when the plan reads no old view, provenance table nor
    delta, else "reuse"; the old views / provenance tables / deltas it reads; its rule count."""
    read = {rel for cq in vp.plan.query for rel, _ in cq.body}
    reused = sorted(r for r in read if r in old_views or r.endswith(PROV) or r.endswith(DELTA))
    return ("reuse" if reused else "recompute"), " ".join(reused), len(vp.plan.query)


def _clear(engine: ZEngine, expected: bool = False) -> None:
    """Forget the relations of P′ (and the kept recomputation when ``expected``)."""
    for name in engine.names():
        if name.endswith(NEW) or (expected and name.endswith(EXPECTED)):
            engine.drop(name)


def _same(engine: ZEngine, a: str, b: str) -> bool:
    """Whether two stored relations are equal, counts included (in the database when it can)."""
    same = getattr(engine, "same", None)
    return bool(same(a, b)) if same is not None else engine.get(a) == engine.get(b)


def _ratio(adapt_s: float, recompute_s: float) -> float:
    """Adaptation over recomputation, both read no finer than :data:`FLOOR_S`: a relation both
    ways shared by reference (a view copying a source) costs microseconds, and their ratio is
    scheduler noise (either way), not a speed-up nor a slow-down."""
    return round(max(adapt_s, FLOOR_S) / max(recompute_s, FLOOR_S), 4)


def _trial(engine: ZEngine, old: Workload, new: Workload, provenance: bool, repeat: int) -> list[dict[str, Any]]:
    """Recompute, then adapt, P′ on ``engine`` (``repeat`` times each, the fastest kept); rows per
    relation of P′. Raises AssertionError when adaptation and recomputation disagree."""
    p, p2 = parse_program(old.text()), parse_program(new.text())
    rec: dict[str, float] = {}
    for _ in range(repeat):
        _clear(engine)
        for vp in adapt(engine, p, p2, provenance, strategy="recompute"):
            rec[vp.relation] = min(rec.get(vp.relation, float("inf")), vp.run_seconds)
    # exact, outside the timings (a segmented relation's statistics are an estimate)
    count = getattr(engine, "count", None)
    tuples = {name: count(name) if count is not None else len(engine.get(name)) for name in rec}
    for name in rec:  # kept in the engine and compared there: fetching every row costs more than the trial
        engine.rename(name, name + EXPECTED)
    best: dict[str, ViewPlan] = {}
    for _ in range(repeat):
        _clear(engine)
        for vp in adapt(engine, p, p2, provenance):
            if vp.relation not in best or vp.seconds < best[vp.relation].seconds:
                best[vp.relation] = vp
    for name in rec:
        if not _same(engine, name, name + EXPECTED):
            raise AssertionError(f"adapted {name} differs from its recomputation (provenance={provenance}, changes={new.changes})")
    _clear(engine, expected=True)
    old_views = set(old.views)
    touched = _view_changes(new)
    out = []
    for name, vp in best.items():
        plan, reads, rules = _plan_summary(vp, old_views)
        rel = name[: -len(NEW)]
        out.append({
            "relation": rel, "kind": _kind_of(name, new), "adapt_s": round(vp.seconds, 5), "search_s": round(vp.plan.seconds, 5),
            "recompute_s": round(rec[name], 5), "ratio": _ratio(vp.seconds, rec[name]),
            "plan": plan, "reads": reads, "plan_rules": rules, "explored": vp.plan.explored,
            "est_cost": round(vp.plan.cost), "est_recompute": round(vp.plan.recompute_cost),
            "tuples": tuples[name], "view_changes": ";".join(touched.get(rel, [])),
        })
    return out


def _load(engine: ZEngine, w: Workload, data: dict[str, dict]) -> None:
    for s in w.sources:
        engine.put(s, len(w.types[s]), to_text(data[s]))
    materialise(engine, parse_program(w.text()), provenance=True)
    for name in engine.names():  # the old instance is analysed once, as a DBMS keeps statistics
        engine.stats(name)


def _with_deltas(engine: ZEngine, w: Workload, deltas: dict[str, dict] | None) -> None:
    for name in engine.names():
        if name.endswith(DELTA):
            engine.drop(name)
    for s, rows in (deltas or {}).items():
        if rows:
            engine.put(s + DELTA, len(w.types[s]), to_text(rows))


def run(rows: int, mix: int, sweep: list[int], updates: int, kinds: bool, seed: int = 0, engine_name: str = "embedded",
        repeat: int = 1, say: Say = lambda s: None, progress: Callable[[list[dict[str, Any]]], None] | None = None) -> list[dict[str, Any]]:
    """The rows of every experiment (module docstring); ``progress`` gets the rows so far after
    each trial (so a run stopped by a memory limit keeps what it measured)."""
    w = initial(seed)
    data = source_data(w, rows, seed)
    engine = z_engine(engine_name)
    _load(engine, w, data)
    trials: list[tuple[str, int, str | None, int]] = [("mix", mix, None, 0)]
    if updates:
        trials.append(("mix+updates", mix, None, updates))
    if kinds:
        trials += [("kind", 1, k, 0) for k in MIX]
    trials += [("sweep", n, None, 0) for n in sweep]
    out: list[dict[str, Any]] = []
    for experiment, n, kind, ups in trials:
        new = changed(w, n, seed, kind)
        _with_deltas(engine, w, data_updates(w, data, ups, seed) if ups else None)
        for provenance in (False, True):
            rs = _trial(engine, w, new, provenance, repeat)
            label = {"experiment": experiment, "changes": n, "change_kind": kind or "mix", "provenance": provenance, "updates": ups}
            out += [label | r for r in rs]
            views = [r for r in rs if r["kind"] == "view"]
            ratios = [r["ratio"] for r in views if r["ratio"] is not None]
            say(f"{experiment} {kind or ''} changes={n} provenance={provenance}: mean view ratio "
                f"{statistics.mean(ratios) if ratios else float('nan'):.3f} over {len(views)} views")
            if progress is not None:
                progress(out)
    _with_deltas(engine, w, None)
    return out


def summary(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per trial: the mean and median view ratio (for ``kind``: over the views the change
    touched), views faster than recomputation, and total times over views and over everything."""
    groups: dict[tuple, list[dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault((r["experiment"], r["changes"], r["change_kind"], r["provenance"], r["updates"]), []).append(r)
    out = []
    for (experiment, n, kind, prov, ups), rs in groups.items():
        views = [r for r in rs if r["kind"] == "view"]
        if experiment == "kind":
            views = [r for r in views if r["view_changes"]] or views
        ratios = [r["ratio"] for r in views if r["ratio"] is not None]
        out.append({
            "experiment": experiment, "changes": n, "change_kind": kind, "provenance": prov, "updates": ups,
            "views": len(views), "mean_ratio": round(statistics.mean(ratios), 3) if ratios else None,
            "median_ratio": round(statistics.median(ratios), 3) if ratios else None,
            "faster": sum(1 for x in ratios if x < 1), "reused": sum(1 for r in views if r["plan"] == "reuse"),
            "views_adapt_s": round(sum(r["adapt_s"] for r in views), 3), "views_recompute_s": round(sum(r["recompute_s"] for r in views), 3),
            "all_adapt_s": round(sum(r["adapt_s"] for r in rs), 3), "all_recompute_s": round(sum(r["recompute_s"] for r in rs), 3),
        })
    return out


def markdown(table: list[dict[str, Any]]) -> str:
    """A list of rows as a Markdown table."""
    if not table:
        return ""
    keys = list(table[0])
    lines = ["| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)]
    lines += ["| " + " | ".join("" if r.get(k) is None else str(r.get(k)) for k in keys) + " |" for r in table]
    return "\n".join(lines) + "\n"


def plots(rows: list[dict[str, Any]], summ: list[dict[str, Any]], out: Path) -> list[Path]:
    """Figures 5/6 (and 8/9 with updates): per-view ratio for the mix; Figure 7: per change
    kind; Figure 10: mean ratio against the number of changes."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written: list[Path] = []
    for experiment in ("mix", "mix+updates"):
        rs = [r for r in rows if r["experiment"] == experiment and r["kind"] == "view"]
        if not rs:
            continue
        fig, axes = plt.subplots(1, 2, figsize=(12, 4), sharey=True)
        for ax, prov in zip(axes, (False, True)):
            vs = sorted((r for r in rs if r["provenance"] == prov and r["ratio"] is not None), key=lambda r: r["ratio"])
            if not vs:  # not measured yet (results are saved after every trial)
                continue
            labels = [r["relation"] for r in vs] + ["AVG"]
            vals = [r["ratio"] for r in vs] + [statistics.mean(r["ratio"] for r in vs)]
            ax.bar(range(len(vals)), vals, color=["tab:blue"] * len(vs) + ["tab:red"])
            ax.axhline(1.0, color="gray", linewidth=0.8)
            ax.set_xticks(range(len(vals)))
            ax.set_xticklabels(labels, rotation=90, fontsize=7)
            ax.set_title(f"{'with' if prov else 'no'} provenance tables")
        axes[0].set_ylabel("adaptation time / recomputation time")
        fig.suptitle(f"{experiment}: {rs[0]['changes']} random changes" + (f", {rs[0]['updates']} updates per source" if rs[0]["updates"] else ""))
        fig.tight_layout()
        written.append(out / f"per_view_{experiment.replace('+', '_')}.png")
        fig.savefig(written[-1])
        plt.close(fig)
    kinds = [s for s in summ if s["experiment"] == "kind"]
    if kinds:
        fig, ax = plt.subplots(figsize=(8, 4))
        names = list(dict.fromkeys(s["change_kind"] for s in kinds))
        for off, prov in ((-0.2, False), (0.2, True)):
            vals = [next((s["mean_ratio"] or 0.0 for s in kinds if s["change_kind"] == k and s["provenance"] == prov), 0.0) for k in names]
            ax.bar([i + off for i in range(len(names))], vals, width=0.4, label=f"{'with' if prov else 'no'} provenance")
        ax.set_xticks(range(len(names)))
        ax.set_xticklabels(names, rotation=30, ha="right", fontsize=8)
        written.append(_finish(fig, ax, "One change of each kind", "mean ratio over changed views", out / "per_kind.png"))
    sweep = [s for s in summ if s["experiment"] == "sweep"]
    if sweep:
        fig, ax = plt.subplots(figsize=(6, 4))
        for prov, style in ((False, "o-"), (True, "s-")):
            ss = sorted((s for s in sweep if s["provenance"] == prov and s["views_recompute_s"] > 0), key=lambda s: s["changes"])
            ax.plot([s["changes"] for s in ss], [s["views_adapt_s"] / s["views_recompute_s"] for s in ss], style,
                    label=f"{'with' if prov else 'no'} provenance (total time)")
        ax.set_xscale("symlog", linthresh=1)
        ax.set_xlabel("random changes")
        written.append(_finish(fig, ax, "Running time against the number of changes", "adaptation / recomputation, all views", out / "sweep.png"))
    return written


def _finish(fig: Any, ax: Any, title: str, ylabel: str, path: Path) -> Path:
    """Draw the break-even line (ratio 1), label, write ``path`` and close the figure."""
    import matplotlib.pyplot as plt

    ax.axhline(1.0, color="gray", linewidth=0.8)
    ax.set_ylabel(ylabel)
    ax.legend(fontsize=8)
    ax.set_title(title)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


def save(rows: list[dict[str, Any]], out_dir: str | Path, params: dict[str, Any]) -> list[Path]:
    """results.csv/json (rows, machine, date, load average, ``uptime``, parameters, summary),
    summary.md and the plots."""
    from selp.bench.results import write_results

    out = Path(out_dir)
    written = write_results(rows, out)
    summ = summary(rows)
    doc = json.loads((out / "results.json").read_text(encoding="utf-8"))
    doc["load_average"] = list(os.getloadavg())
    doc["uptime"] = _uptime()
    doc["params"] = params
    doc["summary"] = summ
    write_text(out / "results.json", json.dumps(doc, indent=2) + "\n")
    write_text(out / "summary.md", markdown(summ))
    return written + [out / "summary.md"] + plots(rows, summ, out)


def _uptime() -> str | None:
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True, timeout=10).stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None
