"""Shared test helpers: hypothesis strategies for datalog^sk programs and a naive oracle.

Two kinds of random programs:

* :func:`syntax_programs` builds :class:`~selp.language.ast.Program` trees that exercise every
  syntax form (names with ``@``, weights, Skolem terms, comparisons, negation, declarations,
  awkward strings). They need not be valid programs; they are for printer/parser round trips.
* :func:`programs_with_databases` builds *valid, terminating* programs as text together with a small
  database ``{relation: set of tuples}``: typed columns (ints and strings never meet in a
  comparison), recursion and mutual recursion, several strata with stratified negation, Skolem
  heads, comparisons, constants and repeated variables in bodies. Engines are compared on them.

:func:`naive_fixpoint` is the oracle: stratum by stratum, apply every rule to all facts until
nothing changes. It deliberately shares no code with :mod:`selp.engines` (only the value type
:class:`~selp.values.Skolem`), computes its own stratification, and matches atoms by brute force.
"""

from __future__ import annotations

import itertools
import operator
from dataclasses import dataclass, field

from hypothesis import strategies as st

from selp.language.ast import ANON_PREFIX, Aggregate, Arith, Atom, Comparison, Const, Decl, Fact, Program, Rule, SkolemTerm, Var
from selp.values import Skolem

# ---------------------------------------------------------------------------------------------
# Syntax-level programs (round trips)
# ---------------------------------------------------------------------------------------------

RELATION_NAMES = ["e", "p", "q", "dealsWith", "dealsWith@v1t", "dealsWith@!v0", "R_2", "notable", "_q"]
VARIABLE_NAMES = ["x", "y", "z", "a1", "notable", "_y", "Xs"]
RULE_NAMES = ["r1", "r2", "r3", "trans", "r0", "sym@v1"]
SKOLEM_FNS = {"f": 1, "g": 2, "h": 0, "sk_3": 3}
WEIGHTS = ["0.8", "S", "-1", "1e-3", "+2", ".5", "007", "1E5", "-0.5e+2", "w_1", "0"]
COLUMN_NAMES = ["a", "b", "country", "c_2"]
TRICKY_STRINGS = [
    "",
    "Cuba",
    'say "hi"',
    "back\\slash",
    "ends with \\",
    "new\nline",
    "tab\there",
    "Zürich ☕",
    "% not a comment // either",
    "\\n",  # a backslash followed by n, not a newline
    '\\"',
    ":- .",
    " ",
]

ANON = Var("_")  # placeholder, numbered like the parser does by _number_anonymous


def _strings() -> st.SearchStrategy[str]:
    # a leading NUL marks labeled nulls in the Spark encoding, so programs may not start with it
    return st.one_of(st.sampled_from(TRICKY_STRINGS), st.text(max_size=8)).filter(lambda s: not s.startswith("\x00"))


def _ints() -> st.SearchStrategy[int]:
    return st.one_of(st.integers(-5, 5), st.integers(-(2**63), 2**63 - 1))


def _floats() -> st.SearchStrategy[float]:
    # finite, and 0.0 for -0.0: what the parser makes of any float literal
    return st.floats(allow_nan=False, allow_infinity=False).map(lambda x: x + 0.0)


def _constants() -> st.SearchStrategy[Const]:
    return st.one_of(_strings(), _ints(), _floats()).map(Const)


def _arith(children) -> st.SearchStrategy[Arith]:
    """Binary operations, and unary minus of anything but a number (the parser reads "-(5)" as
    the constant -5)."""
    binary = st.builds(lambda op, a, b: Arith(op, (a, b)), st.sampled_from(["+", "-", "*", "/"]), children, children)
    unary = children.filter(lambda t: not (isinstance(t, Const) and not isinstance(t.value, str))).map(lambda t: Arith("-", (t,)))
    return st.one_of(binary, unary)


def _terms(skolem: bool) -> st.SearchStrategy:
    base = st.one_of(st.sampled_from(VARIABLE_NAMES).map(Var), st.just(ANON), _constants())
    if not skolem:
        return base

    def extend(children):
        return st.sampled_from(sorted(SKOLEM_FNS)).flatmap(
            lambda fn: st.lists(children, min_size=SKOLEM_FNS[fn], max_size=SKOLEM_FNS[fn]).map(
                lambda args: SkolemTerm(fn, tuple(args))
            )
        )

    return st.recursive(base, lambda children: st.one_of(extend(children), _arith(children)), max_leaves=4)


def _atoms(negated: bool = False, skolem: bool = False, ground: bool = False) -> st.SearchStrategy[Atom]:
    term = _constants() if ground else _terms(skolem)
    return st.builds(
        lambda rel, args: Atom(rel, tuple(args), negated),
        st.sampled_from(RELATION_NAMES),
        st.lists(term, max_size=3),
    )


def _cterms() -> st.SearchStrategy:
    base = st.one_of(st.sampled_from(VARIABLE_NAMES).map(Var), st.just(ANON), _constants())
    return st.recursive(base, _arith, max_leaves=4)


_comparisons = st.builds(
    Comparison, st.sampled_from(["=", "!=", "<", "<=", ">", ">="]), _cterms(), _cterms()
)
_literals = st.one_of(_atoms(), _atoms(negated=True), _comparisons)


@st.composite
def _rule_drafts(draw):
    name = draw(st.none() | st.sampled_from(RULE_NAMES))
    weight = draw(st.none() | st.sampled_from(WEIGHTS))
    head = draw(_atoms(skolem=True))
    body = tuple(draw(st.lists(_literals, min_size=1, max_size=4)))
    return name, weight, head, body


_decls = st.builds(
    lambda rel, cols: Decl(rel, tuple(cols)),
    st.sampled_from(RELATION_NAMES),
    st.lists(st.tuples(st.sampled_from(COLUMN_NAMES), st.sampled_from(["str", "int"])), max_size=3),
)
_facts = st.builds(Fact, _atoms(ground=True), st.none() | st.sampled_from(WEIGHTS))


def _number_anonymous(rules: list[Rule]) -> list[Rule]:
    """Give ``_`` placeholders the names the parser gives them: ``_#1, _#2, ...`` in source order
    (head then body, left to right, depth first into Skolem terms)."""
    counter = iter(range(1, 10**9))

    def term(t):
        if t == ANON:
            return Var(f"{ANON_PREFIX}{next(counter)}")
        if isinstance(t, SkolemTerm):
            return SkolemTerm(t.fn, tuple(term(a) for a in t.args))
        if isinstance(t, Arith):
            return Arith(t.op, tuple(term(a) for a in t.args))
        return t

    def atom(a: Atom) -> Atom:
        return Atom(a.relation, tuple(term(t) for t in a.args), a.negated)

    out = []
    for r in rules:
        head = atom(r.head)
        body = []
        for lit in r.body:
            if isinstance(lit, Atom):
                body.append(atom(lit))
            else:
                left = term(lit.left)
                body.append(Comparison(lit.op, left, term(lit.right)))
        out.append(Rule(r.name, head, tuple(body), r.weight, r.named))
    return out


@st.composite
def syntax_programs(draw) -> Program:
    """Programs using every syntax form; unnamed rules are named ``r<n>`` the way the parser does
    it (counting unnamed rules from 1, skipping names that rules were given explicitly)."""
    decls = draw(st.lists(_decls, max_size=3))
    drafts = draw(st.lists(_rule_drafts(), max_size=5))
    facts = draw(st.lists(_facts, max_size=4))
    taken = {d[0] for d in drafts if d[0] is not None}
    n = 0
    rules = []
    for name, weight, head, body in drafts:
        named = name is not None
        if not named:
            n += 1
            while f"r{n}" in taken:
                n += 1
            name = f"r{n}"
        rules.append(Rule(name, head, body, weight, named))
    return Program(tuple(decls), tuple(_number_anonymous(rules)), tuple(facts))


# ---------------------------------------------------------------------------------------------
# Valid, terminating programs with databases (engine comparisons)
# ---------------------------------------------------------------------------------------------

INT_VALUES = [-2, 0, 1, 2, 3, 4, 5, 7, 9]
# never integer-looking, so data written to CSV keeps its type; includes characters CSV quotes
STR_VALUES = ["a", "b", "c", "Cuba", 'q"uote', "com,ma", "", "Zürich", "new\nline", "back\\slash"]
GEN_SKOLEM_FNS = {"f": 1, "g": 2, "h": 0}
MAX_EDB_FACTS = 14  # expected size cap per EDB relation: sparse graphs, long chains, fast oracle
VARIABLES = ["x", "y", "z", "u", "v", "w", "t"]
OPS = ["=", "!=", "<", "<=", ">", ">="]


def quote(s: str) -> str:
    """A string literal; newlines and tabs escaped, so generated programs have one rule a line."""
    body = s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t")
    return '"' + body + '"'


FLOAT_VALUES = [-1.5, 0.0, 0.5, 2.0, 3.25, 1e20]


def _lit(v) -> str:
    if isinstance(v, float):
        return repr(v)
    return str(v) if isinstance(v, int) else quote(v)


@dataclass
class _Rel:
    name: str
    types: tuple[str, ...]
    level: int = -1  # -1 for EDB relations


@dataclass
class _Body:
    """One rule's body under construction: variables with their types, literals as text."""

    var_types: dict[str, str] = field(default_factory=dict)
    literals: list[str] = field(default_factory=list)
    in_head: set[str] = field(default_factory=set)

    def bound(self, typ: str) -> list[str]:
        return [v for v in self.var_types if self.var_types[v] == typ]

    def fresh(self, typ: str) -> str | None:
        for v in VARIABLES:
            if v not in self.var_types:
                self.var_types[v] = typ
                return v
        return None


class _Gen:
    """Draws the parts of one program; see :func:`programs_with_databases`."""

    def __init__(self, draw, max_idb: int) -> None:
        self.draw = draw
        self.strs = draw(st.lists(st.sampled_from(STR_VALUES), min_size=2, max_size=5, unique=True))
        self.ints = draw(st.lists(st.sampled_from(INT_VALUES), min_size=2, max_size=8, unique=True))
        # one type per program (more joins) or both
        self.floats = draw(st.lists(st.sampled_from(FLOAT_VALUES), min_size=2, max_size=4, unique=True))
        self.types = st.sampled_from(draw(st.sampled_from([["int"], ["str"], ["int", "str"], ["int", "float"]])))
        self.edb = [_Rel(f"e{i}", self.columns()) for i in range(draw(st.integers(1, 3)))]
        self.idb = [
            _Rel(f"p{i}", self.columns(), draw(st.integers(0, 2))) for i in range(draw(st.integers(1, max_idb)))
        ]
        self.aggregated: list[tuple[str, int]] = []  # (relation, arity) of aggregate_rules' relations
        self.multi = False  # whether s selects two aggregates (see selective_rules)

    def columns(self) -> tuple[str, ...]:
        n = self.draw(st.sampled_from([2, 1, 2, 3, 2]))  # mostly binary: chains and closures
        return tuple(self.draw(self.types) for _ in range(n))

    def pick(self, options):
        return self.draw(st.sampled_from(options))

    def chance(self, k: int) -> bool:
        """True with probability 1/k."""
        return self.draw(st.integers(0, k - 1)) == 0

    def const(self, typ: str) -> str:
        return _lit(self.pick(self.values(typ)))

    def values(self, typ: str) -> list:
        return self.ints if typ == "int" else self.floats if typ == "float" else self.strs

    def expr(self, b: _Body, typ: str, depth: int = 0) -> str | None:
        """An arithmetic expression over bound variables of the numeric type ``typ`` (no division
        by a variable, which could be zero; small values, which cannot overflow)."""
        olds = b.bound(typ)
        if not olds or typ == "str":
            return None
        kind = self.pick(["binary", "binary", "neg", "nested"] if depth == 0 else ["leaf"])
        left = self.pick(olds)
        if kind == "leaf":
            return left
        if kind == "neg":
            return f"-{left}"
        op = self.pick(["+", "-", "*", "/"])
        if op == "/":
            right = _lit(self.pick([v for v in self.values(typ) if v not in (0, 0.0, 1e20)] or [2 if typ == "int" else 2.0]))
        else:
            right = self.pick(olds + [self.const(typ)])
        if kind == "nested":
            inner = self.expr(b, typ, depth + 1) or left
            return f"({inner} {op} {right}) {self.pick(['+', '*'])} {left}"
        return f"{left} {op} {right}"

    # -- body atoms --

    def atom(self, b: _Body, rel: _Rel, join: bool) -> list[str]:
        """Arguments for ``rel``: with ``join``, mostly variables bound by earlier atoms or fresh
        ones; otherwise fresh ones. Repeated variables, constants and ``_`` are rarer."""
        earlier = dict(b.var_types)
        args = []
        for t in rel.types:
            kind = self.pick(["join"] * (4 if join else 0) + ["new"] * 4 + ["repeat", "const", "anon"])
            olds = [v for v in earlier if earlier[v] == t]
            if kind == "join" and olds:
                args.append(self.pick(olds))
            elif kind == "repeat" and b.bound(t):
                args.append(self.pick(b.bound(t)))
            elif kind == "const":
                args.append(self.const(t))
            elif kind == "anon":
                args.append("_")
            else:
                args.append(b.fresh(t) or "_")
        b.literals.append(f"{rel.name}({', '.join(args)})")
        return args

    def extras(self, b: _Body, lower: list[_Rel]) -> None:
        """Maybe a comparison and maybe a negated atom of a lower relation."""
        if self.chance(3):
            typ = self.draw(self.types)
            olds = b.bound(typ)
            if olds:
                left = self.pick(olds)
                right = self.pick([v for v in olds if v != left] + [self.const(typ)])
                if typ != "str" and self.chance(3):
                    left = self.expr(b, typ) or left  # arithmetic compared
                if self.chance(2):
                    left, right = right, left
                b.literals.append(f"{left} {self.pick(OPS)} {right}")
        if self.chance(4):
            used = {lit.split("(")[0] for lit in b.literals}
            rel = self.pick([r for r in lower if r.name not in used] or lower)
            args = []
            local: dict[str, str] = {}  # variables local to the negation ("for no value"), by type
            for t in rel.types:
                olds = b.bound(t)
                kind = self.pick(["var", "var", "var", "const", "anon", "local"])
                if olds and (kind == "var" or all(a == "_" for a in args) and kind == "anon"):
                    args.append(self.pick(olds))  # at least one bound variable when possible
                elif kind == "anon":
                    args.append("_")
                elif kind == "local":
                    # a new one, or the one of this type again (then the positions must be equal)
                    name = local.get(t) if t in local and self.chance(2) else None
                    if name is None:
                        name = f"n{len(local)}_{t}"
                        local.setdefault(t, name)
                    args.append(name)
                else:
                    args.append(self.const(t))
            b.literals.append(f"not {rel.name}({', '.join(args)})")

    # -- heads --

    def skolem(self, b: _Body, depth: int = 0) -> str:
        fn = self.pick(sorted(GEN_SKOLEM_FNS))
        args = []
        for _ in range(GEN_SKOLEM_FNS[fn]):
            kind = self.pick(["var", "var", "const"] + (["skolem"] if depth == 0 else []))
            if kind == "skolem":
                args.append(self.skolem(b, depth + 1))
            elif kind == "var" and b.var_types:
                args.append(self.pick(list(b.var_types)))
            else:
                args.append(self.const(self.draw(self.types)))
        return f"{fn}({', '.join(args)})"

    def head(self, b: _Body, rel: _Rel, preferred: dict[int, str], skolem: bool, arith: bool = False) -> str:
        n = len(rel.types)
        sk = set(self.draw(st.sets(st.integers(0, n - 1), min_size=1, max_size=2))) if skolem else set()
        args = []
        for i, t in enumerate(rel.types):
            if i in sk:
                args.append(self.skolem(b))
                continue
            if arith and t != "str" and self.chance(3):
                e = self.expr(b, t)
                if e is not None:
                    args.append(e)
                    continue
            v = preferred.get(i)
            if v is None or b.var_types.get(v) != t:
                olds = b.bound(t)
                unused = [x for x in olds if x not in b.in_head]
                v = self.pick(unused or olds) if olds and not self.chance(8) else None
            if v is None:
                args.append(self.const(t))
            else:
                b.in_head.add(v)
                args.append(v)
        return f"{rel.name}({', '.join(args)})"

    # -- rules --

    def rule(self, head: _Rel, recursive: bool) -> str:
        lower = [r for r in self.edb + self.idb if r.level < head.level]  # never empty: holds the EDB
        same = [r for r in self.idb if r.level == head.level]
        b = _Body()
        preferred: dict[int, str] = {}
        skolem = False
        if not recursive and self.chance(2):
            # a copy of a lower relation, maybe with a Skolem head
            args = self.atom(b, self.pick(lower), join=False)
            preferred = {i: a for i, a in enumerate(args)}
            skolem = self.chance(3)
        elif not recursive:
            for _ in range(self.draw(st.integers(1, 3))):
                self.atom(b, self.pick(lower), join=True)
            skolem = self.chance(4)
        elif self.chance(3):
            # free-form recursion: up to three atoms, one of them (anywhere) of this level
            n = self.draw(st.integers(1, 3))
            k = self.draw(st.integers(0, n - 1))
            for i in range(n):
                self.atom(b, self.pick(same if i == k else lower + same), join=i > 0)
        else:
            # a chain, as in transitive closure: H(a.., y) :- R(a.., z), S(z, .., y)
            r = self.pick([head] * len(same) + same)
            r_vars = [b.fresh(t) or "_" for t in r.types]
            b.literals.append(f"{r.name}({', '.join(r_vars)})")
            steps = lower + same
            step = self.pick([x for x in steps if len(x.types) > 1] or steps)
            s_vars = []
            for i, t in enumerate(step.types):
                joinable = [v for v in r_vars if b.var_types.get(v) == t]
                s_vars.append(joinable[-1] if i == 0 and joinable else b.fresh(t) or "_")
            b.literals.append(f"{step.name}({', '.join(s_vars)})")
            preferred = {i: v for i, v in enumerate(r_vars[: len(head.types) - 1])}
            preferred[len(head.types) - 1] = s_vars[-1]
        self.extras(b, lower)
        arith = not recursive and self.chance(3)
        if arith:
            # a new value: only in rules reading lower levels, so every fixpoint stays finite
            typ = self.pick([t for t in head.types if t != "str"] or ["str"])
            e = self.expr(b, typ)
            if e is not None:
                c = b.fresh(typ)
                if c is not None:
                    b.literals.append(f"{c} = {e}" if self.chance(2) else f"{e} = {c}")
                    preferred = {i: c for i, t in enumerate(head.types) if t == typ} | preferred
        label = f"({self.pick(['0.5', '1', 'S'])}): " if self.chance(4) else ""
        return f"{label}{self.head(b, head, preferred, skolem, arith)} :- {', '.join(b.literals)}."

    def aggregate_rules(self) -> list[str]:
        """One or two relations ``a<i>`` above every level, each aggregating (min, max, count or
        sum, sometimes over an expression) what one or two rules derive from lower relations."""
        out = []
        lower = self.edb + self.idb
        for i in range(self.draw(st.integers(1, 2))):
            fn = self.pick(["min", "max", "count", "sum"])
            # sometimes a second aggregate over the same argument (several in one head)
            second = self.pick(["min", "max", "count"] + (["sum"] if fn == "sum" else [])) if self.chance(3) else None
            sig: tuple[str, ...] | None = None  # the key's types and then the argument's type
            for _ in range(self.draw(st.integers(1, 2))):
                b = _Body()
                for _ in range(self.draw(st.integers(1, 2))):
                    self.atom(b, self.pick(lower), join=True)
                self.extras(b, lower)
                numeric = [v for v in b.var_types if b.var_types[v] != "str"]
                if sig is None:
                    args = numeric if fn == "sum" else list(b.var_types)
                    if not args:
                        continue
                    arg = self.pick(args)
                    keys = [v for v in b.var_types if v != arg][: self.draw(st.integers(0, 2))]
                    sig = tuple(b.var_types[v] for v in keys) + (b.var_types[arg],)
                else:
                    keys = []
                    for t in sig[:-1]:
                        olds = [v for v in b.bound(t) if v not in keys]
                        keys.append(self.pick(olds) if olds and not self.chance(6) else self.const(t))
                    args = b.bound(sig[-1])
                    if not args:
                        continue
                    arg = self.pick(args)
                if sig[-1] != "str" and fn != "count" and self.chance(3):
                    arg = self.expr(b, sig[-1]) or arg
                aggs = [f"{fn}({arg})"] + ([f"{second}({arg})"] if second else [])
                head = ", ".join(keys + aggs)
                out.append(f"a{i}({head}) :- {', '.join(b.literals)}.")
            if sig is not None:
                self.aggregated.append((f"a{i}", len(sig) + (1 if second else 0)))
        return out

    def reader_rules(self, selective: bool) -> list[str]:
        """Rules over the aggregated relations: a plain copy of ``a0`` (an aggregate feeding
        further rules) and, over the min/max recursion ``s``, a count per value (the sizes of
        connected components)."""
        out = []
        if self.aggregated and self.chance(2):
            name, n = self.aggregated[0]
            xs = ", ".join(f"x{j}" for j in range(n))
            out.append(f"w({xs}) :- {name}({xs}).")
        if selective and self.chance(2):
            out.append("u(c, count(x)) :- s(x, c, _)." if self.multi else "u(c, count(x)) :- s(x, c).")
        return out

    def selective_rules(self) -> list[str]:
        """A min/max recursion over a graph (a relation whose first two columns have one type):
        labels spread along edges, or distances over a weight column (the weights kept to
        one sign with a filter, so no cycle improves forever)."""
        graphs = [r for r in self.edb + self.idb if len(r.types) >= 2 and r.types[0] == r.types[1]]
        if not graphs:
            return []
        g = self.pick(graphs)
        fn = self.pick(["min", "max"])
        rest = ["_"] * (len(g.types) - 2)
        weight = len(g.types) == 3 and g.types[2] != "str" and self.chance(2)
        if weight and self.chance(2):  # cost and hops selected together (Multi AggSel)
            sign = ">=" if fn == "min" else "<="
            self.multi = True
            return [
                f"s(x, {fn}(w), min(h)) :- {g.name}(x, _, w), h = 1.",
                f"s(y, {fn}(d), min(h)) :- s(x, d1, h1), {g.name}(x, y, w), w {sign} {'0' if g.types[2] == 'int' else '0.0'},"
                " d = d1 + w, h = h1 + 1.",
            ]
        if weight:
            sign = ">=" if fn == "min" else "<="
            return [
                f"s(x, {fn}(w)) :- {g.name}(x, _, w).",
                f"s(y, {fn}(d)) :- s(x, d1), {g.name}(x, y, w), w {sign} {'0' if g.types[2] == 'int' else '0.0'}, d = d1 + w.",
            ]
        rules = [
            f"s(x, {fn}(x)) :- {g.name}({', '.join(['x', '_'] + rest)}).",
            f"s(y, {fn}(c)) :- s(x, c), {g.name}({', '.join(['x', 'y'] + rest)}).",
        ]
        if self.chance(2):  # both directions, as for connected components
            rules.append(f"s(x, {fn}(c)) :- s(y, c), {g.name}({', '.join(['x', 'y'] + rest)}).")
        return rules

    def database(self) -> dict[str, set[tuple]]:
        # each possible tuple of the small domain is in with a per-relation probability
        db: dict[str, set[tuple]] = {}
        for rel in self.edb:
            candidates = list(itertools.product(*[self.values(t) for t in rel.types]))
            percent = min(self.pick([10, 25, 50, 80]), 100 * MAX_EDB_FACTS // len(candidates))
            db[rel.name] = {row for row in candidates if self.draw(st.integers(0, 99)) < percent}
        return db


@st.composite
def programs_with_databases(draw, max_idb: int = 4, aggregates: bool = False):
    """``(program_text, {edb relation: set of tuples})`` for a valid, stratified, finite program.

    Every IDB relation gets a level; a rule may read relations of lower levels positively or
    negatively and relations of its own level positively (recursion, mutual recursion). A rule
    with a Skolem head reads only lower levels, so labeled nulls never feed the recursion that
    creates them and the fixpoint is finite. Columns are typed and a variable keeps one type, so
    comparisons never mix ints and strings (labeled nulls may sit in either kind of column). EDB
    relations and relations with a float column are declared (``.decl``), so the database also
    survives a trip through CSV files.
    Each IDB relation has a non-recursive rule and up to two recursive ones (chains as in
    transitive closure, or free-form); the program text has one statement per line. With
    ``aggregates``, relations ``a<i>`` aggregate over the others, ``s`` may be a min/max
    recursion over a graph, and ``w``/``u`` may read them (see :meth:`_Gen.aggregate_rules`,
    :meth:`_Gen.selective_rules`, :meth:`_Gen.reader_rules`); some heads have two aggregates (two
    min/max too, whose witnesses are a disjunction), and ``s`` may select two (cost and hops).
    """
    g = _Gen(draw, max_idb)
    rules = []
    for head in g.idb:
        rules.append(g.rule(head, recursive=False))
        for _ in range(draw(st.sampled_from([0, 1, 1, 2]))):
            rules.append(g.rule(head, recursive=True))
    if aggregates:
        selective = g.selective_rules()
        rules += g.aggregate_rules() + selective + g.reader_rules(bool(selective))
    rules = draw(st.permutations(rules))
    decls = []
    for rel in g.edb + g.idb:
        # a float column is always declared: one filled only by Skolem terms has no float evidence
        # for the type checker, which would type it int and refuse float arithmetic over it
        if rel.level < 0 or "float" in rel.types or g.chance(2):
            decls.append(f".decl {rel.name}({', '.join(f'c{i + 1}: {t}' for i, t in enumerate(rel.types))})")
    return "\n".join(decls + list(rules)) + "\n", g.database()


# ---------------------------------------------------------------------------------------------
# The naive oracle
# ---------------------------------------------------------------------------------------------

_ORDER = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}


def _compare(op: str, a, b) -> bool:
    if op == "=":
        return a == b
    if op == "!=":
        return a != b
    if isinstance(a, Skolem) or isinstance(b, Skolem):
        return False  # labeled nulls are never ordered
    if {type(a), type(b)} == {int, float}:
        a, b = float(a), float(b)
    if type(a) is not type(b):
        raise TypeError(f"oracle: comparing {a!r} {op} {b!r}")
    return _ORDER[op](a, b)


def _agg(rule: Rule) -> tuple[int, Aggregate] | None:
    aggs = _aggs(rule)
    return aggs[0] if aggs else None


def _aggs(rule: Rule) -> list[tuple[int, Aggregate]]:
    return [(p, t) for p, t in enumerate(rule.head.args) if isinstance(t, Aggregate)]


def stratify(program: Program) -> list[list[Rule]]:
    """The least stratification: a head's level is at least each positive IDB body relation's
    level and more than each negated one's, and more than each one it aggregates over -- unless
    it aggregates with min/max over its own recursion. Raises ValueError when there is none."""
    idb = {r.head.relation for r in program.rules}
    reach = {rel: {a.relation for r in program.rules if r.head.relation == rel for a in r.body if isinstance(a, Atom)} for rel in idb}
    for _ in range(len(idb)):
        reach = {rel: rs | {x for r in rs if r in reach for x in reach[r]} for rel, rs in reach.items()}
    level = {rel: 0 for rel in idb}
    for _ in range(len(idb) + 2):
        changed = False
        for r in program.rules:
            agg = _agg(r)
            for lit in r.body:
                if isinstance(lit, Atom) and lit.relation in idb:
                    recursive = r.head.relation in reach.get(lit.relation, ())
                    over = agg is not None and not (recursive and agg[1].fn in ("min", "max"))
                    need = level[lit.relation] + (1 if lit.negated or over else 0)
                    if level[r.head.relation] < need:
                        level[r.head.relation] = need
                        changed = True
        if not changed:
            break
    else:
        raise ValueError("not stratifiable")
    if any(v > len(idb) for v in level.values()):
        raise ValueError("not stratifiable")
    top = max(level.values(), default=-1)
    return [[r for r in program.rules if level[r.head.relation] == s] for s in range(top + 1)]


def strata_relations(program: Program) -> list[list[str]]:
    """IDB relation names per stratum of :func:`stratify`, sorted."""
    return [sorted({r.head.relation for r in rules}) for rules in stratify(program)]


def _value(t, env):
    """The value of a term; None for arithmetic over a labeled null (no value)."""
    if isinstance(t, Const):
        return t.value
    if isinstance(t, Var):
        return env[t.name]
    if isinstance(t, Arith):
        args = [_value(a, env) for a in t.args]
        if any(a is None or isinstance(a, Skolem) for a in args):
            return None
        if len(args) == 1:
            return -args[0] + 0 if isinstance(args[0], int) else -args[0] + 0.0
        a, b = args
        if isinstance(a, float) or isinstance(b, float):
            r = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv}[t.op](float(a), float(b))
            return r + 0.0
        if t.op == "/":
            q = abs(a) // abs(b)
            return q if (a < 0) == (b < 0) else -q
        return {"+": operator.add, "-": operator.sub, "*": operator.mul}[t.op](a, b)
    return Skolem(t.fn, tuple(_value(a, env) for a in t.args))


def _unify(args, fact, env):
    if len(args) != len(fact):
        return None
    env = dict(env)
    for t, v in zip(args, fact):
        if isinstance(t, Const):
            if not (type(t.value) is type(v) and t.value == v):
                return None
        elif t.anonymous:
            continue
        elif t.name in env:
            if env[t.name] != v:
                return None
        else:
            env[t.name] = v
    return env


def _fire(rule: Rule, facts: dict[str, set]) -> set:
    """Every head fact of ``rule`` over ``facts``: match positive atoms by brute force, bind the
    variables of ``v = expression`` equalities once the expression's variables are bound, then
    test comparisons and negations."""
    positives = [b for b in rule.body if isinstance(b, Atom) and not b.negated]
    envs = [{}]
    for a in positives:
        envs = [e2 for e in envs for f in facts.get(a.relation, ()) if (e2 := _unify(a.args, f, e)) is not None]
    out = set()
    for env in envs:
        head = instance_head(rule, env, facts)
        if head is not None:
            out.add(head)
    return out


def instance_head(rule: Rule, env: dict, facts: dict[str, set]) -> tuple | None:
    """The head fact of ``rule`` under ``env`` (the positive atoms' bindings), or None when an
    assignment has no value, a comparison fails or a negated atom matches."""
    env, tests = assigned(rule, env)
    if any(v is None for v in env.values()):
        return None
    for lit in rule.body:
        if isinstance(lit, Comparison):
            if lit in tests:
                a, b = _value(lit.left, env), _value(lit.right, env)
                if a is None or b is None or not _compare(lit.op, a, b):
                    return None
        elif lit.negated and any(_unify(lit.args, f, env) is not None for f in facts.get(lit.relation, ())):
            return None
    head = tuple(_value(t, env) for t in rule.head.args)
    return None if any(v is None for v in head) else head


def assigned(rule: Rule, env: dict) -> tuple[dict, list[Comparison]]:
    """``env`` extended with the rule's assignments, and the comparisons left to test."""
    env = dict(env)
    tests = [lit for lit in rule.body if isinstance(lit, Comparison)]
    changed = True
    while changed:  # assignments, in whatever order they become computable
        changed = False
        for lit in list(tests):
            if lit.op != "=":
                continue
            for var, expr in ((lit.left, lit.right), (lit.right, lit.left)):
                if isinstance(var, Var) and var.name not in env and all(v.name in env for v in _vars(expr)):
                    env[var.name] = _value(expr, env)
                    tests.remove(lit)
                    changed = True
                    break
    return env, tests


def _vars(t):
    if isinstance(t, Var):
        yield t
    elif isinstance(t, (SkolemTerm, Arith)):
        for a in t.args:
            yield from _vars(a)


def naive_fixpoint(analysis, edb) -> dict[str, set[tuple]]:
    """The IDB relations of ``analysis.program`` over ``edb`` (plus the program's inline facts),
    computed naively stratum by stratum. ``analysis`` is only used for its program and relation
    sets; the stratification is recomputed here."""
    program: Program = analysis.program
    facts: dict[str, set] = {rel: set() for rel in analysis.arities}
    for rel, tuples in edb.items():
        if rel in analysis.edb:
            facts[rel] |= {tuple(t) for t in tuples}
    for f in program.facts:
        facts[f.atom.relation].add(tuple(t.value for t in f.atom.args))
    for rules in stratify(program):
        changed = True
        while changed:
            changed = False
            for rule in rules:
                if _agg(rule) is not None:
                    continue
                new = _fire(rule, facts) - facts[rule.head.relation]
                if new:
                    facts[rule.head.relation] |= new
                    changed = True
            # aggregated relations: recomputed from every rule instance, each group keeping the
            # better of its old and new value (min/max); count/sum read lower strata only
            for rel in sorted({r.head.relation for r in rules if _agg(r) is not None}):
                own = [r for r in rules if r.head.relation == rel]
                heads = {r.head.relation for r in rules}
                recursive = any(isinstance(b, Atom) and b.relation in heads for r in own for b in r.body)
                new = _aggregate(rel, own, facts, recursive)
                if new != facts[rel]:
                    facts[rel] = new
                    changed = True
    return {rel: facts[rel] for rel in analysis.idb}


def _aggregate(rel: str, rules: list[Rule], facts: dict[str, set], recursive: bool = False) -> set:
    """Each aggregate folded over the group's instances on its own; a group has a fact when every
    aggregate has a value. Through recursion (min/max) a group keeps, per aggregate, the better
    of its old and new value, and an instance lacking some aggregate's value is no candidate."""
    aggs = _aggs(rules[0])
    positions = [p for p, _ in aggs]
    groups: dict[tuple, list] = {}
    for rule in rules:
        positives = [b for b in rule.body if isinstance(b, Atom) and not b.negated]
        envs = [{}]
        for a in positives:
            envs = [e2 for e in envs for f in facts.get(a.relation, ()) if (e2 := _unify(a.args, f, e)) is not None]
        for env in envs:  # one per combination of body facts: a rule instance
            plain = Rule(rule.name, Atom(rel, tuple(Const(0) if i in positions else t for i, t in enumerate(rule.head.args))), rule.body)
            head = instance_head(plain, env, facts)
            if head is None:
                continue
            full, _ = assigned(rule, env)
            values = tuple(_value(t.args[0], full) for _, t in _aggs(rule))
            if recursive and len(aggs) > 1 and any(v is None or isinstance(v, Skolem) for v in values):
                continue
            groups.setdefault(tuple(v for i, v in enumerate(head) if i not in positions), []).append(values)
    out = set()
    old = {tuple(v for i, v in enumerate(f) if i not in positions): tuple(f[p] for p in positions) for f in facts[rel]}
    for key, rows in groups.items():
        result = []
        for k, (_, agg) in enumerate(aggs):
            values = [row[k] for row in rows]
            vals = [v for v in values if v is not None and not isinstance(v, Skolem)]
            if agg.fn == "count":
                v = len(values)
            elif not vals:
                break
            elif agg.fn == "sum":
                v = sum(sorted(vals), 0.0 if isinstance(vals[0], float) else 0) + (0.0 if isinstance(vals[0], float) else 0)
            else:
                v = min(vals) if agg.fn == "min" else max(vals)
                if key in old:
                    v = min(v, old[key][k]) if agg.fn == "min" else max(v, old[key][k])
            result.append(v)
        else:
            fact, it = [], iter(key)
            for i in range(len(key) + len(aggs)):
                fact.append(result[positions.index(i)] if i in positions else next(it))
            out.add(tuple(fact))
    return out
