"""The packed form of a partition-local DTable (selp.topk.packed): what crosses into Spark as
blobs must unpack into exactly the rows of the entries -- fact keys, relation and arguments of
each entry's fact, weights, ranks, rules and child pointers -- whatever the chunking, and the
per-relation counts the driver reads off the blobs must be the entries' counts."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from selp.topk import packed
from selp.topk.packed import FACTS, PTR_ARROW, Packed, Unpack, blobs, fact_keys


def _packed() -> Packed:
    members = ["a", "b"]
    facts = pa.table({
        "relation": pa.DictionaryArray.from_arrays(pa.array([0, 1, 0, 1], pa.int32()), pa.array(members)),
        "args": pa.array([["1", "x"], ["2"], ["3", "y"], ["4"]], pa.list_(pa.string())),
    })
    kids = [[{"f": 11, "o": 12}], [], [{"f": 13, "o": 14}, {"f": 15, "o": 16}], [], [], [{"f": -1, "o": -2}], []]
    entries = pa.table({
        "_i": pa.array([0, 0, 1, 2, 2, 2, 3], pa.int32()),
        "_w": pa.array([0.9, 0.5, 1.0, 0.8, 0.7, 0.1, 0.3]),
        "_s": pa.array([1, 2, 0, 3, 3, 4, 1], pa.int64()),
        "_o": pa.array([101, 102, 103, 104, 105, 106, 107], pa.int64()),
        "_rule": pa.DictionaryArray.from_arrays(pa.array([0, 1, None, 1, 1, 0, 0], pa.int32()), pa.array(["r1", "r2"])),
        "_ch": pa.array(kids, PTR_ARROW),
        "rank": pa.array([1, 2, 1, 1, 2, 3, 1], pa.int32()),
    })
    return Packed(facts, entries)


@pytest.mark.parametrize("chunk", [2, 3, 65_536])
def test_blobs_unpack_into_the_entries_rows(monkeypatch, chunk):
    monkeypatch.setattr(packed, "CHUNK", chunk)
    p = _packed()
    salt, partition = 0x5EED << 24, 3
    got = list(blobs(p, partition, ["a", "b"]))
    tbl = pa.Table.from_batches(got)
    entry_rows = [i for i, k in enumerate(tbl.column("_kind").to_pylist()) if k != FACTS]
    # the counts the driver sums: entries per member relation
    assert sum(tbl.column("n0").to_pylist()) == 5 and sum(tbl.column("n1").to_pylist()) == 2
    assert len(entry_rows) == -(-7 // chunk)
    # the blob rows come in any order across batches (Spark may split them): unpack reorders
    shuffled = [tbl.slice(i, 1).to_batches()[0] for i in reversed(range(tbl.num_rows))]
    rows = pa.Table.from_batches(list(Unpack(salt)(iter(shuffled)))).sort_by([("_o", "ascending")]).to_pylist()
    keys = fact_keys(salt, partition, 4)
    e = p.entries.to_pylist()
    assert [r["_o"] for r in rows] == [x["_o"] for x in e]
    for r, x in zip(rows, e):
        i = x["_i"]
        assert r["_f"] == int(keys[i]) and r["_g"] == partition
        assert r["relation"] == ["a", "b", "a", "b"][i]
        assert r["args"] == [["1", "x"], ["2"], ["3", "y"], ["4"]][i]
        assert (r["_w"], r["_s"], r["rank"], r["_rule"], r["_ch"]) == (x["_w"], x["_s"], x["rank"], x["_rule"], x["_ch"])


def test_keys_of_a_partition_are_the_mix_of_its_fact_numbers():
    """Unpacking computes a fact's key from its number alone: the same as keying them all."""
    idx = np.array([5, 0, 7, 5])
    assert np.array_equal(packed.mix_keys(17, 2, idx), fact_keys(17, 2, 8)[idx])


def _unpacked(p: Packed, salt: int, partition: int, **only) -> list[dict]:
    rows = list(Unpack(salt, **only)(iter(blobs(p, partition, ["a", "b"]))))
    return pa.Table.from_batches(rows).sort_by([("_o", "ascending")]).to_pylist() if rows else []


@pytest.mark.parametrize("chunk", [2, 65_536])
def test_unpacking_a_few_facts_gives_exactly_their_rows(monkeypatch, chunk):
    """A reader of a few facts, by key or by (relation, args), gets the same rows as the whole
    unpacking filtered to those facts -- and nothing when no fact of the partition is asked for."""
    monkeypatch.setattr(packed, "CHUNK", chunk)
    p, salt, partition = _packed(), 0x5EED << 24, 3
    every = _unpacked(p, salt, partition)
    keys = fact_keys(salt, partition, 4)
    by_key = _unpacked(p, salt, partition, keys=[int(keys[2]), 12345])
    assert by_key == [r for r in every if r["_f"] == int(keys[2])] and len(by_key) == 3
    by_fact = _unpacked(p, salt, partition, facts=[("b", ["4"]), ("a", ["1", "x"]), ("a", ["4"])])
    assert by_fact == [r for r in every if (r["relation"], r["args"]) in (("b", ["4"]), ("a", ["1", "x"]))]
    assert len(by_fact) == 3
    assert _unpacked(p, salt, partition, keys=[]) == [] and _unpacked(p, salt, partition, facts=[("b", ["9"])]) == []
