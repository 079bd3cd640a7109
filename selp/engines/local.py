"""The local engine: in-memory, stratified semi-naive evaluation with hash indexes.

It is the interactive default for small inputs and the oracle for tests. :func:`evaluate` takes
plain ``{relation: iterable of tuples}`` and returns plain sets, with no global state, so it can
also run on one partition's data inside a Spark task (see :mod:`selp.engines.partition`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable, Iterable, Mapping

from selp.engines.joins import BodyPlan, Fact
from selp.language.validate import Analysis, Component

# progress(component, iteration, delta size, total size of the component's relations)
Progress = Callable[["Component", int, int, int], None]
PROGRESS_RELATIONS = 4  # relations a progress line names before "+N more"


def progress_line(component: Component, iteration: int, delta: int, total: int, seconds: float) -> str:
    """One progress report as commands print it: the stratum, the relations it computes (the
    first few of a large recursive component), the iteration, the new and total tuples."""
    rels = list(component.relations)
    named = ", ".join(rels[:PROGRESS_RELATIONS]) + (f", +{len(rels) - PROGRESS_RELATIONS} more" if len(rels) > PROGRESS_RELATIONS else "")
    return f"  stratum {component.stratum} [{named}] iteration {iteration}: +{delta} new, {total} total ({seconds:.1f}s)"


class FactStore:
    """A relation's tuples plus hash indexes on demand, kept up to date as tuples are added."""

    __slots__ = ("facts", "indexes", "filtered")

    def __init__(self, facts: Iterable[Fact] = ()) -> None:
        self.facts: set[Fact] = set(facts)
        self.indexes: dict[tuple[int, ...], dict[tuple, list[Fact]]] = {}
        # the facts with equal values at groups of positions (a repeated variable local to a
        # negation), each a store of its own, built on first use and kept current
        self.filtered: dict[tuple[tuple[int, ...], ...], FactStore] = {}

    def index(self, positions: tuple[int, ...]) -> dict[tuple, list[Fact]]:
        """The facts by their values at ``positions`` (built on first use, then kept current)."""
        idx = self.indexes.get(positions)
        if idx is None:
            idx = {}
            for f in self.facts:
                idx.setdefault(tuple(f[p] for p in positions), []).append(f)
            self.indexes[positions] = idx
        return idx

    def add_all(self, new: Iterable[Fact]) -> None:
        """Add facts, updating every index built so far."""
        for f in new:
            self.facts.add(f)
            for positions, idx in self.indexes.items():
                idx.setdefault(tuple(f[p] for p in positions), []).append(f)
            for eqs, sub in self.filtered.items():
                if _equal_at(f, eqs):
                    sub.add_all((f,))

    def lookup(self, positions: tuple[int, ...], key: tuple) -> Iterable[Fact]:
        """The facts whose values at ``positions`` are ``key`` (every fact when no position)."""
        if not positions:
            return self.facts
        return self.index(positions).get(key, ())

    def matches(self, pattern: tuple, eqs: tuple[tuple[int, ...], ...] = ()) -> bool:
        """Whether some fact agrees with ``pattern`` where it is not None (and has equal values
        within each group of positions of ``eqs``)."""
        if eqs:
            sub = self.filtered.get(eqs)
            if sub is None:
                sub = self.filtered[eqs] = FactStore(f for f in self.facts if _equal_at(f, eqs))
            return sub.matches(pattern)
        positions = tuple(i for i, v in enumerate(pattern) if v is not None)
        if len(positions) == len(pattern):
            return pattern in self.facts
        key = tuple(pattern[i] for i in positions)
        return bool(self.lookup(positions, key))


def _equal_at(fact: Fact, eqs: tuple[tuple[int, ...], ...]) -> bool:
    return all(all(fact[p] == fact[g[0]] for p in g[1:]) for g in eqs)


@dataclass
class EvalStats:
    """What an evaluation did: iterations per component and wall time."""

    iterations: int = 0
    seconds: float = 0.0


def evaluate(
    analysis: Analysis,
    edb: Mapping[str, Iterable[Fact]],
    progress: Progress | None = None,
    stats: EvalStats | None = None,
) -> dict[str, set[Fact]]:
    """Compute the IDB fixpoint; returns ``{idb relation: facts}`` (EDB relations excluded)."""
    t0 = time.perf_counter()
    stores: dict[str, FactStore] = {rel: FactStore(edb.get(rel, ())) for rel in analysis.edb}
    for rel in analysis.idb:
        stores[rel] = FactStore()
    empty = FactStore()

    def negated(rel: str, pattern: tuple, eqs: tuple = ()) -> bool:
        return stores[rel].matches(pattern, eqs)

    total_iterations = 0
    for comp in analysis.components:
        sizes = {rel: len(s.facts) for rel, s in stores.items()}
        if not comp.recursive:
            for rule in comp.rules:
                plan = BodyPlan(rule, None, sizes)
                head = plan.head_builder()
                store = stores[rule.head.relation]
                new = {head(env) for env in plan.bindings(lambda src, r, p, k: stores[r].lookup(p, k), negated)}
                store.add_all(new - store.facts)
            total_iterations += 1
            if progress:
                size = sum(len(stores[r].facts) for r in comp.relations)
                progress(comp, 1, size, size)
            continue
        members = set(comp.relations)
        # semi-naive variants: one per recursive body atom, driven by that atom's delta
        variants: list[tuple[BodyPlan, Callable]] = []
        base: list[tuple[BodyPlan, Callable]] = []
        for rule in comp.rules:
            rec = [i for i, b in enumerate(rule.body) if b in rule.positive_atoms and b.relation in members]  # type: ignore[union-attr]
            if not rec:
                p = BodyPlan(rule, None, sizes)
                base.append((p, p.head_builder()))
            for i in rec:
                p = BodyPlan(rule, i, sizes)
                variants.append((p, p.head_builder()))
        deltas: dict[str, FactStore] = {rel: FactStore() for rel in members}
        full_lookup = lambda src, r, p, k: stores[r].lookup(p, k)  # noqa: E731
        new: dict[str, set[Fact]] = {rel: set() for rel in members}
        for plan, head in base:
            out = new[plan.rule.head.relation]
            for env in plan.bindings(full_lookup, negated):
                out.add(head(env))
        iteration = 0
        while True:
            iteration += 1
            delta_size = 0
            for rel in members:
                fresh = new[rel] - stores[rel].facts
                stores[rel].add_all(fresh)
                deltas[rel] = FactStore(fresh)
                delta_size += len(fresh)
            total_iterations += 1
            if progress:
                progress(comp, iteration, delta_size, sum(len(stores[r].facts) for r in members))
            if delta_size == 0:
                break

            def lookup(src: str, r: str, p: tuple[int, ...], k: tuple) -> Iterable[Fact]:
                if src == "delta":
                    return deltas.get(r, empty).lookup(p, k)
                return stores[r].lookup(p, k)

            new = {rel: set() for rel in members}
            for plan, head in variants:
                out = new[plan.rule.head.relation]
                known = stores[plan.rule.head.relation].facts
                for env in plan.bindings(lookup, negated):
                    f = head(env)
                    if f not in known:
                        out.add(f)
    if stats is not None:
        stats.iterations = total_iterations
        stats.seconds = time.perf_counter() - t0
    return {rel: stores[rel].facts for rel in analysis.idb}
