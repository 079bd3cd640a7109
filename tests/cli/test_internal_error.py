"""An internal error (a bug, or a failure inside Spark) reaches the user as one line naming a file
with the traceback, exit code 3 -- never a traceback on the terminal -- and SELP_TRACEBACK=1 shows it."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import click

from selp.cli.root import SelpGroup


def _group() -> click.Group:
    @click.group(cls=SelpGroup)
    def g() -> None:
        pass

    @g.command()
    def broken() -> None:
        # a bug as it would surface: an exception no code path expected, with a long message
        raise KeyError("slot 17 of partition 3\nsecond line of detail")

    @g.command()
    def gone() -> None:
        raise MemoryError()

    return g


def _run(tmp_path: Path, command: str, **env: str) -> subprocess.CompletedProcess:
    # a real process: the exit code and stderr a user's shell sees
    script = tmp_path / "prog.py"
    script.write_text(
        "import sys\n"
        f"sys.path.insert(0, {str(Path(__file__).parent)!r})\n"
        "from test_internal_error import _group\n"
        "_group()()\n"
    )
    return subprocess.run([sys.executable, str(script), command], capture_output=True, text=True,
                          env={"PATH": "/usr/bin:/bin", "TMPDIR": str(tmp_path), **env}, timeout=120)


def test_internal_error_is_one_line_with_the_traceback_in_a_file(tmp_path: Path) -> None:
    r = _run(tmp_path, "broken")
    assert r.returncode == 3, r.stderr
    assert "Traceback" not in r.stderr
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: internal error (KeyError: "), r.stderr
    assert "slot 17 of partition 3" in lines[0] and "second line" not in lines[0]
    path = re.search(r"traceback in (\S+);", lines[0]).group(1)
    text = Path(path).read_text()
    assert Path(path).parent == tmp_path
    assert "Traceback (most recent call last)" in text and "second line of detail" in text and "broken" in text


def test_selp_traceback_shows_it(tmp_path: Path) -> None:
    r = _run(tmp_path, "broken", SELP_TRACEBACK="1")
    assert r.returncode == 1 and "Traceback (most recent call last)" in r.stderr and "KeyError" in r.stderr


def test_out_of_memory_is_a_resource_error_not_a_bug(tmp_path: Path) -> None:
    r = _run(tmp_path, "gone")
    assert r.returncode == 1 and r.stderr.startswith("error: out of memory") and len(r.stderr.splitlines()) == 1, r.stderr


def test_broken_pipe_is_quiet(tmp_path: Path) -> None:
    # `selp eval ... --show R | head -1`: the reader stops early; no traceback, no error line
    root = Path(__file__).resolve().parents[2]
    subprocess.run([sys.executable, "-m", "selp", "gen", "tc", "--target-output", "20000", "--out", str(tmp_path / "db")],
                   check=True, capture_output=True, timeout=300)
    # 20,000 rows: far more than the pipe holds, so the write after head exits fails
    p = subprocess.run(f"{sys.executable} -m selp eval {root}/datasets/tc.dl --db {tmp_path}/db --show tc | head -c 10",
                       shell=True, capture_output=True, text=True, timeout=300, executable="/bin/bash")
    assert len(p.stdout) == 10
    assert "Traceback" not in p.stderr and "error" not in p.stderr, p.stderr
