"""Mapping functions beyond the identity and constants: ``SET $z * k`` ([Kar09] Example 9's
``f_m4(x) = 2x``), and the laws checked before evaluation (m(0) = 0; additivity for COUNT and
POLYNOMIAL, where a constant silently miscounts)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from helpers.cdss import cdss_cli, load_running_example, make_cdss, ok
from selp.cli import main

ALL_B = "FOR [B $x] INCLUDE PATH [$x] <-+ [] RETURN $x"
# Example 9: p1 = B(3,5) costs 0, p2 = U(2,5) costs 1, p3 = G(3,5,2) costs 5, f_m4(x) = 2x
EXAMPLE_9 = (
    f"EVALUATE WEIGHT OF {{ {ALL_B} }} "
    "ASSIGNING EACH leaf_node $y { CASE $y in B : SET 0 CASE $y in U : SET 1 CASE $y in G : SET 5 } "
    "ASSIGNING EACH mapping $p($z) { CASE $p = m4 : SET $z * 2 DEFAULT : SET $z }"
)


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    d = make_cdss(tmp_path_factory.mktemp("mf"), trust=False)
    load_running_example(d)
    ok(cdss_cli("exchange", d, "--peer", "PBioSQL", "-q"))
    return d


def query(d, q: str, engine: str = "embedded"):
    return CliRunner().invoke(main, ["proql", str(d), q, "--format", "json", "--engine", engine])


def values(d, q: str, engine: str = "embedded") -> dict:
    res = query(d, q, engine)
    assert res.exit_code == 0, res.output
    return {r["x"]: r["values"]["x"] for r in json.loads(res.stdout)["rows"]}


@pytest.mark.parametrize("engine", ["embedded", "reference", pytest.param("spark", marks=pytest.mark.spark)])
def test_example_9_ranked_costs_with_2x(store, engine, request):
    if engine == "spark":
        request.getfixturevalue("spark")
    got = values(store, EXAMPLE_9, engine)
    # B(3,2) = min(f_m1(p3), f_m4(p1·p2), f_m4(p1·f_m2(p3))) = min(5, 2·1, 2·(0+5)) = 2
    assert got["B(3,2)"] == 2
    # B(3,3) = f_m4(B(3,2)·U(3,2)) = 2·(2 + 5) = 14; B(1,3) = f_m1(G(1,2,3)) = 5
    assert got["B(3,3)"] == 14 and got["B(1,3)"] == 5 and got["B(3,5)"] == 0


def test_scaling_counts_and_polynomials(store):
    plain = values(store, f"EVALUATE COUNT OF {{ {ALL_B} }}")
    tripled = values(store, f"EVALUATE COUNT OF {{ {ALL_B} }} ASSIGNING EACH mapping $p($z) {{ CASE $p = m1 : SET $z * 3 }}")
    assert plain["B(1,3)"] == 1 and tripled["B(1,3)"] == 3  # B(1,3)'s one derivation goes through m1
    poly = values(store, "EVALUATE POLYNOMIAL OF { FOR [B $x] WHERE $x.id = 1 INCLUDE PATH [$x] <-+ [] RETURN $x } "
                         "ASSIGNING EACH mapping $p($z) { CASE $p = m1 : SET $z * 2 }")
    assert poly["B(1,3)"] == "2·G(1,2,3)"


@pytest.mark.parametrize(
    "q, message",
    [
        # the example: a constant under COUNT counts two derivations as one
        (f"EVALUATE COUNT OF {{ {ALL_B} }} ASSIGNING EACH mapping $p($z) {{ CASE $z != 0 : SET 1 }}",
         "is not additive: it gives 1 on 2 but 2 on its parts 1 and 1"),
        (f"EVALUATE COUNT OF {{ {ALL_B} }} ASSIGNING EACH mapping $p($z) {{ CASE $z = 2 : SET 4 DEFAULT : SET $z }}",
         "is not additive: it gives 4 on 2 but 2 on its parts 1 and 1"),
        (f"EVALUATE POLYNOMIAL OF {{ {ALL_B} }} ASSIGNING EACH mapping $p($z) {{ CASE $z != 0 : SET x }}",
         "is not additive"),
        (f"EVALUATE TRUST OF {{ {ALL_B} }} ASSIGNING EACH mapping $p($z) {{ CASE $p = m4 : SET $z * 2 }}",
         "TRUST values cannot be scaled"),
        (f"EVALUATE COUNT OF {{ {ALL_B} }} ASSIGNING EACH mapping $p($z) {{ CASE $p = m4 : SET $z * 1.5 }}",
         "COUNT scales by natural numbers"),
        (f"EVALUATE WEIGHT OF {{ {ALL_B} }} ASSIGNING EACH mapping $p($z) {{ CASE $p = m4 : SET $p * 2 }}",
         "only the mapping's argument can be scaled"),
        (f"EVALUATE WEIGHT OF {{ {ALL_B} }} ASSIGNING EACH mapping $p($z) {{ CASE $p = m4 : SET $z * $z }}",
         "a scaled value is $z * NUMBER"),
    ],
)
def test_laws_are_checked_before_evaluation(store, q, message):
    res = query(store, q)
    assert res.exit_code == 1 and message in res.output and len(res.output.strip().splitlines()) == 1, res.output


def test_idempotent_semirings_accept_constants(store):
    # WEIGHT's + is min: a constant c gives min(c, c) = c, additive; m(inf) must stay inf
    got = values(store, f"EVALUATE WEIGHT OF {{ {ALL_B} }} ASSIGNING EACH mapping $p($z) {{ CASE $z != inf : SET 1 }}")
    assert got["B(1,3)"] == 1
