"""Mapping derivation trees of an instrumented program P_p back to trees of P (``origin``)."""

from __future__ import annotations

from selp.instrument.instrument import Instrumented
from selp.reference.derivations import DerivationTree


def origin_tree(tree: DerivationTree, inst: Instrumented) -> DerivationTree:
    """Erase annotations and copy steps: the tree of the original program that ``tree`` stands for.

    A copy step (a transitive node's copy rule or a HandleEDB rule; origin ``None``) has exactly
    one child, which replaces it.
    """
    if tree.rule is None:
        return DerivationTree(inst.relation_origin.get(tree.relation, tree.relation), tree.values)
    origin = inst.rule_origin[tree.rule]
    if origin is None:
        (only,) = tree.children
        return origin_tree(only, inst)
    return DerivationTree(
        inst.relation_origin[tree.relation],
        tree.values,
        origin,
        tuple(origin_tree(c, inst) for c in tree.children),
    )
