"""Several aggregates in one head: each folded on its own over the group's instances, and through
recursion [LTZIL10]'s Multi AggSel (cost and hops of a route selected together); every engine
against brute force, the witnesses of a multi-aggregate fact, and the located refusals."""

from __future__ import annotations

import random
import subprocess
import sys
from collections import deque
from pathlib import Path

import pytest

from selp.engines.registry import ENGINES, get_engine
from selp.language import parse_program
from selp.language.validate import analyze
from selp.reference.derivations import enumerate_trees

IN_PROCESS = [name for name, e in ENGINES.items() if not e.uses_spark]
ROOT = Path(__file__).resolve().parents[2]

ROUTE = """
route(s, d, min(c), min(h)) :- link(s, d, c), h = 1.
route(s, d, min(c), min(h)) :- route(s, z, c1, h1), link(z, d, w), c = c1 + w, h = h1 + 1.
stats(x, count(y), sum(w), max(w)) :- link(x, y, w).
"""


def _links(seed: int, n: int = 7, m: int = 16) -> set[tuple[int, int, int]]:
    rng = random.Random(seed)
    return {(rng.randrange(n), rng.randrange(n), rng.randint(1, 9)) for _ in range(m)}


def _brute(links: set[tuple[int, int, int]]) -> tuple[set, set]:
    """route by Bellman-Ford (cost) and BFS (hops) from every node, stats by hand."""
    nodes = {x for a, b, _ in links for x in (a, b)}
    route = set()
    for s in nodes:
        cost: dict[int, int] = {}
        for _ in range(len(nodes) + 1):  # paths of at least one link, relaxed to the fixpoint
            for a, b, w in links:
                options = ([w] if a == s else []) + ([cost[a] + w] if a in cost else [])
                if options and (b not in cost or min(options) < cost[b]):
                    cost[b] = min(options)
        hops: dict[int, int] = {}
        todo = deque((b, 1) for a, b, _ in links if a == s)
        while todo:
            b, h = todo.popleft()
            if b in hops:
                continue
            hops[b] = h
            todo.extend((d, h + 1) for a, d, _ in links if a == b)
        route |= {(s, d, cost[d], hops[d]) for d in cost}
    stats = set()
    for x in {a for a, _, _ in links}:
        out = [(y, w) for a, y, w in links if a == x]
        stats.add((x, len(out), sum(w for _, w in out), max(w for _, w in out)))
    return route, stats


@pytest.mark.parametrize("engine", IN_PROCESS)
@pytest.mark.parametrize("seed", range(6))
def test_route_cost_and_hops_together_equal_shortest_and_fewest(engine: str, seed: int) -> None:
    links = _links(seed)
    got = get_engine(engine).evaluate(analyze(parse_program(ROUTE)), {"link": links})
    route, stats = _brute(links)
    assert got["route"] == route and got["stats"] == stats


def test_a_group_mixes_the_best_of_each_aggregate_from_different_paths() -> None:
    # a -> c: cheapest over b (cost 2, 2 hops), fewest hops direct (cost 9, 1 hop)
    links = {("a", "b", 1), ("b", "c", 1), ("a", "c", 9)}
    for engine in IN_PROCESS:
        got = get_engine(engine).evaluate(analyze(parse_program(ROUTE)), {"link": links})
        assert ("a", "c", 2, 1) in got["route"]


def test_witnesses_of_a_multi_aggregate_fact_match_brute_force() -> None:
    """With a count or a sum every instance of the group is a witness; with min/max only, the
    instances reaching at least one of the values."""
    program = analyze(parse_program(
        "stats(x, count(y), max(w)) :- link(x, y, w).\n"
        "span(x, min(w), max(w)) :- link(x, _, w).\n"
    ))
    links = {("a", "b", 1), ("a", "c", 5), ("a", "d", 3), ("b", "c", 2), ("b", "d", 2)}
    trees = enumerate_trees(program, {"link": links}, 1)
    for x in ("a", "b"):
        out = sorted((y, w) for a, y, w in links if a == x)
        ws = [w for _, w in out]
        stats = ("stats", (x, len(out), max(ws)))
        assert {t.children[0].values for t in trees[stats]} == {(x, y, w) for y, w in out}
        span = ("span", (x, min(ws), max(ws)))
        assert {t.children[0].values for t in trees[span]} == {(x, y, w) for y, w in out if w in (min(ws), max(ws))}
    # the middle link of a (cost 3) reaches neither value: no tree of span uses it
    assert all(t.children[0].values != ("a", "d", 3) for t in trees[("span", ("a", 1, 5))])


def test_witnesses_through_a_multi_aggregate_recursion_match_brute_force() -> None:
    """route(a, c, 2, 1): its witnesses are the direct link (fewest hops) and the path over b
    (cheapest); a longer, dearer path over d is neither."""
    program = analyze(parse_program(ROUTE))
    links = {("a", "b", 1), ("b", "c", 1), ("a", "c", 9), ("a", "d", 5), ("d", "c", 5)}
    trees = enumerate_trees(program, {"link": links}, 3)
    roots = {(t.rule, tuple(c.values for c in t.children)) for t in trees[("route", ("a", "c", 2, 1))]}
    assert roots == {("r1", (("a", "c", 9),)), ("r2", (("a", "b", 1, 1), ("b", "c", 1)))}


def _run(tmp_path: Path, program: str, *args: str, quiet: bool = True) -> subprocess.CompletedProcess:
    (tmp_path / "prog.dl").write_text(program + "\n")
    return subprocess.run([sys.executable, "-m", "selp", *args[:1], "prog.dl", *args[1:], *(["-q"] if quiet else [])], capture_output=True,
                          text=True, cwd=tmp_path, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})


RECURSIVE = "link(1, 2, 3).\nroute(s, d, min(c), min(h)) :- link(s, d, c), h = 1.\n"


@pytest.mark.parametrize(
    "program, where, message",
    [
        (RECURSIVE + "route(s, d, min(c), min(h)) :- route(s, z, c1, h1), link(z, d, w), c = c1 + h1, h = h1 + 1.",
         "prog.dl:3:1", "the value of aggregate 2 of route (argument 4) in rule r2 is read by aggregate 1 of the head"),
        (RECURSIVE + "route(s, d, min(c), min(h)) :- route(s, z, c1, h1), link(z, d, w), h1 < 3, c = c1 + w, h = h1 + 1.",
         "prog.dl:3:68", "is read by a filter or a join"),
        (RECURSIVE + "route(s, d, min(c), min(h)) :- route(s, z, c1, h1), link(z, d, c1), c = c1, h = h1 + 1.",
         "prog.dl:3:53", "is read by a filter or a join"),
        (RECURSIVE + "route(s, h1, min(c), min(h)) :- route(s, z, c1, h1), link(z, d, w), c = c1 + w, h = h1 + 1.",
         "prog.dl:3:1", "is read by the group key of the head"),
        (RECURSIVE + "route(s, d, min(c), count(h)) :- route(s, z, c, h), link(z, d, _).",
         "prog.dl:3:1", "every rule of an aggregated relation aggregates alike"),
        ("link(1, 2, 3).\nr(s, d, min(c), count(d)) :- link(s, d, c).\nr(s, d, min(c), count(x)) :- r(s, x, c, _), link(x, d, _).",
         "prog.dl:3:30", "count(...) through recursion in rule r2"),
    ],
)
@pytest.mark.parametrize("engine", IN_PROCESS)
def test_multi_aggregate_mistakes_are_one_located_line(tmp_path, program: str, where: str, message: str, engine: str) -> None:
    run = _run(tmp_path, program, "eval", "--engine", engine)
    assert run.returncode != 0
    assert run.stderr.startswith(f"error: {where}:") and message in run.stderr, run.stderr
    assert run.stderr.count("\n") == 1 and "Traceback" not in run.stderr


TOPK_ENGINES = ["embedded", "local", "reference"]


@pytest.mark.parametrize("engine", TOPK_ENGINES)
def test_explain_gives_a_tree_reaching_both_min_max_values_once(tmp_path, engine: str) -> None:
    """route(1, 2, 3, 1): its one instance reaches the least cost and the fewest hops (a witness
    of both values), which is one derivation tree, not two."""
    run = _run(tmp_path, RECURSIVE, "explain", "route(*, *, *, *)", "-k", "3", "--engine", engine)
    assert run.returncode == 0, run.stderr
    assert run.stdout.count("route(1, 2, 3, 1)  [r1 1]") == 1 and "#2" not in run.stdout, run.stdout
    run = _run(tmp_path, "link(1, 2, 3). link(1, 3, 4).\nstats(x, count(y), max(w)) :- link(x, y, w).", "explain",
               "stats(*, *, *)", "--engine", engine)
    assert run.returncode == 0, run.stderr
    # one tree per instance of the group (the count makes every instance a witness)
    assert run.stdout.count("stats(1, 2, 4)  [r1 1]") == 2


@pytest.mark.parametrize("engine", TOPK_ENGINES)
def test_explain_of_one_route_gives_the_witness_of_each_value(tmp_path, engine: str) -> None:
    """a -> c: the direct link has the fewest hops, the path over b the least cost, the path over
    d neither; with ties of equal weight (three links into c from a, each of cost 2 through b or
    direct) every witness appears once."""
    program = ROUTE + 'link("a", "b", 1). link("b", "c", 1). link("a", "c", 9). link("a", "d", 5). link("d", "c", 5).'
    run = _run(tmp_path, program, "explain", 'route("a", "c", *, *)', "-k", "4", "--engine", engine)
    assert run.returncode == 0, run.stderr
    assert "route(a, c, 2, 1)" in run.stdout and "#2" in run.stdout and "#3" not in run.stdout, run.stdout
    assert "link(a, c, 9)" in run.stdout and "link(b, c, 1)" in run.stdout and "link(d, c, 5)" not in run.stdout


def test_explain_scopes_to_the_relations_its_pattern_reads() -> None:
    """The routes example: explaining out reads nothing of route (several min/max in one head)."""
    run = subprocess.run([sys.executable, "-m", "selp", "explain", "examples/graphs/routes.dl", "--db", "examples/graphs/db",
                          "-k", "2", "out(1, *, *, *)"], capture_output=True, text=True, cwd=ROOT,
                         env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert run.returncode == 0, run.stderr
    assert run.stdout.count("out(1, 2, 5, 4)  [r3 1]") == 2


def test_check_shows_every_aggregate_of_a_relation(tmp_path) -> None:
    run = _run(tmp_path, ROUTE, "check", quiet=False)
    assert run.returncode == 0
    assert "aggregate: min(3) min(4)" in run.stdout and "aggregate: count(2) sum(3) max(4)" in run.stdout
    assert "route [min/max selection]" in run.stdout


# the group keys of a relation with no key at all, and a key on each side of the aggregates
@pytest.mark.parametrize("engine", IN_PROCESS)
def test_aggregates_around_and_without_a_key(engine: str) -> None:
    program = analyze(parse_program("t(min(w), max(w), count(y)) :- link(_, y, w).\nm(min(w), x, max(w)) :- link(x, _, w).\n"))
    links = {(1, 2, 5), (1, 3, 7), (2, 3, 1)}
    got = get_engine(engine).evaluate(program, {"link": links})
    assert got["t"] == {(1, 7, 3)} and got["m"] == {(5, 1, 7), (1, 2, 1)}


@pytest.mark.parametrize("engine", IN_PROCESS)
def test_the_routes_example_has_the_least_weight_and_fewest_hops_of_every_pair(engine: str) -> None:
    from selp.database import load_database

    analysis = analyze(parse_program((ROOT / "examples/graphs/routes.dl").read_text()))
    db = load_database(analysis, ROOT / "examples/graphs/db")
    got = get_engine(engine).evaluate(analysis, db.facts)
    route, out = _brute(set(db.facts["edge"]))
    assert got["route"] == route and got["out"] == out
    assert (1, 2, 3, 1) in route  # the cheap path has two hops, the direct edge one


@pytest.mark.spark
def test_spark_selects_several_aggregates_like_the_other_engines(spark) -> None:
    """Multi AggSel and several aggregates outside a recursion, keyed and keyless, on Spark."""
    program = analyze(parse_program(ROUTE + "t(min(w), max(w), count(y)) :- link(_, y, w).\n"))
    for seed in range(2):
        links = _links(seed)
        got = get_engine("spark").evaluate(program, {"link": links}, spark=spark)
        route, stats = _brute(links)
        assert got["route"] == route and got["stats"] == stats
        assert got["t"] == {(min(w for *_, w in links), max(w for *_, w in links), len(links))}
