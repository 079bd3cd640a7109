"""Weak acyclicity of a set of mappings ([FKMP05]; [Kar09] §2, §3.2).

The dependency graph has a node per relation position (``U.2``: the second attribute of ``U``).
For every mapping and every *frontier* variable ``x`` (one that occurs in the body and the head),
for every body position ``p`` of ``x``:

* a *regular* edge ``p -> q`` to every head position ``q`` holding ``x``;
* a *special* edge ``p =*> q`` to every head position ``q`` holding an existential variable.

The mappings are weakly acyclic when no cycle goes through a special edge. That is what makes
the Skolem program finite: a labeled null created at ``q`` can never flow back into a position
that creates nulls from it, so Skolem terms never nest (Proposition 1 of [Kar09]).

A bidirectional mapping is checked as its pair of tgds; Theorem 5.3.1 of [Kar09] (no self-joins
on either side, disjoint schemas) is the case where the pair alone always passes, but several
mappings sharing relations, or self-joins, need the general test, so the general test is all
that runs.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from selp.cdss.errors import CdssError
from selp.cdss.model import CDSS, Mapping, RelationRef
from selp.language.ast import Var

Position = tuple[RelationRef, int]  # 0-based attribute index


@dataclass(frozen=True)
class Edge:
    """An edge of the dependency graph and the mapping that contributes it."""

    source: Position
    target: Position
    special: bool
    mapping: str


def dependency_graph(mappings: tuple[Mapping, ...] | list[Mapping]) -> list[Edge]:
    """Every edge, in mapping order (duplicates from several mappings kept once, first wins)."""
    edges: dict[tuple[Position, Position, bool], Edge] = {}
    for m in mappings:
        exist = set(m.existentials)
        frontier = set(m.frontier)
        targets: list[tuple[Position, Var]] = [
            ((a.relation, i), t) for a in m.head for i, t in enumerate(a.args) if isinstance(t, Var)
        ]
        for a in m.body:
            for i, t in enumerate(a.args):
                if not isinstance(t, Var) or t not in frontier:
                    continue
                src = (a.relation, i)
                for q, v in targets:
                    if v == t:
                        edges.setdefault((src, q, False), Edge(src, q, False, m.name))
                    elif v in exist:
                        edges.setdefault((src, q, True), Edge(src, q, True, m.name))
    return list(edges.values())


def special_cycle(mappings: tuple[Mapping, ...] | list[Mapping]) -> list[Edge] | None:
    """A shortest cycle through a special edge (the first such edge in mapping order), or None."""
    edges = dependency_graph(mappings)
    out: dict[Position, list[Edge]] = {}
    for e in edges:
        out.setdefault(e.source, []).append(e)
    for star in (e for e in edges if e.special):
        # breadth-first from the special edge's target back to its source
        back: dict[Position, Edge | None] = {star.target: None}
        queue = deque([star.target])
        while queue:
            node = queue.popleft()
            if node == star.source:
                path: list[Edge] = []
                while back[node] is not None:
                    e = back[node]
                    assert e is not None
                    path.append(e)
                    node = e.source
                return [star] + path[::-1]
            for e in out.get(node, []):
                if e.target not in back:
                    back[e.target] = e
                    queue.append(e.target)
    return None


def format_cycle(cycle: list[Edge], cdss: CDSS | None = None) -> str:
    """``U.2 =*> B.2 -> U.2`` (1-based positions; relation names qualified only when ambiguous)."""

    def pos(p: Position) -> str:
        rel = cdss.display_name(p[0]) if cdss is not None else p[0].name
        return f"{rel}.{p[1] + 1}"

    parts = [pos(cycle[0].source)]
    for e in cycle:
        parts.append("=*>" if e.special else "->")
        parts.append(pos(e.target))
    return " ".join(parts)


def check_weakly_acyclic(cdss: CDSS) -> None:
    """Raise a :class:`CdssError` naming a cycle through a special edge, if there is one."""
    cycle = special_cycle(cdss.mappings)
    if cycle is None:
        return
    order = [m.name for m in cdss.mappings]
    tgds = sorted({e.mapping for e in cycle}, key=order.index)
    # the two directions of a `<->` mapping are named by the mapping as written
    names = list(dict.fromkeys(cdss.mapping(n).pair or n for n in tgds))
    what = f"mappings {', '.join(names)} are" if len(names) > 1 else f"mapping {names[0]} is"
    raise CdssError(
        f"{what} not weakly acyclic: {format_cycle(cycle, cdss)} (a labeled null could feed its own creation forever)",
        cdss.mapping(cycle[0].mapping).loc,
    )
