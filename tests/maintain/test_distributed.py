"""The distributed form of absorption provenance (:mod:`selp.maintain.minship`,
:mod:`selp.maintain.spark`): after every change the view equals recomputation, whatever the
MinShip mode and number of nodes (random graphs with cycles, in-process rounds; a few examples on
Spark local[2]); MinShip ships less than plain provenance shipping, and a deletion ships less
than DRed under the same placement."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from selp.errors import SelpError
from helpers.paths import ROOT
from selp.language import parse_program, parse_program_file
from selp.language.validate import analyze
from selp.maintain.minship import localize
from selp.maintain.recompute import from_scratch
from selp.maintain.spark import Distributed, ShippingDRed

# non-linear: the anchor is tc(z, y), so tc(x, z) is replicated on z; `two` joins link on its
# second value, which no anchor holds first: link is replicated to every node
TC = """
    tc(x, y) :- link(x, y, _).
    tc(x, y) :- tc(x, z), tc(z, y).
    two(x, y) :- link(x, z, _), link(y, z, _).
"""
ANALYSES = {"reachable": analyze(parse_program_file(ROOT / "datasets" / "reachable.dl")), "tc": analyze(parse_program(TC))}
NODES = ["a", "b", "c", "d", "e"]
LINK = st.tuples(st.sampled_from(NODES), st.sampled_from(NODES), st.integers(1, 3))
STEP = st.tuples(st.sampled_from("+-"), LINK)


def check_stream(m, analysis, base: set, steps: list, data) -> None:
    current = {"link": set(base)}
    assert m.view() == from_scratch(analysis, current)
    for batch in steps:
        batch = [(op, data.draw(st.sampled_from(sorted(current["link"]))) if op == "-" and current["link"] else link) for op, link in batch]
        ins = {l for op, l in batch if op == "+"}
        dels = {l for op, l in batch if op == "-"} - ins
        current["link"] = (current["link"] - dels) | ins
        before = m.view()
        changes = m.apply({"link": ins}, {"link": dels})
        view = m.view()
        assert view == from_scratch(analysis, current)
        for rel in view:
            assert changes.added.get(rel, set()) == view[rel] - before[rel]
            assert changes.removed.get(rel, set()) == before[rel] - view[rel]


@pytest.mark.parametrize("name", sorted(ANALYSES))
@pytest.mark.parametrize("minship", ["eager", "lazy", "off"])
@pytest.mark.parametrize("formulas", ["monomials", "bdd"])
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(base=st.sets(LINK, max_size=10), steps=st.lists(st.lists(STEP, min_size=1, max_size=3), max_size=8),
       nodes=st.integers(1, 4), data=st.data())
def test_distributed_view_equals_recomputation_after_every_change(name, minship, formulas, base, steps, nodes, data):
    analysis = ANALYSES[name]
    m = Distributed(analysis, {"link": set(base)}, nodes=nodes, minship=minship, runner="local", formulas=formulas)
    check_stream(m, analysis, base, steps, data)


@pytest.mark.parametrize("mode", ["eager", "lazy"])
def test_bdd_formulas_keep_the_view_of_monomial_sets_and_count_shipping(mode):
    # a deletion on a ring with chords: the BDD form agrees with the monomial one and ships
    analysis = ANALYSES["reachable"]
    ms = {f: Distributed(analysis, {"link": ring(9)}, nodes=4, minship=mode, runner="local", formulas=f) for f in ("monomials", "bdd")}
    for victim in [("n0", "n1", 1), ("n3", "n4", 1)]:
        for m in ms.values():
            m.apply({}, {"link": {victim}})
        assert ms["bdd"].view() == ms["monomials"].view()
        assert ms["bdd"].last["shipped_rows"] > 0 and ms["bdd"].last["shipped_bytes"] > 0


def test_bdd_formulas_are_refused_on_spark_in_one_line():
    with pytest.raises(SelpError, match="runner local"):
        Distributed(ANALYSES["reachable"], {"link": ring(4)}, runner="spark", formulas="bdd")


def ring(n: int) -> set:
    """A bidirectional ring with chords: many alternative derivations, cycles everywhere."""
    links = set()
    for i in range(n):
        links |= {(f"n{i}", f"n{(i + 1) % n}", 1), (f"n{(i + 1) % n}", f"n{i}", 1)}
    links |= {(f"n{i}", f"n{(i + n // 2) % n}", 2) for i in range(0, n, 3)}
    return links


def test_minship_ships_less_and_lazy_least_on_insertion():
    analysis = ANALYSES["reachable"]
    shipped = {}
    for mode in ("off", "eager", "lazy"):
        m = Distributed(analysis, {"link": ring(9)}, nodes=4, minship=mode, runner="local")
        shipped[mode] = m.total["shipped_rows"]
    assert shipped["lazy"] < shipped["eager"] <= shipped["off"], shipped


def test_a_deletion_ships_less_than_dred():
    analysis = ANALYSES["reachable"]
    links = ring(12)
    m = Distributed(analysis, {"link": links}, nodes=4, minship="lazy", runner="local")
    d = ShippingDRed(analysis, {"link": links}, nodes=4)
    gone = ("n0", "n1", 1)
    assert m.apply({}, {"link": {gone}}).count() == d.apply({}, {"link": {gone}}).count() == 0
    assert m.view() == d.view()
    assert 0 < m.last["shipped_rows"] < d.last["shipped_rows"], (m.last, d.last)


def test_programs_with_negation_are_refused_in_one_line():
    analysis = analyze(parse_program("r(x, y) :- link(x, y, _).\nn(x, y) :- r(x, y), not r(y, x).\n"))
    with pytest.raises(SelpError, match="positive programs only; n uses negation"):
        localize(analysis)


def test_placement_ships_link_to_its_destination():
    loc = localize(ANALYSES["reachable"])
    assert loc.aliases == {"link@1": ("link", 1)}  # reachable(z, d) anchors: link(s, z) goes to z


@pytest.mark.spark
def test_on_spark_equal_to_recomputation(spark):
    """Nodes as Spark groups (applyInPandas per round): the same views; rows are shipped. (The
    counts may differ from in-process rounds: the order a node's join meets tuples follows set
    iteration, which differs between the driver and Spark's workers.)"""
    analysis = ANALYSES["reachable"]
    links = ring(6)
    m = Distributed(analysis, {"link": links}, nodes=3, minship="lazy", runner="spark", spark=spark)
    assert m.view() == from_scratch(analysis, {"link": links})
    assert m.total["shipped_rows"] > 0 and m.total["rounds"] >= 2
    for ins, dels in [(set(), {("n0", "n1", 1)}), ({("n2", "n4", 1)}, {("n1", "n2", 1), ("n2", "n1", 1)})]:
        links = (links - dels) | ins
        m.apply({"link": ins}, {"link": dels})
        assert m.view() == from_scratch(analysis, {"link": links})
