"""``selp maintain --engine spark``: absorption distributed over Spark partitions with MinShip,
as users run it (the view's changes as on one process, the shipping reported)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers.cli import one_error_line, selp

PROGRAM = "datasets/reachable.dl"


LINKS = "src,dst,latency\na,b,1\nb,c,1\nc,b,1\nc,d,1\nd,a,1\n"


def _db(tmp_path: Path) -> Path:
    """A five-link network with two cycles, as the base of the view."""
    (tmp_path / "db").mkdir(parents=True)
    (tmp_path / "db" / "link.csv").write_text(LINKS)
    return tmp_path / "db"


def test_other_strategies_and_non_positive_programs_are_refused_before_spark_starts(tmp_path: Path) -> None:
    db = _db(tmp_path)
    line = one_error_line(selp("maintain", PROGRAM, "--db", str(db), "--engine", "spark", "--strategy", "dred"))
    assert "--strategy absorption only" in line
    prog = tmp_path / "neg.dl"
    prog.write_text(".decl link(src: str, dst: str, latency: int)\nr(x, y) :- link(x, y, _).\noneway(x, y) :- r(x, y), not r(y, x).\n")
    line = one_error_line(selp("maintain", str(prog), "--db", str(db), "--engine", "spark"))
    assert "positive programs only" in line and "oneway uses negation" in line


@pytest.mark.spark
def test_spark_prints_the_same_changes_and_reports_the_shipping(tmp_path: Path) -> None:
    changes = "-link(d, a, 1)\n+link(d, b, 1)\n-link(a, b, 1)\n"
    ref = selp("maintain", PROGRAM, "--db", str(_db(tmp_path / "ref")), "--changes", "-", input=changes)
    assert ref.returncode == 0, ref.stderr
    db = _db(tmp_path / "spark")
    r = selp("maintain", PROGRAM, "--db", str(db), "--engine", "spark", "--master", "local[2]", "--nodes", "3", "--minship", "eager",
             "--changes", "-", "--stats", input=changes[:15])
    assert r.returncode == 0, r.stderr
    info = json.loads(r.stderr[r.stderr.index("{"):])
    assert info["nodes"] == 3 and info["minship"] == "eager" and info["shipped_rows"] > 0 and info["shipped_bytes"] > info["shipped_rows"]
    # the next run loads the distributed state (another MinShip mode is fine, not another form)
    r2 = selp("maintain", PROGRAM, "--db", str(db), "--engine", "spark", "--master", "local[2]", "--nodes", "3", "--changes", "-", "-q",
              input=changes[15:])
    assert r2.returncode == 0, r2.stderr
    assert r.stdout + r2.stdout == ref.stdout
    line = one_error_line(selp("maintain", PROGRAM, "--db", str(db)))
    assert "built with --engine spark" in line and "--reset" in line
