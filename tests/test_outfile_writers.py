"""Every writer of a user-named file goes through selp.outfile: a FIFO (read by a thread) and a
device node stay what they are and receive the output, new files follow the umask, a symlink is
followed (issue: `--out /dev/null` replaced /dev/null)."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TRADE = ["examples/trade/trade.dl", "--db", "examples/trade/db"]
PATTERN = "dealsWith(Cuba, *)"


@dataclass(frozen=True)
class Writer:
    """A command writing ``{out}``; ``name`` is the file it writes inside ``{out}`` for a
    directory writer (None: ``{out}`` is the file) and ``expect`` a piece of its content."""

    args: tuple[str, ...]
    name: str | None
    expect: bytes


WRITERS = {
    "topk --out": Writer(("topk", *TRADE, "-k", "2", "--pattern", PATTERN, "--format", "json", "-q", "--out", "{out}"),
                         None, b'"dealsWith"'),
    "trees --out": Writer(("trees", "{dtable}", "--format", "json", "--out", "{out}"), None, b'"dealsWith"'),
    "instrument --out": Writer(("instrument", TRADE[0], "--pattern", PATTERN, "--out", "{out}"), None, b":-"),
    "cdss compile --out": Writer(("cdss", "compile", "examples/cdss/bio", "--out", "{out}"), None, b":-"),
    "eval --out": Writer(("eval", *TRADE, "--out", "{out}", "-q"), "dealsWith.csv", b"Cuba"),
    "gen tc": Writer(("gen", "tc", "--nodes", "20", "--edges", "30", "--out", "{out}"), "edge.csv", b"src,dst"),
    "gen transit-stub": Writer(("gen", "transit-stub", "--out", "{out}"), "link.csv", b"src,dst"),
}


def _selp(args: list[str], umask: int = 0o022) -> subprocess.CompletedProcess:
    def pre() -> None:
        os.umask(umask)

    return subprocess.run([sys.executable, "-m", "selp", *args], cwd=ROOT, capture_output=True,
                          preexec_fn=pre, timeout=180)


@pytest.fixture(scope="module")
def dtable(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("saved") / "dt"
    r = _selp(["topk", *TRADE, "-k", "2", "--pattern", PATTERN, "--format", "summary", "-q", "--save-dtable", str(d)])
    assert r.returncode == 0, r.stderr
    return d


def _run(w: Writer, out: Path, dtable: Path, umask: int = 0o022) -> subprocess.CompletedProcess:
    args = [a.format(out=out, dtable=dtable) for a in w.args]
    return _selp(args, umask)


def _target(w: Writer, tmp_path: Path) -> tuple[Path, Path]:
    """(the ``{out}`` argument, the file the writer writes)."""
    if w.name is None:
        return tmp_path / "out", tmp_path / "out"
    (tmp_path / "out").mkdir()
    return tmp_path / "out", tmp_path / "out" / w.name


@pytest.mark.parametrize("writer", list(WRITERS))
def test_a_fifo_target_is_written_in_place(writer: str, tmp_path: Path, dtable: Path) -> None:
    w = WRITERS[writer]
    out, fifo = _target(w, tmp_path)
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()), daemon=True)
    reader.start()
    r = _run(w, out, dtable)
    reader.join(60)
    assert r.returncode == 0, r.stderr.decode()
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    assert got and w.expect in got[0]


@pytest.mark.skipif(os.geteuid() != 0, reason="making a device node needs root")
@pytest.mark.parametrize("writer", list(WRITERS))
def test_a_device_target_stays_a_device(writer: str, tmp_path: Path, dtable: Path) -> None:
    w = WRITERS[writer]
    out, dev = _target(w, tmp_path)
    os.mknod(dev, 0o666 | stat.S_IFCHR, os.makedev(1, 3))  # a copy of /dev/null's node
    r = _run(w, out, dtable)
    assert r.returncode == 0, r.stderr.decode()
    assert stat.S_ISCHR(os.stat(dev).st_mode)
    assert not [p for p in dev.parent.iterdir() if p.name.startswith(".")]  # no temp file left


@pytest.mark.parametrize("umask, mode", [(0o022, 0o644), (0o077, 0o600)])
@pytest.mark.parametrize("writer", list(WRITERS))
def test_new_files_get_the_umask_mode(writer: str, umask: int, mode: int, tmp_path: Path, dtable: Path) -> None:
    w = WRITERS[writer]
    out = tmp_path / "new"
    r = _run(w, out, dtable, umask)
    assert r.returncode == 0, r.stderr.decode()
    files = [out] if w.name is None else [p for p in out.rglob("*") if p.is_file()]
    assert files and {stat.S_IMODE(os.stat(p).st_mode) for p in files} == {mode}
    if w.name is not None:
        assert stat.S_IMODE(os.stat(out).st_mode) == mode | (0o111 & ~umask)


@pytest.mark.parametrize("writer", list(WRITERS))
def test_a_symlink_target_replaces_the_file_it_points_to(writer: str, tmp_path: Path, dtable: Path) -> None:
    w = WRITERS[writer]
    out, target = _target(w, tmp_path)
    real = tmp_path / "real"
    real.write_bytes(b"old")
    os.chmod(real, 0o640)
    target.symlink_to(real)
    r = _run(w, out, dtable)
    assert r.returncode == 0, r.stderr.decode()
    assert target.is_symlink() and w.expect in real.read_bytes()
    assert stat.S_IMODE(os.stat(real).st_mode) == 0o640


def test_the_cdss_store_is_readable_under_umask_022(tmp_path: Path) -> None:
    """The store and its epochs are directories made with mkdtemp (0700) and renamed into place:
    they get the mode mkdir would give, so others can read an exchange's results."""
    import shutil

    d = tmp_path / "bio"
    shutil.copytree(ROOT / "examples" / "cdss" / "bio", d)
    for args in (["cdss", "init", str(d)], ["cdss", "exchange", str(d), "--peer", "PGUS", "-q"]):
        r = _selp(args)
        assert r.returncode == 0, r.stderr.decode()
    dirs = [p for p in (d / ".selp").rglob("*") if p.is_dir()] + [d / ".selp"]
    assert len(dirs) >= 3 and {stat.S_IMODE(os.stat(p).st_mode) for p in dirs} == {0o755}


def test_gen_into_a_file_is_refused(tmp_path: Path) -> None:
    f = tmp_path / "f"
    f.write_text("keep")
    r = _selp(["gen", "tc", "--nodes", "20", "--edges", "30", "--out", str(f)])
    err = r.stderr.decode()
    assert r.returncode == 2 and "is a file" in err and str(f) in err and "Traceback" not in err
    assert f.read_text() == "keep"


@pytest.mark.spark
def test_spark_eval_writes_a_fifo_in_place_and_new_files_with_the_umask(tmp_path: Path) -> None:
    """Spark writes its part files through Hadoop (its own umask setting); the move into place
    goes through selp.outfile."""
    out = tmp_path / "out"
    out.mkdir()
    fifo = out / "dealsWith.csv"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()), daemon=True)
    reader.start()
    r = _selp(["eval", *TRADE, "--engine", "spark", "--out", str(out), "-q"], 0o027)
    reader.join(60)
    assert r.returncode == 0, r.stderr.decode()
    assert stat.S_ISFIFO(os.stat(fifo).st_mode) and got and b"Cuba" in got[0]
    assert [p.name for p in out.iterdir()] == ["dealsWith.csv"]  # no temp files or .crc left
    new = tmp_path / "new"
    r = _selp(["eval", *TRADE, "--engine", "spark", "--out", str(new), "--format", "parquet", "-q"], 0o027)
    assert r.returncode == 0, r.stderr.decode()
    assert [p.name for p in new.iterdir()] == ["dealsWith.parquet"]
    assert stat.S_IMODE(os.stat(new / "dealsWith.parquet").st_mode) == 0o640
    assert stat.S_IMODE(os.stat(new).st_mode) == 0o750
