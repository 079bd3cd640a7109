"""The Python API of ProQL.

:func:`query` picks the engine as every selp command does (:func:`selp.config.choose_engine`:
``engine``, then ``SELP_ENGINE``, the ``selp.toml`` beside ``cdss.toml``, else ``embedded``) and
returns a list of dicts, one per binding: ``{"x": "U(2,5)", "value(x)": <semiring value>}``.
:func:`local_query` is that on the in-memory graph (what every engine but Spark uses; :func:`run_local`
returns the :class:`~selp.cdss.proql.evaluate.QueryResult` itself), and
:func:`spark_query` evaluates on Spark and returns a :class:`~.spark_engine.SparkResult` whose
``bindings``, ``values``, ``gout``, ``ginputs`` and ``gnodes`` are DataFrames (and ``table``
joins the first two). All parse and type-check the query first (errors are
:class:`~selp.errors.SelpError` with the query position).

PySpark is imported only by the Spark path, so the default engine needs neither it nor a JVM.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from selp.cdss.proql.run import run_local, spark_query

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["local_query", "query", "run_local", "spark_query"]


def query(
    directory: str,
    text: str,
    *,
    engine: str | None = None,
    spark: SparkSession | None = None,
    peer: str | None = None,
    probabilities: dict[str, float] | None = None,
    file: str | None = None,
) -> list[dict[str, Any]]:
    """Run a ProQL query on the engine chosen from ``engine`` (a registered name, or None for the
    default); one dict per binding (see the module docstring). Values are as the engine computes
    them (Spark's native semirings give floats where the in-memory graph gives integers)."""
    from selp.cdss.config import CONFIG_FILE
    from selp.config import choose_engine
    from selp.engines.registry import get_engine

    eng = get_engine(choose_engine(engine, Path(directory) / CONFIG_FILE))
    r, _ = eng.proql(directory, text, file=file, peer=peer, probabilities=probabilities, spark=spark, graph=False)
    return _dicts(r)


def local_query(
    directory: str, text: str, *, peer: str | None = None, probabilities: dict[str, float] | None = None, file: str | None = None
) -> list[dict[str, Any]]:
    """Run a ProQL query on the in-memory graph of the stored epoch (the evaluation of the
    ``embedded`` and ``reference`` engines); one dict per binding (see the module docstring)."""
    return _dicts(run_local(directory, text, file, peer, probabilities))


def _dicts(r: Any) -> list[dict[str, Any]]:
    """A query result (local, or collected from Spark) as one dict per binding."""
    out = []
    for row in r.rows:
        d: dict[str, Any] = {c: str(n) for c, n in zip(r.columns, row)}
        d.update({f"value({c})": r.values[n] for c, n in zip(r.columns, row)})
        if r.probabilities is not None:
            d.update({f"P({c})": r.probabilities[n] for c, n in zip(r.columns, row)})
        out.append(d)
    return out
