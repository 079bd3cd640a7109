"""The ``selp`` command as a user runs it: a real process, and the shape of a refusal."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from helpers.paths import ROOT


def selp(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None, input: str | None = None) -> subprocess.CompletedProcess:
    """``python -m selp ARGS`` in a new process (from the repository root unless ``cwd``; ``input``
    is its stdin)."""
    # a developer's own SELP_ENGINE must not change what the tests see
    full_env = {k: v for k, v in os.environ.items() if k != "SELP_ENGINE"}
    full_env.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "selp", *args],
        capture_output=True,
        text=True,
        input=input,
        env=full_env,
        cwd=cwd or ROOT,
        timeout=300,
    )


def one_error_line(r: subprocess.CompletedProcess, code: int = 1) -> str:
    """The single stderr line of a refused command (after checking that it is one)."""
    assert r.returncode == code, (r.returncode, r.stdout[:500], r.stderr[:2000])
    assert "Traceback" not in r.stderr, r.stderr[-2000:]
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), r.stderr[:2000]
    return lines[0]
