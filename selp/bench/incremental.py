"""A small benchmark of incremental update exchange: provenance vs DRed vs recomputation.

The generated CDSS (:mod:`selp.gen.cdss_chain`) follows the chapter 6 set-up of [Kar09] in
miniature: ``peers`` peers, each with one relation ``R_k(id, v)``; full mappings along a chain
``R_k -> R_k+1`` and back ``R_k+1 -> R_k`` (so the mapping graph is one cycle-rich component, like
Example 14), and base data drawn from a shared pool, so that peers overlap and many tuples have
several derivations. Each row times one batch -- deleting (or inserting) ``fraction`` of every
peer's base tuples -- with one strategy on the Python-set backend, starting from the same fully
evaluated state; recomputation (and the initial state) is evaluated by a registered engine
(``--engine``, the embedded engine by default).

``python -m selp.bench.incremental [--sizes 500,2000] [--fractions 0.1,0.3,0.5] [--peers 5]``
prints a Markdown table. (``selp bench`` is not wired to it.)
"""

from __future__ import annotations

import argparse
import random
from typing import Iterable

from selp.cdss.incremental import apply_changes
from selp.cdss.maintainer import STRATEGIES
from selp.engines.registry import DEFAULT as DEFAULT_ENGINE
from selp.engines.registry import get_engine, names
from selp.gen.cdss_chain import base_data, generated_cdss
from selp.language.validate import analyze


def bench_incremental(
    sizes: Iterable[int] = (500, 2000),
    fractions: Iterable[float] = (0.1, 0.3, 0.5),
    strategies: Iterable[str] = STRATEGIES,
    peers: int = 5,
    seed: int = 0,
    operations: Iterable[str] = ("delete", "insert"),
    engine: str = DEFAULT_ENGINE,
) -> list[dict]:
    """Time each strategy on each (base size per peer, fraction, operation); returns one row per
    run: ``size``, ``fraction``, ``op``, ``strategy``, ``seconds``, ``state`` (tuples before),
    ``changed`` (tuples inserted + deleted), ``tests``, ``overdeleted``, ``rederived``, ``ok``
    (the result equals recomputation's). ``engine`` (a registered name) evaluates the initial
    state and ``recompute``."""
    eng = get_engine(engine)
    compiled = generated_cdss(peers)
    analysis = analyze(compiled.program)
    rows = []
    for size in sizes:
        edb = {rel: set() for rel in analysis.edb}
        edb.update(base_data(peers, size, seed))
        state = {**edb, **eng.evaluate(analysis, edb)}
        total = sum(len(v) for v in state.values())
        rng = random.Random(seed + size)
        for fraction in fractions:
            for op in operations:
                if op == "delete":
                    changes = {rel: set(rng.sample(sorted(rows_), int(len(rows_) * fraction))) for rel, rows_ in edb.items() if rows_}
                    inserts, deletes = {}, changes
                else:
                    n = int(size * fraction)
                    inserts = {f"R{k}_l": {(-(k * 10**6) - i - 1, rng.randrange(10**6)) for i in range(n)} for k in range(peers)}
                    deletes = {}
                reference = None
                for strategy in ["recompute"] + [s for s in strategies if s != "recompute"]:
                    new, stats = apply_changes(compiled, state, inserts, deletes, strategy, eng)
                    if reference is None:
                        reference = new
                    if strategy not in strategies:
                        continue
                    rows.append(
                        {
                            "size": size,
                            "fraction": fraction,
                            "op": op,
                            "strategy": strategy,
                            "seconds": round(stats["seconds"], 4),
                            "state": total,
                            "changed": sum(stats["inserted"].values()) + sum(stats["deleted"].values()),
                            "tests": stats["derivability_tests"],
                            "overdeleted": stats["overdeleted"],
                            "rederived": stats["rederived"],
                            "ok": new == reference,
                        }
                    )
    return rows


def markdown(rows: list[dict]) -> str:
    """The rows as a Markdown table."""
    if not rows:
        return ""
    cols = list(rows[0])
    out = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    for r in rows:
        out.append("| " + " | ".join(str(r[c]) for c in cols) + " |")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="500,2000", help="base tuples per peer, comma-separated")
    ap.add_argument("--fractions", default="0.1,0.3,0.5", help="fractions deleted/inserted")
    ap.add_argument("--strategies", default=",".join(STRATEGIES))
    ap.add_argument("--peers", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--engine", default=DEFAULT_ENGINE, choices=names(), help="the engine that recomputes")
    a = ap.parse_args(argv)
    rows = bench_incremental(
        [int(s) for s in a.sizes.split(",")],
        [float(f) for f in a.fractions.split(",")],
        a.strategies.split(","),
        a.peers,
        a.seed,
        engine=a.engine,
    )
    print(markdown(rows))


if __name__ == "__main__":
    main()
