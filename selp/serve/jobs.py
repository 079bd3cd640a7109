"""Long computations of ``selp serve``, each in a worker process: progress while it runs, and a
cancel that really stops it (the process is terminated; a thread running DuckDB or a Python
fixpoint cannot be interrupted).

A job is identified by its parameters (its *key*): asking again for the same thing finds the
running or finished job, so a page that reloads itself to show a result, the next page of a
large answer and its JSON and DOT links all reuse one computation. Finished jobs are kept, the
most recent :data:`KEEP` of them.

Workers start from a fork server that has already imported selp (``set_forkserver_preload``):
a fork of a small single-threaded process, not of the server with its threads, and no second
import of DuckDB per job.
"""

from __future__ import annotations

import itertools
import multiprocessing
import threading
import time
import traceback
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Callable

from selp.errors import SelpError, one_line

KEEP = 32  # finished jobs kept for reloads, pages and links
# imported once by the fork server: a job starts in milliseconds, not after importing DuckDB
PRELOAD = ["selp.serve.work", "selp.topk.api", "selp.topk.trees", "selp.engines.registry", "selp.cdss.explain", "duckdb"]


@dataclass
class Job:
    """One computation: ``status`` is running, done, failed or cancelled; ``error`` the one-line
    message of a failure (``user_error``: the input's fault, a 4xx; else the server's)."""

    id: str
    key: tuple
    started: float = field(default_factory=time.monotonic)
    status: str = "running"
    progress: str = ""
    result: Any = None
    error: str = ""
    user_error: bool = False
    seconds: float = 0.0
    process: Any = None

    def public(self) -> dict[str, Any]:
        """What ``GET /jobs/ID`` answers."""
        elapsed = self.seconds if self.status != "running" else time.monotonic() - self.started
        return {"id": self.id, "status": self.status, "progress": self.progress, "error": self.error, "seconds": round(elapsed, 2)}


def _child(fn: Callable[..., Any], args: tuple, conn: Any) -> None:
    """The worker process: run ``fn(*args, progress=...)``, send progress lines, then the result
    or a one-line error (a traceback goes to the server's stderr only)."""

    def progress(text: str) -> None:
        conn.send(("progress", text))

    try:
        conn.send(("done", fn(*args, progress=progress)))
    except SelpError as err:
        conn.send(("user", one_line(str(err))))
    except RecursionError:
        conn.send(("user", "too deeply nested to process: a derivation tree (or an input) is deeper than Python's recursion allows"))
    except BaseException as err:  # noqa: BLE001 - reported, never shown as a traceback page
        traceback.print_exc()
        conn.send(("failed", one_line(f"internal error: {type(err).__name__}: {err}")))
    finally:
        conn.close()


class Jobs:
    """The jobs of one server; at most ``workers`` run at once, the others wait their turn."""

    def __init__(self, workers: int = 2) -> None:
        self.workers = workers
        self._ctx = multiprocessing.get_context("forkserver")
        self._ctx.set_forkserver_preload(PRELOAD)
        self._jobs: OrderedDict[str, Job] = OrderedDict()
        self._by_key: dict[tuple, str] = {}
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._slots = threading.Semaphore(workers)

    def warm(self) -> None:
        """Start the fork server now (it imports :data:`PRELOAD`), not at the first job."""
        from multiprocessing import forkserver

        forkserver.ensure_running()

    def find(self, key: tuple) -> Job | None:
        """The latest job of ``key`` (running, or ended in any way), if still kept."""
        with self._lock:
            return self._jobs.get(self._by_key.get(key, ""))

    def get(self, job_id: str) -> Job | None:
        with self._lock:
            return self._jobs.get(job_id)

    def submit(self, key: tuple, fn: Callable[..., Any], *args: Any) -> Job:
        """A new job for ``key``: ``fn(*args)`` in a worker process, started as soon as fewer
        than ``workers`` jobs run (until then it waits, and can be cancelled)."""
        with self._lock:
            job = Job(str(next(self._ids)), key, progress="waiting for a free worker")
            self._jobs[job.id] = job
            self._by_key[key] = job.id
            self._forget()
        threading.Thread(target=self._run, args=(job, fn, args), daemon=True).start()
        return job

    def _run(self, job: Job, fn: Callable[..., Any], args: tuple) -> None:
        with self._slots:
            with self._lock:
                if job.status != "running":
                    return  # cancelled while waiting
                parent, child = self._ctx.Pipe(duplex=False)
                job.process = self._ctx.Process(target=_child, args=(fn, args, child), daemon=True)
                job.process.start()
                job.progress = "started"
            child.close()
            self._watch(job, parent)

    def _watch(self, job: Job, conn: Any) -> None:
        """Read the worker's messages until its result (or its end)."""
        try:
            while True:
                kind, payload = conn.recv()
                if kind == "progress":
                    job.progress = payload
                    continue
                if kind == "done":
                    job.result = payload
                else:
                    job.error, job.user_error = payload, kind == "user"
                self._finish(job, "done" if kind == "done" else "failed")
                break
        except (EOFError, OSError):  # the worker ended without a result: cancelled, or killed
            self._finish(job, "failed", "the computation stopped without a result (its worker process ended)")
        finally:
            conn.close()
            job.process.join(timeout=5)  # reaped: no zombie per job

    def _finish(self, job: Job, status: str, error: str = "") -> None:
        with self._lock:
            if job.status != "running":
                return  # cancelled meanwhile
            job.status = status
            job.error = job.error or error
            job.seconds = time.monotonic() - job.started

    def cancel(self, job_id: str) -> Job | None:
        """Stop a running job (its worker is terminated); the job, or None if unknown."""
        job = self.get(job_id)
        if job is None:
            return None
        with self._lock:
            if job.status == "running":
                job.status = "cancelled"
                job.seconds = time.monotonic() - job.started
                if job.process is not None:
                    job.process.terminate()
        return job

    def _forget(self) -> None:
        finished = [j for j in self._jobs.values() if j.status != "running"]
        for job in finished[: max(0, len(finished) - KEEP)]:
            del self._jobs[job.id]
            if self._by_key.get(job.key) == job.id:
                del self._by_key[job.key]

    def close(self) -> None:
        """Terminate every running worker (the server is stopping)."""
        with self._lock:
            for job in self._jobs.values():
                if job.status == "running":
                    job.status = "cancelled"
                    if job.process is not None:
                        job.process.terminate()

