"""Random data for ``datasets/iris.dl``: four link relations over integer record ids.

Each relation gets ``2 * records`` distinct random pairs over ``0 .. records-1`` (uniform, so the
join sizes are predictable: the derived output is about 40-45 facts per record) and a random
weight in [0, 1] per fact, as the paper assigned IRIS weights at random.
"""

from __future__ import annotations

import csv
import random
from pathlib import Path
from typing import Any

from selp.outfile import open_output

GENERATOR_VERSION = 1
RELATIONS = ("a", "b", "c", "d")


def generate_iris(out_dir: str | Path, records: int, seed: int = 0) -> dict[str, Any]:
    """Write ``a.csv`` .. ``d.csv`` (columns x, y, _weight) into ``out_dir``; returns statistics."""
    if records < 2:
        raise ValueError("the IRIS dataset needs at least 2 records")
    rng = random.Random(seed)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    per = min(2 * records, records * records)
    for name in RELATIONS:
        pairs: set[tuple[int, int]] = set()
        while len(pairs) < per:
            pairs.add((rng.randrange(records), rng.randrange(records)))
        with open_output(out / f"{name}.csv", "w", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(["x", "y", "_weight"])
            for x, y in sorted(pairs):
                w.writerow([x, y, f"{rng.random():.3f}"])
    return {"generator_version": GENERATOR_VERSION, "seed": seed, "records": records, "edb_rows": per * len(RELATIONS)}
