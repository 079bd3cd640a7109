"""The reference matcher (Definition 3.3): hand-made trees, the paper's Example 3.11, and a
property test against a literal reading of the definition (all node mappings, paths as edge sets,
pairwise disjoint)."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from helpers.budget import examples
from helpers.paths import TRADE
from selp.database import load_database
from selp.language import parse_program_file
from selp.language.pattern import WILDCARD, And, Not, Or, PatternNode, TreePattern
from selp.language.pattern_parser import parse_pattern
from selp.language.validate import analyze
from selp.reference.derivations import DerivationTree, enumerate_trees, leaf, node
from selp.reference.match import matches, matches_at, matching_nodes, matching_trees



def m(pattern: str, tree: DerivationTree) -> bool:
    return matches(parse_pattern(pattern), tree)


def t(rel: str, *children: DerivationTree, values: tuple = ()) -> DerivationTree:
    """A tree node of relation ``rel``: internal (rule "r") when it has children."""
    return DerivationTree(rel, values, "r" if children else None, children)


# a
# ├─ b
# │  └─ c
# └─ d
TREE = t("a", t("b", t("c")), t("d"))


# --- root, / and // -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "pattern, expected",
    [
        ("a", True),
        ("b", False),  # the root maps to the root
        ("*", True),
        ("a / b", True),
        ("a / d", True),
        ("a / c", False),  # c is a grandchild
        ("a // c", True),
        ("a // b", True),  # a path of length 1 is a path
        ("a / b / c", True),
        ("a // b / c", True),
        ("a / b // c", True),
        ("a // a", False),  # // needs a proper descendant
        ("a / * / c", True),
        ("a / * / *", True),
        ("a / * / * / *", False),
        ("a // d / *", False),  # d is a leaf
    ],
)
def test_edges(pattern, expected):
    assert m(pattern, TREE) is expected


def test_transitive_edge_reaches_any_depth():
    deep = t("a", t("x", t("x", t("b", t("x", t("c"))))))
    assert m("a // b // c", deep)
    assert m("a // c", deep)
    assert not m("a / b", deep)
    assert not m("a // c // b", deep)
    assert m("a // x / b / x / c", deep)


# --- disjointness: sibling edges use different children ---------------------------------------


@pytest.mark.parametrize(
    "pattern, expected",
    [
        ("a[/ b, / d]", True),
        ("a[/ d, / b]", True),  # order of pattern children is irrelevant
        ("a[// c, / d]", True),
        ("a[/ b, // c]", False),  # both would go through the child b: paths share the edge a-b
        ("a[// b, // c]", False),
        ("a[// c, // d]", True),
        ("a[/ b, / b]", False),  # two pattern children need two different b children
        ("a[/ *, / *]", True),
        ("a[/ *, / *, / *]", False),
        ("a[// *, // *]", True),
    ],
)
def test_disjoint_sibling_edges(pattern, expected):
    assert m(pattern, TREE) is expected


def test_two_equal_children_can_serve_two_pattern_children():
    twins = t("a", t("b"), t("b"))
    assert m("a[/ b, / b]", twins)
    assert not m("a[/ b, / b, / b]", twins)


def test_assignment_backtracks():
    # b(*) fits both children, b(1) only the first: b(*) must give the first child up
    tree = t("a", t("b", values=(1,)), t("b", values=(2,)))
    assert m("a[/ b(*), / b(1)]", tree)
    assert m("a[/ b(1), / b(*)]", tree)
    assert not m("a[/ b(1), / b(1)]", tree)


def test_descendant_and_child_through_different_children():
    assert not m("a[/ x, // c]", t("a", t("x", t("c"))))
    assert m("a[/ x, // c]", t("a", t("x", t("c")), t("x")))
    assert m("a[/ x, // c]", t("a", t("x"), t("y", t("c"))))


def test_disjointness_is_only_between_sibling_edges():
    # the paths of a // b and b // c meet at b, but they share no edge
    assert m("a // b // c", t("a", t("b", t("c"))))
    # edges in different branches of the pattern never conflict
    assert m("a[/ b // c, / d]", TREE)


# --- labels ---------------------------------------------------------------------------------


DW = node("r2", "dealsWith", ("Cuba", "France"), leaf("imports", "Cuba", "wine"), leaf("exports", "France", "wine"))


@pytest.mark.parametrize(
    "pattern, expected",
    [
        ("dealsWith", True),
        ("dealsWith(Cuba, France)", True),
        ('dealsWith("Cuba", *)', True),
        ("dealsWith(*, *)", True),
        ("dealsWith(*, Cuba)", False),
        ("dealsWith(Cuba)", False),  # arity
        ("dealsWith(Cuba, *, *)", False),
        ("dealsWith()", False),
        ("deals*", True),
        ("*With", True),
        ("*(Cuba, France)", True),
        ("*(France, Cuba)", False),
        ("*_YAGO", False),
        ("dealsWith / imports(Cuba, wine)", True),
        ("dealsWith / exports(*, wine)", True),
        ("dealsWith / exports(Cuba, *)", False),
        ("dealsWith[/ im*, / *ports(France, *)]", True),
    ],
)
def test_labels_wildcards_and_globs(pattern, expected):
    assert m(pattern, DW) is expected


def test_integer_and_string_constants_differ():
    assert m("n(1)", leaf("n", 1)) and not m('n("1")', leaf("n", 1))
    assert m('n("1")', leaf("n", "1")) and not m("n(1)", leaf("n", "1"))


def test_nullary_facts():
    tree = node("r", "ok", (), leaf("flag", ))
    assert m("ok() / flag()", tree) and m("ok / flag", tree)
    assert not m("ok(*)", tree)


def test_instrumented_relation_names():
    tree = leaf("dealsWith@v1t", "Cuba", "France")
    assert m("dealsWith@v1t(Cuba, *)", tree)
    assert m("dealsWith@*", tree)
    assert not m("dealsWith", tree)


# --- Boolean combinations -------------------------------------------------------------------


@pytest.mark.parametrize(
    "pattern, expected",
    [
        ("NOT a", False),
        ("NOT b", True),
        ("a // c AND a / d", True),
        ("a // c AND a / c", False),
        ("a / c OR a / d", True),
        ("a / c OR NOT a // d", False),
        ("NOT a / c AND NOT b", True),
        ("NOT (a / c OR a / x)", True),
        ("NOT NOT a", True),
    ],
)
def test_boolean_combinations(pattern, expected):
    assert m(pattern, TREE) is expected


def test_hand_built_patterns():
    p = TreePattern(PatternNode("a", None, (("//", PatternNode("c", ())),)))
    assert matches(p, TREE)
    assert matches(Or((Not(p), p)), TREE)
    assert not matches(And((Not(p), p)), TREE)


# --- helpers --------------------------------------------------------------------------------


def test_matching_nodes():
    tree = t("x", t("b", t("c")), t("y", t("b")), t("b", t("z", t("c"))))
    b_c = parse_pattern("b // c").root
    assert [n.render() for n in matching_nodes(b_c, tree)] == [t("b", t("c")).render(), tree.children[2].render()]
    assert matches_at(b_c, tree.children[0]) and not matches_at(b_c, tree.children[1].children[0])


# --- the paper's Example 3.11 ----------------------------------------------------------------


@pytest.fixture(scope="module")
def trade_trees():
    analysis = analyze(parse_program_file(TRADE / "trade.dl"))
    return enumerate_trees(analysis, load_database(analysis, TRADE / "db").facts, 4)


def test_example_3_11(trade_trees):
    p2 = parse_pattern("dealsWith(Cuba, *) // exports(Cuba, tobacco)")
    cf = trade_trees[("dealsWith", ("Cuba", "France"))]
    def dw(a, b, rule, *children):
        return node(rule, "dealsWith", (a, b), *children)

    def r2(a, b, product):
        return dw(a, b, "r2", leaf("imports", a, product), leaf("exports", b, product))

    tau1 = r2("Cuba", "France", "wine")
    tau2 = dw("Cuba", "France", "r1", r2("France", "Cuba", "tobacco"))
    tau3 = dw(
        "Cuba", "France", "r3",
        dw("Cuba", "Mexico", "r1", r2("Mexico", "Cuba", "tobacco")),
        dw("Mexico", "France", "r0", leaf("dealsWith_edb", "Mexico", "France")),
    )
    assert {tau1, tau2, tau3} <= cf
    assert not matches(p2, tau1)
    assert matches(p2, tau2) and matches(p2, tau3)
    # p1 = dealsWith(Cuba, *) selects every tree of the fact; p2 exactly those using Cuba's tobacco
    p1 = parse_pattern("dealsWith(Cuba, *)")
    assert all(matches(p1, x) for x in cf)
    assert {x for x in cf if matches(p2, x)} == {
        x for x in cf if ("exports", ("Cuba", "tobacco")) in set(x.facts())
    }
    # the root pattern pins the first argument: trees of dealsWith(France, Cuba) never match
    assert not any(matches(p2, x) for x in trade_trees[("dealsWith", ("France", "Cuba"))])
    kept = matching_trees(p2, trade_trees)
    assert all(fact[1][0] == "Cuba" for fact in kept)
    assert kept[("dealsWith", ("Cuba", "France"))] == {x for x in cf if matches(p2, x)}


# --- a literal reading of Definition 3.3 ---------------------------------------------------


def positions(tree: DerivationTree, at: tuple = ()) -> dict[tuple, DerivationTree]:
    out = {at: tree}
    for i, c in enumerate(tree.children):
        out.update(positions(c, at + (i,)))
    return out


def brute_force_match(pattern: PatternNode, tree: DerivationTree) -> bool:
    """Try every mapping of pattern nodes to tree positions: root to root, labels, a / edge to a
    tree edge, a // edge to a downward path of length >= 1, and all those paths pairwise
    edge-disjoint (Definition 3.3, items 1-6)."""
    nodes = list(pattern.nodes())
    # by identity: equal pattern nodes may occur twice (a[/ b, / b])
    ids = {id(n): k for k, n in enumerate(nodes)}
    edges = [(ids[id(n)], edge, ids[id(c)]) for n in nodes for edge, c in n.children]
    pos = positions(tree)
    for image in itertools.product(pos, repeat=len(nodes) - 1):
        h = ((),) + image
        if not all(nodes[k].matches_fact(pos[h[k]].relation, pos[h[k]].values) for k in range(len(nodes))):
            continue
        paths = []
        ok = True
        for src, edge, dst in edges:
            a, b = h[src], h[dst]
            if b[: len(a)] != a or len(b) <= len(a) or (edge == "/" and len(b) != len(a) + 1):
                ok = False
                break
            paths.append({(b[:k], b[: k + 1]) for k in range(len(a), len(b))})
        if ok and all(p.isdisjoint(q) for p, q in itertools.combinations(paths, 2)):
            return True
    return False


def _trees():
    label = st.tuples(st.sampled_from(["a", "b", "c"]), st.sampled_from([(1,), (1,), (2,)]))
    return st.recursive(
        label.map(lambda lv: DerivationTree(lv[0], lv[1])),
        lambda kids: st.builds(
            lambda lv, cs: DerivationTree(lv[0], lv[1], "r", tuple(cs)), label, st.lists(kids, min_size=1, max_size=3)
        ),
        max_leaves=7,
    )


def _patterns():
    # few constraints per node, so that a fair share of the cases match
    label = st.tuples(st.sampled_from(["a", "b", "*", "*"]), st.sampled_from([None, None, (1,), (WILDCARD,), (2, 2)]))

    def make(lv, cs=()):
        return PatternNode(lv[0], lv[1], tuple(cs))

    trees = st.recursive(
        label.map(make),
        lambda kids: st.builds(
            make, label, st.lists(st.tuples(st.sampled_from(["/", "//"]), kids), min_size=1, max_size=3)
        ),
        max_leaves=4,
    )
    # half the time a root that matches any root, so the edges below decide
    return st.one_of(trees, trees.map(lambda p: PatternNode("*", None, p.children)))


@settings(max_examples=examples(400), deadline=None)
@given(_patterns(), _trees())
def test_matcher_agrees_with_the_definition(pattern, tree):
    # the literal reading tries |tree|^(|pattern|-1) mappings: keep it to seconds
    assume(sum(1 for _ in pattern.nodes()) <= 5)
    assert matches(TreePattern(pattern), tree) == brute_force_match(pattern, tree)


@settings(max_examples=examples(100), deadline=None)
@given(_patterns(), _patterns(), _trees())
def test_boolean_operators_are_boolean(p, q, tree):
    a, b = TreePattern(p), TreePattern(q)
    assert matches(Not(a), tree) == (not matches(a, tree))
    assert matches(And((a, b)), tree) == (matches(a, tree) and matches(b, tree))
    assert matches(Or((a, b)), tree) == (matches(a, tree) or matches(b, tree))
