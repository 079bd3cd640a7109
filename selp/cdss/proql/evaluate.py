"""Evaluate a checked ProQL query over a provenance graph: graph projection, then annotations.

**Projection** ([Kar09] §7.2–7.3.1). The FOR paths are matched one after the other, each
extending the valuations of the previous ones (a variable bound earlier constrains the later
match: the equality join of §7.3.1); a path is matched by walking from its first node backwards
through derivations (``<-``, ``<m``, ``<$p``: one mapping node; ``<-+``: the ancestors, found by a
breadth-first search that visits every node once, so cycles terminate). WHERE filters the
valuations; a path in WHERE is true when some match extends the valuation (its unbound variables
are existential). For each remaining valuation, each INCLUDE PATH adds to the projected graph G′
the tuple and mapping nodes of every matching path (for ``<-+``: every mapping node on some
derivation path between the two ends) and the sibling inputs of every included mapping node,
without their provenance. The returned nodes are always in G′.

**Annotations** (§7.3.2, §4.3). A tuple node of G′ is a *leaf* when it is a local contribution
(it carries its token) or has no derivation inside G′ (a cut, e.g. a sibling input). Its value is
its leaf value (ASSIGNING EACH leaf_node, else the semiring's default) plus, in the semiring, the
values of the mapping nodes deriving it in G′; a mapping node's value is its mapping function
(ASSIGNING EACH mapping, else the default) applied to the product of its inputs' values.

This equation system is solved **bottom-up as a fixpoint**, goal-directed: only the nodes of G′
reachable backwards from the returned nodes are touched. The nodes are split into strongly
connected components, solved in dependency order: an acyclic node once, a cyclic component by
Kleene iteration from 0. In an idempotent semiring (every one of Table 7.1) the iteration reaches
the least fixpoint. COUNT and POLYNOMIAL diverge on a productive cycle: after ``2·|SCC| + 2``
rounds the members whose values still change are set to :meth:`Semiring.diverged` (``∞``; the
polynomial's terms so far marked as an infinite series) and the component is iterated again
until stable. (Mapping functions here are pieces of identity and constants, so a finite value
is always reached within that many rounds of its inputs.)

**Engines.** Everything the evaluation needs from the graph goes through
:class:`~.graph.ProvenanceGraph`'s methods, and :func:`run_query` takes the graph as an argument:
this module is the local (Python) engine. A Spark engine would translate the same projection into
joins over the ``P_m`` tables and the fixpoint into a selp datalog program over them, returning
the same :class:`QueryResult`.
"""

from __future__ import annotations

from collections import defaultdict, deque
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

from selp.cdss.proql import ast
from selp.cdss.proql.graph import MappingNode, Node, ProvenanceGraph, TupleNode
from selp.cdss.proql.parser import ProqlError
from selp.cdss.proql.semirings import Semiring, probability
from selp.engines.joins import compare as engine_compare
from selp.scc import strongly_connected
from selp.values import Skolem, format_value

Env = dict[str, Node]
MAX_ROUNDS = 100_000


# -- conditions ---------------------------------------------------------------------------------
_MISSING = object()


def _operand(o: ast.Operand, env: Env, g: ProvenanceGraph) -> Any:
    if isinstance(o, ast.AttrRef):
        node = env[o.var]
        if not isinstance(node, TupleNode):
            return _MISSING
        found, v = g.attribute(node, o.attribute)
        return v if found else _MISSING  # heterogeneous binding without the attribute: false
    if isinstance(o, ast.VarRef):
        return env[o.var]
    return o.value


def compare(op: str, a: Any, b: Any) -> bool:
    """A comparison of values with the engines' semantics (:func:`selp.engines.joins.compare`:
    labeled nulls equal only themselves and are never ordered, nor are values of different
    types); a missing attribute makes it false."""
    if a is _MISSING or b is _MISSING:
        return False
    return engine_compare(op, a, b)


def holds(c: ast.Condition, env: Env, g: ProvenanceGraph, ctx: "_Matcher") -> bool:
    """Whether a WHERE/CASE condition holds for a valuation."""
    if isinstance(c, ast.And):
        return all(holds(p, env, g, ctx) for p in c.parts)
    if isinstance(c, ast.Or):
        return any(holds(p, env, g, ctx) for p in c.parts)
    if isinstance(c, ast.Not):
        return not holds(c.part, env, g, ctx)
    if isinstance(c, ast.Membership):
        node = env[c.var]
        return isinstance(node, TupleNode) and node.relation == c.relation
    if isinstance(c, ast.PathCondition):
        return next(ctx.match(c.path, env), None) is not None
    left, right = c.left, c.right
    for x, y in ((left, right), (right, left)):  # $p = m1
        if isinstance(x, ast.VarRef) and isinstance(env.get(x.var), MappingNode) and isinstance(y, ast.Literal):
            same = env[x.var].mapping == y.value
            return same if c.op == "=" else not same if c.op == "!=" else False
    return compare(c.op, _operand(left, env, g), _operand(right, env, g))


# -- path matching ------------------------------------------------------------------------------
class _Matcher:
    def __init__(self, g: ProvenanceGraph) -> None:
        self.g = g
        self._anc: dict[TupleNode, frozenset[TupleNode]] = {}

    def ancestors(self, t: TupleNode) -> frozenset[TupleNode]:
        """Tuples deriving ``t`` in one or more steps (``t`` itself only through a cycle)."""
        if t not in self._anc:
            seen: set[TupleNode] = set()
            todo = deque([t])
            while todo:
                x = todo.popleft()
                for m in self.g.derivations(x):
                    for u in self.g.inputs[m]:
                        if u not in seen:
                            seen.add(u)
                            todo.append(u)
            self._anc[t] = frozenset(seen)
        return self._anc[t]

    @staticmethod
    def fits(p: ast.NodePattern, t: TupleNode, env: Env) -> Env | None:
        if p.relation is not None and t.relation != p.relation:
            return None
        if p.var is None:
            return env
        bound = env.get(p.var)
        if bound is None:
            return {**env, p.var: t}
        return env if bound == t else None

    def starts(self, p: ast.NodePattern, env: Env) -> list[TupleNode]:
        bound = env.get(p.var) if p.var else None
        if isinstance(bound, TupleNode):
            return [bound]
        return sorted(self.g.tuples_of(p.relation), key=str)

    def match(self, path: ast.Path, env: Env) -> Iterator[Env]:
        """Every extension of ``env`` matching ``path`` (possibly repeated)."""
        for t in self.starts(path.nodes[0], env):
            e = self.fits(path.nodes[0], t, env)
            if e is not None:
                yield from self._walk(path, 0, t, e)

    def _walk(self, path: ast.Path, i: int, t: TupleNode, env: Env) -> Iterator[Env]:
        if i == len(path.steps):
            yield env
            return
        step, pat = path.steps[i], path.nodes[i + 1]
        for u, e in self.step(step, t, env):
            e2 = self.fits(pat, u, e)
            if e2 is not None:
                yield from self._walk(path, i + 1, u, e2)

    def step(self, step: ast.Step, t: TupleNode, env: Env) -> Iterator[tuple[TupleNode, Env]]:
        if step.kind == "plus":
            for u in self.ancestors(t):
                yield u, env
            return
        for m in self.g.derivations(t):
            e = env
            if step.kind == "mapping" and m.mapping != step.name:
                continue
            if step.kind == "mapvar":
                bound = env.get(step.name)
                if bound is not None and bound != m:
                    continue
                e = {**env, step.name: m}
            for u in dict.fromkeys(self.g.inputs[m]):
                yield u, e


# -- projection ---------------------------------------------------------------------------------
@dataclass
class Subgraph:
    """The projected graph G′: nodes and edges ``(tuple, mapping)`` (input) and ``(mapping, tuple)``
    (output)."""

    nodes: set[Node] = field(default_factory=set)
    inputs: set[tuple[TupleNode, MappingNode]] = field(default_factory=set)
    outputs: set[tuple[MappingNode, TupleNode]] = field(default_factory=set)

    def add_mapping(self, g: ProvenanceGraph, m: MappingNode, out: TupleNode) -> None:
        """Add ``m`` deriving ``out``, with all of ``m``'s inputs (the siblings, §7.2)."""
        self.nodes.update((m, out))
        self.outputs.add((m, out))
        for u in g.inputs[m]:
            self.nodes.add(u)
            self.inputs.add((u, m))


def _include(path: ast.Path, env: Env, g: ProvenanceGraph, mt: _Matcher, out: Subgraph) -> None:
    """Add every path matching ``path`` under the valuation ``env`` to ``out``."""
    layers: list[set[TupleNode]] = [{t for t in mt.starts(path.nodes[0], env) if mt.fits(path.nodes[0], t, env) is not None}]
    links: list[list[tuple[TupleNode, MappingNode | None, TupleNode]]] = []
    for i, step in enumerate(path.steps):
        pat, found, nxt = path.nodes[i + 1], [], set()
        for t in layers[i]:
            if step.kind == "plus":
                cands = [(u, None) for u in mt.ancestors(t)]
            else:
                cands = [
                    (u, m)
                    for m in g.derivations(t)
                    if (step.kind != "mapping" or m.mapping == step.name) and (step.kind != "mapvar" or env.get(step.name) in (None, m))
                    for u in dict.fromkeys(g.inputs[m])
                ]
            for u, m in cands:
                if mt.fits(pat, u, env) is not None:
                    found.append((t, m, u))
                    nxt.add(u)
        links.append(found)
        layers.append(nxt)
    # keep only the links on complete paths: backwards from the last layer
    alive = layers[-1]
    for i in range(len(links) - 1, -1, -1):
        links[i] = [x for x in links[i] if x[2] in alive]
        alive = {x[0] for x in links[i]}
    out.nodes.update(alive if links else layers[0])
    for found in links:
        ends: dict[TupleNode, set[TupleNode]] = defaultdict(set)
        for t, m, u in found:
            if m is not None:
                out.add_mapping(g, m, t)
            else:
                ends[t].add(u)
        for t, us in ends.items():
            _include_plus(t, us, g, mt, out)


def _include_plus(t: TupleNode, ends: set[TupleNode], g: ProvenanceGraph, mt: _Matcher, out: Subgraph) -> None:
    """Every mapping node on a derivation path from one of ``ends`` to ``t``."""
    back = mt.ancestors(t) | {t}
    fwd: set[TupleNode] = set(ends)
    if not (back - {t}) <= ends:  # an anonymous end reaches every ancestor: no forward pass needed
        todo = deque(ends)
        while todo:
            x = todo.popleft()
            for m in g.consumers(x):
                for y in g.outputs[m]:
                    if y not in fwd:
                        fwd.add(y)
                        todo.append(y)
    for x in back:
        for m in g.derivations(x):
            if any(u in fwd for u in g.inputs[m]):
                out.add_mapping(g, m, x)


def project(q: ast.Query, g: ProvenanceGraph) -> tuple[list[tuple[Node, ...]], Subgraph]:
    """Graph projection: the distinct RETURN bindings and the projected graph G′."""
    mt = _Matcher(g)
    p = q.projection
    envs: list[Env] = [{}]
    for path in p.for_paths:
        seen: dict[tuple, Env] = {}
        for env in envs:
            for e in mt.match(path, env):
                seen.setdefault(tuple(sorted((k, str(v), type(v).__name__) for k, v in e.items())), e)
        envs = list(seen.values())
    if p.where is not None:
        envs = [e for e in envs if holds(p.where, e, g, mt)]
    sub = Subgraph()
    for e in envs:
        for path in p.include:
            _include(path, e, g, mt, sub)
    rows = list(dict.fromkeys(tuple(e[r.var] for r in p.returns) for e in envs))
    rows.sort(key=lambda r: tuple(str(n) for n in r))
    for r in rows:
        sub.nodes.update(r)
    return rows, sub


# -- assignments --------------------------------------------------------------------------------
def _edit_distance(a: str, b: str) -> int:
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
        prev = cur
    return prev[-1]


def _value(v: ast.Value, s: Semiring, env: Env, g: ProvenanceGraph) -> Any:
    if isinstance(v, ast.Call):  # edit_distance, on the values' text
        args = []
        for a in v.args:
            x = _operand(a, env, g) if not isinstance(a, ast.Call) else _value(a, s, env, g)
            args.append("" if x is _MISSING else x if isinstance(x, str) else format_value(x) if isinstance(x, (int, Skolem)) else str(x))
        return _edit_distance(args[0], args[1])
    return s.literal(v.value, v.bare, v.loc)


def mapping_condition(c: ast.Condition, a: ast.Assignment, s: Semiring, mapping: str, z: Any) -> bool:
    """Whether a CASE of ``ASSIGNING EACH mapping $p($z)`` holds for ``mapping`` applied to ``z``."""
    if isinstance(c, ast.And):
        return all(mapping_condition(p, a, s, mapping, z) for p in c.parts)
    if isinstance(c, ast.Or):
        return any(mapping_condition(p, a, s, mapping, z) for p in c.parts)
    if isinstance(c, ast.Not):
        return not mapping_condition(c.part, a, s, mapping, z)
    assert isinstance(c, ast.Comparison)
    for x, y in ((c.left, c.right), (c.right, c.left)):
        if isinstance(x, ast.VarRef) and isinstance(y, ast.Literal):
            if x.var == a.var:
                same = mapping == y.value
            elif x.var == a.arg:
                same = z == s.literal(y.value, y.bare, y.loc)
            else:
                continue
            return same if c.op == "=" else not same
    raise ProqlError("a mapping CASE compares $p with a mapping name or $z with a value", c.loc)


def mapping_function(a: ast.Assignment | None, s: Semiring) -> Callable[[str, Any], Any]:
    """The mapping functions an ``ASSIGNING EACH mapping`` clause defines (first CASE wins; no
    match and no DEFAULT: the semiring's default mapping)."""

    def f(mapping: str, z: Any) -> Any:
        for case in a.cases if a is not None else ():
            if case.condition is None or mapping_condition(case.condition, a, s, mapping, z):
                if isinstance(case.value, ast.VarRef):  # SET $z: the identity
                    return z
                if isinstance(case.value, ast.Scale):
                    return s.scale(z, case.value.factor)
                return _value(case.value, s, {}, None)  # type: ignore[arg-type]
        return s.apply_mapping(mapping, z)

    return f


def leaf_function(a: ast.Assignment | None, s: Semiring, g: ProvenanceGraph) -> Callable[[TupleNode], Any]:
    """The leaf values an ``ASSIGNING EACH leaf_node`` clause defines (first CASE wins; no match and
    no DEFAULT: the semiring's default leaf value)."""
    mt = _Matcher(g)

    def f(t: TupleNode) -> Any:
        for case in a.cases if a is not None else ():
            env = {a.var: t}
            if case.condition is None or holds(case.condition, env, g, mt):
                return _value(case.value, s, env, g)
        return s.leaf_default(str(t))

    return f


# -- the fixpoint -------------------------------------------------------------------------------
def _sccs(nodes: list[Node], deps: dict[Node, list[Node]]) -> list[list[Node]]:
    """The strongly connected components, dependencies first."""
    return strongly_connected(nodes, lambda v: deps.get(v, ()))


def annotate(
    roots: list[Node],
    sub: Subgraph,
    s: Semiring,
    leaf: Callable[[TupleNode], Any],
    mapf: Callable[[str, Any], Any],
    g: ProvenanceGraph,
) -> dict[Node, Any]:
    """Values of every node of G′ reachable backwards from ``roots`` (see the module docstring)."""
    derivs: dict[TupleNode, list[MappingNode]] = defaultdict(list)
    for m, t in sub.outputs:
        derivs[t].append(m)
    ins: dict[MappingNode, list[TupleNode]] = defaultdict(list)
    for u, m in sub.inputs:
        ins[m].append(u)
    deps: dict[Node, list[Node]] = {}
    todo, seen = list(roots), set(roots)
    while todo:  # goal-directed: only what the roots depend on
        x = todo.pop()
        d = list(derivs.get(x, [])) if isinstance(x, TupleNode) else [u for u in g.inputs[x] if u in sub.nodes]
        deps[x] = d
        for y in d:
            if y not in seen:
                seen.add(y)
                todo.append(y)
    leaves: dict[TupleNode, Any] = {}
    for x in deps:
        if isinstance(x, TupleNode) and (x in g.local or not derivs.get(x)):
            leaves[x] = leaf(x)
    val: dict[Node, Any] = {}

    def compute(x: Node) -> Any:
        if isinstance(x, TupleNode):
            parts = [val.get(m, s.zero) for m in deps[x]]
            if x in leaves:
                parts.insert(0, leaves[x])
            return s.sum(parts)
        return mapf(x.mapping, s.product([val.get(u, s.zero) for u in g.inputs[x]]))

    for comp in _sccs(sorted(deps, key=str), deps):
        members = set(comp)
        if len(comp) == 1 and comp[0] not in deps[comp[0]]:
            val[comp[0]] = compute(comp[0])
            continue
        for x in comp:
            val[x] = s.zero
        pinned: set[Node] = set()
        window = 2 * len(comp) + 2
        rounds = 0
        while True:
            changed: set[Node] = set()
            for _ in range(window):
                changed = set()
                for x in comp:
                    if x in pinned:
                        continue
                    v = compute(x)
                    if v != val[x]:
                        val[x] = v
                        changed.add(x)
                rounds += 1
                if not changed:
                    break
            if not changed:
                break
            if s.idempotent:
                if rounds > MAX_ROUNDS:
                    raise ProqlError(f"{s.name}: no fixpoint after {rounds} rounds on a cycle through {comp[0]}")
                continue
            for x in changed & members:  # still growing: an infinite series
                val[x] = s.diverged(val[x])
                pinned.add(x)
    return val


# -- the query --------------------------------------------------------------------------------
@dataclass
class QueryResult:
    """What a ProQL query returns: the RETURN variables, the distinct bindings, the value of each
    returned node in the semiring, G′, and (PROBABILITY with event probabilities) probabilities."""

    columns: list[str]
    rows: list[tuple[Node, ...]]
    values: dict[Node, Any]
    graph: Subgraph
    semiring: Semiring
    evaluated: bool
    probabilities: dict[Node, float] | None = None
    epoch: int | None = None

    def value(self, node: Node) -> str:
        return self.semiring.format(self.values[node])


def run_query(
    q: ast.Query, g: ProvenanceGraph, s: Semiring, probabilities: dict[str, float] | None = None
) -> QueryResult:
    """Project ``g`` by ``q`` and annotate the returned nodes in ``s`` (checked already by
    :func:`~.check.check_query`, which also gives ``s``)."""
    rows, sub = project(q, g)
    roots = list(dict.fromkeys(n for r in rows for n in r))
    values = annotate(roots, sub, s, leaf_function(q.leaf, s, g), mapping_function(q.mapping, s), g)
    probs = None
    if s.name == "PROBABILITY" and probabilities is not None:
        probs = {n: probability(values[n], probabilities) for n in roots}
    return QueryResult([r.var for r in q.projection.returns], rows, {n: values[n] for n in roots}, sub, s, q.evaluate, probs)
