"""The DTable on the embedded engine: facts and rule instances in DuckDB, the hot loop compiled.

1. P_p (optionally rewritten for demand, :mod:`selp.topk.demand`) is evaluated in DuckDB
   (:mod:`selp.engines.embedded`).
2. Every fact of P_p gets an integer id, and every rule instance becomes a row of integers (the
   rule, the head's id, the children's ids in body order) -- one SQL join per rule, fetched as
   numpy arrays. Leaves get their weights (each distinct weight text parsed once by the monoid)
   and origin hashes in SQL.
3. :func:`selp.topk.kernel.run_kernel` runs Knuth's algorithm (top-1) or lazy k-best (top-k) over
   the arrays, in C (its pure-Python twin where the C kernel was not built, which it says).
   When P_p's only derived relation is decomposable (:mod:`selp.topk.decomposed`), steps 2 and
   3 run together in C, one component at a time, and no global instance array is formed.
4. Only the entries reachable from the requested answers are turned into a
   :class:`~selp.topk.dtable.DTable` (values decoded for those facts only), so explaining one
   fact builds one cone's worth of Python objects.

Monoids without a compiled form (plug-ins) run the reference DTable over the facts DuckDB
computed, and say so.
"""

from __future__ import annotations

import bisect
import hashlib
import time
from collections.abc import Mapping
from typing import Any, Callable, Iterator

import numpy as np

from selp.engines.embedded.evaluate import evaluate_store
from selp.errors import SelpError
from selp.engines.embedded.physical import column_kinds
from selp.engines.embedded.sql import columns, compile_body, ident, sql_string
from selp.engines.embedded.store import Store, create_table, decode_rows, table, weight_table
from selp.instrument.witness import is_filter_relation
from selp.language.ast import Atom
from selp.language.pattern import PatternNode
from selp.language.validate import analyze
from selp.topk.decomposed import StaticPlan, run_static, static_plan
from selp.topk.demand import is_demand, rewrite
from selp.topk.dtable import DTable, Entry, FactKey
from selp.topk.joins import Former, plan
from selp.topk.kernel import MIN, PRODUCT, SUM, Hypergraph, checked, compiled_available, run_kernel, tree_count_bound
from selp.topk.task import Task

# monoid name -> (combine code, sign): the monoids the kernel computes natively
COMPILED = {
    "confidence": (PRODUCT, -1.0),
    "min-confidence": (MIN, -1.0),
    "size": (SUM, -1.0),
    "access": (MIN, -1.0),
    "cost": (SUM, 1.0),
}


# where rule instances are formed: "auto" (component by component where the recursion is
# decomposable, else the kernel's join where a rule allows it, else DuckDB), "global" (never
# component by component) or "sql" (always DuckDB): the tests compare the three
FORM_INSTANCES = "auto"

# the static path (selp.topk.decomposed) keeps a block of k entries per leaf and per fact of one
# component; beyond this k the global path runs, whose tree-count bound can shrink k first
STATIC_MAX_K = 64
# the static path writes a child's fact id as int32
STATIC_MAX_FACTS = 2**31 - 1


def formed_text(formed: Mapping[str, Any], why_not: str = "") -> str:
    """Which path formed the rule instances, for progress and stats lines."""
    if formed.get("components"):
        return (f"instances of {formed.get('kernel', 0)} rule(s) formed and ranked component by component"
                f" ({formed['components']} component(s) of {formed.get('relation', '?')} by {_grouped_by(formed)})")
    text = f"instances of {formed.get('kernel', 0)} rule(s) formed by the kernel's join, {formed.get('sql', 0)} by DuckDB"
    return f"{text} (not component by component: {why_not})" if why_not else text


def _grouped_by(formed: Mapping[str, Any]) -> str:
    """How the static path grouped the facts: by a column, or by the classes of their values."""
    return "value classes" if formed.get("grouping") == "values" else f"position {formed.get('position', 0)}"


def _h64(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest(), "big", signed=True)


def bindings(task: Task, node: PatternNode | None) -> dict[str, dict[int, Any]]:
    """Root relations of P_p whose answers ``node`` (a fact filter, or the pattern's root) can
    match, with the positions it binds to constants."""
    if node is None or node.args is None:
        return {}
    out: dict[str, dict[int, Any]] = {}
    for root in task.roots:
        origin = task.inst.relation_origin.get(root, root)
        if node.matches_relation(origin) and len(node.args) == len(task.types[root]):
            consts = {p: v for p, v in enumerate(node.args) if v is not None}
            if consts:
                out[root] = consts
            else:
                return {}  # this root is wanted whole: no demand can restrict it
    return out


def run_topk_embedded(
    task: Task,
    store_p: Store,
    fact_filter: PatternNode | None = None,
    progress: Callable[[str], None] | None = None,
    goal_directed: bool = True,
    warn: Callable[[str], None] = lambda msg: None,
) -> DTable:
    """Fill a DTable for ``task`` over the EDB loaded in ``store_p`` (a store of P).

    With ``fact_filter`` (or a pattern whose root binds constants) and ``goal_directed``, only
    the demanded part of P_p is evaluated; the DTable then holds the answers matching the
    filter (the caller prints no others)."""
    say = progress or (lambda msg: None)
    t0 = time.perf_counter()
    con = store_p.con
    program = task.inst.program
    types = dict(task.types)
    binds = bindings(task, fact_filter) if goal_directed else {}
    demand = rewrite(program, binds, types) if binds else None
    if demand is not None:
        program = demand.program
        types.update(demand.types)
        say(f"goal-directed: {len(demand.bound)} relation(s) restricted by demand, {demand.dropped_rules} rule(s) not needed")
    elif binds:
        warn("the query's constants restrict no derived relation: evaluating the whole program")
    analysis = analyze(program)
    # EDB columns keep the kinds they were loaded with (the P store's)
    tainted = [(rel, i) for rel, ks in store_p.kinds.items() if rel in analysis.edb for i, k in enumerate(ks) if k.tainted]
    kinds = column_kinds(analysis, {rel: types[rel] for rel in analysis.arities}, tainted)
    for rel in analysis.edb:
        if rel not in store_p.analysis.edb:
            # declared in P but derived by no rule of P_p (instrumentation or demand dropped them)
            create_table(con, table(rel), kinds[rel])
            continue
        for i, (was, now) in enumerate(zip(store_p.kinds[rel], kinds[rel])):
            if was.sql != now.sql:  # only BIGINT -> VARCHAR: an integer's text is its encoding
                con.execute(f"ALTER TABLE {table(rel)} ALTER c{i} TYPE VARCHAR")
    store = Store(con, analysis, {r: types[r] for r in analysis.arities}, kinds, store_p.columns, store_p.weighted)
    evaluate_store(store)
    say(f"facts of P_p in {time.perf_counter() - t0:.2f}s")
    combine, sign = COMPILED[task.monoid.name]
    k = task.k
    meta, leaves = _facts(task, store)
    sp = _static_plan(store, meta, k)
    try:
        static = sp if isinstance(sp, str) else _run_static(task, store, meta, leaves, sp, combine, sign, k)
    except MemoryError:
        raise SelpError(
            f"top-k with k={k} over {len(leaves[0])} facts needs more memory than is available; use a smaller -k"
        ) from None
    if not isinstance(static, str):
        graph, result = static.graph, static.result
        say(f"{graph.n_facts} facts, {result.n_entries} entries ({formed_text(meta.formed)}) in {time.perf_counter() - t0:.2f}s")
        if k > 1 and 0 <= static.bound < k:
            warn(f"k={k} is more than any fact's number of derivation trees (at most {static.bound}): every tree is listed")
        return _to_dtable(task, store, graph, meta, result, fact_filter)
    meta.static_reason = static
    graph, meta = _hypergraph(task, store, FORM_INSTANCES, meta, leaves)
    graph = checked(graph)  # once: the count and the kernel both read it
    say(f"{graph.n_facts} facts, {graph.n_instances} rule instances ({formed_text(meta.formed)}) in {time.perf_counter() - t0:.2f}s")
    if not compiled_available() and graph.n_instances > 10_000:
        warn("the compiled top-k kernel was not built (no C compiler at install time): running it in Python (slower)")
    bound = tree_count_bound(graph, k) if k > 1 else None
    if bound is not None and bound < k:
        # no fact has more than `bound` trees, so k' = bound finds every one of them and the
        # kernel's per-fact tables (O(facts x k)) shrink to O(facts x bound)
        warn(f"k={k} is more than any fact's number of derivation trees (at most {bound}): every tree is listed")
        k = max(bound, 1)
    try:
        result = run_kernel(graph, combine, sign, k)
    except MemoryError:
        # a cyclic program (infinitely many trees) with a large k: the tables are O(facts x k)
        raise SelpError(
            f"top-k with k={k} over {graph.n_facts} facts needs more memory than is available; use a smaller -k"
        ) from None
    say(f"{result.n_entries} entries in {time.perf_counter() - t0:.2f}s")
    return _to_dtable(task, store, graph, meta, result, fact_filter)


class _Meta:
    """Where each relation's ids start, and the rules by kernel index."""

    def __init__(self, analysis: Any) -> None:
        self.offsets: dict[str, tuple[int, int]] = {}  # relation -> (first id, count)
        self.rules: list[str] = []
        self.formed: dict[str, Any] = {"kernel": 0, "sql": 0}  # rules whose instances the kernel's join / DuckDB formed
        self.components = 0  # groups ranked one by one on the static path (0: the global path ran)
        self.static_reason = ""  # why the static path did not run
        self.rule_index: dict[str, int] = {}
        for rule in analysis.program.rules:
            if not _is_filter(rule.head.relation):
                self.rule_index.setdefault(rule.name, len(self.rule_index))
                self.rules.append(rule.name)


def _facts(task: Task, store: Store) -> tuple[_Meta, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Every fact of ``store`` numbered (the ``i:REL`` tables), the rules by kernel index, and
    the leaves: (leaf, leaf weight, leaf origin) per fact id."""
    con = store.con
    analysis = store.analysis
    meta = _Meta(analysis)
    rels = sorted(r for r in analysis.arities if not _is_filter(r))
    offset = 0
    for rel in rels:
        n = store.count(rel)
        con.execute(f"CREATE OR REPLACE TABLE {ident(f'i:{rel}')} AS SELECT (row_number() OVER () - 1 + {offset})::BIGINT AS id, * FROM {table(rel)}")
        meta.offsets[rel] = (offset, n)
        offset += n
    n_facts = offset
    leaf = np.zeros(n_facts, dtype=np.bool_)
    leaf_w = np.zeros(n_facts, dtype=np.float64)
    leaf_origin = np.zeros(n_facts, dtype=np.int64)
    monoid = task.monoid
    for rel in rels:
        if rel not in analysis.edb:
            continue
        first, n = meta.offsets[rel]
        leaf[first:first + n] = True
        leaf_w[first:first + n] = monoid.fact_weight(None)
        cols = columns(len(store.kinds[rel]))
        origin_rel = task.inst.relation_origin.get(rel, rel)
        hashed = con.execute(
            f"SELECT id, CAST(hash({sql_string(origin_rel)}, {', '.join(cols)}) >> 1 AS BIGINT) AS h FROM {ident(f'i:{rel}')}"
        ).fetchnumpy()
        leaf_origin[hashed["id"]] = hashed["h"]
        if rel in store.weighted:
            ids, weights = _leaf_weights(con, rel, cols, monoid, origin_rel)
            leaf_w[ids] = weights
    return meta, (leaf, leaf_w, leaf_origin)


def _former(store: Store) -> Former:
    """The kernel's join over ``store``'s numbered facts (filter relations as plain tables)."""
    source = lambda r: (ident(f"i:{r}"), True) if not _is_filter(r) else (table(r), False)  # noqa: E731
    return Former(store.con, dict(store.kinds), source)


def _rule_arrays(task: Task, meta: _Meta) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per kernel rule index: weight, size, origin hash, whether a copy step."""
    names = meta.rules
    rule_w = np.array([task.rule_weight[r] for r in names], dtype=np.float64)
    rule_size = np.array([task.rule_size[r] for r in names], dtype=np.int64)
    rule_copy = np.array([task.inst.rule_origin.get(r) is None for r in names], dtype=np.bool_)
    rule_hash = np.array([_h64("N" + (task.inst.rule_origin.get(r) or "")) for r in names], dtype=np.int64)
    return rule_w, rule_size, rule_hash, rule_copy


def _static_plan(store: Store, meta: _Meta, k: int) -> StaticPlan | str:
    """How the static path (:mod:`selp.topk.decomposed`) would run, or why it does not."""
    if FORM_INSTANCES != "auto":
        return f"instances formed by {FORM_INSTANCES}"
    if not compiled_available():
        return "the compiled kernel was not built"
    if k > STATIC_MAX_K:
        return f"k > {STATIC_MAX_K}"
    if sum(n for _, n in meta.offsets.values()) > STATIC_MAX_FACTS:
        return f"more than {STATIC_MAX_FACTS} facts"
    return static_plan(store.analysis, store.kinds, _is_filter, meta.rule_index)


def _run_static(task: Task, store: Store, meta: _Meta, leaves: tuple[np.ndarray, ...], sp: StaticPlan, combine: int,
                sign: float, k: int) -> Any:
    """Top-k component by component (:mod:`selp.topk.decomposed`), or why it did not run."""
    former = _former(store)

    def exit_instances(rule: Any) -> tuple[np.ndarray, np.ndarray]:
        # a DuckDB join: the exit rules' few instances need no index of the component's facts
        kids = [j for j, b in enumerate(rule.body) if isinstance(b, Atom) and not b.negated and not _is_filter(b.relation)]
        return _sql_instances(store.con, store, rule, kids)

    try:
        got = run_static(sp, former, exit_instances, meta.offsets, *leaves, _rule_arrays(task, meta), combine, sign, k)
    finally:
        former.close()
    if isinstance(got, str):
        return got
    meta.formed.update(kernel=len(sp.exit_rules) + len(sp.recursive), components=got.groups,
                       relation=sp.relation, position=sp.position, grouping=sp.kind)
    return got


def _hypergraph(task: Task, store: Store, form: str = "auto", meta: _Meta | None = None,
                leaves: tuple[np.ndarray, ...] | None = None) -> tuple[Hypergraph, _Meta]:
    """The facts of ``store`` and the rule instances over them as a :class:`Hypergraph`.
    ``form``: "auto" forms each rule's instances in the kernel's join when the rule allows it
    (:mod:`selp.topk.joins`) and the C kernel is built, else in DuckDB; "sql" always in DuckDB.
    ``meta``/``leaves``: what :func:`_facts` gave, when it was called already."""
    con = store.con
    analysis = store.analysis
    if meta is None or leaves is None:
        meta, leaves = _facts(task, store)
    leaf, leaf_w, leaf_origin = leaves
    heads, rules, childs, ptr_parts = [], [], [], []
    former = _former(store) if form != "sql" and compiled_available() else None
    try:
        for rule in analysis.program.rules:
            if _is_filter(rule.head.relation):
                continue
            idx = meta.rule_index[rule.name]
            kids = [j for j, b in enumerate(rule.body) if isinstance(b, Atom) and not b.negated and not _is_filter(b.relation)]
            m = len(kids)
            p = plan(rule, store.kinds, _is_filter) if former is not None else None
            got = former.form(p) if p is not None and former is not None else None
            if got is not None:
                h, flat = got
                meta.formed["kernel"] += 1
            else:
                h, flat = _sql_instances(con, store, rule, kids)
                meta.formed["sql"] += 1
            heads.append(h)
            rules.append(np.full(len(h), idx, dtype=np.int32))
            if m:
                childs.append(flat)
            ptr_parts.append(np.full(len(h), m, dtype=np.int64))
    finally:
        if former is not None:
            former.close()
    inst_head = np.concatenate(heads) if heads else np.zeros(0, np.int64)
    inst_rule = np.concatenate(rules) if rules else np.zeros(0, np.int32)
    child_fact = np.concatenate(childs) if childs else np.zeros(0, np.int64)
    counts = np.concatenate(ptr_parts) if ptr_parts else np.zeros(0, np.int64)
    child_ptr = np.zeros(len(inst_head) + 1, dtype=np.int64)
    np.cumsum(counts, out=child_ptr[1:])
    rule_w, rule_size, rule_hash, rule_copy = _rule_arrays(task, meta)
    graph = Hypergraph(leaf, leaf_w, leaf_origin, inst_rule, inst_head, child_ptr, child_fact,
                       rule_w, rule_size, rule_hash, rule_copy)
    return graph, meta


def _sql_instances(con: Any, store: Store, rule: Any, kids: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """(heads, children row-major) of ``rule``'s instances, joined in DuckDB and fetched."""
    body = compile_body(rule, store.kinds, lambda i, r: ident(f"i:{r}") if not _is_filter(r) else table(r))
    extra = [f"{body.alias[j]}.id AS k{n}" for n, j in enumerate(kids)]
    head_cols = columns(len(store.kinds[rule.head.relation]))
    on = " AND ".join(f"h.{c} = b.{c}" for c in head_cols)
    sql = (
        f"SELECT h.id AS head{''.join(f', b.k{n}' for n in range(len(kids)))}"
        f" FROM ({body.select(distinct=False, extra=extra)}) AS b JOIN {ident(f'i:{rule.head.relation}')} AS h ON {on}"
    )
    got = con.execute(sql).fetchnumpy()
    h = np.asarray(got["head"], dtype=np.int64)
    if not kids:
        return h, np.zeros(0, np.int64)
    return h, np.stack([np.asarray(got[f"k{n}"], dtype=np.int64) for n in range(len(kids))], axis=1).reshape(-1)


def _is_filter(relation: str) -> bool:
    """Whether ``relation`` only filters rule instances and is in no tree: a demand relation, or
    an aggregated relation's ``agg@`` copy read by witness rules."""
    return is_demand(relation) or is_filter_relation(relation)


def _leaf_weights(con: Any, rel: str, cols: list[str], monoid: Any, where: str) -> tuple[np.ndarray, np.ndarray]:
    """(fact ids, weights) of the weighted facts of EDB relation ``rel``, with no Python per fact.

    A monoid whose weights are plain numbers in a range (``float_range``) is read with one SQL
    cast; the texts that the cast or the range reject (few, or an error) and the weights of any
    other monoid are parsed by the monoid itself, once per distinct text, so errors and accepted
    spellings are exactly the reference engine's."""
    on = " AND ".join(f"i.{c} = w.{c}" for c in cols) or "TRUE"
    src = f"{ident(f'i:{rel}')} i JOIN {weight_table(rel)} w ON {on}"
    if monoid.fact_weight_override is not None:
        ids = con.execute(f"SELECT i.id FROM {src}").fetchnumpy()["id"]
        return np.asarray(ids, dtype=np.int64), np.full(len(ids), monoid.fact_weight_override, dtype=np.float64)
    blank = "(w._weight IS NULL OR w._weight = '')"
    if monoid.float_range is not None:
        lo, hi = monoid.float_range
        v = "TRY_CAST(w._weight AS DOUBLE)"
        ok = f"({v} IS NOT NULL AND isfinite({v}) AND {v} >= {lo!r} AND {v} <= {'1e308' if hi == float('inf') else repr(hi)})"
        got = con.execute(
            f"SELECT i.id, CASE WHEN {blank} THEN {float(monoid.one)!r} WHEN {ok} THEN {v} END AS v FROM {src}"
        ).fetchnumpy()
        ids = np.asarray(got["id"], dtype=np.int64)
        values = got["v"]
        if isinstance(values, np.ma.MaskedArray) and values.mask.any():
            rows = con.execute(
                f"SELECT i.id, w._weight{''.join(f', i.{c}' for c in cols)} FROM {src} WHERE NOT {blank} AND NOT {ok} ORDER BY i.id"
            ).fetchall()
            # what Python reads and DuckDB does not (or an error, raised naming the fact)
            fixed: dict[str, float] = {}
            for _, t, *args in rows:
                if t not in fixed:
                    fixed[t] = monoid.fact_weight(t, f"{where}({', '.join(map(str, args))})")
            by_id = np.zeros(int(ids.max()) + 1, dtype=np.float64)
            by_id[ids] = values.filled(0.0)
            by_id[np.array([r[0] for r in rows], dtype=np.int64)] = np.array([fixed[r[1]] for r in rows], dtype=np.float64)
            return ids, by_id[ids]
        return ids, np.asarray(values, dtype=np.float64)
    con.execute(
        f"CREATE OR REPLACE TEMP TABLE {ident(f'd:{rel}')} AS SELECT _weight, (row_number() OVER () - 1)::BIGINT AS wi"
        f" FROM (SELECT DISTINCT _weight FROM {weight_table(rel)})"
    )
    texts = con.execute(f"SELECT _weight FROM {ident(f'd:{rel}')} ORDER BY wi").fetchnumpy()["_weight"].tolist()
    values = np.array([monoid.fact_weight(t, f"{where} weight") for t in texts], dtype=np.float64)
    got = con.execute(
        f"SELECT i.id, d.wi FROM {src} JOIN {ident(f'd:{rel}')} d ON d._weight IS NOT DISTINCT FROM w._weight"
    ).fetchnumpy()
    con.execute(f"DROP TABLE {ident(f'd:{rel}')}")
    return np.asarray(got["id"], dtype=np.int64), values[np.asarray(got["wi"], dtype=np.int64)]


def _to_dtable(task: Task, store: Store, graph: Hypergraph, meta: _Meta, res: Any, fact_filter: PatternNode | None) -> DTable:
    """The DTable over the kernel's arrays; Python entries are built only for facts looked at."""
    base = task.empty_dtable()
    return ArrayDTable(
        base.k, base.monoid, base.pattern, base.roots, base.relation_origin, base.rule_origin,
        base.rule_weights, base.types, store=store, graph=graph, meta=meta, res=res,
    )


class _LazyEntries(Mapping):
    """``{(relation, values): [Entry, ...]}`` computed on access from the kernel's arrays."""

    def __init__(self, owner: "ArrayDTable") -> None:
        self.owner = owner

    def __getitem__(self, key: FactKey) -> list[Entry]:
        rel, values = key
        return self.owner.entries_of(self.owner.fact_id(rel, values))

    def __iter__(self) -> Iterator[FactKey]:
        o = self.owner
        for rel in sorted(o.meta.offsets):
            for values in o.values(rel):
                yield (rel, values)

    def __len__(self) -> int:
        return sum(n for _, n in self.owner.meta.offsets.values())


class ArrayDTable(DTable):
    """A DTable held as the kernel's arrays plus the facts in DuckDB.

    Entries are the same :class:`Entry` values as any DTable's, built when first looked at (a
    tree drawn, an answer listed); :meth:`summary` reads the arrays directly, so the k best
    derivations of a million facts cost no Python object per entry unless they are printed.
    """

    def __init__(self, *args: Any, store: Store, graph: Hypergraph, meta: "_Meta", res: Any) -> None:
        super().__init__(*args)
        self.store, self.graph, self.meta, self.res = store, graph, meta, res
        self.entries = _LazyEntries(self)  # type: ignore[assignment]
        self._values: dict[str, list[tuple]] = {}
        self._ids: dict[str, dict[tuple, int]] = {}
        self._cache: dict[int, list[Entry]] = {}
        self._starts = sorted((first, rel) for rel, (first, _) in meta.offsets.items())
        self._int_weights = self.monoid in ("size", "access")

    def values(self, rel: str) -> list[tuple]:
        """The facts of P_p relation ``rel`` in id order."""
        got = self._values.get(rel)
        if got is None:
            cols = ", ".join(columns(len(self.store.kinds[rel])))
            rows = self.store.con.execute(f"SELECT {cols} FROM {ident(f'i:{rel}')} ORDER BY id").fetchall()
            got = decode_rows(rows, self.store.kinds[rel], keep_order=True)
            self._values[rel] = got
        return got

    def fact_id(self, rel: str, values: tuple) -> int:
        """The id of a fact (KeyError when P_p has no such fact)."""
        ids = self._ids.get(rel)
        if ids is None:
            if rel not in self.meta.offsets:
                raise KeyError((rel, values))
            first = self.meta.offsets[rel][0]
            ids = {v: first + i for i, v in enumerate(self.values(rel))}
            self._ids[rel] = ids
        return ids[values]

    def fact_of(self, fid: int) -> FactKey:
        """The (relation, values) of a fact id."""
        i = bisect.bisect_right(self._starts, (fid, "\uffff")) - 1
        first, rel = self._starts[i]
        return rel, self.values(rel)[fid - first]

    def entries_of(self, fid: int) -> list[Entry]:
        """The entries of fact ``fid``, best first."""
        got = self._cache.get(fid)
        if got is not None:
            return got
        res, g = self.res, self.graph
        out = []
        r = res.row_of(fid)
        lo, hi = int(res.fact_ptr[r]), int(res.fact_ptr[r + 1])
        origins = res.origins(lo, hi)  # the static path computes these (and those below) only
        for e in range(lo, hi):
            w = res.w[e]
            weight = int(w) if self._int_weights else float(w)
            i = res.inst_of(e)
            if i < 0:
                out.append(Entry(weight, int(res.size[e]), int(origins[e - lo]), None))
                continue
            kids = g.child_fact[g.child_ptr[i]:g.child_ptr[i + 1]].tolist()
            ranks = res.child_rank[res.child_rank_ptr[e]:res.child_rank_ptr[e + 1]].tolist()
            pointers = tuple((*self.fact_of(c), r) for c, r in zip(kids, ranks))
            out.append(Entry(weight, int(res.size[e]), int(origins[e - lo]), self.meta.rules[int(g.inst_rule[i])], pointers))
        self._cache[fid] = out
        return out

    def root_items(self) -> Iterator[tuple[FactKey, list[Entry]]]:
        for rel in self.roots:
            if rel not in self.meta.offsets:
                continue
            first, _ = self.meta.offsets[rel]
            for i, values in enumerate(self.values(rel)):
                yield (rel, values), self.entries_of(first + i)

    def count_facts(self, rel: str) -> int:
        """How many facts of P_p relation ``rel`` were computed (fewer under a demand)."""
        return self.meta.offsets.get(rel, (0, 0))[1]

    def summary(self) -> dict[str, Any]:
        """Per relation of P answered: facts, entries, and the best and worst top-1 weights --
        from the arrays, without building entries."""
        out: dict[str, Any] = {}
        res = self.res
        for rel in self.roots:
            if rel not in self.meta.offsets:
                continue
            first, n = self.meta.offsets[rel]
            if res.row is None:
                lo, hi = res.fact_ptr[first:first + n], res.fact_ptr[first + 1:first + n + 1]
            else:
                # the statistics ignore order: a relation whose rows are one range is read as slices
                rows = res.row[first:first + n]
                a = int(rows.min()) if n else 0
                if n and int(rows.max()) - a + 1 == n:
                    lo, hi = res.fact_ptr[a:a + n], res.fact_ptr[a + 1:a + n + 1]
                else:
                    lo, hi = res.fact_ptr[rows], res.fact_ptr[rows + 1]
            origin = self.relation_origin.get(rel, rel)
            cur = out.setdefault(origin, {"facts": 0, "entries": 0, "best": None, "worst_top1": None})
            cur["facts"] += int(n)
            cur["entries"] += int((hi - lo).sum())
            if n:
                top1 = res.w[lo]
                sign = -1.0 if self.monoid != "cost" else 1.0
                best, worst = (top1.max(), top1.min()) if sign < 0 else (top1.min(), top1.max())
                cur["best"] = float(best) if cur["best"] is None else cur["best"]
                cur["worst_top1"] = float(worst)
        return out

    @property
    def stats_note(self) -> str:
        """Which path formed the rule instances (for the command's closing stats line)."""
        return formed_text(self.meta.formed, self.meta.static_reason)

    def close(self) -> None:
        """Release the DuckDB database behind the facts."""
        self.store.close()
