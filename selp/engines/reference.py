"""The ``reference`` engine (formerly ``local``): pure-Python semi-naive evaluation with hash
indexes (:mod:`selp.engines.local`), the oracle of the tests, behind the engine interface."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping

from selp.engines.base import EvalStats, Row, TopkInput, Warn, warn_not_goal_directed
from selp.engines.in_process import InProcessEngine

if TYPE_CHECKING:
    from selp.adapt.zprogram import ZEngine


class ReferenceTopk(TopkInput):
    """The database loaded as Python values; the DTable computed by :mod:`selp.topk.local`."""

    def __init__(self, db: Any, engine: str) -> None:
        self.db = db
        self.types = db.types
        self.engine = engine

    def run(self, task: Any, node: Any, algorithm: str, progress: Callable | None, warn: Warn, goal_directed: bool) -> Any:
        from selp.topk.local import run_topk_local

        warn_not_goal_directed(node, self.engine, warn)
        return run_topk_local(task, self.db, algorithm, progress)


def load_source(analysis: Any, source: Any) -> Any:
    """A :class:`~selp.database.Database`: ``source`` itself, or loaded from its directory."""
    from selp.database import Database, load_database

    return source if isinstance(source, Database) else load_database(analysis, source)


class ReferenceEngine(InProcessEngine):
    """Pure-Python evaluation."""

    name = "reference"
    description = "pure-Python semi-naive evaluation with hash indexes: the oracle of the tests"

    def run(self, analysis: Any, db_dir: str | Path | None, progress: Any = None, spark: Any = None) -> Any:
        from selp.engines.result import run_local

        result = run_local(analysis, db_dir, progress)
        result.engine = self.name
        return result

    def counting(self, spark: Any = None) -> ZEngine:
        """Z-relations as Python dictionaries (:class:`selp.adapt.zref.ReferenceZ`): the oracle."""
        from selp.adapt.zref import ReferenceZ

        return ReferenceZ()

    def evaluate(
        self, analysis: Any, facts: Mapping[str, Iterable[Row]], progress: Any = None, spark: Any = None, stats: EvalStats | None = None
    ) -> dict[str, set[Row]]:
        from selp.engines.local import evaluate

        return evaluate(analysis, facts, progress, stats)  # type: ignore[arg-type]

    def compute(
        self, analysis: Any, facts: Mapping[str, Iterable[Row]], progress: Any = None, spark: Any = None, scratch_dir: str | Path | None = None
    ) -> Any:
        from selp.database import column_names, fact_types
        from selp.engines.result import LocalResult

        edb = {rel: set(rows) for rel, rows in facts.items() if rel in analysis.edb}
        stats = EvalStats()
        idb = self.evaluate(analysis, edb, progress, stats=stats)
        columns = {rel: column_names(analysis.program, rel, n) for rel, n in analysis.arities.items()}
        return LocalResult(idb, fact_types(analysis, edb), columns, stats.iterations, stats.seconds, engine=self.name)

    def ranked_trust_place(self, base: Mapping[str, set[Row]], spark: Any = None) -> str:
        return "in Python"

    def ranked_trust(self, rp: Any, base: Mapping[str, set[Row]], reports: tuple[str, ...] = ()) -> Any:
        """The capped fixpoint over Python values (:func:`selp.cdss.ranked.ranked_local`): the
        oracle, every import's cost vector included."""
        from selp.cdss.ranked import ranked_local

        return ranked_local(rp, base)

    def open_topk(self, analysis: Any, source: Any, monoid: Any, spark: Any, warn: Warn) -> TopkInput:
        db = load_source(analysis, source)
        for w in db.warnings:
            warn(w)
        return ReferenceTopk(db, self.name)
