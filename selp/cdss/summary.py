"""The one-line summary of a CDSS that ``selp cdss check`` prints: peers, relations, mappings,
trust conditions and the size of the compiled program."""

from __future__ import annotations

from pathlib import Path

from selp.cdss.compile import compile_cdss
from selp.cdss.config import load_cdss


def summarize_cdss(directory: str | Path) -> str:
    """Load and check ``directory/cdss.toml`` (raising on any mistake), compile it, and
    summarise it in one line."""
    c = load_cdss(directory)
    compiled = compile_cdss(c)
    rels = len(c.relations())
    conds = sum(len(p.policy.rules) for p in c.peers)
    ranked = sum(1 for p in c.peers if p.policy.ranked is not None)
    existential = sum(1 for m in c.mappings if m.existentials)
    pairs = len({m.pair for m in c.mappings if m.pair})
    # a `<->` mapping counts once, and its two tgds are said
    written = len(c.mappings) - pairs
    policies = len({m.pair for m in c.mappings if any(m.head_policy)})
    bidir = ""
    if pairs:
        with_policies = f" ({policies} with update policies)" if policies else ""
        bidir = f", {pairs} bidirectional{with_policies}, {len(c.mappings)} tgd(s)"
    return (
        f"{c.source}: ok: {len(c.peers)} peer(s), {rels} relation(s), {written} mapping(s){bidir}"
        f" ({existential} with existential variables; weakly acyclic), {conds} trust condition(s),"
        f" {ranked} ranked-trust polic{'y' if ranked == 1 else 'ies'};"
        f" compiles to {len(compiled.program.rules)} rules"
    )
