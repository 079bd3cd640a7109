"""Parse, print and check selPQL patterns (lark, LALR; grammar in ``pattern.lark``).

Surface syntax::

    pattern := or ;  or := and ('OR' and)* ;  and := not ('AND' not)* ;
    not     := 'NOT' not | '(' pattern ')' | tree
    tree    := node (edge tree)?                         # chain: a // b / c  ==  a[// b[/ c]]
             | node '[' edge tree (',' edge tree)* ']'   # branching: a[// b, / c]
    node    := '*' | RELGLOB ('(' arg (',' arg)* ')')?
    arg     := '*' | constant                            # bare identifier, "string" or integer
    edge    := '/' | '//'

Keywords are case-insensitive and reserved everywhere (so that ``a AND OR b`` fails at ``OR``
rather than reading a relation called ``OR``): a relation named ``and``/``or``/``not`` in any case
cannot be written in a pattern, and such a string constant must be quoted. A bare identifier
argument is a string constant: ``dealsWith(Cuba, *)`` means ``"Cuba"``.

Syntax errors are :class:`PatternError` located as ``pattern:LINE:COL``. A parsed node remembers
the column of its relation glob and of each argument (see :func:`node_column`), outside the
dataclass fields so that equality ignores them, so :func:`check_pattern` can point at the offending
node when it checks the pattern against a program.
"""

from __future__ import annotations

import re
from functools import lru_cache
from importlib import resources
from typing import Iterator

from lark import Lark, Token, Tree
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

from selp.errors import MAX_DEPTH, Location, SelpError, clip, echo, int_literal_fits
from selp.language.lark_cache import cached_lark
from selp.language.parser import unquote
from selp.language.pattern import CHILD, DESCENDANT, WILDCARD, And, Not, Or, Pattern, PatternNode, TreePattern
from selp.language.printer import quote_program_string
from selp.language.validate import Analysis
from selp.values import INT64_MAX, INT64_MIN, Skolem, Value, format_value

SOURCE = "pattern"  # the "file" name of pattern locations: pattern:1:17


class PatternError(SelpError):
    """A malformed pattern, or one that does not fit the program it is applied to."""


# --- parsing --------------------------------------------------------------------------------

_TOKEN_NAMES = {
    "STAR": "'*'",
    "STRING": "a quoted string",
    "INT": "an integer",
    "LPAR": "'('",
    "RPAR": "')'",
    "LSQB": "'['",
    "RSQB": "']'",
    "COMMA": "','",
    "CHILD": "'/'",
    "DESC": "'//'",
    "NOT": "'NOT'",
    "AND": "'AND'",
    "OR": "'OR'",
    "$END": "end of input",
}


@lru_cache(maxsize=1)
def _parser() -> Lark:
    grammar = resources.files("selp.language").joinpath("pattern.lark").read_text()
    # the basic (non-contextual) lexer: a keyword is a keyword wherever it appears
    return cached_lark(grammar, parser="lalr", lexer="basic", propagate_positions=True, maybe_placeholders=True)


def _describe_expected(expected: set[str]) -> str:
    # NAME is a relation glob where a node starts and a bare constant inside an argument list
    # (the only state that also accepts a STRING)
    name = "an identifier" if "STRING" in expected else "a relation name"
    names = sorted({name if e == "NAME" else _TOKEN_NAMES.get(e, e) for e in expected})
    if "end of input" in names:  # keep it last: it reads better after the concrete tokens
        names.remove("end of input")
        names.append("end of input")
    return ", ".join(names)


def _syntax_error(err: UnexpectedInput, text: str) -> PatternError:
    loc = Location(SOURCE, err.line, err.column)
    if isinstance(err, UnexpectedCharacters):
        char = text[err.pos_in_stream] if err.pos_in_stream < len(text) else "?"
        allowed = set(err.allowed or ())
        tail = f", expected {_describe_expected(allowed)}" if allowed else ""
        return PatternError(f"syntax error: unexpected character {char!r}{tail}", loc)
    if isinstance(err, UnexpectedEOF):
        return PatternError(
            f"syntax error: unexpected end of input, expected {_describe_expected(set(err.expected))}",
            _end_location(text),
        )
    assert isinstance(err, UnexpectedToken)
    tok = err.token
    expected = _describe_expected(set(err.accepts or err.expected))
    if tok.type == "$END":
        # lark places $END at the last token (or nowhere, for empty input): point just past it
        return PatternError(f"syntax error: unexpected end of input, expected {expected}", _end_location(text))
    return PatternError(f"syntax error: unexpected {echo(str(tok))}, expected {expected}", loc)


def _end_location(text: str) -> Location:
    """Just after the last non-blank character (column 1 of line 1 for a blank pattern)."""
    body = text.rstrip()
    line = body.count("\n") + 1
    return Location(SOURCE, line, len(body) - (body.rfind("\n") + 1) + 1)


def _loc(item: Tree | Token) -> Location:
    if isinstance(item, Token):
        return Location(SOURCE, item.line, item.column)
    return Location(SOURCE, item.meta.line, item.meta.column)


def _set_positions(node: PatternNode, where: Location, args: tuple[Location, ...] | None) -> None:
    # frozen dataclass: bypass __setattr__; these are plain attributes, not fields, so equality,
    # hashing and repr ignore them (like the compare=False locations of the datalog AST)
    object.__setattr__(node, "_selp_loc", where)
    object.__setattr__(node, "_selp_arg_locs", args)


def node_location(node: PatternNode) -> Location:
    """Where a parsed node's relation glob starts (``Location("pattern")`` if not parsed)."""
    return getattr(node, "_selp_loc", None) or Location(SOURCE)


def node_column(node: PatternNode) -> int | None:
    """The 1-based column of a parsed node's relation glob, or None for a hand-built node."""
    return node_location(node).column


def arg_location(node: PatternNode, i: int) -> Location:
    """Where argument ``i`` of a parsed node is written (else the node's location)."""
    locs = getattr(node, "_selp_arg_locs", None)
    return locs[i] if locs is not None and i < len(locs) else node_location(node)


def _too_deep(t: Tree) -> PatternError:
    return PatternError(f"pattern too deeply nested (more than {MAX_DEPTH} levels of NOT, AND/OR or tree edges)", _loc(t))


class _Builder:
    """Turns lark's tree into pattern objects (flattening nested AND/OR).

    ``depth`` counts the operators and tree edges above a node; it is bounded (:data:`MAX_DEPTH`)
    because this and every later pass over a pattern (printing, checking, matching) recurse."""

    def pattern(self, t: Tree, depth: int = 1) -> Pattern:
        if depth > MAX_DEPTH:
            raise _too_deep(t)
        kind = t.data
        if kind in ("chain", "branch"):
            return TreePattern(self.tree(t, depth))
        if kind == "negation":
            return Not(self.pattern(t.children[1], depth + 1))
        if kind in ("conj", "disj"):
            cls = And if kind == "conj" else Or
            operands: list[Pattern] = []
            for c in t.children:
                if isinstance(c, Token):  # the AND/OR keyword between operands
                    continue
                p = self.pattern(c, depth + 1)
                # AND/OR are associative: a AND (b AND c) is a AND b AND c
                operands.extend(p.operands if isinstance(p, cls) else (p,))
            return cls(tuple(operands))
        raise AssertionError(kind)

    def tree(self, t: Tree, depth: int) -> PatternNode:
        if depth > MAX_DEPTH:
            raise _too_deep(t)
        node_t, rest = t.children[0], t.children[1:]
        if t.data == "chain":
            children = () if not rest or rest[0] is None else ((self.edge(rest[0]), self.tree(rest[1], depth + 1)),)
        else:
            items = [c for c in rest if not isinstance(c, Token)]  # drop the '['
            children = tuple((self.edge(items[i]), self.tree(items[i + 1], depth + 1)) for i in range(0, len(items), 2))
        glob_tok, args_t = node_t.children
        args: tuple[Value | None, ...] | None = None
        arg_locs: tuple[Location, ...] | None = None
        if args_t is not None:
            arg_ts = [a for a in args_t.children[1:] if a is not None]
            args = tuple(self.arg(a.children[0]) for a in arg_ts)
            arg_locs = tuple(_loc(a.children[0]) for a in arg_ts)
        node = PatternNode(str(glob_tok), args, children)
        _set_positions(node, _loc(glob_tok), arg_locs)
        return node

    @staticmethod
    def edge(t: Tree) -> str:
        return CHILD if t.children[0].type == "CHILD" else DESCENDANT

    @staticmethod
    def arg(tok: Token) -> Value | None:
        text = str(tok)
        if tok.type == "STAR":
            return WILDCARD
        if tok.type == "STRING":
            return unquote(text)
        if tok.type == "INT":
            # count digits first: int() of more than 4300 digits raises ValueError
            number = int(text) if int_literal_fits(text) else None
            if number is None or not INT64_MIN <= number <= INT64_MAX:
                raise PatternError(f"integer {clip(text, 40)} does not fit in 64 bits", _loc(tok))
            return number
        if "*" in text:
            raise PatternError(
                f"constant {text} cannot contain '*': write * alone for any value, or quote the"
                f' string ("{text}")',
                _loc(tok),
            )
        return text  # a bare identifier is a string constant


def parse_pattern(text: str) -> Pattern:
    """Parse a pattern; a single tree comes back as a :class:`TreePattern`.

    Raises :class:`PatternError` located ``pattern:LINE:COL`` saying what was expected.
    """
    try:
        tree = _parser().parse(text)
    except UnexpectedInput as err:
        raise _syntax_error(err, text) from None
    return _Builder().pattern(tree.children[0])


# --- printing -------------------------------------------------------------------------------

_BARE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_GLOB = re.compile(r"[A-Za-z_*][A-Za-z0-9_*@!]*")
_KEYWORDS = {"not", "and", "or"}


def format_arg(v: Value | None) -> str:
    """``*``, a bare identifier when the string is one (and no keyword), else quoted; ints."""
    if v is WILDCARD:
        return "*"
    if isinstance(v, Skolem) or isinstance(v, bool):
        raise ValueError(f"pattern constants are strings or integers, not {v!r}")
    if isinstance(v, int):
        return format_value(v)
    if _BARE.fullmatch(v) and v.lower() not in _KEYWORDS:
        return v
    return quote_program_string(v)


def format_node(node: PatternNode) -> str:
    """The label of one node: ``R``, ``R()``, ``R(Cuba, *)`` or ``*``."""
    if not _GLOB.fullmatch(node.relation) or node.relation.lower() in _KEYWORDS:
        raise ValueError(f"relation glob {node.relation!r} cannot be written in a pattern")
    if node.args is None:
        return node.relation
    return f"{node.relation}({', '.join(format_arg(a) for a in node.args)})"


def format_tree(node: PatternNode) -> str:
    """A node and its descendants: chains for single children, brackets for branching."""
    head = format_node(node)
    if not node.children:
        return head
    if len(node.children) == 1:
        edge, child = node.children[0]
        return f"{head} {edge} {format_tree(child)}"
    return head + "[" + ", ".join(f"{e} {format_tree(c)}" for e, c in node.children) + "]"


def format_pattern(p: Pattern) -> str:
    """Parseable text of a pattern: ``parse_pattern(format_pattern(p)) == p`` for patterns as the
    parser builds them (AND/OR with at least two operands, none of them of the same kind)."""
    return _format(p, 0)


# binding strength: OR 1 < AND 2 < NOT/tree 3; an operand binding more weakly than its context
# gets parentheses
def _format(p: Pattern, context: int) -> str:
    if isinstance(p, TreePattern):
        return format_tree(p.root)
    if isinstance(p, Not):
        return "NOT " + _format(p.operand, 3)
    if isinstance(p, (And, Or)):
        if not p.operands:
            raise ValueError(f"{type(p).__name__} needs at least one operand")
        strength = 2 if isinstance(p, And) else 1
        if len(p.operands) == 1:
            return _format(p.operands[0], context)
        # a nested operator of the same kind is parenthesized (it reparses flattened either way)
        text = f" {type(p).__name__.upper()} ".join(_format(o, strength + 1) for o in p.operands)
        return f"({text})" if strength < context else text
    raise TypeError(f"not a pattern: {p!r}")


# --- structure helpers ----------------------------------------------------------------------


def tree_patterns(p: Pattern) -> Iterator[TreePattern]:
    """The tree patterns inside a Boolean combination, left to right."""
    if isinstance(p, TreePattern):
        yield p
    elif isinstance(p, Not):
        yield from tree_patterns(p.operand)
    else:
        for o in p.operands:
            yield from tree_patterns(o)


# --- checking against a program -------------------------------------------------------------


def _column_name(analysis: Analysis, rel: str, i: int) -> str:
    for d in analysis.program.decls:
        if d.relation == rel:
            return f"{rel}.{d.columns[i][0]}"
    return f"{rel}#{i + 1}"


def _show(v: Value) -> str:
    # quoted even when the pattern wrote it bare: the point is that it is a string
    return quote_program_string(v) if isinstance(v, str) else format_value(v)


def _type_of(v: Value) -> str:
    return "int" if isinstance(v, int) else "str"


def _fits(node: PatternNode, rel: str, analysis: Analysis, types: dict[str, tuple[str, ...]]) -> str | None:
    """Why ``node`` can never match a fact of ``rel`` (arity or a constant's type), or None."""
    arity = analysis.arities[rel]
    if node.args is None:
        return None
    if len(node.args) != arity:
        return f"{rel} has {arity} argument(s) but the pattern gives {len(node.args)}"
    col_types = types.get(rel)
    for i, a in enumerate(node.args):
        if a is WILDCARD or col_types is None:
            continue
        if _type_of(a) != col_types[i]:
            return (
                f"constant {_show(a)} has type {_type_of(a)} but column"
                f" {_column_name(analysis, rel, i)} is {col_types[i]}"
            )
    return None


def check_pattern(pattern: Pattern, analysis: Analysis, types: dict[str, tuple[str, ...]]) -> list[str]:
    """Check a pattern against a program; raise :class:`PatternError`, return warnings.

    Errors (the pattern can only be a mistake):

    * a relation name without ``*`` that names no relation of the program;
    * arguments whose count differs from that relation's arity;
    * a constant whose type (str/int) differs from its column's type in ``types``
      (from :func:`selp.language.types.resolve_types`).

    Warnings (``pattern:LINE:COL: ...`` strings; the pattern is legal but matches nothing there):
    a glob with ``*`` that matches no relation, or none with fitting arguments; an EDB relation
    with children (EDB facts are leaves). An EDB relation at the root is no warning: an EDB fact's
    one derivation tree is the fact itself.
    """
    warnings: list[str] = []
    relations = sorted(analysis.arities)
    for tp in tree_patterns(pattern):
        for node in tp.root.nodes():
            where = node_location(node)
            if "*" not in node.relation:
                rel = node.relation
                if rel not in analysis.arities:
                    raise PatternError(f"unknown relation {rel}: the program has no relation of that name", where)
                why = _fits(node, rel, analysis, types)
                if why is not None:
                    raise PatternError(why, _culprit(node, rel, analysis, types))
                candidates = [rel]
            else:
                named = [r for r in relations if node.matches_relation(r)]
                if not named:
                    warnings.append(f"{where}: relation glob {node.relation} matches no relation of the program")
                    continue
                candidates = [r for r in named if _fits(node, r, analysis, types) is None]
                if not candidates:
                    reasons = "; ".join(_fits(node, r, analysis, types) or "" for r in named[:3])
                    more = ", ..." if len(named) > 3 else ""
                    warnings.append(
                        f"{where}: node {format_node(node)} fits no relation its glob matches"
                        f" ({reasons}{more})"
                    )
                    continue
            # a root matching EDB facts is fine: an EDB fact's one derivation tree is the fact
            # itself (a leaf), which topk and explain print
            if all(r in analysis.edb for r in candidates):
                if node.children:
                    warnings.append(
                        f"{where}: {format_node(node)} matches only EDB facts, which are leaves of"
                        " derivation trees, so its children never match"
                    )
    return warnings


def _culprit(node: PatternNode, rel: str, analysis: Analysis, types: dict[str, tuple[str, ...]]) -> Location:
    """The location of the first ill-typed constant, else the node's."""
    if node.args is not None and len(node.args) == analysis.arities[rel] and rel in types:
        for i, a in enumerate(node.args):
            if a is not WILDCARD and _type_of(a) != types[rel][i]:
                return arg_location(node, i)
    return node_location(node)
