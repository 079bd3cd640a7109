"""Parse datalog^sk text into a :class:`~selp.language.ast.Program` (lark, LALR).

Syntax errors and structural mistakes found while building the tree (a misplaced weight, a number
that does not fit in 64 bits, ``_`` in a head) are raised as :class:`~selp.errors.ProgramError` with file:line:col.
Semantic checks (safety, arities, stratification) live in :mod:`selp.language.validate`.
"""

from __future__ import annotations

import itertools
import math
from functools import lru_cache
from importlib import resources
from pathlib import Path

from lark import Lark, Token, Tree
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

from selp.errors import MAX_DEPTH, Location, ProgramError, clip, echo, int_literal_fits, not_utf8
from selp.language.lark_cache import cached_lark
from selp.values import INT64_MAX, INT64_MIN, SKOLEM_MARK
from selp.language.ast import AGGREGATE_FNS, ANON_PREFIX, COLUMN_TYPES, Aggregate, Arith, Atom, Comparison, Const, Decl, Fact, Program, Rule, SkolemTerm, Term, Var

# Human names for grammar terminals in "expected ..." messages.
_TOKEN_NAMES = {
    "NAME": "a name",
    "STRING": "a string",
    "INT": "an integer",
    "FLOAT": "a number",
    "LPAR": "'('",
    "RPAR": "')'",
    "COMMA": "','",
    "DOT": "'.'",
    "COLON": "':'",
    "IF": "':-'",
    "CMP": "a comparison operator",
    "ADDOP": "'+' or '-'",
    "MULOP": "'*' or '/'",
    "NOT": "'not'",
    "_": "'_'",
    "UNDERSCORE": "'_'",
    "$END": "end of input",
}


@lru_cache(maxsize=1)
def _parser() -> Lark:
    grammar = resources.files("selp.language").joinpath("datalog.lark").read_text()
    return cached_lark(grammar, parser="lalr", propagate_positions=True, maybe_placeholders=True)


def _describe_expected(expected: set[str]) -> str:
    names = sorted({_TOKEN_NAMES.get(e, repr(e.lower()) if e.isupper() else e) for e in expected})
    return ", ".join(names)


def _syntax_error(err: UnexpectedInput, text: str, file: str | None) -> ProgramError:
    loc = Location(file, err.line, err.column)
    if isinstance(err, UnexpectedCharacters):
        char = text[err.pos_in_stream] if err.pos_in_stream < len(text) else "?"
        return ProgramError(f"syntax error: unexpected character {char!r}", loc)
    if isinstance(err, UnexpectedEOF):
        return ProgramError(
            f"syntax error: unexpected end of input, expected {_describe_expected(set(err.expected))}"
            " (is a '.' missing?)",
            Location(file, text.count("\n") + 1, None),
        )
    assert isinstance(err, UnexpectedToken)
    tok = err.token
    shown = "end of input" if tok.type == "$END" else echo(str(tok))
    if tok.type == "$END":  # lark places $END at the last token: point just after it
        loc = Location(file, tok.end_line or text.count("\n") + 1, tok.end_column)
    return ProgramError(
        f"syntax error: unexpected {shown}, expected {_describe_expected(set(err.accepts or err.expected))}",
        loc,
    )


class _Builder:
    """Turns the lark tree into AST nodes, naming unnamed rules ``r<n>`` in source order."""

    def __init__(self, file: str | None) -> None:
        self.file = file
        self.anon = itertools.count(1)

    def loc(self, node: Tree | Token) -> Location:
        if isinstance(node, Token):
            return Location(self.file, node.line, node.column)
        return Location(self.file, node.meta.line, node.meta.column)

    def error(self, msg: str, node: Tree | Token) -> ProgramError:
        return ProgramError(msg, self.loc(node))

    def build(self, tree: Tree) -> Program:
        decls: list[Decl] = []
        pending: list[tuple[str | None, str | None, Atom, list | None, Tree]] = []
        facts: list[Fact] = []
        for st in tree.children:
            if st.data == "decl":
                decls.append(self.decl(st))
                continue
            label, sign, head_t, _if, body_t = st.children
            name, weight = self.label(label) if label is not None else (None, None)
            head = self.head(head_t)
            if sign is not None:
                if str(sign) != "-":
                    raise self.error("a head takes no '+' (a leading '-' negates it)", sign)
                if body_t is None:
                    raise self.error(f"a fact cannot be negated (-{head.relation}(...)); only rules subtract", sign)
                head = Atom(head.relation, head.args, True, head.loc)
            if body_t is None:
                if name is not None:
                    raise self.error(
                        f"a fact cannot be named ({name!r}); only rules have names", label
                    )
                facts.append(self.fact(head, weight, head_t))
            else:
                pending.append((name, weight, head, self.body(body_t), st))
        taken = {p[0] for p in pending if p[0] is not None}
        counter = itertools.count(1)
        rules = []
        for name, weight, head, body, st in pending:
            named = name is not None
            if name is None:
                name = next(f"r{i}" for i in counter if f"r{i}" not in taken)
            rules.append(Rule(name, head, tuple(body), weight, named, self.loc(st)))
        return Program(tuple(decls), tuple(rules), tuple(facts), self.file)

    def decl(self, st: Tree) -> Decl:
        rel = st.children[0]
        cols = []
        for c in st.children[1:]:
            if c is None:
                continue
            cname, ctype = c.children
            if str(ctype) not in COLUMN_TYPES:
                raise self.error(f"unknown column type {str(ctype)!r}; use str, int or float", ctype)
            cols.append((str(cname), str(ctype)))
        return Decl(str(rel), tuple(cols), self.loc(st))

    def label(self, lab: Tree) -> tuple[str | None, str | None]:
        if lab.data == "label_name":
            return str(lab.children[0]), None
        if lab.data == "label_weight":
            return None, str(lab.children[0].children[0])
        call = lab.children[0]
        name, args = call.children[0], [a for a in call.children[1:] if a is not None]
        if len(args) != 1 or args[0].data not in ("var_or_word", "integer", "float"):
            raise self.error(
                f"rule label {name}(...) must hold exactly one weight, e.g. {name} (0.8):", call
            )
        return str(name), str(args[0].children[0])

    def head(self, h: Tree) -> Atom:
        if h.data == "nullary":
            return Atom(str(h.children[0]), (), False, self.loc(h))
        atom = self.call_atom(h.children[0], negated=False)
        # min(x), max(x), count(x), sum(x) at the top of a head are aggregates, not Skolem terms
        args = tuple(
            Aggregate(t.fn, t.args) if isinstance(t, SkolemTerm) and t.fn in AGGREGATE_FNS and len(t.args) == 1 else t
            for t in atom.args
        )
        return Atom(atom.relation, args, False, atom.loc)

    def call_atom(self, call: Tree, negated: bool) -> Atom:
        name = call.children[0]
        args = tuple(self.term(a) for a in call.children[1:] if a is not None)
        return Atom(str(name), args, negated, self.loc(call))

    def term(self, a: Tree, depth: int = 1) -> Term:
        """The term of ``a``; ``depth`` counts enclosing Skolem terms, bounded so that this and
        every later pass over terms (all recursive) stay far from Python's recursion limit."""
        kind = a.data
        if kind == "var_or_word":
            name = str(a.children[0])
            if name == "not":
                raise self.error("'not' is a keyword, not a variable name", a)
            if "@" in name:
                raise self.error(f"variable names cannot contain '@': {name}", a)
            return Var(name)
        if kind == "anon":
            return Var(f"{ANON_PREFIX}{next(self.anon)}")
        if kind == "string":
            value = unquote(str(a.children[0]))
            if value.startswith(SKOLEM_MARK):
                raise self.error("string constants may not start with the NUL character", a)
            return Const(value)
        if kind == "integer":
            text = str(a.children[0])
            # count digits first: int() of more than 4300 digits raises ValueError
            number = int(text) if int_literal_fits(text) else None
            if number is None or not INT64_MIN <= number <= INT64_MAX:
                raise self.error(f"integer {clip(text, 40)} does not fit in 64 bits", a)
            return Const(number)
        if kind == "float":
            text = str(a.children[0])
            value = float(text)
            if not math.isfinite(value):
                raise self.error(f"float {clip(text, 40)} does not fit in 64 bits", a)
            return Const(value + 0.0)  # -0.0 is 0.0: one zero, printed alike by every engine
        if kind in ("arith", "unary"):
            if depth > MAX_DEPTH:
                raise self.error(f"expression too deeply nested (more than {MAX_DEPTH} levels)", a)
            if kind == "arith":
                left, op, right = a.children
                return Arith(str(op), (self.term(left, depth + 1), self.term(right, depth + 1)))
            op, operand = a.children
            inner = self.term(operand, depth + 1)
            if str(op) == "+":
                return inner
            if isinstance(inner, Const) and not isinstance(inner.value, str):
                if inner.value == INT64_MIN:
                    raise self.error(f"integer {-inner.value} does not fit in 64 bits", a)
                return Const(-inner.value + 0)  # a negative number is a constant, as "-3" is
            return Arith("-", (inner,))
        if kind == "skolem":
            call = a.children[0]
            if depth > MAX_DEPTH:
                raise self.error(f"Skolem term too deeply nested (more than {MAX_DEPTH} levels)", call)
            args = tuple(self.term(x, depth + 1) for x in call.children[1:] if x is not None)
            return SkolemTerm(str(call.children[0]), args)
        raise AssertionError(kind)

    def body(self, b: Tree) -> list:
        out = []
        for lit in b.children:
            if lit.data == "nullary":
                out.append(Atom(str(lit.children[0]), (), False, self.loc(lit)))
            elif lit.data == "body_call":
                out.append(self.call_atom(lit.children[0], negated=False))
            elif lit.data == "negation":
                inner = lit.children[1]
                if inner.data == "nullary":
                    out.append(Atom(str(inner.children[0]), (), True, self.loc(lit)))
                else:
                    a = self.call_atom(inner.children[0], negated=True)
                    out.append(Atom(a.relation, a.args, True, self.loc(lit)))
            elif lit.data == "comparison":
                left, op, right = lit.children
                out.append(Comparison(str(op), self.term(left), self.term(right), self.loc(lit)))
            else:
                raise AssertionError(lit.data)
        return out

    def fact(self, head: Atom, weight: str | None, node: Tree) -> Fact:
        for t in head.args:
            if isinstance(t, Aggregate):
                raise self.error(f"fact {head.relation}(...) has the aggregate {t.fn}(...); aggregates belong in rule heads", node)
            if not isinstance(t, Const):
                what = "variable " + t.name if isinstance(t, Var) and not t.anonymous else "a non-constant"
                if isinstance(t, Var) and t.anonymous:
                    what = "'_'"
                raise self.error(
                    f"fact {head.relation}(...) has {what}; facts must be ground"
                    " (did you forget ':- body'?)",
                    node,
                )
        return Fact(head, weight, self.loc(node))


def unquote(lit: str) -> str:
    """The value of a double-quoted string literal (quotes removed, selp's escapes resolved)."""
    out = []
    i = 1
    end = len(lit) - 1
    escapes = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", '"': '"'}
    while i < end:
        c = lit[i]
        if c == "\\":
            i += 1
            out.append(escapes.get(lit[i], lit[i]))
        else:
            out.append(c)
        i += 1
    return "".join(out)


def parse_program(text: str, file: str | None = None) -> Program:
    """Parse program text; raises :class:`ProgramError` located in ``file``."""
    try:
        tree = _parser().parse(text)
    except UnexpectedInput as err:
        raise _syntax_error(err, text, file) from None
    return _Builder(file).build(tree)


def parse_program_file(path: str | Path) -> Program:
    """Read and parse a program file."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ProgramError(f"program file not found: {p}") from None
    except UnicodeDecodeError as err:
        raise ProgramError(f"program file is {not_utf8(p)}", Location(str(p))) from None
    except OSError as err:
        raise ProgramError(f"cannot read program file {p}: {err.strerror}") from None
    return parse_program(text, str(p))
