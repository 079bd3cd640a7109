"""Ranked trust's capped min-cost fixpoint timed three ways on one store, in one process:
ranked_local (Python, the oracle; what the embedded engine ran before ranked_duck),
ranked_duck (DuckDB, set-at-a-time) and ranked_spark (a warm local[2] session).

    PYTHONPATH=TREE python3 bench.py STORE_DIR [--spark] [--local] [--repeat N]

Prints one line per implementation: wall seconds, this process's CPU seconds (DuckDB's threads
included; the Spark JVM's not), rounds, and the R_x tuple count (must be equal).
"""

from __future__ import annotations

import argparse
import resource
import sys
import time


def cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("store")
    ap.add_argument("--spark", action="store_true", help="also ranked_spark (warm local[2] session)")
    ap.add_argument("--local", action="store_true", help="also ranked_local (slow at large sizes)")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--warm", default=None, help="a small store to warm the Spark session on")
    a = ap.parse_args()
    from selp.cdss.ranked import RankedProgram, ranked_local, ranked_spark
    from selp.cdss.ranked_duck import ranked_duck
    from selp.cdss.store import Store

    with Store.open(a.store) as s:
        base = s.base_data(s.last_publication())
        rp = RankedProgram(s.compiled)
    n_base = sum(map(len, base.values()))
    runs = [("ranked_duck", lambda: ranked_duck(rp, base))]
    if a.local:
        runs.append(("ranked_local", lambda: ranked_local(rp, base)))
    if a.spark:
        from selp.engines.spark_session import get_spark

        spark = get_spark("local[2]")
        if a.warm:  # the JVM's first jobs compile code: warm the session on a small store first
            with Store.open(a.warm) as w:
                wb = w.base_data(w.last_publication())
                ranked_spark(RankedProgram(w.compiled), wb, spark)
        runs.append(("ranked_spark", lambda: ranked_spark(rp, base, spark)))
    counts = {}
    for _ in range(a.repeat):
        for name, fn in runs:
            t0, c0 = time.perf_counter(), cpu()
            res = fn()
            wall, c = time.perf_counter() - t0, cpu() - c0
            counts[name] = sum(map(len, res.rejections.values()))
            print(f"{a.store}\tbase {n_base}\t{name}\twall {wall:.2f}s\tcpu {c:.2f}s\trounds {res.rounds}\tR_x {counts[name]}", flush=True)
    if len(set(counts.values())) > 1:
        sys.exit(f"R_x counts differ: {counts}")


if __name__ == "__main__":
    main()
