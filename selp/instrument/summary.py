"""What instrumentation did, for people (`selp instrument`'s stderr) and programs (``--json``)."""

from __future__ import annotations

from selp.instrument.instrument import Instrumented, instrument, number_nodes
from selp.language.pattern import Pattern
from selp.language.pattern_parser import tree_patterns
from selp.language.validate import Analysis


def summarize(analysis: Analysis, pattern: Pattern, result: Instrumented, optimize: bool) -> dict:
    """Rules before/after, rules per pattern node, time, and the rules each optimisation saved.

    The savings are measured by instrumenting again with that optimisation off (instrumentation
    is static and fast, so the extra runs cost milliseconds).
    """
    per_node: dict[str, int] = {}
    for info_name in _node_names(pattern):
        per_node[info_name] = sum(
            1
            for r in result.program.rules
            if any(
                part in (info_name, info_name + "t") or part.startswith(f"!{info_name}s")  # R@!v0s3: NOT's types
                for part in r.head.relation.split("@")[1:]
            )
        )
    saved: dict[str, int] = {}
    if optimize:
        after = len(result.program.rules)
        saved["constant propagation"] = len(instrument(analysis, pattern, propagate_constants=False).program.rules) - after
        saved["EDB leaves without copies"] = len(instrument(analysis, pattern, edb_leaves=False).program.rules) - after
        saved["copies of P's relations replaced by them"] = len(instrument(analysis, pattern, merge_copies=False).program.rules) - after
    st = result.stats
    lines = [
        f"rules: {st['rules_before']} before, {st['rules_after']} after"
        f" ({st['rules_generated']} generated, {st['rules_generated'] + st['rules_before'] - st['rules_after'] - st.get('rules_of_copies', 0)} removed by cleanup)",
        "rules per pattern node: " + ", ".join(f"{k}: {v}" for k, v in per_node.items()),
        f"root relations: {', '.join(result.roots) or 'none (no derivation can match the pattern)'}",
    ]
    if saved:
        lines.append("optimisations saved: " + ", ".join(f"{k} {v} rule(s)" for k, v in saved.items()))
    lines.append(f"time: {st['seconds'] * 1000:.1f} ms")
    return {
        "rules_before": st["rules_before"],
        "rules_after": st["rules_after"],
        "rules_generated": st["rules_generated"],
        "rules_per_node": per_node,
        "roots": list(result.roots),
        "optimizations_saved": saved,
        "seconds": st["seconds"],
        "lines": lines,
    }


def _node_names(pattern: Pattern) -> list[str]:
    """v0, v1, ... over the pattern's trees, numbered in the order instrumentation uses."""
    out: list[str] = []
    for tree in tree_patterns(pattern):
        stack = [number_nodes(tree.root, len(out))]
        while stack:
            n = stack.pop()
            out.append(n.name)
            stack.extend(reversed(n.children))
    return out
