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

import operator
from dataclasses import dataclass, field

from hypothesis import strategies as st

from selp.language.ast import ANON_PREFIX, Atom, Comparison, Const, Decl, Fact, Program, Rule, SkolemTerm, Var
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
    return st.one_of(st.sampled_from(TRICKY_STRINGS), st.text(max_size=8))


def _ints() -> st.SearchStrategy[int]:
    return st.one_of(st.integers(-5, 5), st.integers(-(2**70), 2**70))


def _constants() -> st.SearchStrategy[Const]:
    return st.one_of(_strings(), _ints()).map(Const)


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

    return st.recursive(base, extend, max_leaves=4)


def _atoms(negated: bool = False, skolem: bool = False, ground: bool = False) -> st.SearchStrategy[Atom]:
    term = _constants() if ground else _terms(skolem)
    return st.builds(
        lambda rel, args: Atom(rel, tuple(args), negated),
        st.sampled_from(RELATION_NAMES),
        st.lists(term, max_size=3),
    )


def _cterms() -> st.SearchStrategy:
    return st.one_of(st.sampled_from(VARIABLE_NAMES).map(Var), st.just(ANON), _constants())


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

INT_VALUES = [-2, 0, 1, 2, 3]
# never integer-looking, so data written to CSV keeps its type; includes characters CSV quotes
STR_VALUES = ["a", "b", "c", "Cuba", 'q"uote', "com,ma", "", "Zürich", "new\nline", "back\\slash"]


def quote(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _lit(v) -> str:
    return str(v) if isinstance(v, int) else quote(v)


@dataclass
class _Rel:
    name: str
    types: tuple[str, ...]
    level: int = -1  # -1 for EDB relations


@dataclass
class _RuleBuilder:
    """Collects one rule's body while tracking which variables are bound and their types."""

    var_types: dict[str, str] = field(default_factory=dict)
    body: list[str] = field(default_factory=list)

    def bound(self, typ: str) -> list[str]:
        return sorted(v for v, t in self.var_types.items() if t == typ)


GEN_SKOLEM_FNS = {"f": 1, "g": 2, "h": 0}


@st.composite
def programs_with_databases(draw, max_idb: int = 4, max_facts: int = 8):
    """``(program_text, {edb relation: set of tuples})`` for a valid, stratified, finite program.

    Every IDB relation gets a level; a rule may read relations of lower levels positively or
    negatively and relations of its own level positively (recursion, mutual recursion). A rule
    with a Skolem head reads only lower levels, so labeled nulls never feed the recursion that
    creates them and the fixpoint is finite. Columns are typed and a variable keeps one type, so
    comparisons never mix ints and strings (labeled nulls may sit in either kind of column).
    """
    strs = draw(st.lists(st.sampled_from(STR_VALUES), min_size=2, max_size=3, unique=True))
    ints = draw(st.lists(st.sampled_from(INT_VALUES), min_size=2, max_size=3, unique=True))
    # a program-wide bias towards one type, so that variables join more often
    types = st.sampled_from(draw(st.sampled_from([["int"], ["str"], ["int", "str"], ["int", "int", "str"]])))
    edb = [
        _Rel(f"e{i}", tuple(draw(st.lists(types, min_size=1, max_size=3))))
        for i in range(draw(st.integers(1, 3)))
    ]
    n_idb = draw(st.integers(1, max_idb))
    idb = [
        _Rel(f"p{i}", tuple(draw(st.lists(types, min_size=1, max_size=3))), draw(st.integers(0, 2)))
        for i in range(n_idb)
    ]
    rules: list[str] = []
    var_pool = ["x", "y", "z", "u", "v", "w"]

    def const(typ: str) -> str:
        return _lit(draw(st.sampled_from(ints if typ == "int" else strs)))

    def term_for(rb: _RuleBuilder, typ: str, allow_new: bool) -> str:
        """A body (allow_new) or head argument of type ``typ``."""
        kinds = ["old"] * 4 + ["new"] * 3 + ["const", "anon"] if allow_new else ["old"] * 4 + ["const"]
        kind = draw(st.sampled_from(kinds))
        olds = rb.bound(typ)
        if kind == "old" and olds:
            return draw(st.sampled_from(olds))
        if kind in ("old", "new") and allow_new:
            free = [v for v in var_pool if v not in rb.var_types]
            if free:
                rb.var_types[free[0]] = typ
                return free[0]
        if kind == "anon":
            return "_"
        return const(typ)

    def skolem_term(rb: _RuleBuilder, depth: int = 0) -> str:
        fn = draw(st.sampled_from(sorted(GEN_SKOLEM_FNS)))
        args = []
        for _ in range(GEN_SKOLEM_FNS[fn]):
            kind = draw(st.sampled_from(["var", "var", "const", "skolem"] if depth == 0 else ["var", "const"]))
            if kind == "skolem":
                args.append(skolem_term(rb, depth + 1))
            elif kind == "var" and rb.var_types:
                args.append(draw(st.sampled_from(sorted(rb.var_types))))
            else:
                args.append(const(draw(types)))
        return f"{fn}({', '.join(args)})"

    def make_rule(head: _Rel, recursive: bool) -> str:
        """A rule for ``head``; a ``recursive`` one reads a relation of the head's level first."""
        skolem = not recursive and draw(st.integers(0, 3)) == 0
        lower = [r for r in edb + idb if r.level < head.level]  # never empty: holds the EDB
        same = [r for r in idb if r.level == head.level]
        rb = _RuleBuilder()
        for k in range(draw(st.integers(1, 3))):
            rel = draw(st.sampled_from(same if recursive and k == 0 else lower + same if recursive else lower))
            args = [term_for(rb, t, allow_new=True) for t in rel.types]
            rb.body.append(f"{rel.name}({', '.join(args)})")
        for _ in range(draw(st.sampled_from([0, 0, 1, 2]))):
            typ = draw(types)
            olds = rb.bound(typ)
            if not olds:
                continue
            op = draw(st.sampled_from(["=", "!=", "<", "<=", ">", ">="]))
            left = draw(st.sampled_from(olds))
            right = draw(st.sampled_from([v for v in olds if v != left] + [const(typ)]))
            if draw(st.booleans()):
                left, right = right, left
            rb.body.append(f"{left} {op} {right}")
        if draw(st.integers(0, 3)) == 0:
            unused = [r for r in lower if not any(b.startswith(r.name + "(") for b in rb.body)]
            rel = draw(st.sampled_from(unused or lower))
            args = []
            for t in rel.types:
                kind = draw(st.sampled_from(["var", "var", "const", "anon"]))
                olds = rb.bound(t)
                if kind == "var" and olds:
                    args.append(draw(st.sampled_from(olds)))
                elif kind == "anon":
                    args.append("_")
                else:
                    args.append(const(t))
            rb.body.append(f"not {rel.name}({', '.join(args)})")
        n = len(head.types)
        sk_positions = draw(st.sets(st.integers(0, n - 1), min_size=1, max_size=2)) if skolem else set()
        head_args = [
            skolem_term(rb) if i in sk_positions else term_for(rb, t, allow_new=False)
            for i, t in enumerate(head.types)
        ]
        label = ""
        if draw(st.integers(0, 3)) == 0:
            label = f"({draw(st.sampled_from(['0.5', '1', 'S']))}): "
        return f"{label}{head.name}({', '.join(head_args)}) :- {', '.join(rb.body)}."

    for head in idb:  # a base rule, then possibly recursive ones
        rules.append(make_rule(head, recursive=False))
        for _ in range(draw(st.sampled_from([0, 1, 1, 2]))):
            rules.append(make_rule(head, recursive=True))
    rules = draw(st.permutations(rules))
    decls = []
    for rel in edb + idb:
        if rel.level < 0 or draw(st.booleans()):
            cols = ", ".join(f"c{i + 1}: {t}" for i, t in enumerate(rel.types))
            decls.append(f".decl {rel.name}({cols})")
    text = "\n".join(decls + list(rules)) + "\n"

    db: dict[str, set[tuple]] = {}
    for rel in edb:
        row = st.tuples(*[st.sampled_from(ints if t == "int" else strs) for t in rel.types])
        db[rel.name] = set(draw(st.lists(row, min_size=1, max_size=max_facts)))
    return text, db


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
    if type(a) is not type(b):
        raise TypeError(f"oracle: comparing {a!r} {op} {b!r}")
    return _ORDER[op](a, b)


def stratify(program: Program) -> list[list[Rule]]:
    """The least stratification: a head's level is at least each positive IDB body relation's
    level and more than each negated one's. Raises ValueError when there is none."""
    idb = {r.head.relation for r in program.rules}
    level = {rel: 0 for rel in idb}
    for _ in range(len(idb) + 2):
        changed = False
        for r in program.rules:
            for lit in r.body:
                if isinstance(lit, Atom) and lit.relation in idb:
                    need = level[lit.relation] + (1 if lit.negated else 0)
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
    if isinstance(t, Const):
        return t.value
    if isinstance(t, Var):
        return env[t.name]
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
    """Every head fact of ``rule`` over ``facts``: match positive atoms by brute force, then test
    comparisons and negations."""
    positives = [b for b in rule.body if isinstance(b, Atom) and not b.negated]
    envs = [{}]
    for a in positives:
        envs = [e2 for e in envs for f in facts.get(a.relation, ()) if (e2 := _unify(a.args, f, e)) is not None]
    out = set()
    for env in envs:
        ok = True
        for lit in rule.body:
            if isinstance(lit, Comparison):
                ok = _compare(lit.op, _value(lit.left, env), _value(lit.right, env))
            elif lit.negated:
                ok = not any(_unify(lit.args, f, env) is not None for f in facts.get(lit.relation, ()))
            if not ok:
                break
        if ok:
            out.add(tuple(_value(t, env) for t in rule.head.args))
    return out


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
                new = _fire(rule, facts) - facts[rule.head.relation]
                if new:
                    facts[rule.head.relation] |= new
                    changed = True
    return {rel: facts[rel] for rel in analysis.idb}
