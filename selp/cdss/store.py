"""The durable store of a CDSS directory: edit logs, publications, rejections, instance epochs.

Layout (``DIR`` holds ``cdss.toml``)::

    DIR/.selp/store.sqlite                    catalog, edit logs, publications, exchange state
    DIR/.selp/exchange.lock                   fcntl lock held by the one running exchange
    DIR/.selp/instances/epoch-000007/B_o.parquet   every relation of the compiled program
    DIR/.selp/instances/.tmp-epoch-000008-<pid>/   an exchange being written (never read)

**SQLite** (stdlib, WAL journal, ``synchronous=FULL``) holds

* ``meta``: the store format, the *schema fingerprint* (peers, relations, attribute names and
  types, keys) and the *program fingerprint* (the compiled datalog^sk program) of ``cdss.toml``
  when the store was created. A changed schema makes every command refuse (the edit logs may no
  longer fit it); changed mappings or trust only make the next exchange recompute from scratch.
* ``batches`` and ``edits``: the edit log. An edit is ``(peer, relation, kind, op, tuple)`` with
  ``kind`` ``l`` (local contribution) or ``r`` (rejection) and ``op`` ``+`` or ``-``, in order
  (``seq``), grouped in batches (one CLI call or CSV import) with a timestamp. A batch is
  unpublished until its peer publishes; ``batches.published`` is then its publication epoch.
* ``publications``: publication epochs, increasing, one per ``publish``.
* ``exchanges``: exchange epochs, one per completed exchange: which publication epoch's base
  data the instances reflect, the engine, strategy, timing and statistics; ``collected`` once
  its Parquet files were garbage-collected.
* ``peers``: the exchange epoch each peer's instance reflects (NULL before its first exchange).

The edit log stores *resolved* edits: ``-B(3, 2)`` becomes ``(l, -)`` when ``B(3, 2)`` is one of
the peer's local contributions and a rejection ``(r, +)`` when it is only imported (decided by
:mod:`selp.cdss.edits` when the batch is recorded), so replaying the log is a plain set fold.

**Instances** are Parquet, one file (in-process engines, pyarrow) or one directory of part files
(Spark) per relation, columns named as declared in the compiled program, every column a string
in selp's uniform encoding (:func:`selp.values.encode`: ints as decimal text, labeled nulls
marked with NUL) so that labeled nulls round-trip exactly; :func:`read_relation` decodes them.

**Atomic switch.** An exchange writes the new epoch into a temporary directory, fsyncs every file
and the directory, renames it to ``epoch-NNNNNN``, fsyncs ``instances/`` and only then commits the
exchange row and the peer's pointer in one SQLite transaction. Readers follow the pointers in
SQLite only, so a crash at any point leaves the previous epoch readable; a directory without its
row (crash between rename and commit) or a temporary directory is removed by the next exchange,
which can simply be re-run.

**Garbage collection.** After the switch, epoch directories are deleted except the last
``keep`` (default :data:`DEFAULT_KEEP`) and every epoch some peer's instance still reflects.

**Concurrency.** Edits and publications are short ``BEGIN IMMEDIATE`` transactions: a second
writer waits up to :data:`BUSY_TIMEOUT_S` (or ``$SELP_CDSS_BUSY_TIMEOUT``) seconds and is then refused with one line.
Exchanges are long (Spark), so they are serialised by an exclusive ``fcntl`` lock on
``exchange.lock`` taken for the whole exchange; a second exchange waits up to ``--wait`` seconds
and is then refused, naming the holder. The OS releases the lock when a process dies, so a killed
exchange never blocks the next one. Edits and publications may run during an exchange: the
exchange reads the publications committed when it starts and records which one it reflects.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import sqlite3
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Iterable, Iterator

from selp.cdss.compile import CompiledCDSS, compile_cdss
from selp.cdss.config import CONFIG_FILE, load_cdss
from selp.cdss.errors import CdssError
from selp.cdss.model import CDSS, Mapping, RelationRef
from selp.errors import clip
from selp.outfile import temp_dir
from selp.values import Value, decode, encode

STORE_DIR = ".selp"
DB_FILE = "store.sqlite"
LOCK_FILE = "exchange.lock"
INSTANCES = "instances"
FORMAT = 1
DEFAULT_KEEP = 3
BUSY_TIMEOUT_S = 10.0
BUSY_TIMEOUT_ENV = "SELP_CDSS_BUSY_TIMEOUT"  # seconds; overrides BUSY_TIMEOUT_S
# Test hook: seconds to sleep inside the write phase of an exchange, after the first relation
# file is written (so a test can kill the process mid-write). Never set it otherwise.
CRASH_HOOK_ENV = "SELP_CDSS_TEST_SLEEP_IN_WRITE"

Row = tuple[Value, ...]

_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE peers (name TEXT PRIMARY KEY, exchange_epoch INTEGER);
CREATE TABLE publications (epoch INTEGER PRIMARY KEY, peer TEXT NOT NULL, created REAL NOT NULL, edits INTEGER NOT NULL);
CREATE TABLE batches (
    id INTEGER PRIMARY KEY AUTOINCREMENT, peer TEXT NOT NULL, created REAL NOT NULL,
    source TEXT NOT NULL, published INTEGER REFERENCES publications(epoch));
CREATE TABLE edits (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, batch INTEGER NOT NULL REFERENCES batches(id),
    peer TEXT NOT NULL, relation TEXT NOT NULL, kind TEXT NOT NULL CHECK (kind IN ('l', 'r')),
    op TEXT NOT NULL CHECK (op IN ('+', '-')), tuple TEXT NOT NULL);
CREATE INDEX edits_by_peer ON edits (peer, seq);
CREATE TABLE exchanges (
    epoch INTEGER PRIMARY KEY, peer TEXT NOT NULL, publication INTEGER NOT NULL,
    program TEXT NOT NULL, engine TEXT NOT NULL, strategy TEXT NOT NULL, created REAL NOT NULL,
    seconds REAL NOT NULL, stats TEXT NOT NULL, collected INTEGER NOT NULL DEFAULT 0);
""" + "\n"

# The content hash of each imported file, recorded with its batch in the same transaction, so a
# re-run of an import whose earlier run committed (then was killed before saying so) is
# recognised. Created on demand too: stores made before it lack the table, and the format is the
# same (an older selp ignores it).
_IMPORTS_TABLE = """
CREATE TABLE IF NOT EXISTS imports (
    batch INTEGER PRIMARY KEY REFERENCES batches(id), peer TEXT NOT NULL, relation TEXT NOT NULL,
    op TEXT NOT NULL, sha256 TEXT NOT NULL);
"""
_SCHEMA += _IMPORTS_TABLE


class DamagedStore(CdssError):
    """A file of the store that cannot be read: the message names it and what to do."""


def _damaged_db(path: Path, err: Exception) -> DamagedStore:
    """The one-line error for a ``store.sqlite`` that is not a readable database."""
    return DamagedStore(
        f"{path}: the store database is damaged ({clip(str(err), 60)}); it alone holds the edit logs:"
        " restore it from a backup (the instances are rebuilt from it by `selp cdss exchange`)"
    )


def _is_damage(err: sqlite3.Error) -> bool:
    # a busy or locked database is contention, reported where transactions begin; anything
    # else from SQLite on a store selp made (not a database, malformed, a missing table)
    # means the file was damaged
    text = str(err)
    return isinstance(err, sqlite3.DatabaseError) and "locked" not in text and "busy" not in text


def schema_fingerprint(cdss: CDSS) -> str:
    """A hash of what the edit logs depend on: peers, relations, attribute names/types, keys."""
    parts = [
        [r.peer, r.name, [[a.name, a.type] for a in r.attributes], list(r.key)] for r in cdss.relations()
    ]
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:16]


def program_fingerprint(compiled: CompiledCDSS) -> str:
    """A hash of the compiled program (mappings and trust): stored instances depend on it."""
    return hashlib.sha256(compiled.text.encode()).hexdigest()[:16]


TGDS_KEY = "tgds"  # meta: {mapping: [fingerprint, version]} of the tgds the latest exchange used


def tgd_fingerprint(m: Mapping) -> str:
    """A hash of a tgd as written (blanks ignored): a change is an edit of the tgd."""
    return hashlib.sha256("".join(m.text.split()).encode()).hexdigest()[:16]


def tgd_versions(cdss: CDSS, recorded: dict[str, list]) -> CDSS:
    """``cdss`` with each mapping's version: the recorded one while its tgd is unchanged, one
    more when it was edited (or re-added with another text), 1 for a new name. Skolem
    functions are named by version (:meth:`selp.cdss.compile.InternalNames.skolem`), so an
    unchanged tgd keeps its names across edits of others and an edited one gets fresh ones."""
    out = []
    for m in cdss.mappings:
        fp, version = recorded.get(m.name, (tgd_fingerprint(m), 1))
        out.append(replace(m, version=version if fp == tgd_fingerprint(m) else version + 1))
    return replace(cdss, mappings=tuple(out))


def tgd_record(cdss: CDSS, recorded: dict[str, list]) -> dict[str, list]:
    """What the store records after an exchange with ``cdss``'s tgds (dropped ones are kept, so
    a mapping re-added under an old name gets a fresh version)."""
    return {**recorded, **{m.name: [tgd_fingerprint(m), m.version] for m in cdss.mappings}}


def epoch_name(epoch: int) -> str:
    return f"epoch-{epoch:06d}"


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_tree(path: Path) -> None:
    """fsync every file and directory under ``path`` (and ``path``), children first."""
    for root, dirs, files in os.walk(path, topdown=False):
        for f in files:
            fd = os.open(os.path.join(root, f), os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        _fsync_dir(Path(root))


@dataclass(frozen=True)
class Edit:
    """One resolved edit of the log."""

    seq: int
    batch: int
    peer: str
    relation: str
    kind: str  # "l" local contribution, "r" rejection
    op: str  # "+" or "-"
    values: Row
    created: float = 0.0
    published: int | None = None


@dataclass(frozen=True)
class ExchangeInfo:
    """A committed exchange epoch."""

    epoch: int
    peer: str
    publication: int
    program: str
    engine: str
    strategy: str
    created: float
    seconds: float
    stats: dict[str, Any]
    collected: bool


class Store:
    """An open store of a CDSS directory (see the module docstring)."""

    def __init__(self, directory: str | Path, cdss: CDSS, compiled: CompiledCDSS, conn: sqlite3.Connection) -> None:
        self.directory = Path(directory)
        self.root = self.directory / STORE_DIR
        self.cdss = cdss
        self.compiled = compiled
        self.conn = conn

    # -- opening -----------------------------------------------------------------------------
    @classmethod
    def init(cls, directory: str | Path) -> "Store":
        """Create the store of ``directory`` from its ``cdss.toml``; refuses if one exists.

        The store is built in a temporary directory and renamed into place, so a crash or a
        concurrent ``init`` never leaves a half-made store (the loser of a race is refused)."""
        d = Path(directory)
        cdss = load_cdss(d)
        compiled = compile_cdss(cdss)
        root = d / STORE_DIR
        if root.exists():
            raise CdssError(
                f"a store already exists at {root}; to start over (discarding every edit log) move"
                " it away first"
            )
        tmp = temp_dir(".selp-init-", d)
        try:
            (tmp / INSTANCES).mkdir()
            conn = _connect(tmp / DB_FILE)
            with conn:
                conn.executescript(_SCHEMA)
            with _transaction(conn):
                meta = {
                    "format": str(FORMAT),
                    "schema": schema_fingerprint(cdss),
                    "program": program_fingerprint(compiled),
                    "created": repr(time.time()),
                    "name": cdss.name,
                    TGDS_KEY: json.dumps(tgd_record(cdss, {}), sort_keys=True),
                }
                conn.executemany("INSERT INTO meta VALUES (?, ?)", meta.items())
                conn.executemany("INSERT INTO peers VALUES (?, NULL)", [(p.name,) for p in cdss.peers])
            conn.close()
            fsync_tree(tmp)
            try:
                os.rename(tmp, root)
            except OSError:
                raise CdssError(f"a store already exists at {root} (created concurrently)") from None
            _fsync_dir(d)
        finally:
            if tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)
        return cls.open(d)

    @classmethod
    def open(cls, directory: str | Path) -> "Store":
        """Open the store of ``directory``; refuses when ``cdss.toml``'s schema changed since init."""
        d = Path(directory)
        cdss = load_cdss(d)
        root = d / STORE_DIR
        if not (root / DB_FILE).is_file():
            raise CdssError(f"no store in {d}: create it with `selp cdss init {d}`")
        compiled = compile_cdss(cdss)
        try:
            conn = _connect(root / DB_FILE)
            meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
        except sqlite3.Error as err:
            if not _is_damage(err):
                raise
            raise _damaged_db(root / DB_FILE, err) from None
        if "format" not in meta or "schema" not in meta:
            conn.close()
            raise _damaged_db(root / DB_FILE, ValueError("its meta table lost the store format"))
        if meta.get("format") != str(FORMAT):
            conn.close()
            raise CdssError(f"{root / DB_FILE}: store format {meta.get('format')!r}, this selp reads {FORMAT}")
        if meta["schema"] != schema_fingerprint(cdss):
            conn.close()
            raise CdssError(
                f"the schema in {d / CONFIG_FILE} (peers, relations, attributes, keys) changed since"
                f" the store was created (fingerprint {schema_fingerprint(cdss)}, store {meta['schema']});"
                f" restore it, or move {root} away and init a new store"
            )
        recorded = json.loads(meta.get(TGDS_KEY, "{}"))
        if recorded:
            cdss = tgd_versions(cdss, recorded)
            compiled = compile_cdss(cdss)
        return cls(d, cdss, compiled, conn)

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: object) -> None:
        try:
            self.close()
        except sqlite3.Error:
            pass  # the error being raised (or the damage reported below) says more
        # SQLite reads pages lazily: damage past the first page surfaces in whichever query
        # reaches it, so every command run on an open store is covered here
        if isinstance(exc, sqlite3.Error) and _is_damage(exc):
            raise _damaged_db(self.root / DB_FILE, exc) from None

    # -- transactions and locks ------------------------------------------------------------
    def write(self) -> contextlib.AbstractContextManager[sqlite3.Connection]:
        """A ``BEGIN IMMEDIATE`` transaction: one writer at a time, readers unaffected."""
        return _transaction(self.conn)

    @contextlib.contextmanager
    def exchange_lock(self, peer: str, wait: float) -> Iterator[None]:
        """Hold the exclusive exchange lock (waiting up to ``wait`` seconds, then refusing)."""
        path = self.root / LOCK_FILE
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            deadline = time.monotonic() + max(wait, 0.0)
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        holder = _read_holder(path)
                        raise CdssError(
                            f"the store is busy: another exchange ({holder}) is running; waited {wait:g}s"
                            " (raise --wait, or try again later)"
                        ) from None
                    time.sleep(0.1)
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"pid {os.getpid()}, peer {peer}, since {time.strftime('%H:%M:%S')}\n".encode(), 0)
            yield
        finally:
            os.close(fd)  # closing releases the flock

    # -- catalog ---------------------------------------------------------------------------
    def meta(self) -> dict[str, str]:
        return dict(self.conn.execute("SELECT key, value FROM meta").fetchall())

    def peer_epochs(self) -> dict[str, int | None]:
        """Peer -> the exchange epoch its instance reflects (None: never exchanged)."""
        return dict(self.conn.execute("SELECT name, exchange_epoch FROM peers ORDER BY rowid").fetchall())

    def peer_epoch(self, peer: str) -> int | None:
        self.check_peer(peer)
        row = self.conn.execute("SELECT exchange_epoch FROM peers WHERE name = ?", (peer,)).fetchone()
        return row[0] if row else None

    def check_peer(self, peer: str) -> None:
        names = [p.name for p in self.cdss.peers]
        if peer not in names:
            raise CdssError(f"unknown peer {peer!r} (peers: {', '.join(names)})")

    def last_publication(self) -> int:
        """The latest publication epoch (0: nothing published yet)."""
        return self.conn.execute("SELECT COALESCE(MAX(epoch), 0) FROM publications").fetchone()[0]

    def publications(self) -> list[tuple[int, str, float, int]]:
        return self.conn.execute("SELECT epoch, peer, created, edits FROM publications ORDER BY epoch").fetchall()

    def exchange(self, epoch: int) -> ExchangeInfo:
        row = self.conn.execute("SELECT * FROM exchanges WHERE epoch = ?", (epoch,)).fetchone()
        if row is None:
            raise CdssError(f"no exchange epoch {epoch}")
        return _exchange_info(row)

    def exchanges(self) -> list[ExchangeInfo]:
        return [_exchange_info(r) for r in self.conn.execute("SELECT * FROM exchanges ORDER BY epoch")]

    def last_exchange(self) -> ExchangeInfo | None:
        row = self.conn.execute("SELECT * FROM exchanges ORDER BY epoch DESC LIMIT 1").fetchone()
        return _exchange_info(row) if row else None

    # -- the edit log ------------------------------------------------------------------------
    def edits(self, peer: str | None = None, published_upto: int | None = None, unpublished_of: str | None = None) -> list[Edit]:
        """The edit log in order: of ``peer`` (None: all); only edits published at or before
        ``published_upto`` when given; plus the unpublished edits of ``unpublished_of``."""
        sql = (
            "SELECT e.seq, e.batch, e.peer, e.relation, e.kind, e.op, e.tuple, b.created, b.published"
            " FROM edits e JOIN batches b ON b.id = e.batch WHERE 1=1"
        )
        args: list[Any] = []
        if peer is not None:
            sql += " AND e.peer = ?"
            args.append(peer)
        if published_upto is not None:
            sql += " AND ((b.published IS NOT NULL AND b.published <= ?)"
            args.append(published_upto)
            if unpublished_of is not None:
                sql += " OR (b.published IS NULL AND b.peer = ?)"
                args.append(unpublished_of)
            sql += ")"
        sql += " ORDER BY e.seq"
        return [
            Edit(seq, batch, p, rel, kind, op, tuple(json.loads(t)), created, pub)
            for seq, batch, p, rel, kind, op, t, created, pub in self.conn.execute(sql, args)
        ]

    def unpublished_counts(self) -> dict[str, int]:
        rows = self.conn.execute(
            "SELECT b.peer, COUNT(*) FROM edits e JOIN batches b ON b.id = e.batch"
            " WHERE b.published IS NULL GROUP BY b.peer"
        )
        return dict(rows.fetchall())

    def base_data(self, published_upto: int, unpublished_of: str | None = None) -> dict[str, set[Row]]:
        """The EDB of the compiled program (``B_l``, ``B_r``, ...) after replaying the log."""
        out: dict[str, set[Row]] = {}
        for r in self.cdss.relations():
            for kind in ("l", "r"):
                out[self.compiled.names.relation(r.ref, kind)] = set()
        for e in self.edits(published_upto=published_upto, unpublished_of=unpublished_of):
            target = out[self.compiled.names.relation(RelationRef(e.peer, e.relation), e.kind)]
            if e.op == "+":
                target.add(e.values)
            else:
                target.discard(e.values)
        return out

    def find_import(self, conn: sqlite3.Connection, peer: str, relation: str, op: str, sha256: str) -> int | None:
        """The batch that imported a file of this content for ``peer``'s ``relation`` with ``op``
        (``+`` or ``-``), or None."""
        has = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'imports'").fetchone()
        if has is None:
            return None
        row = conn.execute(
            "SELECT MAX(batch) FROM imports WHERE peer = ? AND relation = ? AND op = ? AND sha256 = ?",
            (peer, relation, op, sha256),
        ).fetchone()
        return row[0] if row else None

    def record_batch(
        self, conn: sqlite3.Connection, peer: str, source: str, edits: Iterable[tuple[str, str, str, Row]],
        imported: tuple[str, str, str] | None = None,
    ) -> int:
        """Append a batch of resolved edits ``(relation, kind, op, values)`` inside the caller's
        write transaction; returns the batch id. ``imported`` is ``(relation, op, sha256)`` of
        the file a batch imports, recorded with it (see :meth:`find_import`)."""
        cur = conn.execute("INSERT INTO batches (peer, created, source) VALUES (?, ?, ?)", (peer, time.time(), source))
        batch = cur.lastrowid
        assert batch is not None
        if imported is not None:
            conn.execute(_IMPORTS_TABLE.strip().rstrip(";"))  # execute, not executescript: that would COMMIT
            conn.execute("INSERT INTO imports VALUES (?, ?, ?, ?, ?)", (batch, peer, *imported))
        conn.executemany(
            "INSERT INTO edits (batch, peer, relation, kind, op, tuple) VALUES (?, ?, ?, ?, ?, ?)",
            [(batch, peer, rel, kind, op, json.dumps(list(values))) for rel, kind, op, values in edits],
        )
        return batch

    def publish(self, peer: str) -> tuple[int, int]:
        """Publish ``peer``'s unpublished batches: (publication epoch, edits); (0, 0) if none."""
        self.check_peer(peer)
        with self.write() as conn:
            n = conn.execute(
                "SELECT COUNT(*) FROM edits e JOIN batches b ON b.id = e.batch WHERE b.peer = ? AND b.published IS NULL",
                (peer,),
            ).fetchone()[0]
            if not n:
                return 0, 0
            epoch = conn.execute("SELECT COALESCE(MAX(epoch), 0) + 1 FROM publications").fetchone()[0]
            conn.execute("INSERT INTO publications VALUES (?, ?, ?, ?)", (epoch, peer, time.time(), n))
            conn.execute("UPDATE batches SET published = ? WHERE peer = ? AND published IS NULL", (epoch, peer))
        return epoch, n

    def publish_deletions(self, deletions: dict[str, list[tuple[str, Row]]], source: str) -> list[tuple[str, int, int]]:
        """Record and publish, in one transaction, a batch of local deletions ``(relation, values)``
        for each peer (update policies delete other peers' local contributions): all or none.
        Returns ``(peer, publication epoch, edits)`` per peer with deletions; other unpublished
        batches of those peers stay unpublished."""
        out: list[tuple[str, int, int]] = []
        with self.write() as conn:
            for peer, rows in deletions.items():
                if not rows:
                    continue
                self.check_peer(peer)
                batch = self.record_batch(conn, peer, source, [(rel, "l", "-", values) for rel, values in rows])
                epoch = conn.execute("SELECT COALESCE(MAX(epoch), 0) + 1 FROM publications").fetchone()[0]
                conn.execute("INSERT INTO publications VALUES (?, ?, ?, ?)", (epoch, peer, time.time(), len(rows)))
                conn.execute("UPDATE batches SET published = ? WHERE id = ?", (epoch, batch))
                out.append((peer, epoch, len(rows)))
        return out

    # -- instances ---------------------------------------------------------------------------
    @property
    def instances_dir(self) -> Path:
        return self.root / INSTANCES

    def epoch_dir(self, epoch: int) -> Path:
        return self.instances_dir / epoch_name(epoch)

    def relation_names(self) -> list[str]:
        """Every relation of the compiled program (the files of an epoch)."""
        return [d.relation for d in self.compiled.program.decls]

    def columns(self, relation: str) -> tuple[tuple[str, str], ...]:
        for d in self.compiled.program.decls:
            if d.relation == relation:
                return d.columns
        raise CdssError(f"no relation {relation}")

    def read_epoch(self, epoch: int, relations: Iterable[str] | None = None) -> dict[str, set[Row]]:
        """Relations of a committed epoch as Python values."""
        names = self.relation_names() if relations is None else list(relations)
        try:
            return {rel: read_relation(self.epoch_dir(epoch), rel, tuple(t for _, t in self.columns(rel))) for rel in names}
        except DamagedStore as err:
            # instances are derived data: say which exchange rebuilds this epoch's peer(s)
            peers = [p for p, e in self.peer_epochs().items() if e == epoch] or [p.name for p in self.cdss.peers][:1]
            cmd = f"`selp cdss exchange {self.directory} --peer {peers[0]}`"
            raise DamagedStore(f"{err}; instances are derived data: {cmd} rebuilds them from the edit log") from None

    def verify(self) -> str:
        """Check the store's files: SQLite's own consistency check, then every instance file of
        each epoch some peer reflects is read whole. Raises :class:`DamagedStore` naming the
        first damaged file; returns a summary of what was checked."""
        problems = [r[0] for r in self.conn.execute("PRAGMA quick_check").fetchall()]
        if problems != ["ok"]:
            raise _damaged_db(self.root / DB_FILE, ValueError(problems[0]))
        epochs = sorted({e for e in self.peer_epochs().values() if e is not None})
        for epoch in epochs:
            self.read_epoch(epoch)
        files = len(epochs) * len(self.relation_names())
        return f"store {self.root}: ok ({len(self.edits())} edit(s); {files} instance file(s) of {len(epochs)} epoch(s) read)"

    def clean_uncommitted(self) -> list[Path]:
        """Remove temporary epoch directories and epoch directories without a committed row (a
        crash between rename and commit). Only under the exchange lock."""
        committed = {r[0] for r in self.conn.execute("SELECT epoch FROM exchanges")}
        removed = []
        for p in sorted(self.instances_dir.iterdir()):
            stale = p.name.startswith(".tmp-")
            if p.name.startswith("epoch-"):
                try:
                    stale = int(p.name[len("epoch-"):]) not in committed
                except ValueError:
                    stale = False
            if stale:
                shutil.rmtree(p, ignore_errors=True)
                removed.append(p)
        return removed

    def new_epoch_number(self) -> int:
        return self.conn.execute("SELECT COALESCE(MAX(epoch), 0) + 1 FROM exchanges").fetchone()[0]

    def commit_epoch(self, tmp: Path, info: ExchangeInfo) -> None:
        """Switch to a fully written epoch: fsync, rename, then commit the row and the pointer."""
        fsync_tree(tmp)
        final = self.epoch_dir(info.epoch)
        os.rename(tmp, final)
        _fsync_dir(self.instances_dir)
        with self.write() as conn:
            conn.execute(
                "INSERT INTO exchanges (epoch, peer, publication, program, engine, strategy, created, seconds, stats)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (info.epoch, info.peer, info.publication, info.program, info.engine, info.strategy,
                 info.created, info.seconds, json.dumps(info.stats, sort_keys=True)),
            )
            conn.execute("UPDATE peers SET exchange_epoch = ? WHERE name = ?", (info.epoch, info.peer))
            # the instances now hold this version of each tgd's labeled nulls
            recorded = json.loads(self.meta().get(TGDS_KEY, "{}"))
            tgds = json.dumps(tgd_record(self.cdss, recorded), sort_keys=True)
            conn.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (TGDS_KEY, tgds))

    def collect_garbage(self, keep: int = DEFAULT_KEEP) -> list[int]:
        """Delete epoch directories except the last ``keep`` and those a peer reflects."""
        epochs = [r[0] for r in self.conn.execute("SELECT epoch FROM exchanges WHERE collected = 0 ORDER BY epoch")]
        live = {e for e in self.peer_epochs().values() if e is not None}
        live |= set(epochs[-max(keep, 1):])
        dead = [e for e in epochs if e not in live]
        for e in dead:
            shutil.rmtree(self.epoch_dir(e), ignore_errors=True)
        if dead:
            with self.write() as conn:
                conn.executemany("UPDATE exchanges SET collected = 1 WHERE epoch = ?", [(e,) for e in dead])
        return dead


def _exchange_info(row: tuple) -> ExchangeInfo:
    epoch, peer, pub, program, engine, strategy, created, seconds, stats, collected = row
    return ExchangeInfo(epoch, peer, pub, program, engine, strategy, created, seconds, json.loads(stats), bool(collected))


def busy_timeout() -> float:
    """How long a writer waits for another writer's transaction (seconds)."""
    return float(os.environ.get(BUSY_TIMEOUT_ENV) or BUSY_TIMEOUT_S)


def _connect(path: Path) -> sqlite3.Connection:
    # isolation_level=None: transactions are explicit (BEGIN IMMEDIATE in _transaction)
    conn = sqlite3.connect(path, timeout=busy_timeout(), isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=FULL")
    conn.execute("PRAGMA foreign_keys=ON")
    return conn


@contextlib.contextmanager
def _transaction(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    try:
        conn.execute("BEGIN IMMEDIATE")
    except sqlite3.OperationalError as err:
        if "locked" in str(err) or "busy" in str(err):
            raise CdssError(
                f"the store is busy: another process is writing to it; waited {busy_timeout():g}s, try again"
            ) from None
        raise
    try:
        yield conn
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def _read_holder(path: Path) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace").strip()  # only shown to the user
    except OSError:
        text = ""
    return text or "holder unknown"


# -- Parquet ------------------------------------------------------------------------------------
def write_relation(directory: Path, relation: str, columns: tuple[tuple[str, str], ...], rows: Iterable[Row]) -> Path:
    """Write a relation as ``directory/REL.parquet`` (string columns, uniform encoding)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = list(rows)
    names = [c for c, _ in columns]
    arrays = [pa.array([encode(r[i]) for r in rows], type=pa.string()) for i in range(len(names))]
    path = directory / f"{relation}.parquet"
    pq.write_table(pa.Table.from_arrays(arrays, names=names), path)
    return path


def read_relation(directory: Path, relation: str, types: tuple[str, ...]) -> set[Row]:
    """Read ``REL.parquet`` (a file, or Spark's directory of part files) back into values; a file
    that cannot be read raises :class:`DamagedStore` naming it."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = directory / f"{relation}.parquet"
    if not path.exists():
        raise CdssError(f"{path}: missing from the store (was the epoch garbage-collected meanwhile? run the command again)")
    try:
        table = pq.read_table(path)
        if table.num_columns != len(types):
            raise ValueError(f"{table.num_columns} column(s), expected {len(types)}")
        cols = [table.column(i).to_pylist() for i in range(table.num_columns)]
        return {tuple(decode(v, t) for v, t in zip(vals, types)) for vals in zip(*cols)}
    except (OSError, ValueError, TypeError, pa.ArrowException) as err:  # ArrowInvalid: truncated, not Parquet
        reason = (str(err).splitlines() or [type(err).__name__])[0]
        reason = reason.split("': ", 1)[-1]  # pyarrow repeats the path first
        raise DamagedStore(f"{path}: damaged instance file ({clip(reason, 60)})") from None


def crash_hook() -> None:
    """The test hook of :data:`CRASH_HOOK_ENV` (see there)."""
    delay = os.environ.get(CRASH_HOOK_ENV)
    if delay:
        time.sleep(float(delay))
