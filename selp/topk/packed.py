"""The packed form of one partition's DTable: what a partition-local Spark task gives back, and
how it is unpacked into the Spark DTable's rows when (and only when) someone reads them.

A partition's DTable (:func:`selp.topk.component.partition_dtable`) is two Arrow tables:

* **facts**, once each: ``relation`` and ``args`` (the uniform string encoding) of member fact
  ``i`` at row ``i``. A fact's key ``_f`` is not stored: it is :func:`fact_keys` of the
  partition's number and ``i``, so it costs nothing to carry;
* **entries**, integer and float columns only: ``_i`` (the fact's number), ``_w``, ``_s``,
  ``_o``, ``_rule`` (a dictionary code), ``_ch`` (children as (fact key, origin) pointers) and
  ``rank``.

Both cross into Spark as a few rows of **blobs** (:func:`blobs`): one Arrow IPC stream per chunk
of facts or entries, in a binary column. Spark copies a blob as bytes; it never builds a row per
entry, with strings, at the end of the job -- which, with the per-entry Python work it needed,
was the larger part of a partition-local top-k after the kernel. Unpacking (:class:`Unpack`, run
by ``mapInArrow`` over the blobs) rebuilds exactly the rows the partition gave back before:
``_f``, ``_g``, ``relation``, ``args``, ``_w``, ``_s``, ``_o``, ``_rule``, ``_ch``, ``rank``, a
batch per chunk of entries, vectorised (takes and a key mix, no Python per entry).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator, Sequence

import numpy as np
import pyarrow as pa

# rows of one blob: an entries chunk of 64k rows is a few MB
CHUNK = 65_536
FACTS, ENTRIES = 0, 1  # a blob's ``_kind``
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
    entries: pa.Table  # _i, _w, _s, _o, _rule (dictionary), _ch, rank


def blob_schema(n_members: int) -> Any:
    """The Spark schema of the blob rows of a component with ``n_members`` relations:
    ``_g`` (partition), ``_kind``, ``_first`` (the chunk's first row), ``_data`` (an Arrow IPC
    stream) and ``n0..`` (entries per member relation in the chunk, for the counts)."""
    from pyspark.sql.types import BinaryType, ByteType, IntegerType, LongType, StructField, StructType

    return StructType([
        StructField("_g", IntegerType()), StructField("_kind", ByteType()), StructField("_first", LongType()),
        StructField("_data", BinaryType()),
    ] + [StructField(f"n{i}", LongType()) for i in range(n_members)])


def _ipc(tbl: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, tbl.schema) as w:
        w.write_table(tbl)
    return sink.getvalue().to_pybytes()


def blobs(packed: Packed, partition: int, members: Sequence[str]) -> Iterator[pa.RecordBatch]:
    """The blob rows (:func:`blob_schema`) of a partition's packed DTable."""
    import pyarrow.compute as pc

    m = len(members)
    rel_names = packed.facts.column("relation").combine_chunks()
    if isinstance(rel_names, pa.DictionaryArray):
        rel_names = rel_names.dictionary_decode()
    member_codes = pa.array(list(members), pa.string())
    schema = pa.schema([("_g", pa.int32()), ("_kind", pa.int8()), ("_first", pa.int64()), ("_data", pa.binary())]
                       + [(f"n{i}", pa.int64()) for i in range(m)])
    rows: list[tuple[int, int, bytes, list[int]]] = []
    for first in range(0, packed.facts.num_rows, CHUNK):
        rows.append((FACTS, first, _ipc(packed.facts.slice(first, CHUNK)), [0] * m))
    code = pc.index_in(rel_names, value_set=member_codes).to_numpy(zero_copy_only=False)
    for first in range(0, packed.entries.num_rows, CHUNK):
        part = packed.entries.slice(first, CHUNK)
        per = np.bincount(code[part.column("_i").to_numpy()], minlength=m)
        rows.append((ENTRIES, first, _ipc(part), [int(x) for x in per]))
    # a few rows per partition (a chunk is 64k entries): building them in Python is no hot path
    for i in range(0, len(rows), 16):
        got = rows[i:i + 16]
        yield pa.record_batch([
            pa.array([partition] * len(got), pa.int32()), pa.array([r[0] for r in got], pa.int8()),
            pa.array([r[1] for r in got], pa.int64()), pa.array([r[2] for r in got], pa.binary()),
        ] + [pa.array([r[3][j] for r in got], pa.int64()) for j in range(m)], schema=schema)


def _read(data: bytes) -> pa.Table:
    return pa.ipc.open_stream(pa.py_buffer(data)).read_all()


class Unpack:
    """The function ``mapInArrow`` runs over blob rows: the Spark DTable's rows of each
    partition's entries (see the module docstring); ``salt`` is the component's fact-key salt.

    ``keys`` (fact keys ``_f``) or ``facts`` (``(relation, args)`` pairs, args encoded) restrict
    it to the entries of those facts (``facts``: at least those, see ``_SEP``): a reader of a
    few facts (a tree, an explanation) then builds their rows only, not every entry's."""

    def __init__(self, salt: int, keys: Sequence[int] | None = None,
                 facts: Sequence[tuple[str, Sequence[str]]] | None = None) -> None:
        self.salt = salt
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
        facts: dict[int, list[tuple[int, bytes]]] = {}
        entries: dict[int, list[bytes]] = {}
        for b in batches:
            for g, kind, first, data in zip(*(b.column(c).to_pylist() for c in ("_g", "_kind", "_first", "_data"))):
                if kind == FACTS:
                    facts.setdefault(g, []).append((first, data))
                else:
                    entries.setdefault(g, []).append(data)
        for g, chunks in entries.items():
            f = pa.concat_tables([_read(d) for _, d in sorted(facts.get(g, []))])
            rel = f.column("relation").combine_chunks()
            if isinstance(rel, pa.DictionaryArray):
                rel = rel.dictionary_decode()
            args = f.column("args").combine_chunks()
            wanted = self._wanted(g, rel, args)
            if wanted is not None and not len(wanted):
                continue
            for data in chunks:
                e = _read(data)
                if wanted is not None:
                    e = e.filter(pa.array(np.isin(e.column("_i").to_numpy(), wanted)))
                    if not e.num_rows:
                        continue
                yield from unpack_entries(e, rel, args, self.salt, g).to_batches(max_chunksize=CHUNK)


# a string value may hold this separator, so two facts can share a text: ``facts`` then keeps a
# few entries too many (never too few), and its reader semi-joins the exact facts afterwards
_SEP = "\x1f"


def _fact_text(relation: str, args: Sequence[str]) -> str:
    return _SEP.join([relation, *args])


def unpack_entries(e: pa.Table, relation: Any, args: Any, salt: int, partition: int) -> pa.Table:
    """Entries of a packed chunk as the Spark DTable's rows (``relation``/``args``: the
    partition's facts, by number)."""
    i = e.column("_i").combine_chunks()
    rule = e.column("_rule").combine_chunks()
    if isinstance(rule, pa.DictionaryArray):
        rule = rule.dictionary_decode()
    return pa.table({
        "_f": pa.array(mix_keys(salt, partition, i.to_numpy())),
        "_g": pa.array(np.full(len(i), partition, np.int32)),
        "relation": relation.take(i), "args": args.take(i),
        "_w": e.column("_w"), "_s": e.column("_s"), "_o": e.column("_o"),
        "_rule": rule.cast(pa.string()), "_ch": e.column("_ch"), "rank": e.column("rank"),
    })
