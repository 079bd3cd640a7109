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

from dataclasses import dataclass, replace
from typing import Any, Callable

from selp.cdss.compile import CompiledCDSS, compile_cdss, step_rejections
from selp.cdss.errors import CdssError
from selp.cdss.model import RankedTrust, RelationRef
from selp.cdss.store import Store
from selp.engines.registry import DEFAULT as DEFAULT_ENGINE
from selp.engines.registry import canonical, get_engine
from selp.topk.monoid import format_weight as _num
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
    # why the owner keeps this import out of its instance (a why-not tree); empty: accepted
    rejected: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """The steps as nested dicts, built bottom-up without recursion (a derivation through a
        recursive mapping can be thousands of steps deep); write it with
        :func:`selp.topk.trees.iter_json`, since :func:`json.dumps` recurses too."""
        done: dict[int, dict[str, Any]] = {}
        stack: list[tuple[Step, bool]] = [(self, False)]
        while stack:
            st, expanded = stack.pop()
            if id(st) in done:
                continue
            if not expanded:
                stack.append((st, True))
                stack.extend((c, False) for c in reversed(st.children) if id(c) not in done)
                continue
            done[id(st)] = {
                "relation": st.relation.name,
                "peer": st.relation.peer,
                "args": [v if isinstance(v, (int, str)) else format_value(v) for v in st.args],
                "step": st.how,
                "mapping": st.mapping,
                "sources": list(st.sources),
                "weight": st.weight,
                "rejected": list(st.rejected),
                "children": [done[id(c)] for c in st.children],
            }
        return done[id(self)]

    def is_rejected(self) -> bool:
        """Whether some step of this derivation is rejected (the derivation then brings nothing)."""
        stack: list[Step] = [self]
        while stack:
            st = stack.pop()
            if st.rejected:
                return True
            stack.extend(st.children)
        return False


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
    # the tuple is not in the peer's instance and ``trees`` are the derivations the mappings
    # would give it, each with the steps its owners reject (why-not)
    why_not: bool = False


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


# judge(relation, args, mapping or None for the output step, head atom) -> rejection reasons
Judge = Callable[[RelationRef, tuple[Value, ...], "str | None", "int | None"], tuple[str, ...]]


def to_step(compiled: CompiledCDSS, node: Node, judge: Judge | None = None) -> Step:
    """Redraw a tree of the compiled program (rooted at an ``R_o`` fact) as CDSS steps; ``judge``
    (why-not trees) gives each import the reasons its owner rejects it.

    Post-order over an explicit stack: a derivation through a recursive mapping can be deeper
    than Python's recursion limit."""

    def parts(n: Node) -> tuple[Any, Node | None, list[Node]]:
        origin = compiled.origins.get(n.rule or "")
        if origin is None or origin.relation is None or origin.kind not in ("local", "output"):
            raise ValueError(f"not an instance step: {n.relation} by {n.rule}")
        if origin.kind == "local":
            return origin, None, []
        trusted = n.children[0]  # R_t <- P_m by the trusted rule of mapping m (then: not R_r ...)
        (prov,) = trusted.children
        return origin, trusted, [c for c in prov.children if compiled.origins.get(c.rule or "") is not None]

    built: dict[int, Step] = {}
    stack: list[tuple[Node, bool]] = [(node, False)]
    while stack:
        n, expanded = stack.pop()
        if id(n) in built:
            continue
        origin, trusted, kids = parts(n)
        ref = origin.relation
        if trusted is None:
            built[id(n)] = Step(ref, n.args, "local", None, (ref.peer,), n.weight)
            continue
        if not expanded:
            stack.append((n, True))
            stack.extend((c, False) for c in reversed(kids) if id(c) not in built)
            continue
        how = compiled.origins[trusted.rule or ""]
        mapping = how.mapping
        assert mapping is not None
        rejected: tuple[str, ...] = ()
        if judge is not None:
            rejected = judge(ref, n.args, mapping, how.head) + judge(ref, n.args, None, None)
        sources = compiled.cdss.mapping(mapping).source_peers
        built[id(n)] = Step(ref, n.args, "mapping", mapping, sources, trusted.children[0].weight,
                            tuple(built[id(c)] for c in kids), rejected)
    return built[id(node)]


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
    from selp.cdss.ranked import RankedProgram
    from selp.database import Database, column_names, fact_types
    from selp.language.validate import analyze
    from selp.topk.api import topk
    from selp.topk.trees import answers

    store.check_peer(peer)
    engine = canonical(engine)  # an unknown name fails before reading the store
    ranked = store.cdss.peer(peer).policy.ranked
    scaled = monoid == "cost" and ranked is not None and bool(ranked.mapping_scales)
    want = k
    if scaled:
        # rule weights only add, so the engine ranks by the additive parts of the mapping
        # functions; the trees are re-costed with the functions and re-ranked, from a wider
        # pool (exact whenever the fact has at most this many derivation trees)
        k = max(SCALED_POOL * k, SCALED_POOL)
    compiled = compile_cdss(store.cdss, viewpoint=peer)
    ref, args = parse_fact(compiled, fact)
    publication = store.last_publication()
    base = store.base_data(publication)
    # the trees are over what exchange accepts: imports above their owner's threshold are out
    # (computed here, in DuckDB or by the reference engine's oracle: the base data is already
    # here, and it needs no Spark job)
    rp = RankedProgram(store.compiled)
    rejections = get_engine(engine).ranked_trust(rp, base).rejections if rp.thresholds else {}
    base.update(rejections)
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
    why_not = False
    if found:
        (answer,) = found
        trees = tuple((w, to_step(compiled, t)) for w, t in answer.trees)
    else:
        # why-not: the derivations the mappings would give the tuple with every gate open, each
        # step judged by its owner's trust rules, curators' rejections and threshold
        open_ = compile_cdss(store.cdss, viewpoint=peer, unfiltered=True)
        gated = {**base, **rejections}

        def judge(rel: RelationRef, values: tuple[Value, ...], mapping: str | None, head: int | None) -> tuple[str, ...]:
            if mapping is not None and head is not None:
                return step_rejections(store.cdss, mapping, head, values)
            owner = rel.peer
            reasons = []
            if values in gated.get(compiled.names.relation(rel, "r"), ()):
                reasons.append(f"{owner}'s curators rejected it (a rejection in {owner}'s edit log)")
            if values in gated.get(compiled.names.relation(rel, "x"), ()):
                reasons.append(f"it costs {owner} more than its ranked-trust threshold")
            return tuple(reasons)

        table = topk(analyze(open_.program), db, pattern, k, monoid, engine, spark=spark)
        found = answers(table)
        if found:
            (answer,) = found
            trees = tuple((w, to_step(open_, t, judge)) for w, t in answer.trees)
            why_not = True
    if scaled:
        trees = recost(trees, ranked)[:want]  # type: ignore[arg-type]
        k = want
    threshold = ranked.threshold if ranked is not None and monoid == "cost" else None
    return Explanation(peer, ref, args, monoid, k, publication, trees, threshold, why_not)


SCALED_POOL = 10  # trees fetched per tree wanted when a mapping function scales


def function_label(scale: float, cost: float) -> str:
    """A mapping function as written in ``cdss.toml`` (``2x``, ``2x + 1``)."""
    k = "" if scale == 1 else _num(scale)
    return f"{k}x + {_num(cost)}" if cost else f"{k}x"


def recost(trees: tuple[tuple[Any, Step], ...], ranked: RankedTrust) -> tuple[tuple[Any, Step], ...]:
    """The trees with their costs under ``ranked``'s mapping functions ([Kar09] Example 9: a
    step through ``m`` costs ``f_m`` of its children's summed costs), cheapest first; a scaled
    mapping step shows its function instead of a weight. Bottom-up without recursion."""
    out = []
    for _, tree in trees:
        done: dict[int, tuple[float, Step]] = {}
        stack: list[tuple[Step, bool]] = [(tree, False)]
        while stack:
            st, expanded = stack.pop()
            if id(st) in done:
                continue
            if st.how == "local":
                done[id(st)] = (float(st.weight or 0), st)
                continue
            if not expanded:
                stack.append((st, True))
                stack.extend((c, False) for c in st.children if id(c) not in done)
                continue
            kids = [done[id(c)] for c in st.children]
            scale = ranked.mapping_scale(st.mapping or "")
            add = ranked.mapping_cost(st.mapping or "") or 0
            weight = function_label(scale, add) if scale != 1 else st.weight
            step = replace(st, weight=weight, children=tuple(c for _, c in kids))
            done[id(st)] = (scale * sum(c for c, _ in kids) + add, step)
        cost, step = done[id(tree)]
        out.append((int(cost) if float(cost).is_integer() else cost, step))
    out.sort(key=lambda wt: wt[0])
    return tuple(out)


def fact_text(compiled_or_store: Any, ref: RelationRef, args: tuple[Value, ...]) -> str:
    return f"{compiled_or_store.cdss.display_name(ref)}({', '.join(display_value(v) for v in args)})"


def render_text(store: Store, e: Explanation) -> str:
    """The trees drawn with box characters; each step names its mapping and source peers, and in
    a why-not explanation the rules that reject it."""
    what = "cost" if e.monoid == "cost" else f"weight ({e.monoid})"
    head = fact_text(store, e.relation, e.args)
    if not e.trees:
        return f"{head} has no derivation (publication {e.publication}); nothing to explain\n"
    if e.why_not:
        lines = [
            f"{head} is not in {e.peer}'s instance (publication {e.publication}): every derivation the"
            f" mappings give it is rejected; {len(e.trees)} best by {what}, rejected steps marked ✗"
        ]
    else:
        lines = [f"{head} as {e.peer} sees it: {len(e.trees)} best derivation(s) by {what}, publication {e.publication}"]
    for i, (w, tree) in enumerate(e.trees, 1):
        verdict = ""
        if e.threshold is not None and not e.why_not:
            verdict = "  (within" if float(w) <= e.threshold else "  (above"
            verdict += f" {e.peer}'s threshold {_num(e.threshold)})"
        lines.append(f"  #{i}  {what} {_num(w)}{verdict}")
        _draw(store, tree, lines, e.monoid)
    return "\n".join(lines) + "\n"


def _label(store: Store, s: Step, monoid: str) -> str:
    unit = "cost" if monoid == "cost" else "weight"
    w = f"  [{unit} {_num(s.weight)}]" if s.weight is not None else ""
    if s.how == "local":
        return f"{fact_text(store, s.relation, s.args)}  local data of {s.relation.peer}{w}"
    return f"{fact_text(store, s.relation, s.args)}  <- {s.mapping} from {', '.join(s.sources)}{w}"


def _draw(store: Store, root: Step, lines: list[str], monoid: str) -> None:
    # pre-order over an explicit stack; children pushed in reverse so they pop in order
    stack: list[tuple[Step, str, str]] = [(root, "    ", "    ")]
    while stack:
        s, first, rest = stack.pop()
        lines.append(first + _label(store, s, monoid))
        lines.extend(f"{rest}  ✗ {why}" for why in s.rejected)
        last = len(s.children) - 1
        for j in range(last, -1, -1):
            end = j == last
            stack.append((s.children[j], rest + ("└─ " if end else "├─ "), rest + ("   " if end else "│  ")))


def to_json(store: Store, e: Explanation) -> dict[str, Any]:
    """The explanation as a JSON document (write it with :func:`selp.topk.trees.iter_json`)."""
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
        "in_instance": bool(e.trees) and not e.why_not,
        "why_not": e.why_not,
        "trees": [{"weight": w, "tree": t.to_json()} for w, t in e.trees],
    }
