"""Tree writers over :class:`~selp.topk.flat.Flat` answers, streamed in chunks.

The formats (``docs/topk.md``):

* ``text`` -- the box drawings of :func:`selp.topk.trees.render_text`;
* ``json`` -- the document of :func:`selp.topk.trees.to_json` (compact, as written to files);
* ``jsonl`` -- one answer per line: ``{"fact": {...}, "trees": [{"weight": W, "tree": {...}}]}``;
* ``dtable-jsonl`` -- the shared-subtree form: a header line, then facts, entries (children
  before parents: entry ids are post-order) and answers, each line defined before it is used, so
  the whole answer costs a line per entry however large its trees are.

The compiled renderer (:file:`_render.c`) writes a chunk of answers (a few MB) per call; between
calls this module writes the chunk, reports progress and lets Ctrl-C through. Where the renderer
was not built, the same bytes come from the Python writers of :mod:`selp.topk.trees`.
"""

from __future__ import annotations

import ctypes
import json
from typing import IO, Any, Callable

import numpy as np
import pyarrow as pa

from selp.errors import SelpError
from selp.topk.flat import W_STRINGS, Flat, Weights, rule_pieces

FORMATS = ("text", "json", "jsonl", "dtable-jsonl")
_CODE = {"text": 0, "json": 1, "jsonl": 2}
CHUNK = 4 << 20  # bytes of output per call
_ABI = 1

_LIB: list[Any] = []


def library() -> Any:
    """The compiled renderer through ctypes, or None when it was not built."""
    if not _LIB:
        from selp.topk.native import extension_file

        try:
            lib = ctypes.CDLL(extension_file("_render"))
            lib.selp_render_abi.restype = ctypes.c_int64
            if lib.selp_render_abi() != _ABI:
                raise AttributeError("selp_render_abi")
        except (ImportError, OSError, AttributeError):
            _LIB.append(None)
            return None
        P, I64, INT = ctypes.c_void_p, ctypes.c_int64, ctypes.c_int
        lib.selp_render_new.argtypes = [P, P, P, P, INT, P, P, P, P, P, INT] + [P] * 10 + [I64, P, P, P, INT, P, P, P, P, P]
        lib.selp_render_new.restype = P
        lib.selp_render_free.argtypes, lib.selp_render_free.restype = [P], None
        lib.selp_render_answers.argtypes = [P, INT, I64, I64, ctypes.POINTER(ctypes.c_char_p), ctypes.POINTER(I64)]
        lib.selp_render_answers.restype = I64
        lib.selp_render_dag.argtypes = [P, I64, I64, I64, ctypes.POINTER(ctypes.c_char_p), ctypes.POINTER(I64)]
        lib.selp_render_dag.restype = I64
        lib.selp_postorder.argtypes = [I64] + [P] * 10
        lib.selp_postorder.restype = INT
        _LIB.append(lib)
    return _LIB[0]


def compiled_available() -> bool:
    """Whether the compiled renderer was built."""
    return library() is not None


def _strings(values: list[str] | pa.Array) -> tuple[np.ndarray, Any]:
    """(int64 offsets, data buffer) of strings, as the renderer reads them; the buffer object
    must be kept alive while the renderer runs."""
    arr = values if isinstance(values, pa.Array) else pa.array(values, pa.large_string())
    if arr.type != pa.large_string():
        arr = arr.cast(pa.large_string())
    if arr.offset:
        arr = pa.concat_arrays([arr])  # a slice: copied so that its offsets start at 0
    bufs = arr.buffers()
    offsets = np.frombuffer(bufs[1], dtype=np.int64, count=len(arr) + 1) if bufs[1] is not None else np.zeros(1, np.int64)
    data = bufs[2] if bufs[2] is not None and bufs[2].size else pa.py_buffer(b"\0")
    return offsets, data


def _addr(a: Any) -> int | None:
    if a is None:
        return None
    if isinstance(a, np.ndarray):
        return a.ctypes.data if a.size else None
    return a.address


class _Context:
    """A renderer context over a :class:`Flat`'s arrays (kept referenced while it lives)."""

    def __init__(self, flat: Flat) -> None:
        self.lib = library()
        keep: list[Any] = []

        def arr(a: np.ndarray, dtype: Any) -> int | None:
            c = np.ascontiguousarray(a, dtype=dtype)
            if c.size == 0:
                c = np.zeros(1, dtype=dtype)
            keep.append(c)
            return c.ctypes.data

        def strings(values: Any) -> tuple[int | None, int | None]:
            off, data = _strings(values)
            keep.extend((off, data))
            return off.ctypes.data, data.address

        def weights(w: Weights) -> list[Any]:
            if w.mode == W_STRINGS:
                t_off, t = strings(w.text)
                j_off, j = strings(w.json)
                return [w.mode, None, t_off, t, j_off, j]
            assert w.values is not None
            return [w.mode, arr(w.values, np.float64), None, None, None, None]

        rtext, rjson, rname = rule_pieces(flat.rules, flat.rule_weights)
        args = [arr(flat.node_fact, np.int64), arr(flat.node_rule, np.int32), arr(flat.child_ptr, np.int64),
                arr(flat.child, np.int64), *weights(flat.node_w), int(flat.leaf_weightless),
                *strings(flat.fact_text), *strings(flat.fact_json), *strings(rtext), *strings(rjson), *strings(rname),
                flat.n_answers, arr(flat.ans_fact, np.int64), arr(flat.ans_ptr, np.int64), arr(flat.ans_root, np.int64),
                *weights(flat.ans_w)]
        self.keep = keep
        self.ptr = self.lib.selp_render_new(*args)
        if not self.ptr:
            raise MemoryError("the tree renderer")

    def close(self) -> None:
        if self.ptr:
            self.lib.selp_render_free(self.ptr)
            self.ptr = None

    def answers(self, fmt: int, a: int) -> tuple[int, bytes | memoryview]:
        out, n = ctypes.c_char_p(), ctypes.c_int64()
        nxt = self.lib.selp_render_answers(self.ptr, fmt, a, CHUNK, ctypes.byref(out), ctypes.byref(n))
        return nxt, _view(out, n.value, nxt)

    def dag(self, n_nodes: int, e: int) -> tuple[int, bytes | memoryview]:
        out, n = ctypes.c_char_p(), ctypes.c_int64()
        nxt = self.lib.selp_render_dag(self.ptr, n_nodes, e, CHUNK, ctypes.byref(out), ctypes.byref(n))
        return nxt, _view(out, n.value, nxt)


def _view(out: ctypes.c_char_p, n: int, nxt: int) -> memoryview:
    if nxt < 0:
        raise MemoryError("the tree renderer")
    if n == 0:
        return memoryview(b"")
    addr = ctypes.cast(out, ctypes.c_void_p).value
    return memoryview((ctypes.c_char * n).from_address(addr)).cast("B")


Progress = Callable[[int, int], None]


def write(flat: Flat, fmt: str, fh: IO[bytes], progress: Progress | None = None) -> int:
    """Write ``flat``'s answers to the binary file ``fh`` in ``fmt`` (one of :data:`FORMATS`);
    the number of answers. ``progress(done, total)`` is called between chunks."""
    if fmt == "dtable-jsonl":
        return write_dag(flat, fh, progress)
    if fmt == "json":
        fh.write(_json_head(flat).encode("utf-8"))
    if library() is None:
        _write_python(flat, fmt, fh, progress)
    else:
        ctx = _Context(flat)
        try:
            a = 0
            while a < flat.n_answers:
                a, chunk = ctx.answers(_CODE[fmt], a)
                fh.write(chunk)
                if progress is not None:
                    progress(a, flat.n_answers)
        finally:
            ctx.close()
    if fmt == "json":
        fh.write(b"]}\n")
    elif fmt == "text" and flat.n_answers == 0:
        fh.write(b"no derivation matches\n")
    return flat.n_answers


def _json_head(flat: Flat) -> str:
    d = lambda v: json.dumps(v, ensure_ascii=False)  # noqa: E731
    return f'{{"k": {d(flat.k)}, "monoid": {d(flat.monoid)}, "pattern": {d(flat.pattern)}, "results": ['


def dag_header(flat: Flat) -> dict[str, Any]:
    """The first line of the shared-subtree form."""
    return {
        "selp": "dtable", "version": 1, "k": flat.k, "monoid": flat.monoid, "pattern": flat.pattern,
        "fact_weights": not flat.leaf_weightless,
        "rules": [{"name": r, "weight": w} for r, w in zip(flat.rules, flat.rule_weights)],
    }


def postorder(flat: Flat) -> Flat:
    """``flat`` restricted to the nodes its answers reach, renumbered in post-order (children
    first, answers in order), and to the facts those nodes use, numbered in order of first use:
    the numbering of the shared-subtree form and of saved DTables."""
    n_nodes = len(flat.node_fact)
    n_facts = len(flat.fact_text)
    new_id = np.full(n_nodes, -1, dtype=np.int64)
    order = np.empty(n_nodes, dtype=np.int64)
    fact_new = np.full(n_facts, -1, dtype=np.int64)
    fact_order = np.empty(n_facts, dtype=np.int64)
    counts = np.zeros(2, dtype=np.int64)
    lib = library()
    child_ptr = np.ascontiguousarray(flat.child_ptr, dtype=np.int64)
    child = np.ascontiguousarray(flat.child, dtype=np.int64)
    node_fact = np.ascontiguousarray(flat.node_fact, dtype=np.int64)
    ans_ptr = np.ascontiguousarray(flat.ans_ptr, dtype=np.int64)
    ans_root = np.ascontiguousarray(flat.ans_root, dtype=np.int64)
    if lib is not None:
        one = np.zeros(1, np.int64)
        ptr = lambda a: (a if a.size else one).ctypes.data  # noqa: E731
        if lib.selp_postorder(flat.n_answers, ptr(ans_ptr), ptr(ans_root), ptr(child_ptr), ptr(child), ptr(node_fact),
                              ptr(new_id), ptr(order), ptr(fact_new), ptr(fact_order), ptr(counts)) != 0:
            raise MemoryError("numbering the trees' nodes")
    else:
        _postorder_python(ans_root, child_ptr, child, node_fact, new_id, order, fact_new, fact_order, counts)
    nn, nf = int(counts[0]), int(counts[1])
    order, fact_order = order[:nn], fact_order[:nf]
    lens = child_ptr[order + 1] - child_ptr[order]
    ptr2 = np.zeros(nn + 1, dtype=np.int64)
    np.cumsum(lens, out=ptr2[1:])
    src = np.repeat(child_ptr[order] - ptr2[:-1], lens) + np.arange(int(ptr2[-1]), dtype=np.int64)
    take = pa.array(fact_order)
    out = Flat(
        flat.k, flat.monoid, flat.pattern, flat.rules, flat.rule_weights,
        flat.fact_text.take(take), flat.fact_json.take(take),
        fact_new[node_fact[order]], np.asarray(flat.node_rule)[order], ptr2, new_id[child[src]],
        flat.node_w.take(order), fact_new[np.asarray(flat.ans_fact, dtype=np.int64)], ans_ptr,
        new_id[ans_root], flat.ans_w, types=flat.types,
    )
    if flat.fact_args is not None:
        out.fact_args = flat.fact_args.take(take)
    if flat.fact_relation is not None:
        out.fact_relation = flat.fact_relation.take(take)
    return out


def _postorder_python(ans_root: np.ndarray, child_ptr: np.ndarray, child: np.ndarray, node_fact: np.ndarray,
                      new_id: np.ndarray, order: np.ndarray, fact_new: np.ndarray, fact_order: np.ndarray,
                      counts: np.ndarray) -> None:
    nn = nf = 0
    for r in ans_root.tolist():
        if new_id[r] >= 0:
            continue
        new_id[r] = -2
        stack = [[r, 0]]
        while stack:
            frame = stack[-1]
            n, i = frame
            lo, hi = int(child_ptr[n]), int(child_ptr[n + 1])
            if lo + i < hi:
                frame[1] = i + 1
                ch = int(child[lo + i])
                if new_id[ch] == -1:
                    new_id[ch] = -2
                    stack.append([ch, 0])
                continue
            stack.pop()
            new_id[n] = nn
            order[nn] = n
            nn += 1
            f = int(node_fact[n])
            if fact_new[f] < 0:
                fact_new[f] = nf
                fact_order[nf] = f
                nf += 1
    counts[0], counts[1] = nn, nf


def write_dag(flat: Flat, fh: IO[bytes], progress: Progress | None = None, numbered: bool = False) -> int:
    """Write the shared-subtree form (``dtable-jsonl``); ``numbered``: ``flat`` is already in
    :func:`postorder`'s numbering. The number of answers."""
    if not numbered:
        flat = postorder(flat)
    fh.write((json.dumps(dag_header(flat), ensure_ascii=False) + "\n").encode("utf-8"))
    n_nodes = len(flat.node_fact)
    if library() is None:
        _write_dag_python(flat, fh)
        return flat.n_answers
    ctx = _Context(flat)
    try:
        e = 0
        while True:
            # the call that reaches the last node also writes the answers left
            e, chunk = ctx.dag(n_nodes, e)
            fh.write(chunk)
            if progress is not None:
                progress(e, n_nodes)
            if e >= n_nodes:
                break
    finally:
        ctx.close()
    return flat.n_answers


def _write_dag_python(flat: Flat, fh: IO[bytes]) -> None:
    from selp.topk.flat import WEIGHT_MODE  # noqa: F401 (weights as the renderer shows them)

    text, js = _python_weights(flat.node_w, flat.monoid)
    rname = rule_pieces(flat.rules, flat.rule_weights)[2]
    last = [int(flat.ans_root[flat.ans_ptr[a]:flat.ans_ptr[a + 1]].max()) for a in range(flat.n_answers)]
    next_fact = next_answer = 0
    facts = flat.fact_json.to_pylist()
    out = []
    n_nodes = len(flat.node_fact)
    for e in range(n_nodes + 1):
        while next_answer < flat.n_answers and last[next_answer] < e:
            a = next_answer
            roots = ", ".join(str(int(r)) for r in flat.ans_root[flat.ans_ptr[a]:flat.ans_ptr[a + 1]])
            out.append(f'{{"answer": {int(flat.ans_fact[a])}, "trees": [{roots}]}}\n')
            next_answer += 1
        if e == n_nodes:
            break
        f = int(flat.node_fact[e])
        if f == next_fact:
            out.append(f'{{"fact": {f}, {facts[f][1:]}}}\n')
            next_fact += 1
        r = int(flat.node_rule[e])
        kids = ", ".join(str(int(c)) for c in flat.child[flat.child_ptr[e]:flat.child_ptr[e + 1]])
        out.append(f'{{"entry": {e}, "fact": {f}, "rule": {"null" if r < 0 else rname[r]}, "weight": {js[e]}, "children": [{kids}]}}\n')
        if len(out) > 4096:
            fh.write("".join(out).encode("utf-8"))
            out.clear()
    fh.write("".join(out).encode("utf-8"))


def _python_weights(w: Weights, monoid: str) -> tuple[list[str], list[str]]:
    """Each weight as text and JSON, as the renderer writes them."""
    from selp.topk.monoid import format_weight, get_monoid

    if w.mode == W_STRINGS:
        assert w.text is not None and w.json is not None
        return w.text.to_pylist(), w.json.to_pylist()
    assert w.values is not None
    m = get_monoid(monoid)
    vals = [int(v) if monoid in ("size", "access") else float(v) for v in w.values.tolist()]
    shown = [m.display(v) for v in vals]
    return [format_weight(s) for s in shown], [json.dumps(s, ensure_ascii=False) for s in shown]


def _write_python(flat: Flat, fmt: str, fh: IO[bytes], progress: Progress | None) -> None:
    """The renderer's output from Python (no C compiler at install time): slower, same bytes."""
    node_text, node_json = _python_weights(flat.node_w, flat.monoid)
    tree_text, tree_json = _python_weights(flat.ans_w, flat.monoid)
    rtext, rjson, _ = rule_pieces(flat.rules, flat.rule_weights)
    ftext = flat.fact_text.to_pylist()
    fjson = flat.fact_json.to_pylist()
    weightless = flat.leaf_weightless
    ptr, kids, rule, nf = flat.child_ptr, flat.child, flat.node_rule, flat.node_fact

    def label(n: int) -> str:
        r = int(rule[n])
        step = rtext[r] if r >= 0 else "(fact)" if weightless else f"(fact {node_text[n]})"
        return f"{ftext[int(nf[n])]}  {step}"

    def tree_json_text(root: int) -> str:
        parts: list[str] = []
        stack: list[tuple[int, int]] = [(root, -1)]
        while stack:
            n, i = stack.pop()
            r = int(rule[n])
            if i < 0:
                if r < 0:
                    w = "null" if weightless else node_json[n]
                    parts.append(f'{fjson[int(nf[n])]}, "rule": null, "weight": {w}, "children": []}}')
                    continue
                parts.append(f'{fjson[int(nf[n])]}, {rjson[r]}, "children": [')
                i = 0
            lo, hi = int(ptr[n]), int(ptr[n + 1])
            if lo + i >= hi:
                parts.append("]}")
                continue
            if i > 0:
                parts.append(", ")
            stack.append((n, i + 1))
            stack.append((int(kids[lo + i]), -1))
        return "".join(parts)

    def tree_lines(root: int) -> list[str]:
        lines: list[str] = []
        stack = [(root, "    ", "    ")]
        while stack:
            n, first, rest = stack.pop()
            lines.append(first + label(n) + "\n")
            lo, hi = int(ptr[n]), int(ptr[n + 1])
            for j in range(hi - 1, lo - 1, -1):
                end = j == hi - 1
                stack.append((int(kids[j]), rest + ("└─ " if end else "├─ "), rest + ("   " if end else "│  ")))
        return lines

    for a in range(flat.n_answers):
        lo, hi = int(flat.ans_ptr[a]), int(flat.ans_ptr[a + 1])
        fact = int(flat.ans_fact[a])
        if fmt == "text":
            out = [ftext[fact] + "\n"]
            for t in range(lo, hi):
                out.append(f"  #{t - lo + 1}  weight {tree_text[t]}\n")
                out.extend(tree_lines(int(flat.ans_root[t])))
            out.append("\n")
            text = "".join(out)
        else:
            trees = ", ".join(f'{{"weight": {tree_json[t]}, "tree": {tree_json_text(int(flat.ans_root[t]))}}}' for t in range(lo, hi))
            text = ("" if fmt != "json" or a == 0 else ", ") + f'{{"fact": {fjson[fact]}}}, "trees": [{trees}]}}' + ("\n" if fmt == "jsonl" else "")
        fh.write(text.encode("utf-8"))
        if progress is not None and a % 4096 == 4095:
            progress(a + 1, flat.n_answers)


def check_format(fmt: str) -> None:
    """Refuse a format this module does not write."""
    if fmt not in FORMATS:
        raise SelpError(f"unknown tree format {fmt!r}; expected one of {', '.join(FORMATS)}")
