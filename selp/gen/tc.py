"""The transitive-closure (TC) dataset: a random undirected weighted graph for ``tc.dl``.

The graph is made of several disconnected random components. The closure of a connected
undirected component of ``n`` nodes has exactly ``n * n`` tuples, so choosing the component sizes
fixes the output size exactly: :func:`tc_size_for` turns a target output size into generator
parameters and :func:`generate_tc` writes ``edge.csv`` and returns the exact expected closure
size. ``selp gen tc`` is its command line.
"""

from __future__ import annotations

import json
import math
import random
from pathlib import Path
from typing import Any, Iterable

from selp.database import write_csv
from selp.outfile import write_text

STATS_FILE = "tc_stats.json"
# Bump when the generator's output for given parameters changes, so cached datasets are redone.
GENERATOR_VERSION = 1

# ~200-node components: large enough that the closure (n^2 = 40k tuples each) dominates the input
# and the recursion runs ~10 iterations; small enough that a 1M-tuple target still needs 25
# components, so the work spreads over many independent keys (as it would in a partitioned engine).
DEFAULT_COMPONENT_NODES = 200
# Average degree 4 (edges = 2 * nodes): sparse like road or contact networks; every component gets
# a random spanning tree first (so it is connected), the rest of the edges are random.
DEFAULT_DEGREE = 4.0


def closure_size(component_sizes: Iterable[int]) -> int:
    """Tuples of ``tc`` for a graph whose connected components have these node counts.

    Every ordered pair inside a component of two or more nodes is reachable (including ``(x, x)``:
    to a neighbour and back); an isolated node has no edge and so no tuple.
    """
    return sum(n * n for n in component_sizes if n >= 2)


def tc_size_for(
    target_output: int,
    component_nodes: int = DEFAULT_COMPONENT_NODES,
    degree: float = DEFAULT_DEGREE,
) -> tuple[int, int, int]:
    """Generator parameters ``(nodes, edges, components)`` whose closure is close to ``target_output``.

    Uses ``k = round(target / component_nodes**2)`` equal components of ``n = round(sqrt(target / k))``
    nodes, so the closure ``k * n * n`` is within a fraction of a percent of the target for targets
    of a few thousand and more. ``edges`` counts undirected edges (``edge.csv`` has twice as many
    rows): ``nodes * degree / 2``, at least a spanning tree per component and at most a complete graph.
    """
    if target_output < 1:
        raise ValueError("target_output must be positive")
    k = max(1, round(target_output / component_nodes**2))
    n = max(2, round(math.sqrt(target_output / k)))
    nodes = k * n
    edges = round(nodes * degree / 2)
    edges = max(nodes - k, min(edges, k * (n * (n - 1) // 2)))
    return nodes, edges, k


def _split(total: int, parts: int) -> list[int]:
    """``total`` as ``parts`` integers differing by at most one (largest first)."""
    q, r = divmod(total, parts)
    return [q + 1 if i < r else q for i in range(parts)]


def _add_random_edges(rng: random.Random, nodes: list[int], count: int, edges: set[tuple[int, int]]) -> None:
    """Add ``count`` new random undirected edges (as ``(min, max)``) between ``nodes``."""
    if count <= 0:
        return
    n = len(nodes)
    member = set(nodes)
    existing = sum(1 for a, b in edges if a in member and b in member)
    free = n * (n - 1) // 2 - existing
    if count > free:
        raise ValueError(f"cannot place {count} more edges among {n} nodes")
    if count * 2 > free:
        # dense request: enumerate the missing pairs and sample from them
        missing = [
            (min(a, b), max(a, b))
            for i, a in enumerate(nodes)
            for b in nodes[i + 1 :]
            if (min(a, b), max(a, b)) not in edges
        ]
        edges.update(rng.sample(missing, count))
        return
    added = 0
    while added < count:  # sparse: rejection sampling terminates quickly
        a, b = rng.sample(nodes, 2)
        e = (min(a, b), max(a, b))
        if e not in edges:
            edges.add(e)
            added += 1


def _components_of(n_nodes: int, edges: Iterable[tuple[int, int]]) -> list[int]:
    """Sizes of the connected components (union-find), isolated nodes included as size 1."""
    parent = list(range(n_nodes))

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for a, b in edges:
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[ra] = rb
    sizes: dict[int, int] = {}
    for x in range(n_nodes):
        r = find(x)
        sizes[r] = sizes.get(r, 0) + 1
    return sorted(sizes.values(), reverse=True)


def generate_tc(
    out_dir: str | Path,
    nodes: int,
    edges: int,
    seed: int = 0,
    components: int | None = None,
) -> dict[str, Any]:
    """Write a random undirected weighted graph to ``out_dir/edge.csv``; return its statistics.

    With ``components=k`` the nodes are split into ``k`` near-equal groups, each made connected by
    a random spanning tree, and the remaining edges are spread over the groups in proportion to
    their size (never between groups), so the closure size is exactly ``sum(n_i ** 2)``. Without
    it, ``edges`` distinct random pairs over all nodes are drawn (G(n, m)); the closure size is then
    computed from the resulting components.

    ``edges`` counts undirected edges; each is written in both directions with the same weight
    (``edge.csv`` columns ``src,dst,_weight``; weights uniform in (0, 1], three decimals). Node ids
    are a random permutation of ``1..nodes`` so that component membership is not visible in the
    ids. The output depends only on the arguments (``random.Random(seed)``). The statistics are
    also written to ``out_dir/tc_stats.json``.
    """
    if nodes < 2:
        raise ValueError("need at least 2 nodes")
    if edges < 1:
        raise ValueError("need at least 1 edge")
    rng = random.Random(seed)
    edge_set: set[tuple[int, int]] = set()
    if components is not None:
        if not 1 <= components <= nodes:
            raise ValueError(f"components must be between 1 and the number of nodes ({nodes})")
        sizes = _split(nodes, components)
        tree_edges = nodes - components
        capacity = sum(s * (s - 1) // 2 for s in sizes)
        if edges < tree_edges:
            raise ValueError(f"{components} connected components of {nodes} nodes need at least {tree_edges} edges")
        if edges > capacity:
            raise ValueError(f"{components} components of {nodes} nodes hold at most {capacity} edges")
        # extra (non-tree) edges per component, proportional to its capacity (largest remainder)
        extra = edges - tree_edges
        caps = [s * (s - 1) // 2 - (s - 1) for s in sizes]
        room = sum(caps)
        quotas = [extra * c // room if room else 0 for c in caps]
        rest = extra - sum(quotas)
        for i in sorted(range(len(caps)), key=lambda i: -(extra * caps[i] % room) if room else 0):
            if rest == 0:
                break
            if quotas[i] < caps[i]:
                quotas[i] += 1
                rest -= 1
        start = 0
        for size, quota in zip(sizes, quotas):
            members = list(range(start, start + size))
            start += size
            # random recursive tree over a shuffled order: connected, shallow (height ~ e*ln n)
            order = members[:]
            rng.shuffle(order)
            for i in range(1, size):
                a, b = order[i], order[rng.randrange(i)]
                edge_set.add((min(a, b), max(a, b)))
            _add_random_edges(rng, members, quota, edge_set)
    else:
        capacity = nodes * (nodes - 1) // 2
        if edges > capacity:
            raise ValueError(f"{nodes} nodes hold at most {capacity} edges")
        _add_random_edges(rng, list(range(nodes)), edges, edge_set)
    comp_sizes = _components_of(nodes, edge_set)
    label = list(range(1, nodes + 1))
    rng.shuffle(label)
    rows: list[tuple[int, int, str]] = []
    for a, b in sorted(edge_set):
        w = f"{rng.randint(1, 1000) / 1000:.3f}"  # (0, 1]: 0.001 .. 1.000
        rows.append((label[a], label[b], w))
        rows.append((label[b], label[a], w))
    rows.sort()
    out = Path(out_dir)
    write_csv(out / "edge.csv", ("src", "dst", "_weight"), rows)
    nontrivial = [s for s in comp_sizes if s >= 2]
    stats = {
        "dataset": "tc",
        "generator_version": GENERATOR_VERSION,
        "nodes": nodes,
        "edges": len(edge_set),
        "edge_rows": len(rows),
        "seed": seed,
        "components": components,
        "connected_components": len(nontrivial),
        "isolated_nodes": len(comp_sizes) - len(nontrivial),
        "largest_component": comp_sizes[0] if comp_sizes else 0,
        "expected_tc": closure_size(comp_sizes),
    }
    write_text(out / STATS_FILE, json.dumps(stats, indent=2) + "\n")  # last: marks a complete dataset
    return stats



def generate_tc_for(out_dir: str | Path, target: int, seed: int = 0) -> dict[str, Any]:
    """The graph whose closure has about ``target`` tuples (:func:`tc_size_for`), with the
    statistics the benchmark datasets share (``edb_rows``, ``output_tuples``)."""
    nodes, edges, k = tc_size_for(target)
    stats = generate_tc(out_dir, nodes, edges, seed, components=k)
    return {**stats, "edb_rows": stats["edge_rows"], "output_tuples": stats["expected_tc"]}
