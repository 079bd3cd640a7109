"""``selp serve`` refuses what it cannot serve in one located line (the pages are tested in
tests/serve)."""

from __future__ import annotations

import socket

from helpers.cli import one_error_line, selp
from helpers.paths import EXAMPLES, TRADE


def test_a_directory_without_cdss_toml_is_refused():
    line = one_error_line(selp("serve", str(EXAMPLES / "trade")))
    assert line == f"error: {EXAMPLES / 'trade'}: a directory to serve must hold cdss.toml (a CDSS); for a program give its file"


def test_a_port_in_use_is_refused_in_one_line():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        line = one_error_line(selp("serve", str(TRADE / "trade.dl"), "--db", str(TRADE / "db"), "--port", str(port)))
    assert line.startswith(f"error: cannot listen on 127.0.0.1:{port}: ")


def test_spark_options_need_the_spark_engine():
    line = one_error_line(selp("serve", str(TRADE / "trade.dl"), "--master", "local[1]", "--engine", "embedded"))
    assert line == "error: --master/--conf apply to the spark engine; add --engine spark"


def test_db_is_for_a_program():
    line = one_error_line(selp("serve", str(EXAMPLES / "cdss" / "bio"), "--db", str(TRADE / "db")))
    assert line == "error: --db applies to a program; a CDSS reads its store"
