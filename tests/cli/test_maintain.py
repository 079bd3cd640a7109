"""``selp maintain``, ``selp gen transit-stub``/``sensor-grid`` as users run them."""

from __future__ import annotations

import json
from pathlib import Path

from helpers.cli import one_error_line, selp

PROGRAM = "datasets/reachable.dl"


def _db(tmp_path: Path) -> Path:
    db = tmp_path / "db"
    db.mkdir(parents=True)
    (db / "link.csv").write_text("src,dst,latency\na,b,1\nb,c,1\nc,b,1\n")
    return db


def test_maintain_prints_view_changes_and_keeps_the_state_between_runs(tmp_path: Path) -> None:
    db = _db(tmp_path)
    changes = tmp_path / "ch.txt"
    changes.write_text("# cut the way in\n-link(a, b, 1)\n")
    r = selp("maintain", PROGRAM, "--db", str(db), "--changes", str(changes))
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ['# -link("a", "b", 1)', '-reachable("a", "b")', '-reachable("a", "c")']
    # the next run starts from the maintained state, not from the files: a+b is gone already
    changes.write_text("+link(a, b, 1)\n")
    r = selp("maintain", PROGRAM, "--db", str(db), "--changes", str(changes), "--stats")
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ['# +link("a", "b", 1)', '+reachable("a", "b")', '+reachable("a", "c")']
    info = json.loads(r.stderr)
    assert info["built"] is False and info["tuples"] == {"reachable": 6} and info["provenance_bytes_per_tuple"] > 0


def test_every_strategy_prints_the_same_changes(tmp_path: Path) -> None:
    outs = set()
    for strategy in ("absorption", "dred", "recompute"):
        db = _db(tmp_path / strategy)
        r = selp("maintain", PROGRAM, "--db", str(db), "--strategy", strategy, "--changes", "-", "--batch", input="-link(b, c, 1)\n+link(c, a, 1)\n")
        assert r.returncode == 0, r.stderr
        outs.add(r.stdout)
    assert len(outs) == 1 and "+reachable(\"c\", \"a\")" in outs.pop()


def test_bad_change_lines_are_located(tmp_path: Path) -> None:
    db = _db(tmp_path)
    for text, where, what in [
        ("\n+link(a, b)\n", "<stdin>:2:7", "3 column(s), got 2"),
        ("+link(a, b, x)\n", "<stdin>:1:13", "column is int, got 'x'"),
        ("-reachable(a, b)\n", "<stdin>:1:2", "derived relation"),
        ("link(a, b, 1)\n", "<stdin>:1:1", "expected +RELATION"),
    ]:
        line = one_error_line(selp("maintain", PROGRAM, "--db", str(db), "--changes", "-", input=text))
        assert where in line and what in line, line


def test_a_state_of_another_strategy_or_program_is_refused(tmp_path: Path) -> None:
    db = _db(tmp_path)
    assert selp("maintain", PROGRAM, "--db", str(db)).returncode == 0
    line = one_error_line(selp("maintain", PROGRAM, "--db", str(db), "--strategy", "dred"))
    assert "--strategy absorption" in line and "--reset" in line
    assert selp("maintain", PROGRAM, "--db", str(db), "--strategy", "dred", "--reset").returncode == 0


def test_fallback_to_dred_is_said_on_stderr(tmp_path: Path) -> None:
    db = tmp_path / "db"
    db.mkdir()
    rows = [f"n{a},n{b},1" for a in range(5) for b in range(5) if a != b]
    (db / "link.csv").write_text("src,dst,latency\n" + "\n".join(rows) + "\n")
    r = selp("maintain", PROGRAM, "--db", str(db), "--formulas", "monomials", "--cap", "2", "--changes", "-", input="-link(n0, n1, 1)\n")
    assert r.returncode == 0, r.stderr
    assert "falling back to DRed" in r.stderr and "dred, after falling back from absorption" in r.stderr


def test_bdd_node_cap_falls_back_to_dred_with_the_same_changes(tmp_path: Path) -> None:
    db = tmp_path / "db"
    db.mkdir()
    rows = [f"n{a},n{b},1" for a in range(5) for b in range(5) if a != b]
    (db / "link.csv").write_text("src,dst,latency\n" + "\n".join(rows) + "\n")
    change = "-link(n0, n1, 1)\n-link(n1, n0, 1)\n-link(n2, n0, 1)\n"
    capped = selp("maintain", PROGRAM, "--db", str(db), "--node-cap", "20", "--state", str(tmp_path / "a.state"), "--changes", "-", input=change)
    assert capped.returncode == 0, capped.stderr
    assert "live BDD nodes (cap 20); falling back to DRed" in capped.stderr
    dred = selp("maintain", PROGRAM, "--db", str(db), "--strategy", "dred", "--state", str(tmp_path / "b.state"), "--changes", "-", input=change)
    assert capped.stdout == dred.stdout and "-reachable(n0, n0)" not in capped.stdout


def test_gen_transit_stub_has_the_papers_shape(tmp_path: Path) -> None:
    r = selp("gen", "transit-stub", "--out", str(tmp_path))
    assert r.returncode == 0, r.stderr
    stats = json.loads(r.stdout)
    assert stats["nodes"] == 100 and 380 <= stats["directed_links"] <= 420
    lines = (tmp_path / "link.csv").read_text().splitlines()
    assert lines[0] == "src,dst,latency" and len(lines) == stats["directed_links"] + 1
    assert {int(l.rsplit(",", 1)[1]) for l in lines[1:]} == {2, 10, 50}


def test_gen_transit_stub_random_latencies_keep_the_topology(tmp_path: Path) -> None:
    def links(d: Path) -> list[list[str]]:
        return [line.split(",") for line in (d / "link.csv").read_text().splitlines()[1:]]

    assert selp("gen", "transit-stub", "--out", str(tmp_path / "p"), "--stub-extra", "2").returncode == 0
    assert selp("gen", "transit-stub", "--out", str(tmp_path / "r"), "--stub-extra", "2", "--latencies", "random").returncode == 0
    paper, rand = links(tmp_path / "p"), links(tmp_path / "r")
    assert sorted((a, b) for a, b, _ in paper) == sorted((a, b) for a, b, _ in rand)
    cost = {(a, b): int(c) for a, b, c in rand}
    assert all(cost[(b, a)] == c and 1 <= c <= 100 for (a, b), c in cost.items())  # the same both ways
    assert len(set(cost.values())) > 3  # not the paper's three kinds


def test_gen_sensor_grid_feeds_the_regions_program(tmp_path: Path) -> None:
    assert selp("gen", "sensor-grid", "--out", str(tmp_path), "--side", "6").returncode == 0
    r = selp("eval", "datasets/regions.dl", "--db", str(tmp_path), "--show", "largest")
    assert r.returncode == 0, r.stderr
    assert "largest(" in r.stdout


def test_multi_aggsel_replaces_a_deleted_fewest_hops_path_from_the_reserve(tmp_path: Path) -> None:
    """route's latency comes over b, its hop count from the direct link: deleting the link keeps
    the latency and takes the hop count of the next candidate, by every strategy."""
    for strategy in ("absorption", "dred", "recompute"):
        db = tmp_path / strategy / "db"
        db.mkdir(parents=True)
        (db / "link.csv").write_text("src,dst,latency\na,b,1\nb,c,1\na,c,9\ns,a,1\n")
        r = selp("maintain", "datasets/shortest-multi.dl", "--db", str(db), "--strategy", strategy, "--changes", "-",
                 input="-link(a, c, 9)\n")
        assert r.returncode == 0, r.stderr
        assert sorted(r.stdout.splitlines()[1:]) == ['+route("a", "c", 2, 2)', '+route("s", "c", 3, 3)',
                                                     '-route("a", "c", 2, 1)', '-route("s", "c", 3, 2)'], strategy


def test_a_stream_split_across_runs_with_held_links_prints_what_one_run_does(tmp_path: Path) -> None:
    # +a->c is held (a reaches c already); cutting b->c kills (a, c) by its formula and the
    # held link gives it back (repair); the state holding both is saved and loaded between runs
    stream = ["+link(a, c, 1)", "-link(b, c, 1)", "-link(a, c, 1)", "+link(b, c, 1)", "-link(a, b, 1)"]
    one = selp("maintain", PROGRAM, "--db", str(_db(tmp_path / "dred")), "--strategy", "dred", "--changes", "-", input="\n".join(stream) + "\n")
    assert one.returncode == 0, one.stderr
    db, lines = _db(tmp_path / "absorption"), []
    for change in stream:
        r = selp("maintain", PROGRAM, "--db", str(db), "--changes", "-", input=change + "\n")
        assert r.returncode == 0 and "DRed" not in r.stderr, r.stderr  # no fallback
        lines += r.stdout.splitlines()
    assert lines == one.stdout.splitlines()
    assert '-reachable("a", "c")' in lines and lines.index('-reachable("a", "c")') > lines.index('# -link("a", "c", 1)')
