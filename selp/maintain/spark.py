"""Absorption provenance distributed over Spark partitions, with MinShip [LTZIL10]: ``selp
maintain --engine spark --minship eager|lazy|off``.

The paper's nodes are the groups of one Spark shuffle: every round, the nodes' states (one row
each, the pickled :class:`~selp.maintain.minship.Node`) and the messages in flight (one row each,
keyed by destination) are grouped on the destination and handed to ``applyInPandas``, whose
function runs one node's round (:meth:`Node.step`) over its whole group -- selp's absorption code
on a partition, never a UDF per row -- and returns its new state and the messages it sends. The
``groupBy`` is the shipping: rows that move from one node to another are the communication
cost, counted per round (rows, and payload bytes by :func:`~selp.maintain.minship.message_bytes`)
in the same Spark job that cuts the round's lineage. The rounds end when no message is in flight;
then the states come back to the driver, which keeps them (pickled with the maintainer in the
state file, between runs) together with the base and the view.

The driver numbers the base tuples' variables (the first batch in the depth-first order of
:mod:`selp.maintain.order`), sends each inserted tuple to its owner and each deletion as a
*kill* of its variable to the deleted tuple's owner, which forwards it along what it shipped.
On Spark, formulas are minimal monomial sets (bit sets): a BDD lives in its CUDD manager, and
shipping one would mean a node list per message (:meth:`~selp.maintain.algebra.Bdds.dump`) and a
rebuild in the receiving node's manager, every round -- not done. ``formulas="bdd"`` is for
``runner="local"``: every node in this process, one manager shared, a BDD shipped as itself and
counted as its node count times a 12-byte record (:func:`~selp.maintain.minship.message_bytes`);
such a maintainer measures shipping and is not durable (it is not pickled). A formula past the
cap is a one-line error (no DRed fallback in the distributed form).

:class:`ShippingDRed` is the baseline: selp's DRed with the same placement, counting the rows
the distributed DRed would ship (a node ships each tuple it over-deletes, re-derives or derives
once per phase to the tuple's owner, and each base tuple to its replicas).

``runner="local"`` runs the same nodes in this process (the property tests' fast path).
"""

from __future__ import annotations

import pickle
import warnings
from typing import Any, Callable, Iterable, Mapping

from selp.errors import SelpError
from selp.language.ast import Rule
from selp.language.validate import Analysis
from selp.maintain import formula as pb
from selp.maintain.algebra import Bdds
from selp.maintain.base import Maintainer, present_changes
from selp.maintain.dred import DRed
from selp.maintain.minship import MODES, Localized, Message, Node, localize, message_bytes, place
from selp.maintain.order import dfs_order
from selp.maintain.program import Fact, ViewChanges

DEFAULT_NODES = 4
SCHEMA = "dest int, src int, kind string, name string, fact binary, form binary, nbytes long"


class Distributed(Maintainer):
    """A view maintained with absorption provenance on ``nodes`` nodes (see the module
    docstring); :attr:`last` holds the latest batch's rounds and shipped rows and bytes,
    :attr:`total` their sums over the maintainer's life."""

    strategy = "absorption"
    formulas = "monomials"  # states saved before BDDs could be distributed hold monomial sets

    def __init__(self, analysis: Analysis, base: Mapping[str, Iterable[Fact]], nodes: int = DEFAULT_NODES, minship: str = "lazy",
                 cap: int = pb.DEFAULT_CAP, runner: str = "spark", spark: Any = None, formulas: str = "monomials") -> None:
        if minship not in MODES:
            raise SelpError(f"unknown MinShip mode {minship!r}; use one of {', '.join(MODES)}")
        if nodes < 1:
            raise SelpError(f"--nodes must be at least 1, got {nodes}")
        super().__init__(analysis)
        self.prog: Localized = localize(analysis, cap)
        if formulas == "bdd":
            if runner != "local":
                raise SelpError("the distributed form keeps BDD formulas only with every node in one process (runner local); on spark use monomials")
            self.prog.alg = Bdds(node_cap=10**12)
        self.formulas = formulas
        self.cap, self.n, self.minship, self.runner = cap, nodes, minship, runner
        self.nodes = [Node(i, nodes) for i in range(nodes)]
        self.var_of: dict[tuple[str, Fact], int] = {}
        self.next_var = 0
        self.first = True
        self.last: dict[str, int] = {}
        self.total = {"rounds": 0, "shipped_rows": 0, "shipped_bytes": 0}
        self._cache_spark: dict[str, Any] = {"session": spark} if spark is not None else {}
        self.apply({rel: base.get(rel, ()) for rel in analysis.edb}, {})

    def apply(self, inserts: Mapping[str, Iterable[Fact]], deletes: Mapping[str, Iterable[Fact]]) -> ViewChanges:
        ins, dels = present_changes(self.stores, inserts, deletes)
        msgs: list[Message] = []
        for rel, fs in sorted(dels.items()):
            for f in sorted(fs, key=repr):
                v = self.var_of.pop((rel, f))
                msgs.append((place(f[0], self.n), -1, "kill", "", (), [1 << v]))  # a bit set in either algebra
            self.stores[rel].discard_all(fs)
        listed = [(rel, f) for rel in sorted(ins) for f in sorted(ins[rel], key=repr)]
        for rel, f in dfs_order(listed) if self.first else listed:
            v = self.var_of[(rel, f)] = self.next_var
            self.next_var += 1
            msgs.append((place(f[0], self.n), -1, "base+", rel, f, [1 << v] if self.formulas == "monomials" else self.prog.alg.var(v)))
            self.stores[rel].add_all((f,))
        self.first = False
        run = run_local if self.runner == "local" else self._run_spark
        self.nodes, self.last = run(self.nodes, msgs, self.prog, self.minship)
        for k in self.total:
            self.total[k] += self.last[k]
        changes = ViewChanges()
        for node in self.nodes:
            for rel, fs in node.changes.removed.items():
                self.stores[rel].discard_all(fs)
                for f in fs:
                    changes.remove(rel, f)
            for rel, fs in node.changes.added.items():
                self.stores[rel].add_all(fs)
                for f in fs:
                    changes.add(rel, f)
            node.changes = ViewChanges()
        return changes

    def __getstate__(self) -> dict[str, Any]:
        if self.formulas != "monomials":
            raise SelpError("the distributed form with BDD formulas is not durable (a local simulation that measures shipping)")
        return super().__getstate__()

    def use_session(self, spark: Any) -> None:
        """Run the next rounds on ``spark`` (a loaded state has no session of its own)."""
        self._cache_spark["session"] = spark

    def _run_spark(self, nodes: list[Node], msgs: list[Message], prog: Localized, mode: str) -> tuple[list[Node], dict[str, int]]:
        spark = self._cache_spark.get("session")
        if spark is None:
            from selp.engines.spark_session import get_spark

            spark = self._cache_spark["session"] = get_spark()
        return run_spark(spark, nodes, msgs, prog, mode)

    def provenance_stats(self) -> dict[str, Any]:
        """Bytes of the owned derived tuples' formulas, and the shipping of the last batch."""
        nbytes = tuples = 0
        for node in self.nodes:
            b, t = node.provenance_bytes(self.analysis.idb, self.prog.alg)
            nbytes, tuples = nbytes + b, tuples + t
        return {"formulas": self.prog.alg.name, "nodes": self.n, "minship": self.minship, "provenance_bytes": nbytes,
                "provenance_bytes_per_tuple": nbytes / tuples if tuples else 0.0, **{f"last_{k}": v for k, v in self.last.items()},
                **{f"total_{k}": v for k, v in self.total.items()}}


def run_local(nodes: list[Node], msgs: list[Message], prog: Localized, mode: str) -> tuple[list[Node], dict[str, int]]:
    """The rounds in this process: every node with messages steps, until none is in flight."""
    stats = {"rounds": 0, "shipped_rows": 0, "shipped_bytes": 0}
    while msgs:
        inbox: dict[int, list[Message]] = {}
        for m in msgs:
            inbox.setdefault(m[0], []).append(m)
        msgs = []
        for i in sorted(inbox):
            msgs.extend(nodes[i].step(inbox[i], prog, mode))
        stats["rounds"] += 1
        stats["shipped_rows"] += len(msgs)
        stats["shipped_bytes"] += sum(message_bytes(m, prog.alg) for m in msgs)
    return nodes, stats


def _row(m: Message) -> tuple:
    return (m[0], m[1], m[2], m[3], pickle.dumps(m[4]), pickle.dumps(m[5]), message_bytes(m))


def _node_round(prog: Localized, mode: str) -> Callable:
    """The ``applyInPandas`` function of one round: one node's group in, its state and sends out."""

    def run(pdf: Any) -> Any:
        import pandas as pd

        state = pdf[pdf["kind"] == "state"]
        node: Node = pickle.loads(state["form"].iloc[0])
        msgs = [(int(d), int(s), k, name, pickle.loads(f), pickle.loads(form))
                for d, s, k, name, f, form in pdf[pdf["kind"] != "state"][["dest", "src", "kind", "name", "fact", "form"]].itertuples(index=False)]
        try:
            out = node.step(msgs, prog, mode) if msgs else []
        except pb.Blowup as err:  # said by the driver in one line
            return pd.DataFrame([(node.id, node.id, "blowup", "", b"", b"", int(err.args[0]))], columns=pdf.columns)
        rows = [(node.id, node.id, "state", "", b"", pickle.dumps(node, protocol=pickle.HIGHEST_PROTOCOL), 0)] + [_row(m) for m in out]
        return pd.DataFrame(rows, columns=pdf.columns)

    return run


def run_spark(spark: Any, nodes: list[Node], msgs: list[Message], prog: Localized, mode: str) -> tuple[list[Node], dict[str, int]]:
    """The rounds on Spark (see the module docstring); the nodes' states come back at the end."""
    from pyspark.sql import functions as F

    rows = [(n.id, n.id, "state", "", b"", pickle.dumps(n, protocol=pickle.HIGHEST_PROTOCOL), 0) for n in nodes] + [_row(m) for m in msgs]
    df = spark.createDataFrame(rows, SCHEMA)
    fn = _node_round(prog, mode)
    stats = {"rounds": 0, "shipped_rows": 0, "shipped_bytes": 0}
    while True:
        with warnings.catch_warnings():  # pyspark's note on the pandas version: noise for a CLI user
            warnings.simplefilter("ignore", FutureWarning)
            df = df.groupBy("dest").applyInPandas(fn, SCHEMA).localCheckpoint(eager=True)
        stats["rounds"] += 1
        got = df.groupBy("kind").agg(F.count("*").alias("rows"), F.sum("nbytes").alias("bytes")).collect()
        sent = {r["kind"]: (r["rows"], r["bytes"] or 0) for r in got}
        if "blowup" in sent:
            raise SelpError(f"absorption on spark: a formula reached {sent['blowup'][1]} monomials (cap {prog.cap}); the distributed form has no DRed fallback (use --engine reference)")
        rows_, bytes_ = sum(v[0] for k, v in sent.items() if k != "state"), sum(v[1] for k, v in sent.items() if k != "state")
        if not rows_:
            break
        stats["shipped_rows"] += rows_
        stats["shipped_bytes"] += bytes_
    states = {r["dest"]: pickle.loads(r["form"]) for r in df.filter(F.col("kind") == "state").select("dest", "form").collect()}
    return [states[i] for i in range(len(nodes))], stats


class ShippingDRed(DRed):
    """selp's DRed counting what a distributed DRed would ship under the placement of
    :func:`~selp.maintain.minship.localize`: per phase (over-delete, then rederive and insert),
    a node ships each tuple it derives for a head owned elsewhere once; a changed base tuple
    goes to each node holding a replica of it. Re-derivations are counted when they propagate
    (the insert phase), not when they are found: a lower bound of DRed's shipping. :attr:`last`
    is the latest batch's count."""

    def __init__(self, analysis: Analysis, base: Mapping[str, Iterable[Fact]], nodes: int = DEFAULT_NODES) -> None:
        self.prog = localize(analysis)
        self.n = nodes
        self.last = {"shipped_rows": 0, "shipped_bytes": 0}
        self.total = {"shipped_rows": 0, "shipped_bytes": 0}
        self._phase: set[tuple[str, int, str, Fact]] = set()
        self._stage = "delete"
        super().__init__(analysis, base)

    def apply(self, inserts: Mapping[str, Iterable[Fact]], deletes: Mapping[str, Iterable[Fact]]) -> ViewChanges:
        self.last = {"shipped_rows": 0, "shipped_bytes": 0}
        ins, dels = present_changes(self.stores, inserts, deletes)
        for rel, fs in [*ins.items(), *dels.items()]:
            for alias, at in self.prog.replicas.get(rel, ()):
                for f in fs:
                    owner = place(f[0], self.n)
                    dests = set(range(self.n)) if at is None else {place(f[at], self.n)}
                    for _ in dests - {owner}:
                        self._count(alias, f)
        self._phase = set()
        out = super().apply(ins, dels)
        for k in self.total:
            self.total[k] += self.last[k]
        return out

    def _count(self, name: str, f: Fact) -> None:
        """One row shipped: ``f`` under ``name``, without a formula."""
        self.last["shipped_rows"] += 1
        self.last["shipped_bytes"] += message_bytes((0, 0, "", name, f, []))

    def _positive(self, comp: Any, ins: Any, dels: Any, changes: ViewChanges) -> Any:
        self._phase, self._stage = set(), "delete"
        return super()._positive(comp, ins, dels, changes)

    def _rederive(self, comp: Any, rel: str, candidates: set[Fact]) -> set[Fact]:
        self._stage = "insert"  # over-deletion is over: what is derived from now on is new rows
        return super()._rederive(comp, rel, candidates)

    def _plan(self, rule: Rule, driver: int | None) -> tuple[Any, Callable]:
        """DRed's plan with a head builder that counts the derivation's shipping."""
        plan, head = super()._plan(rule, driver)
        anchor = self.prog.anchors.get(rule)
        if anchor is None:  # the guarded rules of rederivation: their heads are counted when propagated
            return plan, head

        def counted(env: Any) -> Fact:
            h = head(env)
            at = place(plan.atom_fact(anchor, env)[0], self.n)
            key = (self._stage, at, rule.head.relation, h)
            if at != place(h[0], self.n) and key not in self._phase:
                self._phase.add(key)
                self._count(rule.head.relation, h)
            return h

        return plan, counted
