"""In-process, no Spark: one partition's DTable of TC at 1M tuples (datasets/tc.dl: r1 exit,
r2 symmetry, r3 right-linear), what a Spark task computes (selp.topk.component.partition_dtable),
the whole-partition path against component by component (value components), CPU seconds (best
of REPS), k = 1, 3, 7, and the entry counts of both.

Usage: PYTHONPATH=TREE python partition_tc.py EDGE_CSV PARTS WHICH [REPS]
EDGE_CSV: ``selp gen tc --scale 1000000 --out DIR`` writes DIR/edge.csv; the partition is the seeds (one per edge row, exit
rule r1) whose value component has label % PARTS == WHICH, with those components' edges as the
keyed input, as Spark's value-component partitioning sends them. Entry weights, sizes and
origins of the inputs are made up (seeded): the work is the real graph's."""
import csv
import sys
import time
from dataclasses import replace

import numpy as np
import pyarrow as pa

from selp.engines.embedded.component import ComponentTask
from selp.engines.spark_values import components
from selp.language import parse_program
from selp.topk.component import DTableTask, partition_dtable
from selp.topk.kernel import PRODUCT

rows = list(csv.reader(open(sys.argv[1])))[1:]
E = np.array([[int(a), int(b)] for a, b, _ in rows])
W = np.array([float(w) for _, _, w in rows])
parts, which = int(sys.argv[2]), int(sys.argv[3])
reps = int(sys.argv[4]) if len(sys.argv) > 4 else 3
rng = np.random.default_rng(0)
prog = parse_program("r2 (0.8): tc(x, y) :- tc(y, x).\nr3 (0.7): tc(x, y) :- tc(x, z), edge(z, y).\n")
comp = ComponentTask(("tc",), tuple(prog.rules), {"tc": 2, "edge": 2}, {"tc": ("int", "int"), "edge": ("int", "int")})
# the value components of the edge graph: label = smallest node of the component
lab = components(E[:, 0].astype(np.int64), E[:, 1].astype(np.int64), int(E.max()) + 1)[E[:, 0]]
sel = (lab % parts) == which
n = int(sel.sum())
o = rng.integers(-2**62, 2**62, len(E))
f = rng.integers(-2**62, 2**62, len(E))
edge = pa.table({"c0": pa.array(E[sel, 0].astype(str)), "c1": pa.array(E[sel, 1].astype(str)), "_w": pa.array(W[sel]),
                 "_s": pa.array(np.ones(n, np.int64)), "_o": pa.array(o[sel]), "_f": pa.array(f[sel])})
ch = pa.array([[{"f": int(a), "o": int(b)}] for a, b in zip(f[sel], o[sel])],
              pa.list_(pa.struct([("f", pa.int64()), ("o", pa.int64())])))
seed = pa.table({"c0": edge["c0"], "c1": edge["c1"], "_w": pa.array(W[sel] * 0.9),
                 "_s": pa.array(np.full(n, 2, np.int64)), "_o": pa.array(rng.integers(-2**62, 2**62, n)),
                 "_rule": pa.array(["r1"] * n), "_ch": ch})
print(f"partition {which} of {parts}: {len(set(lab[sel]))} components, {n} edge rows", flush=True)
for k in (1, 3, 7):
    t = DTableTask(comp, {"r2": 0.8, "r3": 0.7}, {"r2": 1, "r3": 1}, {"r2": 0x1234567, "r3": 0x7654321},
                   PRODUCT, -1.0, 1.0, k, salt=77 << 24)
    out = []
    for mode in (False, True):
        best = 1e9
        for _ in range(reps):
            c = time.process_time()
            p = partition_dtable(replace(t, by_component=mode), {"tc": seed}, {"edge": edge}, which)
            best = min(best, time.process_time() - c)
        out.append((best, p.entries.num_rows))
    print(f"k={k}: entries {out[0][1]} / {out[1][1]}; whole partition {out[0][0]:.2f} s CPU, "
          f"component by component {out[1][0]:.2f} s CPU ({out[0][0] / out[1][0]:.2f}x)", flush=True)
