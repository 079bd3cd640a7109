"""A Spark partition's facts in its DuckDB, numbered for the top-k kernel (issue 19): the id
tables ``i:REL``, the fact ids of entries shipped in, and the facts' arguments in id order.
Shared by the whole-partition path (:mod:`selp.topk.component`) and the component-by-component
path (:mod:`selp.topk.component_static`), which number facts the same way."""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from selp.engines.embedded.sql import ident
from selp.engines.embedded.store import table


def id_tables(con: Any, rels: list[str]) -> tuple[dict[str, tuple[int, int]], int]:
    """``"i:rel"``: each relation's facts numbered; (first id, count) per relation, and the total."""
    offsets: dict[str, tuple[int, int]] = {}
    offset = 0
    for rel in rels:
        con.execute(
            f"CREATE OR REPLACE TABLE {ident(f'i:{rel}')} AS SELECT (row_number() OVER () - 1 + {offset})::BIGINT AS id, *"
            f" FROM {table(rel)}"
        )
        n = con.execute(f"SELECT count(*) FROM {ident(f'i:{rel}')}").fetchall()[0][0]
        offsets[rel] = (offset, n)
        offset += n
    return offsets, offset


def entry_fact_ids(con: Any, store: Any, rel: str, tbl: Any, view: str) -> np.ndarray:
    """The fact id of every row of ``tbl`` (entries of ``rel``, columns c0..), in row order."""
    import pyarrow as pa

    con.register(view, tbl.append_column("_row", pa.array(np.arange(tbl.num_rows, dtype=np.int64))))
    ks = store.kinds[rel]
    on = " AND ".join(
        f"i.c{i} = " + (f"CAST(e.c{i} AS BIGINT)" if k.native_int else f"e.c{i}") for i, k in enumerate(ks)
    ) or "TRUE"
    got = con.execute(f"SELECT i.id FROM {view} e JOIN {ident(f'i:{rel}')} i ON {on} ORDER BY e._row").fetchnumpy()
    ids = np.asarray(got["id"], dtype=np.int64)
    if len(ids) != tbl.num_rows:  # every entry's fact was loaded: a mismatch is a bug, not bad input
        raise RuntimeError(f"partition DTable: {tbl.num_rows - len(ids)} entries of {rel} match no fact")
    return ids


def fact_args(con: Any, store: Any, rels: list[str], offsets: Mapping[str, tuple[int, int]]) -> Any:
    """Every fact's arguments (encoded text) as one list<string> array in id order."""
    import pyarrow as pa
    import pyarrow.compute as pc

    parts = []
    for rel in rels:
        n = len(store.kinds[rel]) if store.analysis.arities[rel] else 0
        m = offsets[rel][1]
        if n == 0:
            parts.append(pa.ListArray.from_arrays(pa.array(np.zeros(m + 1, np.int32)), pa.array([], pa.string())))
            continue
        cols = ", ".join(f"CAST(c{i} AS VARCHAR) AS c{i}" for i in range(n))
        t = con.sql(f"SELECT {cols} FROM {ident(f'i:{rel}')} ORDER BY id").to_arrow_table()
        flat = pa.concat_arrays([t.column(i).combine_chunks().cast(pa.string()) for i in range(n)])
        # row-major: value j of fact r is column j's row r
        order = (np.arange(n)[None, :] * m + np.arange(m)[:, None]).reshape(-1)
        values = pc.take(flat, pa.array(order))
        parts.append(pa.ListArray.from_arrays(pa.array(np.arange(0, m * n + 1, n, dtype=np.int32)), values))
    if not parts:
        return pa.array([], pa.list_(pa.string()))
    return pa.concat_arrays(parts)


def leaf_arrays(first: int, tables: list[Any]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The kernel's leaf arrays over ``first`` facts of the partition followed by one leaf per row
    of ``tables`` (entries shipped in, columns ``_w``, ``_s``, ``_o``): (is a leaf, weight, tree
    size, origin), each of ``first`` + rows entries, zero for the partition's own facts."""
    def column(name: str, dtype: Any) -> np.ndarray:
        if not tables:
            return np.zeros(0, dtype)
        return np.concatenate([t.column(name).to_numpy(zero_copy_only=False).astype(dtype) for t in tables])

    F = first + sum(t.num_rows for t in tables)
    leaf = np.zeros(F, np.bool_)
    leaf[first:] = True
    leaf_w = np.zeros(F, np.float64)
    leaf_w[first:] = column("_w", np.float64)
    leaf_size = np.zeros(F, np.int64)
    leaf_size[first:] = column("_s", np.int64)
    leaf_origin = np.zeros(F, np.int64)
    leaf_origin[first:] = column("_o", np.int64)
    return leaf, leaf_w, leaf_size, leaf_origin
