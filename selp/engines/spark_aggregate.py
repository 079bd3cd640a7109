"""Aggregates on Spark, with the semantics of :mod:`selp.aggregate`.

A compiled rule of an aggregated relation (:mod:`selp.engines.spark_compile`) yields one row per
rule instance, its aggregated column holding the instance's value in the uniform encoding;
:func:`group_frame` groups the union of those rows (never deduplicated) into the relation's facts,
and :func:`improvements` keeps the groups whose best candidate improves the relation's current
fact (aggregate selection for min/max through recursion).
"""

from __future__ import annotations

from functools import reduce

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from selp import aggregate, arith
from selp.engines.spark_compile import float_text, is_skolem, number_value, rel_columns
from selp.language.ast import Program
from selp.values import INT64_MAX, INT64_MIN


def _typed(c: Column, typ: str) -> Column:
    """An encoded value as bigint, double or string (null for a labeled null)."""
    if typ == "str":
        return F.when(is_skolem(c), F.lit(None)).otherwise(c)
    return number_value(c, typ)


def _encoded(c: Column, typ: str) -> Column:
    return float_text(c) if typ == "float" else c.cast("string")


def group_frame(program: Program, rel: str, types: tuple[str, ...], instances: DataFrame, complete: bool = False) -> DataFrame:
    """The facts of aggregated ``rel`` (encoded columns ``c0..``) from its rule instances
    (``complete``: only those with a value for every aggregate, as aggregate selection takes them)."""
    spec = program.aggregated()[rel]
    cols = rel_columns(len(types))
    keys = [cols[i] for i in spec.keys]
    aggs: list[Column] = []
    presents: list[Column] = []
    for k, (pos, fn) in enumerate(zip(spec.positions, spec.fns)):
        typ = types[pos]
        v = _typed(F.col(cols[pos]), typ)
        present = F.count(v)
        if fn == "count":
            agg, present = F.count(F.lit(1)).cast("string"), F.count(F.lit(1))
        elif fn in ("min", "max"):
            agg = _encoded((F.min if fn == "min" else F.max)(v), typ)
        else:
            name, loc, arg = aggregate.site(program.rules, rel, k)
            if typ == "int":
                total = F.sum(v.cast("decimal(38,0)"))
                fail = F.raise_error(F.lit(f"{arith.site(name, loc)}integer overflow|{aggregate.sum_text(arg)}"))
                agg = F.when(total.isNull(), F.lit(None)).when(
                    (total < F.lit(INT64_MIN).cast("decimal(38,0)")) | (total > F.lit(INT64_MAX).cast("decimal(38,0)")), fail
                ).otherwise(total.cast("bigint").cast("string"))
            else:
                # the ascending values added in order: every engine rounds alike
                total = F.aggregate(F.array_sort(F.collect_list(v)), F.lit(0.0), lambda a, b: a + b) + F.lit(0.0)
                fail = F.raise_error(F.lit(f"{arith.site(name, loc)}float overflow|{aggregate.sum_text(arg)}"))
                agg = F.when(F.isnan(total) | (F.abs(total) == F.lit(float("inf"))), fail).otherwise(float_text(total))
        aggs.append(agg.alias(cols[pos]))
        presents.append(present.alias(f"_n{k}"))
    if complete:
        instances = instances.filter(reduce(lambda a, b: a & b, [_typed(F.col(cols[p]), types[p]).isNotNull() for p in spec.positions]))
    grouped = instances.groupBy(*keys).agg(*aggs, *presents) if keys else instances.agg(*aggs, *presents)
    kept = reduce(lambda a, b: a & b, [(F.col(f"_n{k}") > 0) & F.col(cols[p]).isNotNull() for k, p in enumerate(spec.positions)])
    return grouped.filter(kept).select(*cols)


def improvements(program: Program, rel: str, types: tuple[str, ...], best: DataFrame, current: DataFrame) -> DataFrame:
    """The facts of ``best`` (one per group) that improve on ``current``'s fact of their group on
    at least one aggregate, merged with it (the aggregates they do not improve keep the old value)."""
    spec = program.aggregated()[rel]
    cols = rel_columns(len(types))
    keys = [cols[i] for i in spec.keys]
    old = current.select(*keys, *[F.col(cols[p]).alias(f"_old{p}") for p in spec.positions])
    wins = {}
    for pos, fn in zip(spec.positions, spec.fns):
        mine, theirs = _typed(F.col(cols[pos]), types[pos]), _typed(F.col(f"_old{pos}"), types[pos])
        wins[pos] = F.coalesce(mine < theirs if fn == "min" else mine > theirs, F.lit(False))
    first = f"_old{spec.positions[0]}"
    fresh = F.col(first).isNull()
    joined = best.join(old, on=keys if keys else F.lit(True), how="left")
    merged = [F.when(fresh | wins[i], F.col(c)).otherwise(F.col(f"_old{i}")).alias(c) if i in wins else F.col(c) for i, c in enumerate(cols)]
    return joined.filter(fresh | reduce(lambda a, b: a | b, wins.values())).select(*merged)


def replaced(rel_frame: DataFrame, fresh: DataFrame, arity: int, spec: aggregate.Spec) -> DataFrame:
    """``rel_frame`` with the facts of ``fresh``'s groups replaced by ``fresh``."""
    cols = rel_columns(arity)
    keys = [cols[i] for i in spec.keys]
    if not keys:
        return fresh
    kept = rel_frame.join(fresh.select(*keys), on=keys, how="left_anti")
    return reduce(lambda a, b: a.unionByName(b), [kept, fresh])
