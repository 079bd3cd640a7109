"""What the pages of ``selp serve`` compute, run in worker processes (:mod:`selp.serve.jobs`).

Each function is the library call its CLI command makes -- :func:`selp.topk.api.topk` as
``selp query``/``explain``, an engine's ``run`` as ``selp eval``, :func:`selp.cdss.explain.explain`
as ``selp cdss explain``, an engine's ``proql`` as ``selp proql`` -- and returns plain data the
server renders. ``progress`` takes one line of text. User errors are raised as
:class:`~selp.errors.SelpError` and shown as a 4xx with their location.
"""

from __future__ import annotations

import time
from typing import Any, Callable

Progress = Callable[[str], None]


def _spark(engine: str, master: str | None, conf: dict[str, str]) -> Any:
    """The Spark session of a Spark engine (started in the worker), else None."""
    from selp.engines.registry import get_engine

    if not get_engine(engine).needs_spark_session:
        return None
    from selp.engines.spark_session import start_spark

    return start_spark(master, conf, None)


def ask(program: str, db_dir: str | None, engine: str, master: str | None, conf: dict[str, str], mode: str, text: str,
        fact_text: str | None, k: int, monoid: str, *, progress: Progress) -> dict[str, Any]:
    """The answers of the Ask page: ``mode`` ``query`` (``text`` a selPQL query; ``k`` and
    ``monoid`` are the query's) or ``fact`` (``text`` a fact to explain), optionally only the
    facts carrying ``fact_text``. What ``selp query``/``selp explain`` compute."""
    from selp.language import parse_program_file
    from selp.language.pattern import TreePattern
    from selp.language.validate import analyze
    from selp.topk.api import parse_fact_filter, parse_query, parse_query_pattern, progress_text, topk
    from selp.topk.trees import answers, iter_json, render_dot, to_json

    t0 = time.perf_counter()
    analysis = analyze(parse_program_file(program))
    if mode == "query":
        q = parse_query(text)
        pattern: Any = parse_query_pattern(q)
        pattern_text, k, monoid = q.pattern_text, q.k, q.monoid
    else:
        pattern, pattern_text = TreePattern(parse_fact_filter(text)), text
    fact_filter = parse_fact_filter(fact_text) if fact_text else None
    warnings: list[str] = []
    report = lambda *args: progress(f"top-k {progress_text(*args)} ({time.perf_counter() - t0:.1f}s)")  # noqa: E731
    table = topk(analysis, db_dir, pattern, k, monoid, engine, "heuristic", _spark(engine, master, conf), report, warnings.append, fact=fact_filter)
    progress("drawing the trees")
    results = answers(table, fact_filter)
    table.pattern = pattern_text
    return {"k": k, "monoid": table.monoid, "pattern": pattern_text, "answers": drawn(results), "warnings": warnings,
            "engine": engine, "seconds": time.perf_counter() - t0,
            "json": "".join(iter_json(to_json(table, results), 2)) + "\n", "dot": render_dot(results)}


def drawn(results: list[Any]) -> list[dict[str, Any]]:
    """Answers as the pages show them: each fact's text and its trees as (displayed weight,
    SVG). Drawn here, in the worker, so that what goes back to the server is flat text (a tree
    thousands of levels deep cannot be pickled; every walk that draws it is iterative)."""
    from selp.topk.monoid import format_weight
    from selp.topk.svg import render_tree_svg
    from selp.topk.trees import fact_text

    return [{"fact": fact_text(a.relation, a.args), "trees": [(format_weight(w), render_tree_svg(t)) for w, t in a.trees]} for a in results]


def evaluate(program: str, db_dir: str | None, engine: str, master: str | None, conf: dict[str, str], *, progress: Progress) -> dict[str, Any]:
    """The size of every relation (EDB: the data; IDB: after evaluation, as ``selp eval``
    counts them), the column types inferred with the data (as ``selp check --db``) and the plan
    lines of the recursive components."""
    from selp.database import load_database
    from selp.engines.local import progress_line
    from selp.engines.registry import get_engine
    from selp.engines.result import plan_line, plan_of
    from selp.language import parse_program_file
    from selp.language.validate import analyze

    t0 = time.perf_counter()
    analysis = analyze(parse_program_file(program))
    db = load_database(analysis, db_dir)
    sizes = {rel: len(rows) for rel, rows in db.facts.items() if rel in analysis.edb}

    def report(comp: Any, iteration: int, delta: int, total: int) -> None:
        progress(progress_line(comp, iteration, delta, total, time.perf_counter() - t0).strip())

    result = get_engine(engine).run(analysis, db_dir, report, _spark(engine, master, conf))
    sizes.update({rel: result.count(rel) for rel in result.relations()})
    plan = [plan_line(step) for step in plan_of(result) if step["mode"] != "one pass"]
    return {"sizes": sizes, "types": {rel: list(t) for rel, t in db.types.items()}, "plan": plan,
            "warnings": list(db.warnings) + list(result.warnings), "engine": engine, "seconds": time.perf_counter() - t0}


def cdss_tuple(directory: str, peer: str, fact: str, k: int, monoid: str, engine: str, master: str | None, *, progress: Progress) -> dict[str, Any]:
    """A tuple of ``peer``'s view: its provenance-graph neighbourhood in the epoch the peer
    reflects (None before its first exchange) and its top-k derivations by ``peer``'s trust, as
    ``selp cdss explain`` computes them."""
    from selp.cdss.explain import explain, parse_fact, render_text
    from selp.cdss.store import Store
    from selp.serve.neighbourhood import neighbourhood
    from selp.topk.monoid import format_weight
    from selp.topk.svg import render_tree_svg
    from selp.topk.trees import Node

    with Store.open(directory) as s:
        s.check_peer(peer)
        ref, args = parse_fact(s.compiled, fact)
        progress("reading the provenance graph")
        around = neighbourhood(s, peer, ref, args)
        progress("ranking the derivations")
        e = explain(s, peer, fact, k, monoid, engine, _spark(engine, master, {}))
        epoch = s.peer_epoch(peer)
        stale = epoch is not None and s.exchange(epoch).publication < e.publication

        def as_node(step: Any) -> Node:
            # the CDSS step as a tree node: its mapping is the rule, local data a leaf
            done: dict[int, Node] = {}
            stack = [(step, False)]
            while stack:
                st, expanded = stack.pop()
                if not expanded and st.children:
                    stack.append((st, True))
                    stack.extend((c, False) for c in reversed(st.children))
                    continue
                rule = None if st.how == "local" else st.mapping
                done[id(st)] = Node(s.cdss.display_name(st.relation), st.args, rule, st.weight, tuple(done[id(c)] for c in st.children))
            return done[id(step)]

        return {"text": render_text(s, e), "trees": [(format_weight(w), render_tree_svg(as_node(t))) for w, t in e.trees],
                "why_not": e.why_not, "threshold": e.threshold, "stale": stale, "neighbourhood": around, "title": f"{s.cdss.display_name(ref)}"}


def cdss_proql(directory: str, text: str, peer: str | None, engine: str, master: str | None, *, progress: Progress) -> dict[str, Any]:
    """A ProQL query's bindings with their semiring values, as ``selp proql`` prints them."""
    from selp.cdss.proql.render import render_dot
    from selp.engines.registry import get_engine

    progress("evaluating the query")
    r, _ = get_engine(engine).proql(directory, text, peer=peer, spark=_spark(engine, master, {}), graph=True)
    return {
        "columns": [f"${c}" for c in r.columns] + [f"{r.semiring.name.lower()}(${c})" for c in r.columns],
        "rows": [[str(n) for n in row] + [r.value(n) for n in row] for row in r.rows],
        "dot": render_dot(r), "epoch": r.epoch, "semiring": r.semiring.name,
    }
