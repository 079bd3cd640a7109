"""Ranked trust enforced at exchange: which trusted imports are above their owner's threshold.

**Semantics** ([Kar09] §3.5; the decisions taken where it is informal). A peer
``P`` with ``[peers.P.costs]`` and a ``threshold`` accepts a tuple into its instance through
``R_t`` (an import) only when the cheapest *Boolean-trusted* derivation of that import, over the
tuples the peers have *accepted*, costs at most ``P``'s threshold. Costs are ``P``'s own view
(tropical semiring: a leaf ``R_l`` tuple of peer ``Q`` costs ``P``'s cost of ``Q``, a step
through mapping ``m`` costs ``P``'s mapping function of ``m`` applied to the sum of its body
tuples' costs -- ``f_m(x) = K x + c``: a plain number ``c`` is ``x + c``, ``"2x"`` is
Example 9's ``f_m4`` -- a tuple its cheapest derivation; unlisted peers cost 0 and unlisted
mappings are the identity; costs are non-negative). Every ``f_m`` is monotone, so it
distributes over min and the cheapest derivation of a step's body gives its cheapest cost:
the fixpoint below stays a shortest-path computation.

* Rejected tuples do not propagate: a tuple its owner did not accept is not in the owner's
  instance, so no derivation of anyone downstream may use it -- its cost is infinity for every
  viewpoint. This makes the accepted set a *capped* min-cost fixpoint, not a filter applied
  after the Boolean fixpoint: a downstream peer with a generous threshold does not receive a
  tuple derivable only through an upstream tuple its owner found too expensive.
* The fixpoint is the *least* one, computed from below (local data first, then whatever
  becomes accepted): two imports at different peers that would each be cheap only through the
  other are not accepted on that basis (a cycle never supports itself).
* Peers without a threshold accept every Boolean-trusted import, whatever its cost. A tuple
  that is also a local contribution of its owner is in the instance anyway (``l_R``).
* Curation comes first: a rejected (``R_r``) tuple is not in the instance whatever its cost.

**How it is enforced.** The compiled program gives every relation ``R`` of a thresholded peer
an EDB relation ``R_x`` and the rule ``t_R: R_o(x) :- R_t(x), not R_r(x), not R_x(x)``: the
threshold acts as automatic curation. Exchange computes ``R_x`` from the base data with
:meth:`selp.engines.base.Engine.threshold_rejections` -- :func:`ranked_local` below on the
reference engine (the oracle), the same fixpoint as set-at-a-time SQL in DuckDB on the embedded
engine (:mod:`selp.cdss.ranked_duck`), that on the driver or :func:`ranked_spark` on the Spark
engine (by size, :meth:`selp.engines.spark_engine.SparkEngine.threshold_rejections`) -- and adds it to the base data, so the full
and both incremental strategies maintain the Boolean state exactly as they maintain rejections
(an ``R_x`` change is an EDB change like a new rejection). ``R_x`` holds the imports derived from
accepted tuples that are above the threshold, so the least fixpoint of the Boolean program with
``R_x`` is exactly the capped fixpoint (every tuple it derives is accepted by the capped one and
vice versa, by induction on the rounds).

**What is not incremental.** The costs themselves are recomputed from the base data at every
exchange (a semi-naive Bellman–Ford over the accepted tuples, per thresholded viewpoint); only
the Boolean state is maintained incrementally. Maintaining min-costs under deletion would need
the tropical analogue of PropagateDelete (a cost can rise when its cheapest derivation goes),
which the incremental algorithms do not do. Exchange reports this in its output when a peer has
a threshold.

**Algorithm.** Cost vectors (one entry per viewpoint) for the instance tuples ``R_o``, the
provenance rows ``P_m`` and the imports ``R_t``/``R_i``; semi-naive rounds: new instance tuples
create new ``P_m`` rows (the compiled mapping rule with one delta atom); every row with a body
tuple whose cost fell gets its cost recomputed (mapping cost + the body tuples' costs); rows
carry their cost to the imports they produce (the compiled ``R_t``/``R_i`` rules, evaluated
with the row kept, so Skolem terms and trust conditions are exactly the engine's); an import
whose owner accepts it lowers its instance tuple's cost. Costs only fall and acceptance only
grows, so the rounds stop (with non-negative costs a cheapest derivation never repeats a tuple
on a path, so at most as many rounds as tuples; in practice the longest mapping path).

:func:`selp.cdss.trust_report.trust_report` lists what the same fixpoint decides about every
import of one peer (``selp cdss trust``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Mapping

from selp.cdss.compile import CompiledCDSS, thresholded_peers
from selp.language.ast import Atom, Const, Rule, Var

Row = tuple
Vec = tuple[float, ...]
EDGE = "__edge#"


@dataclass(frozen=True)
class BodyAtom:
    """A mapping body atom as a projection of its ``P_m`` row: per argument, a column index or a
    constant."""

    relation: str  # R_o
    args: tuple[int | Const, ...]


@dataclass(frozen=True)
class Target:
    """An import relation (``R_t`` or ``R_i``) and what acceptance into ``R_o`` needs."""

    relation: str
    kind: str  # "t" or "i"
    output: str  # R_o
    rejections: str  # R_r
    threshold_rel: str | None  # R_x when the owner has a threshold
    owner: str
    owner_index: int | None  # the owner's viewpoint index when it has a threshold
    threshold: float | None


@dataclass(frozen=True)
class MappingPlan:
    name: str
    provenance: str  # P_m
    arity: int
    rule: Rule  # P_m(y) :- body over R_o (as compiled)
    body: tuple[BodyAtom, ...]
    weights: Vec  # per viewpoint: the additive part c of f_m(x) = K x + c
    edges: tuple[tuple[Rule, str], ...]  # (edge rule, target relation): head = y ++ import head
    scales: Vec = ()  # per viewpoint: the factor K of f_m (1: a plain additive cost)

    def cost(self, body: list[Vec]) -> Vec:
        """The step's cost vector: f_m(sum of the body tuples' costs), per viewpoint."""
        return tuple(k * sum(b[v] for b in body) + w for v, (k, w) in enumerate(zip(self.scales, self.weights)))


class RankedProgram:
    """What the capped min-cost fixpoint needs from a compiled CDSS.

    ``viewpoints``: every peer with a threshold, then ``extra`` peers (whose costs a report
    wants; they filter nothing unless they have a threshold)."""

    def __init__(self, compiled: CompiledCDSS, extra: tuple[str, ...] = ()) -> None:
        cdss = compiled.cdss
        self.compiled = compiled
        thresholded = thresholded_peers(cdss)
        self.viewpoints: list[str] = thresholded + [p for p in extra if p not in thresholded]
        self.thresholds = {p: cdss.peer(p).policy.ranked.threshold for p in thresholded}  # type: ignore[union-attr]
        names = compiled.names
        self.local_weights: dict[str, Vec] = {}  # peer -> cost of its local data per viewpoint
        for q in cdss.peers:
            self.local_weights[q.name] = tuple(self._peer_cost(v, q.name) for v in self.viewpoints)
        self.outputs: dict[str, tuple[str, str, int]] = {}  # R_o -> (R_l, peer, arity)
        for r in cdss.relations():
            self.outputs[names.relation(r.ref, "o")] = (names.relation(r.ref, "l"), r.peer, r.arity)
        # every R_x: a relation no trusted import reaches has an empty one
        self.threshold_relations = [names.relation(r.ref, "x") for r in cdss.relations() if r.peer in self.thresholds]
        self.targets: dict[str, Target] = {}
        self.mappings: list[MappingPlan] = []
        rules = {rule.name: rule for rule in compiled.program.rules}
        for m in cdss.mappings:
            rule = rules[m.name]
            cols = {v: j for j, v in enumerate(m.body_vars)}
            body = tuple(
                BodyAtom(names.relation(a.relation, "o"), tuple(cols[t] if isinstance(t, Var) else t for t in a.args))
                for a in m.body
            )
            edges = []
            for name, origin in compiled.origins.items():
                if origin.mapping != m.name or origin.kind not in ("trusted", "input"):
                    continue
                kind = "t" if origin.kind == "trusted" else "i"
                r = rules[name]
                target = names.relation(origin.relation, kind)  # type: ignore[arg-type]
                prov: Atom = r.body[0]  # type: ignore[assignment]
                head = Atom(EDGE + name, tuple(prov.args) + tuple(r.head.args))
                edges.append((Rule(name + "#edge", head, r.body, None), target))
                if target not in self.targets:
                    ref = origin.relation
                    owner = ref.peer  # type: ignore[union-attr]
                    idx = self.viewpoints.index(owner) if owner in self.thresholds else None
                    self.targets[target] = Target(
                        target, kind, names.relation(ref, "o"), names.relation(ref, "r"),  # type: ignore[arg-type]
                        names.relation(ref, "x") if owner in self.thresholds else None,  # type: ignore[arg-type]
                        owner, idx, self.thresholds.get(owner),
                    )
            weights = tuple(self._mapping_cost(v, m.name) for v in self.viewpoints)
            scales = tuple(self._mapping_scale(v, m.name) for v in self.viewpoints)
            self.mappings.append(
                MappingPlan(m.name, names.provenance(m.name), len(m.body_vars), rule, body, weights, tuple(edges), scales)
            )

    def _peer_cost(self, viewpoint: str, peer: str) -> float:
        ranked = self.compiled.cdss.peer(viewpoint).policy.ranked
        c = ranked.peer_cost(peer) if ranked is not None else None
        return float(c) if c is not None else 0.0

    def _mapping_cost(self, viewpoint: str, mapping: str) -> float:
        ranked = self.compiled.cdss.peer(viewpoint).policy.ranked
        c = ranked.mapping_cost(mapping) if ranked is not None else None
        return float(c) if c is not None else 0.0

    def _mapping_scale(self, viewpoint: str, mapping: str) -> float:
        ranked = self.compiled.cdss.peer(viewpoint).policy.ranked
        return float(ranked.mapping_scale(mapping)) if ranked is not None else 1.0

    def accepts(self, t: Target, vec: Vec) -> bool:
        """Whether the owner of an import accepts it at this cost vector (Boolean trust is
        already implied: only trusted rules produce ``R_t``)."""
        return t.owner_index is None or vec[t.owner_index] <= t.threshold  # type: ignore[operator]


@dataclass
class RankedResult:
    """The capped fixpoint: ``rejections`` (``R_x`` -> tuples above the owner's threshold),
    cost vectors per viewpoint of the instance tuples (``outputs``: ``R_o`` -> tuple -> vector)
    and of the imports (``imports``: ``R_t``/``R_i`` -> tuple -> vector; :func:`ranked_local` only)."""

    viewpoints: list[str]
    rejections: dict[str, set[Row]]
    outputs: dict[str, dict[Row, Vec]] = field(default_factory=dict)
    imports: dict[str, dict[Row, Vec]] = field(default_factory=dict)
    rounds: int = 0


def _vmin(a: Vec | None, b: Vec) -> Vec:
    return b if a is None else tuple(x if x <= y else y for x, y in zip(a, b))


def ranked_local(rp: RankedProgram, base: Mapping[str, set[Row]]) -> RankedResult:
    """The capped min-cost fixpoint over Python values (``base``: ``R_l``/``R_r`` -> rows)."""
    from selp.cdss.incremental import LocalBackend, LocalRel

    b = LocalBackend()
    out: dict[str, dict[Row, Vec]] = {o: {} for o in rp.outputs}
    for o, (l_rel, peer, _) in rp.outputs.items():
        vec = rp.local_weights[peer]
        for t in base.get(l_rel, ()):
            out[o][t] = vec
    imports: dict[str, dict[Row, Vec]] = {t: {} for t in rp.targets}
    rows: dict[str, set[Row]] = {m.provenance: set() for m in rp.mappings}
    # (P_m, atom) -> body tuple -> rows reading it; row -> [(target, import tuple)]
    index: dict[tuple[str, int], dict[Row, list[Row]]] = {(m.provenance, i): {} for m in rp.mappings for i in range(len(m.body))}
    edges: dict[str, dict[Row, list[tuple[str, Row]]]] = {m.provenance: {} for m in rp.mappings}
    changed = {o: set(v) for o, v in out.items()}
    new = {o: set(v) for o, v in out.items()}
    rounds = 0

    def project(row: Row, a: BodyAtom) -> Row:
        return tuple(row[x] if isinstance(x, int) else x.value for x in a.args)

    while any(changed.values()):
        rounds += 1
        present = {o: LocalRel(set(v)) for o, v in out.items()}
        touched: dict[str, set[Row]] = {}
        for m in rp.mappings:
            fresh: set[Row] = set()
            for i, a in enumerate(m.body):
                if new[a.relation]:
                    fresh |= b.eval(m.rule, i, present, {a.relation: LocalRel(new[a.relation])}).facts
            fresh -= rows[m.provenance]
            rows[m.provenance] |= fresh
            for row in fresh:
                for i, a in enumerate(m.body):
                    index[(m.provenance, i)].setdefault(project(row, a), []).append(row)
            if fresh:
                src = {m.provenance: LocalRel(fresh)}
                for rule, target in m.edges:
                    for f in b.eval(rule, 0, src, src).facts:
                        edges[m.provenance].setdefault(f[: m.arity], []).append((target, f[m.arity :]))
            affected = set(fresh)
            for i, a in enumerate(m.body):
                idx = index[(m.provenance, i)]
                for t in changed[a.relation]:
                    affected.update(idx.get(t, ()))
            for row in affected:
                vec = m.cost([out[a.relation][project(row, a)] for a in m.body])
                for target, head in edges[m.provenance].get(row, ()):
                    old = imports[target].get(head)
                    nv = _vmin(old, vec)
                    if nv != old:
                        imports[target][head] = nv
                        touched.setdefault(target, set()).add(head)
        changed = {o: set() for o in out}
        new = {o: set() for o in out}
        for target, heads in touched.items():
            t = rp.targets[target]
            if t.kind != "t":
                continue
            rejected = base.get(t.rejections, set())
            for h in heads:
                vec = imports[target][h]
                if h in rejected or not rp.accepts(t, vec):
                    continue
                old = out[t.output].get(h)
                nv = _vmin(old, vec)
                if nv != old:
                    out[t.output][h] = nv
                    changed[t.output].add(h)
                    if old is None:
                        new[t.output].add(h)
    rejections: dict[str, set[Row]] = {}
    for t in rp.targets.values():
        if t.kind == "t" and t.threshold_rel is not None:  # R_x: trusted imports only (not R_i)
            rejected = base.get(t.rejections, set())
            rejections[t.threshold_rel] = {h for h, v in imports[t.relation].items() if h not in rejected and not rp.accepts(t, v)}
    for x in rp.threshold_relations:
        rejections.setdefault(x, set())
    return RankedResult(rp.viewpoints, rejections, out, imports, rounds)


def ranked_spark(rp: RankedProgram, base: Mapping[str, set[Row]], spark: Any) -> RankedResult:
    """:func:`ranked_local` on Spark: native column expressions (joins, ``least``, ``min``), no
    Python UDFs; each round's frames are checkpointed and one job counts what changed per
    relation, so plans never grow across rounds. Only ``R_x`` is collected (``outputs`` and
    ``imports`` of the result stay empty)."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import DoubleType, StringType, StructField, StructType

    from selp.cdss.incremental_spark import SparkBackend, SparkRel
    from selp.engines.spark_compile import rel_schema, union_all
    from selp.engines.spark_frames import cut, encoded_frame
    from selp.language.types import resolve_types
    from selp.language.validate import analyze
    from selp.values import decode, encode

    nv = len(rp.viewpoints)
    K = [f"k{v}" for v in range(nv)]
    analysis = analyze(rp.compiled.program)
    types = resolve_types(analysis)
    backend = SparkBackend(spark, types)

    def cols(n: int, prefix: str = "c") -> list[str]:
        return [f"{prefix}{j}" for j in range(n)]

    def cost_schema(arity: int) -> StructType:
        return StructType([StructField(c, StringType(), False) for c in cols(arity)] + [StructField(k, DoubleType(), False) for k in K])

    def merge(table, cand, arity: int):
        """(new table, changed rows with a was-new flag) of ``cand`` min-merged into ``table``."""
        c = cols(arity)
        n = cand.select(*c, *[F.col(k).alias("n" + k) for k in K])
        j = n.join(table, on=c, how="left")
        lower = F.lit(False)
        for k in K:
            lower = lower | (F.col("n" + k) < F.col(k))
        fresh = F.col(K[0]).isNull() if K else F.lit(False)
        changed = j.filter(fresh | lower).select(
            *c, *[F.least(F.col("n" + k), F.coalesce(F.col(k), F.col("n" + k))).alias(k) for k in K], fresh.alias("new")
        )
        changed = cut(changed)
        kept = table.join(changed.select(*c), on=c, how="left_anti")
        return cut(kept.unionByName(changed.drop("new"))), changed

    arity_of = {o: a for o, (_, _, a) in rp.outputs.items()}
    out: dict[str, Any] = {}
    new: dict[str, Any] = {}
    changed: dict[str, Any] = {}
    nonempty: set[str] = set()
    for o, (l_rel, peer, arity) in rp.outputs.items():
        rows_l = base.get(l_rel, set())
        lf = encoded_frame(spark, rows_l, arity)
        w = rp.local_weights[peer]
        out[o] = cut(lf.select(*cols(arity), *[F.lit(w[v]).cast("double").alias(K[v]) for v in range(nv)]))
        new[o], changed[o] = lf, out[o]
        if rows_l:
            nonempty.add(o)
    rejected = {t.relation: encoded_frame(spark, base.get(t.rejections, set()), arity_of[t.output]) for t in rp.targets.values() if t.kind == "t"}
    rows = {m.provenance: spark.createDataFrame([], rel_schema(m.arity)) for m in rp.mappings}
    edges: dict[str, Any] = {}
    imports = {t: spark.createDataFrame([], cost_schema(arity_of[rp.targets[t].output])) for t in rp.targets if rp.targets[t].kind == "t"}
    rounds = 0

    def body_key(a: BodyAtom, df):
        """``df`` (a relation over ``a``'s relation) filtered by ``a``'s constants and repeated
        variables, its columns renamed to the ``P_m`` columns they bind: (frame, join keys)."""
        first: dict[int, int] = {}
        for j, x in enumerate(a.args):
            if isinstance(x, Const):
                df = df.filter(F.col(f"c{j}") == F.lit(encode(x.value)))
            elif x in first:
                df = df.filter(F.col(f"c{j}") == F.col(f"c{first[x]}"))
            else:
                first[x] = j
        keys = [f"c{x}" for x in first]
        return df, first, keys

    while nonempty:
        rounds += 1
        full = {o: SparkRel(out[o].select(*cols(arity_of[o])), None, arity_of[o]) for o in out}
        cands: dict[str, list] = {}
        for m in rp.mappings:
            if not any(a.relation in nonempty for a in m.body):
                continue
            pieces = []
            for i, a in enumerate(m.body):
                if a.relation in nonempty:
                    delta = {a.relation: SparkRel(new[a.relation], None, arity_of[a.relation])}
                    pieces.append(backend.eval(m.rule, i, full, delta).df)
            fresh = cut(union_all(pieces).distinct().join(rows[m.provenance], on=cols(m.arity), how="left_anti"))
            rows[m.provenance] = cut(rows[m.provenance].unionByName(fresh))
            src = {m.provenance: SparkRel(fresh, None, m.arity)}
            for rule, target in m.edges:
                if rp.targets[target].kind != "t":
                    continue  # R_i costs are for reports (ranked_local)
                e = backend.eval(rule, 0, src, src).df
                n_head = rule.head.arity - m.arity
                e = e.select(*cols(m.arity), *[F.col(f"c{m.arity + j}").alias(f"h{j}") for j in range(n_head)])
                edges[rule.name] = cut(edges[rule.name].unionByName(e)) if rule.name in edges else cut(e)
            affected = [fresh]
            for i, a in enumerate(m.body):
                if a.relation in nonempty:
                    df, first, keys = body_key(a, changed[a.relation].select(*cols(arity_of[a.relation])))
                    right = df.select(*[F.col(f"c{j}").alias(f"c{x}") for x, j in first.items()]).distinct()
                    affected.append(rows[m.provenance].join(right, on=keys, how="left_semi") if keys else rows[m.provenance])
            acc = union_all(affected).distinct()
            for i, a in enumerate(m.body):
                df, first, keys = body_key(a, out[a.relation])
                right = df.select(*[F.col(f"c{j}").alias(f"c{x}") for x, j in first.items()], *[F.col(k).alias(f"a{i}{k}") for k in K])
                acc = acc.join(right, on=keys, how="inner") if keys else acc.crossJoin(right)
            costs = []
            for v, k in enumerate(K):
                inputs = F.lit(0.0)
                for i in range(len(m.body)):
                    inputs = inputs + F.col(f"a{i}{k}")
                costs.append((F.lit(m.scales[v]) * inputs + F.lit(m.weights[v])).alias(k))
            acc = acc.select(*cols(m.arity), *costs)
            for rule, target in m.edges:
                if rp.targets[target].kind != "t":
                    continue
                n_head = rule.head.arity - m.arity
                c = acc.join(edges[rule.name], on=cols(m.arity), how="inner")
                cands.setdefault(target, []).append(c.select(*[F.col(f"h{j}").alias(f"c{j}") for j in range(n_head)], *K))
        changed_o: dict[str, Any] = {}
        for target, pieces in cands.items():
            t = rp.targets[target]
            arity = arity_of[t.output]
            cand = union_all(pieces).groupBy(*cols(arity)).agg(*[F.min(k).alias(k) for k in K])
            imports[target], ch = merge(imports[target], cand, arity)
            acc_t = ch.drop("new").join(rejected[target], on=cols(arity), how="left_anti")
            if t.owner_index is not None:
                acc_t = acc_t.filter(F.col(K[t.owner_index]) <= F.lit(float(t.threshold)))  # type: ignore[arg-type]
            out[t.output], changed_o[t.output] = merge(out[t.output], acc_t, arity)
        if not changed_o:
            break
        # one job: how many instance tuples changed per relation (computes the round's frames)
        tagged = [df.select(F.lit(o).alias("rel")) for o, df in changed_o.items()]
        counts = {r["rel"]: r["n"] for r in union_all(tagged).groupBy("rel").agg(F.count(F.lit(1)).alias("n")).collect()}
        nonempty = {o for o, n in counts.items() if n}
        changed = {o: changed_o[o].drop("new") for o in nonempty}
        new = {o: changed_o[o].filter(F.col("new")).select(*cols(arity_of[o])) for o in nonempty}
    rejections: dict[str, set[Row]] = {}
    for target, t in rp.targets.items():
        if t.kind != "t" or t.threshold_rel is None:
            continue
        arity = arity_of[t.output]
        above = imports[target].join(rejected[target], on=cols(arity), how="left_anti")
        above = above.filter(F.col(K[t.owner_index]) > F.lit(float(t.threshold)))  # type: ignore[index, arg-type]
        typ = _types_of(rp, t.output)
        rejections[t.threshold_rel] = {tuple(decode(r[f"c{j}"], typ[j]) for j in range(arity)) for r in above.select(*cols(arity)).collect()}
    for x in rp.threshold_relations:
        rejections.setdefault(x, set())
    return RankedResult(rp.viewpoints, rejections, rounds=rounds)


def _types_of(rp: RankedProgram, relation: str) -> tuple[str, ...]:
    for d in rp.compiled.program.decls:
        if d.relation == relation:
            return tuple(t for _, t in d.columns)
    raise KeyError(relation)
