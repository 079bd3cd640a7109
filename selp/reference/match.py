"""Reference semantics of patterns on explicit derivation trees ([DGM15] Definition 3.3).

A match of a tree pattern in a derivation tree maps

1. the pattern root to the tree root;
2. every pattern node to a tree node whose fact carries the node's label (relation glob and
   arguments, wildcards matching anything: :meth:`PatternNode.matches_fact`);
3. a regular edge ``m / n`` to a tree edge: ``h(n)`` is a child of ``h(m)``;
4. a transitive edge ``m // n`` to a downward path of length >= 1: ``h(n)`` is a proper
   descendant of ``h(m)``;
5. and the edges/paths of the pattern are pairwise (edge-)disjoint.

Disjointness, decided here: in a tree, the path of an edge ``m -> n`` starts with the tree edge
from ``h(m)`` to the child of ``h(m)`` it passes through. Two edges leaving the same pattern node
``m`` are therefore disjoint exactly when they go through *different children* of ``h(m)``; edges
that do not share a source node are disjoint automatically (a child's edges lie inside the subtree
below its image, and the subtrees of different children of a node do not meet). So item 5 amounts
to: the children of a pattern node are assigned one-to-one to children of its image, and a
``//`` child is then mapped into the subtree of its assigned child (the child itself included).
This module tries every such assignment; it is meant for small trees and patterns (tests, the
oracle for instrumentation), not for speed.

NOT/AND/OR combine matches with their Boolean meaning: ``NOT p`` matches a tree iff ``p`` does not.
"""

from __future__ import annotations

from typing import Iterator

from selp.language.pattern import CHILD, DESCENDANT, And, Not, Or, Pattern, PatternNode, TreePattern
from selp.reference.derivations import DerivationTree


def matches(pattern: Pattern, tree: DerivationTree) -> bool:
    """Whether ``tree`` is in ``pattern(S)`` for any set S containing it (Definition 3.4)."""
    if isinstance(pattern, TreePattern):
        return matches_at(pattern.root, tree)
    if isinstance(pattern, Not):
        return not matches(pattern.operand, tree)
    if isinstance(pattern, And):
        return all(matches(p, tree) for p in pattern.operands)
    if isinstance(pattern, Or):
        return any(matches(p, tree) for p in pattern.operands)
    raise TypeError(f"not a pattern: {pattern!r}")


def matches_at(node: PatternNode, tree: DerivationTree) -> bool:
    """Whether the pattern subtree rooted at ``node`` matches with ``node`` mapped to the root of
    ``tree`` (the subtree ``tree`` stands for a node of a larger tree)."""
    if not node.matches_fact(tree.relation, tree.values):
        return False
    if not node.children:
        return True
    # which tree children each pattern child may be assigned to
    candidates = [
        [j for j, c in enumerate(tree.children) if _edge_fits(edge, sub, c)] for edge, sub in node.children
    ]
    return _distinct_choice(candidates, 0, set())


def _edge_fits(edge: str, sub: PatternNode, child: DerivationTree) -> bool:
    """Whether pattern child ``sub`` (reached by ``edge``) can use tree child ``child``."""
    if edge == CHILD:
        return matches_at(sub, child)
    assert edge == DESCENDANT, edge
    return any(matches_at(sub, d) for d in child.nodes())


def _distinct_choice(candidates: list[list[int]], k: int, used: set[int]) -> bool:
    """Whether pattern children k, k+1, ... can take pairwise different tree children."""
    if k == len(candidates):
        return True
    for j in candidates[k]:
        if j not in used:
            used.add(j)
            ok = _distinct_choice(candidates, k + 1, used)
            used.discard(j)
            if ok:
                return True
    return False


def matching_nodes(node: PatternNode, tree: DerivationTree) -> Iterator[DerivationTree]:
    """The nodes of ``tree`` (preorder, repeats included) at which the pattern subtree rooted at
    ``node`` matches, i.e. the possible images of ``node`` if it were the root's image."""
    for n in tree.nodes():
        if matches_at(node, n):
            yield n


def matching_trees(pattern: Pattern, trees: dict) -> dict:
    """Restrict ``{fact: set of trees}`` (as from :func:`selp.reference.derivations.enumerate_trees`) to the
    trees that match; facts left without trees are dropped."""
    out = {}
    for fact, ts in trees.items():
        kept = {t for t in ts if matches(pattern, t)}
        if kept:
            out[fact] = kept
    return out
