"""In process, no Spark: one partition of the 1,000-node anchors closure (right-recursive path,
decomposed on z) as a Spark task ranks it -- the seeds (exit rule r1) are the edges whose z % 4
== WHICH, `edge` is broadcast; weights, sizes and origins of the inputs made up (seeded), the
work the real graph's. Prints partition_dtable's CPU seconds (best of REPS) at k = 1, 3, 7.
Usage: [WHICH=0] [REPS=5] python partition_anchors.py EDGE_CSV  (EDGE_CSV: the db/edge.csv that
`selp bench spark --input 1000` generates under its work directory)."""
import csv, sys, time, os
from dataclasses import replace
import numpy as np, pyarrow as pa
from selp.engines.embedded.component import ComponentTask
from selp.language import parse_program
from selp.topk.component import DTableTask, partition_dtable
from selp.topk.kernel import PRODUCT
rows = list(csv.reader(open(sys.argv[1])))[1:]
E = np.array([[int(a), int(b)] for a, b, _ in rows]); W = np.array([float(w) for _, _, w in rows])
parts, which = 4, int(os.environ.get("WHICH", "0"))
rng = np.random.default_rng(0)
prog = parse_program("r2 (0.8): path(x, z) :- edge(x, y), path(y, z).\n")
comp = ComponentTask(("path",), tuple(prog.rules), {"path": 2, "edge": 2}, {"path": ("int", "int"), "edge": ("int", "int")})
o = rng.integers(-2**62, 2**62, len(E)); f = rng.integers(-2**62, 2**62, len(E))
edge = pa.table({"c0": pa.array(E[:, 0].astype(str)), "c1": pa.array(E[:, 1].astype(str)), "_w": pa.array(W),
                 "_s": pa.array(np.ones(len(E), np.int64)), "_o": pa.array(o), "_f": pa.array(f)})
sel = (E[:, 1] % parts) == which; n = int(sel.sum())
ch = pa.array([[{"f": int(a), "o": int(b)}] for a, b in zip(f[sel], o[sel])], pa.list_(pa.struct([("f", pa.int64()), ("o", pa.int64())])))
seed = pa.table({"c0": pa.array(E[sel, 0].astype(str)), "c1": pa.array(E[sel, 1].astype(str)), "_w": pa.array(W[sel] * 0.9),
                 "_s": pa.array(np.full(n, 2, np.int64)), "_o": pa.array(rng.integers(-2**62, 2**62, n)),
                 "_rule": pa.array(["r1"] * n), "_ch": ch})
def task(k):
    return DTableTask(comp, {"r2": 0.8}, {"r2": 1}, {"r2": 0x1234567}, PRODUCT, -1.0, 1.0, k, salt=77 << 24, by_component=True)


if __name__ == "__main__":
    reps = int(os.environ.get("REPS", "5"))
    for k in (1, 3, 7):
        best, rows = 1e9, 0
        for _ in range(reps):
            c = time.process_time()
            p = partition_dtable(task(k), {"path": seed}, {"edge": edge}, which)
            best, rows = min(best, time.process_time() - c), p.entries.num_rows
        print(f"k={k}: {rows} entries, {best:.3f} s CPU", flush=True)
