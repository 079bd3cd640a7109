"""Where a partition-local Spark top-k's time goes (issue 19, s19t): eval, then top-k of every
fact (``path(*, *)``) for each k, in one warm ``local[2]`` session on the anchors graph. Per run
it prints the wall seconds of the driver's steps (the DB load, the EDB leaves, the seed plans, the
partition-local job, the rest of ``run_partition_local``, the final ranks), the CPU seconds of
the Spark JVM and of the driver's Python, and -- when the tree carries ``worker-timing.patch``
(``git apply`` it in a scratch copy, never commit it) and ``S19T_PROF=FILE`` is set -- each
task's CPU per step inside the partition function, summed over the tasks of the run.

Usage: ``PYTHONPATH=TREE [S19T_PROF=FILE] python profile_topk.py OUT_DIR NODES K1,K2,..``
(``S19T_PARTS=N`` sets ``spark.selp.partitionLocal.partitions``). Take the benchmark lock.
"""
import json, os, subprocess, sys, time
from collections import Counter
from pathlib import Path

out = Path(sys.argv[1]); nodes = int(sys.argv[2]); ks = [int(x) for x in sys.argv[3].split(",")]
from selp.gen.anchors import generate_graph
work = out / "work"; generate_graph(nodes, work); db = str(work / "db")
from selp.database import load_database
from selp.engines.spark import run_spark
from selp.engines.spark_session import get_spark
from selp.language import parse_program_file
from selp.language.pattern_parser import parse_pattern
from selp.language.validate import analyze
from selp.topk.monoid import get_monoid
import selp.topk.spark as ts
from selp.topk.task import make_task
import selp.topk.spark_partitioned as sp
import selp.topk.spark_dtable as sd

analysis = analyze(parse_program_file(str(work / "tc.dl")))
conf = {"spark.driver.memory": "2g"}
if os.environ.get("S19T_PARTS"):
    conf["spark.selp.partitionLocal.partitions"] = os.environ["S19T_PARTS"]
spark = get_spark("local[2]", conf)
prof = os.environ.get("S19T_PROF")
steps: dict[str, float] = {}


def wrap(obj, name, label=None):
    f = getattr(obj, name)
    def g(*a, **k):
        t = time.perf_counter(); r = f(*a, **k)
        steps[label or name] = steps.get(label or name, 0) + time.perf_counter() - t
        return r
    setattr(obj, name, g)


wrap(sp, "materialize_observed", "partition_local_job")
wrap(ts, "run_partition_local")
wrap(ts._Engine, "leaves"); wrap(ts._Engine, "first_candidates")
wrap(ts, "load_spark_database"); wrap(sd.SparkDTable, "ranked")


def jvm_cpu() -> float:
    """CPU seconds of this process's children (the Spark JVM; its Python workers are the JVM's)."""
    tot = 0.0
    for p in subprocess.run(["pgrep", "-P", str(os.getpid())], capture_output=True, text=True).stdout.split():
        try:
            f = open(f"/proc/{p}/stat").read().rsplit(")", 1)[1].split()
            tot += (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")
        except (OSError, IndexError):
            pass
    return tot


def worker_cpu(k: int, seen: int) -> tuple[dict, int]:
    if not prof or not os.path.exists(prof):
        return {}, seen
    rows = [json.loads(line) for line in open(prof)][seen:]
    total: Counter = Counter()
    for r in rows:
        if "task_cpu" in r:
            total["task_cpu"] += r["task_cpu"]; total["task_wall"] += r["task_wall"]; total["blobs_wall"] += r["blobs_wall"]
        else:
            total.update(r["cpu_steps"])
    return {a: round(b, 2) for a, b in total.items()}, seen + len(rows)


def ev():
    r = run_spark(analysis, db, spark); n = r.count("path"); r.close(); return n


ev()  # warm-up
seen = 0
j, c, t = jvm_cpu(), time.process_time(), time.perf_counter()
ev()
print(json.dumps({"run": "eval", "seconds": round(time.perf_counter() - t, 2), "jvm_cpu": round(jvm_cpu() - j, 2),
                  "driver_py_cpu": round(time.process_time() - c, 2), "load": os.getloadavg()[0]}), flush=True)
types = load_database(analysis, db).types
for k in ks:
    task = make_task(analysis, types, get_monoid("confidence"), k, parse_pattern("path(*, *)"), "path(*, *)")
    steps.clear(); _, seen = worker_cpu(k, seen)
    j, c, t = jvm_cpu(), time.process_time(), time.perf_counter()
    r = ts.run_topk_spark(task, db, spark); n = r.live_count; r.close()
    wall = time.perf_counter() - t
    workers, seen = worker_cpu(k, seen)
    print(json.dumps({"run": f"topk k={k}", "seconds": round(wall, 2), "entries": n,
                      "driver_steps": {a: round(b, 2) for a, b in steps.items()}, "jvm_cpu": round(jvm_cpu() - j, 2),
                      "driver_py_cpu": round(time.process_time() - c, 2), "workers_summed": workers,
                      "load": os.getloadavg()[0]}), flush=True)
spark.stop()
