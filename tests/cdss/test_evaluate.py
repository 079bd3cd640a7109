"""The running example evaluated end to end, against the dissertation's numbers (Examples 5, 6, 9).

Expected instances are worked out by hand from the thesis, not taken from the implementation:
with ΔG = +(1,2,3), +(3,5,2); ΔB = +(3,5); ΔU = +(2,5) and mappings m1–m4,

* m1 imports B(1,3) and B(3,2) from G; m2 imports U(3,2) and U(2,5);
* m4 joins B(3,5) with U(2,5) into B(3,2), then B(3,2) with U(3,2) into B(3,3);
* m3 gives every B name n the null U(n, f_m3_c(n)): n = 5, 2, 3 (U(3, c3) twice: B(1,3), B(3,3)).

Labeled nulls are written with the documented Skolem naming f_<mapping>_<variable>(frontier).
"""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pytest

from helpers.paths import BIO
from selp.cdss.compile import compile_cdss
from selp.cdss.config import load_cdss
from selp.cdss.errors import CdssError
from selp.cdss.evaluate import base_data_files, evaluate_cdss, is_certain, link_base_data
from selp.cdss.model import CDSS, TrustPolicy
from selp.errors import DataError
from selp.language import parse_program
from selp.language.validate import analyze
from selp.values import Skolem

DATA = BIO / "data"
IN_PROCESS = ["embedded", "reference"]  # the default engine and the oracle: the same answers


def null(n: int) -> Skolem:
    return Skolem("f_m3_c", (n,))


def no_trust(c: CDSS) -> CDSS:
    """The CDSS of Example 5: every peer trusts everything."""
    peers = tuple(dataclasses.replace(p, policy=TrustPolicy()) for p in c.peers)
    return dataclasses.replace(c, peers=peers)


def with_policy(c: CDSS, peer: str, policy: TrustPolicy) -> CDSS:
    peers = tuple(dataclasses.replace(p, policy=policy) if p.name == peer else p for p in c.peers)
    return dataclasses.replace(c, peers=peers)


G = {(1, 2, 3), (3, 5, 2)}
B_ALL = {(3, 5), (3, 2), (1, 3), (3, 3)}
U_ALL = {(2, 5), (3, 2), (5, null(5)), (2, null(2)), (3, null(3))}


def instances(result) -> dict[str, set]:
    return {f"{ref.name}": rows for ref, rows in result.instances.items()}


@pytest.mark.parametrize("engine", IN_PROCESS)
def test_example_5_update_translation(engine):
    res = evaluate_cdss(no_trust(load_cdss(BIO)), DATA, engine, with_nulls=True)
    try:
        assert instances(res) == {"G": G, "B": B_ALL, "U": U_ALL}
        rows = res.result.rows
        # provenance tables ([Kar09] ch. 4 encoding: P1 = {(3,5,2), (1,2,3)}; P4 over (i, c, n))
        assert rows("P_m1") == {(3, 5, 2), (1, 2, 3)}
        assert rows("P_m4") == {(3, 5, 2), (3, 2, 3)}
        assert rows("P_m3") == {(3, 5), (3, 2), (1, 3), (3, 3)}  # U(3, c3) has two mapping nodes
        assert rows("P_m2") == {(1, 2, 3), (3, 5, 2)}
        # U(2,5) is both local and imported: it is in U_i as well as U_l
        assert (2, 5) in rows("U_i") and rows("U_i") == rows("U_t")
    finally:
        res.close()


@pytest.mark.parametrize("engine", IN_PROCESS)
def test_certain_answers_drop_labeled_nulls(engine):
    res = evaluate_cdss(no_trust(load_cdss(BIO)), DATA, engine)
    try:
        assert instances(res) == {"G": G, "B": B_ALL, "U": {(2, 5), (3, 2)}}
        assert all(is_certain(r) for rows in res.instances.values() for r in rows)
    finally:
        res.close()


@pytest.mark.parametrize("engine", IN_PROCESS)
def test_certain_answers_of_queries_join_on_nulls(tmp_path, engine):
    # Example 5's queries at PBioSQL: ans(x, y) :- U(x, z), U(y, z) gives {(2,2), (3,3), (5,5)},
    # (5,5) through a join on the null c1 = f_m3_c(5); ans(x, y) :- U(x, y) gives {(2,5), (3,2)}
    c = no_trust(load_cdss(BIO))
    compiled = compile_cdss(c)
    text = compiled.text + "q1: ans1(x, y) :- U_o(x, z), U_o(y, z).\nq2: ans2(x, y) :- U_o(x, y).\n"
    link_base_data(base_data_files(c, compiled, DATA), tmp_path)
    from selp.engines.registry import get_engine

    result = get_engine(engine).run(analyze(parse_program(text)), tmp_path)
    certain = lambda rel: {r for r in result.rows(rel) if is_certain(r)}  # noqa: E731
    assert certain("ans1") == {(2, 2), (3, 3), (5, 5)}
    assert certain("ans2") == {(2, 5), (3, 2)}


def copy_example(tmp_path: Path) -> Path:
    target = tmp_path / "bio"
    shutil.copytree(BIO, target)
    return target


@pytest.mark.parametrize("engine", IN_PROCESS)
def test_curation_rejection_removes_consequences(tmp_path, engine):
    # Example 5: had ΔB also held −(3,2), B would miss (3,2) and (3,3), and U would miss (2, c2)
    d = copy_example(tmp_path)
    (d / "data" / "PBioSQL" / "B.rejections.csv").write_text("id,nam\n3,2\n")
    res = evaluate_cdss(no_trust(load_cdss(d)), d / "data", engine, with_nulls=True)
    try:
        got = instances(res)
        assert got["B"] == {(3, 5), (1, 3)}
        assert got["U"] == {(2, 5), (3, 2), (5, null(5)), (3, null(3))}
        assert res.result.rows("B_i") >= {(3, 2)}  # still imported, only rejected
    finally:
        res.close()


@pytest.mark.parametrize("engine", IN_PROCESS)
def test_example_6_trust_conditions(engine):
    # PBioSQL distrusts B from PGUS with n >= 3 (rejects B(1,3)) and B through m4 with n != 2
    # (rejects B(3,3)); as a consequence PuBio does not get U(3, c3)
    res = evaluate_cdss(load_cdss(BIO), DATA, engine, with_nulls=True)
    try:
        got = instances(res)
        assert got["G"] == G
        assert got["B"] == {(3, 5), (3, 2)}
        assert got["U"] == {(2, 5), (3, 2), (5, null(5)), (2, null(2))}
        assert res.result.rows("B_i") == {(3, 2), (1, 3), (3, 3)}  # imported, partly distrusted
        assert res.result.rows("B_t") == {(3, 2)}
    finally:
        res.close()


@pytest.mark.parametrize("engine", IN_PROCESS)
def test_distrusting_a_source_keeps_tuples_with_another_derivation(engine):
    # Example 9, Boolean: PBioSQL distrusts PGUS's data (p3) but trusts p1, p2: B(3,2) stays
    # (through m4 from B(3,5), U(2,5)); B(1,3) comes only from GUS and goes. Trust is the owner's:
    # U(3,2) came to PuBio from GUS but PuBio trusts it, so B(3,3) through m4 stays.
    from selp.cdss.model import TrustRule

    c = no_trust(load_cdss(BIO))
    c = with_policy(c, "PBioSQL", TrustPolicy(rules=(TrustRule("distrust", "B", ("PGUS",)),)))
    res = evaluate_cdss(c, DATA, engine, with_nulls=True)
    try:
        assert instances(res)["B"] == {(3, 5), (3, 2), (3, 3)}
        assert (3, null(3)) in instances(res)["U"]  # lost through B(1,3), kept through B(3,3)
    finally:
        res.close()


@pytest.mark.parametrize("engine", IN_PROCESS)
def test_default_distrust_accepts_only_what_is_trusted(engine):
    from selp.cdss.model import TrustRule

    c = no_trust(load_cdss(BIO))
    policy = TrustPolicy("distrust", (TrustRule("trust", "B", ("PuBio",)),))
    res = evaluate_cdss(with_policy(c, "PBioSQL", policy), DATA, engine, with_nulls=True)
    try:
        # only m4 reads PuBio: B(3,2) from B(3,5),U(2,5), then B(3,3) from B(3,2),U(3,2)
        assert instances(res)["B"] == {(3, 5), (3, 2), (3, 3)}
        assert instances(res)["U"] == {(2, 5), (3, 2), (5, null(5)), (2, null(2)), (3, null(3))}
    finally:
        res.close()


@pytest.mark.parametrize("engine", IN_PROCESS)
def test_ranked_trust_orders_derivations_by_cost(tmp_path, engine):
    # Example 9, ranked: p1 = B(3,5) costs 0, p2 = U(2,5) 1, p3 = G(3,5,2) 5, m4 adds 2.
    # B(3,2): through m4 from p1, p2: 0 + 1 + 2 = 3; through m1 from p3: 5;
    # through m4 from p1 and U(2,5) via m2 from p3: 0 + 5 + 2 = 7.
    from selp.topk.api import topk
    from selp.topk.trees import answers

    c = load_cdss(BIO)
    compiled = compile_cdss(c, "PBioSQL")
    link_base_data(base_data_files(c, compiled, DATA), tmp_path)
    table = topk(analyze(compiled.program), str(tmp_path), "B_o(3, 2)", 3, "cost", engine)
    (answer,) = answers(table)
    assert [w for w, _ in answer.trees] == [3, 5, 7]
    best = answer.trees[0][1]
    assert best.children[0].rule == "m4_1" and best.children[0].children[0].rule == "m4"


@pytest.mark.parametrize("engine", IN_PROCESS)
def test_base_data_errors_are_located(tmp_path, engine):
    d = copy_example(tmp_path)
    (d / "data" / "PNobody").mkdir()
    with pytest.raises(CdssError, match="not a peer's data directory"):
        evaluate_cdss(load_cdss(d), d / "data", engine)
    (d / "data" / "PNobody").rmdir()
    (d / "data" / "PGUS" / "H.csv").write_text("a\n1\n")
    with pytest.raises(CdssError) as info:
        evaluate_cdss(load_cdss(d), d / "data", engine)
    assert str(info.value).startswith(f"{d}/data/PGUS/H.csv: expected <relation>.csv")
    (d / "data" / "PGUS" / "H.csv").unlink()
    (d / "data" / "PGUS" / "G.csv").write_text("id,can,nam\n1,2,3\n3,five,2\n")
    with pytest.raises(DataError) as info:
        evaluate_cdss(load_cdss(d), d / "data", engine)
    assert str(info.value).startswith(f"{d}/data/PGUS/G.csv:3")  # the user's file, not the link
    with pytest.raises(CdssError, match="base data directory not found"):
        evaluate_cdss(load_cdss(d), d / "nothing", engine)


@pytest.mark.parametrize("engine", IN_PROCESS)
def test_no_data_gives_empty_instances(engine):
    res = evaluate_cdss(load_cdss(BIO), None, engine)
    assert all(rows == set() for rows in res.instances.values())
    res.close()


@pytest.mark.spark
@pytest.mark.parametrize("scenario", ["example5", "trust", "curation"])
def test_spark_engine_agrees_with_local(spark, tmp_path, scenario):
    d = copy_example(tmp_path)
    c = load_cdss(d)
    if scenario != "trust":
        c = no_trust(c)
    if scenario == "curation":
        (d / "data" / "PBioSQL" / "B.rejections.csv").write_text("id,nam\n3,2\n")
    local = evaluate_cdss(c, d / "data", "local", with_nulls=True)
    remote = evaluate_cdss(c, d / "data", "spark", spark=spark, with_nulls=True)
    try:
        assert remote.instances == local.instances
        for rel in ("P_m1", "P_m3", "P_m4", "B_i", "U_t"):
            assert remote.result.rows(rel) == local.result.rows(rel)
        expected_b = {"example5": B_ALL, "trust": {(3, 5), (3, 2)}, "curation": {(3, 5), (1, 3)}}[scenario]
        assert instances(remote)["B"] == expected_b
        if scenario == "example5":
            assert instances(remote)["U"] == U_ALL
    finally:
        local.close()
        remote.close()
