"""Syntax tree of datalog^sk programs.

Nodes are immutable and compare structurally; source locations ride along but are excluded from
equality, so a program equals its own pretty-printed-and-reparsed copy.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Iterator, Sequence, Union

from selp.errors import Location
from selp.values import Value

NOWHERE = Location()
ANON_PREFIX = "_#"  # anonymous variables get unparseable names, so they never clash with users'


@dataclass(frozen=True)
class Var:
    """A variable; anonymous ``_`` occurrences become distinct ``_#n`` variables."""

    name: str

    @property
    def anonymous(self) -> bool:
        return self.name.startswith(ANON_PREFIX)


@dataclass(frozen=True)
class Const:
    """A constant: a string, an integer or a float."""

    value: Value


@dataclass(frozen=True)
class SkolemTerm:
    """A Skolem function applied to terms; allowed only in rule heads."""

    fn: str
    args: tuple["Term", ...]


ARITH_OPS = ("+", "-", "*", "/")


@dataclass(frozen=True)
class Arith:
    """An arithmetic expression: ``args[0] op args[1]``, or ``-args[0]`` (op ``-``, one operand).

    Allowed in heads, in comparisons and on the value side of an assignment ``c = x + 1``. Like
    :class:`SkolemTerm` it is a compound term with ``args``, so passes over terms recurse into
    both alike (an aggregate head term would be one more such node)."""

    op: str
    args: tuple["Term", ...]


AGGREGATE_FNS = ("min", "max", "count", "sum")


@dataclass(frozen=True)
class Aggregate:
    """An aggregate head argument ``fn(args[0])`` (``min``, ``max``, ``count``, ``sum``): the
    head's other arguments are the group key; see docs/language.md for what it counts and adds.
    Allowed only as a top-level argument of a rule head, at most one per head."""

    fn: str
    args: tuple["Term", ...]

    @property
    def arg(self) -> "Term":
        return self.args[0]


Term = Union[Var, Const, SkolemTerm, Arith, Aggregate]


def term_vars(t: Term) -> Iterator[Var]:
    """Variables occurring in a term (recursing into Skolem terms, expressions and aggregates)."""
    if isinstance(t, Var):
        yield t
    elif isinstance(t, (SkolemTerm, Arith, Aggregate)):
        for a in t.args:
            yield from term_vars(a)


def has_arith(t: Term) -> bool:
    """Whether ``t`` is or contains an arithmetic expression."""
    if isinstance(t, Arith):
        return True
    return isinstance(t, (SkolemTerm, Aggregate)) and any(has_arith(a) for a in t.args)


@dataclass(frozen=True)
class Spec:
    """Where a relation's head aggregates: their positions (ascending) and functions, and the
    relation's arity; the other positions are the group key (what they compute:
    :mod:`selp.aggregate`)."""

    positions: tuple[int, ...]
    fns: tuple[str, ...]
    arity: int

    @cached_property
    def keys(self) -> tuple[int, ...]:
        """The group key's positions."""
        return tuple(i for i in range(self.arity) if i not in self.positions)

    @property
    def selective(self) -> bool:
        """Whether every aggregate is min or max (the only ones allowed through recursion)."""
        return all(fn in ("min", "max") for fn in self.fns)

    def key(self, fact: Sequence[Value]) -> tuple[Value, ...]:
        """The group of a head tuple: every value but the aggregated ones."""
        if len(self.positions) == 1:  # the common case, per candidate: slices are cheapest
            p = self.positions[0]
            return tuple(fact[:p]) + tuple(fact[p + 1:])
        return tuple(fact[i] for i in self.keys)

    def values(self, fact: Sequence[Value]) -> tuple[Value, ...]:
        """The aggregated values of a head tuple, in position order."""
        return tuple(fact[p] for p in self.positions)

    def fact(self, key: Sequence[Value], values: Sequence[Value]) -> tuple[Value, ...]:
        """The fact of group ``key`` whose aggregated values are ``values``."""
        out: list[Value] = []
        k = iter(key)
        v = dict(zip(self.positions, values))
        for i in range(self.arity):
            out.append(v[i] if i in v else next(k))
        return tuple(out)


def spec_of(head_args: Sequence[object], fns: dict[int, str]) -> Spec:
    """The :class:`Spec` of a head with ``len(head_args)`` arguments aggregating ``fns``
    (``{position: fn}``)."""
    positions = tuple(sorted(fns))
    return Spec(positions, tuple(fns[p] for p in positions), len(head_args))


@dataclass(frozen=True)
class Atom:
    """``R(t1, ..., tn)``, possibly negated (``not R(...)``) when it occurs in a body."""

    relation: str
    args: tuple[Term, ...]
    negated: bool = False
    loc: Location = field(default=NOWHERE, compare=False, repr=False)

    @property
    def arity(self) -> int:
        return len(self.args)

    def vars(self) -> Iterator[Var]:
        for a in self.args:
            yield from term_vars(a)


COMPARISON_OPS = ("=", "!=", "<", "<=", ">", ">=")


@dataclass(frozen=True)
class Comparison:
    """``left OP right`` over variables, constants and arithmetic; ``c = e`` binds ``c`` when
    nothing else does (see :meth:`Rule.assignments`)."""

    op: str
    left: Term
    right: Term
    loc: Location = field(default=NOWHERE, compare=False, repr=False)

    def vars(self) -> Iterator[Var]:
        yield from term_vars(self.left)
        yield from term_vars(self.right)


Literal = Union[Atom, Comparison]


@dataclass(frozen=True)
class Rule:
    """``name (weight): head :- body.``; ``weight`` is the raw text the ranking monoid interprets."""

    name: str
    head: Atom
    body: tuple[Literal, ...]
    weight: str | None = None
    named: bool = True  # False when the name was generated; the printer then omits it
    loc: Location = field(default=NOWHERE, compare=False, repr=False)

    @property
    def aggregate(self) -> tuple[int, Aggregate] | None:
        """The head position and term of the rule's first aggregate, if its head has one."""
        aggs = self.aggregates
        return aggs[0] if aggs else None

    @property
    def aggregates(self) -> tuple[tuple[int, Aggregate], ...]:
        """The head positions and terms of every aggregate of the rule's head, in order."""
        return tuple((p, t) for p, t in enumerate(self.head.args) if isinstance(t, Aggregate))

    @property
    def positive_atoms(self) -> list[Atom]:
        return [b for b in self.body if isinstance(b, Atom) and not b.negated]

    @property
    def negative_atoms(self) -> list[Atom]:
        return [b for b in self.body if isinstance(b, Atom) and b.negated]

    @property
    def comparisons(self) -> list[Comparison]:
        return [b for b in self.body if isinstance(b, Comparison)]

    def assignments(self) -> list[tuple[int, Var, Term]]:
        """The comparisons ``c = e`` that bind a variable, in an order that evaluates them:
        ``(body index, c, e)`` where ``c`` occurs in no positive atom nor earlier assignment and
        every variable of ``e`` does (``e = c`` counts too). The other comparisons are filters."""
        bound: set[Var] = {v for a in self.positive_atoms for v in a.vars()}
        out: list[tuple[int, Var, Term]] = []
        pending = [i for i, b in enumerate(self.body) if isinstance(b, Comparison) and b.op == "="]
        changed = True
        while changed:
            changed = False
            for i in list(pending):
                c: Comparison = self.body[i]  # type: ignore[assignment]
                for var, expr in ((c.left, c.right), (c.right, c.left)):
                    if isinstance(var, Var) and not var.anonymous and var not in bound and all(v in bound for v in term_vars(expr)):
                        out.append((i, var, expr))
                        bound.add(var)
                        pending.remove(i)
                        changed = True
                        break
        return out

    def negation_locals(self, atom: Atom) -> frozenset[Var]:
        """The variables of the negated ``atom`` that occur nowhere else in the rule (``_``
        included): ``not r(x, y, y)`` means "no ``y`` with ``r(x, y, y)``", so they are
        existentially quantified inside the negation (validation refuses a variable shared by
        negated atoms only)."""
        elsewhere: set[Var] = set(self.head.vars())
        for b in self.body:
            if b is not atom:
                elsewhere.update(b.vars())
        # '_' is always "any value", even where a rewrite reuses one variable object elsewhere
        return frozenset(v for v in atom.vars() if v.anonymous or v not in elsewhere)


@dataclass(frozen=True)
class Fact:
    """A ground inline fact with an optional weight."""

    atom: Atom
    weight: str | None = None
    loc: Location = field(default=NOWHERE, compare=False, repr=False)

    @property
    def values(self) -> tuple[Value, ...]:
        return tuple(a.value for a in self.atom.args)  # type: ignore[union-attr]


COLUMN_TYPES = ("str", "int", "float")


@dataclass(frozen=True)
class Decl:
    """``.decl R(col: type, ...)``: column names (used as file headers) and types."""

    relation: str
    columns: tuple[tuple[str, str], ...]
    loc: Location = field(default=NOWHERE, compare=False, repr=False)

    @property
    def arity(self) -> int:
        return len(self.columns)


@dataclass(frozen=True)
class Program:
    """A datalog^sk program: declarations, rules and inline facts, in source order."""

    decls: tuple[Decl, ...] = ()
    rules: tuple[Rule, ...] = ()
    facts: tuple[Fact, ...] = ()
    source: str | None = field(default=None, compare=False)

    @property
    def idb(self) -> set[str]:
        """Relations defined by rules."""
        return {r.head.relation for r in self.rules}

    def relations(self) -> dict[str, int]:
        """Every relation mentioned, with its arity (first occurrence wins; see validation)."""
        out: dict[str, int] = {}
        for d in self.decls:
            out.setdefault(d.relation, d.arity)
        for r in self.rules:
            out.setdefault(r.head.relation, r.head.arity)
            for b in r.body:
                if isinstance(b, Atom):
                    out.setdefault(b.relation, b.arity)
        for f in self.facts:
            out.setdefault(f.atom.relation, f.atom.arity)
        return out

    def aggregated(self) -> dict[str, Spec]:
        """The relations whose rules aggregate, with where and how (of its first aggregate rule;
        validation checks that all its rules agree)."""
        out: dict[str, Spec] = {}
        for r in self.rules:
            aggs = r.aggregates
            if aggs and r.head.relation not in out:
                out[r.head.relation] = spec_of(r.head.args, {p: t.fn for p, t in aggs})
        return out

    def rule(self, name: str) -> Rule:
        for r in self.rules:
            if r.name == name:
                return r
        raise KeyError(name)
