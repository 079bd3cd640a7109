"""User-facing errors.

Every mistake a user can make (a bad program, a malformed data file, a wrong option) is raised as a
:class:`SelpError` carrying where it happened, so the CLI prints one located line and exits 1
instead of showing a traceback.
"""

from __future__ import annotations

import codecs
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Location:
    """A position in a user's file (1-based line and column; column 0 means 'whole line')."""

    file: str | None = None
    line: int | None = None
    column: int | None = None

    def __str__(self) -> str:
        parts = [self.file or "<input>"]
        if self.line is not None:
            parts.append(str(self.line))
            if self.column:
                parts.append(str(self.column))
        return ":".join(parts)


class SelpError(Exception):
    """An error caused by user input; rendered as ``file:line:col: message``."""

    def __init__(self, message: str, location: Location | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.location = location

    def __str__(self) -> str:
        if self.location is None:
            return self.message
        return f"{self.location}: {self.message}"


ECHO_LIMIT = 80  # characters of a user's input an error message repeats
LINE_LIMIT = 400  # characters of an error line beyond which the CLI cuts it (a safety net)
MAX_DEPTH = 200  # nesting (Skolem terms, NOT, brackets, parentheses) any parser accepts
INT_DIGITS = 19  # an int64 has at most 19 digits: longer literals are rejected before int()


def clip(text: str, limit: int = ECHO_LIMIT) -> str:
    """``text`` cut to ``limit`` characters with an ellipsis, for echoing user input in an error
    (an error line must stay one readable line even when the input is 10 KB)."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def echo(text: str, limit: int = ECHO_LIMIT) -> str:
    """``repr`` of the user's ``text``, cut to about ``limit`` characters (see :func:`clip`)."""
    return repr(clip(text, limit))


def one_line(message: str, limit: int = LINE_LIMIT) -> str:
    """An error message as one line of at most about ``limit`` characters: newlines escaped, the
    middle cut out (the location leads the line, so it survives)."""
    flat = message.replace("\r", "\\r").replace("\n", "\\n")
    if len(flat) <= limit:
        return flat
    half = limit // 2
    return flat[:half] + " … " + flat[-(limit - half - 3):]


def first_non_utf8(path: str | Path) -> tuple[int, str] | None:
    """``(byte offset, reason)`` of the first byte of ``path`` that is not UTF-8, or None.

    Read in chunks with an incremental decoder, so a streamed reader (CSV) that met a bad byte can
    name its offset in the file, not in the chunk it was decoding."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    pos = 0
    try:
        with open(path, "rb") as fh:
            while True:
                chunk = fh.read(1 << 20)
                pending = len(decoder.getstate()[0])
                try:
                    decoder.decode(chunk, final=not chunk)
                except UnicodeDecodeError as err:
                    return pos - pending + err.start, err.reason
                if not chunk:
                    return None
                pos += len(chunk)
    except OSError:
        return None


def not_utf8(path: str | Path) -> str:
    """The message for a file that is not UTF-8 text, naming the first bad byte's offset."""
    found = first_non_utf8(path)
    if found is None:
        return "not UTF-8 text"
    offset, reason = found
    return f"not UTF-8 text ({reason} at byte offset {offset}); save the file as UTF-8"


def read_user_text(path: str | Path, what: str = "file", error: type["SelpError"] | None = None) -> str:
    """The text of a file the user named, or a one-line :class:`SelpError` (of class ``error``)
    naming the file: not found, unreadable, or not UTF-8 (with the bad byte's offset)."""
    cls = error or SelpError
    p = Path(path)
    try:
        data = p.read_bytes()
    except FileNotFoundError:
        raise cls(f"{what} not found", Location(str(p))) from None
    except IsADirectoryError:
        raise cls(f"{what} is a directory", Location(str(p))) from None
    except OSError as err:
        raise cls(f"cannot read {what} ({err.strerror})", Location(str(p))) from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise cls(f"not UTF-8 text ({err.reason} at byte offset {err.start}); save the file as UTF-8", Location(str(p))) from None


def int_literal_fits(digits: str) -> bool:
    """Whether an integer literal (optional sign, decimal digits) has few enough digits to be
    converted with ``int()`` -- Python refuses more than 4300 -- and possibly fit in 64 bits."""
    body = digits.lstrip("+-").lstrip("0")
    return len(body) <= INT_DIGITS


class ProgramError(SelpError):
    """A syntax or validation error in a datalog^sk program."""


class DataError(SelpError):
    """A malformed or inconsistent data file."""


class EvalError(SelpError):
    """A program that cannot be evaluated on its data: an arithmetic overflow or a division by
    zero, located at the rule."""
