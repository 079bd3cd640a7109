"""How each column of a program is stored in DuckDB: typed where it can be, encoded where it must.

Joins on ``BIGINT`` are much faster than on text, but a labeled null must fit any column. So each
column gets a *kind*:

* ``int`` -- ``BIGINT``: an integer column no labeled null can reach;
* ``str`` -- ``VARCHAR``, the string as is; a labeled null is ``SKOLEM_MARK`` + its canonical text
  (no user string starts with the mark: the loaders reject it);
* ``float`` -- ``DOUBLE``: a float column no labeled null can reach;
* ``enc`` -- ``VARCHAR`` in the uniform encoding of :mod:`selp.values`: an integer or float column
  that a labeled null can reach (numbers as their canonical text).

A labeled null can only travel through variables, so the columns a program connects (a variable
shared between atoms, passed from body to head, or compared) form groups -- the same groups that
:mod:`selp.language.types` types -- and a group is *tainted* when one of its columns is the head
position of a Skolem term or holds a labeled null in the input. Every column of a group has one
SQL type, so joins never cast.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping

from selp.language.ast import SkolemTerm
from selp.language.types import TypeGraph
from selp.language.validate import Analysis

Column = tuple[str, int]


@dataclass(frozen=True)
class Kind:
    """The storage of one column: its logical type and whether labeled nulls can reach it."""

    logical: str  # "int", "float" or "str"
    tainted: bool

    @property
    def sql(self) -> str:
        if self.tainted or self.logical == "str":
            return "VARCHAR"
        return "BIGINT" if self.logical == "int" else "DOUBLE"

    @property
    def native_int(self) -> bool:
        """Stored as a plain ``BIGINT``."""
        return self.sql == "BIGINT"

    @property
    def native_number(self) -> bool:
        """Stored as a plain ``BIGINT`` or ``DOUBLE`` (not as text)."""
        return self.sql != "VARCHAR"

    @property
    def number_sql(self) -> str:
        """The SQL type of the column's numbers (``BIGINT`` or ``DOUBLE``)."""
        return "BIGINT" if self.logical == "int" else "DOUBLE"


def column_kinds(
    analysis: Analysis,
    types: Mapping[str, tuple[str, ...]],
    tainted_input: Iterable[Column] = (),
) -> dict[str, tuple[Kind, ...]]:
    """The kind of every column of every relation of ``analysis``.

    ``types`` are the logical column types (:func:`selp.language.types.resolve_types`);
    ``tainted_input`` are input columns that hold labeled nulls (only possible for facts handed
    over as Python values, e.g. by the CDSS layer).
    """
    # the groups of selp.language.types (variables shared, passed to the head, or equated)
    uf = TypeGraph(analysis).uf
    seeds: set[Column] = set(tainted_input)
    for r in analysis.program.rules:
        for i, t in enumerate(r.head.args):
            if isinstance(t, SkolemTerm):
                seeds.add((r.head.relation, i))
    tainted_roots = {uf.find(c) for c in seeds}
    return {
        rel: tuple(Kind(types[rel][i], uf.find((rel, i)) in tainted_roots) for i in range(n))
        for rel, n in analysis.arities.items()
    }
