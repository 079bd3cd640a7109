"""Stratified semi-naive evaluation inside DuckDB.

Components of the program are evaluated in dependency order, each as set-at-a-time SQL:

* a non-recursive component is one ``INSERT ... SELECT`` per relation (the ``UNION`` of its rules);
* a *linear* recursive component of one relation (each rule reads the relation at most once) is one
  recursive CTE with set semantics (``UNION``): DuckDB then iterates semi-naively inside one
  query, keeping the accumulated relation's hash table between iterations -- on transitive
  closure about 2x faster than driving the iterations from Python;
* any other recursive component (mutual or non-linear recursion) runs semi-naive rounds driven from
  Python: per rule and recursive body atom, a variant reading that atom's delta; the union of the
  variants anti-joined with the accumulated relation is the next delta.

Negated atoms read relations of lower strata, complete by then, as aggregates do; a recursive
component of min/max relations runs rounds of aggregate selection
(:mod:`selp.engines.embedded.aggregate`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable

from selp.arith import located
from selp.engines.embedded.aggregate import group_sql, selective
from selp.engines.embedded.sql import compile_body, columns, ident
from selp.engines.embedded.store import Store, create_table, table
from selp.language.ast import Atom, Rule
from selp.language.validate import Component

# progress(component, iteration, delta size, total size of the component's relations)
Progress = Callable[[Component, int, int, int], None]


@dataclass
class EvalStats:
    """What an evaluation did."""

    iterations: int = 0
    seconds: float = 0.0


def _rule_sql(store: Store, rule: Rule, reads: Callable[[int, str], str]) -> str:
    return compile_body(rule, store.kinds, reads).select(distinct=False)


def _union(selects: list[str]) -> str:
    """The set union of rule queries (each of which may repeat a head fact)."""
    if len(selects) == 1:
        return f"SELECT DISTINCT * FROM ({selects[0]})"
    return " UNION ".join(f"({q})" for q in selects)


def _full(i: int, rel: str) -> str:
    return table(rel)


def _recursive_atoms(rule: Rule, members: set[str]) -> list[int]:
    return [i for i, b in enumerate(rule.body) if isinstance(b, Atom) and not b.negated and b.relation in members]


def evaluate_store(store: Store, progress: Progress | None = None, stats: EvalStats | None = None) -> None:
    """Compute every IDB relation of ``store.analysis`` into its table; an arithmetic error
    raised inside DuckDB comes out as the located :class:`~selp.errors.EvalError`."""
    try:
        _evaluate_store(store, progress, stats)
    except Exception as err:  # noqa: BLE001 - duckdb's own error types
        error = located(err)
        if error is None:
            raise
        raise error from None


def _evaluate_store(store: Store, progress: Progress | None, stats: EvalStats | None) -> None:
    t0 = time.perf_counter()
    con = store.con
    analysis = store.analysis
    for rel in sorted(analysis.idb):
        create_table(con, table(rel), store.kinds[rel])
    iterations = 0
    aggregated = analysis.program.aggregated()
    for comp in analysis.components:
        members = set(comp.relations)
        if comp.selective:
            iterations += selective(store, comp, progress)
            continue
        if not comp.recursive:
            for rel in comp.relations:
                selects = [_rule_sql(store, r, _full) for r in comp.rules if r.head.relation == rel]
                query = group_sql(store, rel, selects) if rel in aggregated else _union(selects)
                con.execute(f"INSERT INTO {table(rel)} {query}")
            iterations += 1
            if progress:
                size = sum(store.count(r) for r in comp.relations)
                progress(comp, 1, size, size)
            continue
        linear = len(members) == 1 and all(len(_recursive_atoms(r, members)) <= 1 for r in comp.rules)
        if linear:
            iterations += _linear(store, comp)
            if progress:
                size = store.count(comp.relations[0])
                progress(comp, 1, size, size)
        else:
            iterations += semi_naive(store, comp, members, progress)
    if stats is not None:
        stats.iterations = iterations
        stats.seconds = time.perf_counter() - t0


def _linear(store: Store, comp: Component) -> int:
    """One relation, each rule reading it at most once: a recursive CTE with set semantics."""
    rel = comp.relations[0]
    members = {rel}
    cte = ident(f"cte:{rel}")
    base = [r for r in comp.rules if not _recursive_atoms(r, members)]
    rec = [r for r in comp.rules if _recursive_atoms(r, members)]
    if not base:
        return 1  # every rule needs a fact of the relation first: it stays empty

    def reads(i: int, r: str) -> str:
        return cte if r == rel and i >= 0 else table(r)

    base_sql = " UNION ".join(_rule_sql(store, r, _full) for r in base)
    rec_sql = " UNION ALL ".join(_rule_sql(store, r, reads) for r in rec)
    cols = ", ".join(columns(len(store.kinds[rel])))
    store.con.execute(
        f"INSERT INTO {table(rel)} WITH RECURSIVE {cte}({cols}) AS "
        f"(SELECT * FROM ({base_sql}) UNION SELECT * FROM ({rec_sql})) SELECT * FROM {cte}"
    )
    return 1


def semi_naive(store: Store, comp: Component, members: set[str], progress: Progress | None) -> int:
    """Semi-naive rounds of the recursive component ``comp`` (its relations ``members``, whose
    tables exist) driven from Python; ``progress`` sees every round. Returns the rounds run."""
    con = store.con
    delta = {rel: ident(f"d:{rel}") for rel in members}
    new = {rel: ident(f"n:{rel}") for rel in members}
    for rel in members:
        create_table(con, delta[rel], store.kinds[rel])
    variants: dict[str, list[str]] = {rel: [] for rel in members}
    base: dict[str, list[str]] = {rel: [] for rel in members}
    for rule in comp.rules:
        rec = _recursive_atoms(rule, members)
        head = rule.head.relation
        if not rec:
            base[head].append(_rule_sql(store, rule, _full))
        for j in rec:
            variants[head].append(_rule_sql(store, rule, lambda i, r, j=j: delta[r] if i == j else table(r)))
    iteration = 0
    pending = base
    while True:
        iteration += 1
        for rel in sorted(members):
            cols = columns(len(store.kinds[rel]))
            if pending[rel]:
                union = _union(pending[rel])
                on = " AND ".join(f"f.{c} = n.{c}" for c in cols)
                con.execute(
                    f"CREATE OR REPLACE TABLE {new[rel]} AS SELECT * FROM ({union}) AS n"
                    f" WHERE NOT EXISTS (SELECT 1 FROM {table(rel)} AS f WHERE {on})"
                )
            else:
                create_table(con, new[rel], store.kinds[rel])
        size = 0
        for rel in sorted(members):
            size += int(con.execute(f"INSERT INTO {table(rel)} SELECT * FROM {new[rel]}").fetchall()[0][0])
            con.execute(f"DROP TABLE IF EXISTS {delta[rel]}")
            con.execute(f"ALTER TABLE {new[rel]} RENAME TO {ident(f'd:{rel}')}")
        if progress:
            progress(comp, iteration, size, sum(store.count(r) for r in members))
        if size == 0:
            break
        pending = variants
    for rel in members:
        con.execute(f"DROP TABLE IF EXISTS {delta[rel]}")
    return iteration
