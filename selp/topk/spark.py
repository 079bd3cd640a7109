"""The DTable on Spark: the k best derivations of every fact of P_p as a batched fixpoint.

Entries live in DataFrames in the uniform string encoding (:mod:`selp.values`), one frame per
component of P_p (and one for the EDB leaves), with the columns

* ``relation``, ``args`` (array of encoded values): the fact, and ``_f`` a hash of it that leads
  every partitioning, sort and join key (cheap to compare; the exact columns follow it);
* ``_w`` the weight (the monoid's ``spark_type``), ``_s`` the size (bigint), ``_o`` the origin
  hash (bigint: Spark's ``xxhash64``), ``_rule`` the P_p rule (null for an EDB leaf);
* ``_ch`` the children as ``(relation, args, origin)``: pointers by *origin* while evaluating,
  because ranks move when better entries arrive; they become ranks only at the end;
* ``_rank`` (1..k; null for an entry pushed out of the k best, see below) and ``_fresh`` (1 for
  an entry admitted in the last round).

EDB facts are rank-1 leaves. The components are evaluated in order (consecutive non-recursive
ones that do not read each other together), semi-naively: a round joins every rule body with the
entries (one variant per recursive body atom, reading only the entries admitted last round, so
each combination of child entries is formed once its newest member exists), unions the
candidates with the current entries, keeps one entry per (fact, origin) -- the existing one if
any, so re-deriving a known tree is no change -- and ranks each fact's entries by (key(weight),
size, origin), keeping the k best. A fact's list only improves, and a tree grows with every
non-copy step, so the rounds stop; each round is one materialisation (lineage cut), whose counts
come from an :class:`~pyspark.sql.Observation` rather than a job of their own.

Rules are compiled by :mod:`selp.engines.spark_compile` (comparisons, negation and Skolem heads
behave exactly as in the Spark engine) in an *extended* form: each positive atom ``R(t..)``
becomes ``@entry:R(t.., @e<i>)`` over the entries of ``R``, ``@e<i>`` being a struct of the
entry's weight, size, origin and args, and the head carries the ``@e<i>`` along. The compiled
plan yields every combination of child entries, and the entry columns are native expressions
(no Python per row).

Entries pushed out of their fact's k best stay in the frame with a null rank: an entry built on
one may outlive it (the child lost a tie broken on the origin hash, or a better weight that does
not make the parent better, as with ``min``). At the end, pointers are turned into ranks with a
join; a child no longer among its fact's k best is added back after them, with rank k+1, k+2, ...
(:attr:`SparkDTable.extra_entries`), so every pointer of the result leads to an entry.
"""

from __future__ import annotations

import itertools
import os
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from functools import reduce
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

from selp.engines.spark_compile import (
    UNIT,
    Sources,
    compile_rule,
    empty_frame,
    materialize_count,
    rel_columns,
    release,
    union_all,
)
from selp.engines.spark_load import SparkDatabase, is_local_path, load_spark_database, local_path, to_uri
from selp.errors import SelpError
from selp.language.ast import Atom, Rule, Var
from selp.language.validate import Component
from selp.topk.dtable import ENTRIES, DTable, Entry, save_dtable
from selp.topk.monoid import ACCESS_LEVELS, BUILTIN, Monoid
from selp.topk.task import Task
from selp.values import Value, decode, encode

# progress(round, entries changed in the round, entries in total)
Progress = Callable[[int, int, int], None]

DEFAULT_MAX_ROUNDS = 10_000
BROADCAST_ROWS_CONF = "spark.selp.broadcastRows"
DEFAULT_BROADCAST_ROWS = 200_000

# Names no user relation or variable can have ('@' is not allowed in variables, ':' nowhere).
_ENTRY = "@entry:"
# tables smaller than this are re-ranked whole each round (cheaper than isolating the facts
# the round touches, which costs a job of its own)
_RERANK_ALL_BELOW = 20_000
# below this many entries in all, a round ranks its entries in a single partition
_SMALL = 20_000

# the columns that identify a fact in the entry frames (see _fact_hash)
_FACT = ["_f", "relation", "args"]

# the children while evaluating (pointers by origin) and in the result (pointers by rank)
_PTR_ORIGIN = ArrayType(StructType([
    StructField("relation", StringType()), StructField("args", ArrayType(StringType())), StructField("origin", LongType()),
]))
_PTR_RANK = ArrayType(StructType([
    StructField("relation", StringType()), StructField("args", ArrayType(StringType())), StructField("rank", IntegerType()),
]))

# A _weight cell that these read as a decimal number is parsed natively; any other text is
# parsed by the monoid in Python (it decides what is valid and words the error).
_DECIMAL_RE = r"\A[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?\z"
_MAX_PYTHON_WEIGHTS = 100_000


_OBSERVATIONS = itertools.count()


def _fact_cols(arity: int) -> list[str]:
    return [f"c{i}" for i in range(arity)]


def _args_array(arity: int) -> Column:
    if not arity:
        return F.array().cast(ArrayType(StringType()))
    return F.array(*[F.col(c) for c in _fact_cols(arity)])


def _fact_hash(relation: Column, args: Column) -> Column:
    """A 64-bit hash of a fact, put before ``relation, args`` in partitioning, sort and join
    keys: sorting compares it first (cheap), and the exact columns after it keep facts apart."""
    return F.xxhash64(relation, args)


def _sql_string(text: str) -> str:
    """A SQL string literal."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _materialize_observed(
    df: DataFrame, metrics: list[Column], project: list[Column] | None = None
) -> tuple[DataFrame, dict[str, Any]]:
    """Compute ``df`` (then the columns ``project``) once, cut its lineage, and return the
    aggregate ``metrics`` of ``df`` gathered meanwhile (an :class:`Observation`: no job of their
    own)."""
    obs = Observation(f"selp_topk_{next(_OBSERVATIONS)}")  # names must be unique in a plan
    observed = df.observe(obs, *metrics)
    if project is not None:
        observed = observed.select(*project)
    if df.sparkSession.sparkContext.getCheckpointDir() is not None:
        out = observed.checkpoint(eager=True)
    else:
        out = observed.localCheckpoint(eager=True)
    return out, obs.get


def _materialize(df: DataFrame) -> DataFrame:
    """Cut the lineage of ``df`` (computed by the next job that reads it), as the Spark engine
    does: a reliable checkpoint when a checkpoint directory is set, else a local one."""
    if df.sparkSession.sparkContext.getCheckpointDir() is not None:
        return df.checkpoint(eager=True)
    return df.localCheckpoint(eager=False)


class _Weights:
    """The monoid's weights as Spark columns."""

    def __init__(self, monoid: Monoid) -> None:
        self.monoid = monoid
        self.type = monoid.spark_type
        self.combine = monoid.spark_combine
        self.key = monoid.spark_key

    def lit(self, w: Any) -> Column:
        return F.lit(w).cast(self.type)

    def native(self, raw: Column) -> tuple[Column, Column] | None:
        """(weight, is valid) for a built-in monoid; None: parse every cell in Python."""
        name = self.monoid.name
        if BUILTIN.get(name) is not self.monoid:
            return None
        decimal = raw.rlike(_DECIMAL_RE)
        x = raw.try_cast("double")
        if name in ("confidence", "min-confidence"):
            return x, decimal & (x >= 0.0) & (x <= 1.0)
        if name == "cost":
            return x, decimal & (x >= 0.0) & (x < float("inf"))
        if name == "access":
            up = F.upper(raw)
            level = reduce(lambda c, i: c.when(up == ACCESS_LEVELS[i], F.lit(i)), range(1, len(ACCESS_LEVELS)),
                           F.when(up == ACCESS_LEVELS[0], F.lit(0)))
            return level.cast(self.type), (F.length(raw) == 1) & up.isin(*ACCESS_LEVELS)
        return None


@dataclass
class _Home:
    """A materialised frame holding the entries of some relations (a component, or the leaves)."""

    frame: DataFrame
    live: dict[str, int] = field(default_factory=dict)  # relation -> entries ranked 1..k
    fresh: dict[str, int] = field(default_factory=dict)  # relation -> entries new in the last round
    rows: int = 0  # all rows, entries pushed out of the k best included


class _Engine:
    def __init__(self, task: Task, db: SparkDatabase, spark: SparkSession, progress: Progress | None,
                 max_rounds: int, broadcast_rows: int) -> None:
        self.task = task
        self.db = db
        self.spark = spark
        self.progress = progress
        self.max_rounds = max_rounds
        self.broadcast_rows = broadcast_rows
        self.k = task.k
        self.wt = _Weights(task.monoid)
        self.analysis = task.inst_analysis
        self.arity = dict(self.analysis.arities)
        self.homes: list[_Home] = []
        self.home: dict[str, _Home] = {}  # relation -> where its entries are (absent: none yet)
        self.rounds = 0
        self.total = 0
        self.owned: list[DataFrame] = []  # other materialised frames, freed at the end
        self._frames: dict[tuple[str, str], DataFrame] = {}  # input frames of this round
        self._entry_cols: dict[str, list[Column]] = {}  # per rule: the columns of its entries
        self._ranking = self._ranking_columns()
        self._counts: dict[tuple[str, ...], list[Column]] = {}
        self.types: dict[str, tuple[str, ...]] = {}
        for rel in self.arity:
            t = task.types[rel]
            self.types[rel] = t
            self.types[_ENTRY + rel] = tuple(t) + ("str",)

    # --- frames read by compiled rules -----------------------------------------------------------

    def _frame(self, name: str, source: str) -> DataFrame:
        # the same inputs are read by many plans of a round; building a frame costs round trips
        # to the JVM, so each is built once per round (the cache is emptied when tables change)
        key = (name, source)
        if key not in self._frames:
            self._frames[key] = self._make_frame(name, source)
        return self._frames[key]

    def _make_frame(self, name: str, source: str) -> DataFrame:
        if name.startswith(_ENTRY):
            rel = name[len(_ENTRY):]
            n = self.arity[rel]
            cond = f"relation = {_sql_string(rel)} AND _rank IS NOT NULL" + (" AND _fresh = 1" if source == "delta" else "")
            return self.home[rel].frame.filter(cond).selectExpr(
                *[f"args[{i}] AS c{i}" for i in range(n)],
                f"named_struct('w', _w, 's', _s, 'o', _o, 'a', args) AS c{n}",
            )
        # a negated atom reads facts: a fact exists iff it has an entry
        n = self.arity[name]
        if name in self.analysis.edb:
            return self.db.frames[name] if name in self.db.frames else empty_frame(self.spark, n)
        if name not in self.home:
            return empty_frame(self.spark, n)
        facts = self.home[name].frame.filter(f"relation = {_sql_string(name)} AND _rank = 1")
        if not n:
            return facts.selectExpr(f"'' AS {UNIT}")
        return facts.selectExpr(*[f"args[{i}] AS c{i}" for i in range(n)])

    def _size(self, name: str, source: str) -> int | None:
        if name.startswith(_ENTRY):
            home = self.home.get(name[len(_ENTRY):])
            if home is None:
                return 0
            return (home.fresh if source == "delta" else home.live).get(name[len(_ENTRY):], 0)
        if name in self.analysis.edb:
            return self.db.sizes.get(name, 0)
        home = self.home.get(name)
        return 0 if home is None else home.live.get(name, 0)  # entries: at least the facts

    def sources(self) -> Sources:
        return Sources(self._frame, self._size, self.types, self.broadcast_rows)

    # --- EDB leaves ------------------------------------------------------------------------------

    def leaves(self) -> None:
        """Give every EDB fact of P_p its rank-1 leaf entry (one materialised frame for all)."""
        parts = []
        sizes = {}
        for rel in sorted(self.analysis.edb):
            n = self.arity[rel]
            facts = self.db.frames.get(rel)
            if facts is None or not self.db.sizes.get(rel):
                continue
            sizes[rel] = self.db.sizes[rel]
            keys = rel_columns(n)
            w = self._fact_weights(rel, n)
            if w is not None:
                facts = facts.join(F.broadcast(w) if sizes[rel] <= self.broadcast_rows else w, on=keys, how="left")
                weight = F.coalesce(F.col("_pw"), self.wt.lit(self.task.monoid.one))
            else:
                over = self.task.monoid.fact_weight_override
                weight = self.wt.lit(self.task.monoid.one if over is None else over)
            origin_rel = self.task.inst.relation_origin.get(rel, rel)
            parts.append(facts.select(
                _fact_hash(F.lit(rel), _args_array(n)).alias("_f"),
                F.lit(rel).alias("relation"),
                _args_array(n).alias("args"),
                weight.alias("_w"),
                F.lit(0).cast("bigint").alias("_s"),
                F.xxhash64(F.lit("L"), F.lit(origin_rel), *[F.col(c) for c in _fact_cols(n)]).alias("_o"),
                F.lit(None).cast("string").alias("_rule"),
                F.array().cast(_PTR_ORIGIN).alias("_ch"),
                F.lit(1).alias("_rank"),
                F.lit(0).alias("_fresh"),
            ))
            self.total += sizes[rel]
        if not parts:
            return
        home = _Home(_materialize(union_all(parts)), sizes, {})
        self.homes.append(home)
        for rel in sizes:
            self.home[rel] = home

    def _fact_weights(self, rel: str, n: int) -> DataFrame | None:
        """(fact columns, ``_pw``) for the facts with a ``_weight`` cell, parsed; None if none."""
        monoid = self.task.monoid
        raw_df = self.db.weights.get(rel)
        if raw_df is None or monoid.fact_weight_override is not None:
            return None
        keys = rel_columns(n)
        # the last cell wins when a fact is weighted twice, as in selp.database (file order,
        # then inline facts: the order of the union the loader built)
        raw_df = (
            raw_df.withColumn("_seq", F.monotonically_increasing_id())
            .groupBy(*keys)
            .agg(F.max_by(F.col("_weight"), F.col("_seq")).alias("_raw"))
        )
        raw_df = _materialize(raw_df)
        self.owned.append(raw_df)
        raw = F.col("_raw")
        native = self.wt.native(raw)
        if native is None:
            parsed, valid = F.lit(None).cast(self.wt.type), F.lit(False)
        else:
            parsed, valid = native
        # cells the native parse does not take: distinct texts, each with one example fact
        odd = (
            raw_df.filter(~valid)
            .groupBy(raw)
            .agg(*[F.first(F.col(c)).alias(c) for c in keys])
            .limit(_MAX_PYTHON_WEIGHTS + 1)
            .collect()
        )
        if len(odd) > _MAX_PYTHON_WEIGHTS:
            raise SelpError(f"relation {rel}: more than {_MAX_PYTHON_WEIGHTS} distinct weights the monoid "
                            f"{monoid.name} must parse in Python; use a built-in monoid or --engine local")
        out = raw_df.select(*keys, parsed.alias("_pw"), valid.alias("_ok"), raw)
        if not odd:
            return out.select(*keys, "_pw")
        types = self.task.types[rel]
        mapping = []
        for row in odd:
            fact = tuple(decode(row[c], t) for c, t in zip(_fact_cols(n), types))
            mapping.append((row["_raw"], monoid.fact_weight(row["_raw"], f"{rel}{fact}")))
        schema = StructType([StructField("_raw", StringType(), False), StructField("_mw", self._spark_type(), True)])
        mdf = self.spark.createDataFrame(mapping, schema)
        out = out.join(F.broadcast(mdf), on="_raw", how="left")
        return out.select(*keys, F.when(F.col("_ok"), F.col("_pw")).otherwise(F.col("_mw")).alias("_pw"))

    def _spark_type(self) -> DataType:
        return DataType.fromDDL(self.wt.type)

    # --- rules -----------------------------------------------------------------------------------

    def extend(self, rule: Rule) -> tuple[Rule, list[tuple[int, str]]]:
        """The rule over entry frames, and its positive atoms (body index, relation) in order."""
        body = []
        positives = []
        extra_head: list[Var] = []
        for i, b in enumerate(rule.body):
            if isinstance(b, Atom) and not b.negated:
                extra = Var(f"@e{i}")
                body.append(Atom(_ENTRY + b.relation, tuple(b.args) + (extra,), False, b.loc))
                positives.append((i, b.relation))
                extra_head.append(extra)
            else:
                body.append(b)
        head = Atom(rule.head.relation, tuple(rule.head.args) + tuple(extra_head), False, rule.head.loc)
        return Rule(rule.name, head, tuple(body), rule.weight, rule.named, rule.loc), positives

    def candidates(self, rule: Rule, ext: Rule, positives: list[tuple[int, str]], delta_atom: int | None,
                   src: Sources) -> DataFrame | None:
        """The new entries of ``rule``'s head over the tables (``delta_atom`` reads the delta)."""
        plan = compile_rule(self.spark, ext, delta_atom, src)
        if plan is None:
            return None
        if rule.name not in self._entry_cols:  # columns are reusable: build them once per rule
            self._entry_cols[rule.name] = self._entry_columns(rule, positives)
        return plan.select(*self._entry_cols[rule.name])

    def _entry_columns(self, rule: Rule, positives: list[tuple[int, str]]) -> list[Column]:
        """The entry columns of a compiled extended rule's output (see :meth:`extend`)."""
        h = rule.head.arity
        name = rule.name
        m = len(positives)

        def col(j: int, x: str) -> Column:
            return F.col(f"c{h + j}.{x}")

        weight = reduce(self.wt.combine, [col(j, "w") for j in range(m)], self.wt.lit(self.task.rule_weight[name]))
        size = reduce(lambda a, b: a + b, [col(j, "s") for j in range(m)], F.lit(self.task.rule_size[name]).cast("bigint"))
        if self.task.rule_size[name] == 0:
            if m != 1:
                raise SelpError(f"rule {name}: a copy step needs exactly one positive body atom, it has {m}")
            origin = col(0, "o")  # a copy step stands for its child's tree
        else:
            origin = F.xxhash64(F.lit("N"), F.lit(self.task.inst.rule_origin[name]), *[col(j, "o") for j in range(m)])
        if m:
            children = F.array(*[
                F.struct(F.lit(rel).alias("relation"), col(j, "a").alias("args"), col(j, "o").alias("origin"))
                for j, (_, rel) in enumerate(positives)
            ]).cast(_PTR_ORIGIN)
        else:
            children = F.array().cast(_PTR_ORIGIN)
        return [
            _fact_hash(F.lit(rule.head.relation), _args_array(h)).alias("_f"),
            F.lit(rule.head.relation).alias("relation"),
            _args_array(h).alias("args"),
            weight.cast(self.wt.type).alias("_w"),
            size.alias("_s"),
            origin.alias("_o"),
            F.lit(name).alias("_rule"),
            children.alias("_ch"),
        ]

    # --- merging candidates into a component's entries -------------------------------------------

    _COLS = ["_f", "relation", "args", "_w", "_s", "_o", "_rule", "_ch"]

    def _rank(self, u: DataFrame) -> DataFrame:
        """Rank entries and candidates (``_fresh`` 1) per fact: one entry per origin, the k best
        ranked 1..k; entries that drop out are kept with a null rank, candidates that do not
        make it are discarded."""
        c = self._ranking
        u = u.withColumn("_prev", c["prev"]).filter(c["first"]).withColumn("_n", c["n"])
        return u.select(*c["cols"]).filter(c["keep"])

    def _ranking_columns(self) -> dict[str, Any]:
        """The columns of :meth:`_rank`, built once (each costs round trips to the JVM)."""
        fact = [F.col(c) for c in _FACT]
        key = self.wt.key(F.col("_w"))
        # one shuffle: both windows partition by the fact. The first keeps one entry per origin
        # (an old one if any, so that re-deriving a known tree is no change), the second ranks.
        by_origin = Window.partitionBy(*fact).orderBy("_o", "_fresh", key, "_s", "_rule")
        by_rank = Window.partitionBy(*fact).orderBy(key, F.col("_s"), F.col("_o"))
        return {
            "prev": F.lag("_o").over(by_origin),
            "first": F.col("_prev").isNull() | (F.col("_prev") != F.col("_o")),
            "n": F.row_number().over(by_rank),
            "cols": [*self._COLS, F.when(F.col("_n") <= self.k, F.col("_n").cast("int")).alias("_rank"), "_fresh"],
            "keep": F.col("_rank").isNotNull() | (F.col("_fresh") == 0),
            "cand": [*self._COLS, F.lit(None).cast("int").alias("_rank"), F.lit(1).alias("_fresh")],
            "old": [*self._COLS, "_rank", F.lit(0).alias("_fresh")],
            "live": F.col("_rank").isNotNull(),
            "dropped": F.col("_rank").isNull(),
        }

    def merge(self, members: list[str], old: _Home | None, plans: list[DataFrame]) -> _Home:
        """The component's entries after a round (see :meth:`_rank`), materialised, with counts.

        Rows with a null ``_rank`` are entries that were pushed out of their fact's k best: they
        are kept, unranked (an entry may point at one: see the module docstring), and pass
        through later rounds untouched. A candidate with the origin of such an entry cannot
        enter the k best again (k better entries are there), so they take no part in ranking."""
        c = self._ranking
        cand = union_all(plans).select(*c["cand"])
        materialized = None
        parts = max(1, int(self.spark.conf.get("spark.sql.shuffle.partitions", "4")))
        if old is None:
            live = dropped = None
            u = cand
        else:
            live = old.frame.filter(c["live"]).select(*c["old"])
            dropped = old.frame.filter(c["dropped"]).select(*c["old"])
            u = live.unionByName(cand)
        if self.total + (0 if old is None else old.rows) < _SMALL:
            # everything is small: rank in one partition, which needs no shuffle (a shuffle is
            # a job of its own, and jobs, not data, are what small inputs cost)
            new = self._rank(u.coalesce(1))
        elif old is None or old.rows < _RERANK_ALL_BELOW or 4 * sum(old.fresh.values()) > old.rows:
            # no table yet, a small one, or a round after one that changed much of it (so this
            # one will touch much of it too): re-rank it whole
            new = self._rank(u)
        else:
            # Late rounds bring few candidates: re-rank only the facts they touch, streaming
            # the rest of the table past a broadcast of those facts instead of shuffling it.
            materialized, n = materialize_count(cand)
            if n <= self.broadcast_rows and 4 * n <= old.rows:
                touched = F.broadcast(materialized.select(*_FACT))
                keep = live.join(touched, on=_FACT, how="left_anti")
                redo = live.join(touched, on=_FACT, how="left_semi")
                new = keep.unionByName(self._rank(redo.unionByName(materialized)))
            else:
                # most facts are touched: shuffling the table is cheaper than a broadcast
                new = self._rank(live.unionByName(materialized))
        if dropped is not None:
            # a union concatenates partitions: merge them back, or they pile up round by round
            new = new.unionByName(dropped).coalesce(parts)
        new, counts = _materialize_observed(new, self._count_columns(members))
        if materialized is not None:
            release(materialized)  # read by the job above, which materialised the new table
        return _Home(
            new,
            {rel: counts[f"live{i}"] for i, rel in enumerate(members)},
            {rel: counts[f"fresh{i}"] for i, rel in enumerate(members) if counts[f"fresh{i}"]},
            counts["rows"],
        )

    def _count_columns(self, members: list[str]) -> list[Column]:
        """Per relation of a component: entries ranked 1..k, and those new in the round."""
        key = tuple(members)
        if key not in self._counts:
            live = F.col("_rank").isNotNull()
            cols = [F.count(F.lit(1)).alias("rows")]
            for i, rel in enumerate(members):
                mine = live & (F.col("relation") == rel)
                cols.append(F.count_if(mine).alias(f"live{i}"))
                cols.append(F.count_if(mine & (F.col("_fresh") == 1)).alias(f"fresh{i}"))
            self._counts[key] = cols
        return self._counts[key]

    def component(self, batch: list[Component]) -> None:
        """Evaluate a group of components that do not read each other (see :func:`_batches`),
        at most one of them recursive, together: rounds, not data, dominate small inputs."""
        members = {rel for comp in batch for rel in comp.relations}
        compiled = [(r, *self.extend(r)) for comp in batch for r in comp.rules]
        # only a recursive member's rules read the group's relations: they are the variants
        variants = [
            (rule, ext, positives, i)
            for rule, ext, positives in compiled
            for i, r in positives
            if r in members
        ]
        src = self.sources()
        plans = [p for rule, ext, positives in compiled
                 if (p := self.candidates(rule, ext, positives, None, src)) is not None]
        home: _Home | None = None
        rounds = 0
        while plans:
            rounds += 1
            if rounds > self.max_rounds:
                raise SelpError(
                    f"top-k evaluation of {', '.join(sorted(members))} did not converge in {self.max_rounds} rounds"
                )
            self.rounds += 1
            old = home
            home = self.merge(sorted(members), old, plans)
            if old is None:
                self.homes.append(home)
            else:
                self.homes = [home if h is old else h for h in self.homes]
                release(old.frame)  # every plan reading it ran in the merge
            for rel in members:
                self.home[rel] = home
            self._frames = {}
            changed = sum(home.fresh.values())
            self.total += sum(home.live.values()) - (0 if old is None else sum(old.live.values()))
            if self.progress:
                self.progress(self.rounds, changed, self.total)
            if changed == 0 or not variants:
                break
            src = self.sources()
            plans = [p for rule, ext, positives, i in variants
                     if (p := self.candidates(rule, ext, positives, i, src)) is not None]
        if home is not None:
            home.fresh = {}

    # --- the result ------------------------------------------------------------------------------

    def _kid_rows(self, entries: DataFrame) -> DataFrame:
        """One row per IDB child of each entry: the entry's key, the child's position and its
        (relation, args, origin). EDB children need no row: a leaf is always its fact's rank 1."""
        edb = sorted(self.analysis.edb)
        kids = entries.filter(F.exists("_ch", lambda c: ~c["relation"].isin(edb)) if edb else F.size("_ch") > 0)
        kids = kids.select(*_FACT, "_rank", F.posexplode("_ch").alias("pos", "p"))
        if edb:
            kids = kids.filter(~F.col("p.relation").isin(edb))
        return kids.select(
            *_FACT, "_rank", "pos",
            _fact_hash(F.col("p.relation"), F.col("p.args")).alias("cf"),
            F.col("p.relation").alias("crel"), F.col("p.args").alias("cargs"), F.col("p.origin").alias("corigin"),
        )

    @staticmethod
    def _lookup(entries: DataFrame) -> DataFrame:
        return entries.select(
            F.col("_f").alias("cf"), F.col("relation").alias("crel"), F.col("args").alias("cargs"),
            F.col("_o").alias("corigin"), F.col("_rank").alias("crank"),
        )

    def assemble(self) -> tuple[DataFrame, int, int]:
        """(entries with pointers by rank, their number, how many are children kept past rank k)."""
        if not self.homes:
            return self.spark.createDataFrame([], entries_schema(self._spark_type())), 0, 0
        every = union_all([h.frame for h in self.homes])
        cur = every.filter(F.col("_rank").isNotNull())
        ptr = ["cf", "crel", "cargs", "corigin"]
        # the rank of every IDB child: one join of the pointers with the entries
        joined = self._kid_rows(cur).join(self._lookup(cur), on=ptr, how="left")
        joined, m = _materialize_observed(joined, [F.count_if(F.col("crank").isNull()).alias("missing")])
        self.owned.append(joined)
        n_extra = 0
        if m["missing"]:
            extras, n_extra = self._bring_back(every, cur, joined)
            fix = self._lookup(extras).withColumnRenamed("crank", "xrank")
            joined = joined.join(self._small(fix, n_extra), on=ptr, how="left").select(
                *_FACT, "_rank", "pos", *ptr, F.coalesce("crank", "xrank").alias("crank")
            )
            # the extras' own children, among the entries and the extras
            mine = self._kid_rows(extras).join(self._lookup(cur.unionByName(extras)), on=ptr, how="left")
            joined = joined.unionByName(mine)
            cur = cur.unionByName(extras)
        ranks = joined.groupBy(*_FACT, "_rank").agg(
            F.map_from_entries(F.collect_list(F.struct("pos", "crank"))).alias("_kr")
        )
        edb = sorted(self.analysis.edb)

        def pointer(c: Column, i: Column) -> Column:
            rank = F.element_at(F.col("_kr"), i)
            if edb:
                rank = F.when(c["relation"].isin(edb), F.lit(1)).otherwise(rank)
            return F.struct(c["relation"].alias("relation"), c["args"].alias("args"), rank.cast("int").alias("rank"))

        out = cur.join(ranks, on=[*_FACT, "_rank"], how="left")
        children = F.transform("_ch", pointer).cast(_PTR_RANK)
        out, m = _materialize_observed(
            out.withColumn("_kids", children),
            [F.count(F.lit(1)).alias("n"), F.count_if(F.exists("_kids", lambda c: c["rank"].isNull())).alias("bad")],
            [
                "relation", "args",
                F.col("_rank").cast("int").alias("rank"),
                F.col("_w").cast(self.wt.type).alias("weight"),
                F.col("_s").cast("bigint").alias("size"),
                F.col("_o").alias("origin"),
                F.col("_rule").alias("rule"),
                F.col("_kids").alias("children"),
            ],
        )
        if m["bad"]:
            raise SelpError(f"internal error: {m['bad']} entries point at missing children")
        return out, m["n"], n_extra

    def _max_body(self) -> int:
        """The most positive body atoms of a rule of P_p (children per entry)."""
        return max((len(r.positive_atoms) for r in self.analysis.program.rules), default=1)

    def _small(self, df: DataFrame, rows: int) -> DataFrame:
        return F.broadcast(df) if rows <= self.broadcast_rows else df

    def _bring_back(self, every: DataFrame, cur: DataFrame, joined: DataFrame) -> tuple[DataFrame, int]:
        """Children that left their fact's k best after a parent was built on them, back from
        the archive (and, in turn, the children they point at), ranked after the k best."""
        keys = ["relation", "args", "_o"]
        archive = every.filter(F.col("_rank").isNull()).drop("_rank")
        missing, n_missing = materialize_count(
            joined.filter(F.col("crank").isNull())
            .select(F.col("crel").alias("relation"), F.col("cargs").alias("args"), F.col("corigin").alias("_o"))
            .distinct()
        )
        self.owned.append(missing)
        found_all: list[DataFrame] = []
        n_extra = 0
        while n_missing:
            found, n_found = materialize_count(
                archive.join(self._small(missing, n_missing), on=keys, how="left_semi").dropDuplicates(keys)
            )
            self.owned.append(found)
            if n_found != n_missing:
                raise SelpError(f"internal error: {n_missing - n_found} child entries are missing from the archive")
            found_all.append(found)
            n_extra += n_found
            ptrs = (
                self._kid_rows(found.withColumn("_rank", F.lit(0)))
                .select(F.col("crel").alias("relation"), F.col("cargs").alias("args"), F.col("corigin").alias("_o"))
                .distinct()
            )
            # children of these that are neither entries nor brought back already
            live = cur.select(*keys).join(self._small(ptrs, n_found * self._max_body()), on=keys, how="left_semi")
            missing = ptrs.join(live, on=keys, how="left_anti")
            for f in found_all:
                missing = missing.join(f.select(*keys), on=keys, how="left_anti")
            missing, n_missing = materialize_count(missing)
            self.owned.append(missing)
        order = Window.partitionBy("relation", "args").orderBy(self.wt.key(F.col("_w")), F.col("_s"), F.col("_o"))
        ranked = union_all(found_all).withColumn("_rank", (F.row_number().over(order) + self.k).cast("int"))
        ranked, _ = materialize_count(ranked)
        self.owned.append(ranked)
        return ranked, n_extra

    def release_all(self) -> None:
        """Free every materialised frame but the result."""
        for home in self.homes:
            release(home.frame)
        self.homes, self.home = [], {}
        for df in self.owned:
            release(df)
        self.owned = []


def _batches(components: tuple[Component, ...]) -> list[list[Component]]:
    """The components in evaluation order, grouped: a component joins the group before it when
    it reads none of the group's relations (positively or negated) and the group would not hold
    two recursive components. A group is as good as its components one after the other -- what
    they read is complete before it -- and costs fewer rounds: a non-recursive member is done in
    the group's first round."""
    out: list[list[Component]] = []
    for comp in components:
        last = out[-1] if out else None
        if last is not None and not (comp.recursive and any(c.recursive for c in last)):
            written = {rel for c in last for rel in c.relations}
            read = {b.relation for r in comp.rules for b in r.body if isinstance(b, Atom)}
            if not read & written:
                last.append(comp)
                continue
        out.append([comp])
    return out


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
        StructField("children", _PTR_RANK, False),
    ])


@dataclass
class SparkDTable:
    """The DTable of a task as a distributed DataFrame, with ways to collect or save it."""

    task: Task = field(repr=False)
    spark: SparkSession = field(repr=False)
    # relation, args, rank, weight, size, origin, rule, children (pointers by rank); one row per
    # entry of every fact of P_p (EDB leaves included), plus the kept children past rank k
    entries: DataFrame = field(repr=False)
    rounds: int = 0
    seconds: float = 0.0  # the fixpoint and the result, without loading
    load_seconds: float = 0.0
    fixpoint_seconds: float = 0.0  # of seconds: the rounds (the rest turns pointers into ranks)
    extra_entries: int = 0  # entries past rank k, kept because entries point at them
    warnings: list[str] = field(default_factory=list)
    _count: int = field(default=0, repr=False)

    def count(self) -> int:
        """The number of entries (rows of :attr:`entries`)."""
        return self._count

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
            self.entries.filter(F.col("relation").isin(roots))
            .select(self._origin_relation().alias("r"), F.col("args"))
            .distinct()
            .count()
        )

    def to_dtable(self, facts: list[tuple[str, tuple[Value, ...]]] | None = None) -> DTable:
        """Collect the entries of the answers (``facts``: these facts of P only; None: all) and
        every entry reachable from them through child pointers, as a local :class:`DTable`.

        Pointers are chased a level at a time: each level is one join of the pointed-at facts
        (a broadcast of the small frontier) with the entries, collected to the driver; a fact
        comes with all its entries, so that ranks stay positions in its list."""
        task = self.task
        table = task.empty_dtable()
        ent = self.entries
        roots = list(task.roots)
        ptr_schema = StructType([
            StructField("relation", StringType(), False), StructField("args", ArrayType(StringType()), False),
        ])
        if facts is None:
            front = ent.filter(F.col("relation").isin(roots)) if roots else None
        else:
            origin = task.inst.relation_origin
            wanted = {
                (root, tuple(encode(v) for v in values))
                for rel, values in facts
                for root in roots
                if origin.get(root, root) == rel and len(task.types[root]) == len(values)
            }
            front = self._facts_frame(wanted, ptr_schema)
        seen: set[tuple[str, tuple[str, ...]]] = set()
        rows_by_fact: dict[tuple[str, tuple[str, ...]], list] = {}
        while front is not None:
            rows = front.collect()
            for row in rows:
                fk = (row["relation"], tuple(row["args"]))
                seen.add(fk)
                rows_by_fact.setdefault(fk, []).append(row)
            nxt = {
                (c["relation"], tuple(c["args"])) for row in rows for c in row["children"]
            } - seen
            front = self._facts_frame(nxt, ptr_schema)
        for (rel, args), rows in rows_by_fact.items():
            types = task.types[rel]
            values = tuple(decode(a, t) for a, t in zip(args, types))
            rows.sort(key=lambda r: r["rank"])
            if [r["rank"] for r in rows] != list(range(1, len(rows) + 1)):
                raise SelpError(f"internal error: ranks of {rel}{values} are not 1..{len(rows)}")
            table.entries[(rel, values)] = [
                Entry(
                    r["weight"], int(r["size"]), int(r["origin"]), r["rule"],
                    tuple(
                        (c["relation"], tuple(decode(a, t) for a, t in zip(c["args"], task.types[c["relation"]])), int(c["rank"]))
                        for c in r["children"]
                    ),
                )
                for r in rows
            ]
        return table

    def _facts_frame(self, facts: set[tuple[str, tuple[str, ...]]], schema: StructType) -> DataFrame | None:
        """The entries of these (relation, encoded args) facts, or None when there are none."""
        if not facts:
            return None
        want = self.spark.createDataFrame([(r, list(a)) for r, a in sorted(facts)], schema)
        return self.entries.join(F.broadcast(want), on=["relation", "args"], how="left_semi")

    def save(self, out_dir: str | Path) -> None:
        """Write the DTable as :func:`selp.topk.dtable.save_dtable` does (a local directory with
        ``entries.parquet`` and ``meta.json``), atomically; :func:`load_dtable` reads it back.

        Spark writes the entries as one Parquet file, sorted by fact and rank (the order
        ``load_dtable`` expects); weights are stored as JSON text."""
        if not is_local_path(out_dir):
            raise SelpError(f"a DTable is saved to a local directory, not {out_dir}")
        out = local_path(out_dir)
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
                os.replace(parts[0], ready / ENTRIES)
            if out.exists():
                old = out.with_name(f".{out.name}.old-{os.getpid()}")
                os.replace(out, old)
                os.replace(ready, out)
                shutil.rmtree(old, ignore_errors=True)
            else:
                os.replace(ready, out)
        finally:
            shutil.rmtree(staging, ignore_errors=True)

    def close(self) -> None:
        """Free the entries held by Spark (the object is unusable afterwards)."""
        release(self.entries)


def _broadcast_rows(spark: SparkSession, given: int | None) -> int:
    if given is not None:
        return given
    return int(spark.conf.get(BROADCAST_ROWS_CONF, str(DEFAULT_BROADCAST_ROWS)))


def run_topk_spark(
    task: Task,
    db_dir: str | Path | None,
    spark: SparkSession,
    progress: Progress | None = None,
    max_rounds: int = DEFAULT_MAX_ROUNDS,
    broadcast_rows: int | None = None,
) -> SparkDTable:
    """Fill the DTable of ``task`` over the EDB in ``db_dir`` with Spark.

    ``progress(round, entries changed, entries in total)`` is called after every round (rounds
    are numbered across the components of P_p). A component still changing after ``max_rounds``
    rounds raises :class:`SelpError`. Inputs of at most ``broadcast_rows`` rows (default: the
    ``spark.selp.broadcastRows`` setting, else 200000) are broadcast in joins.
    """
    monoid = task.monoid
    if not monoid.on_spark:
        raise SelpError(f"monoid {monoid.name} has no Spark column expressions; use --engine local")
    t0 = time.perf_counter()
    db = load_spark_database(task.analysis, db_dir, spark)
    load_seconds = time.perf_counter() - t0
    t1 = time.perf_counter()
    engine = _Engine(task, db, spark, progress, max_rounds, _broadcast_rows(spark, broadcast_rows))
    try:
        engine.leaves()
        for batch in _batches(task.inst_analysis.components):
            engine.component(batch)
        fixpoint_seconds = time.perf_counter() - t1
        entries, n, n_extra = engine.assemble()
    finally:
        engine.release_all()
        for df in db.frames.values():
            release(df)
    return SparkDTable(
        task, spark, entries, engine.rounds, time.perf_counter() - t1, load_seconds, fixpoint_seconds, n_extra,
        list(db.warnings), n,
    )
