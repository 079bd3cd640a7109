"""The explain bridge: top-k derivation trees of a peer's tuple through the schema mappings.

``selp cdss explain DIR --peer P 'B(3, 2)' -k 3`` compiles the CDSS with ``P`` as the viewpoint
(its ranked-trust costs become rule weights: ``l_R`` weighs the cost of ``R``'s peer's data, a
mapping rule the mapping's cost; :mod:`selp.cdss.compile`), runs selp's top-k
(:func:`selp.topk.api.topk`, the API behind ``selp explain``) for ``R_o(3, 2)`` over the store's
latest published base data, and redraws each tree in the CDSS's terms: the internal chain
``R_o <- R_t <- P_m <- S_o ...`` of one import becomes one step "``R(...)`` via ``m`` from the
peers ``m`` reads", and ``R_o <- R_l`` becomes "local data of the peer". With the ``cost``
monoid a tree's weight is its trust cost (tropical semiring: costs add along the tree, the best
tree is the cheapest), compared with the peer's threshold when it has one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from selp.cdss.compile import CompiledCDSS, compile_cdss
from selp.cdss.errors import CdssError
from selp.cdss.model import RelationRef
from selp.cdss.store import Store
from selp.engines.registry import DEFAULT as DEFAULT_ENGINE
from selp.engines.registry import canonical
from selp.topk.trees import Node
from selp.values import Value, display_value, format_value, is_int_literal


@dataclass(frozen=True)
class Step:
    """One step of a CDSS derivation: a tuple of a peer relation, and how it got there."""

    relation: RelationRef
    args: tuple[Value, ...]
    how: str  # "local" (the peer's own data) or "mapping"
    mapping: str | None
    sources: tuple[str, ...]  # the peers whose relations the mapping's body reads
    weight: Any  # the step's rule weight (its trust cost with the cost monoid)
    children: tuple["Step", ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "relation": self.relation.name,
            "peer": self.relation.peer,
            "args": [v if isinstance(v, (int, str)) else format_value(v) for v in self.args],
            "step": self.how,
            "mapping": self.mapping,
            "sources": list(self.sources),
            "weight": self.weight,
            "children": [c.to_json() for c in self.children],
        }


@dataclass(frozen=True)
class Explanation:
    """The ranked trees of one tuple as seen by ``peer``."""

    peer: str
    relation: RelationRef
    args: tuple[Value, ...]
    monoid: str
    k: int
    publication: int
    trees: tuple[tuple[Any, Step], ...]  # (tree weight, tree), best first
    threshold: float | None = None


def parse_fact(compiled: CompiledCDSS, text: str) -> tuple[RelationRef, tuple[Value, ...]]:
    """``B(3, 2)`` or ``PBioSQL.B(3, 2)`` (any peer's relation), values typed by the schema."""
    from selp.cdss.edits import EDIT_SYNTAX, split_args

    where = f"fact {text.strip()!r}"
    m = EDIT_SYNTAX.match(text)
    if m is None or m.group(1):
        raise CdssError(f"{where}: expected RELATION(value, ...), e.g. B(3, 2)")
    _, owner, name, args = m.groups()
    cdss = compiled.cdss
    found = [r for r in cdss.relations() if r.name == name and (owner is None or r.peer == owner)]
    if not found:
        known = ", ".join(cdss.display_name(r.ref) for r in cdss.relations())
        raise CdssError(f"{where}: no relation {name if owner is None else owner + '.' + name} (relations: {known})")
    if len(found) > 1:
        raise CdssError(f"{where}: {name} is ambiguous; write {' or '.join(f'{r.peer}.{name}' for r in found)}")
    rel = found[0]
    cells = [c.strip() for c in split_args(args, where)]
    if len(cells) != rel.arity:
        raise CdssError(f"{where}: {rel.name} has {rel.arity} attribute(s) ({', '.join(rel.attribute_names)}), got {len(cells)}")
    values: list[Value] = []
    for cell, attr in zip(cells, rel.attributes):
        if attr.type == "int":
            if not is_int_literal(cell):
                raise CdssError(f"{where}: {rel.name}.{attr.name} is int, got {cell!r}")
            values.append(int(cell))
        else:
            values.append(cell[1:-1] if len(cell) >= 2 and cell[0] == cell[-1] == '"' else cell)
    return rel.ref, tuple(values)


def to_step(compiled: CompiledCDSS, node: Node) -> Step:
    """Redraw a tree of the compiled program (rooted at an ``R_o`` fact) as CDSS steps."""
    origin = compiled.origins.get(node.rule or "")
    if origin is None or origin.relation is None or origin.kind not in ("local", "output"):
        raise ValueError(f"not an instance step: {node.relation} by {node.rule}")
    ref = origin.relation
    if origin.kind == "local":
        return Step(ref, node.args, "local", None, (ref.peer,), node.weight)
    (trusted,) = node.children  # R_t <- P_m by the trusted rule of mapping m
    (prov,) = trusted.children
    mapping = compiled.origins[trusted.rule or ""].mapping
    assert mapping is not None
    sources = compiled.cdss.mapping(mapping).source_peers
    children = tuple(to_step(compiled, c) for c in prov.children if compiled.origins.get(c.rule or "") is not None)
    return Step(ref, node.args, "mapping", mapping, sources, prov.weight, children)


def explain(
    store: Store,
    peer: str,
    fact: str,
    k: int = 3,
    monoid: str = "cost",
    engine: str = DEFAULT_ENGINE,
    spark: Any = None,
) -> Explanation:
    """The top-k derivation trees of ``fact`` ranked by ``peer``'s trust (see module docstring),
    computed by :func:`selp.topk.api.topk` on the registered engine ``engine`` (``spark``: the
    session when it is the Spark engine)."""
    from selp.cdss.ranked import threshold_rejections
    from selp.database import Database, column_names, fact_types
    from selp.language.validate import analyze
    from selp.topk.api import topk
    from selp.topk.trees import answers

    store.check_peer(peer)
    engine = canonical(engine)  # an unknown name fails before reading the store
    compiled = compile_cdss(store.cdss, viewpoint=peer)
    ref, args = parse_fact(compiled, fact)
    publication = store.last_publication()
    base = store.base_data(publication)
    # the trees are over what exchange accepts: imports above their owner's threshold are out
    # (computed in Python: the base data is already here, and it needs no Spark job)
    base.update(threshold_rejections(store.compiled, base))
    target = compiled.names.relation(ref, "o")
    pattern = f"{target}({', '.join(format_value(v) for v in args)})"
    # the base data as Python facts, typed as declared: no files between the store and the engine
    analysis = analyze(compiled.program)
    facts = {rel: set(base.get(rel, ())) for rel in analysis.edb}
    columns = {rel: column_names(compiled.program, rel, n) for rel, n in analysis.arities.items()}
    db = Database(facts, {rel: {} for rel in analysis.edb}, fact_types(analysis, facts), columns)
    table = topk(analysis, db, pattern, k, monoid, engine, spark=spark)
    found = answers(table)
    trees: tuple[tuple[Any, Step], ...] = ()
    if found:
        (answer,) = found
        trees = tuple((w, to_step(compiled, t)) for w, t in answer.trees)
    ranked = store.cdss.peer(peer).policy.ranked
    threshold = ranked.threshold if ranked is not None and monoid == "cost" else None
    return Explanation(peer, ref, args, monoid, k, publication, trees, threshold)


def _num(w: Any) -> str:
    if isinstance(w, float) and w.is_integer():
        return str(int(w))
    return f"{w:.6g}" if isinstance(w, float) else str(w)


def fact_text(compiled_or_store: Any, ref: RelationRef, args: tuple[Value, ...]) -> str:
    return f"{compiled_or_store.cdss.display_name(ref)}({', '.join(display_value(v) for v in args)})"


def render_text(store: Store, e: Explanation) -> str:
    """The trees drawn with box characters; each step names its mapping and source peers."""
    what = "cost" if e.monoid == "cost" else f"weight ({e.monoid})"
    head = fact_text(store, e.relation, e.args)
    if not e.trees:
        return f"{head} has no derivation (publication {e.publication}); nothing to explain\n"
    lines = [f"{head} as {e.peer} sees it: {len(e.trees)} best derivation(s) by {what}, publication {e.publication}"]
    for i, (w, tree) in enumerate(e.trees, 1):
        verdict = ""
        if e.threshold is not None:
            verdict = "  (within" if float(w) <= e.threshold else "  (above"
            verdict += f" {e.peer}'s threshold {_num(e.threshold)})"
        lines.append(f"  #{i}  {what} {_num(w)}{verdict}")
        _draw(store, tree, "    ", "    ", lines, e.monoid)
    return "\n".join(lines) + "\n"


def _label(store: Store, s: Step, monoid: str) -> str:
    unit = "cost" if monoid == "cost" else "weight"
    w = f"  [{unit} {_num(s.weight)}]" if s.weight is not None else ""
    if s.how == "local":
        return f"{fact_text(store, s.relation, s.args)}  local data of {s.relation.peer}{w}"
    return f"{fact_text(store, s.relation, s.args)}  <- {s.mapping} from {', '.join(s.sources)}{w}"


def _draw(store: Store, s: Step, first: str, rest: str, lines: list[str], monoid: str) -> None:
    lines.append(first + _label(store, s, monoid))
    for j, c in enumerate(s.children):
        last = j == len(s.children) - 1
        _draw(store, c, rest + ("└─ " if last else "├─ "), rest + ("   " if last else "│  "), lines, monoid)


def to_json(store: Store, e: Explanation) -> dict[str, Any]:
    return {
        "peer": e.peer,
        "fact": {
            "relation": e.relation.name,
            "peer": e.relation.peer,
            "args": [v if isinstance(v, (int, str)) else format_value(v) for v in e.args],
        },
        "k": e.k,
        "monoid": e.monoid,
        "publication": e.publication,
        "threshold": e.threshold,
        "trees": [{"weight": w, "tree": t.to_json()} for w, t in e.trees],
    }
