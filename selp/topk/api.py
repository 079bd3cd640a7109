"""The Python API of top-k selective provenance, and the selPQL query form.

>>> from selp.topk.api import topk
>>> table = topk("examples/trade/trade.dl", "examples/trade/db",
...              "dealsWith(Cuba, *) // exports(Cuba, tobacco)", k=2, engine="local")
>>> [round(e.weight, 2) for e in table.answers()[("dealsWith", ("Cuba", "France"))]]
[0.4, 0.28]
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable

from selp.database import Database
from selp.errors import Location, SelpError, clip, echo
from selp.language import parse_program_file
from selp.language.pattern import Pattern, PatternNode, TreePattern
from selp.language.pattern_parser import PatternError, arg_location, check_pattern, node_location, parse_pattern
from selp.language.validate import Analysis, analyze
from selp.topk.dtable import DTable
from selp.topk.monoid import get_monoid
from selp.topk.task import K_MAX, make_task

_QUERY = re.compile(r"\s*TOP\s+(\d+)\s+(.*?)\s+RANK\s+BY\s+(\S+)\s*$", re.IGNORECASE | re.DOTALL)


@dataclass(frozen=True)
class Query:
    """``TOP k PATTERN RANK BY MONOID``."""

    k: int
    pattern_text: str
    monoid: str
    pattern_offset: int  # where the pattern starts in the query text (for error columns)


def parse_query(text: str) -> Query:
    """Split a selPQL query; the pattern itself is parsed by :func:`parse_query_pattern`."""
    m = _QUERY.match(text)
    if m is None:
        raise SelpError(f"query: expected 'TOP <k> <pattern> RANK BY <monoid>', got {echo(text)}")
    digits = m.group(1)
    # compare lengths before int(): it refuses more than 4300 digits (k >= 1 is the CLI's check)
    too_long = len(digits.lstrip("0")) > len(str(K_MAX))
    if too_long or int(digits) > K_MAX:
        raise SelpError(f"TOP {clip(digits, 40)} is too large: at most {K_MAX} trees per fact", Location("query", 1, m.start(1) + 1))
    return Query(int(digits), m.group(2), m.group(3), m.start(2))


def parse_query_pattern(q: Query) -> Pattern:
    """The query's pattern, with errors located in the query text."""
    try:
        return parse_pattern(q.pattern_text)
    except PatternError as err:
        loc = err.location
        if loc is not None and loc.line == 1:
            raise PatternError(err.message, Location("query", 1, (loc.column or 1) + q.pattern_offset)) from None
        raise


def parse_fact_filter(text: str) -> PatternNode:
    """``dealsWith(Cuba, France)`` or ``dealsWith(Cuba, *)``: a single pattern node."""
    try:
        p = parse_pattern(text)
    except PatternError as err:
        loc = err.location or Location()
        raise PatternError(err.message, Location("fact", loc.line, loc.column)) from None
    if not isinstance(p, TreePattern) or p.root.children:
        raise SelpError(f"fact: expected one atom like dealsWith(Cuba, France), got {echo(text)}")
    return p.root


def _as_fact(loc: Location) -> Location:
    return Location("fact", loc.line, loc.column)


def check_fact_filter(node: PatternNode, arities: dict[str, int], types: dict[str, tuple[str, ...]], owner: str = "the program") -> None:
    """Refuse a ``--fact`` label that can only be a mistake, as a pattern's root is refused: a
    relation (without ``*``) that ``owner`` does not have, the wrong number of arguments, or a
    constant of the wrong type (str/int) for its column. Located ``fact:LINE:COL``."""
    rel = node.relation
    if "*" in rel:
        return  # a glob may legitimately match nothing
    if rel not in arities:
        raise PatternError(f"unknown relation {rel}: {owner} has no relation of that name", _as_fact(node_location(node)))
    if node.args is None:
        return
    if len(node.args) != arities[rel]:
        raise PatternError(f"{rel} has {arities[rel]} argument(s) but the fact gives {len(node.args)}", _as_fact(node_location(node)))
    col_types = types.get(rel)
    for i, a in enumerate(node.args):
        if a is None or col_types is None or isinstance(a, bool) or not isinstance(a, (int, str)):
            continue  # a wildcard, or a Skolem value (the API's), which any column may hold
        kind = "int" if isinstance(a, int) else "str"
        if kind != col_types[i]:
            raise PatternError(f"constant {echo(a) if isinstance(a, str) else a} has type {kind} but column {i + 1} of {rel} is {col_types[i]}", _as_fact(arg_location(node, i)))


def check_saved_fact_filter(node: PatternNode, table: DTable) -> None:
    """:func:`check_fact_filter` against a saved DTable: the relations of P it knows (its P_p
    relations by their origin), as ``topk`` has them."""
    types = {table.relation_origin.get(r, r): t for r, t in table.types.items()}
    check_fact_filter(node, {r: len(t) for r, t in types.items()}, types, "the saved DTable")


def progress_text(*args: Any) -> str:
    """One progress report of :func:`topk` as words: the engines report ``(round, changed,
    entries)`` (Spark), ``(step,)`` (embedded) or ``(entries so far,)`` (reference)."""
    if len(args) == 3:
        return f"round {args[0]}: {args[1]} changed, {args[2]} entries"
    if isinstance(args[0], str):
        return args[0]
    return f"{args[0]} entries"


def topk(
    program: str | Analysis,
    db_dir: str | Database | None,
    pattern: str | Pattern | None,
    k: int = 3,
    monoid: str = "confidence",
    engine: str = "embedded",
    algorithm: str = "heuristic",
    spark: Any = None,
    progress: Callable | None = None,
    warn: Callable[[str], None] = lambda msg: None,
    fact: PatternNode | None = None,
    goal_directed: bool = True,
) -> DTable:
    """The DTable of the k best derivations matching ``pattern`` (None: every derivation).

    ``engine`` is a registered engine name (:mod:`selp.engines.registry`); with ``spark``,
    ``spark`` is a SparkSession and the whole DTable is collected to the driver (use
    :func:`selp.topk.spark.run_topk_spark` directly to keep it distributed). ``fact`` (a single
    pattern node such as ``dealsWith(Cuba, *)``) says which answers are wanted; on the embedded
    engine, constants in it -- or at the pattern's root -- make the evaluation goal-directed
    (only what can contribute to those facts is computed), and the DTable then holds those
    answers only. ``db_dir`` may also be the EDB facts already in Python (a
    :class:`~selp.database.Database`). What differs per engine is behind
    :meth:`selp.engines.base.Engine.open_topk`.
    """
    from selp.engines.registry import get_engine

    eng = get_engine(engine)
    analysis = analyze(parse_program_file(program)) if isinstance(program, str) else program
    m = get_monoid(monoid)
    text = pattern if isinstance(pattern, str) else None
    parsed = parse_pattern(pattern) if isinstance(pattern, str) else pattern
    data = eng.open_topk(analysis, db_dir, m, spark, warn)  # loading, types and warnings: the engine's
    try:
        types = data.types
        if parsed is not None:
            for w in check_pattern(parsed, analysis, types):
                warn(w)
        if fact is not None:
            check_fact_filter(fact, analysis.arities, types)
        task = make_task(analysis, types, m, k, parsed, text)
    except BaseException:
        data.close()
        raise
    bound = fact if fact is not None else (parsed.root if isinstance(parsed, TreePattern) else None)
    return data.run(task, bound, algorithm, progress, warn, goal_directed)
