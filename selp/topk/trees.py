"""Trees of the original program from a DTable, and their text, JSON and Graphviz renderings.

Pointer chasing starts at the answers asked for only. Annotated relations are shown under their
origin relation, copy steps (transitive copies, HandleEDB, NOT's EDB copies) are skipped: the
trees are derivations of P, as Proposition 4.2 promises.

Every walk over a tree here is iterative (explicit stacks, no recursion): a tree computed from the
data can be thousands of levels deep (a path along a long chain), beyond Python's recursion limit.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator

from selp.language.pattern import PatternNode
from selp.topk.dtable import DTable, Entry, FactKey
from selp.topk.monoid import format_weight as _num
from selp.topk.monoid import get_monoid
from selp.values import Value, display_value, json_value


@dataclass(frozen=True)
class Node:
    """A node of a derivation tree of P with the weight of its rule (or of its fact, at a leaf)."""

    relation: str
    args: tuple[Value, ...]
    rule: str | None
    weight: Any  # as users write it
    children: tuple["Node", ...] = ()
    # the pattern node this node stands for in P_p: "v1" (it matches v1), "v1t" (a match of v1
    # lies in its subtree; a leaf's subtree is itself); None outside the pattern's part. Shown by
    # `selp serve` as the highlighted part of a tree; not part of the JSON contract.
    mark: str | None = field(default=None, compare=False)

    def to_json(self) -> dict[str, Any]:
        """The tree as nested dicts (built bottom-up without recursion); write it with
        :func:`iter_json`, since :func:`json.dumps` recurses too."""
        done: dict[int, dict[str, Any]] = {}
        stack: list[tuple[Node, bool]] = [(self, False)]
        while stack:
            n, expanded = stack.pop()
            if id(n) in done:
                continue  # a shared subtree: its dict is reused
            if not expanded:
                stack.append((n, True))
                stack.extend((c, False) for c in reversed(n.children) if id(c) not in done)
                continue
            done[id(n)] = {
                "relation": n.relation,
                "args": [json_value(v) for v in n.args],
                "rule": n.rule,
                "weight": n.weight,
                "children": [done[id(c)] for c in n.children],
            }
        return done[id(self)]

    def depth(self) -> int:
        """The number of nodes on the longest root-to-leaf path."""
        best = 0
        stack: list[tuple[Node, int]] = [(self, 1)]
        while stack:
            n, d = stack.pop()
            best = max(best, d)
            stack.extend((c, d + 1) for c in n.children)
        return best


@dataclass(frozen=True)
class Answer:
    """A fact of P with its ranked trees."""

    relation: str
    args: tuple[Value, ...]
    trees: tuple[tuple[Any, Node], ...]  # (displayed tree weight, tree), best first


def materialise(table: DTable, relation: str, values: tuple[Value, ...], entry: Entry, memo: dict | None = None) -> Node:
    """The tree of P that a DTable entry of P_p fact ``relation(values)`` stands for.

    ``memo`` shares the subtrees of entries reached more than once (trees of many answers
    overlap), so materialising all answers costs about the DTable's size, not the trees'. The
    walk is a post-order over an explicit stack: a node is built once all its children are."""
    monoid = get_monoid(table.monoid)
    memo = {} if memo is None else memo

    def resolve(relation: str, values: tuple[Value, ...], entry: Entry) -> tuple[str, tuple[Value, ...], Entry, str | None]:
        mark = pattern_mark(relation)
        while entry.rule is not None and table.rule_origin.get(entry.rule) is None:  # copy steps
            ((relation, values, rank),) = entry.children
            entry = table.entries[(relation, values)][rank - 1]
            # an EDB copy (T@v1t <- T) ends at the unannotated fact: the copy's mark is the leaf's
            mark = pattern_mark(relation) or mark
        return relation, values, entry, mark

    def leaf_or_memo(relation: str, values: tuple[Value, ...], entry: Entry, mark: str | None) -> Node | None:
        if entry.rule is None:
            # a monoid that ignores fact weights (size) shows none: "(fact)", not "(fact 0)"
            weight = None if monoid.fact_weight_override is not None else monoid.display(entry.weight)
            return Node(table.relation_origin.get(relation, relation), values, None, weight, mark=mark)
        return memo.get(id(entry))

    root = resolve(relation, values, entry)
    built = leaf_or_memo(*root)
    if built is not None:
        return built
    # frames: [relation, values, entry, mark, resolved children, children built so far]
    stack: list[list[Any]] = []

    def push(rel: str, vs: tuple[Value, ...], e: Entry, mark: str | None) -> None:
        kids = [resolve(r, v, table.entries[(r, v)][k - 1]) for r, v, k in e.children]
        stack.append([rel, vs, e, mark, kids, []])

    push(*root)
    result: Node | None = None
    while stack:
        frame = stack[-1]
        rel, vs, e, mark, kids, made = frame
        if len(made) < len(kids):
            child = kids[len(made)]
            node = leaf_or_memo(*child)
            if node is None:
                push(*child)
            else:
                made.append(node)
            continue
        stack.pop()
        rule = table.rule_origin[e.rule]
        node = Node(table.relation_origin.get(rel, rel), vs, rule, table.rule_weights.get(rule), tuple(made), mark)
        memo[id(e)] = node
        if stack:
            stack[-1][5].append(node)
        else:
            result = node
    assert result is not None
    return result


def pattern_mark(relation: str) -> str | None:
    """The pattern node a P_p relation is annotated with (``dealsWith@v1t`` -> ``v1t``), or
    None for P's own relations and negation's helper relations (``R@!v0s1``)."""
    _, at, mark = relation.partition("@")
    return mark if at and mark.startswith("v") else None


def answers(table: DTable, fact_filter: PatternNode | None = None) -> list[Answer]:
    """Every answer (optionally only facts carrying ``fact_filter``'s label), sorted by fact."""
    from selp.values import sort_key

    monoid = get_monoid(table.monoid)
    out = []
    memo: dict = {}
    for (rel, values), ranked in table.answer_pointers().items():
        if fact_filter is not None and not fact_filter.matches_fact(rel, values):
            continue
        trees = tuple((monoid.display(e.weight), materialise(table, r, vs, e, memo)) for r, vs, e in ranked)
        out.append(Answer(rel, values, trees))
    out.sort(key=lambda a: (a.relation, tuple(sort_key(v) for v in a.args)))
    return out


def summarize(table: DTable, fact_filter: PatternNode | None = None) -> dict[str, dict[str, Any]]:
    """Per relation of P: answered facts, trees, the best weight and the worst top-1 weight
    (displayed). A DTable with a ``summary`` method (the embedded engine's, over arrays) answers
    without building entries when no filter is given."""
    monoid = get_monoid(table.monoid)
    if fact_filter is None and hasattr(table, "summary"):
        raw = table.summary()
        return {
            rel: {**s, "best": None if s["best"] is None else monoid.display(s["best"]),
                  "worst_top1": None if s["worst_top1"] is None else monoid.display(s["worst_top1"])}
            for rel, s in raw.items()
        }
    out: dict[str, dict[str, Any]] = {}
    order = monoid.key
    for (rel, values), ranked in table.answers().items():
        if fact_filter is not None and not fact_filter.matches_fact(rel, values):
            continue
        cur = out.setdefault(rel, {"facts": 0, "entries": 0, "best": None, "worst_top1": None})
        cur["facts"] += 1
        cur["entries"] += len(ranked)
        w = ranked[0].weight
        if cur["best"] is None or order(w) < order(cur["best"]):
            cur["best"] = w
        if cur["worst_top1"] is None or order(w) > order(cur["worst_top1"]):
            cur["worst_top1"] = w
    return {rel: {**s, "best": monoid.display(s["best"]), "worst_top1": monoid.display(s["worst_top1"])} for rel, s in out.items()}


def render_summary(summary: dict[str, dict[str, Any]]) -> str:
    """:func:`summarize`'s figures, one line per relation (``--format summary``)."""
    return "".join(
        f"{rel}: {s['facts']} fact(s), {s['entries']} tree(s); best weight {s['best']}, worst top-1 weight {s['worst_top1']}\n"
        for rel, s in sorted(summary.items())
    ) or "no derivation matches\n"


def to_json(table: DTable, results: Iterable[Answer]) -> dict[str, Any]:
    """The output contract of ``selp topk --format json``."""
    return {
        "k": table.k,
        "monoid": table.monoid,
        "pattern": table.pattern,
        "results": [
            {
                "fact": {"relation": a.relation, "args": [json_value(v) for v in a.args]},
                "trees": [{"weight": w, "tree": t.to_json()} for w, t in a.trees],
            }
            for a in results
        ],
    }


def iter_json(doc: Any, indent: int | None = None) -> Iterator[str]:
    """``json.dumps(doc, indent=indent, ensure_ascii=False)`` in pieces, without recursion
    (``json.dumps`` recurses per level and fails on a tree a thousand levels deep)."""
    item_sep = "," if indent is not None else ", "
    end = object()

    def newline(depth: int) -> str:
        return "" if indent is None else "\n" + " " * (indent * depth)

    # frames: [iterator over items, is a dict, depth of the items, no item written yet]
    stack: list[list[Any]] = []

    def begin(value: Any, depth: int) -> str:
        if isinstance(value, dict) and value:
            stack.append([iter(value.items()), True, depth + 1, True])
            return "{"
        if isinstance(value, (list, tuple)) and value:
            stack.append([iter(value), False, depth + 1, True])
            return "["
        if isinstance(value, dict):
            return "{}"
        if isinstance(value, (list, tuple)):
            return "[]"
        return json.dumps(value, ensure_ascii=False)

    yield begin(doc, 0)
    while stack:
        frame = stack[-1]
        item = next(frame[0], end)
        if item is end:
            stack.pop()
            yield newline(frame[2] - 1) + ("}" if frame[1] else "]")
            continue
        lead = ("" if frame[3] else item_sep) + newline(frame[2])
        frame[3] = False
        if frame[1]:
            key, value = item
            yield lead + json.dumps(str(key), ensure_ascii=False) + ": " + begin(value, frame[2])
        else:
            yield lead + begin(item, frame[2])


def fact_text(relation: str, args: tuple[Value, ...]) -> str:
    return f"{relation}({', '.join(display_value(v) for v in args)})"


def render_text(results: Iterable[Answer]) -> str:
    """Box-drawing trees: every node with its rule and the rule's weight (leaves: the fact's)."""
    return "".join(iter_text(results))


def iter_text(results: Iterable[Answer]) -> Iterator[str]:
    """:func:`render_text` in pieces, one tree (or answer heading) at a time: a large k over few
    facts draws hundreds of megabytes, which need not be held at once to be printed."""
    for a in results:
        yield fact_text(a.relation, a.args) + "\n"
        for i, (w, tree) in enumerate(a.trees, 1):
            lines = [f"  #{i}  weight {_num(w)}"]
            _draw(tree, "    ", "    ", lines)
            yield "\n".join(lines) + "\n"
        yield "\n"


def node_label(n: Node) -> str:
    """A node as the drawings show it: the fact, then its rule and weight or ``(fact W)``."""
    if n.rule is None:
        step = "(fact)" if n.weight is None else f"(fact {_num(n.weight)})"
    else:
        step = f"[{n.rule} {_num(n.weight)}]"
    return f"{fact_text(n.relation, n.args)}  {step}"


def _draw(n: Node, first: str, rest: str, lines: list[str]) -> None:
    # pre-order over an explicit stack; children pushed in reverse so they pop in order
    stack: list[tuple[Node, str, str]] = [(n, first, rest)]
    while stack:
        n, first, rest = stack.pop()
        lines.append(first + node_label(n))
        last = len(n.children) - 1
        for j in range(last, -1, -1):
            end = j == last
            stack.append((n.children[j], rest + ("└─ " if end else "├─ "), rest + ("   " if end else "│  ")))


def render_dot(results: Iterable[Answer]) -> str:
    """Graphviz: one cluster per answer tree, rule steps as edge-labelled boxes."""
    out = ["digraph topk {", "  node [shape=box, fontname=\"Helvetica\"];"]
    counter = 0
    for a in results:
        for i, (w, tree) in enumerate(a.trees, 1):
            out.append(f"  subgraph cluster_{counter} {{")
            out.append(f"    label={json.dumps(f'{fact_text(a.relation, a.args)} #{i} weight {_num(w)}')};")
            stack: list[tuple[Node, str | None]] = [(tree, None)]
            while stack:
                n, parent = stack.pop()
                me = f"n{counter}_{len(out)}"
                shape = "" if n.rule is not None else ", style=rounded"
                out.append(f"    {me} [label={json.dumps(node_label(n))}{shape}];")
                if parent is not None:
                    out.append(f"    {parent} -> {me};")
                stack.extend((c, me) for c in reversed(n.children))
            out.append("  }")
            counter += 1
    out.append("}")
    return "\n".join(out) + "\n"
