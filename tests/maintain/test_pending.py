"""Deletion by evaluation with the restriction deferred: a deletion decides which tuples die under
every variable deleted since the last restriction, a re-inserted link is alive again, an
insertion restricts only the stale formulas it reads, and a state saved with deletions pending
resumes exactly (in the process and through ``selp maintain``). ``compact=0`` turns the
background compaction off, so that what is pending stays pending."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest
from helpers.cli import selp

from selp.language import parse_program
from selp.language.validate import analyze
from selp.maintain.absorption import Absorption
from selp.maintain.recompute import from_scratch

REACH = analyze(parse_program("reachable(s, d) :- link(s, d). reachable(s, d) :- link(s, z), reachable(z, d)."))
# a diamond with a way back: d is reached from a through b or through c
DIAMOND = {"link": {("a", "b"), ("b", "d"), ("a", "c"), ("c", "d"), ("d", "a")}}


def _check(m: Absorption, base: dict) -> None:
    assert m.view() == from_scratch(REACH, base)


@pytest.mark.parametrize("algebra", ["monomials", "bdd"])
def test_two_deletions_kill_what_neither_kills_alone(algebra: str) -> None:
    m = Absorption(REACH, DIAMOND, formulas=algebra, compact=0)
    base = {"link": set(DIAMOND["link"])}
    changes = m.apply({}, {"link": {("a", "b")}})
    base["link"].discard(("a", "b"))
    assert ("reachable", ("a", "d")) not in {(r, f) for r, fs in changes.removed.items() for f in fs}
    assert m.pending  # the restriction waits
    _check(m, base)
    # (a, d)'s stored formula still has the path through the deleted (a, b): only the pending
    # set, evaluated together, says that cutting (a, c) leaves nothing
    changes = m.apply({}, {"link": {("a", "c")}})
    base["link"].discard(("a", "c"))
    assert ("a", "d") in changes.removed["reachable"]
    _check(m, base)


@pytest.mark.parametrize("algebra", ["monomials", "bdd"])
def test_a_reinserted_link_is_alive_not_pending_deleted(algebra: str) -> None:
    m = Absorption(REACH, DIAMOND, formulas=algebra, compact=0)
    base = {"link": set(DIAMOND["link"])}
    cut = m.apply({}, {"link": {("a", "b")}}).removed["reachable"]
    changes = m.apply({"link": {("a", "b")}}, {})
    assert changes.added["reachable"] == cut and ("a", "b") in cut
    m.apply({}, {"link": {("a", "c")}})
    base["link"].discard(("a", "c"))
    assert ("a", "d") in m.view()["reachable"]  # through the re-inserted (a, b)
    _check(m, base)


@pytest.mark.parametrize("algebra", ["monomials", "bdd"])
def test_a_state_saved_with_pending_deletions_resumes_exactly(algebra: str) -> None:
    m = Absorption(REACH, DIAMOND, formulas=algebra, compact=0)
    m.apply({}, {"link": {("a", "b")}})
    m2 = pickle.loads(pickle.dumps(m))
    assert m2.pending == m.pending
    base = {"link": DIAMOND["link"] - {("a", "b"), ("a", "c")}}
    assert m2.apply({}, {"link": {("a", "c")}}).lines() == m.apply({}, {"link": {("a", "c")}}).lines()
    _check(m2, base)
    m2.apply({"link": {("a", "b")}}, {})
    base["link"].add(("a", "b"))
    _check(m2, base)


# a ring a -> b -> c -> d -> e -> a with a chord c -> a: every tuple's formula mentions (a, b)
# or (c, a) or neither; deleting (d, e) leaves stale every tuple that went through it
RING = {"link": {("a", "b"), ("b", "c"), ("c", "d"), ("d", "e"), ("e", "a"), ("c", "a")}}


@pytest.mark.parametrize("algebra", ["monomials", "bdd"])
def test_an_insertion_restricts_only_the_formulas_it_reads(algebra: str) -> None:
    m = Absorption(REACH, RING, formulas=algebra, compact=0)
    base = {"link": set(RING["link"])}
    m.apply({}, {"link": {("d", "e")}})
    base["link"].discard(("d", "e"))
    stale = sum(map(len, m.stale.values()))
    assert stale and not m.settled
    # a new link (b, b2): its closure insertion reads the tuples into b and out of b2 (none)
    m.apply({"link": {("b", "b2")}}, {})
    base["link"].add(("b", "b2"))
    assert 0 < m.settled < stale and m.pending  # not the bulk restriction
    _check(m, base)
    # a later deletion still decides under every pending variable
    m.apply({}, {"link": {("c", "a")}})
    base["link"].discard(("c", "a"))
    _check(m, base)
    m.settle()
    assert not m.pending and not any(m.stale.values())
    _check(m, base)


@pytest.mark.parametrize("algebra", ["monomials", "bdd"])
def test_background_compaction_drains_the_stale_formulas(algebra: str) -> None:
    m = Absorption(REACH, RING, formulas=algebra, compact=2)
    m.apply({}, {"link": {("d", "e")}})
    assert m.pending and sum(map(len, m.stale.values())) > 0
    for _ in range(20):  # two a batch: an empty batch still compacts
        m.apply({}, {})
    assert not m.pending and not m.stale  # every stale formula restricted, nothing pending
    _check(m, {"link": RING["link"] - {("d", "e")}})


def test_pending_cap_restricts_once_passed() -> None:
    m = Absorption(REACH, DIAMOND, formulas="bdd", pending_cap=1, compact=0)
    m.apply({}, {"link": {("a", "b")}})
    assert m.pending and not m.settled
    m.apply({}, {"link": {("d", "a")}})
    assert not m.pending and m.settled  # two pending variables > 1: (a, d) and others restricted
    _check(m, {"link": DIAMOND["link"] - {("a", "b"), ("d", "a")}})


def test_selp_maintain_resumes_a_state_with_pending_deletions(tmp_path: Path) -> None:
    db = tmp_path / "db"
    db.mkdir()
    (db / "link.csv").write_text("src,dst,latency\na,b,1\nb,d,1\na,c,1\nc,d,1\n")
    r = selp("maintain", "datasets/reachable.dl", "--db", str(db), "--changes", "-", input="-link(a, b, 1)\n")
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ['# -link("a", "b", 1)', '-reachable("a", "b")']
    r = selp("maintain", "datasets/reachable.dl", "--db", str(db), "--changes", "-", input="-link(a, c, 1)\n+link(a, b, 1)\n")
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ['# -link("a", "c", 1)', '-reachable("a", "c")', '-reachable("a", "d")',
                                     '# +link("a", "b", 1)', '+reachable("a", "b")', '+reachable("a", "d")']
