"""Absorption provenance on the running example of [LTZIL10] and the properties it exists for:
exact deletion on cycles, no over-deletion, AggSel's reserve, the fallback to DRed."""

from __future__ import annotations

import pytest

from selp.language import parse_program
from selp.language.validate import analyze
from selp.maintain import formula as pb
from selp.maintain.absorption import Absorption
from selp.maintain.dred import DRed
from selp.maintain.order import dfs_order
from selp.maintain.recompute import from_scratch
from selp.maintain.session import apply

REACH = analyze(parse_program("reachable(s, d) :- link(s, d). reachable(s, d) :- link(s, z), reachable(z, d)."))
# the paper's example: link(A,B)=p1, (B,C)=p2, (C,A)=p3, (C,B)=p4
PAPER = {"link": {("A", "B"), ("B", "C"), ("C", "A"), ("C", "B")}}


def formulas(m: Absorption) -> dict[tuple, set[frozenset[str]]]:
    """Each reachable tuple's formula as a set of monomials of link names (restricted: a
    deletion leaves its restriction pending)."""
    m.settle()
    names = m.names()
    return {f: {frozenset(names[v] for v in pb.variables([mono])) for mono in form} for f, form in m.formulas["reachable"].items()}


def test_paper_example_formulas_are_minimal_and_deleting_p4_removes_nothing() -> None:
    m = Absorption(REACH, PAPER, formulas="monomials")
    p1, p2, p3, p4 = 'link("A", "B")', 'link("B", "C")', 'link("C", "A")', 'link("C", "B")'
    got = formulas(m)
    assert got[("C", "B")] == {frozenset({p4}), frozenset({p1, p3})}
    assert got[("B", "B")] == {frozenset({p2, p4}), frozenset({p1, p2, p3})}
    assert got[("A", "A")] == {frozenset({p1, p2, p3})}
    changes = m.apply({}, {"link": {("C", "B")}})
    assert changes.count() == 0  # every tuple is still derivable: nothing deleted, nothing re-derived
    assert formulas(m)[("C", "B")] == {frozenset({p1, p3})}


@pytest.mark.parametrize("algebra", ["monomials", "bdd"])
def test_tuples_on_a_cycle_do_not_keep_each_other_alive(algebra: str) -> None:
    m = Absorption(REACH, {"link": {("a", "b"), ("b", "c"), ("c", "b")}}, formulas=algebra)
    changes = m.apply({}, {"link": {("a", "b")}})
    assert changes.removed == {"reachable": {("a", "b"), ("a", "c")}}
    assert m.view() == from_scratch(REACH, m.base())


def test_dred_over_deletes_what_absorption_keeps() -> None:
    base = {"link": {("a", "b"), ("b", "a"), ("a", "c"), ("c", "a")}}
    a, d = Absorption(REACH, base), DRed(REACH, base)
    work = d.work
    assert a.apply({}, {"link": {("a", "c")}}).lines() == d.apply({}, {"link": {("a", "c")}}).lines()
    assert d.work - work > 0  # DRed enumerated derivations to over-delete and rederive


SHORTEST = analyze(parse_program("sp(s, d, min(c)) :- link(s, d, c). sp(s, d, min(c)) :- link(s, z, c1), sp(z, d, c2), c = c1 + c2."))


@pytest.mark.parametrize("algebra", ["monomials", "bdd"])
def test_aggsel_reserve_replaces_a_deleted_best(algebra: str) -> None:
    base = {"link": {("a", "b", 1), ("b", "c", 1), ("a", "c", 5)}}
    m = Absorption(SHORTEST, base, formulas=algebra)
    assert ("a", "c", 2) in m.view()["sp"]
    changes = m.apply({}, {"link": {("b", "c", 1)}})
    # the pruned candidate of cost 5, kept in reserve, is the new best
    assert changes.removed["sp"] == {("a", "c", 2), ("b", "c", 1)} and changes.added["sp"] == {("a", "c", 5)}


MULTI = analyze(parse_program(
    "route(s, d, min(c), min(h)) :- link(s, d, c), h = 1."
    " route(s, d, min(c), min(h)) :- link(s, z, c1), route(z, d, c2, h2), c = c1 + c2, h = h2 + 1."
))


@pytest.mark.parametrize("algebra", ["monomials", "bdd"])
def test_multi_aggsel_replaces_the_deleted_best_of_either_aggregate_and_what_it_fed(algebra: str) -> None:
    # a -> d: cheapest over b and c (cost 3, 3 hops), fewest hops direct (cost 10, 1 hop); s -> a
    # reads route(a, d), whose fact mixes the two paths
    base = {"link": {("a", "b", 1), ("b", "c", 1), ("c", "d", 1), ("a", "d", 10), ("s", "a", 1)}}
    m = Absorption(MULTI, base, formulas=algebra)
    view = m.view()["route"]
    assert ("a", "d", 3, 1) in view and ("s", "d", 4, 2) in view
    # the fewest-hops path goes: the hop count of (a, d) comes from the reserve, and the one of
    # (s, d), derived from (a, d)'s old fact, goes with it although its cost path still exists
    changes = m.apply({}, {"link": {("a", "d", 10)}})
    assert ("a", "d", 3, 3) in changes.added["route"] and ("s", "d", 4, 4) in changes.added["route"]
    assert m.view() == from_scratch(MULTI, {"link": base["link"] - {("a", "d", 10)}})
    # and back: the cheapest path goes, the direct link's cost takes over
    m.apply({"link": {("a", "d", 10)}}, {"link": {("b", "c", 1)}})
    assert {("a", "d", 10, 1), ("s", "d", 11, 2)} <= m.view()["route"]
    assert m.view() == from_scratch(MULTI, {"link": base["link"] - {("b", "c", 1)}})


def test_a_formula_past_the_cap_falls_back_to_dred_exactly() -> None:
    # a complete graph: many minimal paths per pair
    nodes = range(5)
    base = {"link": {(a, b) for a in nodes for b in nodes if a != b}}
    said: list[str] = []
    m = Absorption(REACH, {"link": set()}, cap=3, formulas="monomials")
    m2, changes = apply(m, base, {}, said.append)
    assert isinstance(m2, DRed) and said and "falling back to DRed" in said[0]
    assert m2.view() == from_scratch(REACH, base) and changes.added["reachable"] == m2.view()["reachable"]


def test_dfs_order_follows_paths() -> None:
    items = [("link", (s, d)) for s, d in [("a", "x"), ("a", "b"), ("b", "c"), ("x", "y")]]
    assert [f for _, f in dfs_order(items)] == [("a", "x"), ("x", "y"), ("a", "b"), ("b", "c")]


def test_dfs_order_puts_one_value_tuples_where_their_value_is_reached() -> None:
    # the sensor regions: near(t, s) is conjoined with triggered(s), and seed(r, s) starts a
    # region, so its variable comes first (no edge enters r) and triggered(s) right after the
    # edge that reaches s; a triggered sensor no edge reaches keeps its place at the end
    items = [("near", ("a", "b")), ("near", ("b", "c")), ("seed", ("r", "a")),
             ("triggered", ("a",)), ("triggered", ("c",)), ("triggered", ("z",))]
    assert dfs_order(items) == [("seed", ("r", "a")), ("triggered", ("a",)), ("near", ("a", "b")), ("near", ("b", "c")),
                                ("triggered", ("c",)), ("triggered", ("z",))]
    assert sorted(dfs_order(items)) == sorted(items)  # every tuple once


def test_bdd_state_survives_pickling() -> None:
    import pickle

    m = Absorption(REACH, PAPER, formulas="bdd")
    m2 = pickle.loads(pickle.dumps(m))
    assert m2.view() == m.view()
    assert m2.apply({}, {"link": {("B", "C")}}).lines() == m.apply({}, {"link": {("B", "C")}}).lines()
