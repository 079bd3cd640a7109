"""The depth-first variable order of [LTZIL10]: base tuples read as the edges of a graph (a
tuple's first two values, ``link(src, dst, ...)``) are numbered in the order a depth-first
traversal meets them, so paths sharing an initial segment share a BDD prefix (the paper's
example: a 9-node BDD in depth-first order, 18 in breadth-first order).

Computed once over the base a view is built from; variables of later insertions are appended
(the paper's incremental re-ordering, cases (a)-(d), is not implemented: a view rebuilt with
``--reset`` gets the depth-first order of its base again).
"""

from __future__ import annotations

from typing import Hashable

Item = tuple[str, tuple]


def dfs_order(items: list[Item]) -> list[Item]:
    """``items`` (``(relation, tuple)`` pairs) in depth-first order of the graph whose edges are
    the tuples of two or more values, from the sources in the order they first occur; tuples of
    fewer values keep their order, after the edges."""
    edges = [it for it in items if len(it[1]) >= 2]
    rest = [it for it in items if len(it[1]) < 2]
    out_edges: dict[Hashable, list[Item]] = {}
    for it in edges:
        out_edges.setdefault(it[1][0], []).append(it)
    seen_nodes: set[Hashable] = set()
    out: list[Item] = []
    for it in edges:
        start = it[1][0]
        if start in seen_nodes:
            continue
        seen_nodes.add(start)
        stack = [iter(out_edges.get(start, ()))]
        while stack:
            nxt = next(stack[-1], None)
            if nxt is None:
                stack.pop()
                continue
            out.append(nxt)
            dst = nxt[1][1]
            if dst not in seen_nodes:
                seen_nodes.add(dst)
                stack.append(iter(out_edges.get(dst, ())))
    return out + rest
