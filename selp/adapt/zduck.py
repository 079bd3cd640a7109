"""Z-relations on DuckDB: one table per relation, text columns ``c0..`` and a signed ``_cnt``.

A rule is one ``SELECT ... SUM(product of _cnt) ... GROUP BY`` over its body tables; the rules of
a relation are unioned (``UNION ALL``) and summed again, keeping non-zero counts. No
``DISTINCT`` anywhere: differential plans need exact counts ([GI12]).
"""

from __future__ import annotations

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


def rule_sql(plan: RulePlan) -> str:
    """The SELECT of one rule: head columns and the signed count of each head tuple."""
    cols = ", ".join(f"{_sql(e)} AS c{i}" for i, e in enumerate(plan.head)) or "1 AS _unit"
    count = " * ".join(f"t{i}._cnt" for i in range(len(plan.relations))) or "1"
    tables = ", ".join(f"{ident(r)} AS t{i}" for i, r in enumerate(plan.relations))
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
    """Z-relations as DuckDB tables in one connection (in memory unless a path is given)."""

    def __init__(self, path: str = ":memory:") -> None:
        self.con = duckdb.connect(path)
        self.arity: dict[str, int] = {}
        self._stats: dict[str, Stats] = {}  # kept until the table changes, as a DBMS keeps statistics

    def _create(self, name: str, arity: int, select: str | None) -> None:
        self._stats.pop(name, None)
        cols = ", ".join([f"c{i} VARCHAR" for i in range(arity)] + ["_cnt BIGINT"])
        self.con.execute(f"CREATE OR REPLACE TABLE {ident(name)} ({cols})")
        if select is not None:
            self.con.execute(f"INSERT INTO {ident(name)} {select}")
        self.arity[name] = arity

    def put(self, name: str, arity: int, rows: TextRel) -> None:
        self._create(name, arity, None)
        data = [(k, n) for k, n in rows.items() if n]
        if data:
            import pyarrow as pa

            # one Arrow table, not executemany: DuckDB inserts parameter rows one by one
            cols = [pa.array([k[i] for k, _ in data], type=pa.string()) for i in range(arity)]
            cols.append(pa.array([n for _, n in data], type=pa.int64()))
            self.con.register("_zput", pa.Table.from_arrays(cols, names=[f"c{i}" for i in range(arity)] + ["_cnt"]))
            try:
                self.con.execute(f"INSERT INTO {ident(name)} SELECT * FROM _zput")
            finally:
                self.con.unregister("_zput")

    def define(self, name: str, arity: int, plans: list[RulePlan]) -> None:
        if not plans:
            self._create(name, arity, None)
            return
        p = plans[0]
        if len(plans) == 1 and _is_copy(p, arity) and self.arity.get(p.relations[0]) == arity:
            # the plan reuses a stored relation as it is (an unchanged view): a stored relation is
            # already summed with non-zero counts, so it is copied without regrouping
            cols = ", ".join([f"c{i}" for i in range(arity)] + ["_cnt"])
            self._create(name, arity, f"SELECT {cols} FROM {ident(p.relations[0])}")
            return
        cols = ", ".join(f"c{i}" for i in range(arity))
        union = " UNION ALL ".join(f"({rule_sql(p)})" for p in plans)
        key = ", ".join(f"c{i}" for i in range(arity))
        if arity:
            select = f"SELECT {cols}, SUM(_cnt)::BIGINT FROM ({union}) GROUP BY {key} HAVING SUM(_cnt) <> 0"
        else:
            select = f"SELECT SUM(_cnt)::BIGINT FROM ({union}) HAVING SUM(_cnt) <> 0"
        self._create(name, arity, select)

    def get(self, name: str) -> TextRel:
        rows = self.con.execute(f"SELECT * FROM {ident(name)}").fetchall()
        return {tuple(r[:-1]): int(r[-1]) for r in rows}

    def has(self, name: str) -> bool:
        return name in self.arity

    def stats(self, name: str) -> Stats:
        if name in self._stats:
            return self._stats[name]
        arity = self.arity[name]
        parts = ["COUNT(*)"] + [f"COUNT(DISTINCT c{i})" for i in range(arity)]
        row = self.con.execute(f"SELECT {', '.join(parts)} FROM {ident(name)}").fetchone()
        assert row is not None
        self._stats[name] = Stats(int(row[0]), tuple(int(x) for x in row[1:]))
        return self._stats[name]

    def drop(self, name: str) -> None:
        if name in self.arity:
            self.con.execute(f"DROP TABLE IF EXISTS {ident(name)}")
            del self.arity[name]
            self._stats.pop(name, None)

    def rename(self, old: str, new: str) -> None:
        """Move relation ``old`` to the name ``new`` (replacing it)."""
        self.drop(new)
        self.con.execute(f"ALTER TABLE {ident(old)} RENAME TO {ident(new)}")
        self.arity[new] = self.arity.pop(old)
        if old in self._stats:
            self._stats[new] = self._stats.pop(old)

    def names(self) -> list[str]:
        return sorted(self.arity)
