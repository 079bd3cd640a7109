"""Hash-consed conjunctive queries and Z-linear combinations of them ([GI12]).

A view's definition is a *query*: a mapping from conjunctive queries (CQs) to integer
coefficients. A negated head is coefficient -1, a repeated rule coefficient 2, and cancelling two
isomorphic rules of opposite sign is just addition. CQs are put in a canonical form up to
variable renaming (body atoms ordered by a renaming-invariant signature, ties tried in every
order, variables numbered by first occurrence) and interned, so isomorphic CQs are the same
object and isomorphism tests are pointer comparisons.

Equalities are solved by unification when a CQ is built (a failed unification is an empty CQ);
``!=`` constraints stay as literals. Terms are variables, constants and Skolem terms; two Skolem
terms are equal iff they have the same function and equal arguments (Skolem values are
deterministic texts), and a Skolem value never equals a constant.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Iterable, Mapping

from selp.language.ast import Atom, Comparison, Const, Rule, SkolemTerm, Term, Var
from selp.language.printer import format_term

Subst = dict  # Var -> Term
MAX_TIE_ORDERS = 720  # canonical search bound: 6 interchangeable atoms


def walk(t: Term, s: Mapping[Var, Term]) -> Term:
    """``t`` under substitution ``s`` (applied until fixed)."""
    while isinstance(t, Var) and t in s:
        t = s[t]
    if isinstance(t, SkolemTerm):
        return SkolemTerm(t.fn, tuple(walk(a, s) for a in t.args))
    return t


def _occurs(v: Var, t: Term, s: Mapping[Var, Term]) -> bool:
    t = walk(t, s)
    if t == v:
        return True
    return isinstance(t, SkolemTerm) and any(_occurs(v, a, s) for a in t.args)


def unify(a: Term, b: Term, s: Subst) -> bool:
    """Extend ``s`` so that ``a`` and ``b`` become equal; False (``s`` partly extended) if not."""
    a, b = walk(a, s), walk(b, s)
    if a == b:
        return True
    if isinstance(a, Var):
        if _occurs(a, b, s):
            return False
        s[a] = b
        return True
    if isinstance(b, Var):
        return unify(b, a, s)
    if isinstance(a, SkolemTerm) and isinstance(b, SkolemTerm):
        return a.fn == b.fn and len(a.args) == len(b.args) and all(unify(x, y, s) for x, y in zip(a.args, b.args))
    return False  # two different constants, or a constant and a Skolem value


def term_vars(t: Term) -> Iterable[Var]:
    if isinstance(t, Var):
        yield t
    elif isinstance(t, SkolemTerm):
        for a in t.args:
            yield from term_vars(a)


@dataclass(frozen=True, eq=False)
class CQ:
    """An interned conjunctive query: head terms, body atoms ``(relation, args)`` and ``!=``
    pairs, over variables ``V0, V1, ...`` numbered canonically. Compare with ``is``."""

    head: tuple[Term, ...]
    body: tuple[tuple[str, tuple[Term, ...]], ...]
    unequal: tuple[tuple[Term, Term], ...]
    key: str

    def __repr__(self) -> str:
        return self.key

    def vars(self) -> set[Var]:
        out: set[Var] = set()
        for t in self.head:
            out.update(term_vars(t))
        for _, args in self.body:
            for t in args:
                out.update(term_vars(t))
        return out

    def rule(self, relation: str, coefficient: int = 1, name: str | None = None) -> Rule:
        """This CQ as a rule for ``relation`` (negated head when the coefficient is negative)."""
        body: list = [Atom(r, args) for r, args in self.body]
        body += [Comparison("!=", a, b) for a, b in self.unequal]
        return Rule(name or relation, Atom(relation, self.head, coefficient < 0), tuple(body), named=False)


_INTERNED: dict[str, CQ] = {}


def _text(head, body, unequal) -> str:
    def args(ts):
        return ", ".join(format_term(t) for t in ts)

    parts = [f"{r}({args(a)})" for r, a in body] + [f"{format_term(a)} != {format_term(b)}" for a, b in unequal]
    return f"({args(head)}) :- " + ", ".join(parts)


def _rename(head, body, unequal):
    names: dict[Var, Var] = {}

    def ren(t: Term) -> Term:
        if isinstance(t, Var):
            if t not in names:
                names[t] = Var(f"V{len(names)}")
            return names[t]
        if isinstance(t, SkolemTerm):
            return SkolemTerm(t.fn, tuple(ren(a) for a in t.args))
        return t

    h = tuple(ren(t) for t in head)
    b = tuple((r, tuple(ren(t) for t in a)) for r, a in body)
    u = []
    for x, y in unequal:
        x, y = ren(x), ren(y)
        u.append((x, y) if format_term(x) <= format_term(y) else (y, x))
    return h, b, tuple(sorted(set(u), key=lambda p: (format_term(p[0]), format_term(p[1]))))


def _shape(args: tuple[Term, ...]) -> str:
    """A renaming-invariant signature of an atom's arguments: constants kept, variables by the
    position of their first occurrence within the atom."""
    seen: dict[Var, int] = {}

    def sh(t: Term) -> str:
        if isinstance(t, Var):
            seen.setdefault(t, len(seen))
            return f"?{seen[t]}"
        if isinstance(t, SkolemTerm):
            return t.fn + "(" + ",".join(sh(a) for a in t.args) + ")"
        return format_term(t)

    return ",".join(sh(t) for t in args)


def make_cq(head: Iterable[Term], body: Iterable[tuple[str, tuple[Term, ...]]], equal: Iterable[tuple[Term, Term]] = (), unequal: Iterable[tuple[Term, Term]] = ()) -> CQ | None:
    """The interned CQ of these parts, equalities solved; None when it is empty (a failed
    equality, or ``t != t``)."""
    s: Subst = {}
    for a, b in equal:
        if not unify(a, b, s):
            return None
    head = tuple(walk(t, s) for t in head)
    body = [(r, tuple(walk(t, s) for t in args)) for r, args in body]
    neq = []
    for a, b in unequal:
        a, b = walk(a, s), walk(b, s)
        probe: Subst = {}
        if a == b:
            return None
        if not unify(a, b, probe):
            continue  # never equal: the constraint always holds
        neq.append((a, b))
    groups: dict[tuple[str, str], list] = {}
    for atom in body:
        groups.setdefault((atom[0], _shape(atom[1])), []).append(atom)
    keys = sorted(groups)
    choices = []
    for k in keys:
        g = groups[k]
        if math.factorial(len(g)) > MAX_TIE_ORDERS:  # too many to try: one order by argument text
            choices.append([tuple(sorted(g, key=lambda a: _text((), [a], ())))])
        else:
            choices.append(list(itertools.permutations(g)))
    best: tuple | None = None
    for n, combo in enumerate(itertools.product(*choices)):
        if n >= MAX_TIE_ORDERS:
            break  # still a valid (if not always canonical) form: isomorphic CQs may then stay apart
        order = [a for grp in combo for a in grp]
        h, b, u = _rename(head, order, neq)
        text = _text(h, b, u)
        if best is None or text < best[0]:
            best = (text, h, b, u)
    if best is None:
        h, b, u = _rename(head, [], neq)
        best = (_text(h, b, u), h, b, u)
    text, h, b, u = best
    cq = _INTERNED.get(text)
    if cq is None:
        cq = _INTERNED[text] = CQ(h, b, u, text)
    return cq


def cq_of_rule(r: Rule) -> tuple[CQ | None, int]:
    """A rule as (CQ, coefficient): +1, or -1 for a negated head."""
    body = [(a.relation, a.args) for a in r.positive_atoms]
    eq = [(c.left, c.right) for c in r.comparisons if c.op == "="]
    ne = [(c.left, c.right) for c in r.comparisons if c.op == "!="]
    return make_cq(r.head.args, body, eq, ne), (-1 if r.head.negated else 1)


Query = dict  # CQ -> int (never 0)


def add(q: Mapping[CQ, int], cq: CQ | None, k: int) -> Query:
    """``q + k·cq``: the cancel rule is this addition (isomorphic CQs are one object)."""
    out = dict(q)
    if cq is not None and k:
        n = out.get(cq, 0) + k
        if n:
            out[cq] = n
        else:
            del out[cq]
    return out


def query_of_rules(rules: Iterable[Rule]) -> Query:
    q: Query = {}
    for r in rules:
        cq, k = cq_of_rule(r)
        q = add(q, cq, k)
    return q


def query_key(q: Mapping[CQ, int]) -> tuple:
    """A hashable identity of a query (for the search's seen-sets)."""
    return tuple(sorted((cq.key, k) for cq, k in q.items()))


def rules_of(relation: str, q: Mapping[CQ, int]) -> list[Rule]:
    """A query as rules for ``relation``; a coefficient k is |k| copies of the rule."""
    out = []
    for cq, k in sorted(q.items(), key=lambda x: x[0].key):
        out += [cq.rule(relation, k, f"{relation}_{len(out) + i + 1}") for i in range(abs(k))]
    return out
