"""Daemons a test starts that must not outlive the test process, however it ends.

A test run killed with SIGKILL (a timeout, a cancelled CI job) runs no teardown, and daemons
started in a session of their own -- the cluster fixture's Spark master and workers -- were
left running (twelve stale JVMs once). :func:`die_with_parent` makes the kernel kill the child
when the process that started it dies (Linux ``PR_SET_PDEATHSIG``; kept across ``exec``, so
``spark-class``'s final ``exec java`` inherits it)."""

from __future__ import annotations

import ctypes
import os
import signal
import sys
from typing import Callable

_PR_SET_PDEATHSIG = 1


def die_with_parent() -> Callable[[], None]:
    """A ``preexec_fn`` for :class:`subprocess.Popen`: the child gets a session of its own (so
    its group can be stopped as one) and SIGKILL when the starting process dies."""
    parent = os.getpid()

    def setup() -> None:
        os.setsid()
        if sys.platform.startswith("linux"):
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != parent:  # the parent died before the setting took: die now
            os._exit(1)

    return setup
