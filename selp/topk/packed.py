"""The packed form of one partition's DTable: what a partition-local Spark task gives back, and
how it is unpacked into the Spark DTable's rows when (and only when) someone reads them.

A partition's DTable (:func:`selp.topk.component.partition_dtable`) is three Arrow tables:

* **facts**, once each: ``relation`` and ``args`` (the uniform string encoding) of member fact
  ``i`` at row ``i``. A fact's key ``_f`` is not stored: it is :func:`fact_keys` of the
  partition's number and ``i``, so it costs nothing to carry;
* **leaves**, once each: the entries computed elsewhere that the partition's entries point at
  -- lower relations' entries (``_f``, ``_o``) and the seed entries (``_o`` and their own child
  pointers ``_ch``, ``_seed`` true), which a member fact's entry copies;
* **entries**, narrow integer columns only, each fact's entries together and best first:
  ``_i`` (the fact's number), ``_rule`` (a dictionary code), ``rank``, and ``_c``, the children
  as *slots* ``(c, r)``: ``r >= 1`` is the entry of rank ``r`` of member fact ``c`` of the same
  partition, ``r == 0`` leaf ``c``. ``_o`` (the entry's origin) and ``_w``/``_s`` (its weight
  and tree size) are optional: without them, unpacking recomputes them with the kernel's own
  arithmetic (``selp_entry_values``: the rule's hash over the children's origins, the rule's
  weight combined with theirs in body order, its size plus theirs; children first, from the
  leaves' ``_o``, ``_w`` and ``_s``) -- the same function over the same inputs as when the
  kernel ranked, so the same bits (:class:`Steps` carries the rules' values). The weights were
  half of a compressed blob: random doubles hardly compress.

Against the rows they stand for (children as (fact key, origin) pairs of 16 bytes, 64-bit
sizes, ranks and rule codes, an origin each), that is ~20 instead of ~72 bytes an entry of
transitive closure, and the task never computes an origin. Everything that grows with the
entries crosses the Python/JVM boundary, is copied by Spark and kept by the cut at that width.

They cross into Spark as a few rows of **blobs** (:func:`blobs`): one Arrow IPC stream per
chunk of facts, leaves or entries, in a binary column, its buffers compressed (zstd by default,
:data:`CODECS`). Spark copies a blob as bytes; it never builds a row per entry. What a blob costs
is its bytes: the JVM copies them twice and keeps them, and at top-7 that was a fifth of the
partition-local job (~0.01 s a byte an entry, 1,000-node closure); zstd at Arrow's default level
halves them (2,099 -> 935 MB over the same passes) for less worker CPU than the copies it saves,
lz4 takes off a third. Readers need nothing: an IPC stream names its codec. Unpacking
(:class:`Unpack`, run by ``mapInArrow`` over the blobs) rebuilds exactly the rows the partition stands for: ``_f``, ``_g``, ``relation``, ``args``,
``_w``, ``_s``, ``_o``, ``_rule``, ``_ch``, ``rank``, vectorised (takes, a key mix and one
kernel call per partition, no Python per entry).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator, Mapping, Sequence

import numpy as np
import pyarrow as pa

# rows of one blob: an entries chunk of 64k rows is a few MB
CHUNK = 65_536
FACTS, ENTRIES, LEAVES = 0, 1, 2  # a blob's ``_kind``
CODECS = ("zstd", "lz4", "none")  # a blob's compression (``spark.selp.partitionLocal.blobCodec``)
DEFAULT_CODEC = "zstd"
PTR_ARROW = pa.list_(pa.struct([("f", pa.int64()), ("o", pa.int64())]))

_GAMMA, _M1, _M2 = np.uint64(0x9E3779B97F4A7C15), np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB)


def mix_keys(salt: int, partition: int, index: np.ndarray) -> np.ndarray:
    """The ``_f`` keys of facts ``index`` of a partition: SplitMix64's output -- a bijection of
    64-bit words -- for ``salt ^ (partition << 40 | i)``, so distinct (partition, fact) pairs
    get distinct keys, which look as random as the fact hashes of the rest of the DTable."""
    x = (np.uint64(partition) << np.uint64(40)) | np.asarray(index).astype(np.uint64)
    x ^= np.uint64(salt & 0xFFFFFFFFFFFFFFFF)
    with np.errstate(over="ignore"):
        x += _GAMMA  # SplitMix64's step: the finaliser alone maps 0 to 0
        x = (x ^ (x >> np.uint64(30))) * _M1
        x = (x ^ (x >> np.uint64(27))) * _M2
    return (x ^ (x >> np.uint64(31))).view(np.int64)


def fact_keys(salt: int, partition: int, n: int) -> np.ndarray:
    """The ``_f`` keys of facts 0..n-1 of a partition (:func:`mix_keys`)."""
    return mix_keys(salt, partition, np.arange(n, dtype=np.uint64))


@dataclass(frozen=True)
class Packed:
    """One partition's DTable, packed (see the module docstring)."""

    facts: pa.Table  # relation, args: member fact i at row i
    entries: pa.Table  # _i, _w, _s, _rule (dictionary), rank, _c (slots), optionally _o
    leaves: pa.Table  # _f, _o, _seed, _ch

    def rows(self, salt: int, partition: int, rules: "Steps") -> pa.Table:
        """Every entry as the Spark DTable's row (:func:`unpack`)."""
        return pa.Table.from_batches(list(unpack(self, salt, partition, rules)), schema=_ROWS)


# the rows a packed partition stands for (the Spark DTable's, ``_w`` as float64)
_ROWS = pa.schema([("_f", pa.int64()), ("_g", pa.int32()), ("relation", pa.string()), ("args", pa.list_(pa.string())),
                   ("_w", pa.float64()), ("_s", pa.int64()), ("_o", pa.int64()), ("_rule", pa.string()), ("_ch", PTR_ARROW),
                   ("rank", pa.int32())])
LEAF_SCHEMA = pa.schema([("_f", pa.int64()), ("_o", pa.int64()), ("_w", pa.float64()), ("_s", pa.int64()),
                         ("_seed", pa.bool_()), ("_ch", PTR_ARROW)])


def leaf_table(f: np.ndarray, o: np.ndarray, seeds: Any | None, w: np.ndarray, s: np.ndarray) -> pa.Table:
    """The leaves: lower entries (fact keys ``f``, origins ``o``) first, then the rows of
    ``seeds`` (an Arrow table with ``_o`` and ``_ch``, or None); ``w`` and ``s``: every leaf's
    weight and tree size as the kernel read them (lower entries', then seeds'), from which
    unpacking recomputes the entries' own."""
    n = 0 if seeds is None else seeds.num_rows
    m = len(f)
    if len(w) != m + n or len(s) != m + n:
        raise ValueError(f"leaf weights and sizes: {len(w)}, {len(s)} for {m + n} leaves")
    lower = pa.table({"_f": pa.array(np.asarray(f, np.int64)), "_o": pa.array(np.asarray(o, np.int64)),
                      "_w": pa.array(np.asarray(w[:m], np.float64)), "_s": pa.array(np.asarray(s[:m], np.int64)),
                      "_seed": pa.array(np.zeros(m, np.bool_)), "_ch": pa.nulls(m, PTR_ARROW)}, schema=LEAF_SCHEMA)
    if not n:
        return lower
    seed = pa.table({"_f": pa.array(np.zeros(n, np.int64)), "_o": seeds.column("_o").cast(pa.int64()),
                     "_w": pa.array(np.asarray(w[m:], np.float64)), "_s": pa.array(np.asarray(s[m:], np.int64)),
                     "_seed": pa.array(np.ones(n, np.bool_)), "_ch": seeds.column("_ch").cast(PTR_ARROW)}, schema=LEAF_SCHEMA)
    return pa.concat_tables([lower, seed]).combine_chunks()


def pack(facts: pa.Table, leaves: pa.Table, owner: np.ndarray, w: np.ndarray | None, size: np.ndarray | None,
         rank: np.ndarray, rule_code: np.ndarray, rule_null: np.ndarray, dictionary: Any, slot_ptr: np.ndarray,
         slot_c: np.ndarray, slot_r: np.ndarray, origin: np.ndarray | None = None) -> Packed:
    """The entries' columns, narrowed (see the module docstring). Each fact's entries must be
    together and best first (rank 1, 2, ..): unpacking finds a child's entry by its fact's
    first entry and its rank. ``slot_ptr`` (E + 1): each entry's slots in ``slot_c``/``slot_r``;
    ``origin`` (None: recomputed when unpacked); ``w`` and ``size`` both None: recomputed when
    unpacked as well (the compiled kernel is then needed there)."""
    if (w is None) != (size is None):
        raise ValueError("pack: weights and sizes are shipped together or recomputed together")
    k = int(rank.max()) if len(rank) else 1
    rk = pa.uint8() if k <= 255 else pa.int32()
    codes = pa.int8() if len(dictionary) < 128 else pa.int32()
    slots = pa.StructArray.from_arrays([pa.array(np.asarray(slot_c, np.int32)), pa.array(slot_r, rk)], names=["c", "r"])
    cols = {"_i": pa.array(np.asarray(owner, np.int32))}
    if w is not None and size is not None:
        sz = pa.int32() if not len(size) or int(size.max()) < 2**31 else pa.int64()
        cols |= {"_w": pa.array(np.asarray(w, np.float64)), "_s": pa.array(size, sz)}
    cols |= {
        "_rule": pa.DictionaryArray.from_arrays(pa.array(rule_code, codes, mask=rule_null), dictionary),
        "rank": pa.array(rank, rk),
        "_c": pa.ListArray.from_arrays(pa.array(np.asarray(slot_ptr, np.int32)), slots),
    }
    if origin is not None:
        cols["_o"] = pa.array(np.asarray(origin, np.int64))
    return Packed(facts, pa.table(cols), leaves)


def blob_schema(n_members: int) -> Any:
    """The Spark schema of the blob rows of a component with ``n_members`` relations:
    ``_g`` (partition), ``_kind``, ``_first`` (the chunk's first row), ``_data`` (an Arrow IPC
    stream) and ``n0..`` (entries per member relation in the chunk, for the counts)."""
    from pyspark.sql.types import BinaryType, ByteType, IntegerType, LongType, StructField, StructType

    return StructType([
        StructField("_g", IntegerType()), StructField("_kind", ByteType()), StructField("_first", LongType()),
        StructField("_data", BinaryType()),
    ] + [StructField(f"n{i}", LongType()) for i in range(n_members)])


def blobs(packed: Packed, partition: int, members: Sequence[str], codec: str = DEFAULT_CODEC) -> Iterator[pa.RecordBatch]:
    """The blob rows (:func:`blob_schema`) of a partition's packed DTable, each stream's buffers
    compressed with ``codec`` (one of :data:`CODECS`)."""
    import pyarrow.compute as pc

    m = len(members)
    rel_names = packed.facts.column("relation").combine_chunks()
    if isinstance(rel_names, pa.DictionaryArray):
        rel_names = rel_names.dictionary_decode()
    member_codes = pa.array(list(members), pa.string())
    schema = pa.schema([("_g", pa.int32()), ("_kind", pa.int8()), ("_first", pa.int64()), ("_data", pa.binary())]
                       + [(f"n{i}", pa.int64()) for i in range(m)])
    code = pc.index_in(rel_names, value_set=member_codes).to_numpy(zero_copy_only=False)
    # one thread: the task already has its core, and a few MB a stream gain nothing from more
    options = pa.ipc.IpcWriteOptions(compression=None if codec == "none" else codec, use_threads=False)
    pieces: list[tuple[int, int, pa.Table, list[int]]] = []
    for kind, tbl in ((FACTS, packed.facts), (LEAVES, packed.leaves)):
        for first in range(0, max(tbl.num_rows, 1 if kind == LEAVES else 0), CHUNK):
            pieces.append((kind, first, tbl.slice(first, CHUNK), [0] * m))
    for first in range(0, packed.entries.num_rows, CHUNK):
        part = packed.entries.slice(first, CHUNK)
        per = np.bincount(code[part.column("_i").to_numpy()], minlength=m)
        pieces.append((ENTRIES, first, part, [int(x) for x in per]))
    # a few rows per partition (a chunk is 64k entries): building them in Python is no hot path.
    # A batch's streams are written one after the other into one buffer, which becomes the
    # binary column's data as it is (no copy into Python bytes and back)
    for i in range(0, len(pieces), 16):
        got = pieces[i:i + 16]
        sink = pa.BufferOutputStream()
        ends = [0]
        for _, _, tbl, _ in got:
            with pa.ipc.new_stream(sink, tbl.schema, options=options) as wr:
                wr.write_table(tbl)
            ends.append(sink.tell())
        data = pa.Array.from_buffers(pa.binary(), len(got), [None, pa.py_buffer(np.array(ends, np.int32)), sink.getvalue()])
        yield pa.record_batch([
            pa.array([partition] * len(got), pa.int32()), pa.array([r[0] for r in got], pa.int8()),
            pa.array([r[1] for r in got], pa.int64()), data,
        ] + [pa.array([r[3][j] for r in got], pa.int64()) for j in range(m)], schema=schema)


def _read(data: Any) -> pa.Table:
    return pa.ipc.open_stream(data).read_all()


@dataclass(frozen=True)
class Steps:
    """How a component's entries were computed, which unpacking repeats for what a packed
    partition leaves out (origins; weights and sizes): per recursive rule name its origin prefix
    (Spark's), whether it copies its first child's origin, its weight and its size; the
    monoid's combine code (:mod:`selp.topk.kernel`: 0 product, 1 sum, 2 min) and neutral
    element. Any other rule name an entry carries is a seed's, copied from its leaf by a step
    of weight ``one`` and size 0 -- as the kernel ranked it."""

    rules: Mapping[str, tuple[int, bool, float, int]]
    combine: int
    one: float

    @classmethod
    def of(cls, task: Any) -> "Steps":
        """The steps of a :class:`selp.topk.component.DTableTask`: the same values its kernel
        arrays hold."""
        return cls({r: (int(task.rule_hash[r]), task.rule_size[r] == 0, float(task.rule_weight[r]), int(task.rule_size[r]))
                    for r in task.rule_hash}, int(task.combine), float(task.one))


class Unpack:
    """The function ``mapInArrow`` runs over blob rows: the Spark DTable's rows of each
    partition's entries (see the module docstring); ``salt`` is the component's fact-key salt,
    ``rules`` its :class:`Steps`.

    ``keys`` (fact keys ``_f``) or ``facts`` (``(relation, args)`` pairs, args encoded) restrict
    it to the entries of those facts (``facts``: at least those, see ``_SEP``): a reader of a
    few facts (a tree, an explanation) then builds their rows only, not every entry's."""

    def __init__(self, salt: int, rules: Steps, keys: Sequence[int] | None = None,
                 facts: Sequence[tuple[str, Sequence[str]]] | None = None) -> None:
        self.salt = salt
        self.rules = rules
        self.keys = None if keys is None else np.unique(np.asarray(keys, np.int64))
        # a fact as one string: relation and arguments joined by a separator no encoding holds
        self.facts = None if facts is None else sorted({_fact_text(r, a) for r, a in facts})

    def _wanted(self, g: int, rel: Any, args: Any) -> np.ndarray | None:
        """The numbers of the partition's facts to unpack (None: every fact)."""
        import pyarrow.compute as pc

        if self.keys is not None:
            return np.flatnonzero(np.isin(fact_keys(self.salt, g, len(rel)), self.keys))
        if self.facts is not None:
            text = pc.binary_join_element_wise(rel, pc.binary_join(args, _SEP), _SEP)
            return np.flatnonzero(pc.is_in(text, value_set=pa.array(self.facts, pa.string())).to_numpy(zero_copy_only=False))
        return None

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        chunks: dict[int, dict[int, list[tuple[int, Any]]]] = {}
        for b in batches:
            cols = [b.column(c).to_pylist() for c in ("_g", "_kind", "_first")]
            data = b.column("_data")
            for j, (g, kind, first) in enumerate(zip(*cols)):
                chunks.setdefault(g, {}).setdefault(kind, []).append((first, data[j].as_buffer()))
        for g, parts in chunks.items():
            if not parts.get(ENTRIES):
                continue

            def table(kind: int) -> pa.Table:
                return pa.concat_tables([_read(d) for _, d in sorted(parts.get(kind, []), key=lambda x: x[0])])

            p = Packed(table(FACTS), table(ENTRIES), table(LEAVES))
            yield from unpack(p, self.salt, g, self.rules, self._wanted)


# a string value may hold this separator, so two facts can share a text: ``facts`` then keeps a
# few entries too many (never too few), and its reader semi-joins the exact facts afterwards
_SEP = "\x1f"


def _fact_text(relation: str, args: Sequence[str]) -> str:
    return _SEP.join([relation, *args])


def _column(t: pa.Table, name: str, dtype: Any) -> np.ndarray:
    return t.column(name).to_numpy().astype(dtype, copy=False) if t.num_rows else np.zeros(0, dtype)


def _values(p: Packed, start: np.ndarray, steps: Steps) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every entry's origin, weight and size: the columns it came with, or what the kernel
    recomputes from the leaves' and the steps (``selp_entry_values``: the same arithmetic in the
    same order as when it ranked, so the same bits; the entries' order needs no sorting: the
    walk goes children first)."""
    e = p.entries
    has_o, has_w = "_o" in e.column_names, "_w" in e.column_names
    if has_o and has_w:
        return _column(e, "_o", np.int64), _column(e, "_w", np.float64), _column(e, "_s", np.int64)
    from selp.topk.kernel import address as _ptr, library as _compiled

    lib = _compiled()
    if lib is None:
        raise ImportError("the compiled kernel is needed to unpack this DTable (its origins, weights and sizes)")
    L, E = p.leaves.num_rows, e.num_rows
    rule = e.column("_rule").combine_chunks()
    names = rule.dictionary.to_pylist()
    if len(names) > 255:
        raise ValueError("more than 255 rule names in a packed DTable without origins")
    # rule table by dictionary code, then one row for a null rule: a seed's (copied)
    seed_step = (0, True, steps.one, 0)
    table = [steps.rules.get(n, seed_step) for n in names] + [seed_step]
    rule_hash = np.array([t[0] for t in table], np.int64)
    rule_copy = np.array([t[1] for t in table], np.uint8)
    rule_w = np.array([t[2] for t in table], np.float64)
    rule_size = np.array([t[3] for t in table], np.int64)
    code = rule.indices.fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
    code[rule.is_null().to_numpy(zero_copy_only=False)] = len(names)
    rows = np.zeros(L + E, np.uint8)
    rows[L:] = code
    kids = e.column("_c").combine_chunks()
    crp = np.zeros(L + E + 1, np.int64)
    crp[L + 1:] = kids.offsets.to_numpy()[1:] - kids.offsets.to_numpy()[0]
    slots = kids.flatten()
    c = slots.field("c").to_numpy()  # int32, as stored
    r = slots.field("r").to_numpy()
    # the walk's fact rows: the leaves' 0..L-1 (one entry each, at their own row), then the
    # member facts' L.. (their first entry); a leaf's slot (r = 0) is its one entry, rank 1
    fp = np.concatenate([np.arange(L, dtype=np.int64), L + start, [L + E]])
    kid = np.where(r > 0, c + np.int32(L), c).astype(np.int32, copy=False)
    cr = np.maximum(r, 1).astype(np.uint8, copy=False)
    nid = np.arange(len(fp), dtype=np.int64)
    out = np.empty(L + E, np.int64)
    out[:L] = _column(p.leaves, "_o", np.int64)
    out_w = np.empty(L + E, np.float64)
    out_w[:L] = _column(p.leaves, "_w", np.float64)
    out_s = np.empty(L + E, np.int64)
    out_s[:L] = _column(p.leaves, "_s", np.int64)
    done = np.zeros(L + E, np.uint8)
    done[:L] = 1
    stack = np.empty(L + E + 1, np.int64)
    lib.selp_entry_values(L + E, L, L + E, _ptr(fp), _ptr(nid), _ptr(rows), _ptr(crp), _ptr(kid), _ptr(cr),
                          _ptr(rule_hash), _ptr(rule_copy), 1, _ptr(out), _ptr(done), _ptr(stack), _ptr(rule_w),
                          _ptr(rule_size), steps.combine, _ptr(out_w), _ptr(out_s))
    origin = _column(e, "_o", np.int64) if has_o else out[L:]
    if has_w:
        return origin, _column(e, "_w", np.float64), _column(e, "_s", np.int64)
    return origin, out_w[L:], out_s[L:]


def unpack(p: Packed, salt: int, partition: int, rules: Steps, wanted: Any = None) -> Iterator[pa.RecordBatch]:
    """The entries of a packed partition as the Spark DTable's rows, in batches of at most
    :data:`CHUNK` (``wanted(partition, relation, args)``: the numbers of the facts to give, or
    None for all)."""
    e = p.entries
    if not e.num_rows:
        return
    rel = p.facts.column("relation").combine_chunks()
    if isinstance(rel, pa.DictionaryArray):
        rel = rel.dictionary_decode()
    args = p.facts.column("args").combine_chunks()
    only = None if wanted is None else wanted(partition, rel, args)
    if only is not None and not len(only):
        return
    i = _column(e, "_i", np.int64)
    rank = _column(e, "rank", np.int64)
    start = np.zeros(len(rel), np.int64)
    first = np.flatnonzero(rank == 1)
    start[i[first]] = first
    origin, w, size = _values(p, start, rules)
    leaf_f, leaf_o = _column(p.leaves, "_f", np.int64), _column(p.leaves, "_o", np.int64)
    leaf_seed = _column(p.leaves, "_seed", np.bool_)
    leaf_ch = p.leaves.column("_ch").combine_chunks() if p.leaves.num_rows else pa.array([], PTR_ARROW)
    kids = e.column("_c").combine_chunks()
    offsets = kids.offsets.to_numpy().astype(np.int64)
    offsets -= offsets[0]
    slots = kids.flatten()
    c_all = slots.field("c").to_numpy()  # as stored (int32; uint8 ranks): widened a chunk at a time
    r_all = slots.field("r").to_numpy()
    rule = e.column("_rule").combine_chunks()
    rule = rule.dictionary_decode().cast(pa.string()) if isinstance(rule, pa.DictionaryArray) else rule.cast(pa.string())
    # a chunk of entries at a time: its arrays stay in cache, and each becomes a batch
    for lo in range(0, len(i), CHUNK):
        hi = min(lo + CHUNK, len(i))
        off = offsets[lo:hi + 1]
        c, r = c_all[off[0]:off[-1]].astype(np.int64), r_all[off[0]:off[-1]].astype(np.int64)
        off = off - off[0]
        member, leaf = r > 0, r == 0
        # a slot's pointer: a member fact's entry of rank r, or a leaf's entry
        f, o = np.zeros(len(c), np.int64), np.zeros(len(c), np.int64)
        f[leaf], o[leaf] = leaf_f[c[leaf]], leaf_o[c[leaf]]
        f[member] = mix_keys(salt, partition, c[member])
        o[member] = origin[start[c[member]] + r[member] - 1]
        # an entry copying a seed (its one slot is a seed leaf) points where the seed points
        has = off[1:] > off[:-1]
        head = np.where(has, off[:-1], 0)
        copied = np.zeros(hi - lo, np.bool_)
        if len(c) and leaf_seed.any():
            copied = has & leaf[head]
            copied &= leaf_seed[np.where(copied, c[head], 0)]
        keep = np.ones(hi - lo, np.bool_) if only is None else np.isin(i[lo:hi], only)
        for is_copy in (False, True):
            sel = np.flatnonzero(keep & (copied if is_copy else ~copied))
            if not len(sel):
                continue
            if is_copy:
                ch = leaf_ch.take(pa.array(c[head[sel]])).cast(PTR_ARROW)
            else:
                m = off[sel + 1] - off[sel]
                o2 = np.zeros(len(sel) + 1, np.int64)
                np.cumsum(m, out=o2[1:])
                at = np.repeat(off[sel] - o2[:-1], m) + np.arange(int(o2[-1]))
                ch = pa.ListArray.from_arrays(pa.array(o2.astype(np.int32)), pa.StructArray.from_arrays(
                    [pa.array(f[at]), pa.array(o[at])], names=["f", "o"])).cast(PTR_ARROW)
            g = lo + sel  # the entries' numbers in the partition
            ii = pa.array(i[g])
            yield pa.record_batch([
                pa.array(mix_keys(salt, partition, i[g])), pa.array(np.full(len(g), partition, np.int32)),
                rel.take(ii), args.take(ii), pa.array(w[g]), pa.array(size[g]), pa.array(origin[g]),
                rule.take(pa.array(g)), ch, pa.array(rank[g].astype(np.int32)),
            ], schema=_ROWS)
