"""The DTable on Spark once its fixpoint is reached (:class:`SparkDTable`): ranks, and the forms users read.

The fixpoint is :func:`selp.topk.spark.run_topk_spark`; it leaves every admitted entry
(``_f``/``_g`` fact hashes, ``relation``, ``args``, ``_w``, ``_s``, ``_o``, ``_rule``, and ``_ch``
the children as ``(f, o)`` pointers) and, per group of components, ``theta``: one row per fact
with the sorted ``(key, size, origin)`` of its k best.

When the fixpoint is reached, ranks are attached with one join (entries x exploded ``top``);
that completes the DTable (:class:`SparkDTable`). Pointers by rank -- the form users read -- are
made on demand: for some facts on the driver (:meth:`SparkDTable.to_dtable`), for all on Spark
(:attr:`SparkDTable.entries`, :meth:`SparkDTable.save`). An entry pushed out of the k best that
some entry was built on (it lost a tie broken on the origin hash, or a better weight did not make
the parent better, as with ``min``) is then ranked after the k best (k+1, ...), so every pointer
leads to an entry.
"""

from __future__ import annotations

import itertools
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from pyspark.sql import Column, DataFrame, Observation, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql.types import (
    ArrayType,
    DataType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
)

from selp.engines.spark_compile import union_all
from selp.engines.spark_frames import computed, cut, materialize_count, release
from selp.engines.spark_load import is_local_path, local_path, to_uri
from selp.errors import SelpError
from selp.topk.dtable import ENTRIES, DTable, Entry, replace_dir, save_dtable
from selp.topk.task import Task
from selp.values import Value, decode, encode

# a child pointer while evaluating and in the DTable: the child's fact hash and origin
PTR = ArrayType(StructType([StructField("f", LongType()), StructField("o", LongType())]))
# the children in the entries users read (pointers by rank)
PTR_RANK = ArrayType(StructType([
    StructField("relation", StringType()), StructField("args", ArrayType(StringType())), StructField("rank", IntegerType()),
]))

_OBSERVATIONS = itertools.count()

# A DTable of at most this many entries is collected whole when trees are drawn from it (one
# job), rather than chased from the answers a level of children per job (two jobs a level:
# 51 jobs for the three trees of path(0, 1) at 1,000 nodes). 100,000 rows take a second or two
# to collect; past that the chase collects less.
COLLECT_ROWS_CONF = "spark.selp.collectRows"
DEFAULT_COLLECT_ROWS = 100_000


def materialize_observed(df: DataFrame, metrics: list[Column]) -> tuple[DataFrame, dict[str, Any]]:
    """Compute ``df`` once, cut its lineage, and return the aggregate ``metrics`` of ``df``
    gathered meanwhile (an :class:`Observation`: no job of their own)."""
    obs = Observation(f"selp_topk_{next(_OBSERVATIONS)}")  # names must be unique in a plan
    return cut(df.observe(obs, *metrics), eager=True), obs.get


def entries_schema(weight_type) -> StructType:
    """The schema of :attr:`SparkDTable.entries` for a weight type."""
    return StructType([
        StructField("relation", StringType(), False),
        StructField("args", ArrayType(StringType()), False),
        StructField("rank", IntegerType(), False),
        StructField("weight", weight_type, True),
        StructField("size", LongType(), False),
        StructField("origin", LongType(), False),
        StructField("rule", StringType(), True),
        StructField("children", PTR_RANK, False),
    ])


@dataclass
class SparkDTable:
    """The DTable of a task, distributed: every admitted entry (pointing at its children by
    fact and origin) and, per fact, which of them are its k best.

    That is the whole DTable: a pointer (fact, origin) names one entry as well as (fact, rank)
    does, and ranks only exist once the fixpoint is reached. The forms users read are made from
    it on demand: :meth:`to_dtable` collects the entries of some facts (pointer chasing on the
    driver), :attr:`entries` and :meth:`save` give every entry with pointers by rank."""

    task: Task = field(repr=False)
    spark: SparkSession = field(repr=False)
    every: DataFrame | None = field(repr=False)  # every admitted entry, EDB leaves included
    thetas: list[DataFrame] = field(repr=False, default_factory=list)  # per group: _f, _g, relation, top
    frames: list[DataFrame] = field(repr=False, default_factory=list)  # what close() frees
    rounds: int = 0
    seconds: float = 0.0  # the fixpoint and ranking, without loading
    load_seconds: float = 0.0
    fixpoint_seconds: float = 0.0
    warnings: list[str] = field(default_factory=list)
    live_count: int = 0  # entries ranked 1..k (EDB leaves included)
    small_rounds: int = 0  # rounds that merged only the facts they touched (see _Engine.merge)
    plan: list[dict[str, Any]] = field(default_factory=list)  # per component of P_p: how it ran
    # entries ranked where they were computed (partition-local components), not in ``every``
    ranked_parts: list[DataFrame] = field(repr=False, default_factory=list)
    part_rows: int = 0  # entries in ``ranked_parts``
    # per ranked part, None or a reader of some facts' rows only (``keys=`` or ``facts=``, see
    # selp.topk.packed.Unpack): used while the part's own rows have not been computed
    part_readers: list[Callable[..., DataFrame] | None] = field(repr=False, default_factory=list)
    _every_part: DataFrame | None = field(default=None, repr=False)
    _ranked: DataFrame | None = field(default=None, repr=False)
    _every_rows: int = field(default=0, repr=False)  # entries of ``every``, once ranked
    _entries: DataFrame | None = field(default=None, repr=False)
    _count: int = field(default=0, repr=False)
    _extra: int = field(default=0, repr=False)

    # --- ranks -----------------------------------------------------------------------------------

    def ranked(self) -> DataFrame:
        """Every admitted entry with ``rank`` (1..k; null for an entry pushed out of its fact's k
        best), materialised on first use."""
        if self._ranked is None:
            parts = list(self.ranked_parts)
            if self.every is not None or not parts:
                self._every_part = self._rank_every()
                parts.insert(0, self._every_part)
            self._ranked = union_all(parts)
        return self._ranked

    def _rows_of(self, want: DataFrame, on: list[str], **only: Any) -> list[Any]:
        """The ranked rows of the facts in ``want`` (a small frame, semi-joined on ``on``),
        collected. A partition-local part nobody has unpacked yet builds these facts' rows only
        (``only``: ``keys`` or ``facts`` of its reader), rather than every entry's."""
        self.ranked()
        readers = self.part_readers or [None] * len(self.ranked_parts)
        parts = [p if read is None or computed(p) else read(**only) for p, read in zip(self.ranked_parts, readers)]
        if self._every_part is not None:
            parts.insert(0, self._every_part)
        return union_all(parts).join(F.broadcast(want), on, "left_semi").collect()

    def _rank_every(self) -> DataFrame:
        """The entries of ``every`` (the EDB leaves and the global rounds' entries) with their
        rank, by one join with the ``thetas``; materialised."""
        if self.every is None:
            schema = StructType([
                StructField("_f", LongType()), StructField("_g", IntegerType()), StructField("relation", StringType()),
                StructField("args", ArrayType(StringType())), StructField("_w", DataType.fromDDL(self.task.monoid.spark_type)),
                StructField("_s", LongType()), StructField("_o", LongType()), StructField("_rule", StringType()),
                StructField("_ch", PTR), StructField("rank", IntegerType()),
            ])
            return self.spark.createDataFrame([], schema)
        edb = sorted(self.task.inst_analysis.edb)
        # one narrow row per fact (the origins of its k best) against the entries: the rank
        # of an entry is its origin's position (rather than joining the exploded lists, k
        # rows a fact, on fact and origin)
        ranks = [t.select("_f", "_g", F.col("top.o").alias("_os")) for t in self.thetas]
        out = self.every
        if ranks:
            pos = F.array_position(F.col("_os"), F.col("_o")).cast("int")
            out = out.join(union_all(ranks), ["_f", "_g"], "left").withColumn(
                "_r", F.when(pos > 0, pos)).drop("_os")
        else:
            out = out.withColumn("_r", F.lit(None).cast("int"))
        leaf = F.col("relation").isin(edb) if edb else F.lit(False)
        out = out.withColumn("rank", F.when(leaf, F.lit(1)).otherwise(F.col("_r"))).drop("_r")
        out, self._every_rows = materialize_count(out)
        self.frames.append(out)
        return out

    def count(self) -> int:
        """The number of rows of :attr:`entries`: the k best of every fact, plus the entries
        past rank k that some entry points at."""
        self._assemble()
        return self._count

    @property
    def extra_entries(self) -> int:
        """Entries past rank k kept because an entry points at them."""
        self._assemble()
        return self._extra

    @property
    def entries(self) -> DataFrame:
        """relation, args, rank, weight, size, origin, rule, children (pointers by rank): one
        row per entry of every fact of P_p (EDB leaves included), plus the kept children past
        rank k (ranked after the k best)."""
        self._assemble()
        return self._entries  # type: ignore[return-value]

    def _origin_relation(self) -> Column:
        origin = self.task.inst.relation_origin
        pairs = [x for rel in self.task.roots for x in (F.lit(rel), F.lit(origin.get(rel, rel)))]
        return F.create_map(*pairs)[F.col("relation")]

    def answer_count(self) -> int:
        """The number of distinct facts of P among the root relations (the answers)."""
        roots = list(self.task.roots)
        if not roots:
            return 0
        return (
            self.ranked().filter(F.col("relation").isin(roots) & F.col("rank").isNotNull())
            .select(self._origin_relation().alias("r"), F.col("args"))
            .distinct()
            .count()
        )

    # --- pointers by rank, on Spark ----------------------------------------------------------------

    def _assemble(self) -> None:
        if self._entries is not None:
            return
        k = self.task.k
        key = self.task.monoid.spark_key
        ranked = self.ranked()
        look = ranked.select(
            F.col("_f").alias("cf"), F.col("_o").alias("co"), F.col("relation").alias("crel"),
            F.col("args").alias("cargs"), F.col("rank").alias("crank"),
        )

        def kids(entries: DataFrame) -> DataFrame:
            return entries.select("_f", "_o", F.posexplode("_ch").alias("pos", "p")).select(
                "_f", "_o", "pos", F.col("p.f").alias("cf"), F.col("p.o").alias("co"))

        cur = ranked.filter(F.col("rank").isNotNull())
        joined, m = materialize_observed(
            kids(cur).join(look, ["cf", "co"], "left"),
            [F.count_if(F.col("crel").isNull()).alias("lost"), F.count_if(F.col("crank").isNull()).alias("missing")],
        )
        self.frames.append(joined)
        if m["lost"]:
            raise SelpError(f"internal error: {m['lost']} child pointers lead to no entry")
        n_extra = 0
        if m["missing"]:
            # children pushed out of their fact's k best after a parent was built on them: they
            # come back ranked after the k best, with the children they point at in turn
            found: list[DataFrame] = []
            want = joined.filter(F.col("crank").isNull()).select(F.col("cf").alias("_f"), F.col("co").alias("_o")).distinct()
            while True:
                for f in found:
                    want = want.join(f.select("_f", "_o"), ["_f", "_o"], "left_anti")
                want, n = materialize_count(want)
                self.frames.append(want)
                if not n:
                    break
                got, _ = materialize_count(ranked.join(want, ["_f", "_o"], "left_semi"))
                self.frames.append(got)
                found.append(got)
                n_extra += n
                want = kids(got).join(look, ["cf", "co"], "left").filter(F.col("crank").isNull()).select(
                    F.col("cf").alias("_f"), F.col("co").alias("_o")).distinct()
            order = Window.partitionBy("_f", "_g").orderBy(key(F.col("_w")), F.col("_s"), F.col("_o"))
            extras = union_all(found).withColumn("rank", (F.row_number().over(order) + k).cast("int"))
            extras, _ = materialize_count(extras)
            self.frames.append(extras)
            fix = extras.select(F.col("_f").alias("cf"), F.col("_o").alias("co"), F.col("rank").alias("xrank"))
            mine = kids(extras).join(look, ["cf", "co"], "left")
            joined = joined.unionByName(mine).join(fix, ["cf", "co"], "left").withColumn(
                "crank", F.coalesce("crank", "xrank")).drop("xrank")
            cur = cur.unionByName(extras)
        ptrs = joined.groupBy("_f", "_o").agg(F.array_sort(F.collect_list(
            F.struct("pos", F.col("crel").alias("relation"), F.col("cargs").alias("args"), F.col("crank").cast("int").alias("rank"))
        )).alias("_k"))
        out = cur.join(ptrs, ["_f", "_o"], "left").select(
            "relation", "args", F.col("rank").cast("int").alias("rank"),
            F.col("_w").cast(self.task.monoid.spark_type).alias("weight"), F.col("_s").alias("size"),
            F.col("_o").alias("origin"), F.col("_rule").alias("rule"),
            F.coalesce(
                F.transform("_k", lambda c: F.struct(c["relation"].alias("relation"), c["args"].alias("args"), c["rank"].alias("rank"))),
                F.array(),
            ).cast(PTR_RANK).alias("children"),
        )
        out, m = materialize_observed(out, [F.count(F.lit(1)).alias("n")])
        self.frames.append(out)
        self._entries, self._count, self._extra = out, m["n"], n_extra

    # --- pointers by rank, on the driver -----------------------------------------------------------

    def to_dtable(self, facts: list[tuple[str, tuple[Value, ...]]] | None = None) -> DTable:
        """Collect the entries of the answers (``facts``: these facts of P only; None: all) and
        every entry reachable from them through child pointers, as a local :class:`DTable`.

        Pointers are chased a level at a time: each level is one join of the pointed-at facts
        (a broadcast of the small frontier) with the entries, collected to the driver. A fact
        comes with all its k best, so that ranks stay positions in its list; an entry pushed out
        of the k best that some collected entry points at follows them (rank k+1, ...)."""
        task = self.task
        table = task.empty_dtable()
        ranked = self.ranked()
        roots = list(task.roots)
        by_ptr: dict[tuple[int, int], Any] = {}
        by_fact: dict[tuple[str, tuple[str, ...]], list] = {}
        fetched: set[int] = set()

        def take(rows: list, complete: bool) -> None:
            # complete: the rows are every entry of their facts, dropped ones included
            for row in rows:
                p = (row["_f"], row["_o"])
                if p not in by_ptr:
                    by_ptr[p] = row
                    by_fact.setdefault((row["relation"], tuple(row["args"])), []).append(row)
                if complete:
                    fetched.add(row["_f"])

        limit = int(self.spark.conf.get(COLLECT_ROWS_CONF, str(DEFAULT_COLLECT_ROWS)))
        whole = ranked.collect() if self._every_rows + self.part_rows <= limit else None
        if whole is not None:
            take(whole, True)  # every fact is fetched: the chase below runs on the driver
        if facts is None:
            if whole is not None:
                start = [r for r in whole if r["relation"] in roots and r["rank"] is not None]
            else:
                start = ranked.filter(F.col("relation").isin(roots) & F.col("rank").isNotNull()).collect() if roots else []
        else:
            origin = task.inst.relation_origin
            wanted = sorted({
                (root, tuple(encode(v) for v in values))
                for rel, values in facts
                for root in roots
                if origin.get(root, root) == rel and len(task.types[root]) == len(values)
            })
            start = []
            if wanted and whole is not None:
                keys = set(wanted)
                start = [r for r in whole if (r["relation"], tuple(r["args"])) in keys]
            elif wanted:
                schema = StructType([StructField("relation", StringType(), False), StructField("args", ArrayType(StringType()), False)])
                want = self.spark.createDataFrame([(r, list(a)) for r, a in wanted], schema)
                start = self._rows_of(want, ["relation", "args"], facts=wanted)
        take(start, facts is not None)
        needed: set[tuple[int, int]] = set()
        todo = [(r["_f"], r["_o"]) for r in start if r["rank"] is not None]
        while todo:
            missing = sorted({f for f, _ in todo if f not in fetched})
            if missing:
                want = self.spark.createDataFrame([(f,) for f in missing], "_f bigint")
                take(self._rows_of(want, ["_f"], keys=missing), True)
            nxt = []
            for p in todo:
                if p in needed:
                    continue
                row = by_ptr.get(p)
                if row is None:
                    raise SelpError("internal error: a child pointer leads to no entry")
                needed.add(p)
                # a reached fact comes with all its k best
                for other in by_fact[(row["relation"], tuple(row["args"]))]:
                    q = (other["_f"], other["_o"])
                    if other["rank"] is not None and q not in needed:
                        nxt.append(q)
                nxt.extend((c["f"], c["o"]) for c in row["_ch"])
            todo = nxt
        m = task.monoid
        rank_of: dict[tuple[int, int], int] = {}
        lists: dict[tuple[str, tuple[str, ...]], list] = {}
        for fk, rows in by_fact.items():
            live = sorted((r for r in rows if r["rank"] is not None), key=lambda r: r["rank"])
            if not live or [r["rank"] for r in live] != list(range(1, len(live) + 1)):
                if not live and not any((r["_f"], r["_o"]) in needed for r in rows):
                    continue
                if live:
                    raise SelpError(f"internal error: ranks of {fk} are not 1..{len(live)}")
            past = sorted(
                (r for r in rows if r["rank"] is None and (r["_f"], r["_o"]) in needed),
                key=lambda r: (m.key(r["_w"]), r["_s"], r["_o"]),
            )
            if not any((r["_f"], r["_o"]) in needed for r in live + past):
                continue
            ordered = live + past
            for i, r in enumerate(ordered, 1):
                rank_of[(r["_f"], r["_o"])] = i
            lists[fk] = ordered
        for (rel, args), rows in lists.items():
            types = task.types[rel]
            values = tuple(decode(a, t) for a, t in zip(args, types))
            out = []
            for r in rows:
                children = []
                for c in r["_ch"]:
                    child = by_ptr[(c["f"], c["o"])]
                    ct = task.types[child["relation"]]
                    children.append((child["relation"], tuple(decode(a, t) for a, t in zip(child["args"], ct)),
                                     rank_of[(c["f"], c["o"])]))
                out.append(Entry(r["_w"], int(r["_s"]), int(r["_o"]), r["_rule"], tuple(children)))
            table.entries[(rel, values)] = out
        return table

    def save(self, out_dir: str | Path) -> None:
        """Write the DTable as :func:`selp.topk.dtable.save_dtable` does (a local directory with
        ``entries.parquet`` and ``meta.json``), atomically; :func:`load_dtable` reads it back.

        Spark writes the entries as one Parquet file, sorted by fact and rank (the order
        ``load_dtable`` expects); weights are stored as JSON text."""
        if not is_local_path(out_dir):
            raise SelpError(f"a DTable is saved to a local directory, not {out_dir}")
        from selp.outfile import check_dir_target, new_file_mode

        out = check_dir_target(local_path(out_dir))
        out.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
        try:
            ready = staging / "dtable"
            # meta.json (and an empty entries.parquet) exactly as the shared writer makes them
            save_dtable(self.task.empty_dtable(), ready)
            df = self.entries.select(
                "relation", "args", "rank", F.col("weight").cast("string").alias("weight"),
                "size", "origin", "rule", "children",
            )
            spark_dir = staging / "spark"
            df.coalesce(1).sortWithinPartitions("relation", "args", "rank").write.parquet(to_uri(spark_dir))
            parts = sorted(p for p in spark_dir.iterdir() if p.name.startswith("part-") and p.name.endswith(".parquet"))
            if len(parts) > 1:
                raise SelpError(f"internal error: expected one Parquet part file, found {len(parts)}")
            if parts:
                os.chmod(parts[0], new_file_mode())  # Hadoop's own umask is not the user's
                os.replace(parts[0], ready / ENTRIES)
            replace_dir(ready, out)
        finally:
            shutil.rmtree(staging, ignore_errors=True)

    def close(self) -> None:
        """Free what Spark holds for this DTable (the object is unusable afterwards)."""
        for df in self.frames:
            release(df)
        self.frames = []
