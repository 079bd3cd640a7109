"""``selp cdss check|compile|eval``: output, exit codes, one-line errors."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from helpers.paths import BIO
from selp.cli import main
from selp.language import parse_program
from selp.language.validate import analyze

IN_PROCESS = ["embedded", "reference"]  # the default engine and the oracle: the same answers


def run(*args: str | Path):
    return CliRunner().invoke(main, [str(a) for a in args])


def test_check_summarises():
    res = run("cdss", "check", BIO)
    assert res.exit_code == 0, res.output
    assert res.output.strip() == (
        f"{BIO}/cdss.toml: ok: 3 peer(s), 3 relation(s), 4 mapping(s) (1 with existential variables;"
        " weakly acyclic), 3 trust condition(s), 1 ranked-trust policy; compiles to 18 rules"
    )


def test_compile_prints_a_selp_program(tmp_path):
    res = run("cdss", "compile", BIO, "--peer", "PBioSQL")
    assert res.exit_code == 0, res.output
    program = parse_program(res.output)
    analyze(program)
    assert program.rule("m4").weight == "2"
    assert "% mapping m4: B(i, c), U(n, c) -> B(i, n)" in res.output
    out = tmp_path / "bio.dl"
    res = run("cdss", "compile", BIO, "--out", str(out))
    assert res.exit_code == 0 and parse_program(out.read_text()).rule("m4").weight is None


@pytest.mark.parametrize("engine", IN_PROCESS)
def test_eval_prints_certain_answers(engine):
    res = run("cdss", "eval", BIO, "--engine", engine, "--relation", "U")
    assert res.exit_code == 0, res.output
    assert res.output.splitlines() == [
        "PuBio.U(nam, can): 2 tuple(s), certain answers",
        "  U(2, 5)",
        "  U(3, 2)",
    ]
    res = run("cdss", "eval", BIO, "--engine", engine, "--relation", "PuBio.U", "--with-nulls")
    assert res.exit_code == 0, res.output
    assert "  U(5, f_m3_c(5))" in res.output.splitlines()
    assert "4 tuple(s), with labeled nulls" in res.output
    res = run("cdss", "eval", BIO, "--engine", engine)
    assert res.exit_code == 0
    assert "PBioSQL.B(id, nam): 2 tuple(s), certain answers" in res.output


def one_line_error(res, expected_start: str) -> None:
    assert res.exit_code == 1, res.output
    lines = res.output.strip().splitlines()
    assert len(lines) == 1, res.output
    assert lines[0].startswith("error: " + expected_start), lines[0]
    assert "Traceback" not in res.output


def copy(tmp_path: Path) -> Path:
    d = tmp_path / "bio"
    shutil.copytree(BIO, d)
    return d


def test_errors_are_one_line_with_exit_1(tmp_path):
    d = copy(tmp_path)
    toml = d / "cdss.toml"
    text = toml.read_text()
    toml.write_text(text.replace('"m4: B(i, c), U(n, c) -> B(i, n)"', '"m4: B(i, c), U(n, c) <-> B(i, n)"'))
    line = next(i for i, l in enumerate(toml.read_text().splitlines(), 1) if "<->" in l)
    for cmd in ("check", "compile", "eval"):
        one_line_error(run("cdss", cmd, str(d)), f"{toml}:{line}:8: mapping m4: variable c of the left side does not occur on the other side")
    toml.write_text(text.replace('key = ["id"]', 'key = ["idd"]'))
    line = next(i for i, l in enumerate(toml.read_text().splitlines(), 1) if "idd" in l)
    one_line_error(run("cdss", "check", str(d)), f"{toml}:{line}:8: key attribute 'idd' is not an attribute of PGUS.G")
    toml.write_text(text.replace("[peers.PGUS]", "[peers.PGUS"))
    one_line_error(run("cdss", "check", str(d)), f"{toml}:")
    one_line_error(run("cdss", "check", str(tmp_path / "nowhere")), f"{tmp_path}/nowhere/cdss.toml not found")
    one_line_error(run("cdss", "compile", BIO, "--peer", "PX"), "unknown peer 'PX'")
    one_line_error(run("cdss", "eval", BIO, "--relation", "X"), "--relation X: no such relation")
    for engine in ("embedded", "local"):  # local: the old name of reference, still accepted
        one_line_error(run("cdss", "eval", BIO, "--engine", engine, "--master", "local[1]"), "--master applies to the spark engine")
    toml.write_text(text)
    (d / "selp.toml").write_text('engine = "nope"\n')  # the engine's default is read beside cdss.toml
    one_line_error(run("cdss", "eval", str(d)), f"{d / 'selp.toml'}: engine = 'nope' is not an engine")


@pytest.mark.parametrize("engine", IN_PROCESS)
def test_eval_reads_data_option(tmp_path, engine):
    d = copy(tmp_path)
    (d / "data" / "PBioSQL" / "B.rejections.csv").write_text("id,nam\n3,2\n")
    res = run("cdss", "eval", BIO, "--engine", engine, "--relation", "B", "--data", str(d / "data"))
    assert res.exit_code == 0, res.output
    # with the trust conditions B(1,3) is distrusted and B(3,2) rejected: only the local B(3,5)
    assert res.output.splitlines()[1:] == ["  B(3, 5)"]
