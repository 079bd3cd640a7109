"""The packed form of a partition-local DTable (selp.topk.packed): what crosses into Spark as
blobs must unpack into exactly the rows of the entries -- fact keys, relation and arguments of
each entry's fact, weights, sizes, origins, ranks, rules and child pointers as (fact key,
origin) -- whatever the chunking and whether the origins, weights and sizes travel or are
recomputed, and the per-relation counts the driver reads off the blobs must be the entries'
counts."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from selp.topk import packed
from selp.topk.kernel import compiled_available, spark_origin_of
from selp.topk.packed import FACTS, LEAVES, Packed, Steps, Unpack, blobs, fact_keys, leaf_table, pack

SALT, PARTITION = 0x5EED << 24, 3
# (origin prefix, copies its first child's origin, weight, size): r4 copies; confidence (product)
RULES = Steps({"r2": (0x1234567, False, 0.9, 1), "r3": (-77, False, 0.3, 1), "r4": (0x55, True, 1.0, 0)}, 0, 1.0)
ARGS = [["1", "x"], ["2"], ["3", "y"], ["4"]]
REL = ["a", "b", "a", "b"]
LEAVES_FO = [(11, 12), (13, 14)]  # lower entries (fact key, origin)
LEAVES_WS = [(0.8, 2), (0.625, 3), (0.7, 4)]  # every leaf's weight and size: the lower entries', the seed's
SEED = (99, [{"f": -1, "o": -2}, {"f": -3, "o": -4}])  # a seed entry: origin, its child pointers
# per fact: (rule, slots (c, r): r >= 1 member fact c's rank r, r = 0 leaf c); any rule not in
# RULES (r1, None) is a seed's copy step
ENTRIES = {
    0: [("r2", [(0, 0), (1, 1)]), ("r1", [(2, 0)])],
    1: [("r2", [(1, 0)])],
    2: [("r2", [(1, 1)]), ("r4", [(0, 2), (1, 0)]), ("r3", [(0, 1), (0, 0)])],
    3: [(None, [(2, 0)])],
}


def _expected() -> list[dict]:
    """The rows, by the definitions: a leaf slot points at the leaf's entry, a member slot at
    that fact's entry of that rank, a seed's copy at what the seed points at (and has its
    origin); an origin is the rule's hash over the children's origins (Spark's xxhash64)."""
    keys = fact_keys(SALT, PARTITION, 4)
    leaf = [(f, o, None) for f, o in LEAVES_FO] + [(0, SEED[0], SEED[1])]
    origin: dict[tuple[int, int], tuple[int, float, int]] = {}

    def of(i: int, rank: int) -> tuple[int, float, int]:
        """origin, weight (the rule's times the children's, in body order), size"""
        if (i, rank) not in origin:
            rule, slots = ENTRIES[i][rank - 1]
            kids = [(leaf[c][1], *LEAVES_WS[c]) if r == 0 else of(c, r) for c, r in slots]
            h, copy, w, s = RULES.rules.get(rule, (0, True, RULES.one, 0))
            for _, kw, ks in kids:
                w, s = w * kw, s + ks
            origin[i, rank] = (kids[0][0] if copy else spark_origin_of(h, [k[0] for k in kids]), w, s)
        return origin[i, rank]

    rows = []
    for i, es in ENTRIES.items():
        for rank, (rule, slots) in enumerate(es, 1):
            o, w, s = of(i, rank)
            if rule not in RULES.rules:
                ch = leaf[slots[0][0]][2]
            else:
                ch = [{"f": leaf[c][0], "o": leaf[c][1]} if r == 0 else {"f": int(keys[c]), "o": of(c, r)[0]} for c, r in slots]
            rows.append({"_f": int(keys[i]), "_g": PARTITION, "relation": REL[i], "args": ARGS[i], "_w": w, "_s": s,
                         "_o": o, "_rule": rule, "_ch": ch, "rank": rank})
    return sorted(rows, key=lambda r: (r["_f"], r["rank"]))


def _packed(with_origins: bool, with_values: bool = True) -> Packed:
    members = ["a", "b"]
    facts = pa.table({
        "relation": pa.DictionaryArray.from_arrays(pa.array([0, 1, 0, 1], pa.int32()), pa.array(members)),
        "args": pa.array(ARGS, pa.list_(pa.string())),
    })
    seeds = pa.table({"_o": pa.array([SEED[0]], pa.int64()), "_ch": pa.array([SEED[1]], packed.PTR_ARROW)})
    leaves = leaf_table(np.array([f for f, _ in LEAVES_FO]), np.array([o for _, o in LEAVES_FO]), seeds,
                        np.array([w for w, _ in LEAVES_WS]), np.array([s for _, s in LEAVES_WS]))
    flat = [(i, rank, e) for i, es in ENTRIES.items() for rank, e in enumerate(es, 1)]
    dictionary = pa.array(["r1", "r2", "r3", "r4"])
    code = np.array([0 if e[0] is None else dictionary.to_pylist().index(e[0]) for _, _, e in flat])
    ptr = np.cumsum([0] + [len(e[1]) for _, _, e in flat])
    slots = [s for _, _, e in flat for s in e[1]]
    by = {(r["relation"], tuple(r["args"]), r["rank"]): r for r in _expected()}
    row = [by[REL[i], tuple(ARGS[i]), rank] for i, rank, _ in flat]
    origin = np.array([r["_o"] for r in row]) if with_origins else None
    w = np.array([r["_w"] for r in row]) if with_values else None
    size = np.array([r["_s"] for r in row]) if with_values else None
    return pack(facts, leaves, np.array([i for i, _, _ in flat]), w, size, np.array([rank for _, rank, _ in flat]), code,
                np.array([e[0] is None for _, _, e in flat]), dictionary, ptr,
                np.array([c for c, _ in slots]), np.array([r for _, r in slots]), origin)


def _unpacked(p: Packed, codec: str = packed.DEFAULT_CODEC, **only) -> list[dict]:
    got = list(blobs(p, PARTITION, ["a", "b"], codec))
    # the blob rows come in any order across batches (Spark may split them): unpack reorders
    tbl = pa.Table.from_batches(got)
    shuffled = [tbl.slice(i, 1).to_batches()[0] for i in reversed(range(tbl.num_rows))]
    rows = list(Unpack(SALT, RULES, **only)(iter(shuffled)))
    return pa.Table.from_batches(rows).sort_by([("_f", "ascending"), ("rank", "ascending")]).to_pylist() if rows else []


@pytest.mark.parametrize("chunk", [2, 3, 65_536])
@pytest.mark.parametrize(("with_origins", "with_values"), [(True, True), (False, True), (True, False), (False, False)])
def test_blobs_unpack_into_the_entries_rows(monkeypatch, chunk, with_origins, with_values):
    if not (with_origins and with_values) and not compiled_available():
        pytest.skip("recomputing origins, weights and sizes needs the compiled kernel")
    monkeypatch.setattr(packed, "CHUNK", chunk)
    p = _packed(with_origins, with_values)
    assert ("_w" in p.entries.column_names) == with_values == ("_s" in p.entries.column_names)
    tbl = pa.Table.from_batches(list(blobs(p, PARTITION, ["a", "b"])))
    # the counts the driver sums: entries per member relation
    assert sum(tbl.column("n0").to_pylist()) == 5 and sum(tbl.column("n1").to_pylist()) == 2
    kinds = tbl.column("_kind").to_pylist()
    assert kinds.count(packed.ENTRIES) == -(-7 // chunk) and kinds.count(LEAVES) == -(-3 // chunk)
    assert kinds.count(FACTS) == -(-4 // chunk)
    rows = _unpacked(p)
    assert rows == _expected()
    # not vacuous: copies, member and leaf pointers, a null rule and a copy rule are all there
    assert any(r["_rule"] is None for r in rows) and any(r["_rule"] == "r4" for r in rows)


@pytest.mark.parametrize("codec", packed.CODECS)
def test_every_blob_codec_unpacks_into_the_same_rows(codec):
    assert _unpacked(_packed(True), codec) == _expected()


def _closure_like(n_facts: int, k: int) -> Packed:
    """A partition shaped like a transitive closure's at top-k: every fact's k entries of rule
    r2 with a leaf child and a member child, random weights (so nothing compresses for free)."""
    rng = np.random.default_rng(7)
    facts = pa.table({"relation": pa.array(["a"] * n_facts), "args": pa.array([[str(i), str(i + 1)] for i in range(n_facts)])})
    leaves = leaf_table(rng.integers(-2**62, 2**62, n_facts), rng.integers(-2**62, 2**62, n_facts), None,
                        rng.random(n_facts), rng.integers(1, 5, n_facts))
    e = n_facts * k
    owner = np.repeat(np.arange(n_facts), k)
    rank = np.tile(np.arange(1, k + 1), n_facts)
    w = np.sort(rng.random(e))[::-1]
    slot_c = np.empty(2 * e, np.int64)
    slot_c[0::2] = rng.integers(0, n_facts, e)  # the leaf (r = 0)
    # a member fact's entry of some rank, of a fact numbered lower (a DTable is acyclic); fact
    # 0's second child is a leaf too
    slot_c[1::2] = (rng.random(e) * owner).astype(np.int64)
    slot_r = np.zeros(2 * e, np.int64)
    slot_r[1::2] = np.where(owner > 0, rng.integers(1, k + 1, e), 0)
    return pack(facts, leaves, owner, w, rng.integers(3, 40, e), rank, np.zeros(e, np.int64), np.zeros(e, bool),
                pa.array(["r2"]), np.arange(0, 2 * e + 1, 2), slot_c, slot_r)


def test_compressed_blobs_are_at_most_two_thirds_of_the_raw_bytes_and_unpack_alike():
    # what crosses into the JVM is the blobs' bytes: at top-7 the entries' columns (runs of fact
    # numbers, ranks 1..k, small sizes, regular offsets) compress, the weights hardly
    p = _closure_like(20_000, 7)
    size = {c: sum(len(b) for batch in blobs(p, PARTITION, ["a"], c) for b in batch.column("_data").to_pylist()) for c in packed.CODECS}
    assert size["zstd"] < 2 / 3 * size["none"] and size["lz4"] < size["none"]
    rows = {c: pa.Table.from_batches(list(Unpack(SALT, Steps({"r2": RULES.rules["r2"]}, 0, 1.0))(iter(blobs(p, PARTITION, ["a"], c))))) for c in ("zstd", "none")}
    if not compiled_available():
        return  # (origins are recomputed by the kernel when unpacked)
    assert rows["zstd"].num_rows == 140_000 and rows["zstd"].equals(rows["none"])


def test_origins_weights_and_sizes_shipped_or_recomputed_give_the_same_rows():
    if not compiled_available():
        pytest.skip("recomputing origins needs the compiled kernel")
    shipped = _packed(True).rows(SALT, PARTITION, RULES).to_pylist()
    assert sorted(shipped, key=lambda r: (r["_f"], r["rank"])) == _expected()
    for o, v in ((False, True), (True, False), (False, False)):
        assert _packed(o, v).rows(SALT, PARTITION, RULES).to_pylist() == shipped
    assert "_o" not in _packed(False).entries.column_names
    assert not {"_w", "_s"} & set(_packed(True, False).entries.column_names)


def test_weights_are_recomputed_bit_for_bit_in_every_combine():
    """Sum, product and min, signed zeros and values whose sum rounds: the recomputed weight
    is the kernel's, bit for bit (a DTable read back must rank as it was ranked)."""
    if not compiled_available():
        pytest.skip("recomputing weights needs the compiled kernel")
    for combine, one, ws in ((0, 1.0, [0.1, 0.7, 0.3]), (1, 0.0, [0.1, 0.2, -0.0]), (2, 1.0, [0.4, 0.9, 0.2])):
        steps = Steps({"r2": (5, False, 0.1 if combine != 2 else 0.5, 1)}, combine, one)
        facts = pa.table({"relation": pa.array(["a"] * 3), "args": pa.array([["0"], ["1"], ["2"]])})
        leaves = leaf_table(np.array([7, 8, 9]), np.array([1, 2, 3]), None, np.array(ws), np.array([1, 2, 3]))
        # fact i's one entry: r2 over leaf i and (for i > 0) fact i - 1's entry
        slot_c, slot_r = [0, 1, 0, 2, 1], [0, 0, 1, 0, 1]
        p = pack(facts, leaves, np.arange(3), None, None, np.ones(3, np.int64), np.zeros(3, np.int64),
                 np.zeros(3, bool), pa.array(["r2"]), np.array([0, 1, 3, 5]), np.array(slot_c), np.array(slot_r))
        rows = p.rows(SALT, PARTITION, steps).sort_by("_f").to_pylist()
        comb = [lambda a, b: a * b, lambda a, b: a + b, lambda a, b: b if b < a else a][combine]
        w, expect = None, {}
        for i in range(3):
            w = comb(steps.rules["r2"][2], ws[i]) if i == 0 else comb(comb(steps.rules["r2"][2], ws[i]), w)
            expect[int(fact_keys(SALT, PARTITION, 3)[i])] = w
        got = {r["_f"]: r["_w"] for r in rows}
        assert {f: np.float64(x).tobytes() for f, x in got.items()} == {f: np.float64(x).tobytes() for f, x in expect.items()}


def test_entries_are_narrow():
    """What grows with the entries crosses at its narrowest: 8-bit ranks and rule codes, 32-bit
    sizes, fact numbers and child slots -- no 64-bit pointers, no origins unless given."""
    e = _packed(False).entries.schema
    assert e.field("rank").type == pa.uint8() and e.field("_rule").type.index_type == pa.int8()
    assert e.field("_s").type == pa.int32() and e.field("_i").type == pa.int32()
    assert e.field("_c").type == pa.list_(pa.struct([("c", pa.int32()), ("r", pa.uint8())]))


def test_keys_of_a_partition_are_the_mix_of_its_fact_numbers():
    """Unpacking computes a fact's key from its number alone: the same as keying them all."""
    idx = np.array([5, 0, 7, 5])
    assert np.array_equal(packed.mix_keys(17, 2, idx), fact_keys(17, 2, 8)[idx])


@pytest.mark.parametrize("chunk", [2, 65_536])
def test_unpacking_a_few_facts_gives_exactly_their_rows(monkeypatch, chunk):
    """A reader of a few facts, by key or by (relation, args), gets the same rows as the whole
    unpacking filtered to those facts -- and nothing when no fact of the partition is asked for."""
    monkeypatch.setattr(packed, "CHUNK", chunk)
    p = _packed(True)
    every = _unpacked(p)
    keys = fact_keys(SALT, PARTITION, 4)
    by_key = _unpacked(p, keys=[int(keys[2]), 12345])
    assert by_key == [r for r in every if r["_f"] == int(keys[2])] and len(by_key) == 3
    by_fact = _unpacked(p, facts=[("b", ["4"]), ("a", ["1", "x"]), ("a", ["4"])])
    assert by_fact == [r for r in every if (r["relation"], r["args"]) in (("b", ["4"]), ("a", ["1", "x"]))]
    assert len(by_fact) == 3
    assert _unpacked(p, keys=[]) == [] and _unpacked(p, facts=[("b", ["9"])]) == []
