"""Values of datalog^sk: strings, integers, floats and Skolem values (labeled nulls).

In Python a value is a ``str``, an ``int``, a ``float`` or a :class:`Skolem`. The Spark engine keeps every column
as a string column ("uniform string encoding") so that labeled nulls can sit in a column of any
type without Python UDFs:

* a ``str`` value is stored as itself,
* an ``int`` value as its canonical decimal text (``-12``, never ``+12`` or ``012``),
* a ``float`` value as its canonical text (:func:`format_float`: ``0.5``, ``1e+20``),
* a Skolem value as ``SKOLEM_MARK`` followed by its canonical text, e.g. ``\\x00f("Cuba",3)``.

The canonical text of a Skolem value is what users see: the function symbol applied to the
readable arguments, strings double-quoted with ``\\`` and ``"`` escaped, no spaces. Equal function
and arguments give the same text, so Skolem values are deterministic across runs and engines.
User strings may not start with ``SKOLEM_MARK`` (the NUL character); loaders reject such values.
"""

from __future__ import annotations

import math
import re
from typing import Union

SKOLEM_MARK = "\x00"
INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1


class Skolem:
    """A labeled null ``fn(args...)``, produced by a Skolem term in a rule head."""

    __slots__ = ("fn", "args", "_hash")

    def __init__(self, fn: str, args: tuple["Value", ...]) -> None:
        self.fn = fn
        self.args = tuple(args)
        self._hash = hash((Skolem, fn, self.args))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Skolem) and self.fn == other.fn and self.args == other.args

    def __hash__(self) -> int:
        return self._hash

    def __repr__(self) -> str:
        return format_value(self)

    def __reduce__(self):  # picklable, for use inside Spark tasks
        return (Skolem, (self.fn, self.args))


Value = Union[str, int, float, Skolem]


def quote_string(s: str) -> str:
    """Quote a string the way programs and Skolem texts write it (only ``\\`` and ``"`` escaped)."""
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def format_value(v: Value) -> str:
    """Readable, parseable text of a value: ``"Cuba"``, ``42``, ``f("Cuba",42)``."""
    if isinstance(v, Skolem):
        return v.fn + "(" + ",".join(format_value(a) for a in v.args) + ")"
    if isinstance(v, bool):  # bool is an int subclass; never a datalog value
        raise TypeError("booleans are not datalog values")
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return format_float(v)
    return quote_string(v)


def json_value(v: Value) -> int | str:
    """``v`` for JSON: integers and strings as they are, a Skolem value as its text."""
    return v if isinstance(v, (int, str)) else format_value(v)


def format_float(x: float) -> str:
    """The canonical text of a float: Python's shortest round-trip form (``0.1``, ``1.0``,
    ``1e+20``, ``1.5e-05``), ``-0.0`` written ``0.0``. DuckDB's cast to text writes the same;
    the Spark engine builds it in column expressions (:mod:`selp.engines.spark_compile`)."""
    return repr(x + 0.0)


def display_value(v: Value) -> str:
    """Text for tables and CSV output: strings bare, ints in decimal, Skolem values canonically."""
    if isinstance(v, str):
        return v
    return format_value(v)


def encode(v: Value) -> str:
    """The uniform string encoding used by the Spark engine (see module docstring)."""
    if isinstance(v, Skolem):
        return SKOLEM_MARK + format_value(v)
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return format_float(v)
    return v


def parse_skolem_text(text: str) -> Skolem:
    """Parse the canonical text of a Skolem value (inverse of :func:`format_value`)."""
    value, end = _parse_value(text, 0)
    if end != len(text) or not isinstance(value, Skolem):
        raise ValueError(f"not a Skolem value: {text!r}")
    return value


def parse_value_text(text: str) -> Value:
    """The value whose canonical text (:func:`format_value`) is ``text``."""
    value, end = _parse_value(text, 0)
    if end != len(text):
        raise ValueError(f"not a canonical value text: {text!r}")
    return value


def _parse_value(text: str, i: int) -> tuple[Value, int]:
    if text[i] == '"':
        out = []
        i += 1
        while text[i] != '"':
            if text[i] == "\\":
                i += 1
            out.append(text[i])
            i += 1
        return "".join(out), i + 1
    j = i
    if text[j] == "-":
        j += 1
    if text[j].isdigit():
        while j < len(text) and text[j].isdigit():
            j += 1
        if j < len(text) and text[j] in ".e":  # a float: 1.5, 1e+20, 2.5e-05
            while j < len(text) and (text[j].isdigit() or text[j] in ".e+-"):
                j += 1
            return float(text[i:j]), j
        return int(text[i:j]), j
    j = text.index("(", i)
    fn = text[i:j]
    args: list[Value] = []
    j += 1
    if text[j] == ")":
        return Skolem(fn, ()), j + 1
    while True:
        arg, j = _parse_value(text, j)
        args.append(arg)
        if text[j] == ")":
            return Skolem(fn, tuple(args)), j + 1
        j += 1  # the comma


def decode(s: str, typ: str) -> Value:
    """Inverse of :func:`encode` for a column of type ``typ`` (``"str"`` or ``"int"``)."""
    if s.startswith(SKOLEM_MARK):
        return parse_skolem_text(s[1:])
    if typ == "int":
        return int(s)
    if typ == "float":
        return float(s)
    return s


_FLOAT_LITERAL = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?")


def read_float(s: str) -> float | None:
    """The float a data cell holds (``1.5``, ``-2e3``, ``.5``, ``7``), canonical (``-0.0`` is
    ``0.0``), or None when the cell is not a finite decimal number (``inf``, ``1e999``, ``1_0``)."""
    if not _FLOAT_LITERAL.fullmatch(s):
        return None
    x = float(s)
    return x + 0.0 if math.isfinite(x) else None


def is_int_literal(s: str) -> bool:
    """Whether a data cell reads as an integer (optional sign, digits, within 64 bits)."""
    t = s[1:] if s[:1] in "+-" else s
    if not t or not t.isascii() or not t.isdigit():
        return False
    # more than 19 significant digits never fits; and int() refuses more than 4300 digits
    if len(t.lstrip("0")) > 19:
        return False
    return INT64_MIN <= int(s) <= INT64_MAX


def sort_key(v: Value) -> tuple:
    """A total order over mixed values for deterministic output: ints, then strings, then nulls."""
    if isinstance(v, Skolem):
        return (2, format_value(v))
    if isinstance(v, (int, float)):
        return (0, v)
    return (1, v)
