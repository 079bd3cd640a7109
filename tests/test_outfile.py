"""Outputs written as a user expects (issue: `--out /dev/null` replaced /dev/null): devices and
FIFOs in place, regular files atomically, modes from the umask, symlinks followed."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from selp.errors import SelpError
from selp.outfile import open_output, output_dir, write_text

ROOT = Path(__file__).resolve().parents[1]
TRADE = ["examples/trade/trade.dl", "--db", "examples/trade/db"]


def _selp(args: list[str], umask: int = 0o022) -> subprocess.CompletedProcess:
    def pre() -> None:
        os.umask(umask)

    return subprocess.run([sys.executable, "-m", "selp", *args], cwd=ROOT, capture_output=True, text=True,
                          preexec_fn=pre, timeout=120)


TOPK_JSON = ["topk", *TRADE, "-k", "2", "--pattern", "dealsWith(Cuba, *)", "--format", "json", "-q", "--out"]


@pytest.mark.skipif(os.geteuid() != 0, reason="making a device node needs root")
def test_a_device_stays_a_device(tmp_path: Path) -> None:
    dev = tmp_path / "null"
    os.mknod(dev, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    for args in (TOPK_JSON + [str(dev)], ["instrument", TRADE[0], "--pattern", "dealsWith(Cuba, *)", "--out", str(dev)]):
        r = _selp(args)
        assert r.returncode == 0, r.stderr
        assert stat.S_ISCHR(os.stat(dev).st_mode), args
    assert [p.name for p in tmp_path.iterdir()] == ["null"]  # no temp file left beside it


def test_a_fifo_is_written_in_place(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    r = _selp(TOPK_JSON + [str(fifo)])
    reader.join(30)
    assert r.returncode == 0, r.stderr
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    assert json.loads(got[0])["k"] == 2


@pytest.mark.parametrize("umask, mode", [(0o022, 0o644), (0o077, 0o600)])
def test_new_files_follow_the_umask(tmp_path: Path, umask: int, mode: int) -> None:
    out = tmp_path / "o.json"
    assert _selp(TOPK_JSON + [str(out)], umask).returncode == 0
    assert stat.S_IMODE(os.stat(out).st_mode) == mode
    saved = tmp_path / "dt"
    r = _selp(["topk", *TRADE, "-k", "2", "--pattern", "dealsWith(Cuba, *)", "--format", "summary", "-q",
               "--save-dtable", str(saved)], umask)
    assert r.returncode == 0, r.stderr
    assert stat.S_IMODE(os.stat(saved).st_mode) == mode | (0o111 & ~umask)
    assert all(stat.S_IMODE(os.stat(p).st_mode) == mode for p in saved.iterdir())
    ev = tmp_path / "ev"
    assert _selp(["eval", *TRADE, "--out", str(ev)], umask).returncode == 0
    assert {stat.S_IMODE(os.stat(p).st_mode) for p in ev.iterdir()} == {mode}


def test_a_replaced_file_keeps_its_mode_and_a_symlink_stays(tmp_path: Path) -> None:
    real = tmp_path / "real.json"
    real.write_text("old")
    os.chmod(real, 0o640)
    link = tmp_path / "link.json"
    link.symlink_to(real)
    assert _selp(TOPK_JSON + [str(link)]).returncode == 0
    assert link.is_symlink() and json.loads(real.read_text())["k"] == 2
    assert stat.S_IMODE(os.stat(real).st_mode) == 0o640


def test_a_failed_write_leaves_the_old_file_and_no_temp(tmp_path: Path) -> None:
    out = tmp_path / "o.txt"
    out.write_text("old")
    with pytest.raises(RuntimeError):
        with open_output(out) as fh:
            fh.write("half")
            raise RuntimeError("interrupted")
    assert out.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["o.txt"]
    with pytest.raises(KeyboardInterrupt):
        with output_dir(tmp_path / "d") as d:
            (d / "x").write_text("half")
            raise KeyboardInterrupt
    assert [p.name for p in tmp_path.iterdir()] == ["o.txt"]


def test_a_directory_output_never_replaces_a_file(tmp_path: Path) -> None:
    f = tmp_path / "plain"
    f.write_text("keep")
    with pytest.raises(SelpError, match="not a directory"):
        with output_dir(f):
            pass
    r = _selp(["topk", *TRADE, "-k", "1", "--pattern", "dealsWith(Cuba, *)", "-q", "--save-dtable", str(f)])
    assert r.returncode != 0 and "is a file" in r.stderr and "Traceback" not in r.stderr
    assert f.read_text() == "keep"


def test_an_unwritable_target_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("")  # a file where the parent directory should be
    with pytest.raises(SelpError, match="cannot write"):
        write_text(tmp_path / "f" / "x", "a")
