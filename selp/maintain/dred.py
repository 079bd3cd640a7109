"""The ``dred`` strategy: delete and rederive [GMS93], the baseline of [LTZIL10].

Per positive component (:func:`selp.maintain.program.kind`), one batch runs three phases:

1. *over-delete*: every tuple with a derivation that uses a deleted tuple is deleted, transitively
   (semi-naive over the old state) -- on a well-connected recursive view, nearly everything;
2. *rederive*: an over-deleted tuple that still has a derivation from what is left comes back;
3. *insert*: the re-derived tuples and the inserted ones propagate semi-naively.

Components with aggregates or negation are recomputed from their maintained inputs (DRed needs
monotone rules; this is also what the fallback from absorption gives them).
"""

from __future__ import annotations

from typing import Callable, Iterable, Mapping

from selp.engines.joins import BodyPlan
from selp.engines.local import FactStore
from selp.language.ast import Atom, Const, Rule, Var
from selp.language.validate import Analysis, Component
from selp.maintain.base import Maintainer, present_changes
from selp.maintain.program import Fact, ViewChanges, evaluate_component, inputs, kind, positive_positions, replace_facts
from selp.maintain.recompute import from_scratch

Changes = dict[str, set[Fact]]
_GUARD = "#dred_guard"  # the pseudo-relation that binds a rule's head to the tuples to rederive


class DRed(Maintainer):
    """A view maintained by delete-and-rederive (see the module docstring)."""

    strategy = "dred"
    touched = 0  # (a class default: states saved before it was counted load without it)

    def __init__(self, analysis: Analysis, base: Mapping[str, Iterable[Fact]], view: Mapping[str, set[Fact]] | None = None) -> None:
        super().__init__(analysis)
        self.aggregated = analysis.program.aggregated()
        self.kinds = [kind(c, self.aggregated) for c in analysis.components]
        for rel in analysis.edb:
            self.stores[rel].add_all(base.get(rel, ()))
        view = view if view is not None else from_scratch(analysis, self.base())
        for rel in analysis.idb:
            self.stores[rel].add_all(view.get(rel, ()))
        self._cache_plans: dict[tuple[Rule, int | None], tuple[BodyPlan, Callable]] = {}
        self.work = 0  # derivations enumerated (the cost DRed pays for over-deleting)
        self.touched = 0  # tuples over-deleted, re-derived or inserted

    def apply(self, inserts: Mapping[str, Iterable[Fact]], deletes: Mapping[str, Iterable[Fact]]) -> ViewChanges:
        ins, dels = present_changes(self.stores, inserts, deletes)
        changes = ViewChanges()
        if not ins and not dels:
            return changes
        for rel, fs in dels.items():
            self.stores[rel].discard_all(fs)
        for rel, fs in ins.items():
            self.stores[rel].add_all(fs)
        for comp, k in zip(self.analysis.components, self.kinds):
            if not inputs(comp) & (set(ins) | set(dels)):
                continue
            if k == "positive":
                added, removed = self._positive(comp, ins, dels, changes)
            else:
                added, removed = {}, {}
                for rel, new in evaluate_component(self.analysis, comp, self.stores).items():
                    added[rel], removed[rel] = replace_facts(self.stores[rel], rel, new, changes)
            ins.update({r: s for r, s in added.items() if s})
            dels.update({r: s for r, s in removed.items() if s})
        return changes

    def _plan(self, rule: Rule, driver: int | None) -> tuple[BodyPlan, Callable]:
        got = self._cache_plans.get((rule, driver))
        if got is None:
            plan = BodyPlan(rule, driver)
            got = self._cache_plans[(rule, driver)] = (plan, plan.head_builder())
        return got

    def _heads(self, rules: Iterable[Rule], current: Mapping[str, set[Fact]], full: Callable) -> Iterable[tuple[str, Fact]]:
        """The heads of the derivations using a tuple of ``current`` at some positive atom."""
        out = []
        for rule in rules:
            for i in positive_positions(rule):
                d = current.get(rule.body[i].relation)  # type: ignore[union-attr]
                if not d:
                    continue
                plan, head = self._plan(rule, i)
                dstore = FactStore(d)

                def lookup(src: str, r: str, p: tuple[int, ...], k: tuple, dstore: FactStore = dstore) -> Iterable[Fact]:
                    return dstore.lookup(p, k) if src == "delta" else full(r, p, k)

                for env in plan.bindings(lookup, lambda *a: False):
                    self.work += 1
                    out.append((rule.head.relation, head(env)))
        return out

    def _positive(self, comp: Component, ins: Changes, dels: Changes, changes: ViewChanges) -> tuple[Changes, Changes]:
        members = comp.relations
        stores = self.stores
        old = {rel: FactStore(fs) for rel, fs in dels.items()}

        def old_full(r: str, p: tuple[int, ...], k: tuple) -> Iterable[Fact]:
            gone = old.get(r)
            return list(stores[r].lookup(p, k)) + (list(gone.lookup(p, k)) if gone else [])

        # 1. over-delete, over the old state (the members are still whole)
        over: Changes = {rel: set() for rel in members}
        current: Changes = dict(dels)
        while current:
            fresh: Changes = {}
            for rel, f in self._heads(comp.rules, current, old_full):
                if f in stores[rel].facts and f not in over[rel]:
                    over[rel].add(f)
                    fresh.setdefault(rel, set()).add(f)
            current = fresh
        for rel in members:
            stores[rel].discard_all(over[rel])
        # 2. rederive what still has a derivation from what is left
        back: Changes = {rel: self._rederive(comp, rel, over[rel]) for rel in members if over[rel]}
        for rel, fs in back.items():
            stores[rel].add_all(fs)
        # 3. insert
        new: Changes = {rel: set() for rel in members}
        full = lambda r, p, k: stores[r].lookup(p, k)  # noqa: E731
        current = {**{r: s for r, s in ins.items() if s}, **{r: s for r, s in back.items() if s}}
        while current:
            fresh = {}
            for rel, f in self._heads(comp.rules, current, full):
                if f not in stores[rel].facts:
                    stores[rel].add_all((f,))
                    new[rel].add(f)
                    fresh.setdefault(rel, set()).add(f)
            current = fresh
        self.touched += sum(len(over[r]) + len(back.get(r, ())) + len(new[r]) for r in members)
        added = {rel: new[rel] - over[rel] for rel in members}
        removed = {rel: over[rel] - stores[rel].facts for rel in members}
        for rel in members:
            for f in removed[rel]:
                changes.remove(rel, f)
            for f in added[rel]:
                changes.add(rel, f)
        return added, removed

    def _rederive(self, comp: Component, rel: str, candidates: set[Fact]) -> set[Fact]:
        """The tuples of ``candidates`` that one rule application derives from the current state:
        each rule runs with its head bound to the candidates (a guard atom over them drives the
        join), or, when its head computes values, in full and filtered."""
        stores = self.stores
        guard_store = FactStore(candidates)
        out: set[Fact] = set()
        for rule in comp.rules:
            if rule.head.relation != rel:
                continue
            if all(isinstance(t, (Var, Const)) for t in rule.head.args):
                guarded = Rule(rule.name, rule.head, (Atom(_GUARD, rule.head.args),) + rule.body, rule.weight, rule.named, rule.loc)
                plan, head = self._plan(guarded, 0)
            else:
                plan, head = self._plan(rule, None)

            def lookup(src: str, r: str, p: tuple[int, ...], k: tuple) -> Iterable[Fact]:
                return guard_store.lookup(p, k) if src == "delta" else stores[r].lookup(p, k)

            for env in plan.bindings(lookup, lambda *a: False):
                self.work += 1
                f = head(env)
                if f in candidates:
                    out.add(f)
        return out
