"""Z-relations in CSV files: a header of column names, then one row per tuple; an optional last
column ``_cnt`` holds the signed count (default 1; a row repeated adds up). A field that is a
decimal integer is an int, anything else a string."""

from __future__ import annotations

import csv
from pathlib import Path

from selp.errors import DataError, Location, echo
from selp.values import INT64_MAX, INT64_MIN, Value, is_int_literal

COUNT = "_cnt"


def _value(text: str) -> Value:
    if is_int_literal(text):
        n = int(text)
        if INT64_MIN <= n <= INT64_MAX:
            return n
    return text


def read_zrel(path: Path, arity: int) -> dict[tuple[Value, ...], int]:
    """The Z-relation in ``path`` for a relation of ``arity`` columns; located errors."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise DataError(f"cannot read {path}: {getattr(err, 'strerror', None) or 'not UTF-8 text'}") from None
    rows = list(csv.reader(text.splitlines()))
    if not rows:
        raise DataError(f"{path}: empty file; write a header line", Location(str(path), 1, 1))
    header = [h.strip() for h in rows[0]]
    counted = bool(header) and header[-1] == COUNT
    width = arity + (1 if counted else 0)
    if len(header) != width:
        raise DataError(f"header has {len(header)} column(s), relation has {arity} (plus an optional {COUNT})", Location(str(path), 1, 1))
    out: dict[tuple[Value, ...], int] = {}
    for line, row in enumerate(rows[1:], start=2):
        if not row:
            continue
        if len(row) != width:
            raise DataError(f"row has {len(row)} field(s), expected {width}", Location(str(path), line, 1))
        n = 1
        if counted:
            field = row[-1].strip()
            if not is_int_literal(field):
                raise DataError(f"{COUNT} must be an integer, got {echo(field)}", Location(str(path), line, 1))
            n = int(field)
            row = row[:-1]
        key = tuple(_value(f) for f in row)
        out[key] = out.get(key, 0) + n
    return {k: n for k, n in out.items() if n}
