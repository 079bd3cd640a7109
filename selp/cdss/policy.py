"""Deleting a tuple at a peer other than its origin: update policies of bidirectional mappings
([Kar09] §5.3.2–5.3.3, PropagatePeerDeletions and PropagatePeerDeletionsWithoutSideEffects).

A ``*`` on an atom of a ``<->`` mapping is its *update policy*: deleting a tuple on one side
deletes the starred tuples of the other side that, with it, match the mapping. The **update policy
program** (:func:`policy_program`) has, for each direction ``m_fwd``/``m_bwd`` (body = the side
where the deletion happens, head = the side with the stars), each body atom ``D`` and each starred
head atom ``A``::

    A_del(...) :- D_del(...), <the other body atoms>, <the head atoms>      (over the instance, R_o)
    R_del(x) :- R_req(x).                 R_ldel(x) :- R_del(x), R_l(x).

Its least fixpoint is ``Y'-`` (``R_del``: the requested deletions and every cascade of the policies)
and the local contributions to delete, ``Δ-`` (``R_ldel``).

Decision (the dissertation's rules are terse): its rule 2, ``U-(n, c) :- B-(i, n), U(n, c)``,
omits the other body atom ``S(i, c)``; read literally, deleting ``B(i, n)`` would delete every
``U(n, _)``, also those no match of the mapping with ``B(i, n)`` produces. selp joins the whole
match ("the tuples it can be derived from", in the text's words); Example 18 gives the same result
either way.

**PropagatePeerDeletions** then removes ``Δ-`` from the local contributions and computes the new
canonical universal solution (maintenance and recomputation give the same state; selp recomputes
on the chosen engine, and exchange later writes that state as an epoch). The deletions beyond
``Y'-`` are the **side effects** (Definition 5.3.2).

**Without side effects**, for the peers whose administrator avoids them (``side_effects =
"avoid"`` in ``[peers.P]``, or the caller's choice): the side effects on their relations are
traced back to the local contributions in their **lineage** (every local tuple used by some
derivation: the derivation-testing program of [Kar09] §5.2, backwards over the ``P_m`` tables,
:func:`lineage_program`), those are *kept back* from ``Δ-``, and the rest is applied. As in the
dissertation this is conservative: a requested deletion may not be performed. A derivation step
the owner distrusts still counts in the lineage (the ``P_m`` rows record what the mappings
derive, not what trust let through), so more may be kept back, never less. One pass suffices:
deleting a subset of ``Δ-`` deletes a subset of what ``Δ-`` deleted, and every derivation of an
avoided side effect keeps all its leaves.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

from selp.cdss.compile import CompiledCDSS
from selp.cdss.errors import CdssError
from selp.cdss.model import MappingAtom, RelationRef
from selp.cdss.recompute import add_threshold_rejections, compute_from_scratch
from selp.engines.registry import get_engine
from selp.errors import SelpError
from selp.language.ast import Atom, Decl, Program, Rule, SkolemTerm, Term, Var
from selp.language.validate import analyze
from selp.values import Value

Row = tuple[Value, ...]
Rows = dict[RelationRef, set[Row]]
SIDE_EFFECTS = ("tolerate", "avoid")
REASONS_LIMIT = 10  # side effects traced one by one to say why each deletion is kept back
BASE_KINDS = ("l", "r")  # the EDB of the compiled program (R_x is recomputed from them)


def _name(compiled: CompiledCDSS, ref: RelationRef, kind: str) -> str:
    # the program's own kinds (R_o, R_l) and this module's (R_del, ...) share the base name
    return f"{compiled.names.base(ref)}_{kind}"


def _atom(compiled: CompiledCDSS, a: MappingAtom, kind: str) -> Atom:
    return Atom(_name(compiled, a.relation, kind), a.args)


def _decls(compiled: CompiledCDSS, kinds: Iterable[str]) -> list[Decl]:
    return [
        Decl(_name(compiled, r.ref, k), tuple((a.name, a.type) for a in r.attributes))
        for r in compiled.cdss.relations()
        for k in kinds
    ]


def _seed_and_collect(compiled: CompiledCDSS, seed: str, closure: str, local: str) -> list[Rule]:
    """For every relation ``closure(x) :- seed(x)`` and ``local(x) :- closure(x), R_l(x)``: the
    closure starts from the given tuples, and the local contributions among it are collected."""
    rules = []
    for r in compiled.cdss.relations():
        x = tuple(Var(f"x{i}") for i in range(r.arity))
        name = lambda kind: _name(compiled, r.ref, kind)  # noqa: E731
        rules.append(Rule(f"{name(seed)}_{closure}", Atom(name(closure), x), (Atom(name(seed), x),)))
        rules.append(Rule(name(local), Atom(name(local), x), (Atom(name(closure), x), Atom(name("l"), x))))
    return rules


def policy_program(compiled: CompiledCDSS) -> Program:
    """The update policy program of every ``<->`` mapping (module docstring): inputs ``R_o``
    (the instance), ``R_l`` and ``R_req`` (the requested deletions); outputs ``R_del`` (``Y'-``)
    and ``R_ldel`` (``Δ-``)."""
    rules = _seed_and_collect(compiled, "req", "del", "ldel")
    for m in compiled.cdss.mappings:
        for j, a in enumerate(m.head):
            if not (m.head_policy and m.head_policy[j]):
                continue
            for k, d in enumerate(m.body):
                others = [_atom(compiled, b, "o") for i, b in enumerate(m.body) if i != k]
                body = (_atom(compiled, d, "del"), *others, *(_atom(compiled, h, "o") for h in m.head))
                rules.append(Rule(f"{m.name}_policy_{k + 1}_{j + 1}", _atom(compiled, a, "del"), body))
    decls = _decls(compiled, ("o", "l", "req", "del", "ldel"))
    return Program(tuple(decls), tuple(rules))


def lineage_program(compiled: CompiledCDSS) -> Program:
    """Backwards over the provenance: input ``R_seed`` (tuples of the instance), ``R_l`` and every
    ``P_m``; output ``R_leaf``, the local contributions some derivation of a seed uses."""
    decls = _decls(compiled, ("l", "seed", "lin", "leaf"))
    rules = _seed_and_collect(compiled, "seed", "lin", "leaf")
    for m in compiled.cdss.mappings:
        prov = compiled.names.provenance(m.name)
        bvars = tuple(m.body_vars)
        types: dict[Var, str] = {}
        for a in m.body:
            for t, attr in zip(a.args, compiled.cdss.relation(a.relation).attributes):
                if isinstance(t, Var):
                    types.setdefault(t, attr.type)
        decls.append(Decl(prov, tuple((v.name, types[v]) for v in bvars)))
        lin = f"{prov}_lin"
        decls.append(Decl(lin, tuple((v.name, types[v]) for v in bvars)))
        skolem = {z: SkolemTerm(compiled.names.skolem(m.name, z), tuple(m.frontier)) for z in m.existentials}
        for j, a in enumerate(m.head):
            rel = compiled.cdss.relation(a.relation)
            # the head tuple each P_m row produces, beside the row (Skolem terms only in heads)
            out = f"{prov}_head{j + 1}"
            decls.append(Decl(out, tuple((f"h{i}", at.type) for i, at in enumerate(rel.attributes))
                              + tuple((v.name, types[v]) for v in bvars)))
            terms: tuple[Term, ...] = tuple(skolem.get(t, t) if isinstance(t, Var) else t for t in a.args)
            rules.append(Rule(out, Atom(out, terms + bvars), (Atom(prov, bvars),)))
            w = tuple(Var(f"h{i}") for i in range(rel.arity))
            rules.append(Rule(f"{lin}_{j + 1}", Atom(lin, bvars),
                              (Atom(out, w + bvars), Atom(_name(compiled, a.relation, "lin"), w))))
        for k, b in enumerate(m.body):
            rules.append(Rule(f"{lin}_body{k + 1}", _atom(compiled, b, "lin"), (Atom(lin, bvars),)))
    return Program(tuple(decls), tuple(rules))


def run_program(engine: str, program: Program, facts: Mapping[str, Iterable[Row]], outputs: Iterable[str], spark: Any = None) -> dict[str, set[Row]]:
    """Evaluate ``program`` over ``facts`` on ``engine``; the rows of each of ``outputs``."""
    eng = _engine(engine)
    res = eng.compute(analyze(program), {k: set(v) for k, v in facts.items()}, None, spark, None)
    try:
        return {o: res.rows(o) for o in outputs}
    finally:
        res.close()


def _engine(engine: str) -> Any:
    try:
        return get_engine(engine)
    except SelpError as err:
        raise CdssError(err.message) from None


def recompute(compiled: CompiledCDSS, base: Mapping[str, set[Row]], engine: str, spark: Any = None) -> dict[str, set[Row]]:
    """Every relation of the compiled program from the base data ``R_l``/``R_r`` (thresholds'
    ``R_x`` recomputed as exchange does): the canonical universal solution."""
    eng = _engine(engine)
    edb = {k: set(v) for k, v in base.items()}
    add_threshold_rejections(eng, compiled, edb, spark)
    res = compute_from_scratch(eng, compiled, edb, spark=spark)
    try:
        return {rel: res.rows(rel) for rel in res.relations()} | {k: v for k, v in edb.items() if k not in res.relations()}
    finally:
        res.close()


@dataclass
class Propagation:
    """The outcome of a peer deletion: every set is per peer relation."""

    requested: Rows  # Y-
    policy: Rows  # Y'-: the requested deletions and the policies' cascades
    local: Rows  # Δ- as the policies give it (local contributions to delete)
    kept_back: Rows  # the part of Δ- not applied: it is in the lineage of an avoided side effect
    applied: Rows  # Δ- minus kept_back: what is deleted from the local contributions
    avoided: Rows  # side effects the keeping back prevents (on peers that avoid them)
    side_effects: Rows  # deletions beyond Y'- that happen (on peers that tolerate them)
    deleted: Rows  # J - J': everything the instance loses
    not_performed: Rows  # requested tuples still in the new instance
    state: dict[str, set[Row]] = field(repr=False)  # the new consistent state (every relation)
    # why a tuple is kept back: the avoided side effects whose lineage holds it (computed per
    # side effect when there are at most REASONS_LIMIT of them, else empty)
    reasons: dict[tuple[RelationRef, Row], list[tuple[RelationRef, Row]]] = field(default_factory=dict)


def _by_ref(compiled: CompiledCDSS, kind: str, rows: Mapping[str, set[Row]]) -> Rows:
    return {r.ref: set(rows.get(_name(compiled, r.ref, kind), set())) for r in compiled.cdss.relations()}


def _deleted(compiled: CompiledCDSS, old: Mapping[str, set[Row]], new: Mapping[str, set[Row]]) -> Rows:
    return {ref: old.get(rel, set()) - new.get(rel, set()) for ref, rel in compiled.output_relations().items()}


def propagate_peer_deletions(
    compiled: CompiledCDSS,
    state: Mapping[str, set[Row]],
    requested: Rows,
    engine: str,
    *,
    avoid: Iterable[str] = (),
    spark: Any = None,
) -> Propagation:
    """PropagatePeerDeletions, or ...WithoutSideEffects for the peers in ``avoid`` (module
    docstring). ``state`` is a consistent state (every relation of ``compiled``'s program, as
    exchange stores it); ``requested`` tuples must be in the instance. Nothing is written: the
    returned :class:`Propagation` holds the new state."""
    cdss = compiled.cdss
    avoid = set(avoid)
    for ref, rows in requested.items():
        missing = rows - state.get(compiled.names.relation(ref, "o"), set())
        if missing:
            shown = ", ".join(sorted(f"{cdss.display_name(ref)}{_show(t)}" for t in missing))
            raise CdssError(f"cannot delete {shown}: not in the instance")
    facts: dict[str, set[Row]] = {}
    for r in cdss.relations():
        facts[_name(compiled, r.ref, "o")] = set(state.get(_name(compiled, r.ref, "o"), set()))
        facts[_name(compiled, r.ref, "l")] = set(state.get(_name(compiled, r.ref, "l"), set()))
        facts[_name(compiled, r.ref, "req")] = set(requested.get(r.ref, set()))
    outs = [_name(compiled, r.ref, k) for r in cdss.relations() for k in ("del", "ldel")]
    got = run_program(engine, policy_program(compiled), facts, outs, spark)
    policy, local = _by_ref(compiled, "del", got), _by_ref(compiled, "ldel", got)

    base = {rel: set(rows) for rel, rows in state.items() if rel.rsplit("_", 1)[-1] in BASE_KINDS
            and rel in {_name(compiled, r.ref, k) for r in cdss.relations() for k in BASE_KINDS}}

    def without(deletions: Rows) -> dict[str, set[Row]]:
        b = {k: set(v) for k, v in base.items()}
        for ref, rows in deletions.items():
            b[_name(compiled, ref, "l")] -= rows
        return recompute(compiled, b, engine, spark)

    new = without(local)
    deleted = _deleted(compiled, state, new)
    kept: Rows = {ref: set() for ref in local}
    avoided: Rows = {ref: set() for ref in local}
    reasons: dict[tuple[RelationRef, Row], list[tuple[RelationRef, Row]]] = {}
    se = {ref: deleted[ref] - policy[ref] for ref in deleted}
    if avoid and any(se[ref] for ref in se if ref.peer in avoid):
        avoided = {ref: (se[ref] if ref.peer in avoid else set()) for ref in se}
        facts = {_name(compiled, r.ref, "l"): set(state.get(_name(compiled, r.ref, "l"), set())) for r in cdss.relations()}
        for r in cdss.relations():
            facts[_name(compiled, r.ref, "seed")] = avoided[r.ref]
        for m in cdss.mappings:
            facts[compiled.names.provenance(m.name)] = set(state.get(compiled.names.provenance(m.name), set()))
        program = lineage_program(compiled)
        leaf_names = [_name(compiled, r.ref, "leaf") for r in cdss.relations()]
        lineage = _by_ref(compiled, "leaf", run_program(engine, program, facts, leaf_names, spark))
        kept = {ref: local[ref] & lineage[ref] for ref in local}
        seeds = [(ref, t) for ref, rows in avoided.items() for t in sorted(rows, key=repr)]
        if len(seeds) <= REASONS_LIMIT:
            for sref, t in seeds:
                one = dict(facts)
                for r in cdss.relations():
                    one[_name(compiled, r.ref, "seed")] = {t} if r.ref == sref else set()
                mine = _by_ref(compiled, "leaf", run_program(engine, program, one, leaf_names, spark))
                for ref in kept:
                    for leaf in kept[ref] & mine[ref]:
                        reasons.setdefault((ref, leaf), []).append((sref, t))
        applied = {ref: local[ref] - kept[ref] for ref in local}
        new = without(applied)
        deleted = _deleted(compiled, state, new)
    applied = {ref: local[ref] - kept[ref] for ref in local}
    side_effects = {ref: deleted[ref] - policy[ref] for ref in deleted}
    not_performed = {ref: rows & new.get(compiled.names.relation(ref, "o"), set()) for ref, rows in requested.items()}
    return Propagation(
        {ref: set(requested.get(ref, set())) for ref in local}, policy, local, kept, applied, avoided,
        side_effects, deleted, not_performed, new, reasons,
    )


def _show(row: Row) -> str:
    from selp.values import display_value

    return f"({', '.join(display_value(v) for v in row)})"


def avoiding_peers(compiled: CompiledCDSS) -> list[str]:
    """The peers whose administrators avoid side effects (``side_effects = "avoid"``)."""
    return [p.name for p in compiled.cdss.peers if p.side_effects == "avoid"]


__all__ = [
    "Propagation", "SIDE_EFFECTS", "avoiding_peers", "lineage_program", "policy_program",
    "propagate_peer_deletions", "recompute", "run_program",
]
