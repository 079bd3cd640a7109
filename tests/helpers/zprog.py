"""Random non-recursive programs with negated heads, random Z-relations, and a brute-force bag
evaluator that shares no code with :mod:`selp.adapt` (it matches atoms over the cartesian
product of the body relations)."""

from __future__ import annotations

import itertools
from collections import Counter

from hypothesis import strategies as st

from selp.language.ast import Atom, Comparison, Const, Program, Rule, SkolemTerm, Term, Var
from selp.values import Skolem, Value

EDB = {"e0": 1, "e1": 2, "e2": 2}
DOMAIN: list[Value] = [1, 2, "a"]
VARS = [Var("x"), Var("y"), Var("z")]
VIEW_ARITY = [1, 2, 0, 2, 1, 2]


@st.composite
def program_changes(draw, old: Program) -> Program:
    """A changed program: some of ``old``'s rules dropped, rules of another random program (same
    view arities) added, rules reading a view left without rules dropped in turn."""
    other = draw(z_programs(fixed=True))
    keep = [r for r in old.rules if draw(st.integers(0, 4))]
    rules = keep + [r for r in other.rules if draw(st.booleans())]
    while True:
        defined = {r.head.relation for r in rules}
        ok = [r for r in rules if all(a.relation in EDB or a.relation in defined for a in r.body if isinstance(a, Atom))]
        if len(ok) == len(rules):
            break
        rules = ok
    if not rules:
        rules = list(old.rules[:1])
    rules = [Rule(f"r{i + 1}", r.head, r.body) for i, r in enumerate(rules)]
    return Program(rules=tuple(rules))


@st.composite
def z_programs(draw, max_views: int = 4, fixed: bool = False) -> Program:
    """A non-recursive program: views ``v0..`` each over the EDB and earlier views, some rules
    with negated heads, Skolem terms, constants and comparisons. ``fixed``: view ``vk`` always
    has arity ``VIEW_ARITY[k]``, so rules of two such programs can be mixed."""
    arities = dict(EDB)
    rules: list[Rule] = []
    for k in range(draw(st.integers(1, max_views))):
        name = f"v{k}"
        arity = VIEW_ARITY[k] if fixed else draw(st.integers(0, 2))
        sources = sorted(arities)
        for _ in range(draw(st.integers(1, 3))):
            body: list = []
            for _ in range(draw(st.integers(1, 3))):
                rel = draw(st.sampled_from(sources))
                args = tuple(draw(st.one_of(st.sampled_from(VARS), st.sampled_from(DOMAIN).map(Const))) for _ in range(arities[rel]))
                body.append(Atom(rel, args))
            bound = sorted({v for a in body for v in a.vars()}, key=lambda v: v.name)
            if bound and draw(st.booleans()):
                op = draw(st.sampled_from(["=", "!="]))
                right = draw(st.one_of(st.sampled_from(bound), st.sampled_from(DOMAIN).map(Const)))
                body.append(Comparison(op, draw(st.sampled_from(bound)), right))
            head_terms: list[Term] = []
            for _ in range(arity):
                choices: list = [st.sampled_from(DOMAIN).map(Const)]
                if bound:
                    choices += [st.sampled_from(bound), st.sampled_from(bound).map(lambda v: SkolemTerm("f", (v,)))]
                head_terms.append(draw(st.one_of(*choices)))
            negated = draw(st.integers(0, 3)) == 0
            rules.append(Rule(f"r{len(rules) + 1}", Atom(name, tuple(head_terms), negated), tuple(body)))
        arities[name] = arity
    return Program(rules=tuple(rules))


def z_relations(arity: int) -> st.SearchStrategy[dict]:
    """A Z-relation over the small domain, counts in -2..3 (never 0)."""
    row = st.tuples(*[st.sampled_from(DOMAIN)] * arity)
    return st.dictionaries(row, st.integers(-2, 3).filter(bool), max_size=5)


def z_databases() -> st.SearchStrategy[dict]:
    return st.fixed_dictionaries({rel: z_relations(a) for rel, a in EDB.items()})


def _value(t: Term, env: dict) -> Value:
    if isinstance(t, Var):
        return env[t]
    if isinstance(t, Const):
        return t.value
    assert isinstance(t, SkolemTerm)
    return Skolem(t.fn, tuple(_value(a, env) for a in t.args))


def _same(a: Value, b: Value) -> bool:
    return type(a) is type(b) and a == b


def brute_force(program: Program, edb: dict) -> dict:
    """Every view's Z-relation; view ``vk`` reads only ``vj`` with ``j < k``, so views go in
    number order (other heads after them, in source order)."""
    db: dict = {rel: {k: n for k, n in rows.items() if n} for rel, rows in edb.items()}
    heads = list(dict.fromkeys(r.head.relation for r in program.rules))
    number = {h: int(h[1:]) if h[:1] == "v" and h[1:].isdigit() else len(heads) + i for i, h in enumerate(heads)}
    for rel in sorted(heads, key=number.__getitem__):
        total: Counter = Counter()
        for r in program.rules:
            if r.head.relation != rel:
                continue
            atoms = [b for b in r.body if isinstance(b, Atom)]
            for combo in itertools.product(*[list(db.get(a.relation, {}).items()) for a in atoms]):
                env: dict = {}
                ok = True
                for a, (row, _) in zip(atoms, combo):
                    for t, v in zip(a.args, row):
                        if isinstance(t, Var):
                            if t in env and not _same(env[t], v):
                                ok = False
                            env.setdefault(t, v)
                        elif not _same(t.value, v):  # type: ignore[union-attr]
                            ok = False
                if not ok:
                    continue
                for c in (b for b in r.body if isinstance(b, Comparison)):
                    same = _same(_value(c.left, env), _value(c.right, env))
                    ok = ok and (same if c.op == "=" else not same)
                if not ok:
                    continue
                n = 1
                for _, m in combo:
                    n *= m
                total[tuple(_value(t, env) for t in r.head.args)] += -n if r.head.negated else n
        db[rel] = {k: n for k, n in total.items() if n}
    return {rel: rows for rel, rows in db.items() if rel not in edb}
