"""Rule instances formed by the compiled kernel instead of materialised by a DuckDB join.

The embedded DTable needs every rule instance of P_p as a row of integers (the head's fact id,
the children's ids). A DuckDB join per rule computes them, but on transitive closure at 873k
facts that is 2.6M rows joined, projected and fetched into numpy. Here DuckDB hands over only
each relation's facts once, as integer-coded columns (fact ids; integers as they are, strings
dictionary-encoded), and the kernel's ``selp_join``
enumerates the instances: the body atoms in body order, each later atom probed through a hash
index on its columns bound by earlier atoms, the head's id found by a binary search in the
bucket of its first column (sorted by all columns): the same instances the SQL path computes
(docs/engines.md). On the anchors graph it costs about what DuckDB's join and fetch cost
(datasets/results/anchors/README.md).

Which rules take this path (:func:`plan`): bodies of positive atoms only, each argument a
variable or a constant, the head's arguments variables of the body or constants, every column
stored as ``BIGINT`` or ``VARCHAR``. Constants and an atom's repeated variables are filtered in
SQL when the atom's facts are fetched, with the SQL path's literals, so both paths read the same
equalities. Everything else (comparisons, arithmetic, negation, Skolem terms in the head,
``DOUBLE`` columns) keeps the SQL join. Instances come out per rule in an order of their own:
two instances of one fact's candidates that tie on (weight, size, origin) are the same tree of
P, so which one is reported does not change any answer.

:meth:`Former.prepare` keeps a rule's join in C for :mod:`selp.topk.decomposed`, which joins it
with one driver fact (the recursive atom, planned first: :func:`plan`'s ``first``) at a time.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from selp.engines.embedded.sql import const_filter, ident, literal
from selp.language.ast import Atom, Const, Rule, Var
from selp.topk.kernel import address as _ptr, interruptible as _interruptible, library as _compiled

MAX_ATOMS, MAX_SLOTS, MAX_HEAD = 16, 64, 16
_DICT = ident("k:dict")


@dataclass
class Plan:
    """How one rule's instances are enumerated: per body atom, its relation, the SQL filter of
    its constants and repeated variables, its kept columns with their variable slots and whether
    each is bound by an earlier atom, and whether it is a child; per head column a slot or a
    constant."""

    rule: Rule
    atoms: list[tuple[str, str, list[int], list[int], list[bool], bool]]
    n_slots: int
    head: list[int | Const]
    # each planned atom's child position in the instance (body order among the children), -1
    # for a filter atom: the atoms are in body order unless a driver was put first
    child_pos: list[int] = field(default_factory=list)


def plan(rule: Rule, kinds: dict[str, tuple[Any, ...]], is_filter: Any, first: int | None = None) -> Plan | None:
    """The join plan of ``rule``, or None when its instances must be formed by SQL. Filters
    read the fetched table as ``t``. ``first``: the body atom joined first (the driver of
    :mod:`selp.topk.decomposed`), the others following in body order."""
    body = rule.body
    if not body or len(body) > MAX_ATOMS or len(rule.head.args) > MAX_HEAD:
        return None
    if not all(isinstance(b, Atom) and not b.negated for b in body):
        return None
    order = list(range(len(body))) if first is None else [first] + [i for i in range(len(body)) if i != first]
    atoms = [body[i] for i in order]
    children = [i for i, b in enumerate(body) if not is_filter(b.relation)]  # type: ignore[union-attr]
    child_pos = [children.index(i) if i in children else -1 for i in order]
    if any(k.sql not in ("BIGINT", "VARCHAR") for b in atoms for k in kinds[b.relation]):  # type: ignore[union-attr]
        return None
    if any(k.sql not in ("BIGINT", "VARCHAR") for k in kinds[rule.head.relation]):
        return None
    slots: dict[Var, int] = {}
    out = []
    for b in atoms:
        ks = kinds[b.relation]  # type: ignore[union-attr]
        where, cols, slot, bound = [], [], [], []
        local: dict[Var, int] = {}
        for p, t in enumerate(b.args):  # type: ignore[union-attr]
            if isinstance(t, Const):
                where.append(const_filter(f"t.c{p}", t.value, ks[p]))
            elif isinstance(t, Var):
                if t.anonymous:
                    continue
                if t in local:  # repeated within the atom: an equality of the atom's own columns
                    where.append(f"t.c{p} = t.c{local[t]}")
                    continue
                local[t] = p
                cols.append(p)
                bound.append(t in slots)
                slot.append(slots.setdefault(t, len(slots)))
            else:
                return None
        out.append((b.relation, " AND ".join(where), cols, slot, bound, not is_filter(b.relation)))  # type: ignore[union-attr]
    head: list[int | Const] = []
    for t in rule.head.args:
        if isinstance(t, Var) and t in slots:
            head.append(slots[t])
        elif isinstance(t, Const):
            head.append(t)
        else:
            return None
    if len(slots) > MAX_SLOTS:
        return None
    return Plan(rule, out, len(slots), head, child_pos)


class Former:
    """Forms the instances of planned rules over one store's facts (``i:REL`` tables with ids,
    filter relations as plain tables): fetches each relation's coded columns once, keeps the
    head relations' indexes, and returns ``(heads, children)`` per rule."""

    def __init__(self, con: Any, kinds: dict[str, tuple[Any, ...]], source: Any) -> None:
        self.con, self.kinds, self.source = con, kinds, source  # source(rel) -> (SQL table, has ids)
        self.lib = _compiled()
        self._fetched: dict[tuple[str, str], tuple[np.ndarray, list[np.ndarray]]] = {}
        self._heads: dict[str, tuple[int | None, np.ndarray, list[np.ndarray]]] = {}  # the arrays: alive while C reads them
        self._dict = False

    def coded(self, rel: str, where: str) -> tuple[np.ndarray, list[np.ndarray]]:
        """(ids, every column's codes) of ``rel``'s facts passing ``where`` (fetched once for a
        head and a body use)."""
        key = (rel, where)
        got = self._fetched.get(key)
        if got is not None:
            return got
        tab, has_ids = self.source(rel)
        ks = self.kinds[rel]
        if any(k.sql == "VARCHAR" for k in ks):
            self._dictionary()
        sel = ["t.id" if has_ids else "0::BIGINT AS id"]
        joins = []
        for p, k in enumerate(ks):
            if k.sql == "VARCHAR":
                joins.append(f"JOIN {_DICT} d{p} ON d{p}.v = t.c{p}")
                sel.append(f"d{p}.code AS c{p}")
            else:
                sel.append(f"t.c{p}")
        cond = f" WHERE {where}" if where else ""
        res = self.con.execute(f"SELECT {', '.join(sel)} FROM {tab} t {' '.join(joins)}{cond}").fetchnumpy()
        out = (np.ascontiguousarray(res["id"], dtype=np.int64),
               [np.ascontiguousarray(res[f"c{p}"], dtype=np.int64) for p in range(len(ks))])
        self._fetched[key] = out
        return out

    def _dictionary(self) -> None:
        """One code per distinct string of every VARCHAR column of the program (a variable's
        columns share one SQL type, so string and integer codes never meet)."""
        if self._dict:
            return
        parts = [f"SELECT c{p} AS v FROM {self.source(rel)[0]}" for rel, ks in sorted(self.kinds.items())
                 for p, k in enumerate(ks) if k.sql == "VARCHAR" and self.source(rel)[0] is not None]
        self.con.execute(
            f"CREATE OR REPLACE TEMP TABLE {_DICT} AS SELECT v, (row_number() OVER () - 1)::BIGINT AS code"
            f" FROM (SELECT DISTINCT v FROM ({' UNION ALL '.join(parts)}))"
        )
        self._dict = True

    def _const(self, c: Const, kind: Any) -> int | None:
        lit = literal(c.value, kind)
        if lit is None:
            return None
        if kind.sql == "VARCHAR":
            self._dictionary()
            # fetchall, not fetchone: a result left unfinished makes the next relation query
            # on this connection fail (DuckDB 2: "connection has an unfinished result")
            got = self.con.execute(f"SELECT code FROM {_DICT} WHERE v = {lit}").fetchall()
            return -1 if not got else int(got[0][0])  # -1: no fact holds it (codes are >= 0)
        return int(self.con.execute(f"SELECT {lit}").fetchall()[0][0])

    def _head_index(self, rel: str) -> int | None:
        """The C index of ``rel``'s facts, None when it cannot be built."""
        if rel not in self._heads:
            ids, cols = self.coded(rel, "")
            keys = (ctypes.c_void_p * max(len(cols), 1))(*[_ptr(c) for c in cols])
            self._heads[rel] = (self.lib.selp_head(len(ids), len(cols), keys, _ptr(ids)) or None, ids, cols)
        return self._heads[rel][0]

    def _head_codes(self, p: Plan) -> tuple[list[int], list[int]] | None:
        """Per head column a slot (-1 for a constant) and a constant's code; None when a
        constant cannot be coded (then the SQL path forms the instances)."""
        head_kinds = self.kinds[p.rule.head.relation]
        hslot, hconst = [], []
        for i, h in enumerate(p.head):
            if isinstance(h, Const):
                code = self._const(h, head_kinds[i])
                if code is None:
                    return None
                hslot.append(-1)
                hconst.append(code)
            else:
                hslot.append(h)
                hconst.append(0)
        return hslot, hconst

    def form(self, p: Plan) -> tuple[np.ndarray, np.ndarray] | None:
        """``(heads, children)`` of ``p``'s rule (children row-major, one row per instance), or
        None when a head is missing from its relation (then the SQL path forms them)."""
        codes = self._head_codes(p)
        if codes is None:
            return None
        hslot, hconst = codes
        idx = self._head_index(p.rule.head.relation)
        if idx is None:
            return None
        na = len(p.atoms)
        keep, ids, cols, arrays = _atom_arrays(p, lambda a, rel, where, ch: self.coded(rel, where), hslot, hconst)
        P = ctypes.c_void_p
        pids, pcols = (P * na)(*ids), (P * max(len(cols), 1))(*cols)
        lib = self.lib
        j = _interruptible(lambda: lib.selp_join(na, _ptr(arrays[0]), pids, _ptr(arrays[1]), pcols, _ptr(arrays[2]),
                                                 _ptr(arrays[3]), _ptr(arrays[4]), idx, len(p.head), _ptr(arrays[5]),
                                                 _ptr(arrays[6])), lib)
        if not j:
            raise MemoryError("forming rule instances: out of memory")
        try:
            err = lib.selp_join_error(j)
            if err == 1:
                raise MemoryError("forming rule instances: out of memory")
            if err:
                return None
            n, m = lib.selp_join_count(j), int(arrays[4].sum())
            heads, kids = np.empty(n, np.int64), np.empty(n * m, np.int64)
            lib.selp_join_fill(j, _ptr(heads), _ptr(kids))
            return heads, kids
        finally:
            lib.selp_join_free(j)
            del keep

    def prepare(self, p: Plan, driver_cols: list[np.ndarray], kernel_id: np.ndarray, rule: int) -> "Prepared | None":
        """The join of ``p`` kept in C for :mod:`selp.topk.decomposed`: atom 0 is the driver,
        its columns read from ``driver_cols`` (the component relation's codes, in the kernel's
        order); the other atoms' facts fetched and indexed, their ids mapped to kernel ids by
        ``kernel_id`` (input id -> kernel id). None when a head constant cannot be coded."""
        codes = self._head_codes(p)
        if codes is None:
            return None
        hslot, hconst = codes

        def facts(a: int, rel: str, where: str, ch: bool) -> tuple[np.ndarray, list[np.ndarray]]:
            if a == 0:
                return driver_cols[0], driver_cols
            aids, acols = self.coded(rel, where)
            return (np.ascontiguousarray(kernel_id[aids]) if ch else aids), acols

        keep, ids, cols, arrays = _atom_arrays(p, facts, hslot, hconst)
        arrays.append(np.ascontiguousarray(p.child_pos, dtype=np.int64))
        keep += arrays
        P = ctypes.c_void_p
        pids, pcols = (P * len(p.atoms))(*ids), (P * max(len(cols), 1))(*cols)
        lib = self.lib
        j = lib.selp_join_prepare(len(p.atoms), _ptr(arrays[0]), pids, _ptr(arrays[1]), pcols, _ptr(arrays[2]),
                                  _ptr(arrays[3]), _ptr(arrays[4]), len(p.head), _ptr(arrays[5]), _ptr(arrays[6]),
                                  _ptr(arrays[7]), rule)
        if not j:
            raise MemoryError("forming rule instances: out of memory")
        out = Prepared(lib, j, [pids, pcols], keep)
        if lib.selp_join_error(j):
            out.close()
            raise MemoryError("forming rule instances: out of memory")
        return out

    def close(self) -> None:
        """Free the head indexes (the C side's)."""
        for idx, _, _ in self._heads.values():
            if idx is not None:
                self.lib.selp_head_free(idx)
        self._heads.clear()
        if self._dict:
            self.con.execute(f"DROP TABLE IF EXISTS {_DICT}")



def _atom_arrays(p: Plan, facts: Any, hslot: list[int], hconst: list[int]
                 ) -> tuple[list[np.ndarray], list[int], list[int], list[np.ndarray]]:
    """What ``selp_join`` and ``selp_join_prepare`` read of a plan: the arrays to keep alive,
    the atoms' id and column addresses, and (rows, ncol, slot, bound, child, hslot, hconst) as
    arrays. ``facts(a, rel, where, child)`` gives atom a's (ids, columns)."""
    keep: list[np.ndarray] = []  # the arrays the C side reads, alive until it returns
    rows, ids, ncol, cols, slot, bound, child = [], [], [], [], [], [], []
    for a, (rel, where, cs, sl, bd, ch) in enumerate(p.atoms):
        aids, acols = facts(a, rel, where, ch)
        keep += [aids, *acols]
        rows.append(len(aids))
        ids.append(_ptr(aids))
        ncol.append(len(cs))
        cols += [_ptr(acols[c]) for c in cs]
        slot += sl
        bound += bd
        child.append(ch)
    i64 = lambda xs: np.ascontiguousarray(xs, dtype=np.int64)  # noqa: E731
    u8 = lambda xs: np.ascontiguousarray(xs, dtype=np.uint8)  # noqa: E731
    return keep, ids, cols, [i64(rows), i64(ncol), i64(slot), u8(bound), u8(child), i64(hslot), i64(hconst)]


@dataclass
class Prepared:
    """A join kept in C (:meth:`Former.prepare`) and the arrays it reads, alive until closed."""

    lib: Any
    handle: int
    pointers: list[Any]
    arrays: list[np.ndarray]

    def close(self) -> None:
        """Free the C side's join and indexes."""
        if self.handle:
            self.lib.selp_join_free(self.handle)
            self.handle = 0
