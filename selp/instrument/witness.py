"""Aggregate rules as *witness rules*: what a derivation tree of an aggregated fact is.

A fact ``R(k, v)`` of an aggregated relation is the result of its group's rule instances (see
:mod:`selp.aggregate`). Its derivation trees are those of its **witnesses**, a rule instance of the
group being the tree's root step and its body facts the children:

* ``min``/``max``: the instances whose value is ``v`` (each reaches the minimum/maximum);
* ``count``/``sum``: every instance of the group (each is counted or added to ``v``);
* several aggregates: every instance when one is ``count``/``sum``; with ``min``/``max`` only, an
  instance reaching at least one of the values -- a disjunction, said by one witness rule per
  aggregate (below), an instance reaching several values being one tree.

The k best trees of the fact are the k best trees over its witnesses under the query's monoid;
the first is "the tree of its best witness".

Before instrumentation, every aggregate rule ``R(k.., agg(e)) :- B.`` of P becomes the plain rule

    R(k.., _a) :- B, agg@R(k.., _a), _a = e.      (min/max; count and sum have no ``_a = e``)

and a rule with n ``min``/``max`` aggregates (no ``count``/``sum``) the n rules
``R(k.., _a1.._an) :- B, agg@R(k.., _a1.._an), _ai = e_i.``, named ``r``, ``r@w2``, ...: all have
P's rule ``r`` as origin, so an instance reaching several values derives the same tree of P
through several of them, and the engines, which count trees of the same origin once, rank it
once ([DGM15] section 5.2).

where ``agg@R`` holds P's facts of ``R``: the rules of ``R`` and of every relation ``R`` depends
on are copied under ``agg@`` names (:data:`PREFIX`), so the instrumented program computes them
itself, with their aggregates. An ``agg@`` atom is a **filter**, never a child: instrumentation
does not match pattern nodes against it, and the top-k engines evaluate ``agg@`` relations first
and leave them out of trees (as they do with goal-directed ``demand@`` relations).

Instances are thus filtered, never re-aggregated: a pattern that restricts an aggregated
relation's derivations (children under its node, a ``//`` carried through it, a constant at the
aggregate position) selects some of a fact's witness trees, and the fact keeps P's value -- the
restriction is exact. A Skolem term beside an aggregate in a head cannot be repeated in a body,
so such a rule has no witness form and top-k refuses it -- only when the pattern's trees can hold
its relation (:func:`pattern_reads`); otherwise it is left out of the instrumented program.
"""

from __future__ import annotations

import dataclasses
import itertools

from selp.aggregate import SELECTIVE
from selp.errors import SelpError
from selp.language.ast import Atom, Comparison, Rule, SkolemTerm, Term, Var
from selp.language.pattern import PatternNode
from selp.language.validate import Analysis

# as with demand@, a relation of P named agg@... would be taken for a copy: '@' names are meant
# for instrumented programs (which must parse again)
PREFIX = "agg@"


def is_filter_relation(relation: str) -> bool:
    """Whether ``relation`` holds an aggregated relation's facts for witness rules (``agg@R`` or
    a relation of its copied dependencies): read as a filter, never part of a derivation tree."""
    return relation.startswith(PREFIX)


def filter_name(relation: str) -> str:
    """The name of the copy of ``relation`` that witness rules read: ``agg@R``."""
    return PREFIX + relation


def witness_rules(
    analysis: Analysis, rules: tuple[Rule, ...], read: set[str] | None = None
) -> tuple[tuple[Rule, ...], tuple[Rule, ...], dict[str, str]]:
    """``(rules with every aggregate rule in witness form, the agg@ copies they read, every rule
    of the first part -> its rule in P)``.

    ``rules`` are P's rules (possibly with head expressions already assigned); the copies are
    those of every IDB relation an aggregated relation depends on (itself included), with the
    aggregates kept, named ``agg@<rule>``. The witness rules of one rule of P all have it as
    origin, so that an instance reaching several min/max values gives one derivation tree (the
    engines count trees of the same origin once), not one per value. ``read`` (None: every
    relation) are the relations a pattern's trees can hold: an aggregate rule of another relation
    with no witness form is left out instead of refused, as no answer reads it."""
    program = analysis.program
    aggregated = program.aggregated()
    if not aggregated:
        return rules, (), {r.name: r.name for r in rules}
    needed = _dependencies(rules, set(aggregated))
    idb = {r.head.relation for r in rules}
    copies = tuple(_copy(r, idb) for r in rules if r.head.relation in needed)
    out: list[Rule] = []
    origin: dict[str, str] = {}
    for r in rules:
        if r.aggregates and read is not None and r.head.relation not in read and not _has_witness_form(r):
            continue
        for w in _witness(r) if r.aggregates else (r,):
            out.append(w)
            origin[w.name] = r.name
    return tuple(out), copies, origin


def pattern_reads(rules: tuple[Rule, ...], relations: set[str], nodes: list[PatternNode]) -> set[str]:
    """The relations of ``relations`` whose facts a tree matching a pattern with ``nodes`` can
    hold: those a node's label matches and everything they read."""
    return _dependencies(rules, {r for r in relations if any(n.matches_relation(r) for n in nodes)})


def _has_witness_form(rule: Rule) -> bool:
    """Whether :func:`_witness` can rewrite ``rule`` (no Skolem term beside its aggregates)."""
    return not any(isinstance(t, SkolemTerm) for t in rule.head.args)


def _dependencies(rules: tuple[Rule, ...], roots: set[str]) -> set[str]:
    """The IDB relations ``roots`` read, transitively (positively or negated), and ``roots``."""
    idb = {r.head.relation for r in rules}
    reads: dict[str, set[str]] = {}
    for r in rules:
        reads.setdefault(r.head.relation, set()).update(b.relation for b in r.body if isinstance(b, Atom) and b.relation in idb)
    out, todo = set(roots), list(roots)
    while todo:
        for dep in reads.get(todo.pop(), ()):
            if dep not in out:
                out.add(dep)
                todo.append(dep)
    return out


def _copy(rule: Rule, idb: set[str]) -> Rule:
    """``rule`` over the ``agg@`` copies of the IDB relations ``idb`` (EDB relations are shared)."""

    def renamed(a: Atom) -> Atom:
        return a if a.relation not in idb else dataclasses.replace(a, relation=filter_name(a.relation))

    body = tuple(renamed(b) if isinstance(b, Atom) else b for b in rule.body)
    return dataclasses.replace(rule, name=filter_name(rule.name), head=renamed(rule.head), body=body, named=True)


def _witness(rule: Rule) -> tuple[Rule, ...]:
    """The witness rules of one aggregate rule (see the module's docstring): one, or one per
    aggregate when all are ``min``/``max``."""
    head = rule.head
    aggs = rule.aggregates
    if not _has_witness_form(rule):
        raise SelpError(
            f"rule {rule.name}: derivation trees of {head.relation} are not supported: its head has a"
            " Skolem term beside the aggregate (the witness rule would need it in its body)",
            head.loc,
        )
    selective = all(t.fn in SELECTIVE for _, t in aggs)
    taken = {v.name for lit in (head, *rule.body) for v in lit.vars()}
    fresh = (n for n in (f"_a{i}" for i in itertools.count(1)) if n not in taken)
    values = {p: Var(next(fresh)) for p, _ in aggs}
    args: list[Term] = [values.get(i, t) for i, t in enumerate(head.args)]
    body = list(rule.body) + [Atom(filter_name(head.relation), tuple(args), False, head.loc)]
    witness_head = dataclasses.replace(head, args=tuple(args))
    if not selective:  # with a count or a sum every instance is a witness
        return (dataclasses.replace(rule, head=witness_head, body=tuple(body)),)
    # min/max only: an instance reaching value i (one rule per aggregate, the disjunction); the
    # copies after the first are named r@w<i> and all stand for P's rule r (see witness_rules)
    return tuple(
        dataclasses.replace(
            rule,
            name=rule.name if i == 0 else f"{rule.name}@w{i + 1}",
            head=witness_head,
            body=tuple(body + [Comparison("=", values[p], agg.arg, head.loc)]),
        )
        for i, (p, agg) in enumerate(aggs)
    )
