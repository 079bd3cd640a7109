"""A quick cost proxy for Z plans, from the row and distinct-value counts the engine keeps.

[GI12] gives no formulas (it asks the database's heuristic planner); this is the textbook
estimate: a selection on a constant keeps ``rows / distinct(column)``, an equi-join of sizes
``L`` and ``R`` yields ``L·R / max(distinct_L, distinct_R)`` per shared variable, atoms joined
greedily (most shared variables, then smallest, first). A CQ costs the rows it reads plus every
intermediate result; a query costs the sum over its CQs plus the final summing of counts.
"""

from __future__ import annotations

from typing import Callable, Mapping

from selp.adapt.rules import CQ
from selp.adapt.zprogram import Stats
from selp.language.ast import Var

SECONDS_PER_ROW = 5e-8  # turns cost into time: DuckDB recomputed the mix's views at 3-7e-8 s per estimated row on a quiet machine (2 cores, 100k rows; median 4.5e-8); loaded, 2-4x that
RULE_OVERHEAD = 50.0  # a fixed cost per rule (planning, a pass over the union)


_MEMO: dict[tuple, tuple[float, float]] = {}
MAX_MEMO = 200_000


def cq_cost(cq: CQ, stats: Callable[[str], Stats]) -> tuple[float, float]:
    """``(cost, estimated output rows)`` of one CQ; memoised on the CQ (interned) and the
    statistics of its relations, so a plan search costs each CQ once."""
    key = (cq, tuple(stats(rel) for rel, _ in cq.body))
    hit = _MEMO.get(key)
    if hit is None:
        if len(_MEMO) >= MAX_MEMO:
            _MEMO.clear()
        hit = _MEMO[key] = _cq_cost(cq, key[1])
    return hit


def _cq_cost(cq: CQ, body_stats: tuple[Stats, ...]) -> tuple[float, float]:
    atoms = []
    for (rel, args), st in zip(cq.body, body_stats):
        n = float(st.rows)
        dist: dict[Var, float] = {}
        for c, t in enumerate(args):
            d = float(max(1, st.distinct[c] if c < len(st.distinct) else 1))
            if isinstance(t, Var):
                dist[t] = min(dist.get(t, d), d)
            else:
                n /= d
        atoms.append((max(n, 0.0) if st.rows else 0.0, dist, st.rows))
    if not atoms:
        return 1.0, 1.0
    cost = 0.0
    pending = list(range(len(atoms)))
    first = min(pending, key=lambda i: atoms[i][0])
    pending.remove(first)
    size, dist = atoms[first][0], dict(atoms[first][1])
    cost += atoms[first][2]
    while pending:
        nxt = max(pending, key=lambda i: (len(set(atoms[i][1]) & set(dist)), -atoms[i][0]))
        pending.remove(nxt)
        n, d2, rows = atoms[nxt]
        out = size * n
        for v, d in d2.items():
            if v in dist:
                out /= max(dist[v], d)
                dist[v] = min(dist[v], d)
            else:
                dist[v] = d
        cost += rows + out
        size = out
    return cost + size, size


def is_copy(cq: CQ, k: int) -> bool:
    """Whether ``k·cq`` is ``q(X1..Xn) :- r(X1..Xn)`` (any non-zero ``k``): a copy of one stored
    relation, times ``k``."""
    if k == 0 or len(cq.body) != 1 or cq.unequal:
        return False
    args = cq.body[0][1]
    return cq.head == args and all(isinstance(t, Var) for t in args) and len(set(args)) == len(args)


def query_cost(q: Mapping[CQ, int], stats: Callable[[str], Stats], shared_copies: bool = False) -> float:
    """Estimated cost of evaluating and summing a query (a plan for one view). With
    ``shared_copies`` (an engine that keeps a copied relation's stored rows as segments of the
    new one, with a coefficient, :class:`selp.adapt.zduck.DuckZ`) every copy -- the old
    instance kept, a rule repeated, a dropped rule's segment cancelled -- costs only its rule:
    its rows are neither read nor summed, and neither are the other CQs' results (the engine
    stores them unsummed, as a segment its readers sum)."""
    total, out, kept = 0.0, 0.0, False
    for cq, k in q.items():
        if shared_copies and is_copy(cq, k):
            kept = True  # bookkeeping in the engine: no row read or written
            total += RULE_OVERHEAD
            continue
        c, n = cq_cost(cq, stats)
        total += c + RULE_OVERHEAD
        out += n
    return total if kept else total + out
