"""One recursive component's fixpoint in DuckDB, over Arrow tables in selp's uniform encoding.

This is what a Spark task runs for a partition of a decomposable component
(:mod:`selp.engines.decompose`, :mod:`selp.engines.spark_partitioned`): the component's initial
facts (*seeds*: what its exit rules derived) and the relations its recursive rules read arrive
as Arrow tables of string columns ``c0..`` (a nullary relation: one ``_unit`` column), exactly
Spark's relation frames; the fixpoint runs as the embedded engine's semi-naive rounds
(:func:`selp.engines.embedded.evaluate.semi_naive`) and the relations come back in the same
encoding, with the size of every round's delta -- so the caller can report the rounds a global
evaluation would have run.

Storage follows :mod:`selp.engines.embedded.physical`: a column is a native ``BIGINT`` unless it
is text or a labeled null can reach it; which input columns hold labeled nulls is read off the
data, so every partition picks its own storage and the encoded answer is the same.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from selp.engines.embedded.evaluate import semi_naive
from selp.engines.embedded.physical import column_kinds
from selp.engines.embedded.sql import MARK, columns
from selp.engines.embedded.store import Store, close, connect, create_table, table
from selp.language.ast import Atom, Program, Rule, Var
from selp.language.validate import Analysis, Component


def seed_relation(rel: str) -> str:
    """The input relation holding ``rel``'s seeds (``:`` cannot occur in a program's names)."""
    return f"seed:{rel}"


@dataclass(frozen=True)
class ComponentTask:
    """A component cut out of its program: its relations, its recursive rules, and the arity and
    logical column types of every relation those read."""

    members: tuple[str, ...]
    recursive_rules: tuple[Rule, ...]
    arities: Mapping[str, int]  # members and inputs
    types: Mapping[str, tuple[str, ...]]
    threads: int = 1  # DuckDB threads: a Spark task owns spark.task.cpus cores

    def analysis(self) -> Analysis:
        """The component as a program of its own: seed copy rules as the exit rules, every
        relation outside the component an input."""
        seeds = []
        for rel in self.members:
            vs = tuple(Var(f"v{i}") for i in range(self.arities[rel]))
            seeds.append(Rule(seed_relation(rel), Atom(rel, vs), (Atom(seed_relation(rel), vs),)))
        rules = tuple(seeds) + tuple(self.recursive_rules)
        arities = dict(self.arities) | {seed_relation(r): self.arities[r] for r in self.members}
        edb = frozenset(arities) - frozenset(self.members)
        comp = Component(tuple(self.members), rules, True, 0)
        return Analysis(Program(rules=rules), arities, edb, frozenset(self.members), (comp,))

    def all_types(self) -> dict[str, tuple[str, ...]]:
        """Logical types of the task's relations, seeds included."""
        return dict(self.types) | {seed_relation(r): self.types[r] for r in self.members}


@dataclass
class ComponentOutput:
    """The fixpoint of one partition: each relation of the component (uniform encoding) and the
    number of new facts of every semi-naive round, the last (empty) round excluded."""

    facts: dict[str, Any]  # relation -> pyarrow.Table, columns c0..
    rounds: list[int]


def _tainted_columns(con: Any, view: str, rel: str, arity: int) -> set[tuple[str, int]]:
    if not arity:
        return set()
    checks = ", ".join(f"coalesce(bool_or(starts_with(c{i}, {MARK})), FALSE)" for i in range(arity))
    got = con.execute(f"SELECT {checks} FROM {view}").fetchall()[0]
    return {(rel, i) for i in range(arity) if got[i]}


def fixpoint(con: Any, task: ComponentTask, seeds: Mapping[str, Any], inputs: Mapping[str, Any]) -> tuple[Store, list[int]]:
    """Load ``seeds`` (member -> Arrow table) and ``inputs`` (every other relation the rules
    read -> Arrow table; a relation missing from either is empty) into ``con`` and run the
    component's semi-naive rounds there; the store (``table(rel)`` holds each relation) and the
    new facts of every round, the last (empty) round excluded."""
    analysis = task.analysis()
    types = task.all_types()
    given = {seed_relation(r): t for r, t in seeds.items()} | dict(inputs)
    views: dict[str, str] = {}
    tainted: set[tuple[str, int]] = set()
    for n, (rel, tbl) in enumerate(sorted(given.items())):
        if rel not in analysis.edb or tbl is None or tbl.num_rows == 0:
            continue
        views[rel] = f"_in{n}"
        con.register(views[rel], tbl)
        tainted |= _tainted_columns(con, views[rel], rel, analysis.arities[rel])
    kinds = column_kinds(analysis, types, tainted)
    names = {rel: tuple(columns(n)) for rel, n in analysis.arities.items()}
    store = Store(con, analysis, types, kinds, names)
    for rel in sorted(analysis.arities):
        ks = kinds[rel]
        create_table(con, table(rel), ks)
        if rel not in views:
            continue
        if not ks:
            con.execute(f"INSERT INTO {table(rel)} SELECT TRUE FROM {views[rel]} LIMIT 1")
            continue
        cols = [f"CAST(c{i} AS BIGINT)" if k.native_int else f"c{i}" for i, k in enumerate(ks)]
        con.execute(f"INSERT INTO {table(rel)} SELECT DISTINCT {', '.join(cols)} FROM {views[rel]}")
    rounds: list[int] = []
    semi_naive(store, analysis.components[0], set(task.members), lambda c, i, d, t: rounds.append(d))
    return store, [d for d in rounds if d]


def run_component(task: ComponentTask, seeds: Mapping[str, Any], inputs: Mapping[str, Any]) -> ComponentOutput:
    """The fixpoint of ``task``'s component from ``seeds`` (member -> Arrow table), reading
    ``inputs`` (every other relation its rules read -> Arrow table); a relation missing from
    either is empty."""
    import pyarrow as pa

    con = connect(threads=task.threads)
    try:
        store, rounds = fixpoint(con, task, seeds, inputs)
        facts = {}
        for rel in task.members:
            n = len(store.kinds[rel])
            cols = ", ".join(f"CAST(c{i} AS VARCHAR) AS c{i}" for i in range(n))
            facts[rel] = con.sql(f"SELECT {cols} FROM {table(rel)}").to_arrow_table().cast(
                pa.schema([(c, pa.string()) for c in columns(n)])
            )
        return ComponentOutput(facts, rounds)
    finally:
        close(con)
