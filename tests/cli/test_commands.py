"""The `selp` command line as users run it: real processes, real files, exit codes and messages."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from helpers.cli import selp
from helpers.paths import TRADE
from selp.database import load_database
from selp.language import parse_program_file
from selp.language.validate import analyze

# dealsWith over Table 1, worked out by hand: imports/exports give (Cuba,France), (Mexico,France),
# (Mexico,Cuba), (France,Cuba) via r2, (Mexico,France) via the copy; symmetry and transitivity
# then connect all three countries, including each with itself.
COUNTRIES = ["Cuba", "France", "Mexico"]
EXPECTED_DEALS = {(a, b) for a in COUNTRIES for b in COUNTRIES}


def test_check_lists_relations_and_strata() -> None:
    r = selp("check", str(TRADE / "trade.dl"))
    assert r.returncode == 0, r.stderr
    assert "idb  dealsWith/2 (str, str)  rules: r0, r1, r2, r3" in r.stdout
    assert "edb  exports/2" in r.stdout
    assert "0: dealsWith  (recursive: dealsWith)" in r.stdout


def test_check_json_is_machine_readable() -> None:
    r = selp("check", str(TRADE / "trade.dl"), "--json")
    doc = json.loads(r.stdout)
    kinds = {x["relation"]: x["kind"] for x in doc["relations"]}
    assert kinds == {"dealsWith": "idb", "dealsWith_edb": "edb", "exports": "edb", "imports": "edb"}
    assert doc["strata"] == [["dealsWith"]]


@pytest.mark.parametrize("engine", ["embedded", "reference"])
def test_eval_json_gives_the_hand_computed_answer(engine: str) -> None:
    r = selp("eval", str(TRADE / "trade.dl"), "--db", str(TRADE / "db"), "--engine", engine, "--show", "dealsWith", "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["engine"] == engine
    rows = {tuple(x) for x in doc["relations"]["dealsWith"]["rows"]}
    assert rows == EXPECTED_DEALS
    assert doc["relations"]["dealsWith"]["count"] == 9


@pytest.mark.parametrize("engine", ["embedded", "reference"])
def test_eval_writes_csv_atomically(tmp_path: Path, engine: str) -> None:
    out = tmp_path / "out"
    r = selp("eval", str(TRADE / "trade.dl"), "--db", str(TRADE / "db"), "--engine", engine, "--out", str(out), "-q")
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in out.iterdir()) == ["dealsWith.csv"]
    with open(out / "dealsWith.csv", newline="") as fh:
        rows = list(csv.reader(fh))
    assert rows[0] == ["a", "b"]
    assert {tuple(x) for x in rows[1:]} == EXPECTED_DEALS


def test_engine_default_from_env_and_selp_toml(tmp_path: Path) -> None:
    prog = tmp_path / "p.dl"
    prog.write_text('e(1, 2).\ne(2, 3).\ntc(x, y) :- e(x, y).\ntc(x, y) :- tc(x, z), e(z, y).\n')
    r = selp("eval", str(prog), "--json")
    assert json.loads(r.stdout)["engine"] == "embedded"  # the default
    (tmp_path / "selp.toml").write_text('engine = "local"\n')  # the old name of reference
    r = selp("eval", str(prog), "--json")
    assert json.loads(r.stdout)["engine"] == "reference"
    (tmp_path / "selp.toml").write_text('engine = "turbo"\n')
    r = selp("eval", str(prog))
    assert r.returncode == 1
    assert "selp.toml" in r.stderr and "'turbo' is not an engine" in r.stderr
    r = selp("eval", str(prog), "--json", env={"SELP_ENGINE": "reference"})
    assert json.loads(r.stdout)["relations"]["tc"]["count"] == 3
    assert json.loads(r.stdout)["engine"] == "reference"


@pytest.mark.parametrize(
    "text, expected",
    [
        ("p(x) :- q(x)", "p.dl:1:13: syntax error: unexpected end of input, expected ',', '.'"),
        ("p(x) :- q(y).", "p.dl:1:1: unsafe variable x in rule r1"),
        ("p(x) :- q(x).\np(x, y) :- q(x), q(y).", "p.dl:2:1: arity mismatch: p has 2 argument(s)"),
        ("p(x) :- q(x), not p(x).", "not stratifiable"),
    ],
)
def test_bad_programs_fail_with_one_located_line(tmp_path: Path, text: str, expected: str) -> None:
    (tmp_path / "p.dl").write_text(text)
    r = selp("eval", "p.dl", "--engine", "reference", cwd=tmp_path)
    assert r.returncode == 1
    assert "Traceback" not in r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ")
    assert expected in lines[0]


def test_bad_data_names_file_and_line(tmp_path: Path) -> None:
    db = tmp_path / "db"
    db.mkdir()
    (db / "e.csv").write_text("src,dst\n1,2\n2,3,4\n")
    (tmp_path / "p.dl").write_text("tc(x, y) :- e(x, y).\n")
    r = selp("eval", "p.dl", "--db", "db", "--engine", "reference", cwd=tmp_path)
    assert r.returncode == 1
    assert r.stderr.strip() == "error: db/e.csv:3: row has 3 field(s) but the header has 2"


def test_usage_errors_exit_2() -> None:
    r = selp("eval", "--no-such-flag")
    assert r.returncode == 2
    r = selp("eval", str(TRADE / "trade.dl"), "--engine", "turbo")
    assert r.returncode == 2


def test_show_unknown_relation_is_a_user_error() -> None:
    r = selp("eval", str(TRADE / "trade.dl"), "--db", str(TRADE / "db"), "--engine", "reference", "--show", "exports")
    assert r.returncode == 1
    assert "--show exports: an EDB relation" in r.stderr


def test_every_command_has_help_with_examples() -> None:
    for cmd in (["--help"], ["eval", "--help"], ["check", "--help"]):
        r = selp(*cmd)
        assert r.returncode == 0
        assert "Example" in r.stdout


def test_instrument_prints_a_program_that_evaluates_to_the_matching_facts(tmp_path: Path) -> None:
    out = tmp_path / "p2.dl"
    r = selp("instrument", str(TRADE / "trade.dl"), "--pattern", "dealsWith(Cuba, *) // exports(Cuba, tobacco)", "--out", str(out))
    assert r.returncode == 0, r.stderr
    assert "root relations: dealsWith@v0" in r.stderr
    assert 'dealsWith@v0("Cuba", b) :- dealsWith@v1t(b, "Cuba").' in out.read_text()
    r = selp("eval", str(out), "--db", str(TRADE / "db"), "--engine", "reference", "--show", "dealsWith@v0", "--json")
    rows = {tuple(x) for x in json.loads(r.stdout)["relations"]["dealsWith@v0"]["rows"]}
    # every Cuba fact derives through exports(Cuba, tobacco): r2 gives dealsWith(France, Cuba)
    # from imports(France, tobacco), and symmetry/transitivity carry it to all three partners
    assert rows == {("Cuba", c) for c in COUNTRIES}


def test_instrumented_negation_runs_and_keeps_the_other_facts(tmp_path: Path) -> None:
    """``NOT dealsWith(Cuba, *)`` over all relations: every fact except dealsWith(Cuba, _)."""
    out = tmp_path / "not.dl"
    r = selp("instrument", str(TRADE / "trade.dl"), "--pattern", "NOT dealsWith(Cuba, *)", "--out", str(out))
    assert r.returncode == 0, r.stderr
    roots = [x.strip() for x in r.stderr.split("root relations:")[1].splitlines()[0].split(",")]
    r = selp("eval", str(out), "--db", str(TRADE / "db"), "--engine", "reference", "--json", "--show", "*")
    relations = json.loads(r.stdout)["relations"]
    got = {(rel.split("@")[0], tuple(row)) for rel in roots for row in relations[rel]["rows"]}
    r = selp("eval", str(TRADE / "trade.dl"), "--db", str(TRADE / "db"), "--engine", "reference", "--json", "--show", "*")
    plain = json.loads(r.stdout)["relations"]
    every = {(rel, tuple(row)) for rel, v in plain.items() for row in v["rows"]}
    analysis = analyze(parse_program_file(str(TRADE / "trade.dl")))
    every |= {(rel, row) for rel, rows in load_database(analysis, TRADE / "db").facts.items() for row in rows}
    assert got == {(rel, row) for rel, row in every if not (rel == "dealsWith" and row[0] == "Cuba")}
    assert ("dealsWith", ("France", "Cuba")) in got


@pytest.mark.parametrize(
    "pattern, expected",
    [
        ("dealsWith(Cuba, *) // exports(Cuba, tobacco", "error: pattern:1:44: syntax error"),
        ("dealsWth(Cuba, *)", "error: pattern:1:1: unknown relation dealsWth"),
        ("NOT dealsWith(1, *)", "error: pattern:1:15: constant 1 has type int but column dealsWith.a is str"),
    ],
)
def test_instrument_rejects_bad_patterns_in_one_line(pattern: str, expected: str) -> None:
    r = selp("instrument", str(TRADE / "trade.dl"), "--pattern", pattern)
    assert r.returncode == 1
    assert r.stderr.strip().startswith(expected)
    assert "Traceback" not in r.stderr
