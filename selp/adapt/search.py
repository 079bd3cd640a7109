"""Best-first search over rewritings of one view ([GI12], ``optimizeUsingViews``).

The queue starts with the input plan (recomputation: always a candidate) and its unfolding to
base relations. Each step polls the cheapest pending plan, asks every materialised view for its
``C_V`` cheapest fold-with-remainder rewritings, and queues the ``C_S`` cheapest new ones while
fewer than ``C_Q`` plans are done (the paper's code bounds the done set, not the queue). The
search stops when the queue is empty or the time budget, a fraction of the input plan's
estimated running time, is spent — also inside an expansion, which tries the view's own old
instance first and then the views sharing most relations with the plan; the cheapest executable
plan seen wins. The first plan expanded is the base unfolding, always (with one view at least), so that a
tight budget still tries folding into the old view.

Before the best-first search, a greedy *dive* folds the base unfolding into few views: the
view's own old relations (its old instance and its old rules' provenance tables, ``first``) and
the one-rule views (provenance tables) whose relations all occur in the plan; at each step the
cheapest fold, improving or not, up to :data:`MAX_DIVE` steps, every plan on the way a
candidate. A plan that keeps the old instance and adds a remainder computed from provenance
tables is several folds deep (fold the old instance, then fold the remainder's CQs into the
provenance tables): breadth-first expansions over every view cost a few milliseconds each and
the budget (a few per cent of a recomputation of some tens of milliseconds) allows one, so
without the dive such plans were found only by longer searches (datasets/results/adapt/a24h).
"""

from __future__ import annotations

import heapq
import itertools
import time
from dataclasses import dataclass
from typing import Callable, Mapping

from selp.adapt.cost import SECONDS_PER_ROW, query_cost
from selp.adapt.rewrite import executable, folds
from selp.adapt.rules import Query, query_key
from selp.adapt.zprogram import Stats

C_S, C_V, C_Q = 8, 4, 128
MAX_DIVE = 8  # greedy fold steps into the view's own old relations (each cancels a CQ: plans are short)
# of the recomputation's estimated time: 0.1 searched longer and chose no better plans
# (datasets/results/adapt/a24g); after the dive, 0.03 chose no better plans than 0.01 (a24h)
BUDGET_FRACTION = 0.01
MIN_BUDGET, MAX_BUDGET = 0.0003, 5.0  # seconds: a floor for tiny views, a cap for the estimate's errors


@dataclass(frozen=True)
class Plan:
    """The chosen plan of one view and what the search saw."""

    query: Query
    cost: float
    recompute_cost: float
    explored: int
    seconds: float


def view_relations(defn: Query) -> frozenset[str]:
    """The relations a view's base definition reads (a view folds only into plans holding them)."""
    return frozenset(r for cq in defn for r, _ in cq.body)


def search(original: Query, base: Query, views: Mapping[str, Query], stats: Callable[[str], Stats], budget: float | None = None,
           first: tuple[str, ...] = (), view_rels: Mapping[str, frozenset[str]] | None = None, shared_copies: bool = False) -> Plan:
    """The cheapest plan for a view whose input plan is ``original`` and whose unfolding over
    base relations is ``base``; ``views`` are the materialised views with their base definitions,
    those named in ``first`` (the view's own old instance) tried first; ``view_rels`` their
    :func:`view_relations`, when the caller keeps them across searches; ``shared_copies`` as in
    :func:`selp.adapt.cost.query_cost` (the engine's)."""
    start = time.perf_counter()
    recompute = query_cost(original, stats, shared_copies)
    if budget is None:
        budget = min(MAX_BUDGET, max(MIN_BUDGET, BUDGET_FRACTION * recompute * SECONDS_PER_ROW))
    tie = itertools.count()
    pending: list = []
    seen: set = set()
    done: list[tuple[float, Query]] = []

    def push(q: Query, cost: float | None = None, rank: int = 1) -> None:
        key = query_key(q)
        if key in seen:
            return
        seen.add(key)
        heapq.heappush(pending, (rank, query_cost(q, stats, shared_copies) if cost is None else cost, next(tie), q))

    # a view folds into a plan only if its definition's relations occur in the plan: checked
    # on relation sets first, since most available views (provenance tables above all) share none
    if view_rels is None:
        view_rels = {name: view_relations(defn) for name, defn in views.items()}
    # the base unfolding is expanded first: the old instance and the provenance tables are
    # defined over base relations, so that is where they fold (a tight budget may allow one
    # expansion, and folding the input plan, over changed sources, rarely matches them)
    push(base, rank=0)
    push(original, recompute)
    start = time.perf_counter()  # the budget is for the search: statistics were fetched above
    dived = _dive(base, [name for name in first if name in views], views, view_rels, stats, shared_copies, push)
    # expand one plan at least, unless the dive explored (its plans are candidates already)
    while pending and ((not done and not dived) or time.perf_counter() - start < budget):
        _, cost, _, p = heapq.heappop(pending)
        done.append((cost, p))
        found: list[tuple[float, int, Query]] = []
        plan_rels = {r for cq in p for r, _ in cq.body}
        # the most promising views first (the view's old instance, then those sharing the most
        # relations with the plan), so that a budget spent inside one expansion has tried them
        order = sorted((name for name in views if view_rels[name] & plan_rels),
                       key=lambda name: (name not in first, -len(view_rels[name] & plan_rels), name))
        for name in order:
            cands = [(query_cost(c, stats, shared_copies), next(tie), c) for c in folds(p, name, views[name]) if query_key(c) not in seen]
            found += sorted(cands, key=lambda x: x[:2])[:C_V]
            if time.perf_counter() - start >= budget:
                break
        for c_cost, _, c in sorted(found, key=lambda x: x[:2])[:C_S]:
            if len(done) >= C_Q:
                break
            push(c, c_cost)
    candidates = done + [(c, q) for _, c, _, q in pending]
    runnable = [(c, q) for c, q in candidates if all(executable(cq) for cq in q)]
    best_cost, best = min(runnable, key=lambda x: x[0]) if runnable else (recompute, original)
    if best_cost >= recompute:  # a rewriting no cheaper is no gain: the input plan reads what is materialised
        best_cost, best = recompute, original
    return Plan(best, best_cost, recompute, dived + len(done), time.perf_counter() - start)


def _dive(base: Query, own: list[str], views: Mapping[str, Query], view_rels: Mapping[str, frozenset[str]],
          stats: Callable[[str], Stats], shared_copies: bool, push: Callable[..., None]) -> int:
    """The greedy dive (module docstring): from ``base``, fold into the views ``own`` and the
    one-rule views whose relations the plan holds, one step at a time, the cheapest fold each
    step (improving or not: folding the old instance in costs as much as it saves until the
    remainder folds into provenance tables), and ``push`` every plan reached. Stops after
    :data:`MAX_DIVE` steps or when nothing folds; returns the steps taken."""
    current, visited = base, {query_key(base)}
    mine = set(own)
    single = [name for name in views if len(views[name]) == 1 and name not in mine]
    for step in range(MAX_DIVE):
        plan_rels = {r for cq in current for r, _ in cq.body}
        best: tuple[float, Query] | None = None
        for name in own + [n for n in single if view_rels[n] <= plan_rels]:
            for c in folds(current, name, views[name]):
                key = query_key(c)
                if key in visited:
                    continue
                cost = query_cost(c, stats, shared_copies)
                if best is None or cost < best[0]:
                    best = (cost, c)
        if best is None:
            return step
        current = best[1]
        visited.add(query_key(current))
        push(current, best[0])
    return MAX_DIVE
