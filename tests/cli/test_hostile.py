"""Hostile input through the real CLI: one ``error:`` line and exit 1, never a traceback or a hang,
and never code run because of what a query, pattern or file says."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.cli import one_error_line, selp
from helpers.paths import BIO, ROOT, TRADE

BASE = [str(TRADE / "trade.dl"), "--db", str(TRADE / "db")]


def _nested(depth: int) -> str:
    t = "x"
    for _ in range(depth):
        t = f"f({t})"
    return t


# --- 1: deep nesting ------------------------------------------------------------------------


@pytest.mark.parametrize("command", ["check", "eval"])
def test_deeply_nested_skolem_term_is_a_located_error(tmp_path: Path, command: str) -> None:
    prog = tmp_path / "deep.dl"
    prog.write_text(f"q(1).\np({_nested(500)}) :- q(x).\n")
    line = one_error_line(selp(command, str(prog)))
    assert line.startswith(f"error: {prog}:2:") and "too deeply nested" in line


def test_nesting_within_the_limit_still_evaluates(tmp_path: Path) -> None:
    prog = tmp_path / "ok.dl"
    prog.write_text(f"q(1).\np({_nested(150)}) :- q(x).\nr(x) :- p(x).\n")
    r = selp("eval", str(prog), "--show", "r")
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr[-2000:]


def test_thousand_nots_in_a_pattern_is_a_located_error() -> None:
    line = one_error_line(selp("topk", *BASE, "--pattern", "NOT " * 1000 + "dealsWith"))
    assert line.startswith("error: pattern:1:") and "too deeply nested" in line


def test_long_chain_in_a_query_is_a_located_error() -> None:
    chain = " // ".join(["dealsWith"] * 1000)
    line = one_error_line(selp("query", *BASE, f"TOP 1 {chain} RANK BY confidence"))
    assert line.startswith("error: query:1:") and "too deeply nested" in line


def test_deep_proql_condition_is_a_located_error() -> None:
    cond = "NOT " * 1000 + "$x.i = 1"
    line = one_error_line(selp("proql", str(BIO), f"FOR [B $x] WHERE {cond} RETURN $x"))
    assert "too deeply nested" in line and ":1:" in line


# --- 2: integer literals of any length ------------------------------------------------------


@pytest.mark.parametrize("digits", [20, 4301, 10_000])
def test_huge_integer_in_a_program_does_not_fit_in_64_bits(tmp_path: Path, digits: int) -> None:
    prog = tmp_path / "big.dl"
    prog.write_text(f"p(x) :- q(x), x < {'9' * digits}.\n")
    line = one_error_line(selp("check", str(prog)))
    assert line.startswith(f"error: {prog}:1:19: integer 9") and line.endswith("does not fit in 64 bits")


@pytest.mark.parametrize("digits", [20, 5000])
def test_huge_integer_in_a_pattern_does_not_fit_in_64_bits(digits: int) -> None:
    line = one_error_line(selp("topk", *BASE, "--pattern", f"dealsWith(*, {'7' * digits})"))
    assert line.startswith("error: pattern:1:14: integer 7") and line.endswith("does not fit in 64 bits")


def test_huge_integer_in_a_csv_int_column_is_a_data_error(tmp_path: Path) -> None:
    (tmp_path / "db").mkdir()
    (tmp_path / "db" / "q.csv").write_text("a\n" + "9" * 5000 + "\n")
    prog = tmp_path / "p.dl"
    prog.write_text(".decl q(a: int)\np(x) :- q(x).\n")
    for engine in ("embedded", "reference"):
        line = one_error_line(selp("eval", str(prog), "--db", str(tmp_path / "db"), "--engine", engine))
        assert line.startswith(f"error: {tmp_path / 'db' / 'q.csv'}:2: value '999") and "does not fit in 64 bits" in line
        assert len(line) < 250


# --- 3: bounded k ---------------------------------------------------------------------------


def test_top_beyond_the_kernel_limit_is_refused_at_once() -> None:
    line = one_error_line(selp("query", *BASE, "TOP 99999999999999999999 dealsWith RANK BY confidence"))
    assert line == "error: query:1:5: TOP 99999999999999999999 is too large: at most 2147483647 trees per fact"


@pytest.mark.parametrize("k", ["2147483648", "9" * 5000], ids=["2^31", "5000-digits"])
@pytest.mark.parametrize("command", [["topk", *BASE, "--pattern", "dealsWith"], ["explain", *BASE, "dealsWith(Cuba, France)"]])
def test_k_beyond_the_kernel_limit_is_refused_at_once(command: list[str], k: str) -> None:
    line = one_error_line(selp(*command, "-k", k))
    assert line.startswith("error: -k ") and line.endswith("is too large: at most 2147483647 trees per fact")
    assert len(line) < 200


def test_cdss_explain_k_beyond_the_kernel_limit_is_refused() -> None:
    line = one_error_line(selp("cdss", "explain", str(BIO), "--peer", "PBioSQL", "B(3, 2)", "-k", "3000000000"))
    assert "at most 2147483647" in line


def test_large_k_where_few_trees_exist_is_cheap_and_says_so(tmp_path: Path) -> None:
    # an acyclic program: p(x, z) has at most 2 derivations (an e-path ending in e or f); with
    # 210 facts, k = 10^6 meant 210 x 10^6 entry slots before k was clamped
    (tmp_path / "db").mkdir()
    n = 20
    (tmp_path / "db" / "e.csv").write_text("a,b\n" + "".join(f"{i},{i + 1}\n" for i in range(n)))
    (tmp_path / "db" / "f.csv").write_text("a,b\n" + "".join(f"{i},{i + 2}\n" for i in range(0, n, 7)))
    prog = tmp_path / "p.dl"
    prog.write_text("p(x,y) :- e(x,y).\np(x,y) :- f(x,y).\np(x,z) :- e(x,y), p(y,z).\n")
    args = [str(prog), "--db", str(tmp_path / "db"), "--pattern", "p", "--format", "json"]
    big = selp("topk", *args, "-k", "1000000")
    assert big.returncode == 0, big.stderr[-2000:]
    assert "k=1000000 is more than any fact's number of derivation trees (at most 2)" in big.stderr
    small = selp("topk", *args, "-k", "2", "-q")
    doc_big, doc_small = json.loads(big.stdout), json.loads(small.stdout)
    assert doc_big["k"] == 1000000 and doc_big["results"] == doc_small["results"]


# --- 4: no code from a query ----------------------------------------------------------------

PLUGIN = '''
import pathlib
pathlib.Path(__file__).with_name("imported").write_text("yes")
from selp.topk.monoid import BUILTIN
from dataclasses import replace
M = replace(BUILTIN["cost"], name="mycost")
'''


@pytest.fixture()
def plugin_dir(tmp_path: Path) -> Path:
    (tmp_path / "evil_mod.py").write_text(PLUGIN)
    return tmp_path


def test_rank_by_module_attr_imports_nothing(plugin_dir: Path) -> None:
    env = {"PYTHONPATH": os.pathsep.join([str(plugin_dir), os.environ.get("PYTHONPATH", "")])}
    r = selp("query", *BASE, "TOP 1 dealsWith RANK BY evil_mod:M", env=env)
    line = one_error_line(r)
    assert "not loaded" in line and "--monoid-plugin" in line
    assert not (plugin_dir / "imported").exists()
    r = selp("query", *BASE, "TOP 1 dealsWith RANK BY this:x")
    assert "Zen of Python" not in r.stdout + r.stderr
    one_error_line(r)


def test_monoid_option_imports_nothing_but_monoid_plugin_does(plugin_dir: Path) -> None:
    env = {"PYTHONPATH": os.pathsep.join([str(plugin_dir), os.environ.get("PYTHONPATH", "")])}
    one_error_line(selp("topk", *BASE, "--pattern", "dealsWith", "--monoid", "evil_mod:M", env=env))
    assert not (plugin_dir / "imported").exists()
    r = selp("topk", *BASE, "--pattern", "dealsWith(Cuba, France)", "--monoid-plugin", "evil_mod:M", "--monoid", "mycost",
             "--engine", "reference", "-q", env=env)
    assert r.returncode == 0, r.stderr
    assert (plugin_dir / "imported").exists() and "dealsWith(Cuba, France)" in r.stdout


# --- 5: trees --fact with an impossible label -----------------------------------------------


@pytest.fixture(scope="module")
def saved_dtable(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dt") / "dtable"
    r = selp("topk", *BASE, "--pattern", "dealsWith", "-k", "2", "-q", "--save-dtable", str(out))
    assert r.returncode == 0, r.stderr
    return out


@pytest.mark.parametrize(
    "fact, message",
    [
        ("nosuch(1)", "error: fact:1:1: unknown relation nosuch"),
        ("dealsWith(Cuba)", "error: fact:1:1: dealsWith has 2 argument(s) but the fact gives 1"),
        ("dealsWith(1, *)", "error: fact:1:11: constant 1 has type int"),
    ],
)
def test_trees_refuses_an_impossible_fact_label(saved_dtable: Path, fact: str, message: str) -> None:
    assert one_error_line(selp("trees", str(saved_dtable), "--fact", fact)).startswith(message)
    assert one_error_line(selp("topk", *BASE, "--pattern", "dealsWith", "--fact", fact)).startswith(message)


def test_trees_with_a_possible_fact_label_still_answers(saved_dtable: Path) -> None:
    r = selp("trees", str(saved_dtable), "--fact", "dealsWith(Cuba, France)")
    assert r.returncode == 0 and r.stdout.startswith("dealsWith(Cuba, France)"), r.stderr


# --- 6: error lines do not echo 10 KB of input ----------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ["query", *BASE, "dealsWith " + "x" * 10_000],  # not a query at all
        ["explain", *BASE, "dealsWith(Cuba, France) / " + "imports / " * 1000 + "x"],  # not one atom
        ["query", *BASE, "TOP 1 dealsWith RANK BY " + "m" * 10_000],  # an unknown monoid
        ["topk", *BASE, "--pattern", 'dealsWith "' + "a" * 10_000 + '"'],  # a misplaced 10 KB token
    ],
    ids=["query", "fact", "monoid", "token"],
)
def test_errors_cut_a_10kb_input_and_keep_the_location(args: list[str]) -> None:
    line = one_error_line(selp(*args))
    assert len(line) <= 420, len(line)


def test_a_10kb_token_in_a_program_is_cut_in_the_error(tmp_path: Path) -> None:
    prog = tmp_path / "p.dl"
    prog.write_text("p(x) :- q(x) " + "z" * 10_000 + ".\n")
    line = one_error_line(selp("check", str(prog)))
    assert line.startswith(f"error: {prog}:1:") and len(line) <= 420 and "…" in line


def test_query_errors_cut_the_echoed_input_in_the_api_too() -> None:
    # the echo is cut where the message is made, not only by the CLI's last-resort line cut
    code = "from selp.topk.api import parse_query\ntry:\n    parse_query('x' * 500)\nexcept Exception as e:\n    print(len(str(e)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert int(out.stdout) < 200


@pytest.mark.parametrize("which", ["cdss.toml", "selp.toml"])
def test_deeply_nested_toml_is_a_located_error(tmp_path: Path, which: str) -> None:
    nested = "[" * 3000 + "]" * 3000
    if which == "cdss.toml":
        (tmp_path / "cdss.toml").write_text(f'name = "x"\nx = {nested}\n')
        r = selp("cdss", "check", str(tmp_path))
    else:
        (tmp_path / "p.dl").write_text("q(1).\np(x) :- q(x).\n")
        (tmp_path / "selp.toml").write_text(f"engine = {nested}\n")
        r = selp("topk", str(tmp_path / "p.dl"), "--pattern", "p")
    line = one_error_line(r)
    assert line.startswith(f"error: {tmp_path / which}") and "too deeply nested" in line
