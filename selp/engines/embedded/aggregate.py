"""Aggregates inside DuckDB, with the semantics of :mod:`selp.aggregate`.

A rule of an aggregated relation compiles (:func:`selp.engines.embedded.sql.compile_body`) to one
row per rule instance, the aggregated column holding the instance's value; :func:`group_sql`
groups the ``UNION ALL`` of its rules. A recursive component of min/max relations runs rounds of
aggregate selection driven from Python (:func:`selective`): the best candidate of each group
replaces the group's fact when it improves it (on any of its aggregates, the others kept), and
the improvements are the next delta.
"""

from __future__ import annotations

from typing import Callable

from selp import aggregate, arith
from selp.engines.embedded.physical import Kind
from selp.engines.embedded.sql import Expr, columns, compile_body, convert, ident, number, sql_string
from selp.engines.embedded.store import Store, create_table, table
from selp.language.ast import Atom, Rule
from selp.language.validate import Component

Progress = Callable[[Component, int, int, int], None]

def _value_kind(kind: Kind) -> Kind:
    """The kind of the plain aggregated values (``BIGINT``, ``DOUBLE`` or ``VARCHAR``)."""
    return Kind(kind.logical, False)


def group_sql(store: Store, rel: str, selects: list[str], complete: bool = False) -> str:
    """The facts of aggregated ``rel`` from its rules' instance queries (``complete``: only the
    instances with a value for every aggregate, as aggregate selection takes them)."""
    program = store.analysis.program
    spec = program.aggregated()[rel]
    kinds = store.kinds[rel]
    cols = columns(len(kinds))
    aggs: dict[int, str] = {}
    values: dict[int, str] = {}
    for k, (pos, fn) in enumerate(zip(spec.positions, spec.fns)):
        v = f"u.{cols[pos]}"
        if fn == "count":
            agg, kind = "COUNT(*)", Kind("int", False)
        elif fn in ("min", "max"):
            agg, kind = f"{fn.upper()}({v})", _value_kind(kinds[pos])
        else:
            name, _, arg = aggregate.site(program.rules, rel, k)
            loc = next(r.head.loc for r in program.rules if r.name == name)
            fault = "integer overflow" if kinds[pos].logical == "int" else "float overflow"
            w = sql_string(f"{arith.site(name, loc)}{fault}|{aggregate.sum_text(arg)}")
            if kinds[pos].logical == "int":
                agg = f"selp_sum_i(SUM(CAST({v} AS HUGEINT)), {w})"
            else:
                agg = f"selp_sum_f(list_sort(list({v}) FILTER (WHERE {v} IS NOT NULL)), {w})"
            kind = _value_kind(kinds[pos])
        aggs[pos] = agg
        values[pos] = convert(Expr(agg, kind), kinds[pos])
    outs = [f"u.{cols[i]}" for i in spec.keys]
    select = [values[i] if i in values else f"u.{c}" for i, c in enumerate(cols)]
    union = " UNION ALL ".join(f"({q})" for q in selects)
    where = f" WHERE {' AND '.join(f'u.{cols[p]} IS NOT NULL' for p in spec.positions)}" if complete else ""
    group = f" GROUP BY {', '.join(outs)}" if outs else ""
    having = " AND ".join(f"({a}) IS NOT NULL" for a in aggs.values())
    return f"SELECT {', '.join(f'{x} AS {c}' for x, c in zip(select, cols))} FROM ({union}) AS u{where}{group} HAVING COUNT(*) > 0 AND {having}"


def selective(store: Store, comp: Component, progress: Progress | None) -> int:
    """Evaluate a recursive component of min/max relations by aggregate selection; returns the
    number of rounds."""
    con = store.con
    program = store.analysis.program
    aggregated = program.aggregated()
    members = set(comp.relations)
    delta = {rel: ident(f"d:{rel}") for rel in members}
    for rel in members:
        create_table(con, delta[rel], store.kinds[rel])
    base: dict[str, list[str]] = {rel: [] for rel in members}
    variants: dict[str, list[str]] = {rel: [] for rel in members}

    def sql(rule: Rule, reads: Callable[[int, str], str]) -> str:
        return compile_body(rule, store.kinds, reads).select(distinct=False)

    for rule in comp.rules:
        head = rule.head.relation
        rec = [i for i, b in enumerate(rule.body) if isinstance(b, Atom) and not b.negated and b.relation in members]
        if not rec:
            base[head].append(sql(rule, lambda i, r: table(r)))
        for j in rec:
            variants[head].append(sql(rule, lambda i, r, j=j: delta[r] if i == j else table(r)))
    pending = base
    iteration = 0
    while True:
        iteration += 1
        improved: list[str] = []
        size = 0
        # every candidate of this round is computed before any relation changes
        for rel in sorted(members):
            _improvements(store, rel, aggregated[rel], pending[rel])
        for rel in sorted(members):
            n = _apply(store, rel, aggregated[rel], delta[rel])
            size += n
            if n:
                improved.append(rel)
        if progress:
            progress(comp, iteration, size, sum(store.count(r) for r in members))
        if size == 0:
            break
        groups = sum(store.count(r) for r in members)
        if aggregate.diverges(iteration, groups):
            rel = improved[0]
            name, loc, _ = aggregate.site(comp.rules, rel)
            raise aggregate.no_convergence(rel, aggregated[rel].fns[0], iteration, groups, name, loc)
        pending = variants
    for rel in members:
        con.execute(f"DROP TABLE IF EXISTS {delta[rel]}")
    return iteration


def _improvements(store: Store, rel: str, spec: aggregate.Spec, selects: list[str]) -> None:
    """``n:rel``: each group's best candidate, merged with the group's current fact, when it
    improves on at least one of its aggregates (Multi AggSel: one worse or equal on every
    aggregate is pruned)."""
    kinds = store.kinds[rel]
    cols = columns(len(kinds))
    new = ident(f"n:{rel}")
    if not selects:
        create_table(store.con, new, kinds)
        return
    best = group_sql(store, rel, selects, complete=True)
    on = " AND ".join(f"f.{cols[i]} = n.{cols[i]}" for i in spec.keys) or "TRUE"
    better = {}
    for pos, fn in zip(spec.positions, spec.fns):
        op = "<" if fn == "min" else ">"
        # ordered as values (NULL for a labeled null), whatever the column's storage
        mine, theirs = (number(Expr(f"{a}.{cols[pos]}", kinds[pos])) for a in ("n", "f"))
        better[pos] = f"({mine} {op} {theirs})"
    select = [
        f"CASE WHEN f._e IS NULL OR {better[i]} THEN n.{c} ELSE f.{c} END" if i in better else f"n.{c}"
        for i, c in enumerate(cols)
    ]
    store.con.execute(
        f"CREATE OR REPLACE TABLE {new} AS SELECT {', '.join(f'{x} AS {c}' for x, c in zip(select, cols))}"
        f" FROM ({best}) AS n LEFT JOIN (SELECT *, TRUE AS _e FROM {table(rel)}) AS f ON {on}"
        f" WHERE f._e IS NULL OR {' OR '.join(better.values())}"
    )


def _apply(store: Store, rel: str, spec: aggregate.Spec, delta: str) -> int:
    """Replace the improved groups' facts of ``rel`` by ``n:rel``, which becomes the delta."""
    con = store.con
    cols = columns(len(store.kinds[rel]))
    keys = [cols[i] for i in spec.keys]
    new = ident(f"n:{rel}")
    n = int(con.execute(f"SELECT COUNT(*) FROM {new}").fetchall()[0][0])
    if n:
        on = " AND ".join(f"f.{c} = n.{c}" for c in keys) or "TRUE"
        con.execute(f"DELETE FROM {table(rel)} AS f WHERE EXISTS (SELECT 1 FROM {new} AS n WHERE {on})")
        con.execute(f"INSERT INTO {table(rel)} SELECT * FROM {new}")
    con.execute(f"DROP TABLE IF EXISTS {delta}")
    con.execute(f"ALTER TABLE {new} RENAME TO {ident('d:' + rel)}")
    return n
