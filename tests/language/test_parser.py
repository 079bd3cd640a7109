"""The datalog^sk parser and printer: every syntax form, located errors, and round trips."""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings

from helpers.budget import examples
from helpers.randprog import syntax_programs
from selp.errors import ProgramError
from selp.language import parse_program, parse_program_file
from selp.language.ast import Arith, Atom, Comparison, Const, Decl, Fact, Program, Rule, SkolemTerm, Var
from selp.language.printer import format_program


def parse_error(text: str, file: str = "prog.dl") -> ProgramError:
    with pytest.raises(ProgramError) as info:
        parse_program(text, file)
    return info.value


def v(name: str) -> Var:
    return Var(name)


def c(value) -> Const:
    return Const(value)


# --- syntax forms ---------------------------------------------------------------------------


def test_rule_with_name_weight_and_body():
    p = parse_program("r7 (0.8): dealsWith(a, b) :- dealsWith(b, a).")
    assert p.rules == (
        Rule("r7", Atom("dealsWith", (v("a"), v("b"))), (Atom("dealsWith", (v("b"), v("a"))),), "0.8", True),
    )
    assert p.decls == () and p.facts == ()


def test_label_forms_name_only_weight_only_and_none():
    p = parse_program(
        """
        trans: p(x) :- q(x).
        (S): p(x) :- r(x).
        p(x) :- s(x).
        """
    )
    assert [(r.name, r.weight, r.named) for r in p.rules] == [
        ("trans", None, True),
        ("r1", "S", False),
        ("r2", None, False),
    ]


@pytest.mark.parametrize("weight", ["0.8", "S", "-1", "1e-3", "+2", ".5", "007", "1E5", "-0.5e+2"])
def test_weights_are_kept_as_written(weight):
    p = parse_program(f"r1 ({weight}): p(x) :- q(x).\n({weight}): q(1).")
    assert p.rules[0].weight == weight
    assert p.facts[0].weight == weight


def test_unnamed_rules_are_numbered_skipping_taken_names():
    p = parse_program(
        """
        p(x) :- q(x).
        r2: p(x) :- r(x).
        p(x) :- s(x).
        p(x) :- t(x).
        """
    )
    assert [r.name for r in p.rules] == ["r1", "r2", "r3", "r4"]
    p = parse_program("r1: p(x) :- q(x).\np(x) :- r(x).\n")
    assert [r.name for r in p.rules] == ["r1", "r2"]
    assert [r.named for r in p.rules] == [True, False]


def test_variables_constants_and_anonymous():
    p = parse_program('p(x, "Cuba", -3) :- q(x, _, _, +7, 007).')
    r = p.rules[0]
    assert r.head.args == (v("x"), c("Cuba"), c(-3))
    body = r.body[0]
    assert body.args[0] == v("x")
    a1, a2 = body.args[1], body.args[2]
    assert a1.anonymous and a2.anonymous and a1 != a2  # each _ is a fresh variable
    assert body.args[3:] == (c(7), c(7))


def test_skolem_terms_in_heads_nest():
    p = parse_program('p(f(x, "a"), g(f(x, 1)), h()) :- q(x).')
    assert p.rules[0].head.args == (
        SkolemTerm("f", (v("x"), c("a"))),
        SkolemTerm("g", (SkolemTerm("f", (v("x"), c(1))),)),
        SkolemTerm("h", ()),
    )


@pytest.mark.parametrize("op", ["=", "!=", "<", "<=", ">", ">="])
def test_comparisons(op):
    p = parse_program(f'p(x) :- q(x, y), x {op} y, x{op}3, "a" {op} y.')
    assert p.rules[0].body[1:] == (
        Comparison(op, v("x"), v("y")),
        Comparison(op, v("x"), c(3)),
        Comparison(op, c("a"), v("y")),
    )


def test_negation_including_nullary_and_anonymous():
    p = parse_program("p(x) :- q(x), not r(x, _), not done.")
    _, neg, nullary = p.rules[0].body
    assert neg.relation == "r" and neg.negated and neg.args[0] == v("x") and neg.args[1].anonymous
    assert nullary == Atom("done", (), True)
    assert p.rules[0].negative_atoms == [neg, nullary]


def test_nullary_atoms_with_and_without_parentheses_are_the_same():
    assert parse_program("ok :- go.") == parse_program("ok() :- go().")
    assert parse_program("ok :- go.").rules[0].head == Atom("ok", ())


def test_inline_facts_with_and_without_weights():
    p = parse_program('(0.9): exports("Cuba", "tobacco").\nexports("France", "wine").\nflag.')
    assert p.facts == (
        Fact(Atom("exports", (c("Cuba"), c("tobacco"))), "0.9"),
        Fact(Atom("exports", (c("France"), c("wine")))),
        Fact(Atom("flag", ())),
    )
    assert p.facts[0].values == ("Cuba", "tobacco")


def test_declarations():
    p = parse_program(".decl R(a: str, b: int)\n.decl S(x: int).\n.decl Unit()")
    assert p.decls == (
        Decl("R", (("a", "str"), ("b", "int"))),
        Decl("S", (("x", "int"),)),
        Decl("Unit", ()),
    )


def test_comments_of_both_kinds():
    p = parse_program(
        """% a comment
        p(x) :- q(x). // trailing comment with p(y) :- r(y).
        % q(1).
        q("% inside a string is text // too").
        """
    )
    assert len(p.rules) == 1
    assert p.facts == (Fact(Atom("q", (c("% inside a string is text // too"),))),)


def test_empty_program():
    assert parse_program("") == Program()
    assert parse_program("  % nothing\n // here\n") == Program()


def test_string_escapes():
    p = parse_program(r'p("a\"b", "c\\d", "e\nf", "g\th", "\\n") .')
    assert p.facts[0].values == ('a"b', "c\\d", "e\nf", "g\th", "\\n")
    # a raw newline and unicode inside a string are kept
    p = parse_program('p("two\nlines", "Zürich ☕").')
    assert p.facts[0].values == ("two\nlines", "Zürich ☕")


def test_not_is_a_keyword_but_notable_is_a_name():
    p = parse_program("p(notable) :- notable(notable), not nothing(notable).")
    r = p.rules[0]
    assert r.head.args == (v("notable"),)
    assert r.body[0] == Atom("notable", (v("notable"),))
    assert r.body[1] == Atom("nothing", (v("notable"),), negated=True)


def test_relation_names_with_at_parts():
    p = parse_program("dealsWith@v1t(a, b) :- dealsWith@!v0(a, b), not dealsWith@v2@!x(b, a).")
    r = p.rules[0]
    assert r.head.relation == "dealsWith@v1t"
    assert r.body[0].relation == "dealsWith@!v0"
    assert r.body[1].relation == "dealsWith@v2@!x" and r.body[1].negated
    assert parse_program("(1): e@v0(1).").facts[0].atom.relation == "e@v0"


@pytest.mark.parametrize("text", ["p(x@v1) :- q(x@v1).", "p(x) :- q(x, y@!v0).", "p(1) :- q(x), x@v0 < 3."])
def test_variables_cannot_contain_at(text):
    err = parse_error(text)
    assert "cannot contain '@'" in err.message
    assert re.match(r"prog\.dl:1:\d+$", str(err.location))


def test_locations_are_recorded_but_ignored_by_equality():
    p = parse_program("\n\n  p(x) :-\n   q(x).", "a.dl")
    q = parse_program("p(x) :- q(x).", "b.dl")
    assert p == q
    assert (p.rules[0].loc.line, p.rules[0].loc.column) == (3, 3)
    assert (p.rules[0].body[0].loc.line, p.rules[0].body[0].loc.column) == (4, 4)
    assert p.rules[0].loc.file == "a.dl"


def test_parse_program_file(tmp_path):
    f = tmp_path / "prog.dl"
    f.write_text("p(x) :- q(x).\np(x) :- \n", encoding="utf-8")
    with pytest.raises(ProgramError) as info:
        parse_program_file(f)
    assert str(info.value).startswith(f"{f}:")
    f.write_text('p("Zürich").', encoding="utf-8")
    assert parse_program_file(f).facts[0].values == ("Zürich",)
    with pytest.raises(ProgramError, match="not found"):
        parse_program_file(tmp_path / "missing.dl")
    (tmp_path / "latin1.dl").write_bytes('p("Zürich").'.encode("latin-1"))
    with pytest.raises(ProgramError, match="UTF-8"):
        parse_program_file(tmp_path / "latin1.dl")


# --- located errors ---------------------------------------------------------------------------


def test_syntax_error_names_position_and_expected_tokens():
    err = parse_error("p(x) :- q(x).\n\np(x) :- q(x) r(x).")
    assert str(err) == "prog.dl:3:14: syntax error: unexpected 'r', expected ',', '.'"


def test_syntax_error_for_a_bad_character():
    err = parse_error("p(x) :- q(x); r(x).")
    assert str(err.location) == "prog.dl:1:13"
    assert "unexpected character ';'" in err.message


def test_unterminated_string():
    err = parse_error('p(x) :- q(x, "abc).')
    assert str(err.location) == "prog.dl:1:14"


def test_missing_final_dot_points_just_after_the_last_token():
    err = parse_error("p(x) :- q(x).\np(x) :- q(x)\n\n% trailing comment\n")
    assert "unexpected end of input" in err.message
    assert "'.'" in err.message and "','" in err.message
    assert str(err.location) == "prog.dl:2:13"


def test_missing_body_after_if():
    err = parse_error("p(x) :- .")
    assert str(err.location) == "prog.dl:1:9"
    assert "expected" in err.message and "a name" in err.message


@pytest.mark.parametrize(
    "text, value",
    [("p(x) :- q(x, 1.5).", 1.5), ("(1): p(2.5e3).", 2500.0), ("p(x) :- q(x), x < -1.5.", -1.5), ("p(x) :- q(x), .5 = x.", 0.5)],
)
def test_float_constants_are_values(text, value):
    program = parse_program(text)
    consts = [t.value for r in program.rules for b in r.body for t in (b.args if isinstance(b, Atom) else (b.left, b.right))
              if isinstance(t, Const) and isinstance(t.value, float)]
    consts += [t.value for f in program.facts for t in f.atom.args]
    assert consts == [value]


@pytest.mark.parametrize("text, col", [("p(1e999).", 3), ("p(x) :- q(x), x < -1e400.", 19)])
def test_a_float_too_large_for_64_bits_is_a_located_error(text, col):
    err = parse_error(text)
    assert "does not fit in 64 bits" in err.message
    assert str(err.location) == f"prog.dl:1:{col}"


@pytest.mark.parametrize(
    "text",
    [
        "p(x, c1 + c2 * 2, (c1 + c2) * 2, c1 - (c2 - 1), -c1, -(c1 * c2), c1 / -2, 2.5e-07 - c1) :- q(x, c1, c2).",
        "p(x, c) :- q(x, y), c = (y - -1) / 2.5, z = -y, z * 2 < c + 1.",
        "p(x) :- q(x, y), x - 1 >= y * (x + 1).",
    ],
)
def test_arithmetic_prints_and_parses_back_to_the_same_rules(text):
    program = parse_program(text)
    assert any(isinstance(t, Arith) for r in program.rules for lit in [r.head, *r.body]
               for t in (lit.args if hasattr(lit, "args") else (lit.left, lit.right)))
    assert parse_program(format_program(program)) == program


def test_minus_between_operands_is_subtraction_and_before_a_number_its_sign():
    (rule,) = parse_program("p(x-1, x - -1, -1) :- q(x).").rules
    assert rule.head.args == (Arith("-", (Var("x"), Const(1))), Arith("-", (Var("x"), Const(-1))), Const(-1))


def test_anonymous_variable_in_a_head_is_a_located_error():
    from selp.language.validate import analyze

    prog = parse_program("p(x, x) :- q(x).\np(x, _) :- q(x).", "prog.dl")
    with pytest.raises(ProgramError) as info:
        analyze(prog)
    assert str(info.value.location) == "prog.dl:2:1"
    assert "'_' in the head" in info.value.message


def test_named_facts_are_rejected():
    err = parse_error('p(x) :- q(x).\nr3: q("a").')
    assert str(err.location) == "prog.dl:2:1"
    assert "cannot be named" in err.message and "r3" in err.message


@pytest.mark.parametrize("label", ["r1(0.8, 0.9)", "r1()", "r1(_)", 'r1("w")'])
def test_labels_must_hold_exactly_one_weight(label):
    err = parse_error(f"q(1).\n{label}: p(x) :- q(x).")
    assert str(err.location) == "prog.dl:2:1"
    assert "exactly one weight" in err.message


@pytest.mark.parametrize("head, what", [("p(x)", "variable x"), ("p(1, _)", "'_'"), ("p(f(1))", "non-constant")])
def test_facts_must_be_ground(head, what):
    err = parse_error(f"\n  {head}.")
    assert str(err.location) == "prog.dl:2:3"
    assert what in err.message and "ground" in err.message


def test_unknown_column_type():
    err = parse_error(".decl R(a: str, b: bool)")
    assert str(err.location) == "prog.dl:1:20"
    assert "unknown column type 'bool'" in err.message


def test_error_without_file_name_says_input():
    with pytest.raises(ProgramError) as info:
        parse_program("p(")
    assert str(info.value).startswith("<input>:1")


# --- printer ----------------------------------------------------------------------------------


def test_format_program_of_the_trade_example_is_stable():
    text = (
        ".decl dealsWith(a: str, b: str)\n"
        "r0: dealsWith(a, b) :- dealsWith_edb(a, b).\n"
        "r1 (0.8): dealsWith(a, b) :- dealsWith(b, a).\n"
        "(0.5): dealsWith(a, b) :- imports(a, c), exports(b, c), not banned(a, _), a != b.\n"
        "p(f(x, \"a\\\"b\"), -3) :- q(x).\n"
        "(0.9): exports(\"Cuba\", \"tobacco\").\n"
        "ok().\n"
    )
    assert format_program(parse_program(text)) == text


@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(syntax_programs())
def test_print_then_parse_is_the_identity(program):
    text = format_program(program)
    assert parse_program(text) == program
    assert format_program(parse_program(text)) == text


def test_round_trip_of_every_tricky_piece_at_once():
    from helpers.randprog import TRICKY_STRINGS, WEIGHTS

    facts = tuple(Fact(Atom("s", (c(text), c(-(i + 1)))), WEIGHTS[i % len(WEIGHTS)]) for i, text in enumerate(TRICKY_STRINGS))
    rules = tuple(
        Rule(
            f"r{i + 1}",
            Atom("dealsWith@v1t", (SkolemTerm("f", (v("x"), c('a"\\b\n'))), v("x"))),
            (
                Atom("dealsWith@!v0", (v("x"), Var("_#%d" % (i + 1)))),
                Atom("notable", (v("x"),), negated=True),
                Comparison("<=", v("x"), c(-7)),
            ),
            w,
            False,
        )
        for i, w in enumerate(WEIGHTS)
    )
    decls = (Decl("s", (("text", "str"), ("n", "int"))), Decl("Unit", ()))
    program = Program(decls, rules, facts)
    assert parse_program(format_program(program)) == program


@pytest.mark.parametrize(
    "text, message",
    [
        ("p(x) :- q(x), x < 9223372036854775808.", "integer 9223372036854775808 does not fit in 64 bits"),
        ('p(x) :- q(x), x = "\\u0000".'.replace("\\u0000", "\x00"), "may not start with the NUL character"),
        ("p(not) :- q(not).", "'not' is a keyword"),
    ],
)
def test_constants_and_names_the_engines_cannot_hold_are_rejected(text: str, message: str) -> None:
    with pytest.raises(ProgramError, match=message):
        parse_program(text, "f.dl")


def test_integer_before_the_final_dot_is_not_a_float() -> None:
    rule = parse_program("p(x) :- q(x), x = 1.").rules[0]
    assert rule.comparisons[0].right == Const(1)
