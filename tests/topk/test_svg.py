"""``--format svg``: derivation trees drawn as SVG in Python, with no Graphviz installed."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from selp.topk.svg import render_svg
from selp.topk.trees import Answer, Node, node_label

NS = "{http://www.w3.org/2000/svg}"


def _tree() -> Answer:
    leaves = (Node("imports", ("Cuba", "wine"), None, 1.0), Node("exports", ("France", "wine"), None, 1.0))
    root = Node("dealsWith", ("Cuba", "France"), "r2", 0.5, leaves)
    return Answer("dealsWith", ("Cuba", "France"), ((0.5, root),))


def test_every_node_is_a_labelled_box_and_parents_sit_above_their_children() -> None:
    answer = _tree()
    doc = ET.fromstring(render_svg([answer]))
    rects = doc.findall(f"{NS}rect")
    labels = [t.text for t in doc.findall(f"{NS}text")]
    assert len(rects) == 3 and len(doc.findall(f"{NS}line")) == 2
    assert labels[0] == "dealsWith(Cuba, France)  #1  weight 0.5"
    root = answer.trees[0][1]
    assert labels[1:] == [node_label(root)] + [node_label(c) for c in root.children]
    assert "[r2 0.5]" in labels[1] and "(fact 1)" in labels[2]
    top_y = [float(r.get("y")) for r in rects]
    assert top_y[0] < top_y[1] == top_y[2]  # children on one level under the root
    boxes = sorted((float(r.get("x")), float(r.get("width"))) for r in rects[1:])
    assert boxes[0][0] + boxes[0][1] < boxes[1][0]  # siblings do not overlap
    assert [r.get("class") for r in rects] == ["r", "f", "f"]  # leaves drawn as facts


def test_a_tree_deeper_than_the_recursion_limit_draws() -> None:
    node = Node("e", (0,), None, 1.0)
    for i in range(5000):
        node = Node("p", (i,), "r", 1.0, (node,))
    doc = ET.fromstring(render_svg([Answer("p", (4999,), ((1.0, node),))]))
    assert len(doc.findall(f"{NS}rect")) == 5001


def test_no_answer_says_so() -> None:
    doc = ET.fromstring(render_svg([]))
    assert [t.text for t in doc.findall(f"{NS}text")] == ["no derivation matches"]
