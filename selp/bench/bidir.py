"""``selp bench bidir``: the dissertation's §6.4.7 experiment ([Kar09] Figures 6.14 and 6.15).

For each number of peers a SWISS-PROT-like CDSS is generated (:mod:`selp.gen.swissprot`, fan-in 1
on a random spanning tree, ``base`` entries per peer) and measured in memory on one engine:

* **unidirectional vs bidirectional** (Figure 6.14): the generated ``->`` mappings, and the same
  mappings turned into ``<->`` ones with every atom starred (each direction's missing variables
  declared existential on its own side), each evaluated from empty instances: the total instance
  size (tuples of every peer's ``R_o``) and the time of the exchange;
* **deletion policies** (Figure 6.15): on the bidirectional CDSS, ``delete_fraction`` (10%) of
  every peer's base entries are requested for deletion at their peer (all of the entry's tuples
  in the peer's instance) and propagated by :func:`selp.cdss.policy.propagate_peer_deletions`,
  *tolerating* side effects (PropagatePeerDeletions) and *avoiding* them at every peer
  (...WithoutSideEffects). ``policy_s`` is the update-policy program alone (the dissertation's
  "applying the update policy"); ``seconds`` the whole propagation (policy, side-effect detection
  and forward propagation).

*Decisions:* every peer gets peer 0's generated schema (the thesis's "integer dataset": the same
schema everywhere, different data per peer). With different schemas a ``<->`` mapping invents
values in both directions and the generated CDSSs are in general not weakly acyclic (selp refuses
them at load: a null could feed its own creation). The thesis converts each unidirectional mapping to a bidirectional one without saying
which atoms carry an update policy; starring every atom is the case where deletions spread
furthest, so side-effect detection has the most to do.
"""

from __future__ import annotations

import random
import time
from pathlib import Path
from typing import Any, Callable

from selp.gen.swissprot import (
    UNIVERSAL,
    GenRelation,
    SwissProtCDSS,
    full_mapping,
    generate,
)
from selp.outfile import write_text

COLUMNS = ("peers", "mappings", "direction", "op", "side_effects", "seconds", "policy_s", "instance", "requested", "deleted", "kept_back")
Say = Callable[[str], None]


def same_schema(g: SwissProtCDSS) -> SwissProtCDSS:
    """``g`` with peer 0's relations at every peer and its mappings rewritten over them."""
    g.relations = [[GenRelation(f"R{p}_{j}", r.attrs) for j, r in enumerate(g.relations[0])] for p in range(g.peers)]
    g.mappings = [full_mapping(g, m.source, m.target) for m in g.mappings]
    return g


def bidirectional_toml(g: SwissProtCDSS) -> str:
    """``g``'s cdss.toml with every mapping ``s -> t`` written as ``s <-> t``, all atoms starred."""
    var = {a: ("k" if a == 0 else UNIVERSAL[a]) for a in range(len(UNIVERSAL))}
    texts = []
    for m in g.mappings:
        body, heads = g.relations[m.source], g.relations[m.target]
        left, right = {a for r in body for a in r.attrs}, {a for r in heads for a in r.attrs}

        def side(rels: list, only: set[int]) -> str:
            ex = f"exists {', '.join(var[a] for a in sorted(only))}. " if only else ""
            return ex + ", ".join(f"*{r.name}({', '.join(var[a] for a in r.attrs)})" for r in rels)

        texts.append(f"{m.name}: {side(body, left - right)} <-> {side(heads, right - left)}")
    text = g.toml()
    for m, new in zip(g.mappings, texts):
        text = text.replace(f'"{m.text}"', f'"{new}"', 1)
    return text


def _exchange(toml: str, edb: dict[str, set], engine: str) -> tuple[Any, dict[str, set], float]:
    """Compile ``toml`` and compute the canonical universal solution from ``edb``."""
    from selp.cdss.compile import compile_cdss
    from selp.cdss.config import parse_cdss
    from selp.engines.registry import get_engine
    from selp.language.validate import analyze

    compiled = compile_cdss(parse_cdss(toml, "generated cdss.toml"))
    analysis = analyze(compiled.program)
    facts = {rel: set() for rel in analysis.edb} | {k: v for k, v in edb.items() if k in analysis.edb}
    t0 = time.perf_counter()
    state = {**facts, **get_engine(engine).evaluate(analysis, facts)}
    return compiled, state, time.perf_counter() - t0


def _instance(compiled: Any, state: dict[str, set]) -> int:
    return sum(len(state.get(rel, ())) for rel in compiled.output_relations().values())


def bench_bidir(peers: list[int], base: int, delete_fraction: float = 0.1, engine: str = "embedded", seed: int = 0,
                say: Say = lambda s: None) -> list[dict[str, Any]]:
    """The rows of the experiment (module docstring), one per measured run."""
    from selp.cdss.policy import policy_program, propagate_peer_deletions, run_program

    rows: list[dict[str, Any]] = []
    for n in peers:
        g = same_schema(generate(n, base, "1", "random", seed))
        edb = g.base_data()
        blank = {c: None for c in COLUMNS}
        for direction, toml in (("unidirectional", g.toml()), ("bidirectional", bidirectional_toml(g))):
            say(f"peers={n}: {direction} exchange")
            compiled, state, secs = _exchange(toml, edb, engine)
            rows.append(blank | {"peers": n, "mappings": len(g.mappings), "direction": direction, "op": "exchange",
                                 "seconds": round(secs, 4), "instance": _instance(compiled, state)})
        # deletions requested at every peer: the tuples of a tenth of its base entries
        rng = random.Random(f"bench-bidir:{seed}:{n}")
        gone = [set(rng.sample(e, round(len(e) * delete_fraction))) for e in g.entries]
        requested = {r.ref: {t for t in state[compiled.names.relation(r.ref, "o")] if t[0] in gone[int(r.ref.peer[1:])]}
                     for r in compiled.cdss.relations()}
        n_req = sum(len(v) for v in requested.values())
        name = lambda ref, kind: f"{compiled.names.base(ref)}_{kind}"  # noqa: E731  (policy.py's naming)
        facts: dict[str, set] = {}
        for r in compiled.cdss.relations():
            for kind in ("o", "l"):
                facts[name(r.ref, kind)] = set(state.get(name(r.ref, kind), set()))
            facts[name(r.ref, "req")] = requested[r.ref]
        outs = [name(r.ref, k) for r in compiled.cdss.relations() for k in ("del", "ldel")]
        t0 = time.perf_counter()
        run_program(engine, policy_program(compiled), facts, outs)
        policy_s = time.perf_counter() - t0
        for mode, avoid in (("tolerate", []), ("avoid", [p.name for p in compiled.cdss.peers])):
            say(f"peers={n}: delete {n_req} tuples, side effects: {mode}")
            t0 = time.perf_counter()
            prop = propagate_peer_deletions(compiled, state, requested, engine, avoid=avoid)
            secs = time.perf_counter() - t0
            rows.append(blank | {"peers": n, "mappings": len(g.mappings), "direction": "bidirectional", "op": "delete",
                                 "side_effects": mode, "seconds": round(secs, 4), "policy_s": round(policy_s, 4),
                                 "instance": _instance(compiled, prop.state), "requested": n_req,
                                 "deleted": sum(len(v) for v in prop.deleted.values()),
                                 "kept_back": sum(len(v) for v in prop.kept_back.values())})
    return rows


def markdown(rows: list[dict[str, Any]]) -> str:
    """The rows as a Markdown table (empty cells where a column does not apply)."""
    cell = lambda v: "" if v is None else str(v)  # noqa: E731
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join(cell(r.get(c)) for c in COLUMNS) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def plots(rows: list[dict[str, Any]], out: Path) -> list[Path]:
    """Figures 6.14 (size and time vs peers, per direction) and 6.15 (deletion time vs peers)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written = []
    fig, ax = plt.subplots(figsize=(6, 4))
    ax2 = ax.twinx()
    for d, style in (("unidirectional", "o-"), ("bidirectional", "s-")):
        rs = [r for r in rows if r["op"] == "exchange" and r["direction"] == d]
        ax.plot([r["peers"] for r in rs], [r["seconds"] for r in rs], style, label=f"{d} time")
        ax2.plot([r["peers"] for r in rs], [r["instance"] for r in rs], style, alpha=0.5, linestyle="--", label=f"{d} size")
    ax.set_xlabel("peers")
    ax.set_ylabel("seconds")
    ax2.set_ylabel("instance tuples")
    ax.legend(loc="upper left", fontsize=8)
    ax2.legend(loc="lower right", fontsize=8)
    ax.set_title("Solution size and time: unidirectional vs bidirectional")
    fig.tight_layout()
    written.append(out / "fig6_14_size_time.png")
    fig.savefig(written[-1])
    plt.close(fig)
    fig, ax = plt.subplots(figsize=(6, 4))
    for mode, style in (("tolerate", "o-"), ("avoid", "s-")):
        rs = [r for r in rows if r["op"] == "delete" and r["side_effects"] == mode]
        ax.plot([r["peers"] for r in rs], [r["seconds"] for r in rs], style, label=f"total, side effects: {mode}")
    rs = [r for r in rows if r["op"] == "delete" and r["side_effects"] == "tolerate"]
    ax.plot([r["peers"] for r in rs], [r["policy_s"] for r in rs], "^:", label="update policy")
    ax.set_xlabel("peers")
    ax.set_ylabel("seconds")
    ax.legend(fontsize=8)
    ax.set_title("Propagation time for bidirectional deletion policies")
    fig.tight_layout()
    written.append(out / "fig6_15_deletion.png")
    fig.savefig(written[-1])
    plt.close(fig)
    return written


def save(rows: list[dict[str, Any]], out_dir: str | Path, params: dict[str, Any]) -> list[Path]:
    """results.json (rows, machine, commit, date, load average, parameters), table.md and plots."""
    import json
    import os

    from selp.bench.results import write_results

    out = Path(out_dir)
    written = write_results(rows, out)
    doc = json.loads((out / "results.json").read_text(encoding="utf-8"))
    doc["load_average"] = list(os.getloadavg())
    doc["params"] = params
    write_text(out / "results.json", json.dumps(doc, indent=2) + "\n")
    write_text(out / "table.md", markdown(rows))
    return written + [out / "table.md"] + plots(rows, out)
