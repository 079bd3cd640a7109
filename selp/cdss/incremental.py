"""Incremental update exchange over Python sets: :func:`apply_changes` for a compiled CDSS,
:func:`maintain` for any stratified selp program.

Given the full state of a program and changes to its EDB relations, they return the state that
full recomputation would give, with the strategy asked for (``provenance``, ``dred`` or
``recompute``). The algorithm and the strategies are :mod:`selp.cdss.maintainer`, written once
over a small relational interface; this module is its local backend -- immutable sets of tuples
with hash indexes built on demand (:class:`LocalRel`), the old relation with a few tuples removed
or added without copying it (:class:`LocalView`), joins by :class:`selp.engines.joins.BodyPlan` as
in the reference engine (:class:`LocalBackend`) -- and the entry points.
:mod:`selp.cdss.incremental_spark` is the same over Spark DataFrames.
"""

from __future__ import annotations

import time
from typing import Any, Callable, Iterable, Iterator, Mapping

from selp.cdss.compile import CompiledCDSS
from selp.cdss.maintainer import Maintainer, Stats, check_changes
from selp.engines.joins import BodyPlan, Fact
from selp.language.ast import Rule
from selp.language.validate import Analysis, analyze


# -- the local backend: Python sets with hash indexes ---------------------------------------------
class LocalRel:
    """An immutable set of tuples with hash indexes built on demand (kept with the object, so a
    relation of the old state is indexed once per maintenance however often it is read)."""

    __slots__ = ("facts", "_indexes")

    def __init__(self, facts: set[Fact] | frozenset[Fact]) -> None:
        self.facts = facts
        self._indexes: dict[tuple[int, ...], dict[tuple, list[Fact]]] = {}

    def __len__(self) -> int:
        return len(self.facts)

    def __iter__(self) -> Iterator[Fact]:
        return iter(self.facts)

    def __contains__(self, f: object) -> bool:
        return f in self.facts

    def lookup(self, positions: tuple[int, ...], key: tuple) -> Iterable[Fact]:
        if not positions:
            return self.facts
        idx = self._indexes.get(positions)
        if idx is None:
            idx = {}
            for f in self.facts:
                idx.setdefault(tuple(f[p] for p in positions), []).append(f)
            self._indexes[positions] = idx
        return idx.get(key, ())

    def matches(self, pattern: tuple) -> bool:
        positions = tuple(i for i, v in enumerate(pattern) if v is not None)
        if len(positions) == len(pattern):
            return pattern in self
        return bool(self.lookup(positions, tuple(pattern[i] for i in positions)))

    def materialize(self) -> set[Fact]:
        return set(self.facts)


class LocalView:
    """``(base - removed) | added`` without copying ``base``: the current state during a
    maintenance is the old relation with a few tuples removed or added, and reusing the old
    relation's indexes keeps every round proportional to the change, not to the relation."""

    __slots__ = ("base", "removed", "added", "_size")

    def __init__(self, base: LocalRel, removed: frozenset[Fact], added: LocalRel) -> None:
        self.base, self.removed, self.added = base, removed, added
        self._size = len(base) - len(removed) + sum(1 for f in added if f not in base or f in removed)

    def __len__(self) -> int:
        return self._size

    def __contains__(self, f: object) -> bool:
        return (f in self.base and f not in self.removed) or f in self.added

    def __iter__(self) -> Iterator[Fact]:
        removed = self.removed
        for f in self.base:
            if f not in removed:
                yield f
        for f in self.added:
            if f not in self.base or f in removed:
                yield f

    def lookup(self, positions: tuple[int, ...], key: tuple) -> Iterable[Fact]:
        removed = self.removed
        out = [f for f in self.base.lookup(positions, key) if f not in removed]
        extra = [f for f in self.added.lookup(positions, key) if f not in self.base or f in removed]
        return out + extra if extra else out

    def matches(self, pattern: tuple) -> bool:
        positions = tuple(i for i, v in enumerate(pattern) if v is not None)
        if len(positions) == len(pattern):
            return pattern in self
        return bool(self.lookup(positions, tuple(pattern[i] for i in positions)))

    def materialize(self) -> set[Fact]:
        return set(self)


Local = LocalRel | LocalView
# a view over a base of at least this many tuples is kept as a view; smaller results are copied
_VIEW_MIN = 256


class LocalBackend:
    """:class:`Backend` over Python sets (values of :mod:`selp.values`), joins by
    :class:`selp.engines.joins.BodyPlan` as in the reference engine."""

    def __init__(self) -> None:
        self._plans: dict[tuple[Rule, int | None], tuple[BodyPlan, Callable]] = {}

    @staticmethod
    def rel(facts: set[Fact] | frozenset[Fact]) -> LocalRel:
        return LocalRel(facts)

    def empty(self, arity: int) -> LocalRel:
        return LocalRel(frozenset())

    def size(self, r: Local) -> int:
        return len(r)

    def sizes(self, rs: list[Local]) -> list[int]:
        return [len(r) for r in rs]

    def keep(self, r: Local) -> Local:
        return r

    def union(self, a: Local, b: Local) -> Local:
        if not len(b):
            return a
        if not len(a):
            return b
        if isinstance(a, LocalView):
            added = frozenset(f for f in b if f not in a)
            if not added:
                return a
            return LocalView(a.base, a.removed, LocalRel(frozenset(a.added.facts) | added))
        if len(a) >= _VIEW_MIN and len(b) * 4 < len(a):
            return LocalView(a, frozenset(), b if isinstance(b, LocalRel) else LocalRel(b.materialize()))
        return LocalRel(set(a) | set(b))

    def minus(self, a: Local, b: Local) -> Local:
        if not len(a) or not len(b):
            return a
        if isinstance(a, LocalView):
            gone = frozenset(f for f in b if f in a)
            if not gone:
                return a
            removed = a.removed | frozenset(f for f in gone if f in a.base)
            added = LocalRel(frozenset(f for f in a.added if f not in gone))
            return LocalView(a.base, removed, added)
        if len(a) >= _VIEW_MIN and len(b) * 4 < len(a):
            gone = frozenset(f for f in b if f in a)
            return LocalView(a, gone, LocalRel(frozenset())) if gone else a
        return LocalRel({f for f in a if f not in b})

    def semijoin(self, a: Local, positions: tuple[int, ...], b: Local) -> Local:
        if not len(a):
            return a
        if not positions:
            return a if len(b) else LocalRel(frozenset())
        n = len(next(iter(a)))
        if positions == tuple(range(n)) and len(b) and len(next(iter(b))) == n:
            small, big = (a, b) if len(a) <= len(b) else (b, a)
            return LocalRel({f for f in small if f in big})
        keys = set(b)
        return LocalRel({f for f in a if tuple(f[p] for p in positions) in keys})

    def project(self, a: Local, positions: tuple[int, ...]) -> LocalRel:
        return LocalRel({tuple(f[p] for p in positions) for f in a})

    def eval(self, rule: Rule, delta_atom: int | None, full: Mapping[str, Local], delta: Mapping[str, Local]) -> LocalRel:
        key = (rule, delta_atom)
        plan = self._plans.get(key)
        if plan is None:
            sizes = {rel: len(r) for rel, r in full.items()}
            bp = BodyPlan(rule, delta_atom, sizes)
            plan = self._plans[key] = (bp, bp.head_builder())
        bp, head = plan
        if delta_atom is not None:
            d = delta.get(rule.body[delta_atom].relation)  # type: ignore[union-attr]
            if d is None or not len(d):
                return LocalRel(frozenset())
        none: tuple = ()

        def lookup(src: str, rel: str, p: tuple[int, ...], k: tuple) -> Iterable[Fact]:
            r = (delta if src == "delta" else full).get(rel)
            return r.lookup(p, k) if r is not None else none

        def negated(rel: str, pattern: tuple, eqs: tuple = ()) -> bool:
            r = full.get(rel)
            if r is None:
                return False
            if not eqs:
                return r.matches(pattern)
            # a repeated variable local to the negation: equal values at those positions
            positions = tuple(i for i, v in enumerate(pattern) if v is not None)
            return any(
                all(f[q] == f[g[0]] for g in eqs for q in g)
                for f in r.lookup(positions, tuple(pattern[i] for i in positions))
            )

        return LocalRel({head(env) for env in bp.bindings(lookup, negated)})


# -- entry points ---------------------------------------------------------------------------------
def _check_arity(analysis: Analysis, rel: str, rows: Iterable[Fact]) -> None:
    n = analysis.arities[rel]
    for row in rows:
        if len(row) != n:
            raise ValueError(f"{rel} has {n} column(s); got the tuple {row!r}")


def maintain(
    analysis: Analysis,
    state: Mapping[str, set[Fact]],
    inserts: Mapping[str, set[Fact]],
    deletes: Mapping[str, set[Fact]],
    strategy: str = "provenance",
    engine: Any = None,
) -> tuple[dict[str, set[Fact]], dict]:
    """:func:`apply_changes` for any stratified selp program (``analysis`` of it)."""
    check_changes(analysis, inserts, deletes)
    for changes in (inserts, deletes):
        for rel, rows in changes.items():
            _check_arity(analysis, rel, rows)
    if strategy == "recompute":
        from selp.engines.embedded import evaluate as embedded_evaluate

        t0 = time.perf_counter()
        edb = {rel: (set(state.get(rel, ())) - set(deletes.get(rel, ()))) | set(inserts.get(rel, ())) for rel in analysis.edb}
        # the engine object, not its name: this module sits below the registry (whose engines
        # call into it); without one, the default embedded engine's evaluation
        idb = engine.evaluate(analysis, edb) if engine is not None else embedded_evaluate(analysis, edb)
        new = {**edb, **idb}
        stats = Stats("recompute")
        for rel, rows in new.items():
            before = state.get(rel, set())
            plus, minus = len(rows - before), len(before - rows)
            if plus:
                stats.inserted[rel] = plus
            if minus:
                stats.deleted[rel] = minus
        stats.seconds = time.perf_counter() - t0
        return new, stats.as_dict()
    backend = LocalBackend()
    empty: frozenset = frozenset()
    old = {rel: LocalRel(state.get(rel, empty)) for rel in analysis.arities}  # type: ignore[arg-type]
    ins = {rel: LocalRel(set(rows)) for rel, rows in inserts.items() if rows}
    dels = {rel: LocalRel(set(rows)) for rel, rows in deletes.items() if rows}
    new_rels, stats = Maintainer(analysis, backend).run(old, ins, dels, strategy)
    t0 = time.perf_counter()
    out: dict[str, set[Fact]] = {}
    for rel, r in new_rels.items():
        if r is old[rel] and isinstance(state.get(rel), set):
            out[rel] = state[rel]  # unchanged: the caller's own set
        else:
            out[rel] = r.materialize()
    stats.seconds += time.perf_counter() - t0
    return out, stats.as_dict()


def apply_changes(
    compiled: CompiledCDSS,
    state: dict[str, set[tuple]],
    inserts: dict[str, set[tuple]],
    deletes: dict[str, set[tuple]],
    strategy: str = "provenance",
    engine: Any = None,
) -> tuple[dict[str, set[tuple]], dict]:
    """Apply EDB changes to the full state of a compiled CDSS; returns (new state, statistics).

    ``state`` holds every relation of ``compiled.program`` (EDB ``R_l``/``R_r`` and every IDB
    relation, ``P_m`` included) as a full evaluation produced it; ``inserts``/``deletes`` name EDB
    relations only (``R_l`` tuples added/removed, ``R_r`` rejections added/removed; the new EDB is
    ``(old - deletes) | inserts``). ``strategy`` is ``provenance`` (PropagateDelete with
    derivability testing, then delta-rule insertion), ``dred`` or ``recompute`` (see the module
    docstring); ``engine`` is the engine (:func:`selp.engines.registry.get_engine`; None: the
    default embedded one) that ``recompute`` evaluates with (the
    incremental strategies maintain Python sets themselves). The new state equals full recomputation; its dict is new, but the sets of
    relations that did not change are the caller's own (not copied).

    Statistics: ``strategy``, ``seconds``, ``inserted``/``deleted`` (net tuples per relation,
    only those that changed), ``derivability_tests`` (tuples that kept provenance only through
    their own recursive component and were tested), ``rederived`` (tested tuples found still
    derivable, for ``provenance``; over-deleted tuples re-derived, for ``dred``), ``overdeleted``
    (``dred``), ``killed`` (heads of rule instances killed directly by the changes), ``rounds``
    (deletion rounds) and ``components`` (components with changes below them).
    """
    return maintain(analyze(compiled.program), state, inserts, deletes, strategy, engine)
