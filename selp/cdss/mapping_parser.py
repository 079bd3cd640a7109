"""Parse mapping (tgd) text and trust-condition text (grammar ``mapping.lark``, lark LALR).

Mapping syntax::

    m3: B(i, n) -> exists c. U(n, c)
    m4: PBioSQL.B(i, c), U(n, c) -> B(i, n)

A mapping is ``NAME: body -> [exists z1, ..., zk.] head``; body and head are atoms separated by
commas. A relation is written ``R`` when only one peer has a relation named ``R``, else qualified
as ``PEER.R``. Terms are variables (identifiers), ``_`` (any value; body only), double-quoted
strings and integers. ``exists`` and ``and`` are keywords.

A bidirectional mapping ``m2: exists i. B(i, n), *S(i, c) <-> *U(n, c)`` ([Kar09] §5.3) may
declare existentials on either side (those of the left side before it) and mark atoms with ``*``
(its update policy: deleting a tuple on one side deletes the starred tuples of the other side
that derive it). ``*`` and a left-side ``exists`` are refused in a ``->`` mapping, ``_`` in a
``<->`` one (both sides are heads).

Trust conditions (the ``when`` of a trust rule) are comparisons joined by ``and``:
``nam >= 3 and id != "x"``; a bare identifier is an attribute of the relation.

This module only builds unresolved syntax (:class:`ParsedMapping`); :mod:`selp.cdss.config`
resolves relation names and checks the mapping against the peers' schemas. Locations: the caller
passes ``locate(offset) -> Location`` turning an offset in the text into a position in the file
the text came from (``cdss.toml``), so messages point at the offending character.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Callable

from lark import Lark, Token, Tree
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

from selp.cdss.errors import CdssError
from selp.cdss.model import AttributeRef, Condition, ConditionTerm, MappingTerm
from selp.errors import Location, clip, echo, int_literal_fits
from selp.language.ast import Const, Var
from selp.language.lark_cache import cached_lark
from selp.language.parser import unquote  # the string escapes are selp's own
from selp.values import INT64_MAX, INT64_MIN, SKOLEM_MARK

Locate = Callable[[int], Location]
ANON_VAR_PREFIX = "anon"  # `_` in a body becomes a fresh variable anon1, anon2, ... (not a user's)

_TOKEN_NAMES = {
    "NAME": "a name",
    "STRING": "a string",
    "INT": "an integer",
    "LPAR": "'('",
    "RPAR": "')'",
    "COMMA": "','",
    "DOT": "'.'",
    "COLON": "':'",
    "ARROW": "'->' or '<->'",
    "STAR": "'*'",
    "EXISTS": "'exists'",
    "AND": "'and'",
    "CMP": "a comparison operator",
    "ANON": "'_'",
    "UNDERSCORE": "'_'",
    "$END": "end of text",
}


@dataclass(frozen=True)
class ParsedAtom:
    """An atom as written: ``peer`` is ``None`` for an unqualified relation name."""

    peer: str | None
    relation: str
    args: tuple[MappingTerm, ...]
    anonymous: tuple[bool, ...]  # which arguments were written `_`
    loc: Location
    starred: bool = False  # `*R(...)`: part of a bidirectional mapping's update policy

    @property
    def written(self) -> str:
        return f"{self.peer}.{self.relation}" if self.peer else self.relation


@dataclass(frozen=True)
class ParsedMapping:
    """A mapping as written, before its relations are resolved against the peers."""

    name: str
    body: tuple[ParsedAtom, ...]
    head: tuple[ParsedAtom, ...]
    existentials: tuple[tuple[Var, Location], ...]
    bidirectional: bool
    text: str
    loc: Location  # of the mapping's name
    arrow_loc: Location
    body_existentials: tuple[tuple[Var, Location], ...] = ()  # `exists` before the left side (`<->` only)


@lru_cache(maxsize=1)
def _parser() -> Lark:
    grammar = resources.files("selp.cdss").joinpath("mapping.lark").read_text()
    return cached_lark(
        grammar, start=["mapping", "condition"], parser="lalr", propagate_positions=True,
        maybe_placeholders=True,
    )


def _default_locate(text: str) -> Locate:
    def locate(offset: int) -> Location:
        line = text.count("\n", 0, offset) + 1
        col = offset - (text.rfind("\n", 0, offset) + 1) + 1
        return Location(None, line, col)

    return locate


def _syntax_error(err: UnexpectedInput, text: str, what: str, locate: Locate) -> CdssError:
    if isinstance(err, UnexpectedCharacters):
        char = text[err.pos_in_stream] if err.pos_in_stream < len(text) else "?"
        return CdssError(f"syntax error in {what}: unexpected character {char!r}", locate(err.pos_in_stream))
    if isinstance(err, UnexpectedEOF):
        return CdssError(f"syntax error in {what}: unexpected end of text", locate(len(text)))
    assert isinstance(err, UnexpectedToken)
    tok = err.token
    expected = sorted({_TOKEN_NAMES.get(e, repr(e.lower())) for e in (err.accepts or err.expected)})
    if tok.type == "$END":
        return CdssError(
            f"syntax error in {what}: unexpected end of text, expected {', '.join(expected)}",
            locate(len(text.rstrip())),
        )
    return CdssError(
        f"syntax error in {what}: unexpected {echo(str(tok))}, expected {', '.join(expected)}",
        locate(tok.start_pos or 0),
    )


def _pos(node: Tree | Token) -> int:
    if isinstance(node, Token):
        return node.start_pos or 0
    return node.meta.start_pos


class _Builder:
    def __init__(self, text: str, locate: Locate) -> None:
        self.text = text
        self.locate = locate
        self.anon = itertools.count(1)
        self.taken: set[str] = set()

    def at(self, node: Tree | Token) -> Location:
        return self.locate(_pos(node))

    def constant(self, node: Tree) -> Const:
        tok = node.children[0]
        if node.data == "string":
            value = unquote(str(tok))
            if value.startswith(SKOLEM_MARK):
                raise CdssError("string constants may not start with the NUL character", self.at(node))
            return Const(value)
        text = str(tok)
        # count digits first: int() of more than 4300 digits raises ValueError
        number = int(text) if int_literal_fits(text) else None
        if number is None or not INT64_MIN <= number <= INT64_MAX:
            raise CdssError(f"integer {clip(text, 40)} does not fit in 64 bits", self.at(node))
        return Const(number)

    def atom(self, node: Tree, side: str) -> ParsedAtom:
        star, ref, *args = node.children
        names = [str(t) for t in ref.children]
        peer, rel = (names[0], names[1]) if len(names) == 2 else (None, names[0])
        terms: list[MappingTerm] = []
        anon: list[bool] = []
        for a in args:
            if a is None:
                continue
            if a.data == "var":
                terms.append(Var(str(a.children[0])))
                anon.append(False)
            elif a.data == "anon":
                if side == "both":
                    raise CdssError(
                        "'_' in a bidirectional mapping (each side is the head of one direction);"
                        " name the value, or declare it with exists",
                        self.at(a),
                    )
                if side == "head":
                    raise CdssError(
                        "'_' in the head of a mapping; name the value, or declare it with exists",
                        self.at(a),
                    )
                terms.append(Var("_"))  # renamed once all user variable names are known
                anon.append(True)
            else:
                terms.append(self.constant(a))
                anon.append(False)
        return ParsedAtom(peer, rel, tuple(terms), tuple(anon), self.at(node), star is not None)

    def rename_anonymous(self, atoms: list[ParsedAtom]) -> list[ParsedAtom]:
        """Give each `_` a fresh variable (P_m keeps every body variable, so it needs a name)."""
        out = []
        for a in atoms:
            args = tuple(
                Var(self.fresh()) if is_anon else t for t, is_anon in zip(a.args, a.anonymous)
            )
            out.append(ParsedAtom(a.peer, a.relation, args, a.anonymous, a.loc, a.starred))
        return out

    def fresh(self) -> str:
        name = next(f"{ANON_VAR_PREFIX}{i}" for i in self.anon if f"{ANON_VAR_PREFIX}{i}" not in self.taken)
        self.taken.add(name)
        return name


def parse_mapping(text: str, locate: Locate | None = None) -> ParsedMapping:
    """Parse one mapping (``->`` or ``<->``); raises :class:`CdssError` located through ``locate``."""
    locate = locate or _default_locate(text)
    try:
        tree = _parser().parse(text, start="mapping")
    except UnexpectedInput as err:
        raise _syntax_error(err, text, "mapping", locate) from None
    b = _Builder(text, locate)
    name_tok, left_exists_t, body_t, arrow, exists_t, head_t = tree.children
    bidirectional = str(arrow) == "<->"
    if not bidirectional and left_exists_t is not None:
        raise CdssError(
            f"mapping {name_tok}: 'exists' before the body; a body variable is universally quantified"
            " (existentials of the left side are for '<->' mappings)",
            b.at(left_exists_t),
        )
    # in a `<->` mapping both sides are heads of one of the two tgds
    body = [b.atom(a, "both" if bidirectional else "body") for a in body_t.children]
    head = [b.atom(a, "both" if bidirectional else "head") for a in head_t.children]
    if not bidirectional:
        for a in body + head:
            if a.starred:
                raise CdssError(
                    f"mapping {name_tok}: '*' (an update policy) is only allowed in a bidirectional"
                    " mapping ('<->')",
                    a.loc,
                )

    def declared(t: Tree | None) -> list[tuple[Var, Location]]:
        return [] if t is None else [(Var(str(tok)), b.at(tok)) for tok in t.children[1:]]

    existentials, body_existentials = declared(exists_t), declared(left_exists_t)
    b.taken = {v.name for a in body + head for v in a.args if isinstance(v, Var)}
    b.taken |= {v.name for v, _ in existentials + body_existentials}
    body = b.rename_anonymous(body)
    return ParsedMapping(
        str(name_tok), tuple(body), tuple(head), tuple(existentials), bidirectional, text.strip(),
        b.at(name_tok), b.at(arrow), tuple(body_existentials),
    )


def parse_condition(text: str, locate: Locate | None = None) -> tuple[tuple[Condition, Location], ...]:
    """Parse a trust condition (``nam >= 3 and id != 7``); attributes are not checked here."""
    locate = locate or _default_locate(text)
    try:
        tree = _parser().parse(text, start="condition")
    except UnexpectedInput as err:
        raise _syntax_error(err, text, "trust condition", locate) from None
    b = _Builder(text, locate)
    out = []
    for comp in tree.children:
        if isinstance(comp, Token):  # `and`
            continue
        left, op, right = comp.children
        out.append((Condition(str(op), _cterm(b, left), _cterm(b, right)), b.at(comp)))
    return tuple(out)


def _cterm(b: _Builder, node: Tree) -> ConditionTerm:
    if node.data == "attr":
        return AttributeRef(str(node.children[0]))
    return b.constant(node)
