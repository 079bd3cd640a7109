"""``selp cdss delete``: Examples 18 and 19 of [Kar09] §5.3 through real processes, over the
durable store; what it says; an exchange interrupted after the deletions were published."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from helpers.cli import one_error_line, selp
from helpers.paths import POLICY
from selp.cli import main


def store(tmp_path: Path, avoid_at_pt: bool = False) -> Path:
    """The policy example with its local data published and exchanged by PT (in-process setup)."""
    d = tmp_path / "policy"
    shutil.copytree(POLICY, d)
    if avoid_at_pt:
        toml = d / "cdss.toml"
        toml.write_text(toml.read_text().replace('side_effects = "tolerate"', 'side_effects = "avoid"'))
    run = lambda *a: CliRunner().invoke(main, ["cdss", *map(str, a)])  # noqa: E731
    assert run("init", d).exit_code == 0
    for peer, rel in [("PR", "R"), ("PR", "S"), ("PT", "V"), ("PU", "U")]:
        res = run("import", d, "--peer", peer, "--relation", rel, d / "data" / peer / f"{rel}.csv")
        assert res.exit_code == 0, res.output
    for peer in ("PR", "PT", "PU"):
        assert run("publish", d, "--peer", peer).exit_code == 0
    assert run("exchange", d, "--peer", "PT", "-q").exit_code == 0
    return d


def instance(d: Path) -> dict[str, set[str]]:
    """PT's instance as `selp cdss query` prints it (in-process: the deletions run as processes)."""
    out = {}
    for rel in "RSTVU":
        r = CliRunner().invoke(main, ["cdss", "query", str(d), "--peer", "PT", rel, "--format", "csv"])
        assert r.exit_code == 0, r.output
        out[rel] = set(r.output.splitlines()[1:])
    return out


def test_example_18_through_the_cli(tmp_path):
    d = store(tmp_path)
    r = selp("cdss", "delete", str(d), "--peer", "PT", "T(1, 1, 1)", "T(3, 2, 3)", "-q")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "delete at PT: T(1, 1, 1), T(3, 2, 3) (side effects tolerated)"
    assert lines[1] == (
        "  update policies delete: R(1, 1), R(3, 2), T(1, 1, 1), T(3, 2, 3), V(4, 1), V(5, 3), U(1, 1, 1), U(3, 2, 3)"
    )
    assert lines[2] == "  local data deleted: PR: R(1, 1), R(3, 2); PT: V(5, 3); PU: U(3, 2, 3)"
    assert lines[3] == "  side effects: S(3, 3, 5) at PR, T(1, 1, 2) at PT, U(1, 1, 2) at PU"
    assert lines[-1].startswith("PT now reflects publication 6 (epoch 2, recompute, embedded): R 0, S 2, T 0, V 0, U 0")
    assert instance(d) == {"R": set(), "S": {"1,1,4", "1,2,4"}, "T": set(), "V": set(), "U": set()}
    # the deletions are ordinary published edits of their peers, in their logs
    r = CliRunner().invoke(main, ["cdss", "log", str(d), "--peer", "PR"])
    assert "(publication 4)\n      7 -R(1, 1)  delete\n      8 -R(3, 2)  delete" in r.output


def test_example_19_avoids_side_effects_on_t(tmp_path):
    d = store(tmp_path, avoid_at_pt=True)  # PT's administrator: side_effects = "avoid"
    r = selp("cdss", "delete", str(d), "--peer", "PT", "T(1, 1, 1)", "T(3, 2, 3)", "-q")
    assert r.returncode == 0, r.stderr
    out = r.stdout.splitlines()
    assert out[0] == "delete at PT: T(1, 1, 1), T(3, 2, 3) (avoiding side effects at PT)"
    assert "  local data deleted: PR: R(3, 2); PT: V(5, 3); PU: U(3, 2, 3)" in out
    assert "  kept back: R(1, 1) of PR: deleting it would also delete T(1, 1, 2) at PT" in out
    assert "  side effects: S(3, 3, 5) at PR" in out
    assert "  not performed: T(1, 1, 1) (a deletion that derives it was kept back)" in out
    assert instance(d) == {
        "R": {"1,1"}, "S": {"1,1,4", "1,2,4"}, "T": {"1,1,1", "1,1,2"}, "V": {"4,1"}, "U": {"1,1,1", "1,1,2"},
    }


def test_dry_run_records_nothing_and_errors_are_one_line(tmp_path):
    d = store(tmp_path)
    before = instance(d)
    r = selp("cdss", "delete", str(d), "--peer", "PT", "T(1, 1, 1)", "--tolerate-side-effects", "--dry-run", "-q")
    assert r.returncode == 0 and "dry run" in r.stdout.splitlines()[0]
    assert instance(d) == before
    assert CliRunner().invoke(main, ["cdss", "log", str(d), "--peer", "PR"]).output.count("batch") == 2
    assert one_error_line(selp("cdss", "delete", str(d), "--peer", "PT", "T(9, 9, 9)")) == (
        "error: cannot delete T(9, 9, 9): not in the instance"
    )
    assert "PR has no relation T" in one_error_line(selp("cdss", "delete", str(d), "--peer", "PR", "T(1, 1, 1)"))
    assert "not current" in one_error_line(
        selp("cdss", "delete", str(d), "--peer", "PU", "U(1, 1, 1)")  # PU never exchanged
    )


def test_interrupted_exchange_leaves_the_last_consistent_state(tmp_path):
    d = store(tmp_path)
    before = instance(d)
    # another process holds the exchange lock: the deletions get published, the exchange is refused
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import fcntl, os, sys, time; fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT); "
         "fcntl.flock(fd, fcntl.LOCK_EX); print('locked', flush=True); time.sleep(60)",
         str(d / ".selp" / "exchange.lock")],
        stdout=subprocess.PIPE, text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "locked"
        r = selp("cdss", "delete", str(d), "--peer", "PT", "T(1, 1, 1)", "T(3, 2, 3)", "--wait", "0", "-q")
        assert "the store is busy" in one_error_line(r)
    finally:
        holder.kill()
        holder.wait()
    assert instance(d) == before  # the previous epoch is what PT reads
    r = selp("cdss", "exchange", str(d), "--peer", "PT", "-q")
    assert r.returncode == 0, r.stderr
    assert instance(d)["S"] == {"1,1,4", "1,2,4"} and instance(d)["T"] == set()
