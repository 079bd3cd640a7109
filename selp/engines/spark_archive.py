"""A class-data-sharing archive of the Spark driver JVM, for short local sessions (issue 19).

Most of a one-shot ``selp explain --engine spark`` is the JVM starting and loading Spark's
classes (some 15,000, from jars, verified one by one). Java's dynamic CDS archive
(``-XX:ArchiveClassesAtExit`` / ``-XX:SharedArchiveFile``, JDK 13+) keeps those classes parsed
and verified in a memory-mapped file: measured on 2 shared cores (load 5), session start plus
the first job fell from 26.1 / 23.8 s to 12.6 / 13.9 s.

The archive is made by the first short session on a machine (that run is slower: the archiving
JVM runs without some optimisations, then writes ~160 MB when it exits) and used by the next
ones. It lives in :func:`cache_dir` under a name keyed on the Java binary and Spark's jars, so a
Java or PySpark upgrade makes a new one; a stale or damaged archive is ignored by the JVM
(``-Xshare:auto``, the default), silently (``-Xlog:cds*=off``). Concurrent first runs each
write their own file and rename it into place when their JVM has exited: a reader never sees
half an archive.

Only local sessions use it (on a cluster the driver is not where the time goes), and only short
ones (:func:`selp.engines.spark_session.get_spark`'s ``short``); ``spark.selp.classArchive=false``
turns it off.
"""

from __future__ import annotations

import atexit
import hashlib
import os
import shutil
from pathlib import Path
from typing import Any

ARCHIVE_CONF = "spark.selp.classArchive"
CACHE_ENV = "SELP_CACHE_DIR"
# the JVM's CDS messages (classes it cannot archive, a stale archive) are no user's business
_QUIET = "-Xlog:cds*=off"
# how long a process waits at exit for its JVM to write the archive
_DUMP_TIMEOUT = 180.0


def enabled(conf: dict[str, str]) -> bool:
    """Whether ``conf`` leaves the archive on (``spark.selp.classArchive``, default true)."""
    return conf.get(ARCHIVE_CONF, "true").strip().lower() not in ("false", "0", "no", "off")


def cache_dir() -> Path:
    """Where selp keeps the archive: ``$SELP_CACHE_DIR``, else ``$XDG_CACHE_HOME/selp``, else
    ``~/.cache/selp``."""
    given = os.environ.get(CACHE_ENV)
    if given:
        return Path(given)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "selp"


def _java() -> Path | None:
    home = os.environ.get("JAVA_HOME")
    found = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    return Path(found).resolve() if found and Path(found).exists() else None


def _jars() -> Path | None:
    spark_home = os.environ.get("SPARK_HOME")
    if spark_home:
        return Path(spark_home) / "jars"
    import pyspark

    return Path(pyspark.__file__).parent / "jars"


def archive_path() -> Path | None:
    """The archive for this Java and these Spark jars (None: no Java found)."""
    java, jars = _java(), _jars()
    if java is None or jars is None or not jars.is_dir():
        return None
    h = hashlib.sha256()
    st = java.stat()
    h.update(f"{java}\0{st.st_size}\0{st.st_mtime_ns}\0{jars}\0".encode())
    for jar in sorted(jars.iterdir()):
        h.update(f"{jar.name}\0{jar.stat().st_size}\0".encode())
    return cache_dir() / f"spark-classes-{h.hexdigest()[:16]}.jsa"


def jvm_options() -> tuple[str, Path | None]:
    """(driver JVM options, the file this JVM will write at exit or None).

    With an archive: use it. Without: have this JVM write one, to a file of its own (renamed
    into place by :func:`finish` once the JVM has exited)."""
    try:
        final = archive_path()
    except (OSError, RuntimeError):  # no home directory, an unreadable jars directory: no archive
        return "", None
    if final is None:
        return "", None
    if final.is_file():
        return f"-XX:SharedArchiveFile={final} {_QUIET}", None
    try:
        final.parent.mkdir(parents=True, exist_ok=True)
    except OSError:
        return "", None  # no writable cache: run without an archive
    tmp = final.with_name(f"{final.name}.{os.getpid()}.tmp")
    return f"-XX:ArchiveClassesAtExit={tmp} {_QUIET}", tmp


def finish(tmp: Path, gateway: Any) -> None:
    """At this process's exit: end the JVM of ``gateway`` (it exits when its stdin closes, and
    writes ``tmp`` as it does), then move a complete ``tmp`` into place."""

    def done() -> None:
        from pyspark import SparkContext

        proc = getattr(gateway, "proc", None)
        try:
            sc = SparkContext._active_spark_context  # type: ignore[attr-defined]
            if sc is not None:
                sc.stop()  # first: its accumulator server would report the JVM's exit as an error
            if proc is not None:
                if proc.stdin is not None:
                    proc.stdin.close()
                proc.wait(timeout=_DUMP_TIMEOUT)
            if proc is not None and proc.returncode == 0 and tmp.is_file() and tmp.stat().st_size:
                os.replace(tmp, tmp.with_name(tmp.name.rsplit(".", 2)[0]))
        except Exception:  # noqa: BLE001 - an archive is an optimisation; never fail an exit over it
            pass
        finally:
            tmp.unlink(missing_ok=True)

    atexit.register(done)
