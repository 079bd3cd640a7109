"""Strongly connected components (Tarjan), shared by the program analysis and ProQL."""

from __future__ import annotations

from typing import Callable, Hashable, Iterable, TypeVar

N = TypeVar("N", bound=Hashable)


def strongly_connected(roots: Iterable[N], successors: Callable[[N], Iterable[N]]) -> list[list[N]]:
    """Tarjan's strongly connected components of the nodes reachable from ``roots``, emitted
    successors first (a component after every component it reaches). Iterative, so deep chains
    do not hit Python's recursion limit; deterministic when ``roots`` and ``successors`` are."""
    index: dict[N, int] = {}
    low: dict[N, int] = {}
    on: set[N] = set()
    stack: list[N] = []
    out: list[list[N]] = []
    for root in roots:
        if root in index:
            continue
        work = [(root, iter(successors(root)))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            advanced = False
            for w in it:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(successors(w))))
                    advanced = True
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                out.append(comp)
    return out
