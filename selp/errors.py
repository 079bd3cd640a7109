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


class ProgramError(SelpError):
    """A syntax or validation error in a datalog^sk program."""


class DataError(SelpError):
    """A malformed or inconsistent data file."""
