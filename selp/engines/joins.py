"""Rule bodies compiled into nested-loop index joins over Python tuples.

A :class:`BodyPlan` orders a rule's body for a given "driving" atom (the delta atom of a
semi-naive variant), applies comparisons, assignments (``c = x + 1``, see :mod:`selp.arith`) and
negations as soon as their variables are bound, and
enumerates variable bindings. It only needs a ``lookup(relation, positions, key)`` callback, so the
same plans serve the local engine, partition-local evaluation inside Spark tasks, and the top-k
engine (which needs every body instantiation, not just the head).
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Callable, Iterable, Iterator, Sequence

from selp import arith
from selp.errors import EvalError, Location
from selp.language.ast import Aggregate, Arith, Atom, Comparison, Const, Rule, SkolemTerm, Term, Var, term_vars
from selp.values import Skolem, Value

Fact = tuple[Value, ...]
# lookup(source, relation, bound positions, key values) -> matching tuples
Lookup = Callable[[str, str, tuple[int, ...], tuple[Value, ...]], Iterable[Fact]]
# contains(relation, fact) -> bool, for negated atoms
Contains = Callable[[str, Fact], bool]

_ORDER_OPS = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}


def compare(op: str, a: Value, b: Value) -> bool:
    """Comparison semantics shared by every engine: labeled nulls are equal only to themselves
    and are never ordered (an order comparison involving one is false); nor are an int and a
    string, which only meet when a pattern constant of the other type is substituted."""
    if op == "=":
        return a == b
    if op == "!=":
        return a != b
    if isinstance(a, Skolem) or isinstance(b, Skolem):
        return False
    a, b = arith.numeric_pair(a, b)
    try:
        return _ORDER_OPS[op](a, b)
    except TypeError:  # an int against a str (a pattern constant of the other type): unordered
        return False


@dataclass(frozen=True)
class _Scan:
    atom_index: int  # position in rule.body
    relation: str
    source: str  # which version of the relation to read: "full" or "delta"
    bound_pos: tuple[int, ...]  # positions whose value is known before the scan
    key: tuple[tuple[int, object], ...]  # per bound position: (0, const) or (1, var slot)
    binds: tuple[tuple[int, int], ...]  # (position, slot) newly bound by the scan
    checks: tuple[tuple[int, int], ...]  # (position, slot): repeated variable inside the atom


@dataclass(frozen=True)
class _Filter:
    op: str
    left: tuple[int, object]
    right: tuple[int, object]


@dataclass(frozen=True)
class _Assign:
    slot: int  # the variable (or hidden head slot) the value is bound to
    value: Callable[[Sequence[Value]], Value | None]
    keep: bool = False  # an aggregated value: a binding without one still is a rule instance


@dataclass(frozen=True)
class _Negation:
    relation: str
    args: tuple[tuple[int, object], ...]  # (0, const), (1, slot) or (2, None): '_' or local
    # positions holding one variable local to the negation (``not r(x, y, y)``): equal values
    eqs: tuple[tuple[int, ...], ...] = ()


class BodyPlan:
    """An executable join order for one rule (optionally driven by one delta atom)."""

    def __init__(self, rule: Rule, delta_atom: int | None = None, sizes: dict[str, int] | None = None) -> None:
        self.rule = rule
        self.slots: dict[Var, int] = {}
        positives = [i for i, b in enumerate(rule.body) if isinstance(b, Atom) and not b.negated]
        order: list[int] = []
        bound: set[Var] = set()
        remaining = list(positives)
        if delta_atom is not None:
            order.append(delta_atom)
            remaining.remove(delta_atom)
            bound.update(rule.body[delta_atom].vars())  # type: ignore[union-attr]
        sizes = sizes or {}
        while remaining:
            # greedy: most bound/constant positions first, then the smaller relation
            def score(i: int) -> tuple:
                a: Atom = rule.body[i]  # type: ignore[assignment]
                nb = sum(1 for t in a.args if isinstance(t, Const) or (isinstance(t, Var) and t in bound))
                return (-nb, sizes.get(a.relation, 0), i)

            best = min(remaining, key=score)
            remaining.remove(best)
            order.append(best)
            bound.update(rule.body[best].vars())  # type: ignore[union-attr]
        self.order = order
        steps: list[object] = []
        bound_now: set[Var] = set()
        assigned = {i: (v, e) for i, v, e in rule.assignments()}
        pending_assign = [(*assigned[i], rule.body[i].loc) for i in sorted(assigned)]
        pending_filters = [b for i, b in enumerate(rule.body) if isinstance(b, Comparison) and i not in assigned]
        pending_negs = list(rule.negative_atoms)

        def ready() -> None:
            """Add the assignments, filters and negations whose variables are bound by now."""
            progress = True
            while progress:
                progress = False
                for v, e, loc in list(pending_assign):
                    if all(x in bound_now for x in term_vars(e)):
                        steps.append(_Assign(self._slot(v), self._value(e, loc)))
                        bound_now.add(v)
                        pending_assign.remove((v, e, loc))
                        progress = True
            for f in list(pending_filters):
                if all(v in bound_now for v in f.vars()):
                    steps.append(_Filter(f.op, self._operand(f.left, f.loc), self._operand(f.right, f.loc)))
                    pending_filters.remove(f)
            for n in list(pending_negs):
                if all(v in bound_now or v in rule.negation_locals(n) for v in n.vars()):
                    steps.append(self._negation(n))
                    pending_negs.remove(n)

        # rules without positive atoms (constant comparisons and assignments) get them first
        ready()
        for i in order:
            a: Atom = rule.body[i]  # type: ignore[assignment]
            steps.append(self._scan(i, a, bound_now, "delta" if i == delta_atom else "full"))
            ready()
        assert not pending_assign and not pending_filters and not pending_negs, "validation binds every variable"
        # an expression in the head is computed like an assignment to a hidden slot, so a rule
        # instance whose expression has no value (a labeled null operand) derives nothing
        self.head_slots: dict[int, int] = {}
        for p, t in enumerate(rule.head.args):
            if isinstance(t, (Arith, Aggregate)):
                slot = self._slot(Var(f"#head{p}"))  # not a parseable name: no clash
                self.head_slots[p] = slot
                if isinstance(t, Aggregate):  # the instance's value (count ignores it)
                    steps.append(_Assign(slot, self._value(t.arg, rule.head.loc), keep=True))
                else:
                    steps.append(_Assign(slot, self._value(t, rule.head.loc)))
        self.steps = steps
        self.nslots = len(self.slots)

    def _value(self, t: Term, loc: Location) -> Callable[[Sequence[Value]], Value | None]:
        """A function from a binding to the value of ``t`` (None: no value, a labeled null was an
        operand); an overflow or a division by zero raises :class:`EvalError` naming the rule."""
        if isinstance(t, Const):
            v = t.value
            return lambda env: v
        if isinstance(t, Var):
            slot = self.slots[t]
            return lambda env: env[slot]
        assert isinstance(t, Arith), "Skolem terms are never compared or assigned"
        parts = [self._value(a, loc) for a in t.args]
        op = t.op
        rule = self.rule

        def value(env: Sequence[Value]) -> Value | None:
            args = [f(env) for f in parts]
            if any(a is None or isinstance(a, Skolem) for a in args):
                return None
            try:
                return arith.apply(op, *args)
            except arith.ArithmeticFault as err:
                raise EvalError(err.in_rule(rule.name), loc) from None

        return value

    def _operand(self, t: Term, loc: Location) -> tuple[int, object]:
        if isinstance(t, Arith):
            return (3, self._value(t, loc))
        return self._arg(t)

    def _slot(self, v: Var) -> int:
        if v not in self.slots:
            self.slots[v] = len(self.slots)
        return self.slots[v]

    def _arg(self, t: Term) -> tuple[int, object]:
        if isinstance(t, Const):
            return (0, t.value)
        assert isinstance(t, Var)
        return (1, self.slots[t])

    def _scan(self, i: int, a: Atom, bound: set[Var], source: str) -> _Scan:
        bound_pos, key, binds, checks = [], [], [], []
        local: dict[Var, int] = {}
        for p, t in enumerate(a.args):
            if isinstance(t, Const):
                bound_pos.append(p)
                key.append((0, t.value))
            elif isinstance(t, Var):
                # anonymous variables get slots too, so provenance can rebuild the matched fact
                if t in bound:
                    bound_pos.append(p)
                    key.append((1, self.slots[t]))
                elif t in local:
                    checks.append((p, local[t]))
                else:
                    s = self._slot(t)
                    local[t] = s
                    binds.append((p, s))
        bound.update(local)
        return _Scan(i, a.relation, source, tuple(bound_pos), tuple(key), tuple(binds), tuple(checks))

    def _negation(self, a: Atom) -> _Negation:
        args = []
        local = self.rule.negation_locals(a)
        where: dict[Var, list[int]] = {}
        for p, t in enumerate(a.args):
            if isinstance(t, Var) and t in local:
                args.append((2, None))
                where.setdefault(t, []).append(p)
            else:
                args.append(self._arg(t))
        eqs = tuple(tuple(ps) for v, ps in where.items() if len(ps) > 1 and not v.anonymous)
        return _Negation(a.relation, tuple(args), eqs)

    def bindings(self, lookup: Lookup, negated: Callable[[str, tuple], bool]) -> Iterator[list[Value]]:
        """Enumerate variable bindings (a list indexed by slot; reused, copy it to keep it).

        ``negated(relation, pattern)`` answers whether some fact matches ``pattern``, a tuple of
        values with ``None`` for anonymous positions and variables local to the negation; when
        a local variable is repeated (``not r(x, y, y)``) it is called as ``negated(relation,
        pattern, eqs)``, ``eqs`` the groups of positions whose values must also be equal.
        """
        env: list[Value] = [None] * self.nslots  # type: ignore[list-item]
        steps = self.steps
        n = len(steps)

        def run(k: int) -> Iterator[list[Value]]:
            if k == n:
                yield env
                return
            st = steps[k]
            if isinstance(st, _Scan):
                key = tuple(v if kind == 0 else env[v] for kind, v in st.key)  # type: ignore[index]
                binds, checks = st.binds, st.checks
                for fact in lookup(st.source, st.relation, st.bound_pos, key):
                    for p, s in binds:
                        env[s] = fact[p]
                    if checks and any(fact[p] != env[s] for p, s in checks):
                        continue
                    yield from run(k + 1)
            elif isinstance(st, _Filter):
                lk, lv = st.left
                rk, rv = st.right
                a = lv if lk == 0 else env[lv] if lk == 1 else lv(env)  # type: ignore[index, operator]
                b = rv if rk == 0 else env[rv] if rk == 1 else rv(env)  # type: ignore[index, operator]
                if a is not None and b is not None and compare(st.op, a, b):  # type: ignore[arg-type]
                    yield from run(k + 1)
            elif isinstance(st, _Assign):
                v = st.value(env)
                if v is not None or st.keep:
                    env[st.slot] = v
                    yield from run(k + 1)
            else:
                pattern = tuple(
                    None if kind == 2 else (v if kind == 0 else env[v]) for kind, v in st.args  # type: ignore[index]
                )
                found = negated(st.relation, pattern, st.eqs) if st.eqs else negated(st.relation, pattern)
                if not found:
                    yield from run(k + 1)

        return run(0)

    def term_value(self, t: Term, env: Sequence[Value]) -> Value:
        """Instantiate a term under a binding."""
        if isinstance(t, Const):
            return t.value
        if isinstance(t, Var):
            return env[self.slots[t]]
        if isinstance(t, Arith):
            return self._value(t, self.rule.loc)(env)  # type: ignore[return-value]
        assert isinstance(t, SkolemTerm)
        return Skolem(t.fn, tuple(self.term_value(a, env) for a in t.args))

    def head_builder(self) -> Callable[[Sequence[Value]], Fact]:
        """A fast function from a binding to the head fact."""
        parts = []
        for p, t in enumerate(self.rule.head.args):
            if p in self.head_slots:
                parts.append((1, self.head_slots[p]))
            elif isinstance(t, Const):
                parts.append((0, t.value))
            elif isinstance(t, Var):
                parts.append((1, self.slots[t]))
            else:
                parts.append((2, t))
        if all(kind == 1 for kind, _ in parts):
            slots = [s for _, s in parts]
            return lambda env: tuple(env[s] for s in slots)  # type: ignore[misc]
        return lambda env: tuple(
            v if kind == 0 else env[v] if kind == 1 else self.term_value(v, env)  # type: ignore[misc]
            for kind, v in parts
        )

    def atom_builder(self, atom_index: int) -> Callable[[Sequence[Value]], Fact]:
        """A fast function from a binding to the fact body atom ``atom_index`` matched."""
        a: Atom = self.rule.body[atom_index]  # type: ignore[assignment]
        if all(isinstance(t, Var) for t in a.args):
            slots = [self.slots[t] for t in a.args]  # type: ignore[index]
            return lambda env: tuple(env[s] for s in slots)  # type: ignore[misc]
        return lambda env: self.atom_fact(atom_index, env)

    def atom_fact(self, atom_index: int, env: Sequence[Value]) -> Fact:
        """The body fact that atom ``atom_index`` matched under ``env`` (for provenance)."""
        a: Atom = self.rule.body[atom_index]  # type: ignore[assignment]
        return tuple(self.term_value(t, env) for t in a.args)
