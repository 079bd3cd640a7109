"""`selp bench DATASET`: rows, columns, ratios, caps, plots and the command line, on tiny scales."""

from __future__ import annotations

import csv
import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.paths import ROOT
from selp.bench.harness import COLUMNS, add_ratios, format_markdown, plot, run_bench, save
from selp.errors import SelpError



def _selp(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "selp", *args], capture_output=True, text=True, cwd=ROOT)


@pytest.fixture(scope="module")
def tc_rows(tmp_path_factory) -> list[dict]:
    work = tmp_path_factory.mktemp("bench") / "data"
    return run_bench("tc", [400, 900], "p10,p11", [1, 3], ["local"], repeat=2, warmup=1, timeout_s=120,
                     memory_cap_mb=4096, workdir=work)


@pytest.mark.slow  # tc_rows: 14 benchmark child processes
def test_every_configuration_has_a_row_with_every_column(tc_rows) -> None:
    # per scale: semi-naive, 2 patterns x 2 k top-k, 2 patterns full provenance (at k=3)
    assert len(tc_rows) == 2 * (1 + 4 + 2)
    for r in tc_rows:
        assert r["status"] == "ok", r
        for key, _ in COLUMNS:
            assert key in r
        assert r["seconds"] > 0 and r["peak_memory_mb"] > 10 and r["repeats"] == 2 and len(r["seconds_all"]) == 2
        assert r["edb_rows"] > 0
    by_scale = {r["scale"]: r["output_tuples"] for r in tc_rows}
    assert by_scale == {400: 400, 900: 900}  # tc sizes are exact: 1 component of 20 and of 30 nodes
    assert {r["mode"] for r in tc_rows} == {"semi-naive", "top-k", "full-provenance"}
    full = [r for r in tc_rows if r["mode"] == "full-provenance"]
    assert all(r["k"] == 3 and r["hyperedges"] > r["output_tuples"] for r in full)
    # both approaches answer the same facts
    for r in full:
        (sel,) = [t for t in tc_rows if (t["mode"], t["scale"], t["pattern"], t["k"]) == ("top-k", r["scale"], r["pattern"], 3)]
        assert sel["answers"] == r["answers"] > 0
        assert sel["instrumented_rules"] == r["instrumented_rules"]


@pytest.mark.slow  # tc_rows: 14 benchmark child processes
def test_ratios_are_consistent_with_seconds(tc_rows) -> None:
    for r in tc_rows:
        (semi,) = [t for t in tc_rows if t["scale"] == r["scale"] and t["mode"] == "semi-naive"]
        assert r["vs_semi_naive"] == round(r["seconds"] / semi["seconds"], 2)
        if r["mode"] == "semi-naive":
            assert r["vs_top1"] is None
        elif r["mode"] == "top-k":
            (one,) = [t for t in tc_rows if (t["scale"], t["mode"], t["pattern"], t["k"]) == (r["scale"], "top-k", r["pattern"], 1)]
            assert r["vs_top1"] == round(r["seconds"] / one["seconds"], 2)
    assert all(r["vs_top1"] is None for r in tc_rows if r["mode"] == "full-provenance")  # only k=3 was run


@pytest.mark.slow  # tc_rows: 14 benchmark child processes
def test_results_files_and_table(tc_rows, tmp_path: Path) -> None:
    paths = save(tc_rows, tmp_path, machine={"nproc": 2}, command="selp bench tc")
    with open(tmp_path / "results.csv", newline="") as fh:
        table = list(csv.reader(fh))
    assert table[0][: len(COLUMNS)] == [k for k, _ in COLUMNS] and len(table) == len(tc_rows) + 1
    doc = json.loads((tmp_path / "results.json").read_text())
    assert doc["machine"]["command"] == "selp bench tc" and len(doc["rows"]) == len(tc_rows)
    assert [p.name for p in paths] == ["results.csv", "results.json"]
    md = format_markdown(tc_rows).splitlines()
    assert md[0].startswith("| dataset | scale | EDB rows | output tuples |") and len(md) == len(tc_rows) + 2


@pytest.mark.slow  # tc_rows: 14 benchmark child processes
def test_plots_are_png_files(tc_rows, tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    paths = plot(tc_rows, tmp_path)
    assert sorted(p.name for p in paths) == ["fig5_tc_reference.png", "fig6_tc_reference.png"]
    for p in paths:
        assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and p.stat().st_size > 5000


def test_time_cap_gives_a_did_not_finish_row_and_larger_scales_are_not_rerun(tmp_path: Path) -> None:
    messages: list[str] = []
    rows = run_bench("tc", [100_000, 120_000], "p10", [3], ["local"], ["full-provenance"], repeat=1, warmup=0,
                     timeout_s=0.5, memory_cap_mb=None, workdir=tmp_path, say=messages.append)
    first, second = rows
    assert first["status"] == "did not finish: time cap" and first.get("seconds") is None
    assert second["status"] == "did not finish: time cap" and "not run" in second["note"]
    assert any("full-provenance p10 k=3 ..." in m for m in messages)  # a start line and an end line
    assert any("did not finish: time cap" in m for m in messages)


def test_memory_cap_gives_a_did_not_finish_row(tmp_path: Path) -> None:
    rows = run_bench("tc", [100_000], "p10", [3], ["local"], ["top-k"], repeat=1, warmup=0, timeout_s=300,
                     memory_cap_mb=60, workdir=tmp_path)
    (row,) = rows
    assert row["status"] == "did not finish: memory cap"
    # the worker is stopped as soon as it passes the cap, and the peak is rounded to 0.1 MiB
    assert row["peak_memory_mb"] >= 60 and row.get("seconds") is None


def test_add_ratios_leaves_failed_rows_without_ratios() -> None:
    rows = [
        {"dataset": "x", "scale": 1, "engine": "local", "mode": "semi-naive", "pattern": None, "k": None, "seconds": 2.0},
        {"dataset": "x", "scale": 1, "engine": "local", "mode": "top-k", "pattern": "p", "k": 1, "seconds": 3.0},
        {"dataset": "x", "scale": 1, "engine": "local", "mode": "top-k", "pattern": "p", "k": 3, "seconds": None},
        {"dataset": "x", "scale": 1, "engine": "spark", "mode": "top-k", "pattern": "p", "k": 3, "seconds": 9.0},
    ]
    add_ratios(rows)
    assert [(r["vs_semi_naive"], r["vs_top1"]) for r in rows] == [(1.0, None), (1.5, 1.0), (None, None), (None, None)]


def test_unknown_pattern_is_an_error() -> None:
    with pytest.raises(SelpError, match="unknown pattern 'p99' for iris"):
        run_bench("iris", [100], "p1,p99", [1], ["local"])


@pytest.mark.parametrize("args,message", [
    (["bench", "nosuch"], "unknown dataset 'nosuch'"),
    (["bench", "iris", "--patterns", "p99"], "unknown pattern 'p99' for iris"),
    (["bench", "tc", "--engine", "hadoop"], "unknown engine 'hadoop'"),
    (["bench", "amie", "-k", "0"], "-k expects integers >= 1"),
])
def test_cli_rejects_bad_names_in_one_line(args: list[str], message: str) -> None:
    r = _selp(*args)
    assert r.returncode == 1
    assert r.stderr.strip().count("\n") == 0 and message in r.stderr, r.stderr


@pytest.mark.slow  # a benchmark child process per configuration (7)
def test_cli_writes_results_and_plots(tmp_path: Path) -> None:
    r = _selp("bench", "iris", "--scales", "300", "--patterns", "p1,p3", "-k", "1,3", "--repeat", "1", "--warmup", "0",
              "--out", str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("| dataset |") and r.stdout.count("| iris ") == 1 + 4 + 2
    assert (tmp_path / "results.csv").is_file() and (tmp_path / "results.json").is_file()
    assert "load average" in r.stderr and "[1/7] iris 300 embedded semi-naive ..." in r.stderr
    doc = json.loads((tmp_path / "results.json").read_text())
    assert doc["machine"]["command"].startswith("selp bench iris --scales 300")
    assert doc["machine"]["loadavg_at_start"] is not None
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        assert "matplotlib is not installed" in r.stderr
    else:
        assert (tmp_path / "fig5_iris_embedded.png").is_file() and (tmp_path / "fig6_iris_embedded.png").is_file()
    # the data is cached under OUT/data
    assert [d.name for d in (tmp_path / "data").iterdir()] == ["iris_s300_seed0"]


def test_no_plots_flag(tmp_path: Path) -> None:
    r = _selp("bench", "tc", "--scales", "100", "--patterns", "p10", "-k", "1", "--modes", "semi-naive,top-k",
              "--repeat", "1", "--warmup", "0", "--out", str(tmp_path), "--no-plots", "-q")
    assert r.returncode == 0, r.stderr
    assert not list(tmp_path.glob("*.png")) and r.stderr == ""


@pytest.mark.spark
def test_spark_rows_for_every_mode(spark, tmp_path: Path) -> None:
    rows = run_bench("tc", [100], "p11", [1], ["reference", "spark"], repeat=1, warmup=0, timeout_s=300,
                     workdir=tmp_path, spark=spark)
    sp = [r for r in rows if r["engine"] == "spark"]
    assert [r["mode"] for r in sp] == ["semi-naive", "top-k", "full-provenance"]
    assert all(r["status"] == "ok" and r["seconds"] > 0 for r in sp), sp
    assert sp[0]["output_tuples"] == 100
    loc = {r["mode"]: r for r in rows if r["engine"] == "reference"}
    assert sp[1]["answers"] == sp[2]["answers"] == loc["top-k"]["answers"] > 0
    assert sp[2]["hyperedges"] == loc["full-provenance"]["hyperedges"]


def _documented_bench_commands() -> list[str]:
    """Every concrete ``selp bench ...`` line of the docs and the recorded runs' scripts
    (placeholders such as DATASET or [--engine ...] left out)."""
    sources = [ROOT / "README.md", *(ROOT / "docs").glob("*.md"), *(ROOT / "datasets").rglob("*.md"),
               *(ROOT / "datasets").rglob("run.sh")]
    found = set()
    for path in sources:
        text = path.read_text(encoding="utf-8")
        # `inline code` (which may wrap), and lines of code blocks and scripts
        spans = re.findall(r"`(selp bench [^`]*)`", text) + re.findall(r"^(?:#\s*)?(selp bench [^`\n]*)", text, re.M)
        for span in spans:
            command = " ".join(span.split("#")[0].split())
            if not re.search(r"DATASET|TOPOLOGY|BASE|\[|\.\.\.|…|\{", command):
                found.add(command)
    return sorted(found)


def test_documented_bench_invocations_are_accepted() -> None:
    # parsed as the command line would be (not run: they are benchmarks)
    from selp.cli import main

    commands = _documented_bench_commands()
    assert len(commands) > 20 and any(c.startswith("selp bench anchors") for c in commands)
    bench = main.commands["bench"]
    for text in commands:
        name, *args = shlex.split(text)[2:]
        assert name in bench.commands, text
        bench.commands[name].make_context(name, args)  # raises on an unknown option or a bad value
