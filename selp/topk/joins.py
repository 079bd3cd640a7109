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
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
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


def plan(rule: Rule, kinds: dict[str, tuple[Any, ...]], is_filter: Any) -> Plan | None:
    """The join plan of ``rule``, or None when its instances must be formed by SQL. Filters
    read the fetched table as ``t``."""
    atoms = rule.body
    if not atoms or len(atoms) > MAX_ATOMS or len(rule.head.args) > MAX_HEAD:
        return None
    if not all(isinstance(b, Atom) and not b.negated for b in atoms):
        return None
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
    return Plan(rule, out, len(slots), head)


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

    def _coded(self, rel: str, where: str) -> tuple[np.ndarray, list[np.ndarray]]:
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
            got = self.con.execute(f"SELECT code FROM {_DICT} WHERE v = {lit}").fetchone()
            return -1 if got is None else int(got[0])  # -1: no fact holds it (codes are >= 0)
        return int(self.con.execute(f"SELECT {lit}").fetchone()[0])

    def _head_index(self, rel: str) -> int | None:
        """The C index of ``rel``'s facts, None when it cannot be built."""
        if rel not in self._heads:
            ids, cols = self._coded(rel, "")
            keys = (ctypes.c_void_p * max(len(cols), 1))(*[_ptr(c) for c in cols])
            self._heads[rel] = (self.lib.selp_head(len(ids), len(cols), keys, _ptr(ids)) or None, ids, cols)
        return self._heads[rel][0]

    def form(self, p: Plan) -> tuple[np.ndarray, np.ndarray] | None:
        """``(heads, children)`` of ``p``'s rule (children row-major, one row per instance), or
        None when a head is missing from its relation (then the SQL path forms them)."""
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
        idx = self._head_index(p.rule.head.relation)
        if idx is None:
            return None
        na = len(p.atoms)
        keep: list[np.ndarray] = []  # the arrays the C side reads, alive until it returns
        rows, ids, ncol, cols, slot, bound, child = [], [], [], [], [], [], []
        for rel, where, cs, sl, bd, ch in p.atoms:
            aids, acols = self._coded(rel, where)
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
        arrays = [i64(rows), i64(ncol), i64(slot), u8(bound), u8(child), i64(hslot), i64(hconst)]
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
            n, m = lib.selp_join_count(j), sum(child)
            heads, kids = np.empty(n, np.int64), np.empty(n * m, np.int64)
            lib.selp_join_fill(j, _ptr(heads), _ptr(kids))
            return heads, kids
        finally:
            lib.selp_join_free(j)
            del keep

    def close(self) -> None:
        """Free the head indexes (the C side's)."""
        for idx, _, _ in self._heads.values():
            if idx is not None:
                self.lib.selp_head_free(idx)
        self._heads.clear()
        if self._dict:
            self.con.execute(f"DROP TABLE IF EXISTS {_DICT}")

