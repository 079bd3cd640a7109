"""Non-recursive datalog over Z-relations: the checked fragment and its engine-neutral lowering.

A Z-relation maps tuples to non-zero integer counts (negative counts allowed: deltas are
Z-relations). A rule's result counts each derivation with the product of its body facts' counts;
rules for one relation add up, and a negated head ``-q(x) :- s(x).`` subtracts. A tuple is
*visible* while its count is positive. Counting diverges through recursion, so the fragment is
non-recursive; body negation and aggregates have no Z meaning here and are refused too.

Every engine stores a value as its canonical text (:func:`selp.values.format_value`: ``"Cuba"``,
``42``, ``f("Cuba",42)``): injective over all types, so equality of texts is equality of values,
and a Skolem term is plain string concatenation. :func:`lower` turns a rule into a
:class:`RulePlan` of column references and text pieces that each engine renders its own way.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Protocol, Union

from selp.errors import ProgramError
from selp.language.ast import Aggregate, Arith, Atom, Comparison, Const, Program, Rule, SkolemTerm, Term, Var
from selp.language.validate import analyze
from selp.values import Value, format_value, parse_value_text

ZRel = dict  # tuple[Value, ...] -> int (never 0)
TextRel = dict  # tuple[str, ...] -> int: the same with canonical texts

Col = tuple[int, int]  # (body atom index, column)
Piece = Union[str, Col]  # literal text, or a column's text
Expr = tuple[Piece, ...]  # concatenation of pieces


@dataclass(frozen=True)
class RulePlan:
    """A rule lowered for evaluation: body relations, equalities, filters and head texts."""

    relations: tuple[str, ...]
    arities: tuple[int, ...]
    equal: tuple[tuple[Expr, Expr], ...]  # conditions (joins, constants, '=' comparisons)
    unequal: tuple[tuple[Expr, Expr], ...]  # '!=' comparisons
    head: tuple[Expr, ...]
    sign: int  # multiplies the counts: +1, -1 for a negated head, k for a rule repeated k times


@dataclass(frozen=True)
class View:
    """An IDB relation with its rules, in evaluation order."""

    relation: str
    arity: int
    rules: tuple[Rule, ...]


def check(program: Program) -> tuple[dict[str, int], list[View]]:
    """Validate ``program`` for Z evaluation: ``(arities, views in dependency order)``; raises
    :class:`ProgramError` at the offending rule for recursion, body negation, aggregates,
    arithmetic and ordering comparisons."""
    analysis = analyze(program, counting=True)
    cyclic = [r for c in analysis.components if c.recursive for r in c.rules if any(a.relation in c.relations for a in r.positive_atoms)]
    if cyclic:
        r = cyclic[0]
        why = "counting (Z) evaluation is only for non-recursive programs (counts through a cycle are unbounded)"
        raise ProgramError(f"rule {r.name} makes {r.head.relation} recursive; {why}", r.loc)
    for r in program.rules:
        for b in r.body:
            if isinstance(b, Atom) and b.negated:
                raise ProgramError(f"rule {r.name}: body negation has no counting (Z) meaning; subtract with a negated head instead", b.loc)
            if isinstance(b, Comparison) and b.op not in ("=", "!="):
                raise ProgramError(f"rule {r.name}: counting (Z) evaluation allows only '=' and '!=' comparisons, not {b.op!r}", b.loc)
        for t in _all_terms(r):
            if isinstance(t, (Arith, Aggregate)):
                raise ProgramError(f"rule {r.name}: counting (Z) evaluation allows no arithmetic nor aggregates", r.loc)
    views = [View(rel, analysis.arities[rel], tuple(r for r in comp.rules if r.head.relation == rel)) for comp in analysis.components for rel in comp.relations]
    return analysis.arities, views


def _all_terms(r: Rule) -> list[Term]:
    out: list[Term] = []

    def walk(t: Term) -> None:
        out.append(t)
        if isinstance(t, (SkolemTerm, Arith, Aggregate)):
            for a in t.args:
                walk(a)

    for t in r.head.args:
        walk(t)
    for b in r.body:
        for t in (b.args if isinstance(b, Atom) else (b.left, b.right)):
            walk(t)
    return out


def lower(r: Rule, arities: Mapping[str, int], coefficient: int | None = None) -> RulePlan:
    """The :class:`RulePlan` of a checked rule; ``coefficient`` multiplies its counts (default
    +1, or -1 for a negated head). Rewritten plans may hold Skolem terms in body atoms, each
    variable of which some atom binds as a whole argument: they become equalities."""
    atoms = r.positive_atoms
    home: dict[Var, Expr] = {}
    equal: list[tuple[Expr, Expr]] = []
    patterns: list[tuple[Expr, Term]] = []
    for i, a in enumerate(atoms):
        for c, t in enumerate(a.args):
            here: Expr = ((i, c),)
            if isinstance(t, Var):
                if t in home:
                    equal.append((home[t], here))
                else:
                    home[t] = here
            elif isinstance(t, SkolemTerm):
                patterns.append((here, t))
            else:
                equal.append((here, (format_value(t.value),)))  # type: ignore[union-attr]
    for here, t in patterns:
        equal.append((here, _expr(t, home)))
    assigned = {i for i, _, _ in r.assignments()}
    for i, var, e in r.assignments():
        home[var] = _expr(e, home)
    unequal: list[tuple[Expr, Expr]] = []
    for i, b in enumerate(r.body):
        if isinstance(b, Comparison) and i not in assigned:
            pair = (_expr(b.left, home), _expr(b.right, home))
            (equal if b.op == "=" else unequal).append(pair)
    return RulePlan(
        tuple(a.relation for a in atoms),
        tuple(arities.get(a.relation, a.arity) for a in atoms),
        tuple(equal),
        tuple(unequal),
        tuple(_expr(t, home) for t in r.head.args),
        coefficient if coefficient is not None else (-1 if r.head.negated else 1),
    )


def _expr(t: Term, home: Mapping[Var, Expr]) -> Expr:
    if isinstance(t, Var):
        return home[t]
    if isinstance(t, Const):
        return (format_value(t.value),)
    assert isinstance(t, SkolemTerm)
    out: list[Piece] = [t.fn + "("]
    for k, a in enumerate(t.args):
        if k:
            out.append(",")
        out.extend(_expr(a, home))
    out.append(")")
    return _merge(out)


def _merge(pieces: list[Piece]) -> Expr:
    """Adjacent literal texts joined, so engines concatenate fewer pieces."""
    out: list[Piece] = []
    for p in pieces:
        if isinstance(p, str) and out and isinstance(out[-1], str):
            out[-1] = out[-1] + p
        else:
            out.append(p)
    return tuple(out)


def to_text(rel: Mapping[tuple[Value, ...], int]) -> TextRel:
    """A Z-relation of values as one of canonical texts (zero counts dropped)."""
    out: TextRel = {}
    for row, n in rel.items():
        if n:
            key = tuple(format_value(v) for v in row)
            out[key] = out.get(key, 0) + n
    return {k: n for k, n in out.items() if n}


def from_text(rel: Mapping[tuple[str, ...], int]) -> ZRel:
    """Inverse of :func:`to_text`."""
    return {tuple(parse_text(v) for v in row): n for row, n in rel.items() if n}


def parse_text(text: str) -> Value:
    """The value whose canonical text is ``text``."""
    return parse_value_text(text)


def visible(rel: Mapping[tuple, int]) -> ZRel:
    """The tuples of a Z-relation that are present: positive counts only."""
    return {row: n for row, n in rel.items() if n > 0}


@dataclass(frozen=True)
class Stats:
    """What the cost model knows of a stored relation: its rows and distinct values per column."""

    rows: int
    distinct: tuple[int, ...]


class ZEngine(Protocol):
    """Stored Z-relations on one engine, keyed by relation name (texts inside)."""

    def put(self, name: str, arity: int, rows: TextRel) -> None:
        """Store ``rows`` as relation ``name``, replacing it."""

    def define(self, name: str, arity: int, plans: list[RulePlan]) -> None:
        """Evaluate ``plans`` (all over stored relations) and store the sum as ``name``."""

    def get(self, name: str) -> TextRel:
        """The stored relation (non-zero counts)."""

    def has(self, name: str) -> bool:
        """Whether ``name`` is stored."""

    def stats(self, name: str) -> Stats:
        """Row and distinct-value counts of a stored relation."""

    def drop(self, name: str) -> None:
        """Forget a stored relation."""

    def names(self) -> list[str]:
        """The stored relations."""

    def rename(self, old: str, new: str) -> None:
        """Move relation ``old`` to the name ``new``, replacing what ``new`` held."""


def evaluate(engine: ZEngine, program: Program, edb: Mapping[str, Mapping[tuple[Value, ...], int]]) -> dict[str, ZRel]:
    """Evaluate a non-recursive ``program`` over Z-relations ``edb`` on ``engine``: every IDB
    relation with its counts (negative and positive)."""
    arities, views = check(program)
    for rel, arity in arities.items():
        if rel not in {v.relation for v in views}:
            rows = dict(edb.get(rel, {}))
            for f in program.facts:
                if f.atom.relation == rel:
                    rows[f.values] = rows.get(f.values, 0) + 1
            engine.put(rel, arity, to_text(rows))
    for v in views:
        engine.define(v.relation, v.arity, [lower(r, arities) for r in v.rules])
    return {v.relation: from_text(engine.get(v.relation)) for v in views}
