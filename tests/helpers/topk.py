"""Weighted random top-k cases: rule and fact weights per monoid, a case's database written to
files, and rankings compared across engines."""

from __future__ import annotations

import csv
import dataclasses
from pathlib import Path

from hypothesis import strategies as st

from helpers.patterns import random_patterns
from selp.language import parse_program
from selp.language.printer import format_program
from selp.language.validate import analyze
from selp.values import format_value

# the weights drawn per monoid (rules, facts; None: no weight)
RULE_WEIGHTS = {"confidence": ["0.5", "0.6"], "cost": ["1", "2"], "size": [None],
                "min-confidence": ["0.5", "0.7", "0.9", "1"], "access": ["T", "S", "C", "U"]}
FACT_WEIGHTS = {"confidence": ["0.8", "1"], "cost": ["0", "0.5"], "size": [None],
                "min-confidence": ["0.4", "0.8", "1"], "access": ["S", "C", "U"]}


def ranking(answers: dict, sizes: bool) -> dict:
    """Weights (and tree sizes, which are exact for strictly monotone monoids) per fact."""
    return {
        fact: [(round(e.weight, 9) if isinstance(e.weight, float) else e.weight, e.size if sizes else None) for e in entries]
        for fact, entries in answers.items()
    }


def write_db(db_dir: Path, analysis, edb: dict, weights: dict) -> None:
    """One CSV per EDB relation of ``analysis`` in ``db_dir``, with a ``_weight`` column."""
    for rel in sorted(analysis.edb):
        with open(db_dir / f"{rel}.csv", "w", newline="", encoding="utf-8") as fh:
            w = csv.writer(fh)
            w.writerow([f"c{i + 1}" for i in range(analysis.arities[rel])] + ["_weight"])
            for fact in sorted(edb.get(rel, ()), key=repr):
                w.writerow([format_value(v) if not isinstance(v, str) else v for v in fact] + [weights.get(rel, {}).get(fact, "")])


def weighted_case(tmp_path_factory, case, data) -> tuple:
    """A random program with drawn rule and fact weights for a drawn monoid, its database written
    to files, and a drawn pattern (or None): (analysis, db_dir, monoid, pattern)."""
    text, edb = case
    monoid = data.draw(st.sampled_from(sorted(RULE_WEIGHTS)))
    program = parse_program(text)
    rules = tuple(dataclasses.replace(r, weight=data.draw(st.sampled_from(RULE_WEIGHTS[monoid])), named=True) for r in program.rules)
    analysis = analyze(parse_program(format_program(dataclasses.replace(program, rules=rules))))
    weights = {rel: {f: data.draw(st.sampled_from(FACT_WEIGHTS[monoid])) for f in sorted(facts, key=repr)} for rel, facts in edb.items()}
    weights = {rel: {f: w for f, w in ws.items() if w is not None} for rel, ws in weights.items()}
    db_dir = tmp_path_factory.mktemp("db")
    write_db(db_dir, analysis, edb, weights)
    constants = sorted({v for facts in edb.values() for f in facts for v in f}, key=repr)[:6]
    pattern = data.draw(st.none() | random_patterns(analysis.arities, constants, sorted(analysis.idb)))
    return analysis, db_dir, monoid, pattern


def checked_case(tmp_path_factory, case, data) -> tuple:
    """:func:`weighted_case` with a pattern the CLI would accept (a constant of the wrong type is
    refused there): the draw is rejected otherwise."""
    from hypothesis import reject

    from selp.database import load_database
    from selp.language.pattern_parser import PatternError, check_pattern

    analysis, db_dir, monoid, pattern = weighted_case(tmp_path_factory, case, data)
    if pattern is not None:
        try:
            check_pattern(pattern, analysis, load_database(analysis, db_dir).types)
        except PatternError:
            reject()
    return analysis, db_dir, monoid, pattern


def drawn_goal(data, table):
    """A fact filter drawn from ``table``'s answers (a fact, or a family of facts: a prefix of
    its positions bound), or None when there are no answers."""
    from selp.language.pattern import PatternNode

    facts = sorted(table.answers(), key=repr)
    if not facts:
        return None
    rel, values = data.draw(st.sampled_from(facts))
    bound = data.draw(st.integers(1, max(1, len(values))))
    return PatternNode(rel, tuple(v if i < bound else None for i, v in enumerate(values)) if values else ())


def edge_db(tmp_path: Path, edges: list, program: str, weights: dict | None = None) -> tuple[str, str]:
    """``tmp_path/p.dl`` holding ``program`` and ``tmp_path/db`` an ``edge`` relation (weight 0.5
    unless ``weights`` gives one per edge); returns their paths."""
    (tmp_path / "db").mkdir()
    w = weights or {}
    (tmp_path / "db" / "edge.csv").write_text(
        "c1,c2,_weight\n" + "".join(f"{a},{b},{w.get((a, b), 0.5)}\n" for a, b in edges), encoding="utf-8")
    (tmp_path / "p.dl").write_text(program, encoding="utf-8")
    return str(tmp_path / "p.dl"), str(tmp_path / "db")


def embedded_both_ways(monkeypatch, module, other: str, prog: str, db: str, pattern: str, k: int, **kw) -> tuple:
    """The embedded DTable with the default ``FORM_INSTANCES`` of ``module`` (selp.topk.embedded)
    and with ``other``."""
    from selp.topk.api import topk

    default = topk(prog, db, pattern, k, engine="embedded", **kw)
    monkeypatch.setattr(module, "FORM_INSTANCES", other)
    changed = topk(prog, db, pattern, k, engine="embedded", **kw)
    monkeypatch.setattr(module, "FORM_INSTANCES", "auto")
    return default, changed
