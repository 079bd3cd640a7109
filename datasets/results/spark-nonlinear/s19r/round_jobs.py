"""Jobs and stages per round of the nonlinear closure on Spark, one setting's two values (A/B)
in one warm session, alternating (s19r). Usage, from the tree to measure:
``PYTHONPATH=. python3 datasets/results/spark-nonlinear/s19r/round_jobs.py DATA_DIR [REPS] [conf=value ...]``
where DATA_DIR holds ``work/db`` and ``small/db`` (as made by ``bench.py OUT``); the setting is
``AB_CONF`` (environment; default spark.selp.rounds.copartition, the s19r attempt since
reverted) with values ``AB_VALUES`` (default ``true,false``). Prints one JSON line per eval
(per-round seconds, jobs, stages -- skipped stages included) and the medians per value.
``SIZES=small`` runs only the N/4 graph. The script uses only selp's public ``run_spark``, so
``PYTHONPATH`` may name another tree (a ``git archive`` of deaa1b0) to profile that code."""
import os
import json
import sys
import time

from selp.engines.spark import run_spark
from selp.engines.spark_session import get_spark
from selp.language import parse_program
from selp.language.validate import analyze

PROGRAM = "r1 (0.9): path(x, y) :- edge(x, y).\nr2 (0.8): path(x, z) :- path(x, y), path(y, z).\n"
analysis = analyze(parse_program(PROGRAM))
spark = get_spark("local[2]", {"spark.driver.memory": "2g"})
for k, v in (a.split("=", 1) for a in sys.argv[3:]):
    spark.conf.set(k, v)
sc = spark.sparkContext
tracker = sc.statusTracker()
jvm = sc._gateway.proc.pid  # type: ignore[attr-defined]


def cpu() -> float:
    fields = open(f"/proc/{jvm}/stat").read().rsplit(")", 1)[1].split()
    return time.process_time() + (int(fields[11]) + int(fields[12])) / 100


def run(db: str, label: str) -> dict:
    rounds = []
    state = {"g": f"{label}-r0", "t": time.perf_counter()}
    sc.setJobGroup(state["g"], "x")

    def count(group: str) -> tuple[int, int]:
        jobs = tracker.getJobIdsForGroup(group)
        return len(jobs), sum(len(tracker.getJobInfo(j).stageIds) for j in jobs)

    def prog(comp, it, delta, total):
        now = time.perf_counter()
        jobs, stages = count(state["g"])
        rounds.append({"round": it, "delta": delta, "s": round(now - state["t"], 2), "jobs": jobs, "stages": stages})
        state["g"] = f"{label}-r{it}"
        state["t"] = now
        sc.setJobGroup(state["g"], "x")

    c, t = cpu(), time.perf_counter()
    r = run_spark(analysis, db, spark, progress=prog)
    n = r.frame("path").count()
    secs, c = time.perf_counter() - t, cpu() - c
    jobs, stages = count(state["g"])
    rounds.append({"round": "after", "s": round(time.perf_counter() - state["t"], 2), "jobs": jobs, "stages": stages})
    plan = r.plan
    r.close()
    return {"run": label, "seconds": round(secs, 2), "cpu": round(c, 2), "path": n,
            "jobs": sum(x["jobs"] for x in rounds), "stages": sum(x["stages"] for x in rounds), "rounds": rounds, "plan": plan}


data = sys.argv[1]
reps = int(sys.argv[2]) if len(sys.argv) > 2 else 3
out = []
AB = os.environ.get("AB_CONF", "spark.selp.rounds.copartition")
A, B = os.environ.get("AB_VALUES", "true,false").split(",")
SIZES = os.environ.get("SIZES", "small,work").split(",")  # which graphs (DATA_DIR's subdirectories)
for i in range(reps + 1):  # the first repetition warms up (discarded)
    for setting in ((A, B) if i % 2 == 0 else (B, A)):
        spark.conf.set(AB, setting)
        for size in SIZES:
            res = {"copartition": setting, "rep": i, **run(f"{data}/{size}/db", f"{size}-{setting}-{i}")}
            print(json.dumps(res), flush=True)
            if i:
                out.append(res)
summary = {}
for size in SIZES:
    for setting in (A, B):
        xs = [r for r in out if r["copartition"] == setting and r["run"].startswith(size)]
        med = lambda k: sorted(r[k] for r in xs)[len(xs) // 2]
        summary[f"{size} copartition={setting}"] = {"seconds": med("seconds"), "cpu": med("cpu"), "jobs": med("jobs"),
                                                     "stages": med("stages"), "min_max": [min(r["seconds"] for r in xs), max(r["seconds"] for r in xs)]}
print("SUMMARY " + json.dumps(summary))
spark.stop()
