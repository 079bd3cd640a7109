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


def test_patterns_that_would_aggregate_fewer_instances_are_refused_in_one_line() -> None:
    """A constant at the aggregate position, or children under an aggregated node, would compute
    the aggregate over some of its instances only (a fact P does not have): refused, not answered."""
    base = [str(ROOT / "examples/graphs/sssp.dl"), "--db", str(ROOT / "examples/graphs/db"), "-k", "1", "-q"]
    for pattern, words in [("dist(*, 4)", "aggregate position of dist (min)"),
                           ("dist(4, *) // edge(1, 3, *)", "restricts the derivations of the aggregated relation dist")]:
        for engine in ("embedded", "reference"):
            r = _selp("topk", *base, "--pattern", pattern, "--engine", engine)
            assert r.returncode == 1 and words in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    r = _selp("topk", *base, "--pattern", "dist(4, *)")
    assert r.returncode == 0 and r.stdout.startswith("dist(4, 4)\n")
