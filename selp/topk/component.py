"""The DTable of one decomposable component in one partition: DuckDB and the compiled kernel
over Arrow, packed for the Spark DTable (:mod:`selp.topk.packed`).

This is what a Spark task runs for a partition of a decomposable component of P_p
(:mod:`selp.topk.spark_partitioned`). A derivation of a fact of the component only uses facts of
the component in the same partition and facts of lower relations, so the k best derivations of
the partition's facts are computed here, whole:

1. the partition's facts: the component's fixpoint from the seed facts
   (:func:`selp.engines.embedded.component.fixpoint`);
2. the hypergraph of the embedded DTable (:mod:`selp.topk.embedded`): every fact an id, every
   instance of a recursive rule a row of ids. Entries computed elsewhere -- the entries of the
   lower relations the rules read (EDB leaves, earlier components) and the seed entries (what
   the exit rules made, computed by Spark) -- become **leaves standing for an entry** (their
   weight, size and origin), each joined to its fact by a copy step: a fact's entries are then
   exactly its k best, ranked by the kernel like any other;
3. the kernel (:func:`selp.topk.kernel.run_kernel`) with **Spark's origins** (origin mode 1:
   ``xxhash64("N", rule, child origins..)``, the rule's prefix hashed by Spark on the driver),
   so the order -- ties broken on the origin -- and the same-origin dedup are the global
   rounds' own;
4. out come the member facts' entries, **ranked and keyed here**, packed
   (:class:`~selp.topk.packed.Packed`): the facts once, the entries as narrow integer and
   float columns (fact number, weight, size, origin, rule code, rank, child slots), the
   entries from outside the partition they point at in a leaf table. A seed entry that made
   its fact's k best points at its seed's leaf, and unpacks as the seed came (its rule and
   child pointers); another one's children unpack as (fact key, origin) pointers. Nothing is
   left for Spark to hash, group or rank, and unpacking gives the Spark DTable's own rows.

Fact keys. A member fact's ``_f`` is not Spark's ``xxhash64(relation, args)`` but a key made
here: the partition's number and the fact's number in it, mixed by a bijection of 64-bit words
(:func:`fact_keys`). A fact lives in one partition and its relation in one component, so the
keys of the component's facts are distinct, and they look as random as the hashes of the other
facts of the DTable (a key is only ever compared for equality). Its ``_g`` is the partition's
number. An input fact keeps the ``_f`` its entries came with, so pointers into lower relations
are the global rounds' own. Computing the keys here is what spares Spark a pass hashing every
entry's arguments and its children's (two hashes each) after the job.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from selp.engines.embedded.component import ComponentTask, fixpoint
from selp.engines.embedded.sql import columns, compile_body, ident
from selp.engines.embedded.store import close, connect, table
from selp.language.ast import Atom
from selp.topk.kernel import Hypergraph, compiled_available, run_kernel
from selp.topk.packed import Packed, fact_keys, leaf_table, pack
from selp.topk.partition_facts import entry_fact_ids, fact_args, id_tables, leaf_arrays

__all__ = ["DTableTask", "Packed", "fact_keys", "partition_dtable"]

ENTRY_COLUMNS = ("_w", "_s", "_o", "_f")  # an entry's weight (float64), size, origin, fact key, after c0..


@dataclass(frozen=True)
class DTableTask:
    """A decomposable component of P_p cut out of it, with what its entries need: rule weights,
    sizes and Spark origin prefixes of its recursive rules, and the monoid as kernel codes."""

    component: ComponentTask
    rule_weight: Mapping[str, float]
    rule_size: Mapping[str, int]
    rule_hash: Mapping[str, int]  # Spark's xxhash64("N", the rule of P) per recursive rule
    combine: int
    sign: float
    one: float  # the monoid's neutral element: a copy step's weight
    k: int
    salt: int = 0  # mixed into the component's fact keys (see fact_keys)
    # rank component by component (selp.topk.component_static), as the driver's plan decided;
    # False: the partition's whole hypergraph through the global kernel
    by_component: bool = False


def partition_dtable(task: DTableTask, seeds: Mapping[str, Any], inputs: Mapping[str, Any], partition: int = 0) -> Packed | None:
    """The entries of the component's facts in one partition (see the module docstring).

    ``seeds``: member -> Arrow table of seed entries (c0.., ``_w``, ``_s``, ``_o``, ``_rule``,
    ``_ch``); ``inputs``: every other relation the recursive rules read -> its entries (c0..,
    ``_w``, ``_s``, ``_o``, ``_f``); ``partition``: this partition's number (in the member
    facts' keys). Returns the member facts and their k best entries, packed
    (:class:`~selp.topk.packed.Packed`; :func:`selp.topk.packed.unpack_entries` gives the rows
    ``_f``, ``_g``, ``relation``, ``args``, ``_w``, ``_s``, ``_o``, ``_rule``, ``_ch`` (pointers
    (fact key, origin)) and ``rank``); None when there is none."""
    comp = task.component
    con = connect(threads=comp.threads)
    try:
        store, _ = fixpoint(con, comp, seeds, inputs)
        if task.by_component:
            from selp.topk.component_static import static_dtable

            got = static_dtable(task, con, store, seeds, inputs, partition)
            if not isinstance(got, str):
                return got
            # else the static path refused this partition's data: the whole hypergraph below
        members = sorted(comp.members)
        # every lower relation the recursive rules read gets an id table, also one that came
        # with no entries (an empty broadcast input is not shipped): the rules' joins name it
        read = {a.relation for r in comp.recursive_rules for a in r.body if isinstance(a, Atom)}
        others = sorted((set(inputs) | read) - set(comp.members))
        rels = members + others  # members first: their ids are 0..M-1
        offsets, n_facts = id_tables(con, rels)
        n_members = sum(offsets[r][1] for r in members)
        # leaves standing for given entries: inputs' entries, then seeds' (their rows in order)
        leaf_tables = [(r, t) for r in others if (t := inputs.get(r)) is not None and t.num_rows]
        seed_tables = [(r, seeds[r]) for r in members if r in seeds and seeds[r] is not None and seeds[r].num_rows]
        heads = []
        for n, (rel, tbl) in enumerate(leaf_tables + seed_tables):
            heads.append(entry_fact_ids(con, store, rel, tbl, f"_e{n}"))
        all_tables = [t for _, t in leaf_tables + seed_tables]
        n_leaves = sum(t.num_rows for t in all_tables)
        first_seed = n_facts + sum(t.num_rows for _, t in leaf_tables)

        leaf, leaf_w, leaf_size, leaf_origin = leaf_arrays(n_facts, all_tables)
        F = len(leaf)
        # rule 0: the copy step from a leaf to the fact whose entry it stands for
        names = [r.name for r in comp.recursive_rules]
        inst_heads = [np.concatenate(heads) if heads else np.zeros(0, np.int64)]
        inst_rules = [np.zeros(n_leaves, np.int32)]
        kids = [np.arange(n_facts, F, dtype=np.int64)]
        counts = [np.ones(n_leaves, np.int64)]
        for idx, rule in enumerate(comp.recursive_rules, 1):
            body = compile_body(rule, store.kinds, lambda i, r: ident(f"i:{r}"))
            pos = [j for j, b in enumerate(rule.body) if isinstance(b, Atom) and not b.negated]
            extra = [f"{body.alias[j]}.id AS k{n}" for n, j in enumerate(pos)]
            head_cols = columns(len(store.kinds[rule.head.relation]))
            on = " AND ".join(f"h.{c} = b.{c}" for c in head_cols) or "TRUE"
            got = con.execute(
                f"SELECT h.id AS head{''.join(f', b.k{n}' for n in range(len(pos)))}"
                f" FROM ({body.select(distinct=False, extra=extra)}) AS b JOIN {ident(f'i:{rule.head.relation}')} AS h ON {on}"
            ).fetchnumpy()
            h = np.asarray(got["head"], dtype=np.int64)
            inst_heads.append(h)
            inst_rules.append(np.full(len(h), idx, np.int32))
            if pos:
                kids.append(np.stack([np.asarray(got[f"k{n}"], dtype=np.int64) for n in range(len(pos))], axis=1).reshape(-1))
            counts.append(np.full(len(h), len(pos), np.int64))
        inst_head = np.concatenate(inst_heads)
        child_ptr = np.zeros(len(inst_head) + 1, np.int64)
        np.cumsum(np.concatenate(counts), out=child_ptr[1:])
        graph = Hypergraph(
            leaf, leaf_w, leaf_origin, np.concatenate(inst_rules), inst_head, child_ptr, np.concatenate(kids),
            np.array([task.one] + [task.rule_weight[r] for r in names], np.float64),
            np.array([0] + [task.rule_size[r] for r in names], np.int64),
            np.array([0] + [task.rule_hash[r] for r in names], np.int64),
            np.array([True] + [task.rule_size[r] == 0 for r in names], np.bool_),
            leaf_size=leaf_size, origin_mode=1,
        )
        res = run_kernel(graph, task.combine, task.sign, task.k)
        args = fact_args(con, store, members, offsets)  # members' ids are 0..M-1
    finally:
        close(con)
    # every fact's key: the members' made here, an input fact's from its entries (the leaves)
    fact_f = np.zeros(n_facts, np.int64)
    fact_f[:n_members] = fact_keys(task.salt, partition, n_members)
    if leaf_tables:
        fact_f[np.concatenate(heads[:len(leaf_tables)])] = np.concatenate(
            [t.column("_f").to_numpy(zero_copy_only=False).astype(np.int64) for _, t in leaf_tables])
    return _packed(task, res, graph, members, offsets, args, n_members, n_leaves, first_seed,
                   [t for _, t in seed_tables], fact_f)


def _packed(task: DTableTask, res: Any, g: Hypergraph, members: list[str], offsets: Mapping[str, tuple[int, int]],
            args: Any, n_members: int, n_copies: int, first_seed: int, seed_tables: list[Any],
            fact_f: np.ndarray) -> Packed | None:
    """The member facts and their entries, packed (:func:`selp.topk.packed.pack`), as
    :func:`partition_dtable` returns them: narrow columns, no Python per entry. The leaf table
    holds the lower facts' entries (the kernel's, after the members') and then the seeds; the
    origins travel (this path's kernel computed them anyway)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    fp = res.fact_ptr
    n = int(fp[n_members])
    if not n:
        return None
    n_facts = len(g.leaf) - n_copies  # the facts: members, then lower facts; the copy steps' leaves after them
    fact_rel = np.zeros(n_members, np.int32)
    for i, rel in enumerate(members):
        first, m = offsets[rel]
        fact_rel[first:first + m] = i
    facts = pa.table({"relation": pa.DictionaryArray.from_arrays(pa.array(fact_rel), pa.array(members, pa.string())),
                      "args": args})
    owner = np.repeat(np.arange(n_members, dtype=np.int32), np.diff(fp[:n_members + 1]))
    # the kernel lists a fact's entries best first: the rank is the position in the list
    rank = np.arange(n, dtype=np.int64) - fp[owner] + 1
    inst = res.inst[:n]
    # one dictionary of rule names: the recursive rules' and the seeds' (exit rules)
    names = [r.name for r in task.component.recursive_rules]
    seeds = pa.concat_tables([t.select(["_rule", "_o", "_ch"]) for t in seed_tables]) if seed_tables else None
    seed_rule = seeds.column("_rule").combine_chunks().cast(pa.string()) if seeds is not None else pa.array([], pa.string())
    dictionary = pa.array(sorted(set(names) | {x for x in pc.unique(seed_rule).to_pylist() if x is not None}), pa.string())
    code_of = pc.index_in(pa.array([""] + names, pa.string()), value_set=dictionary).fill_null(0).to_numpy(zero_copy_only=False)
    rule_code = code_of[g.inst_rule[inst]]
    rule_null = np.zeros(n, np.bool_)
    lower0 = int(fp[n_members])  # the lower facts' entries are the leaf table's first rows
    n_lower = int(fp[n_facts]) - lower0
    off, slot_c, slot_r = _slots(res, g, inst, n, n_members, n_facts, lower0, n_lower, first_seed, task.k)
    e = np.flatnonzero(inst < n_copies)  # a seed entry copied to its fact (members have no other copy step)
    if len(e):
        rows = pa.array(slot_c[off[e]].astype(np.int64) - n_lower)  # its one slot: the seed's leaf row
        codes = pc.index_in(seed_rule.take(rows), value_set=dictionary)
        rule_null[e] = codes.is_null().to_numpy(zero_copy_only=False)
        rule_code[e] = codes.fill_null(0).to_numpy(zero_copy_only=False)
    lower_owner = np.repeat(np.arange(n_members, n_facts, dtype=np.int64), np.diff(fp[n_members:n_facts + 1]))
    leaves = leaf_table(fact_f[lower_owner], res.origin[lower0:lower0 + n_lower], seeds.select(["_o", "_ch"]) if seeds is not None else None,
                        np.concatenate([res.w[lower0:lower0 + n_lower], g.leaf_w[first_seed:]]),
                        np.concatenate([res.size[lower0:lower0 + n_lower], g.leaf_size[first_seed:]]))
    # weights and sizes are recomputed when unpacked (they were half a blob's bytes) where the
    # compiled kernel is there to do it; origins travel (this path's kernel computed them anyway)
    recompute = compiled_available()
    return pack(facts, leaves, owner, None if recompute else res.w[:n], None if recompute else res.size[:n], rank,
                rule_code, rule_null, dictionary, off, slot_c, slot_r, origin=res.origin[:n])


def _slots(res: Any, g: Hypergraph, inst: np.ndarray, n: int, n_members: int, n_facts: int, lower0: int,
           n_lower: int, first_seed: int, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Entries 0..n-1's child slots as :func:`~selp.topk.packed.pack` takes them: where each
    entry's slots start (E + 1), and per slot ``c`` and ``r`` (a member fact and the rank of its
    entry, or a leaf table row and 0), in body order -- by the kernel (``selp_pack_slots``: one
    pass, no temporaries) when it is built and the values fit its narrow types, else numpy."""
    from selp.topk.kernel import address, library

    lib = library()
    total = int(res.child_rank_ptr[n])
    if lib is not None and k <= 255 and max(total, n_lower + len(g.leaf)) < 2**31:
        off, slot_c, slot_r = np.empty(n + 1, np.int32), np.empty(total, np.int32), np.empty(total, np.uint8)
        arrays = [np.ascontiguousarray(a, np.int64) for a in (inst, g.child_ptr, g.child_fact, res.child_rank_ptr)]
        cr = np.ascontiguousarray(res.child_rank, np.int32)
        fp = np.ascontiguousarray(res.fact_ptr, np.int64)
        lib.selp_pack_slots(n, *(address(a) for a in arrays), address(cr), address(fp), n_members, n_facts, lower0,
                            n_lower, first_seed, address(off), address(slot_c), address(slot_r))
        return off, slot_c, slot_r
    fp = res.fact_ptr
    m = np.diff(g.child_ptr)[inst]
    off = np.zeros(n + 1, np.int64)
    np.cumsum(m, out=off[1:])
    within = np.arange(int(off[-1])) - np.repeat(off[:-1], m)
    child = g.child_fact[np.repeat(g.child_ptr[inst], m) + within].astype(np.int64)
    crank = res.child_rank[np.repeat(res.child_rank_ptr[:n], m) + within].astype(np.int64)
    member = child < n_members
    slot_c = np.where(member, child, np.where(child < n_facts, fp[np.minimum(child, n_facts)] + crank - 1 - lower0,
                                              n_lower + child - first_seed))
    return off, slot_c, np.where(member, crank, 0)
