"""Pretty-print programs back to parseable datalog^sk text (``parse(print(p)) == p``)."""

from __future__ import annotations

from selp.language.ast import Aggregate, Arith, Atom, Comparison, Const, Decl, Fact, Literal, Program, Rule, SkolemTerm, Term, Var
from selp.values import format_value


_PROGRAM_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\t": "\\t", "\r": "\\r"}


def quote_program_string(s: str) -> str:
    """Quote a string for program text: also escapes newlines, tabs and carriage returns, which
    a text file may not keep as they are (Skolem texts use :func:`selp.values.quote_string`)."""
    return '"' + "".join(_PROGRAM_ESCAPES.get(c, c) for c in s) + '"'


_PRECEDENCE = {"+": 1, "-": 1, "*": 2, "/": 2}


def format_term(t: Term) -> str:
    """``x``, ``_``, ``"Cuba"``, ``42``, ``2.5``, ``f(x, "a")`` or ``(x + 1) * -y``."""
    if isinstance(t, Var):
        return "_" if t.anonymous else t.name
    if isinstance(t, Const):
        if isinstance(t.value, str):
            return quote_program_string(t.value)
        return format_value(t.value)
    if isinstance(t, Arith):
        return _format_arith(t)
    assert isinstance(t, (SkolemTerm, Aggregate))
    return f"{t.fn}({', '.join(format_term(a) for a in t.args)})"


def _format_arith(t: Arith) -> str:
    """Parenthesised just enough to parse back to the same tree (operators are left-associative;
    a negated operand is parenthesised unless it is a name or a call; a negative number needs
    no parentheses: ``x - -5`` lexes as x, minus, the number -5)."""
    if len(t.args) == 1:
        (a,) = t.args
        inner = format_term(a)
        return f"-{inner}" if isinstance(a, (Var, SkolemTerm)) else f"-({inner})"
    left, right = t.args
    prec = _PRECEDENCE[t.op]

    def side(x: Term, is_right: bool) -> str:
        text = format_term(x)
        if isinstance(x, Arith) and len(x.args) == 2:
            p = _PRECEDENCE[x.op]
            if p < prec or (is_right and p == prec):
                return f"({text})"
        elif isinstance(x, Arith):
            return f"({text})"
        return text

    return f"{side(left, False)} {t.op} {side(right, True)}"


def format_atom(a: Atom) -> str:
    """``R(t1, ..., tn)``, prefixed with ``not`` when negated; nullary atoms print as ``R()``."""
    text = f"{a.relation}({', '.join(format_term(t) for t in a.args)})"
    return "not " + text if a.negated else text


def format_literal(lit: Literal) -> str:
    if isinstance(lit, Comparison):
        return f"{format_term(lit.left)} {lit.op} {format_term(lit.right)}"
    return format_atom(lit)


def _label(name: str | None, weight: str | None) -> str:
    if name is not None and weight is not None:
        return f"{name} ({weight}): "
    if name is not None:
        return f"{name}: "
    if weight is not None:
        return f"({weight}): "
    return ""


def format_rule(r: Rule) -> str:
    """One rule on one line, with its label when it was named or weighted."""
    body = ", ".join(format_literal(b) for b in r.body)
    head = format_atom(Atom(r.head.relation, r.head.args)) if r.head.negated else format_atom(r.head)
    sign = "-" if r.head.negated else ""
    return f"{_label(r.name if r.named else None, r.weight)}{sign}{head} :- {body}."


def format_fact(f: Fact) -> str:
    return f"{_label(None, f.weight)}{format_atom(f.atom)}."


def format_decl(d: Decl) -> str:
    cols = ", ".join(f"{n}: {t}" for n, t in d.columns)
    return f".decl {d.relation}({cols})"


def format_program(p: Program) -> str:
    """Declarations, then rules, then facts, one per line."""
    lines = [format_decl(d) for d in p.decls]
    lines += [format_rule(r) for r in p.rules]
    lines += [format_fact(f) for f in p.facts]
    return "\n".join(lines) + ("\n" if lines else "")
