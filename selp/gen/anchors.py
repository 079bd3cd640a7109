"""The dataset of ``selp bench anchors``: a random directed graph and the two-rule TC program.

``N`` nodes, ``3N`` distinct directed edges without self-loops, weights uniform in [0.5, 1.0] with
3 decimals, from ``random.Random(seed)`` (seed 1): at N = 1000 its closure has 873 168 path
tuples, at 3300 about 9.6 M.
"""

from __future__ import annotations

import hashlib
import random
from pathlib import Path
from typing import Any

from selp.outfile import write_bytes, write_text

PROGRAM = "r1 (0.9): path(x, y) :- edge(x, y).\nr2 (0.8): path(x, z) :- edge(x, y), path(y, z).\n"
DEFAULT_SEED = 1


def generate_graph(n: int, out_dir: str | Path, seed: int = DEFAULT_SEED) -> dict[str, Any]:
    """Write ``OUT/db/edge.csv`` (``c1,c2,_weight``) and ``OUT/tc.dl``; return the statistics.

    ``3n`` distinct directed edges ``(a, b)``, ``a != b``, drawn as pairs of
    ``randrange(n)``; weights ``uniform(0.5, 1.0)`` with 3 decimals, drawn in sorted edge order
    after all edges (the same stream as ``random.seed(seed)`` and the module functions).
    """
    if n < 4:  # 3n distinct pairs a != b need n(n - 1) >= 3n
        raise ValueError(f"--nodes: at least 4 nodes (3N distinct edges without self-loops), got {n}")
    rng = random.Random(seed)
    edges: set[tuple[int, int]] = set()
    while len(edges) < 3 * n:
        a, b = rng.randrange(n), rng.randrange(n)
        if a != b:
            edges.add((a, b))
    out = Path(out_dir)
    (out / "db").mkdir(parents=True, exist_ok=True)
    lines = ["c1,c2,_weight"] + [f"{a},{b},{rng.uniform(0.5, 1.0):.3f}" for a, b in sorted(edges)]
    data = ("\n".join(lines) + "\n").encode()
    write_bytes(out / "db" / "edge.csv", data)
    write_text(out / "tc.dl", PROGRAM)
    x, y = first_path_fact(edges)
    return {"nodes": n, "edges": len(edges), "seed": seed, "edge_csv_sha256": hashlib.sha256(data).hexdigest(),
            "explain_fact": f"path({x}, {y})"}


def first_path_fact(edges: set[tuple[int, int]]) -> tuple[int, int]:
    """The first pair of two distinct nodes in the closure: the smallest edge source and the
    smallest other node it reaches (itself only if it reaches nothing else, which cannot happen:
    it has an edge to another node)."""
    succ: dict[int, list[int]] = {}
    for a, b in edges:
        succ.setdefault(a, []).append(b)
    x = min(succ)
    seen: set[int] = set()
    stack = list(succ[x])
    while stack:
        v = stack.pop()
        if v not in seen:
            seen.add(v)
            stack.extend(succ.get(v, ()))
    return x, min(seen - {x}, default=x)
