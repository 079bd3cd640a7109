"""Database directories: CSV and Parquet input, located data errors, atomic result writing."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from selp.database import discover, load_database, write_relations
from selp.errors import DataError
from selp.language import parse_program
from selp.language.validate import analyze
from selp.values import Skolem


def analysis_of(text: str):
    return analyze(parse_program(text, "prog.dl"))


def write(path, text: str):
    path.write_text(text, encoding="utf-8", newline="")
    return path


def load(tmp_path, program: str):
    return load_database(analysis_of(program), tmp_path)


# --- CSV ------------------------------------------------------------------------------------------


def test_csv_with_header(tmp_path):
    write(tmp_path / "e.csv", "country,product\nFrance,wine\nCuba,tobacco\n")
    db = load(tmp_path, "p(x) :- e(x, _).")
    assert db.facts["e"] == {("France", "wine"), ("Cuba", "tobacco")}
    assert db.columns["e"] == ("c1", "c2")  # undeclared: generic names
    assert db.weights["e"] == {}
    assert db.size() == 2
    assert db.warnings == []


def test_csv_weight_column_anywhere(tmp_path):
    write(tmp_path / "e.csv", "_weight,a,b\n0.9,Cuba,tobacco\n,France,wine\nS,Mexico,wine\n")
    db = load(tmp_path, "p(x) :- e(x, _).")
    assert db.facts["e"] == {("Cuba", "tobacco"), ("France", "wine"), ("Mexico", "wine")}
    assert db.weights["e"] == {("Cuba", "tobacco"): "0.9", ("Mexico", "wine"): "S"}


def test_csv_quoting_empty_cells_and_blank_lines(tmp_path):
    write(
        tmp_path / "e.csv",
        'a,b\r\n"Paris, France","say ""hi"""\r\n\r\n,x\r\n"two\nlines",""\r\n\n  padded ,y\n',
    )
    db = load(tmp_path, "p(x) :- e(x, _).")
    assert db.facts["e"] == {
        ("Paris, France", 'say "hi"'),
        ("", "x"),
        ("two\nlines", ""),
        ("  padded ", "y"),  # cells are not stripped
    }


def test_csv_without_trailing_newline_and_unicode(tmp_path):
    write(tmp_path / "e.csv", "a\nZürich\n☕")
    assert load(tmp_path, "p(x) :- e(x).").facts["e"] == {("Zürich",), ("☕",)}


def test_header_names_are_trimmed(tmp_path):
    write(tmp_path / "e.csv", " b , a \n1,2\n")
    db = load(tmp_path, ".decl e(a: int, b: int)\np(x) :- e(x, _).")
    assert db.facts["e"] == {(2, 1)}


def test_declared_columns_matched_by_name_in_any_order(tmp_path):
    write(tmp_path / "e.csv", "product,_weight,country\nwine,0.5,France\ntobacco,,Cuba\n")
    db = load(tmp_path, ".decl e(country: str, product: str)\np(x) :- e(x, _).")
    assert db.facts["e"] == {("France", "wine"), ("Cuba", "tobacco")}
    assert db.weights["e"] == {("France", "wine"): "0.5"}
    assert db.columns["e"] == ("country", "product")


def test_empty_relation_file_with_header_only(tmp_path):
    write(tmp_path / "e.csv", "a,b\n")
    db = load(tmp_path, "p(x) :- e(x, _).")
    assert db.facts["e"] == set()
    assert db.types["e"] == ("str", "str")


def test_inline_facts_add_to_file_facts(tmp_path):
    write(tmp_path / "e.csv", "a\nCuba\n")
    db = load(tmp_path, 'p(x) :- e(x).\n(0.7): e("France").\ne("Cuba").')
    assert db.facts["e"] == {("Cuba",), ("France",)}
    assert db.weights["e"] == {("France",): "0.7"}


def test_no_database_directory_uses_inline_facts_only():
    db = load_database(analysis_of("p(x) :- e(x).\ne(1).\ne(2)."), None)
    assert db.facts == {"e": {(1,), (2,)}}
    assert db.types == {"e": ("int",), "p": ("int",)}


def test_edb_relation_without_a_file_is_empty(tmp_path):
    db = load(tmp_path, "p(x) :- e(x), not f(x).")
    assert db.facts == {"e": set(), "f": set()}


# --- errors ---------------------------------------------------------------------------------------


def error(tmp_path, program: str) -> DataError:
    with pytest.raises(DataError) as info:
        load(tmp_path, program)
    return info.value


def test_wrong_field_count_names_file_and_line(tmp_path):
    f = write(tmp_path / "e.csv", 'a,b\nx,y\n\n"multi\nline",z\nonly\n')
    err = error(tmp_path, "p(x) :- e(x, _).")
    assert str(err) == f"{f}:6: row has 1 field(s) but the header has 2"
    write(tmp_path / "e.csv", "a,b\nx,y,z\n")
    assert str(error(tmp_path, "p(x) :- e(x, _).")) == f"{f}:2: row has 3 field(s) but the header has 2"


def test_bad_int_in_a_declared_int_column(tmp_path):
    f = write(tmp_path / "e.csv", "n,s\n1,a\n2,b\nx3,c\n")
    err = error(tmp_path, ".decl e(n: int, s: str)\np(x) :- e(x, _).")
    assert str(err.location) == f"{f}:4"
    assert "'x3' is not an integer" in err.message and "e.n is int" in err.message


def test_header_not_matching_the_declaration(tmp_path):
    f = write(tmp_path / "e.csv", "country,item\nCuba,tobacco\n")
    err = error(tmp_path, ".decl e(country: str, product: str)\np(x) :- e(x, _).")
    assert str(err.location) == f"{f}:1"
    assert "header (country, item) does not match the declared columns of e (country, product)" in err.message


def test_header_with_the_wrong_number_of_columns(tmp_path):
    f = write(tmp_path / "e.csv", "a,b,c\n1,2,3\n")
    err = error(tmp_path, "p(x) :- e(x, _).")
    assert str(err.location) == f"{f}:1"
    assert "e has 2 column(s) in the program but the file has 3 (a, b, c)" in err.message


def test_duplicate_header_column(tmp_path):
    write(tmp_path / "e.csv", "a,a\n1,2\n")
    assert "column 'a' appears twice" in error(tmp_path, "p(x) :- e(x, _).").message


def test_empty_file(tmp_path):
    f = write(tmp_path / "e.csv", "")
    err = error(tmp_path, "p(x) :- e(x).")
    assert str(err) == f"{f}:1: empty file: a header row is required"


def test_malformed_csv_quoting(tmp_path):
    f = write(tmp_path / "e.csv", 'a,b\nx,"unterminated\n')
    err = error(tmp_path, "p(x) :- e(x, _).")
    assert err.location.file == str(f) and "malformed CSV" in err.message


def test_not_utf8(tmp_path):
    (tmp_path / "e.csv").write_bytes("a\nZürich\n".encode("latin-1"))
    assert "not UTF-8" in error(tmp_path, "p(x) :- e(x).").message


def test_nul_prefixed_values_are_rejected(tmp_path):
    f = write(tmp_path / "e.csv", 'a\nok\n\x00f("x")\n')
    err = error(tmp_path, "p(x) :- e(x).")
    assert str(err.location) == f"{f}:3" and "NUL" in err.message


def test_two_files_for_one_relation(tmp_path):
    write(tmp_path / "e.csv", "a\n1\n")
    pq.write_table(pa.table({"a": [1]}), tmp_path / "e.parquet")
    err = error(tmp_path, "p(x) :- e(x).")
    assert "relation e has two data files: e.csv and e.parquet" in err.message
    assert err.location.file == str(tmp_path / "e.parquet")


def test_data_file_for_an_idb_relation(tmp_path):
    f = write(tmp_path / "p.csv", "a\n1\n")
    err = error(tmp_path, "p(x) :- e(x).")
    assert str(err.location) == str(f)
    assert "relation p has rules and also input facts in p.csv" in err.message and "p_edb" in err.message


def test_missing_directory(tmp_path):
    with pytest.raises(DataError, match="database directory not found"):
        load_database(analysis_of("p(x) :- e(x)."), tmp_path / "nope")
    f = write(tmp_path / "file.csv", "a\n")
    with pytest.raises(DataError, match="must be a directory"):
        load_database(analysis_of("p(x) :- e(x)."), f)


def test_unknown_relation_files_give_a_warning(tmp_path):
    write(tmp_path / "e.csv", "a\n1\n")
    write(tmp_path / "stray.csv", "this is, not even, consistent\n1\n")
    db = load(tmp_path, "p(x) :- e(x).")
    assert db.warnings == [f"{tmp_path / 'stray.csv'}: relation stray is not used by the program; ignored"]
    assert "stray" not in db.facts and db.facts["e"] == {(1,)}


def test_other_files_are_ignored(tmp_path):
    write(tmp_path / "e.csv", "a\n1\n")
    write(tmp_path / "notes.txt", "hello")
    write(tmp_path / ".e.csv.123.tmp", "junk")
    write(tmp_path / ".hidden.csv", "junk")
    write(tmp_path / "_meta.csv", "junk")
    assert set(discover(tmp_path)) == {"e"}
    assert load(tmp_path, "p(x) :- e(x).").warnings == []


# --- Parquet --------------------------------------------------------------------------------------


def test_parquet_input_with_weights_and_declared_order(tmp_path):
    pq.write_table(
        pa.table({"product": ["wine", "tobacco"], "n": [1, 7], "_weight": ["0.5", None], "country": ["France", "Cuba"]}),
        tmp_path / "e.parquet",
    )
    db = load(tmp_path, ".decl e(country: str, product: str, n: int)\np(x) :- e(x, _, _).")
    assert db.facts["e"] == {("France", "wine", 1), ("Cuba", "tobacco", 7)}
    assert db.weights["e"] == {("France", "wine", 1): "0.5"}
    assert db.types["e"] == ("str", "str", "int")


def test_parquet_integer_column_infers_int_and_string_column_keeps_text(tmp_path):
    pq.write_table(pa.table({"a": pa.array([1, 2], pa.int32()), "b": ["007", "x"]}), tmp_path / "e.parquet")
    db = load(tmp_path, "p(x, y) :- e(x, y).")
    assert db.types["e"] == ("int", "str")
    assert db.facts["e"] == {(1, "007"), (2, "x")}


def test_parquet_unsupported_type_and_nulls(tmp_path):
    pq.write_table(pa.table({"a": [True, False]}), tmp_path / "e.parquet")
    err = error(tmp_path, "p(x) :- e(x).")
    assert "only integer, float and string columns" in err.message and err.location.file == str(tmp_path / "e.parquet")
    pq.write_table(pa.table({"a": ["x", None]}), tmp_path / "e.parquet")
    assert "null values" in error(tmp_path, "p(x) :- e(x).").message


def test_float_columns_read_from_csv_and_parquet(tmp_path):
    """A float column reads decimals and integers (canonically: -0.0 is 0.0, 1e20 stays a float);
    decimals that the program never uses as numbers stay strings, as they always were."""
    write(tmp_path / "e.csv", "a,b\n1.50,x\n-0.0,y\n7,z\n1e20,w\n")
    a = analyze(parse_program(".decl e(a: float, b: str)\np(x) :- e(x, _)."))
    db = load_database(a, tmp_path)
    assert db.types["e"] == ("float", "str")
    assert {f[0] for f in db.facts["e"]} == {1.5, 0.0, 7.0, 1e20}
    assert all(isinstance(f[0], float) for f in db.facts["e"])
    assert load_database(analyze(parse_program("p(x) :- e(x, _).")), tmp_path).types["e"] == ("str", "str")
    assert load_database(analyze(parse_program("p(x) :- e(x, _), x > 1.")), tmp_path).types["e"] == ("float", "str")
    (tmp_path / "e.csv").unlink()
    pq.write_table(pa.table({"a": [1.5, 2.0], "b": ["x", "y"]}), tmp_path / "e.parquet")
    assert load_database(a, tmp_path).facts["e"] == {(1.5, "x"), (2.0, "y")}


def test_a_non_number_in_a_float_column_names_file_and_line(tmp_path):
    write(tmp_path / "e.csv", "a\n1.5\nabc\n")
    err = error(tmp_path, ".decl e(a: float)\np(x) :- e(x).")
    assert "value 'abc' is not a number, but column e.a is float" in err.message
    assert str(err.location) == f"{tmp_path / 'e.csv'}:3"


def test_corrupt_parquet(tmp_path):
    write(tmp_path / "e.parquet", "not parquet at all")
    assert "cannot read Parquet file" in error(tmp_path, "p(x) :- e(x).").message


# --- writing results -------------------------------------------------------------------------------


RELATIONS = {
    "p": {("Cuba", 3), ('say "hi", ok', -12), ("two\nlines", 0), ("", 7)},
    "q": {(Skolem("f", ("Cuba", 3)),), ("plain",)},
}
TYPES = {"p": ("str", "int"), "q": ("str",)}
COLUMNS = {"p": ("name", "n"), "q": ("v",)}


def test_write_csv_round_trip(tmp_path):
    out = tmp_path / "out"
    paths = write_relations(out, RELATIONS, TYPES, COLUMNS, "csv")
    assert paths == [out / "p.csv", out / "q.csv"]
    assert sorted(x.name for x in out.iterdir()) == ["p.csv", "q.csv"]  # no temp files left
    db = load_database(analysis_of(".decl p(name: str, n: int)\n.decl q(v: str)\nr(x) :- p(x, _), q(x)."), out)
    assert db.facts["p"] == RELATIONS["p"]
    assert db.facts["q"] == {('f("Cuba",3)',), ("plain",)}  # labeled nulls in their printed form


def test_write_csv_rows_are_sorted_with_a_header(tmp_path):
    write_relations(tmp_path, {"p": {(3, "b"), (-1, "z"), (3, "a")}}, {"p": ("int", "str")}, {"p": ("n", "s")})
    assert (tmp_path / "p.csv").read_text(encoding="utf-8").splitlines() == ["n,s", "-1,z", "3,a", "3,b"]


def test_write_parquet_round_trip(tmp_path):
    write_relations(tmp_path, RELATIONS, TYPES, COLUMNS, "parquet")
    assert sorted(x.name for x in tmp_path.iterdir()) == ["p.parquet", "q.parquet"]
    t = pq.read_table(tmp_path / "p.parquet")
    assert t.column_names == ["name", "n"]
    assert str(t.schema.field("n").type) == "int64"
    db = load_database(analysis_of(".decl p(name: str, n: int)\n.decl q(v: str)\nr(x) :- p(x, _), q(x)."), tmp_path)
    assert db.facts["p"] == RELATIONS["p"]
    assert db.facts["q"] == {('f("Cuba",3)',), ("plain",)}


def test_write_parquet_int_column_with_labeled_nulls_is_text(tmp_path):
    rows = {"p": {(1,), (Skolem("g", ()),)}}
    write_relations(tmp_path, rows, {"p": ("int",)}, {"p": ("n",)}, "parquet")
    t = pq.read_table(tmp_path / "p.parquet")
    assert sorted(t.column("n").to_pylist()) == ["1", "g()"]


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_write_replaces_an_existing_file(tmp_path, fmt):
    (tmp_path / f"p.{fmt}").write_text("stale content that is not a table\n" * 100)
    write_relations(tmp_path, {"p": {("new",)}}, {"p": ("str",)}, {"p": ("v",)}, fmt)
    assert [x.name for x in tmp_path.iterdir()] == [f"p.{fmt}"]
    db = load_database(analysis_of("r(x) :- p(x)."), tmp_path)
    assert db.facts["p"] == {("new",)}


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_a_failed_write_leaves_the_old_file_and_no_temp_file(tmp_path, fmt):
    old = tmp_path / f"p.{fmt}"
    write_relations(tmp_path, {"p": {("old",)}}, {"p": ("str",)}, {"p": ("v",)}, fmt)
    before = old.read_bytes()
    with pytest.raises(Exception):
        # True is not a datalog value: writing it fails halfway through
        write_relations(tmp_path, {"p": {("a",), ("b",), (True,)}}, {"p": ("str",)}, {"p": ("v",)}, fmt)
    assert old.read_bytes() == before
    assert [x.name for x in tmp_path.iterdir()] == [f"p.{fmt}"]


def test_write_creates_the_output_directory(tmp_path):
    out = tmp_path / "a" / "b"
    write_relations(out, {"p": set()}, {"p": ("str",)}, {"p": ("v",)})
    assert (out / "p.csv").read_bytes() == b"v\r\n"


def test_csv_with_a_byte_order_mark(tmp_path):
    # spreadsheet programs often save UTF-8 CSV with a BOM; it is not part of the first column name
    (tmp_path / "e.csv").write_bytes("\ufeffcountry,product\nCuba,tobacco\n".encode("utf-8"))
    db = load(tmp_path, ".decl e(country: str, product: str)\np(x) :- e(x, _).")
    assert db.facts["e"] == {("Cuba", "tobacco")}
