"""``selp serve``: the derivation explorer in the browser (:mod:`selp.serve`)."""

from __future__ import annotations

from pathlib import Path

import click

from selp.cli.root import ENGINE_CHOICES, ENGINE_HELP, parse_conf
from selp.errors import SelpError

LOOPBACK = ("127.0.0.1", "localhost", "::1")


@click.command(name="serve")
@click.argument("source", type=click.Path(exists=True))
@click.option("--db", "db_dir", type=click.Path(file_okay=False, exists=True), help="Directory of REL.csv / REL.parquet files (with a program).")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on; anything but loopback lets other machines in.")
@click.option("--port", type=click.IntRange(0, 65535), default=8765, show_default=True, help="Port (0: any free port).")
@click.option("--engine", type=click.Choice(ENGINE_CHOICES), default=None, help=ENGINE_HELP)
@click.option("--master", default=None, help="Spark master URL (spark engine; each computation starts its own session).")
@click.option("--conf", multiple=True, metavar="KEY=VALUE", help="Extra Spark configuration; repeatable.")
@click.option("--workers", type=click.IntRange(1, 64), default=2, show_default=True, help="Computations running at once (one process each).")
def serve(source: str, db_dir: str | None, host: str, port: int, engine: str | None, master: str | None, conf: tuple[str, ...], workers: int) -> None:
    """Explore SOURCE in the browser: a program (with --db) or a CDSS directory (with cdss.toml).

    Pages: the program (rules, relations and sizes, strata), Ask (a fact or a selPQL query; the
    top-k trees drawn), Instrumentation (P_p beside P); for a CDSS: peers, mappings, trust,
    instances, a tuple's provenance neighbourhood and derivations, ProQL. Stop with Ctrl-C.

    \b
    Examples:
      selp serve examples/trade/trade.dl --db examples/trade/db
      selp serve examples/cdss/bio --port 8080
    """
    import socket

    import uvicorn

    from selp.cdss.config import CONFIG_FILE
    from selp.config import choose_engine
    from selp.engines.registry import get_engine
    from selp.serve.app import ServeConfig, create_app

    path = Path(source)
    if path.is_dir():
        if not (path / CONFIG_FILE).is_file():
            raise SelpError(f"{source}: a directory to serve must hold {CONFIG_FILE} (a CDSS); for a program give its file")
        if db_dir:
            raise SelpError("--db applies to a program; a CDSS reads its store")
        name = choose_engine(engine, path / CONFIG_FILE, master)
        config = ServeConfig(cdss_dir=str(path), engine=name, master=master, conf=parse_conf(conf), workers=workers)
    else:
        name = choose_engine(engine, source, master)
        config = ServeConfig(program=str(path), db_dir=db_dir, engine=name, master=master, conf=parse_conf(conf), workers=workers)
    if host in LOOPBACK:
        config.allowed_hosts = ["127.0.0.1", "localhost", "::1", "[::1]"]
    if not get_engine(name).needs_spark_session and (master or conf):
        raise SelpError("--master/--conf apply to the spark engine; add --engine spark")
    # bind first, so that the URL printed is one that answers (and --port 0 names its port)
    try:
        sock = socket.create_server((host, port), family=socket.AF_INET6 if ":" in host else socket.AF_INET)
    except OSError as err:
        raise SelpError(f"cannot listen on {host}:{port}: {err.strerror or err}") from None
    bound = sock.getsockname()[1]
    shown = f"[{host}]" if ":" in host else host
    click.echo(f"selp serve: {source} at http://{shown}:{bound}/ ({name} engine; Ctrl-C stops)", err=True)
    server = uvicorn.Server(uvicorn.Config(create_app(config), log_level="warning", access_log=False))
    server.run(sockets=[sock])
