"""The durable CDSS store: init, the edit log, validation of batches (refused whole), deletions
and rejections, publication epochs, the one-line CLI errors."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from helpers.cdss import cdss_cli, load_running_example, make_cdss, ok, one_line_error
from selp.cdss.errors import CdssError
from selp.cdss.store import DB_FILE, STORE_DIR, Store

def log_size(d: Path) -> int:
    with Store.open(d) as s:
        return len(s.edits())


# -- init ---------------------------------------------------------------------------------------
def test_init_creates_the_store_and_refuses_to_overwrite_it(tmp_path):
    d = make_cdss(tmp_path)
    out = ok(cdss_cli("init", d))
    assert out.strip() == f"created {d / STORE_DIR} for 3 peer(s): PGUS, PBioSQL, PuBio"
    assert (d / STORE_DIR / DB_FILE).is_file() and (d / STORE_DIR / "instances").is_dir()
    conn = sqlite3.connect(d / STORE_DIR / DB_FILE)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert dict(conn.execute("SELECT name, exchange_epoch FROM peers")) == {"PGUS": None, "PBioSQL": None, "PuBio": None}
    conn.close()
    one_line_error(cdss_cli("init", d), "a store already exists", "move it away")
    assert not [p for p in d.iterdir() if p.name.startswith(".selp-init-")]  # no leftovers


def test_commands_without_a_store_or_config_say_so(tmp_path):
    d = make_cdss(tmp_path)
    one_line_error(cdss_cli("status", d), "no store in", "selp cdss init")
    one_line_error(cdss_cli("init", tmp_path / "nothing"), "cdss.toml")


def test_schema_change_refuses_but_mapping_change_is_accepted(tmp_path):
    d = make_cdss(tmp_path)
    ok(cdss_cli("init", d))
    toml = d / "cdss.toml"
    original = toml.read_text()
    toml.write_text(original.replace('  "m3: B(i, n) -> exists c. U(n, c)",\n', ""))
    ok(cdss_cli("status", d))  # mappings changed: the edit logs still fit
    toml.write_text(original.replace('key = ["id"]', 'key = ["id", "can"]'))
    one_line_error(cdss_cli("status", d), "schema", "changed since the store was created")


# -- edits, validation --------------------------------------------------------------------------
def test_edit_records_one_batch_in_order(tmp_path):
    d = make_cdss(tmp_path)
    ok(cdss_cli("init", d))
    out = ok(cdss_cli("edit", d, "--peer", "PGUS", "+G(1, 2, 3)", "+G(3,5,2)", "+G(7, 7, 7)", "-G(7, 7, 7)"))
    assert out.strip() == "batch 1 of PGUS recorded (unpublished): 3 insertion(s), 1 local deletion(s), 0 rejection(s)"
    with Store.open(d) as s:
        edits = s.edits()
        assert [(e.relation, e.kind, e.op, e.values) for e in edits] == [
            ("G", "l", "+", (1, 2, 3)), ("G", "l", "+", (3, 5, 2)), ("G", "l", "+", (7, 7, 7)), ("G", "l", "-", (7, 7, 7)),
        ]
        assert {e.batch for e in edits} == {1} and all(e.published is None for e in edits)
        assert s.base_data(0)["G_l"] == set()  # unpublished: in no one's base data
        assert s.unpublished_counts() == {"PGUS": 4}
    log = ok(cdss_cli("log", d, "--peer", "PGUS")).splitlines()
    assert log[0].startswith("batch 1 of PGUS at ") and log[0].endswith("(unpublished)")
    assert [line.split()[1:] for line in log[1:]] == [
        ["+G(1,", "2,", "3)", "insert"], ["+G(3,", "5,", "2)", "insert"],
        ["+G(7,", "7,", "7)", "insert"], ["-G(7,", "7,", "7)", "delete"],
    ]


@pytest.mark.parametrize(
    "edits, fragments",
    [
        (["+G(1, 2, 3)", "+G(1, x, 3)"], ["edit '+G(1, x, 3)'", "G.can is int, got 'x'"]),
        (["+G(1, 2)"], ["edit '+G(1, 2)'", "G has 3 attribute(s) (id, can, nam), got 2 value(s)"]),
        (["+G(1, 2, 3)", "+H(1)"], ["PGUS has no relation H (its relations: G)"]),
        (["+B(3, 5)"], ["PGUS has no relation B"]),
        (["+PBioSQL.B(3, 5)"], ["PBioSQL.B belongs to PBioSQL, not PGUS"]),
        (["+G(1, 2, 3)", "+G(1, 9, 9)"], ["edit '+G(1, 9, 9)'", "key violation: G(1, 9, 9) and G(1, 2, 3) have the same key (id = 1)"]),
        (["+G(1, 2, 3)", "-G(4, 4, 4)"], ["cannot delete G(4, 4, 4): it is neither a local tuple of PGUS nor in its instance"]),
        (["+G(1, f_m3_c(2), 3)"], ["labeled nulls cannot be edited"]),
        (["G 1 2 3"], ["expected [+|-]RELATION(value, ...)"]),
    ],
)
def test_bad_batches_are_refused_whole(tmp_path, edits, fragments):
    d = make_cdss(tmp_path)
    ok(cdss_cli("init", d))
    ok(cdss_cli("edit", d, "--peer", "PGUS", "+G(5, 5, 5)"))
    one_line_error(cdss_cli("edit", d, "--peer", "PGUS", *edits), *fragments)
    assert log_size(d) == 1  # nothing of the refused batch was applied


def test_unknown_peer_is_refused(tmp_path):
    d = make_cdss(tmp_path)
    ok(cdss_cli("init", d))
    one_line_error(cdss_cli("edit", d, "--peer", "PNobody", "+G(1, 2, 3)"), "unknown peer 'PNobody' (peers: PGUS, PBioSQL, PuBio)")
    one_line_error(cdss_cli("publish", d, "--peer", "PNobody"), "unknown peer")


def test_key_violation_across_batches_and_replacement_within_one(tmp_path):
    d = make_cdss(tmp_path)
    ok(cdss_cli("init", d))
    ok(cdss_cli("edit", d, "--peer", "PGUS", "+G(1, 2, 3)"))
    one_line_error(cdss_cli("edit", d, "--peer", "PGUS", "+G(1, 2, 4)"), "key violation", "(id = 1)")
    # deleting the old tuple first in the same batch makes the replacement legal
    ok(cdss_cli("edit", d, "--peer", "PGUS", "-G(1, 2, 3)", "+G(1, 2, 4)"))
    with Store.open(d) as s:
        assert [(e.op, e.values) for e in s.edits()] == [("+", (1, 2, 3)), ("-", (1, 2, 3)), ("+", (1, 2, 4))]


def test_csv_import_errors_are_located_and_refuse_the_whole_file(tmp_path):
    d = make_cdss(tmp_path)
    ok(cdss_cli("init", d))
    f = tmp_path / "g.csv"
    f.write_text("nam,id,can\n3,1,2\n2,3,five\n")
    # the bad cell is line 3, column 3 (can is the file's third column)
    one_line_error(cdss_cli("import", d, "--peer", "PGUS", "--relation", "G", f), f"error: {f}:3:3: G.can is int, got 'five'")
    f.write_text("id,can,nam\n1,2,3\n1,5,2\n")
    one_line_error(cdss_cli("import", d, "--peer", "PGUS", "--relation", "G", f), f"{f}:3: key violation")
    f.write_text("id,can\n1,2\n")
    one_line_error(cdss_cli("import", d, "--peer", "PGUS", "--relation", "G", f), f"{f}:1: header (id, can) does not name")
    f.write_text("id,can,nam\n1,2,3\n4,5\n")
    one_line_error(cdss_cli("import", d, "--peer", "PGUS", "--relation", "G", f), f"{f}:3: expected 3 value(s), got 2")
    one_line_error(cdss_cli("import", d, "--peer", "PGUS", "--relation", "B", f), "PGUS has no relation B")
    one_line_error(cdss_cli("import", d, "--peer", "PGUS", "--relation", "G", tmp_path / "missing.csv"), "cannot read")
    assert log_size(d) == 0
    f.write_text("nam,id,can\n3,1,2\n2,3,5\n")
    ok(cdss_cli("import", d, "--peer", "PGUS", "--relation", "G", f))
    with Store.open(d) as s:
        assert [e.values for e in s.edits()] == [(1, 2, 3), (3, 5, 2)]  # columns reordered by the header


def test_string_attributes_accept_quoted_and_bare_text(tmp_path):
    d = tmp_path / "s"
    d.mkdir()
    (d / "cdss.toml").write_text(
        'mappings = []\n[peers.P.relations.R]\nattributes = ["k: int", "name: str"]\nkey = ["k"]\n'
    )
    ok(cdss_cli("init", d))
    ok(cdss_cli("edit", d, "--peer", "P", '+R(1, "a, b")', "+R(2, plain)"))
    with Store.open(d) as s:
        assert [e.values for e in s.edits()] == [(1, "a, b"), (2, "plain")]


def test_publish_assigns_increasing_epochs(tmp_path):
    d = make_cdss(tmp_path)
    ok(cdss_cli("init", d))
    assert ok(cdss_cli("publish", d, "--peer", "PGUS")).strip() == "PGUS has no unpublished edits; nothing published"
    ok(cdss_cli("edit", d, "--peer", "PGUS", "+G(1, 2, 3)"))
    ok(cdss_cli("edit", d, "--peer", "PGUS", "+G(3, 5, 2)"))
    ok(cdss_cli("edit", d, "--peer", "PuBio", "+U(2, 5)"))
    assert ok(cdss_cli("publish", d, "--peer", "PGUS")).strip() == "published 2 edit(s) of PGUS as publication 1"
    assert ok(cdss_cli("publish", d, "--peer", "PuBio")).strip() == "published 1 edit(s) of PuBio as publication 2"
    ok(cdss_cli("edit", d, "--peer", "PGUS", "-G(1, 2, 3)"))
    with Store.open(d) as s:
        assert s.base_data(1)["G_l"] == {(1, 2, 3), (3, 5, 2)} and s.base_data(1)["U_l"] == set()
        assert s.base_data(2)["U_l"] == {(2, 5)}
        assert s.base_data(2)["G_l"] == {(1, 2, 3), (3, 5, 2)}  # the deletion is not published
    assert ok(cdss_cli("publish", d, "--peer", "PGUS")).strip() == "published 1 edit(s) of PGUS as publication 3"
    with Store.open(d) as s:
        assert s.base_data(3)["G_l"] == {(3, 5, 2)}


# -- deletions of imports are rejections -------------------------------------------------------
def test_deleting_an_import_records_a_rejection_and_a_local_tuple_is_removed(tmp_path):
    d = make_cdss(tmp_path, trust=False)
    load_running_example(d)
    ok(cdss_cli("exchange", d, "--peer", "PBioSQL", "-q"))  # the default engine
    # B(3,2) is imported (m1, m4); B(3,5) is local
    out = ok(cdss_cli("edit", d, "--peer", "PBioSQL", "-B(3, 2)", "-B(3, 5)"))
    assert "1 local deletion(s), 1 rejection(s)" in out
    with Store.open(d) as s:
        last = s.edits()[-2:]
        assert [(e.kind, e.op, e.values) for e in last] == [("r", "+", (3, 2)), ("l", "-", (3, 5))]
    one_line_error(cdss_cli("edit", d, "--peer", "PBioSQL", "-B(3, 2)"), "B(3, 2) is already rejected at PBioSQL")
    log = ok(cdss_cli("log", d, "--peer", "PBioSQL")).splitlines()
    assert [line.split(maxsplit=1)[1] for line in log[-2:]] == ["-B(3, 2)  reject", "-B(3, 5)  delete"]


def test_reject_and_undo(tmp_path):
    d = make_cdss(tmp_path)
    load_running_example(d)
    # not imported (yet): edit refuses, reject accepts
    one_line_error(cdss_cli("edit", d, "--peer", "PBioSQL", "-B(9, 9)"), "neither a local tuple", "no exchange yet")
    assert "1 rejection(s)" in ok(cdss_cli("reject", d, "--peer", "PBioSQL", "B(9, 9)"))
    one_line_error(cdss_cli("reject", d, "--peer", "PBioSQL", "B(9, 9)"), "already rejected")
    one_line_error(cdss_cli("reject", d, "--peer", "PBioSQL", "+B(9, 9)"), "without + or -")
    assert "1 lifted rejection(s)" in ok(cdss_cli("reject", d, "--peer", "PBioSQL", "--undo", "B(9, 9)"))
    one_line_error(cdss_cli("reject", d, "--peer", "PBioSQL", "--undo", "B(9, 9)"), "is not rejected")
    with Store.open(d) as s:
        assert [(e.kind, e.op) for e in s.edits(peer="PBioSQL")][-2:] == [("r", "+"), ("r", "-")]


def test_concurrent_writer_is_refused_after_the_busy_timeout(tmp_path):
    import os
    import subprocess
    import sys

    d = make_cdss(tmp_path)
    ok(cdss_cli("init", d))
    holder = sqlite3.connect(d / STORE_DIR / DB_FILE, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another writer in the middle of a transaction
    try:
        env = dict(os.environ, SELP_CDSS_BUSY_TIMEOUT="0.5")
        p = subprocess.run(
            [sys.executable, "-m", "selp", "cdss", "edit", str(d), "--peer", "PGUS", "+G(1, 2, 3)"],
            env=env, capture_output=True, text=True, timeout=120,
        )
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert p.returncode == 1
    assert p.stderr.strip() == "error: the store is busy: another process is writing to it; waited 0.5s, try again"
    assert log_size(d) == 0
    ok(cdss_cli("edit", d, "--peer", "PGUS", "+G(1, 2, 3)"))  # and once it is free, it works


def test_concurrent_editors_are_serialised(tmp_path):
    """Two processes record 15 batches each at once: every batch lands, in one order."""
    import subprocess
    import sys

    d = make_cdss(tmp_path)
    ok(cdss_cli("init", d))
    script = (
        "import sys\n"
        "from selp.cdss.store import Store\n"
        "from selp.cdss.edits import apply_batch, parse_edit\n"
        "peer, rel, base = sys.argv[2], sys.argv[3], int(sys.argv[4])\n"
        "with Store.open(sys.argv[1]) as s:\n"
        "    for i in range(15):\n"
        "        vals = ', '.join([str(base + i)] * (3 if rel == 'G' else 2))\n"
        "        apply_batch(s, peer, [parse_edit(s, peer, f'+{rel}({vals})')], 'test')\n"
    )
    procs = [
        subprocess.Popen([sys.executable, "-c", script, str(d), "PGUS", "G", "100"]),
        subprocess.Popen([sys.executable, "-c", script, str(d), "PuBio", "U", "200"]),
    ]
    assert [p.wait(timeout=120) for p in procs] == [0, 0]
    with Store.open(d) as s:
        edits = s.edits()
        assert len(edits) == 30 and len({e.batch for e in edits}) == 30
        assert [e.values[0] for e in edits if e.peer == "PGUS"] == list(range(100, 115))
        assert s.conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_store_api_errors_are_cdss_errors(tmp_path):
    d = make_cdss(tmp_path)
    with pytest.raises(CdssError, match="no store in"):
        Store.open(d)
