"""A tuple's neighbourhood in a CDSS provenance graph, drawn as the dissertation draws the graph
([Kar09] ch. 4): tuple nodes as boxes, mapping nodes as ellipses, edges from a mapping node's
input tuples to it and from it to its output tuples.

The neighbourhood is one step each way: the mapping nodes that derive the tuple (with their
inputs) on the left, the tuple in the middle, the mapping nodes that use it (with their outputs)
on the right. It is read from :func:`selp.cdss.proql.graph.load_graph`, the graph ProQL queries.
"""

from __future__ import annotations

from typing import Any
from xml.sax.saxutils import escape

from selp.cdss.model import RelationRef
from selp.cdss.store import Store
from selp.values import Skolem, Value

MAX_NODES = 40  # mapping nodes shown each way; the rest are counted


def neighbourhood(store: Store, peer: str, ref: RelationRef, args: tuple[Value, ...]) -> dict[str, Any] | None:
    """``{"tuple", "known", "local", "derived": [(mapping node, inputs)], "used": [(mapping
    node, outputs)], "more_derived", "more_used", "nulls" (the tuples holding labeled nulls),
    "epoch"}`` (nodes as text), or None when ``peer`` has never exchanged (there is no graph to
    read)."""
    from selp.cdss.proql.graph import TupleNode, load_graph

    if store.peer_epoch(peer) is None:
        return None
    g, epoch = load_graph(store, peer)
    t = TupleNode(store.compiled.names.base(ref), args)
    derived = sorted(g.derivations(t), key=str)[:MAX_NODES]
    used = sorted(g.consumers(t), key=str)[:MAX_NODES]
    around = {x for m in derived for x in g.inputs[m]} | {x for m in used for x in g.outputs[m]} | {t}
    return {
        "tuple": str(t),
        "known": t in g.tuples_of(t.relation),
        "local": t in g.local,
        "derived": [(str(m), [str(x) for x in g.inputs[m]]) for m in derived],
        "used": [(str(m), [str(x) for x in g.outputs[m]]) for m in used],
        "more_derived": max(0, len(g.derivations(t)) - MAX_NODES),
        "more_used": max(0, len(g.consumers(t)) - MAX_NODES),
        "nulls": sorted(str(x) for x in around if any(isinstance(v, Skolem) for v in x.values)),
        "epoch": epoch,
    }


CHAR_W = 7.2
ROW_H = 34
COL_GAP = 60


def _width(text: str) -> float:
    return len(text) * CHAR_W + 16


def render_neighbourhood_svg(n: dict[str, Any]) -> str:
    """Five columns: inputs, deriving mappings, the tuple, using mappings, outputs; tuples
    holding labeled nulls are drawn dashed (class ``null``)."""
    left_tuples = list(dict.fromkeys(x for _, ins in n["derived"] for x in ins))
    right_tuples = list(dict.fromkeys(x for _, outs in n["used"] for x in outs if x != n["tuple"]))
    columns = [left_tuples, [m for m, _ in n["derived"]], [n["tuple"]], [m for m, _ in n["used"]], right_tuples]
    widths = [max((_width(x) for x in col), default=0) for col in columns]
    rows = max(len(col) for col in columns)
    height = rows * ROW_H + 20
    xs: list[float] = []
    x = 10.0
    for w in widths:
        xs.append(x + w / 2)
        x += w + (COL_GAP if w else 0)
    where: dict[tuple[int, str], tuple[float, float]] = {}
    for c, col in enumerate(columns):
        top = (height - len(col) * ROW_H) / 2
        for i, label in enumerate(col):
            where[(c, label)] = (xs[c], top + i * ROW_H + ROW_H / 2)
    parts: list[str] = []
    nulls = set(n["nulls"])

    def edge(a: tuple[int, str], b: tuple[int, str]) -> None:
        (x1, y1), (x2, y2) = where[a], where[b]
        x1 += _width(a[1]) / 2
        x2 -= _width(b[1]) / 2
        parts.append(f'<line x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}" marker-end="url(#arrow)"/>')

    for m, ins in n["derived"]:
        for x_ in dict.fromkeys(ins):
            edge((0, x_), (1, m))
        edge((1, m), (2, n["tuple"]))
    for m, outs in n["used"]:
        edge((2, n["tuple"]), (3, m))
        for x_ in dict.fromkeys(outs):
            if x_ != n["tuple"]:
                edge((3, m), (4, x_))
    for (c, label), (cx, cy) in where.items():
        w = _width(label)
        if c in (1, 3):
            parts.append(f'<ellipse cx="{cx:.1f}" cy="{cy:.1f}" rx="{w / 2:.1f}" ry="12" class="m"/>')
        else:
            cls = ("t me" if c == 2 else "t") + (" null" if label in nulls else "")
            parts.append(f'<rect x="{cx - w / 2:.1f}" y="{cy - 11:.1f}" width="{w:.1f}" height="22" class="{cls}"/>')
        parts.append(f'<text x="{cx:.1f}" y="{cy + 4:.1f}" text-anchor="middle">{escape(label)}</text>')
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" class="graph" width="{x:.0f}" height="{height:.0f}" viewBox="0 0 {x:.0f} {height:.0f}"'
        ' font-family="monospace" font-size="12"><defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7"'
        ' markerHeight="7" orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z"/></marker></defs>' + "".join(parts) + "</svg>"
    )
