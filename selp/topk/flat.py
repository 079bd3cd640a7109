"""The answers of a DTable as flat arrays: the form every tree writer reads.

A top-k answer is a DAG: a tree of P is a *node* -- a fact of P, a rule of P (none at a leaf) and
child nodes -- and the trees of many answers share their subtrees. :class:`Flat` holds it as
integer arrays (``node_fact``, ``node_rule``, CSR ``child_ptr``/``child``), the facts' printed
forms once each (``fact_text`` ``path(0, 7)``, ``fact_json`` ``{"relation": "path", "args": [0,
7]`` without its closing brace), the rules of P, and the answers: per fact of P, its trees' root
nodes, best first, with their weights. :mod:`selp.topk.render` streams any tree format from it.

What :func:`selp.topk.trees.materialise` does per node, this module does per array:

* P_p's facts are numbered as facts of P -- ``path@v1(0, 7)`` and ``path(0, 7)`` are one fact --
  in output order (relation, then values as :func:`selp.values.sort_key` orders them), by one
  DuckDB query per relation of P, which also renders the facts' labels;
* copy steps (transitive copies, HandleEDB, NOT's EDB copies) are skipped by pointer jumping
  over the entries' arrays;
* an answer's entries from several root relations are merged, deduplicated by origin and cut to
  k with one sort (:meth:`selp.topk.dtable.DTable.answer_pointers` per fact).

A DTable held as Python entries (the reference and Spark engines, a DTable saved in format 1)
becomes the same arrays by a walk over its entries (:func:`from_entries`), so every engine's
answers are written by one writer.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from selp.language.pattern import WILDCARD, PatternNode
from selp.topk.dtable import DTable
from selp.topk.monoid import format_weight, get_monoid
from selp.values import json_value, sort_key

# how weights are passed to the renderer (selp/topk/_render.c): floats shown with 12 digits, the
# size monoid's negated counts, access levels as letters, or texts rendered in Python (plug-ins)
W_FLOAT, W_NEGINT, W_ACCESS, W_STRINGS = 0, 1, 2, 3
WEIGHT_MODE = {"confidence": W_FLOAT, "min-confidence": W_FLOAT, "cost": W_FLOAT, "size": W_NEGINT,
               "access": W_ACCESS}


@dataclass
class Weights:
    """Weights in the monoid's internal form (``values``), or as text and JSON per item."""

    mode: int
    values: np.ndarray | None = None  # float64
    text: pa.Array | None = None  # large_string
    json: pa.Array | None = None  # large_string

    def take(self, idx: np.ndarray) -> "Weights":
        """The weights of items ``idx``, in that order."""
        if self.mode != W_STRINGS:
            assert self.values is not None
            return Weights(self.mode, self.values[idx])
        assert self.text is not None and self.json is not None
        return Weights(self.mode, None, self.text.take(pa.array(idx)), self.json.take(pa.array(idx)))


@dataclass
class Flat:
    """The answers of a DTable as a DAG of nodes over facts and rules of P (module docstring)."""

    k: int
    monoid: str
    pattern: str | None
    rules: list[str]  # rules of P; node_rule indexes them
    rule_weights: list[Any]  # displayed, per rule
    fact_text: pa.Array  # large_string per fact: "path(0, 7)"
    fact_json: pa.Array  # large_string per fact: '{"relation": "path", "args": [0, 7]'
    node_fact: np.ndarray  # int64[N]
    node_rule: np.ndarray  # int32[N], -1 at a leaf
    child_ptr: np.ndarray  # int64[N+1]
    child: np.ndarray  # int64[child_ptr[N]]: node ids, in body order
    node_w: Weights  # a node's tree weight (at a leaf: the fact's)
    ans_fact: np.ndarray  # int64[A]: answers in output order
    ans_ptr: np.ndarray  # int64[A+1]
    ans_root: np.ndarray  # int64[ans_ptr[A]]: root nodes, best first
    ans_w: Weights  # each tree's weight
    # per fact: relation of P and the values in selp's uniform encoding (selp.values.encode);
    # filled where the caller asks for them (saving a DTable)
    fact_relation: pa.Array | None = None
    fact_args: pa.Array | None = None
    types: dict[str, tuple[str, ...]] = field(default_factory=dict)  # per relation of P

    @property
    def n_answers(self) -> int:
        return len(self.ans_fact)

    @property
    def n_trees(self) -> int:
        return len(self.ans_root)

    @property
    def leaf_weightless(self) -> bool:
        """Leaves show no weight (a monoid that ignores fact weights: ``(fact)``, ``null``)."""
        return get_monoid(self.monoid).fact_weight_override is not None


# --- pieces rendered once -------------------------------------------------------------------------


def rule_pieces(rules: list[str], weights: list[Any]) -> tuple[list[str], list[str], list[str]]:
    """Per rule: the text drawing's ``[r1 0.9]``, the JSON ``"rule": "r1", "weight": 0.9`` and
    the rule's JSON name, as :mod:`selp.topk.trees` writes them."""
    text = [f"[{r} {format_weight(w)}]" for r, w in zip(rules, weights)]
    js = [f'"rule": {_dumps(r)}, "weight": {_dumps(w)}' for r, w in zip(rules, weights)]
    return text, js, [_dumps(r) for r in rules]


def _dumps(v: Any) -> str:
    return json.dumps(v, ensure_ascii=False)


def fact_json_prefix(relation: str, values: tuple) -> str:
    """``{"relation": "path", "args": [0, 7]`` (the fact object without its closing brace)."""
    return '{"relation": ' + _dumps(relation) + ', "args": [' + ", ".join(_dumps(json_value(v)) for v in values) + "]"


def weights_of(monoid: str, internal: list[Any]) -> Weights:
    """Weights for the renderer from internal weights: numbers for the built-in monoids, texts
    (as :func:`selp.topk.trees` shows them) for a plug-in's."""
    mode = WEIGHT_MODE.get(monoid)
    if mode is not None:
        return Weights(mode, np.asarray(internal, dtype=np.float64))
    m = get_monoid(monoid)
    shown = [m.display(w) for w in internal]
    return Weights(W_STRINGS, None, pa.array([format_weight(w) for w in shown], pa.large_string()),
                   pa.array([_dumps(w) for w in shown], pa.large_string()))


def _rules_of(table: DTable) -> list[str]:
    rules = list(table.rule_weights)
    seen = set(rules)
    for r in table.rule_origin.values():
        if r is not None and r not in seen:
            seen.add(r)
            rules.append(r)
    return rules


# --- from Python entries --------------------------------------------------------------------------


def from_entries(table: DTable, fact_filter: PatternNode | None = None, with_args: bool = False) -> Flat:
    """The answers of any DTable (optionally only facts carrying ``fact_filter``'s label) as a
    :class:`Flat`, by a walk over its entries: one node per entry reached, numbered in post-order
    (children first). The oracle of :func:`from_arrays` and the writer's input for the engines
    whose DTables are Python entries."""
    from selp.values import encode

    rules = _rules_of(table)
    rule_ix = {r: i for i, r in enumerate(rules)}
    pointers = table.answer_pointers()
    keys = [key for key in pointers if fact_filter is None or fact_filter.matches_fact(*key)]
    keys.sort(key=lambda kv: (kv[0], tuple(sort_key(v) for v in kv[1])))
    facts: dict[tuple, int] = {}
    fact_list: list[tuple] = []

    def fact_id(rel: str, values: tuple) -> int:
        key = (table.relation_origin.get(rel, rel), values)
        got = facts.get(key)
        if got is None:
            got = facts[key] = len(fact_list)
            fact_list.append(key)
        return got

    def resolve(rel: str, values: tuple, entry: Any) -> tuple[str, tuple, Any]:
        while entry.rule is not None and table.rule_origin.get(entry.rule) is None:  # copy steps
            ((rel, values, rank),) = entry.children
            entry = table.entries[(rel, values)][rank - 1]
        return rel, values, entry

    node_of: dict[int, int] = {}  # id(entry) -> node
    node_fact: list[int] = []
    node_rule: list[int] = []
    node_w: list[Any] = []
    child_ptr = [0]
    child: list[int] = []
    kids_of: dict[int, list[tuple[str, tuple, Any]]] = {}

    def node(rel: str, values: tuple, entry: Any) -> int:
        """The node of an entry (resolved), numbered after its children (post-order)."""
        root = resolve(rel, values, entry)
        stack = [root]
        while stack:
            r, vs, e = stack[-1]
            if id(e) in node_of:
                stack.pop()
                continue
            kids = kids_of.get(id(e))
            if kids is None:
                kids = kids_of[id(e)] = [resolve(cr, cv, table.entries[(cr, cv)][k - 1]) for cr, cv, k in e.children]
            pending = [kid for kid in kids if id(kid[2]) not in node_of]
            if pending:
                stack.extend(reversed(pending))
                continue
            stack.pop()
            node_of[id(e)] = len(node_fact)
            node_fact.append(fact_id(r, vs))
            node_rule.append(-1 if e.rule is None else rule_ix[table.rule_origin[e.rule]])
            node_w.append(e.weight)
            child.extend(node_of[id(kid[2])] for kid in kids)
            child_ptr.append(len(child))
        return node_of[id(root[2])]

    ans_fact: list[int] = []
    ans_ptr = [0]
    ans_root: list[int] = []
    ans_w: list[Any] = []
    for rel, values in keys:
        roots = [(node(r, vs, e), e.weight) for r, vs, e in pointers[(rel, values)]]
        ans_fact.append(fact_id(rel, values))
        ans_root.extend(n for n, _ in roots)
        ans_w.extend(w for _, w in roots)
        ans_ptr.append(len(ans_root))
    types = {table.relation_origin.get(r, r): tuple(t) for r, t in table.types.items()}
    flat = Flat(
        table.k, table.monoid, table.pattern, rules, [table.rule_weights.get(r) for r in rules],
        pa.array([_text(rel, vs) for rel, vs in fact_list], pa.large_string()),
        pa.array([fact_json_prefix(rel, vs) for rel, vs in fact_list], pa.large_string()),
        np.asarray(node_fact, dtype=np.int64), np.asarray(node_rule, dtype=np.int32),
        np.asarray(child_ptr, dtype=np.int64), np.asarray(child, dtype=np.int64),
        weights_of(table.monoid, node_w),
        np.asarray(ans_fact, dtype=np.int64), np.asarray(ans_ptr, dtype=np.int64),
        np.asarray(ans_root, dtype=np.int64), weights_of(table.monoid, ans_w), types=types,
    )
    if with_args:
        flat.fact_relation = pa.array([rel for rel, _ in fact_list], pa.string())
        flat.fact_args = pa.array([[encode(v) for v in vs] for _, vs in fact_list], pa.list_(pa.string()))
    return flat


def _text(relation: str, values: tuple) -> str:
    from selp.topk.trees import fact_text

    return fact_text(relation, values)


# --- from the embedded engine's arrays ------------------------------------------------------------


def from_arrays(table: Any, fact_filter: PatternNode | None = None, with_args: bool = False) -> Flat:
    """The answers of an :class:`~selp.topk.embedded.ArrayDTable` as a :class:`Flat`, with no
    Python per fact or entry: node ``e`` is the kernel's entry ``e`` (those no answer reaches
    are never read), facts are numbered and rendered in DuckDB."""
    from selp.topk.decomposed import StaticGraph

    res, g = table.res, table.graph
    k = table.k
    pf = _number_facts(table, with_args)
    n_entries = res.n_entries
    # the fact (P_p id) of each entry: rows of fact_ptr in order, each row one fact
    counts = np.diff(res.fact_ptr)
    n_rows = len(counts)
    if res.row is None:
        fact_of_row = np.arange(n_rows, dtype=np.int64)
    else:
        fact_of_row = np.empty(n_rows, dtype=np.int64)
        fact_of_row[np.asarray(res.row, dtype=np.int64)] = np.arange(len(res.row), dtype=np.int64)
    entry_fact = np.repeat(fact_of_row, counts)
    inst = res.inst
    leaf = inst < 0
    kernel_rule = np.where(leaf, 0, g.inst_rule[np.where(leaf, 0, inst)]).astype(np.int64)
    rules = _rules_of(table)
    rule_ix = {r: i for i, r in enumerate(rules)}
    # kernel rule -> rule of P (-2: a copy step)
    to_p = np.array([-2 if table.rule_origin.get(r) is None else rule_ix[table.rule_origin[r]] for r in table.meta.rules]
                    or [0], dtype=np.int32)
    node_rule = np.where(leaf, np.int32(-1), to_p[kernel_rule]).astype(np.int32)
    # each entry's children as entry ids: child j of entry e is fact child_fact[child_ptr[inst]+j]
    # at rank child_rank[child_rank_ptr[e]+j]
    crp = np.asarray(res.child_rank_ptr, dtype=np.int64)
    slots = np.diff(crp)
    n_slots = int(crp[-1]) if len(crp) else 0
    if isinstance(g, StaticGraph):
        kid_fact = np.asarray(g.child_fact, dtype=np.int64)  # the static path: entry e is instance e
    else:
        slot_entry = np.repeat(np.arange(n_entries, dtype=np.int64), slots)
        j = np.arange(n_slots, dtype=np.int64) - crp[slot_entry]
        kid_fact = np.asarray(g.child_fact, dtype=np.int64)[np.asarray(g.child_ptr, dtype=np.int64)[inst[slot_entry]] + j]
        del slot_entry, j
    kid_row = kid_fact if res.row is None else np.asarray(res.row, dtype=np.int64)[kid_fact]
    kid = np.asarray(res.fact_ptr, dtype=np.int64)[kid_row] + np.asarray(res.child_rank, dtype=np.int64) - 1
    del kid_fact, kid_row
    # copy steps: an entry of a copy rule stands for its one child's entry
    resolved = np.arange(n_entries, dtype=np.int64)
    copy = node_rule == -2
    if copy.any():
        resolved[copy] = kid[crp[:-1][copy]]
        while True:
            nxt = resolved[resolved]
            if np.array_equal(nxt, resolved):
                break
            resolved = nxt
    kid = resolved[kid]
    node_fact = pf.pid_of[entry_fact]
    ans_fact, ans_ptr, ans_root = _answers(table, pf, fact_filter, k)
    w = np.asarray(res.w, dtype=np.float64)
    mode = WEIGHT_MODE[table.monoid]
    flat = Flat(
        k, table.monoid, table.pattern, rules, [table.rule_weights.get(r) for r in rules], pf.text, pf.json,
        node_fact, node_rule, crp, kid, Weights(mode, w),
        ans_fact, ans_ptr, resolved[ans_root], Weights(mode, w[ans_root]), types=pf.types,
    )
    if with_args:
        flat.fact_relation, flat.fact_args = pf.relation, pf.args
    return flat


@dataclass
class _Facts:
    """P_p's facts numbered as facts of P (``pid_of``: P_p id -> fact), rendered per fact."""

    pid_of: np.ndarray
    text: pa.Array
    json: pa.Array
    ranges: dict[str, tuple[int, int]]  # relation of P -> its facts' first id and count
    kinds: dict[str, tuple[Any, ...]]  # relation of P -> the kinds of the columns numbered
    types: dict[str, tuple[str, ...]]
    relation: pa.Array | None = None
    args: pa.Array | None = None


def _number_facts(table: Any, with_args: bool) -> _Facts:
    from selp.engines.embedded.physical import Kind
    from selp.engines.embedded.sql import ident

    con = table.store.con
    offsets = table.meta.offsets
    by_origin: dict[str, list[str]] = {}
    for rel in offsets:
        by_origin.setdefault(table.relation_origin.get(rel, rel), []).append(rel)
    pid_of = np.zeros(sum(n for _, n in offsets.values()), dtype=np.int64)
    texts, jsons, rels, argss = [], [], [], []
    ranges: dict[str, tuple[int, int]] = {}
    kinds_of: dict[str, tuple[Any, ...]] = {}
    types: dict[str, tuple[str, ...]] = {}
    base = 0
    for origin in sorted(by_origin):
        members = sorted(by_origin[origin])
        arity = len(table.store.kinds[members[0]])
        kinds = []
        for i in range(arity):
            ks = {table.store.kinds[r][i] for r in members}
            kinds.append(ks.pop() if len(ks) == 1 else Kind(next(iter(ks)).logical, True))
        kinds_of[origin] = tuple(kinds)
        types[origin] = tuple(table.types[members[0]])
        cols = [f"c{i}" for i in range(arity)]

        def stored(r: str, i: int) -> str:
            # a column stored natively where the merged kind is text: its encoding
            return f"CAST(c{i} AS VARCHAR) AS c{i}" if table.store.kinds[r][i].sql != kinds[i].sql else f"c{i}"

        src = " UNION ALL ".join(
            f"SELECT id{''.join(', ' + stored(r, i) for i in range(arity))} FROM {ident(f'i:{r}')}" for r in members
        )
        order = ", ".join(o for i, k in enumerate(kinds) for o in _order_sql(f"c{i}", k)) or "id"
        rank = "dense_rank()" if len(members) > 1 else "row_number()"
        con.execute(f"CREATE OR REPLACE TEMP TABLE {ident('pf:' + origin)} AS SELECT id, "
                    f"({rank} OVER (ORDER BY {order}) - 1)::BIGINT AS pid{''.join(', ' + c for c in cols)} FROM ({src})")
        got = con.execute(f"SELECT id, pid FROM {ident('pf:' + origin)}").fetchnumpy()
        pid_of[np.asarray(got["id"], dtype=np.int64)] = np.asarray(got["pid"], dtype=np.int64) + base
        one = f"(SELECT DISTINCT ON (pid) * FROM {ident('pf:' + origin)})" if len(members) > 1 else ident("pf:" + origin)
        label = _label_sql(origin, cols, kinds)
        jsn = _json_sql(origin, cols, kinds)
        extra = ""
        if with_args:
            extra = ", [" + ", ".join(_encoded_sql(c, k) for c, k in zip(cols, kinds)) + "]::VARCHAR[] AS args"
        tab = con.sql(f"SELECT {label} AS t, {jsn} AS j{extra} FROM {one} ORDER BY pid").to_arrow_table()
        n = tab.num_rows
        texts.append(tab.column("t").combine_chunks().cast(pa.large_string()))
        jsons.append(tab.column("j").combine_chunks().cast(pa.large_string()))
        if with_args:
            rels.append(np.full(n, len(rels), dtype=np.int32))
            argss.append(tab.column("args").combine_chunks().cast(pa.list_(pa.string())))
        ranges[origin] = (base, n)
        base += n
    text = pa.concat_arrays(texts) if texts else pa.array([], pa.large_string())
    js = pa.concat_arrays(jsons) if jsons else pa.array([], pa.large_string())
    out = _Facts(pid_of, text, js, ranges, kinds_of, types)
    if with_args:
        names = [o for o in sorted(by_origin)]
        out.relation = pa.DictionaryArray.from_arrays(pa.array(np.concatenate(rels) if rels else np.zeros(0, np.int32)),
                                                      pa.array(names, pa.string()))
        out.args = pa.concat_arrays(argss) if argss else pa.array([], pa.list_(pa.string()))
    return out


def _order_sql(c: str, kind: Any) -> list[str]:
    """ORDER BY terms that sort a column as :func:`selp.values.sort_key` does (integers, then
    strings, then labeled nulls)."""
    if not kind.tainted:
        return [c]
    terms = [f"starts_with({c}, chr(0))"]
    if kind.logical != "str":
        terms.append(f"TRY_CAST({c} AS {kind.number_sql})")
    return terms + [c]


def _encoded_sql(c: str, kind: Any) -> str:
    return f"CAST({c} AS VARCHAR)" if kind.native_number else c


def _shown_sql(c: str, kind: Any) -> str:
    """The value as :func:`selp.values.display_value` writes it."""
    if kind.native_number:
        return f"CAST({c} AS VARCHAR)"
    if not kind.tainted:
        return c
    return f"(CASE WHEN starts_with({c}, chr(0)) THEN substr({c}, 2) ELSE {c} END)"


# json.dumps(s, ensure_ascii=False): these characters escaped, the other controls as \u00XX
_SHORT_ESCAPES = [("\\", "\\\\"), ('"', '\\"'), ("\n", "\\n"), ("\r", "\\r"), ("\t", "\\t"), ("\b", "\\b"), ("\f", "\\f")]


def _json_string_sql(x: str) -> str:
    """SQL for ``json.dumps(x, ensure_ascii=False)`` of a text expression."""
    from selp.engines.embedded.sql import sql_string

    esc = x
    for ch, rep in _SHORT_ESCAPES:
        esc = f"replace({esc}, chr({ord(ch)}), {sql_string(rep)})"
    for code in range(32):
        if chr(code) not in "\n\r\t\b\f":
            rep = sql_string("\\u%04x" % code)
            esc = f"replace({esc}, chr({code}), {rep})"
    return f"('\"' || CASE WHEN regexp_matches({x}, '[\\x00-\\x1f\"\\\\]') THEN {esc} ELSE {x} END || '\"')"


def _json_value_sql(c: str, kind: Any) -> str:
    """The JSON of :func:`selp.values.json_value`: an integer as a number, anything else (a
    string, a float, a labeled null's text) as a string."""
    if kind.native_int:
        return f"CAST({c} AS VARCHAR)"
    if kind.native_number:
        return f"('\"' || CAST({c} AS VARCHAR) || '\"')"
    if not kind.tainted:
        return _json_string_sql(c)
    plain = c if kind.logical == "int" else _json_string_sql(c)
    return f"(CASE WHEN starts_with({c}, chr(0)) THEN {_json_string_sql(f'substr({c}, 2)')} ELSE {plain} END)"


def _label_sql(relation: str, cols: list[str], kinds: list[Any]) -> str:
    from selp.engines.embedded.sql import sql_string

    if not cols:
        return sql_string(f"{relation}()")
    inner = " || ', ' || ".join(_shown_sql(c, k) for c, k in zip(cols, kinds))
    return f"({sql_string(relation + '(')} || {inner} || ')')"


def _json_sql(relation: str, cols: list[str], kinds: list[Any]) -> str:
    from selp.engines.embedded.sql import sql_string

    head = sql_string('{"relation": ' + _dumps(relation) + ', "args": [')
    if not cols:
        return f"({head} || ']')"
    inner = " || ', ' || ".join(_json_value_sql(c, k) for c, k in zip(cols, kinds))
    return f"({head} || {inner} || ']')"


def _answers(table: Any, pf: _Facts, fact_filter: PatternNode | None, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per answer in output order: its fact and its trees' root entries (unresolved), best first."""
    from selp.engines.embedded.sql import const_filter, ident

    res = table.res
    con = table.store.con
    parts_pid, parts_lo, parts_hi, parts_root = [], [], [], []
    roots_by_origin: dict[str, list[str]] = {}
    for rel in table.roots:
        if rel in table.meta.offsets:
            roots_by_origin.setdefault(table.relation_origin.get(rel, rel), []).append(rel)
    for origin, members in roots_by_origin.items():
        if fact_filter is not None:
            if not fact_filter.matches_relation(origin):
                continue
            if fact_filter.args is not None and len(fact_filter.args) != len(pf.kinds[origin]):
                continue
        conds = []
        for rel in members:
            first, n = table.meta.offsets[rel]
            conds.append(f"(id >= {first} AND id < {first + n})")
        where = "(" + " OR ".join(conds) + ")"
        if fact_filter is not None and fact_filter.args is not None:
            for i, v in enumerate(fact_filter.args):
                if v is not WILDCARD:
                    where += " AND " + const_filter(f"c{i}", v, pf.kinds[origin][i])
        got = con.execute(f"SELECT id, pid FROM {ident('pf:' + origin)} WHERE {where} ORDER BY pid, id").fetchnumpy()
        ids = np.asarray(got["id"], dtype=np.int64)
        rows = ids if res.row is None else np.asarray(res.row, dtype=np.int64)[ids]
        parts_pid.append(np.asarray(got["pid"], dtype=np.int64) + pf.ranges[origin][0])
        parts_lo.append(np.asarray(res.fact_ptr, dtype=np.int64)[rows])
        parts_hi.append(np.asarray(res.fact_ptr, dtype=np.int64)[rows + 1])
        parts_root.append(len(members) > 1)
    if not parts_pid:
        return np.zeros(0, np.int64), np.zeros(1, np.int64), np.zeros(0, np.int64)
    pid = np.concatenate(parts_pid)
    lo = np.concatenate(parts_lo)
    hi = np.concatenate(parts_hi)
    merged = any(parts_root)
    # the relations of P are numbered in name order, and parts follow table.roots' order: sort
    by = np.argsort(pid, kind="stable")
    pid, lo, hi = pid[by], lo[by], hi[by]
    cnt = hi - lo
    entry = np.repeat(lo - np.concatenate([[0], np.cumsum(cnt)[:-1]]), cnt) + np.arange(int(cnt.sum()), dtype=np.int64)
    epid = np.repeat(pid, cnt)
    if merged:
        # several root relations per fact of P: merge their entries, one per origin, best k
        w = np.asarray(res.w, dtype=np.float64)[entry]
        key = w if table.monoid == "cost" else -w
        size = np.asarray(res.size, dtype=np.int64)[entry]
        origin = np.asarray(res.origin, dtype=np.int64)[entry]
        o = np.lexsort((origin, size, key, epid))
        entry, epid, origin = entry[o], epid[o], origin[o]
        keep = np.ones(len(entry), dtype=bool)
        keep[1:] = (epid[1:] != epid[:-1]) | (origin[1:] != origin[:-1])
        entry, epid = entry[keep], epid[keep]
    # cut to k per fact (the kernel's lists hold at most k; merged lists may hold more)
    starts = np.flatnonzero(np.concatenate([[True], epid[1:] != epid[:-1]])) if len(epid) else np.zeros(0, np.int64)
    rank = np.arange(len(epid), dtype=np.int64) - np.repeat(starts, np.diff(np.append(starts, len(epid))))
    sel = rank < k
    entry, epid = entry[sel], epid[sel]
    ans_fact, first = np.unique(epid, return_index=True)
    ans_ptr = np.append(first, len(epid)).astype(np.int64)
    return ans_fact.astype(np.int64), ans_ptr, entry
