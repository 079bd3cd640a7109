"""cdss.toml loading, the mapping parser and their located one-line errors."""

from __future__ import annotations

import pytest

from helpers.paths import BIO
from selp.cdss.config import load_cdss, parse_cdss
from selp.cdss.errors import CdssError
from selp.cdss.mapping_parser import parse_condition, parse_mapping
from selp.cdss.model import AttributeRef, Condition, RelationRef
from selp.cdss.toml_locate import TomlLocator
from selp.language.ast import Const, Var


SCHEMA = """
[peers.PGUS.relations.G]
attributes = ["id: int", "can: int", "nam: int"]
key = ["id"]

[peers.PBioSQL.relations.B]
attributes = ["id: int", "nam: int"]

[peers.PuBio.relations.U]
attributes = ["nam: int", "can: int"]
"""


def cdss_text(*mappings: str, extra: str = "") -> str:
    lines = ",\n".join(f"  '{m}'" for m in mappings)  # TOML literal strings: no escapes
    return f"mappings = [\n{lines}\n]\n{SCHEMA}{extra}"


def error(text: str) -> CdssError:
    with pytest.raises(CdssError) as info:
        parse_cdss(text, "cdss.toml")
    return info.value


def test_running_example_loads():
    c = load_cdss(BIO)
    assert [p.name for p in c.peers] == ["PGUS", "PBioSQL", "PuBio"]
    assert [m.name for m in c.mappings] == ["m1", "m2", "m3", "m4"]
    g = c.relation(RelationRef("PGUS", "G"))
    assert g.attribute_names == ("id", "can", "nam") and g.types == ("int", "int", "int") and g.key == ("id",)
    m3 = c.mapping("m3")
    assert m3.existentials == (Var("c"),)
    assert m3.frontier == (Var("n"),)
    m4 = c.mapping("m4")
    assert m4.body_vars == (Var("i"), Var("c"), Var("n"))
    assert m4.frontier == (Var("i"), Var("n"))
    assert m4.source_peers == ("PBioSQL", "PuBio")
    policy = c.peer("PBioSQL").policy
    assert [r.action for r in policy.rules] == ["distrust", "trust", "distrust"]
    assert policy.rules[0].sources == ("PGUS",)
    assert policy.rules[0].when == (Condition(">=", AttributeRef("nam"), Const(3)),)
    assert policy.rules[2].mappings == ("m4",)
    assert policy.ranked is not None
    assert policy.ranked.peer_cost("PGUS") == 5 and policy.ranked.mapping_cost("m4") == 2
    assert policy.ranked.threshold == 10
    assert c.peer("PGUS").policy.rules == ()


def test_default_key_is_every_attribute():
    c = parse_cdss(cdss_text("m1: G(i, c, n) -> B(i, n)"))
    assert c.relation(RelationRef("PBioSQL", "B")).key == ("id", "nam")


def test_mapping_parser_shapes():
    m = parse_mapping('m5: G(i, "x", -3), PuBio.U(n, _) -> exists a, b. B(a, n), U(n, b)')
    assert m.name == "m5" and not m.bidirectional
    assert [a.written for a in m.body] == ["G", "PuBio.U"]
    assert m.body[0].args == (Var("i"), Const("x"), Const(-3))
    assert m.body[1].args[1] == Var("anon1")  # `_` gets a fresh, user-invisible name
    assert [v for v, _ in m.existentials] == [Var("a"), Var("b")]
    assert parse_condition('nam >= 3 and id != "x"')[1][0] == Condition("!=", AttributeRef("id"), Const("x"))


def test_anonymous_names_avoid_user_variables():
    m = parse_mapping("m: G(anon1, _, n) -> B(anon1, n)")
    assert m.body[0].args[1] == Var("anon2")


def test_bidirectional_mapping_is_its_pair_of_tgds():
    m = parse_mapping("m2: exists i. B(i, n), *S(i, c) <-> *U(n, c)")
    assert m.bidirectional and [a.starred for a in m.body + m.head] == [False, True, True]
    c = parse_cdss(cdss_text("m2: exists i. B(i, n), *G(i, c, n) <-> *U(n, c)"))
    fwd, bwd = c.mappings
    assert (fwd.name, fwd.direction, bwd.name, bwd.direction) == ("m2_fwd", "->", "m2_bwd", "<-")
    assert fwd.head == bwd.body and fwd.body == bwd.head and fwd.existentials == ()
    assert bwd.existentials == (Var("i"),) and bwd.frontier == (Var("n"), Var("c"))
    assert fwd.head_policy == (True,) and bwd.head_policy == (False, True)
    assert c.mapping_names("m2") == ("m2_fwd", "m2_bwd")


def test_weak_acyclicity_is_checked_on_the_pair():
    err = error(cdss_text("m5: exists i. B(i, n) <-> exists z. B(n, z)"))
    assert "mapping m5 is not weakly acyclic: B.2 =*> B.2" in str(err)
    # Theorem 5.3.1: no self-joins on either side -> the pair is weakly acyclic, existentials on both sides
    parse_cdss(cdss_text("m6: exists i. G(i, c, n) <-> exists z. U(n, z), B(c, n)"))


@pytest.mark.parametrize(
    "mapping, message",
    [
        ("m1: G(i, c, n) <-> U(n, c)",
         "2:8: mapping m1: variable i of the left side does not occur on the other side;"
         " declare it existential (m1: exists i. ... <->)"),
        ("m1: exists c. G(i, c, n) <-> U(n, c)", "2:15: mapping m1: existential variable c also occurs on the other side"),
        ("m1: *G(i, c, n) -> U(n, c)", "2:8: mapping m1: '*' (an update policy) is only allowed in a bidirectional mapping"),
        ("m1: exists i. G(i, c, n) -> U(n, c)", "2:8: mapping m1: 'exists' before the body"),
        ("m1: exists i. G(i, _, n) <-> U(n, c)", "2:23: '_' in a bidirectional mapping"),
        ("m1_fwd: G(i, c, n) -> U(n, c)\x00m1: exists i. G(i, c, n) <-> U(n, c)", "mapping name m1_fwd is used twice"),
    ],
)
def test_bidirectional_mistakes_are_located(mapping, message):
    err = error(cdss_text(*mapping.split("\x00")))
    assert f"cdss.toml:{message}" in str(err) or message in str(err), str(err)


@pytest.mark.parametrize(
    "mapping, message",
    [
        ("m1: G(i, c, n) -> exists(i)", "2:28: syntax error in mapping: unexpected '(', expected a name"),
        ("m1 G(i, c, n) -> B(i, n)", "2:7: syntax error in mapping: unexpected 'G', expected ':'"),
        ("m1: G(i, c, n) -> B(i, n", "2:28: syntax error in mapping: unexpected end of text"),
        ("m1: G(i, c, n) -> B(i, n) ;", "2:30: syntax error in mapping: unexpected character ';'"),
        ("m1: X(i) -> B(i, i)", "2:8: mapping m1: unknown relation X"),
        ("m1: PX.G(i, c, n) -> B(i, n)", "2:8: mapping m1: unknown peer PX"),
        ("m1: PGUS.B(i, n) -> B(i, n)", "2:8: mapping m1: peer PGUS has no relation B"),
        ("m1: G(i, c) -> B(i, c)", "2:8: mapping m1: G has 2 argument(s) but PGUS.G has 3 (id, can, nam)"),
        ("m1: G(i, c, n) -> exists n. B(i, n)", "2:29: mapping m1: existential variable n also occurs in the body"),
        ("m1: G(i, c, n) -> exists z. B(i, n)", "2:29: mapping m1: existential variable z is not used in the head"),
        ("m1: G(i, c, n) -> B(i, z)", "2:22: mapping m1: head variable z occurs neither in the body nor after exists"),
        ("m1: G(i, c, n) -> B(i, _)", "2:27: '_' in the head of a mapping"),
        ('m1: G(i, "a", n) -> B(i, n)', "2:8: mapping m1: constant 'a' is a str but G.can is int"),
        ("1m: G(i, c, n) -> B(i, n)", "2:4: syntax error in mapping"),
    ],
)
def test_mapping_errors_are_located_in_cdss_toml(mapping, message):
    err = error(cdss_text(mapping))
    text = str(err)
    assert text.startswith("cdss.toml:"), text
    assert "\n" not in text
    assert text.startswith("cdss.toml:" + message), text


def test_error_inside_a_multiline_mapping_points_at_its_line():
    text = 'mappings = [\n  """m3: B(i, n) ->\n      exists c. U(n, c, x)"""\n]\n' + SCHEMA
    err = error(text)
    assert str(err).startswith("cdss.toml:3:17: mapping m3: U has 3 argument(s)")


def test_escaped_strings_keep_columns_right():
    # the basic string's escaped quotes take two characters in the file, one in the value
    text = 'mappings = ["m1: S(\\"a\\", n) -> B(n, q)"]\n' + SCHEMA + '[peers.PS.relations.S]\nattributes = ["name: str", "x: int"]\n'
    assert str(error(text)).startswith("cdss.toml:1:33: mapping m1: head variable q")


def test_duplicate_mapping_names():
    err = error(cdss_text("m1: G(i, c, n) -> B(i, n)", "m1: G(i, c, n) -> U(n, c)"))
    assert str(err) == "cdss.toml:3:4: mapping name m1 is used twice (first at cdss.toml:2:4)"


def test_ambiguous_relation_must_be_qualified():
    extra = '\n[peers.PX.relations.B]\nattributes = ["id: int", "nam: int"]\n'
    err = error(cdss_text("m1: G(i, c, n) -> B(i, n)", extra=extra))
    assert "relation B is ambiguous (PBioSQL.B, PX.B); qualify it as PEER.B" in str(err)
    c = parse_cdss(cdss_text("m1: G(i, c, n) -> PX.B(i, n)", extra=extra))
    assert c.mappings[0].head[0].relation == RelationRef("PX", "B")
    assert c.display_name(RelationRef("PX", "B")) == "PX.B"
    assert c.display_name(RelationRef("PGUS", "G")) == "G"


def test_variable_types_must_agree():
    extra = '\n[peers.PS.relations.S]\nattributes = ["name: str"]\n'
    err = error(cdss_text("m1: G(i, c, n), S(i) -> B(i, n)", extra=extra))
    assert "variable i is int at G.id but str at S.name" in str(err)


@pytest.mark.parametrize(
    "schema, message",
    [
        ('[peers.P.relations.R]\nattributes = ["a: float"]\n', "2:15: attribute a has unknown type 'float'; use str or int"),
        ('[peers.P.relations.R]\nattributes = ["a: int", "a: str"]\n', "2:25: attribute a appears twice in P.R"),
        ('[peers.P.relations.R]\nattributes = ["a int"]\n', '2:15: attribute \'a int\' must be written "NAME: TYPE"'),
        ('[peers.P.relations.R]\nattributes = ["a: int"]\nkey = ["b"]\n', "3:8: key attribute 'b' is not an attribute of P.R (a)"),
        ('[peers.P.relations.R]\nattributes = ["a: int"]\nkey = ["a", "a"]\n', "3:13: key attribute a appears twice"),
        ('[peers.P.relations.R]\nattributes = ["a: int"]\nkey = []\n', "3:7: the key of P.R is empty"),
        ('[peers.P.relations.R]\natributes = ["a: int"]\n', "2:1: unknown key 'atributes' in peers.P.relations.R (expected attributes, key)"),
        ('[peers.P.relations.R]\nattributes = ["not: int"]\n', "2:15: attribute name 'not' is a reserved word"),
        ('[peers.P.relations.R]\nattributes = "a: int"\n', "2:14: peers.P.relations.R.attributes must be an array"),
        ('[peers."P Q".relations.R]\nattributes = ["a: int"]\n', "1:1: peer name 'P Q' is not an identifier"),
        ('[peers.P]\nrelations.R = { attributes = ["a: int"], key = ["z"] }\n', "2:49: key attribute 'z' is not an attribute of P.R (a)"),
        ('[peers.P.relations.R]\nattributes = ["a: int"\n', "TOML syntax error"),
        ("name = 'x'\n", "1: no peers"),
    ],
)
def test_configuration_errors_are_located(schema, message):
    err = error(schema)
    assert "\n" not in str(err)
    assert str(err).startswith("cdss.toml:" + message) or message in str(err), str(err)
    assert str(err).startswith("cdss.toml:")


def test_duplicate_relation_name_is_a_toml_error():
    err = error('[peers.P.relations.R]\nattributes = ["a: int"]\n[peers.P.relations.R]\nattributes = ["a: int"]\n')
    assert str(err).startswith("cdss.toml:3:") and "TOML syntax error" in str(err)


TRUST_BASE = cdss_text("m1: G(i, c, n) -> B(i, n)", "m4: B(i, c), U(n, c) -> B(i, n)")


@pytest.mark.parametrize(
    "trust, message",
    [
        ('action = "maybe"', "action must be \"trust\" or \"distrust\", not 'maybe'"),
        ('action = "distrust"\nrelation = "U"', "peer PBioSQL has no relation 'U'"),
        ('action = "distrust"\nrelation = "B"\nfrom = ["PZ"]', "unknown peer 'PZ' in from"),
        ('action = "distrust"\nrelation = "B"\nmappings = ["m9"]', "unknown mapping 'm9'"),
        ('action = "distrust"\nrelation = "B"\nwhen = "name >= 3"', "trust condition: B has no attribute name (id, nam)"),
        ('action = "distrust"\nrelation = "B"\nwhen = "nam >= \\"x\\""', "trust condition compares nam (int) with 'x' (str)"),
        ('action = "distrust"\nrelation = "B"\nwhen = "nam >>= 3"', "syntax error in trust condition"),
        ('action = "distrust"\nwhen = "nam >= 3"', "a trust condition with `when` must name its relation"),
        ('action = "distrust"\nrelation = "B"\nweight = 3', "unknown key 'weight'"),
        ('relation = "B"', "a trust condition needs action"),
    ],
)
def test_malformed_trust_conditions(trust, message):
    err = error(TRUST_BASE + "\n[[peers.PBioSQL.trust]]\n" + trust + "\n")
    assert message in str(err), str(err)
    header = TRUST_BASE.count("\n") + 2
    assert err.location is not None and err.location.file == "cdss.toml"
    assert header <= err.location.line <= header + 3, str(err)


def test_trust_condition_error_points_inside_the_string():
    text = TRUST_BASE + '\n[[peers.PBioSQL.trust]]\naction = "distrust"\nrelation = "B"\nwhen = "nam >= 3 and idd = 1"\n'
    line = text.splitlines().index('when = "nam >= 3 and idd = 1"') + 1
    assert str(error(text)).startswith(f"cdss.toml:{line}:22: trust condition: B has no attribute idd")


@pytest.mark.parametrize(
    "costs, message",
    [
        ("peers = { PZ = 1 }", "unknown peer 'PZ' in costs.peers"),
        ("mappings = { m1 = -1 }", "a cost must be a finite number >= 0, not -1"),
        ('mappings = { m1 = "high" }', 'a mapping function must be "Kx" or "Kx + c" (e.g. "2x"), not \'high\''),
        ('mappings = { m1 = "0.5x" }', "mapping function '0.5x' must have a factor >= 1 and a constant >= 0"),
        ('mappings = { m1 = "2x + -1" }', "must have a factor >= 1 and a constant >= 0"),
        ('peers = { PGUS = "2x" }', "must be a number, not a string"),
        ("threshold = true", "must be a number, not a boolean"),
    ],
)
def test_bad_costs(costs, message):
    err = error(TRUST_BASE + "\n[peers.PBioSQL.costs]\n" + costs + "\n")
    assert message in str(err), str(err)
    assert str(err).startswith(f"cdss.toml:{TRUST_BASE.count(chr(10)) + 3}:"), str(err)


@pytest.mark.parametrize("text, scale, cost", [('"2x"', 2, 0), ('"2 * x + 1.5"', 2, 1.5), ('"x + 3"', 1, 3), ("4", 1, 4)])
def test_mapping_functions(text, scale, cost):
    ranked = parse_cdss(TRUST_BASE + f"\n[peers.PBioSQL.costs]\nmappings = {{ m1 = {text} }}\n").peer("PBioSQL").policy.ranked
    assert ranked is not None
    assert (ranked.mapping_scale("m1"), ranked.mapping_cost("m1")) == (scale, cost)
    assert ranked.mapping_scale("m4") == 1


def test_missing_directory_and_file(tmp_path):
    with pytest.raises(CdssError) as info:
        load_cdss(tmp_path)
    assert str(info.value) == f"{tmp_path}/cdss.toml not found (a CDSS directory holds a cdss.toml)"


def test_locator_positions():
    text = 'a = 1\n[t]\nx = [ "p", { y = "q" } ]\n[[arr]]\nz = 1\n[[arr]]\nz = 2\n'
    where = TomlLocator(text, "f.toml")
    assert str(where.value(("t", "x", 0))) == "f.toml:3:7"
    assert str(where.value(("t", "x", 1, "y"))) == "f.toml:3:18"
    assert str(where.key(("arr", 1, "z"))) == "f.toml:7:1"
    assert str(where.value(("nothing", "here"))) == "f.toml"
