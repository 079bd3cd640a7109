"""In-process, no Spark: what one Spark task of the anchors TC's partition-local top-k does
after its fixpoint -- rank component by component, pack, write the blobs -- and what crosses
the Python/JVM boundary (blob bytes), k = 1, 3, 7; then the rows the blobs unpack into
(sorted, digested), so two trees' outputs can be compared row for row.

Usage: PYTHONPATH=TREE python boundary.py EDGE_CSV PARTS WHICH [ROUNDS]
(the partition, weights and origins as in s19p/inprocess/partition_cpu.py). Prints per k:
entries, blob bytes (and per entry), CPU seconds (best of ROUNDS, default 3) of
partition_dtable + blobs, CPU seconds of unpacking every row, and a digest of the rows."""
import csv, hashlib, inspect, sys, time
from dataclasses import replace
import numpy as np, pyarrow as pa
from selp.language import parse_program
from selp.engines.embedded.component import ComponentTask
from selp.topk.component import DTableTask, partition_dtable
from selp.topk.kernel import PRODUCT
import selp.topk.packed as _P
from selp.topk.packed import Unpack
blobs = lambda *a: _P.blobs(*a)

rows = list(csv.reader(open(sys.argv[1])))[1:]
E = np.array([[int(a), int(b)] for a, b, _ in rows]); W = np.array([float(w) for _, _, w in rows])
parts, which = int(sys.argv[2]), int(sys.argv[3]); rounds = int(sys.argv[4]) if len(sys.argv) > 4 else 3
rng = np.random.default_rng(0)
prog = parse_program("r2 (0.8): path(x, z) :- edge(x, y), path(y, z).\n"); rule = prog.rules[0]
comp = ComponentTask(("path",), (rule,), {"path": 2, "edge": 2}, {"path": ("int", "int"), "edge": ("int", "int")})
n = len(E)
o = rng.integers(-2**62, 2**62, n); f = rng.integers(-2**62, 2**62, n)
edge = pa.table({"c0": pa.array(E[:, 0].astype(str)), "c1": pa.array(E[:, 1].astype(str)), "_w": pa.array(W),
                 "_s": pa.array(np.ones(n, np.int64)), "_o": pa.array(o), "_f": pa.array(f)})
sel = (E[:, 1] % parts) == which
ch = pa.array([[{"f": int(a), "o": int(b)}] for a, b in zip(f[sel], o[sel])], pa.list_(pa.struct([("f", pa.int64()), ("o", pa.int64())])))
seed = pa.table({"c0": edge["c0"].filter(pa.array(sel)), "c1": edge["c1"].filter(pa.array(sel)), "_w": pa.array(W[sel] * 0.9),
                 "_s": pa.array(np.full(sel.sum(), 2, np.int64)), "_o": pa.array(rng.integers(-2**62, 2**62, sel.sum())),
                 "_rule": pa.array(["r1"] * int(sel.sum())), "_ch": ch})
new_unpack = "rules" in inspect.signature(Unpack.__init__).parameters
for k in (1, 3, 7):
    t = replace(DTableTask(comp, {"r2": 0.8}, {"r2": 1}, {"r2": 0x1234567}, PRODUCT, -1.0, 1.0, k, salt=77 << 24), by_component=True)
    best, blob = 1e9, None
    for _ in range(rounds):
        c = time.process_time()
        p = partition_dtable(t, {"path": seed}, {"edge": edge}, which)
        blob = list(blobs(p, which, ["path"]))
        best = min(best, time.process_time() - c)
    size = sum(b.column("_data").nbytes for b in blob)
    entries = sum(sum(b.column("n0").to_pylist()) for b in blob)
    un = Unpack(t.salt, {"r2": (0x1234567, False)}) if new_unpack else Unpack(t.salt)
    c = time.process_time()
    out = pa.Table.from_batches(list(un(iter(blob))))
    cu = time.process_time() - c
    out = out.sort_by([("_f", "ascending"), ("rank", "ascending")])
    h = hashlib.sha256()
    for col in out.column_names:
        h.update(repr(out.column(col).to_pylist()).encode())
    print(f"k={k}: entries {entries}, rows {out.num_rows}, blob bytes {size} ({size / entries:.1f}/entry), "
          f"rank+pack+blobs {best:.3f} s CPU, unpack {cu:.3f} s CPU, rows sha256 {h.hexdigest()[:16]}", flush=True)
