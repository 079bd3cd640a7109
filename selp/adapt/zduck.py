"""Z-relations on DuckDB: a table per relation (shared by an unchanged copy), text columns ``c0..``
and a signed ``_cnt``.

A rule is one ``SELECT ... SUM(product of _cnt) ... GROUP BY`` over its body tables; the rules of
a relation are unioned (``UNION ALL``) and summed again, keeping non-zero counts. No
``DISTINCT`` anywhere: differential plans need exact counts ([GI12]).
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


def rule_sql(plan: RulePlan, table: Callable[[str], str] = lambda r: r) -> str:
    """The SELECT of one rule: head columns and the signed count of each head tuple;
    ``table`` names the stored table of a relation."""
    cols = ", ".join(f"{_sql(e)} AS c{i}" for i, e in enumerate(plan.head)) or "1 AS _unit"
    count = " * ".join(f"t{i}._cnt" for i in range(len(plan.relations))) or "1"
    tables = ", ".join(f"{ident(table(r))} AS t{i}" for i, r in enumerate(plan.relations))
    conds = [f"{_sql(a)} = {_sql(b)}" for a, b in plan.equal] + [f"{_sql(a)} <> {_sql(b)}" for a, b in plan.unequal]
    where = (" WHERE " + " AND ".join(conds)) if conds else ""
    group = " GROUP BY " + ", ".join(str(i + 1) for i in range(len(plan.head))) if plan.head else ""
    sign = "" if plan.sign == 1 else f"{plan.sign} * "
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
        cols = ", ".join(f"c{i}" for i in range(arity))
        union = " UNION ALL ".join(f"({rule_sql(p, self._table)})" for p in plans)
        if arity:
            select = f"SELECT {cols}, SUM(_cnt)::BIGINT AS _cnt FROM ({union}) GROUP BY {cols} HAVING SUM(_cnt) <> 0"
        else:
            select = f"SELECT SUM(_cnt)::BIGINT AS _cnt FROM ({union}) HAVING SUM(_cnt) <> 0"
        self._create(name, arity, select)

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
