"""Global semi-naive rounds on Spark (issue 19, item 3): rules with several recursive atoms read
the relation without its delta after the delta atom, and adaptive execution is off during the
rounds only -- the answers stay the reference engine's."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from helpers.paths import ROOT
from selp.engines.result import run_local
from selp.engines.spark import run_spark
from selp.language import parse_program, parse_program_file
from selp.language.validate import analyze

pytestmark = pytest.mark.spark

# nonlinear closure; a mutual recursion whose rule reads both relations twice; a symmetric step
PROGRAM = """
.decl e(a: int, b: int)
p(x, y) :- e(x, y).
p(x, z) :- p(x, y), p(y, z).
q(x, y) :- e(y, x).
q(x, z) :- p(x, y), q(y, w), p(w, z), q(z, x).
q(x, y) :- q(y, x).
"""


def _graph(db: Path, n: int, m: int, seed: int) -> None:
    rng = random.Random(seed)
    edges = {(rng.randrange(n), rng.randrange(n)) for _ in range(m)}
    db.mkdir()
    (db / "e.csv").write_text("a,b\n" + "".join(f"{a},{b}\n" for a, b in sorted(edges)), encoding="utf-8")


@pytest.mark.parametrize("adaptive", ["false", "true", "auto"])
def test_nonlinear_rounds_match_the_reference_and_restore_adaptive_execution(spark, tmp_path: Path, adaptive: str) -> None:
    _graph(tmp_path / "db", 20, 30, 7)
    analysis = analyze(parse_program(PROGRAM))
    spark.conf.set("spark.selp.rounds.adaptive", adaptive)
    try:
        got = run_spark(analysis, tmp_path / "db", spark)
        want = run_local(analysis, tmp_path / "db")
        for rel in ("p", "q"):
            assert got.rows(rel) == want.rows(rel), rel
        assert got.count("p") > 30  # the closure went several rounds deep
        got.close()
    finally:
        spark.conf.unset("spark.selp.rounds.adaptive")
    # the session's own setting is back once the rounds are over
    assert spark.conf.get("spark.sql.adaptive.enabled") == "true"


def test_adaptive_auto_keeps_it_for_small_components_only(spark, tmp_path: Path) -> None:
    """``spark.selp.rounds.adaptive=auto`` (the default) runs the rounds of a component with few
    input rows (under ``AUTO_MIN_ROWS``, as codes' auto) with adaptive execution and those of a
    larger one without (the setting as each round's job saw it, read in its progress call);
    ``false`` never; a value other than auto/true/false is refused in one line."""
    from selp.engines.spark_codes import AUTO_MIN_ROWS
    from selp.errors import SelpError

    analysis = analyze(parse_program("p(x, y) :- e(x, y).\np(x, z) :- p(x, y), p(y, z).\n"))
    small, large = tmp_path / "small", tmp_path / "large"
    _graph(small, 30, 40, 5)
    _graph(large, 3000, AUTO_MIN_ROWS + 300, 5)
    for db, mode, want_aqe in ((small, "auto", "true"), (large, "auto", "false"), (small, "false", "false")):
        seen: list[str] = []
        spark.conf.set("spark.selp.rounds.adaptive", mode)
        try:
            got = run_spark(analysis, db, spark, progress=lambda *a: seen.append(spark.conf.get("spark.sql.adaptive.enabled")))
        finally:
            spark.conf.unset("spark.selp.rounds.adaptive")
        try:
            assert got.rows("p") == run_local(analysis, db).rows("p")
            assert len(seen) >= 3 and set(seen) == {want_aqe}, (db.name, mode, seen)
        finally:
            got.close()
        assert spark.conf.get("spark.sql.adaptive.enabled") == "true"
    spark.conf.set("spark.selp.rounds.adaptive", "sometimes")
    try:
        with pytest.raises(SelpError, match="spark.selp.rounds.adaptive='sometimes': expected auto, true or false"):
            run_spark(analysis, small, spark)
    finally:
        spark.conf.unset("spark.selp.rounds.adaptive")


def test_trade_r3_on_global_rounds_matches_the_reference(spark) -> None:
    """The trade program's nonlinear r3 (with the symmetric r1) in global rounds."""
    trade = ROOT / "examples" / "trade"
    analysis = analyze(parse_program_file(str(trade / "trade.dl")))
    got = run_spark(analysis, trade / "db", spark)
    assert any(step.get("mode") == "global rounds" for step in got.plan)
    assert got.rows("dealsWith") == run_local(analysis, trade / "db").rows("dealsWith")
    got.close()


def test_ternary_strings_in_rounds_keep_facts_that_differ_in_one_column(spark, tmp_path: Path) -> None:
    """A round's new facts are found by a hash of all columns, checked column by column: facts
    equal but for one column (or holding text that looks like another column's) all survive."""
    db = tmp_path / "db"
    db.mkdir()
    rows = [("a", "b", "x"), ("a", "b", "y"), ("b", "c", "x"), ("b", "c", ""), ("c", "a", "x,y"), ("c", "a", "1")]
    (db / "t.csv").write_text("a,b,l\n" + "".join(f'{a},{b},"{c}"\n' for a, b, c in rows), encoding="utf-8")
    program = """
    .decl t(a: str, b: str, l: str)
    r(x, y, l) :- t(x, y, l).
    r(x, z, l) :- r(x, y, l), r(y, z, m).
    r(x, z, m) :- r(x, y, l), r(y, z, m).
    """
    analysis = analyze(parse_program(program))
    got = run_spark(analysis, db, spark)
    want = run_local(analysis, db).rows("r")
    assert got.rows("r") == want
    assert ("a", "a", "x") in want and ("a", "a", "y") in want and ("a", "a", "") in want
    assert any(step.get("mode") == "global rounds" for step in got.plan)
    got.close()


# constants in heads and bodies (99 is no input's value), an inequality, an assignment, a
# negation, strings and labeled nulls from a lower stratum: all run on dictionary codes
CODED = """
.decl e(a: int, b: int)
.decl name(a: int, n: str)
p(x, y) :- e(x, y).
p(x, z) :- p(x, y), p(y, z).
lab(f(n), x) :- name(x, n).
s(x, 99) :- p(x, 3).
s(x, y) :- s(x, z), s(z, y), x != 5, y = z.
s(x, y) :- s(y, x), not p(x, y).
t(l, n, x) :- lab(l, x), name(x, n).
t(l, m, z) :- t(l, n, x), p(x, z), name(z, m), t(k, m, z), m != "n3".
"""


@pytest.mark.parametrize("codes", ["true", "false"])
def test_rounds_on_dictionary_codes_match_the_reference(spark, tmp_path: Path, codes: str) -> None:
    """Components that only join and copy values run their rounds on codes, and the answers are
    the reference engine's (values decoded, labeled nulls included); the setting turns it off."""
    _graph(tmp_path / "db", 20, 30, 7)
    (tmp_path / "db" / "name.csv").write_text("a,n\n" + "".join(f"{i},n{i % 7}\n" for i in range(20)), encoding="utf-8")
    analysis = analyze(parse_program(CODED))
    spark.conf.set("spark.selp.rounds.codes", codes)
    try:
        got = run_spark(analysis, tmp_path / "db", spark)
    finally:
        spark.conf.unset("spark.selp.rounds.codes")
    want = run_local(analysis, tmp_path / "db")
    try:
        for rel in ("p", "s", "t"):
            assert got.rows(rel) == want.rows(rel), rel
            assert got.count(rel) == want.count(rel)
        assert got.iterations == want.iterations
        assert any(row[1] == 99 for row in want.rows("s")) and len(want.rows("t")) > 20
        coded = {rel for step in got.plan if step.get("values", "").startswith("codes") for rel in step["relations"]}
        assert coded == ({"p", "s", "t"} if codes == "true" else set())
    finally:
        got.close()


def test_rounds_with_wide_rows_run_on_unpacked_codes(spark, tmp_path: Path) -> None:
    """Rows whose codes do not fit one long (7 columns of 600 values: 70 bits) are deduplicated
    and anti-joined column by column, and still match the reference."""
    db = tmp_path / "db"
    db.mkdir()
    rng = random.Random(3)
    rows = [tuple(rng.randrange(600) for _ in range(7)) for _ in range(400)]
    (db / "w.csv").write_text("a,b,c,d,e,f,g\n" + "".join(",".join(map(str, r)) + "\n" for r in rows), encoding="utf-8")
    program = """
    .decl w(a: int, b: int, c: int, d: int, e: int, f: int, g: int)
    v(a, b, c, d, e, f, g) :- w(a, b, c, d, e, f, g).
    v(a, b, c, d, e, f, y) :- v(a, b, c, d, e, f, x), v(x, _, _, _, _, _, y), a < 300.
    """
    analysis = analyze(parse_program(program))
    got = run_spark(analysis, db, spark)
    want = run_local(analysis, db)
    assert got.rows("v") == want.rows("v") and len(want.rows("v")) > 400
    (step,) = [s for s in got.plan if s["relations"] == ["v"]]
    assert "values" not in step  # an order comparison: text rounds
    got.close()
    program = program.replace(", a < 300", ", a != 300")
    analysis = analyze(parse_program(program))
    spark.conf.set("spark.selp.rounds.codes", "true")  # 400 rows: auto would keep them on text
    try:
        got = run_spark(analysis, db, spark)
    finally:
        spark.conf.unset("spark.selp.rounds.codes")
    assert got.rows("v") == run_local(analysis, db).rows("v")
    (step,) = [s for s in got.plan if s["relations"] == ["v"]]
    assert step["values"].startswith("codes (") and int(step["values"].split("(")[1].split()[0]) > 2**9
    got.close()


def test_codes_auto_runs_small_inputs_on_text_and_large_ones_on_codes(spark, tmp_path: Path) -> None:
    """``spark.selp.rounds.codes=auto`` (the default) keeps a component with few input rows on
    text, says why in the plan, and codes one with many (same answers either way); a value other
    than auto/true/false is refused in one line."""
    from selp.engines.spark_codes import AUTO_MIN_ROWS
    from selp.errors import SelpError

    analysis = analyze(parse_program("p(x, y) :- e(x, y).\np(x, z) :- p(x, y), p(y, z).\n"))
    small, large = tmp_path / "small", tmp_path / "large"
    _graph(small, 30, 40, 5)
    _graph(large, 3000, AUTO_MIN_ROWS + 300, 5)
    for db, mode in ((small, "text"), (large, "codes")):
        got = run_spark(analysis, db, spark)
        try:
            (step,) = got.plan
            assert step["values"].startswith(mode), step
            if mode == "text":
                assert "under" in step["values"] and "auto" in step["values"]
            assert got.rows("p") == run_local(analysis, db).rows("p")
        finally:
            got.close()
    spark.conf.set("spark.selp.rounds.codes", "maybe")
    try:
        with pytest.raises(SelpError, match="spark.selp.rounds.codes='maybe': expected auto, true or false"):
            run_spark(analysis, small, spark)
    finally:
        spark.conf.unset("spark.selp.rounds.codes")


@pytest.mark.parametrize("seed", [3, 11])
def test_packed_rounds_keep_exactly_the_new_facts_of_each_round(spark, tmp_path: Path, seed: int) -> None:
    """Packed coded rounds (a row of codes as one long, deduplicated and anti-joined on it): every
    round's delta, and the closure, are the reference engine's, on graphs whose rounds re-derive
    many known facts (a dense random graph with self-loops and cycles)."""
    _graph(tmp_path / "db", 25, 60, seed)
    analysis = analyze(parse_program(PROGRAM))
    spark.conf.set("spark.selp.rounds.codes", "true")
    deltas: list[tuple[int, int]] = []
    want_deltas: list[tuple[int, int]] = []
    try:
        got = run_spark(analysis, tmp_path / "db", spark, progress=lambda c, i, d, t: deltas.append((d, t)))
    finally:
        spark.conf.unset("spark.selp.rounds.codes")
    want = run_local(analysis, tmp_path / "db", progress=lambda c, i, d, t: want_deltas.append((d, t)))
    try:
        assert any(step.get("values", "").startswith("codes") for step in got.plan)
        for rel in ("p", "q"):
            assert got.rows(rel) == want.rows(rel), rel
            assert got.count(rel) == len(want.rows(rel))
        assert deltas == want_deltas  # same new facts per round: none counted twice, none lost
        assert len(deltas) > 4
    finally:
        got.close()
