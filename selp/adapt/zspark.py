"""Z-relations on Spark: one DataFrame per relation, string columns ``c0..`` and ``_cnt: long``.

Join multiplies counts, a relation's rules are unioned by name and summed per tuple, zero counts
dropped ([GI12]; the digest's Spark recipe). Each defined relation is cached and materialised by
the one job that gathers its statistics, so that later rules read a materialised table, not a
growing lineage; data put from Python are cached when first read (statistics counted in Python).
"""

from __future__ import annotations

from functools import reduce

from selp.adapt.zprogram import Expr, RulePlan, Stats, TextRel


class SparkZ:
    """Z-relations as cached Spark DataFrames."""

    def __init__(self, spark) -> None:  # a pyspark SparkSession (imported lazily: no JVM otherwise)
        from pyspark.sql import types as T

        self.spark = spark
        self.frames: dict[str, object] = {}
        self.arity: dict[str, int] = {}
        self._stats: dict[str, Stats] = {}  # per relation, gathered as it is stored
        self._T = T

    def _schema(self, arity: int):
        T = self._T
        return T.StructType([T.StructField(f"c{i}", T.StringType(), False) for i in range(arity)] + [T.StructField("_cnt", T.LongType(), False)])

    def _store(self, name: str, arity: int, df, stats: Stats | None = None) -> None:
        """Keep ``df`` as relation ``name``: cached and materialised by the job that computes its
        statistics (one job per relation, not a count and later a scan for the cost model)."""
        from pyspark.sql import functions as F

        old = self.frames.get(name)
        df = df.cache()  # data put from Python too: read again, it would be deserialised again
        if stats is None:
            # HyperLogLog estimates, as on DuckDB: the cost model needs magnitudes, and one pass
            # with a small sketch per column beats an exact distinct count's shuffle per column
            row = df.agg(F.count(F.lit(1)), *[F.approx_count_distinct(f"c{i}") for i in range(arity)]).collect()[0]
            rows = int(row[0])
            stats = Stats(rows, tuple(min(rows, int(x)) for x in row[1:]))
        self.frames[name] = df
        self.arity[name] = arity
        self._stats[name] = stats
        if old is not None and old is not df:
            old.unpersist()

    def put(self, name: str, arity: int, rows: TextRel) -> None:
        data = [tuple(k) + (int(n),) for k, n in rows.items() if n]
        # no job here: the statistics are counted in Python, exactly, and the first reader
        # materialises the cache
        stats = Stats(len(data), tuple(len({r[i] for r in data}) for i in range(arity)))
        self._store(name, arity, self.spark.createDataFrame(data, self._schema(arity)), stats)

    def _rule(self, plan: RulePlan):
        from pyspark.sql import functions as F

        def col(e: Expr):
            parts = [F.lit(p) if isinstance(p, str) else F.col(f"t{p[0]}.c{p[1]}") for p in e]
            return parts[0] if len(parts) == 1 else F.concat(*parts)

        df = None
        for i, rel in enumerate(plan.relations):
            t = self.frames[rel].alias(f"t{i}")  # type: ignore[attr-defined]
            df = t if df is None else df.crossJoin(t)
        if df is None:
            df = self.spark.range(1).select(F.lit(1).alias("_unit"))
        conds = [col(a) == col(b) for a, b in plan.equal] + [col(a) != col(b) for a, b in plan.unequal]
        if conds:
            df = df.where(reduce(lambda x, y: x & y, conds))
        count = reduce(lambda x, y: x * y, [F.col(f"t{i}._cnt") for i in range(len(plan.relations))], F.lit(1).cast("long"))
        heads = [col(e).alias(f"c{i}") for i, e in enumerate(plan.head)]
        return df.select(*heads, (count * plan.sign).cast("long").alias("_cnt"))

    def define(self, name: str, arity: int, plans: list[RulePlan]) -> None:
        from pyspark.sql import functions as F

        if not plans:
            self.put(name, arity, {})
            return
        union = reduce(lambda a, b: a.unionByName(b), [self._rule(p) for p in plans])
        key = [f"c{i}" for i in range(arity)]
        summed = union.groupBy(*key).agg(F.sum("_cnt").cast("long").alias("_cnt")).where(F.col("_cnt") != 0)
        self._store(name, arity, summed)

    def get(self, name: str) -> TextRel:
        return {tuple(r[:-1]): int(r[-1]) for r in self.frames[name].collect()}  # type: ignore[attr-defined]

    def has(self, name: str) -> bool:
        return name in self.frames

    def stats(self, name: str) -> Stats:
        return self._stats[name]  # gathered when the relation was stored

    def drop(self, name: str) -> None:
        df = self.frames.pop(name, None)
        self.arity.pop(name, None)
        self._stats.pop(name, None)
        if df is not None and all(f is not df for f in self.frames.values()):
            df.unpersist()  # type: ignore[attr-defined]

    def rename(self, old: str, new: str) -> None:
        if old == new:
            return
        self.drop(new)
        self.frames[new] = self.frames.pop(old)
        self.arity[new] = self.arity.pop(old)
        self._stats[new] = self._stats.pop(old)

    def names(self) -> list[str]:
        return sorted(self.arity)
