"""``examples/cdss/adapt`` through real processes: exchange, edit cdss.toml (a mapping added),
``selp cdss plan`` (text and JSON), ``exchange --strategy adapt``, and the same instances as
``--strategy recompute`` on a copy; plus the refusals a user can meet."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from helpers.cli import one_error_line, selp
from helpers.paths import EXAMPLES

EXAMPLE = EXAMPLES / "cdss" / "adapt"
FILES = (("PA", "A"), ("PB", "B"), ("PC", "C"))


def run(*args: str | Path) -> str:
    r = selp(*map(str, args))
    assert r.returncode == 0, (args, r.stdout[-1000:], r.stderr[-2000:])
    return r.stdout


def setup(tmp_path: Path) -> Path:
    d = tmp_path / "adapt"
    shutil.copytree(EXAMPLE, d, ignore=shutil.ignore_patterns(".selp"))
    run("cdss", "init", d)
    for peer, rel in FILES:
        run("cdss", "import", d, "--peer", peer, "--relation", rel, d / "data" / peer / f"{rel}.csv")
        run("cdss", "publish", d, "--peer", peer)
    return d


def query(d: Path, relation: str) -> list[str]:
    return run("cdss", "query", d, "--peer", "PT", relation, "--with-nulls", "--format", "csv").splitlines()


def test_example_plan_then_adapt_equals_recompute(tmp_path):
    d = setup(tmp_path)
    first = run("cdss", "exchange", d, "--peer", "PT", "-q", "--strategy", "adapt")
    assert "(epoch 1, recompute, embedded)" in first  # nothing to adapt from yet
    copy = tmp_path / "copy"
    shutil.copytree(d, copy)
    for target in (d, copy):
        shutil.copy(d / "cdss.edited.toml", target / "cdss.toml")
        run("cdss", "edit", target, "--peer", "PA", "+A(350, 7)")  # a data change too: joins B, C 350
        run("cdss", "publish", target, "--peer", "PA")
    text = run("cdss", "plan", d, "-q")
    # the unchanged three-way join is read from the old provenance table, not redone
    assert "P_m1: adapt, estimated cost" in text
    assert "P_m1@new(V0, V1, V2, V3) :- P_m1(V0, V1, V2, V3)." in text
    assert "P_m2: adapt" in text and "T_o: recompute (negation (not T_r))" in text
    plan = json.loads(run("cdss", "plan", d, "-q", "--format", "json"))
    views = {v["relation"]: v for v in plan["views"]}
    assert views["P_m1"]["cost"] < views["P_m1"]["recompute_cost"]
    assert plan["cost"] < plan["recompute_cost"]
    # plan changed nothing: the store still has one epoch
    assert "epoch 2" not in run("cdss", "status", d)
    out = run("cdss", "exchange", d, "--peer", "PT", "-q", "--strategy", "adapt")
    assert "(epoch 2, adapt, embedded)" in out
    run("cdss", "exchange", copy, "--peer", "PT", "-q", "--strategy", "recompute")
    for rel in ("T", "PA.A", "PB.B"):
        assert query(d, rel) == query(copy, rel)
    rows = query(d, "T")
    assert "350,7," in "\n".join(rows)  # the new A tuple, joined through the delta of A
    assert len(rows) > 300  # m2 added the B-C entries without an A


def test_adapt_on_reference_and_errors(tmp_path):
    d = setup(tmp_path)
    run("cdss", "exchange", d, "--peer", "PT", "-q", "--engine", "reference")
    shutil.copy(d / "cdss.edited.toml", d / "cdss.toml")
    out = run("cdss", "exchange", d, "--peer", "PT", "-q", "--strategy", "adapt", "--engine", "reference")
    assert "(epoch 2, adapt, reference)" in out
    # a store without an exchange has nothing to plan from: said in one line, exit 0
    fresh = tmp_path / "fresh"
    shutil.copytree(EXAMPLE, fresh, ignore=shutil.ignore_patterns(".selp"))
    run("cdss", "init", fresh)
    assert run("cdss", "plan", fresh, "-q").strip() == "no earlier exchange to adapt from: the next exchange recomputes"
    one_error_line(selp("cdss", "plan", str(tmp_path / "nowhere")))
