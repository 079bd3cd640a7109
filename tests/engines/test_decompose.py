"""Which recursive components decompose (BigDatalog/RaSQL [SYICCZ16]): the partition-local
Spark path runs exactly these, so a wrong "yes" would give wrong answers and a wrong "no" only
slower ones."""

from __future__ import annotations

import pytest

from selp.engines.decompose import Decomposition, NotDecomposable, decompose
from selp.language import parse_program
from selp.language.ast import Atom, Rule, Var
from selp.language.validate import Component, analyze


def component(text: str, rel: str) -> Component:
    analysis = analyze(parse_program(text, "prog.dl"))
    return next(c for c in analysis.components if rel in c.relations)


def decomposition(text: str, rel: str) -> Decomposition:
    d = decompose(component(text, rel))
    assert isinstance(d, Decomposition), d
    return d


def refusal(text: str, rel: str) -> str:
    d = decompose(component(text, rel))
    assert isinstance(d, NotDecomposable), d
    return d.reason


def test_right_recursive_tc_passes_position_1_and_broadcasts_the_edges():
    d = decomposition("tc(x, y) :- e(x, y).\nr2: tc(x, z) :- e(x, y), tc(y, z).", "tc")
    assert d.position == 1
    assert d.broadcast == ("e",) and d.keyed == {}
    assert [r.name for r in d.recursive_rules] == ["r2"]
    assert len(d.exit_rules) == 1


def test_left_recursive_tc_passes_position_0():
    assert decomposition("tc(x, y) :- e(x, y).\ntc(x, z) :- tc(x, y), e(y, z).", "tc").position == 0


def test_a_relation_carrying_the_decomposition_variable_is_keyed_not_copied():
    d = decomposition(
        """
        reach(s, y) :- start(s), e(s, y).
        reach(s, z) :- reach(s, y), e(y, z), allowed(z, s), not banned(s).
        """,
        "reach",
    )
    assert d.position == 0
    assert d.keyed == {"allowed": 1}
    # e is joined on y; banned is negated: both go whole to every partition
    assert d.broadcast == ("banned", "e")


def test_a_relation_keyed_in_one_rule_only_is_broadcast():
    d = decomposition(
        """
        r(x, y) :- e(x, y).
        r(x, z) :- r(x, y), e(y, z), f(x).
        r(x, z) :- r(x, y), f(y), e(y, z).
        """,
        "r",
    )
    assert d.keyed == {} and d.broadcast == ("e", "f")


def test_mutual_recursion_passing_the_same_position_decomposes():
    d = decomposition(
        """
        odd(x, y) :- e(x, y).
        even(x, z) :- odd(x, y), e(y, z).
        odd(x, z) :- even(x, y), e(y, z).
        """,
        "odd",
    )
    assert d.position == 0 and len(d.recursive_rules) == 2


def test_comparisons_and_skolem_terms_off_the_position_are_allowed():
    d = decomposition(
        """
        p(x, y, n) :- e(x, y), w(y, n).
        p(x, f(y, z), n) :- p(x, y, n), e(y, z), n > 2.
        """,
        "p",
    )
    assert d.position == 0


def test_nonlinear_tc_is_refused():
    assert "nonlinear" in refusal("tc(x, y) :- e(x, y).\ntc(x, z) :- tc(x, y), tc(y, z).", "tc")


def test_mutual_recursion_that_swaps_positions_is_refused():
    why = refusal(
        """
        a(x, y) :- e(x, y).
        b(y, x) :- a(x, y).
        a(x, y) :- b(x, y).
        """,
        "a",
    )
    assert "no argument position" in why


def test_rules_passing_different_positions_are_refused():
    # one rule passes position 0, the other position 1: no single partitioning serves both
    assert "no argument position" in refusal(
        """
        tc(x, y) :- e(x, y).
        tc(x, z) :- tc(x, y), e(y, z).
        tc(x, z) :- e(x, y), tc(y, z).
        """,
        "tc",
    )


def test_symmetric_closure_is_refused():
    assert "no argument position" in refusal("s(x, y) :- e(x, y).\ns(x, y) :- s(y, x).", "s")


def test_a_constant_at_the_position_is_refused():
    assert "no argument position" in refusal("r(x, y) :- e(x, y).\nr(1, z) :- r(1, y), e(y, z).", "r")


def test_a_repeated_variable_in_the_recursive_atom_is_refused():
    assert "no argument position" in refusal("r(x, y) :- e(x, y).\nr(x, z) :- r(x, x), e(x, z).", "r")


def test_a_skolem_term_at_the_position_is_refused():
    assert "no argument position" in refusal("r(x, y) :- e(x, y).\nr(f(x), z) :- r(x, y), e(y, z).", "r")


def test_negation_of_a_component_relation_is_refused():
    # stratification rejects such a program; the analysis refuses it on its own too
    x, y = Var("x"), Var("y")
    rules = (
        Rule("r1", Atom("r", (x, y)), (Atom("e", (x, y)),)),
        Rule("r2", Atom("r", (x, y)), (Atom("r", (x, y)), Atom("r", (x, y), negated=True))),
    )
    assert "negates r" in decompose(Component(("r",), rules, True, 0)).reason  # type: ignore[union-attr]


@pytest.mark.parametrize(
    "text, rel, why",
    [
        ("q(x) :- e(x, y).", "q", "not recursive"),
        ("p() :- e(x, y).\np() :- p(), e(x, x).", "p", "no arguments"),
    ],
)
def test_non_recursive_and_nullary_components_are_refused(text, rel, why):
    assert why in refusal(text, rel)


def test_min_through_recursion_is_not_decomposed() -> None:
    """Aggregate selection runs in global rounds: a min/max component is never partition-local,
    even when it passes a position unchanged (here z)."""
    text = (
        "path(x, z, min(d)) :- e(x, z, d).\n"
        "path(x, z, min(d)) :- e(x, y, w), path(y, z, d1), d = w + d1.\n"
    )
    assert "aggregates (min)" in refusal(text, "path")


@pytest.mark.parametrize(("text", "want"), [
    ("path(x, y) :- edge(x, y).\npath(x, z) :- edge(x, y), path(y, z).\n", ("path", 1)),
    ("path(x, y) :- edge(x, y).\npath(x, z) :- edge(x, y), path(y, z).\nsame(x) :- path(x, x).\n",
     "2 derived relations (one is needed)"),
    ("path(x, y) :- edge(x, y).\npath(x, z) :- path(x, y), path(y, z).\n", "nonlinear"),
    ("a(x, y) :- e(x, y).\na(x, z) :- e(x, y), b(y, z).\nb(x, z) :- e(x, y), a(y, z).\n", "2 derived relations"),
])
def test_a_program_is_one_decomposable_relation_or_says_why_not(text: str, want) -> None:
    """The one analysis choosing the component-by-component top-k: the relation and its
    position, or the reason the stats line then gives."""
    from selp.engines.decompose import SingleRelation, single_relation

    got = single_relation(analyze(parse_program(text)), lambda rel: rel.startswith("demand"))
    if isinstance(want, tuple):
        assert isinstance(got, SingleRelation) and (got.relation, got.decomposition.position) == want
    else:
        assert isinstance(got, NotDecomposable) and want in got.reason


# --- decomposition by value components (the TC benchmark program's symmetry rule) ---

from selp.engines.decompose import decompose_any, decompose_values  # noqa: E402

TC_SYMMETRIC = """
tc(x, y) :- edge(x, y).
tc(x, y) :- tc(y, x).
tc(x, y) :- tc(x, z), edge(z, y).
"""


def test_symmetry_rule_fails_positions_but_decomposes_by_value_components() -> None:
    comp = component(TC_SYMMETRIC, "tc")
    assert isinstance(decompose(comp), NotDecomposable)
    d = decompose_any(comp)
    assert isinstance(d, Decomposition) and d.kind == "values"
    assert d.keyed == {"edge": 0} and d.broadcast == () and d.graph == ("edge",)
    assert [r.head.relation for r in d.exit_rules] == ["tc"] and len(d.recursive_rules) == 2


def test_a_passed_position_is_preferred_to_value_components() -> None:
    d = decompose_any(component("tc(x, y) :- e(x, y).\ntc(x, z) :- tc(x, y), e(y, z).", "tc"))
    assert isinstance(d, Decomposition) and d.kind == "position" and d.position == 0


@pytest.mark.parametrize("text,why", [
    # a head constant: tc(x, 0) links x to 0 although no input fact does
    ("tc(x, y) :- e(x, y).\ntc(y, x) :- tc(x, y).\ntc(x, 0) :- tc(x, y).", "head argument"),
    # atoms sharing no variable: a cross product joins two components
    ("tc(x, y) :- e(x, y).\ntc(y, x) :- tc(x, y).\ntc(x, w) :- tc(x, y), e(v, w).", "not connected"),
    # an arithmetic head: a new value outside every component
    ("tc(x, y) :- e(x, y).\ntc(y, x) :- tc(x, y).\ntc(x, y + 1) :- tc(x, y).", "head argument"),
    ("tc(x, y) :- e(x, y).\ntc(y, x) :- tc(x, y).\ntc(x, z) :- tc(x, y), tc(y, z).", "nonlinear"),
])
def test_value_components_refuse_what_could_leave_a_component(text: str, why: str) -> None:
    got = decompose_any(component(text, "tc"))
    assert isinstance(got, NotDecomposable) and why in got.reason
    if why != "nonlinear":  # both kinds refuse it for that one reason, said once
        assert "not by value components" in got.reason


def test_negated_inputs_are_broadcast_under_value_components() -> None:
    d = decompose_values(component(
        "tc(x, y) :- e(x, y).\ntc(y, x) :- tc(x, y), not bad(x).\ntc(x, z) :- tc(x, y), e(y, z).", "tc"))
    assert isinstance(d, Decomposition) and d.keyed == {"e": 0} and d.broadcast == ("bad",)
