"""The pure-Python Z-relation engine: the oracle the DuckDB and Spark engines are tested against.

Rows are dictionaries in memory; a rule joins its body atoms left to right, probing a hash index
of each atom on the columns that earlier atoms determine.
"""

from __future__ import annotations

from collections import Counter

from selp.adapt.zprogram import Expr, RulePlan, Stats, TextRel


def _atoms_of(e: Expr) -> set[int]:
    return {p[0] for p in e if not isinstance(p, str)}


def _text(e: Expr, rows: tuple[tuple[str, ...], ...]) -> str:
    return "".join(p if isinstance(p, str) else rows[p[0]][p[1]] for p in e)


def run_plan(plan: RulePlan, relations: dict[str, TextRel]) -> TextRel:
    """The Z-relation one rule derives (its sign applied)."""
    partial: list[tuple[tuple[tuple[str, ...], ...], int]] = [((), 1)]
    pending = list(plan.equal)
    for i, rel in enumerate(plan.relations):
        # conditions "column of atom i = something of earlier atoms" become the probe key
        keys: list[tuple[int, Expr]] = []
        for a, b in list(pending):
            for col, other in ((a, b), (b, a)):
                if len(col) == 1 and not isinstance(col[0], str) and col[0][0] == i and max(_atoms_of(other), default=-1) < i:
                    keys.append((col[0][1], other))
                    pending.remove((a, b))
                    break
        index: dict[tuple[str, ...], list[tuple[tuple[str, ...], int]]] = {}
        for row, n in relations.get(rel, {}).items():
            index.setdefault(tuple(row[c] for c, _ in keys), []).append((row, n))
        nxt = []
        for rows, n in partial:
            probe = tuple(_text(e, rows) for _, e in keys)
            for row, m in index.get(probe, ()):
                nxt.append((rows + (row,), n * m))
        partial = nxt
    out: Counter = Counter()
    for rows, n in partial:
        if all(_text(a, rows) == _text(b, rows) for a, b in pending) and all(_text(a, rows) != _text(b, rows) for a, b in plan.unequal):
            out[tuple(_text(e, rows) for e in plan.head)] += n * plan.sign
    return {k: n for k, n in out.items() if n}


class ReferenceZ:
    """Z-relations in Python dictionaries (the test oracle)."""

    def __init__(self) -> None:
        self.relations: dict[str, TextRel] = {}
        self.arity: dict[str, int] = {}

    def put(self, name: str, arity: int, rows: TextRel) -> None:
        self.relations[name] = {k: n for k, n in rows.items() if n}
        self.arity[name] = arity

    def define(self, name: str, arity: int, plans: list[RulePlan]) -> None:
        total: Counter = Counter()
        for p in plans:
            total.update(run_plan(p, self.relations))
        self.put(name, arity, dict(total))

    def get(self, name: str) -> TextRel:
        return dict(self.relations[name])

    def has(self, name: str) -> bool:
        return name in self.relations

    def stats(self, name: str) -> Stats:
        rows = self.relations[name]
        return Stats(len(rows), tuple(len({r[c] for r in rows}) for c in range(self.arity[name])))

    def drop(self, name: str) -> None:
        self.relations.pop(name, None)
        self.arity.pop(name, None)

    def rename(self, old: str, new: str) -> None:
        self.relations[new] = self.relations.pop(old)
        self.arity[new] = self.arity.pop(old)

    def names(self) -> list[str]:
        return sorted(self.arity)
