"""Spark at scale, issue 19: warm-session timings side by side in one process.

Usage: ``python datasets/results/spark-scale/bench.py OUT_DIR [NODES]`` (default 1000). On the
anchors graph (selp.gen.anchors: N nodes, 3N edges, right-recursive closure ``path``), with one
Spark session per core count (local[1], then local[2], driver 2g): one warm-up eval, then
``selp eval``'s computation (partition-local, and global rounds with
``spark.selp.partitionLocal=false``), and at local[2] top-k of every fact (pattern ``path(*, *)``,
k = 1, 3, 7, the DTable complete with its ranks), each once; then a one-shot ``selp explain
--engine spark`` of one fact as a whole process (session start included). Writes
``results.json`` and prints a table; the load average is read before and after.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path


def main() -> None:
    out = Path(sys.argv[1])
    nodes = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
    from selp.gen.anchors import generate_graph

    work = out / "work"
    stats = generate_graph(nodes, work)
    db = str(work / "db")
    from selp.database import load_database
    from selp.engines.spark import run_spark
    from selp.engines.spark_session import get_spark
    from selp.language import parse_program_file
    from selp.language.pattern_parser import parse_pattern
    from selp.language.validate import analyze
    from selp.topk.monoid import get_monoid
    from selp.topk.spark import run_topk_spark
    from selp.topk.task import make_task

    analysis = analyze(parse_program_file(str(work / "tc.dl")))
    rows: list[dict] = []
    load0 = os.getloadavg()

    def timed(what: str, cores: int, fn) -> None:
        t = time.perf_counter()
        extra = fn()
        rows.append({"run": what, "cores": cores, "seconds": round(time.perf_counter() - t, 2), **(extra or {})})
        print(rows[-1], flush=True)

    def evaluate(spark, local: bool):
        spark.conf.set("spark.selp.partitionLocal", "true" if local else "false")
        r = run_spark(analysis, db, spark)
        n = r.count("path")
        r.close()
        return {"path": n}

    for cores in (1, 2):
        spark = get_spark(f"local[{cores}]", {"spark.driver.memory": "2g"})
        evaluate(spark, True)  # warm-up: JVM, Python workers, DuckDB imports
        timed("eval partition-local", cores, lambda: evaluate(spark, True))
        if cores == 2:
            timed("eval global rounds", cores, lambda: evaluate(spark, False))
            spark.conf.set("spark.selp.partitionLocal", "true")
            types = load_database(analysis, db).types
            for k in (1, 3, 7):
                task = make_task(analysis, types, get_monoid("confidence"), k, parse_pattern("path(*, *)"), "path(*, *)")

                def topk(task=task):
                    r = run_topk_spark(task, db, spark)
                    n = r.live_count
                    r.close()
                    return {"k": task.k, "entries": n}

                timed(f"topk k={k}", cores, topk)
        spark.stop()
    t = time.perf_counter()
    cmd = [sys.executable, "-m", "selp", "explain", str(work / "tc.dl"), "--db", db, "-k", "3", stats["explain_fact"],
           "--engine", "spark", "-q"]
    p = subprocess.run(cmd, capture_output=True, text=True)
    rows.append({"run": f"one-shot explain -k 3 {stats['explain_fact']}", "cores": 2, "seconds": round(time.perf_counter() - t, 2),
                 "exit": p.returncode})
    print(rows[-1], flush=True)
    result = {"graph": stats, "rows": rows, "loadavg_before": [round(x, 2) for x in load0],
              "loadavg_after": [round(x, 2) for x in os.getloadavg()]}
    (out / "results.json").write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
