"""The DTable on one machine ([DGM15] section 5): Top-1, iterative Top-k, heuristic Top-k.

All three are generalisations of Knuth's algorithm for grammar problems (Dijkstra on
hypergraphs): derivations are finalised in order of the total order of :mod:`selp.topk.order`
(weight key, size, origin hash). Adding a step never gives a better weight and a non-copy step
makes a tree strictly larger, so a fact's i-th entry is final when it is the best candidate left.
For the strictly monotone monoids (confidence on (0, 1], cost, size) this is exact for the whole
order; for min-based ones (min-confidence, access) a better child weight can leave the parent's
weight unchanged while its size grows, so the *weights* are exact (the k best weights are always
reachable from the children's k best) but among equally weighted trees the size tie-break is only
applied step by step: another algorithm (the Spark engine) may return a smaller tree of the same
weight. Components of P_p are
processed in dependency order, so negated atoms see complete lower strata.

* ``top1`` -- Algorithm 2: a priority queue of facts keyed by their best candidate, with
  decrease-key (heapdict). Each rule instantiation is formed once, when its last body fact is
  finalised (a semi-naive delta join), so nothing like the full provenance is materialised.
* ``iterative`` -- section 5.2: k rounds; round i runs Algorithm 2 again to give every fact its
  i-th entry, over candidates that combine any entries found so far. It materialises the rule
  instantiations of P_p (like full provenance) and considers every combination of child ranks,
  which is why it is the slow baseline.
* ``heuristic`` -- section 5.3, in the k-shortest-paths style: one pass in which the i-th best
  tree of a fact is a *modification* of an earlier one -- the same instantiation with one child
  replaced by that child's next entry. A candidate (instantiation, child ranks) is pushed when its
  predecessor is popped and the child's next entry exists (otherwise it waits for that entry), so
  only O(k * m) candidates per instantiation are ever formed instead of k^m.

Identical trees of P reached through different derivations of P_p ("same origin", section 5.2)
are counted once: a fact keeps only entries with distinct origin hashes; a duplicate still
expands its successors, which may be new.
"""

from __future__ import annotations

import dataclasses
import heapq
import itertools
from collections import defaultdict
from typing import Any, Callable, Iterable, Iterator

from heapdict import heapdict

from selp.database import Database
from selp.engines.joins import BodyPlan
from selp.engines.local import FactStore
from selp.errors import SelpError
from selp.instrument.builder import is_child
from selp.instrument.witness import is_filter_relation
from selp.language.ast import Rule
from selp.language.validate import Component, analyze
from selp.topk.dtable import DTable, Entry, FactKey, leaf_origin, node_origin
from selp.topk.task import Task

ALGORITHMS = ("heuristic", "iterative")
# progress(entries so far): called every PROGRESS_EVERY entries and at the end
Progress = Callable[[int], None]
PROGRESS_EVERY = 100_000


def run_topk_local(task: Task, db: Database, algorithm: str = "heuristic", progress: Progress | None = None) -> DTable:
    """Fill a DTable with the k best distinct-origin derivations of every fact of P_p."""
    if algorithm not in ALGORITHMS:
        raise SelpError(f"unknown top-k algorithm {algorithm!r} (choose {' or '.join(ALGORITHMS)})")
    run = _Run(task, db, progress)
    for comp in task.inst_analysis.components:
        if any(is_filter_relation(rel) for rel in comp.relations):
            continue  # evaluated by _Run (agg@ copies: facts, never tree nodes)
        if task.k == 1:
            run.top1(comp)
        elif algorithm == "heuristic":
            run.heuristic(comp)
        else:
            run.top1(comp)
            for i in range(2, task.k + 1):
                run.iterative_round(comp, i)
    if progress:
        progress(run.count)
    return run.table


Combo = tuple[str, FactKey, tuple[FactKey, ...], tuple[int, ...]]  # rule, head, children, ranks


class _Run:
    def __init__(self, task: Task, db: Database, progress: Progress | None) -> None:
        self.task = task
        self.k = task.k
        self.monoid = task.monoid
        self.key = task.monoid.key
        self.combine = task.monoid.combine
        self.table = task.empty_dtable()
        self.ent: dict[FactKey, list[Entry]] = self.table.entries
        self.origins: dict[FactKey, set[int]] = defaultdict(set)
        self.rule_origin = task.inst.rule_origin
        self.progress = progress
        self.count = 0
        analysis = task.inst_analysis
        self.stores: dict[str, FactStore] = {}
        self.order: dict[FactKey, int] = {}  # when a fact got its first entry
        self.clock = itertools.count()
        for rel in analysis.edb:
            facts = db.facts.get(rel, set())
            self.stores[rel] = FactStore(facts)
            origin_rel = task.inst.relation_origin.get(rel, rel)
            for f in facts:
                key = (rel, f)
                e = Entry(task.fact_weight(db, rel, f), 0, leaf_origin(origin_rel, f), None)
                self.ent[key] = [e]
                self.origins[key].add(e.origin)
                self.order[key] = -1  # before everything
        for rel in analysis.idb:
            self.stores[rel] = FactStore()
        for rel, facts in _filter_facts(task, db).items():
            self.stores[rel] = FactStore(facts)

    # --- shared pieces -------------------------------------------------------------------------

    def negated(self, rel: str, pattern: tuple, eqs: tuple = ()) -> bool:
        return self.stores[rel].matches(pattern, eqs)

    def evaluate(self, rule: str, children: tuple[FactKey, ...], ranks: tuple[int, ...]) -> tuple[tuple, Entry]:
        """The entry (and its sort key) of applying ``rule`` to these children's entries."""
        key, w = self.weigh(rule, children, ranks)
        pointers = tuple((ck[0], ck[1], r) for ck, r in zip(children, ranks))
        return key, Entry(w, key[1], key[2], rule, pointers)

    def weigh(self, rule: str, children: tuple[FactKey, ...], ranks: tuple[int, ...]) -> tuple[tuple, Any]:
        """The sort key (key(weight), size, origin) and the weight, without building an entry."""
        w = self.task.rule_weight[rule]
        size = self.task.rule_size[rule]
        origins = []
        combine, ent = self.combine, self.ent
        for ck, r in zip(children, ranks):
            e = ent[ck][r - 1]
            w = combine(w, e.weight)
            size += e.size
            origins.append(e.origin)
        if self.rule_origin[rule] is None:  # a copy step stands for its only child
            origin = origins[0]
        else:
            origin = node_origin(self.rule_origin[rule], origins)
        return (self.key(w), size, origin), w

    def add(self, head: FactKey, entry: Entry) -> bool:
        """Append ``entry`` to ``head``'s list unless its origin is there; whether it was added."""
        if entry.origin in self.origins[head]:
            return False
        lst = self.ent.setdefault(head, [])
        lst.append(entry)
        self.origins[head].add(entry.origin)
        if len(lst) == 1:
            self.order[head] = next(self.clock)
            self.stores[head[0]].add_all([head[1]])
        self.count += 1
        if self.progress and self.count % PROGRESS_EVERY == 0:
            self.progress(self.count)
        return True

    def full(self, head: FactKey) -> bool:
        return len(self.ent.get(head, ())) >= self.k

    def _instances(self, rule: Rule, plan: BodyPlan, lookup) -> Iterator[tuple[FactKey, tuple[FactKey, ...]]]:
        head, parts = _builders(rule, plan)
        rel = rule.head.relation
        for env in plan.bindings(lookup, self.negated):
            yield (rel, head(env)), tuple((r, build(env)) for r, build in parts)

    def base_instances(self, comp: Component) -> Iterator[tuple[str, FactKey, tuple[FactKey, ...]]]:
        """Instantiations of the component's rules whose body has no atom of the component."""
        members = set(comp.relations)
        for rule in comp.rules:
            if any(a.relation in members for a in rule.positive_atoms):
                continue
            plan = BodyPlan(rule, None, {r: len(s.facts) for r, s in self.stores.items()})
            for head, children in self._instances(rule, plan, lambda s, r, p, key: self.stores[r].lookup(p, key)):
                yield rule.name, head, children

    def delta_plans(self, comp: Component) -> dict[str, list[tuple]]:
        """Per relation of the component: how to join a newly finalised fact of it, for every
        (rule, body position) it can occupy: (rule name, plan, head builder, body builders,
        position among the positive atoms)."""
        members = set(comp.relations)
        out: dict[str, list[tuple]] = defaultdict(list)
        for rule in comp.rules:
            positives = [i for i, b in enumerate(rule.body) if is_child(b)]
            for n, i in enumerate(positives):
                b = rule.body[i]
                if b.relation in members:  # type: ignore[union-attr]
                    plan = BodyPlan(rule, i)
                    head, parts = _builders(rule, plan)
                    out[b.relation].append((rule.name, rule.head.relation, plan, head, parts, n))  # type: ignore[union-attr]
        return out

    def new_instances(self, fact: FactKey, plans: list[tuple]) -> Iterator[tuple[str, FactKey, tuple[FactKey, ...]]]:
        """Instantiations whose last body fact (by finalisation order) is ``fact``: body atoms
        before the driving one must be strictly older, those after may be ``fact`` itself, so
        each instantiation is formed exactly once."""
        values = fact[1]
        order = self.order
        mine = order[fact]
        stores = self.stores

        def lookup(src: str, r: str, positions: tuple[int, ...], key: tuple) -> Iterable[tuple]:
            if src == "delta":
                return [values] if all(values[p] == k for p, k in zip(positions, key)) else []
            return stores[r].lookup(positions, key)

        for name, rel, plan, head, parts, n in plans:
            for env in plan.bindings(lookup, self.negated):
                children = tuple((r, build(env)) for r, build in parts)
                ok = True
                for j, child in enumerate(children):
                    if j != n:
                        o = order[child]
                        if o > mine or (o == mine and j < n):
                            ok = False
                            break
                if ok:
                    yield name, (rel, head(env)), children

    # --- Algorithm 2 (Top-1) -------------------------------------------------------------------

    def top1(self, comp: Component) -> None:
        # Decrease-key by lazy deletion: a better candidate is pushed again and stale heap items
        # are skipped when popped. On the TC benchmark this beat heapdict's true decrease-key
        # (a pure-Python heap) by about 1.5x, so heapdict is only used for the iterative rounds.
        heap: list = []
        best: dict[FactKey, tuple] = {}  # head -> (key, rule, children) of its best candidate
        ent, rule_weight, rule_size, rule_origin = self.ent, self.task.rule_weight, self.task.rule_size, self.rule_origin
        combine, keyf = self.combine, self.key

        def offer(rule: str, head: FactKey, children: tuple[FactKey, ...]) -> None:
            if head in ent:
                return  # already final
            w, size = rule_weight[rule], rule_size[rule]
            origins = []
            for c in children:
                e = ent[c][0]
                w = combine(w, e.weight)
                size += e.size
                origins.append(e.origin)
            origin = origins[0] if rule_origin[rule] is None else node_origin(rule_origin[rule], origins)
            key = (keyf(w), size, origin)
            old = best.get(head)
            if old is None or key < old[0]:
                best[head] = (key, rule, children, w)
                heapq.heappush(heap, (key, head))

        for rule, head, children in self.base_instances(comp):
            offer(rule, head, children)
        plans = self.delta_plans(comp)
        while heap:
            key, head = heapq.heappop(heap)
            cand = best.get(head)
            if cand is None or cand[0] != key:
                continue  # stale: finalised already, or a better candidate was pushed later
            del best[head]
            _, rule, children, w = cand
            self.add(head, Entry(w, key[1], key[2], rule, tuple((c[0], c[1], 1) for c in children)))
            for rule, h, children in self.new_instances(head, plans.get(head[0], [])):
                offer(rule, h, children)

    # --- section 5.2: rounds -------------------------------------------------------------------

    def iterative_round(self, comp: Component, i: int) -> None:
        """Give every fact of ``comp`` that has i-1 entries its i-th, over all combinations."""
        members = set(comp.relations)
        if not hasattr(self, "_inst") or self._inst_comp is not comp:
            self._inst_comp = comp
            self._inst: dict[FactKey, list[tuple[str, tuple[FactKey, ...]]]] = defaultdict(list)
            self._uses: dict[FactKey, list[tuple[str, FactKey, tuple[FactKey, ...]]]] = defaultdict(list)
            for rule in comp.rules:
                plan = BodyPlan(rule, None, {r: len(s.facts) for r, s in self.stores.items()})
                for head, children in self._instances(rule, plan, lambda s, r, p, key: self.stores[r].lookup(p, key)):
                    self._inst[head].append((rule.name, children))
                    for c in set(children):
                        if c[0] in members:
                            self._uses[c].append((rule.name, head, children))
        queue: heapdict = heapdict()
        best: dict[FactKey, Entry] = {}

        def consider(head: FactKey, rule: str, children: tuple[FactKey, ...], fixed: tuple[int, FactKey] | None) -> None:
            """Offer every rank combination (with ``fixed`` = (rank, fact): that fact's new entry
            in at least one of its positions)."""
            ranges = []
            for c in children:
                n = len(self.ent.get(c, ()))
                ranges.append(range(1, n + 1))
            for ranks in itertools.product(*ranges):
                if fixed is not None and not any(c == fixed[1] and r == fixed[0] for c, r in zip(children, ranks)):
                    continue
                key, entry = self.evaluate(rule, children, ranks)
                if entry.origin in self.origins[head]:
                    continue
                if head not in best or key < queue[head]:
                    best[head] = entry
                    queue[head] = key

        for head, insts in self._inst.items():
            if len(self.ent.get(head, ())) == i - 1:
                for rule, children in insts:
                    consider(head, rule, children, None)
        while queue:
            head, _ = queue.popitem()
            self.add(head, best.pop(head))
            for rule, h, children in self._uses.get(head, ()):
                if len(self.ent.get(h, ())) == i - 1:
                    consider(h, rule, children, (i, head))

    # --- section 5.3: modifications ------------------------------------------------------------

    def heuristic(self, comp: Component) -> None:
        heap: list = []
        tie = itertools.count()
        seen: set[Combo] = set()
        waiting: dict[tuple[FactKey, int], list[Combo]] = defaultdict(list)

        def try_push(c: Combo) -> None:
            rule, head, children, ranks = c
            if self.full(head):
                return
            for ck, r in zip(children, ranks):
                if len(self.ent.get(ck, ())) < r:
                    waiting[(ck, r)].append(c)  # formed when that entry exists
                    return
            key, w = self.weigh(rule, children, ranks)
            heapq.heappush(heap, (key, next(tie), head, w, c))  # the entry is built if it wins

        def push(c: Combo) -> None:
            if c not in seen:
                seen.add(c)
                try_push(c)

        for rule, head, children in self.base_instances(comp):
            push((rule, head, children, (1,) * len(children)))
        plans = self.delta_plans(comp)
        while heap:
            key, _, head, w, combo = heapq.heappop(heap)
            if self.full(head):
                continue
            rule, _, children, ranks = combo
            entry = Entry(w, key[1], key[2], rule, tuple((ck[0], ck[1], r) for ck, r in zip(children, ranks)))
            if self.add(head, entry):
                rank = len(self.ent[head])
                for c in waiting.pop((head, rank), ()):
                    try_push(c)
                if rank == 1:
                    for r2, h, kids in self.new_instances(head, plans.get(head[0], [])):
                        push((r2, h, kids, (1,) * len(kids)))
            for j in range(len(ranks)):  # modifications: one child's next entry
                push((rule, head, children, ranks[:j] + (ranks[j] + 1,) + ranks[j + 1:]))


def _filter_facts(task: Task, db: Database) -> dict[str, set[tuple]]:
    """The facts of the ``agg@`` relations of P_p (aggregated relations of P and what they read,
    see :mod:`selp.instrument.witness`), evaluated by the reference engine."""
    rules = tuple(r for r in task.inst.program.rules if is_filter_relation(r.head.relation))
    if not rules:
        return {}
    from selp.engines.local import evaluate

    sub = analyze(dataclasses.replace(task.inst.program, rules=rules))
    return evaluate(sub, db.facts)


def _builders(rule: Rule, plan: BodyPlan) -> tuple[Callable, list[tuple[str, Callable]]]:
    """The head builder and (relation, fact builder) of every positive body atom, in order."""
    parts = [(b.relation, plan.atom_builder(i)) for i, b in enumerate(rule.body) if is_child(b)]
    return plan.head_builder(), parts


def weights_of(table: DTable, fact: FactKey) -> list[Any]:
    """The weights of a P fact's answers, best first (for tests and quick checks)."""
    return [e.weight for e in table.answers().get(fact, [])]
