"""The web application of ``selp serve``: a Starlette app whose pages show a program (or a CDSS
store) and what selp computes about it.

Pages render Jinja2 templates shipped in the package (``selp/serve/templates``, assets in
``selp/serve/static``: nothing is fetched from elsewhere). Computations that may take long run as
jobs (:mod:`selp.serve.jobs`): a page waits briefly for its job, and when the job needs longer it
shows the job's progress with a cancel button and reloads itself once the job is over.

Nothing here writes a file or runs code named by a request: requests name facts, patterns,
queries, peers and numbers, all parsed by selp's own parsers. Bad input is a 4xx page (or JSON)
with the located one-line error, never a traceback.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlencode
from typing import Any, AsyncIterator, Awaitable, Callable

from jinja2 import Environment, PackageLoader, select_autoescape
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, PlainTextResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from selp.errors import SelpError, clip, one_line
from selp.serve import work
from selp.serve.jobs import Job, Jobs
from selp.topk import K_MAX

WAIT = 1.5  # seconds a page waits for its job before showing progress instead
DATA_WAIT = 120.0  # seconds a JSON or DOT link waits before answering 202 with the job's state
MAX_PARAM = 10_000  # characters of one request parameter
_INT = re.compile(r"\s*\+?[0-9]{1,10}\s*")


@dataclass
class ServeConfig:
    """What ``selp serve`` was started on: a program with its database, or a CDSS directory."""

    program: str | None = None
    db_dir: str | None = None
    cdss_dir: str | None = None
    engine: str = "embedded"
    master: str | None = None
    conf: dict[str, str] = field(default_factory=dict)
    workers: int = 2
    page_size: int = 10  # trees per page of an answer
    # Host headers answered: on loopback only loopback names, so that a web page elsewhere cannot
    # reach the server through a DNS name rebound to 127.0.0.1
    allowed_hosts: list[str] = field(default_factory=lambda: ["*"])


class BadRequest(SelpError):
    """A request parameter is malformed (a 400)."""


_env = Environment(loader=PackageLoader("selp.serve", "templates"), autoescape=select_autoescape(["html"]))


def page(name: str, status: int = 200, **values: Any) -> HTMLResponse:
    """Render the template ``name``."""
    return HTMLResponse(_env.get_template(name).render(**values), status_code=status)


def param(request: Request, name: str, default: str = "") -> str:
    """A query parameter, refused beyond :data:`MAX_PARAM` characters."""
    value = request.query_params.get(name, default)
    if len(value) > MAX_PARAM:
        raise BadRequest(f"{name}: at most {MAX_PARAM} characters, got {len(value)}")
    return value.strip()


def int_param(request: Request, name: str, default: int, high: int = K_MAX) -> int:
    """An integer parameter from 1 to ``high``."""
    text = param(request, name, str(default)) or str(default)
    if not _INT.fullmatch(text) or not 1 <= int(text) <= high:
        raise BadRequest(f"{name}: expected an integer from 1 to {high}, got {clip(text, 40)!r}")
    return int(text)


async def settle(job: Job, seconds: float) -> Job:
    """Wait up to ``seconds`` for ``job`` to end; a snapshot of it, taken once.

    The job's thread may end it at any moment: a page that branched on a status read before
    that and rendered one read after it showed neither progress nor result. The snapshot keeps
    one page's reads consistent (its result is set before its status says done)."""
    end = time.monotonic() + seconds
    while job.status == "running" and time.monotonic() < end:
        await asyncio.sleep(0.05)
    return copy.copy(job)


def create_app(config: ServeConfig) -> Starlette:
    """The application serving ``config``; its jobs end with it."""
    jobs = Jobs(config.workers)
    cdss_mode = config.cdss_dir is not None
    base = {"cdss_mode": cdss_mode, "config": config, "title": Path(config.cdss_dir or config.program or "").name}

    def render(name: str, status: int = 200, **values: Any) -> HTMLResponse:
        return page(name, status, **base, **values)

    def job_for(request: Request, key: tuple, fn: Callable[..., Any], *args: Any) -> Job:
        """The job of ``key`` over the files as they are now: the one found, or a new one (also
        when the last one was cancelled or failed and the request says ``rerun=1``)."""
        key = key + (stamp(),)
        job = jobs.find(key)
        if job is None or (param(request, "rerun") == "1" and job.status in ("cancelled", "failed")):
            job = jobs.submit(key, fn, *args)
        return job

    def stamp() -> tuple:
        """The size and time of every file a computation reads (the program and its data, or
        cdss.toml and the store): a result is reused only while they are unchanged."""
        paths: list[Path] = []
        if config.program is not None:
            paths.append(Path(config.program))
        if config.db_dir is not None:
            paths.extend(sorted(Path(config.db_dir).iterdir()))
        if config.cdss_dir is not None:
            from selp.cdss.config import CONFIG_FILE
            from selp.cdss.store import DB_FILE, STORE_DIR

            store = Path(config.cdss_dir) / STORE_DIR
            paths += [Path(config.cdss_dir) / CONFIG_FILE, store / DB_FILE, store / (DB_FILE + "-wal")]
        out = []
        for p in paths:
            try:
                st = p.stat()
            except OSError:
                continue
            out.append((str(p), st.st_size, st.st_mtime_ns))
        return tuple(out)

    # -- the program ----------------------------------------------------------------------------
    def load_analysis() -> Any:
        from selp.language import parse_program_file
        from selp.language.validate import analyze

        assert config.program is not None
        return analyze(parse_program_file(config.program))

    async def program_page(request: Request) -> Response:
        from selp.language.describe import recursive_components, relations_report
        from selp.language.printer import format_rule
        from selp.language.types import resolve_types

        try:
            analysis = await run_in_threadpool(load_analysis)
        except SelpError as err:
            return render("program.html", error=one_line(str(err)))
        key = ("eval", config.program, config.db_dir)
        job = job_for(request, key, work.evaluate, config.program, config.db_dir, config.engine, config.master, config.conf)
        job = await settle(job, WAIT)
        rules = [{"name": r.name, "weight": r.weight, "text": format_rule(r)} for r in analysis.program.rules]
        strata = [{"relations": s, "recursive": recursive_components(analysis, i)} for i, s in enumerate(analysis.strata)]
        return render("program.html", rules=rules, relations=relations_report(analysis, resolve_types(analysis)),
                      strata=strata, job=job, facts=len(analysis.program.facts))

    def ask_spec(request: Request) -> dict[str, Any] | None:
        """The Ask form's request, checked (raises :class:`SelpError` located in the box that
        holds the mistake); None for the empty form."""
        from selp.topk.api import parse_fact_filter, parse_query, parse_query_pattern
        from selp.topk.monoid import get_monoid

        query, fact = param(request, "query"), param(request, "fact")
        k = int_param(request, "k", 3)
        monoid = param(request, "monoid", "confidence") or "confidence"
        if query:
            q = parse_query(query)
            if q.k < 1:
                raise BadRequest(f"query: k must be at least 1, got {q.k}")
            parse_query_pattern(q)
            get_monoid(q.monoid)
            if fact:
                parse_fact_filter(fact)
            return {"mode": "query", "text": query, "fact": fact or None, "k": q.k, "monoid": q.monoid}
        if fact:
            parse_fact_filter(fact)
            get_monoid(monoid)
            return {"mode": "fact", "text": fact, "fact": None, "k": k, "monoid": monoid}
        return None

    def ask_job(request: Request, spec: dict[str, Any]) -> Job:
        key = ("ask", spec["mode"], spec["text"], spec["fact"], spec["k"], spec["monoid"])
        return job_for(request, key, work.ask, config.program, config.db_dir, config.engine, config.master, config.conf,
                       spec["mode"], spec["text"], spec["fact"], spec["k"], spec["monoid"])

    async def ask_page(request: Request) -> Response:
        form = {"query": param(request, "query"), "fact": param(request, "fact"), "k": param(request, "k", "3") or "3",
                "monoid": param(request, "monoid", "confidence") or "confidence"}
        try:
            await run_in_threadpool(load_analysis)
            spec = ask_spec(request)
            number = int_param(request, "page", 1, 10**9)
        except SelpError as err:
            return render("ask.html", 400, form=form, error=one_line(str(err)))
        if spec is None:
            return render("ask.html", form=form)
        job = await settle(ask_job(request, spec), WAIT)
        if job.status == "failed":
            return render("ask.html", 400 if job.user_error else 500, form=form, error=job.error)
        if job.status != "done":
            return render("ask.html", form=form, job=job, query=urlencode(form))
        result = job.result
        trees = [(a, i, w, svg) for a in result["answers"] for i, (w, svg) in enumerate(a["trees"], 1)]
        pages = max(1, -(-len(trees) // config.page_size))
        number = min(number, pages)
        groups: list[dict[str, Any]] = []
        for a, i, w, svg in trees[(number - 1) * config.page_size: number * config.page_size]:
            if not groups or groups[-1]["answer"] is not a:
                groups.append({"answer": a, "fact": a["fact"], "total": len(a["trees"]), "trees": []})
            groups[-1]["trees"].append({"rank": i, "weight": w, "svg": svg})
        return render("ask.html", form=form, result=result, groups=groups, facts=len(result["answers"]), trees=len(trees),
                      page=number, pages=pages, query=urlencode(form))

    async def ask_data(request: Request) -> Response:
        """``/ask.json`` and ``/ask.dot``: the same result as ``selp query --format json|dot``."""
        spec = ask_spec(request)
        if spec is None:
            raise BadRequest("give a fact or a query")
        job = await settle(ask_job(request, spec), DATA_WAIT)
        if job.status == "failed":
            raise (BadRequest if job.user_error else RuntimeError)(job.error)
        if job.status != "done":
            return JSONResponse(job.public(), status_code=202)
        if request.url.path.endswith(".dot"):
            return PlainTextResponse(job.result["dot"], media_type="text/vnd.graphviz")
        return Response(job.result["json"], media_type="application/json")

    async def instrument_page(request: Request) -> Response:
        form = {"pattern": param(request, "pattern")}
        if not form["pattern"]:
            return render("instrument.html", form=form)
        try:
            out = await run_in_threadpool(instrumented, form["pattern"])
        except SelpError as err:
            return render("instrument.html", 400, form=form, error=one_line(str(err)))
        return render("instrument.html", form=form, **out)

    def instrumented(pattern_text: str) -> dict[str, Any]:
        """What ``selp instrument`` prints: P_p, its summary, and the pattern's warnings."""
        from selp.database import column_types
        from selp.instrument.instrument import instrument
        from selp.instrument.summary import summarize
        from selp.language.pattern_parser import check_pattern, parse_pattern
        from selp.language.printer import format_program

        analysis = load_analysis()
        pattern = parse_pattern(pattern_text)
        warnings = check_pattern(pattern, analysis, column_types(analysis, config.db_dir))
        result = instrument(analysis, pattern)
        summary = summarize(analysis, pattern, result, optimize=True)
        assert config.program is not None
        return {"original": Path(config.program).read_text(encoding="utf-8", errors="replace"),
                "instrumented": format_program(result.program), "summary": summary["lines"], "warnings": warnings}

    # -- the CDSS -------------------------------------------------------------------------------
    def open_store() -> Any:
        from selp.cdss.store import DB_FILE, STORE_DIR, Store

        assert config.cdss_dir is not None
        if not (Path(config.cdss_dir) / STORE_DIR / DB_FILE).is_file():
            return None
        return Store.open(config.cdss_dir)

    def overview() -> dict[str, Any]:
        from selp.cdss.config import load_cdss
        from selp.cdss.summary import summarize_cdss

        assert config.cdss_dir is not None
        out: dict[str, Any] = {"summary": summarize_cdss(config.cdss_dir), "cdss": load_cdss(config.cdss_dir)}
        store = open_store()
        if store is not None:
            with store:
                out["epochs"] = store.peer_epochs()
                out["publication"] = store.last_publication()
                out["unpublished"] = store.unpublished_counts()
        return out

    async def cdss_page(request: Request) -> Response:
        try:
            out = await run_in_threadpool(overview)
        except SelpError as err:
            return render("cdss.html", error=one_line(str(err)))
        return render("cdss.html", **out)

    def instances(peer: str) -> dict[str, Any]:
        from selp.cdss.instance import read_peer_relation
        from selp.values import Skolem, display_value

        store = open_store()
        if store is None:
            raise BadRequest(f"no store in {config.cdss_dir}: create it with `selp cdss init {config.cdss_dir}`, then exchange")
        with store:
            store.check_peer(peer)
            tables = []
            for p in store.cdss.peers:
                for rel in p.relations:
                    found = read_peer_relation(store, peer, f"{rel.peer}.{rel.name}", with_nulls=True)
                    if found is None:
                        return {"never": True, "peers": [q.name for q in store.cdss.peers]}
                    rows = [{"cells": [(display_value(v), isinstance(v, Skolem)) for v in row],
                             "certain": not any(isinstance(v, Skolem) for v in row)} for row in found.rows]
                    tables.append({"title": found.title, "columns": found.columns, "rows": rows, "epoch": found.epoch,
                                   "publication": found.publication, "nulls": sum(not r["certain"] for r in rows)})
            return {"tables": tables, "peers": [q.name for q in store.cdss.peers]}

    async def instance_page(request: Request) -> Response:
        peer = param(request, "peer")
        try:
            if not peer:
                out = await run_in_threadpool(overview)
                return render("instance.html", peers=[p.name for p in out["cdss"].peers], peer="")
            out = await run_in_threadpool(instances, peer)
        except SelpError as err:
            return render("instance.html", 400, peer=peer, peers=[], error=one_line(str(err)))
        return render("instance.html", peer=peer, **out)

    def check_tuple(peer: str, fact: str) -> None:
        from selp.cdss.explain import parse_fact

        store = open_store()
        if store is None:
            raise BadRequest(f"no store in {config.cdss_dir}: create it with `selp cdss init {config.cdss_dir}`, then exchange")
        with store:
            store.check_peer(peer)
            parse_fact(store.compiled, fact)

    async def tuple_page(request: Request) -> Response:
        from selp.serve.neighbourhood import render_neighbourhood_svg

        form = {"peer": param(request, "peer"), "fact": param(request, "fact"), "k": param(request, "k", "3") or "3",
                "monoid": param(request, "monoid", "cost") or "cost"}
        peers = (await run_in_threadpool(overview))["cdss"].peers
        names = [p.name for p in peers]
        try:
            k = int_param(request, "k", 3)
            if not form["fact"]:
                return render("tuple.html", form=form, peers=names)
            if form["peer"] not in names:
                raise BadRequest(f"peer: expected one of {', '.join(names)}, got {clip(form['peer'], 40)!r}")
            await run_in_threadpool(check_tuple, form["peer"], form["fact"])
        except SelpError as err:
            return render("tuple.html", 400, form=form, peers=names, error=one_line(str(err)))
        key = ("tuple", form["peer"], form["fact"], k, form["monoid"])
        job = await settle(job_for(request, key, work.cdss_tuple, config.cdss_dir, form["peer"], form["fact"], k, form["monoid"],
                                   config.engine, config.master), WAIT)
        if job.status == "failed":
            return render("tuple.html", 400 if job.user_error else 500, form=form, peers=names, error=job.error)
        if job.status != "done":
            return render("tuple.html", form=form, peers=names, job=job)
        r = job.result
        trees = [{"rank": i, "weight": w, "svg": svg} for i, (w, svg) in enumerate(r["trees"], 1)]
        graph = render_neighbourhood_svg(r["neighbourhood"]) if r["neighbourhood"] and r["neighbourhood"]["known"] else None
        return render("tuple.html", form=form, peers=names, result=r, trees=trees, graph=graph)

    async def proql_page(request: Request) -> Response:
        form = {"query": param(request, "query"), "peer": param(request, "peer")}
        peers = [p.name for p in (await run_in_threadpool(overview))["cdss"].peers]
        if not form["query"]:
            return render("proql.html", form=form, peers=peers)
        if form["peer"] and form["peer"] not in peers:
            return render("proql.html", 400, form=form, peers=peers, error=f"peer: expected one of {', '.join(peers)}, got {clip(form['peer'], 40)!r}")
        key = ("proql", form["query"], form["peer"])
        job = await settle(job_for(request, key, work.cdss_proql, config.cdss_dir, form["query"], form["peer"] or None,
                                   config.engine, config.master), WAIT)
        if job.status == "failed":
            return render("proql.html", 400 if job.user_error else 500, form=form, peers=peers, error=job.error)
        return render("proql.html", form=form, peers=peers, job=job, result=job.result if job.status == "done" else None)

    # -- jobs -----------------------------------------------------------------------------------
    async def job_status(request: Request) -> Response:
        job = jobs.get(str(request.path_params["job"]))
        if job is None:
            return JSONResponse({"error": "no such job"}, status_code=404)
        return JSONResponse(job.public())

    async def job_cancel(request: Request) -> Response:
        job = jobs.cancel(str(request.path_params["job"]))
        if job is None:
            return JSONResponse({"error": "no such job"}, status_code=404)
        return JSONResponse(job.public())

    # -- errors ---------------------------------------------------------------------------------
    def wants_json(request: Request) -> bool:
        return request.url.path.startswith("/jobs") or request.url.path.endswith((".json", ".dot"))

    async def on_selp_error(request: Request, err: Exception) -> Response:
        status = 400
        message = one_line(str(err))
        if wants_json(request):
            return JSONResponse({"error": message}, status_code=status)
        return render("error.html", status, error=message)

    async def on_http_error(request: Request, err: Exception) -> Response:
        assert isinstance(err, HTTPException)
        message = f"{err.status_code}: {err.detail}"
        if wants_json(request):
            return JSONResponse({"error": message}, status_code=err.status_code)
        return render("error.html", err.status_code, error=message)

    async def on_other_error(request: Request, err: Exception) -> Response:
        # a bug, not the request's fault: one line, no traceback (the server's log has it)
        import traceback

        traceback.print_exception(err)
        message = one_line(f"internal error: {type(err).__name__}: {err}")
        if wants_json(request):
            return JSONResponse({"error": message}, status_code=500)
        return render("error.html", 500, error=message)

    def get(path: str, endpoint: Callable[[Request], Awaitable[Response]]) -> Route:
        return Route(path, endpoint, methods=["GET", "HEAD"])

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        await run_in_threadpool(jobs.warm)
        yield
        jobs.close()

    if cdss_mode:
        routes = [get("/", cdss_page), get("/instances", instance_page), get("/tuple", tuple_page), get("/proql", proql_page)]
    else:
        routes = [get("/", program_page), get("/ask", ask_page), get("/ask.json", ask_data), get("/ask.dot", ask_data),
                  get("/instrument", instrument_page)]
    routes += [
        get("/jobs/{job:int}", job_status),
        Route("/jobs/{job:int}/cancel", job_cancel, methods=["POST"]),
        Mount("/static", StaticFiles(packages=[("selp.serve", "static")]), name="static"),
    ]
    app = Starlette(
        routes=routes,
        middleware=[Middleware(TrustedHostMiddleware, allowed_hosts=config.allowed_hosts)],
        exception_handlers={SelpError: on_selp_error, HTTPException: on_http_error, Exception: on_other_error},
        lifespan=lifespan,
    )
    app.state.jobs = jobs
    return app
