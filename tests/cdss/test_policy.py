"""Update policies of bidirectional mappings, PropagatePeerDeletions with and without side
effects ([Kar09] §5.3.2-5.3.3, Examples 18 and 19), on the engines.

Expected instances are the dissertation's (Example 18's tables and Example 19's), not the
implementation's output: mappings m1: *R(x,y), S(x,z,w) <-> T(x,y,z), *V(w,x) and
m2: *T(x,y,z) <-> *U(x,y,z); local R(1,1), R(3,2), S(1,1,4), S(1,2,4), V(5,3), U(3,2,3).
"""

from __future__ import annotations

import pytest

from helpers.paths import BIDIR, POLICY
from selp.cdss.compile import compile_cdss
from selp.cdss.config import load_cdss
from selp.cdss.errors import CdssError
from selp.cdss.model import RelationRef
from selp.cdss.policy import policy_program, propagate_peer_deletions, recompute
from selp.language.printer import format_rule

IN_PROCESS = ["embedded", "reference"]
LOCAL = {"R": {(1, 1), (3, 2)}, "S": {(1, 1, 4), (1, 2, 4)}, "V": {(5, 3)}, "U": {(3, 2, 3)}}
T = RelationRef("PT", "T")
EXAMPLE_18_BEFORE = {
    "R": {(1, 1), (3, 2)},
    "S": {(1, 1, 4), (1, 2, 4), (3, 3, 5)},
    "T": {(1, 1, 1), (1, 1, 2), (3, 2, 3)},
    "V": {(4, 1), (5, 3)},
    "U": {(1, 1, 1), (1, 1, 2), (3, 2, 3)},
}
EXAMPLE_18_AFTER = {"R": set(), "S": {(1, 1, 4), (1, 2, 4)}, "T": set(), "V": set(), "U": set()}
EXAMPLE_19_AFTER = {
    "R": {(1, 1)},
    "S": {(1, 1, 4), (1, 2, 4)},
    "T": {(1, 1, 1), (1, 1, 2)},
    "V": {(4, 1)},
    "U": {(1, 1, 1), (1, 1, 2)},
}


def example(engine: str, spark=None):
    compiled = compile_cdss(load_cdss(POLICY))
    base = {compiled.names.relation(r.ref, k): set() for r in compiled.cdss.relations() for k in ("l", "r")}
    for name, rows in LOCAL.items():
        base[f"{name}_l"] = set(rows)
    return compiled, recompute(compiled, base, engine, spark)


def instance(compiled, state) -> dict[str, set]:
    return {ref.name: state[rel] for ref, rel in compiled.output_relations().items()}


def named(rows) -> dict[str, set]:
    return {ref.name: set(v) for ref, v in rows.items() if v}


@pytest.mark.parametrize("engine", IN_PROCESS)
def test_example_18_propagate_peer_deletions(engine):
    compiled, state = example(engine)
    assert instance(compiled, state) == EXAMPLE_18_BEFORE
    p = propagate_peer_deletions(compiled, state, {T: {(1, 1, 1), (3, 2, 3)}}, engine)
    assert named(p.policy) == {
        "R": {(1, 1), (3, 2)}, "T": {(1, 1, 1), (3, 2, 3)}, "U": {(1, 1, 1), (3, 2, 3)}, "V": {(4, 1), (5, 3)},
    }
    assert named(p.applied) == {"R": {(1, 1), (3, 2)}, "V": {(5, 3)}, "U": {(3, 2, 3)}}
    assert instance(compiled, p.state) == EXAMPLE_18_AFTER
    # the side effects the dissertation names
    assert named(p.side_effects) == {"S": {(3, 3, 5)}, "T": {(1, 1, 2)}, "U": {(1, 1, 2)}}
    assert not any(p.kept_back.values()) and not any(p.not_performed.values())


@pytest.mark.parametrize("engine", IN_PROCESS)
def test_example_19_without_side_effects_on_t(engine):
    compiled, state = example(engine)
    p = propagate_peer_deletions(compiled, state, {T: {(1, 1, 1), (3, 2, 3)}}, engine, avoid=["PT"])
    # T(1,1,2) would be a side effect on T; its lineage is {R(1,1), S(1,2,4)}: R(1,1) is kept back
    assert named(p.avoided) == {"T": {(1, 1, 2)}}
    assert named(p.kept_back) == {"R": {(1, 1)}}
    assert p.reasons == {(RelationRef("PR", "R"), (1, 1)): [(T, (1, 1, 2))]}
    assert named(p.applied) == {"R": {(3, 2)}, "V": {(5, 3)}, "U": {(3, 2, 3)}}
    assert instance(compiled, p.state) == EXAMPLE_19_AFTER
    assert named(p.not_performed) == {"T": {(1, 1, 1)}}
    assert named(p.side_effects) == {"S": {(3, 3, 5)}}  # PR tolerates them


def test_policy_program_is_the_dissertations_for_m2():
    # Example 16's m2 with the policy of §5.3.2: rules 1-3 of the text (rule 2 and 3 join the
    # whole match, see selp.cdss.policy), and the collection rules 4-6
    rules = {format_rule(r) for r in policy_program(compile_cdss(load_cdss(BIDIR))).rules}
    assert "m2_bwd_policy_1_2: S_del(i, c) :- U_del(n, c), B_o(i, n), S_o(i, c)." in rules
    assert "m2_fwd_policy_1_1: U_del(n, c) :- B_del(i, n), S_o(i, c), U_o(n, c)." in rules
    assert "m2_fwd_policy_2_1: U_del(n, c) :- S_del(i, c), B_o(i, n), U_o(n, c)." in rules
    assert "S_ldel: S_ldel(x0, x1) :- S_del(x0, x1), S_l(x0, x1)." in rules
    # m1 has no policy: no rule deletes through it
    assert not any(r.startswith("m1_") for r in rules)


def test_deleting_what_is_not_there_is_refused():
    compiled, state = example("embedded")
    with pytest.raises(CdssError, match=r"cannot delete T\(9, 9, 9\): not in the instance"):
        propagate_peer_deletions(compiled, state, {T: {(9, 9, 9)}}, "embedded")


@pytest.mark.parametrize("engine", IN_PROCESS)
def test_rejections_and_trust_are_kept_by_the_new_state(engine):
    # a peer's rejection survives a policy deletion: the new state is recomputed with R_r
    compiled, state = example(engine)
    base = {rel: rows for rel, rows in state.items() if rel.endswith(("_l", "_r"))}
    base["U_r"] = {(1, 1, 2)}  # PU's curator rejects its copy of T(1,1,2)
    state = recompute(compiled, base, engine)
    assert instance(compiled, state)["U"] == {(1, 1, 1), (3, 2, 3)}
    p = propagate_peer_deletions(compiled, state, {T: {(3, 2, 3)}}, engine)
    assert instance(compiled, p.state)["U"] == {(1, 1, 1)}
    assert p.state["U_r"] == {(1, 1, 2)}


@pytest.mark.spark
def test_spark_gives_examples_18_and_19(spark):
    compiled, state = example("spark", spark)
    assert instance(compiled, state) == EXAMPLE_18_BEFORE
    p = propagate_peer_deletions(compiled, state, {T: {(1, 1, 1), (3, 2, 3)}}, "spark", spark=spark)
    assert instance(compiled, p.state) == EXAMPLE_18_AFTER
    p = propagate_peer_deletions(compiled, state, {T: {(1, 1, 1), (3, 2, 3)}}, "spark", avoid=["PT"], spark=spark)
    assert instance(compiled, p.state) == EXAMPLE_19_AFTER
    assert named(p.kept_back) == {"R": {(1, 1)}}
