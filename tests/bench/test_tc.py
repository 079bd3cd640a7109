"""The TC dataset generator and the TC benchmark, checked against real local evaluations."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.paths import ROOT
from selp.bench.results import write_results
from selp.bench.tc import TC_PROGRAM, bench_tc, format_table
from selp.engines.result import run_local
from selp.gen.tc import STATS_FILE, closure_size, generate_tc, tc_size_for
from selp.language import parse_program_file
from selp.language.validate import analyze



def _evaluate(db: Path) -> int:
    analysis = analyze(parse_program_file(TC_PROGRAM))
    return run_local(analysis, db).count("tc")


def _read(path: Path) -> list[list[str]]:
    with open(path, newline="") as fh:
        return list(csv.reader(fh))


def test_program_has_three_rules_and_is_the_shipped_file():
    program = parse_program_file(TC_PROGRAM)
    # package data, and the repository's datasets/tc.dl is the same file
    assert TC_PROGRAM.parent.name == "programs" and TC_PROGRAM.parent.parent.name == "bench"
    assert (ROOT / "datasets" / "tc.dl").resolve() == TC_PROGRAM.resolve()
    assert len(program.rules) == 3
    assert {r.head.relation for r in program.rules} == {"tc"}
    weights = [float(r.weight) for r in program.rules]
    assert all(0 < w <= 1 for w in weights)


def test_generator_is_deterministic_for_a_seed(tmp_path):
    a = generate_tc(tmp_path / "a", 120, 240, seed=7, components=3)
    b = generate_tc(tmp_path / "b", 120, 240, seed=7, components=3)
    c = generate_tc(tmp_path / "c", 120, 240, seed=8, components=3)
    assert a == b
    assert (tmp_path / "a" / "edge.csv").read_bytes() == (tmp_path / "b" / "edge.csv").read_bytes()
    assert (tmp_path / "a" / "edge.csv").read_bytes() != (tmp_path / "c" / "edge.csv").read_bytes()


def test_generated_graph_is_undirected_weighted_and_matches_its_stats(tmp_path):
    stats = generate_tc(tmp_path, 90, 150, seed=1, components=3)
    rows = _read(tmp_path / "edge.csv")
    assert rows[0] == ["src", "dst", "_weight"]
    edges = {(int(s), int(d)): w for s, d, w in rows[1:]}
    assert len(rows) - 1 == stats["edge_rows"] == 2 * stats["edges"] == 300
    for (s, d), w in edges.items():
        assert s != d
        assert edges[(d, s)] == w  # both directions, same weight
        assert 0 < float(w) <= 1 and len(w.split(".")[1]) == 3
    assert {n for e in edges for n in e} == set(range(1, 91))  # every node has an edge
    assert stats["connected_components"] == 3 and stats["largest_component"] == 30
    assert stats["expected_tc"] == closure_size([30, 30, 30]) == 2700
    assert json.loads((tmp_path / STATS_FILE).read_text()) == stats


def test_expected_closure_size_is_what_the_engine_derives(tmp_path):
    # uneven components, and the plain G(n, m) mode with isolated nodes and a giant component
    s1 = generate_tc(tmp_path / "k", 100, 130, seed=3, components=4)
    s2 = generate_tc(tmp_path / "g", 150, 120, seed=3)
    assert s2["isolated_nodes"] > 0 and s2["connected_components"] > 1
    assert _evaluate(tmp_path / "k") == s1["expected_tc"]
    assert _evaluate(tmp_path / "g") == s2["expected_tc"]


@pytest.mark.parametrize("target", [500, 2000, 7000])
def test_tc_size_for_lands_within_20_percent(tmp_path, target):
    nodes, edges, k = tc_size_for(target)
    stats = generate_tc(tmp_path, nodes, edges, seed=0, components=k)
    derived = _evaluate(tmp_path)
    assert derived == stats["expected_tc"]
    assert abs(derived - target) <= 0.2 * target


def test_tc_size_for_large_targets_are_close_and_sparse():
    for target in (100_000, 300_000, 1_000_000):
        nodes, edges, k = tc_size_for(target)
        n = nodes // k
        assert abs(k * n * n - target) <= 0.01 * target
        assert 100 <= n <= 300 and edges == 2 * nodes


def test_generator_rejects_impossible_graphs(tmp_path):
    with pytest.raises(ValueError):
        generate_tc(tmp_path, 10, 5, components=2)  # 2 trees need 8 edges
    with pytest.raises(ValueError):
        generate_tc(tmp_path, 4, 7)  # K4 has 6


def test_old_tc_script_is_selp_gen_tc(tmp_path):
    out = subprocess.run(
        [sys.executable, str(ROOT / "datasets" / "tc.py"), "--target-output", "2000", "--out", str(tmp_path)],
        capture_output=True, text=True, check=True,
    )
    stats = json.loads(out.stdout)
    assert stats["expected_tc"] == 2025 and (tmp_path / "edge.csv").is_file()
    same = subprocess.run([sys.executable, "-m", "selp", "gen", "tc", "--scale", "2000", "--out", str(tmp_path / "g")],
                          capture_output=True, text=True, check=True)
    assert json.loads(same.stdout) == stats
    assert (tmp_path / "g" / "edge.csv").read_bytes() == (tmp_path / "edge.csv").read_bytes()


def test_bench_tc_local_counts_match_the_generator(tmp_path):
    messages: list[str] = []
    rows = bench_tc([2000], ["local"], repeat=2, workdir=tmp_path, progress=messages.append, timeout_s=120)
    assert len(rows) == 1
    row = rows[0]
    assert row["status"] == "ok", row
    assert row["output_tuples"] == row["expected_tuples"] == 2025
    assert row["edb_rows"] == 180 and row["repeats"] == 2 and len(row["seconds_all"]) == 2
    assert row["seconds"] > 0 and row["iterations"] > 2 and row["peak_rss_mb"] > 10
    assert any("warm-up" in m for m in messages)
    # the dataset is cached by its parameters: a second run reuses the file
    (db,) = [d for d in tmp_path.iterdir() if d.is_dir()]
    mtime = (db / "edge.csv").stat().st_mtime_ns
    bench_tc([2000], ["local"], repeat=1, workdir=tmp_path, warmup=0)
    assert (db / "edge.csv").stat().st_mtime_ns == mtime


def test_bench_tc_timeout_stops_the_run(tmp_path):
    # 0.2 s is less than the worker needs to start, so the cap must fire and kill it
    rows = bench_tc([100_000], ["local"], repeat=1, workdir=tmp_path, timeout_s=0.2)
    assert rows[0]["status"] == "did not finish"
    assert "seconds" not in rows[0]


def _fake_rows() -> list[dict]:
    base = {"dataset": "tc", "target": 1000, "edb_rows": 80, "output_tuples": 1024, "iterations": 6,
            "load_seconds": 0.01, "peak_rss_mb": 40.0, "status": "ok"}
    return [
        {**base, "engine": "local", "seconds": 0.5, "seconds_all": [0.5, 0.6]},
        {**base, "engine": "spark", "seconds": 2.0, "jvm_heap_used_mb": 300.0, "jvm_peak_rss_mb": 900.0},
        {**base, "target": 5000, "engine": "local", "status": "did not finish", "output_tuples": None},
    ]


def test_format_table_has_the_columns_and_ratio():
    text = format_table(_fake_rows())
    header = text.splitlines()[0]
    for col in ("dataset", "target", "EDB rows", "output", "engine", "eval s", "load s", "iters", "RSS MiB",
                "JVM heap MiB", "status"):
        assert col in header
    assert "spark/local = 4.00" in text
    assert "did not finish" in text
    # every column title starts where its rule segment starts
    head, rule = text.splitlines()[:2]
    starts = [i for i, ch in enumerate(rule) if ch == "-" and (i == 0 or rule[i - 1] == " ")]
    assert [head[i - 1] if i else " " for i in starts] == [" "] * len(starts)
    assert all(head[i] != " " for i in starts)


def test_write_results_writes_csv_and_json(tmp_path):
    paths = write_results(_fake_rows(), tmp_path, machine={"nproc": 2})
    assert [p.name for p in paths] == ["results.csv", "results.json"]
    table = _read(tmp_path / "results.csv")
    assert table[0][:2] == ["dataset", "target"] and len(table) == 4
    assert "0.5;0.6" in table[1]
    doc = json.loads((tmp_path / "results.json").read_text())
    assert doc["machine"] == {"nproc": 2} and len(doc["rows"]) == 3 and "date" in doc


@pytest.mark.spark
def test_bench_tc_spark_rows(tmp_path, request):
    pytest.importorskip("selp.engines.spark")
    try:
        spark = request.getfixturevalue("spark")  # the shared session, when tests/conftest.py has one
    except pytest.FixtureLookupError:
        from selp.engines.spark_session import get_spark

        spark = get_spark("local[2]")
    rows = bench_tc([100], ["local", "spark"], repeat=1, warmup=0, workdir=tmp_path, spark=spark, timeout_s=300)
    local, sp = rows
    assert sp["engine"] == "spark" and sp["status"] == "ok", sp
    assert sp["output_tuples"] == local["output_tuples"] == sp["expected_tuples"]
    assert sp["iterations"] > 0 and sp["seconds"] > 0 and sp["wall_seconds"] >= sp["seconds"]
    assert sp.get("jvm_heap_used_mb", 1) > 0
    assert "spark/local" in format_table(rows)
