"""The rewrite rules of [GI12] over queries (Z-linear combinations of interned CQs).

* **unfold** replaces an atom of a defined relation by each rule of its definition;
* **cancel** is addition of coefficients (:func:`selp.adapt.rules.add`);
* **fold with remainder** replaces CQs that embed one rule of a view ``v`` by
  ``q :- v(θ·head), C`` and subtracts the unfolding of what was added, so the other rules of
  ``v`` remain as negative rules: ``p + k·X − k·unfold(X)``. Plain folding is the case where
  every rule of ``v`` is matched (the remainder cancels away). Each step is Z-equivalent by
  construction: ``X`` and ``unfold(X)`` denote the same Z-relation while ``v`` holds its
  definition. Augmentation alone (adding ``X − X``) is never produced: a fold is kept only when
  the CQ it was built from cancels.
"""

from __future__ import annotations

import itertools
from collections import Counter
from typing import Iterator, Mapping

from selp.adapt.rules import CQ, Query, add, make_cq, query_key, term_vars, walk
from selp.language.ast import SkolemTerm, Term, Var

Defs = Mapping[str, Query]
_fresh = itertools.count()


def _apart(cq: CQ) -> tuple[tuple[Term, ...], list, list]:
    """The parts of ``cq`` with its variables renamed to fresh ones."""
    n = next(_fresh)
    s = {v: Var(f"U{n}_{v.name}") for v in cq.vars()}
    head = tuple(walk(t, s) for t in cq.head)
    body = [(r, tuple(walk(t, s) for t in args)) for r, args in cq.body]
    neq = [(walk(a, s), walk(b, s)) for a, b in cq.unequal]
    return head, body, neq


def unfold_parts(head, body: list, neq: list, i: int, defn: Query) -> Query:
    """The query of CQ parts ``(head, body, neq)`` with body atom ``i`` unfolded by ``defn``."""
    out: Query = {}
    rel, args = body[i]
    rest = body[:i] + body[i + 1 :]
    for d, k in defn.items():
        dh, db, dn = _apart(d)
        out = add(out, make_cq(head, rest + db, list(zip(args, dh)), neq + dn), k)
    return out


# CQs an unfolding may form: a view over n atoms of a view of r rules unfolds into r^n CQs, so
# a few stacked unions multiply fast, and each CQ formed is canonicalised (milliseconds for a
# CQ of nine atoms: 3,000 of them took 28 s) -- enumerating them hung the search. Past it the
# view is not unfolded: it is recomputed, and is no folding target (selp.adapt.adapt)
UNFOLD_LIMIT = 2_000


class TooLarge(Exception):
    """An unfolding formed more than :data:`UNFOLD_LIMIT` CQs."""


def unfold(q: Query, defs: Defs, limit: int | None = None) -> Query:
    """``q`` with every atom of a relation in ``defs`` unfolded, repeatedly (defs are
    non-recursive), then cancelled. Raises :class:`TooLarge` once it has formed more than
    ``limit`` CQs (default :data:`UNFOLD_LIMIT`)."""
    cap = UNFOLD_LIMIT if limit is None else limit
    out: Query = {}
    work = list(q.items())
    formed = 0
    while work:
        cq, k = work.pop()
        i = next((n for n, (r, _) in enumerate(cq.body) if r in defs), None)
        if i is None:
            out = add(out, cq, k)
            continue
        formed += len(defs[cq.body[i][0]])
        if formed > cap:
            raise TooLarge(f"unfolding past {cap} conjunctive queries")
        for d, m in unfold_parts(cq.head, list(cq.body), list(cq.unequal), i, defs[cq.body[i][0]]).items():
            work.append((d, k * m))
    return out


MATCH_STEPS = 20_000  # atom pairs tried per (CQ, view rule): embeddings are n!/(n-m)! at worst


def _match(pattern: list, target: list, s: dict, used: set[int], budget: list[int]) -> Iterator[tuple[dict, frozenset[int]]]:
    """Embeddings of pattern atoms into distinct target atoms: substitutions of the pattern's
    variables (one-way matching: target terms are fixed). ``budget`` ([steps left], shared by
    the whole enumeration): once spent, no further embedding is looked for -- a CQ with many
    atoms of one relation has factorially many, and a fold not found only leaves the search a
    plan fewer (recomputation remains), where enumerating them all hung the search."""
    if not pattern:
        yield s, frozenset(used)
        return
    (rel, args), rest = pattern[0], pattern[1:]
    for j, (trel, targs) in enumerate(target):
        if budget[0] <= 0:
            return
        budget[0] -= 1
        if j in used or trel != rel or len(targs) != len(args):
            continue
        s2 = dict(s)
        if all(_bind(a, t, s2) for a, t in zip(args, targs)):
            yield from _match(rest, target, s2, used | {j}, budget)


def _bind(p: Term, t: Term, s: dict) -> bool:
    if isinstance(p, Var):
        if p in s:
            return s[p] == t
        s[p] = t
        return True
    if isinstance(p, SkolemTerm):
        return isinstance(t, SkolemTerm) and t.fn == p.fn and len(t.args) == len(p.args) and all(_bind(a, b, s) for a, b in zip(p.args, t.args))
    return p == t


_EXECUTABLE: dict[CQ, bool] = {}


def executable(cq: CQ) -> bool:
    """Whether an engine can run ``cq``: every variable occurs as a whole argument of a body
    atom (a variable only inside a Skolem argument would need the value taken apart).
    Memoised on the interned CQ (every plan the search keeps is asked)."""
    hit = _EXECUTABLE.get(cq)
    if hit is None:
        if len(_EXECUTABLE) >= MAX_PIECES:
            _EXECUTABLE.clear()
        plain = {t for _, args in cq.body for t in args if isinstance(t, Var)}
        hit = _EXECUTABLE[cq] = cq.vars() <= plain
    return hit


def folds(q: Query, view: str, defn: Query, limit: int = 64) -> Iterator[Query]:
    """Fold-with-remainder rewritings of ``q`` with the view ``view`` defined by ``defn`` (over
    the same relations as ``q``'s atoms), at most ``limit``."""
    n = 0
    dkey = query_key(defn)
    for cq, a in sorted(q.items(), key=lambda x: x[0].key):
        for b, x, remainder in _fold_pieces(cq, view, defn, dkey):
            if a % b:
                continue
            k = a // b
            new = add(q, x, k)
            for u, m in remainder.items():
                new = add(new, u, -k * m)
            if cq in new and new[cq] == a:
                continue  # the CQ did not cancel: this would be augmentation alone
            yield new
            n += 1
            if n >= limit:
                return


_PIECES: dict[tuple, list[tuple[int, CQ, Query]]] = {}
MAX_PIECES = 200_000  # memo entries kept (a search meets the same CQ/view pairs again and again)


def _fold_pieces(cq: CQ, view: str, defn: Query, dkey: tuple) -> list[tuple[int, CQ, Query]]:
    """The ways one CQ folds into ``view``: ``(b, X, unfold(X))`` per embedding of a rule of
    coefficient ``b``, where ``X`` is ``view(θ·head)`` joined with the CQ's unmatched atoms.
    Memoised: CQs are interned, so a pair met again in the search (or the next view's search)
    costs a lookup, not a matching and an unfolding."""
    memo_key = (cq, view, dkey)
    hit = _PIECES.get(memo_key)
    if hit is not None:
        return hit
    out: list[tuple[int, CQ, Query]] = []
    cq_rels = Counter(r for r, _ in cq.body)
    for d, b in sorted(defn.items(), key=lambda x: x[0].key):
        rels = Counter(r for r, _ in d.body)
        # a body embeds only into a CQ holding its relations (with multiplicity): a cheap
        # filter before matching, since most views share no relation with most CQs
        if not d.body or any(cq_rels[r] < k for r, k in rels.items()):
            continue
        existential = d.vars() - {v for t in d.head for v in term_vars(t)}
        seen: set[str] = set()
        for theta, used in _match(list(d.body), list(cq.body), {}, set(), [MATCH_STEPS]):
            context = [atom for j, atom in enumerate(cq.body) if j not in used]
            # the view's '!=' constraints must be the CQ's too (else the CQ would not cancel);
            # they move into the view, the others stay in the context
            mapped = [(_sub(x, theta), _sub(y, theta)) for x, y in d.unequal]
            if not all((x, y) in cq.unequal or (y, x) in cq.unequal for x, y in mapped):
                continue
            inside = set(mapped) | {(y, x) for x, y in mapped}
            neq = [pair for pair in cq.unequal if pair not in inside]
            if not _existentials_private(theta, existential, cq.head, context, neq):
                continue
            parts_body = [(view, tuple(_sub(t, theta) for t in d.head))] + context
            x = make_cq(cq.head, parts_body, (), neq)
            if x is None or x.key in seen:
                continue
            seen.add(x.key)
            out.append((b, x, unfold_parts(cq.head, parts_body, neq, 0, defn)))
    if len(_PIECES) >= MAX_PIECES:
        _PIECES.clear()
    _PIECES[memo_key] = out
    return out


def _sub(t: Term, theta: Mapping[Var, Term]) -> Term:
    if isinstance(t, Var):
        return theta.get(t, t)
    if isinstance(t, SkolemTerm):
        return SkolemTerm(t.fn, tuple(_sub(a, theta) for a in t.args))
    return t


def _existentials_private(theta: Mapping[Var, Term], existential: set[Var], head: tuple[Term, ...], context: list, neq: list) -> bool:
    """The view's projected-away variables must map to distinct variables of ``cq`` that occur
    nowhere outside the matched atoms (else folding would lose a join)."""
    images = [theta[v] for v in existential]
    if any(not isinstance(t, Var) for t in images) or len(set(images)) != len(images):
        return False
    outside: set[Var] = set()
    for t in head:
        outside.update(term_vars(t))
    for _, args in context:
        for t in args:
            outside.update(term_vars(t))
    for a, b in neq:
        outside.update(term_vars(a))
        outside.update(term_vars(b))
    kept = {v for w, t in theta.items() if w not in existential for v in term_vars(t)}
    return not (set(images) & (outside | kept))  # type: ignore[arg-type]
