"""The ``spark`` engine behind the engine interface: Apache Spark DataFrames
(:mod:`selp.engines.spark`), for data beyond one machine.

Spark's executors read files, so facts handed over as Python values are written as typed
Parquet first -- into a scratch directory the caller may choose (on a cluster, storage the
executors share). The CDSS steps keep their DataFrame implementations (``apply_changes_spark``,
:func:`selp.cdss.ranked.ranked_spark`, the Spark ProQL graph).
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping

from selp.engines.base import Engine, EvalStats, Row, Say, TopkInput, Warn

if TYPE_CHECKING:
    from selp.adapt.zprogram import ZEngine


def session(spark: Any) -> Any:
    """``spark``, or the default session when None."""
    if spark is not None:
        return spark
    from selp.engines.spark_session import get_spark

    return get_spark()


class SparkTopk(TopkInput):
    """The database as Spark frames; the DTable computed on Spark and collected."""

    def __init__(self, analysis: Any, db_dir: Any, spark: Any, scratch: tempfile.TemporaryDirectory | None) -> None:
        from selp.engines.spark_load import load_spark_database

        self.spark = spark
        self.scratch = scratch
        from selp.engines.spark_load import SparkDatabase

        # loaded once: the types now, the frames by the run (a second load cost a one-shot
        # explain its files' reading and checks again)
        self.db_dir = db_dir if isinstance(db_dir, SparkDatabase) else load_spark_database(analysis, db_dir, spark)
        self.types = self.db_dir.types

    def run(self, task: Any, node: Any, algorithm: str, progress: Callable | None, warn: Warn, goal_directed: bool) -> Any:
        from selp.topk.spark import run_topk_spark

        try:
            # goal-directed when the node binds constants, as on the embedded engine
            result = run_topk_spark(task, self.db_dir, self.spark, progress, goal=node if goal_directed else None, warn=warn)
            try:
                table = result.to_dtable()
                table.plan = result.plan
                return table
            finally:
                result.close()
        finally:
            self.close()

    def close(self) -> None:
        if self.scratch is not None:
            self.scratch.cleanup()


class SparkEngine(Engine):
    """Apache Spark DataFrames."""

    name = "spark"
    description = "Apache Spark DataFrames, for data beyond one machine (--master for a cluster)"

    @property
    def needs_spark_session(self) -> bool:
        return True

    @property
    def computes_from_files(self) -> bool:
        return True

    def run(self, analysis: Any, db_dir: str | Path | None, progress: Any = None, spark: Any = None) -> Any:
        from selp.engines.spark import run_spark

        return run_spark(analysis, db_dir, session(spark), progress)

    def counting(self, spark: Any = None) -> ZEngine:
        """Z-relations as cached DataFrames (:class:`selp.adapt.zspark.SparkZ`) on ``spark``
        (default: the session :func:`~selp.engines.spark_session.get_spark` gives)."""
        from selp.adapt.zspark import SparkZ

        return SparkZ(session(spark))

    def evaluate(
        self, analysis: Any, facts: Mapping[str, Iterable[Row]], progress: Any = None, spark: Any = None, stats: EvalStats | None = None
    ) -> dict[str, set[Row]]:
        result = self.compute(analysis, facts, progress, spark)
        try:
            if stats is not None:
                stats.iterations = result.iterations
            return {rel: set(result.rows(rel)) for rel in analysis.idb}
        finally:
            result.close()

    def compute(
        self, analysis: Any, facts: Mapping[str, Iterable[Row]], progress: Any = None, spark: Any = None, scratch_dir: str | Path | None = None
    ) -> Any:
        from selp.engines.spark import run_spark
        from selp.engines.spark_load import spark_database_from_facts

        # the facts reach Spark encoded, through Arrow, not through a file: a labeled null given
        # as a Python value stays one (``scratch_dir`` is kept for the interface; nothing is written)
        s = session(spark)
        return run_spark(analysis, spark_database_from_facts(analysis, facts, s), s, progress)

    def open_topk(self, analysis: Any, source: Any, monoid: Any, spark: Any, warn: Warn) -> TopkInput:
        from selp.database import Database
        from selp.errors import SelpError

        if not monoid.on_spark:
            raise SelpError(f"monoid {monoid.name} has no Spark column expressions; use --engine embedded")
        if not isinstance(source, Database):
            return SparkTopk(analysis, source, spark, None)
        from selp.engines.spark_load import spark_database_from_facts

        return SparkTopk(analysis, spark_database_from_facts(analysis, source.facts, spark), spark, None)

    def check_strategy(self, strategy: str) -> Callable:
        """``apply_changes_spark`` (in :mod:`selp.cdss.incremental` or
        :mod:`selp.cdss.incremental_spark`), or a one-line error."""
        from selp.cdss.exchange_steps import find_strategy

        if strategy == "absorption":  # formulas are Python objects: one process holds them
            from selp.cdss.errors import CdssError

            raise CdssError("strategy absorption runs on the in-process engines; use --engine embedded (or reference)")
        return find_strategy(
            strategy, "apply_changes_spark", ["selp.cdss.incremental", "selp.cdss.incremental_spark"], "the spark engine"
        )

    def exchange_epoch(
        self,
        store: Any,
        base: dict[str, set[Row]],
        start: Any,
        incremental: Callable | None,
        strategy: str,
        tmp: Path,
        stats: dict[str, Any],
        say: Say,
        spark: Any = None,
    ) -> dict[str, int]:
        """The epoch computed and written by Spark (:func:`selp.cdss.exchange_steps.run_spark`)."""
        from selp.cdss.exchange_steps import run_spark

        return run_spark(self, store, base, start, incremental, strategy, session(spark), tmp, stats, say)

    def ranked_trust_place(self, base: Mapping[str, set[Row]], spark: Any = None) -> str:
        from selp.cdss.ranked_duck import is_small, on_driver

        if not on_driver(base, session(spark)):
            return "on Spark"
        return "in Python on the driver (a small store)" if is_small(base) else "in DuckDB on the driver"

    def threshold_rejections(self, compiled: Any, base: Mapping[str, set[Row]], spark: Any = None) -> dict[str, set[Row]]:
        """``R_x``: :meth:`ranked_trust` (DuckDB, or Python for a small store) on the driver up to
        ``spark.selp.rankedTrust.driverRows`` base tuples -- the base data are Python values on
        the driver already -- else :func:`~selp.cdss.ranked.ranked_spark`
        (no Spark starts when no peer has a threshold)."""
        from selp.cdss.ranked import RankedProgram, ranked_spark
        from selp.cdss.ranked_duck import on_driver

        rp = RankedProgram(compiled)
        if not rp.thresholds:
            return {}
        if on_driver(base, session(spark)):
            return self.ranked_trust(rp, base).rejections
        return ranked_spark(rp, base, session(spark)).rejections

    def proql(
        self,
        directory: str,
        text: str,
        *,
        file: str | None = None,
        peer: str | None = None,
        probabilities: dict[str, float] | None = None,
        spark: Any = None,
        use_asrs: bool = True,
        graph: bool = True,
    ) -> tuple[Any, Any]:
        """The query on Spark's graph (with the epoch's ASRs unless ``use_asrs`` is false),
        collected; the Spark result carries the plan."""
        from selp.cdss.proql.run import spark_query

        sr = spark_query(directory, text, spark=spark, peer=peer, probabilities=probabilities, file=file, use_asrs=use_asrs)
        return sr.collect(graph=graph), sr
