"""The class-data archive of a one-shot explain's Spark JVM (selp.engines.spark_archive)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.paths import EXAMPLES
from selp.engines import spark_archive
from selp.engines.spark_session import driver_java_options


def test_the_first_short_session_writes_the_archive_and_the_next_ones_read_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No archive yet: the JVM is told to write one to a file of its own (renamed into place at
    exit, so a concurrent reader never sees half of it); once it is there, JVMs read it."""
    monkeypatch.setenv(spark_archive.CACHE_ENV, str(tmp_path / "cache"))
    opts, tmp = spark_archive.jvm_options()
    final = spark_archive.archive_path()
    assert final is not None and final.parent == tmp_path / "cache"
    assert tmp is not None and tmp.parent == final.parent and tmp != final
    assert f"-XX:ArchiveClassesAtExit={tmp}" in opts and "-Xlog:cds*=off" in opts
    final.write_bytes(b"archive")
    opts, tmp = spark_archive.jvm_options()
    assert tmp is None and f"-XX:SharedArchiveFile={final}" in opts


def test_only_a_short_local_session_gets_the_archive_and_it_can_be_turned_off() -> None:
    archive = "-XX:SharedArchiveFile=/x.jsa"
    assert archive in driver_java_options("local[*]", "error", True, archive)
    for master, short in (("local[*]", False), ("spark://host:7077", True), ("yarn", True)):
        assert "SharedArchiveFile" not in driver_java_options(master, "error", short, archive)
    assert spark_archive.enabled({})
    assert not spark_archive.enabled({spark_archive.ARCHIVE_CONF: "false"})


@pytest.mark.spark
@pytest.mark.slow
def test_an_explain_that_writes_the_archive_and_one_that_reads_it_print_the_same_trees_and_no_noise(tmp_path: Path) -> None:
    """Two one-shot explains as a user runs them: the first leaves the archive behind (and no
    temporary file), the second starts from it; same trees, nothing on stderr but selp's own."""
    env = dict(os.environ, SELP_CACHE_DIR=str(tmp_path / "cache"))
    cmd = [sys.executable, "-m", "selp", "explain", str(EXAMPLES / "trade" / "trade.dl"), "--db", str(EXAMPLES / "trade" / "db"),
           "-k", "2", "dealsWith(Cuba, France)", "--engine", "spark"]
    outs: list[str] = []
    notes: list[bool] = []
    for _ in range(2):
        p = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=tmp_path, timeout=600)
        assert p.returncode == 0, p.stderr
        assert "Traceback" not in p.stderr and "cds" not in p.stderr, p.stderr
        outs.append(p.stdout)
        notes.append("writing a class-data archive" in p.stderr)  # the slow first run says why
        assert [f.name.endswith(".jsa") for f in (tmp_path / "cache").iterdir()] == [True]
    assert notes == [True, False]
    assert outs[0] == outs[1] and "dealsWith(Cuba, France)" in outs[0]
