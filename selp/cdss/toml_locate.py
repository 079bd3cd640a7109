"""Where things are in a TOML file: ``tomllib`` gives values but no positions.

:class:`TomlLocator` rescans the raw text of a file that ``tomllib`` has already accepted and
records, for every key path (``("peers", "PGUS", "relations", "G", "key", 0)``; array elements and
arrays of tables by index), the offset of the key and of its value. Messages about a value then
point at its line and column; a path the scan cannot place (it should not happen on valid TOML)
falls back to its nearest recorded ancestor, and finally to the file alone.

For string values it also maps every character of the decoded string back to its offset in the
file (escapes and multi-line strings included), so an error inside a mapping's text points at the
offending character of ``cdss.toml``.
"""

from __future__ import annotations

import re
from typing import Callable

from selp.errors import Location

Path = tuple  # of str (keys) and int (array indices)
_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")
_ESCAPES = {"b": "\b", "t": "\t", "n": "\n", "f": "\f", "r": "\r", '"': '"', "\\": "\\"}


class _Scan:
    """A small recursive-descent pass over valid TOML, recording positions only."""

    def __init__(self, text: str) -> None:
        self.t = text
        self.i = 0
        self.keys: dict[Path, int] = {}
        self.values: dict[Path, int] = {}

    # -- lexical helpers -------------------------------------------------------------------
    def skip(self, newlines: bool) -> None:
        t = self.t
        while self.i < len(t):
            c = t[self.i]
            if c in " \t\r" or (newlines and c == "\n"):
                self.i += 1
            elif c == "#":
                while self.i < len(t) and t[self.i] != "\n":
                    self.i += 1
            else:
                return

    def key(self) -> tuple[str, ...]:
        parts = []
        while True:
            self.skip(False)
            if self.t[self.i] in "\"'":
                value, _, self.i = decode_string(self.t, self.i)
                parts.append(value)
            else:
                m = _BARE_KEY.match(self.t, self.i)
                if not m:
                    raise ValueError(f"key expected at {self.i}")
                parts.append(m.group())
                self.i = m.end()
            self.skip(False)
            if self.i < len(self.t) and self.t[self.i] == ".":
                self.i += 1
                continue
            return tuple(parts)

    # -- structure -------------------------------------------------------------------------
    def document(self) -> None:
        t = self.t
        section: Path = ()
        aot: dict[tuple[str, ...], int] = {}  # array-of-tables header -> current index
        while True:
            self.skip(True)
            if self.i >= len(t):
                return
            start = self.i
            if t[self.i] == "[":
                array = t.startswith("[[", self.i)
                self.i += 2 if array else 1
                keys = self.key()
                self.i += 2 if array else 1
                if array:
                    aot[keys] = aot.get(keys, -1) + 1
                section = self._header_path(keys, aot)
                for n in range(1, len(section) + 1):  # [a.b.c] also places a and a.b
                    self.keys.setdefault(section[:n], start)
                    self.values.setdefault(section[:n], start)
                continue
            keys = self.key()
            path = section + keys
            self.keys[path] = start
            self.skip(False)
            self.i += 1  # '='
            self.value(path)

    @staticmethod
    def _header_path(keys: tuple[str, ...], aot: dict[tuple[str, ...], int]) -> Path:
        path: list = []
        for j in range(1, len(keys) + 1):
            path.append(keys[j - 1])
            if keys[:j] in aot:
                path.append(aot[keys[:j]])
        return tuple(path)

    def value(self, path: Path) -> None:
        self.skip(False)
        t = self.t
        self.values[path] = self.i
        c = t[self.i]
        if c in "\"'":
            _, _, self.i = decode_string(t, self.i)
        elif c == "[":
            self.i += 1
            n = 0
            while True:
                self.skip(True)
                if t[self.i] == "]":
                    self.i += 1
                    return
                self.value(path + (n,))
                n += 1
                self.skip(True)
                if t[self.i] == ",":
                    self.i += 1
        elif c == "{":
            self.i += 1
            while True:
                self.skip(False)
                if t[self.i] == "}":
                    self.i += 1
                    return
                start = self.i
                keys = self.key()
                self.keys[path + keys] = start
                self.skip(False)
                self.i += 1  # '='
                self.value(path + keys)
                self.skip(False)
                if t[self.i] == ",":
                    self.i += 1
        else:  # number, boolean, date: up to the next delimiter
            m = re.compile(r"[^,\]}\n#]*").match(t, self.i)
            assert m is not None
            self.i = m.end()


def decode_string(t: str, i: int) -> tuple[str, list[int], int]:
    """Decode the TOML string literal starting at ``t[i]``: (value, offset in ``t`` of each value
    character, offset just after the literal)."""
    for delim in ('"""', "'''", '"', "'"):
        if t.startswith(delim, i):
            break
    multi = len(delim) == 3
    basic = delim[0] == '"'
    j = i + len(delim)
    if multi and t.startswith("\n", j):
        j += 1
    elif multi and t.startswith("\r\n", j):
        j += 2
    out: list[str] = []
    where: list[int] = []
    while not t.startswith(delim, j) or (multi and t.startswith(delim[0], j + 3)):
        c = t[j]
        if basic and c == "\\":
            nxt = t[j + 1]
            if nxt in _ESCAPES:
                out.append(_ESCAPES[nxt])
                where.append(j)
                j += 2
            elif nxt in "uU":
                width = 4 if nxt == "u" else 8
                out.append(chr(int(t[j + 2 : j + 2 + width], 16)))
                where.append(j)
                j += 2 + width
            else:  # line-ending backslash in a multi-line string: skip the whitespace
                j += 1
                while t[j] in " \t\r\n":
                    j += 1
            continue
        out.append(c)
        where.append(j)
        j += 1
    return "".join(out), where, j + len(delim)


class TomlLocator:
    """Positions of keys and values in a TOML document (see the module docstring)."""

    def __init__(self, text: str, file: str | None) -> None:
        self.text = text
        self.file = file
        scan = _Scan(text)
        try:
            scan.document()
        except (ValueError, IndexError, AssertionError):
            pass  # keep what was recorded; locations degrade to ancestors or the file
        self._keys = scan.keys
        self._values = scan.values

    def at_offset(self, offset: int) -> Location:
        line = self.text.count("\n", 0, offset) + 1
        col = offset - (self.text.rfind("\n", 0, offset) + 1) + 1
        return Location(self.file, line, col)

    def _find(self, table: dict[Path, int], path: Path) -> int | None:
        path = tuple(path)
        while path:
            if path in table:
                return table[path]
            path = path[:-1]
        return None

    def value(self, path: Path) -> Location:
        """Where the value at ``path`` starts (or its nearest recorded ancestor)."""
        off = self._find(self._values, path)
        return Location(self.file) if off is None else self.at_offset(off)

    def key(self, path: Path) -> Location:
        """Where the key of ``path`` is written (or its nearest recorded ancestor)."""
        off = self._find(self._keys, path)
        return Location(self.file) if off is None else self.at_offset(off)

    def string(self, path: Path) -> Callable[[int], Location]:
        """For the string value at ``path``: offset in the decoded value -> file location."""
        off = self._values.get(tuple(path))
        if off is None or self.text[off] not in "\"'":
            where = self.value(path)
            return lambda _offset: where
        _, positions, end = decode_string(self.text, off)

        def locate(offset: int) -> Location:
            if offset < len(positions):
                return self.at_offset(positions[offset])
            return self.at_offset(positions[-1] + 1 if positions else off)

        return locate
