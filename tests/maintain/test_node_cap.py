"""The BDD node cap is read inside a long step (a new edge's expansion into a closure), not only
after it: the step stops a small margin past the cap, and the session falls back to DRed
exactly, saying so."""

from __future__ import annotations

import pytest

from selp.language import parse_program
from selp.language.validate import analyze
from selp.maintain import session
from selp.maintain.absorption import Absorption
from selp.maintain.dred import DRed
from selp.maintain.formula import Blowup
from selp.maintain.recompute import from_scratch

REACH = analyze(parse_program("reachable(s, d) :- link(s, d). reachable(s, d) :- link(s, z), reachable(z, d)."))
# five 4-cliques in a chain; the new link closing it into a ring is expanded into every pair
# (400, ~1,200 BDD ops), 160 of them new
CLIQUES = [[f"n{c}{i}" for i in range(4)] for c in range(5)]
LINKS = {(a, b) for q in CLIQUES for a in q for b in q if a != b} | {(CLIQUES[c][0], CLIQUES[c + 1][0]) for c in range(4)}
NEW = ("n43", "n01")


def nodes(m: Absorption) -> int:
    return m.alg.bdd.statistics(exact_node_count=False)["n_nodes"]


@pytest.mark.filterwarnings("ignore::UserWarning")  # dd's note on a statistics key
def test_an_expansion_stops_near_the_node_cap_and_the_session_falls_back_exactly() -> None:
    free = Absorption(REACH, {"link": LINKS}, formulas="bdd", lazy=False)
    start = nodes(free)
    free.apply({"link": {NEW}}, {})
    grown = nodes(free) - start
    assert grown > 1000  # the expansion is long enough to pass the cap by far in one go
    m = Absorption(REACH, {"link": LINKS}, formulas="bdd", lazy=False)
    m.alg.CHECK_EVERY = 8  # read the count every 8 operations (256 by default)
    m.alg.node_cap = nodes(m) + 100
    with pytest.raises(Blowup) as err:
        m.apply({"link": {NEW}}, {})
    count, _, cap = err.value.args
    assert cap < count < cap + grown // 3  # stopped within the step, long before its end
    # through the session: the batch is redone by DRed, the view exact, the fallback said
    m = Absorption(REACH, {"link": LINKS}, formulas="bdd", lazy=False)
    m.alg.CHECK_EVERY, m.alg.node_cap = 8, nodes(m) + 100
    said: list[str] = []
    after, changes = session.apply(m, {"link": {NEW}}, {}, said.append)
    want = from_scratch(REACH, {"link": LINKS | {NEW}})
    assert isinstance(after, DRed) and after.view() == want
    assert changes.added["reachable"] == want["reachable"] - from_scratch(REACH, {"link": LINKS})["reachable"]
    assert len(changes.added["reachable"]) == 160
    assert len(said) == 1 and "live BDD nodes" in said[0] and "falling back to DRed" in said[0]
