"""The Spark engine agrees with the local engine, encodes values like selp.values, reads files like
selp.database (same located errors) and writes results atomically."""

from __future__ import annotations

import csv
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings

from helpers.budget import examples
from helpers.paths import EXAMPLES
from helpers.randprog import programs_with_databases
from selp.database import load_database, write_relations
from selp.engines.partition import evaluate_partitionwise
from selp.engines.result import run_local
from selp.errors import DataError
from selp.language import parse_program, parse_program_file
from selp.language.validate import analyze
from selp.values import Skolem, encode

pytestmark = pytest.mark.spark



def analysis_of(text: str):
    return analyze(parse_program(text, "prog.dl"))


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8", newline="")
    return path


def run_both(spark, analysis, db_dir):
    """Run both engines and check they agree on everything a user sees; returns both results."""
    from selp.engines.spark import run_spark

    local = run_local(analysis, db_dir)
    result = run_spark(analysis, db_dir, spark)
    assert result.engine == "spark"
    assert result.relations() == local.relations()
    assert result.types == local.types
    assert result.columns == local.columns
    for rel in local.relations():
        assert result.rows(rel) == local.rows(rel), rel
        assert result.count(rel) == local.count(rel), rel
    assert result.iterations == local.iterations
    return result, local


def raw_values(result, rel: str) -> set[tuple[str, ...]]:
    """The encoded strings Spark holds for a relation."""
    return {tuple(r) for r in result.frame(rel).collect()}


# --- whole programs against the local engine -------------------------------------------------


def test_trade_example_same_as_local_with_same_progress(spark):
    from selp.engines.spark import run_spark

    analysis = analyze(parse_program_file(EXAMPLES / "trade" / "trade.dl"))
    db = EXAMPLES / "trade" / "db"
    seen_local, seen_spark = [], []
    local = run_local(analysis, db, lambda c, i, d, t: seen_local.append((c.relations, i, d, t)))
    result = run_spark(analysis, db, spark, lambda c, i, d, t: seen_spark.append((c.relations, i, d, t)))
    assert result.rows("dealsWith") == local.rows("dealsWith")
    assert result.count("dealsWith") == 9
    assert seen_spark == seen_local
    assert result.iterations == local.iterations
    assert result.seconds > 0 and result.warnings == []


def test_recursion_on_a_cycle_and_mutual_recursion(spark, tmp_path):
    write(tmp_path / "edge.csv", "a,b\n1,2\n2,3\n3,1\n3,4\n")
    write(tmp_path / "start.csv", "n\n1\n")
    analysis = analysis_of(
        """
        tc(x, y) :- edge(x, y).
        tc(x, z) :- tc(x, y), edge(y, z).
        even(x) :- start(x).
        even(y) :- odd(x), edge(x, y).
        odd(y) :- even(x), edge(x, y).
        both(x) :- even(x), odd(x).
        """
    )
    result, _ = run_both(spark, analysis, tmp_path)
    assert result.rows("tc") == {(a, b) for a in (1, 2, 3) for b in (1, 2, 3, 4)}
    assert result.rows("even") == {(1,), (3,), (2,), (4,)}
    assert result.rows("both") == {(1,), (2,), (3,), (4,)}


@pytest.mark.parametrize("broadcast_rows", [0, 3])
def test_recursion_without_broadcasts_and_with_the_candidate_anti_join(spark, tmp_path, broadcast_rows):
    """0: every join shuffles; 3: known facts outgrow the limit while the new ones stay under it,
    so they are checked against the relation through a broadcast of the candidates."""
    from selp.engines.spark import run_spark

    write(tmp_path / "edge.csv", "a,b\n1,2\n2,3\n3,4\n4,5\n5,6\n")
    analysis = analysis_of("tc(x, y) :- edge(x, y).\ntc(x, z) :- tc(x, y), edge(y, z).")
    result = run_spark(analysis, tmp_path, spark, broadcast_rows=broadcast_rows)
    assert result.rows("tc") == {(a, b) for a in range(1, 7) for b in range(a + 1, 7)}
    assert result.iterations == run_local(analysis, tmp_path).iterations


def test_strata_with_negation_constants_and_anonymous_positions(spark, tmp_path):
    write(tmp_path / "edge.csv", "a,b\na,b\nb,c\nd,d\n")
    write(tmp_path / "node.csv", "n\na\nb\nc\nd\ne\n")
    write(tmp_path / "bad.csv", "n,why\nc,x\n")
    analysis = analysis_of(
        """
        reach(x) :- edge("a", x).
        reach(y) :- reach(x), edge(x, y).
        unreached(x) :- node(x), not reach(x).
        isolated(x) :- unreached(x), not edge(x, _), not edge(_, x).
        good(x) :- reach(x), not bad(x, _).
        loop(x) :- edge(x, x).
        noloop(x) :- node(x), not loop(x), not bad(x, "x").
        """
    )
    result, _ = run_both(spark, analysis, tmp_path)
    assert result.rows("unreached") == {("a",), ("d",), ("e",)}
    assert result.rows("isolated") == {("e",)}
    assert result.rows("good") == {("b",)}
    assert result.rows("noloop") == {("a",), ("b",), ("e",)}


def test_nullary_relations(spark, tmp_path):
    write(tmp_path / "edge.csv", "a,b\n1,2\n")
    analysis = analysis_of(
        """
        go.
        has_edge :- edge(_, _).
        has_loop :- edge(x, x).
        no_loop :- go, not has_loop.
        ok(x) :- edge(x, _), no_loop.
        never(x) :- edge(x, _), has_loop.
        flag :- 1 < 2.
        """
    )
    result, _ = run_both(spark, analysis, tmp_path)
    assert result.rows("has_edge") == {()}
    assert result.rows("has_loop") == set()
    assert result.rows("no_loop") == {()} and result.count("no_loop") == 1
    assert result.rows("ok") == {(1,)}
    assert result.rows("flag") == {()}


def test_skolem_heads_encode_exactly_like_python(spark, tmp_path):
    write(
        tmp_path / "person.csv",
        'name,age\n"say ""hi""",7\nback\\slash,+007\n"a,b",-3\nplain,10\n',
    )
    analysis = analysis_of(
        """
        id(f(n, a)) :- person(n, a).
        pair(n, g(f(n, a), "k\\"ey", 5)) :- person(n, a).
        wrap(h(x)) :- id(x).
        zero(z()) :- person(_, _).
        """
    )
    result, local = run_both(spark, analysis, tmp_path)
    for rel in result.relations():
        # the Spark text of every value, labeled nulls included, is selp.values.encode's
        assert raw_values(result, rel) == {tuple(encode(v) for v in row) for row in local.rows(rel)}, rel
    assert Skolem("f", ('say "hi"', 7)) in {r[0] for r in result.rows("id")}
    assert ("\x00f(\"back\\\\slash\",7)",) in raw_values(result, "id")
    assert ("\x00h(f(\"plain\",10))",) in raw_values(result, "wrap")
    assert raw_values(result, "zero") == {("\x00z()",)}


def test_comparisons_on_int_and_str_columns(spark, tmp_path):
    write(tmp_path / "num.csv", "n\n9\n10\n+007\n-12\n100\n")
    write(tmp_path / "word.csv", "w\n9\n10\nabc\n")
    analysis = analysis_of(
        """
        big(n) :- num(n), n > 9.
        le(n, m) :- num(n), num(m), n <= m, m < 10.
        seven(n) :- num(n), n = 7.
        after(w) :- word(w), w > "9".
        bigword(w) :- word(w), w >= "10", w != "abc".
        """
    )
    result, _ = run_both(spark, analysis, tmp_path)
    assert result.rows("big") == {(10,), (100,)}  # numeric: "10" > "9" is false as text
    assert result.rows("seven") == {(7,)}  # "+007" is the integer 7
    assert result.rows("after") == {("abc",)}  # text: "10" < "9"
    assert result.rows("bigword") == {("10",), ("9",)}
    assert (-12, 9) in result.rows("le") and (10, 10) not in result.rows("le")


def test_comparisons_with_labeled_nulls(spark, tmp_path):
    write(tmp_path / "num.csv", "n\n1\n2\n")
    analysis = analysis_of(
        """
        .decl v(x: int)
        v(n) :- num(n).
        v(s(n)) :- num(n).
        small(x) :- v(x), x < 100.
        notbig(x) :- v(x), not big(x).
        big(x) :- v(x), x >= 2.
        same(x, y) :- v(x), v(y), x = y.
        diff(x, y) :- v(x), v(y), x != y.
        """
    )
    result, _ = run_both(spark, analysis, tmp_path)
    assert result.rows("small") == {(1,), (2,)}  # order comparisons with a labeled null are false
    assert result.rows("big") == {(2,)}
    assert (Skolem("s", (1,)), Skolem("s", (1,))) in result.rows("same")
    assert (Skolem("s", (1,)), Skolem("s", (2,))) in result.rows("diff")
    assert len(result.rows("same")) == 4


def test_inline_facts_merged_with_files_and_deduplicated(spark, tmp_path):
    write(tmp_path / "e.csv", "a,b\nx,y\nx,z\n")
    analysis = analysis_of(
        """
        e("x", "y").
        e("w", "x").
        (0.5): e("q", "r").
        p(a, b) :- e(a, b).
        """
    )
    result, _ = run_both(spark, analysis, tmp_path)
    assert result.rows("p") == {("x", "y"), ("x", "z"), ("w", "x"), ("q", "r")}
    assert result.frame("e").count() == 4  # the EDB frame itself holds each fact once
    result, _ = run_both(spark, analysis, None)  # no database directory at all
    assert result.rows("p") == {("x", "y"), ("w", "x"), ("q", "r")}


# --- reading files ---------------------------------------------------------------------------


def test_csv_quoting_commas_empty_cells_and_whitespace(spark, tmp_path):
    write(
        tmp_path / "t.csv",
        'a,b,c\r\n"x,1",  spaced ,""\r\n,,\r\n\r\n"say ""q""","multi\nline",z\r\nx,007,\r\n',
    )
    analysis = analysis_of("p(a, b, c) :- t(a, b, c).")
    result, local = run_both(spark, analysis, tmp_path)
    assert result.rows("p") == {
        ("x,1", "  spaced ", ""),
        ("", "", ""),
        ('say "q"', "multi\nline", "z"),
        ("x", "007", ""),  # a str column keeps the text
    }


def test_int_columns_are_canonical_and_deduplicated(spark, tmp_path):
    write(tmp_path / "n.csv", "k,v\n007,a\n7,a\n+7,b\n-0,c\n")
    analysis = analysis_of("p(k, v) :- n(k, v).")
    result, _ = run_both(spark, analysis, tmp_path)
    assert raw_values(result, "p") == {("7", "a"), ("7", "b"), ("0", "c")}


def test_parquet_input_with_weights(spark, tmp_path):
    table = pa.table(
        {
            "_weight": ["0.5", None, "0.9"],
            "src": pa.array([1, 2, 3], type=pa.int64()),
            "dst": ["b", "c", 'd "q"'],
        }
    )
    pq.write_table(table, tmp_path / "e.parquet")
    analysis = analysis_of(
        """
        .decl e(src: int, dst: str)
        p(x, f(y)) :- e(x, y), x > 1.
        """
    )
    result, _ = run_both(spark, analysis, tmp_path)
    assert result.rows("p") == {(2, Skolem("f", ("c",))), (3, Skolem("f", ('d "q"',)))}
    weights = {tuple(r) for r in result.weights["e"].collect()}
    assert weights == {("1", "b", "0.5"), ("3", 'd "q"', "0.9")}


@pytest.mark.parametrize(
    "content, program",
    [
        ("a,b\n1,2\n3,4,5\n", "p(x) :- edge(x, _)."),  # too many fields
        ("a,b\n1,2\n\n3\n", "p(x) :- edge(x, _)."),  # too few fields, after a blank line
        ("a,b\n1,2\nx,3\n", ".decl edge(a: int, b: int)\np(x) :- edge(x, _)."),  # not an int
        ("a,b\n1,2\n\x00x,3\n", "p(x) :- edge(x, _)."),  # NUL-led cell
        ("a,c\n1,2\n", ".decl edge(a: str, b: str)\np(x) :- edge(x, _)."),  # header mismatch
        ("a,b,c\n1,2,3\n", "p(x) :- edge(x, _)."),  # arity mismatch
        ("", "p(x) :- edge(x, _)."),  # no header
    ],
)
def test_malformed_csv_gives_the_local_engines_located_error(spark, tmp_path, content, program):
    from selp.engines.spark_load import load_spark_database

    write(tmp_path / "edge.csv", content)
    analysis = analysis_of(program)
    with pytest.raises(DataError) as local_err:
        load_database(analysis, tmp_path)
    with pytest.raises(DataError) as spark_err:
        load_spark_database(analysis, tmp_path, spark)
    assert str(spark_err.value) == str(local_err.value)
    assert str(spark_err.value).startswith(str(tmp_path / "edge.csv"))


def test_malformed_row_message_names_file_and_line(spark, tmp_path):
    from selp.engines.spark_load import load_spark_database

    write(tmp_path / "edge.csv", "a,b\n1,2\n2,3\n3,4\n4,5\n5,6\n7,8,9\n")
    with pytest.raises(DataError) as err:
        load_spark_database(analysis_of("p(x) :- edge(x, _)."), tmp_path, spark)
    assert str(err.value) == f"{tmp_path / 'edge.csv'}:7: row has 3 field(s) but the header has 2"


def test_data_for_an_idb_relation_is_refused_and_unused_files_warned(spark, tmp_path):
    from selp.engines.spark import run_spark

    write(tmp_path / "e.csv", "a\n1\n")
    write(tmp_path / "other.csv", "a\n1\n")
    result = run_spark(analysis_of("p(x) :- e(x)."), tmp_path, spark)
    assert len(result.warnings) == 1 and "other" in result.warnings[0]
    write(tmp_path / "p.csv", "a\n1\n")
    with pytest.raises(DataError, match="has rules and also input facts"):
        run_spark(analysis_of("p(x) :- e(x)."), tmp_path, spark)


def test_cluster_file_system_path_is_listed_and_read_by_spark(spark, tmp_path, monkeypatch):
    """Directories given as URIs are listed through Hadoop and read by Spark only (here a file:
    URI forced down that path); errors then name the file without a line number."""
    import selp.engines.spark_load as spark_load
    from selp.engines.spark import run_spark

    monkeypatch.setattr(spark_load, "is_local_path", lambda p: False)
    write(tmp_path / "edge.csv", "a,b\n1,2\n2,3\n")
    write(tmp_path / "_ignored.csv", "junk\n")
    uri = "file://" + str(tmp_path)
    analysis = analysis_of("tc(x, y) :- edge(x, y).\ntc(x, z) :- tc(x, y), edge(y, z).")
    result = run_spark(analysis, uri, spark)
    assert result.rows("tc") == run_local(analysis, tmp_path).rows("tc")
    written = result.write(uri + "/out")
    assert written == [str(tmp_path / "out" / "tc.csv")]  # a file: URI is reported as a path
    assert os.listdir(tmp_path / "out") == ["tc.csv"]
    write(tmp_path / "edge.csv", "a,b\n1,2\n2,3,4\n")
    with pytest.raises(DataError) as err:
        run_spark(analysis, uri, spark)
    assert str(err.value) == f"file:{tmp_path}/edge.csv: row has 3 field(s) but the header has 2"


# --- writing results -------------------------------------------------------------------------


def test_write_csv_and_parquet_match_the_local_engine(spark, tmp_path):
    write(tmp_path / "num.csv", "n,s\n10,a b\n9,\" lead\"\n1,\"x,y\"\n")
    analysis = analysis_of(
        """
        .decl out(n: int, s: str)
        out(n, s) :- num(n, s).
        sk(f(s), n) :- num(n, s), n > 5.
        yes :- num(_, _).
        """
    )
    result, local = run_both(spark, analysis, tmp_path / ".")
    for fmt in ("csv", "parquet"):
        spark_dir, local_dir = tmp_path / f"spark_{fmt}", tmp_path / f"local_{fmt}"
        for _ in range(2):  # the second write replaces the files
            paths = result.write(spark_dir, fmt)
        local.write(local_dir, fmt)
        assert paths == [str(spark_dir / f"{rel}.{fmt}") for rel in result.relations()]
        assert sorted(os.listdir(spark_dir)) == sorted(f"{rel}.{fmt}" for rel in result.relations())
        for rel in result.relations():
            got, want = spark_dir / f"{rel}.{fmt}", local_dir / f"{rel}.{fmt}"
            if fmt == "csv":
                with open(got, newline="") as g, open(want, newline="") as w:
                    assert list(csv.reader(g)) == list(csv.reader(w)), rel  # same rows, same order
            else:
                assert pq.read_table(got).equals(pq.read_table(want)), rel
    with open(tmp_path / "spark_csv" / "out.csv", newline="") as fh:
        assert list(csv.reader(fh)) == [["n", "s"], ["1", "x,y"], ["9", " lead"], ["10", "a b"]]
    assert pq.read_table(tmp_path / "spark_parquet" / "out.parquet").schema.field("n").type == pa.int64()
    assert pq.read_table(tmp_path / "spark_parquet" / "sk.parquet").column("c2").to_pylist() == [9, 10]


def test_written_csv_loads_back_to_the_same_facts(spark, tmp_path):
    (tmp_path / "db").mkdir()
    write(tmp_path / "db" / "t.csv", 'a,b\n"q ""x"", y",1\n\\,2\n')
    analysis = analysis_of("p(a, b) :- t(a, b).")
    result, _ = run_both(spark, analysis, tmp_path / "db")
    result.write(tmp_path / "out")
    back = load_database(analysis_of("q(a, b) :- p(a, b)."), tmp_path / "out")
    assert back.facts["p"] == result.rows("p")


# --- partition-local evaluation --------------------------------------------------------------


def test_partitionwise_local_engine_in_spark_equals_run_local(spark, tmp_path):
    from selp.engines.spark_load import load_spark_database

    write(tmp_path / "edge.csv", "a,b\n1,2\n2,3\n3,1\n10,11\n")
    write(tmp_path / "name.csv", 'n,s\n1,"one ""1"""\n11,eleven\n')
    write(tmp_path / "start.csv", "s\n1\n10\n11\n")
    analysis = analysis_of(
        """
        tc(x, y) :- edge(x, y).
        tc(x, z) :- tc(x, y), edge(y, z).
        named(x, f(s, y)) :- tc(x, y), name(x, s).
        reach(s, y) :- start(s), edge(s, y).
        reach(s, z) :- reach(s, y), edge(y, z).
        """
    )
    db = load_spark_database(analysis, tmp_path, spark)
    local = run_local(analysis, tmp_path)

    def encoded(rel):
        return {tuple(encode(v) for v in f) for f in local.rows(rel)}

    for rel in ("tc", "named"):
        out = evaluate_partitionwise(analysis, db.types, db.frames, rel, spark)
        assert {tuple(r) for r in out.collect()} == encoded(rel), rel
    # reach decomposes by its start node: start split over 3 groups, edge copied to each
    out = evaluate_partitionwise(analysis, db.types, db.frames, "reach", spark, {"start": 0}, 3)
    assert out.rdd.getNumPartitions() == 3
    assert {tuple(r) for r in out.collect()} == encoded("reach")


# --- random programs -------------------------------------------------------------------------


@settings(max_examples=examples(6), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(programs_with_databases(max_idb=3))
def test_random_programs_same_as_local(spark, tmp_path_factory, case):
    text, facts = case
    analysis = analyze(parse_program(text))
    db_dir = tmp_path_factory.mktemp("db")
    types = load_database(analysis, None).types  # the generated programs declare their EDB types
    columns = {rel: tuple(f"c{i + 1}" for i in range(analysis.arities[rel])) for rel in facts}
    write_relations(db_dir, facts, types, columns)
    run_both(spark, analysis, db_dir)


# --- session ---------------------------------------------------------------------------------


def test_get_spark_reuses_the_active_session_and_applies_sql_conf(spark):
    from selp.engines.spark_session import get_spark

    assert get_spark() is spark
    assert get_spark("local[2]", {"spark.sql.shuffle.partitions": "3"}) is spark
    assert spark.conf.get("spark.sql.shuffle.partitions") == "3"
    spark.conf.set("spark.sql.shuffle.partitions", "4")
    assert get_spark(conf={"spark.selp.broadcastRows": "10"}) is spark  # selp settings apply live
    assert spark.conf.get("spark.selp.broadcastRows") == "10"
    spark.conf.unset("spark.selp.broadcastRows")
    assert spark.conf.get("spark.sql.adaptive.enabled") == "true"
    assert spark.conf.get("spark.sql.session.timeZone") == "UTC"


def test_a_short_local_session_compiles_with_c1_only_and_others_keep_the_default() -> None:
    """A one-shot explain's local JVM gets -XX:TieredStopAtLevel=1 (most of its run is warm-up);
    a long session, and any session on a cluster master, keep the JIT's default; all of them get
    the log configuration."""
    from selp.engines.spark_session import driver_java_options

    short = driver_java_options("local[*]", "error", True)
    assert "-XX:TieredStopAtLevel=1" in short and "-Dlog4j2.configurationFile=" in short
    for master, flag in (("local[2]", False), ("spark://host:7077", True), ("yarn", True)):
        opts = driver_java_options(master, "error", flag)
        assert "TieredStopAtLevel" not in opts and "-Dlog4j2.configurationFile=" in opts


def test_a_short_local_session_runs_without_adaptive_execution_and_others_keep_it() -> None:
    """A one-shot explain's small jobs are not re-planned stage by stage (fewer jobs); long
    sessions and cluster sessions keep adaptive execution."""
    from selp.engines.spark_session import short_session_settings

    assert short_session_settings("local[*]", True) == {"spark.sql.adaptive.enabled": "false"}
    for master, flag in (("local[2]", False), ("spark://host:7077", True), ("yarn", True)):
        assert short_session_settings(master, flag) == {}


def test_csv_with_a_byte_order_mark_reads_like_the_local_engine(spark, tmp_path):
    """Spreadsheets save CSV with a UTF-8 BOM; it is not part of the first column's name."""
    db = tmp_path / "db"
    db.mkdir()
    (db / "e.csv").write_bytes("\ufeffsrc,dst\n1,2\n2,3\n".encode("utf-8"))
    from selp.engines.spark import run_spark

    analysis = analyze(parse_program(".decl e(src: int, dst: int)\ntc(x, y) :- e(x, y).\ntc(x, y) :- tc(x, z), e(z, y).\n"))
    result = run_spark(analysis, db, spark)
    assert result.rows("tc") == run_local(analysis, db).rows("tc") == {(1, 2), (2, 3), (1, 3)}


def test_labeled_nulls_given_as_python_values_stay_labeled_nulls(spark):
    """EDB facts handed to the Spark engine as Python values (as a CDSS exchange does) reach it
    encoded: a labeled null in an int or a str column comes back a labeled null, not its text."""
    from selp.engines.registry import get_engine

    analysis = analyze(parse_program(".decl e(a: int, b: str)\np(x, y) :- e(x, y).\nq(y) :- e(_, y).\n"))
    f, g = Skolem("f", (1, "a")), Skolem("g", ('say "hi"',))
    facts = {"e": {(f, "b"), (2, g), (3, "c")}}
    got = get_engine("spark").evaluate(analysis, facts, spark=spark)
    assert got == get_engine("reference").evaluate(analysis, facts)
    assert got["p"] == {(f, "b"), (2, g), (3, "c")} and (g,) in got["q"]


def test_weights_need_no_last_cell_pick_only_where_no_fact_is_given_twice(spark, tmp_path: Path) -> None:
    """The loader marks a relation whose file rows and inline facts are as many as its distinct
    facts: each fact has at most one weight cell, so the top-k reads it without grouping. A fact
    written twice (in the file, or in the file and inline) keeps the grouping (the last cell wins)."""
    from selp.engines.spark_load import load_spark_database

    (tmp_path / "a.csv").write_text("x,y,_weight\n1,2,0.5\n2,3,0.25\n", encoding="utf-8")
    (tmp_path / "b.csv").write_text("x,y,_weight\n1,2,0.5\n1,2,0.25\n", encoding="utf-8")
    (tmp_path / "c.csv").write_text("x,y,_weight\n1,2,0.5\n", encoding="utf-8")
    analysis = analyze(parse_program(
        ".decl a(x: int, y: int)\n.decl b(x: int, y: int)\n.decl c(x: int, y: int)\n(0.75): c(1, 2).\n"
        "r1: p(x) :- a(x, _), b(x, _), c(x, _).\n"))
    db = load_spark_database(analysis, tmp_path, spark)
    assert db.sizes == {"a": 2, "b": 1, "c": 1}
    assert db.single_weights == {"a"}
