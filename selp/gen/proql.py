"""The ProQL benchmark's CDSSs: SWISS-PROT-like peers (:mod:`selp.gen.swissprot`) laid out on the
topologies of [Kar09] chapter 8, data flowing towards a *root* peer ``P(n-1)``.

* ``chain`` — ``P0 -> P1 -> ... -> P(n-1)``, the root ``P(n-1)``, the leaf ``P0``.
* ``branched`` — half the peers in a chain ending at the root, the other half in two equal
  branches both feeding the chain's first peer (two leaves).
* ``tree`` — a 4-ary in-tree: every peer feeds its parent, the root is the last peer; the
  leaves are the peers without children.

Every edge is a full mapping (:func:`selp.gen.swissprot.full_mapping`: all of the source peer's
relations joined on the key, into all of the target's). ``data`` places ``base`` entries at the
``leaves``, at the leaves and the ``middle`` (the peers half-way along the longest path;
``leaves+middle``), or at ``every`` peer (entries disjoint across peers).
"""

from __future__ import annotations

from selp.gen.swissprot import SwissProtCDSS, full_mapping, generate

TOPOLOGIES = ("chain", "branched", "tree")
PLACEMENTS = ("leaves", "leaves+middle", "every")


def edges(topology: str, n: int) -> list[tuple[int, int]]:
    """``(source, target)`` peer pairs of a topology over ``n`` peers; the root is ``n - 1``
    and every edge goes from a lower to a higher peer number."""
    if n < 2:
        raise ValueError(f"a topology needs at least 2 peers, got {n}")
    if topology == "chain":
        return [(i - 1, i) for i in range(1, n)]
    if topology == "branched":
        branch = max(1, (n // 2) // 2)
        b1 = list(range(0, branch))
        b2 = list(range(branch, 2 * branch))
        main = list(range(2 * branch, n))  # the chain ending at the root
        out = [(a, b) for a, b in zip(b1, b1[1:])] + [(a, b) for a, b in zip(b2, b2[1:])]
        out += [(b1[-1], main[0]), (b2[-1], main[0])]
        out += [(a, b) for a, b in zip(main, main[1:])]
        return out
    if topology == "tree":
        # BFS numbering from the root (b = 0), children 4b+1..4b+4; peer id n-1-b
        return [(n - 1 - b, n - 1 - (b - 1) // 4) for b in range(1, n)]
    raise ValueError(f"unknown topology {topology!r} (choose {', '.join(TOPOLOGIES)})")


def placement(topology: str, n: int, data: str) -> set[int]:
    """The peers holding base data."""
    es = edges(topology, n)
    has_parent_feed = {t for _, t in es}
    leaves = {p for p in range(n) if p not in has_parent_feed}
    if data == "leaves":
        return leaves
    if data == "every":
        return set(range(n))
    if data != "leaves+middle":
        raise ValueError(f"unknown data placement {data!r} (choose {', '.join(PLACEMENTS)})")
    depth = {n - 1: 0}
    children: dict[int, list[int]] = {}
    for s, t in es:
        children.setdefault(t, []).append(s)
    todo = [n - 1]
    while todo:
        x = todo.pop()
        for c in children.get(x, []):
            depth[c] = depth[x] + 1
            todo.append(c)
    half = max(depth.values()) // 2
    return leaves | {p for p, d in depth.items() if d == half}


def generate_proql(topology: str, n: int, base: int, data: str, seed: int = 0) -> SwissProtCDSS:
    """The generated CDSS of one configuration (module docstring)."""
    g = generate(n, base, "1", "chain", seed, overlap=0.0)
    g.topology = topology
    g.mappings = [full_mapping(g, s, t) for s, t in edges(topology, n)]
    holders = placement(topology, n, data)
    g.entries = [e if p in holders else [] for p, e in enumerate(g.entries)]
    return g
