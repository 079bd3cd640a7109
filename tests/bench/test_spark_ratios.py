"""``selp bench spark`` (selp.bench.spark_ratios): issue 19's ratios in one warm Spark session.
The summary's medians and ratios come from the passes; the input is checked before Spark
starts; on Spark, eval and top-k run on the generated graph and agree with the embedded
engine's closure."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from selp.bench.spark_ratios import parse_input, summary, table
from selp.cli import main
from selp.errors import SelpError


def test_input_is_nodes_or_tc_tuples_and_anything_else_is_named():
    assert parse_input("1000") == ("anchors", 1000)
    assert parse_input("tc:1000000") == ("tc", 1000000)
    for bad in ("tc:abc", "0", "edges:10", "-5", ""):
        with pytest.raises(SelpError, match="--input"):
            parse_input(bad)
    got = CliRunner().invoke(main, ["bench", "spark", "--input", "tc:many"])
    assert got.exit_code == 1 and "tc:many" in got.output and "Traceback" not in got.output


def test_summary_takes_medians_and_the_ratios_of_medians():
    rows = [{"line": line, "seconds": s} for line, ss in
            [("eval", (1.0, 3.0, 2.0)), ("top-1", (2.0, 2.0, 9.0)), ("top-3", (3.0, 4.0, 5.0)), ("top-7", (3.0, 2.4, 2.6))]
            for s in ss]
    by = {r["line"]: r for r in summary(rows)}
    assert by["eval"]["median_s"] == 2.0 and by["eval"]["min_s"] == 1.0
    assert by["top-1"]["median_s"] == 2.0 and by["top-3"]["over_eval"] == 2.0
    assert by["top-7"]["over_top1"] == 1.3 and "over_top1" not in by["top-1"]
    text = table(summary(rows), "1000", "local[2]")
    assert "top-3 / eval 2.00× (target ≤ 2: met)" in text
    assert "top-7 / top-1 1.30× (target ≤ 1.25: missed)" in text


@pytest.mark.spark
def test_bench_spark_measures_every_line_on_the_generated_graph(tmp_path, spark):
    from selp.engines.embedded import run_embedded
    from selp.language import parse_program_file
    from selp.language.validate import analyze

    out = tmp_path / "out"
    got = CliRunner().invoke(main, ["bench", "spark", "--input", "40", "-k", "1,3", "--passes", "2", "--warmup", "0",
                                    "--out", str(out), "-q"])
    assert got.exit_code == 0, got.output
    assert "| top-3 | 2 |" in got.output and "top-3 / eval" in got.output
    doc = json.loads((out / "results.json").read_text())
    rows = doc["rows"]
    assert sorted({r["line"] for r in rows}) == ["eval", "top-1", "top-3"] and len(rows) == 6
    # the session of this process (the tests' shared one) was used as it is, not restarted
    assert spark.range(3).count() == 3
    # the closure Spark evaluated is the embedded engine's, and each top-k holds an entry per
    # fact at least (k entries at most)
    analysis = analyze(parse_program_file(str(out / "work" / "tc.dl")))
    r = run_embedded(analysis, str(out / "work" / "db"))
    facts = r.count("path")
    r.close()
    edges = sum(1 for _ in open(out / "work" / "db" / "edge.csv")) - 1
    for row in rows:
        if row["line"] == "eval":
            assert row["facts"] == facts
        elif row["k"] == 1:
            assert row["entries"] == facts + edges  # one entry a fact, EDB leaves included
        else:
            assert facts + edges < row["entries"] <= row["k"] * facts + edges
    assert (out / "summary.md").read_text() in got.output
