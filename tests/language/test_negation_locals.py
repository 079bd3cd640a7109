"""Variables local to a negated atom ("there is no y with r(x, y, y)") on every engine, through
instrumentation, NOT patterns and top-k."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers.randprog import naive_fixpoint
from selp.engines.registry import get_engine
from selp.instrument.instrument import instrument
from selp.language import parse_program
from selp.language.pattern_parser import parse_pattern
from selp.language.printer import format_program
from selp.language.validate import analyze
from selp.topk.api import topk

PROGRAM = """\
.decl q(a: int)
.decl r(a: int, b: int, c: int)
p(x) :- q(x), not r(x, y, y).
s(x) :- q(x), not r(x, y, _).
t(x) :- q(x), not r(y, y, y).
"""
EDB = {"q": {(1,), (2,), (3,), (4,)}, "r": {(1, 5, 5), (2, 5, 6), (3, 7, 7)}}
EXPECTED = {"p": {(2,), (4,)}, "s": {(4,)}, "t": {(1,), (2,), (3,), (4,)}}


@pytest.mark.parametrize("engine", ["reference", "embedded"])
def test_a_repeated_local_variable_asks_for_equal_values(engine: str) -> None:
    analysis = analyze(parse_program(PROGRAM))
    assert get_engine(engine).evaluate(analysis, EDB) == EXPECTED == naive_fixpoint(analysis, EDB)
    with_ttt = {**EDB, "r": EDB["r"] | {(9, 9, 9)}}
    assert get_engine(engine).evaluate(analysis, with_ttt)["t"] == set()


TC = """\
.decl e(a: int, b: int)
.decl r(a: int, b: int, c: int)
tc(x, y) :- e(x, y), not r(x, z, z).
tc(x, y) :- tc(x, z), e(z, y), not r(y, w, w).
"""


def test_instrumented_copies_keep_the_local_variables_local() -> None:
    analysis = analyze(parse_program(TC))
    inst = instrument(analysis, parse_pattern("NOT tc(*, *) // e(1, *)"))
    text = format_program(inst.program)
    reparsed = analyze(parse_program(text))  # still safe: every copy keeps z and w local
    for rule in reparsed.program.rules:
        for atom in rule.negative_atoms:
            assert rule.negation_locals(atom) == {v for v in atom.vars() if v.name in ("z", "w")}


@pytest.mark.parametrize("engine", ["reference", "embedded"])
def test_topk_with_a_not_pattern_over_negation_local_variables(tmp_path: Path, engine: str) -> None:
    (tmp_path / "e.csv").write_text("a,b\n1,2\n2,3\n3,4\n1,3\n")
    (tmp_path / "r.csv").write_text("a,b,c\n3,7,7\n")  # no tc step may end in 3
    analysis = analyze(parse_program(TC))
    answers = topk(analysis, str(tmp_path), "NOT tc(*, *) // e(1, *)", k=2, engine=engine).answers()
    # r(3, 7, 7) keeps 3 from starting a path (rule 1) and from being reached by a step (rule 2)
    edb = {"e": {(1, 2), (2, 3), (3, 4), (1, 3)}, "r": {(3, 7, 7)}}
    assert naive_fixpoint(analysis, edb)["tc"] == {(1, 2), (2, 3), (1, 3), (2, 4), (1, 4)}
    # every tree of tc(1, _) starts with e(1, _); tc(2, 4) goes through e(2, 3), e(3, 4)
    assert sorted(k for k in answers if k[0] == "tc") == [("tc", (2, 3)), ("tc", (2, 4))]


@pytest.mark.spark
def test_spark_agrees_on_negation_local_variables(spark) -> None:
    analysis = analyze(parse_program(PROGRAM))
    assert get_engine("spark").evaluate(analysis, EDB, spark=spark) == EXPECTED
