#!/usr/bin/env python3
"""Generate the transitive-closure (TC) benchmark dataset: ``DIR/edge.csv`` for ``datasets/tc.dl``.

A thin command line over :func:`selp.bench.generate_tc` and :func:`selp.bench.tc_size_for`
(the logic lives in the package so that ``selp gen tc`` and the benchmark harness share it)::

    python datasets/tc.py --target-output 100000 --out /tmp/tc100k
    python datasets/tc.py --nodes 1000 --edges 2000 --components 5 --seed 1 --out /tmp/tc
    selp eval datasets/tc.dl --db /tmp/tc100k --engine local

Prints the dataset statistics as JSON (``expected_tc`` is the exact size of the closure).
"""

from __future__ import annotations

import argparse
import json
import sys

from selp.bench import generate_tc, tc_size_for


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True, help="database directory to write edge.csv into")
    p.add_argument("--target-output", type=int, help="pick nodes/edges/components for about this many tc tuples")
    p.add_argument("--nodes", type=int, help="number of nodes")
    p.add_argument("--edges", type=int, help="number of undirected edges (edge.csv gets twice as many rows)")
    p.add_argument("--components", type=int, default=None,
                   help="split the nodes into this many connected components (default: one G(n, m) random graph)")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    if args.target_output is not None:
        if args.nodes is not None or args.edges is not None or args.components is not None:
            p.error("--target-output picks --nodes, --edges and --components; give either it or them")
        nodes, edges, components = tc_size_for(args.target_output)
    else:
        if args.nodes is None or args.edges is None:
            p.error("give --target-output, or --nodes and --edges")
        nodes, edges, components = args.nodes, args.edges, args.components
    try:
        stats = generate_tc(args.out, nodes, edges, args.seed, components=components)
    except ValueError as err:
        p.error(str(err))
    print(json.dumps(stats, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
