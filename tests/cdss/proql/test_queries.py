"""The dissertation's ProQL queries Q1–Q10 ([Kar09] §7.3) on the running example, stored and
exchanged through the CDSS store, run through ``selp proql`` on every engine (each test runs with
``--engine embedded`` and ``--engine reference`` over a store exchanged by that engine, and with
``--engine spark`` over the reference engine's store: the same asserted answers).

The data is Example 5 with everyone trusting everything (``make_cdss(trust=False)``), so the graph
is the dissertation's Figure 4.8. Worked out by hand from the CSVs and the mappings
(m1: G(i,c,n) -> B(i,n); m2: G(i,c,n) -> U(n,c); m3: B(i,n) -> ∃c U(n,c); m4: B(i,c),U(n,c) -> B(i,n)):

    local tokens   g1 = G(1,2,3), g2 = G(3,5,2), b = B(3,5), u = U(2,5)
    P_m1 = {(1,2,3), (3,5,2)}  -> B(1,3) from g1, B(3,2) from g2
    P_m2 = {(1,2,3), (3,5,2)}  -> U(3,2) from g1, U(2,5) from g2
    P_m4 = {(3,5,2), (3,2,3)}  -> B(3,2) from b·U(2,5); B(3,3) from B(3,2)·U(3,2)
                                  (no other B(i,c), U(n,c) share c; the nulls f(n) join nothing)
    P_m3 = {(3,5), (3,2), (1,3), (3,3)} -> U(5,f5) from b, U(2,f2) from B(3,2),
                                  U(3,f3) from B(1,3) and from B(3,3)   (f = f_m3_c)
    provenance:  U(2,5) = u + m2(g2)            U(3,2) = m2(g1)       U(5,f5) = m3(b)
                 B(1,3) = m1(g1)                B(3,2) = m1(g2) + m4(b·U(2,5))
                 B(3,3) = m4(B(3,2)·U(3,2))     U(2,f2) = m3(B(3,2))  U(3,f3) = m3(B(1,3)) + m3(B(3,3))
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from selp.cli import main
from helpers.cdss import cdss_cli, load_running_example, make_cdss, ok, one_line_error

U_ALL = ["U(2,5)", "U(2,f_m3_c(2))", "U(3,2)", "U(3,f_m3_c(3))", "U(5,f_m3_c(5))"]
B_ALL = ["B(1,3)", "B(3,2)", "B(3,3)", "B(3,5)"]
Q1 = "FOR [U $x] INCLUDE PATH [$x] <-+ [] RETURN $x"


ENGINES = ["embedded", "reference", pytest.param("spark", marks=pytest.mark.spark)]


class Bio(str):
    """The store directory, remembering which engine the test runs on."""

    engine = "embedded"


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    """The running example's store exchanged by an engine, built once per engine and module."""
    built: dict[str, Path] = {}

    def store(engine: str) -> Path:
        if engine not in built:
            d = make_cdss(tmp_path_factory.mktemp(f"proql-{engine}"), trust=False)
            load_running_example(d)
            ok(cdss_cli("exchange", d, "--peer", "PBioSQL", "--engine", engine, "-q"))
            built[engine] = d
        return built[engine]

    return store


@pytest.fixture(params=ENGINES)
def bio(request, stores):
    engine = request.param
    # the in-process engines query what they exchanged; Spark queries the reference's store
    b = Bio(stores("reference" if engine == "spark" else engine))
    b.engine = engine
    if engine == "spark":
        request.getfixturevalue("spark")  # the session-wide Spark session, reused by the CLI
    return b


def proql(d, *args) -> object:
    engine = getattr(d, "engine", "embedded")
    return CliRunner().invoke(main, ["proql", str(d), *map(str, args), "--engine", engine])


def query(d, text: str, *extra: str) -> dict:
    """Run a query with --format json; returns {"rows": {binding: values}, "graph": ...}."""
    doc = json.loads(ok(proql(d, text, "--format", "json", *extra)))
    return doc


def bindings(doc: dict) -> list:
    cols = doc["columns"]
    return [tuple(r[c] for c in cols) if len(cols) > 1 else r[cols[0]] for r in doc["rows"]]


def values(doc: dict) -> dict:
    c = doc["columns"][0]
    return {r[c]: r["values"][c] for r in doc["rows"]}


def test_q1_all_derivations_of_u(bio):
    doc = query(bio, Q1)
    assert bindings(doc) == U_ALL
    # every node lies on a derivation of some U tuple: 2 G + 4 B + 5 U tuples, 2+2+4+2 mapping nodes
    nodes = doc["graph"]["nodes"]
    assert len([n for n in nodes if n[0] in "GBU"]) == 11 and len(nodes) == 21
    # no EVALUATE: the N[X] provenance of each tuple (read off the derivation in the docstring)
    v = values(doc)
    assert v["U(2,5)"] == "U(2,5) + m2(G(3,5,2))"
    assert v["U(3,2)"] == "m2(G(1,2,3))"
    assert v["U(5,f_m3_c(5))"] == "m3(B(3,5))"
    # U(2,f2) = m3(m1(g2) + m4(b·(u + m2(g2)))), distributed: three terms
    assert v["U(2,f_m3_c(2))"] == "m3(m1(G(3,5,2))) + m3(m4(B(3,5)·U(2,5))) + m3(m4(B(3,5)·m2(G(3,5,2))))"


def test_q1a_one_step_predecessors_of_u(bio):
    # U's one-step sources: m2 reads g1, g2; m3 reads every B tuple
    doc = query(bio, "FOR [U $x] <- [$y] INCLUDE PATH [$y] <-+ [] RETURN $y")
    assert bindings(doc) == B_ALL + ["G(1,2,3)", "G(3,5,2)"]


def test_q1b_relational_join(bio):
    # U(n,c) with n among B's names {5,2,3} and c among G's cans {2,5}: U(2,5), U(3,2); the
    # others have a labeled null as can, equal to no G can
    doc = query(bio, "FOR [U $x], [B $y], [G $z] WHERE $x.nam = $y.nam AND $x.can = $z.can INCLUDE PATH [$x] <-+ [] RETURN $x")
    assert bindings(doc) == ["U(2,5)", "U(3,2)"]


def test_q2_parts_leading_back_to_g(bio):
    # U(5,f5) = m3(b) only: no G ancestor. The others reach g1 or g2.
    doc = query(bio, "FOR [U $x] <-+ [G $y] INCLUDE PATH [$x] <-+ [$y] RETURN $x")
    assert bindings(doc) == ["U(2,5)", "U(2,f_m3_c(2))", "U(3,2)", "U(3,f_m3_c(3))"]
    nodes = set(doc["graph"]["nodes"])
    assert "m3(3,5)" not in nodes and "U(5,f_m3_c(5))" not in nodes  # not on a path from G
    # the path g2 -> U(2,5) -> m4(3,5,2) -> B(3,2) -> m3 -> U(2,f2) brings m4's sibling input b
    assert {"m4(3,5,2)", "B(3,5)", "m2(3,5,2)"} <= nodes


Q3_FIXED = "FOR [$x] <$p [], [$y] <- [$x] WHERE $p = m1 OR $p = m2 INCLUDE PATH [$y] <- [$x] RETURN $y"


def test_q3_consequents_of_tuples_derived_by_m1_or_m2(bio):
    # $x derived by m1/m2: B(1,3), B(3,2), U(3,2), U(2,5). One step on: B(1,3) -m3-> U(3,f3);
    # B(3,2) -m3-> U(2,f2), -m4-> B(3,3); U(3,2) -m4-> B(3,3); U(2,5) -m4-> B(3,2).
    doc = query(bio, Q3_FIXED)
    assert bindings(doc) == ["B(3,2)", "B(3,3)", "U(2,f_m3_c(2))", "U(3,f_m3_c(3))"]
    # The text's "[$x] <$p [] <-+ []" asks the middle tuple (a G tuple: m1 and m2 read G) to be
    # derived itself; G tuples are only local, so read literally the query is empty. (Typo fixed
    # above by dropping "<-+ []"; documented in the README.)
    literal = query(bio, "FOR [$x] <$p [] <-+ [], [$y] <- [$x] WHERE $p = m1 OR $p = m2 INCLUDE PATH [$y] <- [$x] RETURN $y")
    assert bindings(literal) == []
    # the desugared form (variable reuse = node equality $x = $z), with "[$y] <- [$y]" fixed
    sugar = query(bio, "FOR [$x] <$p [], [$y] <- [$z] WHERE $x = $z AND ($p = m1 OR $p = m2) INCLUDE PATH [$y] <- [$x] RETURN $y")
    assert bindings(sugar) == bindings(doc)


def test_q4_provenance_join(bio):
    # strict ancestors: U(2,5) {g2}; U(3,2) {g1}; U(5,f5) {b}; U(2,f2) {B(3,2), g2, b, U(2,5)};
    # U(3,f3) {B(1,3), g1, B(3,3), B(3,2), U(3,2), g2, b, U(2,5)}; B(3,5) {}; B(1,3) {g1};
    # B(3,2) {g2, b, U(2,5)}; B(3,3) {B(3,2), U(3,2), g1, g2, b, U(2,5)}. Pairs sharing one: 11.
    doc = query(bio, "FOR [U $x] <-+ [$z], [B $y] <-+ [$z] INCLUDE PATH [$x] <-+ [], [$y] <-+ [] RETURN $x, $y")
    assert sorted(bindings(doc)) == sorted([
        ("U(2,5)", "B(3,2)"), ("U(2,5)", "B(3,3)"),
        ("U(3,2)", "B(1,3)"), ("U(3,2)", "B(3,3)"),
        ("U(5,f_m3_c(5))", "B(3,2)"), ("U(5,f_m3_c(5))", "B(3,3)"),
        ("U(2,f_m3_c(2))", "B(3,2)"), ("U(2,f_m3_c(2))", "B(3,3)"),
        ("U(3,f_m3_c(3))", "B(1,3)"), ("U(3,f_m3_c(3))", "B(3,2)"), ("U(3,f_m3_c(3))", "B(3,3)"),
    ])


def evaluate(semiring: str, body: str = Q1, assign: str = "") -> str:
    return f"EVALUATE {semiring} OF {{ {body} }} {assign}"


def test_q5_derivability(bio):
    assert values(query(bio, evaluate("DERIVABILITY"))) == {x: True for x in U_ALL}


def test_q6_lineage(bio):
    # lineage = the tokens under each U tuple: U(2,f2) uses B(3,2)'s {g2, b, u};
    # U(3,f3) adds B(1,3)'s g1 and B(3,3)'s U(3,2) -> g1
    assert values(query(bio, evaluate("LINEAGE"))) == {
        "U(2,5)": ["G(3,5,2)", "U(2,5)"],
        "U(3,2)": ["G(1,2,3)"],
        "U(5,f_m3_c(5))": ["B(3,5)"],
        "U(2,f_m3_c(2))": ["B(3,5)", "G(3,5,2)", "U(2,5)"],
        "U(3,f_m3_c(3))": ["B(3,5)", "G(1,2,3)", "G(3,5,2)", "U(2,5)"],
    }


Q7 = """EVALUATE TRUST OF {
  FOR [B $x]
  INCLUDE PATH [$x] <-+ []
  RETURN $x
} ASSIGNING EACH leaf_node $y {
  CASE $y in U : SET true
  CASE $y in G and $y.nam >= 3: SET false
  DEFAULT : SET true
} ASSIGNING EACH mapping $p($z) {
  CASE $p = m2 : SET false
  DEFAULT : SET $z
}"""


def test_q7_trust(bio):
    # g1 (nam 3) false, g2 true, b true, u true; m2 false.  B(3,5) = b = true;
    # B(1,3) = m1(g1) = false; B(3,2) = m1(g2) + ... = true;
    # B(3,3) = m4(B(3,2)·U(3,2)), U(3,2) = m2(g1) = false -> false
    assert values(query(bio, Q7)) == {"B(1,3)": False, "B(3,2)": True, "B(3,3)": False, "B(3,5)": True}


Q8_LEAVES = """ASSIGNING EACH leaf_node $y {
    CASE $y in B AND $y.id < 5 : SET 0
    CASE $y in G AND $y.id >= 7 : SET 5
    DEFAULT : SET edit_distance($y.nam, "GENE")
}"""


def test_q8_weight_as_written_breaks_m0_and_is_rejected(bio):
    res = proql(bio, evaluate("WEIGHT", Q1, Q8_LEAVES + " ASSIGNING EACH mapping $p($z) { CASE $p = m2 : SET 0 }"))
    one_line_error(res, "mapping m2 gives 0 on inf", "must map WEIGHT's 0 (inf) to 0", "$z != inf")


def test_q8_weight_fixed(bio):
    # leaves: b (B, id 3 < 5) 0; g1, g2 (id < 7) and u default: edit_distance of "3"/"2" and
    # "GENE" = 4 (one substitution, three insertions).
    # With m2 resetting a finite cost to 0: U(2,5) = min(4, 0) = 0, U(3,2) = 0, U(5,f5) = m3(b) = 0,
    # B(3,2) = min(m1(g2) = 4, b + U(2,5) = 0) = 0 -> U(2,f2) = 0; B(3,3) = B(3,2) + U(3,2) = 0 -> U(3,f3) = 0
    fixed = Q8_LEAVES + " ASSIGNING EACH mapping $p($z) { CASE $p = m2 AND $z != inf : SET 0 }"
    assert values(query(bio, evaluate("WEIGHT", Q1, fixed))) == {x: 0 for x in U_ALL}
    # without the mapping clause: U(2,5) = min(u, g2) = 4, U(3,2) = 4, U(5,f5) = 0,
    # B(3,2) = min(4, 0 + 4) = 4 -> U(2,f2) = 4; U(3,f3) = min(B(1,3) = 4, B(3,2) + U(3,2) = 8) = 4
    assert values(query(bio, evaluate("WEIGHT", Q1, Q8_LEAVES))) == {
        "U(2,5)": 4, "U(3,2)": 4, "U(5,f_m3_c(5))": 0, "U(2,f_m3_c(2))": 4, "U(3,f_m3_c(3))": 4,
    }


Q9 = evaluate("PROBABILITY", Q1, """ASSIGNING EACH leaf_node $y {
    CASE $y in B AND $y.id < 5 : SET X1
    CASE $y in B AND $y.id >= 5 : SET X2
    CASE $y in G : SET X1
}""")


def test_q9_probability(bio):
    # b, g1, g2 -> X1; u matches no CASE -> 1 (Ω, "true"). U(2,5) = Ω ∪ X1 = true; every other
    # U tuple's derivations each use some X1 leaf (and only X1 or Ω): X1.
    doc = query(bio, Q9, "--prob", "X1=0.3")
    assert values(doc) == {"U(2,5)": "true", "U(3,2)": "X1", "U(5,f_m3_c(5))": "X1", "U(2,f_m3_c(2))": "X1", "U(3,f_m3_c(3))": "X1"}
    c = doc["columns"][0]
    probs = {r[c]: r["probabilities"][c] for r in doc["rows"]}
    assert probs["U(2,5)"] == 1.0 and probs["U(3,2)"] == pytest.approx(0.3)


Q10 = evaluate("CONFIDENTIALITY", Q1, """ASSIGNING EACH leaf_node $y {
    CASE $y in B : SET C
    CASE $y in G : SET S
    DEFAULT : SET P
} ASSIGNING EACH mapping $p($z) {
    CASE $p = m3 and $z != 0 : SET T
}""")


def test_q10_confidentiality(bio):
    # b C, g1 g2 S, u P. U(2,5) = min(P, m2(S) = S) = P; U(3,2) = S; every U tuple with a
    # labeled null comes through m3 from a derivable B tuple: T.
    assert values(query(bio, Q10)) == {"U(2,5)": "P", "U(3,2)": "S", "U(5,f_m3_c(5))": "T", "U(2,f_m3_c(2))": "T", "U(3,f_m3_c(3))": "T"}


def test_count_and_formats(bio):
    # COUNT: U(2,5) 2 (local, m2); B(3,2) = 1 + 1·2 = 3; U(3,f3) = B(1,3) + B(3,2)·U(3,2) = 1 + 3 = 4
    assert values(query(bio, evaluate("COUNT"))) == {"U(2,5)": 2, "U(3,2)": 1, "U(5,f_m3_c(5))": 1, "U(2,f_m3_c(2))": 3, "U(3,f_m3_c(3))": 4}
    table = ok(proql(bio, "FOR [U $x] WHERE $x.nam = 2 AND $x.can = 5 RETURN $x"))
    assert table.splitlines()[1].split() == ["U(2,5)", "U(2,5)"]  # no INCLUDE PATH: the tuple alone, a leaf
    dot = ok(proql(bio, "FOR [U $x] WHERE $x.nam = 3 AND $x.can = 2 INCLUDE PATH [$x] <-+ [] RETURN $x", "--format", "dot"))
    assert dot.startswith("digraph proql {") and dot.count(" -> ") == 2  # G(1,2,3) -> m2 -> U(3,2)


def test_query_file_and_errors(bio, tmp_path):
    f = tmp_path / "q.proql"
    f.write_text("FOR [U $x]\n  INCLUDE PATH [$x] <-+ []\n  RETURN $x.nam\n")
    one_line_error(proql(bio, "-f", f), f"{f}:3:12", "unexpected '.'")
    one_line_error(proql(bio, "FOR [Q $x] RETURN $x"), "<query>:1:5", "unknown relation Q")
    one_line_error(proql(bio, "FOR [U $x] RETURN $x", "--peer", "Nobody"), "unknown peer")
    one_line_error(proql(bio), "give the query")


def test_peer_qualified_relation_names(bio):
    # U tuples one m2 step from a G tuple: U(2,5) from G(3,5,2), U(3,2) from G(1,2,3)
    q = "FOR [PuBio.U $x] <- [PGUS.G $y] WHERE $x in PuBio.U INCLUDE PATH [$x] <- [$y] RETURN $x"
    doc = query(bio, q)
    assert bindings(doc) == ["U(2,5)", "U(3,2)"]
    assert sorted(doc["graph"]["nodes"]) == ["G(1,2,3)", "G(3,5,2)", "U(2,5)", "U(3,2)", "m2(1,2,3)", "m2(3,5,2)"]
    one_line_error(proql(bio, "FOR [PuBio.B $x] RETURN $x"), "<query>:1:5", "peer PuBio has no relation B (its relations: U)")
    one_line_error(proql(bio, "FOR [U $x] WHERE $x in Nobody.U RETURN $x"), "<query>:1:18", "unknown peer Nobody")


def test_the_default_engine_and_the_python_api(stores, monkeypatch):
    """No --engine: the embedded engine (the in-memory graph, no Spark); selp.toml beside
    cdss.toml may choose another; the Python API chooses the same way."""
    from selp.cdss.proql.api import local_query, query as api_query

    monkeypatch.delenv("SELP_ENGINE", raising=False)
    d = stores("embedded")
    res = CliRunner().invoke(main, ["proql", str(d), Q1, "--format", "json"])
    assert sorted(json.loads(ok(res))["graph"]["nodes"])[:1] == ["B(1,3)"]
    rows = api_query(str(d), evaluate("COUNT"))
    assert rows == local_query(str(d), evaluate("COUNT"))
    assert {r["x"]: r["value(x)"] for r in rows}["U(3,f_m3_c(3))"] == 4
    assert api_query(str(d), Q1, engine="reference") == api_query(str(d), Q1, engine="local")
    one_line_error(CliRunner().invoke(main, ["proql", str(d), Q1, "--engine", "embedded", "--master", "local[1]"]),
                   "apply to the spark engine")
