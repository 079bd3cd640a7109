"""The DTable's hot loop over an integer-coded hypergraph, compiled (C, :file:`_kernel.c`).

The same algorithms as :class:`selp.topk.local._Run` (``top1`` and ``heuristic``), but over
numpy arrays that a SQL engine has already computed: facts are numbers 0..F-1 and every rule
instance (an instantiation of a rule whose body facts all exist) is a hyperedge from its body
facts to its head. Nothing here builds a Python object per candidate or per entry on the
compiled path; the result is a handful of arrays (:class:`KernelResult`).

Input (:class:`Hypergraph`)
    * facts 0..F-1; a leaf (EDB) fact has one initial entry: ``leaf`` (bool), ``leaf_w``
      (weight), ``leaf_origin`` (origin hash), size 0, no instance. Leaf facts are never heads.
    * instances 0..I-1: ``inst_rule`` (int32), ``inst_head`` (int64), children in body order of
      the positive atoms as CSR ``child_ptr`` (int64[I+1]) / ``child_fact`` (int64). A fact may
      occur twice in a body; an instance may have no child (then it is available at once).
    * rules 0..R-1: ``rule_w`` (float64), ``rule_size`` (int64: 1, or 0 for a copy step),
      ``rule_hash`` (int64), ``rule_copy`` (bool: a copy step, whose only child's origin is its
      own).
    * the monoid as ``combine`` (0 product, 1 sum, 2 min) and ``sign`` (+1.0 when a smaller
      weight is better, -1.0 when a larger one is). Access and size weights are small integers,
      exact in float64.

A candidate is an instance with a rank for each child (which of the child's entries it uses).
Its weight is the rule weight combined with every child entry's weight in body order, its size
the rule size plus the children's sizes, its origin the child's origin for a copy step and
:func:`origin_of` (rule hash, child origins in body order) otherwise. Its sort key is
``(sign * w, size, origin)``, smaller is better. A fact's entries are its k best candidates with
distinct origins, best first: a candidate whose origin is already among them is skipped (a
second derivation in P_p of a tree of P already counted, section 5.2).

Top-1 (``k == 1``) is Knuth's generalisation of Dijkstra: an instance becomes available when
every child has its entry; its candidate is offered to its head; a priority queue holds each
head's best candidate, keyed (key, size, origin, fact) (decrease-key by lazy deletion); a pop is
final.

Top-k is lazy k-best in the style of Huang & Chiang (2005), section 5.3 of the paper: in one
pass, an instance's first candidate (every rank 1) is formed once every child has a first
entry; when candidate (instance, ranks) is popped, its *modifications* (one child's rank + 1)
are formed; one whose child lacks that rank yet waits until that entry is created. A duplicate
(same origin) is not added but still expands, as in ``_Run.heuristic``. A fact with k entries
ignores further candidates and does not expand them.

No seen-set: ``_Run.heuristic`` pushes every modification of a popped vector and drops repeats
with a set of (instance, ranks). Here every rank vector r other than (1, ..., 1) has exactly one
*parent*: r with its last rank > 1 lowered by one. Popping q forms q + e_j only for positions
j >= last(q), the last position whose rank exceeds 1 (0 when there is none). Then
last(q + e_j) = j (positions after j are 1 in q), so parent(q + e_j) = q: each vector is formed
by its parent only, at most once. Conversely every r != 1 is q + e_last(r) with q = parent(r)
and last(q) <= last(r), so q does form r: the vectors form a tree rooted at (1, ..., 1) and all
are reachable. Being formed only from its parent instead of from whichever predecessor pops
first loses nothing for monotone monoids: the parent uses the same children with one entry
better or equal, so its (weight, size) is no worse and it pops first; by induction on that
order every vector the answer needs has been formed when it is needed. (Among candidates with
equal weight and size the origin tie-break is best effort, in the reference as here.) Ranks
above k are never formed (no fact has a (k+1)-th entry), nor ranks above 1 at a leaf child.

Memory is O(I + F*k + one component's candidates): a packed copy of the instances; per fact k
entry slots (each with its child ranks) and k waiting lists; per candidate its instance, head,
waiting-list link and rank vector; a heap of at most the candidates. Top-1 needs O(I + F).

Components: facts interact only through instances and leaves are final from the start, so the
compiled kernel splits the instances into independent components (each instance's head joined
with its non-leaf children), renumbers facts and instances by component, and runs the loop one
component after the other, with a heap and a candidate buffer that hold that component only
(on transitive closure, ``path(*, z)`` for one ``z``: they stay in cache). Within a component
every relative order that breaks ties is the global one, so the result is bit for bit that of
the global loop, which the pure-Python twin keeps. The compiled top-k also keeps each fact's
ready candidates in a queue of its own, its heap holding one item per fact ([HC05]); its pops
are the twin's single heap's, in the same order.
The compiled top-k then takes another way to entries 2..k wherever the ranking is monotone (a
tree never better than a subtree: the built-in monoids over their weights) and every rule step
inside the component adds size: recursive enumeration ([JM99], [HC05] Algorithm 3). Entry 1
comes from the global loop above; fact v's next entry is the best of v's own queue once the
successors of v's last popped candidate are in it, each successor asking for one child's next
entry, found the same way (recursively, on an explicit stack). That is a pop, a successor or
two and an entry written, instead of the component heap's sift, the waiting lists and the
releases: ~55 against ~90 ns an entry on the 1,000-node closure. A subtree is strictly before
its tree in (key, size), so a chain of requests never returns to a fact whose next entry is
being found; copy steps inside a component (size 0), rankings that are not monotone, and a
component where a request meets a fact on the stack all take the global loop. It gives every
fact the global loop's weights and sizes; among candidates of equal weight and size it may
keep other trees (the freedom every engine's DTable has). :func:`kbest_loop` chooses the loop
(the tests compare the twin with the global loop bit for bit, and the recursive enumeration with
both on the rankings), as do ``SELP_KBEST_LOOP`` and Spark's
``spark.selp.partitionLocal.kbestLoop``.
When P_p's recursion is statically decomposable, :mod:`selp.topk.decomposed` skips the
global instance array altogether: ``selp_static`` forms each component's instances itself, in
the same order, and runs the same per-component loops (``comp_top1``/``comp_topk`` in C).

Ties: candidates with equal (key, size, origin) are the same tree of P reached twice; the one
with the smaller candidate id wins. Instances are first put in a fixed order -- stably by their
last non-leaf child in body order (:func:`_sorted`), which is also what makes the compiled
kernel's memory accesses mostly sequential -- and a candidate's id is fixed when it is formed
(the instances' positions first, then modifications in the order they are formed), so the order
in which work is done between two pops never matters. This is what lets two implementations
agree bit for bit: the compiled one (:file:`_kernel.c`, built by ``pip install`` as a plain
shared library and called through :mod:`ctypes`: loading it costs about a millisecond) and a
pure-Python one, the oracle of the tests and the fallback where no C compiler was found at
install time.
"""

from __future__ import annotations

import contextlib
import ctypes
import heapq
import os
import sys
import threading
from pathlib import Path
from dataclasses import dataclass
from typing import Any, Iterable, Iterator, Sequence

import numpy as np

BACKENDS = ("auto", "compiled", "python")
PRODUCT, SUM, MIN = 0, 1, 2

# --- origins --------------------------------------------------------------------------------------

_MASK = (1 << 64) - 1
_GOLDEN = 0x9E3779B97F4A7C15
_M1 = 0xBF58476D1CE4E5B9
_M2 = 0x94D049BB133111EB


def _mix64(z: int) -> int:
    z = ((z ^ (z >> 30)) * _M1) & _MASK
    z = ((z ^ (z >> 27)) * _M2) & _MASK
    return z ^ (z >> 31)


def origin_of(rule_hash: int, child_origins: Iterable[int]) -> int:
    """The origin hash of a rule step over children with these origins (body order).

    Arithmetic is on unsigned 64-bit words, G = 0x9E3779B97F4A7C15: ``h = rule_hash``; for each
    child origin ``o``, ``h = mix64(h * G + o)``; finally ``mix64(h + (n + 1) * G)`` for n
    children, read as a signed int64. ``mix64`` is splitmix64's finaliser (xor-shift 30, times
    0xBF58476D1CE4E5B9, xor-shift 27, times 0x94D049BB133111EB, xor-shift 31), a bijection with
    ``mix64(0) == 0``: the last step, which also counts the children, keeps a step without
    children from being its bare rule hash and (0, []) apart from (0, [0]). For a given prefix
    each step is a bijection of ``o``, so steps of one rule over different children collide only
    by chance (2^-64). The compiled kernel computes exactly the same bits.
    """
    h = rule_hash & _MASK
    n = 0
    for o in child_origins:
        h = _mix64((h * _GOLDEN + (o & _MASK)) & _MASK)
        n += 1
    h = _mix64((h + (n + 1) * _GOLDEN) & _MASK)
    return h - (1 << 64) if h >> 63 else h


_XP1, _XP2, _XP3 = 0x9E3779B185EBCA87, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9
_XP4, _XP5 = 0x85EBCA77C2B2AE63, 0x27D4EB2F165667C5


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (64 - r))) & _MASK


def xxh64_long(value: int, seed: int) -> int:
    """Spark's ``XXH64.hashLong(value, seed)`` on unsigned 64-bit words (what ``xxhash64`` of a
    bigint column folds into its running hash)."""
    h = (seed + _XP5 + 8) & _MASK
    h ^= (_rotl((value & _MASK) * _XP2 & _MASK, 31) * _XP1) & _MASK
    h = (_rotl(h, 27) * _XP1 + _XP4) & _MASK
    h ^= h >> 33
    h = (h * _XP2) & _MASK
    h ^= h >> 29
    h = (h * _XP3) & _MASK
    return h ^ (h >> 32)


def spark_origin_of(rule_hash: int, child_origins: Iterable[int]) -> int:
    """The origin of a rule step as the Spark DTable computes it, ``xxhash64("N", rule, o1, ..)``,
    given ``rule_hash`` = Spark's ``xxhash64("N", rule)``: each child origin folded in with
    :func:`xxh64_long`, the running hash being the seed (origin mode 1 of the kernels)."""
    h = rule_hash & _MASK
    for o in child_origins:
        h = xxh64_long(o, h)
    return h - (1 << 64) if h >> 63 else h


# --- data ----------------------------------------------------------------------------------------


@dataclass
class Hypergraph:
    """Integer-coded facts and rule instances (see the module docstring for each array)."""

    leaf: np.ndarray  # bool[F]
    leaf_w: np.ndarray  # float64[F]
    leaf_origin: np.ndarray  # int64[F]
    inst_rule: np.ndarray  # int32[I]
    inst_head: np.ndarray  # int64[I]
    child_ptr: np.ndarray  # int64[I+1]
    child_fact: np.ndarray  # int64[child_ptr[I]]
    rule_w: np.ndarray  # float64[R]
    rule_size: np.ndarray  # int64[R]
    rule_hash: np.ndarray  # int64[R]
    rule_copy: np.ndarray  # bool[R]
    checked: bool = False  # set by the kernel's validation: a checked graph is not checked again
    # a leaf's entry size (None: every leaf has size 0, as an EDB fact does); a leaf may stand for
    # an entry computed elsewhere (the Spark engine hands a partition its inputs' entries)
    leaf_size: np.ndarray | None = None  # int64[F]
    # 0: origins by origin_of; 1: by spark_origin_of (rule_hash then holds xxhash64("N", rule))
    origin_mode: int = 0

    @property
    def n_facts(self) -> int:
        return len(self.leaf)

    @property
    def n_instances(self) -> int:
        return len(self.inst_rule)


@dataclass
class KernelResult:
    """Entries grouped by fact, best first: fact f's are ``fact_ptr[f]:fact_ptr[f+1]``.

    Per entry: weight ``w``, ``size``, ``origin``, instance ``inst`` (-1 for a leaf), and as CSR
    ``child_rank_ptr``/``child_rank`` (int32) the 1-based rank of each child's entry it uses, in
    body order (empty for a leaf): the entry of child ``child_fact[child_ptr[inst] + j]`` at that
    rank is ``fact_ptr[child] + rank - 1``.
    """

    fact_ptr: np.ndarray  # int64[F+1]
    w: np.ndarray  # float64[E]
    size: np.ndarray  # int64[E] (int32 on the static path)
    origin: np.ndarray  # int64[E] (the static path computes it when first read)
    # int64[E], or None: entry e is its own instance and entries below ``own_leaves`` are the
    # leaves' (the component-by-component path, which writes no such array: 8 bytes an entry
    # of fresh memory, ~50 MB at top-7 of a million facts); ``inst`` then builds it on demand
    inst_given: np.ndarray | None
    child_rank_ptr: np.ndarray  # int64[E+1]
    child_rank: np.ndarray  # int32[child_rank_ptr[E]] (uint8 on the static path)
    # fact f's row of fact_ptr (None: f itself). The component-by-component path writes its
    # entries in the order it finds them (leaves, then component after component) and maps
    # input ids to rows here, instead of copying every entry into input order.
    row: np.ndarray | None = None  # int64[F]
    own_leaves: int = 0

    def row_of(self, f: int) -> int:
        """The row of ``fact_ptr`` holding fact ``f``'s entries."""
        return f if self.row is None else int(self.row[f])

    @property
    def inst(self) -> np.ndarray:
        """Each entry's instance (-1 for a leaf), as an array."""
        if self.inst_given is None:
            got = np.arange(len(self.w), dtype=np.int64)
            got[:self.own_leaves] = -1
            self.inst_given = got
        return self.inst_given

    def inst_of(self, e: int) -> int:
        """Entry ``e``'s instance (-1 for a leaf), without building :attr:`inst`."""
        if self.inst_given is None:
            return -1 if e < self.own_leaves else e
        return int(self.inst_given[e])

    def origins(self, lo: int, hi: int) -> np.ndarray:
        """The origins of entries ``lo..hi-1`` (a subclass may compute only those)."""
        return self.origin[lo:hi]

    @property
    def n_entries(self) -> int:
        return len(self.w)


# --- the wrapper ---------------------------------------------------------------------------------


def run_kernel(graph: Hypergraph, combine: int, sign: float, k: int, backend: str = "auto") -> KernelResult:
    """The k best distinct-origin entries of every fact of ``graph``.

    ``combine``: 0 product, 1 sum, 2 min; ``sign``: +1.0 if a smaller weight is better, -1.0 if
    a larger one is. ``backend``: "compiled" (the C kernel), "python" (pure Python, same arrays),
    or "auto": compiled when it was built, else Python. Raises ValueError on malformed input,
    MemoryError when the compiled kernel cannot allocate.
    """
    g = checked(graph)
    if combine not in (PRODUCT, SUM, MIN):
        raise ValueError(f"combine must be 0 (product), 1 (sum) or 2 (min), not {combine!r}")
    if sign not in (1.0, -1.0):
        raise ValueError(f"sign must be 1.0 or -1.0, not {sign!r}")
    sign = float(sign)
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 1 <= k < 2**31:
        raise ValueError(f"k must be an integer >= 1, not {k!r}")
    k = int(k)
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {', '.join(BACKENDS)}, not {backend!r}")
    if backend == "compiled" and _compiled() is None:
        raise RuntimeError("the compiled kernel was not built (no C compiler at install time?)")
    if backend == "python" or _compiled() is None:
        g2, order = _sorted(g)
        out = _py_top1(g2, combine, sign) if k == 1 else _py_topk(g2, combine, sign, k)
        inst = out[4].copy()
        inst[inst >= 0] = order[inst[inst >= 0]]
        out = (*out[:4], inst, *out[5:])
        return KernelResult(*out)
    return KernelResult(*_run_compiled(g, combine, sign, k))


LOOPS = ("recursive", "global")
_LOOP_CODE = {"recursive": 1, "global": 0, "fallback": 2}  # "fallback": the tests' way to that path
LOOP_ENV = "SELP_KBEST_LOOP"  # the loop of a process (and of Spark's Python workers): A/B runs


@contextlib.contextmanager
def kbest_loop(loop: str) -> Iterator[None]:
    """Within the block, the compiled kernel ranks k > 1 with ``loop``: "recursive" (the default:
    entry 1 by the global loop, the others by recursive enumeration wherever the ranking is
    monotone, see _kernel.c) or "global" (the global loop everywhere, as the pure-Python twin:
    the same arrays bit for bit). The two give every fact the same weights and sizes; they may
    keep different trees among equal weight and size. ("fallback", for the tests: the recursive
    enumeration giving up at its first nested request, so that the global loop ranks those
    components again.) Process-wide: not for use while another thread runs a kernel."""
    if loop not in _LOOP_CODE:
        raise ValueError(f"loop must be one of {', '.join(LOOPS)}, not {loop!r}")
    lib = _compiled()
    if lib is None:
        yield
        return
    was = lib.selp_kbest_rea(_LOOP_CODE[loop])
    try:
        yield
    finally:
        lib.selp_kbest_rea(was)


def kbest_counts(reset: bool = False) -> dict[str, int]:
    """How many components this process's compiled kernel ranked with k > 1 by each loop:
    "recursive", "fallback" (the recursive enumeration met a fact on the stack, so the global
    loop ranked the component again) and "global"; and "linear": of the recursive ones, those
    whose instances each have at most one child in their component (the static path's
    enumeration by streams). Zeroed after reading when ``reset``."""
    lib = _compiled()
    out = np.zeros(4, np.int64)
    if lib is not None:
        lib.selp_kbest_counts(out.ctypes.data, int(reset))
    return dict(zip(("recursive", "fallback", "global", "linear"), (int(x) for x in out)))


def compiled_available() -> bool:
    """Whether the C kernel was built (else every DTable on the embedded engine runs in Python)."""
    return _compiled() is not None


THREADS_ENV = "SELP_THREADS"


def kernel_threads() -> int:
    """How many threads the component-by-component kernel (:mod:`selp.topk.decomposed`) ranks
    components on: ``SELP_THREADS`` when set; else 1 inside a Spark task (the executor already
    runs one task per core); else the cores this process may run on. Raises
    :class:`~selp.errors.SelpError` naming the value when ``SELP_THREADS`` is not a whole number
    >= 1."""
    text = os.environ.get(THREADS_ENV, "").strip()
    if text:
        if not text.isdigit() or int(text) < 1:
            from selp.errors import SelpError  # noqa: PLC0415 (only on this error)

            raise SelpError(f"{THREADS_ENV} must be a whole number >= 1, not {text!r}")
        return min(int(text), 64)
    if "pyspark" in sys.modules:
        try:
            from pyspark import TaskContext  # noqa: PLC0415 (only where pyspark is loaded)

            if TaskContext.get() is not None:
                return 1
        except ImportError:
            pass
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


_LIB: list = []  # [ctypes library or None], filled on first use
_ABI = 13  # selp_abi() of the _kernel.c this module calls (an older build lacks it or differs)


def _kernel_file() -> str:
    """The path of the built kernel (:func:`selp.topk.native.extension_file`)."""
    from selp.topk.native import extension_file  # noqa: PLC0415

    return extension_file("_kernel")


def _compiled() -> Any:
    """The C kernel (:file:`_kernel.c`) through ctypes, or None when it was not built."""
    if not _LIB:
        try:
            lib = ctypes.CDLL(_kernel_file())
            lib.selp_abi.restype = ctypes.c_int64
            if lib.selp_abi() != _ABI:
                raise AttributeError("selp_abi")
        except (ImportError, OSError, AttributeError):
            # not built, or built from an older _kernel.c (an editable install not rebuilt)
            _LIB.append(None)
            return None
        P, I64, F64 = ctypes.c_void_p, ctypes.c_int64, ctypes.c_double
        args = [I64, I64] + [P] * 11 + [ctypes.c_int, F64, P, ctypes.c_int]
        lib.selp_top1.argtypes, lib.selp_top1.restype = args, P
        lib.selp_topk.argtypes, lib.selp_topk.restype = args + [I64], P
        for name in ("selp_n_entries", "selp_n_ranks"):
            getattr(lib, name).argtypes, getattr(lib, name).restype = [P], I64
        lib.selp_fill.argtypes, lib.selp_fill.restype = [P] * 8, ctypes.c_int
        lib.selp_free.argtypes, lib.selp_free.restype = [P], None
        lib.selp_kbest_rea.argtypes, lib.selp_kbest_rea.restype = [ctypes.c_int], ctypes.c_int
        lib.selp_kbest_counts.argtypes, lib.selp_kbest_counts.restype = [P, ctypes.c_int], None
        loop = os.environ.get(LOOP_ENV, "").strip()
        if loop:
            if loop not in LOOPS:
                from selp.errors import SelpError  # noqa: PLC0415 (only on this error)

                raise SelpError(f"{LOOP_ENV} must be one of {', '.join(LOOPS)}, not {loop!r}")
            lib.selp_kbest_rea(int(loop == "recursive"))
        lib.selp_stop.argtypes, lib.selp_stop.restype = [], None
        lib.selp_tree_count_bound.argtypes, lib.selp_tree_count_bound.restype = [I64, I64] + [P] * 4 + [I64], I64
        lib.selp_origin_of.argtypes, lib.selp_origin_of.restype = [I64, P, I64], I64
        lib.selp_origin_of_mode.argtypes, lib.selp_origin_of_mode.restype = [I64, P, I64, ctypes.c_int], I64
        # instances formed in C (selp.topk.joins)
        lib.selp_head.argtypes, lib.selp_head.restype = [I64, I64, P, P], P
        lib.selp_head_free.argtypes, lib.selp_head_free.restype = [P], None
        lib.selp_join.argtypes, lib.selp_join.restype = [I64, P, P, P, P, P, P, P, P, I64, P, P], P
        lib.selp_join_count.argtypes, lib.selp_join_count.restype = [P], I64
        lib.selp_join_error.argtypes, lib.selp_join_error.restype = [P], ctypes.c_int
        lib.selp_join_fill.argtypes, lib.selp_join_fill.restype = [P, P, P], None
        lib.selp_join_free.argtypes, lib.selp_join_free.restype = [P], None
        # instances formed and ranked component by component (selp.topk.decomposed)
        lib.selp_join_prepare.argtypes, lib.selp_join_prepare.restype = [I64] + [P] * 7 + [I64, P, P, P, I64], P
        lib.selp_static.argtypes = ([I64, I64] + [P] * 5 + [I64, P, I64] + [P] * 6 + [I64, P, P, I64] + [P] * 4
                                    + [ctypes.c_int, F64, ctypes.c_int, I64, I64, P])
        lib.selp_static.restype = P
        lib.selp_static_arrays.argtypes, lib.selp_static_arrays.restype = [P, P], None
        lib.selp_static_bound.argtypes, lib.selp_static_bound.restype = [P], I64
        lib.selp_value_classes.argtypes, lib.selp_value_classes.restype = [I64, I64, P, P, P], None
        lib.selp_entry_origins.argtypes = [I64, I64, I64] + [P] * 8 + [ctypes.c_int, P, P, P]
        lib.selp_entry_origins.restype = ctypes.c_int
        lib.selp_entry_values.argtypes = [I64, I64, I64] + [P] * 8 + [ctypes.c_int, P, P, P, P, P, ctypes.c_int, P, P]
        lib.selp_entry_values.restype = ctypes.c_int
        # the packed DTable's child slots (selp.topk.packed)
        lib.selp_pack_slots.argtypes, lib.selp_pack_slots.restype = [I64] + [P] * 6 + [I64] * 5 + [P] * 3, None
        lib.selp_pack_static_slots.argtypes = [I64, I64, I64, P, P, P, P, I64, P, P, P]
        lib.selp_pack_static_slots.restype = None
        lib.selp_pack_static_entries.argtypes = [I64, I64, I64, P, P, P, P, P, P, P]
        lib.selp_pack_static_entries.restype = None
        _LIB.append(lib)
    return _LIB[0]


def _ptr(a: np.ndarray) -> int:
    return a.ctypes.data


def _run_compiled(g: Hypergraph, combine: int, sign: float, k: int) -> tuple[np.ndarray, ...]:
    lib = _compiled()
    arrays = [g.leaf.view(np.uint8), g.leaf_w, g.leaf_origin, g.inst_rule, g.inst_head, g.child_ptr,
              g.child_fact, g.rule_w, g.rule_size, g.rule_hash, g.rule_copy.view(np.uint8)]
    sizes = None if g.leaf_size is None else _ptr(g.leaf_size)
    args = [g.n_facts, g.n_instances, *(_ptr(a) for a in arrays), combine, sign, sizes, g.origin_mode]
    run = _interruptible(lambda: lib.selp_top1(*args) if k == 1 else lib.selp_topk(*args, k), lib)
    if not run:
        raise MemoryError("the top-k kernel could not allocate its tables")
    try:
        n, n_ranks = lib.selp_n_entries(run), lib.selp_n_ranks(run)
        out = (np.empty(g.n_facts + 1, np.int64), np.empty(n, np.float64), np.empty(n, np.int64),
               np.empty(n, np.int64), np.empty(n, np.int64), np.empty(n + 1, np.int64), np.empty(n_ranks, np.int32))
        if lib.selp_fill(run, *(_ptr(a) for a in out)):
            raise MemoryError("the top-k kernel could not allocate its result")
        return out
    finally:
        lib.selp_free(run)


def _interruptible(call: Any, lib: Any) -> Any:
    """``call()`` in a worker thread (ctypes releases the GIL), so that Ctrl-C reaches the main
    thread while a long kernel runs; it then tells the kernel to stop, waits for it to free its
    tables, and re-raises."""
    out: list = []
    worker = threading.Thread(target=lambda: out.append(call()), name="selp-kernel", daemon=True)
    worker.start()
    try:
        while worker.is_alive():
            worker.join(0.1)
    except KeyboardInterrupt:
        lib.selp_stop()
        worker.join()
        raise
    return out[0] if out else None


class _Owner:
    """Frees a kernel run when the last array over its buffers is gone."""

    def __init__(self, lib: Any, run: int) -> None:
        self.lib, self.run = lib, run

    def __del__(self) -> None:
        self.lib.selp_free(self.run)


class _View:
    """A buffer of a kernel run as numpy sees it (``__array_interface__``), keeping the run alive."""

    def __init__(self, ptr: int, n: int, dtype: Any, owner: _Owner) -> None:
        self.__array_interface__ = {"data": (ptr, False), "shape": (n,), "typestr": np.dtype(dtype).str, "version": 3}
        self.owner = owner


def adopt(lib: Any, run: int, buffers: list[tuple[int, int, Any]]) -> list[np.ndarray]:
    """Arrays over a kernel run's own buffers, ``(address, length, dtype)`` each, without a copy;
    the run is freed (``selp_free``) when the last of them is collected."""
    owner = _Owner(lib, run)
    return [np.asarray(_View(p, n, t, owner)) if n and p else np.empty(n, t) for p, n, t in buffers]


# for selp.topk.joins, which calls the same library: the loaded C kernel (or None), an array's
# address, and a call that Ctrl-C can stop
library, address, interruptible = _compiled, _ptr, _interruptible


def origin_of_compiled(rule_hash: int, child_origins: np.ndarray, mode: int = 0) -> int:
    """:func:`origin_of` (``mode`` 1: :func:`spark_origin_of`) computed by the C kernel (for the tests)."""
    a = np.ascontiguousarray(child_origins, dtype=np.int64)
    return int(_compiled().selp_origin_of_mode(rule_hash, _ptr(a), len(a), mode))


def tree_count_bound(g: Hypergraph, k: int) -> int | None:
    """The largest number of derivation trees of any fact of ``g``, each counted up to ``k`` (so
    at most ``k``), or None when the instance graph has a cycle (some facts then have infinitely
    many trees).

    A leaf has one tree, another fact the sum over its instances of the product of its
    children's counts (Kahn's topological order, counts capped at ``k``). That counts P_p
    derivations, of which the kernel keeps those with distinct origins, so it bounds every
    fact's entries: running the kernel with ``min(k, bound)`` cannot change any answer. In C
    (linear in the instances, a few hundredths of a second at millions); the pure-Python twin
    runs only where the C kernel was not built and the graph is small (below
    :data:`PYTHON_COUNT_LINKS` links), else None: no bound is claimed.
    """
    if k < 1:
        raise ValueError(f"k must be >= 1, not {k!r}")
    g = checked(g)
    lib = _compiled()
    if lib is None:
        return _py_tree_count_bound(g, k) if g.n_instances + len(g.child_fact) <= PYTHON_COUNT_LINKS else None
    got = lib.selp_tree_count_bound(g.n_facts, g.n_instances, _ptr(g.leaf.view(np.uint8)), _ptr(g.inst_head),
                                    _ptr(g.child_ptr), _ptr(g.child_fact), min(k, 2**31 - 1))
    if got == -2:
        raise MemoryError("counting derivation trees: out of memory")
    return None if got < 0 else int(got)


PYTHON_COUNT_LINKS = 200_000


def _sorted(g: Hypergraph) -> tuple[Hypergraph, np.ndarray]:
    """``g`` with its instances in the compiled kernel's order -- stably by their last non-leaf
    child in body order, instances without one first -- and that order (new position -> input
    id). Ties between equal (key, size, origin) are broken by this position in both kernels."""
    I = g.n_instances
    counts = np.diff(g.child_ptr)
    key = np.zeros(I, np.int64)
    if len(g.child_fact):
        nonleaf = ~g.leaf[g.child_fact]
        pos = np.arange(len(g.child_fact))
        owner = np.repeat(np.arange(I), counts)
        last = np.full(I, -1, np.int64)
        np.maximum.at(last, owner[nonleaf], pos[nonleaf])
        has = last >= 0
        key[has] = g.child_fact[last[has]] + 1
    order = np.argsort(key, kind="stable")
    new_counts = counts[order]
    ptr = np.zeros(I + 1, np.int64)
    np.cumsum(new_counts, out=ptr[1:])
    gather = np.repeat(g.child_ptr[:-1][order] - ptr[:-1], new_counts) + np.arange(int(ptr[-1]))
    g2 = Hypergraph(g.leaf, g.leaf_w, g.leaf_origin, g.inst_rule[order], g.inst_head[order], ptr,
                    g.child_fact[gather], g.rule_w, g.rule_size, g.rule_hash, g.rule_copy,
                    leaf_size=g.leaf_size, origin_mode=g.origin_mode)
    return g2, order


_DTYPES = {
    "leaf": np.bool_, "leaf_w": np.float64, "leaf_origin": np.int64, "inst_rule": np.int32,
    "inst_head": np.int64, "child_ptr": np.int64, "child_fact": np.int64, "rule_w": np.float64,
    "rule_size": np.int64, "rule_hash": np.int64, "rule_copy": np.bool_,
}
_KINDS = {np.bool_: "b", np.float64: "fiu", np.int64: "iu", np.int32: "iu"}


def checked(graph: Hypergraph) -> Hypergraph:
    """``graph`` with contiguous arrays of the kernel's dtypes (converted only where needed),
    checked for shape and range: an index out of range would read garbage in compiled code, not
    raise."""
    if graph.checked:
        return graph
    arrays = {}
    for name, dtype in _DTYPES.items():
        a = np.asarray(getattr(graph, name))
        if name in ("leaf_origin", "rule_hash") and a.dtype == np.uint64:
            a = a.view(np.int64)  # hashes are bit patterns: the same 64 bits, read signed
        if a.ndim != 1:
            raise ValueError(f"{name} must be one-dimensional, not of shape {a.shape}")
        if a.dtype.kind not in _KINDS[dtype] and not (a.size == 0 and a.dtype.kind == "f"):
            raise ValueError(f"{name} must be of dtype {np.dtype(dtype).name}, not {a.dtype}")
        b = np.ascontiguousarray(a, dtype=dtype)
        if a.dtype.kind in "iu" and b.size and not np.array_equal(b, a):
            raise ValueError(f"{name} does not fit {np.dtype(dtype).name}")
        arrays[name] = b
    if graph.origin_mode not in (0, 1):
        raise ValueError(f"origin_mode must be 0 or 1, not {graph.origin_mode!r}")
    size = None
    if graph.leaf_size is not None:
        size = np.ascontiguousarray(graph.leaf_size, dtype=np.int64)
        if size.shape != (len(arrays["leaf"]),) or (size.size and size.min() < 0):
            raise ValueError("leaf_size must hold a size >= 0 for every fact")
    g = Hypergraph(**arrays, checked=True, leaf_size=size, origin_mode=int(graph.origin_mode))
    F, I, R = len(g.leaf), len(g.inst_rule), len(g.rule_w)
    for name, n in (("leaf_w", F), ("leaf_origin", F), ("inst_head", I), ("child_ptr", I + 1),
                    ("rule_size", R), ("rule_hash", R), ("rule_copy", R)):
        if len(arrays[name]) != n:
            raise ValueError(f"{name} has {len(arrays[name])} items, expected {n}")
    cp = g.child_ptr
    if cp[0] != 0 or cp[-1] != len(g.child_fact) or (I and np.any(np.diff(cp) < 0)):
        raise ValueError("child_ptr must rise from 0 to len(child_fact)")
    for name, a, n in (("inst_head", g.inst_head, F), ("child_fact", g.child_fact, F), ("inst_rule", g.inst_rule, R)):
        if a.size and (a.min() < 0 or a.max() >= n):
            raise ValueError(f"{name} holds an index outside 0..{n - 1}")
    if I and np.any(g.leaf[g.inst_head]):
        raise ValueError("a leaf fact is the head of an instance")
    copies = g.rule_copy[g.inst_rule]
    if np.any(np.diff(cp)[copies] != 1):
        raise ValueError("an instance of a copy rule must have exactly one child")
    if np.isnan(g.leaf_w[g.leaf]).any() or np.isnan(g.rule_w).any():
        raise ValueError("weights must not be NaN")
    return g


# --- the pure-Python path (twin of _kernel.c; keep them in step) --------------------


def _combiner(code: int):
    if code == PRODUCT:
        return lambda a, b: a * b
    if code == SUM:
        return lambda a, b: a + b
    return lambda a, b: b if b < a else a  # as the compiled _comb (signed zeros)


def _as_lists(g: Hypergraph) -> tuple[list, ...]:
    """The arrays as Python lists, in field order (indexing a list is several times faster than
    indexing a numpy array from Python)."""
    return tuple(getattr(g, name).tolist() for name in _DTYPES)


def _py_top1(g: Hypergraph, combine: int, sign: float) -> tuple[np.ndarray, ...]:
    """Knuth's algorithm in Python over sorted instances (:func:`_sorted`); the twin of ``selp_top1``."""
    comb = _combiner(combine)
    F, I = g.n_facts, g.n_instances
    leaf, leaf_w, leaf_origin, inst_rule, inst_head, cp, cf, rule_w, rule_size, rule_hash, rule_copy = _as_lists(g)
    origin = spark_origin_of if g.origin_mode else origin_of
    lsize = g.leaf_size.tolist() if g.leaf_size is not None else [0] * F
    final = [False] * F
    ew, es, eo, ei = [0.0] * F, [0] * F, [0] * F, [-1] * F
    for f in range(F):
        if leaf[f]:
            final[f], ew[f], es[f], eo[f] = True, leaf_w[f], lsize[f], leaf_origin[f]
    best: list[tuple | None] = [None] * F  # (key, size, origin, instance) of the head's best
    wait: dict[int, list[int]] = {}
    heap: list[tuple] = []

    def offer(i: int) -> None:
        a, b = cp[i], cp[i + 1]
        for t in range(a, b):
            if not final[cf[t]]:
                wait.setdefault(cf[t], []).append(i)  # tried again when that child is final
                return
        h = inst_head[i]
        if final[h]:
            return
        r = inst_rule[i]
        w, s = rule_w[r], rule_size[r]
        for t in range(a, b):
            w = comb(w, ew[cf[t]])
            s += es[cf[t]]
        o = eo[cf[a]] if rule_copy[r] else origin(rule_hash[r], [eo[cf[t]] for t in range(a, b)])
        item = (sign * w, s, o, i)
        if best[h] is None or item < best[h]:
            best[h] = item
            heapq.heappush(heap, (sign * w, s, o, h))  # the heap holds facts

    for i in range(I):
        offer(i)
    while heap:
        kw, s, o, h = heapq.heappop(heap)
        if final[h] or best[h][:3] != (kw, s, o):
            continue  # stale
        kw, i = best[h][0], best[h][3]  # the best candidate's key (0.0 and -0.0 are equal keys)
        final[h] = True
        ew[h], es[h], eo[h], ei[h] = sign * kw, s, o, i
        for j in wait.pop(h, ()):
            offer(j)
    per_fact = [[(ew[f], es[f], eo[f], ei[f], (1,) * (0 if ei[f] < 0 else cp[ei[f] + 1] - cp[ei[f]]))]
                if final[f] else [] for f in range(F)]
    return _py_collect(per_fact)


def _py_topk(g: Hypergraph, combine: int, sign: float, k: int) -> tuple[np.ndarray, ...]:
    """Lazy k-best by modifications in Python over sorted instances; the twin of ``selp_topk``."""
    comb = _combiner(combine)
    F, I = g.n_facts, g.n_instances
    leaf, leaf_w, leaf_origin, inst_rule, inst_head, cp, cf, rule_w, rule_size, rule_hash, rule_copy = _as_lists(g)
    origin = spark_origin_of if g.origin_mode else origin_of
    lsize = g.leaf_size.tolist() if g.leaf_size is not None else [0] * F
    # per fact, its entries best first: (w, size, origin, instance, child ranks)
    ent: list[list[tuple]] = [[(leaf_w[f], lsize[f], leaf_origin[f], -1, ())] if leaf[f] else [] for f in range(F)]
    # candidate c: instance c_inst[c] with child ranks c_ranks[c]; 0..I-1 have every rank 1
    c_inst = list(range(I))
    c_ranks = [(1,) * (cp[i + 1] - cp[i]) for i in range(I)]
    wait: dict[tuple[int, int], list[int]] = {}  # (fact, rank) -> candidates waiting for it
    heap: list[tuple] = []

    def try_cand(c: int) -> None:
        i = c_inst[c]
        if len(ent[inst_head[i]]) >= k:
            return
        ranks, a = c_ranks[c], cp[i]
        for j, r in enumerate(ranks):
            f = cf[a + j]
            if len(ent[f]) < r:
                wait.setdefault((f, r), []).append(c)
                return
        kids = [ent[cf[a + j]][r - 1] for j, r in enumerate(ranks)]
        rl = inst_rule[i]
        w, s = rule_w[rl], rule_size[rl]
        for e in kids:
            w = comb(w, e[0])
            s += e[1]
        o = kids[0][2] if rule_copy[rl] else origin(rule_hash[rl], [e[2] for e in kids])
        heapq.heappush(heap, (sign * w, s, o, c))

    for c in range(I):
        try_cand(c)
    while heap:
        kw, s, o, c = heapq.heappop(heap)
        i = c_inst[c]
        mine = ent[inst_head[i]]
        n = len(mine)
        if n >= k:
            continue
        ranks = c_ranks[c]
        if all(e[2] != o for e in mine):
            mine.append((sign * kw, s, o, i, ranks))
            for w in wait.pop((inst_head[i], n + 1), ()):
                try_cand(w)
            if n + 1 >= k:
                continue
        for mod in modifications(ranks, k, [leaf[f] for f in cf[cp[i]:cp[i + 1]]]):
            c_inst.append(i)
            c_ranks.append(mod)
            try_cand(len(c_inst) - 1)
    return _py_collect(ent)


def modifications(ranks: tuple[int, ...], k: int, fixed: Sequence[bool] = ()) -> list[tuple[int, ...]]:
    """The rank vectors formed when a candidate with ``ranks`` is popped: one rank + 1, only at
    positions from the last rank above 1 on (each vector then has one parent, see the module
    docstring), never above ``k`` and never at a position marked in ``fixed`` (a leaf child: it
    has one entry). The compiled kernel inlines the same rule."""
    last = max((j for j, r in enumerate(ranks) if r > 1), default=0)
    return [ranks[:j] + (ranks[j] + 1,) + ranks[j + 1:] for j in range(last, len(ranks))
            if ranks[j] < k and not (j < len(fixed) and fixed[j])]


def _py_collect(per_fact: list[list[tuple]]) -> tuple[np.ndarray, ...]:
    """The result arrays from per-fact lists of (w, size, origin, instance, child ranks)."""
    counts = np.fromiter((len(x) for x in per_fact), np.int64, len(per_fact))
    fact_ptr = np.zeros(len(per_fact) + 1, np.int64)
    np.cumsum(counts, out=fact_ptr[1:])
    flat = [e for x in per_fact for e in x]
    E = len(flat)
    w = np.fromiter((e[0] for e in flat), np.float64, E)
    size = np.fromiter((e[1] for e in flat), np.int64, E)
    origin = np.fromiter((e[2] for e in flat), np.int64, E)
    inst = np.fromiter((e[3] for e in flat), np.int64, E)
    crp = np.zeros(E + 1, np.int64)
    np.cumsum(np.fromiter((len(e[4]) for e in flat), np.int64, E), out=crp[1:])
    cr = np.fromiter((r for e in flat for r in e[4]), np.int32, int(crp[-1]))
    return fact_ptr, w, size, origin, inst, crp, cr


def _py_tree_count_bound(g: Hypergraph, k: int) -> int | None:
    """The largest number of derivation trees of any fact, counted up to ``k`` (so at most
    ``k``), or None when the instance graph has a cycle (then some facts have infinitely many).

    A fact's trees are counted over P_p's instances: a leaf has 1, another fact the sum over its
    instances of the product of its children's counts. That counts P_p derivations, of which the
    kernel keeps those with distinct origins, so it bounds the entries of every fact: running
    the kernel with ``k' = min(k, bound)`` cannot change any fact's entries (no fact reaches k'
    entries while a candidate of it is left over). The count is Kahn's topological order over
    the instances, capped at ``k`` so that the numbers stay small.
    """
    F, I = g.n_facts, g.n_instances
    ptr = g.child_ptr.tolist()
    kids = g.child_fact.tolist()
    heads = g.inst_head.tolist()
    leaf = g.leaf.tolist()
    count = [1 if leaf[f] else 0 for f in range(F)]
    open_insts = [0] * F  # instances of each fact not yet counted
    for h in heads:
        open_insts[h] += 1
    waiting = [ptr[i + 1] - ptr[i] for i in range(I)]  # children of each instance not yet final
    uses: list[list[int]] = [[] for _ in range(F)]
    for i in range(I):
        for j in range(ptr[i], ptr[i + 1]):
            uses[kids[j]].append(i)
    ready = [f for f in range(F) if open_insts[f] == 0]
    ready_insts = [i for i in range(I) if waiting[i] == 0]
    final = 0
    while ready or ready_insts:
        while ready_insts:
            i = ready_insts.pop()
            n = 1
            for j in range(ptr[i], ptr[i + 1]):
                n = min(n * count[kids[j]], k)
            h = heads[i]
            count[h] = min(count[h] + n, k)
            open_insts[h] -= 1
            if open_insts[h] == 0:
                ready.append(h)
        if ready:
            f = ready.pop()
            final += 1
            for i in uses[f]:
                waiting[i] -= 1
                if waiting[i] == 0:
                    ready_insts.append(i)
    if final < F:
        return None  # some facts lie on (or above) a cycle of instances
    return max(count, default=1)
