"""The cluster fixture's daemons die with the test process that started them, even when it is
killed with SIGKILL and runs no teardown (stale Spark JVMs were left behind that way)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from helpers.paths import ROOT

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")

PARENT = """
import subprocess, sys, time
from helpers.orphans import die_with_parent
child = subprocess.Popen(["sleep", "600"], preexec_fn=die_with_parent())
print(child.pid, flush=True)
time.sleep(600)
"""


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"  # a zombie has died
    except FileNotFoundError:
        return False


def test_a_daemon_dies_when_its_starting_process_is_killed() -> None:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "tests"), str(ROOT)]))
    parent = subprocess.Popen([sys.executable, "-c", PARENT], stdout=subprocess.PIPE, text=True, env=env)
    try:
        child = int(parent.stdout.readline())  # type: ignore[union-attr]
        assert _alive(child) and os.getsid(child) == child  # its own session: stoppable as a group
        parent.send_signal(signal.SIGKILL)
        parent.wait(timeout=10)
        deadline = time.monotonic() + 10
        while _alive(child) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _alive(child), "the daemon outlived the process that started it"
    finally:
        if parent.poll() is None:
            parent.kill()
