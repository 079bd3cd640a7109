"""A DuckDB database holding one program's relations: tables, loading from files and from Python
values, and reading rows back.

Tables are named after relations (``"t:REL"``), typed by :mod:`selp.engines.embedded.physical`.
EDB weights live beside the facts in ``"w:REL"`` (the fact's columns plus ``_weight``, raw text)
for the relations that have any.

Files are read by DuckDB itself (``read_csv`` with the RFC-4180 dialect, ``read_parquet``) and
checked in SQL: the header against the program, integer-ness of every column (the evidence of
:mod:`selp.language.types`), and the reserved NUL character. When DuckDB refuses a file or a check
fails, the file is handed to the reference loader (:mod:`selp.database`), which names the file,
line and column of the first problem -- so errors are exactly the reference engine's, and the
fast path only ever runs on data both readers accept.
"""

from __future__ import annotations

import atexit
import csv
import os
import shutil
from functools import lru_cache
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping

from selp.database import (
    WEIGHT_COLUMN,
    TableFile,
    check_files,
    column_names,
    discover,
    fact_types,
    load_database,
    map_header,
    sorted_rows,
)
from selp.engines.embedded.physical import Kind, column_kinds
from selp.engines.embedded.sql import ARITH_MACROS, UNIT, columns, ident, literal, sql_string
from selp.errors import DataError, Location, SelpError
from selp.language.types import DataEvidence, resolve_types
from selp.language.validate import Analysis
from selp.values import SKOLEM_MARK, Skolem, Value, parse_skolem_text

Row = tuple[Value, ...]


def table(rel: str) -> str:
    """The table of relation ``rel``."""
    return ident(f"t:{rel}")


def weight_table(rel: str) -> str:
    """The table of ``rel``'s fact weights."""
    return ident(f"w:{rel}")


_SPILL_DIRS: set[str] = set()


def _remove_spill_dirs() -> None:
    for d in list(_SPILL_DIRS):
        shutil.rmtree(d, ignore_errors=True)
        _SPILL_DIRS.discard(d)


atexit.register(_remove_spill_dirs)


def connect(threads: int | None = None, memory_limit: str | None = None) -> Any:
    """An in-process DuckDB connection that spills to a private temporary directory, so data
    larger than memory is written out instead of failing. The directory is removed when the
    connection is closed through :func:`close` or the process exits."""
    import duckdb

    spill = tempfile.mkdtemp(prefix="selp-duckdb-")
    _SPILL_DIRS.add(spill)
    config: dict[str, Any] = {"temp_directory": spill}
    if threads:
        config["threads"] = threads
    if memory_limit:
        config["memory_limit"] = memory_limit
    con = duckdb.connect(":memory:", config=config)
    for macro in ARITH_MACROS:
        con.execute(macro)
    return con


def close(con: Any) -> None:
    """Close a connection made by :func:`connect` and remove its spill directory."""
    try:
        spill = con.execute("SELECT current_setting('temp_directory')").fetchall()[0][0]
    except Exception:  # noqa: BLE001 - already closed
        spill = None
    try:
        con.close()
    except Exception:  # noqa: BLE001 - closing twice is harmless
        pass
    if spill in _SPILL_DIRS:
        shutil.rmtree(spill, ignore_errors=True)
        _SPILL_DIRS.discard(spill)


def create_table(con: Any, name: str, kinds: tuple[Kind, ...], extra: str = "") -> None:
    """An empty relation table with the columns of ``kinds``."""
    cols = [f"{c} {k.sql}" for c, k in zip(columns(len(kinds)), kinds)] or [f"{UNIT} BOOLEAN"]
    con.execute(f"CREATE OR REPLACE TABLE {name} ({', '.join(cols)}{extra})")


@dataclass
class Store:
    """A DuckDB connection with a program's EDB loaded and room for its IDB."""

    con: Any
    analysis: Analysis
    types: dict[str, tuple[str, ...]]
    kinds: dict[str, tuple[Kind, ...]]
    columns: dict[str, tuple[str, ...]]
    weighted: set[str] = field(default_factory=set)  # relations with a weight table
    warnings: list[str] = field(default_factory=list)
    load_seconds: float = 0.0

    def count(self, rel: str) -> int:
        """Number of tuples of ``rel``."""
        return int(self.con.execute(f"SELECT count(*) FROM {table(rel)}").fetchall()[0][0])

    def rows(self, rel: str, name: str | None = None) -> set[Row]:
        """The tuples of ``rel`` (or of table ``name`` with ``rel``'s columns) as Python values."""
        kinds = self.kinds[rel]
        data = self.con.execute(f"SELECT * FROM {name or table(rel)}").fetchall()
        return decode_rows(data, kinds)

    def weights(self, rel: str) -> dict[Row, str]:
        """``rel``'s facts that carry a weight, with the raw weight text."""
        if rel not in self.weighted:
            return {}
        kinds = self.kinds[rel]
        data = self.con.execute(f"SELECT * FROM {weight_table(rel)}").fetchall()
        n = len(kinds)
        return {r: w for r, w in zip(decode_rows([d[:n] if n else (True,) for d in data], kinds, keep_order=True), (d[-1] for d in data))}

    def close(self) -> None:
        """Release the connection and its spill directory."""
        close(self.con)


def decode_rows(data: list[tuple], kinds: tuple[Kind, ...], keep_order: bool = False) -> Any:
    """Rows fetched from DuckDB as selp values (labeled nulls parsed, encoded ints turned back)."""
    if not kinds:
        out_rows = [() for _ in data]
        return out_rows if keep_order else set(out_rows)
    decoders = [_decoder(k) for k in kinds]
    if all(d is None for d in decoders):
        return list(data) if keep_order else set(data)
    out = []
    for row in data:
        out.append(tuple(v if d is None else d(v) for v, d in zip(row, decoders)))
    return out if keep_order else set(out)


@lru_cache(maxsize=1 << 20)
def _skolem(text: str) -> Skolem:
    # a labeled null recurs in many tuples (every fact a mapping built on it): parse it once
    return parse_skolem_text(text[1:])


def _decoder(kind: Kind):
    if not kind.tainted:
        return None
    if kind.logical == "int":
        return lambda v: _skolem(v) if v.startswith(SKOLEM_MARK) else int(v)
    if kind.logical == "float":
        return lambda v: _skolem(v) if v.startswith(SKOLEM_MARK) else float(v)
    return lambda v: _skolem(v) if v.startswith(SKOLEM_MARK) else v


# --- loading ------------------------------------------------------------------------------------


def load_store(analysis: Analysis, db_dir: str | Path | None, con: Any = None) -> Store:
    """Load ``db_dir`` (plus inline facts) into DuckDB and resolve the column types."""
    import time

    t0 = time.perf_counter()
    con = con or connect()
    files = discover(db_dir)
    warnings = check_files(analysis, files)
    raws: dict[str, _Raw] = {}
    try:
        for rel, tf in files.items():
            if rel in analysis.arities:
                raws[rel] = _read(con, analysis, tf)
        evidence: dict[tuple[str, int], DataEvidence] = {}
        for raw in raws.values():
            evidence.update(raw.evidence)
        types = resolve_types(analysis, evidence)
        if any(raw.nul for raw in raws.values()):
            raise _Refused("a value starts with the NUL character")
    except (_Refused, DataError):
        # let the reference loader name the file, line and column; if it accepts the data,
        # DuckDB was stricter than the format, and its Python values are loaded instead
        db = load_database(analysis, db_dir)
        store = store_from_facts(analysis, db.facts, db.weights, db.types, con)
        store.warnings = db.warnings
        store.load_seconds = time.perf_counter() - t0
        return store
    kinds = column_kinds(analysis, types)
    store = Store(con, analysis, types, kinds, {r: column_names(analysis.program, r, n) for r, n in analysis.arities.items()}, warnings=warnings)
    for rel in sorted(analysis.edb):
        ks = kinds[rel]
        create_table(con, table(rel), ks)
        raw = raws.get(rel)
        if raw is not None:
            cols = [_typed(f"f{i}", k) for i, k in enumerate(ks)] or ["TRUE"]
            con.execute(f"INSERT INTO {table(rel)} SELECT DISTINCT {', '.join(cols)} FROM {raw.name}")
            if raw.weighted:
                names = ", ".join(columns(len(ks)))
                con.execute(
                    f"CREATE OR REPLACE TABLE {weight_table(rel)} AS SELECT {names}, arg_max(w, rn) AS {WEIGHT_COLUMN}"
                    f" FROM (SELECT {', '.join(f'{c} AS {n}' for c, n in zip(cols, columns(len(ks))))}, wt AS w, rn FROM {raw.name}"
                    f" WHERE wt IS NOT NULL AND wt <> '') GROUP BY ALL"
                )
                store.weighted.add(rel)
            con.execute(f"DROP TABLE {raw.name}")
    _insert_inline(store)
    store.load_seconds = time.perf_counter() - t0
    return store


class _Refused(Exception):
    """DuckDB's reading of a file cannot be trusted; use the reference loader."""


@dataclass
class _Raw:
    name: str  # the staging table: f0..f{n-1} VARCHAR (program column order), wt, rn
    evidence: dict[tuple[str, int], DataEvidence]
    weighted: bool
    nul: bool


def _read(con: Any, analysis: Analysis, tf: TableFile) -> _Raw:
    rel = tf.relation
    staging = ident(f"raw:{rel}")
    if tf.format == "csv":
        try:
            with open(tf.path, newline="", encoding="utf-8-sig") as fh:
                header = next(csv.reader(fh, strict=True), None)
        except (OSError, csv.Error, UnicodeDecodeError):
            raise _Refused() from None
        if header is None:
            raise _Refused()
        header = [h.strip() for h in header]
        positions, wpos = map_header(analysis, tf, header)
        spec = "{" + ", ".join(f"'h{i}': 'VARCHAR'" for i in range(len(header))) + "}"
        source = (
            f"read_csv({sql_string(str(tf.path))}, header=true, auto_detect=false, columns={spec},"
            f" delim=',', quote='\"', escape='\"', strict_mode=true, null_padding=false, encoding='utf-8')"
        )
        cell = lambda i: f"coalesce(h{i}, '')"  # noqa: E731 - an empty cell is the empty string
    else:
        source = f"read_parquet({sql_string(str(tf.path))})"
        try:
            described = con.execute(f"DESCRIBE SELECT * FROM {source}").fetchall()
        except Exception as err:  # noqa: BLE001 - duckdb raises several types for corrupt files
            raise DataError(f"cannot read Parquet file: {str(err).splitlines()[0]}", Location(str(tf.path))) from None
        header = [d[0] for d in described]
        sql_types = [d[1] for d in described]
        positions, wpos = map_header(analysis, tf, header)
        for p in positions:
            t = sql_types[p]
            if not (t in ("VARCHAR", "DOUBLE", "FLOAT") or t.endswith("INT") or t in ("BIGINT", "HUGEINT", "UHUGEINT")):
                raise _Refused()
        cols_sql = ", ".join(ident(h) for h in header)
        source = f"(SELECT {cols_sql} FROM {source})"
        # parquet cells keep their names; reference them by position through a rename
        source = f"(SELECT {', '.join(f'{ident(h)} AS h{i}' for i, h in enumerate(header))} FROM {source})"
        cell = lambda i: f"CAST(h{i} AS VARCHAR)"  # noqa: E731
    select = [f"{cell(p)} AS f{j}" for j, p in enumerate(positions)]
    select.append(f"{cell(wpos)} AS wt" if wpos is not None else "NULL::VARCHAR AS wt")
    try:
        con.execute(f"CREATE OR REPLACE TEMP TABLE {staging} AS SELECT {', '.join(select)}, row_number() OVER () AS rn FROM {source}")
        if tf.format == "parquet":
            nulls = [f"count(*) - count(f{j})" for j in range(len(positions))]
            if nulls and any(con.execute(f"SELECT {', '.join(nulls)} FROM {staging}").fetchall()[0]):
                raise _Refused()
        checks = []
        for j in range(len(positions)):
            f = f"f{j}"
            is_int = f"(regexp_full_match({f}, '[+-]?[0-9]+') AND TRY_CAST({f} AS BIGINT) IS NOT NULL)"
            # selp.values.read_float: a decimal number that is finite as a double
            is_number = f"(regexp_full_match({f}, '{_FLOAT_RE}') AND isfinite(TRY_CAST({f} AS DOUBLE)))"
            checks.append(f"bool_and({is_int})")
            checks.append(f"first({f}) FILTER (WHERE NOT {is_int})")
            checks.append(f"bool_or(starts_with({f}, chr(0)))")
            checks.append(f"bool_and({is_number})")
            checks.append(f"first({f}) FILTER (WHERE NOT {is_number})")
        got = con.execute(f"SELECT count(*), {', '.join(checks) or 'NULL'} FROM {staging}").fetchall()[0]
    except _Refused:
        raise
    except Exception:  # noqa: BLE001 - any DuckDB reading error: the reference loader explains it
        raise _Refused() from None
    n = got[0]
    evidence: dict[tuple[str, int], DataEvidence] = {}
    nul = False
    for j in range(len(positions)):
        all_int, example, has_nul, all_number, non_number = got[1 + 5 * j: 6 + 5 * j]
        if n:
            evidence[(rel, j)] = (
                DataEvidence(True) if all_int
                else DataEvidence(False, example, Location(str(tf.path)), bool(all_number), non_number)
            )
        nul = nul or bool(has_nul)
    return _Raw(staging, evidence, wpos is not None, nul)


_FLOAT_RE = r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?"


def _typed(col: str, kind: Kind) -> str:
    """A data cell in its column's canonical form (``007`` is ``7``, ``-0.0`` and ``1.50`` are
    ``0.0`` and ``1.5``)."""
    if kind.logical == "int":
        return f"CAST(CAST({col} AS BIGINT) AS {kind.sql})"
    if kind.logical == "float":
        return f"CAST(CAST({col} AS DOUBLE) + CAST(0.0 AS DOUBLE) AS {kind.sql})"
    return col


def _insert_inline(store: Store) -> None:
    """The program's inline facts (and their weights, which win over the files')."""
    con = store.con
    by_rel: dict[str, list] = {}
    for f in store.analysis.program.facts:
        by_rel.setdefault(f.atom.relation, []).append(f)
    for rel, facts in by_rel.items():
        ks = store.kinds[rel]
        rows = []
        weights = []
        for f in facts:
            lits = [literal(v, k) for v, k in zip(f.values, ks)]
            if any(lit is None for lit in lits):
                raise SelpError(f"inline fact {rel}{f.values} does not fit the column types {store.types[rel]}", f.loc)
            rows.append("(" + ", ".join(lits or ["TRUE"]) + ")")  # type: ignore[arg-type]
            if f.weight is not None:
                weights.append("(" + ", ".join(lits + [sql_string(f.weight)]) + ")")  # type: ignore[operator]
        names = ", ".join(columns(len(ks)))
        con.execute(f"INSERT INTO {table(rel)} SELECT * FROM (VALUES {', '.join(rows)}) EXCEPT SELECT * FROM {table(rel)}")
        if weights:
            if rel not in store.weighted:
                create_table(con, weight_table(rel), ks, f", {WEIGHT_COLUMN} VARCHAR")
                store.weighted.add(rel)
            keys = columns(len(ks))
            con.execute(
                f"CREATE OR REPLACE TABLE {weight_table(rel)} AS SELECT * FROM {weight_table(rel)} w"
                f" WHERE NOT EXISTS (SELECT 1 FROM (VALUES {', '.join(weights)}) AS v({names}, x)"
                f" WHERE {' AND '.join(f'v.{c} = w.{c}' for c in keys) or 'TRUE'})"
                f" UNION ALL SELECT * FROM (VALUES {', '.join(weights)})"
            )


def store_from_facts(
    analysis: Analysis,
    facts: Mapping[str, Iterable[Row]],
    weights: Mapping[str, Mapping[Row, str]] | None = None,
    types: Mapping[str, tuple[str, ...]] | None = None,
    con: Any = None,
) -> Store:
    """A store holding EDB facts given as Python values (the CDSS layer's and the tests' input);
    like :func:`selp.engines.local.evaluate`, the program's inline facts are not added.

    Without ``types``, a column is ``int`` when every value in it is an integer (labeled nulls
    aside), as :mod:`selp.language.types` decides for files."""
    import pyarrow as pa

    con = con or connect()
    facts = {rel: list(rows) for rel, rows in facts.items() if rel in analysis.edb}
    tainted = {
        (rel, i) for rel, rows in facts.items() for i in range(analysis.arities[rel]) if any(isinstance(r[i], Skolem) for r in rows)
    }
    resolved = dict(types) if types is not None else fact_types(analysis, facts)
    kinds = column_kinds(analysis, resolved, tainted)
    store = Store(con, analysis, resolved, kinds, {r: column_names(analysis.program, r, n) for r, n in analysis.arities.items()})
    for rel in sorted(analysis.edb):
        ks = kinds[rel]
        create_table(con, table(rel), ks)
        rows = facts.get(rel, [])
        if rows:
            con.register("_selp_in", _arrow(rows, ks, pa))
            con.execute(f"INSERT INTO {table(rel)} SELECT DISTINCT * FROM _selp_in")
            con.unregister("_selp_in")
        w = (weights or {}).get(rel) or {}
        if w:
            items = list(w.items())
            tbl = _arrow([k for k, _ in items], ks, pa)
            tbl = tbl.append_column(WEIGHT_COLUMN, pa.array([v for _, v in items], type=pa.string()))
            con.register("_selp_in", tbl)
            con.execute(f"CREATE OR REPLACE TABLE {weight_table(rel)} AS SELECT * FROM _selp_in")
            con.unregister("_selp_in")
            store.weighted.add(rel)
    return store


def _arrow(rows: list[Row], kinds: tuple[Kind, ...], pa: Any) -> Any:
    from selp.values import encode

    arrays = []
    names = columns(len(kinds))
    if not kinds:
        return pa.table({UNIT: pa.array([True] * min(len(rows), 1), type=pa.bool_())})
    for i, k in enumerate(kinds):
        vals = [r[i] for r in rows]
        if k.native_int:
            arrays.append(pa.array(vals, type=pa.int64()))
        elif k.native_number:
            arrays.append(pa.array([float(v) for v in vals], type=pa.float64()))
        else:
            arrays.append(pa.array([encode(v) for v in vals], type=pa.string()))
    return pa.Table.from_arrays(arrays, names=names)


# --- writing ------------------------------------------------------------------------------------


def write_store(store: Store, rels: Iterable[str], out_dir: str | Path, fmt: str = "csv") -> list[str]:
    """Write each relation to ``out_dir/REL.fmt`` with DuckDB's own writers, each to a temporary
    name renamed into place (a crash never leaves a half-written file). Rows are in the
    reference engine's order (integers, then strings, then labeled nulls, column by column)."""
    from selp.outfile import check_dir_target

    out = check_dir_target(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for rel in sorted(rels):
        path = out / f"{rel}.{fmt}"
        ks = store.kinds[rel]
        if not ks:  # a nullary relation: the reference writer handles the degenerate file
            from selp.database import write_relations

            write_relations(out, {rel: store.rows(rel)}, store.types, store.columns, fmt)
            written.append(str(path))
            continue
        shown, order = [], []
        for i, (k, name) in enumerate(zip(ks, store.columns[rel])):
            c = f"src.c{i}"  # qualified: an output column may be named c0, c1, ... too
            if k.tainted:
                text = f"CASE WHEN starts_with({c}, chr(0)) THEN substr({c}, 2) ELSE {c} END"
                order += [f"starts_with({c}, chr(0))"]
                if k.logical != "str":
                    order += [f"TRY_CAST({c} AS {k.number_sql})"]
                order += [c]
                if fmt == "parquet" and k.logical != "str":
                    has_null = store.con.execute(f"SELECT bool_or(starts_with({c}, chr(0))) FROM {table(rel)} AS src").fetchall()[0][0]
                    if not has_null:
                        text = f"CAST({c} AS {k.number_sql})"
            else:
                text = c
                order.append(c)
            shown.append(f"{text} AS {ident(name)}")
        from selp.outfile import staged_path

        with staged_path(path) as tmp:
            options = "(FORMAT csv, HEADER true, DELIMITER ',')" if fmt == "csv" else "(FORMAT parquet)"
            store.con.execute(
                f"COPY (SELECT {', '.join(shown)} FROM {table(rel)} AS src ORDER BY {', '.join(order)}) TO {sql_string(str(tmp))} {options}"
            )
        written.append(str(path))
    return written


__all__ = ["Store", "connect", "load_store", "store_from_facts", "write_store", "table", "weight_table", "sorted_rows"]
