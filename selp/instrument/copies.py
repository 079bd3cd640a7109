"""Annotated relations that are exact copies of their relation in P, replaced by it.

Algorithm 1 gives every pattern node ``v`` its own copy of every rule that may carry it. For a
node that constrains nothing -- a leaf of wildcards, such as the single node of ``tc(*, *)`` --
the rules of ``R@v`` are the rules of ``R`` with the head renamed: ``R@v`` holds the same facts
with the same derivation trees, one for one, and evaluating it doubles the work of evaluating
``R``. This pass finds such relations and reads ``R`` in their place (a further optimisation in
the spirit of section 4.1; the paper reports its optimisations saving up to half the rules).

``A`` is a copy of ``B = origin(A)`` when, with every copy renamed to its original, the rules of
``A`` and those of ``B`` are the same multiset of (head, body, weight, origin rule). That is a
greatest fixpoint -- assume every candidate is a copy, drop the pairs whose rules differ under
that assumption, repeat -- and it is sound for the least-fixpoint semantics: by induction on the
height of a derivation tree, the renaming maps the trees of ``A(t)`` one for one onto those of
``B(t)`` with the same rules, weights and origin. Rules compare structurally (variable names
included), so the test is conservative: a copy whose variables were renamed, or that received a
constant, is kept.
"""

from __future__ import annotations

import dataclasses
from collections import Counter

from selp.instrument.witness import is_filter_relation
from selp.language.ast import Atom, Literal, Rule


def copies(rules: list[Rule], relation_origin: dict[str, str], rule_origin: dict[str, str | None]) -> dict[str, str]:
    """The annotated relations of ``rules`` that are copies of their origin: relation -> origin."""
    by_head: dict[str, list[Rule]] = {}
    for r in rules:
        by_head.setdefault(r.head.relation, []).append(r)
    pairs = {
        a: relation_origin[a]
        for a in by_head
        if relation_origin.get(a, a) != a and relation_origin[a] in by_head and not is_filter_relation(a)
    }
    while True:
        dropped = [a for a, b in pairs.items()
                   if _signatures(by_head[a], pairs, rule_origin) != _signatures(by_head[b], pairs, rule_origin)]
        if not dropped:
            return pairs
        for a in dropped:
            del pairs[a]


def _signatures(rules: list[Rule], rename: dict[str, str], rule_origin: dict[str, str | None]) -> Counter:
    return Counter(
        (_renamed(r.head, rename), tuple(_renamed(b, rename) for b in r.body), r.weight, rule_origin.get(r.name, r.name))
        for r in rules
    )


def _renamed(lit: Literal, rename: dict[str, str]) -> Literal:
    if isinstance(lit, Atom) and lit.relation in rename:
        return dataclasses.replace(lit, relation=rename[lit.relation])
    return lit


def replace_copies(rules: list[Rule], roots: list[str], rename: dict[str, str]) -> tuple[list[Rule], list[str]]:
    """``rules`` without the rules of the copies in ``rename``, every other rule reading the
    originals, and the roots renamed (a root that is a copy becomes its original)."""
    out = []
    for r in rules:
        if r.head.relation in rename:
            continue
        body = tuple(_renamed(b, rename) for b in r.body)
        out.append(r if body == r.body else dataclasses.replace(r, body=body))
    return out, sorted({rename.get(x, x) for x in roots})
