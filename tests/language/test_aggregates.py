"""Aggregates (min, max, count, sum), also min/max through recursion: every engine computes the
naive fixpoint extended with aggregates on random programs; located errors through the CLI."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

from helpers.randprog import naive_fixpoint, programs_with_databases
from selp.engines.registry import ENGINES, get_engine
from selp.language import parse_program
from selp.language.validate import analyze

IN_PROCESS = [name for name, e in ENGINES.items() if not e.uses_spark]
ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("engine", IN_PROCESS)
@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=programs_with_databases(aggregates=True))
def test_engine_equals_naive_fixpoint_with_aggregates(engine: str, case) -> None:
    text, db = case
    analysis = analyze(parse_program(text))
    assert get_engine(engine).evaluate(analysis, db) == naive_fixpoint(analysis, db), text


@pytest.mark.spark
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(case=programs_with_databases(max_idb=2, aggregates=True))
def test_spark_engine_equals_naive_fixpoint_with_aggregates(spark, case) -> None:
    text, db = case
    analysis = analyze(parse_program(text))
    assert get_engine("spark").evaluate(analysis, db, spark=spark) == naive_fixpoint(analysis, db), text


def _selp(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "selp", *args], capture_output=True, text=True, cwd=ROOT,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})


def _edges() -> list[tuple[int, int, int]]:
    lines = (ROOT / "examples/graphs/db/edge.csv").read_text().split()[1:]
    return [tuple(int(x) for x in line.split(",")) for line in lines]  # type: ignore[misc]


def _dijkstra(source: int) -> dict[int, int]:
    import heapq

    dist, queue = {}, [(0, source)]
    while queue:
        d, x = heapq.heappop(queue)
        if x in dist:
            continue
        dist[x] = d
        for a, b, w in _edges():
            if a == x and b not in dist:
                heapq.heappush(queue, (d + w, b))
    return dist


def _components() -> dict[int, int]:
    nodes = {n for a, b, _ in _edges() for n in (a, b)}
    label = {n: n for n in nodes}
    changed = True
    while changed:
        changed = False
        for a, b, _ in _edges():
            low = min(label[a], label[b])
            if label[a] != low or label[b] != low:
                label[a] = label[b] = low
                changed = True
    return label


@pytest.mark.parametrize("engine", IN_PROCESS)
def test_bundled_graph_examples_match_brute_force(engine: str) -> None:
    from selp.database import load_database

    for name, rel, expected in (
        ("sssp", "dist", {(x, d) for x, d in _dijkstra(1).items()}),
        ("cc", "cc", set(_components().items())),
    ):
        analysis = analyze(parse_program((ROOT / f"examples/graphs/{name}.dl").read_text()))
        db = load_database(analysis, ROOT / "examples/graphs/db")
        assert get_engine(engine).evaluate(analysis, db.facts)[rel] == expected


def test_explain_shows_the_best_witnesses_of_a_shortest_distance() -> None:
    run = _selp("explain", "examples/graphs/sssp.dl", "dist(5, *)", "--db", "examples/graphs/db", "-q")
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines()[0] == f"dist(5, {_dijkstra(1)[5]})"
    assert run.stdout.count("dist(5, 11)  [r2") == 2  # both shortest paths: via 3 and via 4


@pytest.mark.parametrize(
    "program, where, message",
    [
        ("q(1). p(x) :- q(x), r(x, min(x)).\nr(1, 2).", "prog.dl:1:21", "aggregate min(...) in a body atom"),
        ("e(1, 2).\nc(x, count(y)) :- e(x, y).\nc(y, count(z)) :- c(x, z), e(x, y).", "prog.dl:3:19",
         "count(...) through recursion in rule r2"),
        ("e(1, 9223372036854775807). e(2, 9223372036854775807).\nt(sum(w)) :- e(_, w).", "prog.dl:2:1",
         "integer overflow in rule r1: sum(w) does not fit in 64 bits"),
        ("e(1, 2).\np(x, min(y)) :- e(x, y), not p(y, x).", "prog.dl:2:26", "not stratifiable"),
        ("s(1). e(1, 2, -1). e(2, 1, -1).\nd(x, min(c)) :- s(x), c = 0.\nd(y, min(c)) :- d(x, c1), e(x, y, w), c = c1 + w.",
         "prog.dl:2:1", "does not converge"),
    ],
)
@pytest.mark.parametrize("engine", IN_PROCESS)
def test_aggregate_mistakes_are_one_located_line(tmp_path, program: str, where: str, message: str, engine: str) -> None:
    (tmp_path / "prog.dl").write_text(program + "\n")
    run = subprocess.run([sys.executable, "-m", "selp", "eval", "prog.dl", "--engine", engine, "-q"], capture_output=True,
                         text=True, cwd=tmp_path, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert run.returncode != 0
    assert run.stderr.startswith(f"error: {where}:") and message in run.stderr, run.stderr
    assert run.stderr.count("\n") == 1 and "Traceback" not in run.stderr


def _explained(engine: str, program: str, *args: str) -> str:
    run = _selp(*args[:1], f"examples/graphs/{program}.dl", *args[1:], "--db", "examples/graphs/db", "--engine", engine, "-q")
    assert run.returncode == 0 and run.stderr == "", run.stderr
    return run.stdout


def _trees(text: str, fact: str) -> list[str]:
    """The trees drawn for ``fact`` in ``selp explain``'s text output, best first."""
    lines = text.splitlines()
    start = lines.index(fact)
    trees: list[list[str]] = []
    for line in lines[start + 1:]:
        if not line.strip():
            break
        if line.lstrip().startswith("#"):
            trees.append([])
        else:
            trees[-1].append(line.strip())
    return ["\n".join(t) for t in trees]


@pytest.mark.parametrize("engine", IN_PROCESS)
def test_count_and_sum_facts_are_explained_by_each_instance_of_their_group(engine: str) -> None:
    """outdeg(1, 2) counts edges 1->2 and 1->3, outweight(1, 5) adds their weights: each edge is a
    witness, so each fact has exactly those two trees."""
    out = _explained(engine, "sssp", "explain", "outdeg(1, *)", "-k", "5")
    assert sorted(_trees(out, "outdeg(1, 2)")) == [
        "outdeg(1, 2)  [r3 1]\n└─ edge(1, 2, 4)  (fact 1)", "outdeg(1, 2)  [r3 1]\n└─ edge(1, 3, 1)  (fact 1)"]
    out = _explained(engine, "sssp", "explain", "outweight(*, *)", "-k", "5")
    assert sorted(_trees(out, "outweight(1, 5)")) == [
        "outweight(1, 5)  [r4 1]\n└─ edge(1, 2, 4)  (fact 1)", "outweight(1, 5)  [r4 1]\n└─ edge(1, 3, 1)  (fact 1)"]
    # every fact of the relation has a tree: one per edge leaving its node
    edges = _edges()
    for x in {a for a, _, _ in edges}:
        total = sum(w for a, _, w in edges if a == x)
        assert len(_trees(out, f"outweight({x}, {total})")) == sum(1 for a, _, _ in edges if a == x)


@pytest.mark.parametrize("engine", IN_PROCESS)
def test_patterns_over_aggregated_relations_keep_the_facts_of_p(engine: str) -> None:
    """A constant at the aggregate position, children under an aggregated node and a // carried
    through min recursion select some witness trees; the facts keep P's values."""
    # dist(*, 4): the node at distance 4 (node 4, through 1 -> 3 -> 2 -> 4)
    out = _explained(engine, "sssp", "topk", "--pattern", "dist(*, 4)", "-k", "2")
    assert out.splitlines()[0] == "dist(4, 4)" and out.count("\ndist(") == 0
    # the shortest paths to 5 whose last edge is 3 -> 5 (one of its two witnesses)
    out = _explained(engine, "sssp", "topk", "--pattern", "dist(5, *)[/ edge(3, 5, *)]", "-k", "3")
    assert _trees(out, "dist(5, 11)") and len(_trees(out, "dist(5, 11)")) == 1 and "edge(3, 5, 10)" in out
    # every shortest distance with a witness tree through edge 2 -> 4 (nodes 4, 5, 6), with
    # Dijkstra's distances -- not the minimum over the matching paths only
    out = _explained(engine, "sssp", "topk", "--pattern", "dist(*, *) // edge(2, 4, *)", "-k", "1")
    got = {line for line in out.splitlines() if line.startswith("dist(")}
    best = _dijkstra(1)
    assert got == {f"dist({x}, {best[x]})" for x in (4, 5, 6)}
    # NOT: the count facts none of whose trees reads an edge of weight 1
    out = _explained(engine, "sssp", "topk", "--pattern", "outdeg(*, *) AND NOT outdeg // edge(*, *, 1)", "-k", "3")
    got = {line for line in out.splitlines() if line.startswith("outdeg(")}
    assert got == {"outdeg(1, 2)", "outdeg(3, 2)", "outdeg(4, 2)", "outdeg(5, 1)", "outdeg(8, 1)", "outdeg(9, 1)"}


def test_check_shows_types_strata_and_aggregating_relations() -> None:
    run = _selp("check", "examples/graphs/cc.dl", "--db", "examples/graphs/db")
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert "  idb  cc/2 (int, int)  rules: r3, r4, r5  aggregate: min(2)" in lines
    assert "  idb  size/2 (int, int)  rules: r6  aggregate: count(2)" in lines
    assert lines[lines.index("strata:") + 1:] == ["  0: node", "  1: cc  (recursive: cc [min/max selection])", "  2: size"]


@pytest.mark.parametrize("engine", [*IN_PROCESS, pytest.param("spark", marks=pytest.mark.spark)])
def test_graph_examples_run_and_explain_through_the_cli(engine: str) -> None:
    """What a user runs on the bundled graphs, in real processes on every engine: shortest
    distances and components as Dijkstra and a brute-force labelling give them, and their
    explanations (trees of witnesses; a component's size has infinitely many through the cycle)."""
    import json

    def run(*args: str) -> dict:
        r = _selp(*args, "--db", "examples/graphs/db", "--engine", engine, "-q")
        # (the JVM may say which incubator modules it uses: nothing else is printed)
        assert r.returncode == 0 and "error" not in r.stderr.lower() and "Traceback" not in r.stderr, r.stderr
        return json.loads(r.stdout)

    dist = run("eval", "examples/graphs/sssp.dl", "--show", "dist", "--json")["relations"]["dist"]["rows"]
    assert {tuple(row) for row in dist} == set(_dijkstra(1).items())
    cc = run("eval", "examples/graphs/cc.dl", "--show", "cc", "--json")["relations"]["cc"]["rows"]
    assert {tuple(row) for row in cc} == set(_components().items())
    (six,) = run("explain", "examples/graphs/sssp.dl", "dist(6, *)", "-k", "5", "--format", "json")["results"]
    assert six["fact"]["args"] == [6, 13] and len(six["trees"]) == 2  # through either shortest path to 5
    (size,) = run("explain", "examples/graphs/cc.dl", "size(7, *)", "-k", "5", "--format", "json")["results"]
    assert size["fact"]["args"] == [7, 2] and len(size["trees"]) == 5
    assert {t["tree"]["rule"] for t in size["trees"]} == {"r6"}
    assert {tuple(t["tree"]["children"][0]["args"]) for t in size["trees"]} == {(7, 7), (8, 7)}  # both members


@pytest.mark.parametrize("engine", IN_PROCESS)
def test_a_skolem_term_beside_an_aggregate_has_no_trees_and_says_so_in_one_line(tmp_path, engine: str) -> None:
    """Its witness rule would need the Skolem term in a body: explain refuses at the head."""
    (tmp_path / "prog.dl").write_text("e(1, 2). e(1, 3).\nc(f(x), count(y)) :- e(x, y).\n")
    run = subprocess.run([sys.executable, "-m", "selp", "explain", "prog.dl", "c(*, *)", "--engine", engine, "-q"],
                         capture_output=True, text=True, cwd=tmp_path, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert run.returncode == 1 and run.stderr.startswith("error: prog.dl:2:1: rule r1: derivation trees of c are not supported")
    assert run.stderr.count("\n") == 1
    # a pattern whose trees cannot hold c is explained
    (tmp_path / "prog.dl").write_text("e(1, 2). e(1, 3).\nc(f(x), count(y)) :- e(x, y).\nq(x) :- e(x, 3).\n")
    run = subprocess.run([sys.executable, "-m", "selp", "explain", "prog.dl", "q(*)", "--engine", engine, "-q"],
                         capture_output=True, text=True, cwd=tmp_path, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert run.returncode == 0 and "q(1)  [r2 1]" in run.stdout, run.stderr
