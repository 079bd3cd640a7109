"""The Spark engine's Python API, its limits and options, and the chapter-8 topologies of
``selp bench proql`` (worked out by hand). Q1-Q10 and the cyclic tests run on both engines in
test_proql_queries.py and test_proql_cyclic.py."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from selp.bench.proql import parse_patterns
from selp.cdss.proql import spark_engine
from selp.cdss.proql.api import local_query, spark_query
from selp.cli import main
from selp.errors import SelpError
from selp.gen.proql import edges, placement
from helpers.cdss import cdss_cli, load_running_example, make_cdss, ok, one_line_error

Q = "FOR [B $x] INCLUDE PATH [$x] <-+ [] RETURN $x"
# the in-process engines query stores they exchanged; Spark queries the reference engine's
ENGINES = ["embedded", "reference", pytest.param("spark", marks=pytest.mark.spark)]


def exchange_engine(engine: str) -> str:
    return "reference" if engine == "spark" else engine


@pytest.fixture(scope="module")
def bio(tmp_path_factory):
    d = make_cdss(tmp_path_factory.mktemp("proql-spark"), trust=False)
    load_running_example(d)
    ok(cdss_cli("exchange", d, "--peer", "PBioSQL", "--engine", "local", "-q"))
    return d


@pytest.mark.spark
def test_python_api_dataframes_and_lists(bio, spark):
    # WEIGHT with every leaf 1: B(3,5) local 1; B(1,3) = m1(g1) = 1; B(3,2) = min(m1(g2) = 1,
    # m4(b·U(2,5)) = 1 + 1) = 1; B(3,3) = m4(B(3,2)·U(3,2)) = 1 + m2(g1) = 2
    q = f"EVALUATE WEIGHT OF {{ {Q} }} ASSIGNING EACH leaf_node $y {{ DEFAULT : SET 1 }}"
    r = spark_query(str(bio), q, spark=spark)
    table = r.table
    assert table.columns == ["x", "value_x"]
    assert {row.x: row.value_x for row in table.collect()} == {"B(1,3)": 1.0, "B(3,2)": 1.0, "B(3,3)": 2.0, "B(3,5)": 1.0}
    # G′ as DataFrames: B(3,3) derived by m4(3,2,3) from B(3,2) and U(3,2)
    assert ("m4(3,2,3)", "B(3,3)") in {(x.m, x.t) for x in r.gout.collect()}
    assert {x.u for x in r.ginputs.filter("m = 'm4(3,2,3)'").collect()} == {"B(3,2)", "U(3,2)"}
    rows = local_query(str(bio), q)
    assert rows == [{"x": "B(1,3)", "value(x)": 1}, {"x": "B(3,2)", "value(x)": 1}, {"x": "B(3,3)", "value(x)": 2}, {"x": "B(3,5)", "value(x)": 1}]


@pytest.mark.spark
def test_driver_semirings_refuse_a_large_projection(bio, spark, monkeypatch):
    # G′ of Q has 4 B + 2 G + 2 U tuples and 6 mapping nodes (m1 x2, m2 x2, m4 x2) = 14 nodes
    monkeypatch.setattr(spark_engine, "MAX_DRIVER_NODES", 13)
    with pytest.raises(SelpError, match="COUNT is evaluated on the driver and the projected graph has 14 nodes"):
        spark_query(str(bio), f"EVALUATE COUNT OF {{ {Q} }}", spark=spark)
    monkeypatch.setattr(spark_engine, "MAX_DRIVER_NODES", 14)
    r = spark_query(str(bio), f"EVALUATE COUNT OF {{ {Q} }}", spark=spark)
    assert r.driver_values == {"B(1,3)": 1, "B(3,2)": 3, "B(3,3)": 3, "B(3,5)": 1}


@pytest.mark.parametrize("engine", ["embedded", "reference", "local"])
def test_spark_options_need_the_spark_engine(bio, engine):
    res = CliRunner().invoke(main, ["proql", str(bio), Q, "--engine", engine, "--explain"])
    one_line_error(res, "--explain", "apply to the spark engine")
    res = CliRunner().invoke(main, ["proql", str(bio), Q, "--engine", engine, "--master", "local[1]"])
    one_line_error(res, "--master", "apply to the spark engine")
    res = CliRunner().invoke(main, ["proql", str(bio), "--build-asrs", "--engine", engine])
    one_line_error(res, "--build-asrs applies to the spark engine")


def test_bench_topologies():
    assert edges("chain", 4) == [(0, 1), (1, 2), (2, 3)]
    # 4-ary in-tree, root 5: BFS children of the root are peers 4, 3, 2, 1; peer 0 is 4's child
    assert edges("tree", 6) == [(4, 5), (3, 5), (2, 5), (1, 5), (0, 4)]
    assert placement("tree", 6, "leaves") == {0, 1, 2, 3}
    # branched, 8 peers: branches 0->1 and 2->3 feed 4, then the chain 4->5->6->7
    assert edges("branched", 8) == [(0, 1), (2, 3), (1, 4), (3, 4), (4, 5), (5, 6), (6, 7)]
    assert placement("branched", 8, "leaves") == {0, 2}
    # depths from the root 7: 6:1 5:2 4:3 1,3:4 0,2:5 -> half of 5 is 2: peer 5
    assert placement("branched", 8, "leaves+middle") == {0, 2, 5}
    assert placement("chain", 4, "every") == {0, 1, 2, 3}
    assert parse_patterns("chain:leaves,tree:every", "3,5") == [("chain", 3, "leaves"), ("chain", 5, "leaves"), ("tree", 3, "every"), ("tree", 5, "every")]
    with pytest.raises(ValueError, match="TOPOLOGY:DATA"):
        parse_patterns("chain", "3")
    with pytest.raises(ValueError, match="unknown topology 'ring'"):
        parse_patterns("ring:leaves", "3")


def test_bench_proql_rejects_bad_patterns():
    res = CliRunner().invoke(main, ["bench", "proql", "--patterns", "chain:nowhere", "--peers", "3"])
    one_line_error(res, "unknown data placement 'nowhere'")


def exchanged(tmp_path, name: str, toml: str, edits: dict[str, list[str]], peer: str, engine: str = "reference"):
    """A store built from ``toml``: each peer's edits published, then one exchange for ``peer`` on ``engine``."""
    d = tmp_path / name
    d.mkdir()
    (d / "cdss.toml").write_text(toml)
    ok(cdss_cli("init", d))
    for p, es in edits.items():
        ok(cdss_cli("edit", d, "--peer", p, *es))
        ok(cdss_cli("publish", d, "--peer", p))
    ok(cdss_cli("exchange", d, "--peer", peer, "--engine", engine, "-q"))
    return d


def proql_json(d, q: str, engine: str) -> dict:
    """``selp proql --format json`` as a user runs it."""
    return json.loads(ok(CliRunner().invoke(main, ["proql", str(d), q, "--format", "json", "--engine", engine])))


RS_TOML = """name = "rs"
mappings = {mappings}

[peers.P]
[peers.P.relations.R]
attributes = ["a: int", "b: int"]
key = ["a", "b"]

[peers.Q]
[peers.Q.relations.S]
attributes = ["a: int"]
key = ["a"]
"""
S_PATHS = "FOR [S $x] INCLUDE PATH [$x] <-+ [] RETURN $x"


def s_values(tmp_path, engine: str, request, mappings: list[str], rows: list[str]):
    """A store where peer P's relation R(a, b) maps to Q's S(a) by ``mappings``, P's ``rows``
    exchanged into Q; returns ``query -> {S fact: value of $x}`` as `selp proql` on ``engine`` gives."""
    if engine == "spark":
        request.getfixturevalue("spark")
    d = exchanged(tmp_path, "rs", RS_TOML.format(mappings=json.dumps(mappings)), {"P": rows}, "Q", exchange_engine(engine))
    return lambda q: {r["x"]: r["values"]["x"] for r in proql_json(d, q, engine)["rows"]}


@pytest.mark.parametrize("engine", ENGINES)
def test_a_tuple_read_twice_counts_twice(tmp_path, engine, request):
    # m joins R with its mirror: R(1,1) is both of m(1,1)'s inputs, R(2,3) and R(3,2) those of
    # m(2,3) (and of m(3,2)). With every leaf costing 2, S(1) = 2 + 2 = 4 (not 2), as is S(2).
    values = s_values(tmp_path, engine, request, ["m: R(x, y), R(y, x) -> S(x)"], ["+R(1, 1)", "+R(2, 3)", "+R(3, 2)"])
    weight = f"EVALUATE WEIGHT OF {{ {S_PATHS} }} ASSIGNING EACH leaf_node $y {{ DEFAULT : SET 2 }}"
    assert values(weight) == {"S(1)": 4, "S(2)": 4, "S(3)": 4}
    assert values(S_PATHS) == {"S(1)": "m(R(1,1)·R(1,1))", "S(2)": "m(R(2,3)·R(3,2))", "S(3)": "m(R(2,3)·R(3,2))"}


@pytest.mark.parametrize("engine", ENGINES)
def test_a_head_atom_written_twice_is_one_derivation(tmp_path, engine, request):
    # m's head names S(x) twice: that is still one derivation of S(x) per valuation of m, on
    # both engines (the Spark graph's deriv has the (t, m) row twice; its evaluation must not
    # count it twice). S(2) has three: m(R(2,2)), n(R(1,2)), n(R(2,2)).
    values = s_values(tmp_path, engine, request, ["m: R(x, y) -> S(x), S(x)", "n: R(x, y) -> S(y)"], ["+R(1, 2)", "+R(2, 2)"])
    assert values(S_PATHS) == {"S(1)": "m(R(1,2))", "S(2)": "m(R(2,2)) + n(R(1,2)) + n(R(2,2))"}
    assert values(f"EVALUATE COUNT OF {{ {S_PATHS} }}") == {"S(1)": 1, "S(2)": 3}


MIXED_TOML = """name = "mixed"
mappings = [
  'm1: P.R(x, y, s) -> exists z, w. Q.R(y, z, w), T(x, "k\\\\\\"q", 7)',
  'm2: Q.R(a, b, c), T(a, "k\\\\\\"q", n) -> P.R(n, a, "c")',
  "m3: T(a, s, n), T(a, s, n) -> U(a)",
]

[peers.P]
[peers.P.relations.R]
attributes = ["id: int", "name: int", "s: str"]
key = ["id", "name", "s"]

[peers.Q]
[peers.Q.relations.R]
attributes = ["k: int", "v: str", "w: str"]
key = ["k", "v", "w"]
[peers.Q.relations.T]
attributes = ["a: int", "s: str", "n: int"]
key = ["a", "s", "n"]
[peers.Q.relations.U]
attributes = ["a: int"]
key = ["a"]
"""


@pytest.mark.spark
def test_spark_graph_equals_the_local_graph(tmp_path, spark):
    # The Spark loader reads all files in two scans and builds node texts from lookup tables;
    # the local loader instantiates every mapping in Python. On a CDSS with a relation name two
    # peers share, string and int constants (one with a quote and a backslash), two existentials
    # over a two-variable frontier, a repeated body atom and data with quotes, both must give the
    # same nodes, local tuples, edges, input atoms and attribute values.
    from selp.cdss.proql.graph import load_graph
    from selp.cdss.proql.spark_graph import load_spark_graph
    from selp.cdss.store import Store

    edits = {"P": ['+R(1, 2, "a\\"b")', '+R(3, 4, "x\\\\y")', '+R(5, 2, "plain")', '+R(2, 9, "q")'], "Q": ['+R(2, "v", "w")']}
    d = exchanged(tmp_path, "mixed", MIXED_TOML, edits, "Q")
    with Store.open(d) as st:
        local, _ = load_graph(st)
        g = load_spark_graph(spark, st)
    nodes = {str(t) for ts in local.tuples.values() for t in ts}
    assert {"Q_R(2,f_m1_z(1,2),f_m1_w(1,2))", 'T(1,"k\\\\\\"q",7)', 'P_R(7,2,"c")', 'P_R(1,2,"a\\"b")'} <= nodes  # the cases occur
    assert {r.id for r in g.tuples.select("id").collect()} == nodes
    assert {r.id for r in g.local_ids.collect()} == {str(t) for t in local.local}
    assert {(r.t, r.m) for r in g.deriv.collect()} == {(str(t), str(m)) for m, ts in local.outputs.items() for t in ts}
    want_atoms = {(str(m), str(u), i) for m, us in local.inputs.items() for i, u in enumerate(us)}
    assert {(r.m, r.u, r.pos) for r in g.input_atoms.collect()} == want_atoms
    assert g.input_atoms.count() == len(want_atoms)  # one row per atom: m3 reads T twice
    # attribute values (encoded) and declared kinds, per attribute name across relations
    from selp.values import encode

    for attribute, kind in (("s", "str"), ("name", "int")):
        a, k = g.attribute_columns(attribute)
        rows = {r.id: (r[a], r[k]) for r in g.tuples.select("id", a, k).collect()}
        for ts in local.tuples.values():
            for t in ts:
                has, v = local.attribute(t, attribute)
                assert rows[str(t)] == ((encode(v), kind) if has else (None, None))
    assert g.attribute_columns("nowhere") is None


CASE_TOML = """name = "case"
mappings = ["m: R(x) -> exists y. S(x, y)"]

[peers.P]
[peers.P.relations.R]
attributes = ["Name: int"]
key = ["Name"]

[peers.Q]
[peers.Q.relations.S]
attributes = ["name: int", "Name: str"]
key = ["name"]
"""


@pytest.mark.parametrize("engine", ENGINES)
def test_attribute_names_differing_only_in_case(tmp_path, engine, request):
    # Spark resolves column names case-insensitively; the graph must still keep R.Name, S.name
    # and S.Name apart (S has both), and S.Name holds strings where S.name holds ints.
    if engine == "spark":
        request.getfixturevalue("spark")
    d = exchanged(tmp_path, "case", CASE_TOML, {"P": ["+R(1)", "+R(5)"], "Q": ['+S(9, "z")']}, "Q", exchange_engine(engine))

    def rows(q: str) -> set:
        return {r["x"] for r in proql_json(d, q, engine)["rows"]}

    assert rows("FOR [S $x] WHERE $x.name > 2 RETURN $x") == {"S(5,f_m_y(5))", 'S(9,"z")'}
    assert rows('FOR [S $x] WHERE $x.Name = "z" RETURN $x') == {'S(9,"z")'}
    assert rows("FOR [R $x] WHERE $x.Name < 2 RETURN $x") == {"R(1)"}
    assert rows("FOR [$x] WHERE $x.Name = 5 RETURN $x") == {"R(5)"}  # S.Name is a string: never 5


@pytest.mark.parametrize("engine", ENGINES)
def test_variables_differing_only_in_case(bio, engine, request):
    # $x and $X are two variables (ProQL is case-sensitive); Spark resolves column names without
    # case, so its engine must still keep their bindings and their attributes apart
    if engine == "spark":
        request.getfixturevalue("spark")
    every = {(r["x"], r["X"]) for r in proql_json(bio, "FOR [B $x] <-+ [G $X] RETURN $x, $X", engine)["rows"]}
    # B(1,3) = m1(G(1,2,3)); B(3,2) = m1(G(3,5,2)); B(3,3) = m4(B(3,2), U(3,2) = m2(G(1,2,3)))
    assert every == {("B(1,3)", "G(1,2,3)"), ("B(3,2)", "G(3,5,2)"), ("B(3,3)", "G(3,5,2)"), ("B(3,3)", "G(1,2,3)")}
    # $x.id is B's id, $X.id is G's: of the pairs with G's nam 3, the one whose B has id 3
    out = proql_json(bio, "FOR [B $x] <-+ [G $X] WHERE $X.nam = 3 AND $x.id = 3 INCLUDE PATH [$x] <-+ [$X] RETURN $x, $X", engine)
    assert out["columns"] == ["x", "X"]
    assert {(r["x"], r["X"]) for r in out["rows"]} == {("B(3,3)", "G(1,2,3)")}
