"""A synthetic YAGO-like knowledge base for ``datasets/amie.dl``.

Entities are named ``person<i>``, ``city<i>``, ``region<i>``, ``country<i>``, ``product<i>``,
``org<i>``; the lower the number, the more connected the entity (degrees follow a Zipf-like law,
as in real knowledge bases where a few cities and countries take most links). Every stated fact
carries a confidence in [0.5, 1] in the ``_weight`` column, as YAGO's extraction confidences do.

The only size parameter is the number of persons; the other entity counts grow with it
(sub-linearly for places and countries), so the derived output grows roughly linearly.
"""

from __future__ import annotations

import bisect
import csv
import itertools
import random
from pathlib import Path
from typing import Any

from selp.outfile import open_output

GENERATOR_VERSION = 1
# the column names declared in datasets/amie.dl (headers must match them)
COLUMNS = {
    "wasBornIn": ("person", "place"), "graduatedFrom": ("person", "org"), "livesIn_YAGO": ("person", "place"),
    "isCitizenOf_YAGO": ("person", "place"), "isLocatedIn_YAGO": ("place", "region"),
    "isMarriedTo_YAGO": ("person", "spouse"), "hasChild_YAGO": ("parent", "child"),
    "dealsWith_YAGO": ("country", "partner"), "imports_YAGO": ("country", "product"),
    "exports_YAGO": ("country", "product"), "worksAt_YAGO": ("person", "org"),
}


class _Zipf:
    """Draw 1..n with probability proportional to 1 / rank^s."""

    def __init__(self, n: int, s: float = 1.0) -> None:
        weights = [1.0 / (i ** s) for i in range(1, n + 1)]
        self.cum = list(itertools.accumulate(weights))

    def __call__(self, rng: random.Random) -> int:
        return bisect.bisect_left(self.cum, rng.random() * self.cum[-1]) + 1


def amie_sizes(persons: int) -> dict[str, int]:
    """Entity counts for a number of persons."""
    return {
        "persons": persons,
        "cities": max(4, persons // 20),
        "regions": max(2, persons // 200),
        "countries": max(2, min(200, int(persons ** 0.5) // 2)),
        "products": max(2, min(300, int(persons ** 0.5))),
        "orgs": max(2, persons // 50),
    }


def generate_amie(out_dir: str | Path, persons: int, seed: int = 0) -> dict[str, Any]:
    """Write the EDB of amie.dl (CSV with ``_weight``) into ``out_dir``; returns statistics."""
    if persons < 2:
        raise ValueError("the AMIE dataset needs at least 2 persons")
    rng = random.Random(seed)
    n = amie_sizes(persons)
    city, region, country = _Zipf(n["cities"]), _Zipf(n["regions"]), _Zipf(n["countries"])
    product, org, person = _Zipf(n["products"]), _Zipf(n["orgs"]), _Zipf(n["persons"], 0.6)
    rel: dict[str, set[tuple[str, str]]] = {r: set() for r in (
        "wasBornIn", "graduatedFrom", "livesIn_YAGO", "isCitizenOf_YAGO", "isLocatedIn_YAGO", "isMarriedTo_YAGO",
        "hasChild_YAGO", "dealsWith_YAGO", "imports_YAGO", "exports_YAGO", "worksAt_YAGO")}
    for c in range(1, n["cities"] + 1):  # the place hierarchy: city -> region -> country
        rel["isLocatedIn_YAGO"].add((f"city{c}", f"region{region(rng)}"))
    for r in range(1, n["regions"] + 1):
        rel["isLocatedIn_YAGO"].add((f"region{r}", f"country{country(rng)}"))
    for p in range(1, persons + 1):
        me = f"person{p}"
        if rng.random() < 0.7:
            rel["wasBornIn"].add((me, f"city{city(rng)}"))
        if rng.random() < 0.4:
            rel["livesIn_YAGO"].add((me, f"city{city(rng)}"))
        if rng.random() < 0.25:
            rel["isCitizenOf_YAGO"].add((me, f"country{country(rng)}"))
        if rng.random() < 0.2:
            rel["worksAt_YAGO"].add((me, f"org{org(rng)}"))
        if rng.random() < 0.2:
            rel["graduatedFrom"].add((me, f"org{org(rng)}"))
        if rng.random() < 0.15:
            other = person(rng)
            if other != p:
                rel["isMarriedTo_YAGO"].add((me, f"person{other}"))
        if rng.random() < 0.2:
            parent = person(rng)
            if parent != p:
                rel["hasChild_YAGO"].add((f"person{parent}", me))
    for _ in range(2 * n["countries"]):
        a, b = country(rng), country(rng)
        if a != b:
            rel["dealsWith_YAGO"].add((f"country{a}", f"country{b}"))
    for _ in range(3 * n["countries"]):
        rel["imports_YAGO"].add((f"country{country(rng)}", f"product{product(rng)}"))
        rel["exports_YAGO"].add((f"country{country(rng)}", f"product{product(rng)}"))
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    for name, rows in rel.items():
        with open_output(out / f"{name}.csv", "w", newline="") as fh:
            w = csv.writer(fh)
            w.writerow([*COLUMNS[name], "_weight"])
            for a, b in sorted(rows):
                w.writerow([a, b, f"{rng.uniform(0.5, 1.0):.3f}"])
    return {"generator_version": GENERATOR_VERSION, "seed": seed, **n, "edb_rows": sum(len(v) for v in rel.values())}
