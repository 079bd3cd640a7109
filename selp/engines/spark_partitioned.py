"""Partition-local evaluation of a decomposable recursive component on Spark (BigDatalog/RaSQL
[SYICCZ16]).

A decomposable component (:mod:`selp.engines.decompose`) splits by the value at its decomposition
position into groups whose fixpoints never meet. So instead of a Spark job (several, with a
shuffle and a checkpoint) per semi-naive round, its initial facts -- what the exit rules derive,
computed by Spark as usual -- are hash-partitioned on that value together with the *keyed* input
relations; the other relations its recursive rules read are collected once and broadcast; and
each task runs the **whole fixpoint of its partition** in DuckDB
(:func:`selp.engines.embedded.component.run_component`), Arrow batches in and out of
``mapInArrow``. One job computes the component.

Partitions are disjoint (every fact keeps its decomposition value), so no deduplication across
them is needed; and a fact's semi-naive round is the same in its partition as in a global
evaluation, so the per-round sizes the tasks report add up to exactly the rounds -- and the
progress -- of :mod:`selp.engines.spark`'s global evaluation.

Settings: ``spark.selp.partitionLocal`` (``true``; ``false`` turns the path off),
``spark.selp.partitionLocal.partitions`` (default 2 x the default parallelism) and
``spark.selp.partitionLocal.broadcastRows`` (default 2,000,000: a component whose broadcast
inputs hold more rows runs in global rounds, as the driver collects them);
``spark.selp.partitionLocal.blobCodec`` (``zstd``, ``lz4`` or ``none``: how a partition's packed
DTable is compressed on its way to the JVM, :mod:`selp.topk.packed`).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Mapping

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import LongType, StringType, StructField, StructType

from selp.engines.decompose import Decomposition
from selp.engines.embedded.component import ComponentTask, run_component
from selp.engines.spark_compile import rel_columns, union_all
from selp.engines.spark_frames import materialize
from selp.engines.spark_values import keyed as keyed_by_label
from selp.errors import SelpError
from selp.language.validate import Component
from selp.topk.kernel import LOOPS
from selp.topk.packed import CODECS, DEFAULT_CODEC

ENABLED_CONF = "spark.selp.partitionLocal"
PARTITIONS_CONF = "spark.selp.partitionLocal.partitions"
BROADCAST_ROWS_CONF = "spark.selp.partitionLocal.broadcastRows"
BLOB_CODEC_CONF = "spark.selp.partitionLocal.blobCodec"
KBEST_LOOP_CONF = "spark.selp.partitionLocal.kbestLoop"
DEFAULT_BROADCAST_ROWS = 2_000_000

_REL, _KEY, _ROUND, _COUNT = "_rel", "_key", "_round", "_count"


@dataclass(frozen=True)
class Settings:
    """The partition-local settings of a session."""

    enabled: bool
    partitions: int
    broadcast_rows: int
    threads: int  # spark.task.cpus: the cores one DuckDB may use
    codec: str = DEFAULT_CODEC  # the packed DTable's blob compression (selp.topk.packed.CODECS)
    loop: str = LOOPS[0]  # the kernel's loop for k > 1 (selp.topk.kernel.kbest_loop)


def _count(spark: SparkSession, key: str, default: int, least: int) -> int:
    """An integer setting; a value that is none is a one-line error naming it."""
    text = spark.conf.get(key, None)
    if text is None:
        return default
    try:
        value = int(text.strip())
    except ValueError:
        value = least - 1
    if value < least:
        raise SelpError(f"{key}={text!r}: expected an integer of at least {least}")
    return value


def settings(spark: SparkSession) -> Settings:
    """The session's :class:`Settings` (see the module docstring)."""
    flag = spark.conf.get(ENABLED_CONF, "true").strip().lower()
    if flag not in ("true", "false"):
        raise SelpError(f"{ENABLED_CONF}={flag!r}: expected true or false")
    parallelism = max(1, spark.sparkContext.defaultParallelism)
    partitions = _count(spark, PARTITIONS_CONF, 2 * parallelism, 1)
    rows = _count(spark, BROADCAST_ROWS_CONF, DEFAULT_BROADCAST_ROWS, 0)
    threads = int(spark.sparkContext.getConf().get("spark.task.cpus", "1"))
    codec = spark.conf.get(BLOB_CODEC_CONF, DEFAULT_CODEC).strip().lower()
    if codec not in CODECS:
        raise SelpError(f"{BLOB_CODEC_CONF}={codec!r}: expected one of {', '.join(CODECS)}")
    loop = spark.conf.get(KBEST_LOOP_CONF, LOOPS[0]).strip().lower()
    if loop not in LOOPS:
        raise SelpError(f"{KBEST_LOOP_CONF}={loop!r}: expected one of {', '.join(LOOPS)}")
    return Settings(flag == "true", partitions, rows, max(1, threads), codec, loop)


@dataclass
class PartitionLocalRun:
    """What one partition-local job computed."""

    frames: dict[str, DataFrame]  # each relation of the component, columns c0..
    counts: dict[str, int]
    rounds: list[int]  # new facts per semi-naive round (summed over partitions), empty round excluded
    held: DataFrame | None  # the materialised job output the frames read (release when done)


def _tagged(df: DataFrame, rel: str, arity: int, key: int, width: int) -> DataFrame:
    """Rows (_rel, _key, v0..v{width-1}) of a relation frame, padded with nulls."""
    cols = [F.col(c) for c in rel_columns(arity)] + [F.lit(None).cast("string")] * (width - arity)
    return df.select(F.lit(rel).alias(_REL), F.col(f"c{key}").alias(_KEY), *[c.alias(f"v{i}") for i, c in enumerate(cols)])


def _out_schema(width: int) -> StructType:
    fields = [StructField(_REL, StringType()), StructField(_ROUND, LongType()), StructField(_COUNT, LongType())]
    return StructType(fields + [StructField(f"v{i}", StringType()) for i in range(width)])


class PartitionTask:
    """The function ``mapInArrow`` runs per Spark partition: the rows of the partition (seeds
    and keyed inputs, tagged by relation) plus the broadcast inputs into
    :func:`run_component`; out come the facts, the size of every round and of every relation."""

    def __init__(self, task: ComponentTask, keyed: tuple[str, ...], in_width: int, out_width: int, broadcast: Any) -> None:
        self.task = task
        self.keyed = keyed
        self.in_width = in_width
        self.out_width = out_width
        self.broadcast = broadcast  # pyspark Broadcast of {relation: pyarrow.Table}, or None

    def _split(self, tbl: pa.Table, rel: str) -> pa.Table:
        import pyarrow.compute as pc

        rows = tbl.filter(pc.equal(tbl[_REL], rel))  # a member or keyed input: never nullary
        return pa.table({f"c{i}": rows[f"v{i}"] for i in range(self.task.arities[rel])})

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        got = [b for b in batches if b.num_rows]
        if not got:
            return  # no seeds here: nothing to derive
        tbl = pa.Table.from_batches(got)
        seeds = {rel: self._split(tbl, rel) for rel in self.task.members}
        if not any(t.num_rows for t in seeds.values()):
            return
        inputs = {rel: self._split(tbl, rel) for rel in self.keyed}
        if self.broadcast is not None:
            inputs.update(self.broadcast.value)
        out = run_component(self.task, seeds, inputs)
        schema = pa.schema([(f.name, pa.string() if f.dataType == StringType() else pa.int64()) for f in _out_schema(self.out_width).fields])
        for rel, facts in out.facts.items():
            n = facts.num_rows
            cols: dict[str, pa.Array] = {
                _REL: pa.repeat(pa.scalar(rel, pa.string()), n),
                _ROUND: pa.nulls(n, pa.int64()),
                _COUNT: pa.nulls(n, pa.int64()),
            }
            for i in range(self.out_width):
                cols[f"v{i}"] = facts.column(f"c{i}").combine_chunks() if i < facts.num_columns else pa.nulls(n, pa.string())
            for batch in pa.table(cols, schema=schema).to_batches(max_chunksize=65536):
                yield batch
        stats_rel = [None] * len(out.rounds) + list(out.facts)
        stats_round = list(range(1, len(out.rounds) + 1)) + [0] * len(out.facts)
        stats_count = list(out.rounds) + [t.num_rows for t in out.facts.values()]
        m = len(stats_rel)
        stats = {_REL: pa.array(stats_rel, pa.string()), _ROUND: pa.array(stats_round, pa.int64()), _COUNT: pa.array(stats_count, pa.int64())}
        stats |= {f"v{i}": pa.nulls(m, pa.string()) for i in range(self.out_width)}
        yield from pa.table(stats, schema=schema).to_batches()


def run_partition_local(
    spark: SparkSession,
    comp: Component,
    d: Decomposition,
    seeds: Mapping[str, list[DataFrame]],
    frame: Callable[[str], DataFrame],
    arities: Mapping[str, int],
    types: Mapping[str, tuple[str, ...]],
    conf: Settings,
) -> PartitionLocalRun:
    """Compute ``comp`` partition-locally: ``seeds`` are the exit rules' plans per relation of
    the component, ``frame(rel)`` the full frame of an input relation."""
    members = tuple(comp.relations)
    plans = [(rel, p) for rel in members for p in seeds.get(rel, [])]
    if not plans:
        return PartitionLocalRun({}, {rel: 0 for rel in members}, [], None)
    keyed = tuple(sorted(d.keyed))
    in_width = max(arities[r] for r in members + keyed)
    out_width = max(arities[r] for r in members)
    parts = [_tagged(p, rel, arities[rel], d.position, in_width) for rel, p in plans]
    parts += [_tagged(frame(rel), rel, arities[rel], d.keyed[rel], in_width) for rel in keyed]
    tagged = union_all(parts)
    if d.labels is not None:  # decomposition by value components: key = the value's component
        tagged = keyed_by_label(tagged, _KEY, d.labels)
    tagged = tagged.repartition(conf.partitions, _KEY).drop(_KEY)
    sc = spark.sparkContext
    bc = sc.broadcast({rel: frame(rel).toArrow() for rel in d.broadcast}) if d.broadcast else None
    inputs = members + keyed + d.broadcast
    task = ComponentTask(
        members,
        d.recursive_rules,
        {r: arities[r] for r in inputs},
        {r: tuple(types[r]) for r in inputs},
        conf.threads,
    )
    with warnings.catch_warnings():
        # pyspark checks the pandas version here and warns about pandas 3; mapInArrow needs none
        warnings.simplefilter("ignore", FutureWarning)
        mapped = tagged.mapInArrow(PartitionTask(task, keyed, in_width, out_width, bc), _out_schema(out_width))
    out = materialize(mapped)
    # the one job: computes every partition's fixpoint (and the checkpoint the frames read)
    stats = out.filter(F.col(_ROUND).isNotNull()).select(_REL, _ROUND, _COUNT).collect()
    if bc is not None:
        bc.unpersist()
    by_round: dict[int, int] = {}
    counts = {rel: 0 for rel in members}
    for rel, rnd, n in stats:
        if rnd == 0:
            counts[rel] += n
        else:
            by_round[rnd] = by_round.get(rnd, 0) + n
    rounds = [by_round[i] for i in range(1, len(by_round) + 1)]
    facts = out.filter(F.col(_ROUND).isNull())
    frames = {
        rel: facts.filter(F.col(_REL) == rel).select(*[F.col(f"v{i}").alias(c) for i, c in enumerate(rel_columns(arities[rel]))])
        for rel in members
    }
    return PartitionLocalRun(frames, counts, rounds, out)
