"""The aggregates of datalog^sk (``min``, ``max``, ``count``, ``sum``), one definition for every engine.

A rule ``R(k1, ..., agg(e)) :- body.`` groups its *rule instances* -- the distinct bindings of the
body's variables (``_`` included, variables local to a negation not) -- by the values of the
head's other arguments; the rules of ``R`` pool their instances (an instance is a rule and a
binding, so two rules never share one). Per group:

* ``count`` is the number of instances (an ``int``);
* ``sum`` adds ``e`` over the instances (an ``int`` sum outside 64 bits is an error; a ``float``
  sum adds the values in ascending order, so every engine rounds alike);
* ``min``/``max`` is the least/greatest ``e`` (numbers, or strings by code point).

An instance whose ``e`` has no value (a labeled null, or arithmetic over one) is counted by
``count`` and ignored by the others; a group with no value left has no fact.

``min``/``max`` may aggregate through recursion: evaluation then keeps one best value per group
and propagates only improvements (:func:`better`); :func:`diverges` is the bound past which a
recursion that keeps improving (a negative-weight cycle) is an error instead of a hang.
"""

from __future__ import annotations

from functools import reduce
from typing import Iterable

from selp import arith
from selp.errors import EvalError, Location
from selp.values import INT64_MAX, INT64_MIN, Skolem, Value

SELECTIVE = ("min", "max")  # the aggregates allowed through recursion


def has_value(v: Value | None) -> bool:
    """Whether an aggregated value counts for min/max/sum (not missing, not a labeled null)."""
    return v is not None and not isinstance(v, Skolem)


def fold(fn: str, values: list[Value | None], rule: str, loc: Location, arg: str) -> Value | None:
    """The aggregate of one group's instance values (None: the group has no fact); ``rule``,
    ``loc`` and ``arg`` (the argument's text) locate an overflow."""
    if fn == "count":
        return len(values)
    vals = [v for v in values if has_value(v)]
    if not vals:
        return None
    if fn == "min":
        return min(vals)  # type: ignore[type-var]
    if fn == "max":
        return max(vals)  # type: ignore[type-var]
    assert fn == "sum"
    if any(isinstance(v, float) for v in vals):
        total = reduce(lambda a, b: a + b, sorted(float(v) for v in vals), 0.0) + 0.0  # type: ignore[arg-type]
        if total != total or total in (float("inf"), float("-inf")):
            raise EvalError(arith.message("float overflow", rule, sum_text(arg)), loc)
        return total
    s = sum(vals)  # type: ignore[arg-type]
    if not INT64_MIN <= s <= INT64_MAX:
        raise EvalError(arith.message("integer overflow", rule, sum_text(arg)), loc)
    return s


def sum_text(arg: str) -> str:
    """What an overflowing sum shows: ``sum(w) does not fit in 64 bits``."""
    return f"sum({arg}) does not fit in 64 bits"


def better(fn: str, a: Value, b: Value) -> bool:
    """Whether ``a`` strictly improves on ``b`` under ``min`` or ``max``."""
    a, b = arith.numeric_pair(a, b)
    return a < b if fn == "min" else a > b  # type: ignore[operator]


def diverges(rounds: int, groups: int) -> bool:
    """Whether a round that still improved some group means the recursion does not converge:
    in a recursion whose best derivations revisit no group (any that improves is a cycle that
    improves forever), every group is final after as many rounds as there are groups."""
    return rounds > groups


def no_convergence(relation: str, fn: str, rounds: int, groups: int, rule: str, loc: Location) -> EvalError:
    """The error of a ``min``/``max`` recursion that keeps improving (see :func:`diverges`)."""
    return EvalError(
        f"{fn}(...) through recursion does not converge: {relation} still improves after {rounds}"
        f" rounds over {groups} group(s) (rule {rule}); a cycle keeps improving its value, such as"
        f" a negative-weight cycle under min",
        loc,
    )


def group_key(fact: tuple[Value, ...], position: int) -> tuple[Value, ...]:
    """The group of a head tuple: every value but the aggregated one."""
    return fact[:position] + fact[position + 1:]


def with_value(key: tuple[Value, ...], position: int, value: Value) -> tuple[Value, ...]:
    """The fact of group ``key`` whose aggregated value is ``value``."""
    return key[:position] + (value,) + key[position:]


def aggregate_groups(
    fn: str, position: int, instances: Iterable[tuple[Value, ...]], rule: str, loc: Location, arg: str
) -> set[tuple[Value, ...]]:
    """The facts of an aggregated relation from its rule instances' head tuples (the aggregated
    position holding the instance's value)."""
    groups: dict[tuple[Value, ...], list[Value | None]] = {}
    for t in instances:
        groups.setdefault(group_key(t, position), []).append(t[position])
    out = set()
    for key, values in groups.items():
        v = fold(fn, values, rule, loc, arg)
        if v is not None:
            out.add(with_value(key, position, v))
    return out


def site(rules: Iterable, relation: str) -> tuple[str, Location, str]:
    """Where an aggregate of ``relation`` is reported: its first rule's name, head location and
    the aggregated argument's text."""
    from selp.language.printer import format_term

    for r in rules:
        if r.head.relation == relation and r.aggregate is not None:
            return r.name, r.head.loc, format_term(r.aggregate[1].arg)
    raise KeyError(relation)
