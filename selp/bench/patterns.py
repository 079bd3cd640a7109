"""Files of named selPQL patterns (the bundled ``selp/bench/programs/*.patterns``): ``name: pattern`` per line.

Blank lines and lines starting with ``#`` are skipped. Errors in a pattern are reported at the
file, line and column of the pattern text, not of a one-line ``pattern`` pseudo-file.
"""

from __future__ import annotations

import re
from pathlib import Path

from selp.errors import Location, SelpError, not_utf8
from selp.language.pattern import Pattern
from selp.language.pattern_parser import PatternError, parse_pattern

_LINE = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*)\s*:\s*")


def load_named_patterns(path: str | Path) -> dict[str, tuple[str, Pattern]]:
    """``{name: (text, pattern)}`` in file order; a malformed line raises a located error."""
    path = Path(path)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as err:
        raise SelpError(f"cannot read patterns file: {err.strerror}", Location(str(path))) from None
    except UnicodeDecodeError:
        raise SelpError(f"patterns file is {not_utf8(path)}", Location(str(path))) from None
    out: dict[str, tuple[str, Pattern]] = {}
    for lineno, line in enumerate(lines, 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        m = _LINE.match(line)
        if m is None:
            raise SelpError("expected 'name: pattern'", Location(str(path), lineno, 1))
        name, text = m.group(1), line[m.end():]
        if name in out:
            raise SelpError(f"pattern {name} is defined twice", Location(str(path), lineno, m.start(1) + 1))
        try:
            out[name] = (text.strip(), parse_pattern(text))
        except PatternError as err:
            loc = err.location
            column = (loc.column or 1) + m.end() if loc is not None and loc.line == 1 else None
            raise PatternError(err.message, Location(str(path), lineno, column)) from None
    return out

