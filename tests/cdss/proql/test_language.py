"""ProQL parsing (every construct, located errors) and type checks against the running example."""

from __future__ import annotations


import pytest

from helpers.paths import BIO
from selp.cdss.compile import compile_cdss
from selp.cdss.config import load_cdss
from selp.cdss.proql import ast
from selp.cdss.proql.check import check_query
from selp.cdss.proql.parser import ProqlError, parse_query



@pytest.fixture(scope="module")
def compiled():
    return compile_cdss(load_cdss(BIO))


def test_path_steps_and_nodes():
    q = parse_query("FOR [U $x] <- [$y], [B] <m1 [G $g], [$a] <$p [] <-+ [] RETURN $x")
    p1, p2, p3 = q.projection.for_paths
    assert p1.nodes == (ast.NodePattern("U", "x"), ast.NodePattern(None, "y")) and p1.steps == (ast.Step("any"),)
    assert p2.nodes[0] == ast.NodePattern("B", None) and p2.steps == (ast.Step("mapping", "m1"),)
    assert p3.steps == (ast.Step("mapvar", "p"), ast.Step("plus")) and p3.nodes[1] == ast.NodePattern(None, None)
    assert q.semiring == "POLYNOMIAL" and not q.evaluate
    assert q.projection.include == () and q.projection.where is None


def test_conditions_precedence_not_and_paths():
    q = parse_query("for [U $x], [B $y] where not $x.nam < 3 and $x.nam = $y.nam or $y in B and [$x] <-+ [G] return $x, $y")
    w = q.projection.where
    assert isinstance(w, ast.Or) and len(w.parts) == 2  # AND binds tighter than OR
    left, right = w.parts
    assert isinstance(left, ast.And) and isinstance(left.parts[0], ast.Not)
    assert left.parts[1] == ast.Comparison(ast.AttrRef("x", "nam"), "=", ast.AttrRef("y", "nam"))
    assert right.parts[0] == ast.Membership("y", "B") and isinstance(right.parts[1], ast.PathCondition)
    q2 = parse_query("FOR [U $x] WHERE ($x.can <> 'a b' OR $x.nam >= -2.5) RETURN $x")
    c = q2.projection.where.parts[0]
    assert c.op == "!=" and c.right == ast.Literal("a b")
    assert q2.projection.where.parts[1].right == ast.Literal(-2.5)


def test_evaluate_with_both_assignments_in_either_order():
    q = parse_query(
        "EVALUATE weight OF { FOR [U $x] RETURN $x } -- a comment\n"
        "ASSIGNING EACH mapping $p($z) { CASE $p = m2 AND $z != inf : SET 0 DEFAULT : SET $z }\n"
        "ASSIGNING EACH leaf_node $y { CASE $y in B : SET 1 DEFAULT : SET edit_distance($y.nam, \"GENE\") }"
    )
    assert q.evaluate and q.semiring == "weight"
    assert q.mapping.var == "p" and q.mapping.arg == "z" and q.mapping.has_default
    assert q.mapping.cases[1].value == ast.VarRef("z")
    assert q.leaf.cases[1].value == ast.Call("edit_distance", (ast.AttrRef("y", "nam"), ast.Literal("GENE")))
    with pytest.raises(ProqlError, match="second ASSIGNING EACH leaf_node"):
        parse_query("EVALUATE TRUST OF { FOR [U $x] RETURN $x } ASSIGNING EACH leaf_node $y { } ASSIGNING EACH leaf_node $y { }")


@pytest.mark.parametrize(
    "text, where, fragment",
    [
        ("FOR [U $x RETURN $x", "<query>:1:11", "expected ']'"),
        ("FOR [U $x]\nRETURN", "<query>:2:7", "end of the query"),
        ("FOR [U $x] RETURN $x ;", "<query>:1:22", "unexpected character ';'"),
        ("FOR [U $x] WHERE $x.nam = RETURN $x", "<query>:1:34", "unexpected '$x'"),  # RETURN read as a name
        ("EVALUATE TRUST { FOR [U $x] RETURN $x }", "<query>:1:16", "unexpected '{'"),
    ],
)
def test_syntax_errors_are_located(text, where, fragment):
    with pytest.raises(ProqlError) as e:
        parse_query(text)
    assert str(e.value).startswith(where + ": ") and fragment in str(e.value)
    assert "\n" not in str(e.value)


def test_file_name_in_errors():
    with pytest.raises(ProqlError, match=r"^q\.proql:1:5: "):
        parse_query("FOR ]", "q.proql")


@pytest.mark.parametrize(
    "text, where, fragment",
    [
        ("FOR [Q $x] RETURN $x", "1:5", "unknown relation Q"),
        ("FOR [U $x] WHERE $x.id = 1 RETURN $x", "1:18", "relation U has no attribute id"),
        ("FOR [U $x] <m1 [$y] RETURN $x", "1:12", "mapping m1 does not derive U"),
        ("FOR [B $x] <m1 [U $y] RETURN $x", "1:12", "mapping m1 does not read U"),
        ("FOR [B $x] <m9 [] RETURN $x", "1:12", "unknown mapping m9"),
        ("FOR [U $x] RETURN $y", "1:19", "RETURN $y: not bound"),
        ("FOR [U $x] INCLUDE PATH [U $x] <-+ [] RETURN $x", "1:25", "INCLUDE PATH names no relations"),
        ("FOR [U $x] INCLUDE PATH [$x] <-+ [$q] RETURN $x", "1:34", "$q is not bound"),
        ("FOR [U $x] <$p [] WHERE $p = m7 RETURN $x", "1:30", "unknown mapping m7"),
        ("FOR [U $x] <$p [] WHERE $p.nam = 1 RETURN $x", "1:25", "$p is a mapping node"),
        ("EVALUATE FUZZY OF { FOR [U $x] RETURN $x }", "1:10", "unknown semiring FUZZY"),
        ("EVALUATE TRUST OF { FOR [U $x] RETURN $x } ASSIGNING EACH leaf_node $y { CASE $y in B : SET 3 }", "1:93", "TRUST values are true and false"),
        ("EVALUATE TRUST OF { FOR [U $x] RETURN $x } ASSIGNING EACH leaf_node $y { CASE $y.zzz = 1 : SET true }", "1:79", "no relation has an attribute zzz"),
        ("EVALUATE CONFIDENTIALITY OF { FOR [U $x] RETURN $x } ASSIGNING EACH mapping $p($z) { CASE $p = m3 : SET T }", "1:86", "mapping m3 gives T on 0"),
        ("EVALUATE TRUST OF { FOR [U $x] RETURN $x } ASSIGNING EACH mapping $p($z) { DEFAULT : SET true }", "1:76", "mapping m1 gives true on false"),
    ],
)
def test_type_errors_before_evaluation(compiled, text, where, fragment):
    with pytest.raises(ProqlError) as e:
        check_query(parse_query(text), compiled)
    assert str(e.value).startswith(f"<query>:{where}: "), str(e.value)
    assert fragment in str(e.value)


def test_well_typed_queries_pass(compiled):
    # a heterogeneous $y is not type-checked (false at run time on tuples without the attribute)
    for text in [
        "FOR [U $x] <- [$y] WHERE $y.id = 3 RETURN $y",
        "FOR [B $x] <m4 [U $y] RETURN $x",
        "EVALUATE CONFIDENTIALITY OF { FOR [U $x] RETURN $x } ASSIGNING EACH mapping $p($z) { CASE $p = m3 and $z != 0 : SET T }",
        "EVALUATE TRUST OF { FOR [U $x] RETURN $x } ASSIGNING EACH mapping $p($z) { CASE $p = m2 : SET false DEFAULT : SET $z }",
    ]:
        check_query(parse_query(text), compiled)
