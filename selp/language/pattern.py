"""Derivation-tree patterns of selPQL ([DGM15] Definition 3.1) and their Boolean combinations.

A pattern node is labelled by a relation glob (``dealsWith``, ``*_YAGO``, or ``*`` for any fact)
and optionally by arguments, each a constant or the wildcard ``*``; without parentheses it matches
facts of any arity. Edges to children are regular (``/``: the child is a child of the image) or
transitive (``//``: the child is a proper descendant, reached through one child of the image).
Patterns carry no variables: a bare identifier argument is a string constant.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Iterator, Union

from selp.values import Value

WILDCARD = None  # an argument that matches any value
CHILD, DESCENDANT = "/", "//"


@dataclass(frozen=True)
class PatternNode:
    """A pattern node with its outgoing edges, in source order."""

    relation: str  # a glob; "*" matches every relation (and then any fact)
    args: tuple[Value | None, ...] | None  # None: any arity; an item None: wildcard
    children: tuple[tuple[str, "PatternNode"], ...] = ()

    @property
    def is_leaf(self) -> bool:
        return not self.children

    def nodes(self) -> Iterator["PatternNode"]:
        """This node and its descendants in preorder (the order that numbers them v0, v1, ...)."""
        yield self
        for _, c in self.children:
            yield from c.nodes()

    def matches_relation(self, relation: str) -> bool:
        """Whether the node's glob matches a relation name (``*`` spans any characters)."""
        return _glob(self.relation).fullmatch(relation) is not None

    def matches_fact(self, relation: str, values: tuple[Value, ...]) -> bool:
        """Whether a fact carries this node's label (Definition 3.3, items 2-4)."""
        if not self.matches_relation(relation):
            return False
        if self.args is None:
            return True
        return len(self.args) == len(values) and all(a is WILDCARD or a == v for a, v in zip(self.args, values))


@lru_cache(maxsize=1024)
def _glob(pattern: str) -> re.Pattern[str]:
    # only '*' is special: relation names may contain '@' and '!' but never '?' or '['
    return re.compile(".*".join(re.escape(part) for part in pattern.split("*")))


@dataclass(frozen=True)
class TreePattern:
    """A single derivation-tree pattern."""

    root: PatternNode


@dataclass(frozen=True)
class Not:
    operand: "Pattern"


@dataclass(frozen=True)
class And:
    operands: tuple["Pattern", ...]


@dataclass(frozen=True)
class Or:
    operands: tuple["Pattern", ...]


Pattern = Union[TreePattern, Not, And, Or]
