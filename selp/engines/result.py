"""What an evaluation returns, whichever engine ran it.

Both engines answer through :class:`EvalResult`: relation names, counts, rows as Python values
(:mod:`selp.values`), and writing to an output directory atomically. The Spark engine keeps its
relations as DataFrames and only collects what is asked for.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from selp.database import Database, load_database, sorted_rows, write_relations
from selp.engines.local import EvalStats, Progress, evaluate
from selp.language.validate import Analysis
from selp.values import Value, json_value

Row = tuple[Value, ...]


class EvalResult(Protocol):
    """The fixpoint of a program over a database (IDB relations only)."""

    engine: str
    iterations: int
    seconds: float  # evaluation time, excluding loading
    types: dict[str, tuple[str, ...]]
    columns: dict[str, tuple[str, ...]]
    warnings: list[str]

    def relations(self) -> list[str]:
        """IDB relation names, sorted."""
        ...

    def count(self, rel: str) -> int:
        """Number of tuples of ``rel``."""
        ...

    def rows(self, rel: str) -> set[Row]:
        """The tuples of ``rel`` as Python values (collected to the driver for Spark)."""
        ...

    def write(self, out_dir: str | Path, fmt: str = "csv") -> list[str]:
        """Write every IDB relation to ``out_dir/REL.fmt`` atomically; returns the paths."""
        ...


@dataclass
class LocalResult:
    """Result of the local engine: plain Python sets."""

    facts: dict[str, set[Row]]
    types: dict[str, tuple[str, ...]]
    columns: dict[str, tuple[str, ...]]
    iterations: int = 0
    seconds: float = 0.0
    load_seconds: float = 0.0
    warnings: list[str] = field(default_factory=list)
    engine: str = "local"

    def relations(self) -> list[str]:
        return sorted(self.facts)

    def count(self, rel: str) -> int:
        return len(self.facts[rel])

    def rows(self, rel: str) -> set[Row]:
        return self.facts[rel]

    def write(self, out_dir: str | Path, fmt: str = "csv") -> list[str]:
        return [str(p) for p in write_relations(out_dir, self.facts, self.types, self.columns, fmt)]

    def close(self) -> None:
        """Nothing to release (Python sets); every engine's result can be closed alike."""


def plan_of(result: EvalResult) -> list[dict[str, Any]]:
    """How each component ran, for an engine that plans per component (Spark: ``one pass``,
    ``partition-local`` or ``global rounds``); empty for the others."""
    return list(getattr(result, "plan", None) or [])


def plan_line(step: dict[str, Any]) -> str:
    """One component's plan as ``selp eval`` prints it on stderr."""
    rels = ", ".join(step["relations"])
    # a whole-task step (goal-directed top-k) belongs to no stratum
    where = f"stratum {step['stratum']} " if "stratum" in step else ""
    line = f"  plan: {where}[{rels}] {step['mode']}"
    if step["mode"] == "partition-local":
        if step.get("decomposition") == "value components":  # no position passed (a symmetry rule)
            line += f" on value components ({step['partitions']} partitions"
        else:
            line += f" on position {step['position']} ({step['partitions']} partitions"
        if step.get("broadcast"):
            line += f"; broadcast {', '.join(step['broadcast'])}"
        if step.get("keyed"):
            line += f"; co-partitioned {', '.join(step['keyed'])}"
        line += ")"
        if step.get("ranking"):  # top-k: how each partition ranks its facts
            line += f", ranked {step['ranking']}"
        if step.get("note"):  # e.g. goal-directed: what the partitions were restricted to
            line += f": {step['note']}"
    elif step["mode"] == "goal-directed" and step.get("demand"):
        line += ": constants bound at " + ", ".join(f"{rel} position(s) {', '.join(map(str, ps))}" for rel, ps in step["demand"].items())
    elif step.get("reason"):
        line += f": {step['reason']}"
    if step.get("values"):  # global rounds on dictionary codes
        line += f"; values as {step['values']}"
    return line


def result_json(result: EvalResult, program: str, shown: list[str], written: list[str]) -> dict[str, Any]:
    """``selp eval --json``: the run, each IDB relation's count and columns, the sorted rows of
    the ``shown`` relations, the files ``written``, and the per-component plan when the engine
    makes one."""
    doc: dict[str, Any] = {
        "program": program,
        "engine": result.engine,
        "iterations": result.iterations,
        "seconds": round(result.seconds, 6),
        "relations": {},
        "written": written,
    }
    if plan_of(result):
        doc["plan"] = plan_of(result)
    for rel in result.relations():
        entry: dict[str, Any] = {"count": result.count(rel), "columns": list(result.columns[rel])}
        if rel in shown:
            entry["rows"] = [[json_value(v) for v in row] for row in sorted_rows(result.rows(rel))]
        doc["relations"][rel] = entry
    return doc


def run_local(analysis: Analysis, db_dir: str | Path | None, progress: Progress | None = None) -> LocalResult:
    """Load ``db_dir`` (plus inline facts) and evaluate with the local engine."""
    t0 = time.perf_counter()
    db: Database = load_database(analysis, db_dir)
    load_seconds = time.perf_counter() - t0
    stats = EvalStats()
    facts = evaluate(analysis, db.facts, progress, stats)
    return LocalResult(
        facts,
        db.types,
        db.columns,
        stats.iterations,
        stats.seconds,
        load_seconds,
        db.warnings,
    )
