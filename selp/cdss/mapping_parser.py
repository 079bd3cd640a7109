"""Parse mapping (tgd) text and trust-condition text (grammar ``mapping.lark``, lark LALR).

Mapping syntax::

    m3: B(i, n) -> exists c. U(n, c)
    m4: PBioSQL.B(i, c), U(n, c) -> B(i, n)

A mapping is ``NAME: body -> [exists z1, ..., zk.] head``; body and head are atoms separated by
commas. A relation is written ``R`` when only one peer has a relation named ``R``, else qualified
as ``PEER.R``. Terms are variables (identifiers), ``_`` (any value; body only), double-quoted
strings and integers. ``exists`` and ``and`` are keywords. ``<->`` (bidirectional mappings) is
reserved: it parses and is refused with a one-line message.

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
    "ARROW": "'->'",
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
        ref, *args = node.children
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
        return ParsedAtom(peer, rel, tuple(terms), tuple(anon), self.at(node))

    def rename_anonymous(self, atoms: list[ParsedAtom]) -> list[ParsedAtom]:
        """Give each `_` a fresh variable (P_m keeps every body variable, so it needs a name)."""
        out = []
        for a in atoms:
            args = tuple(
                Var(self.fresh()) if is_anon else t for t, is_anon in zip(a.args, a.anonymous)
            )
            out.append(ParsedAtom(a.peer, a.relation, args, a.anonymous, a.loc))
        return out

    def fresh(self) -> str:
        name = next(f"{ANON_VAR_PREFIX}{i}" for i in self.anon if f"{ANON_VAR_PREFIX}{i}" not in self.taken)
        self.taken.add(name)
        return name


def parse_mapping(text: str, locate: Locate | None = None, allow_bidirectional: bool = False) -> ParsedMapping:
    """Parse one mapping; raises :class:`CdssError` located through ``locate``.

    A bidirectional mapping (``<->``) is refused unless ``allow_bidirectional`` (nothing
    downstream supports it yet; the flag is for the issue that will).
    """
    locate = locate or _default_locate(text)
    try:
        tree = _parser().parse(text, start="mapping")
    except UnexpectedInput as err:
        raise _syntax_error(err, text, "mapping", locate) from None
    b = _Builder(text, locate)
    name_tok, body_t, arrow, exists_t, head_t = tree.children
    bidirectional = str(arrow) == "<->"
    if bidirectional and not allow_bidirectional:
        raise CdssError(
            f"mapping {name_tok}: bidirectional mappings are not supported yet", b.at(arrow)
        )
    body = [b.atom(a, "body") for a in body_t.children]
    head = [b.atom(a, "head") for a in head_t.children]
    existentials: list[tuple[Var, Location]] = []
    if exists_t is not None:
        for tok in exists_t.children[1:]:
            existentials.append((Var(str(tok)), b.at(tok)))
    b.taken = {v.name for a in body + head for v in a.args if isinstance(v, Var)}
    b.taken |= {v.name for v, _ in existentials}
    body = b.rename_anonymous(body)
    return ParsedMapping(
        str(name_tok), tuple(body), tuple(head), tuple(existentials), bidirectional, text.strip(),
        b.at(name_tok), b.at(arrow),
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
