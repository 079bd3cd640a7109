"""The typed AST of a ProQL query (see :mod:`selp.cdss.proql.parser` for the concrete syntax).

Every node carries the :class:`~selp.errors.Location` of its first character in the query, so
the checker and the evaluator can report errors with the query position.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Union

from selp.errors import Location


def _loc() -> Location:
    return field(default_factory=Location, compare=False, repr=False)


# -- paths -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class NodePattern:
    """``[R $x]``, ``[R]``, ``[$x]`` or ``[]``: a tuple node, optionally of relation ``R``,
    optionally bound to ``$x`` (``var`` is the name without ``$``)."""

    relation: str | None
    var: str | None
    loc: Location = _loc()


@dataclass(frozen=True)
class Step:
    """One derivation step from the node on its right to the node on its left.

    ``kind`` is ``any`` (``<-``: one step through any mapping), ``mapping`` (``<m1``: one step
    through mapping ``name``), ``mapvar`` (``<$p``: one step, binding the mapping node to
    ``name``) or ``plus`` (``<-+``: one or more steps through any mappings)."""

    kind: str
    name: str | None = None
    loc: Location = _loc()


@dataclass(frozen=True)
class Path:
    """``node (step node)*``: ``nodes[i]`` is derived from ``nodes[i+1]`` through ``steps[i]``."""

    nodes: tuple[NodePattern, ...]
    steps: tuple[Step, ...]
    loc: Location = _loc()


# -- conditions ------------------------------------------------------------------------------
@dataclass(frozen=True)
class AttrRef:
    """``$x.a``."""

    var: str
    attribute: str
    loc: Location = _loc()


@dataclass(frozen=True)
class VarRef:
    """``$x``: a tuple node, a mapping node, or (in a mapping assignment) the argument value."""

    var: str
    loc: Location = _loc()


@dataclass(frozen=True)
class Literal:
    """A number, a quoted string, or a bare name (a mapping name, ``true``, ``X1``, ``C``, ...);
    ``bare`` tells the last kind apart, whose meaning depends on where it is used."""

    value: int | float | str
    bare: bool = False
    loc: Location = _loc()


Operand = Union[AttrRef, VarRef, Literal]


@dataclass(frozen=True)
class Comparison:
    left: Operand
    op: str  # = != < <= > >=
    right: Operand
    loc: Location = _loc()


@dataclass(frozen=True)
class Membership:
    """``$y in S``."""

    var: str
    relation: str
    loc: Location = _loc()


@dataclass(frozen=True)
class PathCondition:
    """A path expression in WHERE or CASE: true when some match exists (unbound variables are
    existentially quantified)."""

    path: Path
    loc: Location = _loc()


@dataclass(frozen=True)
class And:
    parts: tuple["Condition", ...]
    loc: Location = _loc()


@dataclass(frozen=True)
class Or:
    parts: tuple["Condition", ...]
    loc: Location = _loc()


@dataclass(frozen=True)
class Not:
    part: "Condition"
    loc: Location = _loc()


Condition = Union[Comparison, Membership, PathCondition, And, Or, Not]


# -- assignments -----------------------------------------------------------------------------
@dataclass(frozen=True)
class Call:
    """A function applied in a SET value: ``edit_distance($y.nam, "GENE")``."""

    function: str
    args: tuple["Value", ...]
    loc: Location = _loc()


@dataclass(frozen=True)
class Scale:
    """``SET $z * 2`` (or ``2 * $z``) in a mapping assignment: the argument scaled by a number
    ([Kar09] Example 9's ``f_m4(x) = 2x``); see :meth:`~.semirings.Semiring.scale`."""

    var: str
    factor: int | float
    loc: Location = _loc()


Value = Union[Operand, Call, Scale]


@dataclass(frozen=True)
class Case:
    condition: Condition | None  # None: DEFAULT
    value: Value
    loc: Location = _loc()


@dataclass(frozen=True)
class Assignment:
    """``ASSIGNING EACH leaf_node $y {...}`` (``kind`` ``leaf``, ``var`` y) or
    ``ASSIGNING EACH mapping $p($z) {...}`` (``kind`` ``mapping``, ``var`` p, ``arg`` z).
    ``cases`` are in order, the DEFAULT (if any) last with ``condition`` None."""

    kind: str
    var: str
    arg: str | None
    cases: tuple[Case, ...]
    loc: Location = _loc()

    @property
    def has_default(self) -> bool:
        return bool(self.cases) and self.cases[-1].condition is None


# -- queries ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Projection:
    """FOR / WHERE / INCLUDE PATH / RETURN."""

    for_paths: tuple[Path, ...]
    where: Condition | None
    include: tuple[Path, ...]
    returns: tuple[VarRef, ...]
    loc: Location = _loc()


@dataclass(frozen=True)
class Query:
    """A ProQL query: a projection, evaluated in ``semiring`` (POLYNOMIAL when the query has no
    EVALUATE) under the leaf and mapping assignments (None: the defaults)."""

    projection: Projection
    semiring: str = "POLYNOMIAL"
    semiring_loc: Location = _loc()
    leaf: Assignment | None = None
    mapping: Assignment | None = None
    evaluate: bool = False
    text: str = field(default="", compare=False, repr=False)
