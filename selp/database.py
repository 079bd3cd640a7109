"""EDB directories: discovery, loading into Python values, and atomic result writing.

A database directory holds one file per EDB relation: ``REL.csv`` (a header row, then one fact per
row, RFC-4180 quoting) or ``REL.parquet`` with the same columns. An optional ``_weight`` column holds
the fact's weight (raw text; the ranking monoid interprets it). With a ``.decl`` the header must name
exactly the declared columns (in any order); without one, columns are taken in file order. Types
follow :mod:`selp.language.types`. Inline facts of the program are added to the file's facts.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Iterator

from selp.errors import DataError, Location, not_utf8
from selp.language.ast import Program
from selp.language.types import DataEvidence, resolve_types
from selp.language.validate import Analysis
from selp.values import SKOLEM_MARK, Skolem, Value, display_value, is_int_literal, read_float

WEIGHT_COLUMN = "_weight"
FORMATS = ("csv", "parquet")


@dataclass(frozen=True)
class TableFile:
    """One relation's data file in a database directory."""

    relation: str
    path: Path
    format: str


class TableFiles(dict):
    """Relation name -> :class:`TableFile`, remembering the directory searched (None: no --db),
    so :func:`check_files` can tell "no --db" from "a --db holding none of the program's files"."""

    def __init__(self, directory: Path | None = None) -> None:
        super().__init__()
        self.directory = directory


def discover(db_dir: str | Path | None) -> dict[str, TableFile]:
    """Map relation name -> data file in ``db_dir`` (``REL.csv`` or ``REL.parquet``)."""
    if db_dir is None:
        return TableFiles()
    d = Path(db_dir)
    if not d.exists():
        raise DataError(f"database directory not found: {d}")
    if not d.is_dir():
        raise DataError(f"--db must be a directory of REL.csv / REL.parquet files: {d}")
    out = TableFiles(d)
    for p in sorted(d.iterdir()):
        fmt = p.suffix[1:].lower()
        if fmt not in FORMATS or p.name.startswith((".", "_")):
            continue
        rel = p.stem
        if rel in out:
            raise DataError(f"relation {rel} has two data files: {out[rel].path.name} and {p.name}", Location(str(p)))
        out[rel] = TableFile(rel, p, fmt)
    return out


def column_names(program: Program, rel: str, arity: int) -> tuple[str, ...]:
    """Declared column names, else ``c1..cn``."""
    for d in program.decls:
        if d.relation == rel:
            return tuple(c for c, _ in d.columns)
    return tuple(f"c{i + 1}" for i in range(arity))


def check_files(analysis: Analysis, files: dict[str, TableFile]) -> list[str]:
    """Refuse data for IDB relations; return warnings for files the program does not use."""
    warnings = []
    for rel, tf in files.items():
        if rel in analysis.idb:
            raise DataError(
                f"relation {rel} has rules and also input facts in {tf.path.name}; put the facts in"
                f" another relation (e.g. {rel}_edb) and add a copy rule",
                Location(str(tf.path)),
            )
        if rel not in analysis.arities:
            warnings.append(f"{tf.path}: relation {rel} is not used by the program; ignored")
    directory = getattr(files, "directory", None)
    if directory is not None and analysis.edb and not any(rel in files for rel in analysis.edb):
        # legal (an empty database), but mostly a wrong --db path or layout (a CDSS's
        # data/<peer>/): every answer would silently be empty
        wanted = sorted(analysis.edb)
        shown = ", ".join(f"{rel}.csv or {rel}.parquet" for rel in wanted[:5])
        more = f" and {len(wanted) - 5} more" if len(wanted) > 5 else ""
        warnings.append(
            f"{directory}: no data file for any EDB relation of the program (expected {shown}{more});"
            " every EDB relation is empty"
        )
    return warnings


def map_header(analysis: Analysis, tf: TableFile, header: list[str]) -> tuple[list[int], int | None]:
    """Positions of the relation's columns (and of ``_weight``) in a file header."""
    rel = tf.relation
    arity = analysis.arities[rel]
    loc = Location(str(tf.path), 1 if tf.format == "csv" else None)
    weight_pos = header.index(WEIGHT_COLUMN) if WEIGHT_COLUMN in header else None
    data_cols = [h for h in header if h != WEIGHT_COLUMN]
    if len(set(header)) != len(header):
        dup = next(h for h in header if header.count(h) > 1)
        raise DataError(f"column {dup!r} appears twice in the header", loc)
    if len(data_cols) != arity:
        raise DataError(
            f"{rel} has {arity} column(s) in the program but the file has {len(data_cols)}"
            f" ({', '.join(data_cols) or 'none'})",
            loc,
        )
    declared = [d for d in analysis.program.decls if d.relation == rel]
    if declared:
        names = [c for c, _ in declared[0].columns]
        if set(names) != set(data_cols):
            raise DataError(
                f"header ({', '.join(data_cols)}) does not match the declared columns of {rel}"
                f" ({', '.join(names)})",
                loc,
            )
        return [header.index(n) for n in names], weight_pos
    return [i for i, h in enumerate(header) if h != WEIGHT_COLUMN], weight_pos


@dataclass
class RawTable:
    """A file's cells as text, with the source line of every row (for error messages)."""

    rows: list[tuple[str, ...]]
    weights: list[str | None]
    lines: list[int | None]
    tf: TableFile


def _read_csv(analysis: Analysis, tf: TableFile) -> RawTable:
    try:
        fh = open(tf.path, newline="", encoding="utf-8-sig")  # tolerate the BOM spreadsheet programs write
    except OSError as err:
        raise DataError(f"cannot read {tf.path}: {err.strerror}") from None
    rows: list[tuple[str, ...]] = []
    weights: list[str | None] = []
    lines: list[int | None] = []
    with fh:
        reader = csv.reader(fh, strict=True)
        try:
            header = next(reader, None)
            if header is None:
                raise DataError("empty file: a header row is required", Location(str(tf.path), 1))
            header = [h.strip() for h in header]
            positions, wpos = map_header(analysis, tf, header)
            width = len(header)
            line = reader.line_num
            for rec in reader:
                if not rec:  # blank line
                    line = reader.line_num
                    continue
                if len(rec) != width:
                    raise DataError(
                        f"row has {len(rec)} field(s) but the header has {width}", Location(str(tf.path), line + 1)
                    )
                rows.append(tuple(rec[p] for p in positions))
                weights.append(rec[wpos] if wpos is not None and rec[wpos] != "" else None)
                lines.append(line + 1)
                line = reader.line_num
        except csv.Error as err:
            raise DataError(f"malformed CSV: {err}", Location(str(tf.path), reader.line_num)) from None
        except UnicodeDecodeError as err:
            raise DataError(f"file is {not_utf8(tf.path)}", Location(str(tf.path))) from None
    return RawTable(rows, weights, lines, tf)


def _read_parquet(analysis: Analysis, tf: TableFile) -> RawTable:
    import pyarrow.parquet as pq
    import pyarrow.types as pat

    try:
        table = pq.read_table(tf.path)
    except Exception as err:  # pyarrow raises several types for corrupt files
        raise DataError(f"cannot read Parquet file: {err}", Location(str(tf.path))) from None
    header = list(table.column_names)
    positions, wpos = map_header(analysis, tf, header)
    cols = []
    for p in positions:
        col = table.column(p)
        if not (pat.is_integer(col.type) or pat.is_floating(col.type) or pat.is_string(col.type) or pat.is_large_string(col.type)):
            raise DataError(
                f"column {header[p]!r} has Parquet type {col.type}; only integer, float and string columns are supported",
                Location(str(tf.path)),
            )
        if col.null_count:
            raise DataError(f"column {header[p]!r} has null values", Location(str(tf.path)))
        cols.append([str(v) for v in col.to_pylist()])
    n = table.num_rows
    rows = list(zip(*cols)) if cols else [()] * n
    if wpos is not None:
        weights = [None if w is None else str(w) for w in table.column(wpos).to_pylist()]
    else:
        weights = [None] * n
    return RawTable(rows, weights, [None] * n, tf)


def read_raw(analysis: Analysis, tf: TableFile) -> RawTable:
    """Read a data file's cells as text."""
    return _read_csv(analysis, tf) if tf.format == "csv" else _read_parquet(analysis, tf)


def raw_evidence(raw: RawTable) -> dict[int, DataEvidence]:
    """Per column: does every cell read as an integer, or else as a number?"""
    out: dict[int, DataEvidence] = {}
    width = len(raw.rows[0]) if raw.rows else 0
    for i in range(width):
        ev = DataEvidence(True)
        for row, line in zip(raw.rows, raw.lines):
            if not is_int_literal(row[i]):
                where = Location(str(raw.tf.path), line)
                ev = DataEvidence(False, row[i], where, all_number=True)
                for row2, line2 in zip(raw.rows, raw.lines):
                    if read_float(row2[i]) is None:
                        ev = DataEvidence(False, row[i], Location(str(raw.tf.path), line2), False, row2[i])
                        break
                break
        out[i] = ev
    return out


@dataclass
class Database:
    """EDB facts as Python values, with weights and column metadata."""

    facts: dict[str, set[tuple[Value, ...]]]
    weights: dict[str, dict[tuple[Value, ...], str]]
    types: dict[str, tuple[str, ...]]
    columns: dict[str, tuple[str, ...]]
    warnings: list[str] = field(default_factory=list)

    def size(self) -> int:
        return sum(len(v) for v in self.facts.values())


def load_database(analysis: Analysis, db_dir: str | Path | None) -> Database:
    """Load ``db_dir`` plus the program's inline facts; resolves column types."""
    return load_files(analysis, discover(db_dir))


def column_types(analysis: Analysis, db_dir: str | Path | None) -> dict[str, tuple[str, ...]]:
    """The column types of every relation: inferred with the files of ``db_dir`` when given
    (which are then loaded and checked), else from the program alone."""
    return load_database(analysis, db_dir).types if db_dir else resolve_types(analysis)


def load_files(analysis: Analysis, files: dict[str, TableFile]) -> Database:
    """:func:`load_database` of data files named by relation wherever they are (the CDSS's base
    data live in one directory per peer); errors point at the files themselves."""
    warnings = check_files(analysis, files)
    raws = {rel: read_raw(analysis, tf) for rel, tf in files.items() if rel in analysis.arities}
    evidence = {
        (rel, i): ev for rel, raw in raws.items() for i, ev in raw_evidence(raw).items()
    }
    types = resolve_types(analysis, evidence)
    program = analysis.program
    facts: dict[str, set[tuple[Value, ...]]] = {rel: set() for rel in analysis.edb}
    weights: dict[str, dict[tuple[Value, ...], str]] = {rel: {} for rel in analysis.edb}
    for rel, raw in raws.items():
        conv = [int if t == "int" else _to_float if t == "float" else _check_str(raw.tf) for t in types[rel]]
        target = facts[rel]
        wt = weights[rel]
        for row, w, line in zip(raw.rows, raw.weights, raw.lines):
            try:
                fact = tuple(c(v) for c, v in zip(conv, row))
            except ValueError as err:
                raise DataError(str(err), Location(str(raw.tf.path), line)) from None
            target.add(fact)
            if w is not None:
                wt[fact] = w
    for f in program.facts:
        fact = f.values
        facts[f.atom.relation].add(fact)
        if f.weight is not None:
            weights[f.atom.relation][fact] = f.weight
    columns = {rel: column_names(program, rel, n) for rel, n in analysis.arities.items()}
    return Database(facts, weights, types, columns, warnings)


def fact_types(analysis: Analysis, facts: dict[str, Iterable[tuple[Value, ...]]]) -> dict[str, tuple[str, ...]]:
    """Column types for EDB facts given as Python values: a column is ``int`` when every value in
    it (labeled nulls aside) is an integer, a number column when every value is one -- what files
    say through :func:`raw_evidence`."""
    evidence: dict[tuple[str, int], DataEvidence] = {}
    for rel, rows in facts.items():
        if rel not in analysis.arities:
            continue
        rows = list(rows)
        for i in range(analysis.arities[rel]):
            plain = [r[i] for r in rows if not isinstance(r[i], Skolem)]
            if plain:
                numbers = all(isinstance(v, (int, float)) for v in plain)
                evidence[(rel, i)] = DataEvidence(all(isinstance(v, int) for v in plain), all_number=numbers)
    return resolve_types(analysis, evidence)


def _to_float(v: str) -> float:
    x = read_float(v)
    if x is None:
        raise ValueError(f"value {v!r} is not a finite number")
    return x


def _check_str(tf: TableFile):
    def conv(v: str) -> str:
        if v.startswith(SKOLEM_MARK):
            raise ValueError("values may not start with the NUL character")
        return v

    return conv


def write_text(path: Path, text: str) -> None:
    """Write a text file atomically (temp file + rename; devices and FIFOs in place: :mod:`selp.outfile`)."""
    from selp.outfile import write_text as _write

    _write(path, text)


def write_bytes(path: Path, data: bytes) -> None:
    """Write a binary file atomically (temp file, fsync, rename; :mod:`selp.outfile`)."""
    from selp.outfile import write_bytes as _write

    _write(path, data)


def write_csv(path: Path, columns: tuple[str, ...], rows: Iterable[tuple[Value, ...]]) -> None:
    """Write a relation as CSV atomically (:mod:`selp.outfile`): a crash never leaves half a file."""
    from selp.outfile import open_output

    with open_output(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(columns)
        for row in rows:
            w.writerow([display_value(v) for v in row])


def write_parquet(path: Path, columns: tuple[str, ...], types: tuple[str, ...], rows: list[tuple[Value, ...]]) -> None:
    """Write a relation as Parquet atomically. An int column holding labeled nulls is written as text."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from selp.outfile import open_output

    arrays = []
    for i, t in enumerate(types):
        vals = [r[i] for r in rows]
        if t in ("int", "float") and not any(isinstance(v, Skolem) for v in vals):
            arrays.append(pa.array(vals, type=pa.int64() if t == "int" else pa.float64()))
        else:
            arrays.append(pa.array([display_value(v) for v in vals], type=pa.string()))
    table = pa.Table.from_arrays(arrays, names=list(columns)) if columns else pa.table({"_unit": [""] * len(rows)})
    with open_output(path, "wb") as fh:
        pq.write_table(table, fh)


def sorted_rows(rows: Iterable[tuple[Value, ...]]) -> list[tuple[Value, ...]]:
    """Rows in a deterministic order (for output)."""
    from selp.values import sort_key

    return sorted(rows, key=lambda r: tuple(sort_key(v) for v in r))


def write_relations(
    out_dir: str | Path,
    relations: dict[str, set[tuple[Value, ...]]],
    types: dict[str, tuple[str, ...]],
    columns: dict[str, tuple[str, ...]],
    fmt: str = "csv",
) -> list[Path]:
    """Write each relation to ``out_dir/REL.fmt``; returns the paths written."""
    from selp.outfile import check_dir_target

    out = check_dir_target(out_dir)
    written = []
    for rel in sorted(relations):
        rows = sorted_rows(relations[rel])
        path = out / f"{rel}.{fmt}"
        if fmt == "csv":
            write_csv(path, columns[rel], rows)
        else:
            write_parquet(path, columns[rel], types[rel], rows)
        written.append(path)
    return written


def iter_facts(db: Database) -> Iterator[tuple[str, tuple[Value, ...]]]:
    for rel, facts in db.facts.items():
        for f in facts:
            yield rel, f
