"""The DTable on Spark: the k best derivations of every fact of P_p as a batched fixpoint.

Values are in the uniform string encoding (:mod:`selp.values`). Two kinds of frames per group of
components of P_p (and one for the EDB leaves):

* **entries**, append-only ``pieces`` (one materialised frame per round, folded now and then):
  ``_f``/``_g`` two independent hashes of the fact (xxhash64, Murmur3: 96 bits key the per-fact
  rows), ``relation``, ``args`` (array of encoded values), ``_w`` the weight (the monoid's
  ``spark_type``), ``_s`` the size, ``_o`` the origin (xxhash64 of the rule and the children's
  origins: a structural hash of the tree of P), ``_rule`` (null for an EDB leaf) and ``_ch`` the
  children as ``(f, o)``: fact hash and origin, which name one entry. An entry, once admitted, is
  never rewritten.
* **theta**, one narrow row per fact: ``_f``, ``_g``, ``relation`` and ``top``, the sorted
  ``(key, size, origin)`` of the fact's k best so far. Ranks are positions in ``top``.

A round joins every rule body with the entries (one variant per recursive body atom reading
only the entries admitted in the last round, the *delta*, so each combination of child entries
is formed once its newest member exists), drops the candidates that sort after their fact's k-th
best when the fact has k (a broadcast of those k-th keys, while it is small: most candidates of
late rounds rediscover full facts), groups the rest by fact keeping each fact's k best distinct
origins, merges them with the fact's ``top`` (a candidate with the origin of a live
entry is that entry: no change), and admits the candidates that made it: a new ``theta``, and a
new piece which is the next delta. A fact's list only improves and a tree grows with every
non-copy step, so the rounds stop. A large round rewrites ``theta`` (about a hundred bytes a
fact), never the entries; a small one -- the long tail of a fixpoint -- merges the facts it
touches into ``over``, a small overlay of ``theta`` folded in when it grows (see
:meth:`_Engine.merge`). Rounds are materialisations (lineage cut) whose counts come from an
:class:`~pyspark.sql.Observation` rather than a job of their own.

Rules are compiled by :mod:`selp.engines.spark_compile` (comparisons, negation and Skolem heads
behave exactly as in the Spark engine) in an *extended* form: each positive atom ``R(t..)``
becomes ``@entry:R(t.., @e<i>)`` over the entries of ``R``, ``@e<i>`` being a struct of the
entry's weight, size, origin and fact hash, and the head carries the ``@e<i>`` along. The
compiled plan yields every combination of child entries; the entry columns are native
expressions (no Python per row). Rule bodies read every admitted entry, not only the live ones:
an entry pushed out of its fact's k best only yields candidates that are not admitted
(monotonicity), and telling live from dropped would cost a join per round.

When the fixpoint is reached, ranks are attached and the DTable is complete
(:class:`selp.topk.spark_dtable.SparkDTable`, which also makes the pointers by rank users read).
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from functools import reduce
from pathlib import Path
from typing import Any, Callable

from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql.types import (
    ArrayType,
    DataType,
    LongType,
    StringType,
    StructField,
    StructType,
)

from selp.engines.decompose import NotDecomposable, decompose
from selp.engines.spark_compile import (
    UNIT,
    Sources,
    compile_rule,
    empty_frame,
    rel_columns,
    union_all,
)
from selp.engines.spark import evaluate_loaded
from selp.engines.spark_frames import materialize, materialize_count, release
from selp.engines.spark_load import SparkDatabase, load_spark_database
from selp.engines.spark_partitioned import settings as partition_settings
from selp.errors import SelpError
from selp.instrument.builder import is_child
from selp.instrument.witness import is_filter_relation
from selp.language.ast import Atom, Rule, Var
from selp.language.pattern import PatternNode
from selp.language.validate import Component, analyze
from selp.topk.monoid import ACCESS_LEVELS, BUILTIN, Monoid
from selp.topk.spark_dtable import PTR, SparkDTable, materialize_observed
from selp.topk.demand import Demand, is_demand, rewrite
from selp.topk.spark_onepass import run_one_pass
from selp.topk.spark_partitioned import choose, run_partition_local
from selp.topk.task import Task
from selp.values import decode

# progress(round, entries changed in the round, entries in total)
Progress = Callable[[int, int, int], None]

DEFAULT_MAX_ROUNDS = 10_000
BROADCAST_ROWS_CONF = "spark.selp.broadcastRows"
DEFAULT_BROADCAST_ROWS = 200_000
# Candidates are checked against their fact's k-th best before they are shuffled, through a
# broadcast of (fact key, k-th key) of the facts that have k entries: about 40 bytes a fact, so
# by default up to 2M facts (80 MB); past that the check is skipped (it only saves work).
PREFILTER_ROWS_CONF = "spark.selp.prefilterRows"
DEFAULT_PREFILTER_ROWS = 2_000_000

# Names no user relation or variable can have ('@' is not allowed in variables, ':' nowhere).
_ENTRY = "@entry:"
# the long tail of a fixpoint streams theta past a broadcast of few candidates (see merge)
# instead of shuffling it; pieces of a relation are folded into one past this many
_MAX_PIECES = 12
# about how many candidates an entry of the delta makes, to guess a round's size before it runs
_FANOUT = 8

# A _weight cell that these read as a decimal number is parsed natively; any other text is
# parsed by the monoid in Python (it decides what is valid and words the error).
_DECIMAL_RE = r"\A[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?\z"
_MAX_PYTHON_WEIGHTS = 100_000


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


def _fact_hash2(relation: Column, args: Column) -> Column:
    """A second, independent 32-bit hash of a fact (Murmur3): with :func:`_fact_hash` it keys
    the per-fact rows of theta, 96 bits, so distinct facts do not collide in practice."""
    return F.hash(relation, args)


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
    """The entries of some relations (a group of components, or the EDB leaves).

    ``pieces`` hold every entry ever admitted (append-only, one materialised frame per round,
    compacted now and then): entries are never rewritten. Which of them are a fact's k best is
    kept apart, in ``theta``: one narrow row per fact (``_f``, ``_g``, ``relation``, ``top``), ``top``
    the sorted (key, size, origin) of its k best. A round reads and rewrites ``theta`` -- about a
    hundred bytes a fact -- never the entries with their arguments and child pointers."""

    pieces: list[DataFrame] = field(default_factory=list)
    admitted: dict[str, int] = field(default_factory=dict)  # relation -> entries in the pieces
    theta: DataFrame | None = None  # None for the leaves: an EDB fact has one entry, rank 1
    live: dict[str, int] = field(default_factory=dict)  # relation -> entries ranked 1..k
    delta: DataFrame | None = None  # the entries admitted in the last round
    fresh: dict[str, int] = field(default_factory=dict)  # relation -> rows of ``delta``
    theta_rows: int = 0  # facts in theta and over
    full_rows: int = 0  # facts in theta and over with k entries
    # facts changed since theta was last written: their rows here supersede theta's (see merge)
    over: DataFrame | None = None
    over_rows: int = 0
    piece_rows: list[int] = field(default_factory=list)  # entries in each piece
    # the entries already ranked (``rank``, no theta): a partition-local component's
    # (selp.topk.spark_partitioned), whose single piece is this frame without ``rank``
    ranked: DataFrame | None = None
    packed: DataFrame | None = None  # what ``ranked`` is unpacked from (selp.topk.packed), held until the end
    reader: Callable[..., DataFrame] | None = None  # some facts' rows of ``packed`` (SparkDTable.part_readers)

    def all_entries(self) -> DataFrame | None:
        return union_all(self.pieces) if self.pieces else None

    def expected_candidates(self) -> int:
        """About how many candidates the next round makes (its size guessed before it runs)."""
        return sum(self.fresh.values()) * _FANOUT


class _Engine:
    def __init__(self, task: Task, db: SparkDatabase, spark: SparkSession, progress: Progress | None,
                 max_rounds: int, broadcast_rows: int, prefilter_rows: int) -> None:
        self.task = task
        self.db = db
        self.spark = spark
        self.progress = progress
        self.max_rounds = max_rounds
        self.broadcast_rows = broadcast_rows
        self.prefilter_rows = prefilter_rows
        self.k = task.k
        self.wt = _Weights(task.monoid)
        self.analysis = task.inst_analysis
        self.arity = dict(self.analysis.arities)
        self.homes: list[_Home] = []
        self.home: dict[str, _Home] = {}  # relation -> where its entries are (absent: none yet)
        self.rounds = 0
        self.plan: list[dict[str, Any]] = []  # how each component of P_p ran (see spark_partitioned)
        self.small_rounds = 0  # rounds merged into ``over`` (see merge)
        self.total = 0
        self.owned: list[DataFrame] = []  # other materialised frames, freed at the end
        self._frames: dict[tuple[str, str], DataFrame] = {}  # input frames of this round
        self._entry_cols: dict[str, list[Column]] = {}  # per rule: the columns of its entries
        self._counts: dict[tuple[str, ...], list[Column]] = {}
        # facts of the agg@ relations (witness rules' filters), evaluated before the DTable
        self.filters: dict[str, DataFrame] = {}
        self.filter_sizes: dict[str, int] = {}
        self.types: dict[str, tuple[str, ...]] = {}
        for rel in self.arity:
            t = task.types[rel]
            self.types[rel] = t
            self.types[_ENTRY + rel] = tuple(t) + ("str",)
        # the sort key's type, for the (key, size, origin) structs of theta
        probe = spark.createDataFrame([], StructType([StructField("_w", DataType.fromDDL(self.wt.type))]))
        key_type = probe.select(self.wt.key(F.col("_w")).alias("k")).schema[0].dataType
        self.top_type = ArrayType(StructType([
            StructField("k", key_type), StructField("s", LongType()), StructField("o", LongType()),
        ]))
        self.cand_type = ArrayType(StructType([
            StructField("k", key_type), StructField("s", LongType()), StructField("o", LongType()),
            StructField("w", DataType.fromDDL(self.wt.type)), StructField("rule", StringType()),
            StructField("ch", PTR),
        ]))

    # --- frames read by compiled rules -----------------------------------------------------------

    def _frame(self, name: str, source: str) -> DataFrame:
        # the same inputs are read by many plans of a round; building a frame costs round trips
        # to the JVM, so each is built once per round (the cache is emptied when tables change)
        key = (name, source)
        if key not in self._frames:
            self._frames[key] = self._make_frame(name, source)
        return self._frames[key]

    def _make_frame(self, name: str, source: str) -> DataFrame:
        if name in self.filters:
            return self.filters[name]
        if name.startswith(_ENTRY):
            rel = name[len(_ENTRY):]
            n = self.arity[rel]
            home = self.home[rel]
            # every admitted entry, not only the k best: an entry pushed out can only make
            # candidates that will not be admitted (monotonicity), so reading it costs work,
            # never correctness -- and knowing which are still live would cost a join
            entries = home.delta if source == "delta" else home.all_entries()
            return entries.filter(F.col("relation") == rel).selectExpr(
                *[f"args[{i}] AS c{i}" for i in range(n)],
                f"named_struct('w', _w, 's', _s, 'o', _o, 'f', _f) AS c{n}",
            )
        # a negated atom reads facts: a fact exists iff it has an entry
        n = self.arity[name]
        if name in self.analysis.edb:
            return self.db.frames[name] if name in self.db.frames else empty_frame(self.spark, n)
        if name not in self.home or not self.home[name].pieces:
            return empty_frame(self.spark, n)
        facts = self.home[name].all_entries().filter(F.col("relation") == name)
        if not n:
            return facts.selectExpr(f"'' AS {UNIT}").distinct()
        return facts.selectExpr(*[f"args[{i}] AS c{i}" for i in range(n)]).distinct()

    def _size(self, name: str, source: str) -> int | None:
        if name in self.filter_sizes:
            return self.filter_sizes[name]
        if name.startswith(_ENTRY):
            rel = name[len(_ENTRY):]
            home = self.home.get(rel)
            if home is None:
                return 0
            return (home.fresh if source == "delta" else home.admitted).get(rel, 0)
        if name in self.analysis.edb:
            return self.db.sizes.get(name, 0)
        home = self.home.get(name)
        return 0 if home is None else home.live.get(name, 0)  # entries: at least the facts

    def sources(self) -> Sources:
        return Sources(self._frame, self._size, self.types, self.broadcast_rows)

    # --- filters ---------------------------------------------------------------------------------

    def evaluate_filters(self) -> None:
        """Evaluate the ``agg@`` relations of P_p (aggregated relations of P and what they read,
        :mod:`selp.instrument.witness`) with the Spark engine: witness rules read them as facts."""
        program = self.task.inst.program
        rules = tuple(r for r in program.rules if is_filter_relation(r.head.relation))
        if not rules:
            return
        sub = analyze(dataclasses.replace(program, rules=rules))
        self.db.types.update({rel: self.task.types[rel] for rel in sub.idb})
        frames, sizes, owned = evaluate_loaded(sub, self.db, self.spark, self.broadcast_rows)
        self.filters.update(frames)
        self.filter_sizes.update(sizes)
        self.owned.extend(owned)

    def evaluate_demand(self) -> None:
        """Evaluate the demand relations of a goal-directed task (:func:`_goal_directed`) with the
        Spark engine, and what they read: the DTable's rules read them as filters, complete."""
        program = self.task.inst.program
        by_head: dict[str, list[Rule]] = {}
        for r in program.rules:
            by_head.setdefault(r.head.relation, []).append(r)
        wanted = {rel for rel in by_head if is_demand(rel)}
        stack = list(wanted)
        while stack:  # the demand rules read restricted relations, which read demand relations
            for r in by_head[stack.pop()]:
                for b in r.body:
                    if isinstance(b, Atom) and b.relation in by_head and b.relation not in wanted:
                        wanted.add(b.relation)
                        stack.append(b.relation)
        if not wanted:
            return
        sub = analyze(dataclasses.replace(program, rules=tuple(r for r in program.rules if r.head.relation in wanted)))
        self.db.types.update({rel: self.task.types[rel] for rel in sub.idb})
        frames, sizes, owned = evaluate_loaded(sub, self.db, self.spark, self.broadcast_rows)
        for rel in frames:
            if is_demand(rel):
                self.filters[rel] = frames[rel]
                self.filter_sizes[rel] = sizes[rel]
        self.owned.extend(owned)

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
                _fact_hash2(F.lit(rel), _args_array(n)).alias("_g"),
                F.lit(rel).alias("relation"),
                _args_array(n).alias("args"),
                weight.alias("_w"),
                F.lit(0).cast("bigint").alias("_s"),
                F.xxhash64(F.lit("L"), F.lit(origin_rel), *[F.col(c) for c in _fact_cols(n)]).alias("_o"),
                F.lit(None).cast("string").alias("_rule"),
                F.array().cast(PTR).alias("_ch"),
            ))
            self.total += sizes[rel]
        if not parts:
            return
        home = _Home([materialize(union_all(parts))], dict(sizes), None, dict(sizes), piece_rows=[sum(sizes.values())])
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
        if rel in self.db.single_weights:
            # no fact was given twice: its one cell is its weight (no shuffle to pick the last)
            raw_df = raw_df.select(*keys, F.col("_weight").alias("_raw"))
        else:
            # the last cell wins when a fact is weighted twice, as in selp.database (file order,
            # then inline facts: the order of the union the loader built)
            raw_df = (
                raw_df.withColumn("_seq", F.monotonically_increasing_id())
                .groupBy(*keys)
                .agg(F.max_by(F.col("_weight"), F.col("_seq")).alias("_raw"))
            )
        raw = F.col("_raw")
        native = self.wt.native(raw)
        if native is None:
            parsed, valid = F.lit(None).cast(self.wt.type), F.lit(False)
        else:
            parsed, valid = native
        # counted while it is materialised: when the native parse takes every cell (the usual
        # case) no job looks for the odd ones (two jobs fewer in a one-shot explain)
        raw_df, seen = materialize_observed(raw_df, [F.count_if(~valid).alias("odd")])
        self.owned.append(raw_df)
        # cells the native parse does not take: distinct texts, each with one example fact
        odd = (
            raw_df.filter(~valid)
            .groupBy(raw)
            .agg(*[F.first(F.col(c)).alias(c) for c in keys])
            .limit(_MAX_PYTHON_WEIGHTS + 1)
            .collect()
        ) if seen["odd"] else []
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
            # an agg@ filter or a demand guard reads facts, as a negated atom does: no child
            if is_child(b) and not is_demand(b.relation):
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

    def first_candidates(self, rules: tuple[Rule, ...]) -> list[DataFrame]:
        """The candidates of ``rules`` over every entry admitted so far (no delta): a
        non-recursive component's one pass, or a partition-local component's seeds."""
        src = self.sources()
        plans = []
        for rule in rules:
            ext, positives = self.extend(rule)
            p = self.candidates(rule, ext, positives, None, src)
            if p is not None:
                plans.append(p)
        return plans

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
            # a child is named by its fact hash and origin: (fact, origin) names one entry
            children = F.array(*[F.struct(col(j, "f").alias("f"), col(j, "o").alias("o")) for j in range(m)]).cast(PTR)
        else:
            children = F.array().cast(PTR)
        return [
            _fact_hash(F.lit(rule.head.relation), _args_array(h)).alias("_f"),
            _fact_hash2(F.lit(rule.head.relation), _args_array(h)).alias("_g"),
            F.lit(rule.head.relation).alias("relation"),
            _args_array(h).alias("args"),
            weight.cast(self.wt.type).alias("_w"),
            size.alias("_s"),
            origin.alias("_o"),
            F.lit(name).alias("_rule"),
            children.alias("_ch"),
        ]

    # --- admitting candidates: one round ---------------------------------------------------------

    _KEYS = ["_f", "_g"]

    def _prefiltered(self, home: _Home, plans: list[DataFrame]) -> DataFrame:
        """The round's candidates without those that cannot enter their fact's k best: the fact
        has k entries and the candidate sorts after the k-th. A fact's list only improves, so
        such a candidate is never admitted; dropping it before the shuffle saves the most
        expensive part of a round (late rounds mostly rediscover facts that are full). The k-th
        keys reach the candidates in a broadcast, so this is done only while it is small."""
        cand = union_all(plans)
        theta = home.theta
        if theta is None or not home.full_rows or home.full_rows > self.prefilter_rows:
            return cand
        if home.expected_candidates() < home.full_rows:
            # the tail of a fixpoint: few candidates (a few per entry of the delta) cost less to
            # shuffle than broadcasting the k-th key of every full fact (1-3 s a round at 1M)
            return cand
        # Keyed on the 64-bit fact hash alone and carrying the k-th key alone (not its size and
        # origin): a single long key makes Spark's compact LongHashedRelation, and at TC 1M
        # (700k full facts) this broadcast cost 0.9 s a round against 1.5 s for (_f, _g) and
        # the whole (key, size, origin) struct. Both only keep more: a candidate that ties the
        # k-th key passes, and in the (2^-64) case of two facts sharing ``_f`` a candidate meets
        # both rows and passes if either lets it (its duplicate has the same origin, so the
        # window of _grouped drops it).
        kth = theta.filter(F.size("top") == self.k).select("_f", F.element_at("top", self.k)["k"].alias("_kth"))
        return cand.join(F.broadcast(kth), ["_f"], "left").filter(
            F.coalesce(self.wt.key(F.col("_w")) <= F.col("_kth"), F.lit(True))  # no k-th key (or a null): keep
        ).drop("_kth")

    def _grouped(self, cand: DataFrame) -> DataFrame:
        """The round's candidates, one row per fact: ``_c`` = its k best distinct-origin
        candidates as (key, size, origin, weight, rule, children), best first.

        The k best are picked by a window (one shuffle of the candidates, one sort by fact and
        key) before anything is collected. Grouping first with ``collect_list`` cost about twice
        as much in the large rounds (TC 300k, k = 3: 6.2 s against 3.5 s for 1.8M candidates):
        its partial aggregation falls back to sorting whole rows after 128 facts and, with a few
        candidates per fact in a partition, hardly reduces what is shuffled. Equal origins mean
        the same tree of P, hence the same key and size, so in key order duplicates are
        neighbours: ``lag`` finds them and ``dense_rank`` counts distinct origins only."""
        key = self.wt.key(F.col("_w")).cast(self.top_type.elementType["k"].dataType)
        w = Window.partitionBy(*self._KEYS).orderBy(key, F.col("_s"), F.col("_o"))
        best = cand.select("*", F.dense_rank().over(w).alias("_dr"), F.lag("_o").over(w).alias("_po")).filter(
            (F.col("_dr") <= self.k) & (F.col("_po").isNull() | (F.col("_po") != F.col("_o")))
        )
        item = F.struct(
            key.alias("k"), F.col("_s").alias("s"), F.col("_o").alias("o"),
            F.col("_w").alias("w"), F.col("_rule").alias("rule"), F.col("_ch").alias("ch"),
        ).cast(self.cand_type.elementType)
        # the window's output is partitioned by fact already: this aggregate adds no shuffle
        return best.groupBy(*self._KEYS).agg(
            F.first("relation").alias("relation"), F.first("args").alias("args"),
            F.sort_array(F.collect_list(item)).alias("_c"),
        )

    def _merged(self, j: DataFrame) -> DataFrame:
        """Per fact of ``j`` (``top``: its k best so far, ``_c``: this round's candidates, either
        null): the new k best, ``_adm`` the candidates admitted among them and ``_n0`` how many
        entries the fact had before."""
        empty_top = F.array().cast(self.top_type)
        old = F.coalesce(F.col("top"), empty_top)
        c = F.coalesce(F.col("_c"), F.array().cast(self.cand_type))
        # a candidate with the origin of a live entry is that entry: no change
        newc = F.filter(c, lambda x: ~F.exists(old, lambda t: t["o"] == x["o"]))
        proj = F.transform(F.col("_n"), lambda x: F.struct(x["k"].alias("k"), x["s"].alias("s"), x["o"].alias("o")))
        j = j.select(*self._KEYS, "relation", "args", old.alias("_old"), newc.alias("_n"),
                     F.when(F.col("top").isNull(), F.lit(-1)).otherwise(F.size("top")).alias("_n0"))
        j = j.select(*self._KEYS, "relation", "args", "_n", "_n0",
                     F.slice(F.sort_array(F.concat(F.col("_old"), proj.cast(self.top_type))), 1, self.k).alias("top"))
        adm = F.filter("_n", lambda x: F.exists(F.col("top"), lambda m: m["o"] == x["o"]))
        # the arguments are kept only where an entry is admitted (the delta reads them): theta
        # is rewritten every round, and most of its facts do not change
        return j.select(*self._KEYS, "relation", F.when(F.size(adm) > 0, F.col("args")).alias("args"), "top",
                        adm.alias("_adm"), "_n0")

    def _small_round(self, home: _Home) -> bool:
        """Whether this round's candidates are few next to theta (the long tail of a fixpoint):
        then only the facts they touch are merged, into ``home.over`` (see :meth:`merge`)."""
        fresh = home.expected_candidates()
        return home.theta is not None and fresh <= self.broadcast_rows and fresh < home.theta_rows

    def merge(self, members: list[str], home: _Home, plans: list[DataFrame]) -> int:
        """Admit the round's candidates into ``home``: new k best per fact, a new piece (the
        delta). Returns how many entries were admitted.

        Theta is kept as a large ``theta`` and a small ``over`` holding the facts changed since
        ``theta`` was last written (an LSM tree of two levels). A large round folds ``over`` in
        and joins theta with the candidates in one shuffle (a full outer join keeps both sides'
        facts), writing theta anew. A small round -- most rounds of a long fixpoint change a few
        facts -- finds the touched facts' lists with broadcasts of the (few) candidate facts,
        streaming past theta without shuffling or writing it, and rewrites only ``over``, which
        is folded into theta once it grows. Before, every round rewrote all of theta: at TC 1M
        that was 2-3 s a round for rounds changing a few dozen facts."""
        g = self._grouped(self._prefiltered(home, plans))
        if self._small_round(home):
            self.small_rounds += 1
            return self._merge_small(members, home, g)
        self._fold(home)
        theta = home.theta
        if theta is None:
            j = g.select(*self._KEYS, "relation", "args", F.lit(None).cast(self.top_type).alias("top"), "_c")
        else:
            t = theta.select(*self._KEYS, F.col("relation").alias("_tr"), "top")
            j = g.join(t, self._KEYS, "full_outer").select(
                *self._KEYS, F.coalesce("relation", "_tr").alias("relation"), "args", "top", "_c")
        new_theta, counts = materialize_observed(self._merged(j), self._count_columns(members))
        n_fresh = self._admit(members, home, new_theta, counts)
        if theta is not None:
            release(theta)
        home.theta = new_theta.select(*self._KEYS, "relation", "top")
        self._account(members, home, counts)
        return n_fresh

    def _merge_small(self, members: list[str], home: _Home, g: DataFrame) -> int:
        """A small round (see :meth:`merge`): merge the touched facts into ``home.over``."""
        gm, _ = materialize_count(g)
        self.owned.append(gm)
        touched = F.broadcast(gm.select(*self._KEYS))
        cur = home.theta.join(touched, self._KEYS, "left_semi")  # type: ignore[union-attr]
        over = home.over
        if over is not None:
            cur = cur.join(F.broadcast(over.select(*self._KEYS)), self._KEYS, "left_anti").unionByName(
                over.join(touched, self._KEYS, "left_semi"))
        cur, _ = materialize_count(cur.select(*self._KEYS, "top"))
        self.owned.append(cur)
        j = gm.join(F.broadcast(cur), self._KEYS, "left").select(*self._KEYS, "relation", "args", "top", "_c")
        changed, counts = materialize_observed(self._merged(j), self._count_columns(members))
        n_fresh = self._admit(members, home, changed, counts)
        # only facts that admitted something changed; the others keep their rows where they are
        rows = changed.filter(F.size("_adm") > 0).select(*self._KEYS, "relation", "top")
        if over is not None:
            rows = over.join(F.broadcast(rows.select(*self._KEYS)), self._KEYS, "left_anti").unionByName(rows)
        new_over, over_rows = materialize_count(rows)
        if over is not None:
            release(over)
        self.owned.append(changed)
        home.over, home.over_rows = new_over, over_rows
        self._account(members, home, counts)
        if over_rows * _FANOUT > self.broadcast_rows:
            self._fold(home)
        return n_fresh

    def _fold(self, home: _Home) -> None:
        """Write ``over`` into ``theta`` (one shuffle), leaving ``over`` empty."""
        if home.over is None:
            return
        over = home.over
        theta = home.theta.join(over.select(*self._KEYS), self._KEYS, "left_anti").unionByName(over)  # type: ignore[union-attr]
        folded, _ = materialize_count(theta)
        release(home.theta)  # type: ignore[arg-type]
        release(over)
        home.theta, home.over, home.over_rows = folded, None, 0

    def _admit(self, members: list[str], home: _Home, merged: DataFrame, counts: dict[str, Any]) -> int:
        """Append the entries admitted in ``merged`` (the rows of :meth:`_merged`) to ``home`` as
        its next piece and delta; how many there are."""
        delta = merged.filter(F.size("_adm") > 0).select(
            *self._KEYS, "relation", "args", F.explode("_adm").alias("x")
        ).select(
            *self._KEYS, "relation", "args", F.col("x.w").alias("_w"), F.col("x.s").alias("_s"),
            F.col("x.o").alias("_o"), F.col("x.rule").alias("_rule"), F.col("x.ch").alias("_ch"),
        )
        fresh = {rel: counts[f"fresh{i}"] for i, rel in enumerate(members) if counts[f"fresh{i}"]}
        n_fresh = sum(fresh.values())
        if n_fresh:
            delta = materialize(delta)
            home.pieces.append(delta)
            home.piece_rows.append(n_fresh)
        else:
            delta = None
        home.delta = delta
        home.fresh = fresh
        for rel, n in fresh.items():
            home.admitted[rel] = home.admitted.get(rel, 0) + n
        if len(home.pieces) > _MAX_PIECES:
            self._fold_pieces(home)
        return n_fresh

    def _fold_pieces(self, home: _Home) -> None:
        """Fold the pieces of ``home`` into fewer: many pieces make every plan that reads them
        longer. The small ones (the tail of a fixpoint) are folded among themselves, so a late
        fold does not copy the large pieces of the early rounds; the delta stays apart (the
        next round reads it as such)."""
        last = len(home.pieces) - 1 if home.delta is not None else len(home.pieces)
        total = sum(home.piece_rows[:last])
        pick = [i for i in range(last) if home.piece_rows[i] * 10 < total]
        if len(pick) < 2:
            pick = list(range(last))
        folded, _ = materialize_count(union_all([home.pieces[i] for i in pick]))
        for i in pick:
            release(home.pieces[i])
        keep = [i for i in range(len(home.pieces)) if i not in pick]
        home.pieces = [folded] + [home.pieces[i] for i in keep]
        home.piece_rows = [sum(home.piece_rows[i] for i in pick)] + [home.piece_rows[i] for i in keep]

    def _count_columns(self, members: list[str]) -> list[Column]:
        """What a round changed, over the rows of :meth:`_merged` it wrote (``_n0``: the fact's
        entries before, -1 for a new fact): new facts, newly full facts, and per relation of the
        group the growth of its ranked entries and the entries admitted. A row whose fact did
        not change adds nothing, so this serves rounds that write all of theta and those that
        write only the facts they touch."""
        key = tuple(members)
        if key not in self._counts:
            k = self.k
            n0 = F.col("_n0")

            def total(c: Column) -> Column:
                return F.coalesce(F.sum(c), F.lit(0))  # the sum over no rows is null

            cols = [total(F.when(n0 < 0, 1).otherwise(0)).alias("facts"),
                    total(F.when(F.size("top") == k, 1).otherwise(0) - F.when(n0 == k, 1).otherwise(0)).alias("full")]
            for i, rel in enumerate(members):
                mine = F.col("relation") == rel
                grown = F.size("top") - F.greatest(n0, F.lit(0))
                cols.append(total(F.when(mine, grown).otherwise(0)).alias(f"live{i}"))
                cols.append(total(F.when(mine, F.size("_adm")).otherwise(0)).alias(f"fresh{i}"))
            self._counts[key] = cols
        return self._counts[key]

    def _account(self, members: list[str], home: _Home, counts: dict[str, Any]) -> None:
        """Apply a round's :meth:`_count_columns` to ``home``'s counts."""
        home.theta_rows += counts["facts"]
        home.full_rows += counts["full"]
        for i, rel in enumerate(members):
            home.live[rel] = home.live.get(rel, 0) + counts[f"live{i}"]

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
        home = _Home()
        self.homes.append(home)
        for rel in members:
            self.home[rel] = home
        src = self.sources()
        plans = [p for rule, ext, positives in compiled
                 if (p := self.candidates(rule, ext, positives, None, src)) is not None]
        rounds = 0
        ordered = sorted(members)
        while plans:
            rounds += 1
            if rounds > self.max_rounds:
                raise SelpError(
                    f"top-k evaluation of {', '.join(ordered)} did not converge in {self.max_rounds} rounds"
                )
            self.rounds += 1
            before = sum(home.live.values())
            changed = self.merge(ordered, home, plans)
            self._frames = {}
            self.total += sum(home.live.values()) - before
            if self.progress:
                self.progress(self.rounds, changed, self.total)
            if changed == 0 or not variants:
                break
            src = self.sources()
            plans = [p for rule, ext, positives, i in variants
                     if (p := self.candidates(rule, ext, positives, i, src)) is not None]
        self._fold(home)  # the DTable reads theta whole
        home.delta, home.fresh = None, {}

    def release_all(self) -> None:
        """Free every materialised frame the result does not hold."""
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


def _goal_directed(task: Task, goal: PatternNode | None, warn: Callable[[str], None] | None) -> tuple[Task, Demand | None]:
    """The task the DTable engine runs for ``goal``: ``task`` itself, or -- when ``goal`` binds
    constants that restrict a derived relation -- ``task`` with P_p rewritten for demand. The
    rewritten task's analysis is that of its DTable rules only: the demand relations are inputs
    there (computed first, by :meth:`_Engine.evaluate_demand`), read as filters, never children,
    so a rule instance is the same instance of P_p and trees map back unchanged."""
    from selp.topk.embedded import bindings

    binds = bindings(task, goal) if goal is not None else {}
    demand = rewrite(task.inst.program, binds, dict(task.types)) if binds else None
    if demand is None:
        if binds and warn is not None:
            warn("the query's constants restrict no derived relation: evaluating the whole program")
        return task, None
    program = demand.program
    dtable_rules = tuple(r for r in program.rules if not is_demand(r.head.relation))
    analysis = analyze(dataclasses.replace(program, rules=dtable_rules))
    inst = dataclasses.replace(task.inst, program=program)
    return dataclasses.replace(task, inst=inst, inst_analysis=analysis, types={**task.types, **demand.types}), demand


def _reads_demand(comp: Component) -> bool:
    """Whether a component's rules read a demand relation (a goal-directed guard)."""
    return any(isinstance(b, Atom) and is_demand(b.relation) for r in comp.rules for b in r.body)


def _unguarded(comp: Component, demand: Demand) -> tuple[Component | None, str]:
    """``comp`` (a recursive component reading its demand guards) with the guards dropped from
    its recursive rules, when that makes it decomposable on a position the demand binds in every
    member; else None and why not.

    Exact for the demanded facts: the exit rules keep their guards, so every seed has a demanded
    value at the decomposition position, and the recursive rules pass that value unchanged, so a
    partition holds demanded values only. A demanded fact's rule instances are those it had with
    the guard (the guard holds for it) and their children are demanded facts (the demand
    rules follow the same instances), so its k best are unchanged; the facts of a demanded value
    that are not demanded themselves are extra work, possibly incomplete, and never a child of
    a demanded fact."""
    members = set(comp.relations)
    rules = []
    for r in comp.rules:
        if any(isinstance(b, Atom) and not b.negated and b.relation in members for b in r.body):
            r = dataclasses.replace(r, body=tuple(b for b in r.body if not (isinstance(b, Atom) and is_demand(b.relation))))
        rules.append(r)
    local = dataclasses.replace(comp, rules=tuple(rules))
    d = decompose(local)  # a position only: dropping the guards is exact for a bound position
    if isinstance(d, NotDecomposable):
        return None, f"it reads demand facts (goal-directed) and without its guards {d.reason}"
    unbound = sorted(rel for rel in members if d.position not in demand.bound.get(rel, ()))
    if unbound:
        return None, f"it reads demand facts (goal-directed) and the demand does not bind {unbound[0]} at position {d.position}"
    return local, ""


def _broadcast_rows(spark: SparkSession, given: int | None) -> int:
    if given is not None:
        return given
    return int(spark.conf.get(BROADCAST_ROWS_CONF, str(DEFAULT_BROADCAST_ROWS)))


def run_topk_spark(
    task: Task,
    db_dir: str | Path | SparkDatabase | None,
    spark: SparkSession,
    progress: Progress | None = None,
    max_rounds: int = DEFAULT_MAX_ROUNDS,
    broadcast_rows: int | None = None,
    goal: PatternNode | None = None,
    warn: Callable[[str], None] | None = None,
) -> SparkDTable:
    """Fill the DTable of ``task`` over the EDB in ``db_dir`` with Spark.

    ``progress(round, entries changed, entries in total)`` is called after every round (rounds
    are numbered across the components of P_p). A component still changing after ``max_rounds``
    rounds raises :class:`SelpError`. Inputs of at most ``broadcast_rows`` rows (default: the
    ``spark.selp.broadcastRows`` setting, else 200000) are broadcast in joins.

    With ``goal`` (a fact filter, or a pattern's root) binding constants, the evaluation is
    goal-directed as on the embedded engine (:mod:`selp.topk.demand`): P_p is rewritten for
    demand, the demand relations are evaluated first, and the DTable holds the facts that can
    occur in a derivation of an answer matching ``goal`` -- the answers matching it are exactly
    those of a full evaluation; others may be missing or incomplete. ``warn`` hears when the
    constants restrict nothing.
    """
    monoid = task.monoid
    if not monoid.on_spark:
        raise SelpError(f"monoid {monoid.name} has no Spark column expressions; use --engine local")
    t0 = time.perf_counter()
    db = db_dir if isinstance(db_dir, SparkDatabase) else load_spark_database(task.analysis, db_dir, spark)
    load_seconds = time.perf_counter() - t0
    t1 = time.perf_counter()
    prefilter_rows = int(spark.conf.get(PREFILTER_ROWS_CONF, str(DEFAULT_PREFILTER_ROWS)))
    inner, demand = _goal_directed(task, goal, warn)
    engine = _Engine(inner, db, spark, progress, max_rounds, _broadcast_rows(spark, broadcast_rows), prefilter_rows)
    ok = False
    try:
        engine.evaluate_filters()
        engine.evaluate_demand()
        engine.leaves()
        conf = partition_settings(spark)
        # the witness filters (agg@R) were evaluated above and are no component of the DTable
        components = [c for c in inner.inst_analysis.components if not any(is_filter_relation(r) for r in c.relations)]
        if demand is not None:
            engine.plan.append({"relations": sorted(demand.bound), "mode": "goal-directed",
                                "demand": {rel: list(ps) for rel, ps in sorted(demand.bound.items())},
                                "dropped_rules": demand.dropped_rules})
        for batch in _batches(tuple(components)):
            # a decomposable component gets its DTable partition-local; the rest of its group
            # (which it does not read, nor they it) runs in global rounds
            rest = []
            for comp in batch:
                if demand is not None and not comp.recursive:
                    # goal-directed: ranked in its one pass (selp.topk.spark_onepass)
                    engine.plan.append({"stratum": comp.stratum, "relations": list(comp.relations), "mode": "one pass"})
                    engine.rounds += 1
                    n = run_one_pass(engine, comp, _Home())
                    engine.total += n
                    if engine.progress:
                        engine.progress(engine.rounds, n, engine.total)
                    continue
                if _reads_demand(comp):
                    # the partition-local DTable takes no filter atoms (as for agg@ filters): it
                    # runs without the recursive rules' guards where that is exact (_unguarded)
                    local, why = _unguarded(comp, demand) if comp.recursive and demand is not None else (None, "")
                    if local is None:
                        engine.plan.append({"stratum": comp.stratum, "relations": list(comp.relations), "mode": "global rounds" if comp.recursive else "one pass",
                                            **({"reason": why or "it reads demand facts (goal-directed)"} if comp.recursive else {})})
                        rest.append(comp)
                        continue
                    d, step = choose(engine, local, conf)
                    if d is not None:  # else global rounds, over ``comp`` with its guards
                        step["note"] = f"demanded values of position {d.position} only, guards dropped from the recursive rules"
                else:
                    d, step = choose(engine, comp, conf)
                engine.plan.append(step)
                if d is None:
                    rest.append(comp)
                    continue
                engine.rounds += 1
                n = run_partition_local(engine, comp, d, conf, _Home())
                engine.total += n
                if engine.progress:
                    engine.progress(engine.rounds, n, engine.total)
            if rest:
                engine.component(rest)
        fixpoint_seconds = time.perf_counter() - t1
        # entries ranked by their theta, and the partition-local ones, ranked already
        pieces = [p for h in engine.homes if h.ranked is None for p in h.pieces]
        thetas = [h.theta for h in engine.homes if h.theta is not None]
        done = [h.ranked for h in engine.homes if h.ranked is not None]
        packed = [h.packed for h in engine.homes if h.packed is not None]
        result = SparkDTable(
            task, spark, union_all(pieces) if pieces else None, thetas, pieces + thetas + done + packed, engine.rounds,
            0.0, load_seconds, fixpoint_seconds, list(db.warnings), engine.total, engine.small_rounds,
        )
        result.plan, result.ranked_parts = engine.plan, done
        result.part_readers = [h.reader for h in engine.homes if h.ranked is not None]
        result.part_rows = sum(sum(h.admitted.values()) for h in engine.homes if h.ranked is not None)
        result.ranked()  # the ranks: the DTable is complete
        result.seconds = time.perf_counter() - t1
        ok = True
        return result
    finally:
        engine.release_all()
        if not ok:
            for h in engine.homes:
                for p in h.pieces + [x for x in (h.ranked, h.packed) if x is not None]:
                    release(p)
                if h.theta is not None:
                    release(h.theta)
        for df in db.frames.values():
            release(df)
