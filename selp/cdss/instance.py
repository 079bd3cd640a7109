"""A relation of a peer's instance as of its last exchange: what ``selp cdss query`` prints."""

from __future__ import annotations

from dataclasses import dataclass

from selp.cdss.evaluate import is_certain
from selp.cdss.store import Row, Store
from selp.database import sorted_rows


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
