"""Derivation trees and their brute-force enumeration: the paper's trade example worked by hand,
and on random programs an independent check that every enumerated tree is a derivation and that
none is missing (tree counts per size computed by dynamic programming over naive rule instances)."""

from __future__ import annotations


import pytest
from hypothesis import HealthCheck, given, settings

from helpers.budget import examples
from helpers.paths import TRADE
from helpers.randprog import _unify, instance_head, naive_fixpoint, programs_with_databases
from selp.database import load_database
from selp.language import parse_program, parse_program_file
from selp.language.ast import Atom
from selp.language.validate import analyze
from selp.reference.derivations import DerivationTree, enumerate_trees, leaf, node



@pytest.fixture(scope="module")
def trade():
    analysis = analyze(parse_program_file(TRADE / "trade.dl"))
    return analysis, load_database(analysis, TRADE / "db").facts


def dw(a: str, b: str, rule: str, *children: DerivationTree) -> DerivationTree:
    return node(rule, "dealsWith", (a, b), *children)


# the paper's Figure 1 (Example 2.2), over the data of examples/trade/db
TAU1 = dw("Cuba", "France", "r2", leaf("imports", "Cuba", "wine"), leaf("exports", "France", "wine"))
TAU2 = dw(
    "Cuba", "France", "r1",
    dw("France", "Cuba", "r2", leaf("imports", "France", "tobacco"), leaf("exports", "Cuba", "tobacco")),
)
# r3 over dealsWith(Cuba, Mexico) (by r1 over r2) and the EDB copy dealsWith(Mexico, France) (r0):
# weight 0.7 * 0.8 * 0.5 = 0.28 as in Example 3.9, with r0 weighing 1; 4 rule occurrences
TAU3 = dw(
    "Cuba", "France", "r3",
    dw("Cuba", "Mexico", "r1",
       dw("Mexico", "Cuba", "r2", leaf("imports", "Mexico", "tobacco"), leaf("exports", "Cuba", "tobacco"))),
    dw("Mexico", "France", "r0", leaf("dealsWith_edb", "Mexico", "France")),
)
CF = ("dealsWith", ("Cuba", "France"))


# --- the tree type --------------------------------------------------------------------------


def test_size_counts_rule_occurrences():
    assert leaf("exports", "Cuba", "tobacco").size() == 0
    assert (TAU1.size(), TAU2.size(), TAU3.size()) == (1, 2, 4)


def test_facts_and_rules_in_preorder():
    assert list(TAU2.facts()) == [
        ("dealsWith", ("Cuba", "France")),
        ("dealsWith", ("France", "Cuba")),
        ("imports", ("France", "tobacco")),
        ("exports", ("Cuba", "tobacco")),
    ]
    assert list(TAU3.rules()) == ["r3", "r1", "r2", "r0"]
    assert len(list(TAU3.nodes())) == 7


def test_render():
    assert str(TAU3) == (
        'dealsWith("Cuba","France")  [r3]\n'
        '├─ dealsWith("Cuba","Mexico")  [r1]\n'
        '│  └─ dealsWith("Mexico","Cuba")  [r2]\n'
        '│     ├─ imports("Mexico","tobacco")\n'
        '│     └─ exports("Cuba","tobacco")\n'
        '└─ dealsWith("Mexico","France")  [r0]\n'
        '   └─ dealsWith_edb("Mexico","France")'
    )
    assert leaf("n", 3, "x").render() == 'n(3,"x")'


def test_trees_compare_and_hash_structurally():
    again = dw("Cuba", "France", "r2", leaf("imports", "Cuba", "wine"), leaf("exports", "France", "wine"))
    assert again == TAU1 and hash(again) == hash(TAU1)
    assert TAU1 != dw("Cuba", "France", "r3", *TAU1.children)
    assert len({TAU1, again, TAU2}) == 2


def test_leaf_cannot_have_children():
    with pytest.raises(ValueError):
        DerivationTree("e", (1,), None, (leaf("e", 2),))


# --- the trade example by hand --------------------------------------------------------------


def test_trees_of_size_one(trade):
    trees = enumerate_trees(*trade, 1)
    # r2: imports(a, c), exports(b, c) joins on wine (Cuba/Mexico -> France) and tobacco
    # (Mexico/France -> Cuba); r0 copies dealsWith_edb(Mexico, France); r1 and r3 need IDB children
    assert trees == {
        CF: {TAU1},
        ("dealsWith", ("Mexico", "France")): {
            dw("Mexico", "France", "r2", leaf("imports", "Mexico", "wine"), leaf("exports", "France", "wine")),
            dw("Mexico", "France", "r0", leaf("dealsWith_edb", "Mexico", "France")),
        },
        ("dealsWith", ("Mexico", "Cuba")): {
            dw("Mexico", "Cuba", "r2", leaf("imports", "Mexico", "tobacco"), leaf("exports", "Cuba", "tobacco")),
        },
        ("dealsWith", ("France", "Cuba")): {TAU2.children[0]},
    }


def test_trees_of_cuba_france_up_to_three_rules(trade):
    trees = enumerate_trees(*trade, 3)[CF]
    # size 1: tau1; size 2: tau2; size 3: r1 over r1 over tau1. No r3 tree: it needs
    # dealsWith(Cuba, f) and dealsWith(f, France) of size 1, and only f = France has the first,
    # while dealsWith(France, France) has no tree of size 1.
    r1r1 = dw("Cuba", "France", "r1", dw("France", "Cuba", "r1", TAU1))
    assert trees == {TAU1, TAU2, r1r1}


def test_tau3_needs_four_rules(trade):
    assert TAU3 not in enumerate_trees(*trade, 3)[CF]
    four = enumerate_trees(*trade, 4)[CF]
    assert TAU3 in four
    # the same r3 tree with dealsWith(Mexico, France) derived by r2 instead of copied by r0
    other = dw("Cuba", "France", "r3", TAU3.children[0],
               dw("Mexico", "France", "r2", leaf("imports", "Mexico", "wine"), leaf("exports", "France", "wine")))
    assert other in four
    assert len(four) == 6  # the 3 above, r1 r1 r1 over tau2, and the two r3 trees


def test_counts_grow_with_max_rules(trade):
    # by hand: 5 trees of size 1; size 2 adds r1 over each of them (5); size 3 adds r1 over each
    # size-2 tree (5) and r3 over pairs of size-1 trees dealsWith(a, f), dealsWith(f, b) (5)
    totals = [sum(len(ts) for ts in enumerate_trees(*trade, n).values()) for n in range(6)]
    assert totals[:4] == [0, 5, 10, 20]
    assert all(a < b for a, b in zip(totals[1:], totals[2:]))
    # facts reached: 4, then dealsWith(France, Mexico) and (Cuba, Mexico), then the loops (Cuba, Cuba)
    # and (France, France), then (Mexico, Mexico): all 9 facts of the fixpoint
    assert [len(enumerate_trees(*trade, n)) for n in range(1, 6)] == [4, 6, 8, 9, 9]


def test_larger_bounds_keep_the_smaller_trees(trade):
    three, five = enumerate_trees(*trade, 3), enumerate_trees(*trade, 5)
    for fact, ts in five.items():
        assert {t for t in ts if t.size() <= 3} == three.get(fact, set())
        assert all(t.size() <= 5 for t in ts)


def test_every_trade_tree_is_a_derivation(trade):
    analysis, edb = trade
    check_all(analysis, edb, enumerate_trees(analysis, edb, 5))


# --- negation, comparisons and Skolem heads -------------------------------------------------


def test_negated_atoms_and_comparisons_are_checked_but_not_children():
    analysis = analyze(parse_program(
        """
        reach(x, y) :- edge(x, y), x != y.
        reach(x, z) :- reach(x, y), edge(y, z), x != z.
        unreachable(x, y) :- node(x), node(y), not reach(x, y), x < y.
        """
    ))
    edb = {"edge": {(1, 2), (2, 3), (3, 3)}, "node": {(1,), (2,), (3,), (4,)}}
    trees = enumerate_trees(analysis, edb, 3)
    # (1, 3) and (2, 3) are reachable, so only pairs with 4 are unreachable (x < y)
    assert {f for f in trees if f[0] == "unreachable"} == {("unreachable", (x, 4)) for x in (1, 2, 3)}
    (t,) = trees[("unreachable", (1, 4))]
    assert t == node("r3", "unreachable", (1, 4), leaf("node", 1), leaf("node", 4))
    # edge(3, 3) gives no reach(3, 3): the comparison is checked. reach(1, 3) goes through 2, and
    # then around the loop edge(3, 3) as often as the bound allows
    assert ("reach", (3, 3)) not in trees
    r12 = node("r1", "reach", (1, 2), leaf("edge", 1, 2))
    r13 = node("r2", "reach", (1, 3), r12, leaf("edge", 2, 3))
    assert trees[("reach", (1, 2))] == {r12}
    assert trees[("reach", (1, 3))] == {r13, node("r2", "reach", (1, 3), r13, leaf("edge", 3, 3))}
    check_all(analysis, edb, trees)


def test_skolem_heads_and_repeated_body_facts():
    analysis = analyze(parse_program("owner(x, f(x)) :- item(x).\npair(x, x) :- item(x), item(x).\n"))
    trees = enumerate_trees(analysis, {"item": {("a",)}}, 1)
    from selp.values import Skolem

    assert trees[("owner", ("a", Skolem("f", ("a",))))] == {
        node("r1", "owner", ("a", Skolem("f", ("a",))), leaf("item", "a"))
    }
    # the same EDB fact appears once per body atom
    assert trees[("pair", ("a", "a"))] == {node("r2", "pair", ("a", "a"), leaf("item", "a"), leaf("item", "a"))}


def test_zero_bound_gives_nothing(trade):
    assert enumerate_trees(*trade, 0) == {}


# --- independent checks ---------------------------------------------------------------------


def check_tree(t: DerivationTree, analysis, all_facts) -> None:
    """Every node is an EDB fact of the database or an instance of its rule, by brute force."""
    if t.rule is None:
        assert t.relation in analysis.edb, t
        assert t.values in all_facts.get(t.relation, set()), t
        return
    rule = analysis.program.rule(t.rule)
    assert rule.head.relation == t.relation
    positives = [b for b in rule.body if isinstance(b, Atom) and not b.negated]
    assert [c.relation for c in t.children] == [a.relation for a in positives]
    env: dict | None = {}
    for a, c in zip(positives, t.children):
        env = _unify(a.args, c.values, env)
        assert env is not None, f"{c.label()} is not an instance of {a} in\n{t}"
    # assignments bound, comparisons true, negated atoms false, and this very head
    assert instance_head(rule, env, all_facts) == t.values
    for c in t.children:
        check_tree(c, analysis, all_facts)


def check_all(analysis, edb, trees) -> None:
    all_facts = {**{r: set(edb.get(r, ())) for r in analysis.edb}, **naive_fixpoint(analysis, edb)}
    for (rel, values), ts in trees.items():
        assert values in all_facts[rel]
        for t in ts:
            assert t.fact == (rel, values)
            check_tree(t, analysis, all_facts)


def naive_instances(analysis, all_facts) -> set[tuple]:
    """``(rule name, head values, ((rel, values), ...))`` for every rule instance, by brute force."""
    out = set()
    for rule in analysis.program.rules:
        positives = [b for b in rule.body if isinstance(b, Atom) and not b.negated]
        partial = [({}, ())]
        for a in positives:
            partial = [
                (e2, body + ((a.relation, f),))
                for e, body in partial
                for f in all_facts.get(a.relation, ())
                if (e2 := _unify(a.args, f, e)) is not None
            ]
        for env, body in partial:
            head = instance_head(rule, env, all_facts)
            if head is not None:
                out.add((rule.name, head, body))
    return out


def tree_counts(analysis, insts, max_size: int) -> dict[tuple, list[int]]:
    """counts[fact][s] = number of derivation trees of an IDB fact with exactly s rule occurrences:
    a rule instance contributes the product of its children's counts over every split of s - 1."""
    counts: dict[tuple, list[int]] = {}

    def child(f, s: int) -> int:
        if f[0] in analysis.edb:
            return 1 if s == 0 else 0
        return counts.get(f, [0] * (max_size + 1))[s]

    for s in range(1, max_size + 1):  # trees of size s only use children of size < s
        for rule, head, body in insts:
            ways = [1] + [0] * (s - 1)  # ways[k]: children so far with total size k
            for f in body:
                ways = [sum(ways[k - j] * child(f, j) for j in range(k + 1)) for k in range(s)]
            fact = (analysis.program.rule(rule).head.relation, head)
            counts.setdefault(fact, [0] * (max_size + 1))[s] += ways[s - 1]
    return counts


SETTINGS = settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(programs_with_databases(max_idb=3))
def test_enumeration_is_sound_and_complete_on_random_programs(case):
    text, edb = case
    analysis = analyze(parse_program(text))
    fixpoint = naive_fixpoint(analysis, edb)
    all_facts = {**{r: set(edb.get(r, ())) for r in analysis.edb}, **fixpoint}
    insts = naive_instances(analysis, all_facts)
    counts = tree_counts(analysis, insts, 3)
    # the largest bound up to 3 that keeps the enumeration small (dense random data explodes)
    bound = max([n for n in (1, 2, 3) if sum(sum(c[: n + 1]) for c in counts.values()) <= 3000] or [0])
    trees = enumerate_trees(analysis, edb, bound)
    check_all(analysis, edb, trees)
    expected = {f: sum(c[: bound + 1]) for f, c in counts.items() if sum(c[: bound + 1])}
    assert {f: len(ts) for f, ts in trees.items()} == expected
    for ts in trees.values():
        assert all(1 <= t.size() <= bound for t in ts)


@SETTINGS
@given(programs_with_databases(max_idb=3))
def test_every_fixpoint_fact_has_a_tree(case):
    """Derivability: the facts with some tree are exactly the fixpoint (sizes via shortest trees)."""
    text, edb = case
    analysis = analyze(parse_program(text))
    fixpoint = naive_fixpoint(analysis, edb)
    all_facts = {**{r: set(edb.get(r, ())) for r in analysis.edb}, **fixpoint}
    insts = naive_instances(analysis, all_facts)
    # smallest tree size per fact, Bellman-Ford style
    best: dict[tuple, int] = {}
    changed = True
    while changed:
        changed = False
        for rule, head, body in insts:
            sizes = [0 if f[0] in analysis.edb else best.get(f) for f in body]
            if None in sizes:
                continue
            fact = (analysis.program.rule(rule).head.relation, head)
            s = 1 + sum(sizes)  # type: ignore[arg-type]
            if s < best.get(fact, s + 1):
                best[fact] = s
                changed = True
    assert set(best) == {(r, v) for r, vs in fixpoint.items() for v in vs}
    small = [f for f, s in best.items() if s <= 2]
    trees = enumerate_trees(analysis, edb, 2)
    assert set(trees) == set(small)
    for f in small:
        assert min(t.size() for t in trees[f]) == best[f]
