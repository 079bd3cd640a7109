"""Z-relations on DuckDB: a table per relation (shared by an unchanged copy), text columns ``c0..``
and a signed ``_cnt``.

A relation of one rule is one ``SELECT ... SUM(product of _cnt) ... GROUP BY`` over its body
tables; the derivations of several rules are unioned (``UNION ALL``) and summed once, or merged
into a stored relation the plan keeps as it is (:meth:`DuckZ._define_sql`); non-zero counts are
kept. No ``DISTINCT`` anywhere: differential plans need exact counts ([GI12]).
"""

from __future__ import annotations

from typing import Callable

import duckdb

from selp.adapt.zprogram import Expr, RulePlan, Stats, TextRel


def ident(name: str) -> str:
    """A quoted SQL identifier (relation names may hold '@')."""
    return '"' + name.replace('"', '""') + '"'


def _lit(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"


def _sql(e: Expr) -> str:
    parts = [_lit(p) if isinstance(p, str) else f"t{p[0]}.c{p[1]}" for p in e]
    return parts[0] if len(parts) == 1 else "(" + " || ".join(parts) + ")"


def rule_sql(plan: RulePlan, table: Callable[[str], str] = lambda r: r, summed: bool = True) -> str:
    """The SELECT of one rule: head columns and the signed count of each head tuple;
    ``table`` names the stored table of a relation. Not ``summed``: one row per derivation
    (the caller sums; a relation of several rules is aggregated once, over their union)."""
    cols = ", ".join(f"{_sql(e)} AS c{i}" for i, e in enumerate(plan.head)) or "1 AS _unit"
    count = " * ".join(f"t{i}._cnt" for i in range(len(plan.relations))) or "1"
    tables = ", ".join(f"{ident(table(r))} AS t{i}" for i, r in enumerate(plan.relations))
    conds = [f"{_sql(a)} = {_sql(b)}" for a, b in plan.equal] + [f"{_sql(a)} <> {_sql(b)}" for a, b in plan.unequal]
    where = (" WHERE " + " AND ".join(conds)) if conds else ""
    sign = "" if plan.sign == 1 else f"{plan.sign} * "
    if not summed:
        return f"SELECT {cols}, ({sign}{count})::BIGINT AS _cnt FROM {tables}{where}"
    group = " GROUP BY " + ", ".join(str(i + 1) for i in range(len(plan.head))) if plan.head else ""
    return f"SELECT {cols}, {sign}SUM({count})::BIGINT AS _cnt FROM {tables}{where}{group}"


def _is_copy(plan: RulePlan, arity: int) -> bool:
    """Whether ``plan`` is ``q(X1..Xn) :- r(X1..Xn)`` with coefficient 1: a copy of ``r``."""
    return (len(plan.relations) == 1 and plan.sign == 1 and not plan.equal and not plan.unequal
            and plan.arities[0] == arity and plan.head == tuple(((0, i),) for i in range(arity)))


class DuckZ:
    """Z-relations as DuckDB tables in one connection (in memory unless a path is given).

    A relation names a stored table; several relations may share one (an unchanged view's new
    instance *is* its old one: :meth:`define` of a plain copy adds a reference, no rows move).
    Tables are never written after creation: redefining a relation creates a new table and
    drops the old one when no relation refers to it any more, so a shared table never changes
    under the other relation.
    """

    def __init__(self, path: str = ":memory:") -> None:
        self.con = duckdb.connect(path)
        self.arity: dict[str, int] = {}
        self.table: dict[str, str] = {}  # relation -> stored table
        self._users: dict[str, int] = {}  # stored table -> relations referring to it
        self._stats: dict[str, Stats] = {}  # per stored table, as a DBMS keeps statistics
        self._made = 0

    def _bind(self, name: str, arity: int, table: str) -> None:
        """Make relation ``name`` refer to ``table`` (releasing what it referred to)."""
        self._users[table] = self._users.get(table, 0) + 1
        self._release(name)
        self.table[name] = table
        self.arity[name] = arity

    def _release(self, name: str) -> None:
        table = self.table.pop(name, None)
        self.arity.pop(name, None)
        if table is None:
            return
        self._users[table] -= 1
        if not self._users[table]:
            del self._users[table]
            self._stats.pop(table, None)
            self.con.execute(f"DROP TABLE IF EXISTS {ident(table)}")

    def _fresh(self, name: str) -> str:
        """A table name for a new instance of ``name``: the name itself when free."""
        if name not in self._users:
            return name
        self._made += 1
        while f"{name}#{self._made}" in self._users:
            self._made += 1
        return f"{name}#{self._made}"

    def _create(self, name: str, arity: int, select: str | None) -> None:
        table = self._fresh(name)
        if select is None:
            cols = ", ".join([f"c{i} VARCHAR" for i in range(arity)] + ["_cnt BIGINT"])
            self.con.execute(f"CREATE OR REPLACE TABLE {ident(table)} ({cols})")
        else:  # one statement: the SELECT's columns are VARCHAR texts and a BIGINT count
            self.con.execute(f"CREATE OR REPLACE TABLE {ident(table)} AS {select}")
        self._bind(name, arity, table)

    def put(self, name: str, arity: int, rows: TextRel) -> None:
        data = [(k, n) for k, n in rows.items() if n]
        if not data:
            self._create(name, arity, None)
            return
        import pyarrow as pa

        # one Arrow table, not executemany: DuckDB inserts parameter rows one by one
        cols = [pa.array([k[i] for k, _ in data], type=pa.string()) for i in range(arity)]
        cols.append(pa.array([n for _, n in data], type=pa.int64()))
        self.con.register("_zput", pa.Table.from_arrays(cols, names=[f"c{i}" for i in range(arity)] + ["_cnt"]))
        try:
            self._create(name, arity, "SELECT * FROM _zput")
        finally:
            self.con.unregister("_zput")

    def define(self, name: str, arity: int, plans: list[RulePlan]) -> None:
        if not plans:
            self._create(name, arity, None)
            return
        p = plans[0]
        if len(plans) == 1 and _is_copy(p, arity) and self.arity.get(p.relations[0]) == arity:
            # the plan reuses a stored relation as it is (an unchanged view): a stored relation is
            # already summed with non-zero counts, so ``name`` shares its table
            self._bind(name, arity, self.table[p.relations[0]])
            return
        self._create(name, arity, self._define_sql(arity, plans))

    def _define_sql(self, arity: int, plans: list[RulePlan]) -> str:
        """The SELECT of a relation's summed, non-zero counts. One aggregation in every case:

        * one rule: its own ``GROUP BY`` (no second one over it);
        * a stored relation taken as it is (``+ old``, the old instance a plan folded into) plus
          other rules: only the other rules are aggregated, and merged into the stored rows by
          a full outer join on the tuple -- the stored rows are already summed, re-aggregating
          them with the rest is what recomputing them would cost;
        * otherwise one ``GROUP BY`` over the union of every rule's derivations.
        """
        cols = ", ".join(f"c{i}" for i in range(arity))
        if len(plans) == 1:  # (a nullary rule's SELECT has a placeholder column: not kept)
            return f"SELECT {cols + ', ' if arity else ''}_cnt FROM ({rule_sql(plans[0], self._table)}) WHERE _cnt <> 0"
        kept = next((p for p in plans if arity and _is_copy(p, arity) and self.arity.get(p.relations[0]) == arity), None)
        rest = [p for p in plans if p is not kept]
        union = " UNION ALL ".join(f"({rule_sql(p, self._table, summed=False)})" for p in rest)
        if kept is None:
            if not arity:
                return f"SELECT SUM(_cnt)::BIGINT AS _cnt FROM ({union}) HAVING SUM(_cnt) <> 0"
            return f"SELECT {cols}, SUM(_cnt)::BIGINT AS _cnt FROM ({union}) GROUP BY {cols} HAVING SUM(_cnt) <> 0"
        delta = f"SELECT {cols}, SUM(_cnt)::BIGINT AS _cnt FROM ({union}) GROUP BY {cols}"
        merged = ", ".join(f"COALESCE(o.c{i}, d.c{i}) AS c{i}" for i in range(arity))
        on = " AND ".join(f"o.c{i} = d.c{i}" for i in range(arity))
        total = "(COALESCE(o._cnt, 0) + COALESCE(d._cnt, 0))"
        return (f"SELECT {merged}, {total}::BIGINT AS _cnt FROM {ident(self._table(kept.relations[0]))} AS o "
                f"FULL OUTER JOIN ({delta}) AS d ON {on} WHERE {total} <> 0")

    def _table(self, name: str) -> str:
        return self.table.get(name, name)

    def get(self, name: str) -> TextRel:
        rows = self.con.execute(f"SELECT * FROM {ident(self.table[name])}").fetchall()
        return {tuple(r[:-1]): int(r[-1]) for r in rows}

    def same(self, a: str, b: str) -> bool:
        """Whether relations ``a`` and ``b`` hold the same Z-relation (compared in the database)."""
        ta, tb = ident(self.table[a]), ident(self.table[b])
        if ta == tb:
            return True
        (row,) = self.con.execute(f"SELECT (SELECT COUNT(*) FROM {ta}) = (SELECT COUNT(*) FROM {tb}) "
                                  f"AND NOT EXISTS (SELECT * FROM {ta} EXCEPT ALL SELECT * FROM {tb})").fetchall()
        return bool(row[0])

    def has(self, name: str) -> bool:
        return name in self.arity

    def stats(self, name: str) -> Stats:
        table = self.table[name]
        if table in self._stats:
            return self._stats[table]
        arity = self.arity[name]
        # HyperLogLog estimates: a cost model needs magnitudes, and exact distinct counts of every
        # column cost as much as recomputing a small view
        parts = ["COUNT(*)"] + [f"approx_count_distinct(c{i})" for i in range(arity)]
        # fetchall, not fetchone: an unfinished result would block the next register() (put)
        (row,) = self.con.execute(f"SELECT {', '.join(parts)} FROM {ident(table)}").fetchall()
        rows = int(row[0])
        self._stats[table] = Stats(rows, tuple(min(rows, int(x or 0)) for x in row[1:]))
        return self._stats[table]

    def drop(self, name: str) -> None:
        self._release(name)

    def rename(self, old: str, new: str) -> None:
        """Move relation ``old`` to the name ``new`` (replacing it)."""
        if old == new:
            return
        arity, table = self.arity[old], self.table[old]
        self._bind(new, arity, table)
        self._release(old)

    def names(self) -> list[str]:
        return sorted(self.arity)
