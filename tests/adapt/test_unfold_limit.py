"""Stacked unions unfold into exponentially many conjunctive queries (a view over n atoms of a
view of r rules: r^n); past ``UNFOLD_LIMIT`` the unfolding stops, the view is recomputed and is
no folding target -- adaptation still gives recomputation's instances, where enumerating the
unfolding hung it."""

from __future__ import annotations

import pytest

from helpers.zprog import EDB, brute_force
from selp.adapt import rewrite
from selp.adapt.adapt import adapt, commit, materialise
from selp.adapt.rules import query_of_rules
from selp.adapt.zduck import DuckZ
from selp.adapt.zprogram import from_text, to_text
from selp.language.parser import parse_program

# v0: a union of two rules; v1 and v3 each join three atoms of the view below in three rules:
# v1 forms 42 CQs (10 once cancelled), v3 about 3,300 (789 once cancelled: 28 s unlimited)
STACK = """
r1: v0(x) :- e0(x).
r2: v0(x) :- e1(x, y).
r3: v1(x, y) :- v0(x), v0(y), e2(x, y).
r4: v1(x, y) :- v0(x), v0(y), v0(x).
r5: v1(x, y) :- e2(x, y), v0(y), v0(x).
r6: v3(x, y) :- v1(x, y), v1(y, x), v1(x, x).
r7: v3(x, y) :- v1(x, z), v1(z, y), v1(y, y).
r8: v3(x, y) :- v1(x, y), v1(x, z), v1(z, x).
r9: v4(x) :- v3(x, x).
"""
DATA = {"e0": {(1,): 1, (2,): 2}, "e1": {(1, 2): 1, ("a", 1): -1}, "e2": {(1, 2): 1, (2, 1): 1, (1, 1): 3}}


def test_an_unfolding_past_the_limit_raises() -> None:
    defs = {}
    prog = parse_program(STACK)
    for view in ("v0", "v1"):
        defs[view] = rewrite.unfold(query_of_rules([r for r in prog.rules if r.head.relation == view]), defs)
    assert len(defs["v1"]) >= 8  # not vacuous: the unions multiply
    with pytest.raises(rewrite.TooLarge):
        rewrite.unfold(query_of_rules([r for r in prog.rules if r.head.relation == "v3"]), defs, limit=100)


@pytest.mark.parametrize("provenance", [False, True], ids=["plain", "provenance"])
def test_views_past_the_limit_are_recomputed_and_the_instances_are_right(monkeypatch, provenance: bool) -> None:
    monkeypatch.setattr(rewrite, "UNFOLD_LIMIT", 100)  # v1 forms 42 CQs; v3 thousands (28 s unlimited)
    old = parse_program(STACK)
    new = parse_program(STACK.replace("r2: v0(x) :- e1(x, y).", "r2: v0(y) :- e1(x, y)."))
    engine = DuckZ()
    for rel, arity in EDB.items():
        engine.put(rel, arity, to_text(DATA[rel]))
    materialise(engine, old, provenance)
    plans = {p.relation: p.plan for p in adapt(engine, old, new, provenance)}
    # past the limit (v3) and reading it (v4): the input plan as it is, recomputation over the
    # new instances below, no search; below it (v1) the search ran
    for view in ("v3@new", "v4@new"):
        assert plans[view].explored == 0 and plans[view].cost == plans[view].recompute_cost, view
    assert plans["v1@new"].explored > 0
    commit(engine, old, new, provenance)
    want = brute_force(new, DATA)
    for view in ("v0", "v1", "v3", "v4"):
        assert from_text(engine.get(view)) == want.get(view, {}), view
