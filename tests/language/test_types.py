"""Column types: declared, inferred from constants and data evidence, and canonical integers."""

from __future__ import annotations

import pytest

from selp.database import load_database
from selp.errors import DataError, Location, ProgramError
from selp.language import parse_program
from selp.language.types import DataEvidence, resolve_types
from selp.language.validate import analyze


def analysis_of(text: str):
    return analyze(parse_program(text, "prog.dl"))


def types_of(text: str, data=None):
    return resolve_types(analysis_of(text), data)


def test_declared_types_win():
    t = types_of(".decl e(a: int, b: str)\np(x, y) :- e(x, y).")
    assert t["e"] == ("int", "str")
    assert t["p"] == ("int", "str")  # passed from body to head


def test_no_evidence_means_str():
    assert types_of("p(x, y) :- e(x, y).") == {"p": ("str", "str"), "e": ("str", "str")}


def test_integer_constants_make_a_group_int():
    t = types_of("p(x, y) :- e(x, y), x > 3.\nq(y) :- e(1, y), y != \"a\".")
    assert t["e"] == ("int", "str")
    assert t["p"] == ("int", "str")
    assert t["q"] == ("str",)


def test_inline_facts_are_evidence():
    t = types_of("p(x) :- e(x, _).\ne(1, \"a\").\ne(-2, \"b\").")
    assert t == {"p": ("int",), "e": ("int", "str")}


def test_groups_join_through_shared_variables_and_equality():
    t = types_of("p(x, y) :- a(x), b(y), x = y.\nq(z) :- c(z), a(z).\na(7).")
    assert t["a"] == t["b"] == t["c"] == ("int",)
    assert t["p"] == ("int", "int") and t["q"] == ("int",)


def test_negated_atoms_join_groups_too():
    t = types_of("p(x) :- a(x), not b(x).\nb(3).")
    assert t["a"] == ("int",) and t["p"] == ("int",)


def test_skolem_head_positions_take_no_evidence():
    t = types_of("p(f(x), x) :- a(x).\na(1).")
    assert t["p"] == ("str", "int")


def test_data_evidence_makes_a_group_str():
    a = analysis_of("p(x) :- e(x), q(x).\nq(x) :- r(x).")
    t = resolve_types(a, {("e", 0): DataEvidence(True), ("r", 0): DataEvidence(True)})
    assert t["p"] == t["e"] == t["q"] == t["r"] == ("int",)
    t = resolve_types(a, {("e", 0): DataEvidence(True), ("r", 0): DataEvidence(False, "x1")})
    assert t["p"] == t["e"] == t["q"] == t["r"] == ("str",)


def test_integer_constant_in_a_group_the_data_makes_str():
    a = analysis_of("p(x) :- e(x, 5).")
    where = Location("db/e.csv", 3)
    with pytest.raises(ProgramError) as info:
        resolve_types(a, {("e", 1): DataEvidence(False, "five", where)})
    assert str(info.value.location) == "prog.dl:1:9"
    assert "constant 5 has type int but column e#2 is str" in info.value.message
    assert "its data holds 'five' at db/e.csv:3" in info.value.message


def test_string_constant_in_an_int_column():
    with pytest.raises(ProgramError) as info:
        types_of('.decl e(a: int)\np(x) :- e(x), x != "a".')
    assert str(info.value.location) == "prog.dl:2:15"
    # the column named is the variable's first occurrence (the head), in e.a's group
    assert 'constant "a" has type str but column p#1 is int' in info.value.message
    assert "(declared at prog.dl:1:1)" in info.value.message
    with pytest.raises(ProgramError, match='constant "a" has type str but column e.a is int'):
        types_of('.decl e(a: int)\np(1) :- e("a").')
    # a group holding both kinds of constants is str, and the integer constant is the error
    with pytest.raises(ProgramError, match="constant 3 has type int but column p#1 is str"):
        types_of('p(x) :- e(x), x > 3.\nq(1) :- e("x").')


def test_inline_fact_of_the_wrong_type():
    with pytest.raises(ProgramError) as info:
        types_of('.decl e(a: int)\ne("seven").')
    assert str(info.value.location) == "prog.dl:2:1"
    assert 'value "seven" has type str' in info.value.message


def test_declared_columns_joined_with_conflicting_types():
    with pytest.raises(ProgramError, match="declared str but is joined with"):
        types_of(".decl a(x: int)\n.decl b(y: str)\np(v) :- a(v), b(v).")


def test_comparison_of_two_constants_of_different_types():
    with pytest.raises(ProgramError, match="mixes a string and an integer"):
        types_of('p(x) :- e(x), 1 < "a".')


def test_non_integer_data_in_a_declared_int_column():
    a = analysis_of(".decl e(n: int)\np(x) :- e(x).")
    with pytest.raises(DataError) as info:
        resolve_types(a, {("e", 0): DataEvidence(False, "12a", Location("e.csv", 4))})
    assert str(info.value) == "e.csv:4: value '12a' is not an integer, but column e.n is int"


# --- through load_database on real files ----------------------------------------------------------


def write(path, text: str):
    path.write_text(text, encoding="utf-8")
    return path


def test_inferred_int_column_canonicalises_integers(tmp_path):
    write(tmp_path / "e.csv", "a,b\n007,x\n7,y\n+7,z\n-0,w\n")
    a = analysis_of("p(n) :- e(n, _).")
    db = load_database(a, tmp_path)
    assert db.types["e"] == ("int", "str")
    assert db.facts["e"] == {(7, "x"), (7, "y"), (7, "z"), (0, "w")}
    from selp.engines.local import evaluate

    assert evaluate(a, db.facts)["p"] == {(7,), (0,)}


def test_str_column_keeps_integer_looking_text(tmp_path):
    write(tmp_path / "e.csv", "a\n007\n7\nseven\n")
    a = analysis_of("p(n) :- e(n).")
    db = load_database(a, tmp_path)
    assert db.types["e"] == ("str",)
    assert db.facts["e"] == {("007",), ("7",), ("seven",)}


def test_declared_str_column_keeps_leading_zeros(tmp_path):
    write(tmp_path / "e.csv", "a,b\n007,007\n")
    a = analysis_of(".decl e(a: str, b: int)\np(x, y) :- e(x, y).")
    db = load_database(a, tmp_path)
    assert db.facts["e"] == {("007", 7)}


def test_int_constant_matches_canonical_data(tmp_path):
    write(tmp_path / "e.csv", "a,b\n007,Cuba\n8,France\n")
    a = analysis_of("p(c) :- e(7, c).")
    db = load_database(a, tmp_path)
    from selp.engines.local import evaluate

    assert evaluate(a, db.facts)["p"] == {("Cuba",)}


def test_int_constant_against_str_data_is_an_error(tmp_path):
    write(tmp_path / "e.csv", "a,b\n1,x\n2,y\nthree,z\n")
    a = analysis_of("p(c) :- e(7, c).")
    with pytest.raises(ProgramError) as info:
        load_database(a, tmp_path)
    assert str(info.value.location) == "prog.dl:1:9"
    assert f"its data holds 'three' at {tmp_path / 'e.csv'}:4" in info.value.message


def test_bad_cell_in_declared_int_column_names_file_and_line(tmp_path):
    write(tmp_path / "e.csv", "n\n1\n\n2\n2.5\n")
    a = analysis_of(".decl e(n: int)\np(x) :- e(x).")
    with pytest.raises(DataError) as info:
        load_database(a, tmp_path)
    assert str(info.value.location) == f"{tmp_path / 'e.csv'}:5"
    assert "'2.5' is not an integer" in info.value.message


def test_out_of_range_integers_make_a_column_str(tmp_path):
    write(tmp_path / "e.csv", f"a\n1\n{2**63}\n")
    db = load_database(analysis_of("p(x) :- e(x)."), tmp_path)
    assert db.types["e"] == ("str",)
    write(tmp_path / "e.csv", f"a\n{-(2**63)}\n{2**63 - 1}\n")
    db = load_database(analysis_of("p(x) :- e(x)."), tmp_path)
    assert db.types["e"] == ("int",)


def test_data_in_two_files_joined_by_a_rule_share_one_type(tmp_path):
    write(tmp_path / "a.csv", "x\n1\n2\n")
    write(tmp_path / "b.csv", "x\n2\nb\n")
    db = load_database(analysis_of("p(v) :- a(v), b(v)."), tmp_path)
    assert db.types["a"] == db.types["b"] == ("str",)
    assert db.facts["a"] == {("1",), ("2",)}
