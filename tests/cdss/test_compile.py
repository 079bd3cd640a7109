"""Compilation of a CDSS to datalog^sk: shape, names, Skolem terms, trust, weights, round trip."""

from __future__ import annotations

import pytest

from helpers.paths import BIO
from selp.cdss.compile import RuleOrigin, compile_cdss
from selp.cdss.config import load_cdss, parse_cdss
from selp.cdss.errors import CdssError
from selp.cdss.model import RelationRef
from selp.language import parse_program
from selp.language.ast import SkolemTerm, Var
from selp.language.printer import format_program, format_rule
from selp.language.validate import analyze

SCHEMA = """
[peers.PGUS.relations.G]
attributes = ["id: int", "can: int", "nam: int"]
[peers.PBioSQL.relations.B]
attributes = ["id: int", "nam: int"]
[peers.PuBio.relations.U]
attributes = ["nam: int", "can: int"]
"""


def load(mappings: list[str], extra: str = ""):
    text = "mappings = [" + ", ".join(f"'{m}'" for m in mappings) + "]\n" + SCHEMA + extra
    return parse_cdss(text, "cdss.toml")


def rules_text(compiled, prefix: str) -> list[str]:
    return [format_rule(r) for r in compiled.program.rules if r.name == prefix or r.name.startswith(prefix + "_")]


def test_running_example_program_by_hand():
    compiled = compile_cdss(load_cdss(BIO))
    text = {r.name: format_rule(r) for r in compiled.program.rules}
    assert text["l_B"] == "l_B: B_o(id, nam) :- B_l(id, nam)."
    # PBioSQL has a ranked-trust threshold: its imports are also gated by B_x (set by exchange)
    assert text["t_B"] == "t_B: B_o(id, nam) :- B_t(id, nam), not B_r(id, nam), not B_x(id, nam)."
    assert text["t_U"] == "t_U: U_o(nam, can) :- U_t(nam, can), not U_r(nam, can)."  # no threshold
    assert text["m1"] == "m1: P_m1(i, c, n) :- G_o(i, c, n)."
    assert text["m1_1_i"] == "m1_1_i: B_i(i, n) :- P_m1(i, c, n)."
    # PBioSQL distrusts B from PGUS with nam >= 3: the trusted step needs n < 3
    assert text["m1_1"] == "m1_1: B_t(i, n) :- P_m1(i, c, n), n < 3."
    assert text["m2_1"] == "m2_1: U_t(n, c) :- P_m2(i, c, n)."  # PuBio has no conditions
    assert text["m3"] == "m3: P_m3(i, n) :- B_o(i, n)."
    assert text["m3_1_i"] == "m3_1_i: U_i(n, f_m3_c(n)) :- P_m3(i, n)."  # Example 10 of the thesis
    assert text["m3_1"] == "m3_1: U_t(n, f_m3_c(n)) :- P_m3(i, n)."
    assert text["m4"] == "m4: P_m4(i, c, n) :- B_o(i, c), U_o(n, c)."
    # distrust through m4 when nam != 2 (the "trust from PuBio" rule changes nothing)
    assert text["m4_1"] == "m4_1: B_t(i, n) :- P_m4(i, c, n), n = 2."
    # 3 relations x (l, t) + 4 mappings x (P, input, trusted)
    assert len(compiled.program.rules) == 3 * 2 + 4 * 3
    decls = {d.relation: d.columns for d in compiled.program.decls}
    assert decls["P_m4"] == (("i", "int"), ("c", "int"), ("n", "int"))
    assert decls["U_r"] == (("nam", "int"), ("can", "int"))
    assert set(decls) == {f"{r}_{k}" for r in "GBU" for k in "lrito"} | {f"P_m{i}" for i in range(1, 5)} | {"B_x"}
    assert compiled.origins["m4_1"] == RuleOrigin("trusted", RelationRef("PBioSQL", "B"), "m4", 1)
    assert compiled.origins["m4"] == RuleOrigin("mapping", mapping="m4")
    assert compiled.origins["l_U"] == RuleOrigin("local", RelationRef("PuBio", "U"))
    assert compiled.output_relations()[RelationRef("PGUS", "G")] == "G_o"


def test_printed_program_parses_back_and_validates():
    compiled = compile_cdss(load_cdss(BIO), "PBioSQL")
    assert parse_program(compiled.text) == compiled.program
    assert parse_program(format_program(compiled.program)) == compiled.program
    analysis = analyze(parse_program(compiled.text))
    assert {"G_l", "B_l", "U_l", "B_r", "G_t"} <= analysis.edb  # G has no incoming mapping
    assert "% mapping m3: B(i, n) -> exists c. U(n, c)" in compiled.text.splitlines()


def test_ranked_trust_weights_from_the_viewpoint():
    compiled = compile_cdss(load_cdss(BIO), "PBioSQL")
    weights = {r.name: r.weight for r in compiled.program.rules}
    assert weights["l_G"] == "5" and weights["l_U"] == "1" and weights["l_B"] == "0"
    assert weights["m4"] == "2"
    assert weights["m1"] is None and weights["m4_1"] is None and weights["t_B"] is None
    assert all(w is None for w in (r.weight for r in compile_cdss(load_cdss(BIO)).program.rules))


def test_unknown_viewpoint():
    with pytest.raises(CdssError, match="unknown peer 'PX' \\(peers: PGUS, PBioSQL, PuBio\\)"):
        compile_cdss(load_cdss(BIO), "PX")


def test_shared_skolem_terms_across_head_atoms():
    c = load(["m: G(i, c, n) -> exists z, w. B(i, z), U(z, w)"])
    compiled = compile_cdss(c)
    b = compiled.program.rule("m_1_i").head
    u = compiled.program.rule("m_2_i").head
    z = SkolemTerm("f_m_z", (Var("i"),))  # frontier: body variables used in the head = i only
    assert b.args == (Var("i"), z)
    assert u.args == (z, SkolemTerm("f_m_w", (Var("i"),)))  # a separate function per variable
    assert compiled.program.rule("m").head.args == (Var("i"), Var("c"), Var("n"))  # all body vars
    assert compiled.origins["m_2"] == RuleOrigin("trusted", RelationRef("PuBio", "U"), "m", 2)


def test_anonymous_and_constant_body_terms():
    compiled = compile_cdss(load(['m: G(i, _, 7) -> B(i, 7)']))
    assert format_rule(compiled.program.rule("m")) == "m: P_m(i, anon1) :- G_o(i, anon1, 7)."
    assert format_rule(compiled.program.rule("m_1_i")) == "m_1_i: B_i(i, 7) :- P_m(i, anon1)."


TRUST = """
[[peers.PBioSQL.trust]]
action = "distrust"
relation = "B"
{body}
"""


def trust(body: str, mappings: list[str] | None = None, peer: str = "PBioSQL"):
    extra = TRUST.replace("PBioSQL", peer).format(body=body)
    return compile_cdss(load(mappings or ["m1: G(i, c, n) -> B(i, n)"], extra))


def test_distrust_of_a_conjunction_is_a_disjoint_disjunction():
    compiled = trust('when = "nam >= 3 and id != 7"')
    assert rules_text(compiled, "m1_1")[1:] == [
        "m1_1: B_t(i, n) :- P_m1(i, c, n), n < 3.",
        "m1_1_alt2: B_t(i, n) :- P_m1(i, c, n), n >= 3, i = 7.",
    ]


def test_distrust_without_condition_removes_the_trusted_rule():
    compiled = trust('from = ["PGUS"]')
    assert [r.name for r in compiled.program.rules if r.head.relation == "B_t"] == []
    assert "% m1_1: never trusted, so no rule derives B_t through m1" in compiled.text
    assert "m1_1_i" in compiled.origins  # still imported into B_i


def test_conditions_that_do_not_match_the_mapping_are_ignored():
    compiled = trust('from = ["PuBio"]\nwhen = "nam >= 3"')
    assert rules_text(compiled, "m1_1")[1:] == ["m1_1: B_t(i, n) :- P_m1(i, c, n)."]
    compiled = trust('mappings = ["m4"]', ["m1: G(i, c, n) -> B(i, n)", "m4: B(i, c), U(n, c) -> B(i, n)"])
    assert [r.name for r in compiled.program.rules if r.head.relation == "B_t"] == ["m1_1"]


def test_default_distrust_with_trust_rules():
    extra = """
[peers.PBioSQL]
trust_default = "distrust"
[[peers.PBioSQL.trust]]
action = "trust"
relation = "B"
when = "nam = 2"
[[peers.PBioSQL.trust]]
action = "trust"
relation = "B"
when = "id = 1"
[[peers.PBioSQL.trust]]
action = "distrust"
relation = "B"
when = "id > 5"
"""
    compiled = compile_cdss(load(["m1: G(i, c, n) -> B(i, n)"], extra))
    # (nam = 2 or nam != 2 and id = 1) and not id > 5, kept disjoint
    assert rules_text(compiled, "m1_1")[1:] == [
        "m1_1: B_t(i, n) :- P_m1(i, c, n), n = 2, i <= 5.",
        "m1_1_alt2: B_t(i, n) :- P_m1(i, c, n), n != 2, i = 1, i <= 5.",
    ]


def test_conditions_on_constants_and_labeled_nulls_are_folded():
    # the head puts the constant 7 in nam: "distrust nam >= 3" always applies
    compiled = trust('when = "nam >= 3"', ["m6: G(i, c, n) -> B(i, 7)"])
    assert not [r for r in compiled.program.rules if r.head.relation == "B_t"]
    compiled = trust('when = "nam < 3"', ["m6: G(i, c, n) -> B(i, 7)"])
    assert rules_text(compiled, "m6_1")[1:] == ["m6_1: B_t(i, 7) :- P_m6(i, c, n)."]
    # can is a labeled null through m3: never ordered, so "not can >= 100" is not known: distrusted
    m3 = ["m3: B(i, n) -> exists c. U(n, c)"]
    extra = '\n[[peers.PuBio.trust]]\naction = "distrust"\nrelation = "U"\nwhen = "{}"\n'
    compiled = compile_cdss(load(m3, extra.format("can >= 100")))
    assert not [r for r in compiled.program.rules if r.head.relation == "U_t"]
    # ... but a null is different from every constant: "not can = 5" holds
    compiled = compile_cdss(load(m3, extra.format("can = 5")))
    assert rules_text(compiled, "m3_1")[1:] == ["m3_1: U_t(n, f_m3_c(n)) :- P_m3(i, n)."]
    with pytest.raises(CdssError, match="compares an existential value of mapping m3 with a value of the body"):
        compile_cdss(load(m3, extra.format("can = nam")))


def test_generated_name_collisions_are_reported():
    with pytest.raises(CdssError) as info:
        compile_cdss(load(["l_B: G(i, c, n) -> B(i, n)"]))
    assert "the compiled rule name l_B is generated twice" in str(info.value)
    assert str(info.value).startswith("cdss.toml:1:")
    extra = '\n[peers.PX.relations.B]\nattributes = ["id: int", "nam: int"]\n[peers.PZ.relations.PX_B]\nattributes = ["a: int"]\n'
    with pytest.raises(CdssError, match="relation PZ.PX_B compiles to relation PX_B_l, which relation PX.B"):
        compile_cdss(load([], extra))


def test_same_relation_name_at_two_peers_is_qualified():
    extra = '\n[peers.PX.relations.B]\nattributes = ["id: int", "nam: int"]\n'
    compiled = compile_cdss(load(["m1: G(i, c, n) -> PX.B(i, n), PBioSQL.B(i, c)"], extra))
    assert compiled.program.rule("m1_1_i").head.relation == "PX_B_i"
    assert compiled.program.rule("m1_2_i").head.relation == "PBioSQL_B_i"
    assert parse_program(compiled.text) == compiled.program
