"""Transitive-closure components built by elimination, not by semi-naive rounds.

A component of the shape ``R(x, y) :- E(x, y, ...)`` plus recursive rules that close it
(``R(x, y) :- E(x, z, ...), R(z, y)``, ``R(x, y) :- R(x, z), E(z, y, ...)`` or
``R(x, y) :- R(x, z), R(z, y)``) is the transitive closure of the graph whose edges are
``E``'s tuples, read at two positions. Its absorption formulas are the path formulas of that
graph, and they can be computed without ever forming a length-bounded one.

Semi-naive rounds build, after round k, the formula "``y`` within k hops of ``x``". On a
well-connected network ([LTZIL10]'s 100-node transit-stub graph at ~400 links) those formulas
do not factor through the stubs' gateways as the final ones do: the BDD manager held 10 M live
nodes after round 8 of 15, and the build never ended, though the final BDDs are 1,500 nodes on
average. Per destination the rounds are no better (540 MB for the first destination).

Kleene's elimination (Floyd-Warshall over the semiring) eliminates one node ``k`` at a time:
``A[i][j] |= A[i][k] ∧ A[k][j]``. In PosBool every ``a*`` is TRUE (absorption), so no star
term appears, and after eliminating a set S of nodes ``A[i][j]`` is exactly "``j`` reachable
from ``i`` through intermediate nodes in S": the path formula of a subgraph, a final formula of
its own kind, never a length-bounded one. After the last node it is the closure's formula, the
same Boolean function as the fixpoint's, hence the same BDD (canonical) or the same minimal
monomial set. On the 396-link network: 65 s of CPU in selp (29 s in a bare prototype), 3.3 M
live nodes in the end.

An insertion into a built closure (a new edge, or an edge's formula gaining ``g``) needs no
rounds either: a simple path uses the edge ``(a, b)`` at most once, so
``R(i, j) |= R*(i, a) ∧ g ∧ R*(b, j)`` with ``R*`` the reflexive closure (TRUE on the
diagonal), one edge at a time. Deletions restrict formulas as for every other component.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Hashable, Iterable

from selp.language.ast import Atom, Rule, Var
from selp.language.validate import Component

Formula = Any
Edge = tuple[Hashable, Hashable]


@dataclass(frozen=True)
class Closure:
    """A component that is the transitive closure of ``edges`` read at ``src`` and ``dst``."""

    rel: str
    edges: str
    src: int
    dst: int


def closure_shape(comp: Component) -> Closure | None:
    """The closure ``comp`` computes, or None when it is not one of the recognised shapes: one
    binary relation, exit rules ``R(x, y) :- E(..x..y..)`` and at least one recursive rule
    closing it (right-linear, left-linear or non-linear), no conditions, every other argument of
    ``E`` a variable used nowhere else, one ``E`` read at the same positions throughout."""
    if len(comp.relations) != 1 or not comp.recursive:
        return None
    (rel,) = comp.relations
    found: set[tuple[str, int, int]] = set()
    exits = recursive = 0
    for rule in comp.rules:
        head = rule.head
        if len(rule.body) != len(rule.positive_atoms) or head.arity != 2 or rule.aggregate is not None:
            return None
        x, y = head.args
        if not (isinstance(x, Var) and isinstance(y, Var)) or x == y or x.anonymous or y.anonymous:
            return None
        mine = [a for a in rule.body if a.relation == rel]  # type: ignore[union-attr]
        other = [a for a in rule.body if a.relation != rel]  # type: ignore[union-attr]
        if not mine and len(other) == 1:  # R(x, y) :- E(x, y)
            got = _edge(rule, other[0], x, y)
            exits += 1
        elif len(mine) == 1 and len(other) == 1:  # E(x, z), R(z, y)  or  R(x, z), E(z, y)
            r = mine[0].args
            if r[1] == y and isinstance(r[0], Var) and r[0] not in (x, y):
                got = _edge(rule, other[0], x, r[0])
            elif r[0] == x and isinstance(r[1], Var) and r[1] not in (x, y):
                got = _edge(rule, other[0], r[1], y)
            else:
                return None
            recursive += 1
        elif len(mine) == 2 and not other:  # R(x, z), R(z, y)
            (a1, b1), (a2, b2) = mine[0].args, mine[1].args
            z = b1 if a1 == x else b2
            if not ({(a1, b1), (a2, b2)} == {(x, z), (z, y)} and isinstance(z, Var) and z not in (x, y)):
                return None
            recursive += 1
            continue
        else:
            return None
        if got is None:
            return None
        found.add(got)
    if len(found) != 1 or not exits or not recursive:
        return None
    (edges, src, dst), = found
    return Closure(rel, edges, src, dst)


def _edge(rule: Rule, atom: Atom, a: Var, b: Var) -> tuple[str, int, int] | None:
    """``(relation, position of a, position of b)`` when ``atom`` reads an edge from ``a`` to
    ``b`` and constrains nothing else (its other arguments are variables used once)."""
    if a.anonymous or b.anonymous or atom.args.count(a) != 1 or atom.args.count(b) != 1:
        return None
    uses: dict[Var, int] = {}
    for t in [*rule.head.args, *(u for lit in rule.body for u in lit.args)]:  # type: ignore[union-attr]
        if isinstance(t, Var):
            uses[t] = uses.get(t, 0) + 1
    for t in atom.args:
        if t not in (a, b) and not (isinstance(t, Var) and uses[t] == 1):
            return None
    return atom.relation, atom.args.index(a), atom.args.index(b)


def edge_formulas(alg: Any, facts: Iterable[tuple[tuple, Formula]], shape: Closure) -> dict[Edge, Formula]:
    """Each edge's formula: the disjunction of the formulas of the ``E`` tuples that are it
    (``link(a, b, 50)`` and ``link(a, b, 60)`` are one edge)."""
    parts: dict[Edge, list[Formula]] = {}
    for fact, form in facts:
        parts.setdefault((fact[shape.src], fact[shape.dst]), []).append(form)
    return {e: fs[0] if len(fs) == 1 else alg.union(fs) for e, fs in parts.items()}


def elimination_order(edges: Iterable[Edge]) -> list[Hashable]:
    """The nodes in the order they are eliminated: block by block of the undirected graph's
    biconnected components (smallest first), each block's interior by fewest edges, the
    articulation points last. A block is eliminated whole while the formulas through it are
    local to it (a stub's interior, then its gateway), the hubs at the end. On the 396-link
    transit-stub network: 29 s of CPU, against 34 s for the nodes' names (stubs then transit
    nodes, by luck of the naming), 68 s for greedy minimum degree and 92 s for fewest edges
    first (measured, same load)."""
    import networkx as nx

    graph = nx.Graph()
    degree: dict[Hashable, int] = {}
    for a, b in edges:
        degree[a] = degree.get(a, 0) + 1
        degree[b] = degree.get(b, 0) + 1
        if a != b:  # a self loop joins nothing
            graph.add_edge(a, b)
    first = {n: i for i, n in enumerate(degree)}
    cut = set(nx.articulation_points(graph))
    order: list[Hashable] = []
    placed: set[Hashable] = set()
    for block in sorted(nx.biconnected_components(graph), key=lambda b: (len(b), min(first[n] for n in b))):
        inner = sorted((n for n in block if n not in cut and n not in placed), key=lambda n: (degree[n], first[n]))
        order += inner
        placed.update(inner)
    rest = sorted((n for n in degree if n not in placed), key=lambda n: (degree[n], first[n]))  # cut points, lone nodes
    return order + rest


def eliminate(alg: Any, edges: dict[Edge, Formula], check: Callable[[], None] = lambda: None) -> tuple[dict[Edge, Formula], int]:
    """The closure's formulas of the graph ``edges`` (edge -> formula), by Kleene elimination
    (see the module docstring); also the number of conjunctions formed. ``check`` runs after
    each eliminated node (the node cap), ``alg.tick`` after each conjunction."""
    out: dict[Hashable, dict[Hashable, Formula]] = {}
    into: dict[Hashable, dict[Hashable, Formula]] = {}
    for (a, b), f in edges.items():
        out.setdefault(a, {})[b] = f
        into.setdefault(b, {})[a] = f
    work = 0
    for k in elimination_order(edges):
        ins = list(into.get(k, {}).items())
        outs = list(out.get(k, {}).items())
        for i, aik in ins:
            row = out.setdefault(i, {})
            for j, akj in outs:
                f = alg.conj([aik, akj])
                old = row.get(j)
                row[j] = new = f if old is None else alg.union((old, f))
                into.setdefault(j, {})[i] = new
                alg.tick(2)  # the node cap within a node's elimination too (a hub's is long)
        work += len(ins) * len(outs)
        check()
    return {(i, j): f for i, row in out.items() for j, f in row.items()}, work


def insert_edge(alg: Any, edge: Edge, gained: Formula, column: list[tuple[Hashable, Formula]],
                row: list[tuple[Hashable, Formula]]) -> Iterable[tuple[Edge, Formula]]:
    """The conjunctions an edge ``(a, b)`` that gained ``gained`` adds to the closure: one per
    pair ``(i, j)``, ``R*(i, a) ∧ gained ∧ R*(b, j)``, over ``column`` (the ``(i, R(i, a))``
    before the insertion) and ``row`` (the ``(j, R(b, j))``); ``a`` and ``b`` themselves come
    with TRUE (the reflexive closure)."""
    a, b = edge
    true = alg.true()
    left = [(a, true)] + [(i, f) for i, f in column if i != a]
    right = [(b, true)] + [(j, f) for j, f in row if j != b]
    for i, x in left:
        xg = alg.conj([x, gained])
        for j, y in right:
            yield (i, j), alg.conj([xg, y])
