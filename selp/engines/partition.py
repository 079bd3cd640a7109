"""Running the local engine on partitions of the data, inside Spark tasks.

:func:`evaluate_partitionwise` ships EDB frames (uniform string encoding, columns ``c0..``) to
Spark tasks grouped by a partition id, and each task runs :func:`selp.engines.local.evaluate` on
its group's facts with ``DataFrame.mapInArrow``, returning one relation encoded back. With one
partition (the default) this is the whole program evaluated in one task. Given a partitioning
column per relation, each group holds the facts whose key hashes to it, plus a copy of every
relation that is not partitioned -- correct whenever the program decomposes along that key (which
the caller has to establish; a later engine does).
"""

from __future__ import annotations

import warnings
from typing import Iterator, Mapping

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from selp.engines.local import evaluate
from selp.engines.spark_compile import rel_columns, rel_schema, union_all
from selp.language.validate import Analysis
from selp.values import Value, decode, encode

_PID, _REL = "_pid", "_rel"


def _tagged(rel: str, df: DataFrame, arity: int, width: int, pid) -> DataFrame:
    """A relation frame as rows (pid, rel, v0..v{width-1}) padded with nulls."""
    cols = [F.col(c) for c in rel_columns(arity)] if arity else []
    cols += [F.lit(None).cast("string")] * (width - len(cols))
    return df.select(pid.alias(_PID), F.lit(rel).alias(_REL), *[c.alias(f"v{i}") for i, c in enumerate(cols)])


def evaluate_partitionwise(
    analysis: Analysis,
    types: Mapping[str, tuple[str, ...]],
    edb_frames: Mapping[str, DataFrame],
    output_relation: str,
    spark: SparkSession,
    partition_by: Mapping[str, int] | None = None,
    num_partitions: int = 1,
) -> DataFrame:
    """Evaluate ``analysis`` with the local engine per partition; returns ``output_relation``.

    ``edb_frames`` maps EDB relations to frames in the uniform encoding. ``partition_by`` maps a
    relation to the column whose value decides its partition (hashed into ``num_partitions``
    groups); relations not in it are copied to every group. The result frame has the columns of
    :func:`~selp.engines.spark_compile.rel_columns` and may hold duplicates across groups.
    """
    partition_by = dict(partition_by or {})
    arities = {rel: analysis.arities[rel] for rel in edb_frames if rel in analysis.edb}
    width = max([1, *arities.values()])
    n = max(1, num_partitions)
    parts = []
    for rel, arity in sorted(arities.items()):
        if rel in partition_by and n > 1:
            pid = F.pmod(F.hash(F.col(f"c{partition_by[rel]}")), F.lit(n))
        elif n > 1:
            # replicated: one copy per group
            pid = F.explode(F.sequence(F.lit(0), F.lit(n - 1)))
        else:
            pid = F.lit(0)
        parts.append(_tagged(rel, edb_frames[rel], arity, width, pid))
    if not parts:
        parts.append(spark.range(1).select(F.lit(0).alias(_PID), F.lit("").alias(_REL), F.lit("").alias("v0")))
    tagged = union_all(parts).repartition(n, _PID)

    out_arity = analysis.arities[output_relation]
    out_names = rel_columns(out_arity)
    out_schema = rel_schema(out_arity)
    all_types = dict(types)

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        # a task holds whole groups (repartitioned by pid); evaluate each group on its own
        groups: dict[int, dict[str, set[tuple[Value, ...]]]] = {}
        for batch in batches:
            cols = batch.to_pydict()
            for k in range(batch.num_rows):
                rel = cols[_REL][k]
                if rel not in arities:
                    continue
                arity = arities[rel]
                typ = all_types[rel]
                fact = tuple(decode(cols[f"v{i}"][k], typ[i]) for i in range(arity))
                groups.setdefault(cols[_PID][k], {}).setdefault(rel, set()).add(fact)
        if not groups and n == 1:
            groups[0] = {}  # the only group: rules may derive facts from no input at all
        for _, edb in sorted(groups.items()):
            facts = evaluate(analysis, edb)[output_relation]
            if out_arity == 0:
                rows = {name: [""] * len(facts) for name in out_names}
            else:
                rows = {name: [encode(f[i]) for f in facts] for i, name in enumerate(out_names)}
            yield pa.RecordBatch.from_pydict(rows, schema=pa.schema([(c, pa.string(), False) for c in out_names]))

    with warnings.catch_warnings():
        # pyspark checks the pandas version here and warns about pandas 3; mapInArrow needs none
        warnings.simplefilter("ignore", FutureWarning)
        return tagged.mapInArrow(run, out_schema)
