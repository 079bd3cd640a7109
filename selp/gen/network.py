"""The network workloads of [LTZIL10]: a transit-stub topology and a sensor grid.

* :func:`transit_stub` -- the paper's 100-node GT-ITM transit-stub network (GT-ITM itself is
  not packaged; this follows its model): one transit domain of 4 nodes, 3 stub domains per
  transit node, 8 nodes per stub, each stub joined to its transit node by one link. Domains are
  connected (a random spanning tree, then random extra links) and links are bidirectional, about
  200 of them, so ``link.csv`` holds about 400 directed ``link(src, dst, latency)`` tuples with
  the paper's latencies: 50 ms transit-transit, 10 ms transit-stub, 2 ms inside a stub.
* :func:`sensor_grid` -- sensors on a square grid (the paper: 100 m x 100 m, neighbours within
  k = 20 m, 5 seed regions; it does not give the sensor count, we use a 10 x 10 grid at 10 m),
  ``near(a, b)`` for sensors within k, ``seed(region, sensor)``, and ``triggered(sensor)`` for
  a random half of the sensors (the insertions of the experiment).

Both write CSV files for ``datasets/reachable.dl``, ``datasets/shortest.dl`` and
``datasets/regions.dl`` and return statistics.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from selp.database import write_csv

TRANSIT_LATENCY, GATEWAY_LATENCY, STUB_LATENCY = 50, 10, 2


def _connected_links(nodes: list[str], extra: int, rnd: random.Random) -> set[tuple[str, str]]:
    """Undirected links (as sorted pairs) over ``nodes``: a random spanning tree plus up to
    ``extra`` random other links."""
    out: set[tuple[str, str]] = set()
    order = nodes[:]
    rnd.shuffle(order)
    for i in range(1, len(order)):
        a, b = order[i], order[rnd.randrange(i)]
        out.add((min(a, b), max(a, b)))
    pairs = [(a, b) for i, a in enumerate(nodes) for b in nodes[i + 1:] if (a, b) not in out]
    rnd.shuffle(pairs)
    out.update(pairs[:extra])
    return out


def transit_stub(out_dir: str | Path, seed: int = 0, transit: int = 4, stubs_per_transit: int = 3, stub_size: int = 8,
                 stub_extra: int = 8, transit_extra: int = 3, latencies: str = "paper") -> dict[str, Any]:
    """Write ``link.csv`` (both directions of every link) into ``out_dir``; returns statistics.
    ``latencies``: ``paper`` (50 / 10 / 2 ms by the link's kind: the cheapest path is always one
    of fewest hops) or ``random`` (each link 1-100 ms, the same both ways, drawn apart from the
    topology, which is the same: cheapest and fewest hops then differ)."""
    if latencies not in ("paper", "random"):
        raise ValueError(f"latencies: {latencies!r} is neither 'paper' nor 'random'")
    rnd = random.Random(seed)
    links: list[tuple[str, str, int]] = []
    tnodes = [f"t{i}" for i in range(transit)]
    for a, b in sorted(_connected_links(tnodes, transit_extra, rnd)):
        links.append((a, b, TRANSIT_LATENCY))
    nodes = list(tnodes)
    for t in range(transit):
        for s in range(stubs_per_transit):
            snodes = [f"s{t}.{s}.{i}" for i in range(stub_size)]
            nodes.extend(snodes)
            for a, b in sorted(_connected_links(snodes, stub_extra, rnd)):
                links.append((a, b, STUB_LATENCY))
            links.append((f"t{t}", rnd.choice(snodes), GATEWAY_LATENCY))
    if latencies == "random":
        lat = random.Random(seed + 1)
        links = [(a, b, lat.randint(1, 100)) for a, b, _ in links]
    directed = sorted({(a, b, w) for a, b, w in links} | {(b, a, w) for a, b, w in links})
    out = Path(out_dir)
    write_csv(out / "link.csv", ("src", "dst", "latency"), directed)
    return {"nodes": len(nodes), "links": len(links), "directed_links": len(directed), "seed": seed, "latencies": latencies,
            "transit_nodes": transit, "stub_domains": transit * stubs_per_transit, "stub_size": stub_size}


def sensor_grid(out_dir: str | Path, seed: int = 0, side: int = 10, spacing: int = 10, k: int = 20, regions: int = 5,
                triggered: float = 0.5) -> dict[str, Any]:
    """Write ``near.csv``, ``seed.csv`` and ``triggered.csv`` into ``out_dir``; returns statistics."""
    rnd = random.Random(seed)
    sensors = {f"x{i}y{j}": (i * spacing, j * spacing) for i in range(side) for j in range(side)}
    names = sorted(sensors)
    near = [(a, b) for a in names for b in names if a != b
            and (sensors[a][0] - sensors[b][0]) ** 2 + (sensors[a][1] - sensors[b][1]) ** 2 <= k * k]
    seeds = rnd.sample(names, regions)
    on = set(rnd.sample(names, int(len(names) * triggered))) | set(seeds)
    out = Path(out_dir)
    write_csv(out / "near.csv", ("a", "b"), near)
    write_csv(out / "seed.csv", ("region", "sensor"), [(f"r{i}", s) for i, s in enumerate(seeds)])
    write_csv(out / "triggered.csv", ("sensor",), sorted((s,) for s in on))
    return {"sensors": len(names), "near": len(near), "regions": regions, "triggered": len(on), "seed": seed, "k": k, "spacing": spacing}
