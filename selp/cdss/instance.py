"""A relation of a peer's instance as of its last exchange, or the certain answers of a query
over it: what ``selp cdss query`` prints."""

from __future__ import annotations

from dataclasses import dataclass

from typing import Any

from selp.cdss.errors import CdssError
from selp.cdss.evaluate import is_certain
from selp.cdss.store import Row, Store
from selp.database import sorted_rows
from selp.errors import SelpError
from selp.language.ast import Atom, Program, Rule, Var


@dataclass(frozen=True)
class PeerRelation:
    """The tuples of one relation in a peer's instance, sorted."""

    title: str  # PEER.R for a peer relation, else the compiled program's name (B_l, P_m4, ...)
    columns: list[str]
    rows: list[Row]
    epoch: int
    publication: int  # the publication that epoch reflects


def read_peer_relation(store: Store, peer: str, relation: str, with_nulls: bool = False) -> PeerRelation | None:
    """``relation`` in ``peer``'s instance as of its last exchange, or None when the peer has
    never exchanged. ``relation`` is a peer relation (``B`` or ``PBioSQL.B``: its output
    instance) or any relation of the compiled program. Certain answers only (no tuple holding
    a labeled null) unless ``with_nulls``."""
    epoch = store.peer_epoch(peer)
    if epoch is None:
        return None
    names = {d.relation for d in store.compiled.program.decls}
    if relation in names:
        internal, title = relation, relation
    else:
        ref = store.cdss.find_relation(relation)
        internal, title = store.compiled.names.relation(ref, "o"), f"{ref.peer}.{ref.name}"
    info = store.exchange(epoch)
    rows = store.read_epoch(epoch, [internal])[internal]
    if not with_nulls:
        rows = {r for r in rows if is_certain(r)}
    columns = [c for c, _ in store.columns(internal)]
    return PeerRelation(title, columns, sorted_rows(rows), epoch, info.publication)


def is_query(text: str) -> bool:
    """True when ``selp cdss query``'s argument is a rule (``ans(x) :- U(x, z)``), not a name."""
    return ":-" in text


def read_peer_query(store: Store, peer: str, text: str, engine: str, with_nulls: bool = False, spark: Any = None) -> PeerRelation | None:
    """The answers of one selp rule over ``peer``'s instance as of its last exchange, or None
    when the peer has never exchanged. Body atoms name peer relations (``U``; ``PEER_U`` or any
    relation of the compiled program, such as ``B_l`` or ``P_m4``, also work); labeled nulls
    join as values (equal Skolem terms are the same null), and answers holding one are dropped
    unless ``with_nulls``: the *certain answers* of the query ([Kar09] §3.1.1)."""
    from selp.cdss.policy import run_program
    from selp.language import parse_program

    epoch = store.peer_epoch(peer)
    if epoch is None:
        return None
    text = text.strip()
    try:
        # the final '.' of a selp rule is optional on the command line
        program = parse_program(text if text.endswith(".") else text + ".", "query")
    except SelpError as err:
        raise CdssError(str(err)) from None
    if len(program.rules) != 1 or program.facts or program.decls:
        raise CdssError(f"query {text.strip()!r}: write one rule, e.g. 'ans(x, y) :- U(x, z), U(y, z)'")
    rule = program.rules[0]
    declared = {d.relation: d for d in store.compiled.program.decls}
    used: dict[str, str] = {}

    def internal(name: str) -> str:
        if name in declared:
            return name
        return store.compiled.names.relation(store.cdss.find_relation(name, "query: relation"), "o")

    body = []
    for lit in rule.body:
        if isinstance(lit, Atom):
            used[lit.relation] = internal(lit.relation)
            lit = Atom(used[lit.relation], lit.args, lit.negated, lit.loc)
        body.append(lit)
    if rule.head.relation in used or rule.head.relation in used.values():
        raise CdssError(f"query: the head {rule.head.relation} must name a new relation, not one it reads")
    query = Program(tuple(declared[r] for r in dict.fromkeys(used.values())), (Rule(rule.name, rule.head, tuple(body)),))
    info = store.exchange(epoch)
    facts = store.read_epoch(epoch, list(dict.fromkeys(used.values())))
    rows = run_program(engine, query, facts, [rule.head.relation], spark)[rule.head.relation]
    if not with_nulls:
        rows = {r for r in rows if is_certain(r)}
    columns = [a.name if isinstance(a, Var) else f"c{i + 1}" for i, a in enumerate(rule.head.args)]
    return PeerRelation(rule.head.relation, columns, sorted_rows(rows), epoch, info.publication)


__all__ = ["PeerRelation", "is_query", "read_peer_query", "read_peer_relation"]
