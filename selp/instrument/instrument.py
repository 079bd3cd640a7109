"""Instrumentation of a program with a derivation-tree pattern (paper 001, Algorithm 1).

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
from dataclasses import dataclass, field
from typing import Iterable

from selp.language.ast import Atom, Comparison, Const, Literal, Program, Rule, SkolemTerm, Term, Var
from selp.language.pattern import DESCENDANT, And, Not, Or, Pattern, PatternNode, TreePattern
from selp.language.validate import Analysis, analyze
from selp.engines.joins import compare
from selp.instrument.copies import copies, replace_copies
from selp.values import Value

Subst = dict[Var, Value]


@dataclass(frozen=True)
class NodeInfo:
    """A pattern node with its preorder name and how it hangs off its parent."""

    name: str  # "v0", "v1", ...
    node: PatternNode
    transitive: bool  # reached from its parent by '//'
    children: tuple["NodeInfo", ...]

    @property
    def is_leaf(self) -> bool:
        return not self.children


def number_nodes(root: PatternNode, start: int = 0) -> NodeInfo:
    """Name the nodes ``v<start>, ...`` in preorder."""
    counter = itertools.count(start)

    def walk(node: PatternNode, transitive: bool) -> NodeInfo:
        name = f"v{next(counter)}"
        kids = tuple(walk(c, edge == DESCENDANT) for edge, c in node.children)
        return NodeInfo(name, node, transitive, kids)

    return walk(root, False)


def annotated(relation: str, node: str, transitive: bool = False) -> str:
    """The instrumented relation name: ``dealsWith@v1`` or ``dealsWith@v1t``."""
    return f"{relation}@{node}{'t' if transitive else ''}"


@dataclass
class Instrumented:
    """An instrumented program with the maps back to the original program."""

    program: Program
    roots: tuple[str, ...] | None  # the relations holding the answers; None: every relation (no pattern yet)
    relation_origin: dict[str, str]  # every relation of ``program`` -> its relation in P
    rule_origin: dict[str, str | None]  # every rule -> its rule in P; None for a copy step
    stats: dict[str, int | float] = field(default_factory=dict)
    next_node: int = 0  # the next free pattern-node number (v<next_node>)


def local_match(atom: Atom, node: PatternNode, relation: str | None = None) -> Subst | None:
    """The unique assignment under which ``atom`` carries ``node``'s label, or None.

    Variables at constant positions map to those constants; variables at wildcard positions stay
    themselves (absent from the result). A constant or Skolem term must agree with the label.
    ``relation`` is the name to match the label's glob against (the atom's origin relation when
    the program is itself instrumented); it defaults to the atom's own.
    """
    if not node.matches_relation(relation or atom.relation):
        return None
    if node.args is None:
        return {}
    if len(node.args) != atom.arity:
        return None
    subst: Subst = {}
    for want, term in zip(node.args, atom.args):
        if want is None:
            continue
        if isinstance(term, Var):
            if term in subst and subst[term] != want:
                return None
            subst[term] = want
        elif isinstance(term, Const):
            if term.value != want:
                return None
        else:  # a Skolem term builds a labeled null, which equals no constant
            return None
    return subst


def _apply_term(t: Term, s: Subst) -> Term:
    if isinstance(t, Var):
        return Const(s[t]) if t in s else t
    if isinstance(t, SkolemTerm):
        return SkolemTerm(t.fn, tuple(_apply_term(a, s) for a in t.args))
    return t


def _apply_atom(a: Atom, s: Subst, relation: str | None = None) -> Atom:
    return Atom(relation or a.relation, tuple(_apply_term(t, s) for t in a.args), a.negated, a.loc)


def _apply_body(body: Iterable[Literal], s: Subst) -> list[Literal] | None:
    """Substitute into a body; None when a comparison of two constants is false."""
    out: list[Literal] = []
    for b in body:
        if isinstance(b, Atom):
            out.append(_apply_atom(b, s))
            continue
        left, right = _apply_term(b.left, s), _apply_term(b.right, s)
        if isinstance(left, Const) and isinstance(right, Const):
            if isinstance(left.value, int) != isinstance(right.value, int):
                # a pattern constant of the other type (check_pattern reports it): never equal
                holds = b.op == "!="
            else:
                holds = compare(b.op, left.value, right.value)
            if not holds:
                return None
            continue  # statically true
        out.append(Comparison(b.op, left, right, b.loc))
    return out


def _merge(a: Subst, b: Subst) -> Subst | None:
    out = dict(a)
    for k, v in b.items():
        if k in out and out[k] != v:
            return None
        out[k] = v
    return out


class _Builder:
    def __init__(self, base: Instrumented, propagate_constants: bool, edb_leaves: bool) -> None:
        self.base = base
        self.analysis = analyze(base.program)
        self.program = base.program
        self.propagate_constants = propagate_constants
        self.edb_leaves = edb_leaves
        # copy steps of the base are transparent: they stand for their child's derivation
        self.copy_steps = {n for n, o in base.rule_origin.items() if o is None}
        self.rules: list[Rule] = []
        self.rule_origin: dict[str, str | None] = {}
        self.relation_origin: dict[str, str] = {}
        self.taken = {r.name for r in self.program.rules}
        self.seen: set[tuple] = set()  # (head, body) of added rules, to avoid duplicates

    def add(self, base: str, head: Atom, body: list[Literal], weight: str | None, origin: str | None, origin_rel: str) -> None:
        # two rules of P may be identical but are different rules (different trees): the origin
        # is part of a new rule's identity
        key = (head, tuple(body), origin)
        if key in self.seen:
            return
        self.seen.add(key)
        name = base
        n = 1
        while name in self.taken:
            n += 1
            name = f"{base}@{n}"
        self.taken.add(name)
        self.rules.append(Rule(name, head, tuple(body), weight, True))
        self.rule_origin[name] = None if origin is None else self.base.rule_origin[origin]
        self.relation_origin[head.relation] = self.base.relation_origin.get(origin_rel, origin_rel)

    def origin(self, relation: str) -> str:
        return self.base.relation_origin.get(relation, relation)

    def node(self, info: NodeInfo) -> None:
        """Lines 3-15 of Algorithm 1 for one pattern node."""
        v = info.name
        for rule in self.program.rules:
            if rule.name in self.copy_steps:
                (src,) = rule.positive_atoms  # plus, after a NOT, label conditions
                self.add(
                    f"{rule.name}@{v}",
                    Atom(annotated(rule.head.relation, v), rule.head.args),
                    [Atom(annotated(src.relation, v), src.args)] + [b for b in rule.body if b is not src],
                    None,
                    None,
                    rule.head.relation,
                )
                continue
            a = local_match(rule.head, info.node, self.origin(rule.head.relation))
            if a is None:
                continue
            body = _apply_body(rule.body, a)
            if body is None:
                continue
            head = _apply_atom(rule.head, a, annotated(rule.head.relation, v))
            if info.is_leaf:
                self.add(f"{rule.name}@{v}", head, body, rule.weight, rule.name, rule.head.relation)
            else:
                for subst, new_body in self.expansions(body, info.children):
                    full = _apply_body(new_body, subst)
                    if full is None:
                        continue
                    self.add(f"{rule.name}@{v}", _apply_atom(head, subst), full, rule.weight, rule.name, rule.head.relation)
        if info.transitive:
            for rel in sorted(self.analysis.idb):
                xs = tuple(Var(f"x{i}") for i in range(self.analysis.arities[rel]))
                self.add(
                    f"copy@{annotated(rel, v, True)}",
                    Atom(annotated(rel, v, True), xs),
                    [Atom(annotated(rel, v), xs)],
                    None,
                    None,
                    rel,
                )
            for rule in self.program.rules:  # tr-ex: one positive atom carries the match
                for i, b in enumerate(rule.body):
                    if isinstance(b, Atom) and not b.negated:
                        body = list(rule.body)
                        body[i] = Atom(annotated(b.relation, v, True), b.args, False, b.loc)
                        head = Atom(annotated(rule.head.relation, v, True), rule.head.args, False, rule.head.loc)
                        self.add(f"{rule.name}@{v}t", head, body, rule.weight, rule.name, rule.head.relation)

    def expansions(self, body: list[Literal], children: tuple[NodeInfo, ...]) -> Iterable[tuple[Subst, list[Literal]]]:
        """ex(A(β), children): one-to-one maps of children onto positive body atoms."""
        positions = [i for i, b in enumerate(body) if isinstance(b, Atom) and not b.negated]
        for chosen in itertools.permutations(positions, len(children)):
            subst: Subst | None = {}
            new_body = list(body)
            for child, i in zip(children, chosen):
                atom: Atom = body[i]  # type: ignore[assignment]
                relation = annotated(atom.relation, child.name, child.transitive)
                edb_leaf = self.edb_leaves and child.is_leaf and atom.relation in self.analysis.edb
                if not child.transitive and (self.propagate_constants or edb_leaf):
                    b = local_match(atom, child.node, self.origin(atom.relation))
                    subst = None if b is None else _merge(subst, b)  # type: ignore[arg-type]
                    if subst is None:
                        break
                    if edb_leaf:
                        relation = atom.relation  # the EDB fact itself carries the label
                new_body[i] = Atom(relation, atom.args, False, atom.loc)
            if subst is not None:
                yield subst, new_body

    def handle_edb(self, info: NodeInfo) -> None:
        """HandleEDB: EDB facts that locally match a leaf ``v`` are copied into T@v / T@vt."""
        if not info.is_leaf:
            return
        for rel in sorted(self.analysis.edb):
            xs = tuple(Var(f"x{i}") for i in range(self.analysis.arities[rel]))
            a = local_match(Atom(rel, xs), info.node)
            if a is None:
                continue
            src = _apply_atom(Atom(rel, xs), a)
            targets = [annotated(rel, info.name)]
            if info.transitive:
                targets.append(annotated(rel, info.name, True))
            for t in targets:
                self.add(f"edb@{t}", _apply_atom(src, {}, t), [src], None, None, rel)


def identity(analysis: Analysis) -> Instrumented:
    """P itself as an instrumentation with no pattern: every relation and rule is its own origin.

    Rule names are made explicit so that they survive printing after rules are removed."""
    rules = tuple(dataclasses.replace(r, named=True) for r in analysis.program.rules)
    program = dataclasses.replace(analysis.program, rules=rules)
    return Instrumented(
        program,
        None,
        {rel: rel for rel in analysis.arities},
        {r.name: r.name for r in rules},
        {"rules_before": len(rules), "rules_generated": 0, "rules_after": len(rules), "pattern_nodes": 0},
    )


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
    result = _apply(identity(analysis), pattern, flags)
    if optimize if merge_copies is None else merge_copies:
        result = _without_copies(result)
    result.stats["rules_before"] = len(analysis.program.rules)
    result.stats["seconds"] = time.perf_counter() - t0
    return result


def _without_copies(inst: Instrumented) -> Instrumented:
    """``inst`` reading P's relations in place of their exact copies (see :mod:`selp.instrument.copies`)."""
    rules = list(inst.program.rules)
    rename = copies(rules, inst.relation_origin, inst.rule_origin)
    if not rename:
        return inst
    kept, roots = replace_copies(rules, list(inst.roots or ()), rename)
    out = _result(inst, kept, roots, inst.relation_origin, inst.rule_origin, 0, 0, inst.next_node)
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
        from selp.instrument.negation import instrument_not  # it builds on this module

        return instrument_not(base, inner.root, flags)
    raise TypeError(f"not a pattern: {pattern!r}")


def _instrument_tree(base: Instrumented, root: PatternNode, flags: tuple[bool, bool]) -> Instrumented:
    """Algorithm 1 over ``base`` (P itself, or a previous conjunct's output)."""
    info = number_nodes(root, base.next_node)
    b = _Builder(base, *flags)

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
    kept = _cleanup(b.analysis, list(base.program.rules) + b.rules, roots)
    rule_origin = {**base.rule_origin, **b.rule_origin}
    relation_origin = {**base.relation_origin, **b.relation_origin}
    return _result(base, kept, roots, relation_origin, rule_origin, len(b.rules), len(nodes), base.next_node + len(nodes))


def _result(base: Instrumented, kept: list[Rule], roots: list[str], relation_origin: dict, rule_origin: dict,
            generated: int, nodes: int, next_node: int) -> Instrumented:
    program = dataclasses.replace(base.program, rules=tuple(kept))
    relations = program.relations()
    live = {r.head.relation for r in kept}
    return Instrumented(
        program,
        tuple(r for r in roots if r in live),
        {rel: relation_origin.get(rel, rel) for rel in relations},
        {r.name: rule_origin[r.name] for r in kept},
        {
            "rules_before": base.stats.get("rules_before", 0),
            "rules_generated": base.stats.get("rules_generated", 0) + generated,
            "rules_after": len(kept),
            "pattern_nodes": base.stats.get("pattern_nodes", 0) + nodes,
        },
        next_node,
    )


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
    kept = _cleanup(analyze(base.program), list(rules.values()), sorted(roots))
    generated = sum(p.stats.get("rules_generated", 0) for p in parts) - base.stats.get("rules_generated", 0) * len(parts)
    nodes = sum(p.stats.get("pattern_nodes", 0) for p in parts) - base.stats.get("pattern_nodes", 0) * len(parts)
    next_node = parts[-1].next_node if parts else base.next_node
    return _result(base, kept, sorted(roots), relation_origin, rule_origin, generated, nodes, next_node)


def _cleanup(analysis: Analysis, rules: list[Rule], roots: list[str]) -> list[Rule]:
    """Drop rules that can never fire or that no root relation needs."""
    derivable = set(analysis.edb)
    changed = True
    while changed:
        changed = False
        for r in rules:
            if r.head.relation not in derivable and all(a.relation in derivable for a in r.positive_atoms):
                derivable.add(r.head.relation)
                changed = True
    live = [r for r in rules if all(a.relation in derivable for a in r.positive_atoms)]
    needed = set(roots)
    frontier = list(roots)
    by_head: dict[str, list[Rule]] = {}
    for r in live:
        by_head.setdefault(r.head.relation, []).append(r)
    while frontier:
        rel = frontier.pop()
        for r in by_head.get(rel, []):
            for a in r.body:
                if isinstance(a, Atom) and a.relation not in needed:
                    needed.add(a.relation)
                    frontier.append(a.relation)
    return [r for r in live if r.head.relation in needed]
