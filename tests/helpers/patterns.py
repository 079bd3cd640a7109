"""Random selPQL patterns over a program's relations (a hypothesis strategy)."""

from __future__ import annotations

from hypothesis import strategies as st

from selp.language.pattern import And, Not, Or, Pattern, PatternNode, TreePattern


@st.composite
def random_patterns(draw, arities: dict[str, int], constants: list, idb: list[str]) -> Pattern:
    """Random patterns over a program's relations: one tree, or AND/OR of two; at most 4 nodes in
    all (the P_p enumeration bound grows with the node count), / and //, wildcard or constant
    arguments, any-arity nodes and the any-fact node *."""
    relations = sorted(arities)
    budget = [4]

    def node(depth: int) -> PatternNode:
        budget[0] -= 1
        # roots mostly name IDB relations, so that many patterns match something
        rel = draw(st.sampled_from((idb if depth == 0 and idb else relations) + ["*"]))
        args = None
        if rel != "*" and draw(st.booleans()):
            args = tuple(draw(st.one_of(st.none(), st.sampled_from(constants))) if constants else None for _ in range(arities[rel]))
        kids = []
        if depth < 2:
            for _ in range(draw(st.integers(0, 2))):
                if budget[0] <= 0:
                    break
                kids.append((draw(st.sampled_from(["/", "//"])), node(depth + 1)))
        return PatternNode(rel, args, tuple(kids))

    def maybe_not(p: Pattern) -> Pattern:
        return Not(p) if draw(st.integers(0, 2)) == 0 else p

    trees: list[Pattern] = [maybe_not(TreePattern(node(0)))]
    if budget[0] > 0 and draw(st.booleans()):
        trees.append(maybe_not(TreePattern(node(0))))
    if len(trees) == 1:
        return trees[0]
    return maybe_not(draw(st.sampled_from([And(tuple(trees)), Or(tuple(trees))])))
