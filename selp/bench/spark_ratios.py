"""Issue 19's ratios on Spark, in one warm session (``selp bench spark``).

Spark eval and the top-k DTable of every fact (``REL(*, *)``, k = 1, 3, 7 by default) of a
transitive closure, each line run ``passes`` times in turn after ``warmup`` untimed passes, in
one Spark session: what a user of a long-lived session sees, and the only way to tell ratios
of ~10 % apart on a small machine. One run of each line per process moved top-1 by ±20 %
(the JVM was still compiling ~25 s into a session: a sixth of the CPU in a perf sample), so
the table gives the median and the fastest pass of each line, and the issue's two ratios of
medians: top-3 over eval (target ≤ 2) and top-7 over top-1 (target ≤ 1.25).

Inputs: the anchors graph (``selp.gen.anchors``: N nodes, 3N edges, the right-recursive closure
``path``, which decomposes on a position) or the TC benchmark graph with about T output tuples
(``tc:T``, ``selp.gen.tc`` and ``datasets/tc.dl``: its symmetry rule makes it decompose by value
components).
"""

from __future__ import annotations

import os
import statistics
import time
from pathlib import Path
from typing import Any, Callable

from selp.errors import SelpError

TC_PROGRAM = Path(__file__).resolve().parents[2] / "datasets" / "tc.dl"


def parse_input(text: str) -> tuple[str, int]:
    """``("anchors", N)`` for ``N``, ``("tc", T)`` for ``tc:T``; SelpError naming the value otherwise."""
    kind, _, size = text.rpartition(":") if ":" in text else ("anchors", "", text)
    try:
        n = int(size)
    except ValueError:
        n = 0
    if kind not in ("anchors", "tc") or n < 1:
        raise SelpError(f"--input: {text!r} is neither a number of nodes (1000) nor tc:TUPLES (tc:1000000)")
    return kind, n


def prepare(kind: str, size: int, work: Path) -> tuple[str, str, str]:
    """The program file, database directory and closure relation of the input, generated into
    ``work`` unless it is there already."""
    db = work / "db"
    if kind == "tc":
        from selp.gen.tc import generate_tc_for

        if not db.exists():
            generate_tc_for(db, size)
        return str(TC_PROGRAM), str(db), "tc"
    from selp.gen.anchors import generate_graph

    if not db.exists():
        generate_graph(size, work)
    return str(work / "tc.dl"), str(db), "path"


def run(source: str, ks: tuple[int, ...], passes: int, warmup: int, spark: Any, work: Path,
        say: Callable[[str], None]) -> list[dict[str, Any]]:
    """Every timed pass in the session ``spark``, a row each: ``line`` (eval or top-k), ``k`` (0
    for eval), ``pass``, ``seconds``, ``facts`` (eval) or ``entries`` (top-k, EDB leaves
    included)."""
    from selp.database import load_database
    from selp.engines.spark import run_spark
    from selp.language import parse_program_file
    from selp.language.pattern_parser import parse_pattern
    from selp.language.validate import analyze
    from selp.topk.monoid import get_monoid
    from selp.topk.spark import run_topk_spark
    from selp.topk.task import make_task

    kind, size = parse_input(source)
    say(f"input {source}: generating into {work} (unless there)")
    program, db, rel = prepare(kind, size, work)
    analysis = analyze(parse_program_file(program))
    types = load_database(analysis, db).types
    master = spark.sparkContext.master
    pattern = parse_pattern(f"{rel}(*, *)")

    def one(k: int) -> tuple[float, int]:
        t = time.perf_counter()
        if k == 0:
            r = run_spark(analysis, db, spark)
            n = r.count(rel)
        else:
            r = run_topk_spark(make_task(analysis, types, get_monoid("confidence"), k, pattern, f"{rel}(*, *)"), db, spark)
            n = r.live_count
        r.close()
        return time.perf_counter() - t, n

    lines = (0, *ks)
    for w in range(warmup):
        for k in lines:
            one(k)
        say(f"warm-up pass {w + 1}/{warmup} done")
    rows = []
    for p in range(passes):
        for k in lines:
            s, n = one(k)
            rows.append({"input": source, "relation": rel, "line": "eval" if k == 0 else f"top-{k}", "k": k, "pass": p + 1,
                         "seconds": round(s, 3), ("facts" if k == 0 else "entries"): n, "master": master,
                         "load": round(os.getloadavg()[0], 2)})
        say(f"pass {p + 1}/{passes}: " + ", ".join(f"{r['line']} {r['seconds']:.2f} s" for r in rows[-len(lines):]))
    return rows


def summary(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per line: median and fastest seconds over the passes, and against eval and top-1."""
    by: dict[str, list[float]] = {}
    for r in rows:
        by.setdefault(r["line"], []).append(r["seconds"])
    med = {line: statistics.median(v) for line, v in by.items()}
    out = []
    for line, v in by.items():
        row = {"line": line, "passes": len(v), "median_s": round(med[line], 3), "min_s": round(min(v), 3)}
        if line != "eval" and med.get("eval"):
            row["over_eval"] = round(med[line] / med["eval"], 3)
        if line.startswith("top-") and line != "top-1" and med.get("top-1"):
            row["over_top1"] = round(med[line] / med["top-1"], 3)
        out.append(row)
    return out


def table(summ: list[dict[str, Any]], source: str, master: str) -> str:
    """The summary as a markdown table, with the issue's two targets read off it."""
    out = [f"Spark, {master}, input {source}: medians of the passes in one warm session", "",
           "| line | passes | median s | fastest s | / eval | / top-1 |", "|---|--:|--:|--:|--:|--:|"]
    for r in summ:
        out.append(f"| {r['line']} | {r['passes']} | {r['median_s']:.2f} | {r['min_s']:.2f} | "
                   f"{r.get('over_eval', '') and format(r['over_eval'], '.2f') + '×'} | "
                   f"{r.get('over_top1', '') and format(r['over_top1'], '.2f') + '×'} |")
    by = {r["line"]: r for r in summ}
    notes = []
    if "top-3" in by and "over_eval" in by["top-3"]:
        x = by["top-3"]["over_eval"]
        notes.append(f"top-3 / eval {x:.2f}× (target ≤ 2: {'met' if x <= 2 else 'missed'})")
    if "top-7" in by and "over_top1" in by["top-7"]:
        x = by["top-7"]["over_top1"]
        notes.append(f"top-7 / top-1 {x:.2f}× (target ≤ 1.25: {'met' if x <= 1.25 else 'missed'})")
    return "\n".join(out + ([""] + notes if notes else [])) + "\n"
