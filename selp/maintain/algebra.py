"""The two representations of absorption-provenance formulas, behind one small interface.

* :class:`Monomials` -- minimal monomial sets as bit sets (:mod:`selp.maintain.formula`):
  compact while tuples have few minimal derivations (sparse graphs, trees, the sensor regions);
  the number of minimal monomials is the number of minimal derivations, exponential in the
  cycles a path may cross, so it has a cap.
* :class:`Bdds` -- reduced ordered BDDs in CUDD through the ``dd`` package [LTZIL10]: canonical
  like the monomial sets, but sharing the common prefixes of paths, so a well-connected network
  (the transit-stub ``reachable``) stays small -- provided the variables are ordered well: the
  paper's depth-first order (:func:`selp.maintain.order.dfs_order`) is given to the manager
  when the base is first loaded; variables of later insertions come after.

A formula is opaque to the maintainer; a *delta* is a formula of the same kind holding what a
tuple gained (for BDDs ``new ∧ ¬old``: it has negated literals, which is sound because it is
only ever OR-ed into formulas that already hold the old part -- the digest's pitfall).

Deletion by evaluation: a stored formula is a positive (monotone) function, so it is not false
once the deleted variables are false iff it is true under "deleted false, every other variable
true" (:meth:`valuation`, :meth:`alive`). For a BDD that is one path from the root (CUDD's
``Cudd_Eval``), no node built, where restricting rebuilds the BDD; the maintainer restricts
later, lazily (:mod:`selp.maintain.absorption`).
"""

from __future__ import annotations

import ctypes
import json
import warnings
from typing import Any, Callable, Iterable

from selp.maintain import formula as pb


class Monomials:
    """Formulas as minimal monomial sets (lists of ``int`` bit sets)."""

    name = "monomials"

    def __init__(self, cap: int = pb.DEFAULT_CAP) -> None:
        self.cap = cap

    def true(self) -> Any:
        return pb.TRUE

    def var(self, v: int) -> Any:
        return [1 << v]

    def conj(self, parts: list[Any]) -> Any:
        return pb.conjoin(parts, self.cap)

    def disj(self, old: Any | None, new: Any, stale: bool = False) -> tuple[Any, Any | None]:
        """``(old ∨ new, what it gained or None)``. ``stale``: ``old`` may still have monomials
        with pending deleted variables; ``new`` has none, so such a monomial never absorbs one
        of ``new``'s, and the gain is the same as against the restricted ``old``."""
        form = [] if old is None else list(old)
        gained = [m for m in new if pb.absorb(form, m, self.cap)]
        return form, (gained or None)

    def union(self, forms: Iterable[Any]) -> Any:
        out = pb.minimize(m for f in forms for m in f)
        if len(out) > self.cap:
            raise pb.Blowup(len(out))
        return out

    def gained(self, new: Any, old: Any) -> Any | None:
        """What ``new`` has that ``old`` lacks (None: nothing), ``new`` implying ``old`` or not."""
        before = set(old)
        got = [m for m in new if m not in before]
        return got or None

    def killer(self, killed: Iterable[int]) -> Any:
        mask = 0
        for v in killed:
            mask |= 1 << v
        return mask

    def mentions(self, form: Any, kill: Any) -> bool:
        return any(m & kill for m in form)

    def valuation(self, dead: Iterable[int]) -> Any:
        """"``dead`` false, every other variable true", as :meth:`alive` reads it."""
        return self.killer(dead)

    def alive(self, form: Any, valuation: Any) -> bool:
        """Whether ``form`` is still not false under ``valuation`` (some monomial is untouched)."""
        return any(not m & valuation for m in form)

    def restrict(self, form: Any, kill: Any) -> Any | None:
        """``form`` with the killed variables false; None when it is false."""
        rest = pb.restrict(form, kill)
        return rest or None

    def check(self) -> None:
        """Nothing: the monomial cap is checked as formulas grow."""

    def failed(self, err: ValueError) -> pb.Blowup | None:
        """None: no operation of monomial sets fails past a cap (see :meth:`check`)."""
        return None

    def tick(self, ops: int = 1) -> None:
        """Nothing: see :meth:`check`."""

    def support(self, form: Any) -> list[int]:
        """The variables ``form`` depends on."""
        return pb.variables(form)

    def nbytes(self, form: Any) -> int:
        return pb.stored_bytes(form)

    def show(self, form: Any, names: dict[int, str]) -> str:
        return pb.show(form, names)


class Bdds:
    """Formulas as BDDs of one CUDD manager; variable ``v`` is named ``p{v}``."""

    name = "bdd"
    NODE_BYTES = 12  # a node serialised columnarly: its variable and two child ids, int32 each

    def __init__(self, cap: int = 0, node_cap: int = pb.DEFAULT_NODE_CAP) -> None:
        self._manager(node_cap)
        _cudd_eval()  # found and checked now (~20 ms, a manager of its own), not by the first deletion
        self.cap = cap
        self.node_cap = node_cap
        self._ops = 0  # operations since the node count was last read (see tick)

    def check(self) -> None:
        """Raise :class:`~selp.maintain.formula.Blowup` when the manager holds more live nodes
        than ``node_cap``. The count is CUDD's keys less its dead nodes, not the exact count of
        ``len(bdd)``, which walks the unique table: 26-30 ms of CPU at 150 K nodes (252 links),
        38 % of an insertion's time when checked once per inserted edge. dd's
        ``statistics(exact_node_count=False)`` has it but scans the unique table and cache for
        other counters: 2.5 ms at 150 K nodes, 36 ms at 3.3 M (396 links: 5 of the build's 24 s
        of CPU at a read per 128 conjunctions). So the two counters are read from CUDD directly
        (:func:`_cudd_counts`, ~0.5 µs), dd's statistics only when that is not reachable."""
        nodes = self.live_nodes()
        if nodes > self.node_cap:
            raise pb.Blowup(nodes, "live BDD nodes", self.node_cap)

    # BDD operations between two reads of the node count inside one long step (a held edge's
    # expansion: up to a conjunction per pair of the closure, ~10,000 at 396 links, which took
    # the manager from 3.1 M to 9.6 M live nodes when the count was read after it only). Read
    # from CUDD a read is ~0.5 µs: every 16 operations costs nothing; through dd's statistics
    # (2.5-36 ms) every 256
    CHECK_EVERY = 16
    CHECK_EVERY_SLOW = 256
    # CUDD's memory limit, per node of the cap: a backstop for one operation that alone passes
    # the cap by far (an elimination with new links outside the depth-first order reached 12 M
    # live nodes within 256 operations). CUDD then fails the operation (dd: ValueError, the
    # manager still usable) and it becomes a Blowup. ~300 bytes per live node were measured at
    # 3.3 M nodes (396 links: 924 MiB, unique table, dead nodes and cache included)
    MEMORY_PER_NODE = 400

    def tick(self, ops: int = 1) -> None:
        """Count ``ops`` BDD operations; every :data:`CHECK_EVERY` of them, :meth:`check` the
        node cap: a long step stops within a small margin of the cap, not after it."""
        self._ops += ops
        if self._ops >= (self.CHECK_EVERY if self._mgr else self.CHECK_EVERY_SLOW):
            self._ops = 0
            self.check()

    def live_nodes(self) -> int:
        """The manager's live nodes as :meth:`check` counts them (keys less dead nodes)."""
        counts = _cudd_counts()
        if counts is None or not self._mgr:
            return int(self._statistics()["n_nodes"])
        keys, dead = counts
        return keys(self._mgr) - dead(self._mgr)

    def _statistics(self) -> dict[str, Any]:
        """CUDD's counters, the live-node count inexact (keys less dead nodes: see :meth:`check`)."""
        with warnings.catch_warnings():  # dd's note that "mem" is now in bytes (read as such)
            warnings.simplefilter("ignore", UserWarning)
            return self.bdd.statistics(exact_node_count=False)

    def _manager(self, node_cap: int) -> None:
        from dd import cudd

        self.bdd = cudd.BDD()
        self.bdd.configure(reordering=False)  # the order is ours (depth-first), not CUDD's sifting
        self.max_memory = int(self._statistics()["mem"]) + self.MEMORY_PER_NODE * node_cap
        self.bdd.configure(max_memory=self.max_memory)
        self._mgr = _manager_pointer(self.bdd) if _cudd_counts() is not None else None

    def failed(self, err: ValueError) -> pb.Blowup | None:
        """The :class:`~selp.maintain.formula.Blowup` a CUDD operation's failure stands for
        (dd raises ``ValueError`` on the NULL node CUDD returns past its memory limit), or None
        for any other error."""
        if "NULL" not in str(err):
            return None
        return pb.Blowup(int(self._statistics()["mem"]), "bytes of BDD memory", self.max_memory)

    def declare(self, variables: Iterable[int]) -> None:
        """Declare variables in this order (before they are used: the order they keep)."""
        names = [f"p{v}" for v in variables if f"p{v}" not in self.bdd.vars]
        if names:
            self.bdd.declare(*names)

    def true(self) -> Any:
        return self.bdd.true

    def var(self, v: int) -> Any:
        self.declare([v])
        return self.bdd.var(f"p{v}")

    def conj(self, parts: list[Any]) -> Any:
        out = self.bdd.true
        for p in parts:
            out &= p
        return out

    def disj(self, old: Any | None, new: Any, stale: bool = False) -> tuple[Any, Any | None]:
        """``(old ∨ new, what it gained or None)``. ``stale``: ``old`` is monotone but may
        still mention pending deleted variables, ``new`` does not. Then ``new ≤ old`` iff ``new ≤
        old`` restricted (restriction is monotone and leaves ``new`` as it is), so the test is
        exact; the gain is ``new`` itself, not ``new ∧ ¬old``, whose negated pending variables
        would carry the staleness into the formulas it is OR-ed into."""
        if old is None:
            return new, (None if new == self.bdd.false else new)
        form = old | new
        if form == old:
            return old, None
        return form, (new if stale else new & ~old)

    def union(self, forms: Iterable[Any]) -> Any:
        out = self.bdd.false
        for f in forms:
            out |= f
        return out

    def gained(self, new: Any, old: Any) -> Any | None:
        got = new & ~old
        return None if got == self.bdd.false else got

    def killer(self, killed: Iterable[int]) -> Any:
        names = {f"p{v}" for v in killed}
        return {n: False for n in names if n in self.bdd.vars}

    def mentions(self, form: Any, kill: Any) -> bool:
        # restricting is as cheap as finding the support (both one pass in C), so always say
        # yes and let the caller's restriction tell whether the formula changed
        return bool(kill)

    def restrict(self, form: Any, kill: Any) -> Any | None:
        rest = self.bdd.let(kill, form)
        return None if rest == self.bdd.false else rest

    def valuation(self, dead: Iterable[int]) -> Any:
        """"``dead`` false, every other variable true" as CUDD's input array (one ``int`` per
        variable index), or as a restriction when ``Cudd_Eval`` is not reachable. Valid until
        the next variable is declared: build it right before the :meth:`alive` tests."""
        names = [n for n in (f"p{v}" for v in dead) if n in self.bdd.vars]
        if _cudd_eval() is None:
            return {n: False for n in names}
        index = self.bdd._index_of_var
        size = max(index.values(), default=-1) + 1
        inputs = (ctypes.c_int * size)(*([1] * size))
        for n in names:
            inputs[index[n]] = 0
        return inputs

    def alive(self, form: Any, valuation: Any) -> bool:
        """Whether the stored (monotone) ``form`` is still not false: its value under
        ``valuation``, one path from the root, no node built."""
        evaluate = _cudd_eval()
        if evaluate is None or isinstance(valuation, dict):
            return (self.bdd.let(valuation, form) if valuation else form) != self.bdd.false
        return evaluate(None, int(form) - 2, valuation) == int(self.bdd.true) - 2

    def support(self, form: Any) -> list[int]:
        """The variables ``form`` depends on."""
        return [int(name[1:]) for name in self.bdd.support(form)]

    def nbytes(self, form: Any) -> int:
        return self.NODE_BYTES * form.dag_size

    def show(self, form: Any, names: dict[int, str]) -> str:
        return self.bdd.to_expr(form)

    # -- durable state: BDDs leave the process as node lists under the same order -----------
    def dump(self, roots: list[Any]) -> str:
        """``roots`` as JSON: the variable order, the nodes (``[level, low, high]`` by id, ids 0
        and 1 the constants) and each root's id. Written by hand: dd's own JSON dump goes
        through a shelve directory in the current directory, which concurrent runs share."""
        bdd = self.bdd
        ids: dict[int, int] = {int(bdd.false): 0, int(bdd.true): 1}
        nodes: list[list[int]] = []
        out_roots = []
        for root in roots:
            stack = [root]
            while stack:
                u = stack[-1]
                if int(u) in ids:
                    stack.pop()
                    continue
                level, low, high = bdd.succ(u)
                todo = [c for c in (low, high) if int(c) not in ids]
                if todo:
                    stack.extend(todo)
                    continue
                stack.pop()
                ids[int(u)] = len(nodes) + 2
                nodes.append([level, ids[int(low)], ids[int(high)]])
            out_roots.append(ids[int(root)])
        return json.dumps({"order": self.order(), "nodes": nodes, "roots": out_roots})

    def load(self, text: str) -> list[Any]:
        """The roots of :meth:`dump`'s ``text``, rebuilt in this (fresh) manager."""
        data = json.loads(text)
        bdd = self.bdd
        bdd.declare(*data["order"])
        made = [bdd.false, bdd.true]
        for level, low, high in data["nodes"]:
            made.append(bdd.ite(bdd.var(bdd.var_at_level(level)), made[high], made[low]))
        return [made[r] for r in data["roots"]]

    def order(self) -> list[str]:
        """The variables from the top of the BDDs down."""
        return sorted(self.bdd.vars, key=self.bdd.level_of_var)


ALGEBRAS = {"monomials": Monomials, "bdd": Bdds}


_COUNTS: list[tuple[Callable[..., int], Callable[..., int]] | None] = []  # found once


def _manager_pointer(bdd: Any) -> int | None:
    """The ``DdManager *`` of a ``dd.cudd.BDD``: its first field after the object header and
    Cython's method table (``cdef DdManager *manager`` in dd's ``cudd.pyx``). Not an interface
    of dd: :func:`_cudd_counts` checks it once against dd's own statistics."""
    return ctypes.c_void_p.from_address(id(bdd) + 3 * ctypes.sizeof(ctypes.c_void_p)).value


def _cudd_counts() -> tuple[Callable[..., int], Callable[..., int]] | None:
    """CUDD's ``Cudd_ReadKeys`` and ``Cudd_ReadDead`` (the live-node count is their difference),
    checked once on a small manager against dd's statistics through :func:`_manager_pointer`
    (variables, and live nodes as nodes are made and dropped), or None: then dd's statistics."""
    if not _COUNTS:
        _COUNTS.append(None)
        try:
            from dd import cudd

            lib = ctypes.CDLL(cudd.__file__)
            keys, dead, size = lib.Cudd_ReadKeys, lib.Cudd_ReadDead, lib.Cudd_ReadSize
            for fn in (keys, dead, size):
                fn.restype, fn.argtypes = ctypes.c_uint, [ctypes.c_void_p]
            bdd = cudd.BDD()
            bdd.declare(*(f"x{i}" for i in range(12)))
            mgr = _manager_pointer(bdd)
            made = []
            for k in range(3):
                made += [bdd.var(f"x{i}") & bdd.var(f"x{(i * 5 + k) % 12}") | bdd.var(f"x{(i + k) % 12}") for i in range(12)]
                if k == 1:
                    del made[4:]
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", UserWarning)
                    stats = bdd.statistics(exact_node_count=False)
                if not mgr or size(mgr) != stats["n_vars"] or keys(mgr) - dead(mgr) != stats["n_nodes"]:
                    return None
            _COUNTS[0] = (keys, dead)
        except (OSError, AttributeError, ImportError):
            return None
    return _COUNTS[0]


_EVAL: list[Callable[..., Any] | None] = []  # found once: [Cudd_Eval] or [None]


def _cudd_eval() -> Callable[..., Any] | None:
    """CUDD's ``Cudd_Eval(manager, node, inputs)`` from the library ``dd.cudd`` is built on, or
    None. ``dd`` does not wrap it; its node pointer is ``int(function) - 2`` (``dd``'s own
    encoding, not a documented interface), so the function is checked once on a small BDD
    against ``let`` and left unused (restriction instead) if the two disagree. ``Cudd_Eval``
    does not read its manager argument: it follows one path by the nodes' variable indices."""
    if not _EVAL:
        _EVAL.append(None)
        try:
            from dd import cudd

            fn = ctypes.CDLL(cudd.__file__).Cudd_Eval
            fn.restype, fn.argtypes = ctypes.c_void_p, [ctypes.c_void_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_int)]
            bdd = cudd.BDD()
            bdd.declare("x", "y", "z")
            f = bdd.add_expr("(x & y) | z")
            one = int(bdd.true) - 2
            for dead in ((), ("x",), ("z",), ("x", "z"), ("y", "z")):
                inputs = (ctypes.c_int * 3)()
                for v in bdd.vars:
                    inputs[bdd._index_of_var[v]] = 0 if v in dead else 1
                want = (bdd.let({v: False for v in dead}, f) if dead else f) != bdd.false
                if (fn(None, int(f) - 2, inputs) == one) != want:
                    return None
            _EVAL[0] = fn
        except (OSError, AttributeError, ImportError):
            return None
    return _EVAL[0]
