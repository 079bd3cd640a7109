"""Negated tree patterns (``NOT p``) as a bottom-up tree automaton compiled into datalog.

The paper's section 4.2 sketches R^{¬v} relations and "neg-ex" rules (some child fails its
pattern child, or there are too few children; a head that does not locally match is copied as
is). That misses trees where every pattern child matches some child but not all at once on
*distinct* children (``NOT a[/ b, / b]`` over a tree with one b child), and "does not locally
match" is not static: ``R(x, y)`` carries the label ``R(Cuba, *)`` for some values of ``x`` only.
selp instead builds the exact construction:

* The **type** of a derivation tree is the set of facts about it that its parent needs to decide
  the pattern: ``M v`` -- the sub-pattern at ``v`` matches with ``v`` at the tree's root (kept for
  the pattern root and for nodes reached by ``/``), and ``C u`` -- it matches somewhere in the tree,
  root included (kept for nodes reached by ``//``). The type of a node follows from its fact's
  label and its children's types alone (:meth:`Automaton.step`), so types are computed bottom-up.
* Every relation ``R`` of the base program gets one relation ``R@!v<i>s<j>`` per reachable type
  ``s<j>`` (``v<i>`` names the negated pattern's root); each rule is copied once per combination
  of its body atoms' types, with the head's label decided by comparisons: "the head carries
  ``v``'s label" adds equalities, "it does not" adds one disjunct per violated position (the
  first violated one, so the cases are disjoint and each tree is derived exactly once).
* EDB atoms are leaves whose type depends on their label only, so they keep their relation and
  get the same label conditions inline (no copy steps inside trees).
* The answers are the root relations' types without ``M`` of the pattern root. When the base has
  no roots yet (``NOT p`` alone), every relation's facts are answers; EDB facts then reach the root
  relations through copy steps, as with HandleEDB.

Only the label checks whose outcome can change the type are split on (a node whose children
cannot be placed is not matched whatever its label), which keeps the rule count small; the worst
case is still exponential in the pattern size, like Algorithm 1 itself.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Iterable, Iterator

from selp.instrument.builder import (
    Builder,
    Instrumented,
    NodeInfo,
    Subst,
    apply_atom,
    apply_body,
    assemble,
    cleanup,
    is_child,
    local_match,
    number_nodes,
)
from selp.instrument.witness import is_filter_relation
from selp.language.ast import Atom, Comparison, Const, Literal, Rule, SkolemTerm, Term, Var
from selp.language.pattern import PatternNode
from selp.values import Value

Bit = tuple[str, int]  # ("M", node index) or ("C", node index)
Type = frozenset[Bit]


@dataclass(frozen=True)
class _Node:
    index: int
    node: PatternNode
    edge: str | None  # how it hangs off its parent; None for the root
    children: tuple[int, ...]


class Automaton:
    """The bottom-up tree automaton that decides one tree pattern on derivation trees."""

    def __init__(self, root: NodeInfo) -> None:
        self.nodes: list[_Node] = []
        self.root_name = root.name

        def walk(info: NodeInfo, edge: str | None) -> int:
            index = len(self.nodes)
            self.nodes.append(_Node(index, info.node, edge, ()))
            kids = tuple(walk(c, "//" if c.transitive else "/") for c in info.children)
            self.nodes[index] = _Node(index, info.node, edge, kids)
            return index

        walk(root, None)

    def keeps_m(self, v: int) -> bool:
        return self.nodes[v].edge != "//"

    def children_fit(self, v: int, kids: list[Type]) -> bool:
        """Whether ``v``'s pattern children can take pairwise different tree children."""
        wanted = [("M" if self.nodes[u].edge == "/" else "C", u) for u in self.nodes[v].children]
        options = [[j for j, k in enumerate(kids) if bit in k] for bit in wanted]
        return _distinct_choice(options, 0, set())

    def relevant(self, kids: list[Type]) -> list[int]:
        """The nodes whose label, at a tree node with these children, can change its type."""
        out = []
        for n in self.nodes:
            if not self.children_fit(n.index, kids):
                continue  # unmatched whatever the label
            if self.keeps_m(n.index) or not any(("C", n.index) in k for k in kids):
                out.append(n.index)
        return out

    def step(self, labels: frozenset[int], kids: list[Type]) -> Type:
        """The type of a tree node whose fact carries exactly the ``labels`` (among the relevant
        nodes) and whose children have the types ``kids``."""
        bits: set[Bit] = set()
        for n in self.nodes:
            m = n.index in labels and self.children_fit(n.index, kids)
            if self.keeps_m(n.index):
                if m:
                    bits.add(("M", n.index))
            elif m or any(("C", n.index) in k for k in kids):
                bits.add(("C", n.index))
        return frozenset(bits)

    def accepts(self, t: Type) -> bool:
        return ("M", 0) in t


def _distinct_choice(options: list[list[int]], i: int, used: set[int]) -> bool:
    if i == len(options):
        return True
    for j in options[i]:
        if j not in used:
            used.add(j)
            ok = _distinct_choice(options, i + 1, used)
            used.discard(j)
            if ok:
                return True
    return False


@dataclass(frozen=True)
class _Cond:
    """A conjunction of ``var = constant`` and ``var != constant``, kept consistent."""

    eq: tuple[tuple[Var, Value], ...] = ()
    neq: frozenset[tuple[Var, Value]] = frozenset()

    def subst(self) -> Subst:
        return dict(self.eq)

    def with_eq(self, pairs: Iterable[tuple[Var, Value]]) -> "_Cond | None":
        eq = dict(self.eq)
        for x, c in pairs:
            if (x in eq and eq[x] != c) or (x, c) in self.neq:
                return None
            eq[x] = c
        return _Cond(tuple(sorted(eq.items(), key=lambda p: p[0].name)), self.neq)

    def with_neq(self, x: Var, c: Value) -> "_Cond | None":
        eq = dict(self.eq)
        if x in eq:
            return self if eq[x] != c else None
        return _Cond(self.eq, self.neq | {(x, c)})


def _label_cases(atom: Atom, origin: str, auto: Automaton, relevant: list[int], cond: _Cond) -> Iterator[tuple[frozenset[int], _Cond]]:
    """Disjoint cases of which relevant nodes ``atom``'s fact carries the label of."""

    def go(i: int, labels: frozenset[int], c: _Cond) -> Iterator[tuple[frozenset[int], _Cond]]:
        if i == len(relevant):
            yield labels, c
            return
        v = relevant[i]
        s = local_match(atom, auto.nodes[v].node, origin)
        if s is None:
            yield from go(i + 1, labels, c)
            return
        pairs = sorted(s.items(), key=lambda p: p[0].name)
        with_label = c.with_eq(pairs)
        if with_label is not None:
            yield from go(i + 1, labels | {v}, with_label)
        for j, (x, value) in enumerate(pairs):  # the first position that differs
            without = c.with_eq(pairs[:j])
            without = None if without is None else without.with_neq(x, value)
            if without is not None:
                yield from go(i + 1, labels, without)

    yield from go(0, frozenset(), cond)


def instrument_not(base: Instrumented, root: PatternNode, flags: tuple[bool, bool]) -> Instrumented:
    """``NOT root`` over ``base``: the base's answers whose trees do not match the tree pattern."""
    info = number_nodes(root, base.next_node)
    auto = Automaton(info)
    b = Builder(base, *flags)
    edb = b.analysis.edb
    types: dict[str, dict[Type, int]] = {}  # relation -> its reachable types (in discovery order)
    ids: dict[Type, int] = {}

    def name(relation: str, t: Type) -> str:
        if t not in ids:
            ids[t] = len(ids)
        return f"{relation}@!{info.name}s{ids[t]}"

    def see(relation: str, t: Type) -> bool:
        known = types.setdefault(relation, {})
        if t in known:
            return False
        known[t] = len(known)
        return True

    def leaf_cases(atoms: list[Atom], cond: _Cond) -> Iterator[tuple[list[Type], _Cond]]:
        """Types of the EDB atoms (leaves) under disjoint label conditions."""
        if not atoms:
            yield [], cond
            return
        first, rest = atoms[0], atoms[1:]
        for labels, c in _label_cases(first, b.origin(first.relation), auto, auto.relevant([]), cond):
            for more, c2 in leaf_cases(rest, c):
                yield [auto.step(labels, [])] + more, c2

    def one_rule(rule: Rule) -> bool:
        """Add the typed copies of ``rule`` for the types known so far; whether a type is new."""
        new = False
        positives = [a for a in rule.positive_atoms if is_child(a)]  # agg@ filters are no children
        idb_atoms = [a for a in positives if a.relation not in edb]
        edb_atoms = [a for a in positives if a.relation in edb]
        is_copy = rule.name in b.copy_steps
        for combo in itertools.product(*(list(types.get(a.relation, {})) for a in idb_atoms)):
            idb_type = dict(zip(map(id, idb_atoms), combo))
            for edb_types, cond in leaf_cases(edb_atoms, _Cond()):
                edb_type = dict(zip(map(id, edb_atoms), edb_types))
                kids = [idb_type[id(a)] if id(a) in idb_type else edb_type[id(a)] for a in positives]
                if is_copy:  # the same tree node: the head has its only child's type
                    (t,) = kids
                    variants: Iterable[tuple[Type, _Cond]] = [(t, cond)]
                else:
                    variants = (
                        (auto.step(labels, kids), c)
                        for labels, c in _label_cases(rule.head, b.origin(rule.head.relation), auto, auto.relevant(kids), cond)
                    )
                for head_type, c in variants:
                    body = _typed_body(rule.body, idb_type, name, c)
                    if body is None:
                        continue
                    subst = c.subst()
                    head = apply_atom(rule.head, subst, name(rule.head.relation, head_type))
                    new |= see(rule.head.relation, head_type)
                    origin = None if is_copy else rule.name
                    b.add(f"{rule.name}@!{info.name}", head, body, rule.weight, origin, rule.head.relation)
        return new

    changed = True
    while changed:  # reachable types grow monotonically; each pass re-adds known rules (deduped)
        changed = False
        for rule in b.program.rules:
            if not is_filter_relation(rule.head.relation):  # agg@ copies are read as they are
                changed |= one_rule(rule)

    roots: list[str] = []
    if base.roots is None:
        for rel in sorted(edb):  # EDB facts are answers too: copy the non-matching ones
            xs = tuple(Var(f"x{i}") for i in range(b.analysis.arities[rel]))
            src = Atom(rel, xs)
            for labels, c in _label_cases(src, rel, auto, auto.relevant([]), _Cond()):
                t = auto.step(labels, [])
                if auto.accepts(t):
                    continue
                body = _typed_body((src,), {}, name, c)
                if body is None:
                    continue
                head = apply_atom(src, c.subst(), name(rel, t))
                b.add(f"edb@{rel}@!{info.name}", head, body, None, None, rel)
                roots.append(head.relation)
        base_roots = sorted(r for r in types if r not in edb)
    else:
        base_roots = list(base.roots)
    for rel in base_roots:
        roots.extend(name(rel, t) for t in types.get(rel, {}) if not auto.accepts(t))
    roots = sorted(set(roots))
    kept = cleanup(b.analysis, list(base.program.rules) + b.rules, roots)
    rule_origin = {**base.rule_origin, **b.rule_origin}
    relation_origin = {**base.relation_origin, **b.relation_origin}
    n = len(auto.nodes)
    return assemble(base, kept, roots, relation_origin, rule_origin, len(b.rules), n, base.next_node + n)


def _typed_body(body: Iterable[Literal], idb_type: dict[int, Type], name, cond: _Cond) -> list[Literal] | None:
    """The body with IDB atoms renamed to their typed relations, the label conditions applied
    (equalities substituted, inequalities appended); None when a condition is statically false."""
    renamed: list[Literal] = []
    for lit in body:
        if isinstance(lit, Atom) and id(lit) in idb_type:
            renamed.append(Atom(name(lit.relation, idb_type[id(lit)]), lit.args, False, lit.loc))
        else:
            renamed.append(lit)
    renamed.extend(Comparison("!=", x, Const(c)) for x, c in sorted(cond.neq, key=lambda p: (p[0].name, repr(p[1]))))
    # an anonymous variable that gets compared must keep its identity when the rule is printed
    anon = sorted({x for x, _ in cond.neq if x.anonymous}, key=lambda v: v.name)
    subst = cond.subst()
    if anon:
        taken = {v.name for lit in renamed for v in lit.vars()}
        fresh = (f"_a{i}" for i in itertools.count())
        names = {}
        for x in anon:
            names[x] = next(n for n in fresh if n not in taken)
        renamed = [_rename(lit, names) for lit in renamed]
        subst = {Var(names.get(x, x.name)): c for x, c in subst.items()}
    return apply_body(renamed, subst)


def _rename(lit: Literal, names: dict[Var, str]) -> Literal:
    def term(t: Term) -> Term:
        if isinstance(t, Var):
            return Var(names[t]) if t in names else t
        if isinstance(t, SkolemTerm):
            return SkolemTerm(t.fn, tuple(term(a) for a in t.args))
        return t

    if isinstance(lit, Atom):
        return Atom(lit.relation, tuple(term(a) for a in lit.args), lit.negated, lit.loc)
    return Comparison(lit.op, term(lit.left), term(lit.right), lit.loc)
