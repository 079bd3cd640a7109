"""The full-provenance baseline: materialise every rule instance, then answer the top-k query.

The paper (section 6.1, baseline 2) compares selective provenance with tracking the *full*
provenance of the program: every rule instantiation over the database (the provenance hypergraph,
or equation system: one hyperedge per rule instance, from the body facts to the head fact), which
is then queried. This module is that baseline, in two steps:

1. **Materialise** (:func:`materialise_local`, :func:`materialise_spark`). For every rule ``r`` of
   P with positive-body variables ``x1..xn`` the *grounding program* P+ adds the rule
   ``prov@r(x1, .., xn) :- body of r``; evaluating P+ computes P's fixpoint and then, for every
   rule, one row per instance (its variable binding). The head fact and the body facts of an
   instance are projections of that row (every variable of a safe rule is bound by a positive
   body atom), so ``prov@r`` is the hyperedge table of rule ``r`` in a compact, typed form;
   :meth:`Hypergraph.hyperedges` lists them as (rule, head fact, body facts).

2. **Query** (:func:`full_provenance_local`, :func:`full_provenance_spark`). The pattern is
   instrumented as usual (P_p), and every rule of P_p that stands for a rule ``r`` of P gets the
   extra body atom ``prov@r(...)`` (``r``'s variables under the substitution that instrumentation
   applied). The top-k engine then only forms P_p rule instances that are hyperedges of the
   materialised graph, annotated with pattern states: the answer is read off the hypergraph, not
   recomputed from the database. The ``prov@r`` facts are unweighted EDB leaves (the monoid's
   neutral element, no size), and a tree's ``prov`` leaves are determined by its P tree, so the
   answers have exactly the weights of :func:`selp.topk.api.topk` and the same distinct-origin
   rule (ties between equally good trees may pick another representative: origin hashes differ).

Why not match patterns directly over the hypergraph? The instrumented program *is* the pattern
matcher (Proposition 4.2 of the paper), and reusing the same top-k engines makes the comparison
measure only what full provenance adds: materialising the hypergraph (memory: one row per rule
instance, typically several times the number of output tuples) and joining through it.

On Spark the hypergraph tables are written as Parquet files (``prov@r.parquet``) into a work
directory beside links to the EDB files, and the query runs on that directory, all with DataFrame
joins (the Spark engines) and no Python UDFs.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

from selp.database import Database, load_database
from selp.errors import SelpError
from selp.instrument.instrument import Instrumented
from selp.language.ast import Atom, Const, Program, Rule, SkolemTerm, Term, Var
from selp.language.pattern import Pattern
from selp.language.pattern_parser import parse_pattern
from selp.language.validate import Analysis, analyze
from selp.topk.dtable import DTable, FactKey
from selp.topk.monoid import get_monoid
from selp.topk.task import Task, make_task
from selp.values import Value

PROV_PREFIX = "prov@"
GROUND_PREFIX = "ground@"


def prov_relation(rule: str) -> str:
    """The hyperedge table of rule ``rule``: ``prov@<rule>``."""
    return f"{PROV_PREFIX}{rule}"


def rule_variables(rule: Rule) -> tuple[Var, ...]:
    """The variables of ``rule``'s positive body atoms, in order of first occurrence.

    They determine an instance: the head and every body fact are functions of them (safety)."""
    out: dict[Var, None] = {}
    for a in rule.positive_atoms:
        for v in a.vars():
            out.setdefault(v, None)
    return tuple(out)


def _check_names(analysis: Analysis) -> None:
    clash = [r for r in analysis.arities if r.startswith(PROV_PREFIX)]
    if clash:
        raise SelpError(f"full provenance: relation {clash[0]} clashes with the hyperedge tables ({PROV_PREFIX}<rule>)")


def grounding_program(analysis: Analysis) -> Analysis:
    """P+ = P plus ``ground@r: prov@r(vars of r) :- body of r`` for every rule ``r``."""
    _check_names(analysis)
    extra = []
    for r in analysis.program.rules:
        head = Atom(prov_relation(r.name), tuple(rule_variables(r)))
        extra.append(Rule(f"{GROUND_PREFIX}{r.name}", head, r.body, None, True))
    return analyze(dataclasses.replace(analysis.program, rules=analysis.program.rules + tuple(extra)))


def hyperedge_program(analysis: Analysis) -> Analysis:
    """P with ``prov@r(vars of r)`` appended to the body of every rule ``r``: the program whose
    EDB is the database plus the hypergraph (used to load and type the query's inputs)."""
    _check_names(analysis)
    rules = tuple(
        dataclasses.replace(r, body=r.body + (Atom(prov_relation(r.name), tuple(rule_variables(r))),))
        for r in analysis.program.rules
    )
    return analyze(dataclasses.replace(analysis.program, rules=rules))


@dataclass
class Hypergraph:
    """The materialised provenance of P over a database: one row per rule instance.

    ``instances[r]`` holds the bindings of ``variables[r]`` (local engine: a set of tuples;
    Spark: the table was written to ``directory``). ``seconds`` is the time to materialise it.
    """

    analysis: Analysis
    variables: dict[str, tuple[Var, ...]]
    instances: dict[str, set[tuple[Value, ...]]] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    types: dict[str, tuple[str, ...]] = field(default_factory=dict)  # prov relation -> column types
    seconds: float = 0.0
    idb_tuples: int = 0  # output tuples of P (the fixpoint that was grounded)
    directory: Path | None = None  # Spark: where prov@r.parquet and the EDB links are

    @property
    def size(self) -> int:
        """Number of hyperedges (rule instances)."""
        return sum(self.counts.values())

    def hyperedges(self) -> Iterator[tuple[str, FactKey, tuple[FactKey, ...]]]:
        """Every rule instance as ``(rule, head fact, positive body facts in body order)``.

        Local hypergraphs only (a Spark one lives in Parquet files)."""
        for rule in self.analysis.program.rules:
            slots = {v: i for i, v in enumerate(self.variables[rule.name])}
            for row in self.instances.get(rule.name, ()):
                head = (rule.head.relation, tuple(_ground(t, slots, row) for t in rule.head.args))
                body = tuple((a.relation, tuple(_ground(t, slots, row) for t in a.args)) for a in rule.positive_atoms)
                yield rule.name, head, body


def _ground(t: Term, slots: dict[Var, int], row: tuple[Value, ...]) -> Value:
    if isinstance(t, Const):
        return t.value
    if isinstance(t, Var):
        return row[slots[t]]
    from selp.values import Skolem

    assert isinstance(t, SkolemTerm)
    return Skolem(t.fn, tuple(_ground(a, slots, row) for a in t.args))


def materialise_local(analysis: Analysis, db: Database, progress: Callable | None = None) -> Hypergraph:
    """Evaluate P+ over ``db`` with the local engine: P's fixpoint and every rule instance."""
    from selp.engines.local import evaluate

    t0 = time.perf_counter()
    plus = grounding_program(analysis)
    facts = evaluate(plus, db.facts, progress)
    variables = {r.name: rule_variables(r) for r in analysis.program.rules}
    instances = {r: facts.pop(prov_relation(r)) for r in variables}
    idb_tuples = sum(len(facts[rel]) for rel in analysis.idb)
    del facts  # only the hypergraph is kept: P's own tuples are its heads and bodies
    types = {prov_relation(r.name): _variable_types(r, db.types) for r in analysis.program.rules}
    return Hypergraph(analysis, variables, instances, {r: len(s) for r, s in instances.items()}, types,
                      time.perf_counter() - t0, idb_tuples)


def _variable_types(rule: Rule, types: dict[str, tuple[str, ...]]) -> tuple[str, ...]:
    """Column types of ``prov@rule``: each variable's type where it first occurs."""
    out: dict[Var, str] = {}
    for a in rule.positive_atoms:
        for p, t in enumerate(a.args):
            if isinstance(t, Var):
                out.setdefault(t, types[a.relation][p])
    return tuple(out[v] for v in rule_variables(rule))


# --------------------------------------------------------------------------------------------
# the query over the hypergraph


def _unify(general: Term, specific: Term, subst: dict[Var, Term], where: str) -> None:
    if isinstance(general, Var):
        if subst.setdefault(general, specific) != specific:
            raise SelpError(f"full provenance: {where}: variable {general.name} is instantiated twice")
    elif isinstance(general, SkolemTerm):
        if not isinstance(specific, SkolemTerm) or specific.fn != general.fn or len(specific.args) != len(general.args):
            raise SelpError(f"full provenance: {where}: Skolem term does not correspond")
        for g, s in zip(general.args, specific.args):
            _unify(g, s, subst, where)
    elif general != specific:
        raise SelpError(f"full provenance: {where}: constant does not correspond")


def _origin_substitution(rule: Rule, inst_rule: Rule, relation_origin: dict[str, str]) -> dict[Var, Term]:
    """How the P_p rule ``inst_rule`` instantiates its origin ``rule`` of P: head and positive
    body atoms correspond one-to-one, in order (instrumentation renames relations, substitutes
    constants and adds conditions, but keeps the atoms)."""
    where = f"rule {inst_rule.name} (from {rule.name})"
    pos, ipos = rule.positive_atoms, inst_rule.positive_atoms
    if len(pos) != len(ipos):
        raise SelpError(f"full provenance: {where} has {len(ipos)} positive atoms, its origin {len(pos)}")
    subst: dict[Var, Term] = {}
    for a, b in [(rule.head, inst_rule.head), *zip(pos, ipos)]:
        if relation_origin.get(b.relation, b.relation) != a.relation or a.arity != b.arity:
            raise SelpError(f"full provenance: {where}: atom {b.relation} does not stand for {a.relation}")
        for g, s in zip(a.args, b.args):
            _unify(g, s, subst, where)
    return subst


def query_task(analysis: Analysis, types: dict[str, tuple[str, ...]], monoid: str, k: int,
               pattern: Pattern | None, pattern_text: str | None) -> Task:
    """The top-k task of the pattern query, reading rule instances from the hypergraph.

    ``types`` are the column types of P's relations and of the ``prov@r`` tables."""
    m = get_monoid(monoid)
    task = make_task(analysis, types, m, k, pattern, pattern_text)
    inst = task.inst
    p_rules = {r.name: r for r in analysis.program.rules}
    rules = []
    for r in inst.program.rules:
        origin = inst.rule_origin.get(r.name)
        if origin is None:  # a copy step: no rule of P is applied
            rules.append(r)
            continue
        subst = _origin_substitution(p_rules[origin], r, inst.relation_origin)
        atom = Atom(prov_relation(origin), tuple(subst[v] for v in rule_variables(p_rules[origin])))
        rules.append(dataclasses.replace(r, body=r.body + (atom,)))
    program: Program = dataclasses.replace(inst.program, rules=tuple(rules))
    new_inst = Instrumented(program, inst.roots, dict(inst.relation_origin), dict(inst.rule_origin), dict(inst.stats), inst.next_node)
    inst_analysis = analyze(program)
    all_types = dict(task.types)
    for rel in inst_analysis.arities:
        if rel.startswith(PROV_PREFIX):
            all_types[rel] = types[rel]
    return dataclasses.replace(task, analysis=hyperedge_program(analysis), inst=new_inst,
                               inst_analysis=inst_analysis, types=all_types)


def _parse(pattern: str | Pattern | None) -> tuple[Pattern | None, str | None]:
    if isinstance(pattern, str):
        return parse_pattern(pattern), pattern
    return pattern, None


@dataclass
class FullProvenanceResult:
    """The answers and what it took: hypergraph size and the two phases' seconds."""

    table: Any  # DTable (local) or SparkDTable (spark)
    hyperedges: int
    idb_tuples: int
    materialise_seconds: float
    query_seconds: float
    instrumented_rules: int
    directory: Path | None = None  # Spark: the hypergraph's files (the caller removes them)


def full_provenance_local(
    analysis: Analysis,
    db: Database,
    pattern: str | Pattern | None,
    k: int = 3,
    monoid: str = "confidence",
    algorithm: str = "heuristic",
    hypergraph: Hypergraph | None = None,
) -> FullProvenanceResult:
    """Materialise the hypergraph of P over ``db`` (unless given) and answer the top-k query on it."""
    from selp.topk.local import run_topk_local

    hg = hypergraph or materialise_local(analysis, db)
    parsed, text = _parse(pattern)
    t0 = time.perf_counter()
    types = {**db.types, **hg.types}
    task = query_task(analysis, types, monoid, k, parsed, text)
    facts = dict(db.facts)
    columns = dict(db.columns)
    for r, rows in hg.instances.items():
        facts[prov_relation(r)] = rows
        columns[prov_relation(r)] = tuple(f"c{i}" for i in range(len(hg.variables[r])))
    hdb = Database(facts, db.weights, types, columns, list(db.warnings))
    table = run_topk_local(task, hdb, algorithm)
    return FullProvenanceResult(table, hg.size, hg.idb_tuples, hg.seconds, time.perf_counter() - t0,
                                len(task.inst.program.rules))


def full_provenance(
    program: str | Analysis,
    db_dir: str | Path | None,
    pattern: str | Pattern | None,
    k: int = 3,
    monoid: str = "confidence",
    engine: str = "local",
    spark: Any = None,
    work_dir: str | Path | None = None,
) -> DTable:
    """Like :func:`selp.topk.api.topk`, but through the materialised full provenance."""
    from selp.language import parse_program_file

    analysis = analyze(parse_program_file(program)) if isinstance(program, str) else program
    from selp.engines.registry import get_engine

    if get_engine(engine).needs_spark_session:  # the Spark variant of full provenance, else Python's
        res = full_provenance_spark(analysis, db_dir, pattern, k, monoid, spark, work_dir)
        try:
            return res.table.to_dtable()
        finally:
            res.table.close()
            if work_dir is None and res.directory is not None:
                shutil.rmtree(res.directory.parent, ignore_errors=True)
    db = load_database(analysis, db_dir)
    return full_provenance_local(analysis, db, pattern, k, monoid).table


# --------------------------------------------------------------------------------------------
# Spark


def materialise_spark(analysis: Analysis, db_dir: str | Path | None, spark: Any, work_dir: str | Path,
                      progress: Callable | None = None) -> Hypergraph:
    """Evaluate P+ on Spark and write every ``prov@r`` table to ``work_dir/prov@r.parquet``,
    next to symbolic links to the EDB files of ``db_dir`` (the query's database directory)."""
    from selp.database import discover
    from selp.engines.spark import run_spark

    t0 = time.perf_counter()
    out = Path(work_dir)
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    for rel, tf in discover(db_dir).items():
        if rel in analysis.edb:
            os.symlink(Path(tf.path).resolve(), out / Path(tf.path).name)
    plus = grounding_program(analysis)
    res = run_spark(plus, db_dir, spark, progress)
    try:
        provs = {prov_relation(r.name) for r in analysis.program.rules}
        counts = {r.name: res.count(prov_relation(r.name)) for r in analysis.program.rules}
        idb_tuples = sum(res.count(rel) for rel in analysis.idb)
        only = dataclasses.replace(res, frames={rel: f for rel, f in res.frames.items() if rel in provs})
        only.write(out, "parquet")
        types = {rel: res.types[rel] for rel in provs}
    finally:
        res.close()
    variables = {r.name: rule_variables(r) for r in analysis.program.rules}
    return Hypergraph(analysis, variables, {}, counts, types, time.perf_counter() - t0, idb_tuples, out)


def full_provenance_spark(
    analysis: Analysis,
    db_dir: str | Path | None,
    pattern: str | Pattern | None,
    k: int,
    monoid: str,
    spark: Any,
    work_dir: str | Path | None = None,
    progress: Callable | None = None,
) -> FullProvenanceResult:
    """Materialise the hypergraph with Spark (Parquet in ``work_dir``), then answer on Spark.

    The returned ``table`` is a :class:`selp.topk.spark_dtable.SparkDTable`; close it when done. Without
    ``work_dir`` the files go to a new temporary directory (``directory.parent``), which the caller
    removes when done with the table."""
    from selp.engines.spark_load import load_spark_database
    from selp.topk.spark import run_topk_spark

    if work_dir is None:
        work_dir = Path(tempfile.mkdtemp(prefix="selp-fullprov-")) / "hypergraph"
    hg = materialise_spark(analysis, db_dir, spark, work_dir, progress)
    parsed, text = _parse(pattern)
    t0 = time.perf_counter()
    types = load_spark_database(hyperedge_program(analysis), hg.directory, spark).types
    task = query_task(analysis, types, monoid, k, parsed, text)
    table = run_topk_spark(task, hg.directory, spark, progress)
    table.count()  # the answers are computed here, not lazily later
    return FullProvenanceResult(table, hg.size, hg.idb_tuples, hg.seconds, time.perf_counter() - t0,
                                len(task.inst.program.rules), hg.directory)
