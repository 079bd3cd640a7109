"""The depth-first variable order of [LTZIL10]: base tuples read as the edges of a graph (a
tuple's first two values, ``link(src, dst, ...)``) are numbered in the order a depth-first
traversal meets them, so paths sharing an initial segment share a BDD prefix (the paper's
example: a 9-node BDD in depth-first order, 18 in breadth-first order).

Tuples of one value (``triggered(s)``) are conjoined with the edges that reach their value
(``near(t, s) ∧ triggered(s)``), so each is numbered right when the traversal first reaches its
value: next to those edges, not after every edge (which made the sensor grid's BDDs 61 % larger
than in arrival order). The traversal starts from the nodes no edge enters (a region's name in
``seed(r, s)``: its variable is in every formula of the region) before the others.

Computed once over the base a view is built from; variables of later insertions are appended
(the paper's incremental re-ordering, cases (a)-(d), is not implemented: a view rebuilt with
``--reset`` gets the depth-first order of its base again).
"""

from __future__ import annotations

from typing import Hashable

Item = tuple[str, tuple]


def dfs_order(items: list[Item]) -> list[Item]:
    """``items`` (``(relation, tuple)`` pairs) in depth-first order of the graph whose edges are
    the tuples of two or more values; a tuple of one value right when the traversal first
    reaches that value as a node, the others (no value a node, or no value) last in their order.
    Sources: the nodes no edge enters first, then the others, each in order of first occurrence."""
    edges = [it for it in items if len(it[1]) >= 2]
    units: dict[Hashable, list[Item]] = {}
    for it in items:
        if len(it[1]) == 1:
            units.setdefault(it[1][0], []).append(it)
    out_edges: dict[Hashable, list[Item]] = {}
    entered: set[Hashable] = set()
    for it in edges:
        out_edges.setdefault(it[1][0], []).append(it)
        entered.add(it[1][1])
    starts = list(dict.fromkeys(it[1][0] for it in edges))
    starts = [n for n in starts if n not in entered] + [n for n in starts if n in entered]
    seen_nodes: set[Hashable] = set()
    out: list[Item] = []

    def reach(node: Hashable) -> None:
        seen_nodes.add(node)
        out.extend(units.pop(node, ()))

    for start in starts:
        if start in seen_nodes:
            continue
        reach(start)
        stack = [iter(out_edges.get(start, ()))]
        while stack:
            nxt = next(stack[-1], None)
            if nxt is None:
                stack.pop()
                continue
            out.append(nxt)
            dst = nxt[1][1]
            if dst not in seen_nodes:
                reach(dst)
                stack.append(iter(out_edges.get(dst, ())))
    placed = {id(it) for it in out}
    return out + [it for it in items if len(it[1]) < 2 and id(it) not in placed]
