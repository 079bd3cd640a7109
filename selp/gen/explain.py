"""Random data for ``datasets/explain.dl``: a network of agents with trust and base levels.

``agents`` agents with about three out-links each (so distances up to 4 hops reach a bounded
neighbourhood), trust on a third of the pairs of nearby agents, base levels 1..5 for a tenth of the
agents, and the number tables ``succ`` (0..8), ``hop`` (1..4) and ``below``. Facts get random weights in [0, 1].
"""

from __future__ import annotations

import csv
import random
from pathlib import Path
from typing import Any

from selp.outfile import open_output

GENERATOR_VERSION = 1
MAX_NUMBER = 8  # levels and comparisons
MAX_HOPS = 4  # dist counts at most this many hops


def generate_explain(out_dir: str | Path, agents: int, seed: int = 0) -> dict[str, Any]:
    """Write link, trusts, succ, below and base (CSV with ``_weight``); returns statistics."""
    if agents < 2:
        raise ValueError("the explain dataset needs at least 2 agents")
    rng = random.Random(seed)
    rel: dict[str, tuple[tuple[str, str], set[tuple[int, int]]]] = {
        "link": (("x", "y"), set()), "trusts": (("x", "y"), set()), "succ": (("n", "m"), set()), "hop": (("n", "m"), set()),
        "below": (("n", "m"), set()), "base": (("x", "n"), set()),
    }
    for x in range(agents):
        for _ in range(3):
            # mostly local links (agents are on a ring), some long ones
            y = (x + rng.randint(1, 5)) % agents if rng.random() < 0.8 else rng.randrange(agents)
            if y != x:
                rel["link"][1].add((x, y))
                if rng.random() < 0.33:
                    rel["trusts"][1].add((y, x))
        if rng.random() < 0.1:
            rel["base"][1].add((x, rng.randint(1, 5)))
    for n in range(MAX_NUMBER):
        rel["succ"][1].add((n, n + 1))
    for n in range(1, MAX_HOPS):
        rel["hop"][1].add((n, n + 1))
    for n in range(MAX_NUMBER + 1):
        for m in range(n + 1, MAX_NUMBER + 1):
            rel["below"][1].add((n, m))
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    for name, (cols, rows) in rel.items():
        with open_output(out / f"{name}.csv", "w", newline="") as fh:
            w = csv.writer(fh)
            w.writerow([*cols, "_weight"])
            for row in sorted(rows):
                w.writerow([*row, f"{rng.random():.3f}"])
    return {"generator_version": GENERATOR_VERSION, "seed": seed, "agents": agents, "edb_rows": sum(len(r) for _, r in rel.values())}
