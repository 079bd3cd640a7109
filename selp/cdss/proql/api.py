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

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from selp.cdss.proql.evaluate import QueryResult
    from selp.cdss.proql.spark_engine import SparkResult


def spark_query(
    directory: str,
    text: str,
    *,
    spark: SparkSession | None = None,
    peer: str | None = None,
    probabilities: dict[str, float] | None = None,
    file: str | None = None,
    use_asrs: bool = True,
    annotate: bool = True,
) -> SparkResult:
    """Run a ProQL query on Spark over the store in ``directory`` (the epoch ``peer``'s instance
    reflects, default the latest exchange), using the epoch's access support relations unless
    ``use_asrs`` is false; ``annotate=False`` computes the projection only (bindings and G′)."""
    from selp.cdss.proql.asr import attach_asrs
    from selp.cdss.proql.check import check_query, resolve_relations
    from selp.cdss.proql.parser import parse_query
    from selp.cdss.proql.spark_engine import run_spark_query
    from selp.cdss.proql.spark_graph import load_spark_graph
    from selp.cdss.store import Store

    if spark is None:
        from selp.engines.spark_session import get_spark

        spark = get_spark()
    q = parse_query(text, file)
    with Store.open(directory) as store:
        q = resolve_relations(q, store.compiled)
        s = check_query(q, store.compiled)
        g = load_spark_graph(spark, store, peer)
        if use_asrs:
            g = attach_asrs(g)
    result = run_spark_query(q, g, s, probabilities, annotate)
    result.asrs_used = list(result.stats.asrs)
    return result


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

    if get_engine(choose_engine(engine, Path(directory) / CONFIG_FILE)).uses_spark:
        r = spark_query(directory, text, spark=spark, peer=peer, probabilities=probabilities, file=file).collect(graph=False)
        return _dicts(r)
    return local_query(directory, text, peer=peer, probabilities=probabilities, file=file)


def local_query(
    directory: str, text: str, *, peer: str | None = None, probabilities: dict[str, float] | None = None, file: str | None = None
) -> list[dict[str, Any]]:
    """Run a ProQL query on the in-memory graph of the stored epoch (the evaluation of the
    ``embedded`` and ``reference`` engines); one dict per binding (see the module docstring)."""
    return _dicts(run_local(directory, text, file, peer, probabilities))


def run_local(
    directory: str, text: str, file: str | None = None, peer: str | None = None, probabilities: dict[str, float] | None = None
) -> QueryResult:
    """Parse, check and evaluate a query over the store of ``directory`` on the in-memory graph
    (what every engine but Spark uses); the :class:`~selp.cdss.proql.evaluate.QueryResult`
    carries the epoch it read (``local_query`` turns it into dicts, ``selp proql`` prints it)."""
    from selp.cdss.proql.check import check_query, resolve_relations
    from selp.cdss.proql.evaluate import run_query
    from selp.cdss.proql.graph import load_graph
    from selp.cdss.proql.parser import parse_query
    from selp.cdss.store import Store

    q = parse_query(text, file)
    with Store.open(directory) as store:
        q = resolve_relations(q, store.compiled)
        s = check_query(q, store.compiled)
        g, epoch = load_graph(store, peer)
    result = run_query(q, g, s, probabilities)
    result.epoch = epoch
    return result


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
