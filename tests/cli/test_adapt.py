"""``selp adapt`` through a real process: the paper's Figure 3 counts, and one-line errors."""

from __future__ import annotations

from helpers.cli import selp
from helpers.paths import EXAMPLES

FIG3 = EXAMPLES / "adapt" / "fig3"


def test_figure_3_counts_through_the_cli() -> None:
    res = selp("adapt", str(FIG3 / "old.dl"), str(FIG3 / "new.dl"), "--db", str(FIG3 / "db"), "--delta", str(FIG3 / "delta"), "--show", "gene")
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    shown = lines[lines.index("gene  3 visible tuple(s)") + 1 :]
    assert shown == ["  1923501  : 2", "  1923503  : 4", "  88139  : 2"]
    # the adapted plan reads the old gene instance instead of re-joining bioentry and term
    assert "  gene@new(V0) :- gene(V0)." in lines


def test_recompute_strategy_gives_the_same_counts() -> None:
    res = selp("adapt", str(FIG3 / "old.dl"), str(FIG3 / "new.dl"), "--db", str(FIG3 / "db"), "--delta", str(FIG3 / "delta"), "--show", "gene", "--strategy", "recompute")
    assert res.returncode == 0, res.stderr
    assert res.stdout.splitlines()[-3:] == ["  1923501  : 2", "  1923503  : 4", "  88139  : 2"]
    assert "gene@new(V0) :- gene(V0)." not in res.stdout


def test_bad_count_is_a_located_one_line_error(tmp_path) -> None:
    (tmp_path / "db").mkdir()
    (tmp_path / "db" / "bioentry.csv").write_text("id,_cnt\n1,x\n")
    res = selp("adapt", str(FIG3 / "old.dl"), str(FIG3 / "new.dl"), "--db", str(tmp_path / "db"))
    assert res.returncode == 1
    assert res.stderr.strip().splitlines() == [f"error: {tmp_path / 'db' / 'bioentry.csv'}:2:1: _cnt must be an integer, got 'x'"]


def test_recursive_new_program_is_refused_with_its_location(tmp_path) -> None:
    new = tmp_path / "new.dl"
    new.write_text('gene(e) :- bioentry(e), term(26, "gene").\ngene(e) :- gene(e).\n')
    res = selp("adapt", str(FIG3 / "old.dl"), str(new), "--db", str(FIG3 / "db"))
    assert res.returncode == 1
    assert f"{new}:2:1: rule r2 makes gene recursive" in res.stderr
    assert "Traceback" not in res.stderr
