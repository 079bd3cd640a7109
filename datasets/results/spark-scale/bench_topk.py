"""Issue 19, the top-k targets: eval and top-k of every fact (``path(*, *)``, k = 1, 3, 7) on the
anchors graph, ``local[2]``, driver 2g, one warm session (an untimed eval and top-1 first), each
line once, with the CPU seconds of the whole process tree (driver, JVM, Python workers); after top-3, top-3
again followed by reading every entry's row (``ranked().count()``: what a reader of the DTable
-- save, trees -- pays on top). Prints one JSON line per run (the load average at its end).

Usage: ``PYTHONPATH=TREE python bench_topk.py OUT_DIR INPUT LABEL [profile] [embedded]`` -- run it with
each code tree's PYTHONPATH in turn for a side-by-side (``s19t/side_by_side.sh`` does, for a
base tree and this one); ``profile`` adds the seconds spent in the partition-local job
(``materialize_observed``) to each top-k line. It first checks that Spark's Python workers
import selp from the same tree as the driver, and stops if not.

INPUT is NODES (an int: the anchors graph of ``selp.gen.anchors``, relation ``path``, which
decomposes) or ``tc:T`` (the TC benchmark graph with about T output tuples, ``selp.gen.tc``,
program ``datasets/tc.dl``, relation ``tc``: its symmetry rule ``r2`` makes it non-decomposable,
so eval and top-k run in global rounds; ``tc:1000000`` is the input of ``datasets/results/tc-k-spark-1m``).
``embedded`` adds the embedded engine's eval and top-1/3/7 of the same input (in this process,
after Spark's lines) for reference; ``k=1,3`` runs only those k (to split a long run).
"""
import json, os, sys, time
from pathlib import Path
out = Path(sys.argv[1]); source = sys.argv[2]; label = sys.argv[3]; flags = set(sys.argv[4:])
prof, embedded = "profile" in flags, "embedded" in flags
# k=1,3 runs only those top-k lines (a long run split into shorter locked runs)
ks = next((tuple(int(x) for x in f[2:].split(",")) for f in flags if f.startswith("k=")), (1, 3, 7))
import selp
work = out / "work"
if source.startswith("tc:"):
    from selp.gen.tc import generate_tc_for
    stats = generate_tc_for(work / "db", int(source[3:]))
    program, rel = str(Path(__file__).resolve().parents[2] / "tc.dl"), "tc"
else:
    from selp.gen.anchors import generate_graph
    stats = generate_graph(int(source), work)
    program, rel = str(work / "tc.dl"), "path"
db = str(work / "db")
print(json.dumps({"input": source, "relation": rel, **{k: v for k, v in stats.items() if k != "explain_fact"}}), flush=True)
pattern = f"{rel}(*, *)"
from selp.database import load_database
from selp.engines.spark import run_spark
from selp.engines.spark_session import get_spark
from selp.language import parse_program_file
from selp.language.pattern_parser import parse_pattern
from selp.language.validate import analyze
from selp.topk.monoid import get_monoid
from selp.topk.spark import run_topk_spark
from selp.topk.task import make_task
import selp.topk.spark_partitioned as sp
import selp.topk.spark_dtable as sd
analysis = analyze(parse_program_file(program))
spark = get_spark("local[2]", {"spark.driver.memory": "2g"})


def _worker_selp(_):
    import selp
    yield os.path.dirname(os.path.dirname(os.path.abspath(selp.__file__)))


# the figures must be this tree's: Spark's Python workers import selp from their own sys.path
# (the driver's PYTHONPATH reaches them in local mode, but an installed selp could win)
tree = os.path.dirname(os.path.dirname(os.path.abspath(selp.__file__)))
workers = set(spark.sparkContext.parallelize(range(2), 2).mapPartitions(_worker_selp).collect())
if workers != {tree}:
    sys.exit(f"bench_topk: the driver runs selp from {tree} but Spark's workers from {sorted(workers)}; "
             f"put the tree first on PYTHONPATH (or ship it with spark.submit.pyFiles)")
print(json.dumps({"label": label, "tree": tree, "workers": sorted(workers)}), flush=True)
if prof:
    steps = {}
    def wrap(mod, name):
        f = getattr(mod, name)
        def g(*a, **k):
            t = time.perf_counter(); r = f(*a, **k)
            steps[name] = steps.get(name, 0) + time.perf_counter() - t
            return r
        setattr(mod, name, g)
    wrap(sp, "materialize_observed")
plan: list = []
def ev():
    r = run_spark(analysis, db, spark); n = r.count(rel); plan[:] = r.plan; r.close(); return n
ev()
def tree_cpu() -> dict:
    """CPU seconds of this process (driver), of the JVM and of the JVM's descendants (the
    Python workers), reaped children included: on a loaded machine the wall seconds stretch,
    these much less."""
    stat = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                raw = open(f"/proc/{d}/stat").read()
                name, f = raw.split("(", 1)[1].rsplit(")", 1)[0], raw.rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue
            stat[int(d)] = (int(f[1]), sum(int(x) for x in f[11:15]), name)
    kids: dict = {}
    for pid, (ppid, _, _) in stat.items():
        kids.setdefault(ppid, []).append(pid)
    hz = os.sysconf("SC_CLK_TCK")
    out = {"driver": 0.0, "jvm": 0.0, "workers": 0.0}
    todo = [(os.getpid(), "driver")]
    while todo:
        pid, part = todo.pop()
        if part == "driver" and stat[pid][2] == "java":
            part = "jvm"
        out[part] += stat[pid][1] / hz
        todo += [(c, "workers" if part != "driver" else part) for c in kids.get(pid, [])]
    return out
rows = []
def timed(what, fn):
    c = tree_cpu(); t = time.perf_counter(); x = fn(); s = time.perf_counter() - t; d = tree_cpu()
    cpu = {m: round(d[m] - c[m], 2) for m in d}
    rows.append({"label": label, "run": what, "seconds": round(s, 2), "cpu": round(sum(cpu.values()), 2), "cpu_parts": cpu,
                 "load": os.getloadavg()[0], **x}); print(json.dumps(rows[-1]), flush=True)
timed("eval", lambda: {rel: ev(), "plan": [p.get("mode", "") + (f" ({p['reason']})" if "reason" in p else "") for p in plan]})
types = load_database(analysis, db).types
# warm: the workers' first import of the top-k modules is not the top-1's (k = 1, untimed)
# (on the TC input, whose top-k runs in global rounds for minutes, the warm-up is the same program
# on one 200-node component of the TC graph: the same plans, 40,000 facts)
warm_db = db
if rel == "tc":
    generate_tc_for(out / "warm" / "db", 40_000)
    warm_db = str(out / "warm" / "db")
_warm = run_topk_spark(make_task(analysis, types, get_monoid("confidence"), 1, parse_pattern(pattern), pattern), warm_db, spark)
_warm.close()
for k in ks:
    task = make_task(analysis, types, get_monoid("confidence"), k, parse_pattern(pattern), pattern)
    def topk(task=task):
        if prof: steps.clear()
        r = run_topk_spark(task, db, spark); n = r.live_count; r.close()
        return {"k": task.k, "entries": n, **({"steps": {a: round(b, 2) for a, b in steps.items()}} if prof else {})}
    timed(f"topk k={k}", topk)
    if k == 3 and rel == "path":  # (not on the TC input: its top-k runs in global rounds, minutes)
        def read_rows(task=task):
            r = run_topk_spark(task, db, spark); n = r.ranked().count(); r.close()
            return {"k": 3, "rows": n}
        timed("topk k=3 + every entry row read (ranked().count())", read_rows)
spark.stop()
if embedded:
    # the embedded engine on the same input, for reference (one process, DuckDB's own threads)
    from selp.engines.embedded import run_embedded
    from selp.topk.api import topk as topk_api
    label = label + "-embedded"
    def emb_eval():
        r = run_embedded(analysis, db); n = r.count(rel); r.close(); return {rel: n}
    emb_eval()  # warm (imports, DuckDB's first load)
    timed("eval", emb_eval)
    for k in ks:
        def emb_topk(k=k):
            d = topk_api(analysis, db, pattern, k, engine="embedded")
            n = d.count_facts(rel) if hasattr(d, "count_facts") else None
            if hasattr(d, "close"):
                d.close()
            return {"k": k, "facts": n}
        timed(f"topk k={k}", emb_topk)
