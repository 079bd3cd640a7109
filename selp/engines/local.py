"""The local engine: in-memory, stratified semi-naive evaluation with hash indexes.

It is the interactive default for small inputs and the oracle for tests. :func:`evaluate` takes
plain ``{relation: iterable of tuples}`` and returns plain sets, with no global state, so it can
also run on one partition's data inside a Spark task (see :mod:`selp.engines.partition`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable, Iterable, Mapping

from selp import aggregate
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

    def discard_all(self, old: Iterable[Fact]) -> None:
        """Remove facts (a group's superseded best value), from every index built so far."""
        for f in old:
            self.facts.discard(f)
            for positions, idx in self.indexes.items():
                idx[tuple(f[p] for p in positions)].remove(f)
            for eqs, sub in self.filtered.items():
                if _equal_at(f, eqs):
                    sub.discard_all((f,))

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
    aggregated = analysis.program.aggregated()
    for comp in analysis.components:
        sizes = {rel: len(s.facts) for rel, s in stores.items()}
        if comp.selective:
            total_iterations += _selective(analysis, comp, stores, negated, sizes, progress)
            continue
        if not comp.recursive:
            instances: dict[str, list[Fact]] = {}
            for rule in comp.rules:
                plan = BodyPlan(rule, None, sizes)
                head = plan.head_builder()
                store = stores[rule.head.relation]
                envs = plan.bindings(lambda src, r, p, k: stores[r].lookup(p, k), negated)
                if rule.head.relation in aggregated:  # one head tuple per rule instance
                    instances.setdefault(rule.head.relation, []).extend(head(env) for env in envs)
                    continue
                new = {head(env) for env in envs}
                store.add_all(new - store.facts)
            for rel, heads in instances.items():
                stores[rel].add_all(aggregate.aggregate_groups(aggregated[rel], heads, comp.rules, rel))
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


def _selective(
    analysis: Analysis,
    comp: Component,
    stores: dict[str, FactStore],
    negated: Callable,
    sizes: dict[str, int],
    progress: Progress | None,
) -> int:
    """A recursive component whose relations aggregate with min/max: synchronous rounds, each
    keeping a group's best candidate when it improves the group's value (replacing the old
    fact), the improvements being the next round's delta (see :mod:`selp.aggregate`)."""
    aggregated = analysis.program.aggregated()
    members = set(comp.relations)
    base: list[tuple[BodyPlan, Callable]] = []
    variants: list[tuple[BodyPlan, Callable]] = []
    for rule in comp.rules:
        rec = [i for i, b in enumerate(rule.body) if b in rule.positive_atoms and b.relation in members]  # type: ignore[union-attr]
        for i in rec or [None]:
            p = BodyPlan(rule, i, sizes)
            (variants if rec else base).append((p, p.head_builder()))
    deltas: dict[str, FactStore] = {rel: FactStore() for rel in members}
    best: dict[str, dict[Fact, object]] = {rel: {} for rel in members}

    def lookup(src: str, r: str, p: tuple[int, ...], k: tuple) -> Iterable[Fact]:
        return (deltas[r] if src == "delta" else stores[r]).lookup(p, k)

    def candidates(plans: list[tuple[BodyPlan, Callable]]) -> dict[str, list[Fact]]:
        out: dict[str, list[Fact]] = {rel: [] for rel in members}
        for plan, head in plans:
            out[plan.rule.head.relation].extend(head(env) for env in plan.bindings(lookup, negated))
        return out

    pending = candidates(base)
    iteration = 0
    while True:
        iteration += 1
        improved: list[str] = []
        for rel in sorted(members):
            spec = aggregated[rel]
            # each group's best candidate per aggregate, then the group's improvement, if any:
            # a candidate worse or equal on every aggregate is pruned ([LTZIL10]'s Multi AggSel)
            groups: dict[Fact, list] = {}
            for t in pending[rel]:
                groups.setdefault(spec.key(t), []).append(spec.values(t))
            fresh, stale = [], []
            kept = best[rel]
            for k, rows in groups.items():
                cand = aggregate.best(spec, rows)
                if cand is None:
                    continue
                old = kept.get(k)
                v = aggregate.improve(spec, old, cand)  # type: ignore[arg-type]
                if v is not None:
                    if old is not None:
                        stale.append(spec.fact(k, old))  # type: ignore[arg-type]
                    kept[k] = v
                    fresh.append(spec.fact(k, v))
            stores[rel].discard_all(stale)
            stores[rel].add_all(fresh)
            deltas[rel] = FactStore(fresh)
            if fresh:
                improved.append(rel)
        size = sum(len(deltas[r].facts) for r in members)
        if progress:
            progress(comp, iteration, size, sum(len(stores[r].facts) for r in members))
        if not size:
            return iteration
        groups_total = sum(len(best[r]) for r in members)
        if aggregate.diverges(iteration, groups_total):
            rel = improved[0]
            name, loc, _ = aggregate.site(comp.rules, rel)
            raise aggregate.no_convergence(rel, aggregated[rel].fns[0], iteration, groups_total, name, loc)
        pending = candidates(variants)
