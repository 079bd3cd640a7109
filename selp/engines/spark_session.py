"""Creating (or reusing) the Spark session the Spark engine runs in.

:func:`get_spark` works with any ``--master`` URL. Without one it starts a quiet local session
sized for a workstation; with one it only adds settings that are right on any cluster (adaptive
query execution, UTC, shuffle partitions from the cluster's parallelism) and leaves the rest to
the cluster's own configuration. User ``conf`` always wins over these defaults.
:func:`start_spark` is the commands' way in: the same session, with a failure to start reported
as one line.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import warnings
from pathlib import Path
from typing import Callable

from pyspark import SparkContext
from pyspark.sql import SparkSession

from selp.engines import spark_archive
from selp.errors import SelpError

# Settings that are sensible whatever the master is.
_GENERAL_DEFAULTS = {
    "spark.sql.adaptive.enabled": "true",
    "spark.sql.session.timeZone": "UTC",
    "spark.ui.showConsoleProgress": "false",
    # PySpark 4 records a Python call site for every column expression (extra JVM round trips);
    # selp builds many expressions per round, and the trade top-k ran 17 s -> 10 s without it
    "spark.python.sql.dataFrameDebugging.enabled": "false",
    # Fixpoints run hundreds of SQL executions and jobs; the status store keeps each one's plan
    # and metrics (1000 by default), which filled a 4 GiB driver heap on the ~100-round ProQL
    # fixpoints of a 100-peer chain. Keep only the recent ones.
    "spark.sql.ui.retainedExecutions": "50",
    "spark.ui.retainedJobs": "200",
    "spark.ui.retainedStages": "200",
}
# Settings for a session running inside this process's machine (master None or local[...]).
_LOCAL_DEFAULTS = {
    "spark.ui.enabled": "false",
    # Python workers must see the same interpreter (and installed packages) as the driver.
    "spark.pyspark.python": sys.executable,
    "spark.pyspark.driver.python": sys.executable,
}
_LOCAL_DRIVER_MEMORY = "4g"
# JVM options of a short, one-shot local session (a goal-directed explain): the C1 compiler only.
# Most of such a run is the JVM warming up (the same explain ran 3x faster a second time in the
# same session), and on a small machine C2's compiler threads take the cores the first jobs
# need: a one-shot explain of path(0, 1) at 1,000 nodes took 71 s with C1 only against 164 s
# (load 14 on 2 cores). Long fixpoints want C2's code, so other sessions keep the default.
_SHORT_JVM_OPTIONS = "-XX:TieredStopAtLevel=1"

# Loggers that print harmless warnings on every start (loopback hostname, no native Hadoop).
_QUIET_LOGGERS = (
    "org.apache.spark.util.Utils",
    "org.apache.hadoop.util.NativeCodeLoader",
    "org.apache.spark.sql.catalyst.util.SparkStringUtils",
    # selp names CSV columns itself (the header is checked by selp.database.map_header)
    "org.apache.spark.sql.catalyst.csv.CSVHeaderChecker",
    # freeing a superseded local checkpoint warns that it cannot be recomputed: intended
    "org.apache.spark.rdd.MapPartitionsRDD",
    # a top-k round whose candidates all belong to one fact ranks them in a single window: fine
    "org.apache.spark.sql.execution.window.WindowExec",
)


# The log level of a command's Spark session: ``SELP_SPARK_LOG`` (``selp -v`` sets ``warn``).
LOG_ENV = "SELP_SPARK_LOG"
_LOG_LEVELS = ("off", "fatal", "error", "warn", "info", "debug", "trace")
# Quiet by default: a successful run prints nothing from the JVM. A failed Spark job reaches the
# driver as an exception, which the commands report in one line, so its ERROR log adds nothing;
# the DAGScheduler also logs "non-existent accumulator" errors with stack traces on runs that
# succeed (accumulators of collected plans), so it is silenced unless the user asks for more.
_DEFAULT_LOG = "error"
# A task failing on bad data (an arithmetic overflow in a rule) is logged with its Java stack by
# the executor and the task-set manager before the driver turns it into selp's located error.
_SILENT_WHEN_QUIET = (
    "org.apache.spark.scheduler.DAGScheduler",
    "org.apache.spark.executor.Executor",
    "org.apache.spark.scheduler.TaskSetManager",
)


def spark_log_level() -> str:
    """The configured Spark log level (``SELP_SPARK_LOG``, default ``error``); a value that is no
    log4j level is a one-line error naming it."""
    level = os.environ.get(LOG_ENV, _DEFAULT_LOG).strip().lower() or _DEFAULT_LOG
    if level not in _LOG_LEVELS:
        raise SelpError(f"{LOG_ENV}={level!r} is not a log level (one of {', '.join(_LOG_LEVELS)})")
    return level


def _logger_levels(level: str) -> dict[str, str]:
    """Per-logger levels on top of the root ``level``: known noise is kept down."""
    out = {} if level in ("debug", "trace") else {name: "error" for name in _QUIET_LOGGERS}
    if level == _DEFAULT_LOG:
        out.update({name: "fatal" for name in _SILENT_WHEN_QUIET})
    return out


def _startup_level(level: str) -> str:
    """The root level while the JVM starts: ``warn``. PySpark counts as a shell, and a shell whose
    root level differs from WARN prints a "Setting default log level" banner and filters the
    console at WARN; ``level`` is applied once the session runs (:func:`_set_log_levels`)."""
    return "warn"


def _log4j_config(level: str) -> str:
    """Path of a log4j2 configuration for :func:`_startup_level` of ``level``, known start-up
    noise kept down.

    Passing it when the JVM starts replaces Spark's default profile, which is what prints the
    "Using Spark's default log4j profile" / "Setting default log level" banner.
    """
    lines = [
        f"rootLogger.level = {_startup_level(level)}",
        "rootLogger.appenderRef.stderr.ref = console",
        "appender.console.type = Console",
        "appender.console.name = console",
        "appender.console.target = SYSTEM_ERR",
        "appender.console.layout.type = PatternLayout",
        "appender.console.layout.pattern = %d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n%ex",
    ]
    for i, (name, lvl) in enumerate(_logger_levels(level).items()):
        lines += [f"logger.q{i}.name = {name}", f"logger.q{i}.level = {lvl}"]
    text = "\n".join(lines) + "\n"
    uid = os.getuid() if hasattr(os, "getuid") else 0
    path = Path(tempfile.gettempdir()) / f"selp-log4j2-{uid}-{level}.properties"
    if not path.exists() or path.read_text() != text:
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(text)
        os.replace(tmp, path)  # atomic: concurrent starts never read half a file
    return str(path)


def _set_log_levels(spark: SparkSession, level: str) -> None:
    """Apply ``level`` in the running JVM too (it may predate our log configuration)."""
    try:
        jvm = spark._jvm  # type: ignore[attr-defined]
        levels = jvm.org.apache.logging.log4j.Level
        configurator = jvm.org.apache.logging.log4j.core.config.Configurator
        # setLogLevel also moves the threshold Spark's shell filter applies to the console
        spark.sparkContext.setLogLevel(level.upper())
        for name, lvl in _logger_levels(level).items():
            configurator.setLevel(name, levels.toLevel(lvl.upper()))
    except Exception:  # noqa: BLE001 - logging is cosmetic; never fail a session over it
        pass


def _is_local(master: str) -> bool:
    return master == "local" or master.startswith("local[") or master.startswith("local-cluster[")


def driver_java_options(master: str, level: str, short: bool, archive: str = "") -> str:
    """The driver JVM's options when selp launches it: the log configuration for ``level``, and
    for a ``short`` session on a local master the C1-only compiler (:data:`_SHORT_JVM_OPTIONS`)
    and ``archive``, the class-data archive's options (:mod:`selp.engines.spark_archive`)."""
    jvm = f"{_SHORT_JVM_OPTIONS} {archive + ' ' if archive else ''}" if short and _is_local(master) else ""
    return f"{jvm}-Dlog4j2.configurationFile=file:{_log4j_config(level)}"


def _jvm_running() -> bool:
    """Whether this Python process already has a Spark JVM (then JVM options cannot change)."""
    return SparkContext._gateway is not None  # type: ignore[attr-defined]


def _driver_memory_preset(conf: dict[str, str]) -> bool:
    """Whether the user chose the driver memory somewhere Spark would read it."""
    if "spark.driver.memory" in conf or os.environ.get("SPARK_DRIVER_MEMORY"):
        return True
    if "--driver-memory" in os.environ.get("PYSPARK_SUBMIT_ARGS", "") or "spark.driver.memory" in os.environ.get(
        "PYSPARK_SUBMIT_ARGS", ""
    ):
        return True
    conf_dirs = [os.environ.get("SPARK_CONF_DIR"), os.path.join(os.environ.get("SPARK_HOME", ""), "conf")]
    for d in conf_dirs:
        if d:
            p = Path(d) / "spark-defaults.conf"
            if p.is_file() and any(
                line.split() and line.split()[0] == "spark.driver.memory" for line in p.read_text().splitlines()
            ):
                return True
    return False


def _compatible(session: SparkSession, master: str | None, conf: dict[str, str]) -> bool:
    """Whether ``session`` can serve a request for ``master``/``conf`` without restarting."""
    sc = session.sparkContext
    if sc._jsc is None:  # type: ignore[attr-defined]  # stopped
        return False
    if master is not None and sc.master != master:
        return False
    current = dict(sc.getConf().getAll())
    for key, value in conf.items():
        if not _runtime_setting(session, key) and current.get(key) != value:
            return False
    return True


def _runtime_setting(session: SparkSession, key: str) -> bool:
    """Whether ``key`` can be changed on a running session (selp's own settings always can)."""
    return key.startswith("spark.selp.") or session.conf.isModifiable(key)


def short_session_settings(master: str, short: bool) -> dict[str, str]:
    """SQL settings of a short, one-shot local session (a goal-directed explain): its jobs are
    small, and adaptive execution only re-plans them stage by stage, adding jobs (quiet machine,
    ``explain path(0, 1)`` at 1,000 nodes: 17.0-20.8 s with it, 15.8-16.4 s without). Other
    sessions, and any on a cluster (skew, coalescing), keep it."""
    return {"spark.sql.adaptive.enabled": "false"} if short and _is_local(master) else {}


def get_spark(
    master: str | None = None, conf: dict[str, str] | None = None, app_name: str = "selp", short: bool = False
) -> SparkSession:
    """Return a Spark session for ``master`` (a local one when ``None``).

    An active session is reused when it runs on the requested master and its static settings agree
    with ``conf``; otherwise it is stopped and a new one is started. ``conf`` overrides every
    default: local sessions get ``local[*]``, no UI, 4g of driver memory (only when a new JVM is
    launched and nothing else set it) and a log configuration at :func:`spark_log_level` (quiet:
    errors only, by default); every session gets adaptive
    query execution, UTC and ``spark.sql.shuffle.partitions`` = 2 x the default parallelism.
    ``short``: the session serves one short computation (a goal-directed explain), so a local
    JVM launched now compiles with C1 only and starts from the class-data archive
    (:mod:`selp.engines.spark_archive`), unless ``spark.driver.extraJavaOptions`` is given, and
    runs without adaptive query execution (unless ``conf`` turns it on).
    """
    conf = dict(conf or {})
    active = SparkSession.getActiveSession()
    if active is not None:
        if _compatible(active, master, conf):
            for key, value in conf.items():
                if _runtime_setting(active, key):
                    active.conf.set(key, value)
            _set_log_levels(active, spark_log_level())
            return active
        active.stop()

    effective_master = master or "local[*]"
    level = spark_log_level()
    # Spark >= 4 applies spark.log.level at startup, like sc.setLogLevel
    settings: dict[str, str] = {**_GENERAL_DEFAULTS, "spark.log.level": _startup_level(level).upper()}
    fresh_jvm = not _jvm_running()
    if _is_local(effective_master):
        settings.update(_LOCAL_DEFAULTS)
        if fresh_jvm and not _driver_memory_preset(conf):
            settings["spark.driver.memory"] = _LOCAL_DRIVER_MEMORY
    settings.update(short_session_settings(effective_master, short))
    archive, dumping = "", None
    if fresh_jvm and "spark.driver.extraJavaOptions" not in conf:
        # JVM options only matter (and only reach the JVM) when spark-submit launches it now.
        if _uses_archive(effective_master, conf, short):
            archive, dumping = spark_archive.jvm_options()
        settings["spark.driver.extraJavaOptions"] = driver_java_options(effective_master, level, short, archive)
    settings.update(conf)

    builder = SparkSession.builder.master(effective_master).appName(app_name)
    for key, value in settings.items():
        builder = builder.config(key, value)
    with warnings.catch_warnings():
        # pyspark warns about pandas versions on start-up; it is noise for a CLI user
        warnings.simplefilter("ignore", FutureWarning)
        spark = builder.getOrCreate()
    if dumping is not None:
        spark_archive.finish(dumping, SparkContext._gateway)  # type: ignore[attr-defined]
    _set_log_levels(spark, level)
    if "spark.sql.shuffle.partitions" not in conf:
        # defaultParallelism is the number of cores Spark can use (local[N] or executors)
        spark.conf.set("spark.sql.shuffle.partitions", str(2 * max(1, spark.sparkContext.defaultParallelism)))
    return spark


def _uses_archive(master: str, conf: dict[str, str], short: bool) -> bool:
    """Whether a JVM launched for this session starts from (or writes) the class-data archive."""
    return short and _is_local(master) and "spark.driver.extraJavaOptions" not in conf and spark_archive.enabled(conf)


def _writes_archive(master: str | None, conf: dict[str, str] | None, short: bool) -> bool:
    """Whether :func:`get_spark` with these arguments would launch a JVM that writes the archive."""
    if _jvm_running() or not _uses_archive(master or "local[*]", conf or {}, short):
        return False
    try:
        path = spark_archive.archive_path()
    except (OSError, RuntimeError):
        return False
    return path is not None and not path.is_file()


def start_spark(
    master: str | None = None, conf: dict[str, str] | None = None, say: Callable[[str], None] | None = None,
    short: bool = False,
) -> SparkSession:
    """:func:`get_spark` for a command (``short`` as there): ``say`` announces the start, and a session that cannot
    start is a :class:`~selp.errors.SelpError` of one line (Java missing for a local session, or
    the first line of Spark's error) rather than a JVM stack trace."""
    if not master and shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        raise SelpError(
            "the spark engine needs Java 17 (apt-get install openjdk-17-jre-headless);"
            " or run with the embedded engine (the default)"
        )
    if say is not None:
        # the run that writes the class-data archive is several times slower: say why, once
        note = "; first short run here: also writing a class-data archive, later runs start faster" if _writes_archive(master, conf, short) else ""
        say(f"starting Spark ({master or 'local'}{note}) ...")
    try:
        return get_spark(master, conf, short=short)
    except SelpError:
        raise
    except Exception as err:  # Py4J/PySpark errors: report the first line, not a JVM stack
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise SelpError(f"could not start Spark: {first}") from None
