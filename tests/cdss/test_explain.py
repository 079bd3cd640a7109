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
from helpers.cdss import cdss_cli, load_running_example, make_cdss, ok, one_line_error

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
def test_rejected_tuples_get_why_not_trees_and_underivable_ones_none(tmp_path, engine):
    d = make_cdss(tmp_path)
    load_running_example(d)
    ok(cdss_cli("exchange", d, "--peer", "PBioSQL", "--engine", engine, "-q"))
    ok(cdss_cli("edit", d, "--peer", "PBioSQL", "-B(3, 2)"))
    # not published yet: the published base data still derives it
    with Store.open(d) as s:
        assert [w for w, _ in explain(s, "PBioSQL", "B(3, 2)", engine=engine).trees] == [3, 5, 7]
    ok(cdss_cli("publish", d, "--peer", "PBioSQL"))
    res = cdss_cli("explain", d, "--peer", "PBioSQL", "B(3, 2)", "--engine", engine)
    assert ok(res).startswith("B(3, 2) is not in PBioSQL's instance (publication 4)")
    assert "✗ PBioSQL's curators rejected it" in res.stdout
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


# -- why-not: a tuple the peer's policies keep out ----------------------------------------------
@pytest.mark.parametrize("engine", IN_PROCESS)
def test_a_distrusted_tuple_is_explained_with_the_rule_that_rejects_each_derivation(tmp_path, engine):
    """``selp cdss trust`` lists B(3, 3) as distrusted with cost 10: explain shows its derivations
    (each through m4 with nam = 3) and the distrust rule on m4 that rejects each."""
    d = make_cdss(tmp_path)
    load_running_example(d)
    with Store.open(d) as s:
        e = explain(s, "PBioSQL", "B(3, 3)", k=3, engine=engine)
    assert e.why_not and [w for w, _ in e.trees] == [10, 12, 14]
    for _, tree in e.trees:
        assert tree.mapping == "m4" and len(tree.rejected) == 1
        assert "distrust through m4 when nam != 2" in tree.rejected[0]
        assert all(not c.is_rejected() for c in tree.children)  # B(3, 2) and U(3, 2) are accepted
    out = ok(cdss_cli("explain", d, "--peer", "PBioSQL", "B(1, 3)", "--engine", engine)).splitlines()
    assert out[0].startswith("B(1, 3) is not in PBioSQL's instance (publication 3)")
    assert out[2] == "    B(1, 3)  <- m1 from PGUS  [cost 0]"
    assert out[3].startswith("      ✗ PBioSQL's rule at ")
    assert out[3].endswith("cdss.toml:45:1: distrust from PGUS when nam >= 3")
    assert out[4:] == ["    └─ G(1, 2, 3)  local data of PGUS  [cost 5]"]


def test_a_curators_rejection_is_named_in_the_why_not_tree(tmp_path):
    d = make_cdss(tmp_path)
    load_running_example(d)
    ok(cdss_cli("reject", d, "--peer", "PBioSQL", "B(3, 2)"))
    ok(cdss_cli("publish", d, "--peer", "PBioSQL"))
    data = json.loads(ok(cdss_cli("explain", d, "--peer", "PBioSQL", "B(3, 2)", "--format", "json")))
    assert data["why_not"] and not data["in_instance"]
    assert [t["weight"] for t in data["trees"]] == [3, 5, 7]
    assert all(any("curators rejected it" in r for r in t["tree"]["rejected"]) for t in data["trees"])


def test_an_accepted_tuple_is_not_a_why_not_and_a_tuple_nothing_derives_says_so(tmp_path):
    d = make_cdss(tmp_path)
    load_running_example(d)
    data = json.loads(ok(cdss_cli("explain", d, "--peer", "PBioSQL", "B(3, 2)", "--format", "json")))
    assert data["in_instance"] and not data["why_not"]
    assert all(t["tree"]["rejected"] == [] for t in data["trees"])
    out = ok(cdss_cli("explain", d, "--peer", "PBioSQL", "B(7, 7)"))
    assert out == "B(7, 7) has no derivation (publication 3); nothing to explain\n"
