"""The ``embedded`` engine (the default) behind the engine interface: the program evaluated as
SQL in an in-process DuckDB (:mod:`selp.engines.embedded`), top-k by :mod:`selp.topk.embedded`
(goal-directed when the answer filter has constants)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping

from selp.engines.base import EvalStats, Row, TopkInput, Warn
from selp.engines.in_process import InProcessEngine

if TYPE_CHECKING:
    from selp.adapt.zprogram import ZEngine


class EmbeddedTopk(TopkInput):
    """The data in a DuckDB store; the DTable computed there (or in Python for a monoid without a
    compiled form, or another algorithm than ``heuristic``)."""

    def __init__(self, store: Any) -> None:
        self.store = store
        self.types = store.types

    def run(self, task: Any, node: Any, algorithm: str, progress: Callable | None, warn: Warn, goal_directed: bool) -> Any:
        from selp.topk.embedded import COMPILED, run_topk_embedded

        store = self.store
        m = task.monoid
        if m.name in COMPILED and algorithm == "heuristic":
            # the DTable keeps the store: its entries are read from DuckDB when looked at
            return run_topk_embedded(task, store, node, progress=progress, goal_directed=goal_directed, warn=warn)
        try:
            if m.name not in COMPILED:
                warn(f"monoid {m.name} has no compiled form: its DTable runs in Python (slower)")
            from selp.database import Database
            from selp.topk.local import run_topk_local

            analysis = store.analysis
            facts = {rel: store.rows(rel) for rel in analysis.edb}
            weights = {rel: store.weights(rel) for rel in analysis.edb}
            db = Database(facts, weights, store.types, store.columns, store.warnings)
            return run_topk_local(task, db, algorithm, progress)
        finally:
            store.close()

    def close(self) -> None:
        self.store.close()


class EmbeddedEngine(InProcessEngine):
    """In-process DuckDB."""

    name = "embedded"
    description = "in-process DuckDB: rules compiled to SQL, semi-naive in set-at-a-time queries (default)"

    @property
    def computes_from_files(self) -> bool:
        return True

    def run(self, analysis: Any, db_dir: str | Path | None, progress: Any = None, spark: Any = None) -> Any:
        from selp.engines.embedded import run_embedded

        return run_embedded(analysis, db_dir, progress)

    def counting(self, spark: Any = None) -> ZEngine:
        """Z-relations as DuckDB tables (:class:`selp.adapt.zduck.DuckZ`), in memory."""
        from selp.adapt.zduck import DuckZ

        return DuckZ()

    def evaluate(
        self, analysis: Any, facts: Mapping[str, Iterable[Row]], progress: Any = None, spark: Any = None, stats: EvalStats | None = None
    ) -> dict[str, set[Row]]:
        from selp.engines.embedded import evaluate

        return evaluate(analysis, facts, progress, stats)  # type: ignore[arg-type]

    def compute(
        self, analysis: Any, facts: Mapping[str, Iterable[Row]], progress: Any = None, spark: Any = None, scratch_dir: str | Path | None = None
    ) -> Any:
        from selp.engines.embedded import EmbeddedResult
        from selp.engines.embedded.evaluate import EvalStats as StoreStats
        from selp.engines.embedded.evaluate import evaluate_store
        from selp.engines.embedded.store import store_from_facts

        t0 = time.perf_counter()
        store = store_from_facts(analysis, facts)
        load_seconds = time.perf_counter() - t0
        stats = StoreStats()
        try:
            evaluate_store(store, progress, stats)
        except BaseException:
            store.close()
            raise
        return EmbeddedResult(store, stats.iterations, stats.seconds, load_seconds)

    def open_topk(self, analysis: Any, source: Any, monoid: Any, spark: Any, warn: Warn) -> TopkInput:
        from selp.database import Database
        from selp.engines.embedded.store import load_store, store_from_facts

        if isinstance(source, Database):
            store = store_from_facts(analysis, source.facts, source.weights, source.types)
        else:
            store = load_store(analysis, source)
        for w in store.warnings:
            warn(w)
        return EmbeddedTopk(store)
