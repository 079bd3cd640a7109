"""A time limit on brute-force checks, whose cost explodes on a few random cases."""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Iterator


class TooSlow(Exception):
    """Raised by :func:`time_limit` when the time is up."""


@contextlib.contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Abort brute-force enumeration that would take minutes (a few random cases explode)."""

    def on_alarm(signum, frame):
        # raised inside a gc callback the exception is swallowed: fire again until it lands
        signal.setitimer(signal.ITIMER_REAL, 0.05)
        raise TooSlow()

    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
