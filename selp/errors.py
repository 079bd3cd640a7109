"""User-facing errors.

Every mistake a user can make (a bad program, a malformed data file, a wrong option) is raised as a
:class:`SelpError` carrying where it happened, so the CLI prints one located line and exits 1
instead of showing a traceback.
"""

from __future__ import annotations

from dataclasses import dataclass


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


def int_literal_fits(digits: str) -> bool:
    """Whether an integer literal (optional sign, decimal digits) has few enough digits to be
    converted with ``int()`` -- Python refuses more than 4300 -- and possibly fit in 64 bits."""
    body = digits.lstrip("+-").lstrip("0")
    return len(body) <= INT_DIGITS


class ProgramError(SelpError):
    """A syntax or validation error in a datalog^sk program."""


class DataError(SelpError):
    """A malformed or inconsistent data file."""
