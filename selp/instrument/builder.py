"""The parts of an instrumentation that Algorithm 1 (:mod:`selp.instrument.instrument`) and the
negation compiler (:mod:`selp.instrument.negation`) share: naming pattern nodes, the
:class:`Instrumented` program, matching a node's label against an atom, substituting into rules,
the :class:`Builder` that collects the generated rules with their origins, and assembling and
cleaning up the result.
"""

from __future__ import annotations

import dataclasses
import itertools
from dataclasses import dataclass, field
from typing import Iterable

from selp.engines.joins import compare
from selp.errors import SelpError
from selp.language.ast import NOWHERE, Arith, Atom, Comparison, Const, Literal, Program, Rule, SkolemTerm, Term, Var
from selp.language.pattern import DESCENDANT, PatternNode
from selp.language.validate import Analysis, analyze
from selp.instrument.witness import is_filter_relation
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
        else:  # a Skolem term builds a labeled null, which equals no constant (an expression
            # in a head was made an assignment first: see instrument.head_expressions_assigned)
            return None
    return subst


def is_child(lit: Literal) -> bool:
    """Whether a body literal is a child of a derivation-tree node: a positive atom that is not a
    filter over an ``agg@`` relation (:mod:`selp.instrument.witness`)."""
    return isinstance(lit, Atom) and not lit.negated and not is_filter_relation(lit.relation)


def _apply_term(t: Term, s: Subst) -> Term:
    if isinstance(t, Var):
        return Const(s[t]) if t in s else t
    if isinstance(t, SkolemTerm):
        return SkolemTerm(t.fn, tuple(_apply_term(a, s) for a in t.args))
    if isinstance(t, Arith):
        return Arith(t.op, tuple(_apply_term(a, s) for a in t.args))
    return t


def apply_atom(a: Atom, s: Subst, relation: str | None = None) -> Atom:
    """``a`` with ``s`` substituted, renamed to ``relation`` when given."""
    return Atom(relation or a.relation, tuple(_apply_term(t, s) for t in a.args), a.negated, a.loc)


def apply_body(body: Iterable[Literal], s: Subst) -> list[Literal] | None:
    """Substitute into a body; None when a comparison of two constants is false."""
    out: list[Literal] = []
    for b in body:
        if isinstance(b, Atom):
            out.append(apply_atom(b, s))
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


def _string_operand(t: Term) -> bool:
    if isinstance(t, Arith):
        return any(isinstance(a, Const) and isinstance(a.value, str) or _string_operand(a) for a in t.args)
    if isinstance(t, SkolemTerm):
        return any(_string_operand(a) for a in t.args)
    return False


def _string_in_arithmetic(head: Atom, body: Iterable[Literal]) -> bool:
    """Whether a string constant stands as an operand of an arithmetic expression of the rule."""
    terms: list[Term] = list(head.args)
    for b in body:
        terms.extend(b.args if isinstance(b, Atom) else (b.left, b.right))
    return any(_string_operand(t) for t in terms)


def _merge(a: Subst, b: Subst) -> Subst | None:
    out = dict(a)
    for k, v in b.items():
        if k in out and out[k] != v:
            return None
        out[k] = v
    return out


class Builder:
    """The rules one pattern adds to a base instrumentation, with their origins in P (Algorithm 1's
    lines 3-15 and HandleEDB; the negation compiler adds its own rules through :meth:`add`)."""

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
        self.locs = {r.name: r.loc for r in self.program.rules}
        self.seen: set[tuple] = set()  # (head, body) of added rules, to avoid duplicates

    def add(self, base: str, head: Atom, body: list[Literal], weight: str | None, origin: str | None, origin_rel: str) -> None:
        """Add a rule named after ``base`` (made unique) whose origin is the rule ``origin`` of the
        base (None: a copy step) and whose head stands for ``origin_rel``; duplicates are skipped."""
        # two rules of P may be identical but are different rules (different trees): the origin
        # is part of a new rule's identity
        key = (head, tuple(body), origin)
        if key in self.seen:
            return
        if _string_in_arithmetic(head, body):
            # a pattern constant substituted into arithmetic: P type-checked, so a variable under
            # arithmetic is never a string and this rule has no instance (evaluating it would be
            # a type error instead)
            return
        self.seen.add(key)
        name = base
        n = 1
        while name in self.taken:
            n += 1
            name = f"{base}@{n}"
        self.taken.add(name)
        # a copy of a rule keeps its place in the source, so evaluation errors point there
        loc = self.locs.get(origin) if origin is not None else None
        self.rules.append(Rule(name, head, tuple(body), weight, True, loc or NOWHERE))
        self.rule_origin[name] = None if origin is None else self.base.rule_origin[origin]
        self.relation_origin[head.relation] = self.base.relation_origin.get(origin_rel, origin_rel)

    def origin(self, relation: str) -> str:
        """The relation of P that ``relation`` stands for."""
        return self.base.relation_origin.get(relation, relation)

    def node(self, info: NodeInfo) -> None:
        """Lines 3-15 of Algorithm 1 for one pattern node."""
        v = info.name
        for rule in self.program.rules:
            if is_filter_relation(rule.head.relation):
                continue  # agg@ copies compute P's aggregated facts: no pattern node is matched there
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
            body = apply_body(rule.body, a)
            if body is None:
                continue
            head = apply_atom(rule.head, a, annotated(rule.head.relation, v))
            if info.is_leaf:
                self.add(f"{rule.name}@{v}", head, body, rule.weight, rule.name, rule.head.relation)
            else:
                for subst, new_body in self.expansions(body, info.children):
                    full = apply_body(new_body, subst)
                    if full is None:
                        continue
                    self.add(f"{rule.name}@{v}", apply_atom(head, subst), full, rule.weight, rule.name, rule.head.relation)
        if info.transitive:
            for rel in sorted(r for r in self.analysis.idb if not is_filter_relation(r)):
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
                if is_filter_relation(rule.head.relation):
                    continue
                for i, b in enumerate(rule.body):
                    if is_child(b):
                        body = list(rule.body)
                        body[i] = Atom(annotated(b.relation, v, True), b.args, False, b.loc)
                        head = Atom(annotated(rule.head.relation, v, True), rule.head.args, False, rule.head.loc)
                        self.add(f"{rule.name}@{v}t", head, body, rule.weight, rule.name, rule.head.relation)

    def expansions(self, body: list[Literal], children: tuple[NodeInfo, ...]) -> Iterable[tuple[Subst, list[Literal]]]:
        """ex(A(β), children): one-to-one maps of children onto positive body atoms."""
        positions = [i for i, b in enumerate(body) if is_child(b)]
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
            src = apply_atom(Atom(rel, xs), a)
            targets = [annotated(rel, info.name)]
            if info.transitive:
                targets.append(annotated(rel, info.name, True))
            for t in targets:
                self.add(f"edb@{t}", apply_atom(src, {}, t), [src], None, None, rel)


def assemble(base: Instrumented, kept: list[Rule], roots: list[str], relation_origin: dict, rule_origin: dict,
             generated: int, nodes: int, next_node: int) -> Instrumented:
    """The instrumentation of ``base`` made of the ``kept`` rules and the live ``roots``, its statistics
    those of ``base`` plus ``generated`` rules and ``nodes`` pattern nodes."""
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


def cleanup(analysis: Analysis, rules: list[Rule], roots: list[str]) -> list[Rule]:
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
