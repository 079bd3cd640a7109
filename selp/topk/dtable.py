"""The DTable: the k best derivations of every fact of P_p, as entries with pointers.

An entry of fact ``t`` at rank ``i`` (1-based) holds the weight and size of ``t``'s i-th best
tree, the P_p rule of its last step (None for an EDB leaf) and pointers ``(relation, values,
rank)`` to its children's entries, in body order. ``origin`` is a 64-bit structural hash of the
tree of the *original* program that the entry stands for (annotations and copy steps erased):
two P_p trees with the same origin are the same answer and count once.

A fact may hold more than k entries in a DTable built by the Spark engine: an entry that lost
its place but is still a child of a kept entry stays, at ranks k+1, ..., so every pointer resolves;
:meth:`DTable.answers` cuts to k.

Both engines fill the same structure: the local engine directly, the Spark engine by collecting
the entries reachable from the answers (:mod:`selp.topk.spark`). Saved DTables are a directory
with ``entries.parquet`` and ``meta.json`` (:func:`save_dtable`, :func:`load_dtable`).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable, NamedTuple

from selp.errors import SelpError
from selp.values import Value, decode, encode

FactKey = tuple[str, tuple[Value, ...]]
Pointer = tuple[str, tuple[Value, ...], int]  # (relation, values, rank)


class Entry(NamedTuple):
    """One of the k best derivations of a fact (a named tuple: millions are built per run)."""

    weight: Any  # the monoid's internal form
    size: int  # rule occurrences of the origin tree (copy steps and leaves add none)
    origin: int  # structural hash of the origin tree (signed 64-bit)
    rule: str | None  # the P_p rule of the last step; None: an EDB leaf
    children: tuple[Pointer, ...] = ()


def _h64(*parts: object) -> int:
    digest = hashlib.blake2b(repr(parts).encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


def leaf_origin(relation: str, values: tuple[Value, ...]) -> int:
    """The origin hash of an EDB fact as a leaf (``relation`` is its relation in P)."""
    return _h64("L", relation, tuple(encode(v) for v in values))


@lru_cache(maxsize=None)
def _rule_hash(origin_rule: str) -> int:
    return _h64("N", origin_rule)


def node_origin(origin_rule: str, child_origins: Iterable[int]) -> int:
    """The origin hash of a rule step of P over children with these origin hashes. The head fact
    is determined by the rule and the children, so it need not be hashed. Python's tuple hash
    of ints is fast and, unlike string hashing, the same in every process."""
    return hash((_rule_hash(origin_rule), *child_origins))


@dataclass
class DTable:
    """Entries per P_p fact plus what is needed to turn them into trees of P later."""

    k: int
    monoid: str
    pattern: str | None
    roots: tuple[str, ...]  # P_p relations holding the answers
    relation_origin: dict[str, str]
    rule_origin: dict[str, str | None]  # P_p rule -> rule of P (None: copy step)
    rule_weights: dict[str, Any]  # rule of P -> displayed weight (for tree output)
    types: dict[str, tuple[str, ...]]  # column types ("str"/"int") of every P_p relation
    entries: dict[FactKey, list[Entry]] = field(default_factory=dict)
    # how the engine ran each component of P_p (Spark: one pass, partition-local or global
    # rounds; see selp.engines.result.plan_line): for the command line, never saved
    plan: list[dict[str, Any]] = field(default_factory=list, compare=False, repr=False)

    def root_items(self) -> Iterable[tuple[FactKey, list[Entry]]]:
        """The entries of the facts of the root relations."""
        return ((key, entries) for key, entries in self.entries.items() if key[0] in self.roots)

    def answers(self) -> dict[FactKey, list[Entry]]:
        """The k best distinct-origin trees per fact of P among the root relations, best first.

        A fact of P can reach several root relations (OR patterns, NOT's types); its lists are
        merged and deduplicated by origin here.
        """
        from selp.topk.order import entry_order  # noqa: PLC0415 (avoid a cycle at import)

        merged: dict[FactKey, dict[int, tuple[str, Entry]]] = {}
        for (rel, values), entries in self.root_items():
            key = (self.relation_origin.get(rel, rel), values)
            seen = merged.setdefault(key, {})
            for e in entries:
                seen.setdefault(e.origin, (rel, e))
        out: dict[FactKey, list[Entry]] = {}
        for key, by_origin in merged.items():
            ranked = sorted(by_origin.values(), key=lambda re: entry_order(self.monoid, re[1]))
            out[key] = [e for _, e in ranked[: self.k]]
        return out

    def answer_pointers(self) -> dict[FactKey, list[tuple[str, tuple[Value, ...], Entry]]]:
        """Like :meth:`answers`, with the P_p fact each entry belongs to (to chase pointers)."""
        from selp.topk.order import entry_order  # noqa: PLC0415

        merged: dict[FactKey, dict[int, tuple[str, tuple[Value, ...], Entry]]] = {}
        for (rel, values), entries in self.root_items():
            seen = merged.setdefault((self.relation_origin.get(rel, rel), values), {})
            for e in entries:
                seen.setdefault(e.origin, (rel, values, e))
        return {
            key: sorted(v.values(), key=lambda x: entry_order(self.monoid, x[2]))[: self.k]
            for key, v in merged.items()
        }


# --- saving and loading ------------------------------------------------------------------------

META = "meta.json"
ENTRIES = "entries.parquet"


def save_dtable(table: DTable, out_dir: str | Path) -> None:
    """Write the DTable to a directory atomically (a sibling temp dir renamed into place)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from selp.topk.monoid import get_monoid

    monoid = get_monoid(table.monoid)
    rows: dict[str, list] = {k: [] for k in ("relation", "args", "rank", "weight", "size", "origin", "rule", "children")}
    for (rel, values), entries in table.entries.items():
        for i, e in enumerate(entries, 1):
            rows["relation"].append(rel)
            rows["args"].append([encode(v) for v in values])
            rows["rank"].append(i)
            rows["weight"].append(json.dumps(e.weight))
            rows["size"].append(e.size)
            rows["origin"].append(e.origin)
            rows["rule"].append(e.rule)
            rows["children"].append([{"relation": r, "args": [encode(v) for v in vs], "rank": k} for r, vs, k in e.children])
    meta = {
        "format": 1,
        "k": table.k,
        "monoid": monoid.name,
        "pattern": table.pattern,
        "roots": list(table.roots),
        "relation_origin": table.relation_origin,
        "rule_origin": table.rule_origin,
        "rule_weights": table.rule_weights,
        "types": {rel: list(t) for rel, t in table.types.items()},
    }
    from selp.outfile import output_dir

    with output_dir(out_dir) as tmp:
        pq.write_table(pa.table(rows), tmp / ENTRIES)
        (tmp / META).write_text(json.dumps(meta, indent=1), encoding="utf-8")


def replace_dir(ready: Path, out: Path) -> None:
    """Put the finished directory ``ready`` at ``out`` (:func:`selp.outfile.replace_dir`)."""
    from selp.outfile import replace_dir as _replace

    _replace(ready, out)


def load_dtable(path: str | Path) -> DTable:
    """Read a DTable written by :func:`save_dtable`."""
    import pyarrow.parquet as pq

    d = Path(path)
    try:
        meta = json.loads((d / META).read_text(encoding="utf-8"))
        data = pq.read_table(d / ENTRIES).to_pydict()
    except (OSError, ValueError) as err:
        raise SelpError(f"{d}: not a saved DTable ({err})") from None
    types = {rel: tuple(t) for rel, t in meta["types"].items()}
    table = DTable(meta["k"], meta["monoid"], meta["pattern"], tuple(meta["roots"]), meta["relation_origin"],
                   meta["rule_origin"], meta["rule_weights"], types)

    def values(rel: str, args: list[str]) -> tuple[Value, ...]:
        return tuple(decode(a, t) for a, t in zip(args, types[rel]))

    for i in range(len(data["relation"])):
        rel = data["relation"][i]
        key = (rel, values(rel, data["args"][i]))
        children = tuple((c["relation"], values(c["relation"], c["args"]), c["rank"]) for c in data["children"][i])
        entry = Entry(json.loads(data["weight"][i]), data["size"][i], data["origin"][i], data["rule"][i], children)
        lst = table.entries.setdefault(key, [])
        assert data["rank"][i] == len(lst) + 1, "entries are written in rank order"
        lst.append(entry)
    return table
