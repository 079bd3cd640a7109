"""Hostile input through the real CLI, second part: files that are not UTF-8, edits without a sign,
ill-typed ProQL comparisons, a --db with no file for the program, repeated imports and derivation
trees deeper than Python's recursion limit."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from test_cli import selp
from test_cli_hostile import one_error_line


# --- deep derivation trees ------------------------------------------------------------------

CHAIN = 3000


@pytest.fixture(scope="module")
def chain(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Reachability along a 3,000-edge chain: r(3000)'s only tree is 3,001 rule steps deep."""
    d = tmp_path_factory.mktemp("chain")
    prog = d / "reach.dl"
    prog.write_text("r(x) :- s(x).\nr(y) :- r(x), e(x, y).\n")
    db = d / "db"
    db.mkdir()
    (db / "s.csv").write_text("x\n0\n")
    (db / "e.csv").write_text("x,y\n" + "".join(f"{i},{i + 1}\n" for i in range(CHAIN)))
    return prog, db


def _run_explain(chain: tuple[Path, Path], fmt: str) -> str:
    prog, db = chain
    r = selp("explain", str(prog), "--db", str(db), f"r({CHAIN})", "-k", "1", "--format", fmt, "-q")
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr[-2000:]
    return r.stdout


def test_deep_tree_prints_as_text(chain: tuple[Path, Path]) -> None:
    lines = _run_explain(chain, "text").splitlines()
    assert lines[0] == f"r({CHAIN})"
    # one line per node: CHAIN+1 rule steps on r, CHAIN e leaves and the s leaf
    nodes = [ln for ln in lines[2:] if ln.strip()]
    assert len(nodes) == 2 * CHAIN + 2
    assert nodes[-1].endswith(f"└─ e({CHAIN - 1}, {CHAIN})  (fact 1)")


def test_deep_tree_prints_as_json(chain: tuple[Path, Path]) -> None:
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old, 4 * CHAIN + 1000))  # json.loads recurses per level too
    try:
        doc = json.loads(_run_explain(chain, "json"))
    finally:
        sys.setrecursionlimit(old)
    node = doc["results"][0]["trees"][0]["tree"]
    depth = 0
    while node is not None:
        depth += 1
        assert node["relation"] in ("r", "s")
        node = next((c for c in node["children"] if c["relation"] in ("r", "s")), None)
    assert depth == CHAIN + 2  # r(3000) .. r(0) and the s(0) leaf


def test_deep_tree_prints_as_dot(chain: tuple[Path, Path]) -> None:
    out = _run_explain(chain, "dot")
    assert out.startswith("digraph topk {") and out.rstrip().endswith("}")
    assert out.count(" -> ") == 2 * CHAIN + 1  # edges of a tree of 2*CHAIN+2 nodes
