"""Streams of base changes: one ``+rel(v1, v2, ...)`` (insert) or ``-rel(...)`` (delete) per line.

Blank lines and lines starting with ``#`` are skipped. Values are typed by the relation's
columns: ``int`` takes an integer literal, ``float`` any finite number, ``str`` any text,
optionally double-quoted (needed for commas; ``\\"`` escapes a quote). A malformed line is one
error naming the file, line and column and the offending value.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable, Iterator, Mapping

from selp.cdss.edits import split_args
from selp.errors import Location, SelpError, echo
from selp.maintain.program import Fact
from selp.values import format_value, is_int_literal, read_float

_LINE = re.compile(r"\s*([+-])\s*([A-Za-z_]\w*)\s*\((.*)\)\s*$")


@dataclass(frozen=True)
class Change:
    """One change: ``op`` is ``+`` or ``-``; ``loc`` is where it was written."""

    op: str
    relation: str
    fact: Fact
    loc: Location

    def text(self) -> str:
        return f"{self.op}{self.relation}({', '.join(format_value(v) for v in self.fact)})"


def parse_changes(lines: Iterable[str], file: str, types: Mapping[str, tuple[str, ...]], base: Iterable[str]) -> Iterator[Change]:
    """The changes of ``lines`` (of ``file``, ``-`` meaning stdin); ``types`` are the column types
    of the base relations ``base`` (only they change)."""
    base = set(base)
    name = "<stdin>" if file == "-" else file
    for n, line in enumerate(lines, 1):
        text = line.rstrip("\r\n")
        stripped = text.strip()
        if not stripped or stripped.startswith("#"):
            continue
        col = len(text) - len(text.lstrip()) + 1
        m = _LINE.match(text)
        if m is None:
            raise SelpError(f"expected +RELATION(value, ...) or -RELATION(value, ...), got {echo(stripped)}", Location(name, n, col))
        op, rel, args = m.groups()
        if rel not in base:
            what = "a derived relation (change its base relations instead)" if rel in types else "not a relation of the program"
            raise SelpError(f"{rel} is {what}; base relations: {', '.join(sorted(base)) or 'none'}", Location(name, n, m.start(2) + 1))
        if len(re.findall(r'(?<!\\)"', args)) % 2:
            raise SelpError(f"unterminated string in {echo(stripped)}", Location(name, n, m.start(3) + 1))
        cells = split_args(args, name)
        kinds = types[rel]
        if len(cells) != len(kinds):
            raise SelpError(f"{rel} has {len(kinds)} column(s), got {len(cells)} value(s)", Location(name, n, m.start(3) + 1))
        values = []
        offset = m.start(3)
        for cell, kind in zip(cells, kinds):
            where = Location(name, n, offset + len(cell) - len(cell.lstrip()) + 1)
            values.append(_value(cell.strip(), kind, rel, where))
            offset += len(cell) + 1
        yield Change(op, rel, tuple(values), Location(name, n, col))


def _value(cell: str, kind: str, rel: str, loc: Location) -> object:
    if kind == "int":
        if not is_int_literal(cell):
            raise SelpError(f"{rel}: column is int, got {echo(cell)}", loc)
        return int(cell)
    if kind == "float":
        x = read_float(cell)
        if x is None:
            raise SelpError(f"{rel}: column is float, got {echo(cell)}", loc)
        return x
    if len(cell) >= 2 and cell[0] == '"' and cell[-1] == '"':
        return cell[1:-1].replace('\\"', '"').replace("\\\\", "\\")
    if not cell:
        raise SelpError(f"{rel}: empty value (write \"\" for the empty string)", loc)
    return cell
