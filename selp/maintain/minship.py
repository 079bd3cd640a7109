"""Distributed absorption provenance [LTZIL10]: the paper's nodes, its placement of tuples and
rules, and the MinShip operator -- the part of the Spark form (:mod:`selp.maintain.spark`) that
runs inside one partition, in plain Python so it can also be driven in-process.

**Placement.** There are ``n`` nodes. Every tuple lives at the node its *first value* hashes to
(``link(src, dst, ...)`` at ``src``; a stable CRC32 of the value, the same in every process). A
rule runs at the node of its *location*, the first value of its *anchor* atom: the body atom
that leaves fewest other atoms without the location (those are replicated to every node), among
those an atom of the rule's own recursive component, else the first -- for
``reachable(s, d) :- link(s, z, _), reachable(z, d)`` that is ``z``, where ``reachable(z, d)``
lives, so ``link`` is shipped to its ``dst`` and the new ``reachable(s, d)`` back to ``s``, as in
the paper. Every other body atom must be present at that node: an atom holding the location
variable at position ``p > 0`` reads a *replica* of its relation partitioned on ``p`` (alias
``rel@p``; its owner ships each tuple to the node ``f[p]`` hashes to), at position 0 it reads the
owned tuples, and without it a replica held by every node (``rel@*``). We chose this over a
user-written location specifier (NDlog's ``@``): selp programs have none, and the anchor rule
reproduces the paper's plan for its queries.

**Messages** are ``(dest, src, kind, name, fact, formula)``: ``kind`` is ``base+`` (a base tuple
arriving at its owner with its variable), ``kill`` (variables set to false: a base deletion, sent
by the driver to the deleted tuple's owner and forwarded from there) or ``ins`` (a derivation, to
the owner of its head, or a replica, with its formula as minimal monomials). A round delivers
every message; a node first applies the kills (restricting every formula it holds, forwarding the
kill to every node it has *shipped* a formula mentioning one of the variables to), then the
insertions, and runs its rules to a local fixpoint: a derivation whose head lives here is
absorbed at once, others are shipped. The rounds end when no message is in flight.

**MinShip** (per destination and tuple): ``off`` ships every derivation that is not absorbed;
``eager`` ships the first at once and buffers the later ones, flushed at the end of each round
(the paper flushes every second); ``lazy`` keeps the buffer until the shipped part's formula
becomes false after a deletion, and only then sends the still-true alternatives. It is exact:
what a node holds of a tuple is a disjunct of the tuple's formula (so it is false when that is
false), and whenever what was shipped becomes false while the sender still has a true
derivation, that derivation is shipped -- by induction on derivation trees, every derivable tuple
ends with a true formula at its owner. Only *existence* is exact on the receiving side: a
received formula may miss absorbed-later or buffered monomials, never has a false one.

**Formulas** are those of an algebra of :mod:`selp.maintain.algebra`: minimal monomial sets
(every runner), or BDDs when every node runs in this process and shares one CUDD manager
(``run_local``: a BDD does not leave its manager's process). A formula that gained is shipped
whole for BDDs (``new``, not ``new ∧ ¬old``: what a node holds stays a monotone disjunct of the
tuple's formula, which is what the exactness argument below needs); kills are bit sets of
variables in either case.

Only positive programs (no negation, no aggregates; every rule reading some relation) are
distributed; the others are refused where the maintainer is built.
"""

from __future__ import annotations

import dataclasses
import zlib
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator

from selp.engines.joins import BodyPlan
from selp.engines.local import FactStore
from selp.errors import SelpError
from selp.language.ast import Atom, Rule
from selp.language.validate import Analysis
from selp.maintain import formula as pb
from selp.maintain.algebra import Monomials
from selp.maintain.program import Fact, ViewChanges, kind, positive_positions

MODES = ("eager", "lazy", "off")
Message = tuple[int, int, str, str, Fact, Any]  # dest, src, kind, name, fact, formula (kill: [bit set])


def place(value: Any, n: int) -> int:
    """The node a tuple whose first value is ``value`` lives at (stable across processes)."""
    return zlib.crc32(repr(value).encode()) % n


@dataclass
class Localized:
    """A positive program placed on the nodes (see the module docstring)."""

    rules: list[Rule]  # body atoms renamed to the aliases they read
    anchors: dict[Rule, int]  # the program's own rules -> their anchor atom
    aliases: dict[str, tuple[str, int | None]]  # alias -> (relation, position; None: everywhere)
    replicas: dict[str, list[tuple[str, int | None]]]  # relation -> its aliases
    idb: frozenset[str]
    cap: int = pb.DEFAULT_CAP
    plans: dict[tuple[int, int], tuple[BodyPlan, Any, list]] = field(default_factory=dict, repr=False)
    alg: Any = None  # the formulas' algebra (None: monomial sets under ``cap``)

    def __post_init__(self) -> None:
        if self.alg is None:
            self.alg = Monomials(self.cap)

    def plan(self, r: int, driver: int) -> tuple[BodyPlan, Any, list]:
        """Rule ``r``'s join plan with body atom ``driver`` reading the delta (cached)."""
        got = self.plans.get((r, driver))
        if got is None:
            rule = self.rules[r]
            plan = BodyPlan(rule, driver)
            atoms = [(i, rule.body[i].relation, plan.atom_builder(i)) for i in positive_positions(rule)]  # type: ignore[union-attr]
            got = self.plans[(r, driver)] = (plan, plan.head_builder(), atoms)
        return got

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "plans": {}}  # plans hold closures: rebuilt where they run

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        if self.alg is None:  # placed before the algebra was a field: monomial sets
            self.alg = Monomials(self.cap)


def localize(analysis: Analysis, cap: int = pb.DEFAULT_CAP) -> Localized:
    """Place ``analysis``'s rules on the nodes, or a one-line error for a program that is not
    positive (negation and aggregates are maintained in one process only)."""
    aggregated = analysis.program.aggregated()
    for comp in analysis.components:
        k = kind(comp, aggregated)
        if k != "positive":
            what = {"recompute": "negation", "aggregate": "an aggregate", "selective": "min/max through recursion"}[k]
            raise SelpError(f"--engine spark maintains positive programs only; {', '.join(sorted(comp.relations))} uses {what} (use --engine reference)")
    rules, aliases, replicas, anchors = [], {}, {}, {}
    for comp in analysis.components:
        for rule in comp.rules:
            pos = positive_positions(rule)
            if not pos:
                raise SelpError(f"--engine spark: rule {rule.name} reads no relation; such rules are maintained in one process only (use --engine reference)")
            anchor = min(pos, key=lambda a: _cost(rule, pos, a, comp.relations))
            anchors[rule] = anchor
            loc = rule.body[anchor].args[0]  # type: ignore[union-attr]
            body = list(rule.body)
            for j in pos:
                if j == anchor:
                    continue
                atom: Atom = rule.body[j]  # type: ignore[assignment]
                at = next((p for p, t in enumerate(atom.args) if t == loc), None)
                if at == 0:
                    continue
                alias = f"{atom.relation}@{'*' if at is None else at}"
                if alias not in aliases:
                    aliases[alias] = (atom.relation, at)
                    replicas.setdefault(atom.relation, []).append((alias, at))
                body[j] = dataclasses.replace(atom, relation=alias)
            rules.append(dataclasses.replace(rule, body=tuple(body)))
    return Localized(rules, anchors, aliases, replicas, frozenset(analysis.idb), cap)


def _cost(rule: Rule, pos: list[int], a: int, component: Iterable[str]) -> tuple[int, int, int]:
    """How good body atom ``a`` is as the anchor: fewest atoms replicated everywhere, then an
    atom of the rule's own component (the paper's plan), then the first."""
    loc = rule.body[a].args[0]  # type: ignore[union-attr]
    everywhere = sum(1 for j in pos if j != a and loc not in rule.body[j].args)  # type: ignore[union-attr]
    return everywhere, 0 if rule.body[a].relation in component else 1, a  # type: ignore[union-attr]


def _or(alg: Any, old: Any | None, new: Any) -> tuple[Any, Any | None]:
    """``(old ∨ new, what it gained or None)``; for BDDs the gain is ``new`` itself (monotone,
    see the module docstring), for monomial sets the monomials of ``new`` not absorbed."""
    form, gained = alg.disj(old, new)
    if gained is None or isinstance(alg, Monomials):
        return form, gained
    return form, new


def _bits(kills: int) -> list[int]:
    """The variables of a kill's bit set."""
    out, v = [], 0
    while kills:
        if kills & 1:
            out.append(v)
        kills >>= 1
        v += 1
    return out


class Node:
    """One node's state: the tuples it owns and the replicas it holds, with their formulas, the
    derivations it made for heads owned elsewhere, and MinShip's shipped and buffered parts."""

    def __init__(self, node: int, n: int) -> None:
        self.id, self.n = node, n
        self.forms: dict[str, dict[Fact, Any]] = {}  # relation or alias -> tuple -> formula
        self.stores: dict[str, FactStore] = {}
        self.out: dict[tuple[str, Fact], Any] = {}  # heads owned elsewhere -> derived here
        self.sent: dict[tuple[int, str, Fact], Any] = {}
        self.buffer: dict[tuple[int, str, Fact], Any] = {}
        self.dead = 0  # every variable killed so far (variables are never reused)
        self.mode = "off"  # MinShip's, set by each round
        self.changes = ViewChanges()  # of the owned derived tuples, since the driver last read them

    # -- one round ---------------------------------------------------------------------------
    def step(self, msgs: Iterable[Message], prog: Localized, mode: str) -> list[Message]:
        """Deliver one round's messages; returns the messages this node sends."""
        self.mode = mode
        outbox: list[Message] = []
        # in one order whoever delivers them (Spark's groups are unordered): which derivation
        # MinShip forwards first, and so what is shipped, is then the same on every runner
        msgs = sorted(msgs, key=lambda m: (m[1], m[2], m[3], repr(m[4]), m[5] if isinstance(m[5], list) else 0))
        kills = 0
        for m in msgs:
            if m[2] == "kill":
                kills |= m[5][0]
        if kills:
            self._kill(kills, prog, outbox)
        alg = prog.alg
        dead = alg.killer(_bits(self.dead)) if self.dead else None
        delta: dict[str, dict[Fact, Any]] = {}
        for _, _, k, name, fact, form in msgs:
            if k == "kill":
                continue
            live = alg.restrict(form, dead) if self.dead else form
            if live is not None:
                self._receive(name, fact, live, prog, delta, outbox)
        while delta:
            fresh: dict[str, dict[Fact, Any]] = {}
            for rel, fact, form in self._derive(delta, prog):
                owner = place(fact[0], self.n)
                if owner == self.id:
                    self._receive(rel, fact, form, prog, fresh, outbox)
                else:
                    merged, gained = _or(alg, self.out.get((rel, fact)), form)
                    if gained is not None:
                        self.out[(rel, fact)] = merged
                        self._ship(owner, rel, fact, gained, mode, outbox, prog)
            delta = fresh
        if mode == "eager":
            for key, form in self.buffer.items():
                outbox.append((key[0], self.id, "ins", key[1], key[2], form))
                self.sent[key] = _or(alg, self.sent.get(key), form)[0]
            self.buffer.clear()
        return outbox

    def _receive(self, name: str, fact: Fact, form: Any, prog: Localized, delta: dict, outbox: list[Message]) -> None:
        """OR ``form`` into what this node holds of ``fact`` under ``name`` (an owned relation
        or an alias); what it gained joins ``delta`` and, for an owned tuple, its replicas."""
        table = self.forms.setdefault(name, {})
        old = table.get(fact)
        merged, gained = _or(prog.alg, old, form)
        if gained is None:
            return
        table[fact] = merged
        if old is None:
            self.stores.setdefault(name, FactStore()).add_all((fact,))
            if name in prog.idb:
                self.changes.add(name, fact)
        d = delta.setdefault(name, {})
        d[fact] = _or(prog.alg, d.get(fact), gained)[0]
        if name in prog.aliases:
            return
        for alias, at in prog.replicas.get(name, ()):
            dests = range(self.n) if at is None else (place(fact[at], self.n),)
            for dest in dests:
                if dest == self.id:
                    self._receive(alias, fact, gained, prog, delta, outbox)
                else:
                    self._ship(dest, alias, fact, gained, self.mode, outbox, prog)

    def _ship(self, dest: int, name: str, fact: Fact, gained: Any, mode: str, outbox: list[Message], prog: Localized) -> None:
        """MinShip: the first derivation goes at once; later ones are buffered (``off``: sent)."""
        key = (dest, name, fact)
        if mode == "off" or key not in self.sent:
            self.sent[key] = _or(prog.alg, self.sent.get(key), gained)[0]
            outbox.append((dest, self.id, "ins", name, fact, gained))
        else:
            self.buffer[key] = _or(prog.alg, self.buffer.get(key), gained)[0]

    def _kill(self, kills: int, prog: Localized, outbox: list[Message]) -> None:
        """Set the variables of ``kills`` false everywhere; forward the kill to every node this
        one shipped a formula mentioning them to; re-ship what a deletion left unshipped."""
        self.dead |= kills
        alg = prog.alg
        killed = set(_bits(kills))
        if isinstance(alg, Monomials):
            dests = {key[0] for key, form in self.sent.items() if any(m & kills for m in form)}
        else:
            dests = set()  # a BDD's support is a pass over it: once per destination found
            for key, form in self.sent.items():
                if key[0] not in dests and killed.intersection(alg.support(form)):
                    dests.add(key[0])
        for dest in sorted(dests):
            outbox.append((dest, self.id, "kill", "", (), [kills]))
        kill = alg.killer(killed)
        for name, table in self.forms.items():
            gone = _restrict_all(alg, table, kill)
            if gone:
                self.stores[name].discard_all(gone)
                if name in prog.idb:
                    for f in gone:
                        self.changes.remove(name, f)
        _restrict_all(alg, self.out, kill)
        _restrict_all(alg, self.buffer, kill)
        emptied = _restrict_all(alg, self.sent, kill)
        for key in emptied:  # what was shipped is false: send what this node still has
            dest, name, fact = key
            self.buffer.pop(key, None)
            source = self.forms.get(prog.aliases[name][0], {}).get(fact) if name in prog.aliases else self.out.get((name, fact))
            if source is not None:
                self.sent[key] = source
                outbox.append((dest, self.id, "ins", name, fact, source))

    def _derive(self, delta: dict[str, dict[Fact, Any]], prog: Localized) -> Iterator[tuple[str, Fact, Any]]:
        """Every derivation using a new monomial of ``delta`` at one positive atom: (head
        relation, head, formula); collected before any is applied."""
        out = []
        for r, rule in enumerate(prog.rules):
            for i in positive_positions(rule):
                d = delta.get(rule.body[i].relation)  # type: ignore[union-attr]
                if d:
                    plan, head, atoms = prog.plan(r, i)
                    for env in _bindings(plan, FactStore(d), self.stores):
                        parts = [d[build(env)] if j == i else self.forms[rel][build(env)] for j, rel, build in atoms]
                        out.append((rule.head.relation, head(env), prog.alg.conj(parts)))
        return iter(out)

    def owned(self, idb: Iterable[str]) -> dict[str, set[Fact]]:
        """The derived tuples this node owns."""
        return {rel: set(self.forms.get(rel, {})) for rel in idb}

    def provenance_bytes(self, idb: Iterable[str], alg: Any = None) -> tuple[int, int]:
        """(bytes of the owned derived tuples' formulas, their number)."""
        tables = [self.forms.get(rel, {}) for rel in idb]
        nbytes = alg.nbytes if alg is not None else pb.stored_bytes
        return sum(nbytes(f) for t in tables for f in t.values()), sum(len(t) for t in tables)


_EMPTY = FactStore()


def _bindings(plan: BodyPlan, dstore: FactStore, stores: dict[str, FactStore]) -> Iterator[list[Any]]:
    """The join's bindings with the driving atom reading ``dstore`` (no negation to test)."""

    def lookup(src: str, rel: str, p: tuple[int, ...], k: tuple) -> Iterable[Fact]:
        return dstore.lookup(p, k) if src == "delta" else stores.get(rel, _EMPTY).lookup(p, k)

    return plan.bindings(lookup, lambda *a: False)


def _restrict_all(alg: Any, table: dict[Any, Any], kill: Any) -> list[Any]:
    """Set the variables of ``kill`` (``alg.killer``'s) false in every formula of ``table``;
    drop and return the keys whose formula became false."""
    gone = []
    for key in [k for k, form in table.items() if alg.mentions(form, kill)]:
        rest = alg.restrict(table[key], kill)
        if rest is not None:
            table[key] = rest
        else:
            del table[key]
            gone.append(key)
    return gone


def message_bytes(msg: Message, alg: Any = None) -> int:
    """A shipped message's payload: its fact's values as text plus its formula as stored
    (monomial sets: :func:`selp.maintain.formula.stored_bytes`; a BDD: its node count times a
    12-byte node record, :attr:`selp.maintain.algebra.Bdds.NODE_BYTES`), plus the relation
    name. A kill is a bit set of variables whatever the algebra."""
    form = msg[5]
    size = pb.stored_bytes(form) if alg is None or isinstance(form, list) else alg.nbytes(form)
    return len(msg[3]) + sum(len(repr(v)) for v in msg[4]) + size
