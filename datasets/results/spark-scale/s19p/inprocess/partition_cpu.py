"""In-process, no Spark: one partition's DTable of the anchors TC (what a Spark task computes,
selp.topk.component.partition_dtable), the whole-partition path vs component by component, CPU
seconds (best of 3), k = 1, 3, 7, entry counts of both.

Usage: PYTHONPATH=TREE python partition_cpu.py EDGE_CSV PARTS WHICH
EDGE_CSV: the anchors graph's edge.csv (bench_topk.py writes it under OUT/LEG/work/db); the
partition is the seeds (one per edge, exit rule r1) whose decomposition value z has
z % PARTS == WHICH, with every edge as the broadcast input. Entry weights, sizes and origins
are made up (seeded): the work is the real graph's."""
import sys, time, numpy as np, pyarrow as pa
from dataclasses import replace
from selp.language import parse_program
from selp.engines.embedded.component import ComponentTask
from selp.topk.component import DTableTask, partition_dtable
from selp.topk.kernel import PRODUCT
import csv
rows = list(csv.reader(open(sys.argv[1])))[1:]
E = np.array([[int(a), int(b)] for a, b, _ in rows]); W = np.array([float(w) for _, _, w in rows])
parts = int(sys.argv[2]); which = int(sys.argv[3])
rng = np.random.default_rng(0)
prog = parse_program("r2 (0.8): path(x, z) :- edge(x, y), path(y, z).\n"); rule = prog.rules[0]
comp = ComponentTask(("path",), (rule,), {"path": 2, "edge": 2}, {"path": ("int", "int"), "edge": ("int", "int")})
n = len(E)
o = rng.integers(-2**62, 2**62, n); f = rng.integers(-2**62, 2**62, n)
edge = pa.table({"c0": pa.array(E[:, 0].astype(str)), "c1": pa.array(E[:, 1].astype(str)), "_w": pa.array(W),
                 "_s": pa.array(np.ones(n, np.int64)), "_o": pa.array(o), "_f": pa.array(f)})
sel = (E[:, 1] % parts) == which  # a partition: the seeds whose decomposition value (z) hashes here
ch = pa.array([[{"f": int(a), "o": int(b)}] for a, b in zip(f[sel], o[sel])], pa.list_(pa.struct([("f", pa.int64()), ("o", pa.int64())])))
seed = pa.table({"c0": edge["c0"].filter(pa.array(sel)), "c1": edge["c1"].filter(pa.array(sel)), "_w": pa.array(W[sel] * 0.9),
                 "_s": pa.array(np.full(sel.sum(), 2, np.int64)), "_o": pa.array(rng.integers(-2**62, 2**62, sel.sum())),
                 "_rule": pa.array(["r1"] * int(sel.sum())), "_ch": ch})
for k in (1, 3, 7):
    t = DTableTask(comp, {"r2": 0.8}, {"r2": 1}, {"r2": 0x1234567}, PRODUCT, -1.0, 1.0, k, salt=77 << 24)
    out = []
    for mode in (False, True):
        best = 1e9
        for _ in range(3):
            c = time.process_time(); p = partition_dtable(replace(t, by_component=mode), {"path": seed}, {"edge": edge}, which); best = min(best, time.process_time() - c)
        out.append((best, p.entries.num_rows))
    print(f"k={k}: entries {out[0][1]} / {out[1][1]}; whole partition {out[0][0]:.2f} s CPU, component by component {out[1][0]:.2f} s CPU ({out[0][0] / out[1][0]:.1f}x)", flush=True)
