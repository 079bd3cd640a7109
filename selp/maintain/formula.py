"""Absorption provenance: positive Boolean formulas over base-tuple variables, kept minimal.

A formula is in the PosBool semiring [LTZIL10]: a set of *monomials* (conjunctions of
variables), none containing another -- absorption, ``a ∧ (a ∨ b) = a``, keeps the set minimal
and therefore canonical. A monomial is a Python ``int`` used as a bit set (bit ``v`` is variable
``v``), so a conjunction is ``|``, "contains" is ``m & f == f`` and restricting a set of variables
to false is one ``&`` per monomial: the whole formula is a handful of machine-word operations,
not a Python object per literal. The empty monomial ``0`` is TRUE; the empty formula is FALSE.

A tuple is in the view iff its formula is not FALSE (every variable still in the registry is
true). A formula past :data:`DEFAULT_CAP` monomials raises :class:`Blowup`: the number of
minimal monomials is the number of distinct minimal derivations, exponential on dense graphs,
and the maintainer then falls back to DRed (see :mod:`selp.maintain.absorption`).
"""

from __future__ import annotations

from typing import Iterable, Sequence

Monomial = int
Formula = list[Monomial]  # minimal: no monomial contains another
TRUE: Formula = [0]
DEFAULT_CAP = 4096  # monomials per formula before the fallback to DRed
# live BDD nodes of the whole manager (about 40 bytes each in CUDD) before the fallback to DRed:
# checked once per semi-naive round, the size of one formula is a traversal, the manager's a read
DEFAULT_NODE_CAP = 4_000_000


class Blowup(Exception):
    """Formulas grew past the cap: ``Blowup(count)`` for monomials of one formula (too many
    minimal derivations), ``Blowup(count, "live BDD nodes", cap)`` for a BDD manager."""


def absorb(formula: Formula, m: Monomial, cap: int = DEFAULT_CAP) -> bool:
    """Add monomial ``m`` to ``formula`` in place unless it is absorbed (some monomial of the
    formula is a subset of it); drop the monomials ``m`` absorbs. True when ``formula`` changed,
    i.e. ``m`` is a new derivation worth propagating."""
    for f in formula:
        if m & f == f:
            return False
    formula[:] = [f for f in formula if f & m != m]
    formula.append(m)
    if len(formula) > cap:
        raise Blowup(len(formula))
    return True


def minimize(monomials: Iterable[Monomial]) -> Formula:
    """The minimal antichain of ``monomials`` (absorption applied to all of them)."""
    out: Formula = []
    for m in sorted(set(monomials), key=lambda x: x.bit_count()):
        if not any(m & f == f for f in out):
            out.append(m)
    return out


def conjoin(formulas: Sequence[Formula], cap: int = DEFAULT_CAP) -> Formula:
    """The minimal formula of ``formulas[0] ∧ formulas[1] ∧ ...`` (a join's provenance)."""
    acc: Formula = TRUE
    for f in formulas:
        if f is TRUE or f == TRUE:
            continue
        if len(acc) == 1:
            a = acc[0]
            acc = [a | m for m in f] if a else list(f)
            if a:
                acc = minimize(acc)
            continue
        acc = minimize(a | m for a in acc for m in f)
        if len(acc) > cap:
            raise Blowup(len(acc))
    return acc


def restrict(formula: Formula, killed: int) -> Formula:
    """``formula`` with every variable of the bit set ``killed`` set to false (a monomial holding
    one is gone; what remains stays minimal)."""
    return [m for m in formula if not m & killed]


def literals(formula: Formula) -> int:
    """The number of variable occurrences: the formula's size as stored columnarly."""
    return sum(m.bit_count() for m in formula)


def stored_bytes(formula: Formula) -> int:
    """Bytes of the formula as a columnar array of int32 variable ids with one int32 offset per
    monomial (what "provenance bytes per tuple" reports)."""
    return 4 * (literals(formula) + len(formula))


def variables(formula: Formula) -> list[int]:
    """The variables occurring in ``formula``, ascending."""
    bits = 0
    for m in formula:
        bits |= m
    out = []
    while bits:
        low = bits & -bits
        out.append(low.bit_length() - 1)
        bits ^= low
    return out


def show(formula: Formula, names: dict[int, str] | None = None) -> str:
    """A readable form: ``p1 p3 + p4`` (``true``/``false`` for the constants)."""
    if not formula:
        return "false"
    if formula == TRUE:
        return "true"
    names = names or {}
    parts = []
    for m in sorted(formula, key=lambda x: (x.bit_count(), x)):
        parts.append(" ".join(names.get(v, f"p{v}") for v in variables([m])))
    return " + ".join(parts)
