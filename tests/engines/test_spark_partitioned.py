"""Partition-local recursion on Spark gives exactly the global rounds' answers, progress and
iteration count, says in its plan which components ran which way, and can be turned off."""

from __future__ import annotations

from pathlib import Path

import pytest

from selp.engines.result import plan_line, run_local
from selp.language import parse_program
from selp.language.validate import analyze
from selp.values import Skolem

pytestmark = pytest.mark.spark

PROGRAM = """
reach(s, y) :- start(s), edge(s, y).
reach(s, z) :- reach(s, y), edge(y, z), ok(s, z), not blocked(z).
ntc(x, y) :- edge(x, y).
ntc(x, z) :- ntc(x, y), ntc(y, z).
tag(s, f(s, y)) :- reach(s, y), s < y.
tag(s, z) :- tag(s, y), reach(y, z).
"""


def _db(tmp_path: Path) -> Path:
    db = tmp_path / "db"
    db.mkdir()
    edges = [(i, (i * 7 + 3) % 23) for i in range(23)] + [(i, (i + 1) % 23) for i in range(0, 23, 2)]
    (db / "edge.csv").write_text("a,b\n" + "".join(f"{a},{b}\n" for a, b in edges))
    (db / "start.csv").write_text("s\n" + "".join(f"{s}\n" for s in range(0, 23, 3)))
    (db / "ok.csv").write_text("s,z\n" + "".join(f"{s},{z}\n" for s in range(23) for z in range(23) if (s + z) % 5))
    (db / "blocked.csv").write_text("z\n4\n")
    return db


def _run(spark, analysis, db, enabled: str):
    from selp.engines.spark import run_spark

    seen: list = []
    spark.conf.set("spark.selp.partitionLocal", enabled)
    try:
        result = run_spark(analysis, db, spark, lambda c, i, d, t: seen.append((c.relations, i, d, t)))
    finally:
        spark.conf.unset("spark.selp.partitionLocal")
    return result, seen


def test_partition_local_equals_global_rounds_and_the_reference(spark, tmp_path):
    analysis = analyze(parse_program(PROGRAM, "prog.dl"))
    db = _db(tmp_path)
    seen_ref: list = []
    ref = run_local(analysis, db, lambda c, i, d, t: seen_ref.append((c.relations, i, d, t)))
    local, seen_local = _run(spark, analysis, db, "true")
    rounds, seen_rounds = _run(spark, analysis, db, "false")
    try:
        for rel in ref.relations():
            assert local.rows(rel) == rounds.rows(rel) == ref.rows(rel), rel
            assert local.count(rel) == ref.count(rel)
        assert any(isinstance(v, Skolem) for row in local.rows("tag") for v in row)
        assert local.iterations == rounds.iterations == ref.iterations
        assert seen_local == seen_rounds == seen_ref
        plan = {tuple(s["relations"]): s for s in local.plan}
        assert plan[("reach",)]["mode"] == "partition-local"
        assert plan[("reach",)]["keyed"] == ["ok"] and plan[("reach",)]["broadcast"] == ["blocked", "edge"]
        assert plan[("tag",)]["mode"] == "partition-local"  # reads reach, computed partition-locally
        assert plan[("ntc",)]["mode"] == "global rounds" and "nonlinear" in plan[("ntc",)]["reason"]
        assert plan_line(plan[("reach",)]).startswith("  plan: stratum 0 [reach] partition-local on position 0 (")
        switched = {tuple(s["relations"]): s for s in rounds.plan}
        # (the rounds run on dictionary codes: "values" says so, see test_spark_rounds)
        assert {k: v for k, v in switched[("reach",)].items() if k != "values"} == {
            "stratum": 0, "relations": ["reach"], "mode": "global rounds", "reason": "spark.selp.partitionLocal=false"
        }
    finally:
        local.close()
        rounds.close()

