"""Loading an EDB directory into Spark DataFrames in the uniform string encoding.

Everything is read by Spark itself, so database directories may live on any Hadoop file system
(``hdfs://``, ``s3a://``, ...); a path without a scheme is a local path. The checks and messages
are those of :mod:`selp.database` (header mapping, arities, declared columns, typing). When a file
is malformed the error names it; for a local file the line is found by rescanning the file in
Python, on the error path only.

Per file Spark runs: one small job for the header, one aggregate job that validates every row
and gathers the type evidence, and one job that materialises the deduplicated facts.
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import DoubleType, FloatType, IntegralType, StringType, StructField, StructType

from selp.database import (
    WEIGHT_COLUMN,
    TableFile,
    check_files,
    column_names,
    discover,
    fact_types,
    map_header,
    raw_evidence,
    read_raw,
)
from selp.engines.spark_compile import UNIT, empty_frame, float_text, rel_schema, union_all
from selp.engines.spark_frames import materialize_count
from selp.errors import DataError, Location
from selp.language.types import DataEvidence, resolve_types
from selp.language.validate import Analysis
from selp.values import SKOLEM_MARK, Value, encode

_CORRUPT = "_corrupt"
# Spark turns cells equal to nullValue into nulls; this text cannot occur in a user's data
# (cells starting with NUL are rejected anyway), so only missing fields become null.
_NULL_SENTINEL = "\x00selp-no-null\x00"
# Exactly selp.values.is_int_literal: \A..\z because Java's $ also matches before a final newline,
# and the bigint cast check because Spark's cast would trim spaces and accept them.
_INT_RE = r"\A[+-]?[0-9]+\z"
_FLOAT_RE = r"\A[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?\z"  # selp.values.read_float
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]+:/")
_MULTILINE_CONF = "spark.selp.csv.multiLine"  # "auto" (default), "true" or "false"


class RemotePath(str):
    """A file URI on a non-local file system; offers the ``Path`` attributes messages use."""

    @property
    def name(self) -> str:
        return self.rstrip("/").rsplit("/", 1)[-1]


@dataclass
class SparkDatabase:
    """EDB relations as materialised Spark frames (see :mod:`selp.engines.spark_compile`)."""

    frames: dict[str, DataFrame]  # deduplicated facts, columns c0.. (or _unit)
    weights: dict[str, DataFrame]  # facts that carry a weight: c0.. plus _weight (raw text)
    sizes: dict[str, int]  # exact number of facts per relation
    types: dict[str, tuple[str, ...]]
    columns: dict[str, tuple[str, ...]]
    warnings: list[str] = field(default_factory=list)
    # relations no fact of which was given twice (file rows and inline facts are as many as the
    # distinct facts): a fact has at most one weight cell, so none needs the last one picked
    single_weights: set[str] = field(default_factory=set)


def is_local_path(path: str | Path) -> bool:
    """Whether a user path means the local file system (no scheme, or ``file:``)."""
    s = str(path)
    return not _SCHEME.match(s) or s.lower().startswith("file:")


def local_path(path: str | Path) -> Path:
    """The local path of a scheme-less path or a ``file:`` URI."""
    s = str(path)
    if s.lower().startswith("file:"):
        s = re.sub(r"^file:(//)?", "", s, flags=re.I)
        if not s.startswith("/"):
            s = "/" + s
    return Path(s)


def to_uri(path: str | Path) -> str:
    """A URI Spark resolves the same way whatever the cluster's default file system is."""
    if is_local_path(path):
        return "file://" + str(local_path(path).resolve())
    return str(path)


def hadoop_fs(spark: SparkSession, uri: str) -> tuple[Any, Any]:
    """(Hadoop FileSystem, Hadoop Path) for a URI, through the JVM (works for HDFS, S3, ...)."""
    jvm = spark._jvm  # type: ignore[attr-defined]
    hpath = jvm.org.apache.hadoop.fs.Path(uri)
    return hpath.getFileSystem(spark._jsc.hadoopConfiguration()), hpath  # type: ignore[attr-defined]


def discover_files(spark: SparkSession, db_dir: str | Path | None) -> dict[str, TableFile]:
    """:func:`selp.database.discover`, also for directories on remote file systems."""
    if db_dir is None or is_local_path(db_dir):
        return discover(None if db_dir is None else local_path(db_dir))
    fs, hpath = hadoop_fs(spark, str(db_dir))
    if not fs.exists(hpath):
        raise DataError(f"database directory not found: {db_dir}")
    if not fs.getFileStatus(hpath).isDirectory():
        raise DataError(f"--db must be a directory of REL.csv / REL.parquet files: {db_dir}")
    out: dict[str, TableFile] = {}
    for st in sorted(fs.listStatus(hpath), key=lambda s: s.getPath().getName()):
        name = st.getPath().getName()
        stem, dot, ext = name.rpartition(".")
        fmt = ext.lower()
        if not dot or fmt not in ("csv", "parquet") or name.startswith((".", "_")):
            continue
        path = RemotePath(st.getPath().toString())
        if stem in out:
            raise DataError(
                f"relation {stem} has two data files: {out[stem].path.name} and {name}", Location(str(path))
            )
        out[stem] = TableFile(stem, path, fmt)  # type: ignore[arg-type]
    return out


def _file_uri(tf: TableFile) -> str:
    return str(tf.path) if isinstance(tf.path, RemotePath) else to_uri(tf.path)


def _is_local(tf: TableFile) -> bool:
    return not isinstance(tf.path, RemotePath)


@dataclass
class _Source:
    """One data file read by Spark: header columns renamed h0.., typed later."""

    tf: TableFile
    df: DataFrame  # columns h0..h{w-1} (strings for CSV; original types for Parquet)
    header: list[str]
    positions: list[int]  # header index of each relation column
    weight_pos: int | None
    int_typed: set[int]  # header indexes that Parquet stores as integers
    multiline: bool = False  # CSV read whole rather than split by lines
    may_retry: bool = False  # on malformed rows, retry reading whole (multiLine "auto")
    rows: int = 0
    evidence: dict[int, DataEvidence] = field(default_factory=dict)
    nul_columns: set[int] = field(default_factory=set)  # relation columns with a NUL-led cell

    def cell(self, p: int) -> Column:
        """Header column ``p`` as text (an empty CSV cell is read as null: make it "")."""
        c = F.col(f"h{p}")
        return c.cast("string") if self.tf.format == "parquet" else F.coalesce(c, F.lit(""))


def _csv_header(spark: SparkSession, tf: TableFile) -> list[str]:
    """The header row, parsed like :mod:`selp.database` does.

    Spark's own header handling would rename duplicate or empty names and so hide the errors the
    local engine reports; a local file's first line is read directly (no Spark job).
    """
    if _is_local(tf):
        try:
            with open(tf.path, newline="", encoding="utf-8-sig") as fh:  # as selp.database: a BOM is no part of the header
                first: str | None = fh.readline() or None
        except OSError as err:
            raise DataError(f"cannot read {tf.path}: {err.strerror}") from None
        except UnicodeDecodeError as err:
            raise DataError(f"file is not UTF-8 text ({err.reason})", Location(str(tf.path))) from None
    else:
        row = spark.read.text(_file_uri(tf)).first()
        first = None if row is None else row[0].removeprefix("\ufeff")
    if first is None:
        raise DataError("empty file: a header row is required", Location(str(tf.path), 1))
    fields = next(csv.reader([first]), [])
    return [h.strip() for h in fields]


def _csv_frame(spark: SparkSession, tf: TableFile, width: int, multiline: bool) -> DataFrame:
    schema = StructType([StructField(f"h{i}", StringType()) for i in range(width)] + [StructField(_CORRUPT, StringType())])
    return (
        spark.read.schema(schema)
        .option("header", True)
        .option("enforceSchema", True)  # names come from our own header check
        .option("quote", '"')
        .option("escape", '"')  # RFC 4180: a quote inside a quoted field is doubled
        .option("mode", "PERMISSIVE")
        .option("columnNameOfCorruptRecord", _CORRUPT)
        .option("nullValue", _NULL_SENTINEL)
        .option("emptyValue", "")
        .option("ignoreLeadingWhiteSpace", False)
        .option("ignoreTrailingWhiteSpace", False)
        .option("encoding", "UTF-8")
        .option("multiLine", multiline)
        .csv(_file_uri(tf))
    )


def _open_source(spark: SparkSession, analysis: Analysis, tf: TableFile) -> _Source:
    if tf.format == "csv":
        header = _csv_header(spark, tf)
        positions, wpos = map_header(analysis, tf, header)
        mode = spark.conf.get(_MULTILINE_CONF, "auto").lower()
        # One-column files are read whole: split line by line, a quoted newline there would go
        # unnoticed (with more columns it leaves rows with too few fields, caught below).
        multiline = mode == "true" or (mode == "auto" and len(header) == 1)
        df = _csv_frame(spark, tf, len(header), multiline) if header else None
        src = _Source(tf, df, header, positions, wpos, set(), multiline)  # type: ignore[arg-type]
        src.may_retry = mode == "auto" and not multiline
        return src
    try:
        df = spark.read.parquet(_file_uri(tf))
    except Exception as err:  # Spark raises AnalysisException and others for unreadable files
        raise DataError(f"cannot read Parquet file: {str(err).splitlines()[0]}", Location(str(tf.path))) from None
    header = list(df.columns)
    positions, wpos = map_header(analysis, tf, header)
    int_typed = set()
    for p in positions:
        typ = df.schema.fields[p].dataType
        if isinstance(typ, IntegralType):
            int_typed.add(p)
        elif not isinstance(typ, (StringType, DoubleType, FloatType)):
            raise DataError(
                f"column {header[p]!r} has Parquet type {typ.simpleString()}; only integer, float and string columns"
                " are supported",
                Location(str(tf.path)),
            )
    df = df.toDF(*[f"h{i}" for i in range(len(header))])
    return _Source(tf, df, header, positions, wpos, int_typed)


def _locate_csv_problem(analysis: Analysis, tf: TableFile, width: int, bad_row: str | None) -> DataError:
    """The error for a malformed CSV file, located at its line when the file is local."""
    if _is_local(tf):
        read_raw(analysis, tf)  # raises the local engine's located DataError
    if bad_row is not None:
        try:
            n = len(next(csv.reader([bad_row])))
        except (csv.Error, StopIteration):
            n = -1
        if n >= 0 and n != width:
            return DataError(f"row has {n} field(s) but the header has {width}", Location(str(tf.path)))
        return DataError(f"malformed CSV row: {bad_row[:200]!r}", Location(str(tf.path)))
    return DataError("malformed CSV", Location(str(tf.path)))


def _validate(spark: SparkSession, analysis: Analysis, src: _Source) -> None:
    """One aggregate job: row count, malformed rows, nulls, NUL-led cells and int evidence."""
    tf = src.tf
    if not src.header:
        # a nullary relation's CSV: any non-blank line after the (empty) header has fields
        lines = spark.read.text(_file_uri(tf)).filter(F.col("value") != "").count()
        if lines:
            raise _locate_csv_problem(analysis, tf, 0, None)
        src.rows = 0
        return
    csv_file = tf.format == "csv"
    aggs: list[Column] = [F.count(F.lit(1)).alias("n")]
    if csv_file:
        aggs.append(F.count_if(F.col(_CORRUPT).isNotNull()).alias("bad"))
        aggs.append(F.first(F.col(_CORRUPT), ignorenulls=True).alias("bad_row"))
    # reference every column: Spark's CSV parser only checks the field count of a row against
    # the columns a query reads (column pruning)
    for p in range(len(src.header)):
        aggs.append(F.count_if(F.col(f"h{p}").isNull()).alias(f"null{p}"))
    for i, p in enumerate(src.positions):
        if p in src.int_typed:
            continue
        text = src.cell(p)
        is_int = text.rlike(_INT_RE) & text.try_cast("bigint").isNotNull()
        aggs.append(F.bool_and(is_int).alias(f"int{i}"))
        aggs.append(F.first(F.when(~is_int, text), ignorenulls=True).alias(f"ex{i}"))
        d = text.try_cast("double")
        is_number = text.rlike(_FLOAT_RE) & d.isNotNull() & ~F.isnan(d) & (F.abs(d) != F.lit(float("inf")))
        aggs.append(F.bool_and(is_number).alias(f"num{i}"))
        aggs.append(F.first(F.when(~is_number, text), ignorenulls=True).alias(f"nonnum{i}"))
        aggs.append(F.count_if(text.startswith(SKOLEM_MARK)).alias(f"nul{i}"))
    row = src.df.agg(*aggs).first()
    assert row is not None
    if csv_file and row["bad"]:
        if src.may_retry:
            # maybe a quoted field spans lines: read the file whole before calling it malformed
            src.df = _csv_frame(spark, tf, len(src.header), True)
            src.multiline, src.may_retry = True, False
            _validate(spark, analysis, src)
            return
        raise _locate_csv_problem(analysis, tf, len(src.header), row["bad_row"])
    if not csv_file:
        for p in src.positions:
            if row[f"null{p}"]:
                raise DataError(f"column {src.header[p]!r} has null values", Location(str(tf.path)))
    src.rows = row["n"]
    if src.rows == 0:
        return  # like selp.database: an empty file is no evidence about types
    for i, p in enumerate(src.positions):
        if p in src.int_typed:
            src.evidence[i] = DataEvidence(True)
            continue
        if row[f"int{i}"]:
            src.evidence[i] = DataEvidence(True)
        else:
            src.evidence[i] = DataEvidence(False, row[f"ex{i}"], Location(str(tf.path)), bool(row[f"num{i}"]), row[f"nonnum{i}"])
        if row[f"nul{i}"]:
            src.nul_columns.add(i)


def _resolve(analysis: Analysis, sources: dict[str, _Source]) -> dict[str, tuple[str, ...]]:
    """:func:`resolve_types`; a data error about a local file is redone with line numbers."""
    evidence = {(rel, i): ev for rel, s in sources.items() for i, ev in s.evidence.items()}
    relocated: set[str] = set()
    while True:
        try:
            return resolve_types(analysis, evidence)
        except DataError as err:
            loc = err.location
            hit = [
                rel for rel, s in sources.items()
                if loc is not None and loc.line is None and loc.file == str(s.tf.path) and _is_local(s.tf)
            ]
            if not hit or hit[0] in relocated:
                raise
            # the local engine reports the first non-integer cell in file order, with its line
            rel = hit[0]
            relocated.add(rel)
            for i, ev in raw_evidence(read_raw(analysis, sources[rel].tf)).items():
                evidence[(rel, i)] = ev


def _check_nul(analysis: Analysis, src: _Source, types: tuple[str, ...]) -> None:
    bad = [i for i in src.nul_columns if types[i] == "str"]
    if not bad:
        return
    line = None
    if _is_local(src.tf) and src.tf.format == "csv":
        raw = read_raw(analysis, src.tf)
        line = next(
            (ln for row, ln in zip(raw.rows, raw.lines) if any(row[i].startswith(SKOLEM_MARK) for i in bad)), None
        )
    raise DataError("values may not start with the NUL character", Location(str(src.tf.path), line))


def _facts_frame(src: _Source, types: tuple[str, ...]) -> tuple[DataFrame, DataFrame | None]:
    """(facts with canonical ints, weighted facts or None)."""
    cols: list[Column] = []
    for i, p in enumerate(src.positions):
        text = src.cell(p)
        if types[i] == "int":
            text = text.try_cast("bigint").cast("string")  # canonical: "+007" -> "7"
        elif types[i] == "float":
            text = float_text(text.try_cast("double"))  # canonical: "1.50" -> "1.5", "-0.0" -> "0.0"
        cols.append(text.alias(f"c{i}"))
    if not cols:
        cols = [F.lit("").alias(UNIT)]
    facts = src.df.select(*cols)
    weights = None
    if src.weight_pos is not None:
        w = F.col(f"h{src.weight_pos}").cast("string")
        weights = src.df.filter(w.isNotNull() & (w != "")).select(*cols, w.alias(WEIGHT_COLUMN))
    return facts, weights


def load_spark_database(analysis: Analysis, db_dir: str | Path | None, spark: SparkSession) -> SparkDatabase:
    """Load ``db_dir`` plus the program's inline facts as Spark frames; resolves column types.

    Raises :class:`~selp.errors.DataError` with the local engine's messages (see module docstring).
    """
    files = discover_files(spark, db_dir)
    warnings = check_files(analysis, files)
    sources: dict[str, _Source] = {}
    for rel, tf in files.items():
        if rel not in analysis.arities:
            continue
        src = _open_source(spark, analysis, tf)
        _validate(spark, analysis, src)
        sources[rel] = src
    types = _resolve(analysis, sources)
    for rel, src in sources.items():
        _check_nul(analysis, src, types[rel])

    program = analysis.program
    inline: dict[str, list[tuple[str, ...]]] = {}
    inline_weights: dict[str, list[tuple[str, ...]]] = {}
    for f in program.facts:
        values = tuple(encode(v) for v in f.values) or ("",)
        inline.setdefault(f.atom.relation, []).append(values)
        if f.weight is not None:
            inline_weights.setdefault(f.atom.relation, []).append(values + (f.weight,))

    frames: dict[str, DataFrame] = {}
    weights: dict[str, DataFrame] = {}
    sizes: dict[str, int] = {}
    for rel in sorted(analysis.edb):
        arity = analysis.arities[rel]
        parts: list[DataFrame] = []
        wparts: list[DataFrame] = []
        src = sources.get(rel)
        if src is not None and src.rows:
            facts, w = _facts_frame(src, types[rel])
            parts.append(facts)
            if w is not None:
                wparts.append(w)
        if rel in inline:
            parts.append(spark.createDataFrame(inline[rel], rel_schema(arity)))
        if rel in inline_weights:
            wschema = StructType(rel_schema(arity).fields + [StructField(WEIGHT_COLUMN, StringType(), False)])
            wparts.append(spark.createDataFrame(inline_weights[rel], wschema))
        if parts:
            # materialised once: every iteration of every rule reads the EDB again
            frame, sizes[rel] = materialize_count(union_all(parts).distinct())
        else:
            frame, sizes[rel] = empty_frame(spark, arity), 0
        frames[rel] = frame
        if wparts:
            weights[rel] = union_all(wparts)
    columns = {rel: column_names(program, rel, n) for rel, n in analysis.arities.items()}
    single = {rel for rel in weights
              if (sources[rel].rows if rel in sources else 0) + len(inline.get(rel, [])) == sizes[rel]}
    return SparkDatabase(frames, weights, sizes, types, columns, warnings, single)



def spark_database_from_facts(analysis: Analysis, facts: Mapping[str, Iterable[tuple[Value, ...]]], spark: SparkSession) -> SparkDatabase:
    """EDB ``facts`` given as Python values, plus the program's inline facts, as Spark frames.

    Values go to Spark in its string encoding (:func:`selp.values.encode`) through Arrow, never
    through a file: a labeled null stays a labeled null (a CSV or Parquet file holds its display
    text, which would come back as a string -- or be refused in an ``int`` column)."""
    import pyarrow as pa

    edb: dict[str, list[tuple[Value, ...]]] = {rel: list(rows) for rel, rows in facts.items() if rel in analysis.edb}
    inline_weights: dict[str, list[tuple[str, ...]]] = {}
    for f in analysis.program.facts:
        edb.setdefault(f.atom.relation, []).append(tuple(f.values))
        if f.weight is not None:
            inline_weights.setdefault(f.atom.relation, []).append(tuple(encode(v) for v in f.values) + (f.weight,))
    types = fact_types(analysis, edb)
    frames: dict[str, DataFrame] = {}
    weights: dict[str, DataFrame] = {}
    sizes: dict[str, int] = {}
    for rel in sorted(analysis.edb):
        arity = analysis.arities[rel]
        rows = edb.get(rel, [])
        if not rows:
            frames[rel], sizes[rel] = empty_frame(spark, arity), 0
            continue
        ts = types[rel]

        def enc(v: Value, t: str) -> str:
            # a float column's integers are floats (what a file's 2 in a float column reads as)
            return encode(float(v) if t == "float" and isinstance(v, int) and not isinstance(v, bool) else v)

        if arity:
            cols = {f"c{i}": pa.array([enc(r[i], ts[i]) for r in rows], pa.string()) for i in range(arity)}
        else:
            cols = {UNIT: pa.array([""] * len(rows), pa.string())}
        frame = spark.createDataFrame(pa.table(cols)).select(*[F.col(f.name) for f in rel_schema(arity).fields])
        frames[rel], sizes[rel] = materialize_count(frame.distinct())
        if rel in inline_weights:
            wschema = StructType(rel_schema(arity).fields + [StructField(WEIGHT_COLUMN, StringType(), False)])
            weights[rel] = spark.createDataFrame(inline_weights[rel], wschema)
    columns = {rel: column_names(analysis.program, rel, n) for rel, n in analysis.arities.items()}
    single = {rel for rel in weights if len(edb.get(rel, [])) == sizes[rel]}
    return SparkDatabase(frames, weights, sizes, types, columns, single_weights=single)
