"""keep_freed_memory (selp.engines.worker_memory): a Spark worker keeps freed blocks for its next
task. On glibc it takes effect, once per process, and a large block freed and asked for again
is served from the heap (no new mapping: the same address)."""

from __future__ import annotations

import platform
import subprocess
import sys

import pytest

from selp.engines.worker_memory import keep_freed_memory


@pytest.mark.skipif(platform.system() != "Linux" or platform.libc_ver()[0] != "glibc", reason="glibc's mallopt")
def test_freed_large_blocks_are_reused_after_keep_freed_memory():
    # in a fresh interpreter: the thresholds are process state
    probe = (
        "import ctypes, ctypes.util\n"
        "from selp.engines.worker_memory import keep_freed_memory\n"
        "libc = ctypes.CDLL(ctypes.util.find_library('c'))\n"
        "libc.malloc.restype = ctypes.c_void_p; libc.malloc.argtypes = [ctypes.c_size_t]; libc.free.argtypes = [ctypes.c_void_p]\n"
        "ok = keep_freed_memory() if KEEP else None\n"
        "p = libc.malloc(64 << 20); libc.memset(ctypes.c_void_p(p), 1, 64 << 20); libc.free(p)\n"
        "q = libc.malloc(64 << 20); libc.free(q)\n"
        "brk = ctypes.CDLL(None).sbrk; brk.restype = ctypes.c_void_p; brk.argtypes = [ctypes.c_long]\n"
        "top = brk(0)\n"
        "print(ok, p == q, p < top, keep_freed_memory())\n"
    )

    def run(keep: bool) -> list[str]:
        code = f"KEEP = {keep}\n" + probe
        return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()

    # it took effect; the 64 MB block came from the heap (below the break), and came back
    assert run(True) == ["True", "True", "True", "True"]
    # without it glibc maps such a block afresh (above the heap) and unmaps it on free
    assert run(False)[2] == "False"


def test_it_is_safe_to_call_anywhere():
    assert keep_freed_memory() in (True, False)
    assert keep_freed_memory() == keep_freed_memory()  # once per process: the same answer
