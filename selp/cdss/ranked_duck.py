"""Ranked trust's capped min-cost fixpoint as set-at-a-time SQL in an in-process DuckDB.

The semantics and the algorithm are those of :mod:`selp.cdss.ranked` (read its docstring):
:func:`ranked_duck` computes what :func:`selp.cdss.ranked.ranked_local` (the oracle) computes,
round for round, with every step a query over whole relations -- no Python per tuple except
reading the base data in and the answers out.

**Tables** (one connection, in memory): the base data (``R_l``, ``R_r``) as the embedded
engine loads them (:func:`selp.engines.embedded.store.store_from_facts`: the same column kinds,
labeled nulls as marked text); per instance relation ``R_o`` a cost table ``R_o`` + ``k0..``
(one ``DOUBLE`` per viewpoint), its changed tuples of the last round and its new ones; per
mapping its ``P_m`` rows; per import relation (``R_t``, and ``R_i`` for reports) a cost table.

**A round.** Per mapping: the new ``P_m`` rows are the compiled mapping rule with one body atom
reading the new instance tuples (semi-naive), minus the rows already there; the *affected*
rows (new ones, and those with a body tuple whose cost fell) get their cost vector
``f_m(sum of the body tuples' costs)`` by joining them back with the instance cost tables; the
compiled ``R_t``/``R_i`` rules, evaluated over the affected rows with their costs carried along,
give the import candidates -- so Skolem terms and trust conditions are exactly the embedded
engine's (the rules go through its compiler, :func:`selp.engines.embedded.sql.compile_body`).
Candidates are min-merged into the import tables (``least``, ``min``); the imports whose cost
fell, minus curation's rejections (an anti-join with ``R_r``) and minus those above their
owner's threshold, are min-merged into the instance tables, and what changed there drives the
next round. The rounds stop when no instance tuple's cost falls.
"""

from __future__ import annotations

from typing import Any, Mapping

from selp.cdss.ranked import RankedProgram, RankedResult, Row, Vec
from selp.language.ast import Atom, Rule

# table-name prefixes (relation names may hold any identifier characters: quoted by ``ident``)
_COST, _NEW, _CHANGED, _ROWS, _AFFECTED, _IMPORT = "rk:", "rk-new:", "rk-changed:", "rk-rows:", "rk-aff:", "rk-imp:"


def ranked_duck(rp: RankedProgram, base: Mapping[str, set[Row]], collect: bool = False, reports: tuple[str, ...] | None = None) -> RankedResult:
    """The capped min-cost fixpoint of :func:`selp.cdss.ranked.ranked_local`, computed in DuckDB.

    ``base``: ``R_l``/``R_r`` -> rows (Python values). The result's ``rejections`` are always
    filled; ``imports`` holds the cost vectors of the import relations named in ``reports``
    (``R_t``/``R_i``; their ``R_i`` costs are computed only then), and with ``collect`` every
    import's and every instance tuple's (``outputs``), as :func:`ranked_local` returns them."""
    from selp.engines.embedded.store import store_from_facts
    from selp.language.types import resolve_types
    from selp.language.validate import analyze

    analysis = analyze(rp.compiled.program)
    edb = {rel: rows for rel, rows in base.items() if rel in analysis.edb}
    # the column types as declared (the store checked the data against them when it took them
    # in): no scan of every value to infer them
    store = store_from_facts(analysis, edb, None, resolve_types(analysis))
    try:
        return _Fixpoint(rp, store, collect, set(reports or ())).run()
    finally:
        store.close()



# base tuples (R_l and R_r) up to which the Python fixpoint runs instead: on the 4-tuple bio
# example ranked_local takes 1 ms and ranked_duck 85 ms warm (tables, compiled rules, one query
# per step); at ~90 µs against ~33 µs a tuple they meet near 1,500 tuples (measured 2026-11-25)
SMALL_BASE = 1_000


def is_small(base: Mapping[str, set[Row]]) -> bool:
    """Whether ``base`` is small enough for the Python fixpoint to be the faster one."""
    return sum(map(len, base.values())) <= SMALL_BASE


def ranked_in_process(rp: RankedProgram, base: Mapping[str, set[Row]], reports: tuple[str, ...] = ()) -> RankedResult:
    """:func:`ranked_duck`, or :func:`selp.cdss.ranked.ranked_local` (the same result; tested
    equal on random CDSSs) when ``base`` :func:`is_small`; ``reports`` as :func:`ranked_duck`'s
    (ranked_local returns every import's costs)."""
    if is_small(base):
        from selp.cdss.ranked import ranked_local

        return ranked_local(rp, base)
    return ranked_duck(rp, base, reports=reports)


# base tuples (R_l and R_r) up to which the Spark engine computes ranked trust on the driver, in
# DuckDB (its base data are Python values on the driver already); beyond, ranked_spark
DRIVER_ROWS_CONF = "spark.selp.rankedTrust.driverRows"
DEFAULT_DRIVER_ROWS = 5_000_000


def on_driver(base: Mapping[str, set[Row]], spark: Any) -> bool:
    """Whether the Spark engine computes ranked trust over ``base`` in DuckDB on the driver
    (at most ``spark.selp.rankedTrust.driverRows`` base tuples)."""
    return sum(map(len, base.values())) <= int(spark.conf.get(DRIVER_ROWS_CONF, str(DEFAULT_DRIVER_ROWS)))


class _Fixpoint:
    """The fixpoint's tables and rounds over one embedded-engine store."""

    def __init__(self, rp: RankedProgram, store: Any, collect: bool, reports: set[str]) -> None:
        self.rp, self.store, self.con = rp, store, store.con
        self.collect, self.reports = collect, reports
        self.kinds = dict(store.kinds)
        self.nv = len(rp.viewpoints)
        self.K = [f"k{v}" for v in range(self.nv)]
        # R_i costs only matter to reports: skip those imports otherwise
        self.wanted = {
            t for t, tg in rp.targets.items() if tg.kind == "t" or collect or t in reports
        }

    # -- SQL helpers ---------------------------------------------------------------------------
    def q(self, sql: str) -> Any:
        return self.con.execute(sql)

    def cols(self, rel: str) -> list[str]:
        from selp.engines.embedded.sql import columns

        return columns(len(self.kinds[rel]))

    def create(self, name: str, rel: str, costs: bool = True, extra: str = "") -> None:
        """An empty table with ``rel``'s columns (and the cost columns)."""
        from selp.engines.embedded.store import create_table

        more = "".join(f", {k} DOUBLE" for k in self.K) if costs else ""
        create_table(self.con, name, self.kinds[rel], more + extra)

    def count(self, name: str) -> int:
        return int(self.q(f"SELECT count(*) FROM {name}").fetchall()[0][0])

    def body_sql(self, rule: Rule, tables: Any, extra: list[str]) -> str:
        """``rule`` compiled by the embedded engine's compiler, ``tables(i, relation)`` naming what
        each atom reads; ``extra`` select expressions after the head columns."""
        from selp.engines.embedded.sql import compile_body

        return compile_body(rule, self.kinds, tables).select(distinct=False, extra=extra)

    def merge(self, table: str, cand: str, rel: str, changed: str) -> int:
        """Min-merge the cost rows of ``cand`` (one row per tuple) into ``table``; ``changed``
        becomes the rows whose cost fell or that are new (``new`` flag), with their merged
        costs. Returns how many."""
        c = self.cols(rel)
        on = " AND ".join(f"n.{x} = o.{x}" for x in c)
        lower = " OR ".join(f"n.{k} < o.{k}" for k in self.K) or "FALSE"
        keep = ", ".join([f"n.{x}" for x in c] + [f"least(n.{k}, coalesce(o.{k}, n.{k})) AS {k}" for k in self.K])
        self.q(
            f"CREATE OR REPLACE TEMP TABLE {changed} AS SELECT {keep}, o._present IS NULL AS _new"
            f" FROM {cand} AS n LEFT JOIN (SELECT *, TRUE AS _present FROM {table}) AS o ON {on}"
            f" WHERE o._present IS NULL OR {lower}"
        )
        n = self.count(changed)
        if n:
            if self.K:
                sets = ", ".join(f"{k} = ch.{k}" for k in self.K)
                where = " AND ".join(f"{table}.{x} = ch.{x}" for x in c)
                self.q(f"UPDATE {table} SET {sets} FROM {changed} AS ch WHERE NOT ch._new AND {where}")
            self.q(f"INSERT INTO {table} SELECT {', '.join(c + self.K)} FROM {changed} WHERE _new")
        return n

    # -- the fixpoint ----------------------------------------------------------------------------
    def run(self) -> RankedResult:
        from selp.engines.embedded.sql import ident
        from selp.engines.embedded.store import table

        rp, K = self.rp, self.K
        T = lambda prefix, rel: ident(prefix + rel)  # noqa: E731
        outputs = list(rp.outputs)
        for o, (l_rel, peer, _) in rp.outputs.items():
            w = rp.local_weights[peer]
            c = self.cols(o)
            assert self.kinds[l_rel] == self.kinds[o], (l_rel, o)  # l_R passes R_l's columns to R_o
            self.create(T(_COST, o), o)
            costs = [f"CAST({_float(w[v])} AS DOUBLE) AS {k}" for v, k in enumerate(K)]
            self.q(f"INSERT INTO {T(_COST, o)} SELECT {', '.join(c + costs)} FROM {table(l_rel)}")
            self.q(f"CREATE OR REPLACE TEMP TABLE {T(_CHANGED, o)} AS SELECT * FROM {T(_COST, o)}")
            self.q(f"CREATE OR REPLACE TEMP TABLE {T(_NEW, o)} AS SELECT {', '.join(c)} FROM {T(_COST, o)}")
        for t, tg in rp.targets.items():
            # t_R passes R_t's columns to R_o: stored alike, so merging into R_o needs no casts
            assert tg.kind != "t" or self.kinds[t] == self.kinds[tg.output], (t, tg.output)
            self.kinds[_IMPORT + t] = self.kinds[t]  # the head of the import rules' candidates
            if t in self.wanted:
                self.create(T(_IMPORT, t), t)
        for m in rp.mappings:
            self.create(T(_ROWS, m.provenance), m.provenance, costs=False)
            self.kinds[_AFFECTED + m.provenance] = self.kinds[m.provenance]
        nonempty = {o for o in outputs if self.count(T(_CHANGED, o))}
        rounds = 0
        while nonempty:
            rounds += 1
            cands: dict[str, list[str]] = {}
            for m in rp.mappings:
                reads = [i for i, a in enumerate(m.body) if a.relation in nonempty]
                if not reads:
                    continue
                rows, aff = T(_ROWS, m.provenance), T(_AFFECTED, m.provenance)
                c = self.cols(m.provenance)
                # new P_m rows: one body atom reads the new instance tuples (semi-naive)
                pieces = [
                    self.body_sql(m.rule, lambda i, r, j=j: T(_NEW if i == j else _COST, r), [])
                    for j in reads if self.count(T(_NEW, m.body[j].relation))
                ]
                self.q(f"CREATE OR REPLACE TEMP TABLE {ident('rk-fresh')} AS SELECT {', '.join(c)} FROM {self.create_fresh(pieces, m.provenance)}")
                self.q(f"INSERT INTO {rows} SELECT * FROM {ident('rk-fresh')}")
                # affected rows: the new ones and those reading a tuple whose cost fell
                y = tuple(m.rule.head.args)
                affected = [f"SELECT * FROM {ident('rk-fresh')}"]
                for j in reads:
                    semi = Rule(m.name + "#affected", m.rule.head, (Atom(m.provenance, y), m.rule.body[j]), None)
                    affected.append(self.body_sql(semi, lambda i, r, j=j: rows if i == 0 else T(_CHANGED, r), []))
                # their cost vectors: f_m(sum of the body tuples' costs), body tuples read back
                priced = Rule(m.name + "#cost", m.rule.head, (Atom(_AFFECTED + m.provenance, y),) + tuple(m.rule.body), None)
                costs = []
                for v, k in enumerate(K):
                    total = " + ".join(["CAST(0.0 AS DOUBLE)"] + [f"a{i + 1}.{k}" for i in range(len(m.body))])
                    costs.append(f"CAST({_float(m.scales[v])} AS DOUBLE) * ({total}) + CAST({_float(m.weights[v])} AS DOUBLE) AS {k}")
                self.q(f"CREATE OR REPLACE TEMP TABLE {aff} AS SELECT DISTINCT * FROM ({' UNION ALL '.join(affected)})")
                self.q(
                    f"CREATE OR REPLACE TEMP TABLE {T(_AFFECTED + 'costs:', m.provenance)} AS "
                    + self.body_sql(priced, lambda i, r: aff if i == 0 else T(_COST, r), costs)
                )
                self.kinds[_AFFECTED + "costs:" + m.provenance] = self.kinds[m.provenance]
                # the compiled import rules over the affected rows, their costs carried along
                for rule, target in m.edges:
                    if target not in self.wanted:
                        continue
                    imp = _import_rule(rule, m.arity, _AFFECTED + "costs:" + m.provenance, _IMPORT + target)
                    cands.setdefault(target, []).append(
                        self.body_sql(imp, lambda i, r: T(_AFFECTED + "costs:", m.provenance), [f"a0.{k} AS {k}" for k in K])
                    )
            changed_o: set[str] = set()
            for target, pieces in cands.items():
                tg = rp.targets[target]
                c = self.cols(target)
                cand = ident("rk-cand")
                mins = ", ".join(c + [f"min({k}) AS {k}" for k in K])
                self.q(f"CREATE OR REPLACE TEMP TABLE {cand} AS SELECT {mins} FROM ({' UNION ALL '.join(pieces)}) GROUP BY ALL")
                fell = T("rk-fell:", target)
                if not self.merge(T(_IMPORT, target), cand, target, fell) or tg.kind != "t":
                    continue
                # accepted: not rejected by curation, within the owner's threshold
                on = " AND ".join(f"r.{x} = f.{x}" for x in c)
                kr = self.kinds[tg.rejections]
                same = kr == self.kinds[target]
                rej = f"NOT EXISTS (SELECT 1 FROM {table(tg.rejections)} AS r WHERE {on})" if same else self._not_rejected(tg, c)
                within = f" AND f.{K[tg.owner_index]} <= CAST({_float(tg.threshold)} AS DOUBLE)" if tg.owner_index is not None else ""
                acc = ident("rk-acc")
                self.q(f"CREATE OR REPLACE TEMP TABLE {acc} AS SELECT {', '.join(f'f.{x}' for x in c + K)} FROM {fell} AS f WHERE {rej}{within}")
                o = tg.output
                ch = T("rk-ch:", o)
                if self.merge(T(_COST, o), acc, o, ch):
                    changed_o.add(o)
                    co = self.cols(o)
                    self.q(f"CREATE OR REPLACE TEMP TABLE {T(_CHANGED, o)} AS SELECT {', '.join(co + K)} FROM {ch}")
                    self.q(f"CREATE OR REPLACE TEMP TABLE {T(_NEW, o)} AS SELECT {', '.join(co)} FROM {ch} WHERE _new")
            nonempty = changed_o
        return self.result(rounds)

    def create_fresh(self, pieces: list[str], prov: str) -> str:
        """The new ``P_m`` rows of the ``pieces`` (rule variants), as a subquery."""
        from selp.engines.embedded.sql import ident

        c = self.cols(prov)
        rows = ident(_ROWS + prov)
        if not pieces:
            return f"(SELECT * FROM {rows} WHERE FALSE)"
        on = " AND ".join(f"r.{x} = n.{x}" for x in c)
        union = " UNION ".join(f"({p})" for p in pieces)
        return f"(SELECT * FROM ({union}) AS n WHERE NOT EXISTS (SELECT 1 FROM {rows} AS r WHERE {on}))"

    def _not_rejected(self, tg: Any, c: list[str]) -> str:
        """The anti-join with ``R_r`` when its columns are stored differently from the import's
        (compared with the engine's semantics)."""
        from selp.engines.embedded.sql import Expr, comparison
        from selp.engines.embedded.store import table

        kr, ki = self.kinds[tg.rejections], self.kinds[tg.relation]
        on = " AND ".join(comparison("=", Expr(f"r.{x}", a), Expr(f"f.{x}", b)) for x, a, b in zip(c, kr, ki))
        return f"NOT EXISTS (SELECT 1 FROM {table(tg.rejections)} AS r WHERE {on or 'TRUE'})"

    def result(self, rounds: int) -> RankedResult:
        from selp.engines.embedded.sql import ident
        from selp.engines.embedded.store import table

        rp, K = self.rp, self.K
        rejections: dict[str, set[Row]] = {}
        for t, tg in rp.targets.items():
            if tg.kind != "t" or tg.threshold_rel is None:
                continue
            c = self.cols(t)
            kr = self.kinds[tg.rejections]
            on = " AND ".join(f"r.{x} = f.{x}" for x in c)
            rej = f"NOT EXISTS (SELECT 1 FROM {table(tg.rejections)} AS r WHERE {on})" if kr == self.kinds[t] else self._not_rejected(tg, c)
            above = f"f.{K[tg.owner_index]} > CAST({_float(tg.threshold)} AS DOUBLE)"
            rejections[tg.threshold_rel] = self.store.rows(t, f"(SELECT {', '.join(f'f.{x}' for x in c)} FROM {ident(_IMPORT + t)} AS f WHERE {rej} AND {above})")
        for x in rp.threshold_relations:
            rejections.setdefault(x, set())
        res = RankedResult(rp.viewpoints, rejections, rounds=rounds)
        for t in rp.targets:
            if t in self.wanted and (self.collect or t in self.reports):
                res.imports[t] = self.costs(t, ident(_IMPORT + t))
        if self.collect:
            for o in rp.outputs:
                res.outputs[o] = self.costs(o, ident(_COST + o))
        return res

    def costs(self, rel: str, name: str) -> dict[Row, Vec]:
        """A cost table as Python values: tuple -> cost vector."""
        from selp.engines.embedded.store import decode_rows

        n = len(self.kinds[rel])
        data = self.q(f"SELECT * FROM {name}").fetchall()
        keys = decode_rows([d[:n] if n else (True,) for d in data], self.kinds[rel], keep_order=True)
        return {k: tuple(float(x) for x in d[max(n, 1):]) for k, d in zip(keys, data)}


def _import_rule(rule: Rule, arity: int, source: str, head: str) -> Rule:
    """An edge rule of :class:`~selp.cdss.ranked.MappingPlan` (head: the ``P_m`` row ++ the
    import) as the import rule itself -- head ``head`` (stored like the import relation), its
    ``P_m`` atom reading ``source`` (the affected rows with their costs)."""
    body = (Atom(source, tuple(rule.body[0].args)),) + tuple(rule.body[1:])  # type: ignore[union-attr]
    return Rule(rule.name, Atom(head, tuple(rule.head.args[arity:])), body, None)


def _float(x: float | None) -> str:
    """A finite cost as SQL text (repr round-trips a double exactly)."""
    assert x is not None
    return repr(float(x))

