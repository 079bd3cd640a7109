"""Per-round profile of the nonlinear closure: seconds and Spark jobs between progress calls."""
import sys, time, json
from selp.engines.spark import run_spark
from selp.engines.spark_session import get_spark
from selp.language import parse_program
from selp.language.validate import analyze
PROGRAM = "r1 (0.9): path(x, y) :- edge(x, y).\nr2 (0.8): path(x, z) :- path(x, y), path(y, z).\n"
analysis = analyze(parse_program(PROGRAM))
spark = get_spark("local[2]", {"spark.driver.memory": "2g", "spark.ui.enabled": "true", "spark.ui.port": "4471"})
for k, v in (a.split("=", 1) for a in sys.argv[2:]):
    spark.conf.set(k, v)
sc = spark.sparkContext
def run(db, label):
    marks = []
    state = {"g": f"{label}-0", "t": time.perf_counter()}
    sc.setJobGroup(state["g"], "x")
    def prog(comp, it, delta, total):
        now = time.perf_counter()
        jobs = len(sc.statusTracker().getJobIdsForGroup(state["g"]))
        marks.append((it, delta, total, round(now - state["t"], 2), jobs))
        state["g"] = f"{label}-{it}"; state["t"] = now
        sc.setJobGroup(state["g"], "x")
    t = time.perf_counter()
    r = run_spark(analysis, db, spark, progress=prog)
    tail_jobs = len(sc.statusTracker().getJobIdsForGroup(state["g"]))
    tail = round(time.perf_counter() - state["t"], 2)
    n = r.count("path")
    total = time.perf_counter() - t
    r.close()
    print(label, "total", round(total, 2), "path", n, "plan", r.plan)
    for m in marks: print("  round", m)
    print("  after last progress: s", tail, "jobs", tail_jobs)
run(sys.argv[1] + "/small/db", "warm")
run(sys.argv[1] + "/work/db", "eval")
run(sys.argv[1] + "/work/db", "eval2")

import urllib.request
url = sc.uiWebUrl + f"/api/v1/applications/{sc.applicationId}/jobs"
jobs = json.load(urllib.request.urlopen(url))
from datetime import datetime
def ts(x): return datetime.strptime(x.replace("GMT",""), "%Y-%m-%dT%H:%M:%S.%f")
for j in sorted(jobs, key=lambda j: j["jobId"]):
    if not j.get("jobGroup","").startswith("eval2"): continue
    d = (ts(j["completionTime"]) - ts(j["submissionTime"])).total_seconds() if j.get("completionTime") else None
    print(j["jobGroup"], j["jobId"], j["submissionTime"][11:23], d, j["numTasks"], j["name"][:60], j.get("description","")[:40])
