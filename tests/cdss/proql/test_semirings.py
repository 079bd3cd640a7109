"""Each ProQL semiring's algebra on small examples: the semiring laws, the flags the fixpoint relies
on, literals, and exact event probabilities."""

from __future__ import annotations

import itertools
import math

import pytest

from selp.cdss.proql.semirings import MAX_EVENTS, SEMIRINGS, Poly, probability, semiring
from selp.errors import SelpError


def samples(name: str) -> list:
    s = semiring(name)
    lit = lambda *vs: [s.literal(v, isinstance(v, str)) for v in vs]  # noqa: E731
    return {
        "DERIVABILITY": lambda: lit("true", "false"),
        "TRUST": lambda: lit("true", "false"),
        "PROBABILITY": lambda: lit("X1", "X2", "X3", "true", "false") + [s.times(s.literal("X1", True), s.literal("X2", True))],
        "CONFIDENTIALITY": lambda: lit("P", "C", "S", "T", 0),
        "LINEAGE": lambda: [None, frozenset(), frozenset({"a"}), frozenset({"a", "b"}), frozenset({"c"})],
        "WEIGHT": lambda: lit(0, 2, 5, "inf"),
        "COUNT": lambda: lit(0, 1, 2, 3, "inf"),
        "POLYNOMIAL": lambda: [s.zero, s.one, s.leaf_default("x"), s.leaf_default("y"), s.apply_mapping("m", s.leaf_default("x"))],
    }[name]() + [s.zero, s.one]


@pytest.mark.parametrize("name", sorted(SEMIRINGS))
def test_semiring_laws(name):
    s = semiring(name)
    xs = samples(name)
    for a, b, c in itertools.product(xs, repeat=3):
        assert s.plus(a, s.plus(b, c)) == s.plus(s.plus(a, b), c)
        assert s.times(a, s.times(b, c)) == s.times(s.times(a, b), c)
        assert s.times(a, s.plus(b, c)) == s.plus(s.times(a, b), s.times(a, c))
    for a, b in itertools.product(xs, repeat=2):
        assert s.plus(a, b) == s.plus(b, a) and s.times(a, b) == s.times(b, a)
    for a in xs:
        assert s.plus(a, s.zero) == a and s.times(a, s.one) == a
        assert s.times(a, s.zero) == s.zero
        # the default mapping keeps 0 and is additive (Section 4.3.1)
        assert s.apply_mapping("m", s.zero) == s.zero
        for b in xs:
            assert s.apply_mapping("m", s.plus(a, b)) == s.plus(s.apply_mapping("m", a), s.apply_mapping("m", b))


@pytest.mark.parametrize("name", sorted(SEMIRINGS))
def test_flags_are_honest(name):
    s = semiring(name)
    xs = samples(name)
    assert s.idempotent == all(s.plus(a, a) == a for a in xs)
    assert s.absorptive == all(s.plus(s.one, a) == s.one for a in xs)


def test_table_7_1_values():
    w, c, l = semiring("WEIGHT"), semiring("CONFIDENTIALITY"), semiring("LINEAGE")
    assert w.plus(3, 5) == 3 and w.times(3, 5) == 8 and w.zero == math.inf and w.one == 0
    # a join takes the most secret level, a union the least
    assert c.format(c.times(c.literal("C", True), c.literal("S", True))) == "S"
    assert c.format(c.plus(c.literal("C", True), c.literal("S", True))) == "C"
    assert l.format(l.times(frozenset({"a"}), frozenset({"b"}))) == "{a, b}" and l.format(None) == "⊥"
    n = semiring("COUNT")
    assert n.times(math.inf, 0) == 0 and n.plus(math.inf, 1) == math.inf and n.format(n.diverged(5)) == "∞"
    with pytest.raises(SelpError, match="non-negative"):
        w.literal(-1, False)
    with pytest.raises(SelpError, match="true and false"):
        semiring("TRUST").literal(1, False)


def test_polynomial_normal_form():
    s = semiring("POLYNOMIAL")
    p1, p2, p3 = (s.leaf_default(t) for t in ("p1", "p2", "p3"))
    # Pv(B(3,2)) = m1(p3) + m4(p1·p2) + m4(p1·m2(p3)) ([Kar09] ch. 4): m4 distributes over p2 + m2(p3)
    v = s.plus(s.apply_mapping("m1", p3), s.apply_mapping("m4", s.times(p1, s.plus(p2, s.apply_mapping("m2", p3)))))
    assert s.format(v) == "m1(p3) + m4(m2(p3)·p1) + m4(p1·p2)"  # factors in text order
    assert s.format(s.plus(p1, p1)) == "2·p1" and s.format(s.apply_mapping("m", s.plus(p1, p1))) == "2·m(p1)"
    assert s.format(s.times(p1, p1)) == "p1·p1" and s.format(s.zero) == "0" and s.format(s.one) == "1"
    inf = s.diverged(p1)
    assert s.times(inf, s.zero) == s.zero and s.plus(inf, p2).infinite and isinstance(inf, Poly)


def test_event_expressions_and_probabilities():
    s = semiring("PROBABILITY")
    x1, x2, x3 = (s.literal(n, True) for n in ("X1", "X2", "X3"))
    e = s.plus(s.times(x1, x2), x1)  # absorption: X1∧X2 ∨ X1 = X1
    assert e == x1 and s.format(s.plus(s.times(x1, x2), x3)) == "(X1∧X2) ∨ X3"
    # P(X1∧X2 ∨ X3) = 1 - (1 - 0.5·0.4)(1 - 0.1) = 0.28 by inclusion-exclusion: 0.2 + 0.1 - 0.02
    assert probability(s.plus(s.times(x1, x2), x3), {"X1": 0.5, "X2": 0.4, "X3": 0.1}) == pytest.approx(0.28)
    assert probability(s.one, {}) == 1.0 and probability(s.zero, {}) == 0.0
    with pytest.raises(SelpError, match="no probability given for event"):
        probability(x1, {})
    big = s.sum([s.literal(f"E{i}", True) for i in range(MAX_EVENTS + 1)])
    with pytest.raises(SelpError, match=f"has {MAX_EVENTS + 1} events"):
        probability(big, {f"E{i}": 0.5 for i in range(MAX_EVENTS + 1)})
