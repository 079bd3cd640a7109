"""The Spark DTable of a decomposable component, partition-local (issue 19, item 2).

A decomposable component (:mod:`selp.engines.decompose`) splits by the value at its
decomposition position into groups that never meet, and a derivation of one of its facts only
uses facts of the same group and of lower relations. So instead of the global rounds of
:mod:`selp.topk.spark` -- a shuffle of every candidate and a window per round -- its whole DTable
is computed in each partition, in one job (:func:`selp.topk.component.partition_dtable`: DuckDB
and the compiled kernel over Arrow, ``mapInArrow``):

* the seed entries -- what the exit rules make over the lower entries -- are Spark plans, as in
  a global round; they are hash-partitioned on the decomposition value, with the entries of the
  *keyed* inputs (split on their column holding that value); the entries of the other inputs are
  collected once and broadcast;
* each task ranks its facts' derivations with the kernel, whose origins are Spark's
  (``xxhash64``): same total order (key, size, origin), same same-origin dedup;
* each task gives back its facts' k best entries **finished**: fact keys, child pointers as (fact
  key, origin) and ranks are made in the task (:mod:`selp.topk.component`). No fact hashing
  after the job, no ``theta`` (a group-by shuffle) and no ranking join;
* and **packed** (:mod:`selp.topk.packed`): the facts once, the entries as integer and float
  columns, crossing into Spark as a few binary blobs (Arrow IPC) per partition -- Spark copies
  bytes instead of building a row with strings per entry. The job's output, cut once, *is* the
  component's part of the DTable. It is unpacked into the DTable's rows (a ``mapInArrow``,
  cut lazily: computed by the first job that reads it, then kept) only when something reads
  them: the saved DTable, ``trees`` and ``explain``, or a later component's global rounds,
  which read these entries as entries of a lower relation.

Used when ``spark.selp.partitionLocal`` is on (the default), the monoid has a compiled form (the
built-in ones), and the broadcast entries are at most ``spark.selp.partitionLocal.broadcastRows``.
"""

from __future__ import annotations

import dataclasses
import warnings
import zlib
from typing import Any, Iterator

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import ArrayType, DoubleType, IntegerType, LongType, StringType, StructField, StructType

from selp.engines.decompose import Decomposition, NotDecomposable, decompose_any
from selp.engines.spark_values import keyed as keyed_by_label, value_labels
from selp.engines.embedded.component import ComponentTask
from selp.engines.spark_compile import union_all
from selp.engines.spark_partitioned import ENABLED_CONF, BROADCAST_ROWS_CONF, Settings
from selp.instrument.witness import is_filter_relation
from selp.language.ast import Atom
from selp.language.validate import Component
from selp.engines.spark_frames import cut
from selp.topk.component import DTableTask, partition_dtable
from selp.topk.kernel import LOOPS, kbest_loop
from selp.topk.component_static import static_reason
from selp.topk.packed import Steps, Unpack, blob_schema, blobs
from selp.topk.embedded import COMPILED
from selp.topk.spark_dtable import PTR, materialize_observed

_KEY, _SEED = "_key", "_seed"
_OUT = StructType([
    StructField("_f", LongType()), StructField("_g", IntegerType()), StructField("relation", StringType()),
    StructField("args", ArrayType(StringType())), StructField("_w", DoubleType()), StructField("_s", LongType()),
    StructField("_o", LongType()), StructField("_rule", StringType()), StructField("_ch", PTR),
    StructField("rank", IntegerType()),
])


def choose(engine: Any, comp: Component, conf: Settings) -> tuple[Decomposition | None, dict[str, Any]]:
    """Whether ``comp`` (of P_p) gets a partition-local DTable: its decomposition or None, and
    the plan step saying how it runs (and why not, if not)."""
    step: dict[str, Any] = {"stratum": comp.stratum, "relations": list(comp.relations), "mode": "global rounds"}
    if not comp.recursive:
        step["mode"] = "one pass"
        return None, step
    if not conf.enabled:
        step["reason"] = f"{ENABLED_CONF}=false"
        return None, step
    if engine.task.monoid.name not in COMPILED or engine.task.monoid is not _builtin(engine.task.monoid.name):
        step["reason"] = f"monoid {engine.task.monoid.name} has no compiled form"
        return None, step
    if any(is_filter_relation(a.relation) for r in comp.rules for a in r.body if isinstance(a, Atom)):
        # it reads aggregated facts (witness filters): they live on the driver's side only
        step["reason"] = "it reads aggregated facts (a witness filter)"
        return None, step
    d = decompose_any(comp)
    if isinstance(d, NotDecomposable):
        step["reason"] = d.reason
        return None, step
    rows = sum(_entry_count(engine, rel) for rel in d.broadcast)
    if rows > conf.broadcast_rows:
        step["reason"] = f"its broadcast inputs hold {rows} entries, over {BROADCAST_ROWS_CONF}={conf.broadcast_rows}"
        return None, step
    if d.kind == "values":
        got = [(e.select(*[F.element_at("args", i + 1).alias(f"c{i}") for i in range(engine.arity[rel])]), engine.arity[rel],
                _entry_count(engine, rel)) for rel in d.graph if (e := _entries_of(engine, rel)) is not None]
        labels = value_labels(engine.spark, got, conf.broadcast_rows)
        if isinstance(labels, str):
            step["reason"] = f"value components: {labels} ({BROADCAST_ROWS_CONF})"
            return None, step
        d = dataclasses.replace(d, labels=labels)
        step["decomposition"] = "value components"
    why = static_reason(_component_task(engine, comp, d, conf), engine.task.k, engine.analysis.edb)
    step.update(mode="partition-local", position=d.position, partitions=conf.partitions,
                keyed=sorted(d.keyed), broadcast=list(d.broadcast),
                ranking=f"whole partition: {why}" if why else "component by component")
    return d, step


def _component_task(engine: Any, comp: Component, d: Decomposition, conf: Settings) -> ComponentTask:
    """The component as a partition's task sees it: its relation(s), recursive rules, and the
    arity and types of every relation those read."""
    members = sorted(comp.relations)
    inputs = tuple(sorted(set(d.keyed) | set(d.broadcast)))
    arities = {r: engine.arity[r] for r in tuple(members) + inputs}
    return ComponentTask(tuple(members), d.recursive_rules, arities, {r: tuple(engine.task.types[r]) for r in arities}, conf.threads)


def _builtin(name: str) -> Any:
    from selp.topk.monoid import BUILTIN

    return BUILTIN.get(name)


def _entry_count(engine: Any, rel: str) -> int:
    home = engine.home.get(rel)
    return 0 if home is None else home.admitted.get(rel, 0)


def _entries_of(engine: Any, rel: str) -> DataFrame | None:
    """Every admitted entry of ``rel`` (a superset of its k best: the kernel keeps the best)."""
    home = engine.home.get(rel)
    if home is None or not home.admitted.get(rel):
        return None
    return home.all_entries().filter(F.col("relation") == rel)  # type: ignore[union-attr]


def _as_columns(tbl: pa.Table, arity: int, extra: list[str]) -> pa.Table:
    """Rows with ``args`` as columns c0.. (the uniform encoding the partition's DuckDB reads)."""
    import pyarrow.compute as pc

    cols = {f"c{i}": pc.list_element(tbl.column("args"), i) for i in range(arity)}
    return pa.table(cols | {c: tbl.column(c) for c in extra})


class PartitionDTable:
    """The function ``mapInArrow`` runs per partition: seed entries and keyed inputs' entries
    (tagged ``_seed``) plus the broadcast entries into :func:`partition_dtable`."""

    def __init__(self, task: DTableTask, keyed: tuple[str, ...], broadcast: Any, codec: str,
                 loop: str = LOOPS[0]) -> None:
        self.task = task
        self.keyed = keyed
        self.broadcast = broadcast  # pyspark Broadcast of {relation: Arrow table (c0.., _w, _s, _o)}
        self.codec = codec  # the blobs' compression (selp.topk.packed.CODECS)
        self.loop = loop  # the kernel's loop for k > 1 (selp.topk.kernel.kbest_loop)

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        import pyarrow.compute as pc
        from pyspark import TaskContext

        got = [b for b in batches if b.num_rows]
        if not got:
            return
        tbl = pa.Table.from_batches(got)
        arity = self.task.component.arities
        seeds = {}
        for rel in self.task.component.members:
            rows = tbl.filter(pc.and_(tbl[_SEED], pc.equal(tbl["relation"], rel)))
            if rows.num_rows:
                seeds[rel] = _as_columns(rows, arity[rel], ["_w", "_s", "_o", "_rule", "_ch"])
        if not seeds:
            return
        inputs = {}
        for rel in self.keyed:
            rows = tbl.filter(pc.and_(pc.invert(tbl[_SEED]), pc.equal(tbl["relation"], rel)))
            inputs[rel] = _as_columns(rows, arity[rel], ["_w", "_s", "_o", "_f"])
        if self.broadcast is not None:
            inputs.update(self.broadcast.value)
        partition = TaskContext.get().partitionId()
        with kbest_loop(self.loop):
            out = partition_dtable(self.task, seeds, inputs, partition)
        if out is not None:
            yield from blobs(out, partition, sorted(self.task.component.members), self.codec)


def run_partition_local(engine: Any, comp: Component, d: Decomposition, conf: Settings, home: Any) -> int:
    """Fill the DTable of ``comp`` partition-locally into ``home`` (a new, empty home of
    ``engine``, the :class:`selp.topk.spark` engine): its entries, and the same entries ranked
    (``home.ranked``); returns the number of entries admitted."""
    spark = engine.spark
    members = sorted(comp.relations)
    plans = engine.first_candidates(d.exit_rules)
    engine.homes.append(home)
    for rel in members:
        engine.home[rel] = home
    if not plans:
        return 0
    key_of = {rel: d.position for rel in members} | dict(d.keyed)

    def tagged(df: DataFrame, seed: bool) -> DataFrame:
        key = F.element_at("args", F.create_map(*[x for rel, c in key_of.items() for x in (F.lit(rel), F.lit(c + 1))])[F.col("relation")])
        return df.select(
            "relation", "args", F.col("_w").cast("double").alias("_w"), "_s", "_o", "_f",
            (F.col("_rule") if seed else F.lit(None).cast("string")).alias("_rule"),
            (F.col("_ch") if seed else F.lit(None).cast(PTR)).alias("_ch"),
            F.lit(seed).alias(_SEED), key.alias(_KEY),
        )

    parts = [tagged(p, True) for p in plans]
    parts += [tagged(e, False) for rel in sorted(d.keyed) if (e := _entries_of(engine, rel)) is not None]
    rows = union_all(parts)
    if d.labels is not None:  # decomposition by value components: key = the value's component
        rows = keyed_by_label(rows, _KEY, d.labels)
    rows = rows.repartition(conf.partitions, _KEY).drop(_KEY)
    ctask = _component_task(engine, comp, d, conf)
    arities = ctask.arities
    small = {}
    for rel in d.broadcast:
        e = _entries_of(engine, rel)
        if e is not None:
            t = e.select("args", F.col("_w").cast("double").alias("_w"), "_s", "_o", "_f").toArrow()
            small[rel] = _as_columns(t, arities[rel], ["_w", "_s", "_o", "_f"])
    bc = spark.sparkContext.broadcast(small) if small else None
    task = engine.task
    prefixes = spark.range(1).select(*[
        F.xxhash64(F.lit("N"), F.lit(task.inst.rule_origin.get(r.name) or "")).alias(f"h{i}") for i, r in enumerate(d.recursive_rules)
    ]).collect()[0] if d.recursive_rules else []
    combine, sign = COMPILED[task.monoid.name]
    dtask = DTableTask(
        ctask,
        {r.name: float(task.rule_weight[r.name]) for r in d.recursive_rules},
        {r.name: int(task.rule_size[r.name]) for r in d.recursive_rules},
        {r.name: int(prefixes[i]) for i, r in enumerate(d.recursive_rules)},
        combine, sign, float(task.monoid.one), task.k, zlib.crc32("\0".join(members).encode()) << 24,
        by_component=not static_reason(ctask, task.k, engine.analysis.edb),
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # pyspark's pandas-version check; no pandas here
        mapped = rows.mapInArrow(PartitionDTable(dtask, tuple(sorted(d.keyed)), bc, conf.codec, conf.loop), blob_schema(len(members)))
    # the one job: every partition's DTable, packed and cut, with the counts observed on the way
    packed, counts = materialize_observed(mapped, [F.sum(f"n{i}").alias(f"n{i}") for i in range(len(members))])
    if bc is not None:
        bc.unpersist()
    admitted = {rel: int(counts[f"n{i}"] or 0) for i, rel in enumerate(members) if counts[f"n{i}"]}
    n = sum(admitted.values())
    # what unpacking needs to recompute what the partitions do not ship (origins, weights, sizes)
    rules = Steps.of(dtask)
    # the rows of the entries, unpacked when first read (the ranks, pointers, trees, a later
    # component) and kept from then on: a DTable nobody reads is never unpacked
    def read(**only: Any) -> DataFrame:
        # the rows of every entry, or (``only``: keys= or facts=) of a few facts' entries
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            rows_out = packed.mapInArrow(Unpack(dtask.salt, rules, **only), _OUT)
        return rows_out.select(
            "_f", "_g", "relation", "args", F.col("_w").cast(engine.wt.type).alias("_w"), "_s", "_o", "_rule", "_ch", "rank")

    ranked = cut(read())
    home.packed, home.reader = packed, read
    home.pieces, home.piece_rows = [ranked.drop("rank")], [n]
    home.ranked = ranked
    home.admitted, home.live = dict(admitted), dict(admitted)
    return n
