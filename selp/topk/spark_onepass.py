"""The Spark DTable of a non-recursive component in a goal-directed run, ranked in one pass.

A non-recursive component of P_p (in a one-shot explain: the pattern root's copy of the
queried relation, ``path@v0``) has one round: every candidate exists once its inputs do. The
global round of :meth:`selp.topk.spark._Engine.merge` would shuffle the candidates into a
``theta`` (one job and its shuffle), write a piece, and rank the entries by joining them with
``theta`` at the end (another shuffle): five jobs for the three trees of ``path(0, 1)``. Here
the candidates are ranked where they are grouped -- one window per fact ordered by (key, size,
origin), the same order and the same same-origin dedup as the global rounds -- and the k best
with their ranks are the component's finished part of the DTable, like a partition-local one
(``home.ranked``): one job.

Used for goal-directed runs, whose few demanded facts make each job mostly fixed cost; a full
top-k keeps the global round, which its other components' rounds share.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import Window
from pyspark.sql import functions as F

from selp.engines.spark_compile import union_all
from selp.language.validate import Component
from selp.topk.spark_dtable import materialize_observed


def run_one_pass(engine: Any, comp: Component, home: Any) -> int:
    """Fill the DTable of the non-recursive ``comp`` into ``home`` (a new, empty home of
    ``engine``, the :class:`selp.topk.spark` engine), ranked; returns the entries admitted."""
    members = sorted(comp.relations)
    engine.homes.append(home)
    for rel in members:
        engine.home[rel] = home
    plans = engine.first_candidates(comp.rules)
    if not plans:
        return 0
    key = engine.wt.key(F.col("_w")).cast(engine.top_type.elementType["k"].dataType)
    w = Window.partitionBy("_f", "_g").orderBy(key, F.col("_s"), F.col("_o"))
    # equal origins are the same tree (same key and size), neighbours in this order: ``lag``
    # drops the copies, and ``dense_rank`` -- which counts equal rows once -- is then the rank
    best = union_all(plans).select("*", F.dense_rank().over(w).alias("_dr"), F.lag("_o").over(w).alias("_po")).filter(
        (F.col("_dr") <= engine.k) & (F.col("_po").isNull() | (F.col("_po") != F.col("_o")))
    )
    ranked = best.select("_f", "_g", "relation", "args", "_w", "_s", "_o", "_rule", "_ch", F.col("_dr").cast("int").alias("rank"))
    ranked, counts = materialize_observed(
        ranked, [F.count_if(F.col("relation") == rel).alias(f"n{i}") for i, rel in enumerate(members)])
    admitted = {rel: int(counts[f"n{i}"] or 0) for i, rel in enumerate(members) if counts[f"n{i}"]}
    home.pieces, home.piece_rows = [ranked.drop("rank")], [sum(admitted.values())]
    home.ranked = ranked
    home.admitted, home.live = dict(admitted), dict(admitted)
    return sum(admitted.values())
