"""Derivation trees as one SVG picture, drawn in Python (no Graphviz needed).

Each tree is a panel under a heading (``fact #i weight w``): nodes are boxes labelled like the
text drawing (``dealsWith(Cuba, France)  [r1 0.8]``, leaves ``(fact 1)`` in rounded grey boxes),
parents centred over their children. The layout is the classic one for ordered trees: a subtree
is as wide as the wider of its root's box and its children side by side, and every walk is an
explicit stack, since a tree from the data can be thousands of levels deep.
"""

from __future__ import annotations

from typing import Iterable
from xml.sax.saxutils import escape

from selp.topk.monoid import format_weight
from selp.topk.trees import Answer, Node, fact_text, node_label

CHAR_W = 7.2  # advance of one character of 12px monospace
BOX_H = 22
PAD = 8  # inside a box, left and right of the label
GAP_X = 16  # between sibling subtrees
GAP_Y = 30  # between levels
MARGIN = 16
HEADING_H = 26


def _box_width(n: Node) -> float:
    return len(node_label(n)) * CHAR_W + 2 * PAD


def _layout(root: Node) -> tuple[list[tuple[Node, float, int]], list[tuple[float, int, float, int]], float, int]:
    """(nodes as (node, centre x, depth), edges as (x1, depth1, x2, depth2), width, depth)."""
    # post-order: the width of every subtree (ids: a shared subtree is drawn once per occurrence)
    width: dict[int, float] = {}
    stack: list[tuple[Node, bool]] = [(root, False)]
    while stack:
        n, expanded = stack.pop()
        if not expanded:
            stack.append((n, True))
            stack.extend((c, False) for c in n.children)
            continue
        kids = sum(width[id(c)] for c in n.children) + GAP_X * max(0, len(n.children) - 1)
        width[id(n)] = max(_box_width(n), kids)
    nodes: list[tuple[Node, float, int]] = []
    edges: list[tuple[float, int, float, int]] = []
    deepest = 0
    # pre-order: each subtree gets a span [left, left + width); its root sits at the centre
    todo: list[tuple[Node, float, int, float | None]] = [(root, 0.0, 0, None)]
    while todo:
        n, left, depth, parent_x = todo.pop()
        x = left + width[id(n)] / 2
        nodes.append((n, x, depth))
        deepest = max(deepest, depth)
        if parent_x is not None:
            edges.append((parent_x, depth - 1, x, depth))
        kids = sum(width[id(c)] for c in n.children) + GAP_X * max(0, len(n.children) - 1)
        cursor = left + (width[id(n)] - kids) / 2
        spans = []
        for c in n.children:
            spans.append((c, cursor, depth + 1, x))
            cursor += width[id(c)] + GAP_X
        todo.extend(reversed(spans))  # popped left to right: the document reads in tree order
    return nodes, edges, width[id(root)], deepest + 1


def render_svg(results: Iterable[Answer]) -> str:
    """Every answer's trees, one panel each, stacked top to bottom in one SVG document."""
    parts: list[str] = []
    y = MARGIN
    page_w = 0.0
    for a in results:
        for i, (w, tree) in enumerate(a.trees, 1):
            heading = f"{fact_text(a.relation, a.args)}  #{i}  weight {format_weight(w)}"
            parts.append(f'<text x="{MARGIN}" y="{y + 14}" class="h">{escape(heading)}</text>')
            y += HEADING_H
            nodes, edges, width, levels = _layout(tree)
            page_w = max(page_w, width, len(heading) * CHAR_W)
            top = lambda depth: y + depth * (BOX_H + GAP_Y)  # noqa: E731
            for x1, d1, x2, d2 in edges:
                parts.append(
                    f'<line x1="{MARGIN + x1:.1f}" y1="{top(d1) + BOX_H}" x2="{MARGIN + x2:.1f}" y2="{top(d2)}"/>'
                )
            for n, x, depth in nodes:
                bw = _box_width(n)
                shape = 'class="f" rx="8"' if n.rule is None else 'class="r"'
                parts.append(
                    f'<rect x="{MARGIN + x - bw / 2:.1f}" y="{top(depth)}" width="{bw:.1f}" height="{BOX_H}" {shape}/>'
                    f'<text x="{MARGIN + x:.1f}" y="{top(depth) + 15}" text-anchor="middle">{escape(node_label(n))}</text>'
                )
            y = top(levels) + MARGIN
    if not parts:
        parts.append(f'<text x="{MARGIN}" y="{MARGIN + 14}" class="h">no derivation matches</text>')
        y += HEADING_H
        page_w = 200
    total_w = page_w + 2 * MARGIN
    head = (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{total_w:.0f}" height="{y:.0f}"'
        f' viewBox="0 0 {total_w:.0f} {y:.0f}" font-family="monospace" font-size="12">\n'
        "<style>line{stroke:#555}rect.r{fill:#fff;stroke:#333}rect.f{fill:#eee;stroke:#888}"
        "text.h{font-weight:bold}</style>\n"
    )
    return head + "\n".join(parts) + "\n</svg>\n"


def match_class(n: Node) -> str:
    """How a node takes part in the pattern (:attr:`Node.mark`): ``m`` it matches a pattern node
    (a leaf in a transitive copy is the match itself), ``p`` a match lies below it, else ``""``."""
    if n.mark is None:
        return ""
    if not n.mark.endswith("t") or not n.children:
        return "m"
    return "p"


def render_tree_svg(tree: Node) -> str:
    """One tree as an SVG element for a web page: every subtree is a nested ``<g class="t">``
    whose children sit in a ``<g class="kids">`` that a page can hide (collapse), nodes carry
    the classes ``r``/``f`` (rule step, fact) and ``m``/``p`` (:func:`match_class`). The layout
    is :func:`render_svg`'s; the nesting is emitted with an explicit stack of open subtrees."""
    nodes, _, width, levels = _layout(tree)
    top = lambda depth: MARGIN + depth * (BOX_H + GAP_Y)  # noqa: E731
    parts: list[str] = []
    parents: list[float] = []  # x of the open subtrees' roots
    remaining: list[int] = []  # children each open subtree still has to emit
    for n, x, depth in nodes:
        parts.append('<g class="t">')
        if parents:
            parts.append(f'<line x1="{MARGIN + parents[-1]:.1f}" y1="{top(depth - 1) + BOX_H}" x2="{MARGIN + x:.1f}" y2="{top(depth)}"/>')
        bw = _box_width(n)
        kind = "f" if n.rule is None else "r"
        cls = f"{kind} {match_class(n)}".strip()
        rx = ' rx="8"' if n.rule is None else ""
        toggle = " c" if n.children else ""
        parts.append(
            f'<g class="n{toggle}"><rect x="{MARGIN + x - bw / 2:.1f}" y="{top(depth)}" width="{bw:.1f}" height="{BOX_H}" class="{cls}"{rx}/>'
            f'<text x="{MARGIN + x:.1f}" y="{top(depth) + 15}" text-anchor="middle">{escape(node_label(n))}</text></g>'
        )
        if n.children:
            parts.append('<g class="kids">')
            parents.append(x)
            remaining.append(len(n.children))
            continue
        parts.append("</g>")
        while remaining:  # close every subtree whose last child this was
            remaining[-1] -= 1
            if remaining[-1]:
                break
            remaining.pop()
            parents.pop()
            parts.append("</g></g>")
    w = width + 2 * MARGIN
    h = top(levels) - GAP_Y + MARGIN
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" class="tree" width="{w:.0f}" height="{h:.0f}"'
        f' viewBox="0 0 {w:.0f} {h:.0f}" font-family="monospace" font-size="12">' + "".join(parts) + "</svg>"
    )
