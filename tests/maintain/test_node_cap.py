"""The BDD node cap is read inside a long step (a new edge's expansion into a closure), not only
after it: the step stops a small margin past the cap, and the session falls back to DRed
exactly, saying so."""

from __future__ import annotations

import pickle

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


def test_one_operation_past_cudds_memory_limit_falls_back_exactly(monkeypatch: pytest.MonkeyPatch) -> None:
    # the backstop for one BDD operation that alone passes the cap by far: CUDD's memory limit
    # fails it, and that is a Blowup like the node cap's
    from selp.maintain.algebra import Bdds

    # eight 5-cliques in a chain (~37,000 nodes); closing the ring adds ~tens of thousands
    cl = [[f"c{c}_{i}" for i in range(5)] for c in range(8)]
    links = {(a, b) for q in cl for a in q for b in q if a != b} | {(cl[c][0], cl[c + 1][0]) for c in range(7)}
    new = (cl[7][1], cl[0][1])
    m = Absorption(REACH, {"link": links}, formulas="bdd", lazy=False)
    m = pickle.loads(pickle.dumps(m))  # a loaded state: no dead nodes CUDD could reclaim instead
    m.alg.max_memory = int(m.alg._statistics()["mem"])  # no byte more than the manager holds now
    m.alg.bdd.configure(max_memory=m.alg.max_memory)
    said: list[str] = []
    after, changes = session.apply(m, {"link": {new}}, {}, said.append)
    assert isinstance(after, DRed) and after.view() == from_scratch(REACH, {"link": links | {new}})
    assert len(changes.added["reachable"]) > 0
    assert len(said) == 1 and "bytes of BDD memory" in said[0] and "falling back to DRed" in said[0]
    # and at the build: the session builds DRed instead, saying so
    monkeypatch.setattr(Bdds, "MEMORY_PER_NODE", 0)
    said.clear()
    built = session.build("absorption", REACH, {"link": links}, warn=said.append)
    assert isinstance(built, DRed) and built.view() == from_scratch(REACH, {"link": links})
    assert len(said) == 1 and "bytes of BDD memory" in said[0]


SCRIPT = """
from selp.language import parse_program
from selp.language.validate import analyze
from selp.maintain import session
from selp.maintain.algebra import Bdds
Bdds.MEMORY_PER_NODE = 0
links = {(f"{c}{i}", f"{c}{j}") for c in "abcdefgh" for i in range(5) for j in range(5) if i != j}
links |= {(a + "0", b + "0") for a, b in zip("abcdefg", "bcdefgh")}
m = session.build("absorption", analyze(parse_program("r(s, d) :- link(s, d). r(s, d) :- link(s, z), r(z, d).")), {"link": links})
print(m.strategy)
"""


def test_a_manager_given_up_at_its_memory_limit_leaves_stderr_quiet() -> None:
    # the failed operation's frames hold BDDs; freed in a garbage cycle, the manager could go
    # before them and report them ("Still N nodes referenced upon shutdown", an ignored
    # exception on stderr): it must not
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    r = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, cwd=root, env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"})
    assert r.returncode == 0 and r.stdout.strip() == "dred"
    assert "referenced" not in r.stderr and "Traceback" not in r.stderr, r.stderr
