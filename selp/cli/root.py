"""The root ``selp`` group, and what its commands share: one-line errors, loading a program,
choosing an engine and starting Spark, progress on stderr.

Exit codes: 0 success, 1 a user error (bad program, data or option value; one located line on
stderr), 2 a usage error (unknown option, missing argument), 3 an internal error (a bug in selp or
a failure inside Spark: one line on stderr naming a file that holds the traceback; with
``SELP_TRACEBACK=1`` the traceback is printed instead).
"""

from __future__ import annotations

import os
import sys
import time
from typing import TYPE_CHECKING, Any, Callable, NoReturn

import click

from selp.engines.local import progress_line
from selp.engines.registry import names as engine_names
from selp.errors import SelpError, echo, one_line

if TYPE_CHECKING:
    from selp.engines.base import Engine
    from selp.language.validate import Analysis

ENGINE_CHOICES = engine_names()  # the registry's names, and local (the old name of reference)
ENGINE_HELP = (
    "embedded (DuckDB, in process), spark, or reference (pure Python) [default: --master implies spark,"
    " else SELP_ENGINE, else selp.toml beside the program, else embedded]."
)


def fail(message: str) -> NoReturn:
    """Print ``error: MESSAGE`` on stderr and exit 1."""
    # one line whatever the message holds: an echoed input may be long or span lines
    click.echo(f"error: {one_line(message)}", err=True)
    sys.exit(1)


VERBOSE_FLAGS = ("-v", "--verbose")
TRACEBACK_ENV = "SELP_TRACEBACK"  # set (to anything but 0): an internal error raises, traceback shown


def internal_error(err: BaseException) -> NoReturn:
    """Exit 3 with one line for an unexpected exception, its traceback written to a file.

    A Py4J error from Spark carries a JVM stack trace hundreds of lines long, and a bug's Python
    traceback means nothing to a user: both go to a file the user can attach to a report."""
    import tempfile
    import traceback

    text = "".join(traceback.format_exception(err))
    where = ""
    try:
        fd, path = tempfile.mkstemp(prefix=f"selp-crash-{time.strftime('%Y%m%d-%H%M%S')}-", suffix=".txt")
        with os.fdopen(fd, "w") as f:
            f.write(f"selp {' '.join(sys.argv[1:])}\n\n{text}")
        where = f"; traceback in {path}"
    except OSError:  # no writable temp directory: the one line must still come out
        pass
    # KeyError's str() is its repr: take a lone string argument as the message
    raw = err.args[0] if len(err.args) == 1 and isinstance(err.args[0], str) else str(err)
    summary = raw.strip().splitlines()[0] if raw.strip() else ""
    click.echo(f"error: internal error ({type(err).__name__}{': ' + one_line(summary)[:300] if summary else ''}){where};"
               f" {TRACEBACK_ENV}=1 prints it", err=True)
    sys.exit(3)


class SelpGroup(click.Group):
    """Turns user errors raised anywhere below into one line and exit code 1; ``-v`` is read
    wherever it is written (``selp eval ... -v`` as well as ``selp -v eval ...``)."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if ctx.parent is None:  # the root group: hoist -v from after the command name
            end = args.index("--") if "--" in args else len(args)
            flags = [a for a in args[:end] if a in VERBOSE_FLAGS]
            if flags:
                args = flags[:1] + [a for a in args[:end] if a not in VERBOSE_FLAGS] + args[end:]
        return super().parse_args(ctx, args)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except SelpError as err:
            fail(str(err))
        except RecursionError:
            # a safety net: parsers bound nesting, but a derivation tree computed from the data
            # (a path of a thousand steps) is drawn recursively
            fail("too deeply nested to process: a derivation tree (or an input) is deeper than Python's recursion allows")
        except (click.exceptions.ClickException, click.exceptions.Exit, click.exceptions.Abort):
            raise
        except BrokenPipeError:
            raise  # the reader of stdout went away (`selp eval ... | head`): click exits quietly
        except MemoryError:
            fail("out of memory: the computation needs more memory than this process could get")
        except Exception as err:  # noqa: BLE001 - anything else is a bug or a failure inside Spark
            if os.environ.get(TRACEBACK_ENV, "0") not in ("", "0"):
                raise
            internal_error(err)


@click.group(cls=SelpGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="selp")
@click.option("-v", "--verbose", is_flag=True, help="Show Spark's own log (warnings and errors) on stderr; by default it is quiet.")
def main(verbose: bool) -> None:
    """selp: top-k selective provenance for datalog programs, locally or on Apache Spark.

    \b
    Examples:
      selp check examples/trade/trade.dl
      selp eval examples/trade/trade.dl --db examples/trade/db --show dealsWith
      selp eval prog.dl --db data/ --master spark://host:7077 --out results/
      selp eval prog.dl --db data/ --engine spark -v      (with Spark's log)
    """
    if verbose:
        from selp.engines.spark_session import LOG_ENV

        # read when a Spark session starts; an explicit SELP_SPARK_LOG (e.g. info) is kept
        os.environ.setdefault(LOG_ENV, "warn")


def load_program(program: str) -> Analysis:
    """Parse and validate the program file ``program``."""
    from selp.language import parse_program_file
    from selp.language.validate import analyze

    return analyze(parse_program_file(program))


def parse_conf(values: tuple[str, ...]) -> dict[str, str]:
    """``--conf KEY=VALUE`` options as a dict."""
    conf = {}
    for kv in values:
        if "=" not in kv:
            raise SelpError(f"--conf expects key=value, got {echo(kv)}")
        k, v = kv.split("=", 1)
        conf[k.strip()] = v.strip()
    return conf


def say_printer(quiet: bool) -> Callable[[str], None]:
    """Progress messages on stderr, or nowhere when ``quiet``."""
    return (lambda msg: None) if quiet else (lambda msg: click.echo(msg, err=True))


def start_spark(master: str | None, conf: dict[str, str], quiet: bool, short: bool = False) -> Any:
    """A Spark session (announced on stderr unless ``quiet``; ``short``: for one short computation,
    see :func:`selp.engines.spark_session.get_spark`), or a one-line explanation of why none
    could start."""
    from selp.engines.spark_session import start_spark as start

    return start(master, conf, None if quiet else say_printer(False), short)


def start_spark_soon(master: str | None, conf: dict[str, str], quiet: bool, short: bool = False) -> Callable[[], Any]:
    """:func:`start_spark` in a background thread: the JVM starts while the caller parses the
    program and imports what it runs (the JVM's start is a child process and socket waits, so
    the two overlap). Returns a function that waits for the session, raising what
    :func:`start_spark` raised. The thread is a daemon: an error in the caller exits at once.
    With a session already running in this process, no thread: it is returned at once."""
    import threading

    from pyspark import SparkContext  # PySpark imported here, never by two threads at once

    if SparkContext._active_spark_context is not None:  # type: ignore[attr-defined]
        # a running session (an embedding program's, a test's) is found by the JVM thread of
        # the Python thread that made it: take it here, as before; there is no JVM to wait for
        spark = start_spark(master, conf, quiet, short)
        return lambda: spark
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["spark"] = start_spark(master, conf, quiet, short)
        except BaseException as err:  # noqa: BLE001 - handed to the waiting caller
            box["error"] = err

    thread = threading.Thread(target=run, name="selp-spark-start", daemon=True)
    thread.start()

    def wait() -> Any:
        thread.join()
        if "error" in box:
            raise box["error"]
        return box["spark"]

    return wait


def choose_program_engine(engine: str | None, program: str, master: str | None, conf: tuple[str, ...]) -> tuple[str, Engine]:
    """The engine a program command runs on (``--engine``, ``--master``, SELP_ENGINE, the
    selp.toml beside the program, else embedded) and its registered name; ``--master``/``--conf``
    are refused for an engine without a Spark session (they would be silently ignored)."""
    from selp.config import choose_engine
    from selp.engines.registry import get_engine

    name = choose_engine(engine, program, master)
    eng = get_engine(name)
    if not eng.needs_spark_session and (master or conf):
        raise SelpError("--master/--conf apply to the spark engine; add --engine spark")
    return name, eng


def spark_for(engine: str, master: str | None, quiet: bool) -> Any:
    """The Spark session when ``engine`` (a registered name) runs on one, else None; ``--master``
    with another engine is refused (it would be silently ignored)."""
    from selp.engines.registry import get_engine

    if not get_engine(engine).needs_spark_session:
        if master:
            raise SelpError("--master applies to the spark engine; add --engine spark")
        return None
    return start_spark(master, {}, quiet)


def progress_printer(quiet: bool, always: bool) -> Callable:
    """Per-iteration progress on stderr; for in-process engines only once a run takes a while."""
    start = time.perf_counter()

    def report(comp, iteration: int, delta: int, total: int) -> None:
        if quiet:
            return
        if not always and time.perf_counter() - start < 1.0:
            return
        click.echo(progress_line(comp, iteration, delta, total, time.perf_counter() - start), err=True)

    return report
