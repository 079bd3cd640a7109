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


def group_frame(program: Program, rel: str, types: tuple[str, ...], instances: DataFrame) -> DataFrame:
    """The facts of aggregated ``rel`` (encoded columns ``c0..``) from its rule instances."""
    pos, fn = program.aggregated()[rel]
    typ = types[pos]
    cols = rel_columns(len(types))
    keys = [c for i, c in enumerate(cols) if i != pos]
    v = _typed(F.col(cols[pos]), typ)
    present = F.count(v).alias("_n")
    if fn == "count":
        agg, present = F.count(F.lit(1)).cast("string"), F.count(F.lit(1)).alias("_n")
    elif fn in ("min", "max"):
        agg = _encoded((F.min if fn == "min" else F.max)(v), typ)
    else:
        name, loc, arg = aggregate.site(program.rules, rel)
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
    grouped = instances.groupBy(*keys).agg(agg.alias(cols[pos]), present) if keys else instances.agg(agg.alias(cols[pos]), present)
    return grouped.filter((F.col("_n") > 0) & F.col(cols[pos]).isNotNull()).select(*cols)


def improvements(program: Program, rel: str, types: tuple[str, ...], best: DataFrame, current: DataFrame) -> DataFrame:
    """The facts of ``best`` (one per group) that improve on ``current``'s fact of their group."""
    pos, fn = program.aggregated()[rel]
    typ = types[pos]
    cols = rel_columns(len(types))
    keys = [c for i, c in enumerate(cols) if i != pos]
    if not keys:  # at most one fact: compare with its value directly
        row = current.limit(1).collect()
        if not row:
            return best
        theirs = _typed(F.lit(row[0][cols[pos]]), typ)
        mine = _typed(F.col(cols[pos]), typ)
        return best.filter(mine < theirs if fn == "min" else mine > theirs)
    old = current.select(*keys, F.col(cols[pos]).alias("_old"))
    mine, theirs = _typed(F.col(cols[pos]), typ), _typed(F.col("_old"), typ)
    wins = mine < theirs if fn == "min" else mine > theirs
    return best.join(old, on=keys, how="left").filter(F.col("_old").isNull() | wins).select(*cols)


def replaced(rel_frame: DataFrame, fresh: DataFrame, arity: int, pos: int) -> DataFrame:
    """``rel_frame`` with the facts of ``fresh``'s groups replaced by ``fresh``."""
    cols = rel_columns(arity)
    keys = [c for i, c in enumerate(cols) if i != pos]
    if not keys:
        return fresh
    kept = rel_frame.join(fresh.select(*keys), on=keys, how="left_anti")
    return reduce(lambda a, b: a.unionByName(b), [kept, fresh])
