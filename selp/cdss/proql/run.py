"""Evaluate a ProQL query over a store: on the in-memory graph (:func:`run_local`, what the
in-process engines use) or on Spark (:func:`spark_query`). The engines reach these through
:meth:`selp.engines.base.Engine.proql`; :mod:`selp.cdss.proql.api` is the public face.

PySpark is imported only by the Spark path, so the default engine needs neither it nor a JVM.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

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
