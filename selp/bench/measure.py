"""Memory figures of the processes a benchmark measures: peak and current RSS from ``/proc``.

Linux first (``/proc/PID/status``, ``clear_refs`` to reset a peak); where ``/proc`` is missing the
functions return None or fall back to ``getrusage``.
"""

from __future__ import annotations

import resource
from typing import Any


def rss_mb() -> float:
    """Peak RSS of this process in MiB.

    ``VmHWM`` first: ``ru_maxrss`` survives ``exec`` (Linux keeps the pre-exec peak), so in a
    freshly spawned worker it reports the *parent's* size at fork time (100+ MiB under a Spark
    driver) instead of the worker's own; ``VmHWM`` belongs to the new address space. Where /proc is
    missing, ``ru_maxrss`` (KiB on Linux) is the fallback.
    """
    peak = peak_rss_mb_of("self")
    return peak if peak is not None else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def reset_peak_rss(pid: int | str = "self") -> bool:
    """Reset the kernel's peak-RSS mark of a process (Linux ``clear_refs`` 5); False if refused."""
    try:
        with open(f"/proc/{pid}/clear_refs", "w") as fh:
            fh.write("5")
        return True
    except OSError:
        return False


def proc_status_mb(pid: int | str, field: str) -> float | None:
    """A kB field of ``/proc/PID/status`` (``VmRSS``, ``VmHWM``) in MiB, or None where /proc is
    unavailable or the process is gone."""
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def peak_rss_mb_of(pid: int | str) -> float | None:
    """``VmHWM`` (peak RSS) of a process in MiB, or None where /proc is unavailable."""
    return proc_status_mb(pid, "VmHWM")


def jvm_pid(spark: Any) -> int | None:
    """The process id of the session's driver JVM, or None where it cannot be asked (e.g. a
    remote driver)."""
    try:
        return int(spark._jvm.java.lang.ProcessHandle.current().pid())
    except Exception:  # noqa: BLE001
        return None
