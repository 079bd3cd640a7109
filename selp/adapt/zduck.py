"""Z-relations on DuckDB: a relation is an integer combination of stored tables (*segments*,
shared by an unchanged copy), text columns ``c0..`` and a signed ``_cnt``.

A relation of one rule is one ``SELECT ... SUM(product of _cnt) ... GROUP BY`` over its body
tables; the derivations of several rules are unioned (``UNION ALL``) and summed once.

A stored relation is an integer combination of immutable tables (*segments*, each with a
coefficient): Z-relations form a module over the integers, and join distributes over the sum,
so readers that multiply and sum counts need no merge. A plan's rules that copy a stored
relation with a coefficient -- ``q@new :- q`` ([GI12]'s fold into the old instance), ``2·q``
(a rule repeated), ``-s`` (a rule dropped whose rows are one of ``q``'s segments) -- are
therefore bookkeeping: their segments' coefficients are added, a segment whose coefficient
becomes 0 is dropped, and no row is read or written. Only the other rules (the remainder)
are computed, stored as one new segment of their derivations, unsummed (a tuple may occur in
several rows: readers sum anyway); a relation computed from scratch is one summed table.
Reading rows, comparing and compacting sum the segments. No ``DISTINCT`` anywhere:
differential plans need exact counts ([GI12]).
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


def rule_sql(plan: RulePlan, source: Callable[[str], str] = ident, summed: bool = True) -> str:
    """The SELECT of one rule: head columns and the signed count of each head tuple;
    ``source`` gives the SQL a relation is read from (a quoted table, or a union of segments). Not ``summed``: one row per derivation
    (the caller sums; a relation of several rules is aggregated once, over their union)."""
    cols = ", ".join(f"{_sql(e)} AS c{i}" for i, e in enumerate(plan.head)) or "1 AS _unit"
    count = " * ".join(f"t{i}._cnt" for i in range(len(plan.relations))) or "1"
    tables = ", ".join(f"{source(r)} AS t{i}" for i, r in enumerate(plan.relations))
    conds = [f"{_sql(a)} = {_sql(b)}" for a, b in plan.equal] + [f"{_sql(a)} <> {_sql(b)}" for a, b in plan.unequal]
    where = (" WHERE " + " AND ".join(conds)) if conds else ""
    sign = "" if plan.sign == 1 else f"{plan.sign} * "
    if not summed:
        return f"SELECT {cols}, ({sign}{count})::BIGINT AS _cnt FROM {tables}{where}"
    group = " GROUP BY " + ", ".join(str(i + 1) for i in range(len(plan.head))) if plan.head else ""
    return f"SELECT {cols}, {sign}SUM({count})::BIGINT AS _cnt FROM {tables}{where}{group}"


def _is_copy(plan: RulePlan, arity: int) -> bool:
    """Whether ``plan`` is ``q(X1..Xn) :- r(X1..Xn)`` with any coefficient: ``sign`` times ``r``."""
    return (len(plan.relations) == 1 and plan.sign != 0 and not plan.equal and not plan.unequal
            and plan.arities[0] == arity and plan.head == tuple(((0, i),) for i in range(arity)))


CHECKPOINT_THRESHOLD = "1TB"  # no automatic checkpoint (:class:`DuckZ`)
MAX_SEGMENTS = 4  # a relation of more segments is summed into one table (reads stay a short union)


class DuckZ:
    """Z-relations as DuckDB tables in one connection (in memory unless a path is given).

    A relation is a tuple of stored tables (segments, :attr:`table`) with a coefficient each
    (:attr:`coef`), whose combination it is; several relations may share tables (an unchanged
    view's new instance *is* its old one: :meth:`define` of a plain copy adds a reference, no
    rows move; a plan keeping the old instance adds one segment to it; a dropped rule whose rows
    are one of its segments removes that segment). Tables are never written after creation:
    redefining a relation creates a new table and drops the old ones when no relation refers to
    them any more, so a shared table never changes under the other relation. A table made by
    summing has one row per tuple with a non-zero count; a remainder's may hold a tuple in more
    than one row and a relation a net count of 0: readers that multiply and sum counts do not
    mind, :meth:`get`, :meth:`same` and compaction sum.
    """

    shares_copies = True  # a plan's plain copy of a stored relation keeps its tables (no rows read)

    def __init__(self, path: str = ":memory:") -> None:
        self.con = duckdb.connect(path)
        # DuckDB checkpoints in-memory databases too, automatically, inside whichever statement
        # takes the data written since the last checkpoint past 16 MiB: that statement then pays
        # for compressing everything written before it (0.7-1.5 s on one view's CREATE TABLE AS
        # at 300k rows per source, datasets/results/adapt/a24h). Dropped tables' memory is freed
        # without a checkpoint; :meth:`checkpoint` runs one where the work is not a view's
        # (after loading and after a commit), so no adaptation or recomputation carries it.
        self.con.execute(f"SET checkpoint_threshold = '{CHECKPOINT_THRESHOLD}'")
        self.arity: dict[str, int] = {}
        self.table: dict[str, tuple[str, ...]] = {}  # relation -> its segments (stored tables)
        self.coef: dict[str, tuple[int, ...]] = {}  # relation -> each segment's coefficient
        self._summed: set[str] = set()  # stored tables of one row per tuple, counts non-zero
        self._users: dict[str, int] = {}  # stored table -> relations referring to it
        self._stats: dict[str, Stats] = {}  # per stored table, as a DBMS keeps statistics
        self._negative: dict[str, int] = {}  # per stored table: its rows of negative count
        self._made = 0

    def _bind(self, name: str, arity: int, tables: tuple[str, ...], coef: tuple[int, ...] | None = None) -> None:
        """Make relation ``name`` the combination of ``tables`` with coefficients ``coef`` (all 1
        by default), releasing what it referred to."""
        for t in tables:
            self._users[t] = self._users.get(t, 0) + 1
        self._release(name)
        self.table[name] = tables
        self.coef[name] = coef if coef is not None else (1,) * len(tables)
        self.arity[name] = arity

    def _release(self, name: str) -> None:
        tables = self.table.pop(name, ())
        self.coef.pop(name, None)
        self.arity.pop(name, None)
        for table in tables:
            self._users[table] -= 1
            if not self._users[table]:
                del self._users[table]
                self._stats.pop(table, None)
                self._negative.pop(table, None)
                self._summed.discard(table)
                self.con.execute(f"DROP TABLE IF EXISTS {ident(table)}")

    def _fresh(self, name: str) -> str:
        """A table name for a new instance of ``name``: the name itself when free."""
        if name not in self._users:
            return name
        self._made += 1
        while f"{name}#{self._made}" in self._users:
            self._made += 1
        return f"{name}#{self._made}"

    def _new_table(self, name: str, arity: int, select: str | None, summed: bool = True) -> str:
        """A new table of ``select``'s rows (empty when None); ``summed``: one row per tuple,
        counts non-zero."""
        table = self._fresh(name)
        if summed:
            self._summed.add(table)
        else:
            self._summed.discard(table)
        if select is None:
            cols = ", ".join([f"c{i} VARCHAR" for i in range(arity)] + ["_cnt BIGINT"])
            self.con.execute(f"CREATE OR REPLACE TABLE {ident(table)} ({cols})")
        else:  # one statement: the SELECT's columns are VARCHAR texts and a BIGINT count
            self.con.execute(f"CREATE OR REPLACE TABLE {ident(table)} AS {select}")
        return table

    def _create(self, name: str, arity: int, select: str | None) -> None:
        self._bind(name, arity, (self._new_table(name, arity, select),))

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
        # the rules copying a stored relation (with a coefficient) are bookkeeping: the segments
        # of the relations they copy, coefficients added up (an unchanged view, the old instance
        # a plan folded into, a repeated rule, a dropped rule's segment cancelled)
        kept: dict[str, int] = {}
        rest = []
        for p in plans:
            if _is_copy(p, arity) and self.arity.get(p.relations[0]) == arity:
                for t, c in zip(self.table[p.relations[0]], self.coef[p.relations[0]]):
                    kept[t] = kept.get(t, 0) + p.sign * c
            else:
                rest.append(p)
        kept = {t: c for t, c in kept.items() if c}
        if not kept:
            self._create(name, arity, self._summed_sql(arity, rest) if rest else None)
            return
        if rest:
            # the remainder's derivations are stored as they come, not summed: the relation is
            # the sum of its segments anyway (every reader sums), so a GROUP BY here would only
            # repeat what the readers do (a24i: the aggregation, not the joins, is most of a
            # DuckDB plan)
            if arity:
                kept[self._new_table(name, arity, self._derivations_sql(arity, rest), summed=False)] = 1
            else:
                kept[self._new_table(name, arity, self._summed_sql(arity, rest))] = 1
        self._bind(name, arity, tuple(kept), tuple(kept.values()))
        if len(self.table[name]) > MAX_SEGMENTS:
            self._create(name, arity, self._normal_sql(name))

    def _summed_sql(self, arity: int, plans: list[RulePlan]) -> str:
        """The SELECT of the summed, non-zero counts of ``plans``' derivations, one aggregation:
        a single rule's own ``GROUP BY``, else one ``GROUP BY`` over the union of every rule's
        derivations."""
        cols = ", ".join(f"c{i}" for i in range(arity))
        if len(plans) == 1:  # (a nullary rule's SELECT has a placeholder column: not kept)
            return f"SELECT {cols + ', ' if arity else ''}_cnt FROM ({rule_sql(plans[0], self._source)}) WHERE _cnt <> 0"
        union = " UNION ALL ".join(f"({rule_sql(p, self._source, summed=False)})" for p in plans)
        if not arity:
            return f"SELECT SUM(_cnt)::BIGINT AS _cnt FROM ({union}) HAVING SUM(_cnt) <> 0"
        return f"SELECT {cols}, SUM(_cnt)::BIGINT AS _cnt FROM ({union}) GROUP BY {cols} HAVING SUM(_cnt) <> 0"

    def _derivations_sql(self, arity: int, plans: list[RulePlan]) -> str:
        """The SELECT of ``plans``' derivations, one row each with its signed count (never 0: a
        product of stored counts, none of which is 0), unsummed: only for a segment after the
        first, whose relation every reader sums."""
        return " UNION ALL ".join(f"({rule_sql(p, self._source, summed=False)})" for p in plans)

    def _source(self, name: str) -> str:
        """The SQL relation ``name`` is read from: its table, or the union of its segments
        (each count times the segment's coefficient)."""
        tables = self.table.get(name, (name,))
        coef = self.coef.get(name, (1,) * len(tables))
        if len(tables) == 1 and coef[0] == 1:
            return ident(tables[0])
        cols = "".join(f"c{i}, " for i in range(self.arity.get(name, 0)))
        return "(" + " UNION ALL ".join(f"SELECT * FROM {ident(t)}" if c == 1 else f"SELECT {cols}(_cnt * {c})::BIGINT AS _cnt FROM {ident(t)}"
                                        for t, c in zip(tables, coef)) + ")"

    def _normal_sql(self, name: str) -> str:
        """The SELECT of relation ``name`` summed over its segments (non-zero counts only)."""
        tables = self.table[name]
        if len(tables) == 1 and tables[0] in self._summed:  # a multiple of a summed table is summed
            return f"SELECT * FROM {self._source(name)}"
        arity = self.arity[name]
        cols = ", ".join(f"c{i}" for i in range(arity))
        group = f" GROUP BY {cols}" if arity else ""
        return f"SELECT {cols + ', ' if arity else ''}SUM(_cnt)::BIGINT AS _cnt FROM {self._source(name)}{group} HAVING SUM(_cnt) <> 0"

    def get(self, name: str) -> TextRel:
        rows = self.con.execute(self._normal_sql(name)).fetchall()
        return {tuple(r[:-1]): int(r[-1]) for r in rows}

    def count(self, name: str) -> int:
        """The exact number of tuples of relation ``name`` (non-zero summed counts); a scan,
        unlike :meth:`stats`, whose row count of a segmented relation is an estimate."""
        (row,) = self.con.execute(f"SELECT COUNT(*) FROM ({self._normal_sql(name)})").fetchall()
        return int(row[0])

    def same(self, a: str, b: str) -> bool:
        """Whether relations ``a`` and ``b`` hold the same Z-relation (compared in the database)."""
        if sorted(zip(self.table[a], self.coef[a])) == sorted(zip(self.table[b], self.coef[b])):
            return True
        ta, tb = f"({self._normal_sql(a)})", f"({self._normal_sql(b)})"
        (row,) = self.con.execute(f"SELECT (SELECT COUNT(*) FROM {ta}) = (SELECT COUNT(*) FROM {tb}) "
                                  f"AND NOT EXISTS (SELECT * FROM {ta} EXCEPT ALL SELECT * FROM {tb})").fetchall()
        return bool(row[0])

    def has(self, name: str) -> bool:
        return name in self.arity

    def stats(self, name: str) -> Stats:
        """Rows and distinct values per column (HyperLogLog estimates), per stored table, as a
        DBMS keeps them. A relation of several segments is estimated from its segments' own
        statistics, not measured over their sum (that scan costs as much as recomputing a small
        view, and a plan keeping the old instance makes one per changed view): its rows are the
        segments' positive-count rows less their negative-count ones (a remainder's negative
        rows cancel old tuples), each column's distinct values the largest segment's."""
        tables, coef = self.table[name], self.coef[name]
        arity = self.arity[name]
        if len(tables) == 1 and coef[0] > 0:
            return self._table_stats(tables[0], arity)
        parts = [self._table_stats(t, arity) for t in tables]
        # a segment of negative coefficient cancels its rows' tuples, a positive one's negative
        # rows cancel theirs
        rows = max(0, sum((p.rows - 2 * self._negative[t]) if c > 0 else -p.rows for p, t, c in zip(parts, tables, coef)))
        plus = [p for p, c in zip(parts, coef) if c > 0] or parts
        return Stats(rows, tuple(min(rows, max(p.distinct[c] for p in plus)) for c in range(arity)))

    def _table_stats(self, table: str, arity: int) -> Stats:
        if table in self._stats:
            return self._stats[table]
        # HyperLogLog estimates: a cost model needs magnitudes, and exact distinct counts of every
        # column cost as much as recomputing a small view
        parts = ["COUNT(*)", "COUNT(*) FILTER (WHERE _cnt < 0)"] + [f"approx_count_distinct(c{i})" for i in range(arity)]
        # fetchall, not fetchone: an unfinished result would block the next register() (put)
        (row,) = self.con.execute(f"SELECT {', '.join(parts)} FROM {ident(table)}").fetchall()
        rows = int(row[0])
        self._negative[table] = int(row[1])
        self._stats[table] = Stats(rows, tuple(min(rows, int(x or 0)) for x in row[2:]))
        return self._stats[table]

    def drop(self, name: str) -> None:
        self._release(name)

    def checkpoint(self) -> None:
        """Compress what was written since the last checkpoint (DuckDB's ``CHECKPOINT``; not
        automatic on this connection, :class:`DuckZ`): called between pieces of work, never
        inside one."""
        self.con.execute("CHECKPOINT")

    def rename(self, old: str, new: str) -> None:
        """Move relation ``old`` to the name ``new`` (replacing it)."""
        if old == new:
            return
        arity, tables, coef = self.arity[old], self.table[old], self.coef[old]
        self._bind(new, arity, tables, coef)
        self._release(old)

    def names(self) -> list[str]:
        return sorted(self.arity)
