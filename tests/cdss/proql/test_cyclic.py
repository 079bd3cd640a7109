"""Cyclic provenance ([Kar09], cyclic provenance graphs): m4 reads B and U and writes B, so B(1,1) and U(1,1) give the
mapping node m4(1,1,1) with input B(1,1) and output B(1,1): B(1,1) = b11 + m4(B(1,1)·U(1,1)).
Worked by hand: the number of derivations is 1 + 1 + 1 + ... = ∞ (COUNT), and so is every tuple
built from it (U(1,f(1)) = m3(B(1,1))); U(1,1) has one. DERIVABILITY/TRUST converge to the least
fixpoint: with b11 distrusted, B(1,1) is supported only by itself and is false."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from selp.cli import main
from helpers.cdss import cdss_cli, load_running_example, make_cdss, ok

ALL = "FOR [B $x] WHERE $x.id = 1 AND $x.nam = 1 INCLUDE PATH [$x] <-+ [] RETURN $x"
NULL = "FOR [U $x] WHERE $x.nam = 1 INCLUDE PATH [$x] <-+ [] RETURN $x"


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    """The cyclic store exchanged by an engine, built once per engine and module."""
    built: dict[str, object] = {}

    def store(engine: str):
        if engine not in built:
            d = make_cdss(tmp_path_factory.mktemp(f"cyclic-{engine}"), trust=False)
            load_running_example(d)
            ok(cdss_cli("edit", d, "--peer", "PBioSQL", "+B(1, 1)"))
            ok(cdss_cli("edit", d, "--peer", "PuBio", "+U(1, 1)"))
            for p in ("PBioSQL", "PuBio"):
                ok(cdss_cli("publish", d, "--peer", p))
            ok(cdss_cli("exchange", d, "--peer", "PBioSQL", "--engine", engine, "-q"))
            built[engine] = d
        return built[engine]

    return store


@pytest.fixture(params=["embedded", "reference", pytest.param("spark", marks=pytest.mark.spark)])
def engine(request):
    if request.param == "spark":
        request.getfixturevalue("spark")  # the session-wide Spark session, reused by the CLI
    return request.param


@pytest.fixture
def cyclic(stores, engine):
    """The store the engine queries: exchanged by that engine (Spark: by the reference engine)."""
    return stores("reference" if engine == "spark" else engine)


def values(d, semiring: str, body: str, assign: str = "", engine: str = "embedded") -> dict:
    q = f"EVALUATE {semiring} OF {{ {body} }} {assign}" if semiring else body
    res = CliRunner().invoke(main, ["proql", str(d), q, "--format", "json", "--engine", engine])
    assert res.exit_code == 0, res.output + res.stderr
    doc = json.loads(res.stdout)
    return {r["x"]: r["values"]["x"] for r in doc["rows"]}


def test_the_graph_has_the_cycle(cyclic, engine):
    res = CliRunner().invoke(main, ["proql", str(cyclic), ALL, "--format", "json", "--engine", engine])
    edges = json.loads(res.stdout)["graph"]["edges"]
    assert ["B(1,1)", "m4(1,1,1)"] in edges and ["m4(1,1,1)", "B(1,1)"] in edges


def test_count_is_infinite_on_the_cycle_and_downstream(cyclic, engine):
    assert values(cyclic, "COUNT", ALL, engine=engine) == {"B(1,1)": "inf"}
    assert values(cyclic, "COUNT", NULL, engine=engine) == {"U(1,1)": 1, "U(1,f_m3_c(1))": "inf"}
    # cutting the cycle with m4 -> 0 leaves the local derivation only
    assert values(cyclic, "COUNT", ALL, "ASSIGNING EACH mapping $p($z) { CASE $p = m4 : SET 0 }", engine=engine) == {"B(1,1)": 1}


def test_polynomial_reports_an_infinite_series(cyclic, engine):
    v = values(cyclic, "", ALL, engine=engine)["B(1,1)"]
    assert v.startswith("B(1,1) + ") and v.endswith("+ … (infinite series: cyclic provenance)")
    assert "m4(B(1,1)·U(1,1))" in v


def test_derivability_and_trust_converge_to_the_least_fixpoint(cyclic, engine):
    assert values(cyclic, "DERIVABILITY", ALL, engine=engine) == {"B(1,1)": True}
    distrust_b = "ASSIGNING EACH leaf_node $y { CASE $y in B : SET false }"
    assert values(cyclic, "TRUST", ALL, distrust_b, engine=engine) == {"B(1,1)": False}  # only itself supports it
    assert values(cyclic, "TRUST", NULL, distrust_b, engine=engine) == {"U(1,1)": True, "U(1,f_m3_c(1))": False}
    assert values(cyclic, "WEIGHT", ALL, "ASSIGNING EACH leaf_node $y { CASE $y in B : SET 3 DEFAULT : SET 1 }", engine=engine) == {"B(1,1)": 3}
    assert values(cyclic, "LINEAGE", ALL, engine=engine) == {"B(1,1)": ["B(1,1)", "U(1,1)"]}
