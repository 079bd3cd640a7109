"""Edit batches of a peer: parsing (command line and CSV), validation, resolution, recording.

A batch is validated *whole* before anything is written, and written in one SQLite transaction,
so a batch is either entirely in the log or not at all. It is refused, with one located line
(``file:line:col`` for CSV, the offending edit and value on the command line), when

* it names an unknown peer or a relation the peer does not own (a peer edits its own relations:
  its local contributions, and rejections of what it imports),
* a tuple has the wrong arity or a value of the wrong type (``int`` attributes take integer
  literals; ``str`` attributes take any text, optionally double-quoted),
* after the batch, two of the peer's local tuples of a relation share its key,
* a deletion names a tuple that is neither a local contribution of the peer nor in its instance.

**Deletions** ([Kar09] §3.1): ``-B(3, 2)`` removes ``B(3, 2)`` from the peer's
local contributions ``B_l`` when it is one (it stays in the instance if it is also imported);
otherwise, when ``B(3, 2)`` is in the peer's instance (as of its last exchange) it is an import,
and deleting it records a *rejection* in ``B_r`` that persists across exchanges. ``reject``
records rejections directly, also of tuples not imported (yet); ``reject --undo`` lifts them.
Tuples holding labeled nulls cannot be edited or rejected: selp's rejection table holds
constants only (with nulls, the negation in ``R_o <- R_t, not R_r`` can lose universality;
our reading of [Kar09] §3.1).
"""

from __future__ import annotations

import csv
import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

from selp.cdss.errors import CdssError
from selp.cdss.model import Relation, RelationRef
from selp.cdss.store import Row, Store
from selp.errors import Location, clip, echo, not_utf8
from selp.values import format_value, is_int_literal

# an edit as written: [+-] [PEER.]RELATION(args) (the args are split by split_args)
EDIT_SYNTAX = re.compile(r"\s*([+-]?)\s*(?:([A-Za-z_][\w]*)\.)?([A-Za-z_][\w]*)\s*\((.*)\)\s*$", re.DOTALL)
_SKOLEM_LIKE = re.compile(r"^[A-Za-z_]\w*\(.*\)$")


@dataclass(frozen=True)
class Request:
    """One requested edit before resolution: ``op`` is ``+``, ``-`` (delete: local removal or
    rejection), ``reject`` or ``unreject``; ``where`` locates it for messages."""

    op: str
    relation: Relation
    values: Row
    where: str
    loc: Location | None = None

    def text(self) -> str:
        sign = {"+": "+", "-": "-"}.get(self.op, "")
        return f"{sign}{self.relation.name}({', '.join(format_value(v) for v in self.values)})"


def _fail(where: str, message: str, loc: Location | None) -> CdssError:
    return CdssError(f"{where}: {message}" if loc is None else message, loc)


def owned_relation(store: Store, peer: str, name: str, where: str = "", loc: Location | None = None) -> Relation:
    """The relation ``name`` (or ``PEER.name``) of ``peer``, or a one-line error."""
    store.check_peer(peer)
    p = store.cdss.peer(peer)
    if "." in name:
        owner, _, name = name.partition(".")
        if owner != peer:
            raise _fail(where or name, f"{owner}.{name} belongs to {owner}, not {peer}: a peer edits only its own relations", loc)
    try:
        return p.relation(name)
    except KeyError:
        known = ", ".join(r.name for r in p.relations) or "none"
        raise _fail(where or name, f"{peer} has no relation {name} (its relations: {known})", loc) from None


def convert(rel: Relation, cells: list[str], where: str, locs: list[Location] | None = None) -> Row:
    """Typed values of one tuple; arity and type errors name the offending value."""
    if len(cells) != rel.arity:
        loc = locs[0] if locs else None
        raise _fail(
            where,
            f"{rel.name} has {rel.arity} attribute(s) ({', '.join(rel.attribute_names)}), got {len(cells)} value(s)",
            Location(loc.file, loc.line) if loc else None,
        )
    out: list[int | str] = []
    for i, (cell, attr) in enumerate(zip(cells, rel.attributes)):
        loc = locs[i] if locs else None
        text = cell.strip() if locs is None else cell
        if _SKOLEM_LIKE.match(text.strip()):
            raise _fail(where, f"{attr.name} = {text.strip()}: labeled nulls cannot be edited or rejected (constants only)", loc)
        if attr.type == "int":
            if not is_int_literal(text.strip()):
                raise _fail(where, f"{rel.name}.{attr.name} is int, got {text.strip()!r}", loc)
            out.append(int(text.strip()))
        else:
            if locs is None and len(text) >= 2 and text[0] == '"' and text[-1] == '"':
                text = text[1:-1].replace('\\"', '"').replace("\\\\", "\\")
            if text.startswith("\x00"):
                raise _fail(where, f"{rel.name}.{attr.name}: values may not start with the NUL character", loc)
            out.append(text)
    return tuple(out)


def split_args(text: str, where: str) -> list[str]:
    """Comma-separated values; double-quoted values may hold commas (``\\"`` escapes a quote)."""
    if not text.strip():
        return []
    parts, cur, quoted, i = [], [], False, 0
    while i < len(text):
        ch = text[i]
        if quoted and ch == "\\" and i + 1 < len(text):
            cur.append(text[i : i + 2])
            i += 2
            continue
        if ch == '"':
            quoted = not quoted
        if ch == "," and not quoted:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
        i += 1
    if quoted:
        raise CdssError(f"{where}: unterminated string")
    parts.append("".join(cur))
    return parts


def parse_edit(store: Store, peer: str, text: str, default_op: str | None = None) -> Request:
    """``+B(3, 2)``, ``-B(3, 2)`` or ``PBioSQL.B(3, 2)``; an unsigned ``B(3, 2)`` takes
    ``default_op`` and is refused without one (an edit must say whether it inserts or deletes)."""
    where = f"edit {echo(text.strip())}"
    m = EDIT_SYNTAX.match(text)
    if m is None:
        raise CdssError(f"{where}: expected [+|-]RELATION(value, ...), e.g. +B(3, 2)")
    sign, owner, name, args = m.groups()
    if not sign and default_op is None:
        atom = clip(text.strip())
        raise CdssError(f"{where}: say whether it inserts or deletes: write +{atom} or -{atom}")
    rel = owned_relation(store, peer, f"{owner}.{name}" if owner else name, where)
    values = convert(rel, split_args(args, where), where)
    return Request(sign or default_op, rel, values, where)


def read_csv_requests(store: Store, peer: str, relation: str, path: str | Path, op: str) -> list[Request]:
    """One request per data row of a CSV file whose header names the relation's attributes."""
    rel = owned_relation(store, peer, relation, f"--relation {relation}")
    p = Path(path)
    try:
        fh = open(p, newline="", encoding="utf-8")
    except OSError as err:
        raise CdssError(f"cannot read {p}: {err.strerror}") from None
    out: list[Request] = []
    with fh:
        reader = csv.reader(fh)
        try:
            header = next(reader, None)
            if header is None:
                raise CdssError("empty file: expected a header row naming the attributes", Location(str(p), 1))
            names = list(rel.attribute_names)
            if sorted(header) != sorted(names) or len(set(header)) != len(header):
                raise CdssError(
                    f"header ({', '.join(header)}) does not name the attributes of {peer}.{rel.name} ({', '.join(names)})",
                    Location(str(p), 1),
                )
            order = [header.index(n) for n in names]
            line = reader.line_num
            for row in reader:
                start = line + 1
                line = reader.line_num
                if not row:
                    continue  # a blank line
                if len(row) != len(header):
                    raise CdssError(f"expected {len(header)} value(s), got {len(row)}", Location(str(p), start))
                cells = [row[i] for i in order]
                locs = [Location(str(p), start, i + 1) for i in order]
                out.append(Request(op, rel, convert(rel, cells, f"{p}:{start}", locs), f"{p}:{start}", Location(str(p), start)))
        except csv.Error as err:
            raise CdssError(f"malformed CSV: {err}", Location(str(p), reader.line_num)) from None
        except UnicodeDecodeError as err:
            raise CdssError(f"file is {not_utf8(p)}", Location(str(p))) from None
    return out


@dataclass(frozen=True)
class BatchResult:
    """What a recorded batch did."""

    batch: int
    inserted: int
    deleted: int
    rejected: int
    unrejected: int
    notes: tuple[str, ...] = ()

    def summary(self) -> str:
        parts = [f"{self.inserted} insertion(s)", f"{self.deleted} local deletion(s)", f"{self.rejected} rejection(s)"]
        if self.unrejected:
            parts.append(f"{self.unrejected} lifted rejection(s)")
        return ", ".join(parts)


class AlreadyImported(Exception):
    """A file of the same content was imported before for the same peer, relation and op."""

    def __init__(self, batch: int, relation: str = "") -> None:
        super().__init__(batch)
        self.batch = batch
        self.relation = relation


def apply_batch(
    store: Store, peer: str, requests: list[Request], source: str,
    imported: tuple[str, str, str] | None = None, again: bool = False,
) -> BatchResult:
    """Validate, resolve and record ``requests`` as one batch of ``peer`` (all or nothing).

    ``imported`` is ``(relation, op, sha256)`` of an imported file: unless ``again``, a file of
    that content already imported raises :class:`AlreadyImported` and records nothing."""
    store.check_peer(peer)
    if not requests:
        raise CdssError("empty batch: nothing to record")
    with store.write() as conn:
        if imported is not None and not again:
            # inside the write transaction: two concurrent runs cannot both record it
            earlier = store.find_import(conn, peer, *imported)
            if earlier is not None:
                raise AlreadyImported(earlier)
        # read inside the write transaction: no other batch or exchange commit can interleave
        local: dict[RelationRef, set[Row]] = {}
        rejected: dict[RelationRef, set[Row]] = {}
        for e in store.edits(peer=peer):
            target = (local if e.kind == "l" else rejected).setdefault(RelationRef(e.peer, e.relation), set())
            if e.op == "+":
                target.add(e.values)
            else:
                target.discard(e.values)
        epoch = store.peer_epoch(peer)
        instance: dict[RelationRef, set[Row]] = {}

        def in_instance(rel: Relation, values: Row) -> bool:
            if epoch is None:
                return False
            if rel.ref not in instance:
                name = store.compiled.names.relation(rel.ref, "o")
                instance[rel.ref] = store.read_epoch(epoch, [name])[name]
            return values in instance[rel.ref]

        resolved: list[tuple[str, str, str, Row]] = []
        counts = {"+": 0, "l-": 0, "r+": 0, "r-": 0}
        notes: list[str] = []
        touched: dict[RelationRef, list[Request]] = {}
        for req in requests:
            ref = req.relation.ref
            loc_set = local.setdefault(ref, set())
            rej_set = rejected.setdefault(ref, set())
            if req.op == "+":
                loc_set.add(req.values)
                resolved.append((ref.name, "l", "+", req.values))
                counts["+"] += 1
                touched.setdefault(ref, []).append(req)
            elif req.op == "-":
                if req.values in loc_set:
                    loc_set.discard(req.values)
                    resolved.append((ref.name, "l", "-", req.values))
                    counts["l-"] += 1
                    if in_instance(req.relation, req.values):
                        notes.append(f"{req.text()}: removed from {peer}'s local data; it may still be imported (reject it to hide it)")
                elif req.values in rej_set:
                    raise _fail(req.where, f"{req.text()[1:]} is already rejected at {peer}", req.loc)
                elif in_instance(req.relation, req.values):
                    rej_set.add(req.values)
                    resolved.append((ref.name, "r", "+", req.values))
                    counts["r+"] += 1
                else:
                    at = f"exchange epoch {epoch}" if epoch is not None else "no exchange yet"
                    raise _fail(
                        req.where,
                        f"cannot delete {req.text()[1:]}: it is neither a local tuple of {peer} nor in its instance"
                        f" ({at}); `selp cdss reject` rejects a tuple before it is imported",
                        req.loc,
                    )
            elif req.op == "reject":
                if req.values in rej_set:
                    raise _fail(req.where, f"{req.text()} is already rejected at {peer}", req.loc)
                rej_set.add(req.values)
                resolved.append((ref.name, "r", "+", req.values))
                counts["r+"] += 1
            elif req.op == "unreject":
                if req.values not in rej_set:
                    raise _fail(req.where, f"{req.text()} is not rejected at {peer}", req.loc)
                rej_set.discard(req.values)
                resolved.append((ref.name, "r", "-", req.values))
                counts["r-"] += 1
            else:  # pragma: no cover - callers build requests
                raise ValueError(req.op)
        for ref, reqs in touched.items():
            _check_key(store, peer, ref, local[ref], reqs)
        batch = store.record_batch(conn, peer, source, resolved, imported)
    return BatchResult(batch, counts["+"], counts["l-"], counts["r+"], counts["r-"], tuple(notes))


def _check_key(store: Store, peer: str, ref: RelationRef, rows: set[Row], reqs: list[Request]) -> None:
    """Refuse two local tuples with the same key; blame the last conflicting insertion of the batch."""
    rel = store.cdss.relation(ref)
    pos = [rel.position(a) for a in rel.key]
    if len(pos) == rel.arity:
        return  # the key is the whole tuple: sets never violate it
    groups: dict[tuple, list[Row]] = {}
    for row in rows:
        groups.setdefault(tuple(row[i] for i in pos), []).append(row)
    for req in reversed(reqs):  # blame the latest insertion of a conflicting pair
        if req.values not in rows:
            continue  # inserted, then deleted again later in the batch
        key = tuple(req.values[i] for i in pos)
        others = [r for r in groups[key] if r != req.values]
        if others:
            other = min(others, key=lambda r: tuple(format_value(v) for v in r))
            keytext = ", ".join(f"{a} = {format_value(v)}" for a, v in zip(rel.key, key))
            raise _fail(
                req.where,
                f"key violation: {req.text()[1:]} and {rel.name}({', '.join(format_value(v) for v in other)}) have the"
                f" same key ({keytext}) in {peer}'s local data",
                req.loc,
            )


def import_csv(store: Store, peer: str, relation: str, csv_file: str | Path, delete: bool = False, again: bool = False) -> BatchResult:
    """Record the rows of ``csv_file`` (a header naming the attributes) as one batch of
    ``peer``: insertions, or deletions with ``delete``. Content imported before for the same
    peer, relation and op raises :class:`AlreadyImported` (naming the relation) unless ``again``."""
    op = "-" if delete else "+"
    requests = read_csv_requests(store, peer, relation, csv_file, op)
    if not requests:
        raise CdssError(f"{csv_file}: no data rows; nothing to record")
    # the rows just read are the file's content: hash the same bytes (read_csv_requests has
    # already refused an unreadable file)
    digest = hashlib.sha256(Path(csv_file).read_bytes()).hexdigest()
    source = f"import {'--delete ' if delete else ''}{relation} {csv_file}"
    name = requests[0].relation.name
    try:
        return apply_batch(store, peer, requests, source, (name, op, digest), again)
    except AlreadyImported as done:
        raise AlreadyImported(done.batch, name) from None


def rejection_requests(store: Store, peer: str, tuples: tuple[str, ...] | list[str], undo: bool = False) -> list[Request]:
    """Requests rejecting the imported ``tuples`` at ``peer`` (written without ``+``/``-``), or
    lifting their rejections with ``undo``."""
    op = "unreject" if undo else "reject"
    out = []
    for t in tuples:
        r = parse_edit(store, peer, t, op)
        if r.op in "+-":
            raise CdssError(f"reject {t!r}: write the tuple without + or -")
        out.append(r)
    return out
