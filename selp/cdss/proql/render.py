"""The outputs of ``selp proql``: a query's bindings as a table, JSON or Graphviz, and the plan
of a Spark evaluation."""

from __future__ import annotations

import json
from typing import Any, Callable


def shown_value(r: Any, node: Any, full: bool = False) -> str:
    """A returned node's value as printed: an infinite POLYNOMIAL series bounded to its first
    terms with a marker, unless ``full``."""
    s = r.semiring
    if full or not hasattr(s, "bounded"):
        return r.value(node)
    return s.bounded(r.values[node])


def render_table(r: Any, full: bool = False) -> str:
    """The bindings, their semiring values (and probabilities), then the counts."""
    head = [f"${c}" for c in r.columns]
    head += [f"{r.semiring.name.lower()}(${c})" for c in r.columns]
    if r.probabilities is not None:
        head += [f"P(${c})" for c in r.columns]
    lines = [head]
    for row in r.rows:
        cells = [str(n) for n in row] + [shown_value(r, n, full) for n in row]
        if r.probabilities is not None:
            cells += [f"{r.probabilities[n]:.6g}" for n in row]
        lines.append(cells)
    widths = [max(len(x[i]) for x in lines) for i in range(len(head))]
    out = ["  ".join(c.ljust(w) for c, w in zip(x, widths)).rstrip() for x in lines]
    n = getattr(r, "node_count", None)
    out.append(f"({len(r.rows)} binding(s); projected graph: {len(r.graph.nodes) if n is None else n} node(s))")
    return "\n".join(out)


def render_json(r: Any, full: bool = False) -> str:
    """The epoch, the bindings with their values, and the projected graph, as JSON."""
    s = r.semiring
    doc = {
        "epoch": r.epoch,
        "semiring": s.name,
        "columns": r.columns,
        "rows": [
            {
                **{c: str(n) for c, n in zip(r.columns, row)},
                "values": {
                    c: s.to_json(r.values[n]) if full or not hasattr(s, "bounded") else shown_value(r, n)
                    for c, n in zip(r.columns, row)
                },
                **({"probabilities": {c: r.probabilities[n] for c, n in zip(r.columns, row)}} if r.probabilities else {}),
            }
            for row in r.rows
        ],
        "graph": {
            "nodes": sorted(str(n) for n in r.graph.nodes),
            "edges": sorted([str(u), str(m)] for u, m in r.graph.inputs) + sorted([str(m), str(t)] for m, t in r.graph.outputs),
        },
    }
    return json.dumps(doc, indent=2, ensure_ascii=False)


def render_dot(r: Any, full: bool = False) -> str:
    """The projected graph in Graphviz, the returned nodes bold with their values."""
    from selp.cdss.proql.graph import MappingNode

    ids = {n: f"n{i}" for i, n in enumerate(sorted(r.graph.nodes, key=str))}
    returned = {n for row in r.rows for n in row}
    lines = ["digraph proql {", "  rankdir=BT;"]
    for n, i in ids.items():
        label = str(n).replace('"', '\\"')
        if n in returned:
            label += "\\n" + shown_value(r, n, full).replace('"', '\\"')
        shape = "ellipse" if isinstance(n, MappingNode) else "box"
        style = ", penwidth=2" if n in returned else ""
        lines.append(f'  {i} [label="{label}", shape={shape}{style}];')
    for u, m in sorted(r.graph.inputs, key=str):
        lines.append(f"  {ids[u]} -> {ids[m]};")
    for m, t in sorted(r.graph.outputs, key=str):
        lines.append(f"  {ids[m]} -> {ids[t]};")
    lines.append("}")
    return "\n".join(lines)


RENDERERS: dict[str, Callable[..., str]] = {"table": render_table, "json": render_json, "dot": render_dot}


def render_plan(sr: Any) -> str:
    """The plan of a Spark evaluation: its steps, the fixpoints with their rounds, the ASRs."""
    lines = ["plan:"] + [f"  {p}" for p in sr.stats.plan]
    lines += [f"  fixpoint {what}: {n} round(s)" for what, n in sr.stats.rounds]
    used = sr.asrs_used
    lines.append(f"  ASRs used: {', '.join(used) if used else 'none'}")
    return "\n".join(lines)
