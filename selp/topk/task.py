"""A top-k task: the instrumented program with every weight resolved under one monoid.

Shared by the local and the Spark DTable engines, so both read weights the same way: a rule of
P_p weighs what its origin rule of P weighs under the monoid (its written weight, or the
monoid's neutral element when none is written; ``size`` gives every rule -1); copy steps weigh
the neutral element and do not count towards a tree's size; EDB facts weigh their ``_weight``
cell (neutral when absent).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from selp.database import Database
from selp.errors import SelpError, clip
from selp.instrument.instrument import Instrumented, identity, instrument
from selp.language.pattern import Pattern
from selp.language.validate import Analysis, analyze
from selp.topk.dtable import DTable
from selp.topk.monoid import Monoid
from selp.values import Value


@dataclass
class Task:
    """Everything an engine needs to fill a DTable."""

    analysis: Analysis  # of P
    inst: Instrumented
    inst_analysis: Analysis  # of P_p
    monoid: Monoid
    k: int
    pattern_text: str | None
    rule_weight: dict[str, Any]  # P_p rule -> internal weight
    rule_size: dict[str, int]  # P_p rule -> 1, or 0 for a copy step
    types: dict[str, tuple[str, ...]]  # P_p relation -> column types

    @property
    def roots(self) -> tuple[str, ...]:
        """The P_p relations whose facts are answers (every IDB relation without a pattern)."""
        if self.inst.roots is None:
            return tuple(sorted(self.analysis.idb))
        return self.inst.roots

    def fact_weight(self, db: Database, relation: str, fact: tuple[Value, ...]) -> Any:
        """The internal weight of an EDB fact."""
        raw = db.weights.get(relation, {}).get(fact)
        return self.monoid.fact_weight(raw, f"{relation}{fact}")

    def empty_dtable(self) -> DTable:
        """A DTable with this task's metadata and no entries yet."""
        shown = {
            r.name: self.monoid.display(self.monoid.rule_weight(r.weight, f"rule {r.name}"))
            for r in self.analysis.program.rules
        }
        return DTable(
            self.k, self.monoid.name, self.pattern_text, self.roots, dict(self.inst.relation_origin),
            dict(self.inst.rule_origin), shown, dict(self.types),
        )


from selp.topk import K_MAX  # noqa: E402 (re-exported: the commands check k against it)


def check_k(k: int, what: str = "k") -> int:
    """``k`` if it is a usable number of trees per fact (1..:data:`K_MAX`), else a one-line
    :class:`SelpError` naming ``what`` (``-k``, ``query: TOP``...)."""
    if k < 1:
        raise SelpError(f"{what} must be at least 1, got {k}")
    if k > K_MAX:
        raise SelpError(f"{what} {clip(str(k), 40)} is too large: at most {K_MAX} trees per fact")
    return k


def make_task(
    analysis: Analysis,
    db_types: dict[str, tuple[str, ...]],
    monoid: Monoid,
    k: int,
    pattern: Pattern | None = None,
    pattern_text: str | None = None,
) -> Task:
    """Instrument P with ``pattern`` (none: every derivation of every IDB fact) and resolve weights."""
    check_k(k)
    inst = identity(analysis) if pattern is None else instrument(analysis, pattern)
    inst_analysis = analyze(inst.program)
    p_rules = {r.name: r for r in analysis.program.rules}
    rule_weight: dict[str, Any] = {}
    rule_size: dict[str, int] = {}
    for r in inst.program.rules:
        origin = inst.rule_origin.get(r.name)
        if origin is None:
            rule_weight[r.name], rule_size[r.name] = monoid.one, 0
        else:
            rule_weight[r.name] = monoid.rule_weight(p_rules[origin].weight, f"rule {origin}")
            rule_size[r.name] = 1
    types = {rel: db_types[inst.relation_origin.get(rel, rel)] for rel in inst_analysis.arities}
    return Task(analysis, inst, inst_analysis, monoid, k, pattern_text, rule_weight, rule_size, types)
