"""``selp cdss trust``: what ranked trust's capped min-cost fixpoint (:mod:`selp.cdss.ranked`)
decides about every import of one peer, computed by an engine in this process."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from selp.cdss.ranked import RankedProgram
from selp.engines.registry import get_engine

if TYPE_CHECKING:
    from selp.cdss.store import Store


def trust_report(store: Store, peer: str, engine: str = "embedded") -> dict[str, Any]:
    """Every tuple imported into ``peer``'s relations with its top-1 trust cost and verdict.

    Ranked trust ([Kar09] §3.5) is enforced at exchange
    (:mod:`selp.cdss.ranked`), and this report is computed by the same capped min-cost fixpoint,
    over the latest published base data: the imports listed are those derived from tuples the
    peers accepted (what exchange puts in ``R_i``), ``cost`` is the cheapest of their import
    derivations of any kind, ``trusted_cost`` the cheapest Boolean-trusted one (None: Boolean
    trust distrusts every derivation), ``within_threshold`` whether exchange accepts the tuple
    (Boolean-trusted and, when ``peer`` has a threshold, costing at most it) and ``rejected``
    whether curation rejected it. Costs are ``peer``'s own (``[peers.P.costs]``: its view of
    every source peer and mapping; unlisted ones cost 0). Computed in this process by the engine
    ``engine`` (:meth:`selp.engines.base.Engine.ranked_trust`: in DuckDB, Spark's on the driver
    since the report is read there anyway; the reference engine's in Python).
    """
    store.check_peer(peer)
    compiled = store.compiled
    ranked = store.cdss.peer(peer).policy.ranked
    threshold = ranked.threshold if ranked is not None else None
    publication = store.last_publication()
    base = store.base_data(publication)
    rp = RankedProgram(compiled, (peer,))
    mine = [(compiled.names.relation(rel.ref, "i"), compiled.names.relation(rel.ref, "t"), compiled.names.relation(rel.ref, "r"))
            for rel in store.cdss.peer(peer).relations]
    res = get_engine(engine).ranked_trust(rp, base, tuple(n for i, t, _ in mine for n in (i, t)))
    v = res.viewpoints.index(peer)
    rows = []
    for rel, (name_i, name_t, name_r) in zip(store.cdss.peer(peer).relations, mine):
        rejected = base.get(name_r, set())
        trusted = res.imports.get(name_t, {})
        for args, vec in sorted(res.imports.get(name_i, {}).items(), key=lambda kv: repr(kv[0])):
            tvec = trusted.get(args)
            tcost = tvec[v] if tvec is not None else None
            accepted = tcost is not None and (threshold is None or tcost <= threshold)
            rows.append({
                "relation": rel.name, "args": args, "cost": vec[v], "trusted": tcost is not None,
                "trusted_cost": tcost, "within_threshold": accepted, "rejected": args in rejected,
            })
    return {"peer": peer, "publication": publication, "threshold": threshold, "tuples": rows}
