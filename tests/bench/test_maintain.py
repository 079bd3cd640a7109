"""``selp bench maintain`` through a real process: every strategy is measured over the same
deletions (the run stops if their views differ), densities are separate rows, the work per
deletion is counted, a capped build is a recorded row and not a crash, and plots are written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers.cli import one_error_line, selp


@pytest.mark.slow
def test_bench_maintain_records_each_density_and_strategy(tmp_path: Path) -> None:
    out = tmp_path / "out"
    r = selp("bench", "maintain", "--workloads", "reachable", "--strategies", "absorption-monomials,dred,recompute",
             "--stub-extra", "0,1", "--deletions", "2", "--out", str(out), "-q")
    assert r.returncode == 0, r.stderr
    rows = json.loads((out / "results.json").read_text())
    deletes = [x for x in rows if x["phase"] == "delete-one"]
    assert {(x["strategy"], x["links"]) for x in deletes} == {(s, n) for s in ("absorption-monomials", "dred", "recompute") for n in (204, 228)}
    for x in deletes:
        assert x["deletions"] == 2 and x["uptime"] and x["status"] == "ok"
    by = {(x["strategy"], x["links"]): x for x in deletes}
    # DRed over-deletes and re-derives; absorption forms no derivation and only restricts formulas
    assert by[("absorption-monomials", 228)]["derivations_per_deletion"] == 0 < by[("dred", 228)]["derivations_per_deletion"]
    assert by[("dred", 228)]["touched_per_deletion"] > 10 * by[("absorption-monomials", 228)]["touched_per_deletion"]
    assert (out / "per-deletion-time.png").stat().st_size > 0


def test_bench_maintain_refuses_a_bad_density(tmp_path: Path) -> None:
    line = one_error_line(selp("bench", "maintain", "--stub-extra", "1,x", "--out", str(tmp_path)))
    assert "--stub-extra" in line and "'1,x'" in line and "integers >= 0" in line


@pytest.mark.slow
def test_bench_maintain_mixed_stream_and_bdd_shipping(tmp_path: Path) -> None:
    out = tmp_path / "out"
    r = selp("bench", "maintain", "--workloads", "reachable", "--strategies", "absorption-bdd,absorption-bdd-bulk,absorption-bdd-expand,dred,minship-lazy-bdd,dred-shipping",
             "--stub-extra", "1", "--deletions", "2", "--mixed", "3", "--no-orders", "--out", str(out), "-q")
    assert r.returncode == 0, r.stderr
    rows = json.loads((out / "results.json").read_text())
    mixed = {x["strategy"]: x for x in rows if x["phase"] == "mixed"}
    assert set(mixed) == {"absorption-bdd", "absorption-bdd-bulk", "absorption-bdd-expand", "dred", "minship-lazy-bdd", "dred-shipping"}
    assert all(x["status"] == "ok" and x["changes"] == 6 for x in mixed.values())
    # restriction on read restricts fewer formulas than the bulk restriction before each insertion
    # (both expanding every new edge, so that they differ only in that)
    assert mixed["absorption-bdd-expand"]["settled_per_change"] < mixed["absorption-bdd-bulk"]["settled_per_change"]
    # new links held unexpanded, their deferred expansion timed after the stream; -expand holds none
    folds = {x["strategy"]: x for x in rows if x["phase"] == "fold-held"}
    assert mixed["absorption-bdd-expand"]["held_edges"] == 0 and "absorption-bdd-expand" not in folds
    assert mixed["absorption-bdd"]["held_edges"] == folds["absorption-bdd"]["held_edges"] > 0 and folds["absorption-bdd"]["status"] == "ok"
    deletes = {x["strategy"]: x for x in rows if x["phase"] == "delete-one"}
    # the BDD form of MinShip ships rows, counted in bytes by node, as DRed does under the same placement
    assert deletes["minship-lazy-bdd"]["shipped_bytes"] > 0 and deletes["dred-shipping"]["shipped_rows"] > 0
