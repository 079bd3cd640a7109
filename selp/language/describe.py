"""What ``selp check`` reports about a program: each relation (kind, arity, column types, the
rules defining it, its aggregate) and the recursive components of each stratum."""

from __future__ import annotations

from typing import Any

from selp.language.ast import Spec
from selp.language.validate import Analysis


def relations_report(analysis: Analysis, types: dict[str, tuple[str, ...]]) -> list[dict[str, Any]]:
    """One entry per relation, by name: ``relation``, ``kind`` (idb/edb), ``arity``, ``types``
    (from ``types``), ``rules`` (the names of the rules whose head it is) and ``aggregate``
    (``min(2)``: the function and the 1-based head position it aggregates, ``min(3) min(4)`` for
    several; None if none)."""
    aggregated = analysis.program.aggregated()
    return [
        {
            "relation": rel,
            "kind": "idb" if rel in analysis.idb else "edb",
            "arity": analysis.arities[rel],
            "types": list(types[rel]),
            "rules": [r.name for r in analysis.program.rules if r.head.relation == rel],
            "aggregate": _shown(aggregated[rel]) if rel in aggregated else None,
        }
        for rel in sorted(analysis.arities)
    ]


def recursive_components(analysis: Analysis, stratum: int) -> list[str]:
    """The recursive components of ``stratum``, each as its relations joined by ``+`` (followed by
    `` [min/max selection]`` when they aggregate through the recursion)."""
    return [
        "+".join(c.relations) + (" [min/max selection]" if c.selective else "")
        for c in analysis.components
        if c.stratum == stratum and c.recursive
    ]


def _shown(spec: Spec) -> str:
    """``min(3) min(4)``: each aggregate's function and 1-based head position."""
    return " ".join(f"{fn}({p + 1})" for p, fn in zip(spec.positions, spec.fns))
