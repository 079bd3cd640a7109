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

A head may hold several aggregates (``stats(x, count(y), sum(w), max(w))``): the group key is
the head's other arguments, each aggregate is folded over the group's instances on its own, and a
group has a fact only when every aggregate has a value (:class:`~selp.language.ast.Spec` says where they are).

``min``/``max`` may aggregate through recursion: evaluation then keeps one best value per group
and aggregate, and propagates only improvements (:func:`better`, :func:`improve`: a group's
fact improves when any of its aggregates does -- [LTZIL10]'s Multi AggSel); :func:`diverges` is the bound past which a
recursion that keeps improving (a negative-weight cycle) is an error instead of a hang.
"""

from __future__ import annotations

from functools import reduce
from typing import Iterable, Sequence

from selp import arith
from selp.errors import EvalError, Location
from selp.language.ast import Spec
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


def best(spec: Spec, candidates: Iterable[Sequence[Value | None]]) -> tuple[Value, ...] | None:
    """Per aggregate of ``spec``, the best value among the candidates' (min/max), a candidate with no
    value for some aggregate (a labeled null) being no candidate at all -- it could not be
    compared with the group's fact; None when no candidate is left."""
    out: list[Value] | None = None
    for vals in candidates:
        if not all(has_value(v) for v in vals):
            continue
        if out is None:
            out = list(vals)  # type: ignore[arg-type]
            continue
        for i, (fn, v) in enumerate(zip(spec.fns, vals)):
            if better(fn, v, out[i]):  # type: ignore[arg-type]
                out[i] = v  # type: ignore[assignment]
    return None if out is None else tuple(out)

def improve(spec: Spec, old: Sequence[Value] | None, new: Sequence[Value]) -> tuple[Value, ...] | None:
    """The values of a group of ``spec`` once candidate ``new`` is taken into account, when it improves at
    least one aggregate of ``old`` (None: it is worse or equal on every one, so pruned)."""
    if old is None:
        return tuple(new)
    if not any(better(fn, n, o) for fn, n, o in zip(spec.fns, new, old)):
        return None
    return tuple(n if better(fn, n, o) else o for fn, n, o in zip(spec.fns, new, old))


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


def aggregate_groups(
    spec: Spec, instances: Iterable[tuple[Value, ...]], rules: Iterable, relation: str
) -> set[tuple[Value, ...]]:
    """The facts of an aggregated relation from its rule instances' head tuples (each aggregated
    position holding the instance's value); ``rules`` locate an overflow (see :func:`site`)."""
    groups: dict[tuple[Value, ...], list[tuple[Value, ...]]] = {}
    for t in instances:
        groups.setdefault(spec.key(t), []).append(spec.values(t))
    rules = list(rules)
    sites = [site(rules, relation, i) for i in range(len(spec.fns))]
    out = set()
    for key, rows in groups.items():
        vals = [fold(fn, [r[i] for r in rows], *sites[i]) for i, fn in enumerate(spec.fns)]
        if all(v is not None for v in vals):
            out.add(spec.fact(key, vals))  # type: ignore[arg-type]
    return out


def site(rules: Iterable, relation: str, index: int = 0) -> tuple[str, Location, str]:
    """Where aggregate ``index`` (in head order) of ``relation`` is reported: its first rule's
    name, head location and the aggregated argument's text."""
    from selp.language.printer import format_term

    for r in rules:
        if r.head.relation == relation and r.aggregates:
            return r.name, r.head.loc, format_term(r.aggregates[index][1].arg)
    raise KeyError(relation)
