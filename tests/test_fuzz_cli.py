"""Fuzz the CLI with hostile input: no traceback, no hang, a one-line ``error:`` when refused.

A fixed seed generates programs (``check``), patterns (``instrument``, ``topk``), selPQL queries,
``-k`` values, ``--fact`` labels, monoid names and ProQL queries -- token soup, deep nesting,
huge integers, long names, odd Unicode. Each input is one CLI command line; the invariant is:

* no Python traceback, on stderr or anywhere;
* it finishes within :data:`TIMEOUT` seconds;
* exit 0, or exit 1 with exactly one stderr line starting ``error: ``, or exit 2 (a click usage
  error, whose ``Error:`` line follows the usage text);
* a monoid name never imports a module (``this`` would print the Zen of Python).

Starting a Python process with DuckDB costs about half a second, so the inputs run in batches:
each batch is a subprocess (this file with ``--driver``) that runs its commands one after the
other through ``click.testing.CliRunner`` with an alarm per command; a few inputs also run as
real ``python -m selp`` processes, to cover the process' own exit code and stderr. The default
corpus (about 200 inputs) takes well under a minute; ``SELP_FUZZ_N=5000`` runs a larger one,
``SELP_FUZZ_SEED`` another seed.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

# run as the --driver script too: its folder (tests/) is then first on sys.path
from helpers.paths import BIO, ROOT, TRADE

TIMEOUT = 20.0  # seconds per command
N = int(os.environ.get("SELP_FUZZ_N", "200"))
SEED = int(os.environ.get("SELP_FUZZ_SEED", "20261124"))
BATCH = 50

# --- generators ---------------------------------------------------------------------------------

NAMES = ["dealsWith", "exports", "imports", "dealsWith_edb", "nosuch", "p", "q", "x", "y", "_", "not",
         "AND", "or", "NOT", "Cuba", "France", "a" * 300, "é", "ß", "tc", "r1", "deals*", "*"]
ODD = ["\u202e", "\u0000", "\ufeff", "𝔸", "３", "\t", "\n", "\r\n", "%", "//", "\\", '"', "'", "$", "@", "!"]


def _int(rng: random.Random) -> str:
    return rng.choice(["0", "-1", "7", "9223372036854775807", "9223372036854775808", "-9223372036854775809",
                       "9" * rng.choice([19, 20, 100, 4300, 4301, 6000]), "+3", "007"])


def _string(rng: random.Random) -> str:
    body = rng.choice(["", "x", "a b", "\\n", "\\", "\\x", "\\N{nosuch}", "é" * 50, "q" * 5000])
    return '"' + body + '"'


def _term(rng: random.Random, depth: int = 0) -> str:
    r = rng.random()
    if r < 0.3:
        return rng.choice(NAMES[:12])
    if r < 0.5:
        return _int(rng)
    if r < 0.6:
        return _string(rng)
    if r < 0.75 and depth < 4:
        return f"f({', '.join(_term(rng, depth + 1) for _ in range(rng.randint(0, 2)))})"
    if r < 0.8:
        n = rng.choice([50, 199, 201, 600, 3000])
        return "f(" * n + "x" + ")" * n
    return rng.choice(NAMES + ODD)


def _atom(rng: random.Random) -> str:
    args = ", ".join(_term(rng) for _ in range(rng.randint(0, 3)))
    return f"{rng.choice(NAMES)}({args})" if rng.random() < 0.9 else rng.choice(NAMES)


def program(rng: random.Random) -> str:
    """A few statements, mostly well-formed, with hostile pieces mixed in."""
    out = []
    for _ in range(rng.randint(1, 4)):
        r = rng.random()
        if r < 0.6:
            body = ", ".join(("not " if rng.random() < 0.2 else "") + _atom(rng) for _ in range(rng.randint(1, 3)))
            label = rng.choice(["", "r1: ", "(0.5): ", "r (2): ", "(" + _int(rng) + "): "])
            out.append(f"{label}{_atom(rng)} :- {body}.")
        elif r < 0.75:
            out.append(f"{_atom(rng)}.")
        elif r < 0.85:
            out.append(f".decl {rng.choice(NAMES)}(a: {rng.choice(['str', 'int', 'float'])}, b: int)")
        else:
            toks = [":-", ".", ",", "(", ")", "not", "=", "<", "_", *NAMES[:6], *ODD]
            out.append(" ".join(rng.choice(toks + [_int(rng), _string(rng)]) for _ in range(rng.randint(1, 12))))
    return "\n".join(out) + "\n"


def _node(rng: random.Random) -> str:
    rel = rng.choice(["dealsWith", "exports", "imports", "*", "deals*", "nosuch", "*_edb", "OR", "a" * 200])
    if rng.random() < 0.4:
        return rel
    args = ", ".join(rng.choice(["*", "Cuba", "France", _int(rng), _string(rng), "x*", "NOT"]) for _ in range(rng.randint(0, 3)))
    return f"{rel}({args})"


def pattern(rng: random.Random, depth: int = 0) -> str:
    """A pattern: trees, chains, branches and Boolean combinations, sometimes deep or broken."""
    r = rng.random()
    if r < 0.08:
        n = rng.choice([150, 201, 1000, 5000])
        return "NOT " * n + "dealsWith"
    if r < 0.14:
        n = rng.choice([100, 201, 1000])
        return " // ".join(["dealsWith"] * n)
    if r < 0.18:
        n = rng.choice([100, 201, 2000])
        return "(" * n + "dealsWith" + ")" * n
    if r < 0.25:
        toks = ["NOT", "AND", "OR", "(", ")", "[", "]", "/", "//", ",", "*", "dealsWith", "Cuba", *ODD]
        return " ".join(rng.choice(toks) for _ in range(rng.randint(0, 15)))
    if depth < 3 and r < 0.45:
        op = rng.choice([" AND ", " OR "])
        return "(" + op.join(pattern(rng, depth + 1) for _ in range(rng.randint(2, 3))) + ")"
    if depth < 3 and r < 0.55:
        return "NOT " + pattern(rng, depth + 1)
    node = _node(rng)
    if rng.random() < 0.3:
        return node + f" {rng.choice(['/', '//'])} " + _node(rng)
    if rng.random() < 0.2:
        return node + "[" + ", ".join(f"{rng.choice(['/', '//'])} {_node(rng)}" for _ in range(2)) + "]"
    return node


def k_value(rng: random.Random) -> str:
    return rng.choice(["0", "-1", "1", "2", "3", "+2", "2147483647x", "2147483648", "9" * rng.choice([20, 5000]),
                       "1e3", "0x10", " 3", "", "３", "-0", "00000000000000000002", "two"])


MONOIDS = ["confidence", "cost", "size", "access", "min-confidence", "this:x", "os:system", "subprocess:run",
           "selp.topk.monoid:BUILTIN", "nope", "", "m" * 5000, "Confidence"]


def _small_int(text: str) -> int | None:
    """``text`` as an int when it is plain digits worth at most 50 (no int() of 5000 digits)."""
    t = text.strip()
    return int(t) if t.isascii() and t.isdigit() and len(t.lstrip("0")) <= 2 and int(t) <= 50 else None


def command(rng: random.Random, tmp: Path, i: int) -> list[str]:
    """One CLI command line over a generated input (programs are written under ``tmp``)."""
    base = [str(TRADE / "trade.dl"), "--db", str(TRADE / "db"), "--engine", "reference"]
    kind = rng.choice(["check", "check", "instrument", "topk", "explain", "query", "query", "fact", "proql"])
    if kind == "check":
        prog = tmp / f"p{i}.dl"
        prog.write_text(program(rng), encoding="utf-8", errors="surrogatepass")
        return ["check", str(prog)]
    if kind == "instrument":
        return ["instrument", str(TRADE / "trade.dl"), "--pattern", pattern(rng)]
    # a k that could be large runs only where trees are few or answers bounded: big valid k on the
    # cyclic trade program is a legitimately long computation, not a hostile-input bug
    k = k_value(rng)
    t = k.strip().lstrip("+")
    if t.isascii() and t.isdigit() and len(t) <= 10 and 50 < int(t) <= 2**31 - 1:
        k = "3"
    if kind == "topk":
        return ["topk", *base, "--pattern", pattern(rng), "-k", k, "--monoid", rng.choice(MONOIDS)]
    if kind == "explain":
        return ["explain", *base, _node(rng), "-k", k]
    if kind == "fact":
        return ["topk", *base, "--pattern", "dealsWith", "-k", "2", "--fact", rng.choice([_node(rng), pattern(rng)])]
    if kind == "query":
        top = rng.choice(["TOP", "top", "TOP ", ""]) + " " + rng.choice([k if _small_int(k) is not None else "2", "99999999999999999999", "9" * 5000, "0", "x"])
        return ["query", *base, f"{top} {pattern(rng)} RANK BY {rng.choice(MONOIDS)}"]
    cond = rng.choice(["$x.i = 1", "NOT " * rng.choice([10, 300]) + "$x.i = 1", "$x.i = " + _int(rng), "$x.n = " + _string(rng).replace('"', "'"),
                       " AND ".join(["$x.i = 1"] * 300), "(" * 300 + "$x.i = 1" + ")" * 300, "[$x] <-+ []"])
    return ["proql", str(BIO), rng.choice([f"FOR [B $x] WHERE {cond} RETURN $x", "FOR [B $x RETURN", "EVALUATE nosuch OF { FOR [B $x] RETURN $x }", cond])]


def corpus(n: int, seed: int, tmp: Path) -> list[list[str]]:
    """``n`` command lines from ``seed`` (programs written under ``tmp``)."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        args = command(rng, tmp, i)
        out.append([a.replace("\x00", "\\0") for a in args])  # argv cannot hold NUL
    return out


# --- checking -----------------------------------------------------------------------------------


def problems(args: list[str], code: int, stdout: str, stderr: str, seconds: float, crash: str | None) -> list[str]:
    """What is wrong with one run (empty: it behaved)."""
    what = []
    if crash:
        what.append(f"uncaught exception: {crash}")
    if "Traceback" in stderr or "Traceback" in stdout:
        what.append("a traceback: " + stderr[-500:])
    if seconds > TIMEOUT:
        what.append(f"took {seconds:.1f}s")
    if "Zen of Python" in stdout + stderr:
        what.append("imported the module 'this'")
    if code == 1:
        lines = stderr.splitlines()
        errors = [ln for ln in lines if ln.startswith("error: ")]
        if len(errors) != 1 or len(errors[0]) > 500:
            what.append(f"exit 1 without exactly one short error line: {stderr[-500:]!r}")
    elif code == 2:
        if not any(ln.startswith("Error: ") for ln in stderr.splitlines()):
            what.append(f"exit 2 without an Error: line: {stderr[-500:]!r}")
    elif code != 0:
        what.append(f"exit code {code}")
    return what


def _short(args: list[str]) -> list[str]:
    return [a if len(a) <= 120 else a[:117] + "..." for a in args]


def _run_batch(cases: list[list[str]]) -> list[dict]:
    budget = TIMEOUT * len(cases) + 60
    env = {k: v for k, v in os.environ.items() if k != "SELP_ENGINE"}
    proc = subprocess.run([sys.executable, __file__, "--driver"], input=json.dumps(cases), capture_output=True,
                          text=True, timeout=budget, cwd=ROOT, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout)


def test_fuzz_cli_in_batches(tmp_path: Path) -> None:
    cases = corpus(N, SEED, tmp_path)
    failures = []
    for start in range(0, len(cases), BATCH):
        batch = cases[start:start + BATCH]
        for args, got in zip(batch, _run_batch(batch)):
            bad = problems(args, got["code"], got["stdout"], got["stderr"], got["seconds"], got["crash"])
            if bad:
                failures.append((_short(args), bad))
    assert not failures, "\n".join(f"{a}: {b}" for a, b in failures[:10])


@pytest.mark.parametrize("i", range(6))
def test_fuzz_cli_real_processes(tmp_path: Path, i: int) -> None:
    # a few inputs through the real entry point: exit code and stderr of the process itself
    args = corpus(6, SEED + 1, tmp_path)[i]
    env = {k: v for k, v in os.environ.items() if k != "SELP_ENGINE"}
    import time

    t0 = time.perf_counter()
    try:
        r = subprocess.run([sys.executable, "-m", "selp", *args], capture_output=True, text=True, cwd=ROOT, env=env, timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        pytest.fail(f"timed out: {_short(args)}")
    bad = problems(args, r.returncode, r.stdout, r.stderr, time.perf_counter() - t0, None)
    assert not bad, (_short(args), bad)


# --- the driver: many commands in one process ----------------------------------------------------


def _drive() -> None:
    import signal
    import time
    import traceback

    sys.path.insert(0, str(ROOT))  # the tree under test, whatever is installed
    from click.testing import CliRunner

    from selp.cli import main

    # an internal error must surface as an exception here, not as the one-line exit 3 users see
    os.environ["SELP_TRACEBACK"] = "1"

    class _Timeout(BaseException):
        pass

    def alarm(signum, frame):  # noqa: ANN001
        raise _Timeout()

    signal.signal(signal.SIGALRM, alarm)
    runner = CliRunner()
    out = []
    for args in json.loads(sys.stdin.read()):
        t0 = time.perf_counter()
        signal.setitimer(signal.ITIMER_REAL, TIMEOUT + 1)
        crash = None
        try:
            res = runner.invoke(main, args, catch_exceptions=True)
            code, stdout, stderr = res.exit_code, res.stdout, res.stderr
            if res.exception is not None and not isinstance(res.exception, SystemExit):
                crash = "".join(traceback.format_exception(res.exception))[-1500:]
        except _Timeout:
            code, stdout, stderr = -1, "", ""
            crash = "timeout"
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        out.append({"code": code, "stdout": stdout[-2000:], "stderr": stderr[-2000:], "seconds": time.perf_counter() - t0, "crash": crash})
    json.dump(out, sys.stdout)


if __name__ == "__main__" and sys.argv[1:] == ["--driver"]:
    _drive()
