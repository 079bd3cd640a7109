"""selPQL patterns: every syntax form, precedence, located errors, the printer round trip, and
checks of a pattern against a program (the paper's trade example)."""

from __future__ import annotations


import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers.budget import examples
from helpers.paths import TRADE
from selp.errors import SelpError
from selp.language import parse_program, parse_program_file
from selp.language.pattern import WILDCARD, And, Not, Or, PatternNode, TreePattern
from selp.language.pattern_parser import (
    PatternError,
    arg_location,
    check_pattern,
    format_pattern,
    node_column,
    parse_pattern,
)
from selp.language.types import resolve_types
from selp.language.validate import analyze
from selp.values import Skolem



def N(rel: str, args=None, *children) -> PatternNode:  # noqa: N802 - reads like the pattern
    """``N("a", None, ("//", N("b")))``."""
    return PatternNode(rel, None if args is None else tuple(args), tuple(children))


def T(rel: str, args=None, *children) -> TreePattern:  # noqa: N802
    return TreePattern(N(rel, args, *children))


def error(text: str) -> PatternError:
    with pytest.raises(PatternError) as info:
        parse_pattern(text)
    return info.value


# --- nodes and constants --------------------------------------------------------------------


def test_bare_relation_matches_any_arity():
    assert parse_pattern("dealsWith") == T("dealsWith")
    assert parse_pattern("dealsWith").root.args is None


def test_star_node_is_relation_star_without_args():
    assert parse_pattern("*") == TreePattern(PatternNode("*", None))


def test_nullary_node_has_empty_args():
    assert parse_pattern("R()") == T("R", ())
    assert parse_pattern("R ( )") == T("R", ())


def test_bare_identifier_argument_is_a_string_constant():
    p = parse_pattern("dealsWith(Cuba, *)")
    assert p == T("dealsWith", ("Cuba", WILDCARD))
    assert p.root.args == ("Cuba", None)
    assert parse_pattern('dealsWith("Cuba", *)') == p


def test_integers_and_quoted_digits():
    assert parse_pattern("R(1, -2, +3, 007)").root.args == (1, -2, 3, 7)
    assert parse_pattern('R("1")').root.args == ("1",)
    assert parse_pattern(f"R({2**63 - 1}, {-(2**63)})").root.args == (2**63 - 1, -(2**63))


def test_quoted_strings_use_the_datalog_escapes():
    p = parse_pattern(r'R("say \"hi\"", "back\\slash", "a\nb\tc\rd", "coffee beans", "", "*")')
    assert p.root.args == ('say "hi"', "back\\slash", "a\nb\tc\rd", "coffee beans", "", "*")


def test_keywords_are_reserved_everywhere():
    assert parse_pattern('R("and", "OR", "not")').root.args == ("and", "OR", "not")
    assert str(error("R(x, and)")).startswith("pattern:1:6: syntax error: unexpected 'and', expected")
    assert str(error("Or(x)")).startswith("pattern:1:1: syntax error: unexpected 'Or', expected")


@pytest.mark.parametrize(
    "glob", ["*_YAGO", "deals*", "d*W*h", "dealsWith@v1t", "dealsWith@!v0", "*@v1*", "R_2", "_q", "**"]
)
def test_relation_globs(glob):
    assert parse_pattern(glob) == T(glob)
    assert parse_pattern(f"{glob}(x, *)") == T(glob, ("x", WILDCARD))


def test_star_node_with_arguments():
    assert parse_pattern("*(Cuba, *)") == T("*", ("Cuba", WILDCARD))


def test_words_starting_with_keywords_are_names():
    assert parse_pattern("ANDROID AND nothing OR orders") == Or((And((T("ANDROID"), T("nothing"))), T("orders")))
    assert parse_pattern("not_x") == T("not_x")
    assert parse_pattern("or*") == T("or*")


# --- trees ----------------------------------------------------------------------------------


def test_regular_and_transitive_edges():
    assert parse_pattern("a / b") == T("a", None, ("/", N("b")))
    assert parse_pattern("a // b") == T("a", None, ("//", N("b")))


def test_chain_is_nested_single_children():
    expected = T("a", None, ("//", N("b", None, ("/", N("c")))))
    assert parse_pattern("a // b / c") == expected
    assert parse_pattern("a[// b[/ c]]") == expected
    assert parse_pattern("a[// b / c]") == expected
    assert parse_pattern("a//b/c") == expected


def test_branching_keeps_children_in_order():
    assert parse_pattern("a[// b, / c]") == T("a", None, ("//", N("b")), ("/", N("c")))
    assert parse_pattern("a[/ c, // b]") == T("a", None, ("/", N("c")), ("//", N("b")))


def test_nested_branches_and_chains():
    p = parse_pattern("dealsWith(Cuba, *)[// *_YAGO(*) / x, / y[// z, // w(1)]]")
    assert p == T(
        "dealsWith",
        ("Cuba", WILDCARD),
        ("//", N("*_YAGO", (WILDCARD,), ("/", N("x")))),
        ("/", N("y", None, ("//", N("z")), ("//", N("w", (1,))))),
    )


def test_paper_pattern_p2():
    assert parse_pattern("dealsWith(Cuba, *) // exports(Cuba, tobacco)") == T(
        "dealsWith", ("Cuba", WILDCARD), ("//", N("exports", ("Cuba", "tobacco")))
    )


def test_whitespace_and_newlines_are_insignificant():
    assert parse_pattern("  a [\n  // b ,\n  / c\n ]  ") == parse_pattern("a[// b, / c]")


# --- Boolean combinations -------------------------------------------------------------------


def test_precedence_not_and_or():
    a, b, c = T("a"), T("b"), T("c")
    assert parse_pattern("NOT a AND b OR c") == Or((And((Not(a), b)), c))
    assert parse_pattern("a OR b AND c") == Or((a, And((b, c))))
    assert parse_pattern("a OR NOT b AND c") == Or((a, And((Not(b), c))))


def test_parentheses_override_precedence():
    a, b, c = T("a"), T("b"), T("c")
    assert parse_pattern("NOT (a AND b)") == Not(And((a, b)))
    assert parse_pattern("(a OR b) AND c") == And((Or((a, b)), c))
    assert parse_pattern("((a))") == a


def test_nested_and_or_are_flattened():
    a, b, c, d = T("a"), T("b"), T("c"), T("d")
    assert parse_pattern("a AND b AND c") == And((a, b, c))
    assert parse_pattern("a AND (b AND c) AND d") == And((a, b, c, d))
    assert parse_pattern("(a OR b) OR (c OR d)") == Or((a, b, c, d))
    # different operators do not flatten into each other
    assert parse_pattern("a AND (b OR c)") == And((a, Or((b, c))))


def test_double_negation_is_kept():
    assert parse_pattern("NOT NOT a") == Not(Not(T("a")))


@pytest.mark.parametrize("text", ["not a and b or c", "Not a AnD b oR c", "NOT a AND b OR c"])
def test_keywords_are_case_insensitive(text):
    assert parse_pattern(text) == Or((And((Not(T("a")), T("b"))), T("c")))


def test_trees_inside_boolean_combinations():
    p = parse_pattern("dealsWith(Cuba, *) // exports(Cuba, tobacco) AND NOT dealsWith / imports")
    assert p == And(
        (
            T("dealsWith", ("Cuba", WILDCARD), ("//", N("exports", ("Cuba", "tobacco")))),
            Not(T("dealsWith", None, ("/", N("imports")))),
        )
    )


# --- errors ---------------------------------------------------------------------------------


def test_pattern_error_is_a_selp_error():
    assert issubclass(PatternError, SelpError)


@pytest.mark.parametrize(
    "text, where, expected",
    [
        ("", "pattern:1:1:", ["'('", "'*'", "'NOT'", "a relation name"]),
        ("dealsWith(Cuba,", "pattern:1:16:", ["'*'", "a quoted string", "an identifier", "an integer"]),
        ("a[/ b", "pattern:1:6:", ["','", "']'"]),
        ("a //", "pattern:1:5:", ["'*'", "a relation name"]),
        ("(a", "pattern:1:3:", ["')'"]),
        ("a AND", "pattern:1:6:", ["'NOT'", "a relation name"]),
    ],
)
def test_unexpected_end_says_what_was_expected(text, where, expected):
    err = error(text)
    assert str(err).startswith(where + " syntax error: unexpected end of input, expected")
    for e in expected:
        assert e in str(err)


@pytest.mark.parametrize(
    "text, col, unexpected, expected",
    [
        ("a b", 3, "'b'", ["'/'", "'//'", "'['", "'('", "'AND'", "'OR'", "end of input"]),
        ("a[b]", 3, "'b'", ["'/'", "'//'"]),
        ("R(a,,b)", 5, "','", ["'*'", "an identifier"]),
        ("a / b[/ c] / d", 12, "'/'", ["'AND'", "'OR'", "end of input"]),
        (")", 1, "')'", ["'('", "a relation name"]),
        ("a ] ", 3, "']'", ["'AND'"]),
        ("a AND OR b", 7, "'OR'", ["'NOT'", "a relation name"]),
        ("a NOT b", 3, "'NOT'", ["'AND'", "'OR'"]),
    ],
)
def test_unexpected_token_column_and_expectations(text, col, unexpected, expected):
    err = error(text)
    assert err.location.file == "pattern" and err.location.line == 1 and err.location.column == col
    assert f"syntax error: unexpected {unexpected}, expected" in err.message
    for e in expected:
        assert e in err.message
    assert str(err).startswith(f"pattern:1:{col}: ")


def test_unexpected_character():
    err = error("dealsWith(Cuba, $)")
    assert str(err).startswith("pattern:1:17: syntax error: unexpected character '$'")


def test_star_inside_a_bare_constant():
    err = error("R(x, Cu*)")
    assert str(err).startswith("pattern:1:6: constant Cu* cannot contain '*'")
    assert '"Cu*"' in err.message  # the way to say it literally


def test_integer_beyond_64_bits():
    assert str(error(f"R({2**63})")).startswith(f"pattern:1:3: integer {2**63} does not fit in 64 bits")


def test_error_on_a_later_line():
    err = error("a //\n  b(")
    assert (err.location.line, err.location.column) == (2, 5)


# --- positions ------------------------------------------------------------------------------


def test_nodes_remember_their_columns():
    p = parse_pattern("a // bb(x, *)[/ c, / d]")
    nodes = list(p.root.nodes())
    assert [node_column(n) for n in nodes] == [1, 6, 17, 22]
    assert arg_location(nodes[1], 1).column == 12
    assert node_column(PatternNode("a", None)) is None  # hand-built
    # positions are not part of equality
    assert parse_pattern("   a // bb(x, *)[/ c, / d]") == p


# --- printing -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, printed",
    [
        ("dealsWith(Cuba, *) // exports(Cuba, tobacco)", "dealsWith(Cuba, *) // exports(Cuba, tobacco)"),
        ("a[// b]", "a // b"),
        ("a[// b[/ c]]", "a // b / c"),
        ("a[/b,//c/d]", "a[/ b, // c / d]"),
        ('R("coffee beans", "1", 1, "and", "x@y")', 'R("coffee beans", "1", 1, "and", "x@y")'),
        ("r()", "r()"),
        ("not a and b or c", "NOT a AND b OR c"),
        ("NOT (a AND b)", "NOT (a AND b)"),
        ("(a OR b) AND (c OR d)", "(a OR b) AND (c OR d)"),
        ("a OR b AND c", "a OR b AND c"),
    ],
)
def test_printer(text, printed):
    assert format_pattern(parse_pattern(text)) == printed


def test_printer_parenthesizes_nested_operators_of_the_same_kind():
    a, b, c = T("a"), T("b"), T("c")
    assert format_pattern(And((a, And((b, c))))) == "a AND (b AND c)"
    assert parse_pattern(format_pattern(And((a, And((b, c)))))) == And((a, b, c))


def test_printer_rejects_unwritable_patterns():
    with pytest.raises(ValueError):
        format_pattern(T("R", (Skolem("f", (1,)),)))
    with pytest.raises(ValueError):
        format_pattern(T("Or"))
    with pytest.raises(ValueError):
        format_pattern(T("has space"))
    with pytest.raises(ValueError):
        format_pattern(And(()))


GLOBS = [
    "a", "b", "dealsWith", "*", "*_YAGO", "deals*", "dealsWith@v1t", "x@!y", "android", "ORDERS", "Not_", "_q", "R2",
]
STRINGS = ["Cuba", "coffee beans", "", "1", "-5", "*", "and", "NOT", 'say "hi"', "back\\slash", "a\nb", "tab\t", "x@y"]


def _args():
    const = st.one_of(
        st.just(WILDCARD),
        st.sampled_from(STRINGS),
        st.text(max_size=5),
        st.integers(min_value=-(2**63), max_value=2**63 - 1),
    )
    return st.one_of(st.none(), st.lists(const, max_size=3).map(tuple))


def _nodes():
    leaf = st.builds(lambda r, a: PatternNode(r, a), st.sampled_from(GLOBS), _args())
    return st.recursive(
        leaf,
        lambda kids: st.builds(
            lambda r, a, cs: PatternNode(r, a, tuple(cs)),
            st.sampled_from(GLOBS),
            _args(),
            st.lists(st.tuples(st.sampled_from(["/", "//"]), kids), min_size=1, max_size=3),
        ),
        max_leaves=6,
    )


def _patterns():
    return st.recursive(
        st.builds(TreePattern, _nodes()),
        lambda ps: st.one_of(
            st.builds(Not, ps),
            st.lists(ps, min_size=2, max_size=3).map(lambda xs: And(tuple(xs))),
            st.lists(ps, min_size=2, max_size=3).map(lambda xs: Or(tuple(xs))),
        ),
        max_leaves=5,
    )


def _flatten(p):
    """What the parser builds for ``p``: nested AND/OR flattened into their parent."""
    if isinstance(p, TreePattern):
        return p
    if isinstance(p, Not):
        return Not(_flatten(p.operand))
    cls = type(p)
    out = []
    for o in p.operands:
        o = _flatten(o)
        out.extend(o.operands if isinstance(o, cls) else (o,))
    return cls(tuple(out))


@settings(max_examples=examples(300), deadline=None)
@given(_patterns())
def test_print_parse_round_trip(p):
    text = format_pattern(p)
    assert parse_pattern(text) == _flatten(p)
    assert format_pattern(parse_pattern(text)) == format_pattern(_flatten(p))


# --- checking against a program -------------------------------------------------------------


@pytest.fixture(scope="module")
def trade():
    analysis = analyze(parse_program_file(TRADE / "trade.dl"))
    return analysis, resolve_types(analysis)


def check(text: str, program) -> list[str]:
    analysis, types = program
    return check_pattern(parse_pattern(text), analysis, types)


def check_error(text: str, program) -> PatternError:
    with pytest.raises(PatternError) as info:
        check(text, program)
    return info.value


@pytest.mark.parametrize(
    "text",
    [
        "dealsWith(Cuba, *)",
        "dealsWith(Cuba, *) // exports(Cuba, tobacco)",
        "dealsWith[/ imports(*, wine), / exports]",
        "deals*(Cuba, *) // *",
        "* // dealsWith_edb",
        "NOT dealsWith // dealsWith_edb(Mexico, France) OR dealsWith(*, \"Cuba\")",
    ],
)
def test_patterns_that_fit_the_trade_program(text, trade):
    assert check(text, trade) == []


def test_unknown_relation_is_an_error_with_its_column(trade):
    err = check_error("dealsWith(Cuba, *) // export(Cuba, tobacco)", trade)
    assert str(err).startswith("pattern:1:23: unknown relation export")


def test_unknown_relation_under_boolean_operators(trade):
    err = check_error("dealsWith AND NOT (imports OR dealsWithEdb)", trade)
    assert "unknown relation dealsWithEdb" in str(err)
    assert err.location.column == 31


def test_arity_mismatch_is_an_error(trade):
    err = check_error("dealsWith // exports(Cuba)", trade)
    assert str(err).startswith("pattern:1:14: exports has 2 argument(s) but the pattern gives 1")
    assert "0" in str(check_error("dealsWith()", trade))


def test_int_constant_in_a_str_column_is_an_error(trade):
    err = check_error("dealsWith(Cuba, 3)", trade)
    assert str(err).startswith("pattern:1:17: constant 3 has type int but column dealsWith.b is str")


def test_string_constant_in_an_int_column_is_an_error():
    analysis = analyze(parse_program(".decl e(n: int, s: str)\np(x, s) :- e(x, s).\n"))
    program = (analysis, resolve_types(analysis))
    assert check("p(1, Cuba) // e(*, \"1\")", program) == []
    err = check_error("p(one, *)", program)
    assert str(err).startswith('pattern:1:3: constant "one" has type str but column p#1 is int')
    err = check_error('p(1, *) / e(2, x) // e("2", *)', program)
    assert str(err).startswith('pattern:1:24: constant "2" has type str but column e.n is int')


def test_glob_matching_nothing_is_a_warning(trade):
    warnings = check("dealsWith(Cuba, *) // *_YAGO", trade)
    assert len(warnings) == 1
    assert warnings[0].startswith("pattern:1:23: relation glob *_YAGO matches no relation")


def test_glob_whose_relations_do_not_fit_is_a_warning(trade):
    (w,) = check("deals*(Cuba)", trade)
    assert w.startswith("pattern:1:1: node deals*(Cuba) fits no relation its glob matches")
    (w,) = check("dealsWith // *(1, *)", trade)
    assert w.startswith("pattern:1:14:") and "type int" in w


def test_edb_parents_are_warnings_but_an_edb_root_is_not(trade):
    # an EDB fact's one derivation tree is the fact itself, which topk and explain print
    assert check("exports(Cuba, *)", trade) == []
    (w,) = check("dealsWith // imports / exports", trade)
    assert w.startswith("pattern:1:14:") and "leaves" in w
    assert check("dealsWith_* // dealsWith_edb", trade) != []  # dealsWith_* only names the EDB copy
