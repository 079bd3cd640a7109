"""Transitive-closure components built by elimination (selp.maintain.closure): which programs
are recognised, and that elimination and one-edge insertions give exactly the formulas of the
semi-naive rounds (canonical formulas: the same monomial sets, the same BDDs), on random graphs
with cycles and under random change streams."""

from __future__ import annotations

import pickle

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from selp.language import parse_program
from selp.language.validate import analyze
from selp.maintain.absorption import Absorption
from selp.maintain.closure import Closure, closure_shape
from selp.maintain.recompute import from_scratch

SHAPES = {
    "right-linear": "r(x, y) :- link(x, y, _). r(x, y) :- link(x, z, _), r(z, y).",
    "left-linear": "r(x, y) :- link(x, y, _). r(x, y) :- r(x, z), link(z, y, _).",
    "non-linear": "r(x, y) :- link(x, y, _). r(x, y) :- r(x, z), r(z, y).",
    "both, reversed body order": "r(x, y) :- link(x, y, c). r(x, y) :- r(z, y), link(x, z, _). r(x, y) :- r(z, y), r(x, z).",
}


def shape(text: str) -> Closure | None:
    (comp,) = [c for c in analyze(parse_program(text)).components if c.recursive]
    return closure_shape(comp)


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_closure_shapes_are_recognised(name: str) -> None:
    assert shape(SHAPES[name]) == Closure("r", "link", 0, 1)


def test_an_edge_read_backwards_is_a_closure_of_the_reversed_graph() -> None:
    assert shape("r(x, y) :- e(y, x). r(x, y) :- e(z, x), r(z, y).") == Closure("r", "e", 1, 0)


@pytest.mark.parametrize("text", [
    "r(x, y) :- link(x, y, 1). r(x, y) :- link(x, z, 1), r(z, y).",  # a constant filters edges
    "r(x, y) :- link(x, y, c), c > 1. r(x, y) :- link(x, z, c), r(z, y), c > 1.",  # a condition
    "r(x, y) :- link(x, y, _). r(x, y) :- link(x, z, _), r(z, y), ok(z).",  # another atom
    "r(x, y) :- link(x, y, _). r(x, y) :- hop(x, z), r(z, y).",  # two edge relations
    "r(x, y) :- link(x, y, _). r(x, y) :- link(x, z, _), r(y, z).",  # not a path
    "r(x, x) :- link(x, _, _). r(x, y) :- link(x, z, _), r(z, y).",  # not an edge
])
def test_other_recursions_are_not_taken_for_closures(text: str) -> None:
    assert shape(text) is None


NODES = ["a", "b", "c", "d", "e", "f"]
LINK = st.tuples(st.sampled_from(NODES), st.sampled_from(NODES), st.integers(1, 2))
STEP = st.tuples(st.sampled_from("+-"), LINK)


def canonical(m: Absorption, rel: str) -> dict[tuple, object]:
    """Each tuple's formula in a form comparable across maintainers: the minimal monomial set,
    or the BDD's expression (same variable order: the same BDD gives the same text). Restricted
    by the pending deleted variables (not in place): a stale stored formula equals the tuple's
    formula modulo them, and which formulas are still stale depends on what was read."""
    kill = m.alg.killer(m.pending)
    forms = {f: m.alg.restrict(form, kill) if m.pending else form for f, form in m.formulas[rel].items()}
    if m.alg.name == "monomials":
        return {f: frozenset(form) for f, form in forms.items()}
    return {f: m.alg.show(form, {}) for f, form in forms.items()}


@pytest.mark.parametrize("name", sorted(SHAPES))
@pytest.mark.parametrize("algebra", ["monomials", "bdd"])
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(base=st.sets(LINK, max_size=14), steps=st.lists(st.lists(STEP, min_size=1, max_size=3), max_size=6), data=st.data())
def test_elimination_gives_the_formulas_of_the_rounds(name: str, algebra: str, base: set, steps: list, data: st.DataObject) -> None:
    analysis = analyze(parse_program(SHAPES[name]))
    current = {"link": set(base)}
    fast = Absorption(analysis, current, formulas=algebra, lazy=False)
    held = Absorption(analysis, current, formulas=algebra)  # absorbed new edges held unexpanded
    slow = Absorption(analysis, current, formulas=algebra, build="rounds")
    assert canonical(fast, "r") == canonical(slow, "r")
    for batch in steps:
        batch = [(op, data.draw(st.sampled_from(sorted(current["link"]))) if op == "-" and current["link"] else link) for op, link in batch]
        ins = {l for op, l in batch if op == "+"}
        dels = {l for op, l in batch if op == "-"} - ins
        current["link"] = (current["link"] - dels) | ins
        lines = slow.apply({"link": ins}, {"link": dels}).lines()
        assert fast.apply({"link": ins}, {"link": dels}).lines() == lines
        assert held.apply({"link": ins}, {"link": dels}).lines() == lines
        assert canonical(fast, "r") == canonical(slow, "r")
        assert fast.view() == held.view() == from_scratch(analysis, current)
        # the held edges expanded (in a copy: the original keeps holding them) give every
        # tuple its whole formula
        folded = pickle.loads(pickle.dumps(held))
        folded.fold()
        assert canonical(folded, "r") == canonical(slow, "r")


def test_elimination_forms_fewer_conjunctions_than_the_rounds_on_a_ring_of_cliques() -> None:
    # four 4-cliques joined in a ring by single links: the transit-stub network in small
    cliques = [[f"n{c}{i}" for i in range(4)] for c in range(4)]
    links = {(a, b, 1) for q in cliques for a in q for b in q if a != b}
    links |= {(cliques[c][0], cliques[(c + 1) % 4][0], 1) for c in range(4)}
    analysis = analyze(parse_program(SHAPES["right-linear"]))
    fast = Absorption(analysis, {"link": links}, formulas="bdd")
    slow = Absorption(analysis, {"link": links}, formulas="bdd", build="rounds")
    assert canonical(fast, "r") == canonical(slow, "r") and len(fast.formulas["r"]) == 16 * 16
    assert fast.work < slow.work / 2
