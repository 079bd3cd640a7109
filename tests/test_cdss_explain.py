"""``selp cdss explain``: top-k derivation trees of a peer's tuple through the mappings, ranked by
the peer's trust costs, drawn with mapping names and source peers.

Example 9 by hand (PBioSQL's costs: its own data 0, PuBio's 1, PGUS's 5; m4 adds 2):
B(3,2) through m4 from B(3,5), U(2,5) costs 0 + 1 + 2 = 3; through m1 from G(3,5,2) costs 5;
through m4 from B(3,5) and U(2,5) imported by m2 from G(3,5,2) costs 0 + 5 + 2 = 7.
"""

from __future__ import annotations

import json

import pytest

from selp.cdss.explain import Step, explain
from selp.cdss.model import RelationRef
from selp.cdss.store import Store
from test_cdss_store import cdss_cli, load_running_example, make_cdss, ok, one_line_error

IN_PROCESS = ["embedded", "reference"]  # the default engine and the oracle: the same trees


@pytest.mark.parametrize("engine", IN_PROCESS)
def test_costs_of_b32_are_3_5_7_with_named_steps(tmp_path, engine):
    d = make_cdss(tmp_path)
    load_running_example(d)
    with Store.open(d) as s:
        e = explain(s, "PBioSQL", "B(3, 2)", k=3, engine=engine)
    assert [w for w, _ in e.trees] == [3, 5, 7]
    best, second, third = (t for _, t in e.trees)
    b, u, g = RelationRef("PBioSQL", "B"), RelationRef("PuBio", "U"), RelationRef("PGUS", "G")
    assert best == Step(b, (3, 2), "mapping", "m4", ("PBioSQL", "PuBio"), 2, (
        Step(b, (3, 5), "local", None, ("PBioSQL",), 0),
        Step(u, (2, 5), "local", None, ("PuBio",), 1),
    ))
    assert second == Step(b, (3, 2), "mapping", "m1", ("PGUS",), 0, (Step(g, (3, 5, 2), "local", None, ("PGUS",), 5),))
    assert third.children[1] == Step(u, (2, 5), "mapping", "m2", ("PGUS",), 0, (Step(g, (3, 5, 2), "local", None, ("PGUS",), 5),))
    assert e.threshold == 10 and e.publication == 3


@pytest.mark.parametrize("engine", IN_PROCESS)
def test_explain_cli_text(tmp_path, engine):
    d = make_cdss(tmp_path)
    load_running_example(d)
    out = ok(cdss_cli("explain", d, "--peer", "PBioSQL", "B(3, 2)", "-k", "2", "--monoid", "cost", "--engine", engine))
    assert out.splitlines() == [
        "B(3, 2) as PBioSQL sees it: 2 best derivation(s) by cost, publication 3",
        "  #1  cost 3  (within PBioSQL's threshold 10)",
        "    B(3, 2)  <- m4 from PBioSQL, PuBio  [cost 2]",
        "    ├─ B(3, 5)  local data of PBioSQL  [cost 0]",
        "    └─ U(2, 5)  local data of PuBio  [cost 1]",
        "  #2  cost 5  (within PBioSQL's threshold 10)",
        "    B(3, 2)  <- m1 from PGUS  [cost 0]",
        "    └─ G(3, 5, 2)  local data of PGUS  [cost 5]",
    ]


@pytest.mark.parametrize("engine", IN_PROCESS)
def test_explain_cli_json(tmp_path, engine):
    d = make_cdss(tmp_path)
    load_running_example(d)
    data = json.loads(ok(cdss_cli("explain", d, "--peer", "PBioSQL", "PBioSQL.B(3, 2)", "--format", "json", "--engine", engine)))
    assert data["fact"] == {"relation": "B", "peer": "PBioSQL", "args": [3, 2]}
    assert [t["weight"] for t in data["trees"]] == [3, 5, 7]
    tree = data["trees"][2]["tree"]
    assert (tree["mapping"], tree["sources"], tree["weight"]) == ("m4", ["PBioSQL", "PuBio"], 2)
    assert [(c["relation"], c["step"], c["mapping"]) for c in tree["children"]] == [("B", "local", None), ("U", "mapping", "m2")]


@pytest.mark.parametrize("engine", IN_PROCESS)
def test_another_peers_viewpoint_weighs_nothing(tmp_path, engine):
    """PGUS has no ranked trust: every tree costs 0, so all three rank equal (by size)."""
    d = make_cdss(tmp_path)
    load_running_example(d)
    with Store.open(d) as s:
        e = explain(s, "PGUS", "B(3, 2)", k=3, engine=engine)
    assert [w for w, _ in e.trees] == [0, 0, 0] and e.threshold is None
    assert {t.mapping for _, t in e.trees} == {"m1", "m4"}


@pytest.mark.parametrize("engine", IN_PROCESS)
def test_rejected_and_underivable_tuples_have_no_trees(tmp_path, engine):
    d = make_cdss(tmp_path)
    load_running_example(d)
    ok(cdss_cli("exchange", d, "--peer", "PBioSQL", "--engine", engine, "-q"))
    ok(cdss_cli("edit", d, "--peer", "PBioSQL", "-B(3, 2)"))
    # not published yet: the published base data still derives it
    with Store.open(d) as s:
        assert [w for w, _ in explain(s, "PBioSQL", "B(3, 2)", engine=engine).trees] == [3, 5, 7]
    ok(cdss_cli("publish", d, "--peer", "PBioSQL"))
    res = cdss_cli("explain", d, "--peer", "PBioSQL", "B(3, 2)", "--engine", engine)
    assert ok(res) == "B(3, 2) has no derivation (publication 4); nothing to explain\n"
    assert "instance reflects an older publication" in res.stderr
    out = ok(cdss_cli("explain", d, "--peer", "PBioSQL", "B(9, 9)", "--engine", engine))
    assert out.startswith("B(9, 9) has no derivation")


def test_explain_errors_are_one_line(tmp_path):
    d = make_cdss(tmp_path)
    load_running_example(d)
    one_line_error(cdss_cli("explain", d, "--peer", "PBioSQL", "X(1)"), "no relation X (relations: G, B, U)")
    one_line_error(cdss_cli("explain", d, "--peer", "PBioSQL", "B(3)"), "B has 2 attribute(s)")
    one_line_error(cdss_cli("explain", d, "--peer", "PBioSQL", "B(3, x)"), "B.nam is int, got 'x'")
    one_line_error(cdss_cli("explain", d, "--peer", "Nobody", "B(3, 2)"), "unknown peer 'Nobody'")
    one_line_error(cdss_cli("explain", d, "--peer", "PBioSQL", "B 3 2"), "expected RELATION(value, ...)")
