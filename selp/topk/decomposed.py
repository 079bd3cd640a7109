"""Top-k component by component when P_p's recursion is statically decomposable.

The compiled kernel runs its loops one component of the instance graph at a time
(:mod:`selp.topk.kernel`), but finding the components needs every instance first: the global
path joins all of them (2.6M on the anchors graph), then splits them by union-find and sorts
them. When the recursion is decomposable on a key position -- the analysis the Spark engine
uses (:mod:`selp.engines.decompose`: right-recursive transitive closure passes ``z``, so one
component is ``path(*, z)``) -- the components are known before the join. Here the component
relation's facts are grouped by their key once, and the C kernel (``selp_static``) forms each
group's instances (the other body atoms joined with each of the group's facts, the head found
in a hash table of the group's facts), ranks them with the same per-component loop, appends the
group's entries to the result and reuses its buffers: no global instance array, union-find or
sort. The instances of a group are formed in exactly the order in which the global path ranks
them, so every entry -- weight, size, origin, rule, children, ranks -- is the global path's
(``tests/topk/test_decomposed.py``).

Where it applies (:func:`static_plan`, else the global path runs and the stats line says why
not): every derived relation of P_p other than filter relations (demand, witness copies) is one
relation R, recursive, decomposable (``decompose``; or by value components, a symmetry rule,
then grouped by :func:`value_classes` instead of a key), not also loaded as EDB; every rule of R is
one the kernel's join can form (:func:`selp.topk.joins.plan`); the monoid has a compiled form
and the C kernel is built. Every other fact is then a leaf, and every rule instance lies in one
group.

An entry's instance id in the result is the entry itself: the result carries each entry's rule
and children, so no instance is kept after its group (:class:`Static`). The kernel writes the
entries straight into its result buffers in the order it finds them (the leaves, then group
after group), and numpy wraps those buffers without a copy; ``KernelResult.row`` maps an input
fact id to its row.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from selp.engines.decompose import SingleRelation, single_relation
from selp.language.ast import Atom, Rule
from selp.topk.joins import Former, Plan, Prepared, plan
from selp.topk.kernel import Hypergraph, KernelResult, adopt, address as _ptr, interruptible as _interruptible, kernel_threads, library as _compiled


@dataclass
class StaticPlan:
    """The decomposable relation, its key position, and its rules' join plans (the recursive
    ones with their driver -- the recursive atom -- first), each with its kernel rule index."""

    relation: str
    position: int
    exit_rules: list[tuple[Plan, int]]
    recursive: list[tuple[Plan, int]]
    # "position": groups by the value at ``position``; "values": by value classes
    # (:func:`value_classes`, a decomposition by value components: a symmetry rule)
    kind: str = "position"


def static_plan(analysis: Any, kinds: dict[str, tuple[Any, ...]], is_filter: Any,
                rule_index: dict[str, int]) -> StaticPlan | str:
    """The static plan of P_p (``analysis``), or why there is none (a reason for the stats)."""
    single = single_relation(analysis, is_filter)  # the one analysis deciding the path
    if not isinstance(single, SingleRelation):
        return single.reason
    rel, d = single.relation, single.decomposition
    if len(kinds[rel]) > 16:
        return f"{rel} has more than 16 columns"
    exits, recursive = [], []
    for rule in d.exit_rules:
        p = plan(rule, kinds, is_filter)
        if p is None:
            return f"rule {rule.name} is not formed by the kernel's join"
        exits.append((p, rule_index[rule.name]))
    for rule in d.recursive_rules:
        first = _driver(rule, rel)
        p = plan(rule, kinds, is_filter, first)
        if p is None:
            return f"rule {rule.name} is not formed by the kernel's join"
        recursive.append((p, rule_index[rule.name]))
    # the kernel ranks a group's instances by their driver fact, then rule, so the rules keep
    # program order within each list
    order = {r.name: i for i, r in enumerate(analysis.program.rules)}
    exits.sort(key=lambda x: order[x[0].rule.name])
    recursive.sort(key=lambda x: order[x[0].rule.name])
    return StaticPlan(rel, d.position, exits, recursive, d.kind)


def _driver(rule: Rule, rel: str) -> int:
    """The body index of the one positive atom of ``rel`` (decompose checked it is linear)."""
    return next(i for i, b in enumerate(rule.body) if isinstance(b, Atom) and not b.negated and b.relation == rel)


def _group_order(key: np.ndarray) -> np.ndarray:
    """The stable order of ``key`` (codes): numpy sorts 16-bit keys by radix, in linear time
    (about 4x faster than its merge sort of int64 on 873k facts), so a key whose codes span
    fewer than 65,536 values is sorted as such."""
    if len(key) > 1:
        lo = int(key.min())
        if int(key.max()) - lo < 1 << 16:
            return np.argsort((key - lo).astype(np.uint16), kind="stable")
    return np.argsort(key, kind="stable")


def value_classes(former: Former, sp: StaticPlan) -> np.ndarray:
    """A group label per fact of ``sp.relation`` (in ``former.coded`` order) when its recursion
    decomposes by value components (:func:`selp.engines.decompose.decompose_values`): the class
    of its values, where the values of one fact -- of the relation, or of a relation a positive
    body atom of a recursive rule reads (filters too) -- are one class.

    Why every recursive instance then lies in its driver's group: the instance's body atoms are
    connected through shared variables (the decomposition's condition 1), so the values of the
    facts matching them are one class; the head's values are values of body variables
    (condition 2), so the head -- a fact of the relation -- is in the driver's class. An integer
    v is numbered 2v and a string's code c 2c + 1, so the two never meet (but for integers
    beyond +-2^62, whose doubling wraps: two classes merged, which only makes a group larger)."""
    rels = [sp.relation] + sorted({a[0] for p, _ in sp.recursive for a in p.atoms} - {sp.relation})
    cols: list[list[np.ndarray]] = []
    for rel in rels:
        if not former.kinds[rel]:
            continue  # a nullary fact has no value (the decomposition keeps it out of the rules)
        _, cs = former.coded(rel, "")
        # a string's code and an integer are different values: strings get odd numbers
        cols.append([c * 2 + 1 if k.sql == "VARCHAR" else c * 2 for c, k in zip(cs, former.kinds[rel])])
    flat = np.concatenate([c for cs in cols for c in cs])
    if not len(flat):
        return np.zeros(0, np.int64)
    lo, hi = int(flat.min()), int(flat.max())
    if hi - lo <= 4 * len(flat) + 1024:
        dense, V = flat - lo, hi - lo + 1  # a dense range (node numbers): no sort
    else:
        u, dense = np.unique(flat, return_inverse=True)
        V = len(u)
    dense = np.ascontiguousarray(dense, np.int64)
    # each fact links its first value with every other one
    a, b, at, firsts = [], [], 0, []
    for cs in cols:
        n = len(cs[0])
        firsts.append(dense[at:at + n])
        for i in range(1, len(cs)):
            a.append(dense[at:at + n])
            b.append(dense[at + i * n:at + (i + 1) * n])
        at += n * len(cs)
    root = np.empty(V, np.int64)
    pa = np.ascontiguousarray(np.concatenate(a)) if a else np.zeros(0, np.int64)
    pb = np.ascontiguousarray(np.concatenate(b)) if b else np.zeros(0, np.int64)
    _compiled().selp_value_classes(V, len(pa), _ptr(pa), _ptr(pb), _ptr(root))
    return root[firsts[0]]


# The result's narrow fields (kernel ABI 9: each a few bytes an entry of fresh memory less): a
# rule index and a child's rank are uint8, a tree's size int32 (a larger one makes the kernel
# give up, and the global path runs)
MAX_RULES = 256
MAX_K = 255
NOT_FORMED = "a rule's instances could not be formed component by component"


class _Slots:
    """Where each entry's child slots start (int64[E+1]), built on first use and kept: an entry's
    children are its rule's (``rule_m``: per kernel rule index its number of children), none for
    the leaves' rows (below ``leaves``). The kernel writes no such array (8 bytes an entry of
    fresh memory: ~49 MB at top-7 of the anchors graph), and only drawing a tree reads it."""

    def __init__(self, rule: np.ndarray, rule_m: np.ndarray, leaves: int) -> None:
        self.rule, self.rule_m, self.leaves = rule, rule_m, leaves
        self.ptr: np.ndarray | None = None

    def __call__(self) -> np.ndarray:
        if self.ptr is None:
            m = self.rule_m[self.rule]
            m[:self.leaves] = 0
            ptr = np.zeros(len(m) + 1, np.int64)
            np.cumsum(m, out=ptr[1:])
            self.ptr = ptr
        return self.ptr


class _Origins:
    """Each entry's origin (int64[E]), computed when first asked for and kept, by the kernel's
    own hashing (``selp_entry_origins``: an entry's rule hash over its children's origins,
    children first): the entries of one fact and those below them (a tree drawn), or all (the
    whole array read). The kernel writes none (8 bytes an entry of fresh memory, ~49 MB at top-7
    of the anchors graph); drawing or saving a tree reads them, the summary does not."""

    def __init__(self, lib: Any, fact_ptr: np.ndarray, nid: np.ndarray, leaf: np.ndarray, leaf_origin: np.ndarray,
                 rule: np.ndarray, slots: _Slots, kid: np.ndarray, rank: np.ndarray, rule_hash: np.ndarray,
                 rule_copy: np.ndarray, origin_mode: int = 0) -> None:
        self.lib, self.fact_ptr, self.nid, self.leaf, self.leaf_origin = lib, fact_ptr, nid, leaf, leaf_origin
        self.origin_mode = origin_mode  # as the kernel ranked (0: mix64, 1: Spark's xxhash64)
        self.rule, self.slots, self.kid, self.rank = rule, slots, kid, rank
        self.rule_hash = np.ascontiguousarray(rule_hash, dtype=np.int64)
        self.rule_copy = np.ascontiguousarray(rule_copy, dtype=np.bool_).view(np.uint8)
        self.out: np.ndarray | None = None  # every entry's slot (written where done)
        self.done: np.ndarray | None = None
        self.stack: np.ndarray | None = None  # the walks' stack, kept between calls
        self.all = False

    def some(self, lo: int, hi: int) -> np.ndarray:
        """The origins of entries lo..hi-1 (those below them computed too, and kept)."""
        if self.all and self.out is not None:
            return self.out[lo:hi]
        n = len(self.rule)
        if self.out is None or self.done is None:
            L = self.slots.leaves
            # untouched pages cost nothing: a walk writes only as deep as it goes
            self.out, self.done, self.stack = np.empty(n, np.int64), np.zeros(n, np.uint8), np.empty(n + 1, np.int64)
            leaves = np.flatnonzero(self.leaf)
            self.out[self.nid[leaves]] = self.leaf_origin[leaves]  # rows 0..L-1
            self.done[:L] = 1
        if hi > lo and not self.done[lo:hi].all():
            assert self.stack is not None
            self.lib.selp_entry_origins(n, lo, hi, _ptr(self.fact_ptr), _ptr(self.nid), _ptr(self.rule),
                                        _ptr(self.slots()), _ptr(self.kid), _ptr(self.rank), _ptr(self.rule_hash),
                                        _ptr(self.rule_copy), self.origin_mode, _ptr(self.out), _ptr(self.done), _ptr(self.stack))
        return self.out[lo:hi]

    def __call__(self) -> np.ndarray:
        if not self.all:
            self.some(0, len(self.rule))
            self.all, self.done, self.stack = True, None, None
        assert self.out is not None
        return self.out


class _Lazy:
    """An attribute computed on first read by calling the instance's ``source`` attribute
    (:class:`_Slots`, :class:`_Origins`, which keep what they computed), unless a value was set:
    the kernel result's and hypergraph's constructors set None where the static path writes no
    array."""

    def __init__(self, source: str) -> None:
        self.source = source

    def __set_name__(self, owner: type, name: str) -> None:
        self.key = f"_{name}"

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        if obj is None:
            return self
        got = obj.__dict__.get(self.key)
        return getattr(obj, self.source)() if got is None else got

    def __set__(self, obj: Any, value: np.ndarray | None) -> None:
        obj.__dict__[self.key] = value


class StaticResult(KernelResult):
    """The static path's :class:`~selp.topk.kernel.KernelResult`: ``child_rank_ptr`` built
    (:class:`_Slots`) and ``origin`` computed (:class:`_Origins`) on first use; ``size`` is
    int32 and ``child_rank`` uint8 (see MAX_K)."""

    slots: _Slots
    origins_of: _Origins
    origin = _Lazy("origins_of")  # type: ignore[assignment]
    child_rank_ptr = _Lazy("slots")  # type: ignore[assignment]

    def origins(self, lo: int, hi: int) -> np.ndarray:
        """The origins of entries ``lo..hi-1``, computing only those and the entries below them."""
        if self.__dict__.get("_origin") is not None:
            return self.__dict__["_origin"][lo:hi]
        return self.origins_of.some(lo, hi)


class StaticGraph(Hypergraph):
    """The static path's hypergraph, whose instance ``e`` is entry ``e``: its ``child_ptr`` is
    the result's ``child_rank_ptr``, built on first use (:class:`_Slots`)."""

    slots: _Slots
    child_ptr = _Lazy("slots")  # type: ignore[assignment]


@dataclass
class Static:
    """What a static run gives the DTable: the kernel's result (in its own row order, ``row``
    mapping input ids), and a hypergraph whose instance ``e`` is entry ``e``'s own (its rule and
    children), which is all the DTable reads; its ``inst_head`` is left empty (a head is the
    entry's row, which no reader needs)."""

    result: KernelResult
    graph: Hypergraph
    groups: int
    bound: int  # top-k: the most derivation trees of any fact, capped at k (-1: infinitely many)


def run_static(sp: StaticPlan, former: Former, exit_instances: Callable[[Rule], tuple[np.ndarray, np.ndarray]],
               offsets: dict[str, tuple[int, int]], leaf: np.ndarray,
               leaf_w: np.ndarray, leaf_origin: np.ndarray, rules: tuple[np.ndarray, ...], combine: int,
               sign: float, k: int, threads: int | None = None, leaf_size: np.ndarray | None = None,
               origin_mode: int = 0, given: tuple[int, np.ndarray, np.ndarray] | None = None) -> Static | str:
    """Top-k of every fact by ``sp``; ``offsets``: each relation's first fact id and count;
    ``rules``: (weight, size, hash, copy) per kernel rule index; ``exit_instances(rule)``: an
    exit rule's (heads, children row-major) as input fact ids; ``threads``: how many components
    are ranked at once (None: :func:`~selp.topk.kernel.kernel_threads`; the result is the same
    for any number). ``leaf_size`` (None: 0) and ``origin_mode`` as :class:`Hypergraph` has
    them; ``given``: (kernel rule index, heads, children) of one-child instances made by the
    caller, ranked before the exit rules' (a Spark partition's seed entries, each a leaf copied
    to its fact: :mod:`selp.topk.component`). Why not (a reason for the stats) when a rule's
    instances cannot be formed here after all (a head constant without a code, an exit rule's
    head missing) or a value does not fit the result's narrow fields (:data:`MAX_RULES`,
    :data:`MAX_K`, a tree size above 2^31 - 1): the caller then takes the global path. Raises
    MemoryError."""
    if len(rules[0]) > MAX_RULES:
        return f"more than {MAX_RULES} rules"
    if k > MAX_K:
        return f"k > {MAX_K}"
    lib = _compiled()
    F = len(leaf)
    first, n = offsets[sp.relation]
    L = F - n
    if int(leaf.sum()) != L or leaf[first:first + n].any():
        return NOT_FORMED  # some other fact is not a leaf: not the shape this path handles
    ids, cols = former.coded(sp.relation, "")
    key = cols[sp.position] if sp.kind == "position" else value_classes(former, sp)
    if len(ids) > 1 and not np.all(ids[1:] > ids[:-1]):
        by_id = np.argsort(ids, kind="stable")
        ids, key = ids[by_id], key[by_id]
        cols = [c[by_id] for c in cols]
    order = _group_order(key)  # by key, then input id (ids ascend)
    nid = np.empty(F, np.int64)
    nid[np.flatnonzero(leaf)] = np.arange(L, dtype=np.int64)
    nid[ids[order]] = L + np.arange(n, dtype=np.int64)
    gcols = [np.ascontiguousarray(c[order]) for c in cols]
    ks = key[order]  # the group labels in group order
    gptr = np.concatenate(([0], np.flatnonzero(ks[1:] != ks[:-1]) + 1, [n])).astype(np.int64) if n else np.zeros(1, np.int64)
    ng = len(gptr) - 1
    # the exit rules' instances, formed by the kernel's join (their children are leaves),
    # grouped by their head's group, each group's in input order
    e_rule, e_head, e_m, e_kids = [], [], [], []
    if given is not None:
        r, h, kids = given
        e_rule.append(np.full(len(h), r, np.int32))
        e_head.append(nid[h])
        e_m.append(np.ones(len(h), np.int64))
        e_kids.append(nid[kids])
    for p, r in sp.exit_rules:
        h, kids = exit_instances(p.rule)
        m = sum(1 for a in p.atoms if a[5])
        e_rule.append(np.full(len(h), r, np.int32))
        e_head.append(nid[h])
        e_m.append(np.full(len(h), m, np.int64))
        e_kids.append(nid[kids] if m else np.zeros(0, np.int64))
    ehead = np.concatenate(e_head) if e_head else np.zeros(0, np.int64)
    erule = np.concatenate(e_rule) if e_rule else np.zeros(0, np.int32)
    em = np.concatenate(e_m) if e_m else np.zeros(0, np.int64)
    ekids = np.concatenate(e_kids) if e_kids else np.zeros(0, np.int64)
    ecptr = np.zeros(len(ehead) + 1, np.int64)
    np.cumsum(em, out=ecptr[1:])
    egroup = np.searchsorted(gptr, ehead - L, side="right") - 1
    eo = np.argsort(egroup, kind="stable")
    counts = em[eo]
    new_ptr = np.zeros(len(eo) + 1, np.int64)
    np.cumsum(counts, out=new_ptr[1:])
    gather = np.repeat(ecptr[:-1][eo] - new_ptr[:-1], counts) + np.arange(int(new_ptr[-1]))
    ekids, ecptr = np.ascontiguousarray(ekids[gather]), new_ptr
    ehead, erule = np.ascontiguousarray(ehead[eo]), np.ascontiguousarray(erule[eo])
    eptr = np.searchsorted(egroup[eo], np.arange(ng + 1)).astype(np.int64)
    joins: list[Prepared] = []
    masks: list[np.ndarray | None] = []
    try:
        for p, r in sp.recursive:
            j = former.prepare(p, gcols, nid, r)
            if j is None:
                return NOT_FORMED
            joins.append(j)
            where = p.atoms[0][1]
            if where:  # the driver's constants and repeated variables
                mids, _ = former.coded(sp.relation, where)
                mask = np.zeros(n, np.uint8)
                mask[nid[mids] - L] = 1
                masks.append(mask)
            else:
                masks.append(None)
        # per kernel rule index its number of children (every instance of a rule has its rule's)
        rule_m = np.zeros(len(rules[0]), np.int64)
        for p, r in sp.exit_rules + sp.recursive:
            rule_m[r] = sum(1 for c in p.child_pos if c >= 0)
        if given is not None:
            rule_m[given[0]] = 1  # the caller's one-child instances (their rule is no exit rule of sp)
        M = max([int(x) for x in rule_m] + [1])
        P = ctypes.c_void_p
        pcols = (P * max(len(gcols), 1))(*[_ptr(c) for c in gcols])
        pjoins = (P * max(len(joins), 1))(*[j.handle for j in joins])
        pmasks = (P * max(len(masks), 1))(*[None if m is None else _ptr(m) for m in masks])
        err = np.zeros(1, np.int32)
        nthreads = kernel_threads() if threads is None else max(1, int(threads))
        lu8 = leaf.view(np.uint8)
        rw, rsize, rhash, rcopy = rules
        rcopy8 = rcopy.view(np.uint8)
        lsize = None if leaf_size is None else np.ascontiguousarray(leaf_size, dtype=np.int64)
        run = _interruptible(lambda: lib.selp_static(
            F, L, _ptr(nid), _ptr(lu8), _ptr(leaf_w), _ptr(leaf_origin), None if lsize is None else _ptr(lsize), ng, _ptr(gptr), len(gcols), pcols,
            _ptr(eptr), _ptr(erule), _ptr(ehead), _ptr(ecptr), _ptr(ekids), len(joins), pjoins, pmasks, M,
            _ptr(rw), _ptr(rsize), _ptr(rhash), _ptr(rcopy8), combine, sign, origin_mode, k, nthreads, _ptr(err)), lib)
        if not run:
            if int(err[0]) == 2:
                return NOT_FORMED  # a head the join formed is not a fact of its group
            if int(err[0]) == 3:
                return "a derivation tree's size is 2^31 or more"
            raise MemoryError("the top-k kernel could not allocate its tables")
        # the run's result buffers become the arrays (no copy into input order: ``row`` maps)
        ne, nr = lib.selp_n_entries(run), lib.selp_n_ranks(run)
        bound = int(lib.selp_static_bound(run)) if k > 1 else -1
        ptrs = (ctypes.c_void_p * 9)()
        lib.selp_static_arrays(run, ptrs)
        fp, w, size, rule, cr, kid = adopt(lib, run, [
            (ptrs[0], F + 1, np.int64), (ptrs[1], ne, np.float64), (ptrs[2], ne, np.int32),
            (ptrs[6], ne, np.uint8), (ptrs[7], nr, np.uint8), (ptrs[8], nr, np.int32)])
    finally:
        for j in joins:
            j.close()
    # no inst array: entry e is its own instance, the leaves' entries are rows 0..L-1; no child
    # slot pointers and no origins: built from the entries' rules and children when first read
    slots = _Slots(rule, rule_m, L)
    res = StaticResult(fp, w, size, None, None, None, cr, row=nid, own_leaves=L)
    res.slots = slots
    res.origins_of = _Origins(lib, fp, nid, leaf, leaf_origin, rule, slots, kid, cr, rhash, rcopy, origin_mode)
    # the graph's instance e is entry e (its head: the row's input fact, read by no one here);
    # its child_fact is int32 (4 bytes a child slot less of fresh memory; F < STATIC_MAX_FACTS)
    graph = StaticGraph(leaf, leaf_w, leaf_origin, rule, np.zeros(0, np.int64), None, kid, rw, rsize, rhash, rcopy,
                        leaf_size=leaf_size, origin_mode=origin_mode)
    graph.slots = slots
    return Static(res, graph, ng, bound)
