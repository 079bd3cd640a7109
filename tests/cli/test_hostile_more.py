"""Hostile input through the real CLI, second part: files that are not UTF-8, edits without a sign,
ill-typed ProQL comparisons, a --db with no file for the program, repeated imports and derivation
trees deeper than Python's recursion limit."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from helpers.cli import one_error_line, selp
from helpers.paths import BIO, TRADE


# --- files that are not UTF-8 ---------------------------------------------------------------

BAD = b"\xff\xfe"  # never valid UTF-8
PREFIX = b"caf\xc3\xa9 "  # valid UTF-8 (an accent: the offset counts bytes, not characters)


def _assert_names_offset(line: str, path: Path, offset: int) -> None:
    assert str(path) in line and f"byte offset {offset}" in line and "UTF-8" in line, line


def test_non_utf8_proql_file(bio_store: Path, tmp_path: Path) -> None:
    q = tmp_path / "q.proql"
    q.write_bytes(b"FOR [U $x] -- " + PREFIX + BAD + b"\nRETURN $x\n")
    _assert_names_offset(one_error_line(selp("proql", str(bio_store), "-f", str(q))), q, 14 + len(PREFIX))


def test_non_utf8_program(tmp_path: Path) -> None:
    prog = tmp_path / "p.dl"
    prog.write_bytes(b"% " + PREFIX + BAD + b"\np(1).\n")
    _assert_names_offset(one_error_line(selp("check", str(prog))), prog, 2 + len(PREFIX))


def test_non_utf8_selp_toml(tmp_path: Path) -> None:
    shutil.copy(TRADE / "trade.dl", tmp_path / "trade.dl")
    toml = tmp_path / "selp.toml"
    toml.write_bytes(b'# ' + BAD + b'\nengine = "reference"\n')
    r = selp("eval", str(tmp_path / "trade.dl"), "--db", str(TRADE / "db"))
    _assert_names_offset(one_error_line(r), toml, 2)


def test_non_utf8_cdss_toml(tmp_path: Path) -> None:
    d = tmp_path / "bio"
    shutil.copytree(BIO, d)
    toml = d / "cdss.toml"
    data = toml.read_bytes()
    toml.write_bytes(data + b"# " + BAD + b"\n")
    _assert_names_offset(one_error_line(selp("cdss", "check", str(d))), toml, len(data) + 2)


def test_non_utf8_data_csv_far_into_the_file(tmp_path: Path) -> None:
    # past the first read buffer, so the offset must be counted over the whole file
    db = tmp_path / "db"
    shutil.copytree(TRADE / "db", db)
    f = db / "exports.csv"
    head = f.read_bytes()
    if not head.endswith(b"\n"):
        head += b"\n"
    filler = b"".join(b"Cuba,x%07d\n" % i for i in range(20_000))
    f.write_bytes(head + filler + b"Cuba," + BAD + b"\n")
    r = selp("eval", str(TRADE / "trade.dl"), "--db", str(db), "--engine", "reference")
    _assert_names_offset(one_error_line(r), f, len(head) + len(filler) + 5)


def test_non_utf8_import_csv(bio_store: Path, tmp_path: Path) -> None:
    d = tmp_path / "bio"
    shutil.copytree(bio_store, d)
    f = tmp_path / "G.csv"
    f.write_bytes(b"id,can,nam\n1,2," + BAD + b"\n")
    r = selp("cdss", "import", str(d), "--peer", "PGUS", "--relation", "G", str(f))
    _assert_names_offset(one_error_line(r), f, 15)


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


# --- edits without a sign -------------------------------------------------------------------


def test_edit_without_sign_is_refused(bio_store: Path, tmp_path: Path) -> None:
    d = tmp_path / "bio"
    shutil.copytree(bio_store, d)
    before = selp("cdss", "log", str(d)).stdout
    line = one_error_line(selp("cdss", "edit", str(d), "--peer", "PBioSQL", "B(3, 77)"))
    assert "write +B(3, 77) or -B(3, 77)" in line, line
    assert selp("cdss", "log", str(d)).stdout == before  # nothing recorded
    r = selp("cdss", "edit", str(d), "--peer", "PBioSQL", "+B(3, 77)")
    assert r.returncode == 0 and "1 insertion(s)" in r.stdout, r.stderr


# --- ill-typed ProQL comparisons ------------------------------------------------------------


@pytest.mark.parametrize(
    "where, column, fragments",
    [
        ('$x.nam > "a"', 18, ("$x.nam (of U) is an int", "'a' is a string", "'>'")),
        ('"3" = $x.can', 18, ("'3' is a string", "$x.can (of U) is an int")),
    ],
)
def test_proql_int_attribute_against_a_string_is_a_located_error(bio_store: Path, where: str, column: int, fragments: tuple[str, ...]) -> None:
    line = one_error_line(selp("proql", str(bio_store), f"FOR [U $x] WHERE {where} RETURN $x"))
    assert line.startswith(f"error: <query>:1:{column}: type mismatch"), line
    for f in fragments:
        assert f in line, line


@pytest.mark.parametrize("where", ["$x.nam > 2", "$x.nam > 2.5", "$x.nam = $y.id", "$x.can != -1"])
def test_proql_comparisons_of_compatible_types_still_run(bio_store: Path, where: str) -> None:
    r = selp("proql", str(bio_store), f"FOR [U $x], [B $y] WHERE {where} RETURN $x")
    assert r.returncode == 0 and "binding(s)" in r.stderr + r.stdout, r.stderr


# --- a --db holding none of the program's files ---------------------------------------------


@pytest.mark.parametrize("engine", ["embedded", "reference"])
def test_db_without_any_edb_file_warns(engine: str) -> None:
    # the CDSS layout (data/<peer>/REL.csv) is not a --db: nothing of trade.dl is there
    data = BIO / "data"
    r = selp("eval", str(TRADE / "trade.dl"), "--db", str(data), "--engine", engine, "--show", "dealsWith")
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    warning = [ln for ln in r.stderr.splitlines() if ln.startswith("warning: ")]
    assert len(warning) == 1, r.stderr
    assert str(data) in warning[0] and "exports.csv or exports.parquet" in warning[0] and "imports.csv or imports.parquet" in warning[0]


def test_db_with_the_program_files_does_not_warn() -> None:
    r = selp("eval", str(TRADE / "trade.dl"), "--db", str(TRADE / "db"), "--show", "dealsWith")
    assert r.returncode == 0 and "warning" not in r.stderr, r.stderr


# --- a repeated import ----------------------------------------------------------------------


def test_reimport_of_the_same_content_records_nothing(tmp_path: Path) -> None:
    d = tmp_path / "bio"
    shutil.copytree(BIO, d)
    assert selp("cdss", "init", str(d)).returncode == 0
    g = d / "data" / "PGUS" / "G.csv"
    imp = ("cdss", "import", str(d), "--peer", "PGUS", "--relation", "G")
    first = selp(*imp, str(g))
    assert first.returncode == 0 and "batch 1 of PGUS recorded" in first.stdout, first.stderr
    # the re-run of an import whose first run committed, from another path to the same bytes
    copy = tmp_path / "G-again.csv"
    copy.write_bytes(g.read_bytes())
    again = selp(*imp, str(copy))
    assert again.returncode == 0 and again.stderr == "", again.stderr
    assert "already imported as batch 1" in again.stdout and "nothing recorded" in again.stdout
    log = selp("cdss", "log", str(d), "--peer", "PGUS").stdout
    assert log.count("batch ") == 1, log
    status = selp("cdss", "status", str(d)).stdout
    assert "PGUS: 2 unpublished edit(s)" in status, status
    forced = selp(*imp, "--again", str(g))
    assert forced.returncode == 0 and "batch 2 of PGUS recorded" in forced.stdout, forced.stderr


def test_import_dedup_in_a_store_made_before_it(tmp_path: Path) -> None:
    import sqlite3

    d = tmp_path / "bio"
    shutil.copytree(BIO, d)
    assert selp("cdss", "init", str(d)).returncode == 0
    with sqlite3.connect(d / ".selp" / "store.sqlite") as conn:
        conn.execute("DROP TABLE imports")  # as a store made by an earlier selp
    g = str(d / "data" / "PGUS" / "G.csv")
    imp = ("cdss", "import", str(d), "--peer", "PGUS", "--relation", "G", g)
    assert "batch 1 of PGUS recorded" in selp(*imp).stdout
    assert "already imported as batch 1" in selp(*imp).stdout
