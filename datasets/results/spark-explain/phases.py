"""Where a one-shot Spark explain spends its time: seconds and Spark jobs per phase, in process.

Usage: ``PYTHONPATH=. python datasets/results/spark-explain/phases.py WORK [FACT] [warm]``
(WORK: a directory with ``tc.dl`` and ``db/`` as ``bench.py`` generates them; FACT default
``path(0, 1)``; ``warm``: run the top-k a second time in the same session). ``PHASES_CONF`` (a
JSON object) adds session settings, e.g. ``{"spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1"}``; ``PHASES_JOBS=1`` lists every
job with its stages' names after the run.
Phases are timed by wrapping the engine's steps; jobs are counted from Spark's job ids (each
phase's count is the newest id after it minus the newest before it). Prints the trees on stdout
and the phases on stderr.
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any, Callable

T0 = time.perf_counter()


def main() -> None:
    from selp.engines.spark_session import get_spark

    conf = {"spark.driver.memory": "2g", **json.loads(os.environ.get("PHASES_CONF", "{}"))}
    spark = get_spark(None, conf)
    sc = spark.sparkContext
    say(f"{'imports + session':28s} {time.perf_counter() - T0:7.2f}s")

    def last_job() -> int:
        ids = sc.statusTracker().getJobIdsForGroup(None)
        return max(ids) if ids else -1

    def wrap(owner: Any, name: str) -> None:
        f: Callable = getattr(owner, name)

        def timed(*a: Any, **kw: Any) -> Any:
            t, j = time.perf_counter(), last_job()
            try:
                return f(*a, **kw)
            finally:
                say(f"  {name:26s} {time.perf_counter() - t:7.2f}s jobs {last_job() - j}")

        setattr(owner, name, timed)

    import selp.engines.spark_load as load
    import selp.topk.spark as dtable
    from selp.topk.spark_dtable import SparkDTable

    for name in ("evaluate_filters", "evaluate_demand", "leaves", "component"):
        wrap(dtable._Engine, name)
    wrap(dtable, "run_partition_local")
    wrap(load, "load_spark_database")
    wrap(SparkDTable, "ranked")
    wrap(SparkDTable, "to_dtable")
    from selp.cli.root import load_program
    from selp.language.pattern import TreePattern
    from selp.topk.api import parse_fact_filter, topk
    from selp.topk.trees import answers, render_text

    work = sys.argv[1]
    fact = parse_fact_filter(sys.argv[2] if len(sys.argv) > 2 else "path(0, 1)")
    analysis = load_program(f"{work}/tc.dl")
    runs = ("cold", "warm") if "warm" in sys.argv[3:] else ("cold",)
    for run in runs:
        t, j = time.perf_counter(), last_job()
        table = topk(analysis, f"{work}/db", TreePattern(fact), 3, "confidence", "spark", "heuristic", spark, None, fact=fact)
        say(f"{'top-k, ' + run:28s} {time.perf_counter() - t:7.2f}s jobs {last_job() - j}")
    print(render_text(answers(table, fact)))
    for step in table.plan:
        say(str(step))
    if os.environ.get("PHASES_JOBS"):
        # every job with the names (call sites) of its stages: which code ran it
        tracker = sc.statusTracker()
        for j in range(last_job() + 1):
            info = tracker.getJobInfo(j)
            if info is None:
                continue
            names = [(s.name if (s := tracker.getStageInfo(i)) is not None else "?") for i in info.stageIds]
            say(f"  job {j:3d}: {'; '.join(names)}")
    say(f"{'whole process':28s} {time.perf_counter() - T0:7.2f}s")


def say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
