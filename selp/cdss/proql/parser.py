"""Parse ProQL text (grammar ``proql.lark``, lark LALR) into the typed AST of :mod:`.ast`.

The grammar is Figure 7.1 of [Kar09] (§7.3). Where the figure elides
or leaves things open, selp decides as follows (each is what the dissertation's examples need):

* **Keywords** are case-insensitive whole words (Q7 writes ``and`` in a CASE, the others ``AND``);
  relation, attribute, mapping and semiring names are case-sensitive identifiers
  ``[A-Za-z_][A-Za-z0-9_]*`` (semiring names are matched case-insensitively by the checker).
  Relation names are the CDSS's base names (``B``, or ``PBioSQL_B`` when two peers have a ``B``)
  or peer-qualified, ``PBioSQL.B`` (in node patterns and ``$y in PEER.R``), which
  :func:`~.check.resolve_relations` turns into the base name.
* **Comments** ``-- ...`` and ``# ...`` run to the end of the line.
* **pathExpression** ``node? (derivation node)*``: the first node is required (write ``[]`` for an
  anonymous one), so a path always starts with ``[``; a path in WHERE is told apart from a
  comparison by that bracket.
* **INCLUDE PATH** is optional (without it the projected graph holds only the returned nodes);
  ``retPathExpression`` and ``pathExpression`` share one rule, and the checker rejects relation
  names in INCLUDE PATH, as §7.3.1 requires.
* **conditions** ::= ``cond (OR cond)*`` with AND binding tighter than OR, ``NOT``, parentheses,
  and atoms: ``operand op operand`` with op one of ``= != <> < <= > >=``; ``$x in R``; a path
  expression (existential). An operand is ``$x.attr``, ``$x`` (a tuple or mapping node, or the
  argument ``$z`` of a mapping assignment), a number, a quoted string (``"..."`` or ``'...'``), or
  a bare name (a mapping name in ``$p = m1``, a semiring literal in ``$z != 0``/``$z != false``).
  ``$x = $z`` on two tuple nodes is node equality (same relation and values).
* **semiringValue** ::= an operand or ``function(value, ...)``; the value's meaning depends on the
  semiring (see :mod:`.semirings`: ``true``/``false``, numbers, ``inf``, levels ``P C S T 0``,
  event names, tokens). ``SET $z`` (the mapping's argument) is the identity. The one function is
  ``edit_distance(a, b)`` (Q8), on the values' text.
* **assignment**: at most one ``ASSIGNING EACH leaf_node $y {...}`` and one
  ``ASSIGNING EACH mapping $p($z) {...}``, in either order (the figure's third form is both).
  The figure's second form omits ``($z)``; selp requires it, as every example writes it.
  ``listAssgn`` is ``{ (CASE conditions : SET value)* (DEFAULT : SET value)? }``.
* **semiring** is any name here (POLYNOMIAL and COUNT besides Table 7.1's six); the checker
  rejects unknown ones with their position.

Errors are :class:`~selp.errors.SelpError` with ``file:line:column`` of the query text.
"""

from __future__ import annotations

from functools import lru_cache
from importlib import resources

from lark import Lark, Token, Tree
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

from selp.cdss.proql import ast
from selp.errors import MAX_DEPTH, Location, SelpError, clip, echo, int_literal_fits
from selp.language.lark_cache import cached_lark

_TOKEN_NAMES = {
    "VAR": "a variable ($x)",
    "NAME": "a name",
    "LSQB": "'['",
    "RSQB": "']'",
    "LBRACE": "'{'",
    "RBRACE": "'}'",
    "LPAR": "'('",
    "RPAR": "')'",
    "COMMA": "','",
    "COLON": "':'",
    "DOT": "'.'",
    "CMP": "a comparison",
    "LT": "'<'",
    "PLUS_STEP": "'<-+'",
    "ONE_STEP": "'<-'",
    "SIGNED_NUMBER": "a number",
    "STRING": "a string",
    "$END": "the end of the query",
}


class ProqlError(SelpError):
    """A user error in a ProQL query (syntax, types, assignment laws, evaluation limits)."""


@lru_cache(maxsize=1)
def _parser() -> Lark:
    grammar = resources.files("selp.cdss.proql").joinpath("proql.lark").read_text()
    return cached_lark(grammar, parser="lalr", lexer="contextual", propagate_positions=True, maybe_placeholders=False)


def _describe(names: set[str]) -> str:
    out = sorted({_TOKEN_NAMES.get(n, n.lower() if n.isupper() else n) for n in names})
    return ", ".join(out[:8]) + (", ..." if len(out) > 8 else "")


def parse_query(text: str, file: str | None = None) -> ast.Query:
    """Parse one ProQL query; raises :class:`ProqlError` located at ``file:line:column``."""
    try:
        tree = _parser().parse(text)
    except UnexpectedInput as e:
        loc = Location(file or "<query>", getattr(e, "line", None), getattr(e, "column", None))
        if isinstance(e, UnexpectedEOF):
            msg = f"unexpected end of query; expected {_describe(set(e.expected))}"
            loc = _end(text, file)
        elif isinstance(e, UnexpectedToken):
            shown = "the end of the query" if e.token.type == "$END" else echo(str(e.token))
            msg = f"unexpected {shown}; expected {_describe(set(e.expected))}"
            if e.token.type == "$END":
                loc = _end(text, file)
        elif isinstance(e, UnexpectedCharacters):
            msg = f"unexpected character {text[e.pos_in_stream]!r}"
        else:  # pragma: no cover - lark raises only the three above
            msg = str(e).splitlines()[0]
        raise ProqlError(msg, loc) from None
    return _Builder(file or "<query>", text).query(tree.children[0])


def _end(text: str, file: str | None) -> Location:
    lines = text.split("\n")
    return Location(file or "<query>", len(lines), len(lines[-1]) + 1)


class _Builder:
    def __init__(self, file: str, text: str) -> None:
        self.file = file
        self.text = text

    def loc(self, item: Tree | Token) -> Location:
        if isinstance(item, Token):
            return Location(self.file, item.line, item.column)
        meta = item.meta
        return Location(self.file, getattr(meta, "line", None), getattr(meta, "column", None))

    @staticmethod
    def var(tok: Token) -> str:
        return str(tok)[1:]

    # -- queries -----------------------------------------------------------------------------
    def query(self, t: Tree) -> ast.Query:
        if t.data == "project":
            return ast.Query(self.projection(t.children[0]), text=self.text)
        _, name, _, proj, *assigns = t.children
        leaf = mapping = None
        for a in assigns:
            built = self.assignment(a)
            if built.kind == "leaf":
                if leaf is not None:
                    raise ProqlError("a second ASSIGNING EACH leaf_node clause; give one", built.loc)
                leaf = built
            else:
                if mapping is not None:
                    raise ProqlError("a second ASSIGNING EACH mapping clause; give one", built.loc)
                mapping = built
        return ast.Query(self.projection(proj), str(name), self.loc(name), leaf, mapping, True, self.text)

    def projection(self, t: Tree) -> ast.Projection:
        fors: tuple[ast.Path, ...] = ()
        where = None
        include: tuple[ast.Path, ...] = ()
        returns: tuple[ast.VarRef, ...] = ()
        for c in t.children:
            if c.data == "for_clause":
                fors = tuple(self.path(p) for p in c.children[1:])
            elif c.data == "where_clause":
                where = self.cond(c.children[1])
            elif c.data == "include_clause":
                include = tuple(self.path(p) for p in c.children[2:])
            elif c.data == "return_clause":
                returns = tuple(ast.VarRef(self.var(v), self.loc(v)) for v in c.children[1:])
        return ast.Projection(fors, where, include, returns, self.loc(t))

    # -- paths -------------------------------------------------------------------------------
    def path(self, t: Tree) -> ast.Path:
        nodes, steps = [], []
        for c in t.children:
            if c.data == "node":
                rel = var = None
                for tok in c.children:
                    if isinstance(tok, Tree):  # relname: R or PEER.R
                        rel = ".".join(str(x) for x in tok.children)
                    else:
                        var = self.var(tok)
                nodes.append(ast.NodePattern(rel, var, self.loc(c)))
            else:
                steps.append(self.step(c))
        return ast.Path(tuple(nodes), tuple(steps), self.loc(t))

    def step(self, t: Tree) -> ast.Step:
        loc = self.loc(t)
        if t.data == "step_plus":
            return ast.Step("plus", None, loc)
        if t.data == "step_any":
            return ast.Step("any", None, loc)
        tok = t.children[1]
        if t.data == "step_mapping":
            return ast.Step("mapping", str(tok), loc)
        return ast.Step("mapvar", self.var(tok), loc)

    # -- conditions --------------------------------------------------------------------------
    def cond(self, t: Tree, depth: int = 1) -> ast.Condition:
        """A condition; ``depth`` counts the AND/OR/NOT above it, bounded (:data:`MAX_DEPTH`)
        because this and the checker and evaluator after it recurse over conditions."""
        loc = self.loc(t)
        if depth > MAX_DEPTH:
            raise ProqlError(f"condition too deeply nested (more than {MAX_DEPTH} levels of NOT, AND/OR)", loc)
        if t.data == "or_cond":
            return ast.Or(tuple(self.cond(c, depth + 1) for c in t.children if isinstance(c, Tree)), loc)
        if t.data == "and_cond":
            return ast.And(tuple(self.cond(c, depth + 1) for c in t.children if isinstance(c, Tree)), loc)
        if t.data == "not_cond":
            return ast.Not(self.cond(t.children[1], depth + 1), loc)
        if t.data == "comparison":
            left, op, right = t.children
            o = "!=" if str(op) == "<>" else str(op)
            return ast.Comparison(self.operand(left), o, self.operand(right), loc)
        if t.data == "membership":
            v, _, rel = t.children
            return ast.Membership(self.var(v), ".".join(str(x) for x in rel.children), loc)
        if t.data == "path_cond":
            return ast.PathCondition(self.path(t.children[0]), loc)
        raise AssertionError(t.data)  # pragma: no cover

    def operand(self, t: Tree) -> ast.Operand:
        loc = self.loc(t)
        c = t.children
        if t.data == "attr":
            return ast.AttrRef(self.var(c[0]), str(c[1]), loc)
        if t.data == "var":
            return ast.VarRef(self.var(c[0]), loc)
        if t.data == "number":
            s = str(c[0])
            if "." not in s and not int_literal_fits(s):  # int() refuses more than 4300 digits
                raise ProqlError(f"integer {clip(s, 40)} does not fit in 64 bits", loc)
            return ast.Literal(float(s) if "." in s else int(s), False, loc)
        if t.data == "string":
            s = str(c[0])[1:-1]
            if "\\" not in s:
                return ast.Literal(s, False, loc)
            try:
                return ast.Literal(s.encode().decode("unicode_escape"), False, loc)
            except UnicodeDecodeError as err:  # a bad escape such as \x or \N{nosuch}
                raise ProqlError(f"string {clip(str(c[0]), 40)}: bad escape ({err.reason})", loc) from None
        return ast.Literal(str(c[0]), True, loc)

    # -- assignments -------------------------------------------------------------------------
    def assignment(self, t: Tree) -> ast.Assignment:
        loc = self.loc(t)
        c = [x for x in t.children if isinstance(x, Tree) or x.type == "VAR"]
        if t.data == "leaf_assignment":
            var, arg, rest = self.var(c[0]), None, c[1:]
        else:
            var, arg, rest = self.var(c[0]), self.var(c[1]), c[2:]
        cases = []
        for x in rest:
            if x.data == "case":
                _, cond, _, value = x.children
                cases.append(ast.Case(self.cond(cond), self.value(value), self.loc(x)))
            else:
                _, _, value = x.children
                cases.append(ast.Case(None, self.value(value), self.loc(x)))
        return ast.Assignment("leaf" if t.data == "leaf_assignment" else "mapping", var, arg, tuple(cases), loc)

    def value(self, t: Tree, depth: int = 1) -> ast.Value:
        """A semiring value; nested calls are bounded like conditions (see :meth:`cond`)."""
        if t.data == "plain":
            return self.operand(t.children[0])
        if t.data == "scale":
            a, b = (self.operand(x) for x in t.children)
            var, factor = (a, b) if isinstance(a, ast.VarRef) else (b, a)
            if not isinstance(var, ast.VarRef) or not isinstance(factor, ast.Literal) or factor.bare or isinstance(factor.value, str):
                raise ProqlError("a scaled value is $z * NUMBER (or NUMBER * $z)", self.loc(t))
            return ast.Scale(var.var, factor.value, self.loc(t))
        if depth > MAX_DEPTH:
            raise ProqlError(f"value too deeply nested (more than {MAX_DEPTH} levels of calls)", self.loc(t))
        name, *args = t.children
        return ast.Call(str(name), tuple(self.value(a, depth + 1) for a in args if a is not None), self.loc(t))
