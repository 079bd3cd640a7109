"""Z-relations: the three engines agree with a brute-force bag evaluator on random non-recursive
programs with negated heads; the fragment's errors are located."""

from __future__ import annotations

import pytest
from hypothesis import given, settings

from helpers.zprog import brute_force, z_databases, z_programs
from selp.adapt.zduck import DuckZ
from selp.adapt.zprogram import evaluate, visible
from selp.adapt.zref import ReferenceZ
from selp.errors import ProgramError
from selp.language.parser import parse_program
from selp.language.printer import format_program

FIG3 = """
gene(e) :- bioentry(e), term(26, "gene").
"""


def test_figure_3_counts_on_duckdb() -> None:
    """[GI12] Fig. 3: bioentry' and term' joined give gene' = {88139: 2, 1923501: 2, 1923503: 4}."""
    edb = {"bioentry": {(88139,): 1, (1923501,): 1, (1923503,): 2}, "term": {(26, "gene"): 2, (26, "element"): 1}}
    assert evaluate(DuckZ(), parse_program(FIG3), edb)["gene"] == {(88139,): 2, (1923501,): 2, (1923503,): 4}


def test_negated_head_subtracts_and_only_positive_counts_are_visible() -> None:
    p = parse_program("q(x) :- r(x).\n-q(x) :- s(x).")
    out = evaluate(DuckZ(), p, {"r": {(1,): 2, (2,): 1}, "s": {(1,): 1, (2,): 1, (3,): 1}})["q"]
    assert out == {(1,): 1, (3,): -1}
    assert visible(out) == {(1,): 1}


@settings(max_examples=60, deadline=None)
@given(z_programs(), z_databases())
def test_engines_match_brute_force(program, edb) -> None:
    reparsed = parse_program(format_program(program))  # negated heads print and parse back
    assert reparsed == program
    program = reparsed
    expected = brute_force(program, edb)
    assert evaluate(ReferenceZ(), program, edb) == expected
    assert evaluate(DuckZ(), program, edb) == expected


@pytest.mark.slow  # a minute or two: each view is a Spark job
@settings(max_examples=5, deadline=None)
@given(z_programs(max_views=3), z_databases())
def test_spark_matches_brute_force(spark, program, edb) -> None:
    from selp.adapt.zspark import SparkZ

    assert evaluate(SparkZ(spark), program, edb) == brute_force(program, edb)


@pytest.mark.parametrize(
    "text, message",
    [
        ("q(x) :- r(x).\n-q(x) :- q(x).", "2:2: negated head -q(...) in rule r2: q is recursive"),
        ("q(x) :- r(x).\nq(x) :- q(x).", "2:1: rule r2 makes q recursive"),
        ("q(x) :- r(x), not s(x).", "1:15: rule r1: body negation"),
        ("q(x) :- r(x), x < 3.", "1:15: rule r1: counting (Z) evaluation allows only '=' and '!='"),
        ("-q(1).", "1:1: a fact cannot be negated"),
    ],
)
def test_fragment_errors_are_located(text: str, message: str) -> None:
    with pytest.raises(ProgramError) as err:
        evaluate(ReferenceZ(), parse_program(text, "p.dl"), {})
    assert f"p.dl:{message}" in str(err.value)


def test_set_semantics_engines_refuse_negated_heads(tmp_path) -> None:
    from helpers.cli import selp

    prog = tmp_path / "p.dl"
    prog.write_text("q(x) :- r(x).\n-q(x) :- s(x).\n")
    res = selp("eval", str(prog))
    assert res.returncode != 0
    assert "p.dl:2:2: negated head -q(...) in rule r2 subtracts counts" in res.stderr
    assert "Traceback" not in res.stderr
