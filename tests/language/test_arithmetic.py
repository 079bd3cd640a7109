"""Arithmetic and float columns: the same answers on every engine, one located line for every
error (type, overflow, division by zero), and instrumentation and top-k over expressions."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from selp.arith import ArithmeticFault, apply
from selp.engines.registry import get_engine
from selp.errors import EvalError
from selp.language import parse_program
from selp.language.validate import analyze
from selp.topk.api import topk
from helpers.cli import selp

PROGRAM = """\
.decl q(a: int, b: int)
.decl m(n: str, v: float)
p(x, x + y * 2, (x - y) / 2, -x) :- q(x, y).
s(x, c) :- q(x, y), c = x * 1.5 - y, c > 0.
t(n, v / 3.0, (v + v) / 2.0) :- m(n, v).
u(x) :- q(x, y), x + 0.5 > y.
cnt(0) :- q(_, _).
cnt(c + 1) :- cnt(c), c < 5.
"""
Q = {(1, 2), (7, -3), (-7, 2)}
M = {("x", 1.5), ("y", 0.0), ("z", 1e20), ("w", 2.0)}
EXPECTED = {
    "p": {(1, 5, 0, -1), (7, 1, 5, -7), (-7, -3, -4, 7)},  # -9 / 2 truncates to -4
    "s": {(7, 13.5)},
    "t": {("x", 0.5, 1.5), ("y", 0.0, 0.0), ("z", 1e20 / 3.0, 1e20), ("w", 2.0 / 3.0, 2.0)},
    "u": {(7,)},
    "cnt": {(0,), (1,), (2,), (3,), (4,), (5,)},
}


def _write_db(d: Path) -> Path:
    with open(d / "q.csv", "w", newline="") as fh:
        csv.writer(fh).writerows([("a", "b"), *sorted(Q)])
    with open(d / "m.csv", "w", newline="") as fh:
        csv.writer(fh).writerows([("n", "v"), ("x", "1.50"), ("y", "-0.0"), ("z", "1e20"), ("w", "2")])
    return d


@pytest.mark.parametrize("engine", ["reference", "embedded"])
def test_engines_compute_the_expressions_from_files(tmp_path: Path, engine: str) -> None:
    analysis = analyze(parse_program(PROGRAM))
    result = get_engine(engine).run(analysis, _write_db(tmp_path))
    assert {rel: result.rows(rel) for rel in result.relations()} == EXPECTED


@pytest.mark.parametrize("engine", ["reference", "embedded"])
def test_floats_are_written_alike_by_every_engine(tmp_path: Path, engine: str) -> None:
    """-0.0 is 0.0, 1e20 keeps Python's spelling, in CSV and in --json."""
    db = _write_db(tmp_path)
    (tmp_path / "p.dl").write_text(PROGRAM)
    out = tmp_path / f"out-{engine}"
    run = selp("eval", str(tmp_path / "p.dl"), "--db", str(db), "--engine", engine, "--out", str(out), "-q")
    assert run.returncode == 0, run.stderr
    with open(out / "t.csv", newline="") as fh:
        rows = list(csv.reader(fh))
    assert rows == [["c1", "c2", "c3"], ["w", "0.6666666666666666", "2.0"], ["x", "0.5", "1.5"],
                    ["y", "0.0", "0.0"], ["z", "3.333333333333333e+19", "1e+20"]]


@pytest.mark.parametrize(
    "text, where, what",
    [
        ('.decl q(a: int, b: str)\np(x + y) :- q(x, y).', "prog.dl:2:1", "variable y is a string"),
        ('.decl p(a: float)\np(x + 1) :- q(x), x > 0.', "prog.dl:2:1", "x + 1 is int but p.a is float"),
        ("p(x) :- q(x, y), not r(x, z), not s(z).", "prog.dl:1:18", "unsafe variable z"),
        ("p(c) :- q(x), c = x + y.", "prog.dl:1:15", "unsafe variable y"),
    ],
)
def test_check_refuses_type_and_safety_mistakes_in_one_located_line(tmp_path: Path, text: str, where: str, what: str) -> None:
    (tmp_path / "prog.dl").write_text(text)
    run = selp("check", "prog.dl", cwd=tmp_path)
    assert run.returncode == 1
    assert run.stderr.count("\n") == 1 and "Traceback" not in run.stderr
    assert run.stderr.startswith(f"error: {where}: ") and what in run.stderr


@pytest.mark.parametrize("engine", ["reference", "embedded"])
@pytest.mark.parametrize(
    "rule, data, message",
    [
        ("p(x, x * y) :- q(x, y).", "9223372036854775807,2", "prog.dl:2:1: integer overflow in rule r1: 9223372036854775807 * 2"),
        ("p(x, c) :- q(x, y),\n  c = x / (y - 2).", "7,2", "prog.dl:3:3: division by zero in rule r1: 7 / 0"),
        ("p(x) :- q(x, y), -x < y.", "-9223372036854775808,0", "prog.dl:2:18: integer overflow in rule r1: -(-9223372036854775808)"),
        ("p(x, c) :- q(x, y), c = x * 1e308 * 10.0.", "7,2", "prog.dl:2:21: float overflow in rule r1: 7 * 1e+308"),
    ],
)
def test_overflow_and_division_by_zero_are_located_errors(tmp_path: Path, engine: str, rule: str, data: str, message: str) -> None:
    (tmp_path / "prog.dl").write_text(f".decl q(a: int, b: int)\n{rule}\n")
    (tmp_path / "db").mkdir()
    (tmp_path / "db" / "q.csv").write_text(f"a,b\n{data}\n")
    run = selp("eval", "prog.dl", "--db", "db", "--engine", engine, "-q", cwd=tmp_path)
    assert run.returncode == 1
    assert run.stderr == f"error: {message}\n"


def test_integer_division_truncates_toward_zero_and_floats_have_one_zero() -> None:
    assert [apply("/", a, b) for a, b in [(7, 2), (-7, 2), (7, -2), (-7, -2)]] == [3, -3, -3, 3]
    assert repr(apply("*", -1.0, 0.0)) == "0.0" and repr(apply("-", 0.0)) == "0.0"
    with pytest.raises(ArithmeticFault, match="integer overflow: -9223372036854775808 / -1"):
        apply("/", -(2**63), -1)


def test_a_labeled_null_operand_gives_no_value() -> None:
    """An expression over a labeled null derives nothing, on every engine (the null's column is
    stored as text on the embedded engine)."""
    analysis = analyze(parse_program("n(f(x), x) :- q(x).\nn(x, x) :- q(x).\np(x, y + 1) :- n(y, x)."))
    for engine in ("reference", "embedded"):
        out = get_engine(engine).evaluate(analysis, {"q": {(1,), (2,)}})
        assert out["p"] == {(1, 2), (2, 3)}, engine


@pytest.mark.parametrize("engine", ["reference", "embedded"])
def test_topk_through_an_expression_in_a_head(tmp_path: Path, engine: str) -> None:
    """A pattern constant at a head position holding an expression labels the trees whose
    expression has that value (the instrumented rule tests it)."""
    (tmp_path / "e.csv").write_text("a,b,w\n1,2,3\n2,3,4\n1,3,9\n3,4,1\n")
    program = analyze(parse_program(
        ".decl e(a: int, b: int, w: int)\npath(x, y, w) :- e(x, y, w).\n"
        "path(x, z, c) :- path(x, y, w1), e(y, z, w2), c = w1 + w2, c < 20.\nfar(x, y, d * 2) :- path(x, y, d).\n"
    ))
    table = topk(program, str(tmp_path), "far(1, *, 14)", k=3, engine=engine)
    answers = table.answers()
    assert sorted(answers) == [("far", (1, 3, 14))]
    assert len(answers[("far", (1, 3, 14))]) == 1  # path 1-2-3 of weight 7, not the edge 1-3 of 9
    both = topk(program, str(tmp_path), "far(1, *, *) // e(1, 3, *)", k=3, engine=engine).answers()
    assert sorted(both) == [("far", (1, 3, 18)), ("far", (1, 4, 20))]


@pytest.mark.spark
def test_spark_computes_the_same_expressions_and_locates_its_errors(spark, tmp_path: Path) -> None:
    analysis = analyze(parse_program(PROGRAM))
    result = get_engine("spark").run(analysis, _write_db(tmp_path), spark=spark)
    assert {rel: result.rows(rel) for rel in result.relations()} == EXPECTED
    bad = analyze(parse_program(".decl q(a: int, b: int)\np(x, c) :- q(x, y),\n  c = x / (y - 2).", "prog.dl"))
    with pytest.raises(EvalError) as info:
        get_engine("spark").evaluate(bad, {"q": {(7, 2)}}, spark=spark)
    assert str(info.value) == "prog.dl:3:3: division by zero in rule r1: 7 / 0"
