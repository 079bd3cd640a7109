"""``selp cdss query DIR --peer P 'ans(...) :- ...'``: certain answers of a query over several
relations ([Kar09] §3.1.1: nulls join as values, answers holding one are dropped)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from helpers.paths import BIO
from selp.cli import main


def run(*args):
    return CliRunner().invoke(main, ["cdss", *map(str, args)])


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    """Example 5's edit logs (no trust conditions touch U), exchanged by PuBio."""
    d = tmp_path_factory.mktemp("q") / "bio"
    shutil.copytree(BIO, d)
    assert run("init", d).exit_code == 0
    assert run("import", d, "--peer", "PGUS", "--relation", "G", d / "data" / "PGUS" / "G.csv").exit_code == 0
    assert run("edit", d, "--peer", "PBioSQL", "+B(3, 5)").exit_code == 0
    assert run("edit", d, "--peer", "PuBio", "+U(2, 5)").exit_code == 0
    for p in ("PGUS", "PBioSQL", "PuBio"):
        assert run("publish", d, "--peer", p).exit_code == 0
    assert run("exchange", d, "--peer", "PuBio", "-q").exit_code == 0
    return d


@pytest.mark.parametrize("engine", ["embedded", "reference"])
def test_certain_answers_of_a_join(store, engine):
    # U = {(2,5), (2,c2), (3,2), (5,c1)}: (5,5) comes from the join on the null c1 (the digest's
    # example), (2,2) from z = 5 and from z = c2
    res = run("query", store, "--peer", "PuBio", "ans(x, y) :- U(x, z), U(y, z)", "--engine", engine, "--format", "csv")
    assert res.exit_code == 0, res.output
    assert res.output.splitlines() == ["x,y", "2,2", "3,3", "5,5"]
    res = run("query", store, "--peer", "PuBio", "ans(x, y) :- U(x, y).", "--engine", engine)
    assert res.output.splitlines() == [
        "ans(x, y) at PuBio: 2 tuple(s), certain answers; epoch 1, publication 3", "  x  y", "  2  5", "  3  2",
    ]
    res = run("query", store, "--peer", "PuBio", "ans(x, z) :- U(x, z), B(i, x)", "--with-nulls", "--engine", engine, "--format", "csv")
    # B holds the names 5 and 2 (PBioSQL distrusts B(1,3) and B(3,3))
    assert sorted(res.output.splitlines()[1:]) == ["2,5", "2,f_m3_c(2)", "5,f_m3_c(5)"]


@pytest.mark.parametrize(
    "query, message",
    [
        ("ans(x) :- X(x)", "error: query: relation X: no such relation"),
        ("ans(x) :- U(x", "error: query:1:14: syntax error"),
        ("U(x, y) :- U(y, x)", "error: query: the head U must name a new relation"),
        ("a(x) :- U(x, y). b(x) :- a(x)", "error: query 'a(x) :- U(x, y). b(x) :- a(x)': write one rule"),
    ],
)
def test_bad_queries_are_one_line(store, query, message):
    res = run("query", store, "--peer", "PuBio", query)
    assert res.exit_code == 1 and res.output.startswith(message) and len(res.output.splitlines()) == 1, res.output
