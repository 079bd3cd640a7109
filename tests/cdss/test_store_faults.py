"""Fault injection into a CDSS store: every kind of file it holds (the SQLite catalog, epoch
Parquet files, the exchange lock, cdss.toml) damaged one at a time -- truncated, emptied or
overwritten with random bytes -- in a copy of a store built by the README's walkthrough. Every
read command must then fail with one ``error:`` line naming the problem (never a traceback) or
succeed, recovering where the damaged file is derived data.

The commands run in-process (click's runner: the same command code and error handling, without a
second's interpreter start per command); the last tests run real processes, for the process'
own exit code and stderr."""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from helpers.cli import selp
from selp.cli import main


def _epoch_file(root: Path, name: str) -> str:
    (found,) = (root / ".selp" / "instances").glob(f"epoch-*/{name}")
    return str(found.relative_to(root))


# the files a store holds, by kind: the catalog, the lock, the configuration, and instance
# files of each kind a command reads (a peer's output, a provenance relation, base data)
FILES = [
    ".selp/store.sqlite",
    ".selp/exchange.lock",
    "cdss.toml",
    "epoch:B_o.parquet",
    "epoch:P_m1.parquet",
    "epoch:G_l.parquet",
]
MODES = ["truncate", "zero", "random"]

READS = [
    ("check",),
    ("status",),
    ("log",),
    ("query", "--peer", "PBioSQL", "B"),
    ("explain", "--peer", "PBioSQL", "B(3, 2)"),
    ("trust", "--peer", "PBioSQL"),
]


def _damage(path: Path, mode: str) -> None:
    data = path.read_bytes()
    if mode == "truncate":
        path.write_bytes(data[: len(data) // 2])
    elif mode == "zero":
        path.write_bytes(b"")
    else:
        path.write_bytes(random.Random(f"{path.name}:{len(data)}").randbytes(max(len(data), 64)))


def _run(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


def _clean(r: Result, what: object) -> None:
    """Succeeded, or failed with exactly one ``error:`` line; never an uncaught exception (which
    a real process would print as a traceback)."""
    assert r.exception is None or isinstance(r.exception, SystemExit), (what, repr(r.exception))
    assert "Traceback" not in r.stderr, (what, r.stderr[-2000:])
    if r.exit_code == 0:
        return
    assert r.exit_code == 1, (what, r.exit_code, r.stderr[-2000:])
    errors = [ln for ln in r.stderr.splitlines() if ln.startswith("error: ")]
    assert len(errors) == 1 and r.stderr.strip() == errors[0], (what, r.stderr[-2000:])


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("target", FILES)
def test_damaged_store_file(bio_store: Path, tmp_path: Path, target: str, mode: str) -> None:
    d = tmp_path / "bio"
    shutil.copytree(bio_store, d)
    rel = _epoch_file(d, target.split(":", 1)[1]) if target.startswith("epoch:") else target
    _damage(d / rel, mode)
    outcomes = {}
    for args in READS:
        r = _run("cdss", args[0], str(d), *args[1:])
        _clean(r, args)
        outcomes[args[0]] = r
    r = _run("proql", str(d), "FOR [B $x] INCLUDE PATH [$x] <-+ [] RETURN $x")
    _clean(r, "proql")
    outcomes["proql"] = r
    if target.startswith("epoch:"):
        # derived data: a read names the file and the command that rebuilds it ...
        failed = [r for r in outcomes.values() if r.exit_code != 0]
        assert outcomes["check"] in failed  # check reads every instance file a peer relies on
        for f in failed:
            assert rel in f.stderr and f"selp cdss exchange {d} --peer PBioSQL" in f.stderr, f.stderr
        # ... and an incremental exchange recovers by recomputing, after which reads work
        r = _run("cdss", "exchange", str(d), "--peer", "PBioSQL", "-q", "--strategy", "provenance")
        assert r.exit_code == 0 and "recomputing from the edit log" in r.stderr, r.stderr[-2000:]
        for args in READS:
            assert _run("cdss", args[0], str(d), *args[1:]).exit_code == 0, args
        assert _run("proql", str(d), "FOR [B $x] RETURN $x").exit_code == 0
    else:
        for strategy in ("provenance", "recompute"):
            r = _run("cdss", "exchange", str(d), "--peer", "PBioSQL", "-q", "--strategy", strategy)
            _clean(r, ("exchange", strategy))
    if target == ".selp/store.sqlite":
        for r in outcomes.values():
            if r.exit_code != 0:
                assert "store.sqlite: the store database is damaged" in r.stderr and "restore it" in r.stderr, r.stderr
        assert outcomes["status"].exit_code != 0  # the catalog is what status reads


def test_truncated_epoch_file_names_itself_in_query_and_proql(bio_store: Path, tmp_path: Path) -> None:
    d = tmp_path / "bio"
    shutil.copytree(bio_store, d)
    rel = _epoch_file(d, "B_o.parquet")
    _damage(d / rel, "truncate")
    for r in (selp("cdss", "query", str(d), "--peer", "PBioSQL", "B"), selp("proql", str(d), "FOR [B $x] RETURN $x")):
        assert "Traceback" not in r.stderr, r.stderr[-2000:]
        assert r.returncode == 1 and r.stderr.strip() == r.stderr.strip().splitlines()[0], r.stderr
        assert f"error: {d / rel}: damaged instance file" in r.stderr, r.stderr


def test_damaged_catalog_is_one_line_from_a_real_process(bio_store: Path, tmp_path: Path) -> None:
    d = tmp_path / "bio"
    shutil.copytree(bio_store, d)
    _damage(d / ".selp" / "store.sqlite", "random")
    r = selp("cdss", "status", str(d))
    assert "Traceback" not in r.stderr, r.stderr[-2000:]
    assert r.returncode == 1 and r.stderr.strip().startswith("error: ") and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert "store.sqlite: the store database is damaged" in r.stderr and "restore it" in r.stderr, r.stderr
