"""The Spark engine: stratified semi-naive evaluation with DataFrames.

Relations are DataFrames in the uniform string encoding (:mod:`selp.values`), loaded by
:mod:`selp.engines.spark_load` and joined by plans from :mod:`selp.engines.spark_compile`.
Components are evaluated in dependency order: a non-recursive one once, a recursive one
semi-naively -- every rule expanded into one variant per recursive body atom (that atom reads the
last iteration's delta, the others the full relations), new facts deduplicated and anti-joined
with what is known, and the delta materialised (lineage cut) every iteration. The delta's count,
needed to stop, is the job that materialises it. Inputs up to ``broadcast_rows`` rows are
broadcast in joins; a relation larger than that is never shuffled just to drop known facts (see
``_Evaluator._new_facts``).

A recursive component that decomposes (:mod:`selp.engines.decompose`) instead runs its whole
fixpoint inside each partition in one job (:mod:`selp.engines.spark_partitioned`), unless
``spark.selp.partitionLocal`` is false; the result's ``plan`` says which way each component ran.
"""

from __future__ import annotations

import dataclasses
import shutil
import tempfile
import time
import uuid
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import reduce
from pathlib import Path
from typing import Any, Callable, Iterator

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from selp import aggregate
from selp.arith import located
from selp.engines.decompose import Decomposition, NotDecomposable, decompose_any
from selp.engines.local import Progress
from selp.engines.spark_aggregate import group_frame, improvements, replaced
from selp.engines.spark_codes import (
    AUTO_MIN_ROWS,
    CODES_CONF,
    PACKED,
    Codes,
    codes_mode,
    rule_constants,
    uncodable,
    use_codes,
)
from selp.engines.spark_compile import (
    UNIT,
    Sources,
    compile_rule,
    display_column,
    empty_frame,
    is_skolem,
    number_value,
    rel_columns,
    union_all,
)
from selp.engines.spark_frames import materialize, materialize_count, release
from selp.engines.spark_load import (
    SparkDatabase,
    hadoop_fs,
    is_local_path,
    load_spark_database,
    local_path,
    to_uri,
)
from selp.engines.spark_partitioned import BROADCAST_ROWS_CONF as BROADCAST_LIMIT_CONF
from selp.engines.spark_partitioned import (
    ENABLED_CONF,
    Settings,
    run_partition_local,
    settings,
)
from selp.engines.spark_values import value_labels
from selp.errors import SelpError
from selp.language.ast import Atom
from selp.language.validate import Analysis, Component
from selp.outfile import check_dir_target, open_output, staged_path, writes_in_place
from selp.values import Value, decode

BROADCAST_ROWS_CONF = "spark.selp.broadcastRows"
DEFAULT_BROADCAST_ROWS = 200_000
# Adaptive query execution in global rounds: auto (the default) | true | false. It runs every
# shuffle and broadcast of a query as a job of its own, and decides nothing a large round needs:
# joins with a small side are broadcast by selp's own hints (``broadcast_rows``). Off, a 6-round
# nonlinear closure ran 23 jobs instead of 31 (loading included) and its big rounds took less
# wall time. A small component is another matter: AQE coalesces each shuffle's few rows into one
# partition, so every later job reading the relation's pieces runs fewer tasks; the N/4 graph
# (255 edges, 6,888 facts) took 15-20 % less CPU with it (datasets/results/spark-nonlinear, s19u).
# So ``auto`` keeps AQE on in the rounds of a component whose inputs hold fewer than
# AUTO_MIN_ROWS rows -- the components that also run on text (spark_codes) -- and turns it off
# for the others. Turning it on per round by the relation's size instead was tried: the small
# rounds' one-partition deltas then starved the big rounds that read them of parallelism (the
# 105,301-fact closure 1.4x slower in wall time). Everything else keeps the session's setting.
ROUNDS_ADAPTIVE_CONF = "spark.selp.rounds.adaptive"
ROUNDS_ADAPTIVE_MODES = ("auto", "true", "false")
_AQE = "spark.sql.adaptive.enabled"
# A recursive relation is the union of its deltas; past this many pieces it is compacted into one
# frame, so query plans (and their analysis time) stay small however many iterations run.
_MAX_PIECES = 10

Row = tuple[Value, ...]


class _Relation:
    """A relation's facts so far: materialised pieces (deltas) and their total size."""

    def __init__(self, spark: SparkSession, arity: int, codes: Codes | None = None) -> None:
        self.spark = spark
        self.arity = arity
        self.codes = codes  # the dictionary its pieces are coded in, or None for text
        self.pieces: list[DataFrame] = []
        self.size = 0
        self.old_pieces = 0  # how many of the pieces were there before the last add
        self.old_size = 0

    def frame(self) -> DataFrame:
        if not self.pieces:
            return self.empty()
        return union_all(self.pieces)

    def empty(self) -> DataFrame:
        """An empty frame of the relation's columns."""
        return self.codes.empty(self.spark, self.arity) if self.codes else empty_frame(self.spark, self.arity)

    def old_frame(self) -> DataFrame:
        """The relation as it was before the last :meth:`add` (without the current delta)."""
        if not self.old_pieces:
            return self.empty()
        return union_all(self.pieces[: self.old_pieces])

    def add(self, df: DataFrame | None, n: int) -> None:
        if n and len(self.pieces) >= _MAX_PIECES:
            # folded before the new piece joins: the new piece is the current delta (and the
            # rest the relation without it), both read by the next round; the old pieces are not
            old = self.pieces
            self.pieces = [materialize_count(union_all(old))[0]]
            for piece in old:
                release(piece)
        self.old_pieces, self.old_size = len(self.pieces), self.size
        if n == 0 or df is None:
            return
        self.pieces.append(df)
        self.size += n



class _Evaluator:
    def __init__(self, analysis: Analysis, db: SparkDatabase, spark: SparkSession, broadcast_rows: int) -> None:
        self.analysis = analysis
        self.db = db
        self.spark = spark
        self.broadcast_rows = broadcast_rows
        self.idb: dict[str, _Relation] = {rel: _Relation(spark, analysis.arities[rel]) for rel in analysis.idb}
        self.deltas: dict[str, tuple[DataFrame, int]] = {}
        self.iterations = 0
        self.local: Settings = settings(spark)
        self.plan: list[dict[str, Any]] = []  # how each component ran, in evaluation order
        self.held: list[DataFrame] = []  # materialised frames that relation frames read
        self.members: set[str] = set()  # the relations of the recursive component in rounds
        self.rounds_adaptive = _adaptive_mode(spark.conf.get(ROUNDS_ADAPTIVE_CONF, "auto"))
        self.codes_mode = codes_mode(spark.conf.get(CODES_CONF, "auto"))
        self.codes: Codes | None = None  # the dictionary of the component in coded rounds
        self.coded: dict[str, DataFrame] = {}  # its inputs, coded

    # the Sources a compiled rule reads
    def _frame(self, rel: str, source: str) -> DataFrame:
        if source == "delta":
            return self.deltas[rel][0]
        if source == "old" and rel in self.members:
            return self.idb[rel].old_frame()
        if rel in self.coded:
            return self.coded[rel]
        if rel in self.idb:
            return self.idb[rel].frame()
        return self.db.frames[rel]

    def _size(self, rel: str, source: str) -> int | None:
        if source == "delta":
            return self.deltas[rel][1]
        if source == "old" and rel in self.members:
            return self.idb[rel].old_size
        if rel in self.idb:
            return self.idb[rel].size
        return self.db.sizes[rel]

    def sources(self) -> Sources:
        return Sources(self._frame, self._size, self.db.types, self.broadcast_rows, self.codes.literal if self.codes else None)

    def _new_facts(self, rel: str, plans: list[DataFrame]) -> tuple[DataFrame | None, int]:
        """Materialise the facts of ``plans`` not yet in ``rel``; returns (delta, its size)."""
        if not plans:
            return None, 0
        arity = self.analysis.arities[rel]
        cols = rel_columns(arity)
        known = self.idb[rel]
        new, old = union_all(plans), known.frame()

        def done(df: DataFrame) -> DataFrame:
            return df

        codes = known.codes
        if codes is not None and codes.packs(arity):
            # coded rows packed into one long: the deduplication and the anti-join hash a long
            new, old, cols = codes.pack(new, arity), codes.pack(old, arity), [PACKED]

            def done(df: DataFrame) -> DataFrame:
                return codes.unpack(df, arity)

        new = new.distinct()
        if not known.size:
            return materialize_count(done(new))
        if known.size <= self.broadcast_rows:
            return materialize_count(done(_unknown(new, old, cols)))
        # A large relation: a plain anti-join would shuffle and sort all of it every iteration,
        # even when only a few facts are new (the long tail of a fixpoint). Materialise the
        # candidates first; when they are few, find those already known by streaming the
        # relation past a broadcast of the candidates (no shuffle of the relation), then drop them.
        new, n = materialize_count(new)
        if n == 0:
            return new, 0
        if n <= self.broadcast_rows:
            present = old.join(F.broadcast(new), on=cols, how="left_semi")
            fresh = new.join(F.broadcast(present), on=cols, how="left_anti")
        else:
            fresh = new.join(old, on=cols, how="left_anti")
        out = materialize_count(done(fresh))
        release(new)
        return out

    def _choose(self, comp: Component) -> Decomposition | None:
        """The decomposition to run ``comp`` partition-locally with, or None for global rounds;
        records the choice (and why) in ``plan``."""
        step: dict[str, Any] = {"stratum": comp.stratum, "relations": list(comp.relations)}
        self.plan.append(step)
        if not comp.recursive:
            step["mode"] = "one pass"
            return None
        step["mode"] = "global rounds"
        if not self.local.enabled:
            step["reason"] = f"{ENABLED_CONF}=false"
            return None
        d = decompose_any(comp)
        if isinstance(d, NotDecomposable):
            step["reason"] = d.reason
            return None
        rows = sum(self._size(rel, "full") or 0 for rel in d.broadcast)
        if rows > self.local.broadcast_rows:
            step["reason"] = f"its broadcast inputs hold {rows} rows, over {BROADCAST_LIMIT_CONF}={self.local.broadcast_rows}"
            return None
        if d.kind == "values":
            frames = [(self._frame(rel, "full"), self.analysis.arities[rel], self._size(rel, "full") or 0) for rel in d.graph]
            labels = value_labels(self.spark, frames, self.local.broadcast_rows)
            if isinstance(labels, str):
                step["reason"] = f"value components: {labels} ({BROADCAST_LIMIT_CONF})"
                return None
            d = dataclasses.replace(d, labels=labels)
            step.update(decomposition="value components")
        step.update(mode="partition-local", position=d.position, partitions=self.local.partitions)
        step.update(keyed=sorted(d.keyed), broadcast=list(d.broadcast))
        return d

    def _partition_local(self, comp: Component, d: Decomposition, progress: Progress | None) -> None:
        """``comp``'s exit rules as Spark plans, then its whole fixpoint per partition in one
        job; progress and iterations replay the rounds a global evaluation would have run."""
        src = self.sources()
        seeds: dict[str, list[DataFrame]] = {rel: [] for rel in comp.relations}
        for rule in d.exit_rules:
            plan = compile_rule(self.spark, rule, None, src)
            if plan is not None:
                seeds[rule.head.relation].append(plan)
        run = run_partition_local(
            self.spark, comp, d, seeds, lambda rel: self._frame(rel, "full"), self.analysis.arities, self.db.types, self.local
        )
        for rel in comp.relations:
            if run.counts[rel]:
                self.idb[rel].add(run.frames[rel], run.counts[rel])
        if run.held is not None:
            self.held.append(run.held)
        total = 0
        for i, n in enumerate(run.rounds, 1):
            total += n
            if progress:
                progress(comp, i, n, total)
        if progress:
            progress(comp, len(run.rounds) + 1, 0, total)
        self.iterations += len(run.rounds) + 1

    def _grouped(self, rel: str, plans: list[DataFrame], complete: bool = False) -> list[DataFrame]:
        """An aggregated relation's facts from its rules' instance rows (one plan, or none);
        ``complete``: only the instances with every aggregate's value (aggregate selection)."""
        if not plans:
            return []
        return [group_frame(self.analysis.program, rel, self.db.types[rel], union_all(plans), complete)]

    def component(self, comp: Component, progress: Progress | None) -> None:
        d = self._choose(comp)
        if d is not None:
            self._partition_local(comp, d, progress)
            return
        src = self.sources()
        aggregated = self.analysis.program.aggregated()
        if comp.selective:
            self._selective(comp, progress)
            return
        if not comp.recursive:
            plans: dict[str, list[DataFrame]] = {rel: [] for rel in comp.relations}
            for rule in comp.rules:
                plan = compile_rule(self.spark, rule, None, src)
                if plan is not None:
                    plans[rule.head.relation].append(plan)
            total = 0
            for rel, ps in plans.items():
                if rel in aggregated:
                    ps = self._grouped(rel, ps)
                df, n = self._new_facts(rel, ps)
                if df is not None:
                    self.idb[rel].add(df, n)
                total += n
            self.iterations += 1
            if progress:
                progress(comp, 1, total, total)
            return
        keep = self.rounds_adaptive == "true" or (self.rounds_adaptive == "auto" and _small(self._input_rows(comp)))
        with _adaptive(self.spark, keep):
            if not self._coded_rounds(comp, progress):
                self._rounds(comp, progress, src)

    def _input_rows(self, comp: Component) -> int | None:
        """How many rows the relations ``comp``'s rules read from outside it hold (None: unknown)."""
        members = set(comp.relations)
        inputs = {b.relation for r in comp.rules for b in r.body if isinstance(b, Atom) and b.relation not in members}
        sizes = [self._size(rel, "full") for rel in inputs]
        return None if any(n is None for n in sizes) else sum(n or 0 for n in sizes)

    def _coded_rounds(self, comp: Component, progress: Progress | None) -> bool:
        """Run ``comp``'s global rounds on dictionary codes (:mod:`selp.engines.spark_codes`)
        when its rules allow it and ``spark.selp.rounds.codes`` (auto: by the inputs' size) says
        so: the inputs are coded once, the relations decoded once at the end. False (nothing
        done, the reason in the plan) otherwise."""
        step = self.plan[-1]
        members = list(comp.relations)
        arities = self.analysis.arities
        inputs = sorted({b.relation for r in comp.rules for b in r.body if isinstance(b, Atom) and b.relation not in members})
        rows = self._input_rows(comp)
        if uncodable(comp, self.db.types):
            return False
        why = use_codes(self.codes_mode, rows)
        if why:
            step["values"] = f"text ({why})"
            return False
        codes = Codes.build(self.spark, [(self._frame(rel, "full"), arities[rel]) for rel in inputs], rule_constants(comp),
                            self.broadcast_rows, rows, tuple(arities[rel] for rel in members))
        step["values"] = f"codes ({codes.size} values)" if codes.exact else f"codes (at most {codes.size} values)"
        text = {rel: self.idb[rel] for rel in members}
        # a coded input is computed by the first round's job that reads it, and kept
        self.coded = {rel: materialize(codes.encode(self._frame(rel, "full"), arities[rel])) for rel in inputs}
        self.codes = codes
        try:
            for rel in members:
                self.idb[rel] = _Relation(self.spark, arities[rel], codes)
            self._rounds(comp, progress, self.sources())
            for rel in members:
                coded = self.idb[rel]
                if coded.size:
                    # no job of its own (the size is known): the first job that reads the
                    # relation decodes it, and keeps it; its coded pieces and the dictionary
                    # are held until then (released with the result)
                    text[rel].add(materialize(codes.decode(coded.frame(), arities[rel])), coded.size)
                self.held.extend(coded.pieces)
            self.held.append(codes.table)
        except BaseException:
            release(codes.table)
            raise
        finally:
            self.idb.update(text)
            self.codes = None
            for frame in self.coded.values():
                release(frame)
            self.coded = {}
        return True

    def _rounds(self, comp: Component, progress: Progress | None, src: Sources) -> None:
        """A recursive component in global semi-naive rounds (one counting job a round, plus a
        fold of the relation's pieces now and then)."""
        members = set(comp.relations)
        base: list = []
        variants: list[tuple] = []  # (rule, index of the body atom that reads the delta)
        for rule in comp.rules:
            rec = [i for i, b in enumerate(rule.body) if isinstance(b, Atom) and not b.negated and b.relation in members]
            if not rec:
                base.append(rule)
            variants.extend((rule, i) for i in rec)
        pending: dict[str, list[DataFrame]] = {rel: [] for rel in members}
        for rule in base:
            plan = compile_rule(self.spark, rule, None, src)
            if plan is not None:
                pending[rule.head.relation].append(plan)
        iteration = 0
        while True:
            iteration += 1
            # every plan of this round was built from the previous round's relations, so the
            # new deltas are all computed before any relation grows
            fresh = {rel: self._new_facts(rel, pending[rel]) for rel in sorted(members)}
            delta_size = 0
            for rel, (df, n) in fresh.items():
                self.deltas[rel] = (df if df is not None else self.idb[rel].empty(), n)
                self.idb[rel].add(df, n)  # also when empty: "old" is then the whole relation
                delta_size += n
            self.iterations += 1
            if progress:
                progress(comp, iteration, delta_size, sum(self.idb[r].size for r in members))
            if delta_size == 0:
                break
            pending = {rel: [] for rel in members}
            src = self.sources()
            self.members = members
            for rule, i in variants:
                # None when its delta is empty; a rule with several recursive atoms reads the
                # relations without their delta after atom i, so each combination of delta facts
                # is formed by one variant only (nonlinear closure: about a third fewer joins)
                plan = compile_rule(self.spark, rule, i, src, old_after=True)
                if plan is not None:
                    pending[rule.head.relation].append(plan)
        self.members = set()
        for rel in members:
            self.deltas.pop(rel, None)

    def _selective(self, comp: Component, progress: Progress | None) -> None:
        """Min/max through recursion: rounds of aggregate selection (see :mod:`selp.aggregate`);
        a group's improved fact replaces its old one, and the improvements are the next delta."""
        program = self.analysis.program
        aggregated = program.aggregated()
        members = set(comp.relations)
        base = [r for r in comp.rules if not _recursive(r, members)]
        variants = [(r, i) for r in comp.rules for i in _recursive(r, members)]
        src = self.sources()
        pending = {rel: [p for r in base if r.head.relation == rel and (p := compile_rule(self.spark, r, None, src)) is not None] for rel in members}
        for rel in members:
            self.deltas[rel] = (empty_frame(self.spark, self.analysis.arities[rel]), 0)
        iteration = 0
        while True:
            iteration += 1
            fresh: dict[str, tuple[DataFrame, int]] = {}
            for rel in sorted(members):  # every candidate before any relation changes
                grouped = self._grouped(rel, pending[rel], complete=True)
                if not grouped:
                    fresh[rel] = (empty_frame(self.spark, self.analysis.arities[rel]), 0)
                    continue
                best = improvements(program, rel, self.db.types[rel], grouped[0], self.idb[rel].frame())
                fresh[rel] = materialize_count(best)
            size = 0
            improved = []
            for rel in sorted(members):
                df, n = fresh[rel]
                self.deltas[rel] = (df, n)
                if n:
                    improved.append(rel)
                    size += n
                    known = self.idb[rel]
                    whole, total = materialize_count(replaced(known.frame(), df, known.arity, aggregated[rel]))
                    for piece in known.pieces:
                        release(piece)
                    known.pieces, known.size = [whole], total
            self.iterations += 1
            if progress:
                progress(comp, iteration, size, sum(self.idb[r].size for r in members))
            if size == 0:
                break
            groups = sum(self.idb[r].size for r in members)
            if aggregate.diverges(iteration, groups):
                rel = improved[0]
                name, loc, _ = aggregate.site(comp.rules, rel)
                raise aggregate.no_convergence(rel, aggregated[rel].fns[0], iteration, groups, name, loc)
            src = self.sources()
            pending = {rel: [] for rel in members}
            for rule, i in variants:
                plan = compile_rule(self.spark, rule, i, src)
                if plan is not None:
                    pending[rule.head.relation].append(plan)
        for rel in members:
            self.deltas.pop(rel, None)


def _adaptive_mode(value: str) -> str:
    """The ``spark.selp.rounds.adaptive`` setting checked: ``auto``, ``true`` or ``false``."""
    mode = value.strip().lower()
    if mode not in ROUNDS_ADAPTIVE_MODES:
        raise SelpError(f"{ROUNDS_ADAPTIVE_CONF}={value!r}: expected auto, true or false")
    return mode


def _small(input_rows: int | None) -> bool:
    """Whether a component whose inputs hold ``input_rows`` rows (None: unknown) is small enough
    to keep adaptive execution in its rounds under ``auto`` (the threshold of codes' ``auto``)."""
    return input_rows is not None and input_rows < AUTO_MIN_ROWS


@contextmanager
def _adaptive(spark: SparkSession, keep: bool) -> Iterator[None]:
    """Adaptive query execution off for the block, unless ``keep`` (``spark.selp.rounds.adaptive``
    and the component's size) or it is off already; the session's setting is restored after."""
    was = spark.conf.get(_AQE, "true")
    if keep or was.strip().lower() != "true":
        yield
        return
    spark.conf.set(_AQE, "false")
    try:
        yield
    finally:
        spark.conf.set(_AQE, was)


def _recursive(rule, members: set[str]) -> list[int]:
    """The body indexes of ``rule``'s positive atoms of ``members``."""
    return [i for i, b in enumerate(rule.body) if isinstance(b, Atom) and not b.negated and b.relation in members]


def _unknown(new: DataFrame, known: DataFrame, cols: list[str]) -> DataFrame:
    """The rows of ``new`` not in ``known`` (``known`` small enough to broadcast).

    The broadcast table is keyed on one 64-bit hash of all columns, the columns compared only on
    a hash match: with the columns as keys every probe builds and hashes a row of strings. The
    optimizer pushes this anti-join below the round's deduplication, so it probes every join
    row of a round -- a nonlinear closure's fifth round ~29M rows for 1,478 new facts, where
    this key took the probes from about 80 s to 70 s of a loaded machine (spark-nonlinear)."""
    if len(cols) == 1:
        return new.join(F.broadcast(known), on=cols, how="left_anti")
    keys = [f"_k{i}" for i in range(len(cols))]
    table = known.select(F.xxhash64(*cols).alias("_h"), *[F.col(c).alias(k) for c, k in zip(cols, keys)])
    same = reduce(lambda a, b: a & b, [F.col(c) == F.col(k) for c, k in zip(cols, keys)])
    # coalesce hides the column equalities from the join-key extraction: the hash is the only key
    cond = (F.xxhash64(*[F.col(c) for c in cols]) == F.col("_h")) & F.coalesce(same, F.lit(False))
    return new.join(F.broadcast(table), cond, how="left_anti")


def _broadcast_rows(spark: SparkSession, given: int | None) -> int:
    if given is not None:
        return given
    return int(spark.conf.get(BROADCAST_ROWS_CONF, str(DEFAULT_BROADCAST_ROWS)))


def run_spark(
    analysis: Analysis,
    db_dir: "str | Path | SparkDatabase | None",
    spark: SparkSession,
    progress: Progress | None = None,
    broadcast_rows: int | None = None,
) -> "SparkResult":
    """Load ``db_dir`` (plus inline facts) with Spark and evaluate the program's fixpoint
    (``db_dir`` may be a loaded :class:`~selp.engines.spark_load.SparkDatabase`).

    ``progress(component, iteration, delta size, total size)`` is called as in the local engine.
    Inputs of at most ``broadcast_rows`` rows (default: the ``spark.selp.broadcastRows`` setting,
    else 200000) are broadcast in joins.
    """
    t0 = time.perf_counter()
    db = db_dir if isinstance(db_dir, SparkDatabase) else load_spark_database(analysis, db_dir, spark)
    load_seconds = time.perf_counter() - t0
    t1 = time.perf_counter()
    ev = _evaluated(analysis, db, spark, _broadcast_rows(spark, broadcast_rows), progress)
    frames = {rel: r.frame() for rel, r in ev.idb.items()}
    counts = {rel: r.size for rel, r in ev.idb.items()}
    return SparkResult(
        spark=spark,
        frames=frames,
        edb_frames=db.frames,
        weights=db.weights,
        types=db.types,
        columns=db.columns,
        iterations=ev.iterations,
        seconds=time.perf_counter() - t1,
        load_seconds=load_seconds,
        warnings=list(db.warnings),
        plan=ev.plan,
        _counts=counts,
        _pieces={rel: list(r.pieces) for rel, r in ev.idb.items()},
        _held=ev.held,
    )


def _evaluated(analysis: Analysis, db: SparkDatabase, spark: SparkSession, broadcast_rows: int,
               progress: Progress | None) -> _Evaluator:
    """The fixpoint of ``analysis`` over the EDB frames of ``db``, component by component."""
    ev = _Evaluator(analysis, db, spark, broadcast_rows)
    try:
        for comp in analysis.components:
            ev.component(comp, progress)
    except Exception as err:  # noqa: BLE001 - Spark's own error types
        error = located(err)  # an arithmetic check raised inside Spark: named at its rule
        if error is None:
            raise
        raise error from None
    return ev


def evaluate_loaded(analysis: Analysis, db: SparkDatabase, spark: SparkSession,
                    broadcast_rows: int) -> tuple[dict[str, DataFrame], dict[str, int], list[DataFrame]]:
    """Evaluate ``analysis`` over EDB frames already loaded in ``db`` (its ``types`` knowing every
    relation): ``(IDB frames, their sizes, the materialised frames to release when done)``."""
    ev = _evaluated(analysis, db, spark, broadcast_rows, None)
    owned = [p for r in ev.idb.values() for p in r.pieces] + ev.held
    return {rel: r.frame() for rel, r in ev.idb.items()}, {rel: r.size for rel, r in ev.idb.items()}, owned


@dataclass
class SparkResult:
    """Result of the Spark engine: IDB relations as DataFrames (collected only on request)."""

    spark: SparkSession
    frames: dict[str, DataFrame]  # IDB relations, columns c0.. (or _unit), uniform encoding
    edb_frames: dict[str, DataFrame]
    weights: dict[str, DataFrame]  # weighted EDB facts: c0.. plus _weight
    types: dict[str, tuple[str, ...]]
    columns: dict[str, tuple[str, ...]]
    iterations: int = 0
    seconds: float = 0.0
    load_seconds: float = 0.0
    warnings: list[str] = field(default_factory=list)
    engine: str = "spark"
    # per component in evaluation order: stratum, relations, mode ("one pass", "global rounds"
    # with the reason, or "partition-local" with position, partitions, keyed and broadcast inputs)
    plan: list[dict[str, Any]] = field(default_factory=list)
    _counts: dict[str, int] = field(default_factory=dict, repr=False)
    _pieces: dict[str, list[DataFrame]] = field(default_factory=dict, repr=False)
    _held: list[DataFrame] = field(default_factory=list, repr=False)

    def relations(self) -> list[str]:
        """IDB relation names, sorted."""
        return sorted(self.frames)

    def close(self) -> None:
        """Free the materialised relations held by Spark (the result is unusable afterwards)."""
        for rel in list(self._pieces):
            for piece in self._pieces.pop(rel):
                release(piece)
        for df in self.edb_frames.values():
            release(df)
        while self._held:
            release(self._held.pop())

    def frame(self, rel: str) -> DataFrame:
        """The DataFrame of an IDB or EDB relation (uniform string encoding)."""
        if rel in self.frames:
            return self.frames[rel]
        return self.edb_frames[rel]

    def count(self, rel: str) -> int:
        """Number of tuples of ``rel`` (known from evaluation; counted once otherwise)."""
        if rel not in self._counts:
            self._counts[rel] = self.frame(rel).count()
        return self._counts[rel]

    def rows(self, rel: str) -> set[Row]:
        """The tuples of ``rel`` as Python values (collected to the driver)."""
        types = self.types[rel]
        if not types:
            return {()} if self.count(rel) else set()
        return {tuple(decode(v, t) for v, t in zip(r, types)) for r in self.frame(rel).collect()}

    def write(self, out_dir: str | Path, fmt: str = "csv") -> list[str]:
        """Write every IDB relation to ``out_dir/REL.fmt`` atomically; returns the paths.

        Each file is written by Spark as one partition into a temporary directory beside the
        target and renamed into place with the Hadoop FileSystem API (so ``out_dir`` may be on
        HDFS); rows are sorted like the local engine's output.
        """
        if fmt not in ("csv", "parquet"):
            raise ValueError(f"unknown output format {fmt!r}")
        base = to_uri(out_dir)
        if is_local_path(out_dir):  # made by Python: the process's umask, a one-line error for a file
            d = check_dir_target(local_path(out_dir))
            try:
                d.mkdir(parents=True, exist_ok=True)
            except OSError as err:
                raise SelpError(f"{out_dir}: cannot write ({err.strerror})") from None
        else:
            fs, hbase = hadoop_fs(self.spark, base)
            fs.mkdirs(hbase)
        written = []
        for rel in self.relations():
            name = f"{rel}.{fmt}"
            target = base.rstrip("/") + "/" + name
            if fmt == "csv":
                _write_csv(self, rel, target)
            else:
                _write_parquet(self, rel, target)
            written.append(str(local_path(out_dir) / name) if is_local_path(out_dir) else target)
        return written


def _sort_keys(df: DataFrame, types: tuple[str, ...]) -> list[Column]:
    """The order of :func:`selp.database.sorted_rows`: per column ints (numerically) or strings
    (by code point = UTF-8 bytes) before labeled nulls (by their text)."""
    keys: list[Column] = []
    for i, t in enumerate(types):
        c = F.col(f"c{i}")
        keys.append(is_skolem(c).asc())
        if t != "str":
            keys.append(number_value(c, t).asc_nulls_last())
        keys.append(c.asc())
    return keys


def _single_file(
    spark: SparkSession, target: str, write: Callable[[str], None], suffix: str
) -> None:
    """Run ``write(tmp_dir)`` (one part file) and move that part onto ``target`` atomically.

    A local target follows :mod:`selp.outfile`: a device or FIFO gets the bytes written into it
    (Spark writes them elsewhere first), a regular file gets ``0666 & ~umask`` or keeps its mode
    (Hadoop would apply its own umask setting instead of the process's)."""
    if not is_local_path(target):
        _hadoop_single_file(spark, target, write, suffix)
        return
    path = local_path(target)
    if writes_in_place(path):
        with tempfile.TemporaryDirectory(prefix="selp-out-") as d:
            part = Path(d) / f"out{suffix}"
            _hadoop_single_file(spark, to_uri(part), write, suffix)
            with open(part, "rb") as src, open_output(path, "wb", encoding=None) as dst:
                shutil.copyfileobj(src, dst, 1 << 20)
        return
    with staged_path(path) as dest:
        _hadoop_single_file(spark, to_uri(dest), write, suffix)
    crc = path.with_name(f".{path.name}.crc")
    crc.unlink(missing_ok=True)  # a stale checksum of an earlier file would fail Hadoop's reads


def _hadoop_single_file(
    spark: SparkSession, target: str, write: Callable[[str], None], suffix: str
) -> None:
    """:func:`_single_file` on any Hadoop file system (renamed with the FileSystem API)."""
    fs, htarget = hadoop_fs(spark, target)
    parent = htarget.getParent()
    tmp = parent.toString().rstrip("/") + f"/.{htarget.getName()}.{uuid.uuid4().hex}.tmp"
    _, htmp = hadoop_fs(spark, tmp)
    # the raw local file system renames without dragging Hadoop's .crc side files along
    rfs = fs.getRawFileSystem() if fs.getScheme() == "file" else fs
    try:
        write(tmp)
        parts = [st.getPath() for st in fs.listStatus(htmp) if st.getPath().getName().startswith("part-")]
        parts = [p for p in parts if p.getName().endswith(suffix)]
        if len(parts) != 1:
            raise RuntimeError(f"expected one part file in {tmp}, found {len(parts)}")
        if not rfs.rename(parts[0], htarget):
            # HDFS does not rename over an existing file: replace it
            if rfs.exists(htarget):
                rfs.delete(htarget, False)
            if not rfs.rename(parts[0], htarget):
                raise OSError(f"cannot move {parts[0].toString()} to {target}")
    finally:
        fs.delete(htmp, True)
        crc = parent.toString().rstrip("/") + f"/.{htarget.getName()}.crc"
        cfs, hcrc = hadoop_fs(spark, crc)
        if cfs.getScheme() == "file" and cfs.exists(hcrc):
            cfs.delete(hcrc, False)  # a stale checksum of an earlier file would fail reads


def _write_csv(res: SparkResult, rel: str, target: str) -> None:
    types = res.types[rel]
    names = list(res.columns[rel])
    spark = res.spark
    if not types:
        # Spark cannot write a CSV without columns; write what the local engine writes
        n = 1 if res.count(rel) else 0
        data = b"\r\n" * (1 + n)

        def write_bytes(tmp: str) -> None:
            fs, h = hadoop_fs(spark, tmp + "/part-00000.csv")
            out = fs.create(h, True)
            try:
                out.write(bytearray(data))
            finally:
                out.close()

        _single_file(spark, target, write_bytes, ".csv")
        return
    df = res.frame(rel)
    ordered = df.coalesce(1).sortWithinPartitions(*_sort_keys(df, types))
    out = ordered.select(*[display_column(F.col(f"c{i}")).alias(n) for i, n in enumerate(names)])

    def write(tmp: str) -> None:
        (
            out.write.option("header", True)
            .option("quote", '"')
            .option("escape", '"')
            .option("emptyValue", "")
            # Spark trims cell text when writing CSV unless told not to
            .option("ignoreLeadingWhiteSpace", False)
            .option("ignoreTrailingWhiteSpace", False)
            .csv(tmp)
        )

    _single_file(spark, target, write, ".csv")


def _write_parquet(res: SparkResult, rel: str, target: str) -> None:
    types = res.types[rel]
    names = list(res.columns[rel])
    df = res.frame(rel)
    int_cols = [i for i, t in enumerate(types) if t != "str"]  # numbers: int and float
    with_nulls: set[int] = set()
    if int_cols:
        # an int column holding labeled nulls is written as text, as the local engine does
        row = df.agg(*[F.max(is_skolem(F.col(f"c{i}")).cast("int")).alias(f"s{i}") for i in int_cols]).first()
        with_nulls = {i for i in int_cols if row is not None and row[f"s{i}"]}
    if not types:
        out = df.select(F.col(UNIT))
    else:
        cols = []
        for i, n in enumerate(names):
            c = F.col(f"c{i}")
            native = "bigint" if types[i] == "int" else "double"
            cols.append((c.try_cast(native) if i in int_cols and i not in with_nulls else display_column(c)).alias(n))
        out = df.coalesce(1).sortWithinPartitions(*_sort_keys(df, types)).select(*cols)
    # nullable fields, like the local engine's Parquet files: nullif with a text no value can be
    # (values never start with two NULs) is a no-op the optimizer cannot prove non-null
    out = out.select(*[F.nullif(F.col(f.name), F.lit("\x00\x00")).alias(f.name) if not f.nullable else F.col(f.name) for f in out.schema.fields])
    _single_file(res.spark, target, lambda tmp: out.coalesce(1).write.parquet(tmp), ".parquet")
