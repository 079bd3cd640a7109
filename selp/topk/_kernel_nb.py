"""The numba-compiled half of :mod:`selp.topk.kernel` (see there for the algorithms and the
meaning of every array).

This module imports numba at the top, so :mod:`selp.topk.kernel` imports it only when a run is
big enough to be worth compiling: importing numba alone costs about half a second. Everything here
is ``@njit(cache=True)``: the machine code is kept in ``__pycache__`` and later processes skip the
JIT. The pure-Python twin of each function lives in :mod:`selp.topk.kernel`; the two must give
identical arrays, so any change here is mirrored there (the tests compare them).
"""

from __future__ import annotations

import numpy as np
from numba import njit

# splitmix64 constants (Steele, Lea, Flood 2014); see selp.topk.kernel.origin_of
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
# numba types ``uint64 op int64`` as float64: every shift amount must be a uint64 too
_S30 = np.uint64(30)
_S27 = np.uint64(27)
_S31 = np.uint64(31)


@njit(cache=True, inline="always")
def _mix64(z: np.uint64) -> np.uint64:
    z = (z ^ (z >> _S30)) * _M1
    z = (z ^ (z >> _S27)) * _M2
    return z ^ (z >> _S31)


@njit(cache=True)
def combine_origin_nb(rule_hash: int, child_origins: np.ndarray) -> int:
    """The compiled ``origin_of`` (for the tests; the kernels inline the same loop)."""
    h = np.uint64(rule_hash)  # int64 -> uint64 reinterprets the bits
    n = child_origins.shape[0]
    for t in range(n):
        h = _mix64(h * _GOLDEN + np.uint64(child_origins[t]))
    return np.int64(_mix64(h + np.uint64(n + 1) * _GOLDEN))


@njit(cache=True, inline="always")
def _comb(code: int, a: float, b: float) -> float:
    if code == 0:
        return a * b
    if code == 1:
        return a + b
    return b if b < a else a  # the pure-Python twin spells min the same way (signed zeros)


@njit(cache=True, inline="always")
def _less(k1, s1, o1, c1, k2, s2, o2, c2) -> bool:
    """(key, size, origin, id) lexicographically: the id makes the order total, so which item
    pops first never depends on the heap's layout (the pure-Python path uses heapq on tuples)."""
    if k1 != k2:
        return k1 < k2
    if s1 != s2:
        return s1 < s2
    if o1 != o2:
        return o1 < o2
    return c1 < c2


@njit(cache=True)
def _grow(a: np.ndarray, need: int) -> np.ndarray:
    """``a`` itself if it holds ``need`` items, else a copy at least twice as long."""
    if need <= a.shape[0]:
        return a
    b = np.empty(max(need, 2 * a.shape[0] + 16), a.dtype)
    b[: a.shape[0]] = a
    return b


@njit(cache=True, inline="always")
def _heap_push(hk, hs, ho, hc, n, k, s, o, c) -> None:
    """Insert (k, s, o, c) into the binary heap of the first ``n`` items (capacity checked by
    the caller)."""
    i = n
    while i > 0:
        p = (i - 1) >> 1
        if _less(k, s, o, c, hk[p], hs[p], ho[p], hc[p]):
            hk[i] = hk[p]
            hs[i] = hs[p]
            ho[i] = ho[p]
            hc[i] = hc[p]
            i = p
        else:
            break
    hk[i] = k
    hs[i] = s
    ho[i] = o
    hc[i] = c


@njit(cache=True, inline="always")
def _heap_pop(hk, hs, ho, hc, n) -> None:
    """Remove the root of the heap of ``n`` items (the caller read it before)."""
    n -= 1
    k = hk[n]
    s = hs[n]
    o = ho[n]
    c = hc[n]
    i = 0
    while True:
        m = 2 * i + 1
        if m >= n:
            break
        r = m + 1
        if r < n and _less(hk[r], hs[r], ho[r], hc[r], hk[m], hs[m], ho[m], hc[m]):
            m = r
        if _less(hk[m], hs[m], ho[m], hc[m], k, s, o, c):
            hk[i] = hk[m]
            hs[i] = hs[m]
            ho[i] = ho[m]
            hc[i] = hc[m]
            i = m
        else:
            break
    if n > 0:
        hk[i] = k
        hs[i] = s
        ho[i] = o
        hc[i] = c


# --- layout ---------------------------------------------------------------------------------------
#
# Memory latency, not arithmetic, is what costs here: facts and instances are visited in an
# order unrelated to their numbering, so nearly every visit is a cache miss. What is read
# together is therefore stored together, in flat int64 arrays of fixed-size records, a float
# weight sitting in an int64 slot (``A.view(np.float64)``):
# * an instance record (``_pack``): head, rule, number of children, the children's facts;
# * per fact (Top-1) its entry and its best candidate, per (fact, rank) slot (Top-k) an entry:
#   weight, size, origin, and the instance or candidate it came from.
# On the transitive closure of 3,000 edges this roughly halved the time against one array
# per field.


@njit(cache=True)
def _pack(inst_rule, inst_head, child_ptr, child_fact):
    """Instance records of ``3 + M`` int64 (M: the largest body): head, rule, number of children,
    then the children's facts in body order. Returns (records, record length, M)."""
    I = inst_rule.shape[0]
    M = 0
    for i in range(I):
        M = max(M, child_ptr[i + 1] - child_ptr[i])
    si = 3 + M
    IR = np.empty(I * si, np.int64)
    for i in range(I):
        b = i * si
        a = child_ptr[i]
        m = child_ptr[i + 1] - a
        IR[b] = inst_head[i]
        IR[b + 1] = inst_rule[i]
        IR[b + 2] = m
        for j in range(m):
            IR[b + 3 + j] = child_fact[a + j]
    return IR, si, M


# --- Top-1: Knuth --------------------------------------------------------------------------------


@njit(cache=True)
def top1_nb(leaf, leaf_w, leaf_origin, inst_rule, inst_head, child_ptr, child_fact,
            rule_w, rule_size, rule_hash, rule_copy, combine, sign):
    """Knuth's algorithm: the best entry of every fact (see ``kernel._py_top1``)."""
    F = leaf.shape[0]
    I = inst_rule.shape[0]
    IR, si, M = _pack(inst_rule, inst_head, child_ptr, child_fact)
    # fact f's entry at E[4f:4f+4]: weight, size, origin, instance (-1 leaf, -2 none yet)
    E = np.empty(4 * F, np.int64)
    EF = E.view(np.float64)
    # its best candidate so far at B[4f:4f+4]: key, size, origin, instance (-1 none).
    # Decrease-key is by lazy deletion: a heap item is stale unless it is this instance.
    B = np.empty(4 * F, np.int64)
    BF = B.view(np.float64)
    for f in range(F):
        q = 4 * f
        B[q + 3] = -1
        if leaf[f]:
            EF[q] = leaf_w[f]
            E[q + 1] = 0
            E[q + 2] = leaf_origin[f]
            E[q + 3] = -1
        else:
            E[q + 3] = -2
    wait = np.full(F, -1, np.int64)  # instances waiting for fact f to be final, linked via nxt
    nxt = np.empty(I, np.int64)
    # the heap: an instance is offered at most once, so it never holds more than I items. (Its
    # arrays are never replaced: an array variable reassigned in the loop costs an atomic
    # reference count update at every use, which was a fifth of the time.)
    hk = np.empty(I + 1, np.float64)
    hs = np.empty(I + 1, np.int64)
    ho = np.empty(I + 1, np.int64)
    hc = np.empty(I + 1, np.int64)
    nh = 0
    # instances to try: first all, then those released by a fact made final. An instance is in
    # the worklist or in one waiting list, never both: the worklist never holds more than I.
    todo = np.empty(max(I, 1), np.int64)
    nt = 0
    for i in range(I - 1, -1, -1):
        todo[nt] = i
        nt += 1
    while True:
        while nt > 0:
            nt -= 1
            i = todo[nt]
            ib = i * si
            m = IR[ib + 2]
            ready = True
            for j in range(m):
                f = IR[ib + 3 + j]
                if E[4 * f + 3] == -2:  # wait for the first child without its entry
                    nxt[i] = wait[f]
                    wait[f] = i
                    ready = False
                    break
            if not ready:
                continue
            qh = 4 * IR[ib]
            if E[qh + 3] != -2:
                continue  # the head is final already
            r = IR[ib + 1]
            w = rule_w[r]
            s = rule_size[r]
            hh = np.uint64(rule_hash[r])
            for j in range(m):
                q = 4 * IR[ib + 3 + j]
                w = _comb(combine, w, EF[q])
                s += E[q + 1]
                hh = _mix64(hh * _GOLDEN + np.uint64(E[q + 2]))
            if rule_copy[r]:
                o = E[4 * IR[ib + 3] + 2]
            else:
                o = np.int64(_mix64(hh + np.uint64(m + 1) * _GOLDEN))
            kw = sign * w
            if B[qh + 3] >= 0 and not _less(kw, s, o, i, BF[qh], B[qh + 1], B[qh + 2], B[qh + 3]):
                continue
            BF[qh] = kw
            B[qh + 1] = s
            B[qh + 2] = o
            B[qh + 3] = i
            _heap_push(hk, hs, ho, hc, nh, kw, s, o, i)
            nh += 1
        # pop until a live item makes a fact final
        found = False
        while nh > 0:
            kw = hk[0]
            s = hs[0]
            o = ho[0]
            i = hc[0]
            _heap_pop(hk, hs, ho, hc, nh)
            nh -= 1
            h = IR[i * si]
            qh = 4 * h
            if E[qh + 3] != -2 or B[qh + 3] != i:
                continue  # stale
            EF[qh] = sign * kw  # sign is +-1: exact
            E[qh + 1] = s
            E[qh + 2] = o
            E[qh + 3] = i
            w = wait[h]
            wait[h] = -1
            while w >= 0:
                todo[nt] = w
                nt += 1
                w = nxt[w]
            found = True
            break
        if not found:
            break
    # the result: at most one entry per fact, every child's entry of rank 1
    fact_ptr = np.zeros(F + 1, np.int64)
    for f in range(F):
        fact_ptr[f + 1] = fact_ptr[f] + (1 if E[4 * f + 3] != -2 else 0)
    n = fact_ptr[F]
    w_out = np.empty(n, np.float64)
    size = np.empty(n, np.int64)
    origin = np.empty(n, np.int64)
    inst = np.empty(n, np.int64)
    crp = np.zeros(n + 1, np.int64)
    for f in range(F):
        if fact_ptr[f + 1] > fact_ptr[f]:
            p = fact_ptr[f]
            q = 4 * f
            w_out[p] = EF[q]
            size[p] = E[q + 1]
            origin[p] = E[q + 2]
            i = E[q + 3]
            inst[p] = i
            crp[p + 1] = crp[p] + (0 if i < 0 else child_ptr[i + 1] - child_ptr[i])
    return fact_ptr, w_out, size, origin, inst, crp, np.ones(crp[n], np.int32)


# --- Top-k: modifications ------------------------------------------------------------------------
#
# Entry (f, rank r) is slot e = f*k + r - 1, at S[4e:4e+4]: weight, size, origin, candidate (-1
# for a leaf); a fact's origins, scanned for duplicates, are within a few cache lines. O(F*k)
# memory, which the waiting lists need anyway. Candidate c is a record of ``sc`` int64 at
# C[c*sc:]: instance, head (checked first: a released candidate often finds its head full, and
# this saves reading the instance record), next in its waiting list, then its child ranks as
# int32 (``C.view(np.int32)``). Candidates 0..I-1 are the instances with every rank 1. An entry
# keeps its candidate's id: its child ranks are read from there at the end.


# codes returned by _topk_loop
_DONE, _GROW_HEAP, _GROW_CANDIDATES = 0, 1, 2


@njit(cache=True)
def _topk_loop(st, todo, C, C32, sc, M, IR, si, leaf, rule_w, rule_size, rule_hash, rule_copy,
               combine, sign, k, cnt, S, SF, wait, hk, hs, ho, hc):
    """Run until done or until an array is full; the caller then grows it and calls again.

    The arrays are parameters that this loop never replaces: an array variable reassigned inside
    a loop costs numba an atomic reference-count update at each use (a fifth of the time in
    Top-1 before). ``st`` carries the scalar state across calls: the number of worklist items,
    heap items and candidates, and the head of the list of released candidates to try.
    """
    nt, nh, nc, rel = st[0], st[1], st[2], st[3]
    code = _DONE
    while True:
        # try the released candidates and the worklist (the order does not matter: heap ties
        # are broken by candidate id, fixed when the candidate is formed)
        while rel >= 0 or nt > 0:
            if nh == hk.shape[0]:
                code = _GROW_HEAP
                break
            if rel >= 0:
                c = rel
                rel = C[c * sc + 2]  # read first: waiting again relinks c
            else:
                nt -= 1
                c = todo[nt]
            # candidate c: dropped if its head is full; waits on its first missing (child, rank);
            # else its key goes on the heap. (Written out here rather than called: numba would
            # update the reference counts of a callee's array arguments at every call.)
            base = c * sc
            if cnt[C[base + 1]] >= k:
                continue
            ib = C[base] * si
            m = IR[ib + 2]
            rb = 2 * (base + 3)
            ready = True
            for j in range(m):
                f = IR[ib + 3 + j]
                r = C32[rb + j]
                if cnt[f] < r:
                    slot = f * k + r - 1
                    C[base + 2] = wait[slot]
                    wait[slot] = c
                    ready = False
                    break
            if not ready:
                continue
            rl = IR[ib + 1]
            w = rule_w[rl]
            s = rule_size[rl]
            hh = np.uint64(rule_hash[rl])
            for j in range(m):
                q = 4 * (IR[ib + 3 + j] * k + C32[rb + j] - 1)
                w = _comb(combine, w, SF[q])
                s += S[q + 1]
                hh = _mix64(hh * _GOLDEN + np.uint64(S[q + 2]))
            if rule_copy[rl]:
                o = S[4 * (IR[ib + 3] * k + C32[rb] - 1) + 2]
            else:
                o = np.int64(_mix64(hh + np.uint64(m + 1) * _GOLDEN))
            _heap_push(hk, hs, ho, hc, nh, sign * w, s, o, c)
            nh += 1
        if code != _DONE or nh == 0:
            break
        if (nc + M) * sc > C.shape[0]:
            code = _GROW_CANDIDATES
            break
        kw = hk[0]
        s = hs[0]
        o = ho[0]
        c = hc[0]
        _heap_pop(hk, hs, ho, hc, nh)
        nh -= 1
        base = c * sc
        h = C[base + 1]
        n = cnt[h]
        if n >= k:
            continue  # head full: drop, and do not expand
        slot0 = h * k
        dup = False
        for r in range(n):
            if S[4 * (slot0 + r) + 2] == o:
                dup = True
                break
        if not dup:
            q = 4 * (slot0 + n)
            SF[q] = sign * kw  # sign is +-1: exact
            S[q + 1] = s
            S[q + 2] = o
            S[q + 3] = c
            cnt[h] = n + 1
            rel = wait[slot0 + n]  # the list is empty here: everything was tried before popping
            wait[slot0 + n] = -1
            if n + 1 >= k:
                continue  # now full: its modifications would be dropped anyway
        # modifications: only at positions >= the last rank above 1 (see kernel.py's docstring),
        # never beyond rank k and never at a leaf child (a leaf has one entry). The worklist is
        # empty here, and holds at least M.
        i = C[base]
        ib = i * si
        m = IR[ib + 2]
        rb = 2 * (base + 3)
        last = 0
        for j in range(m - 1, -1, -1):
            if C32[rb + j] > 1:
                last = j
                break
        for j in range(last, m):
            if C32[rb + j] >= k or leaf[IR[ib + 3 + j]]:
                continue
            nbase = nc * sc
            C[nbase] = i
            C[nbase + 1] = h
            C[nbase + 2] = -1
            nrb = 2 * (nbase + 3)
            for t in range(m):
                C32[nrb + t] = C32[rb + t]
            C32[nrb + j] += 1
            todo[nt] = nc
            nt += 1
            nc += 1
    st[0], st[1], st[2], st[3] = nt, nh, nc, rel
    return code


@njit(cache=True)
def topk_nb(leaf, leaf_w, leaf_origin, inst_rule, inst_head, child_ptr, child_fact,
            rule_w, rule_size, rule_hash, rule_copy, combine, sign, k):
    """Lazy k-best by modifications (see ``kernel._py_topk``)."""
    F = leaf.shape[0]
    I = inst_rule.shape[0]
    IR, si, M = _pack(inst_rule, inst_head, child_ptr, child_fact)
    sc = 3 + (M + 1) // 2
    cnt = np.zeros(F, np.int32)
    S = np.empty(4 * F * k, np.int64)
    SF = S.view(np.float64)
    wait = np.full(F * k, -1, np.int64)  # candidates waiting for (fact, rank), linked via C
    for f in range(F):
        if leaf[f]:
            q = 4 * f * k
            SF[q] = leaf_w[f]
            S[q + 1] = 0
            S[q + 2] = leaf_origin[f]
            S[q + 3] = -1
            cnt[f] = 1
    C = np.empty((2 * I + 16) * sc, np.int64)
    C32 = C.view(np.int32)
    for i in range(I):
        base = i * sc
        C[base] = i
        C[base + 1] = inst_head[i]
        C[base + 2] = -1
        for j in range(child_ptr[i + 1] - child_ptr[i]):
            C32[2 * (base + 3) + j] = 1
    hcap = min(I, 1 << 16) + 16
    hk = np.empty(hcap, np.float64)
    hs = np.empty(hcap, np.int64)
    ho = np.empty(hcap, np.int64)
    hc = np.empty(hcap, np.int64)
    # the worklist starts with every instance's first candidate; later it holds the (at most M)
    # modifications of one pop
    todo = np.empty(max(I, M) + 16, np.int64)
    for c in range(I):
        todo[c] = I - 1 - c
    st = np.array([I, 0, I, -1], np.int64)  # worklist items, heap items, candidates, released
    while True:
        code = _topk_loop(st, todo, C, C32, sc, M, IR, si, leaf, rule_w, rule_size, rule_hash, rule_copy,
                          combine, sign, k, cnt, S, SF, wait, hk, hs, ho, hc)
        if code == _GROW_HEAP:
            n = 2 * hk.shape[0]
            hk = _grow(hk, n)
            hs = _grow(hs, n)
            ho = _grow(ho, n)
            hc = _grow(hc, n)
        elif code == _GROW_CANDIDATES:
            C = _grow(C, (st[2] + M) * sc)
            C32 = C.view(np.int32)
        else:
            break
    # the result, grouped by fact
    fact_ptr = np.zeros(F + 1, np.int64)
    for f in range(F):
        fact_ptr[f + 1] = fact_ptr[f] + cnt[f]
    n = fact_ptr[F]
    w_out = np.empty(n, np.float64)
    size = np.empty(n, np.int64)
    origin = np.empty(n, np.int64)
    inst = np.empty(n, np.int64)
    cand = np.empty(n, np.int64)
    crp = np.zeros(n + 1, np.int64)
    for f in range(F):
        for r in range(cnt[f]):
            q = 4 * (f * k + r)
            p = fact_ptr[f] + r
            w_out[p] = SF[q]
            size[p] = S[q + 1]
            origin[p] = S[q + 2]
            c = S[q + 3]
            cand[p] = c
            i = -1 if c < 0 else C[c * sc]
            inst[p] = i
            crp[p + 1] = crp[p] + (0 if i < 0 else child_ptr[i + 1] - child_ptr[i])
    cr = np.empty(crp[n], np.int32)
    for p in range(n):
        rb = 2 * (cand[p] * sc + 3)
        for t in range(crp[p + 1] - crp[p]):
            cr[crp[p] + t] = C32[rb + t]
    return fact_ptr, w_out, size, origin, inst, crp, cr
