"""Weak acyclicity: the dependency graph and the classical accepted/rejected mapping sets."""

from __future__ import annotations

import pytest

from helpers.paths import BIO
from selp.cdss.acyclicity import dependency_graph, special_cycle
from selp.cdss.config import load_cdss, parse_cdss
from selp.cdss.errors import CdssError

SCHEMA = """
[peers.P.relations.E]
attributes = ["a: int"]
[peers.P.relations.M]
attributes = ["a: int", "b: int"]
[peers.Q.relations.R]
attributes = ["a: int", "b: int"]
"""


def load(*mappings: str):
    text = "mappings = [" + ", ".join(f"'{m}'" for m in mappings) + "]\n" + SCHEMA
    return parse_cdss(text, "cdss.toml")


def test_running_example_graph_by_hand():
    c = load_cdss(BIO)
    edges = {
        (f"{e.source[0].name}.{e.source[1] + 1}", "=*>" if e.special else "->", f"{e.target[0].name}.{e.target[1] + 1}")
        for e in dependency_graph(c.mappings)
    }
    assert edges == {
        ("G.1", "->", "B.1"), ("G.3", "->", "B.2"),  # m1
        ("G.3", "->", "U.1"), ("G.2", "->", "U.2"),  # m2
        ("B.2", "->", "U.1"), ("B.2", "=*>", "U.2"),  # m3: n is frontier, c existential
        ("B.1", "->", "B.1"), ("U.1", "->", "B.2"),  # m4: c is not in the head, so no edges from it
    }
    # cyclic (B.2 -> U.1 -> B.2) but no cycle goes through the special edge
    assert special_cycle(c.mappings) is None


def test_self_feeding_existential_is_rejected():
    # Fagin et al.: E(x, y) -> exists z. E(y, z) generates nulls forever
    text = "mappings = ['m: R(x, y) -> exists z. R(y, z)']\n" + SCHEMA
    with pytest.raises(CdssError) as info:
        parse_cdss(text, "cdss.toml")
    assert str(info.value).startswith("cdss.toml:1:14: mapping m is not weakly acyclic: R.2 =*> R.2")


def test_classical_pair_rejected_with_the_cycle_named():
    # E(x) -> exists y. M(x, y) and M(x, y) -> E(y): each new manager is an employee who gets one
    with pytest.raises(CdssError) as info:
        load("m1: E(x) -> exists y. M(x, y)", "m2: M(x, y) -> E(y)")
    assert "mappings m1, m2 are not weakly acyclic: E.1 =*> M.2 -> E.1" in str(info.value)
    assert str(info.value).startswith("cdss.toml:1:14:")  # at m1, which holds the special edge


def test_classical_pair_accepted_when_the_null_does_not_flow_back():
    c = load("m1: E(x) -> exists y. M(x, y)", "m2: M(x, y) -> E(x)")
    assert len(c.mappings) == 2
    assert special_cycle(c.mappings) is None


def test_longer_cycle_through_two_peers():
    with pytest.raises(CdssError) as info:
        load("m3: M(i, n) -> exists c. R(n, c)", "m5: R(n, c) -> M(n, c)")
    assert "mappings m3, m5 are not weakly acyclic: M.2 =*> R.2 -> M.2" in str(info.value)


def test_full_tgds_are_always_weakly_acyclic():
    c = load("m1: M(x, y) -> M(y, x)", "m2: M(x, y), M(y, z) -> M(x, z)", "m3: M(x, y) -> R(y, x), E(x)")
    assert special_cycle(c.mappings) is None


def test_acyclicity_check_can_be_skipped():
    text = "mappings = ['m: R(x, y) -> exists z. R(y, z)']\n" + SCHEMA
    assert parse_cdss(text, "cdss.toml", check_acyclic=False).mappings[0].name == "m"
