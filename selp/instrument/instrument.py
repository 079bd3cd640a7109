"""Instrumentation of a program with a derivation-tree pattern ([DGM15] Algorithm 1).

For every relation ``R`` and pattern node ``v`` the instrumented program P_p has ``R@v<i>``
(derivations whose root matches the sub-pattern at ``v``) and, when ``v`` hangs off its parent by
a transitive edge, ``R@v<i>t`` (derivations containing a sub-tree that matches it). Nodes are
numbered ``v0, v1, ...`` in preorder. P_p is the union of P and the new rules; the answers are
the facts of the root relations ``R@v0``.

Decisions where the paper is terse:

* **Transitive nodes** get one copy rule ``R@vit(x) :- R@vi(x)`` per relation with neutral
  weight (the issue's reading of lines 14-15) instead of a duplicate of every ``R@vi`` rule; the
  copy step is marked in :attr:`Instrumented.rule_origin` (origin ``None``) and erased by
  :func:`origin_tree`, as are HandleEDB's copy steps.
* **tr-ex** (line 13) applies to every rule of P, whatever its head: a derivation contains a match
  of ``v`` below its root when one of its children does.
* **Expansions** map the children of ``v`` one-to-one onto the *positive* body atoms; negated atoms
  and comparisons are never children of a derivation-tree node.
* **Optimisations** (section 4.1), on unless ``optimize=False``: a non-transitive child ``v_j``
  mapped to atom ``a`` requires ``a`` to locally match ``v_j`` and propagates ``v_j``'s constants
  into the whole rule (bottom-up), dropping expansions that cannot match; a non-transitive leaf
  mapped to an EDB atom uses the EDB relation itself (with the constants) instead of a copy.
  A third, ours: an annotated relation whose rules are exactly its origin's (a node that
  constrains nothing, such as the single node of ``tc(*, *)``) is replaced by the origin
  (:mod:`selp.instrument.copies`), so such a pattern costs no more than P.
* **Cleanup** keeps the rules whose positive body relations are all derivable and whose head is
  needed (transitively) by a root relation; comparisons between two constants after substitution
  are decided statically.
"""

from __future__ import annotations

import dataclasses
import itertools
import time
from typing import Iterable

from selp.errors import SelpError
from selp.instrument.builder import Builder, Instrumented, NodeInfo, annotated, assemble, cleanup, number_nodes
from selp.instrument.copies import copies, replace_copies
from selp.instrument.negation import instrument_not
from selp.instrument.witness import PREFIX, pattern_reads, witness_rules
from selp.language.ast import Arith, Comparison, Rule, Term, Var
from selp.language.pattern import And, Not, Or, Pattern, PatternNode, TreePattern
from selp.language.validate import Analysis, analyze


def identity(analysis: Analysis, read: set[str] | None = None) -> Instrumented:
    """P itself as an instrumentation with no pattern: every relation and rule is its own origin
    (but the ``agg@`` copies and the witness rules, whose origin is their rule of P).

    Rule names are made explicit so that they survive printing after rules are removed, an
    expression in a head becomes an assignment (:func:`head_expressions_assigned`), and an
    aggregate rule a witness rule reading its relation's ``agg@`` copy, which the program
    computes too (:mod:`selp.instrument.witness`). ``read``: the relations a pattern's trees can
    hold (None: all); an aggregate rule of another relation that has no witness form is left out.
    """
    rules = tuple(dataclasses.replace(head_expressions_assigned(r), named=True) for r in analysis.program.rules)
    rules, filters, witness_origin = witness_rules(analysis, rules, read)
    program = dataclasses.replace(analysis.program, rules=rules + filters)
    relation_origin = {rel: rel for rel in analysis.arities}
    relation_origin.update({r.head.relation: r.head.relation[len(PREFIX):] for r in filters})
    rule_origin: dict[str, str | None] = dict(witness_origin)
    rule_origin.update({r.name: r.name[len(PREFIX):] for r in filters})
    return Instrumented(
        program,
        None,
        relation_origin,
        rule_origin,
        {"rules_before": len(rules), "rules_generated": 0, "rules_after": len(rules) + len(filters), "pattern_nodes": 0},
    )


def head_expressions_assigned(rule: Rule) -> Rule:
    """``p(x, c1 + c2) :- B.`` as ``p(x, _e1) :- B, _e1 = c1 + c2.``: the same rule, whose head a
    pattern constant can label like any variable (the assignment then becomes a test)."""
    if not any(isinstance(t, Arith) for t in rule.head.args):
        return rule
    taken = {v.name for lit in (rule.head, *rule.body) for v in lit.vars()}
    names = (f"_e{i}" for i in itertools.count(1))
    args: list[Term] = []
    extra: list[Comparison] = []
    for t in rule.head.args:
        if isinstance(t, Arith):
            v = Var(next(n for n in names if n not in taken))
            args.append(v)
            extra.append(Comparison("=", v, t, rule.head.loc))
        else:
            args.append(t)
    head = dataclasses.replace(rule.head, args=tuple(args))
    return dataclasses.replace(rule, head=head, body=rule.body + tuple(extra))


def instrument(
    analysis: Analysis,
    pattern: Pattern | PatternNode,
    optimize: bool = True,
    *,
    propagate_constants: bool | None = None,
    edb_leaves: bool | None = None,
    merge_copies: bool | None = None,
) -> Instrumented:
    """The program P_p whose root relations carry exactly the derivations matching ``pattern``.

    A tree pattern is Algorithm 1; a disjunction is the union of the instrumentations of its
    operands; a conjunction instruments the output of the previous conjunct (pattern labels are
    then matched against origin relations, and the previous copy steps are transparent).
    A negation is pushed down to tree patterns (De Morgan) and compiled by
    :mod:`selp.instrument.negation`. ``optimize`` switches the optimisations: the two of section
    4.1 and the replacement of annotated relations that are exact copies of their relation in P
    (:mod:`selp.instrument.copies`); ``propagate_constants``, ``edb_leaves`` and ``merge_copies``
    override it one by one.
    """
    t0 = time.perf_counter()
    flags = (
        optimize if propagate_constants is None else propagate_constants,
        optimize if edb_leaves is None else edb_leaves,
    )
    if isinstance(pattern, PatternNode):
        pattern = TreePattern(pattern)
    # only what the pattern's trees can hold must have derivation trees (a relation it never
    # reads may have an aggregate with no witness form)
    read = pattern_reads(analysis.program.rules, set(analysis.arities), list(_nodes(pattern)))
    result = _apply(identity(analysis, read), pattern, flags)
    if optimize if merge_copies is None else merge_copies:
        result = _without_copies(result)
    result.stats["rules_before"] = len(analysis.program.rules)
    result.stats["seconds"] = time.perf_counter() - t0
    return result


def _nodes(pattern: Pattern) -> Iterable[PatternNode]:
    """Every node of ``pattern``'s tree patterns."""
    if isinstance(pattern, TreePattern):
        yield from pattern.root.nodes()
    elif isinstance(pattern, Not):
        yield from _nodes(pattern.operand)
    else:
        for p in pattern.operands:
            yield from _nodes(p)


def _without_copies(inst: Instrumented) -> Instrumented:
    """``inst`` reading P's relations in place of their exact copies (see :mod:`selp.instrument.copies`)."""
    rules = list(inst.program.rules)
    rename = copies(rules, inst.relation_origin, inst.rule_origin)
    if not rename:
        return inst
    kept, roots = replace_copies(rules, list(inst.roots or ()), rename)
    out = assemble(inst, kept, roots, inst.relation_origin, inst.rule_origin, 0, 0, inst.next_node)
    out.stats["rules_of_copies"] = len(rules) - len(kept)
    return out


def _apply(base: Instrumented, pattern: Pattern, flags: tuple[bool, bool]) -> Instrumented:
    if isinstance(pattern, TreePattern):
        return _instrument_tree(base, pattern.root, flags)
    if isinstance(pattern, And):
        out = base
        for op in pattern.operands:
            out = _apply(out, op, flags)
        return out
    if isinstance(pattern, Or):
        parts = []
        for op in pattern.operands:
            part = _apply(base, op, flags)
            parts.append(part)
            base = dataclasses.replace(base, next_node=part.next_node)  # fresh node names per part
        return _union(base, parts)
    if isinstance(pattern, Not):
        inner = pattern.operand
        if isinstance(inner, Not):
            return _apply(base, inner.operand, flags)
        if isinstance(inner, And):  # De Morgan: push NOT down to tree patterns
            return _apply(base, Or(tuple(Not(p) for p in inner.operands)), flags)
        if isinstance(inner, Or):
            return _apply(base, And(tuple(Not(p) for p in inner.operands)), flags)
        return instrument_not(base, inner.root, flags)
    raise TypeError(f"not a pattern: {pattern!r}")


def _instrument_tree(base: Instrumented, root: PatternNode, flags: tuple[bool, bool]) -> Instrumented:
    """Algorithm 1 over ``base`` (P itself, or a previous conjunct's output)."""
    info = number_nodes(root, base.next_node)
    b = Builder(base, *flags)

    def walk(n: NodeInfo) -> Iterable[NodeInfo]:
        yield n
        for c in n.children:
            yield from walk(c)

    nodes = list(walk(info))
    for n in nodes:
        b.node(n)
    for n in nodes:
        b.handle_edb(n)
    heads = {r.head.relation for r in b.rules}
    if base.roots is None:
        roots = sorted(h for h in heads if h.endswith(f"@{info.name}"))
    else:
        roots = sorted(h for h in (annotated(r, info.name) for r in base.roots) if h in heads)
    kept = cleanup(b.analysis, list(base.program.rules) + b.rules, roots)
    rule_origin = {**base.rule_origin, **b.rule_origin}
    relation_origin = {**base.relation_origin, **b.relation_origin}
    return assemble(base, kept, roots, relation_origin, rule_origin, len(b.rules), len(nodes), base.next_node + len(nodes))


def _union(base: Instrumented, parts: list[Instrumented]) -> Instrumented:
    """A disjunction: every part's rules (each part names its own nodes), all parts' roots."""
    rules: dict[str, Rule] = {}
    relation_origin = dict(base.relation_origin)
    rule_origin = dict(base.rule_origin)
    roots: set[str] = set()
    for part in parts:
        for r in part.program.rules:
            rules.setdefault(r.name, r)
        relation_origin.update(part.relation_origin)
        rule_origin.update(part.rule_origin)
        roots.update(part.roots or ())
    kept = cleanup(analyze(base.program), list(rules.values()), sorted(roots))
    generated = sum(p.stats.get("rules_generated", 0) for p in parts) - base.stats.get("rules_generated", 0) * len(parts)
    nodes = sum(p.stats.get("pattern_nodes", 0) for p in parts) - base.stats.get("pattern_nodes", 0) * len(parts)
    next_node = parts[-1].next_node if parts else base.next_node
    return assemble(base, kept, sorted(roots), relation_origin, rule_origin, generated, nodes, next_node)
