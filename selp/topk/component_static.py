"""A partition's DTable component by component: the embedded engine's static path
(:mod:`selp.topk.decomposed`) inside a Spark task.

:func:`selp.topk.component.partition_dtable` ranks a partition of a decomposable component of
P_p. Its first way (the *whole-partition* path) builds the partition's full hypergraph -- every
rule instance joined by DuckDB, fetched as numpy -- and runs the global kernel over it, whose
top-k loop reads candidate records and fact blocks scattered over the whole partition. But the
partition's facts split further, by their decomposition value, into groups whose derivations
never meet (the same reason the partition exists), which is exactly what the embedded engine's
static path ranks one at a time: each group's instances formed in C by the kernel's join, ranked
with the group's records in cache, appended to the result. Here that path runs on the
partition:

* the component's one relation R is the grouped relation (its recursive rules' driver atom is
  R's, the join plans those of :func:`selp.topk.decomposed.static_plan`);
* every other fact is a leaf: a fact of a lower relation read by the recursive rules is a leaf
  standing for its one entry (its weight, size and origin; its relation's ``i:REL`` table is
  numbered from the entries). Only EDB relations of P_p qualify, whose facts have one entry
  each: a lower fact with several entries must stay one fact whose entries are ranked (the
  whole-partition path's copy steps), or trees through its entries that tie on (weight, size)
  could resolve unlike Spark's global rounds;
* a seed entry (what the exit rules made, computed by Spark) is a leaf too, copied to its fact
  by a one-child instance of rule 0 (weight one, size 0, origin the child's): the static path's
  ``given`` instances, ranked with the group's exit instances;
* origin mode 1 (Spark's ``xxhash64``): order (weight, size, origin) and same-origin dedup as in
  Spark's global rounds.

What comes out is packed as the whole-partition path packs it (:class:`Packed`, same fact
numbering and keys, same entry columns) but for the origins, which this path does not ship:
unpacking recomputes them (:mod:`selp.topk.packed`); the rows and the saved DTable are the same.
Where the static path cannot serve (more than one relation in the component, a derived lower
relation, a rule the kernel's join cannot form, k above the embedded engine's
``STATIC_MAX_K``, no compiled kernel), :func:`static_reason` says why on the driver -- the plan line shows it -- and the
partition takes the whole-partition path; a partition also falls back on its own should the
static run refuse its data (a head constant without a code, a lower fact arriving with
several entries).
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from selp.engines.decompose import Decomposition, decompose_any
from selp.engines.embedded.component import ComponentTask
from selp.engines.embedded.physical import column_kinds
from selp.engines.embedded.sql import ident
from selp.engines.embedded.store import Store, table
from selp.language.ast import Atom
from selp.topk.decomposed import StaticPlan, run_static
from selp.topk.partition_facts import entry_fact_ids, fact_args, id_tables, leaf_arrays
from selp.topk.embedded import STATIC_MAX_K  # a block of k entries per fact of a group, as there
from selp.topk.joins import Former, plan
from selp.topk.kernel import compiled_available
from selp.topk.packed import Packed, fact_keys, leaf_table, pack

__all__ = ["static_reason", "static_dtable"]


def _no_filter(rel: str) -> bool:
    return False  # a partition-local component reads no filter relation (choose() refuses them)


def _plans(comp: ComponentTask, kinds: Mapping[str, tuple[Any, ...]]) -> StaticPlan | str:
    """The static plan of ``comp`` with column ``kinds``, or why there is none."""
    if len(comp.members) != 1:
        return f"{len(comp.members)} mutually recursive relations (one is needed)"
    analysis = comp.analysis()
    # by a position, else by value components (a symmetry rule): groups by value classes
    d = decompose_any(analysis.components[0])
    if not isinstance(d, Decomposition):
        return d.reason
    rel = comp.members[0]
    if len(kinds[rel]) > 16:
        return f"{rel} has more than 16 columns"
    recursive = []
    for idx, rule in enumerate(comp.recursive_rules, 1):  # kernel rule 0 is the seeds' copy step
        driver = next(i for i, b in enumerate(rule.body) if isinstance(b, Atom) and not b.negated and b.relation == rel)
        p = plan(rule, dict(kinds), _no_filter, driver)
        if p is None:
            return f"rule {rule.name} is not formed by the kernel's join"
        recursive.append((p, idx))
    return StaticPlan(rel, d.position, [], recursive, d.kind)


def static_reason(comp: ComponentTask, k: int, edb: Any) -> str:
    """Why a partition of ``comp`` cannot be ranked component by component at this ``k``, or ""
    when it can (decided on the driver for the plan; column kinds as the data would make them
    without labeled nulls, which only turn integer columns into text, both of which the join
    takes). ``edb``: the EDB relations of P_p, whose facts have one entry each."""
    derived = sorted(set(comp.arities) - set(comp.members) - set(edb))
    if derived:
        # a lower fact with several entries must stay one fact with its entries ranked (the
        # copy steps of the whole-partition path): ties on (weight, size) between trees through
        # its entries then resolve as Spark's global rounds resolve them
        return f"it reads derived relation {derived[0]} (a fact may have several entries)"
    if not compiled_available():
        return "the compiled kernel was not built"
    if k > STATIC_MAX_K:
        return f"k > {STATIC_MAX_K}"
    kinds = column_kinds(comp.analysis(), comp.all_types(), set())
    got = _plans(comp, kinds)
    return got if isinstance(got, str) else ""


def _entry_table(con: Any, store: Store, rel: str, tbl: Any, first: int, view: str) -> int:
    """``"i:rel"``: a row per entry of ``tbl`` (c0.. in the uniform encoding; None: no entries),
    ids ``first``.. in row order -- the entry's leaf -- columns stored as the fixpoint stored
    ``rel``'s; its rows."""
    import pyarrow as pa

    ks = store.kinds[rel]
    if tbl is None or not tbl.num_rows:
        cols = "".join(f", c{i}" for i in range(len(ks)))
        con.execute(f"CREATE OR REPLACE TABLE {ident(f'i:{rel}')} AS SELECT 0::BIGINT AS id{cols} FROM {table(rel)} LIMIT 0")
        return 0
    con.register(view, tbl.select([f"c{i}" for i in range(len(ks))]).append_column(
        "_row", pa.array(np.arange(first, first + tbl.num_rows, dtype=np.int64))))
    cols = "".join(f", CAST(c{i} AS BIGINT) AS c{i}" if k.native_int else f", c{i}" for i, k in enumerate(ks))
    con.execute(f"CREATE OR REPLACE TABLE {ident(f'i:{rel}')} AS SELECT _row AS id{cols} FROM {view}")
    return tbl.num_rows


def static_dtable(task: Any, con: Any, store: Store, seeds: Mapping[str, Any], inputs: Mapping[str, Any],
                  partition: int) -> Packed | None | str:
    """The partition's DTable component by component (see the module docstring), over the
    fixpoint already in ``con``/``store``; :func:`selp.topk.component.partition_dtable`'s
    arguments and result, or why the static path refused (the caller then ranks the whole
    partition)."""
    comp: ComponentTask = task.component
    rel = comp.members[0] if len(comp.members) == 1 else ""
    read = {a.relation for r in comp.recursive_rules for a in r.body if isinstance(a, Atom)}
    others = sorted((set(inputs) | read) - set(comp.members))
    kinds = {r: store.kinds[r] for r in [rel, *others] if r in store.kinds}
    sp = _plans(comp, kinds)
    if isinstance(sp, str):
        return sp
    for o in others:
        t = inputs.get(o)
        if t is not None and t.num_rows != store.count(o):
            return f"a fact of {o} has several entries"  # see static_reason
    offsets, n = id_tables(con, [rel])  # the member facts: ids 0..n-1, as the other path numbers them
    first = n
    leaf_tables = []
    for i, o in enumerate(others):
        t = inputs.get(o)
        m = _entry_table(con, store, o, t, first, f"_l{i}")
        offsets[o] = (first, m)
        if m:
            leaf_tables.append(t)
        first += m
    seed = seeds.get(rel)
    seed_tables = [seed] if seed is not None and seed.num_rows else []
    first_seed = first
    heads = entry_fact_ids(con, store, rel, seed, "_e0") if seed_tables else np.zeros(0, np.int64)
    tables = leaf_tables + seed_tables

    # the member facts are 0..n-1; the lower entries' and the seeds' leaves follow, in row order
    leaf, leaf_w, leaf_size, leaf_origin = leaf_arrays(n, tables)
    F = len(leaf)
    names = [r.name for r in comp.recursive_rules]
    rules = (np.array([task.one] + [task.rule_weight[r] for r in names], np.float64),
             np.array([0] + [task.rule_size[r] for r in names], np.int64),
             np.array([0] + [task.rule_hash[r] for r in names], np.int64),
             np.array([True] + [task.rule_size[r] == 0 for r in names], np.bool_))
    former = Former(con, kinds, lambda r: (ident(f"i:{r}"), True))
    try:
        got = run_static(sp, former, lambda rule: (np.zeros(0, np.int64), np.zeros(0, np.int64)), offsets,
                         leaf, leaf_w, leaf_origin, rules, task.combine, task.sign, task.k, threads=comp.threads,
                         leaf_size=leaf_size, origin_mode=1,
                         given=(0, heads, np.arange(first_seed, F, dtype=np.int64)))
    finally:
        former.close()
    if isinstance(got, str):
        return got  # why not (instances not formed here, a value too wide for the narrow result)
    args = fact_args(con, store, [rel], offsets)
    # every fact's key: the members' made here, a lower entry's leaf the key its entry came with
    fact_f = np.zeros(F, np.int64)
    fact_f[:n] = fact_keys(task.salt, partition, n)
    if leaf_tables:
        fact_f[n:first_seed] = np.concatenate([t.column("_f").to_numpy(zero_copy_only=False).astype(np.int64) for t in leaf_tables])
    return _packed(task, got, rel, n, args, first_seed, seed, fact_f, leaf_origin, leaf_w, leaf_size)


def _packed(task: Any, got: Any, rel: str, n: int, args: Any, first_seed: int, seed: Any, fact_f: np.ndarray,
            leaf_origin: np.ndarray, leaf_w: np.ndarray, leaf_size: np.ndarray) -> Packed | None:
    """The member facts and their entries, packed (:func:`selp.topk.packed.pack`) straight from
    the static run's result arrays: entry ``e`` is its own instance (its rule and children in
    ``got.graph``), the entries of a fact are together and best first, and the children's input
    ids are the slots as they are -- the members' 0..n-1, the lower entries' and the seeds'
    leaves after them, in the order of the leaf table. No origin is read (the kernel computes
    none until asked), and no weight or size is shipped: unpacking recomputes all three from the
    leaves' (half the bytes of a blob were the weights, which compress badly)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    res, g = got.result, got.graph
    fp, row = res.fact_ptr, res.row
    L = len(g.leaf) - n  # the leaves' rows come first, then the members' (group by group)
    lo, hi = int(fp[L]), int(fp[L + n])
    if hi == lo:
        return None
    inv = np.empty(L + n, np.int32)
    inv[row] = np.arange(L + n, dtype=np.int32)
    rule = g.inst_rule[lo:hi]
    names = [r.name for r in task.component.recursive_rules]
    seed_rule = seed.column("_rule").combine_chunks().cast(pa.string()) if seed is not None else pa.array([], pa.string())
    dictionary = pa.array(sorted(set(names) | {x for x in pc.unique(seed_rule).to_pylist() if x is not None}), pa.string())
    code_of = pc.index_in(pa.array([""] + names, pa.string()), value_set=dictionary).fill_null(0).to_numpy(zero_copy_only=False)
    # per entry its member fact (0..n-1), its rank (the kernel lists a fact's entries best
    # first: the position in the list) and its rule's code
    owner, rank, rule_code = _entry_columns(fp, inv, g.inst_rule, code_of, L, n, lo, hi)
    rule_null = np.zeros(hi - lo, np.bool_)
    off, slot_c, slot_r = _slots(got, L, lo, hi, n, task.k)
    e = np.flatnonzero(rule == 0)  # a seed entry copied to its fact: the seed's rule
    if len(e):
        rows = pa.array(slot_c[off[e]].astype(np.int64) - (first_seed - n))  # its one slot: the seed's leaf row
        codes = pc.index_in(seed_rule.take(rows), value_set=dictionary)
        rule_null[e] = codes.is_null().to_numpy(zero_copy_only=False)
        rule_code[e] = codes.fill_null(0).to_numpy(zero_copy_only=False)
    facts = pa.table({"relation": pa.DictionaryArray.from_arrays(pa.array(np.zeros(n, np.int32)), pa.array([rel], pa.string())),
                      "args": args})
    leaves = leaf_table(fact_f[n:first_seed], leaf_origin[n:first_seed], seed.select(["_o", "_ch"]) if seed is not None else None,
                        leaf_w[n:], leaf_size[n:])
    return pack(facts, leaves, owner, None, None, rank, rule_code, rule_null, dictionary, off, slot_c, slot_r)


def _entry_columns(fp: np.ndarray, inv: np.ndarray, inst_rule: np.ndarray, code_of: np.ndarray, L: int, n: int,
                   lo: int, hi: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Entries lo..hi-1's owner (int32: the member fact, ``inv`` of its row), rank (from 1, in
    its fact's list ``fp``) and rule code (``code_of`` of its kernel rule): in one pass by the
    kernel (``selp_pack_static_entries``: narrow arrays, no int64 temporaries -- fresh memory is
    costly where a first touch faults its pages in) when it is built and the codes fit int8,
    else numpy."""
    from selp.topk.kernel import address, library

    lib = library()
    if lib is not None and (not len(code_of) or int(code_of.max()) < 128):
        owner, rank, code = np.empty(hi - lo, np.int32), np.empty(hi - lo, np.uint8), np.empty(hi - lo, np.int8)
        rules, codes = np.ascontiguousarray(inst_rule, np.uint8), np.ascontiguousarray(code_of, np.int8)
        fps, invs = np.ascontiguousarray(fp, np.int64), np.ascontiguousarray(inv, np.int32)
        lib.selp_pack_static_entries(L, n, lo, address(fps), address(invs), address(rules), address(codes),
                                     address(owner), address(rank), address(code))
        return owner, rank, code
    per_row = np.diff(fp[L:L + n + 1])
    owner = np.repeat(inv[L:], per_row)
    rank = np.arange(hi - lo, dtype=np.int64) - np.repeat(fp[L:L + n] - lo, per_row) + 1
    return owner, rank, code_of[inst_rule[lo:hi]]


def _slots(got: Any, L: int, lo: int, hi: int, n: int, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Entries lo..hi-1's child slots as :func:`~selp.topk.packed.pack` takes them (where each
    entry's slots start, then per slot ``c`` and ``r``): a child below ``n`` is a member fact (its
    entry of rank ``r``), else the leaf table's row ``c - n`` (``r`` 0) -- by the kernel
    (``selp_pack_static_slots``: one pass, no temporaries, and no slot pointers over every entry
    built first) when it is built, else numpy."""
    from selp.topk.kernel import address, library

    g, res = got.graph, got.result
    lib = library()
    if lib is not None and k <= 255:
        slots = g.slots
        rule = np.ascontiguousarray(slots.rule, np.uint8)
        rule_m = np.ascontiguousarray(slots.rule_m, np.int64)
        m = rule_m[rule[lo:hi]]
        total = int(m.sum())
        kid = np.ascontiguousarray(g.child_fact, np.int32)
        cr = np.ascontiguousarray(res.child_rank, np.uint8)
        off, slot_c, slot_r = np.empty(hi - lo + 1, np.int32), np.empty(total, np.int32), np.empty(total, np.uint8)
        lib.selp_pack_static_slots(L, lo, hi, address(rule), address(rule_m), address(kid), address(cr), n,
                                   address(off), address(slot_c), address(slot_r))
        return off, slot_c, slot_r
    ptr = g.child_ptr
    s0, s1 = int(ptr[lo]), int(ptr[hi])
    child = g.child_fact[s0:s1]  # int32 input ids
    is_leaf = child >= n
    slot_c = np.where(is_leaf, child - n, child)  # a leaf's row of the leaf table
    slot_r = res.child_rank[s0:s1].copy()
    slot_r[is_leaf] = 0
    return ptr[lo:hi + 1] - s0, slot_c, slot_r
