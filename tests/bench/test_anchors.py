"""`selp bench anchors`: the graph, the rows, the count checks and the caps, on tiny graphs.

Timings are never asserted: only that every run has a row and that every system reports the same
number of path tuples as DuckDB's recursive CTE.
"""

from __future__ import annotations

import csv
import hashlib
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from helpers.paths import ROOT
from selp.bench import anchors as bench_anchors
from selp.bench.anchors import (Config, NOT_INSTALLED, TIMEOUT, bench_anchors as run_anchors, check_counts,
                                format_report, run_once)
from selp.gen.anchors import generate_graph



def _selp(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "selp", *args], capture_output=True, text=True, cwd=ROOT)


def _closure_size(csv_path: Path) -> int:
    succ: dict[int, list[int]] = {}
    with open(csv_path) as fh:
        next(fh)
        for line in fh:
            a, b, _ = line.split(",")
            succ.setdefault(int(a), []).append(int(b))
    total = 0
    for x in succ:
        seen: set[int] = set()
        stack = list(succ[x])
        while stack:
            v = stack.pop()
            if v not in seen:
                seen.add(v)
                stack.extend(succ.get(v, ()))
        total += len(seen)
    return total


def test_the_graph_is_the_specified_one(tmp_path: Path) -> None:
    """N=1000: the graph of random.seed(1) drawn with the module functions, 873 168 path tuples."""
    import random

    random.seed(1)
    edges: set[tuple[int, int]] = set()
    while len(edges) < 3000:
        a, b = random.randrange(1000), random.randrange(1000)
        if a != b:
            edges.add((a, b))
    text = "c1,c2,_weight\n" + "".join(f"{a},{b},{random.uniform(0.5, 1.0):.3f}\n" for a, b in sorted(edges))
    stats = generate_graph(1000, tmp_path)
    data = (tmp_path / "db" / "edge.csv").read_bytes()
    assert data == text.encode() and stats["edge_csv_sha256"] == hashlib.sha256(data).hexdigest()
    assert stats["edges"] == 3000 and stats["explain_fact"] == "path(0, 1)"
    assert _closure_size(tmp_path / "db" / "edge.csv") == 873_168
    assert (tmp_path / "tc.dl").read_text().startswith("r1 (0.9): path(x, y) :- edge(x, y).")


@pytest.mark.slow  # a benchmark child process per system and query (8)
def test_cli_runs_every_system_and_the_counts_agree(tmp_path: Path) -> None:
    r = _selp("bench", "anchors", "--nodes", "30", "--repeat", "1", "--engines", "embedded,reference", "--out", str(tmp_path))
    assert r.returncode == 0, r.stderr
    table = r.stdout
    for system, what in [("DuckDB", "recursive CTE"), ("Nemo", "rules + #count"), ("selp embedded", "eval"),
                         ("selp reference", "eval"), ("selp embedded", "topk k=1"), ("selp embedded", "topk k=3"),
                         ("selp embedded", "topk k=7"), ("selp embedded", "explain k=3")]:
        assert any(f"| {system} " in line and f"| {what} " in line for line in table.splitlines()), (system, what, table)
    assert "MISMATCH" not in table and "embedded eval / DuckDB CTE" in table and "top-7 / top-1" in table
    assert "selp bench anchors --nodes 30" in table and "DuckDB " in table
    doc = json.loads((tmp_path / "results.json").read_text())
    rows = doc["rows"]
    duck = next(r for r in rows if r["system"] == "DuckDB")
    assert duck["status"] == "ok" and duck["path_count"] == _closure_size_of_n(30)
    for row in rows:
        if row["system"] == "Nemo" and row["status"] == NOT_INSTALLED:
            continue
        assert row["status"] == "ok", row
        if row["what"].startswith("explain"):
            assert row["count_check"].startswith("ok") and 1 <= row["trees"] <= 3 and row["explained"] == "path(0, 1)"
        else:
            assert row["path_count"] == duck["path_count"] and row["count_check"] == "ok", row
    assert doc["count_mismatches"] == [] and doc["summary"][0]["nodes"] == 30
    assert doc["machine"]["command"].startswith("selp bench anchors --nodes 30") and doc["machine"]["duckdb"]
    assert (tmp_path / "table.md").read_text() == table
    with open(tmp_path / "results.csv") as fh:
        assert len(list(csv.DictReader(fh))) == len(rows) == 8
    assert "N=30 DuckDB recursive CTE run 1/1:" in r.stderr


def _closure_size_of_n(n: int) -> int:
    with tempfile.TemporaryDirectory() as d:
        generate_graph(n, d)
        return _closure_size(Path(d) / "db" / "edge.csv")


def test_a_count_mismatch_is_flagged() -> None:
    rows = [
        {"nodes": 5, "edges": 15, "system": "DuckDB", "what": "recursive CTE", "status": "ok", "path_count": 20, "seconds": 0.1},
        {"nodes": 5, "edges": 15, "system": "selp embedded", "what": "eval", "status": "ok", "path_count": 19, "seconds": 0.2},
        {"nodes": 5, "edges": 15, "system": "selp embedded", "what": "explain k=3", "status": "ok", "k": 3, "trees": 0,
         "explained": "no derivation matches", "note": "path(0, 1)", "seconds": 0.3},
    ]
    problems = check_counts(rows)
    assert len(problems) == 2 and "reports 19 path tuples, DuckDB 20" in problems[0]
    assert rows[0]["count_check"] == "ok" and rows[1]["count_check"].startswith("MISMATCH")
    assert rows[2]["count_check"].startswith("MISMATCH")
    report = format_report(rows, bench_anchors.add_ratios(rows), {}, "selp bench anchors", problems)
    assert "**COUNT MISMATCH:**" in report


def test_nemo_missing_is_a_skipped_row_and_skip_topk_leaves_out_topk(monkeypatch) -> None:
    monkeypatch.setattr(bench_anchors, "nemo_available", lambda: False)
    rows, summary, problems = run_anchors([12], ["embedded"], repeat=1, skip_topk=True)
    assert [(r["system"], r["what"]) for r in rows] == [("DuckDB", "recursive CTE"), ("Nemo", "rules + #count"),
                                                         ("selp embedded", "eval")]
    assert rows[1]["status"] == NOT_INSTALLED and problems == []
    assert rows[2]["path_count"] == rows[0]["path_count"] and summary[0]["top1_vs_eval"] is None


def test_a_run_past_the_timeout_is_killed_and_reported(tmp_path: Path) -> None:
    cfg = Config("sleeper", "sleep", [sys.executable, "-c", "import time; time.sleep(30)"], "count")
    run = run_once(cfg, tmp_path, timeout_s=0.5, memory_cap_mb=None, env={})
    assert run["status"] == TIMEOUT and run["seconds"] < 20


def test_cli_rejects_an_unknown_engine() -> None:
    r = _selp("bench", "anchors", "--nodes", "10", "--engines", "hadoop", "--out", tempfile.mkdtemp())
    assert r.returncode == 1 and "unknown engine 'hadoop'" in r.stderr and r.stderr.strip().count("\n") == 0, r.stderr


@pytest.mark.parametrize("n", [4, 50])
def test_first_path_fact_is_in_the_closure(n: int, tmp_path: Path) -> None:
    stats = generate_graph(n, tmp_path)
    x, y = (int(v) for v in stats["explain_fact"][5:-1].split(", "))
    assert x != y
    succ: dict[int, set[int]] = {}
    for line in (tmp_path / "db" / "edge.csv").read_text().splitlines()[1:]:
        a, b, _ = line.split(",")
        succ.setdefault(int(a), set()).add(int(b))
    seen, stack = set(), [x]
    while stack:
        for w in succ.get(stack.pop(), ()):
            if w not in seen:
                seen.add(w)
                stack.append(w)
    assert y in seen and x == min(succ)
