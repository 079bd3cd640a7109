"""The embedded engine: the program evaluated as SQL inside an in-process DuckDB.

:func:`run_embedded` loads a database directory with DuckDB's own readers and evaluates in
place; :func:`evaluate` takes and returns Python values, like the reference engine's
:func:`selp.engines.local.evaluate` (the CDSS layer and the property tests use that form).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Mapping

from selp.engines.embedded.evaluate import EvalStats, Progress, evaluate_store
from selp.engines.embedded.store import Row, Store, load_store, store_from_facts, write_store
from selp.language.validate import Analysis


@dataclass
class EmbeddedResult:
    """The fixpoint, held in DuckDB tables; rows are fetched only when asked for."""

    store: Store
    iterations: int = 0
    seconds: float = 0.0
    load_seconds: float = 0.0
    engine: str = "embedded"
    warnings: list[str] = field(default_factory=list)

    @property
    def types(self) -> dict[str, tuple[str, ...]]:
        return self.store.types

    @property
    def columns(self) -> dict[str, tuple[str, ...]]:
        return self.store.columns

    def relations(self) -> list[str]:
        """IDB relation names, sorted."""
        return sorted(self.store.analysis.idb)

    def count(self, rel: str) -> int:
        """Number of tuples of ``rel``."""
        return self.store.count(rel)

    def rows(self, rel: str) -> set[Row]:
        """The tuples of ``rel`` as Python values."""
        return self.store.rows(rel)

    def write(self, out_dir: str | Path, fmt: str = "csv") -> list[str]:
        """Write every IDB relation to ``out_dir/REL.fmt`` atomically; returns the paths."""
        return write_store(self.store, self.relations(), out_dir, fmt)

    def close(self) -> None:
        """Release DuckDB's memory."""
        self.store.close()


def run_embedded(analysis: Analysis, db_dir: str | Path | None, progress: Progress | None = None) -> EmbeddedResult:
    """Load ``db_dir`` (plus inline facts) into DuckDB and evaluate there."""
    store = load_store(analysis, db_dir)
    stats = EvalStats()
    evaluate_store(store, progress, stats)
    return EmbeddedResult(store, stats.iterations, stats.seconds, store.load_seconds, warnings=list(store.warnings))


def evaluate(
    analysis: Analysis,
    edb: Mapping[str, Iterable[Row]],
    progress: Progress | None = None,
    stats: EvalStats | None = None,
    types: Mapping[str, tuple[str, ...]] | None = None,
) -> dict[str, set[Row]]:
    """The IDB fixpoint of Python facts, as Python sets (EDB relations excluded)."""
    t0 = time.perf_counter()
    store = store_from_facts(analysis, edb, None, types)
    try:
        evaluate_store(store, progress, stats)
        out = {rel: store.rows(rel) for rel in analysis.idb}
    finally:
        store.close()
    if stats is not None:
        stats.seconds = time.perf_counter() - t0
    return out
