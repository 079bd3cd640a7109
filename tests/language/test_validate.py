"""Static checks (safety, arities, names) and stratification of programs."""

from __future__ import annotations

import pytest

from selp.errors import ProgramError
from selp.language import Var, parse_program
from selp.language.validate import analyze


def analyze_text(text: str):
    return analyze(parse_program(text, "prog.dl"))


def error(text: str) -> ProgramError:
    with pytest.raises(ProgramError) as info:
        analyze_text(text)
    return info.value


# --- arities and names ------------------------------------------------------------------------


def test_arity_mismatch_between_rules_names_both_places():
    err = error("p(x) :- q(x).\n\np(x, y) :- q(x), q(y).")
    assert str(err.location) == "prog.dl:3:1"
    assert "arity mismatch: p has 2 argument(s) here but 1" in err.message
    assert "prog.dl:1:1" in err.message


def test_arity_mismatch_in_a_body_atom_and_against_a_declaration():
    err = error("p(x) :- q(x).\np(x) :- q(x, x).")
    assert str(err.location) == "prog.dl:2:9"
    assert "q has 2 argument(s) here but 1" in err.message
    err = error(".decl q(a: str, b: str)\np(x) :- q(x).")
    assert str(err.location) == "prog.dl:2:9"
    assert "in its declaration at prog.dl:1:1" in err.message


def test_arity_mismatch_of_an_inline_fact():
    err = error('p(x) :- q(x).\nq("a", "b").')
    assert str(err.location) == "prog.dl:2:1"
    assert "q has 2 argument(s)" in err.message


def test_declared_twice_and_duplicate_column():
    err = error(".decl R(a: str)\n.decl R(a: str)")
    assert str(err.location) == "prog.dl:2:1" and "declared twice" in err.message
    err = error(".decl R(a: str, a: int)")
    assert "column a is declared twice in R" in err.message


def test_duplicate_rule_names():
    err = error("r1: p(x) :- q(x).\nr1: p(x) :- r(x).")
    assert str(err.location) == "prog.dl:2:1"
    assert "rule name r1 is used twice (first at prog.dl:1:1)" in err.message


def test_explicit_names_do_not_clash_with_generated_ones():
    a = analyze_text("p(x) :- q(x).\nr1: p(x) :- r(x).\np(x) :- s(x).")
    assert sorted(r.name for r in a.program.rules) == ["r1", "r2", "r3"]


def test_skolem_function_arity_mismatch():
    err = error('p(f(x)) :- q(x).\np(f(x, "a")) :- q(x).')
    assert str(err.location) == "prog.dl:2:1"
    assert "Skolem function f has 2 argument(s) here but 1" in err.message


def test_skolem_arity_mismatch_inside_a_nested_term():
    err = error("p(g(f(x))) :- q(x).\np(f(x, x)) :- q(x).")
    assert "Skolem function f has" in err.message


# --- safety -----------------------------------------------------------------------------------


def test_unsafe_head_variable():
    err = error("p(x, x) :- q(x).\np(x, y) :- q(x).")
    assert str(err.location) == "prog.dl:2:1"
    assert "unsafe variable y in rule r2" in err.message and "positive body atom" in err.message


def test_head_variable_bound_only_by_negation_or_order_comparison_is_unsafe():
    assert "unsafe variable y" in error("p(y) :- q(x), not r(y).").message
    assert "unsafe variable y" in error("p(y) :- q(x), x < y.").message


def test_an_equality_with_bound_variables_on_one_side_binds_the_other():
    a = analyze_text("p(y, z) :- q(x), x = y, z = -(x + y) * 2.")
    (rule,) = a.program.rules
    assert [(v.name, i) for i, v, _ in rule.assignments()] == [("y", 1), ("z", 2)]


@pytest.mark.parametrize(
    "text, col, what",
    [
        ("p(c) :- q(x), c = y + 1.", 15, "unsafe variable y"),
        ("p(x) :- q(x, y + 1).", 9, "arithmetic in a body atom"),
        ("p(f(x + 1)) :- q(x).", 1, "arithmetic inside the Skolem term f"),
        ("p(x) :- q(x), not r(x + 1).", 15, "arithmetic in a body atom"),
    ],
)
def test_misplaced_or_unbound_arithmetic_is_a_located_error(text, col, what):
    err = error(text)
    assert str(err.location) == f"prog.dl:1:{col}"
    assert what in err.message


def test_unsafe_variable_inside_a_skolem_head():
    err = error("p(f(x, y)) :- q(x).")
    assert "unsafe variable y" in err.message


def test_a_variable_only_in_one_negated_atom_is_local_to_it():
    """``not r(x, y)`` with ``y`` nowhere else means "no y with r(x, y)" (Nemo's reading)."""
    a = analyze_text("p(x) :- q(x),\n  not r(x, y, y).")
    rule = a.program.rules[0]
    assert rule.negation_locals(rule.negative_atoms[0]) == {Var("y")}


def test_a_variable_shared_by_two_negated_atoms_only_is_unsafe():
    err = error("p(x) :- q(x),\n  not r(x, y), not s(y).")
    assert str(err.location) == "prog.dl:2:3"
    assert "unsafe variable y" in err.message and "only in negated atoms" in err.message


def test_a_negated_variable_also_compared_is_unsafe():
    err = error("p(x) :- q(x),\n  not r(x, y), y > 1.")
    assert str(err.location) == "prog.dl:2:3"
    assert "unsafe variable y" in err.message and "negated atom" in err.message


def test_anonymous_variable_in_negation_is_safe():
    a = analyze_text("p(x) :- q(x), not r(x, _).")
    assert a.idb == {"p"} and a.edb == {"q", "r"}


@pytest.mark.parametrize("cmp, var", [("x < y", "y"), ("y != 3", "y"), ('"a" < y', "y"), ("x > _", "_"), ("x + y > 1", "y")])
def test_unsafe_compared_variable(cmp, var):
    err = error(f"p(x) :- q(x), {cmp}.")
    assert str(err.location) == "prog.dl:1:15"
    assert f"unsafe variable {var} in rule r1: a compared variable" in err.message


def test_a_variable_bound_by_a_later_atom_is_safe():
    a = analyze_text("p(x) :- x < y, not r(y), q(x), s(y).")
    assert a.idb == {"p"}


def test_anonymous_variable_in_a_head():
    err = error("p(x, _) :- q(x).")
    assert "'_' in the head of rule r1" in err.message
    assert "'_' in the head" in error("p(f(_)) :- q(x).").message


def test_skolem_term_in_a_body_atom_or_negation():
    err = error("p(x) :- q(x),\n r(f(x)).")
    assert str(err.location) == "prog.dl:2:2"
    assert "Skolem term f(...) in a body atom" in err.message
    err = error("p(x) :- q(x), not r(f(x)).")
    assert "Skolem term f(...) in a negated atom" in err.message


def test_rules_without_positive_atoms_need_ground_heads():
    a = analyze_text("p(1) :- 1 < 2.\nok :- not bad.")
    assert a.idb == {"p", "ok"} and a.edb == {"bad"}


# --- EDB versus IDB -----------------------------------------------------------------------------


def test_relation_with_rules_and_inline_facts_suggests_a_copy_rule():
    err = error('dealsWith(a, b) :- dealsWith(b, a).\n(0.9): dealsWith("Cuba", "France").')
    assert str(err.location) == "prog.dl:2:8"  # the fact's atom
    assert "dealsWith has both rules and input facts" in err.message
    assert "dealsWith(x1, x2) :- dealsWith_edb(x1, x2)." in err.message


def test_edb_and_idb_sets_and_arities():
    a = analyze_text(".decl unused(a: int)\np(x, y) :- e(x, y), not n(x).\nq(x) :- p(x, _).\nf(1).")
    assert a.idb == {"p", "q"}
    assert a.edb == {"e", "n", "f", "unused"}
    assert a.arities == {"p": 2, "e": 2, "n": 1, "q": 1, "f": 1, "unused": 1}


# --- stratification -------------------------------------------------------------------------------


def test_negation_on_itself_is_not_stratifiable():
    err = error("p(x) :- q(x).\np(x) :- q(x), not p(x).")
    assert str(err.location) == "prog.dl:2:15"
    assert "not stratifiable: p depends negatively on itself" in err.message


def test_negation_through_a_cycle_names_the_cycle():
    err = error(
        "a(x) :- e(x), not c(x).\n"
        "b(x) :- a(x).\n"
        "c(x) :- b(x).\n"
    )
    assert str(err.location) == "prog.dl:1:15"
    assert "not stratifiable: a depends negatively on c, which depends on a" in err.message
    assert "(a -> not c -> b -> a)" in err.message
    assert "negation through recursion" in err.message


def test_negation_of_a_lower_recursive_component_is_fine():
    a = analyze_text(
        "tc(x, y) :- e(x, y).\n"
        "tc(x, y) :- tc(x, z), e(z, y).\n"
        "node(x) :- e(x, _).\nnode(y) :- e(_, y).\n"
        "unreach(x, y) :- node(x), node(y), not tc(x, y).\n"
    )
    assert a.strata == [["node", "tc"], ["unreach"]]


def test_strata_and_components_order_for_a_multi_stratum_program():
    a = analyze_text(
        # stratum 2
        "top(x) :- b(x), not mid(x).\n"
        # stratum 1: mid and mid2 are mutually recursive and negate a
        "mid(x) :- mid2(x), not a(x).\n"
        "mid2(x) :- mid(x).\n"
        "mid2(x) :- b(x).\n"
        # stratum 0
        "a(x) :- e(x, _).\n"
        "b(x) :- e(_, x).\n"
        "b(x) :- b(y), e(y, x).\n"
    )
    assert a.strata == [["a", "b"], ["mid", "mid2"], ["top"]]
    comps = {c.relations: c for c in a.components}
    assert set(comps) == {("a",), ("b",), ("mid", "mid2"), ("top",)}
    assert [comps[k].stratum for k in [("a",), ("b",), ("mid", "mid2"), ("top",)]] == [0, 0, 1, 2]
    assert comps[("b",)].recursive and comps[("mid", "mid2")].recursive
    assert not comps[("a",)].recursive and not comps[("top",)].recursive
    assert {r.name for r in comps[("mid", "mid2")].rules} == {"r2", "r3", "r4"}
    # every component comes after the components it depends on
    order = [c.relations for c in a.components]
    pos = {rel: i for i, rels in enumerate(order) for rel in rels}
    for comp in a.components:
        for rule in comp.rules:
            for atom in rule.positive_atoms + rule.negative_atoms:
                if atom.relation in a.idb and atom.relation not in comp.relations:
                    assert pos[atom.relation] < pos[rule.head.relation]


def test_self_recursion_without_negation_is_one_recursive_component():
    a = analyze_text("p(x) :- e(x).\np(x) :- p(x), e(x).")
    (comp,) = a.components
    assert comp.relations == ("p",) and comp.recursive and comp.stratum == 0


def test_deep_dependency_chain_does_not_overflow():
    n = 1500  # deeper than Python's default recursion limit
    rules = ["p0(x) :- e(x)."] + [f"p{i}(x) :- p{i - 1}(x), not q(x)." for i in range(1, n)]
    a = analyze_text("\n".join(rules))
    assert len(a.components) == n
    assert [c.relations[0] for c in a.components] == [f"p{i}" for i in range(n)]
