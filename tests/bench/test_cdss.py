"""The SWISS-PROT-like CDSS generator, ``selp bench cdss`` and the ranked-trust threshold report.

Threshold numbers by hand (the bio example, PBioSQL's costs: own data 0, PuBio 1, PGUS 5, m4 +2;
threshold 10): B(3,2) costs 3 through m4 from B(3,5), U(2,5) (0 + 1 + 2), and m4's step is
Boolean-trusted (nam = 2), so it is within the threshold. B(1,3) comes only through m1 from PGUS
with nam >= 3: Boolean-distrusted whatever its cost (5). B(3,3) comes only through m4 with
nam != 2: distrusted, cost 10 (B(3,2) 3 + U(3,2) 5 + m4 2).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from selp.bench.cdss import COLUMNS, NOT_RUN, TIME_CAP, bench_cdss, plan
from selp.cdss.acyclicity import special_cycle
from selp.cdss.config import load_cdss
from selp.cdss.store import Store
from selp.cli import main
from selp.gen.swissprot import UNIVERSAL, generate, generate_cdss
from helpers.cdss import cdss_cli, load_running_example, make_cdss, ok, one_line_error

IN_PROCESS = ["embedded", "reference"]  # the default engine and the oracle: the same answers


def _files(d: Path) -> dict[str, bytes]:
    return {str(p.relative_to(d)): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()}


def test_generator_is_deterministic_per_seed(tmp_path):
    a = generate_cdss(tmp_path / "a", 6, 10, "1-3", "random", seed=4)
    b = generate_cdss(tmp_path / "b", 6, 10, "1-3", "random", seed=4)
    c = generate_cdss(tmp_path / "c", 6, 10, "1-3", "random", seed=5)
    assert a == b
    assert _files(tmp_path / "a") == _files(tmp_path / "b")
    assert _files(tmp_path / "a") != _files(tmp_path / "c")


@pytest.mark.parametrize("topology", ["chain", "tree", "random"])
def test_generated_cdss_is_weakly_acyclic_and_shaped_like_swissprot(tmp_path, topology):
    stats = generate_cdss(tmp_path, 12, 5, "1-3", topology, seed=1)
    c = load_cdss(tmp_path)  # checks weak acyclicity, arities, keys
    assert special_cycle(c.mappings) is None
    assert len(c.peers) == 12 and stats["mappings"] == len(c.mappings)
    assert 11 <= len(c.mappings) <= 33  # fan-in 1..3 over n - 1 non-root peers
    assert any(m.existentials for m in c.mappings)
    for r in c.relations():
        assert r.attribute_names[0] == "ac" and r.key == ("ac",)
        assert set(r.attribute_names) <= set(UNIVERSAL)
    # every peer's relations partition its attributes (the key aside)
    for p in c.peers:
        attrs = [a for r in p.relations for a in r.attribute_names[1:]]
        assert len(attrs) == len(set(attrs))
    # the CLI writes the same directory
    res = CliRunner().invoke(main, ["gen", "cdss", "--peers", "12", "--base-size", "5", "--fanout", "1-3", "--topology", topology, "--seed", "1", "--out", str(tmp_path / "cli")])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout) == stats
    assert (tmp_path / "cli" / "cdss.toml").read_bytes() == (tmp_path / "cdss.toml").read_bytes()


def test_gen_cdss_bad_fanout_is_one_line():
    res = CliRunner().invoke(main, ["gen", "cdss", "--peers", "3", "--base-size", "2", "--fanout", "3-1", "--out", "/nonexistent/x"])
    one_line_error(res, "--fanout", "3-1")


def _exchange_state(tmp_path: Path, name: str, strategy: str, engine: str) -> dict:
    d = tmp_path / name
    g = generate(4, 6, "1-2", "random", seed=2)
    g.write(d)
    ok(cdss_cli("init", d))
    for p, rels in enumerate(g.relations):
        for r in rels:
            ok(cdss_cli("import", d, "--peer", f"P{p}", "--relation", r.name, d / "data" / f"P{p}" / f"{r.name}.csv"))
        ok(cdss_cli("publish", d, "--peer", f"P{p}"))
    ok(cdss_cli("exchange", d, "--peer", "P3", "--engine", engine, "--strategy", strategy, "--quiet"))
    with Store.open(d) as s:
        return s.read_epoch(s.peer_epoch("P3"))


@pytest.mark.parametrize("engine", IN_PROCESS)
def test_generated_cdss_exchanges_to_the_same_state_with_every_strategy(tmp_path, engine):
    states = {s: _exchange_state(tmp_path, s, s, engine) for s in ("recompute", "provenance", "dred")}
    assert states["recompute"] == states["provenance"] == states["dred"]
    assert sum(len(v) for k, v in states["recompute"].items() if k.startswith("P_")) > 0


@pytest.mark.parametrize("engine", IN_PROCESS)
def test_bench_rows_and_columns_at_tiny_size(tmp_path, engine):
    rows = bench_cdss([2, 3], [5], [0.2, 0.5], timeout_s=60, engine=engine)
    steps = plan(["provenance", "dred", "recompute"], [0.2, 0.5], 0.1)
    assert len(steps) == 3 + 3 + 6
    assert len(rows) == 2 * len(steps)
    assert [(r["op"], r["fraction"], r["strategy"]) for r in rows[: len(steps)]] == steps
    for r in rows:
        assert r["status"] == "ok" and r["ok"] is True and r["engine"] == engine, r
        assert set(COLUMNS) <= set(r)
        assert r["provenance"] > 0 and 0 < r["prov_share"] < 1
    out = tmp_path / "out"
    res = CliRunner().invoke(main, ["bench", "cdss", "--peers", "2", "--scales", "5", "--fractions", "0.5", "--out", str(out), "-q"])
    assert res.exit_code == 0, res.output
    assert res.stdout.splitlines()[0] == "| " + " | ".join(COLUMNS) + " |"
    assert len(res.stdout.splitlines()) == 2 + 3 + 3 + 3
    doc = json.loads((out / "results.json").read_text())
    assert len(doc["rows"]) == 9 and doc["machine"]["parameters"]["peers"] == [2]
    assert (out / "results.csv").read_text().splitlines()[0] == ",".join(COLUMNS)


def test_bench_time_cap_is_did_not_finish(tmp_path):
    rows = bench_cdss([3], [50], [0.5], timeout_s=1e-6)
    assert rows[0]["status"] == TIME_CAP
    assert {r["status"] for r in rows[1:]} == {NOT_RUN}
    assert len(rows) == 9


def test_trust_report_bio_threshold(tmp_path):
    from selp.cdss.trust_report import trust_report

    d = make_cdss(tmp_path)
    load_running_example(d)
    with Store.open(d) as s:
        rep = trust_report(s, "PBioSQL")
    assert rep["threshold"] == 10
    got = {t["args"]: (t["cost"], t["trusted"], t["trusted_cost"], t["within_threshold"]) for t in rep["tuples"]}
    assert got == {(3, 2): (3, True, 3, True), (1, 3): (5, False, None, False), (3, 3): (10, False, None, False)}
    out = ok(cdss_cli("trust", d, "--peer", "PBioSQL"))
    assert out.splitlines()[0] == "PBioSQL: 3 imported tuple(s), publication 3, threshold 10 (enforced by exchange)"
    assert re.search(r"B\(3, 2\) +cost 3  trusted cost 3  within threshold", out)
    assert re.search(r"B\(1, 3\) +cost 5  trusted cost -  distrusted", out)


def test_trust_report_above_threshold(tmp_path):
    d = make_cdss(tmp_path)
    toml = d / "cdss.toml"
    toml.write_text(toml.read_text().replace("threshold = 10", "threshold = 2"))
    load_running_example(d)
    out = ok(cdss_cli("trust", d, "--peer", "PBioSQL"))
    assert re.search(r"B\(3, 2\) +cost 3  trusted cost 3  above threshold", out)
    data = json.loads(ok(cdss_cli("trust", d, "--peer", "PBioSQL", "--format", "json")))
    assert {tuple(t["args"]): t["within_threshold"] for t in data["tuples"]}[(3, 2)] is False
    one_line_error(cdss_cli("trust", d, "--peer", "Nope"), "unknown peer")


@pytest.mark.spark
def test_bench_on_spark_agrees_with_local_recomputation():
    """--engine spark: every run through apply_changes_spark, its result checked against the local
    engine's recomputation (``ok``), in a spawned child with its own Spark session."""
    rows = bench_cdss([2], [6], [0.5], engine="spark", timeout_s=900)
    assert [(r["op"], r["strategy"]) for r in rows] == [(op, s) for op, _, s in plan(["provenance", "dred", "recompute"], [0.5], 0.1)]
    assert {r["engine"] for r in rows} == {"spark"}
    assert all(r["status"] == "ok" and r["ok"] is True for r in rows), rows
    assert rows[0]["instance"] > 0 and rows[0]["provenance"] > 0
