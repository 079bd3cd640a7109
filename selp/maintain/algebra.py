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
"""

from __future__ import annotations

import json
from typing import Any, Iterable

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

    def disj(self, old: Any | None, new: Any) -> tuple[Any, Any | None]:
        """``(old ∨ new, what it gained or None)``."""
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

    def restrict(self, form: Any, kill: Any) -> Any | None:
        """``form`` with the killed variables false; None when it is false."""
        rest = pb.restrict(form, kill)
        return rest or None

    def check(self) -> None:
        """Nothing: the monomial cap is checked as formulas grow."""

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
        self._manager()
        self.cap = cap
        self.node_cap = node_cap

    def check(self) -> None:
        """Raise :class:`~selp.maintain.formula.Blowup` when the manager holds more live nodes
        than ``node_cap`` (reading the count costs ~0.1 ms: once per round, not per operation)."""
        nodes = len(self.bdd)
        if nodes > self.node_cap:
            raise pb.Blowup(nodes, "live BDD nodes", self.node_cap)

    def _manager(self) -> None:
        from dd import cudd

        self.bdd = cudd.BDD()
        self.bdd.configure(reordering=False)  # the order is ours (depth-first), not CUDD's sifting

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

    def disj(self, old: Any | None, new: Any) -> tuple[Any, Any | None]:
        if old is None:
            return new, (None if new == self.bdd.false else new)
        form = old | new
        if form == old:
            return old, None
        return form, new & ~old

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
