"""Ranked trust enforced at exchange: the capped min-cost fixpoint (selp.cdss.ranked).

The CDSS below, costs by hand. PA has R, PD has Q, PB has S, PC has T (one int attribute each);
m1: R(k) -> S(k), m2: Q(k) -> S(k), m3: S(k) -> T(k). Local data: R(1), Q(2), S(3).

PB (threshold 5) costs PA's data 2, PD's 7, each of m1, m2 1, its own 0:
  S(1) = R(1) 2 + m1 1 = 3  accepted;  S(2) = Q(2) 7 + m2 1 = 8  above 5: S_x = {2}.
PC (threshold 100) costs PA's and PD's data 0, PB's 1, m3 10:
  T(1) = S(1) [PC's view: R(1) 0 + m1 0] + m3 10 = 10;  T(3) = S(3) 1 + 10 = 11.
  T(2) would cost PC 10 (Q(2) 0 + m3 10), well within 100 -- but S(2) is not in PB's instance,
  so no derivation of T(2) exists over the accepted tuples: T(2) is NOT in PC's instance (a
  post-filter on the Boolean fixpoint would have let it in).

Insert R(2) (PA): S(2) = min(R(2) 2 + 1, 8) = 3, accepted; T(2) = 10 enters PC.
Delete R(2) again: S(2) still has a Boolean derivation (through m2) but its cost rises back to
8: rejected again, and T(2) leaves PC -- an incremental strategy that only tracked Boolean
derivability would keep both.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from selp.cdss.trust_report import trust_report
from selp.cdss.exchange import exchange
from selp.cdss.store import Store
from helpers.cdss import cdss_cli, instance, ok
from selp.cdss import ranked_duck

IN_PROCESS = ["embedded", "reference"]  # the default engine and the oracle: the same answers


@pytest.fixture(autouse=True)
def in_duckdb(monkeypatch):
    """The embedded engine computes ranked trust in DuckDB here: these stores are small enough
    for it to take the Python fixpoint otherwise (``SMALL_BASE``), which the oracle covers."""
    monkeypatch.setattr(ranked_duck, "SMALL_BASE", 0)

TOML = """
name = "ranked"
mappings = ["m1: R(k) -> S(k)", "m2: Q(k) -> S(k)", "m3: S(k) -> T(k)"]

[peers.PA.relations.R]
attributes = ["k: int"]
key = ["k"]

[peers.PD.relations.Q]
attributes = ["k: int"]
key = ["k"]

[peers.PB.relations.S]
attributes = ["k: int"]
key = ["k"]

[peers.PB.costs]
peers = { PA = 2, PD = 7 }
mappings = { m1 = 1, m2 = 1 }
threshold = 5

[peers.PC.relations.T]
attributes = ["k: int"]
key = ["k"]

[peers.PC.costs]
peers = { PA = 0, PD = 0, PB = 1 }
mappings = { m3 = 10 }
threshold = 100
"""


def make(tmp_path: Path) -> Path:
    d = tmp_path / "ranked"
    d.mkdir()
    (d / "cdss.toml").write_text(TOML)
    ok(cdss_cli("init", d))
    for peer, edit in (("PA", "+R(1)"), ("PD", "+Q(2)"), ("PB", "+S(3)")):
        ok(cdss_cli("edit", d, "--peer", peer, edit))
        ok(cdss_cli("publish", d, "--peer", peer))
    return d


def edit(d: Path, peer: str, e: str) -> None:
    ok(cdss_cli("edit", d, "--peer", peer, e))
    ok(cdss_cli("publish", d, "--peer", peer))


def run(d: Path, engine: str, strategy: str, spark=None) -> list[str]:
    said: list[str] = []
    with Store.open(d) as s:
        exchange(s, "PC", engine, strategy, spark=spark, say=said.append)
    return said


def ks(d: Path, rel: str) -> set[int]:
    return {r[0] for r in instance(d, "PC", rel)}


def assert_initial(d: Path) -> None:
    assert ks(d, "S_o") == {1, 3}
    assert ks(d, "S_x") == {2}
    assert ks(d, "S_t") == {1, 2}  # both Boolean-trusted; the threshold gates S_o only
    assert ks(d, "T_o") == {1, 3}  # not 2: S(2) never reached PB's instance
    assert ks(d, "T_i") == {1, 3}
    assert ks(d, "T_x") == set()


def assert_after_insert(d: Path) -> None:
    assert ks(d, "S_o") == {1, 2, 3}
    assert ks(d, "S_x") == set()
    assert ks(d, "T_o") == {1, 2, 3}


@pytest.mark.parametrize("engine", IN_PROCESS)
def test_threshold_is_a_capped_fixpoint_not_a_post_filter(tmp_path, engine):
    d = make(tmp_path)
    said = run(d, engine, "recompute")
    assert_initial(d)
    assert any("1 import(s) above the threshold" in line for line in said), said
    with Store.open(d) as s:
        pb = {t["args"]: t for t in trust_report(s, "PB", engine)["tuples"]}
        pc = {t["args"]: t for t in trust_report(s, "PC", engine)["tuples"]}
    assert {k: (t["trusted_cost"], t["within_threshold"]) for k, t in pb.items()} == {(1,): (3, True), (2,): (8, False)}
    assert {k: (t["trusted_cost"], t["within_threshold"]) for k, t in pc.items()} == {(1,): (10, True), (3,): (11, True)}
    # the report's verdicts are what exchange kept
    assert {k[0] for k, t in pb.items() if t["within_threshold"]} | {3} == ks(d, "S_o")
    assert {k[0] for k, t in pc.items() if t["within_threshold"]} == ks(d, "T_o")
    out = ok(cdss_cli("trust", d, "--peer", "PB", "--engine", engine))
    assert "threshold 5 (enforced by exchange)" in out.splitlines()[0]
    assert "S(2)" in out and "trusted cost 8  above threshold" in out


@pytest.mark.parametrize("strategy", ["provenance", "dred", "recompute"])
@pytest.mark.parametrize("engine", IN_PROCESS)
def test_threshold_under_incremental_insertion_and_deletion(tmp_path, strategy, engine):
    d = make(tmp_path)
    run(d, engine, strategy)
    assert_initial(d)
    edit(d, "PA", "+R(2)")
    said = run(d, engine, strategy)
    assert_after_insert(d)
    place = {"embedded": "in DuckDB", "reference": "in Python"}[engine]  # exchange says where it ran
    assert any(f"costs recomputed in full from the base data {place}, " in line for line in said), said
    edit(d, "PA", "-R(2)")
    run(d, engine, strategy)
    assert_initial(d)  # S(2)'s cost rose back above 5: out of PB's instance, T(2) out of PC's


@pytest.mark.parametrize("engine", IN_PROCESS)
def test_least_fixpoint_a_cycle_does_not_support_itself(tmp_path, engine):
    """PX trusts PS2's data (cost 0) but not PS1's (9); PY the other way round. X(1) comes from
    A(1) at PS1 or from Y(1); Y(1) from B(1) at PS2 or from X(1). Each is cheap for its owner
    only through the other: PX's cost of X(1) through Y(1) <- B(1) is 0, PY's of Y(1) through
    X(1) <- A(1) is 0, so accepting both would be self-consistent. From the local data alone
    each costs its owner 9 (> 5): the least fixpoint accepts neither."""
    d = tmp_path / "cycle"
    d.mkdir()
    (d / "cdss.toml").write_text(
        """
mappings = ["a: A(k) -> X(k)", "b: B(k) -> Y(k)", "xy: X(k) -> Y(k)", "yx: Y(k) -> X(k)"]
[peers.PS1.relations.A]
attributes = ["k: int"]
key = ["k"]
[peers.PS2.relations.B]
attributes = ["k: int"]
key = ["k"]
[peers.PX.relations.X]
attributes = ["k: int"]
key = ["k"]
[peers.PX.costs]
peers = { PS1 = 9, PS2 = 0 }
threshold = 5
[peers.PY.relations.Y]
attributes = ["k: int"]
key = ["k"]
[peers.PY.costs]
peers = { PS1 = 0, PS2 = 9 }
threshold = 5
"""
    )
    ok(cdss_cli("init", d))
    for peer, e in (("PS1", "+A(1)"), ("PS2", "+B(1)")):
        ok(cdss_cli("edit", d, "--peer", peer, e))
        ok(cdss_cli("publish", d, "--peer", peer))
    with Store.open(d) as s:
        exchange(s, "PX", engine, "recompute")
    assert instance(d, "PX", "X_o") == set() and instance(d, "PX", "Y_o") == set()
    assert instance(d, "PX", "X_x") == {(1,)} and instance(d, "PX", "Y_x") == {(1,)}
    # with B(1) made cheap for PY too, Y(1) is accepted (9 -> 0), and then X(1) through it
    toml = d / "cdss.toml"
    toml.write_text(toml.read_text().replace("PS1 = 0, PS2 = 9", "PS1 = 0, PS2 = 0"))
    with Store.open(d) as s:
        exchange(s, "PX", engine, "recompute")
        assert {t["args"]: t["trusted_cost"] for t in trust_report(s, "PX", engine)["tuples"]} == {(1,): 0}
    assert instance(d, "PX", "X_o") == {(1,)} and instance(d, "PX", "Y_o") == {(1,)}


@pytest.mark.spark
def test_threshold_on_spark_agrees_with_the_hand_numbers(tmp_path, spark):
    """On Spark itself (ranked_spark): the base data are over spark.selp.rankedTrust.driverRows
    = 0, so the fixpoint does not run on the driver."""
    from selp.cdss.ranked_duck import DRIVER_ROWS_CONF

    d = make(tmp_path)
    spark.conf.set(DRIVER_ROWS_CONF, "0")
    try:
        said = run(d, "spark", "recompute", spark)
        assert any("from the base data on Spark, " in line for line in said), said
        assert_initial(d)
        edit(d, "PA", "+R(2)")
        run(d, "spark", "provenance", spark)
        assert_after_insert(d)
        edit(d, "PA", "-R(2)")
        run(d, "spark", "provenance", spark)
        assert_initial(d)
    finally:
        spark.conf.unset(DRIVER_ROWS_CONF)


@pytest.mark.parametrize("engine", IN_PROCESS)
def test_selp_cdss_eval_enforces_the_threshold_too(tmp_path, engine):
    from selp.cdss.config import load_cdss
    from selp.cdss.evaluate import evaluate_cdss

    d = tmp_path / "files"
    d.mkdir()
    (d / "cdss.toml").write_text(TOML)
    for peer, rel, k in (("PA", "R", 1), ("PD", "Q", 2), ("PB", "S", 3)):
        (d / "data" / peer).mkdir(parents=True)
        (d / "data" / peer / f"{rel}.csv").write_text(f"k\n{k}\n")
    res = evaluate_cdss(load_cdss(d), d / "data", engine)
    try:
        assert res.instance("PB", "S") == {(1,), (3,)}
        assert res.instance("PC", "T") == {(1,), (3,)}
    finally:
        res.close()
    out = ok(cdss_cli("eval", d, "--engine", engine, "--relation", "T"))
    assert "2 tuple(s)" in out and "T(1)" in out and "T(3)" in out and "T(2)" not in out, out


def example9(tmp_path: Path) -> Path:
    """The bio example ([Kar09] §4.8, Example 9) with m4's mapping function ``f_m4(x) = 2x`` and
    threshold 2, its local data published through real ``selp cdss`` processes. PBioSQL costs
    its own data 0, PuBio's 1, PGUS's 5; B(3, 2) = min(f_id(5), f_m4(0 + 1), f_m4(0 + f_id(5)))
    = min(5, 2, 10) = 2: within the threshold. With m4 an additive cost 2 it would cost 3 and be
    rejected, so the threshold check sees the function too."""
    import shutil

    from helpers.paths import BIO

    d = tmp_path / "bio"
    shutil.copytree(BIO, d)
    toml = (d / "cdss.toml").read_text()
    assert "mappings = { m4 = 2 }\nthreshold = 10" in toml
    (d / "cdss.toml").write_text(toml.replace("mappings = { m4 = 2 }\nthreshold = 10", 'mappings = { m4 = "2x" }\nthreshold = 2'))
    publish_bio(d)
    return d


def publish_bio(d: Path) -> None:
    """The bio example's local data (and PuBio's U(2, 5)) recorded and published by every peer."""
    for args in (
        ("init",),
        ("import", "--peer", "PGUS", "--relation", "G", str(d / "data" / "PGUS" / "G.csv")),
        ("import", "--peer", "PBioSQL", "--relation", "B", str(d / "data" / "PBioSQL" / "B.csv")),
        ("edit", "--peer", "PuBio", "+U(2, 5)"),
        ("publish", "--peer", "PGUS"),
        ("publish", "--peer", "PuBio"),
        ("publish", "--peer", "PBioSQL"),
    ):
        selp_process(d, *args)


def selp_process(d: Path, command: str, *args: str) -> str:
    """``selp cdss COMMAND d ARGS`` as a real process; its standard output."""
    import subprocess
    import sys

    res = subprocess.run([sys.executable, "-m", "selp", "cdss", command, str(d), *args], capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr
    return res.stdout


def test_example9_mapping_function_2x_through_the_cli(tmp_path):
    d = example9(tmp_path)
    selp_process(d, "exchange", "--peer", "PBioSQL", "-q")
    assert (3, 2) in instance(d, "PBioSQL", "B_o")
    assert instance(d, "PBioSQL", "B_x") == set()
    report = selp_process(d, "trust", "--peer", "PBioSQL")
    line = next(x for x in report.splitlines() if "B(3, 2)" in x)
    assert line.split() == ["B(3,", "2)", "cost", "2", "trusted", "cost", "2", "within", "threshold"], report
    explained = selp_process(d, "explain", "--peer", "PBioSQL", "B(3, 2)", "-k", "3")
    costs = [x.split()[2] for x in explained.splitlines() if x.strip().startswith("#")]
    assert costs == ["2", "5", "10"], explained  # min(5, 2 * 1, 2 * 5) = 2, as in the dissertation


@pytest.mark.spark
def test_example9_mapping_function_on_spark(tmp_path, spark):
    # a few base tuples: the fixpoint runs in DuckDB on the driver (spark.selp.rankedTrust.driverRows)
    d = example9(tmp_path)
    with Store.open(d) as s:
        exchange(s, "PBioSQL", "spark", "recompute", spark=spark)
    assert (3, 2) in instance(d, "PBioSQL", "B_o")
    assert instance(d, "PBioSQL", "B_x") == set()


def ancestry_bio(tmp_path: Path, only_from: str) -> Path:
    """The bio example without its costs and last-step trust rules, PBioSQL trusting tuples by
    their ancestry only (``trust_only_from``), published through real processes."""
    import re
    import shutil

    from helpers.paths import BIO

    d = tmp_path / "anc"
    shutil.copytree(BIO, d)
    toml = (d / "cdss.toml").read_text()
    start, end = toml.index("[[peers.PBioSQL.trust]]"), toml.index("[peers.PuBio]")
    toml = toml[:start] + toml[end:]
    toml, n = re.subn(r"^\[peers\.PBioSQL\]$", f"[peers.PBioSQL]\ntrust_only_from = {only_from}", toml, flags=re.M)
    assert n == 1
    (d / "cdss.toml").write_text(toml)
    publish_bio(d)
    return d


def test_trust_only_from_is_enforced_at_exchange_by_ancestry(tmp_path):
    # only PuBio (and PBioSQL itself): B(3, 2) has the all-trusted derivation m4(B(3, 5), U(2, 5));
    # B(1, 3) and B(3, 3) derive only from PGUS's G tuples, at any depth: rejected at exchange
    d = ancestry_bio(tmp_path, '["PuBio"]')
    selp_process(d, "exchange", "--peer", "PBioSQL", "-q")
    assert instance(d, "PBioSQL", "B_o") == {(3, 2), (3, 5)}
    assert instance(d, "PBioSQL", "B_x") == {(1, 3), (3, 3)}


def test_trust_only_from_the_last_step_peer_is_not_enough(tmp_path):
    # only PGUS: B(1, 3) = m1(G(1, 2, 3)) is all PGUS; B(3, 3) = m4(B(3, 5), U(3, 5)) with U(3, 5)
    # from G via m2 -- every leaf PGUS's or PBioSQL's own, so it is accepted too, while the
    # last-step reading of from = ["PGUS"] would not match m4 (its body reads PBioSQL, PuBio)
    d = ancestry_bio(tmp_path, '["PGUS"]')
    selp_process(d, "exchange", "--peer", "PBioSQL", "-q")
    assert instance(d, "PBioSQL", "B_o") == {(1, 3), (3, 2), (3, 3), (3, 5)}
    assert instance(d, "PBioSQL", "B_x") == set()


def test_trust_only_from_bad_values_are_located(tmp_path):
    d = ancestry_bio(tmp_path, '["PuBio"]')
    toml = (d / "cdss.toml").read_text()
    (d / "cdss.toml").write_text(toml.replace('trust_only_from = ["PuBio"]', 'trust_only_from = ["PNope"]'))
    line = (d / "cdss.toml").read_text().splitlines().index('trust_only_from = ["PNope"]') + 1
    import subprocess
    import sys

    res = subprocess.run([sys.executable, "-m", "selp", "cdss", "check", str(d)], capture_output=True, text=True)
    assert res.returncode != 0 and res.stderr.count("\n") == 1, res.stderr
    assert f"cdss.toml:{line}:" in res.stderr and "unknown peer 'PNope' in trust_only_from" in res.stderr, res.stderr


def test_a_small_store_ranks_in_python_with_the_same_answers(tmp_path, monkeypatch):
    # below SMALL_BASE base tuples the embedded engine runs the Python fixpoint (faster there);
    # exchange says so, and the instances are those DuckDB's fixpoint gives
    monkeypatch.setattr(ranked_duck, "SMALL_BASE", 1_000)
    (tmp_path / "small").mkdir(), (tmp_path / "duck").mkdir()
    small, duck = make(tmp_path / "small"), make(tmp_path / "duck")
    said = run(small, "embedded", "recompute")
    assert any("ranked trust" in line and "in Python (a small store)" in line for line in said), said
    monkeypatch.setattr(ranked_duck, "SMALL_BASE", 0)
    said = run(duck, "embedded", "recompute")
    assert any("ranked trust" in line and "in DuckDB" in line for line in said), said
    for rel in ("S_o", "S_x", "S_t", "T_o", "T_i", "T_x"):
        assert ks(small, rel) == ks(duck, rel)
    assert_initial(small)
