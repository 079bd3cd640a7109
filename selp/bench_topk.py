"""The top-k benchmark: semi-naive evaluation vs top-k on the TC dataset, per engine and k.

The paper's Figure 6 setting: pattern p10 (a single node, every tc fact is an answer), k = 1, 3, 7
(or as given). Every configuration runs once untimed (warm-up) and ``repeat`` times timed; the
median is reported with its ratio to semi-naive evaluation on the same engine and to top-1.
Local configurations run in a fresh subprocess each, so ``peak_rss_mb`` is that configuration's
own peak; Spark ones share one session, whose driver JVM peak is reported.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

from selp.bench import TC_PROGRAM, _jvm_stats, _rss_mb, tc_dataset

PATTERN = "tc(*, *)"  # p10


def _measure(engine: str, mode: str, db: str, k: int, repeat: int, spark=None) -> dict[str, Any]:
    """Warm-up plus ``repeat`` timed runs in this process; seconds exclude parsing the program."""
    from selp.language import parse_program_file
    from selp.language.validate import analyze

    analysis = analyze(parse_program_file(str(TC_PROGRAM)))
    times: list[float] = []
    count = 0
    for i in range(1 + repeat):
        t0 = time.perf_counter()
        if mode == "semi-naive":
            if engine == "local":
                from selp.engines.result import run_local

                res = run_local(analysis, db)
                count = res.count("tc")
            else:
                from selp.engines.spark import run_spark

                res = run_spark(analysis, db, spark)
                count = res.count("tc")
                res.close()
        else:
            from selp.language.pattern_parser import parse_pattern
            from selp.topk.monoid import get_monoid
            from selp.topk.task import make_task

            m = get_monoid("confidence")
            if engine == "local":
                from selp.database import load_database
                from selp.topk.local import run_topk_local

                db_obj = load_database(analysis, db)
                task = make_task(analysis, db_obj.types, m, k, parse_pattern(PATTERN), PATTERN)
                table = run_topk_local(task, db_obj)
                count = sum(len(v) for v in table.entries.values())
                del table
            else:
                from selp.engines.spark_load import load_spark_database
                from selp.topk.spark import run_topk_spark

                types = load_spark_database(analysis, db, spark).types
                task = make_task(analysis, types, m, k, parse_pattern(PATTERN), PATTERN)
                result = run_topk_spark(task, db, spark)
                count = result.count()
                result.close()
            spark and spark.catalog.clearCache()
        if i > 0:
            times.append(time.perf_counter() - t0)
    return {"seconds": round(statistics.median(times), 3), "seconds_all": [round(t, 3) for t in times], "count": count}


def _local_in_subprocess(mode: str, db: str, k: int, repeat: int, timeout_s: float) -> dict[str, Any]:
    spec = json.dumps({"mode": mode, "db": db, "k": k, "repeat": repeat})
    try:
        r = subprocess.run([sys.executable, "-m", "selp.bench_topk", spec], capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return {"status": "did not finish"}
    if r.returncode != 0:
        tail = (r.stderr.strip().splitlines() or [f"exit code {r.returncode}"])[-1]
        return {"status": f"error: {tail[:200]}"}
    return {"status": "ok", **json.loads(r.stdout.strip().splitlines()[-1])}


def bench_topk(
    scale: int,
    engines: list[str],
    ks: list[int],
    repeat: int = 3,
    workdir: str | Path = "bench-work",
    spark=None,
    say: Callable[[str], None] = lambda m: None,
    timeout_s: float = 1800,
    seed: int = 0,
) -> list[dict[str, Any]]:
    """One row per (engine, mode, k): seconds, ratios to semi-naive and to top-1, memory."""
    db, stats = tc_dataset(Path(workdir), scale, seed)
    say(f"tc target {scale}: {stats['edge_rows']} edge rows, {stats['expected_tc']} tc tuples")
    rows: list[dict[str, Any]] = []
    for engine in engines:
        configs = [("semi-naive", 0)] + [("top-k", k) for k in ks]
        base: dict[str, float] = {}
        for mode, k in configs:
            say(f"  {engine} {mode}{f' k={k}' if k else ''} ...")
            if engine == "local":
                res = _local_in_subprocess(mode, str(db), k, repeat, timeout_s)
            else:
                try:
                    res = {"status": "ok", **_measure("spark", mode, str(db), k, repeat, spark)}
                    res.update(_jvm_stats(spark))
                except Exception as err:  # noqa: BLE001 - a failed configuration is a row, not a crash
                    res = {"status": f"error: {str(err).strip().splitlines()[0][:200]}"}
            row = {"dataset": "tc", "target": scale, "tc_tuples": stats["expected_tc"], "pattern": "p10",
                   "engine": engine, "mode": mode, "k": k or None, **res}
            if "seconds" in row:
                if mode == "semi-naive":
                    base["semi"] = row["seconds"]
                elif k == 1:
                    base["top1"] = row["seconds"]
                if "semi" in base:
                    row["vs_semi_naive"] = round(row["seconds"] / base["semi"], 2)
                if "top1" in base and mode == "top-k":
                    row["vs_top1"] = round(row["seconds"] / base["top1"], 2)
            say(f"    {row.get('status')}" + (f": {row['seconds']:.2f}s" if "seconds" in row else ""))
            rows.append(row)
    return rows


COLUMNS = [("engine", "engine"), ("mode", "mode"), ("k", "k"), ("seconds", "seconds"), ("vs_semi_naive", "/ semi-naive"),
           ("vs_top1", "/ top-1"), ("count", "entries or tuples"), ("peak_rss_mb", "peak RSS MiB"), ("jvm_peak_rss_mb", "JVM peak MiB"),
           ("status", "status")]


def format_topk_table(rows: list[dict[str, Any]]) -> str:
    """A Markdown table of :func:`bench_topk` rows."""
    head = [t for _, t in COLUMNS]
    body = [["" if r.get(key) is None else str(r.get(key)) for key, _ in COLUMNS] for r in rows]
    widths = [max(len(c) for c in col) for col in zip(head, *body)]

    def line(cells: list[str]) -> str:
        return "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths)) + " |"

    return "\n".join([line(head), "|" + "|".join("-" * (w + 2) for w in widths) + "|"] + [line(b) for b in body])


if __name__ == "__main__":  # the local worker: one configuration, its figures as JSON
    spec = json.loads(sys.argv[1])
    out = _measure("local", spec["mode"], spec["db"], spec["k"], spec["repeat"])
    out["peak_rss_mb"] = round(_rss_mb(), 1)
    print(json.dumps(out))
