"""The semirings of ProQL's EVALUATE clause ([Kar09] Table 7.1, plus COUNT and POLYNOMIAL).

Each :class:`Semiring` gives ``zero``, ``one``, ``plus``, ``times``, the default meaning of a
mapping (:meth:`Semiring.apply_mapping`: the identity, except in POLYNOMIAL where ``m`` wraps its
argument as ``m(...)``), the default value of a leaf, how ``SET`` literals read, and two algebraic
flags used by the evaluator's fixpoint (:mod:`.evaluate`):

``idempotent`` (``a + a = a``)
    with values in a finite lattice (or, for WEIGHT, non-negative costs), Kleene iteration over a
    cyclic graph reaches the least fixpoint in finitely many rounds: DERIVABILITY, TRUST,
    PROBABILITY, CONFIDENTIALITY, LINEAGE, WEIGHT.
``absorptive`` (``1 + a = 1``)
    cycles never change a value (every semiring above but LINEAGE, whose 1 is the empty set).

COUNT (N^∞) and POLYNOMIAL (N[X] with mapping functions) are neither: a productive cycle makes
the value an infinite series. The evaluator detects that and asks :meth:`Semiring.diverged` for
the representation: ``∞`` for COUNT; for POLYNOMIAL the terms found so far marked ``+ …
(infinite series: cyclic provenance)``.

Decisions where Table 7.1 is loose:

* LINEAGE's 0 and 1 are both written ∅ in the source (an erratum): here 0 is ``None`` (no
  derivation, printed ``⊥``) and 1 the empty set, so ``a · 0 = 0`` holds.
* The default leaf value is the semiring's 1 (as §7.3.2 says), except LINEAGE and POLYNOMIAL,
  where it is the leaf's own token (the tuple, e.g. ``G(3,5,2)``): their 1 would erase what they
  exist to show.
* PROBABILITY values are event expressions: sets of conjunctions of named events (a DNF over
  ``P(Ω)`` with Ω the worlds of the named events), kept absorbed (no clause contains another).
  :func:`probability` gives the exact probability from independent event probabilities, by
  enumerating the worlds of the events involved, and refuses beyond :data:`MAX_EVENTS` events.
* CONFIDENTIALITY levels are ``P < C < S < T < 0`` (0 is the semiring's zero: "no derivation").
* WEIGHT costs are non-negative numbers or ``inf`` (the tropical semiring N^∞ extended to reals).
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from dataclasses import dataclass
from typing import Any, Callable

from selp.errors import Location, SelpError

MAX_EVENTS = 20  # 2^20 worlds: the largest exact probability computation we attempt


class Semiring:
    """A commutative semiring with the extras ProQL needs (see the module docstring)."""

    name = ""
    idempotent = True
    absorptive = True
    zero: Any = None
    one: Any = None

    def plus(self, a: Any, b: Any) -> Any:
        raise NotImplementedError

    def times(self, a: Any, b: Any) -> Any:
        raise NotImplementedError

    def apply_mapping(self, mapping: str, value: Any) -> Any:
        """The default mapping function: the identity."""
        return value

    def leaf_default(self, token: str) -> Any:
        """The value of a leaf no CASE matched, when there is no DEFAULT: the semiring's 1."""
        return self.one

    def literal(self, value: Any, bare: bool, loc: Location | None = None) -> Any:
        """The semiring value a SET literal or a compared literal stands for."""
        raise SelpError(f"{self.name} has no value {value!r}", loc)

    def scale(self, value: Any, factor: float) -> Any:
        """``SET $z * factor``: scaling, for the numeric semirings (WEIGHT, COUNT, POLYNOMIAL)."""
        raise SelpError(f"{self.name} values cannot be scaled ($z * k is for WEIGHT, COUNT and POLYNOMIAL)")

    def format(self, value: Any) -> str:
        return str(value)

    def to_json(self, value: Any) -> Any:
        return self.format(value)

    def diverged(self, value: Any) -> Any:
        """The representation of a value that a productive cycle makes infinite."""
        raise NotImplementedError(f"{self.name} converges on cycles")

    def sum(self, values: list[Any]) -> Any:
        out = self.zero
        for v in values:
            out = self.plus(out, v)
        return out

    def product(self, values: list[Any]) -> Any:
        out = self.one
        for v in values:
            out = self.times(out, v)
        return out


def _bare_word(value: Any, bare: bool) -> str | None:
    return value.lower() if bare and isinstance(value, str) else None


class Boolean(Semiring):
    """(B, ∨, ∧, false, true): DERIVABILITY and TRUST."""

    zero, one = False, True

    def __init__(self, name: str) -> None:
        self.name = name

    def plus(self, a: bool, b: bool) -> bool:
        return a or b

    def times(self, a: bool, b: bool) -> bool:
        return a and b

    def literal(self, value: Any, bare: bool, loc: Location | None = None) -> bool:
        w = _bare_word(value, bare)
        if w in ("true", "false"):
            return w == "true"
        raise SelpError(f"{self.name} values are true and false, not {value!r}", loc)

    def format(self, value: bool) -> str:
        return "true" if value else "false"

    def to_json(self, value: bool) -> bool:
        return value


class Weight(Semiring):
    """The tropical semiring (N^∞, min, +, ∞, 0): costs."""

    name = "WEIGHT"
    zero, one = math.inf, 0

    def plus(self, a: float, b: float) -> float:
        return min(a, b)

    def times(self, a: float, b: float) -> float:
        return a + b

    def literal(self, value: Any, bare: bool, loc: Location | None = None) -> float:
        if _bare_word(value, bare) in ("inf", "infinity"):
            return math.inf
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            if value < 0:
                raise SelpError(f"WEIGHT costs are non-negative, not {value}", loc)
            return value
        raise SelpError(f"WEIGHT values are non-negative numbers and inf, not {value!r}", loc)

    def scale(self, value: float, factor: float) -> float:
        # costs multiply (Example 9's f_m4(x) = 2x); the zero, inf, stays inf
        return value if value == math.inf else value * factor

    def format(self, value: float) -> str:
        if value == math.inf:
            return "inf"
        return str(int(value)) if float(value).is_integer() else repr(float(value))

    def to_json(self, value: float) -> Any:
        return "inf" if value == math.inf else value


LEVELS = ("P", "C", "S", "T", "0")


class Confidentiality(Semiring):
    """(C, min, max, 0, P) with P < C < S < T < 0; values are indexes into :data:`LEVELS`."""

    name = "CONFIDENTIALITY"
    zero, one = 4, 0

    def plus(self, a: int, b: int) -> int:
        return min(a, b)

    def times(self, a: int, b: int) -> int:
        return max(a, b)

    def literal(self, value: Any, bare: bool, loc: Location | None = None) -> int:
        text = str(value).upper() if (bare or value == 0) else None
        if text in LEVELS:
            return LEVELS.index(text)
        raise SelpError(f"CONFIDENTIALITY levels are P, C, S, T and 0, not {value!r}", loc)

    def format(self, value: int) -> str:
        return LEVELS[value]


class Lineage(Semiring):
    """(P(X) ∪ {⊥}, ∪, ∪, ⊥, ∅): the set of leaf tokens a tuple's derivations use."""

    name = "LINEAGE"
    absorptive = False
    zero, one = None, frozenset()

    def plus(self, a: frozenset | None, b: frozenset | None) -> frozenset | None:
        if a is None:
            return b
        if b is None:
            return a
        return a | b

    def times(self, a: frozenset | None, b: frozenset | None) -> frozenset | None:
        if a is None or b is None:
            return None
        return a | b

    def leaf_default(self, token: str) -> frozenset:
        return frozenset([token])

    def literal(self, value: Any, bare: bool, loc: Location | None = None) -> frozenset | None:
        if _bare_word(value, bare) == "none":
            return None
        return frozenset([str(value)])

    def format(self, value: frozenset | None) -> str:
        return "⊥" if value is None else "{" + ", ".join(sorted(value)) + "}"

    def to_json(self, value: frozenset | None) -> Any:
        return None if value is None else sorted(value)


Events = frozenset  # frozenset[frozenset[str]]: a DNF of conjunctions of event names


def _absorb(clauses: set[frozenset]) -> frozenset:
    kept = [c for c in clauses if not any(o < c for o in clauses)]
    return frozenset(kept)


class Probability(Semiring):
    """Event expressions over (P(Ω), ∪, ∩, ∅, Ω): absorbed DNFs of named events."""

    name = "PROBABILITY"
    zero, one = frozenset(), frozenset([frozenset()])

    def plus(self, a: Events, b: Events) -> Events:
        return _absorb(set(a) | set(b))

    def times(self, a: Events, b: Events) -> Events:
        return _absorb({x | y for x in a for y in b})

    def literal(self, value: Any, bare: bool, loc: Location | None = None) -> Events:
        w = _bare_word(value, bare)
        if w == "true":
            return self.one
        if w == "false":
            return self.zero
        if bare:
            return frozenset([frozenset([str(value)])])
        raise SelpError(f"PROBABILITY values are event names, true and false, not {value!r}", loc)

    def format(self, value: Events) -> str:
        if not value:
            return "false"
        if value == self.one:
            return "true"
        terms = sorted("∧".join(sorted(c)) for c in value)
        return " ∨ ".join(f"({t})" if "∧" in t and len(terms) > 1 else t for t in terms)


def probability(events: Events, probs: dict[str, float]) -> float:
    """The exact probability of an event expression, events independent with ``probs``.

    Enumerates the 2^k worlds of the k events involved; raises :class:`SelpError` when an event
    has no probability or k exceeds :data:`MAX_EVENTS` (the lineage is too large)."""
    names = sorted({e for c in events for e in c})
    missing = [n for n in names if n not in probs]
    if missing:
        raise SelpError(f"no probability given for event(s) {', '.join(missing)} (use --prob NAME=P)")
    if len(names) > MAX_EVENTS:
        raise SelpError(
            f"the event expression has {len(names)} events; exact probabilities are computed for at"
            f" most {MAX_EVENTS} (2^{MAX_EVENTS} worlds)"
        )
    total = 0.0
    for world in itertools.product((False, True), repeat=len(names)):
        true = {n for n, w in zip(names, world) if w}
        if any(c <= true for c in events):
            p = 1.0
            for n, w in zip(names, world):
                p *= probs[n] if w else 1.0 - probs[n]
            total += p
    return total


class Count(Semiring):
    """(N^∞, +, ·, 0, 1): the number of derivations; ∞ through a productive cycle."""

    name = "COUNT"
    idempotent = absorptive = False
    zero, one = 0, 1

    def plus(self, a: float, b: float) -> float:
        return a + b

    def times(self, a: float, b: float) -> float:
        return 0 if a == 0 or b == 0 else a * b

    def literal(self, value: Any, bare: bool, loc: Location | None = None) -> float:
        if _bare_word(value, bare) in ("inf", "infinity"):
            return math.inf
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            return value
        raise SelpError(f"COUNT values are natural numbers and inf, not {value!r}", loc)

    def diverged(self, value: float) -> float:
        return math.inf

    def scale(self, value: float, factor: float) -> float:
        if not float(factor).is_integer():
            raise SelpError(f"COUNT scales by natural numbers, not {factor}")
        return 0 if factor == 0 or value == 0 else value * int(factor)

    def format(self, value: float) -> str:
        return "∞" if value == math.inf else str(int(value))

    def to_json(self, value: float) -> Any:
        return "inf" if value == math.inf else int(value)


@dataclass(frozen=True)
class Poly:
    """An N[X] polynomial whose variables are leaf tokens and mapping applications ``m(mono)``:
    ``terms`` maps a monomial (a sorted tuple of factor texts) to its coefficient. ``infinite``
    marks an infinite series (cyclic provenance) of which ``terms`` are the first found."""

    terms: tuple[tuple[tuple[str, ...], int], ...] = ()
    infinite: bool = False

    @staticmethod
    def of(counter: Counter, infinite: bool = False) -> "Poly":
        return Poly(tuple(sorted((m, c) for m, c in counter.items() if c)), infinite)


def _mono_text(mono: tuple[str, ...]) -> str:
    return "·".join(mono) if mono else "1"


def _term_text(mono: tuple[str, ...], k: int) -> str:
    return (f"{k}·" if k != 1 else "") + _mono_text(mono)


SERIES_PREFIX = 10  # terms of an infinite POLYNOMIAL series printed unless the full form is asked for


class Polynomial(Semiring):
    """N[X] with mapping functions: the provenance expression, ``m1(G(3,5,2)) + m4(B(3,5)·U(2,5))``.

    Mappings are additive, so ``m(a + b)`` is kept as ``m(a) + m(b)`` and ``m(2·a)`` as ``2·m(a)``:
    the normal form is a sum of monomials whose factors are tokens and ``m(monomial)``."""

    name = "POLYNOMIAL"
    idempotent = absorptive = False
    zero, one = Poly(), Poly(((((), 1),)))

    def plus(self, a: Poly, b: Poly) -> Poly:
        c: Counter = Counter(dict(a.terms))
        c.update(dict(b.terms))
        return Poly.of(c, a.infinite or b.infinite)

    def times(self, a: Poly, b: Poly) -> Poly:
        c: Counter = Counter()
        for ma, ca in a.terms:
            for mb, cb in b.terms:
                c[tuple(sorted(ma + mb))] += ca * cb
        inf = (a.infinite and bool(b.terms)) or (b.infinite and bool(a.terms))
        return Poly.of(c, inf)

    def apply_mapping(self, mapping: str, value: Poly) -> Poly:
        c: Counter = Counter()
        for mono, k in value.terms:
            c[(f"{mapping}({_mono_text(mono)})",)] += k
        return Poly.of(c, value.infinite)

    def leaf_default(self, token: str) -> Poly:
        return Poly((((token,), 1),))

    def literal(self, value: Any, bare: bool, loc: Location | None = None) -> Poly:
        if value == 0 and not bare:
            return self.zero
        if value == 1 and not bare:
            return self.one
        return Poly((((str(value),), 1),))

    def scale(self, value: Poly, factor: float) -> Poly:
        if not float(factor).is_integer():
            raise SelpError(f"POLYNOMIAL scales by natural numbers, not {factor}")
        k = int(factor)
        return Poly.of(Counter({m: c * k for m, c in value.terms}), value.infinite and k > 0)

    def diverged(self, value: Poly) -> Poly:
        return Poly(value.terms, True)

    def format(self, value: Poly) -> str:
        if not value.terms:
            text = "0"
        else:
            text = " + ".join(_term_text(m, k) for m, k in value.terms)
        return text + " + … (infinite series: cyclic provenance)" if value.infinite else text

    def bounded(self, value: Poly, max_terms: int = SERIES_PREFIX) -> str:
        """An infinite series as its ``max_terms`` smallest terms found (fewest factors, then
        shortest) and a marker saying how many were left out; anything else as :meth:`format`.
        The terms found of a series grow exponentially with the rounds (2.1 MB for one tuple of a
        7-tuple cycle), and its first terms are what a reader can use."""
        if not value.infinite or len(value.terms) <= max_terms:
            return self.format(value)
        first = sorted(value.terms, key=lambda t: (len(t[0]), len(_mono_text(t[0])), t[0]))[:max_terms]
        text = " + ".join(_term_text(m, k) for m, k in first)
        return f"{text} + … (infinite series: cyclic provenance; {max_terms} of the {len(value.terms)} terms found shown, --full prints them)"


SEMIRINGS: dict[str, Callable[[], Semiring]] = {
    "DERIVABILITY": lambda: Boolean("DERIVABILITY"),
    "TRUST": lambda: Boolean("TRUST"),
    "PROBABILITY": Probability,
    "CONFIDENTIALITY": Confidentiality,
    "LINEAGE": Lineage,
    "WEIGHT": Weight,
    "COUNT": Count,
    "POLYNOMIAL": Polynomial,
}


def semiring(name: str) -> Semiring:
    """The semiring called ``name`` (case-insensitive); KeyError when there is none."""
    return SEMIRINGS[name.upper()]()
