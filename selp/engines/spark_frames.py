"""DataFrame helpers every Spark evaluation of selp shares: cutting a frame's lineage, releasing
its blocks, and building a relation frame from Python rows.

**Lineage cuts.** A fixpoint that feeds round k's frame into round k+1 grows a plan containing
every earlier round unless the frame is checkpointed. The checkpoint is *reliable* (written to
the context's checkpoint directory, so it survives the loss of an executor on a cluster) when a
directory is set, and *local* (blocks kept on the executors) otherwise. Every cut in selp goes
through :func:`cut` or :func:`materialize`, so setting a checkpoint directory makes all of them
reliable at once.
"""

from __future__ import annotations

from typing import Iterable

from pyspark.sql import DataFrame, SparkSession

from selp.engines.spark_compile import rel_schema
from selp.values import Value, encode


def _reliable(df: DataFrame) -> bool:
    """Whether the frame's context has a checkpoint directory (then checkpoints are reliable)."""
    return df.sparkSession.sparkContext.getCheckpointDir() is not None


def cut(df: DataFrame, eager: bool = False) -> DataFrame:
    """Cut the lineage of ``df``: a reliable checkpoint when a checkpoint directory is set, else
    a local one. ``eager`` computes it now; otherwise the next job that reads it computes it
    (and keeps it), so a round's one counting job is also the one that materialises its frames."""
    if _reliable(df):
        return df.checkpoint(eager=eager)
    return df.localCheckpoint(eager=eager)


def materialize(df: DataFrame) -> DataFrame:
    """Cut the lineage of ``df`` as the Spark engine does: a reliable checkpoint is written now,
    a local one is made lazily (the next job that reads the frame computes it: one job, not two)."""
    if _reliable(df):
        return df.checkpoint(eager=True)
    return df.localCheckpoint(eager=False)


def materialize_count(df: DataFrame) -> tuple[DataFrame, int]:
    """Compute ``df`` once, cut its lineage (:func:`materialize`), and count it."""
    out = materialize(df)
    return out, _count_rows(out)


def _count_rows(df: DataFrame) -> int:
    """Count a checkpointed frame: its RDD's count is one narrow stage, where DataFrame.count
    plans an aggregate with a shuffle (two more stages, per iteration of every fixpoint)."""
    try:
        plan = df._jdf.logicalPlan()  # type: ignore[attr-defined]
        if plan.getClass().getSimpleName() == "LogicalRDD":
            return int(plan.rdd().count())
    except Exception:  # noqa: BLE001 - internal API (absent with Spark Connect): use the public one
        pass
    return df.count()


def computed(df: DataFrame) -> bool:
    """Whether a frame cut by :func:`cut` or :func:`materialize` has been computed (its rows are
    kept, reading it recomputes nothing); True for any other frame."""
    try:
        plan = df._jdf.logicalPlan()  # type: ignore[attr-defined]
        if plan.getClass().getSimpleName() == "LogicalRDD":
            return bool(plan.rdd().isCheckpointed())
    except Exception:  # noqa: BLE001 - internal API (absent with Spark Connect): assume computed
        pass
    return True


def release(df: DataFrame) -> None:
    """Drop the blocks of a frame made by :func:`materialize_count` (no-op for other frames).

    Spark would free them only when the JVM garbage-collects the RDD; long fixpoints release
    superseded pieces explicitly so storage memory holds live data only.
    """
    try:
        plan = df._jdf.logicalPlan()  # type: ignore[attr-defined]
        if plan.getClass().getSimpleName() == "LogicalRDD":
            plan.rdd().unpersist(False)
    except Exception:  # noqa: BLE001 - best effort: Spark Connect or a changed internal API
        pass


def encoded_frame(spark: SparkSession, rows: Iterable[tuple[Value, ...]], arity: int) -> DataFrame:
    """A relation frame (:func:`~selp.engines.spark_compile.rel_schema`) of Python rows, each
    value in selp's string encoding (:func:`selp.values.encode`)."""
    return spark.createDataFrame([tuple(encode(v) for v in r) for r in rows], rel_schema(arity))
