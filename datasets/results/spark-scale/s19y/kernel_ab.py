"""In process, one partition of TC at 1M (partition_tc.py's partition WHICH of 4), the static path
run with two builds of the kernel alternating (LIBS: comma-separated .so files, each loaded with
its own ABI number; the Python is this tree's, so a build must have every function it calls),
REPS times each k of KS: run_static's and partition_dtable's wall seconds, min and median.
Usage: LIBS=a.so,b.so [KS=3,7] [REPS=7] [WHICH=0] python kernel_ab.py  (edge.csv at /tmp/tc1m:
selp gen tc --scale 1000000 --out /tmp/tc1m)."""
import sys, time, os
sys.argv = ["x", "/tmp/tc1m/edge.csv", "4", os.environ.get("WHICH", "0"), "1"]
src = open("/work/main/datasets/results/spark-scale/s19y/partition_tc.py").read().split("for k in (1, 3, 7):")[0]
exec(src)
from selp.topk.component import DTableTask, partition_dtable
import selp.topk.component_static as cs
import selp.topk.kernel as kn
libs = {}
for name in os.environ.get("LIBS", "/tmp/k-0d67496.so,/tmp/k-head.so").split(","):
    kn._LIB.clear(); kn._kernel_file = lambda name=name: name
    _l = __import__("ctypes").CDLL(name); _l.selp_abi.restype = __import__("ctypes").c_int64
    kn._ABI = _l.selp_abi()  # each build with its own ABI (s19z compared ABI 12 with 13)
    libs[name] = kn._compiled(); assert libs[name] is not None, name
T = {}
f = cs.run_static
def w(*a, **k):
    t = time.perf_counter(); r = f(*a, **k); T["rs"] = time.perf_counter() - t; return r
cs.run_static = w
res = {}
for rep in range(int(os.environ.get("REPS", "7"))):
    for k in [int(x) for x in os.environ.get("KS", "3,7").split(",")]:
        t = DTableTask(comp, {"r2": 0.8, "r3": 0.7}, {"r2": 1, "r3": 1}, {"r2": 0x1234567, "r3": 0x7654321}, PRODUCT, -1.0, 1.0, k, salt=77 << 24, by_component=True)
        for name, lib in libs.items():
            kn._LIB[:] = [lib]
            c = time.perf_counter(); partition_dtable(t, {"tc": seed}, {"edge": edge}, 0); tot = time.perf_counter() - c
            res.setdefault((k, name), []).append((T["rs"], tot))
for key, v in sorted(res.items()):
    a = sorted(x[0] for x in v); b = sorted(x[1] for x in v)
    print(key, "run_static min %.3f med %.3f | total min %.3f med %.3f" % (a[0], a[len(a)//2], b[0], b[len(b)//2]))
