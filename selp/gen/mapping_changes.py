"""SWISS-PROT-like mapping programs and random mapping changes: [GI12]'s experimental workload.

**The program.** [GI12] §V re-factors SWISS-PROT into 24 peer relations, gives 16 of them a
*source* relation and defines every peer relation as a view of 1–4 rules of 1–5 source atoms
"covering" the view's attribute types. Here the 24 relation schemas are the first 24 relations
of :func:`selp.gen.swissprot.generate` (key ``ac`` first, Zipf-popular attributes, so sources
overlap); view ``v<i>`` has ``v<i>``'s schema, sources ``s0..s15`` have the first 16 schemas and
view ``v<i>`` (i < 16) copies ``s<i>`` in its first rule. The other rules join random sources on
the key until the view's attribute types are covered. A view attribute no source covers is left
out of the view (decision: the paper's generator picks only coverable types).

**The data.** Every source holds ``rows`` entries sampled uniformly from a pool of ``2·rows``
entries (so a key join keeps about half), one row per entry. Decision: non-key values are
uniform over the pool size, not :func:`selp.gen.swissprot.value`'s Zipf skew: a correspondence
join on a skewed attribute joins its most frequent value (5 % of the rows) with itself, which
makes a single change quadratic in ``rows`` — a synonym table in the paper is close to 1:1.

**The changes** ([GI12] Tables I and II, with their frequencies): add / drop / move a source
column (the changed source is a new view ``r′`` over ``r`` — a fresh default constant for add
and drop, a swap of two columns for move — and every atom of ``r`` reads ``r′``), add / drop a
source (a rule of a view), add / drop a correspondence join, add / drop a view column. A change
whose preconditions fail on the drawn view (e.g. dropping the only rule) is redrawn. A rule a
change touches gets a fresh name, as an edited tgd gets a fresh Skolem function.

Deterministic per seed.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field, replace

from selp.gen.swissprot import generate, hash64

SOURCES, VIEWS = 16, 24
MAX_ATOMS, MAX_RULES = 5, 4
# [GI12] Table II: the change kinds and their frequencies (per cent)
MIX: dict[str, int] = {
    "add source column": 16, "drop source column": 9, "move source column": 5,
    "add source": 16, "drop source": 9,
    "add correspondence": 16, "drop correspondence": 9,
    "add view column": 12, "drop view column": 8,
}
DEFAULT = -1  # the type of a column holding a default constant


@dataclass(frozen=True)
class MRule:
    """A rule: head terms and body atoms; a term is a variable name or a quoted constant."""

    name: str
    head: tuple[str, ...]
    body: tuple[tuple[str, tuple[str, ...]], ...]

    def text(self) -> str:
        atoms = ", ".join(f"{r}({', '.join(a)})" for r, a in self.body)
        return f"{self.name}: {self.head_relation}({', '.join(self.head)}) :- {atoms}."

    head_relation: str = ""


@dataclass
class Workload:
    """A mapping program: base sources, derived sources (column changes) and views."""

    types: dict[str, tuple[int, ...]]  # relation -> universal attribute index per column (DEFAULT: a constant)
    sources: list[str]  # the base (EDB) sources
    current: dict[str, str]  # base source -> the relation views read now (a derived source after column changes)
    derived: list[MRule] = field(default_factory=list)  # r′(...) :- r(...), in creation order
    views: dict[str, list[MRule]] = field(default_factory=dict)
    counter: int = 0  # for fresh names and constants
    changes: list[tuple[str, str]] = field(default_factory=list)  # (kind, view or source touched)

    def copy(self) -> Workload:
        return Workload(dict(self.types), list(self.sources), dict(self.current), list(self.derived),
                        {v: list(rs) for v, rs in self.views.items()}, self.counter, list(self.changes))

    def fresh(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def text(self) -> str:
        """The datalog program (derived sources first, then the views)."""
        return "\n".join([r.text() for r in self.derived] + [r.text() for rs in self.views.values() for r in rs]) + "\n"

    def var_types(self, r: MRule) -> dict[str, int]:
        """Each variable's type: that of the first body column it occurs in."""
        out: dict[str, int] = {}
        for rel, args in r.body:
            for t, a in zip(self.types[rel], args):
                if not a.startswith('"'):
                    out.setdefault(a, t)
        return out

    def head_types(self, view: str) -> tuple[int, ...]:
        r = self.views[view][0]
        vt = self.var_types(r)
        return tuple(DEFAULT if a.startswith('"') else vt[a] for a in r.head)


def _rule(name: str, head_rel: str, head: tuple[str, ...], body: list[tuple[str, tuple[str, ...]]]) -> MRule:
    return MRule(name, tuple(head), tuple(body), head_rel)


def _covering_rule(w: Workload, rng: random.Random, view: str, head_types: tuple[int, ...]) -> MRule | None:
    """A rule for ``view`` joining random current sources on the key until ``head_types`` are
    covered (1–5 atoms); None when the sources cannot cover them."""
    rels = list(w.current.values())
    need = {t for t in head_types if t != DEFAULT}
    body: list[tuple[str, tuple[str, ...]]] = []
    supply: dict[int, str] = {}
    while need - set(supply):
        if len(body) == MAX_ATOMS:
            return None
        cands = [r for r in rels if set(w.types[r]) & (need - set(supply))]
        if not cands:
            return None
        rel = rng.choice(cands)
        i = len(body)
        args = tuple("K" if t == 0 else f"A{i}_{c}" for c, t in enumerate(w.types[rel]))
        for t, a in zip(w.types[rel], args):
            if t in need and t not in supply:
                supply[t] = a
        body.append((rel, args))
    if not body or "K" not in {a for _, args in body for a in args}:
        return None
    head = tuple(supply.get(t, '"none"') if t != DEFAULT else '"none"' for t in head_types)
    if 0 in head_types:
        head = tuple("K" if t == 0 else h for t, h in zip(head_types, head))
    return _rule(w.fresh("m"), view, head, body)


def initial(seed: int = 0) -> Workload:
    """The initial program: 16 sources, 24 views (module docstring)."""
    rels: list = []
    peers = 24
    while len(rels) < VIEWS:
        g = generate(peers, 0, "1", "chain", seed)
        rels = [r for rs in g.relations for r in rs]
        peers *= 2
    rng = random.Random(f"mapping-changes:{seed}")
    w = Workload({}, [], {})
    for i in range(SOURCES):
        w.types[f"s{i}"] = rels[i].attrs
        w.sources.append(f"s{i}")
        w.current[f"s{i}"] = f"s{i}"
    for i in range(VIEWS):
        v = f"v{i}"
        types = rels[i].attrs
        rules: list[MRule] = []
        if i < SOURCES:
            args = tuple("K" if t == 0 else f"A0_{c}" for c, t in enumerate(types))
            rules.append(_rule(w.fresh("m"), v, args, [(f"s{i}", args)]))
        else:  # only the types some source covers
            have = {t for s in w.sources for t in w.types[s]}
            types = tuple(t for t in types if t in have)
        want = rng.randint(1, MAX_RULES)
        tries = 0
        while len(rules) < want and tries < 20:
            tries += 1
            r = _covering_rule(w, rng, v, types)
            if r is not None:
                rules.append(r)
        if rules:
            w.views[v] = rules
    return w


# -- the changes: each returns the view (or source) it touched, or None when it does not apply ----

def _used_sources(w: Workload) -> list[str]:
    used = {rel for rs in w.views.values() for r in rs for rel, _ in r.body}
    return [b for b, cur in w.current.items() if cur in used]


def _column_change(w: Workload, rng: random.Random, kind: str) -> str | None:
    bases = _used_sources(w)
    if not bases:
        return None
    base = rng.choice(bases)
    r = w.current[base]
    types = w.types[r]
    xs = tuple(f"X{c}" for c in range(len(types)))
    new = f"{base}_{w.fresh('c')}"
    const = f'"d{w.counter}"'
    if kind == "add source column":
        head, new_types, rewrite = xs + (const,), types + (DEFAULT,), lambda a: a + (const,)
    elif kind == "drop source column":
        cols = [c for c, t in enumerate(types) if t not in (0, DEFAULT)]
        if not cols:
            return None
        p = rng.choice(cols)
        head = xs[:p] + (const,) + xs[p + 1 :]
        new_types, rewrite = types[:p] + (DEFAULT,) + types[p + 1 :], lambda a: a
    else:  # move: swap two columns
        if len(types) < 2:
            return None
        i, j = sorted(rng.sample(range(len(types)), 2))

        def swap(a: tuple) -> tuple:
            b = list(a)
            b[i], b[j] = b[j], b[i]
            return tuple(b)

        head, new_types, rewrite = swap(xs), swap(types), swap
    w.types[new] = new_types
    w.derived.append(_rule(w.fresh("c"), new, head, [(r, xs)]))
    w.current[base] = new
    for v, rules in w.views.items():
        w.views[v] = [x if all(rel != r for rel, _ in x.body) else
                      replace(x, name=w.fresh("m"), body=tuple((new, rewrite(a)) if rel == r else (rel, a) for rel, a in x.body))
                      for x in rules]
    return base


def _replace_rule(w: Workload, view: str, old: MRule, new: MRule) -> str:
    w.views[view] = [new if x is old else x for x in w.views[view]]
    return view


def _add_source(w: Workload, rng: random.Random, view: str) -> str | None:
    if len(w.views[view]) >= MAX_RULES + 2:
        return None
    r = _covering_rule(w, rng, view, w.head_types(view))
    if r is None:
        return None
    w.views[view].append(r)
    return view


def _drop_source(w: Workload, rng: random.Random, view: str) -> str | None:
    if len(w.views[view]) < 2:
        return None
    w.views[view].pop(rng.randrange(len(w.views[view])))
    return view


def _add_correspondence(w: Workload, rng: random.Random, view: str) -> str | None:
    r = rng.choice(w.views[view])
    vt = w.var_types(r)
    spots = [(p, a) for p, a in enumerate(r.head) if not a.startswith('"') and vt[a] != DEFAULT]
    if not spots:
        return None
    p, x = rng.choice(spots)
    cands = [(s, i) for s in w.current.values() for i, t in enumerate(w.types[s]) if t == vt[x] and len(w.types[s]) > 1]
    if not cands:
        return None
    s, i = rng.choice(cands)
    j = rng.choice([c for c in range(len(w.types[s])) if c != i])
    tag = w.fresh("B")
    args = tuple(x if c == i else f"{tag}_{c}" for c in range(len(w.types[s])))
    head = r.head[:p] + (args[j],) + r.head[p + 1 :]
    return _replace_rule(w, view, r, replace(r, name=w.fresh("m"), head=head, body=r.body + ((s, args),)))


def _drop_correspondence(w: Workload, rng: random.Random, view: str) -> str | None:
    r = rng.choice(w.views[view])
    if len(r.body) < 2:
        return None
    options = []
    for p, x in enumerate(r.head):
        for ai, (_, a_args) in enumerate(r.body):
            if x not in a_args:
                continue
            for y in set(a_args) - {x}:
                if y.startswith('"'):
                    continue
                for bi, (_, b_args) in enumerate(r.body):
                    if bi != ai and y in b_args:
                        for z in set(b_args) - set(r.head) - {y}:
                            if not z.startswith('"'):
                                options.append((p, ai, z))
    rng.shuffle(options)
    for p, ai, z in options:
        head = r.head[:p] + (z,) + r.head[p + 1 :]
        body = r.body[:ai] + r.body[ai + 1 :]
        bound = {a for _, args in body for a in args}
        # the rest must stay one join: a body split in two is a cross product (at 30k rows per
        # source, 900M rows), which no mapping author writes
        if _connected(body) and all(h.startswith('"') or h in bound for h in head):
            return _replace_rule(w, view, r, replace(r, name=w.fresh("m"), head=head, body=body))
    return None


def _connected(body: tuple[tuple[str, tuple[str, ...]], ...]) -> bool:
    """Whether the atoms of ``body`` form one join graph (atoms linked by a shared variable)."""
    if not body:
        return True
    names = [{a for a in args if not a.startswith('"')} for _, args in body]
    reached, frontier = {0}, [0]
    while frontier:
        i = frontier.pop()
        for j, vs in enumerate(names):
            if j not in reached and vs & names[i]:
                reached.add(j)
                frontier.append(j)
    return len(reached) == len(body)


def _add_view_column(w: Workload, rng: random.Random, view: str) -> str | None:
    rules = w.views[view]
    p = rng.randint(0, len(rules[0].head))
    new = []
    for r in rules:
        free = sorted({a for _, args in r.body for a in args if not a.startswith('"')} - set(r.head))
        if not free:
            return None
        new.append(replace(r, name=w.fresh("m"), head=r.head[:p] + (rng.choice(free),) + r.head[p:]))
    w.views[view] = new
    return view


def _drop_view_column(w: Workload, rng: random.Random, view: str) -> str | None:
    rules = w.views[view]
    if len(rules[0].head) < 2:
        return None
    p = rng.randrange(len(rules[0].head))
    w.views[view] = [replace(r, name=w.fresh("m"), head=r.head[:p] + r.head[p + 1 :]) for r in rules]
    return view


_VIEW_CHANGES = {
    "add source": _add_source, "drop source": _drop_source,
    "add correspondence": _add_correspondence, "drop correspondence": _drop_correspondence,
    "add view column": _add_view_column, "drop view column": _drop_view_column,
}


def apply_change(w: Workload, rng: random.Random, kind: str | None = None) -> Workload:
    """``w`` after one random change (of ``kind``, else drawn from :data:`MIX`); ``w`` is kept."""
    kinds, weights = list(MIX), list(MIX.values())
    for _ in range(200):
        k = kind or rng.choices(kinds, weights)[0]
        out = w.copy()
        if k in _VIEW_CHANGES:
            touched = _VIEW_CHANGES[k](out, rng, rng.choice(sorted(out.views)))
        else:
            touched = _column_change(out, rng, k)
        if touched is not None:
            out.changes.append((k, touched))
            return out
    raise ValueError(f"no change of kind {kind!r} applies to this program")


def changed(w: Workload, n: int, seed: int, kind: str | None = None) -> Workload:
    """``w`` after ``n`` random changes drawn with ``seed`` (the new program P′)."""
    rng = random.Random(f"mapping-change-seq:{seed}:{n}:{kind}")
    for _ in range(n):
        w = apply_change(w, rng, kind)
    return w


def _value(seed: int, entry: int, attr: int, pool: int) -> int:
    return entry if attr == 0 else hash64(hash64(seed * 0x100000001B3 + entry) ^ (attr * 0x2545F4914F6CDD1D)) % pool


def source_data(w: Workload, rows: int, seed: int = 0) -> dict[str, dict[tuple[int, ...], int]]:
    """Each base source's Z-relation: ``rows`` entries sampled from a pool of ``2·rows``."""
    pool = max(2 * rows, 1)
    out = {}
    for i, s in enumerate(w.sources):
        rng = random.Random(f"mapping-data:{seed}:{s}")
        entries = rng.sample(range(pool), min(rows, pool))
        data: dict[tuple[int, ...], int] = {}
        for e in entries:
            t = tuple(_value(seed, e, a, pool) for a in w.types[s])
            data[t] = data.get(t, 0) + 1
        out[s] = data
    return out


def data_updates(w: Workload, data: dict[str, dict[tuple[int, ...], int]], updates: int, seed: int = 0) -> dict[str, dict[tuple[int, ...], int]]:
    """``updates`` operations per source as Z-relations: half deletions of present rows (−1),
    half insertions of entries of the pool the source lacks (+1)."""
    out = {}
    for s in w.sources:
        rows = data[s]
        pool = max(2 * len(rows), 1)
        rng = random.Random(f"mapping-updates:{seed}:{s}")
        present = sorted(rows)
        gone = rng.sample(present, min(updates // 2, len(present)))
        keys = {t[0] for t in present}
        fresh = [e for e in rng.sample(range(pool), min(pool, 4 * updates + 8)) if e not in keys][: updates - len(gone)]
        delta: dict[tuple[int, ...], int] = {t: -1 for t in gone}
        for e in fresh:
            t = tuple(_value(seed, e, a, pool) for a in w.types[s])
            delta[t] = delta.get(t, 0) + 1
        out[s] = delta
    return out
