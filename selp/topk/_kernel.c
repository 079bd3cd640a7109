/*
 * The DTable's hot loop in C: Knuth's algorithm (top-1) and lazy k-best by modifications
 * (top-k) over an integer-coded hypergraph. See selp/topk/kernel.py for the algorithms, the
 * meaning of every array and the pure-Python twin that must give identical arrays.
 *
 * Built by setuptools as a plain shared library and called through ctypes (no Python API,
 * no numpy headers): loading it costs about a millisecond, where numba's import and the load
 * of its cached machine code cost about 0.6 s per process.
 *
 * Layout. Memory latency, not arithmetic, is what costs: what is read together is stored
 * together in records of int64 (a float weight sits in an int64 slot):
 *   - instance records, in the order of their last non-leaf child (a stable counting sort):
 *     head, rule, number of children, input id, then the children. When a fact becomes final
 *     (top-1) or gets its first entry (top-k), the instances waiting for it are then mostly
 *     adjacent in memory. Ties between equal (key, size, origin) are broken by this position.
 *   - top-1: per fact its entry and its best candidate in one 64-byte record;
 *   - top-k: per (fact, rank) slot an entry (weight, size, origin, candidate);
 *   - the heap: (key, size, origin, id) records, 4-ary.
 *
 * Components. Facts interact only through instances, and leaves are final from the start, so
 * the instances split into independent components: union each instance's head with its
 * non-leaf children. This kernel runs component after component, the heap holding one
 * component only (the pure-Python twin keeps the global loop: the tests compare the two); on transitive closure (`path(x, z)` for one `z` is a component) that is
 * ~1,000 facts, whose records and instances stay in L1/L2 instead of being read at random
 * from the whole table. The result is bit for bit the global loop's: facts are renumbered by
 * component (each component's facts in input order, the leaves first), instances grouped by
 * component keep their global relative order, and a component's pops, taken alone, are in
 * the order they had among all pops (no other component changes its state or its heap items;
 * ties are broken by ids whose relative order within a component is unchanged, candidates
 * formed later in one component get larger ids in both). A program whose instances form one
 * component runs the global loop.
 */
#define _GNU_SOURCE /* mremap */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#if defined(_WIN32)
/* no pthreads here: selp_static's workers are not started and the calling thread ranks every group */
typedef int pthread_mutex_t;
typedef int pthread_t;
#define pthread_mutex_init(m, a) ((void)0)
#define pthread_mutex_destroy(m) ((void)0)
#define pthread_mutex_lock(m) ((void)0)
#define pthread_mutex_unlock(m) ((void)0)
#define pthread_create(t, a, f, x) 1
#define pthread_join(t, r) ((void)0)
#else
#include <pthread.h>
#include <sys/mman.h>
#endif

#if defined(_WIN32)
#define EXPORT __declspec(dllexport)
#else
#define EXPORT __attribute__((visibility("default")))
#endif

#define G64 0x9E3779B97F4A7C15ULL

/* Set from another thread (the caller's, on Ctrl-C) to make a running kernel stop: the call
 * then returns NULL and selp_stopped() says why. */
static volatile int stop_flag = 0;
EXPORT void selp_stop(void) { stop_flag = 1; }
EXPORT int selp_stopped(void) { return stop_flag; }

static inline uint64_t mix64(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

/* Spark's XXH64 of one long with a seed (org.apache.spark.sql.catalyst.expressions.XXH64.hashLong):
 * with origin mode 1 a rule step's origin is Spark's xxhash64("N", rule, child origins...), the
 * string prefix folded into rule_hash by the caller, so a DTable computed here ranks ties exactly
 * as the Spark engine's global rounds do (selp.topk.spark_partitioned). */
#define XP1 0x9E3779B185EBCA87ULL
#define XP2 0xC2B2AE3D27D4EB4FULL
#define XP3 0x165667B19E3779F9ULL
#define XP4 0x85EBCA77C2B2AE63ULL
#define XP5 0x27D4EB2F165667C5ULL
static inline uint64_t rotl64(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }
static inline uint64_t xxh64_long(uint64_t input, uint64_t seed) {
    uint64_t h = seed + XP5 + 8ULL;
    h ^= rotl64(input * XP2, 31) * XP1;
    h = rotl64(h, 27) * XP1 + XP4;
    h ^= h >> 33; h *= XP2; h ^= h >> 29; h *= XP3; h ^= h >> 32;
    return h;
}

/* One child folded into a rule step's origin, and the step's origin after its m children. */
static inline uint64_t origin_step(int mode, uint64_t h, int64_t o) {
    return mode ? xxh64_long((uint64_t)o, h) : mix64(h * G64 + (uint64_t)o);
}
static inline int64_t origin_end(int mode, uint64_t h, int64_t m) {
    return mode ? (int64_t)h : (int64_t)mix64(h + (uint64_t)(m + 1) * G64);
}

static inline double comb(int code, double a, double b) {
    if (code == 0) return a * b;
    if (code == 1) return a + b;
    return b < a ? b : a; /* as the Python twin spells min (signed zeros) */
}

static inline double as_f(int64_t x) { double d; memcpy(&d, &x, 8); return d; }
static inline int64_t as_i(double d) { int64_t x; memcpy(&x, &d, 8); return x; }

/* (key, size, origin, id) lexicographically; the id makes the order total */
static inline int less4(double k1, int64_t s1, int64_t o1, int64_t c1,
                        double k2, int64_t s2, int64_t o2, int64_t c2) {
    if (k1 != k2) return k1 < k2;
    if (s1 != s2) return s1 < s2;
    if (o1 != o2) return o1 < o2;
    return c1 < c2;
}

/* ---- the heap: 4-ary, records of 4 int64 ------------------------------------------------- */

typedef struct { int64_t *a; int64_t n, cap; } heap_t;

static int heap_push(heap_t *h, double k, int64_t s, int64_t o, int64_t c) {
    if (h->n == h->cap) {
        int64_t cap = 2 * h->cap + 64;
        int64_t *b = realloc(h->a, (size_t)cap * 4 * sizeof(int64_t));
        if (!b) return -1;
        h->a = b;
        h->cap = cap;
    }
    int64_t *H = h->a;
    int64_t i = h->n++;
    while (i > 0) {
        int64_t p = (i - 1) >> 2;
        int64_t *q = H + 4 * p;
        if (!less4(k, s, o, c, as_f(q[0]), q[1], q[2], q[3])) break;
        memcpy(H + 4 * i, q, 32);
        i = p;
    }
    int64_t *d = H + 4 * i;
    d[0] = as_i(k); d[1] = s; d[2] = o; d[3] = c;
    return 0;
}

/* replace the root (read by the caller before) by a new item: one sift-down where a pop and a
 * push would take two. The heap then holds the same set of items as after the pop and the push,
 * and as every item is distinct in the total order (key, size, origin, id), the pops that follow
 * are the same. */
static void heap_replace(heap_t *h, double k, int64_t s, int64_t o, int64_t c) {
    int64_t *H = h->a;
    int64_t n = h->n, i = 0;
    for (;;) {
        int64_t m = 4 * i + 1;
        if (m >= n) break;
        int64_t e = m + 4 < n ? m + 4 : n;
        /* the least child: selected without a branch on the weights (which child wins is data,
         * a branch on it is mispredicted about half the time); equal weights, rare, go to the
         * full comparison */
        double km = as_f(H[4 * m]);
        for (int64_t r = m + 1; r < e; r++) {
            double kr = as_f(H[4 * r]);
            if (__builtin_expect(kr == km, 0)) {
                int64_t *x = H + 4 * r, *y = H + 4 * m;
                if (less4(kr, x[1], x[2], x[3], km, y[1], y[2], y[3])) m = r;
                continue;
            }
            int lt = kr < km;
            m = lt ? r : m;
            km = lt ? kr : km;
        }
        int64_t *q = H + 4 * m;
        if (!less4(km, q[1], q[2], q[3], k, s, o, c)) break;
        memcpy(H + 4 * i, q, 32);
        i = m;
    }
    int64_t *d = H + 4 * i;
    d[0] = as_i(k); d[1] = s; d[2] = o; d[3] = c;
}

/* remove the root (read by the caller before): the last item replaces it */
static void heap_pop(heap_t *h) {
    int64_t n = --h->n;
    if (n == 0) return;
    int64_t *t = h->a + 4 * n;
    heap_replace(h, as_f(t[0]), t[1], t[2], t[3]);
}

/* ---- shared state and result ------------------------------------------------------------- */

#define IR_HEAD 0
#define IR_RULE 1
#define IR_M 2
#define IR_ID 3
#define IR_KIDS 4

typedef struct {
    int64_t F, I, k, M, si;  /* facts, instances, k, largest body, instance record length */
    int64_t *IR;             /* instance records in sorted order */
    int64_t *S;              /* top-1: per fact its entry: weight, size, origin, position */
    int32_t *cnt;            /* top-1: entries per fact (0 or 1) */
    int64_t *FB, fb;         /* top-k: per fact a block of fb int64 (see selp_topk) */
    int64_t sc, se;          /* top-k: candidate and entry record lengths */
    int64_t n_entries, n_ranks;
    int64_t *nid;            /* input fact id -> the kernel's (grouped by component) */
    int64_t L;               /* leaves: the kernel's facts 0..L-1 */
    int64_t *cptr, ncomp;    /* component c's instances: positions cptr[c]..cptr[c+1]-1 */
    struct acc *acc;         /* selp_static: the entries, appended component by component */
} run_t;

struct acc;
static void acc_free(struct acc *a);

EXPORT void selp_free(run_t *r) {
    if (!r) return;
    free(r->IR);
    free(r->S);
    free(r->cnt);
    free(r->FB);
    free(r->nid);
    free(r->cptr);
    acc_free(r->acc);
    free(r);
}

static int64_t uf_find(int64_t *parent, int64_t x) {
    while (parent[x] != x) { parent[x] = parent[parent[x]]; x = parent[x]; } /* path halving */
    return x;
}

/* Instance records, facts renumbered and grouped by component (see "Components" above).
 *
 * Order of the instances: the component of their head, then (stably) their last non-leaf child
 * in the input's fact ids (instances without one first), then their input id -- so within one
 * component they are in exactly the order of the global, ungrouped kernel. New fact ids: the
 * leaves first (0..L-1), then the facts of each component together, each group in input order.
 * Fills run->nid (input id -> new id), run->L, run->cptr/ncomp (component c's instances are the
 * positions cptr[c]..cptr[c+1]-1), run->M, run->si. */
static int64_t *pack(run_t *run, const uint8_t *leaf, const int32_t *inst_rule, const int64_t *inst_head,
                     const int64_t *child_ptr, const int64_t *child_fact) {
    int64_t F = run->F, I = run->I, M = 0;
    for (int64_t i = 0; i < I; i++) {
        int64_t m = child_ptr[i + 1] - child_ptr[i];
        if (m > M) M = m;
    }
    int64_t si = IR_KIDS + M;
    int64_t *parent = malloc(((size_t)F + 1) * sizeof(int64_t)); /* then: component of each fact */
    int64_t *nid = malloc(((size_t)F + 1) * sizeof(int64_t));
    int64_t *start = calloc((size_t)F + 2, sizeof(int64_t));
    int64_t *key = malloc(((size_t)I + 1) * sizeof(int64_t));
    int64_t *order = malloc(((size_t)I + 1) * sizeof(int64_t));
    int64_t *IR = malloc(((size_t)I * si + 1) * sizeof(int64_t));
    int64_t *cptr = NULL;
    if (!parent || !nid || !start || !key || !order || !IR) goto fail;
    /* components: union every instance's head with its non-leaf children */
    for (int64_t f = 0; f < F; f++) parent[f] = f;
    for (int64_t i = 0; i < I; i++) {
        int64_t a = uf_find(parent, inst_head[i]);
        for (int64_t t = child_ptr[i]; t < child_ptr[i + 1]; t++) {
            if (leaf[child_fact[t]]) continue;
            int64_t b = uf_find(parent, child_fact[t]);
            if (a == b) continue;
            if (a < b) { parent[b] = a; } else { parent[a] = b; a = b; }
        }
    }
    /* a root is its set's smallest fact (unions keep the smaller root): number the components
     * in the order of their first fact; parent[] becomes each fact's component (-1: a leaf) */
    int64_t L = 0, nc = 0;
    for (int64_t f = 0; f < F; f++) nid[f] = leaf[f] ? -1 : uf_find(parent, f);
    for (int64_t f = 0; f < F; f++) {
        if (nid[f] < 0) { parent[f] = -1; L++; }
        else parent[f] = nid[f] == f ? nc++ : parent[nid[f]];
    }
    int64_t *csize = start; /* F+2 >= nc+2 slots */
    for (int64_t f = 0; f < F; f++) if (parent[f] >= 0) csize[parent[f] + 1]++;
    for (int64_t c = 0; c < nc; c++) csize[c + 1] += csize[c];
    int64_t nl = 0;
    for (int64_t f = 0; f < F; f++) nid[f] = parent[f] < 0 ? nl++ : L + csize[parent[f]]++;
    /* instances: counting sort by the last non-leaf child (stable), then by component (stable) */
    memset(start, 0, ((size_t)F + 2) * sizeof(int64_t));
    for (int64_t i = 0; i < I; i++) {
        int64_t b = -1;
        for (int64_t t = child_ptr[i + 1] - 1; t >= child_ptr[i]; t--)
            if (!leaf[child_fact[t]]) { b = child_fact[t]; break; }
        key[i] = b + 1; /* 0: no non-leaf child */
        start[b + 2]++;
    }
    for (int64_t f = 0; f <= F; f++) start[f + 1] += start[f];
    for (int64_t i = 0; i < I; i++) order[start[key[i]]++] = i;
    cptr = calloc((size_t)nc + 2, sizeof(int64_t));
    if (!cptr) goto fail;
    for (int64_t i = 0; i < I; i++) cptr[parent[inst_head[i]] + 1]++;
    for (int64_t c = 0; c < nc; c++) cptr[c + 1] += cptr[c];
    /* key[] now: the final position of each input instance */
    memcpy(start, cptr, ((size_t)nc + 1) * sizeof(int64_t));
    for (int64_t p = 0; p < I; p++) {
        int64_t i = order[p];
        key[i] = start[parent[inst_head[i]]]++;
    }
    for (int64_t i = 0; i < I; i++) {
        int64_t *d = IR + key[i] * si;
        int64_t a = child_ptr[i], m = child_ptr[i + 1] - a;
        d[IR_HEAD] = nid[inst_head[i]];
        d[IR_RULE] = inst_rule[i];
        d[IR_M] = m;
        d[IR_ID] = i;
        for (int64_t j = 0; j < m; j++) d[IR_KIDS + j] = nid[child_fact[a + j]];
    }
    free(parent); free(start); free(key); free(order);
    run->nid = nid; run->L = L; run->cptr = cptr; run->ncomp = nc; run->M = M; run->si = si;
    return IR;
fail:
    free(parent); free(nid); free(start); free(key); free(order); free(IR); free(cptr);
    return NULL;
}

static run_t *new_run(int64_t F, int64_t I, int64_t k) {
    run_t *r = calloc(1, sizeof(run_t));
    if (!r) return NULL;
    r->F = F; r->I = I; r->k = k;
    r->S = malloc(((size_t)F * k * 4 + 1) * sizeof(int64_t));
    r->cnt = calloc((size_t)F + 1, sizeof(int32_t));
    if (!r->S || !r->cnt) { selp_free(r); return NULL; }
    return r;
}

/* ---- what the per-component loops share ---------------------------------------------------- */

typedef struct {
    const double *rule_w; const int64_t *rule_size, *rule_hash; const uint8_t *rule_copy;
    int combine, origin_mode; double sign;
} prm_t;

/* ---- top-1: Knuth ------------------------------------------------------------------------ */

/* Knuth's loop over one component: instance records IR at positions lo..hi-1; FR the fact
 * records (below); rem[p] the children of instance p without their entry; the instances
 * released by fact h are uses[uptr[h - fbase]..uptr[h - fbase + 1]) (~p: h was p's only child
 * left); todo has room for hi - lo positions. key (NULL: not asked) gets, per instance p, the
 * key of its tree of every child's entry 1 -- key[3 (p - lo)..]: weight times sign, size,
 * origin; size KEY_NONE stays where a child has no entry: what the recursive enumeration's
 * first candidates are, formed here while their children's records are at hand. The heap is
 * empty on return. Returns 0, -1 when out of memory or stopped. */
#define KEY_NONE INT64_MIN /* never a tree's size: sizes are >= 0 where it is read (rea_linear checks) */
static int comp_top1(const int64_t *IR, int64_t si, int64_t lo, int64_t hi, int64_t *FR, int32_t *rem,
                     const int64_t *uptr, const int64_t *uses, int64_t fbase, int64_t *todo, heap_t *hp,
                     const prm_t *P, int64_t *key) {
    int64_t nt = 0;
    for (int64_t p = hi - 1; p >= lo; p--)
        if (rem[p] == 0) todo[nt++] = p;
    for (;;) {
        while (nt > 0) {
            int64_t p = todo[--nt];
            const int64_t *d = IR + p * si;
            int64_t *hq = FR + 8 * d[IR_HEAD];
            if (hq[3] != -2 && !key) continue; /* the head is final already */
            int64_t r = d[IR_RULE], m = d[IR_M];
            double w = P->rule_w[r];
            int64_t s = P->rule_size[r];
            uint64_t hh = (uint64_t)P->rule_hash[r];
            for (int64_t j = 0; j < m; j++) {
                int64_t *c = FR + 8 * d[IR_KIDS + j];
                w = comb(P->combine, w, as_f(c[0]));
                s += c[1];
                hh = origin_step(P->origin_mode, hh, c[2]);
            }
            int64_t o = P->rule_copy[r] ? FR[8 * d[IR_KIDS] + 2] : origin_end(P->origin_mode, hh, m);
            double kw = P->sign * w;
            if (key) {
                int64_t *kq = key + 3 * (p - lo);
                kq[0] = as_i(kw); kq[1] = s; kq[2] = o;
                if (hq[3] != -2) continue;
            }
            if (hq[7] >= 0 && !less4(kw, s, o, p, as_f(hq[4]), hq[5], hq[6], hq[7])) continue;
            hq[4] = as_i(kw); hq[5] = s; hq[6] = o; hq[7] = p;
            /* the heap holds facts: an item is live while it is its fact's best candidate */
            if (heap_push(hp, kw, s, o, d[IR_HEAD])) return -1;
        }
        if (stop_flag) return -1;
        int found = 0;
        while (hp->n > 0) {
            int64_t *top = hp->a;
            double kw = as_f(top[0]);
            int64_t s = top[1], o = top[2], h = top[3];
            heap_pop(hp);
            int64_t *hq = FR + 8 * h;
            /* stale: the fact is final, or has a better candidate since (an equal one from
             * another instance leaves a twin item, which then finds the fact final) */
            if (hq[3] != -2 || as_f(hq[4]) != kw || hq[5] != s || hq[6] != o) continue;
            /* the entry is the best candidate's, not the item's (0.0 and -0.0 are equal keys) */
            hq[0] = as_i(P->sign * as_f(hq[4])); /* sign is +-1: exact */
            hq[1] = s; hq[2] = o; hq[3] = hq[7];
            for (int64_t u = uptr[h - fbase]; u < uptr[h - fbase + 1]; u++) {
                int64_t q = uses[u];
                if (q < 0) todo[nt++] = ~q; /* its only child without an entry */
                else if (--rem[q] == 0) todo[nt++] = q;
            }
            found = 1;
            break;
        }
        if (!found) return 0;
    }
}

/* rem and the uses lists (CSR uptr/uses, facts >= L counted from fbase) of instances lo..hi-1:
 * for each non-leaf child occurrence, the instance's position (~position when it is the
 * instance's only child without an entry). uptr has room for nf + 2, fill for nf + 1. */
static void uses_of(const int64_t *IR, int64_t si, int64_t lo, int64_t hi, int64_t L, int64_t fbase, int64_t nf,
                    int32_t *rem, int64_t *uptr, int64_t *uses, int64_t *fill) {
    memset(uptr, 0, ((size_t)nf + 2) * sizeof(int64_t));
    for (int64_t p = lo; p < hi; p++) {
        const int64_t *d = IR + p * si;
        int32_t n = 0;
        for (int64_t j = 0; j < d[IR_M]; j++)
            if (d[IR_KIDS + j] >= L) { uptr[d[IR_KIDS + j] - fbase + 1]++; n++; }
        rem[p] = n;
    }
    for (int64_t f = 0; f < nf; f++) uptr[f + 1] += uptr[f];
    memcpy(fill, uptr, (size_t)nf * sizeof(int64_t));
    for (int64_t p = lo; p < hi; p++) {
        const int64_t *d = IR + p * si;
        for (int64_t j = 0; j < d[IR_M]; j++)
            if (d[IR_KIDS + j] >= L) uses[fill[d[IR_KIDS + j] - fbase]++] = rem[p] == 1 ? ~p : p;
    }
}

/* Fact record (8 int64): entry weight, size, origin, position (-1 leaf, -2 none yet); best
 * candidate key, size, origin, position (-1 none). */
static void fr_init(int64_t *q, int is_leaf, double w, int64_t size, int64_t origin) {
    if (is_leaf) { q[0] = as_i(w); q[1] = size; q[2] = origin; q[3] = -1; }
    else q[3] = -2;
    q[7] = -1;
}

EXPORT run_t *selp_top1(int64_t F, int64_t I, const uint8_t *leaf, const double *leaf_w,
                        const int64_t *leaf_origin, const int32_t *inst_rule, const int64_t *inst_head,
                        const int64_t *child_ptr, const int64_t *child_fact, const double *rule_w,
                        const int64_t *rule_size, const int64_t *rule_hash, const uint8_t *rule_copy,
                        int combine, double sign, const int64_t *leaf_size, int origin_mode) {
    stop_flag = 0;
    run_t *run = new_run(F, I, 1);
    if (!run) return NULL;
    int64_t *IR = pack(run, leaf, inst_rule, inst_head, child_ptr, child_fact);
    run->IR = IR;
    int64_t si = run->si, L = run->L;
    const int64_t *nid = run->nid, *cptr = run->cptr;
    prm_t P = {rule_w, rule_size, rule_hash, rule_copy, combine, origin_mode, sign};
    int64_t *FR = malloc(((size_t)F * 8 + 1) * sizeof(int64_t));
    int32_t *rem = malloc(((size_t)I + 1) * sizeof(int32_t));
    int64_t *uptr = malloc(((size_t)F + 2) * sizeof(int64_t));
    int64_t *fill = malloc(((size_t)F + 1) * sizeof(int64_t));
    int64_t *uses = NULL;
    int64_t *todo = malloc(((size_t)I + 1) * sizeof(int64_t));
    heap_t hp = {NULL, 0, 0};
    if (!IR || !FR || !rem || !uptr || !fill || !todo) goto fail;
    for (int64_t f = 0; f < F; f++)
        fr_init(FR + 8 * nid[f], leaf[f], leaf_w[f], leaf_size ? leaf_size[f] : 0, leaf_origin[f]);
    {
        int64_t links = 0;
        for (int64_t p = 0; p < I; p++) links += IR[p * si + IR_M];
        uses = malloc(((size_t)links + 1) * sizeof(int64_t));
        if (!uses) goto fail;
    }
    uses_of(IR, si, 0, I, L, 0, F, rem, uptr, uses, fill);
    /* one component after another (see "Components"): the heap holds one component's facts */
    for (int64_t comp = 0; comp < run->ncomp; comp++)
        if (comp_top1(IR, si, cptr[comp], cptr[comp + 1], FR, rem, uptr, uses, 0, todo, &hp, &P, NULL)) goto fail;
    /* the entries: slot f holds fact f's entry if it has one */
    for (int64_t f = 0; f < F; f++) {
        int64_t *q = FR + 8 * f, *e = run->S + 4 * f;
        if (q[3] == -2) continue;
        e[0] = q[0]; e[1] = q[1]; e[2] = q[2]; e[3] = q[3];
        run->cnt[f] = 1;
        run->n_entries++;
        if (q[3] >= 0) run->n_ranks += IR[q[3] * si + IR_M];
    }
    free(FR); free(rem); free(uptr); free(fill); free(uses); free(todo); free(hp.a);
    return run;
fail:
    free(FR); free(rem); free(uptr); free(fill); free(uses); free(todo); free(hp.a);
    selp_free(run);
    return NULL;
}

/* ---- top-k: lazy k-best by modifications -------------------------------------------------- */

/* A fact's block (fb int64, a multiple of 8: whole cache lines): its number of entries (the
 * leaf flag in bit 32, "root changed this round" in bit 40), then the root of its candidate
 * queue (below), then per rank the head of the list of candidates waiting for that entry, then per
 * rank the entry (se int64): weight, size, origin, instance position (-1 for a leaf), then its
 * child ranks as int32. What a pop reads and writes -- the count, the origins for duplicates,
 * the new entry and its waiting list -- is one or two cache lines. An entry holds its ranks
 * itself, so that the candidates of a component can be dropped when it is done: the candidate
 * buffer is one component's, reused (it stays in cache). */
#define FB_CNT(b) ((int32_t)(b)[0])
#define FB_LEAF(b) (((b)[0] >> 32) & 1)
#define FB_DIRTY ((int64_t)1 << 40)
/* bits 48-63: a filter of the entries' origins (origin o sets one bit, by its top four): a pop
 * compares its origin with the entries' only where the bit is set */
#define FB_SEEN(o) ((int64_t)((uint64_t)1 << (48 + ((uint64_t)(o) >> 60))))
/* the root next to the count: a candidate joining its head's queue reads both, one cache line */
#define FB_WAIT(b, r) ((b)[2 + (r)])
#define FB_ROOT(b, k) ((b)[1])
#define FB_ENTRY(b, k, r) ((b) + 2 + (k) + se * (r))
#define E_RANKS 4 /* int32 ranks from int64 slot 4 of an entry on */

/* A candidate: its instance position, head (times 2, plus 1 while the component's heap holds an
 * item for it), the next candidate of a waiting list or -- once ready -- its next sibling in its
 * head's queue, its first child there, its key (weight times sign, size, origin), its ranks. */
#define C_POS 0
#define C_HEAD 1
#define C_NEXT 2
#define C_CHILD 3
#define C_W 4
#define C_S 5
#define C_O 6
#define C_RANKS 7 /* int32 ranks from int64 slot 7 on */

/* ---- the k-best loop's heap: 4-ary, records of 16 bytes ------------------------------------
 * An item is a candidate's weight key and its id; its size and origin, needed only when two
 * weights are equal (rare), are read from the candidate's record, which does not change while
 * the candidate is in the heap. The same order as heap_t's (key, size, origin, id), so the same
 * pops, but half the bytes: a node's four children are 64 bytes, placed on one cache line (item
 * 1 on a 64-byte boundary), where heap_t's span two. At k = 7 on the anchors graph the heap
 * holds up to a fact per non-full fact and most sift-down steps miss the cache.
 * The key is held as an unsigned integer in the double's order (ukey): integer compares and
 * equality tests, where a double's equality test (NaN-aware) took several instructions each --
 * the three of a node's tie test were a fifth of the sift-down's instructions. */

typedef struct { int64_t *a; int64_t n, cap; void *raw; } kheap_t;

/* a weight key as an unsigned integer of the same order: -0.0 made 0.0 (equal keys stay equal),
 * a negative double's bits reversed, a positive one's sign bit set */
static inline uint64_t ukey(double k) {
    k += 0.0;
    uint64_t u;
    memcpy(&u, &k, 8);
    return u ^ ((uint64_t)((int64_t)u >> 63) | 0x8000000000000000ULL);
}

/* candidate a before b, a with key ka, b with key kb (ukeys; C: the candidate records) */
static inline int k_less(const int64_t *C, int64_t sc, uint64_t ka, int64_t a, uint64_t kb, int64_t b) {
    if (ka != kb) return ka < kb;
    const int64_t *x = C + a * sc, *y = C + b * sc;
    if (x[C_S] != y[C_S]) return x[C_S] < y[C_S];
    if (x[C_O] != y[C_O]) return x[C_O] < y[C_O];
    return a < b;
}

static int kheap_push(kheap_t *h, const int64_t *C, int64_t sc, uint64_t k, int64_t c) {
    if (h->n == h->cap) {
        int64_t cap = 2 * h->cap + 64;
        void *raw = aligned_alloc(64, (size_t)(cap + 4) * 16);
        if (!raw) return -1;
        int64_t *a = (int64_t *)((char *)raw + 48); /* item 1 (the root's first child) at 64 */
        if (h->n) memcpy(a, h->a, (size_t)h->n * 16);
        free(h->raw);
        h->raw = raw; h->a = a; h->cap = cap;
    }
    uint64_t *H = (uint64_t *)h->a;
    int64_t i = h->n++;
    while (i > 0) {
        int64_t p = (i - 1) >> 2;
        uint64_t *q = H + 2 * p;
        if (!k_less(C, sc, k, c, q[0], (int64_t)q[1])) break;
        H[2 * i] = q[0]; H[2 * i + 1] = q[1];
        i = p;
    }
    H[2 * i] = k; H[2 * i + 1] = (uint64_t)c;
    return 0;
}

/* the root replaced by a new item (see heap_replace) */
static void kheap_replace(kheap_t *h, const int64_t *C, int64_t sc, uint64_t k, int64_t c) {
    uint64_t *H = (uint64_t *)h->a;
    int64_t n = h->n, i = 0;
    for (;;) {
        int64_t m = 4 * i + 1;
        if (m >= n) break;
        int64_t e = m + 4 < n ? m + 4 : n;
        uint64_t km;
        if (__builtin_expect(e == m + 4, 1)) {
            /* four children: the least as a tournament of pairs (two compares deep, where a
             * chain is three), without a branch on the keys; any equal keys in it take the loop
             * below */
            uint64_t k0 = H[2 * m], k1 = H[2 * m + 2], k2 = H[2 * m + 4], k3 = H[2 * m + 6];
            uint64_t a = k1 < k0, b = k3 < k2;
            /* selects by masks: a conditional here compiles to a branch on the keys, wrong
             * about half the time */
            uint64_t ka = k0 ^ ((k0 ^ k1) & -a), kb = k2 ^ ((k2 ^ k3) & -b);
            int64_t ma = m + (int64_t)a, mb = m + 2 + (int64_t)b;
            uint64_t c = kb < ka;
            if (__builtin_expect(!((k0 == k1) | (k2 == k3) | (ka == kb)), 1)) {
                m = ma + ((mb - ma) & -(int64_t)c);
                km = ka ^ ((ka ^ kb) & -c);
                goto chosen;
            }
        }
        /* the least child, without a branch on the keys (as heap_replace) */
        km = H[2 * m];
        for (int64_t r = m + 1; r < e; r++) {
            uint64_t kr = H[2 * r];
            if (__builtin_expect(kr == km, 0)) {
                if (k_less(C, sc, kr, (int64_t)H[2 * r + 1], km, (int64_t)H[2 * m + 1])) m = r;
                continue;
            }
            int lt = kr < km;
            m = lt ? r : m;
            km = lt ? kr : km;
        }
    chosen:;
        int64_t cm = (int64_t)H[2 * m + 1];
        if (!k_less(C, sc, km, cm, k, c)) break;
        H[2 * i] = km; H[2 * i + 1] = (uint64_t)cm;
        i = m;
    }
    H[2 * i] = k; H[2 * i + 1] = (uint64_t)c;
}

static void kheap_pop(kheap_t *h, const int64_t *C, int64_t sc) {
    int64_t n = --h->n;
    if (n == 0) return;
    int64_t *t = h->a + 2 * n;
    kheap_replace(h, C, sc, (uint64_t)t[0], t[1]);
}

/* A stream of the linear enumeration (rea_linear), 32 bytes (two on a cache line: a fact's
 * streams, scanned for its next entry, take half the lines): its head's key (weight times sign),
 * origin and size (int32: rea_linear bounds the trees' sizes); its child (x, counted from the
 * component's first fact) and the child's rank at the head (r; 0: the stream ended); u, its leaf
 * beside the child (LK_CL, LK_LC; its weight, size and origin read from the leaves' table, which
 * stays in cache) or its position (the other kinds: the record holds its children); the
 * instance's kind, rule and number of children. An entry's rule and children are read here, not
 * from the instance records in the join's order (a cache miss an entry). */
typedef struct {
    int64_t w, o;
    int32_t s, x, u;
    uint8_t r, kind, rule, m;
} lslot_t;
_Static_assert(sizeof(lslot_t) == 32, "two streams a cache line");

typedef struct {
    int64_t k, fb, se, sc, M;
    int64_t L;         /* facts below L are leaves: their entry is LV[4 * f] (weight, size, origin) */
    const int64_t *LV;
    int64_t *C, ccap;  /* one component's candidates */
    int64_t *todo, tcap;
    int64_t *dirty;    /* facts whose queue root changed since the last pop (ccap slots) */
    kheap_t hp;
    int64_t slots;     /* child slots of the entries added (the static path's second worker counts its places) */
    int64_t *last, lcap;        /* recursive enumeration: per fact of the component its candidate to expand */
    int64_t *hir, *horig, hcap; /* recursive enumeration: the component's instances in head order, their positions */
    int64_t *lhp, lhpcap;       /* linear enumeration (rea_linear): per fact its first stream */
    lslot_t *lsl; int64_t lslcap;
    uint32_t *lhv; int64_t lhvcap;
    int64_t *le3, le3cap;
    int32_t *leq; int64_t leqcap;
    int32_t *lqof; int64_t lqofcap;
    uint8_t *ler; int64_t lercap;
    int lin_done;               /* the last component was ranked by rea_linear: its entries are in le3/leq/ler */
    int64_t lin_flo, lin_fhi, lin_base; /* its facts, its first instance */
    struct frame *stk; int64_t scap; /* recursive enumeration: the facts whose next entry is being found */
} kbest_t;

/* p (NULL, or from aligned_alloc, its first keep bytes kept) moved to a 64-byte aligned block of
 * n bytes: a candidate record (64 bytes at M <= 2) then lies on one cache line, not two */
static void *realloc64(void *p, size_t keep, size_t n) {
    void *q = aligned_alloc(64, (n + 63) & ~(size_t)63);
    if (!q) return NULL;
    if (p && keep) memcpy(q, p, keep < n ? keep : n);
    free(p);
    return q;
}

/* room for a component of n instances: candidates, dirty facts and worklist; -1 when out of
 * memory */
static int kbest_room(kbest_t *B, int64_t n) {
    if (n + B->M + 16 > B->ccap) {
        int64_t cap = 2 * n + B->M + 16;
        int64_t *c = realloc64(B->C, 0, (size_t)cap * B->sc * sizeof(int64_t)); /* empty between components */
        if (!c) return -1;
        B->C = c;
        int64_t *d = realloc(B->dirty, (size_t)cap * sizeof(int64_t));
        if (!d) return -1;
        B->dirty = d; B->ccap = cap;
    }
    if (n + B->M + 16 > B->tcap) {
        int64_t cap = n + B->M + 16;
        int64_t *t = realloc(B->todo, (size_t)cap * sizeof(int64_t));
        if (!t) return -1;
        B->todo = t; B->tcap = cap;
    }
    return 0;
}

/* a fact's block, empty or holding its leaf entry */
static void fb_init(int64_t *b, int64_t k, int64_t se, int is_leaf, double w, int64_t size, int64_t origin) {
    b[0] = 0;
    for (int64_t r = 0; r < k; r++) FB_WAIT(b, r) = -1;
    FB_ROOT(b, k) = -1;
    if (!is_leaf) return;
    int64_t *q = FB_ENTRY(b, k, 0);
    q[0] = as_i(w); q[1] = size; q[2] = origin; q[3] = -1;
    b[0] = 1 + ((int64_t)1 << 32) + FB_SEEN(origin);
}

/* ---- a fact's candidate queue: a pairing heap over candidate records ---------------------
 * [HC05] keep, per vertex, a small queue of its candidates and hand the global order only its
 * best. Here the component's heap holds one item per fact (its queue's root, pushed once the
 * root changed), not one per candidate: a fact's candidates stay in its queue until their
 * turn, and when the fact is full its queue is dropped whole instead of each candidate being
 * popped. The candidates, their ids and the order of the effective pops are those of the
 * global loop (the heap's minimum is the minimum of all ready candidates either way), so the
 * entries are the same, tie for tie. */

/* q: the recursive enumeration's candidates, whose id (the last tie-break) is their C_HEAD
 * field, not their record's index: a record is reused for a successor (see comp_rea_as) while
 * the ids stay those of a fresh record each, the order in which the candidates were formed */
static inline int c_less(const int64_t *C, int64_t sc, int64_t a, int64_t b, int q) {
    const int64_t *x = C + a * sc, *y = C + b * sc;
    return less4(as_f(x[C_W]), x[C_S], x[C_O], q ? x[C_HEAD] : a, as_f(y[C_W]), y[C_S], y[C_O], q ? y[C_HEAD] : b);
}

/* two queues merged: the worse root becomes the first child of the better */
static inline int64_t ph_merge(int64_t *C, int64_t sc, int64_t a, int64_t b, int q) {
    if (a < 0) return b;
    if (b < 0) return a;
    /* swapped by a mask: which root wins is data, and a branch on it is wrong about half the
     * time */
    int64_t t = (a ^ b) & -(int64_t)c_less(C, sc, b, a, q);
    a ^= t; b ^= t;
    C[b * sc + C_NEXT] = C[a * sc + C_CHILD];
    C[a * sc + C_CHILD] = b;
    return a;
}

/* the queue of a removed root's children (first, linked by C_NEXT): merged in pairs left to
 * right, then the pairs right to left */
static int64_t ph_pairs(int64_t *C, int64_t sc, int64_t first, int q) {
    int64_t acc = -1; /* the merged pairs, last first, linked by C_NEXT */
    while (first >= 0) {
        int64_t a = first, b = C[a * sc + C_NEXT];
        C[a * sc + C_NEXT] = -1;
        if (b >= 0) {
            first = C[b * sc + C_NEXT];
            C[b * sc + C_NEXT] = -1;
            a = ph_merge(C, sc, a, b, q);
        } else {
            first = -1;
        }
        C[a * sc + C_NEXT] = acc;
        acc = a;
    }
    int64_t r = -1;
    while (acc >= 0) {
        int64_t n = C[acc * sc + C_NEXT];
        C[acc * sc + C_NEXT] = -1;
        r = ph_merge(C, sc, r, acc, q);
        acc = n;
    }
    return r;
}

/* candidate c's key from its children's entries at its ranks; c becomes a one-node queue */
static inline void cand_key(const int64_t *FB, int64_t fb, int64_t k, int64_t se, int64_t L, const int64_t *LV,
                           const prm_t *P, int cmb, int om, int64_t *cr, const int64_t *d) {
    int64_t m = d[IR_M], rl = d[IR_RULE], o0 = 0;
    const int32_t *rk = (const int32_t *)(cr + C_RANKS);
    double w = P->rule_w[rl];
    int64_t s = P->rule_size[rl];
    uint64_t hh = (uint64_t)P->rule_hash[rl];
    for (int64_t j = 0; j < m; j++) {
        int64_t x = d[IR_KIDS + j];
        const int64_t *e = x < L ? LV + 4 * x : FB_ENTRY(FB + (x - L) * fb, k, rk[j] - 1);
        w = comb(cmb, w, as_f(e[0]));
        s += e[1];
        if (j == 0) o0 = e[2];
        hh = origin_step(om, hh, e[2]);
    }
    cr[C_W] = as_i(P->sign * w); cr[C_S] = s;
    cr[C_O] = P->rule_copy[rl] ? o0 : origin_end(om, hh, m);
    cr[C_NEXT] = -1; cr[C_CHILD] = -1;
}

/* Candidate c (record cr, instance record d, head h with block hb), each of whose children has
 * its entry at the candidate's rank: its key formed from theirs and c merged into h's queue, h
 * listed as dirty (dirty[nd], the new count returned) when its root changed. */
static inline int64_t cand_join(const int64_t *IR, int64_t si, int64_t *FB, int64_t fb, int64_t k, int64_t se,
                                int64_t sc, int64_t L, const int64_t *LV, const prm_t *P, int cmb, int om,
                                int64_t *C, int64_t c, int64_t *cr, const int64_t *d, int64_t h, int64_t *hb,
                                int64_t *dirty, int64_t nd) {
    (void)IR; (void)si;
    cand_key(FB, fb, k, se, L, LV, P, cmb, om, cr, d);
    int64_t root = FB_ROOT(hb, k);
    int64_t nr = ph_merge(C, sc, root, c, 0);
    FB_ROOT(hb, k) = nr;
    if (nr != root && !(hb[0] & FB_DIRTY)) { hb[0] |= FB_DIRTY; dirty[nd++] = h; }
    return nd;
}

/* Lazy k-best over one component, each fact's entries up to kf (k, or 1 before the recursive
 * enumeration below): instance records IR at positions base..hi-1, FB the blocks of
 * the non-leaf facts (fact f >= B->L at FB + (f - B->L) * fb). A leaf's one entry is read from
 * B->LV, 32 bytes per leaf: the leaves that a component's instances read (transitive closure:
 * ~3,000 `edge` facts) then take 96 KB, where blocks of fb int64 each (384 B at k = 7) took more
 * than L2 and were read at random. Candidates are numbered from 0 -- the instances (in sorted order) with every rank 1,
 * then the modifications in the order they are formed, as in the global loop. Returns 0, -1
 * when out of memory or stopped. */
static inline __attribute__((always_inline)) int
comp_topk_as(const int64_t *IR, int64_t si, int64_t base, int64_t hi, int64_t *FB, kbest_t *B, const prm_t *P,
             int cmb, int om, int64_t kf) {
    int64_t k = B->k, fb = B->fb, se = B->se, sc = B->sc, M = B->M, L = B->L;
    const int64_t *LV = B->LV;
    int64_t nc = hi - base, nt = 0, nd = 0, rel = -1;
    int pend = 0; /* the heap's root was taken: removed at the next pop, or replaced by the next push */
    if (kbest_room(B, nc)) return -1;
    int64_t *C = B->C, *todo = B->todo, *dirty = B->dirty;
    kheap_t *hp = &B->hp;
    for (int64_t p = base; p < hi; p++) {
        int64_t *c = C + (p - base) * sc;
        c[C_POS] = p;
        c[C_HEAD] = 2 * IR[p * si + IR_HEAD];
        c[C_NEXT] = -1;
        int32_t *rk = (int32_t *)(c + C_RANKS);
        for (int64_t j = 0; j < IR[p * si + IR_M]; j++) rk[j] = 1;
    }
    for (int64_t c = nc - 1; c >= 0; c--) todo[nt++] = c;
    for (;;) {
        /* try the released candidates and the worklist; a ready one joins its head's queue */
        while (rel >= 0 || nt > 0) {
            int64_t c;
            if (rel >= 0) { c = rel; rel = C[c * sc + C_NEXT]; } /* read first: waiting relinks c */
            else c = todo[--nt];
            int64_t *cr = C + c * sc;
            int64_t h = cr[C_HEAD] >> 1;
            int64_t *hb = FB + (h - L) * fb;
            if (FB_CNT(hb) >= kf) continue;
            const int64_t *d = IR + cr[C_POS] * si;
            int64_t m = d[IR_M];
            int32_t *rk = (int32_t *)(cr + C_RANKS);
            int ready = 1;
            for (int64_t j = 0; j < m; j++) {
                int64_t x = d[IR_KIDS + j];
                if (x < L) continue; /* a leaf has its entry (and a leaf's rank is always 1) */
                int64_t *b = FB + (x - L) * fb;
                int32_t r = rk[j];
                if (FB_CNT(b) < r) {
                    cr[C_NEXT] = FB_WAIT(b, r - 1);
                    FB_WAIT(b, r - 1) = c;
                    ready = 0;
                    break;
                }
            }
            if (!ready) continue;
            nd = cand_join(IR, si, FB, fb, k, se, sc, L, LV, P, cmb, om, C, c, cr, d, h, hb, dirty, nd);
        }
        /* every changed root gets an item, unless it has one already */
        while (nd > 0) {
            int64_t h = dirty[--nd];
            int64_t *hb = FB + (h - L) * fb;
            hb[0] &= ~FB_DIRTY;
            int64_t r = FB_ROOT(hb, k);
            if (r < 0 || (C[r * sc + C_HEAD] & 1)) continue;
            int64_t *cr = C + r * sc;
            if (pend) { kheap_replace(hp, C, sc, ukey(as_f(cr[C_W])), r); pend = 0; }
            else if (kheap_push(hp, C, sc, ukey(as_f(cr[C_W])), r)) return -1;
            cr[C_HEAD] |= 1;
        }
        if (pend) { kheap_pop(hp, C, sc); pend = 0; }
        if (hp->n == 0) return 0;
        if (stop_flag) return -1;
        if ((nc + M) > B->ccap) {
            int64_t cap = 2 * B->ccap;
            int64_t *nb = realloc64(C, (size_t)B->ccap * sc * sizeof(int64_t), (size_t)cap * sc * sizeof(int64_t));
            if (!nb) return -1;
            B->C = C = nb;
            int64_t *nd2 = realloc(dirty, (size_t)cap * sizeof(int64_t));
            if (!nd2) return -1;
            B->dirty = dirty = nd2;
            B->ccap = cap;
        }
        int64_t c = hp->a[1];
        pend = 1; /* removed (or replaced) later */
        int64_t *cr = C + c * sc;
        cr[C_HEAD] &= ~(int64_t)1;
        int64_t h = cr[C_HEAD] >> 1;
        int64_t *b = FB + (h - L) * fb;
        if (FB_ROOT(b, k) != c) continue; /* stale: a better candidate is the root, or the fact is full */
        /* c leaves its fact's queue; the new root needs an item */
        FB_ROOT(b, k) = ph_pairs(C, sc, cr[C_CHILD], 0);
        if (FB_ROOT(b, k) >= 0) { b[0] |= FB_DIRTY; dirty[nd++] = h; }
        double kw = as_f(cr[C_W]);
        int64_t s = cr[C_S], o = cr[C_O];
        int32_t n = FB_CNT(b);
        int dup = 0;
        int64_t seen = FB_SEEN(o);
        /* the entries' origins compared only when the fact's filter has o's bit: the loop of
         * n turns (n changing every pop) ended on a mispredicted branch -- a fifth of the k-best
         * loop's mispredictions -- where the filter's test is nearly always false */
        if (b[0] & seen)
            for (int32_t r = 0; r < n; r++)
                if (FB_ENTRY(b, k, r)[2] == o) { dup = 1; break; }
        if (!dup) {
            int64_t *e = FB_ENTRY(b, k, n);
            e[0] = as_i(P->sign * kw); /* sign is +-1: exact */
            e[1] = s; e[2] = o; e[3] = cr[C_POS];
            B->slots += IR[cr[C_POS] * si + IR_M];
            memcpy(e + E_RANKS, cr + C_RANKS, (size_t)(sc - C_RANKS) * sizeof(int64_t));
            b[0] = (b[0] + 1) | seen;
            rel = FB_WAIT(b, n); /* empty before: everything was tried before popping */
            FB_WAIT(b, n) = -1;
            if (n + 1 >= kf) { FB_ROOT(b, k) = -1; continue; } /* full: its queue and modifications are dropped */
        }
        /* modifications at positions >= the last rank above 1, never beyond rank k, never at
         * a leaf child */
        int64_t pos = cr[C_POS];
        const int64_t *d = IR + pos * si;
        int64_t m = d[IR_M];
        int32_t *rk = (int32_t *)(cr + C_RANKS);
        int64_t last = 0;
        for (int64_t j = m - 1; j >= 0; j--)
            if (rk[j] > 1) { last = j; break; }
        for (int64_t j = last; j < m; j++) {
            int64_t x = d[IR_KIDS + j];
            if (rk[j] >= k || x < L) continue; /* a leaf has one entry */
            int64_t cn = nc++, *nr = C + cn * sc;
            nr[C_POS] = pos;
            nr[C_HEAD] = 2 * h;
            int32_t *nrk = (int32_t *)(nr + C_RANKS);
            for (int64_t t = 0; t < m; t++) nrk[t] = rk[t];
            int32_t r = nrk[j] += 1;
            /* tried here, not through the worklist: its head takes entries still (b is not full)
             * and its other children had their entries at these ranks when c was formed, so
             * only child j can make it wait */
            int64_t *xb = FB + (x - L) * fb;
            if (FB_CNT(xb) < r) {
                nr[C_NEXT] = FB_WAIT(xb, r - 1);
                FB_WAIT(xb, r - 1) = cn;
                continue;
            }
            nd = cand_join(IR, si, FB, fb, k, se, sc, L, LV, P, cmb, om, C, cn, nr, d, h, b, dirty, nd);
        }
    }
}

/* ---- top-k by recursive enumeration -----------------------------------------------------------
 * The global loop above orders every candidate of a component in one heap, so that each fact's
 * next entry is found among all of the component's: about five dependent heap, queue and
 * waiting-list events an entry. Where the ranking is monotone -- a tree is never better than
 * any of its subtrees -- a fact's next entry can be found from its own queue alone: Jimenez and
 * Marzal's recursive enumeration [JM99], as Huang and Chiang's lazy k-best [HC05, Algorithm 3]
 * on a hypergraph. Entry 1 of every fact comes from the global loop (kf = 1: Knuth's order is
 * needed there, the graph being cyclic); then the next entry of fact v is the best candidate of
 * v's queue once the successors of v's last popped candidate are in it, each successor asking
 * for one child's next entry -- found the same way, recursively (an explicit stack). No
 * component heap, no waiting lists: a pop, a successor or two and the entry written.
 *
 * Why it ends and is exact: a subtree is strictly before its tree in (key, size) when the
 * ranking is monotone and every rule step inside the component adds size (rule_size >= 1), so a
 * request for fact x's entry r + 1 made while finding v's next entry has x's entry r strictly
 * before v's entries, and the chain of requests never comes back to a fact whose next entry is
 * being found. Copy steps (size 0) inside a component, weights that break monotonicity (a
 * product over weights above 1 maximised, a sum over negative ones minimised, NaN) and a minimum
 * minimised take the global loop; so does a component where a request meets a fact on the stack
 * (degenerate float ties): its blocks are reset and the global loop ranks it from scratch.
 * The entries are those of the global loop up to the order among equal (key, size) -- which
 * trees of equal weight and size are kept at the k-th place, and which of two candidates of one
 * origin -- the freedom that every engine's DTable has (selp.topk.kernel). */

#define FB_DONE ((int64_t)1 << 41) /* no entry beyond its count (its queue is empty) */
#define FB_BUSY ((int64_t)1 << 42) /* its next entry is being found: a frame on the stack */

struct frame { int64_t v, j; }; /* fact v, the next position of its candidate to expand (-2: not begun) */

static int kbest_rea = 1; /* 0: the global loop for every k; 2: as 1, each nested request taken for a stack hit (selp_kbest_rea) */
/* components ranked (k > 1) by: the recursive enumeration, the global loop after it met a fact
 * on the stack, the global loop alone, and of the first the linear enumeration (rea_linear)
 * (selp_kbest_counts: the tests see which loop ran) */
static int64_t kbest_counts[4];

/* a weight that keeps the ranking monotone when combined in (see above) */
static inline int mono_w(int cmb, double sign, double w) {
    if (w != w) return 0;
    if (cmb == 1) return sign > 0 ? w >= 0.0 : w <= 0.0;
    if (cmb == 0) return sign > 0 ? w >= 1.0 : (w >= 0.0 && w <= 1.0);
    return sign < 0; /* min, maximised */
}

/* The component's facts: the heads of its instances base..hi-1, contiguous ids lo..up (see pack). */
static void heads_range(const int64_t *IR, int64_t si, int64_t base, int64_t hi, int64_t *flo, int64_t *fhi) {
    int64_t lo = INT64_MAX, up = -1;
    for (int64_t p = base; p < hi; p++) {
        int64_t h = IR[p * si + IR_HEAD];
        if (h < lo) lo = h;
        if (h > up) up = h;
    }
    *flo = lo; *fhi = up;
}

/* The component's instances base..hi-1, of facts lo..up, allow the recursive enumeration (see above). */
static int rea_ok(const int64_t *IR, int64_t si, int64_t base, int64_t hi, const int64_t *FB, const kbest_t *B,
                  const prm_t *P, int64_t lo, int64_t up) {
    int64_t L = B->L, k = B->k, fb = B->fb, se = B->se;
    if (up < 0) return 0;
    for (int64_t p = base; p < hi; p++) {
        const int64_t *d = IR + p * si;
        int64_t r = d[IR_RULE];
        if (!mono_w(P->combine, P->sign, P->rule_w[r])) return 0;
        for (int64_t j = 0; j < d[IR_M]; j++) {
            int64_t x = d[IR_KIDS + j];
            if (x < L) {
                if (!mono_w(P->combine, P->sign, as_f(B->LV[4 * x])) || B->LV[4 * x + 1] < 0) return 0;
            } else if (x >= lo && x <= up) {
                if (P->rule_size[r] < 1) return 0;
            } else {
                const int64_t *xb = FB + (x - L) * fb;
                for (int32_t t = 0; t < FB_CNT(xb); t++) {
                    const int64_t *e = xb + 2 + k + se * t;
                    if (!mono_w(P->combine, P->sign, as_f(e[0])) || e[1] < 0) return 0;
                }
            }
        }
    }
    return 1;
}

/* room for candidate n (C and dirty grow together: the global loop sizes dirty by ccap) */
static int rea_room(kbest_t *B, int64_t n) {
    if (n < B->ccap) return 0;
    int64_t cap = 2 * B->ccap + B->M + 16;
    int64_t *c = realloc64(B->C, (size_t)B->ccap * B->sc * sizeof(int64_t), (size_t)cap * B->sc * sizeof(int64_t));
    if (!c) return -1;
    B->C = c;
    int64_t *d = realloc(B->dirty, (size_t)cap * sizeof(int64_t));
    if (!d) return -1;
    B->dirty = d; B->ccap = cap;
    return 0;
}

/* the first position a candidate's successors change: its last rank above 1 (one parent each) */
static inline int64_t rea_first(const int64_t *cr, int64_t m) {
    const int32_t *rk = (const int32_t *)(cr + C_RANKS);
    for (int64_t j = m - 1; j >= 0; j--)
        if (rk[j] > 1) return j;
    return 0;
}

/* Entries 2..k of the component's facts flo..fhi (entry 1 found, queues empty). Returns 0; -1
 * out of memory or stopped; -2 a request met a fact on the stack (the caller falls back). */
static inline __attribute__((always_inline)) int
comp_rea_as(const int64_t *IR, int64_t si, int64_t base, int64_t hi, int64_t *FB, kbest_t *B, const prm_t *P,
            int cmb, int om, int64_t flo, int64_t fhi) {
    int64_t k = B->k, fb = B->fb, se = B->se, sc = B->sc, L = B->L;
    const int64_t *LV = B->LV;
    int64_t nf = fhi - flo + 1, nc = 0, nseq = 0; /* records used; candidate ids given (see c_less) */
    if (nf > B->lcap) {
        int64_t *l = realloc(B->last, (size_t)nf * sizeof(int64_t));
        if (!l) return -1;
        B->last = l; B->lcap = nf;
    }
    int64_t *last = B->last;
    /* The instances in head order (a stable counting sort into B->hir, their positions in
     * B->horig): a fact's candidates and their instance records then lie together, where the
     * component's order (its instances' drivers) scatters them -- on TC at 1M, whose components
     * are ~40,000 facts, reading a popped candidate's instance record was a third of the loop's
     * time, each a cache miss. Candidate positions (C_POS) index hir; an entry records horig's. */
    int64_t n = hi - base;
    if (n > B->hcap) {
        int64_t *x = realloc(B->hir, ((size_t)n * si + 1) * sizeof(int64_t));
        if (!x) return -1;
        B->hir = x;
        x = realloc(B->horig, ((size_t)n + 1) * sizeof(int64_t));
        if (!x) return -1;
        B->horig = x; B->hcap = n;
    }
    int64_t *hir = B->hir, *horig = B->horig;
    for (int64_t i = 0; i < nf; i++) last[i] = 0;
    for (int64_t p = base; p < hi; p++) last[IR[p * si + IR_HEAD] - flo]++;
    for (int64_t i = 0, t = 0; i < nf; i++) { int64_t c = last[i]; last[i] = t; t += c; }
    for (int64_t p = base; p < hi; p++) {
        int64_t q = last[IR[p * si + IR_HEAD] - flo]++;
        memcpy(hir + q * si, IR + p * si, (size_t)si * sizeof(int64_t));
        horig[q] = p;
    }
    IR = hir;
    for (int64_t i = 0; i < nf; i++) last[i] = -1;
    /* every instance's candidate at rank 1 joins its head's queue, but the one that is entry 1,
     * whose successors come first */
    for (int64_t p = 0; p < n; p++) {
        const int64_t *d = IR + p * si;
        int64_t h = d[IR_HEAD], m = d[IR_M];
        int64_t *hb = FB + (h - L) * fb;
        if (FB_CNT(hb) == 0 || FB_CNT(hb) >= k) continue; /* no tree at all, or k = 1 */
        int ready = 1;
        for (int64_t j = 0; j < m; j++) {
            int64_t x = d[IR_KIDS + j];
            if (x >= L && FB_CNT(FB + (x - L) * fb) == 0) { ready = 0; break; }
        }
        if (!ready) continue;
        if (rea_room(B, nc)) return -1;
        int64_t c = nc++, *cr = B->C + c * sc;
        cr[C_POS] = p; cr[C_HEAD] = nseq++;
        int32_t *rk = (int32_t *)(cr + C_RANKS);
        for (int64_t j = 0; j < m; j++) rk[j] = 1;
        if (FB_ENTRY(hb, k, 0)[3] == horig[p]) { last[h - flo] = c; continue; }
        cand_key(FB, fb, k, se, L, LV, P, cmb, om, cr, d);
        FB_ROOT(hb, k) = ph_merge(B->C, sc, FB_ROOT(hb, k), c, 1);
    }
    for (int64_t v0 = flo; v0 <= fhi; v0++) {
        int64_t *b0 = FB + (v0 - L) * fb;
        if (FB_CNT(b0) == 0) { b0[0] |= FB_DONE; continue; }
        while (FB_CNT(b0) < k && !(b0[0] & FB_DONE)) {
            if (stop_flag) return -1;
            int64_t ns = 0;
            if (B->scap < 1) {
                struct frame *t = realloc(B->stk, 64 * sizeof(struct frame));
                if (!t) return -1;
                B->stk = t; B->scap = 64;
            }
            B->stk[ns++] = (struct frame){v0, -2};
            while (ns > 0) {
                struct frame *fr = B->stk + ns - 1;
                int64_t v = fr->v, *b = FB + (v - L) * fb;
                int64_t *C = B->C;
                if (fr->j == -2) {
                    b[0] |= FB_BUSY;
                    int64_t c = last[v - flo];
                    fr->j = c >= 0 ? rea_first(C + c * sc, IR[C[c * sc + C_POS] * si + IR_M]) : 0;
                }
                int64_t c = last[v - flo];
                if (c >= 0) {
                    /* the successors of v's last popped candidate join v's queue */
                    int64_t pos = C[c * sc + C_POS];
                    const int64_t *d = IR + pos * si;
                    int64_t m = d[IR_M];
                    int pushed = 0;
                    /* the last position that can have a successor: that successor takes c's own
                     * record (c is dead once its successors are formed), so a candidate with one
                     * such child -- every candidate of a linear rule -- allocates nothing and its
                     * successor stays in the cache lines just read */
                    int64_t lastj = -1;
                    const int32_t *rk0 = (const int32_t *)(B->C + c * sc + C_RANKS);
                    for (int64_t j = m - 1; j >= fr->j; j--)
                        if (d[IR_KIDS + j] >= L && rk0[j] < k) { lastj = j; break; }
                    for (; fr->j < m; fr->j++) {
                        int64_t j = fr->j, x = d[IR_KIDS + j];
                        int32_t r = ((const int32_t *)(B->C + c * sc + C_RANKS))[j];
                        if (x < L || r >= k) continue; /* a leaf has one entry; no rank beyond k */
                        int64_t *xb = FB + (x - L) * fb;
                        if (FB_CNT(xb) < r + 1) {
                            if (x < flo || x > fhi || (xb[0] & FB_DONE)) continue; /* x has no entry r + 1 */
                            if ((xb[0] & FB_BUSY) || kbest_rea == 2) return -2; /* 2: the tests' way to the fallback */
                            if (ns == B->scap) {
                                struct frame *t = realloc(B->stk, (size_t)2 * B->scap * sizeof(struct frame));
                                if (!t) return -1;
                                B->stk = t; B->scap *= 2;
                            }
                            B->stk[ns++] = (struct frame){x, -2};
                            pushed = 1;
                            break;
                        }
                        int64_t cn, *nr;
                        if (j == lastj) {
                            cn = c; nr = C + c * sc;
                        } else {
                            if (rea_room(B, nc)) return -1;
                            C = B->C;
                            cn = nc++; nr = C + cn * sc;
                            memcpy(nr, C + c * sc, (size_t)sc * sizeof(int64_t));
                        }
                        ((int32_t *)(nr + C_RANKS))[j] = r + 1;
                        nr[C_HEAD] = nseq++;
                        cand_key(FB, fb, k, se, L, LV, P, cmb, om, nr, d);
                        FB_ROOT(b, k) = ph_merge(C, sc, FB_ROOT(b, k), cn, 1);
                    }
                    if (pushed) continue; /* x's entry first; then this frame goes on at j */
                    last[v - flo] = -1;
                }
                /* v's next entry: its queue's best, unless its origin is an entry's already */
                int64_t root = FB_ROOT(b, k);
                if (root < 0) { b[0] = (b[0] | FB_DONE) & ~FB_BUSY; ns--; continue; }
                int64_t *cr = C + root * sc;
                FB_ROOT(b, k) = ph_pairs(C, sc, cr[C_CHILD], 1);
                int64_t s = cr[C_S], o = cr[C_O];
                int32_t n = FB_CNT(b);
                int64_t seen = FB_SEEN(o);
                int dup = 0;
                if (b[0] & seen)
                    for (int32_t r = 0; r < n; r++)
                        if (FB_ENTRY(b, k, r)[2] == o) { dup = 1; break; }
                last[v - flo] = root;
                if (dup) { fr->j = rea_first(cr, IR[cr[C_POS] * si + IR_M]); continue; } /* its successors, then the next */
                int64_t *e = FB_ENTRY(b, k, n);
                e[0] = as_i(P->sign * as_f(cr[C_W])); /* sign is +-1: exact */
                e[1] = s; e[2] = o; e[3] = horig[cr[C_POS]];
                B->slots += IR[cr[C_POS] * si + IR_M];
                memcpy(e + E_RANKS, cr + C_RANKS, (size_t)(sc - C_RANKS) * sizeof(int64_t));
                b[0] = ((b[0] + 1) | seen) & ~FB_BUSY;
                if (n + 1 >= k) { FB_ROOT(b, k) = -1; b[0] |= FB_DONE; }
                ns--;
            }
        }
    }
    return 0;
}

/* Entry 1 by Knuth's loop over compact records (comp_top1), where the whole hypergraph is ranked
 * (selp_topk): the fact blocks are k times an entry wide (384 bytes at k = 7), and on TC at 1M
 * output tuples, whose value components are ~40,000 facts each, the global loop taking entry 1
 * over them (kf = 1) cost twice top-1. FR holds a record per fact (fr_init): the leaves', each
 * finished component's entry 1 (published after it, rea_publish), the component's own; the
 * uses lists are the component's (children outside it have their entry already). */
typedef struct {
    int64_t *FR;                      /* F records of 8 int64 */
    int32_t *rem;                     /* per instance position (I) */
    int64_t *uptr, *fill, *uses, *todo;
    int64_t ucap, fcap, lcap, tcap;
    heap_t hp;
    int64_t *key, kcap;               /* per instance its first candidate's key (comp_top1's key) */
} top1_t;

static int top1_grow(void **p, int64_t *cap, int64_t n, size_t size) {
    if (n <= *cap) return 0;
    int64_t c = 2 * n + 64;
    void *q = realloc(*p, (size_t)c * size);
    if (!q) return -1;
    *p = q; *cap = c;
    return 0;
}

/* T's records of the L leaves, from their entries LV (weight, size, origin) */
static void top1_leaves(top1_t *T, int64_t L, const int64_t *LV) {
    for (int64_t x = 0; x < L; x++) fr_init(T->FR + 8 * x, 1, as_f(LV[4 * x]), LV[4 * x + 1], LV[4 * x + 2]);
}

static void top1_free(top1_t *T) {
    free(T->FR); free(T->rem); free(T->uptr); free(T->fill); free(T->uses); free(T->todo); free(T->hp.a); free(T->key);
}

/* Entry 1 of facts flo..fhi (instances base..hi-1) by comp_top1 over T's records: with blocks,
 * written into their blocks FB (the recursive enumeration reads them there); without, the blocks
 * untouched and every instance's first key in T->key (rea_linear's first heads). */
static int rea_top1(const int64_t *IR, int64_t si, int64_t base, int64_t hi, int64_t *FB, kbest_t *B, const prm_t *P,
                    top1_t *T, int64_t flo, int64_t fhi, int blocks) {
    int64_t nf = fhi - flo + 1, L = B->L, k = B->k, fb = B->fb, se = B->se;
    if (top1_grow((void **)&T->uptr, &T->ucap, nf + 2, sizeof(int64_t))) return -1;
    if (top1_grow((void **)&T->fill, &T->fcap, nf + 2, sizeof(int64_t))) return -1;
    if (top1_grow((void **)&T->todo, &T->tcap, hi - base + 1, sizeof(int64_t))) return -1;
    if (!blocks) { /* the linear enumeration's first heads: comp_top1's keys */
        if (top1_grow((void **)&T->key, &T->kcap, 3 * (hi - base) + 1, sizeof(int64_t))) return -1;
        for (int64_t p = 0; p < hi - base; p++) T->key[3 * p + 1] = KEY_NONE;
    }
    int64_t *uptr = T->uptr;
    /* rem and uses over the component's own children (flo..fhi): see uses_of */
    memset(uptr, 0, ((size_t)nf + 2) * sizeof(int64_t));
    for (int64_t p = base; p < hi; p++) {
        const int64_t *d = IR + p * si;
        int32_t n = 0;
        for (int64_t j = 0; j < d[IR_M]; j++) {
            int64_t x = d[IR_KIDS + j];
            if (x >= flo && x <= fhi) { uptr[x - flo + 1]++; n++; }
            else if (x >= L && T->FR[8 * x + 3] == -2) n = INT32_MAX / 2; /* a child without a tree: never */
        }
        T->rem[p] = n;
    }
    for (int64_t f = 0; f < nf; f++) uptr[f + 1] += uptr[f];
    if (top1_grow((void **)&T->uses, &T->lcap, uptr[nf] + 1, sizeof(int64_t))) return -1;
    memcpy(T->fill, uptr, (size_t)nf * sizeof(int64_t));
    for (int64_t p = base; p < hi; p++) {
        const int64_t *d = IR + p * si;
        for (int64_t j = 0; j < d[IR_M]; j++) {
            int64_t x = d[IR_KIDS + j];
            if (x >= flo && x <= fhi) T->uses[T->fill[x - flo]++] = T->rem[p] == 1 ? ~p : p;
        }
    }
    for (int64_t v = flo; v <= fhi; v++) fr_init(T->FR + 8 * v, 0, 0.0, 0, 0);
    if (comp_top1(IR, si, base, hi, T->FR, T->rem, uptr, T->uses, flo, T->todo, &T->hp, P, blocks ? NULL : T->key)) return -1;
    if (!blocks) return 0; /* the linear enumeration reads FR */
    /* each fact's entry 1 into its block: its instance with every rank 1 */
    for (int64_t v = flo; v <= fhi; v++) {
        const int64_t *q = T->FR + 8 * v;
        if (q[3] == -2) continue;
        int64_t *b = FB + (v - L) * fb, *e = FB_ENTRY(b, k, 0), m = IR[q[3] * si + IR_M];
        e[0] = q[0]; e[1] = q[1]; e[2] = q[2]; e[3] = q[3];
        int32_t *rk = (int32_t *)(e + E_RANKS);
        for (int64_t j = 0; j < m; j++) rk[j] = 1;
        b[0] = (b[0] + 1) | FB_SEEN(q[2]);
        B->slots += m;
    }
    return 0;
}

/* facts flo..fhi's entry 1 (or none) into their records, for the components above */
static void rea_publish(const int64_t *FB, const kbest_t *B, top1_t *T, int64_t flo, int64_t fhi) {
    int64_t se = B->se;
    for (int64_t v = flo; v <= fhi; v++) {
        const int64_t *b = FB + (v - B->L) * B->fb;
        int64_t *q = T->FR + 8 * v;
        if (FB_CNT(b) == 0) { q[3] = -2; continue; }
        const int64_t *e = FB_ENTRY(b, B->k, 0);
        q[0] = e[0]; q[1] = e[1]; q[2] = e[2]; q[3] = e[3];
    }
}

/* The global loop (kf = k), or entry 1 by the global loop -- or by comp_top1 where T is given --
 * and the rest by the recursive enumeration (rea: its facts flo..fhi) */
static inline __attribute__((always_inline)) int
comp_topk_by(const int64_t *IR, int64_t si, int64_t base, int64_t hi, int64_t *FB, kbest_t *B, const prm_t *P,
             int cmb, int om, int rea, int64_t flo, int64_t fhi, top1_t *T) {
    if (!rea) {
        __atomic_fetch_add(&kbest_counts[2], 1, __ATOMIC_RELAXED);
        return comp_topk_as(IR, si, base, hi, FB, B, P, cmb, om, B->k);
    }
    int64_t slots = B->slots;
    int r = T ? rea_top1(IR, si, base, hi, FB, B, P, T, flo, fhi, 1) : comp_topk_as(IR, si, base, hi, FB, B, P, cmb, om, 1);
    if (r) return r;
    r = comp_rea_as(IR, si, base, hi, FB, B, P, cmb, om, flo, fhi);
    if (r != -2) {
        __atomic_fetch_add(&kbest_counts[0], 1, __ATOMIC_RELAXED);
        return r;
    }
    __atomic_fetch_add(&kbest_counts[1], 1, __ATOMIC_RELAXED);
    /* a request met a fact on the stack: the component again, by the global loop */
    for (int64_t v = flo; v <= fhi; v++) fb_init(FB + (v - B->L) * B->fb, B->k, B->se, 0, 0.0, 0, 0);
    B->slots = slots;
    return comp_topk_as(IR, si, base, hi, FB, B, P, cmb, om, B->k);
}

/* comp_topk_by compiled for each combination of the monoid's combine code and the origin mode:
 * constants there, so the loop that forms a candidate's key has no branch on either (a plain
 * call reloads both from P after every store, as P may alias the records) */
static int comp_topk_t(const int64_t *IR, int64_t si, int64_t base, int64_t hi, int64_t *FB, kbest_t *B,
                       const prm_t *P, top1_t *T) {
    int om = P->origin_mode != 0;
    int64_t flo, fhi;
    heads_range(IR, si, base, hi, &flo, &fhi);
    int rea = kbest_rea && B->k > 1 && rea_ok(IR, si, base, hi, FB, B, P, flo, fhi);
    int r;
    switch (P->combine) {
    case 0: r = om ? comp_topk_by(IR, si, base, hi, FB, B, P, 0, 1, rea, flo, fhi, T) : comp_topk_by(IR, si, base, hi, FB, B, P, 0, 0, rea, flo, fhi, T); break;
    case 1: r = om ? comp_topk_by(IR, si, base, hi, FB, B, P, 1, 1, rea, flo, fhi, T) : comp_topk_by(IR, si, base, hi, FB, B, P, 1, 0, rea, flo, fhi, T); break;
    default: r = om ? comp_topk_by(IR, si, base, hi, FB, B, P, 2, 1, rea, flo, fhi, T) : comp_topk_by(IR, si, base, hi, FB, B, P, 2, 0, rea, flo, fhi, T); break;
    }
    if (!r && T) rea_publish(FB, B, T, flo, fhi);
    return r;
}

static int comp_topk(const int64_t *IR, int64_t si, int64_t base, int64_t hi, int64_t *FB, kbest_t *B,
                     const prm_t *P) {
    return comp_topk_t(IR, si, base, hi, FB, B, P, NULL);
}

/* ---- the recursive enumeration over linear instances -------------------------------------
 * Where every instance of a component has at most one child in it (its others are leaves) --
 * every group of the static path, whose recursive rules are linear: a Spark partition's
 * decomposable component, the embedded engine's -- an instance's candidates form one sorted
 * stream: its child's entries 1, 2, .. in order, each with the same leaves (the ranking being
 * monotone, the stream stays sorted). A fact's next entry is then the best head among its
 * instances' streams, and taking it moves that one stream on by one rank of its child: the
 * recursive enumeration above [JM99] with a fact's candidate queue replaced by its streams'
 * heads, scanned (a fact has a few instances). What the loop reads are compact arrays, where
 * the general loop reads, per entry, a fact's block, its last candidate's record, that
 * candidate's instance, the child's block and entry (~45 MB of records on TC at 1M's
 * 40,000-fact groups, each read a cache miss): the facts' counts (8 bytes a fact), their
 * streams (32 bytes an instance, a fact's together), the entries' keys (24 bytes an entry).
 * No fact block is written: the entries are read from these arrays (lin_entry).
 * The entries are the general loop's: the same candidates in the same (key, size, origin)
 * order, the same same-origin duplicates skipped, the same nested requests (a fact met on the
 * stack gives up the same way: -2). Only the last tie-break differs -- an instance's position
 * here, the order the candidates were formed there -- which needs two candidates of one origin,
 * one tree's twice, skipped as a duplicate either way. */

enum { LK_ONE, LK_C, LK_CL, LK_LC, LK_ANY }; /* one candidate (leaves only); the child alone; the child then
                                              * a leaf; a leaf then the child; another shape (its record) */
#define LV_CNT 0xffu       /* a fact's word: entries so far (k <= 255) */
#define LV_BUSY (1u << 8)  /* its next entry is being found */
#define LV_DONE (1u << 9)  /* no entry beyond its count */
#define LV_SEEN(o) (1u << (16 + ((uint64_t)(o) >> 60))) /* a filter of the entries' origins (as FB_SEEN) */

/* room for n items of `size` bytes at *p (kept: an array rea_linear rewrites; lines: on cache
 * lines, the contents dropped) */
static int lin_room(void **p, int64_t *cap, int64_t n, size_t size, int lines) {
    if (n <= *cap) return 0;
    void *q = lines ? realloc64(*p, 0, (size_t)n * size) : realloc(*p, (size_t)n * size);
    if (!q) return -1;
    *p = q; *cap = n;
    return 0;
}

/* The child's position among an instance's children (-1: none) */
static inline int64_t lin_child(const int64_t *d, int64_t L) {
    for (int64_t j = 0; j < d[IR_M]; j++)
        if (d[IR_KIDS + j] >= L) return j;
    return -1;
}

/* stream sl's next head from its child's entry e (weight, size, origin): cand_key's arithmetic,
 * the children folded in their order (a float product is not associative) */
static inline void lin_next(lslot_t *sl, const int64_t *e, const int64_t *IR, int64_t si, int64_t L,
                            const int64_t *LV, const prm_t *P, int cmb, int om) {
    int64_t rl = sl->rule, s = P->rule_size[rl];
    double w = P->rule_w[rl];
    uint64_t hh = (uint64_t)P->rule_hash[rl];
    switch (sl->kind) {
    case LK_C:
        w = comb(cmb, w, as_f(e[0]));
        hh = origin_step(om, hh, e[2]);
        sl->s = (int32_t)(s + e[1]);
        sl->o = origin_end(om, hh, 1);
        break;
    case LK_CL:
    case LK_LC: { /* the child and a leaf, folded in their body order */
        const int64_t *f = LV + 4 * (int64_t)sl->u;
        const int64_t *a = sl->kind == LK_CL ? e : f, *b = sl->kind == LK_CL ? f : e;
        w = comb(cmb, comb(cmb, w, as_f(a[0])), as_f(b[0]));
        hh = origin_step(om, origin_step(om, hh, a[2]), b[2]);
        sl->s = (int32_t)(s + a[1] + b[1]);
        sl->o = origin_end(om, hh, 2);
        break;
    }
    default: { /* LK_ANY: from the instance's record */
        const int64_t *d = IR + (int64_t)sl->u * si;
        int64_t m = d[IR_M], o0 = 0;
        for (int64_t t = 0; t < m; t++) {
            int64_t x = d[IR_KIDS + t];
            const int64_t *c = x >= L ? e : LV + 4 * x;
            w = comb(cmb, w, as_f(c[0]));
            s += c[1];
            if (t == 0) o0 = c[2];
            hh = origin_step(om, hh, c[2]);
        }
        sl->s = (int32_t)s;
        sl->o = P->rule_copy[rl] ? o0 : origin_end(om, hh, m);
    }
    }
    sl->w = as_i(P->sign * w);
}

/* Entries 1..k of facts flo..fhi over instances base..hi-1 (rea_linear's shape, comp_top1's
 * records and keys in T): into B's arrays (lhv, le3, leq, ler; lin_entry reads them). Returns
 * 0; -1 out of memory or stopped; -2 a request met a fact on the stack (the caller ranks the
 * component by the general loops). */
static inline __attribute__((always_inline)) int
rea_linear_as(const int64_t *IR, int64_t si, int64_t base, int64_t hi, kbest_t *B, const prm_t *P, int cmb, int om,
              int64_t flo, int64_t fhi, const top1_t *T) {
    int64_t k = B->k, L = B->L, nf = fhi - flo + 1, n = hi - base;
    const int64_t *LV = B->LV, *key = T->key, *FR = T->FR;
    if (lin_room((void **)&B->lhp, &B->lhpcap, nf + 2, sizeof(int64_t), 0) ||
        lin_room((void **)&B->last, &B->lcap, nf + 1, sizeof(int64_t), 0) ||
        lin_room((void **)&B->lsl, &B->lslcap, n + 1, sizeof(lslot_t), 1) || /* two streams a line */
        lin_room((void **)&B->lhv, &B->lhvcap, 2 * nf + 1, sizeof(uint32_t), 0) ||
        lin_room((void **)&B->le3, &B->le3cap, 3 * nf * k + 1, sizeof(int64_t), 0) ||
        lin_room((void **)&B->leq, &B->leqcap, nf * k + 1, sizeof(int32_t), 0) ||
        lin_room((void **)&B->ler, &B->lercap, nf * k + 1, sizeof(uint8_t), 0) ||
        lin_room((void **)&B->lqof, &B->lqofcap, n + 1, sizeof(int32_t), 0))
        return -1;
    int64_t *hp = B->lhp, *cur = B->last;
    lslot_t *SL = B->lsl;
    uint32_t *HV = B->lhv; /* per fact: its word (count, flags, filter), then its stream taken last (-1: none) */
    int64_t *E3 = B->le3;  /* per fact k entries: weight, size, origin */
    int32_t *EQ = B->leq;  /* per entry its stream */
    uint8_t *ER = B->ler;  /* per entry its child's rank */
    /* the streams in head order (a counting sort): a fact's together */
    memset(hp, 0, ((size_t)nf + 1) * sizeof(int64_t));
    for (int64_t p = base; p < hi; p++) hp[IR[p * si + IR_HEAD] - flo + 1]++;
    for (int64_t v = 0; v < nf; v++) hp[v + 1] += hp[v];
    memcpy(cur, hp, (size_t)nf * sizeof(int64_t));
    int32_t *qof = B->lqof; /* per instance its stream */
    for (int64_t p = base; p < hi; p++) {
        const int64_t *d = IR + p * si;
        int64_t h = d[IR_HEAD] - flo, q = cur[h]++;
        lslot_t *sl = SL + q;
        const int64_t *kq = key + 3 * (p - base);
        int64_t m = d[IR_M], rl = d[IR_RULE], j = lin_child(d, L);
        qof[p - base] = (int32_t)q;
        sl->u = (int32_t)(p - base); sl->rule = (uint8_t)rl; sl->m = (uint8_t)m;
        sl->x = -1; sl->kind = LK_ONE;
        if (kq[1] == KEY_NONE) { sl->r = 0; continue; } /* a child without an entry: no stream */
        sl->w = kq[0]; sl->s = (int32_t)kq[1]; sl->o = kq[2]; sl->r = 1;
        if (j < 0) continue;
        sl->x = (int32_t)(d[IR_KIDS + j] - flo);
        if (P->rule_copy[rl]) sl->kind = LK_ANY;
        else if (m == 1) sl->kind = LK_C;
        else if (m == 2) { sl->kind = j == 0 ? LK_CL : LK_LC; sl->u = (int32_t)d[IR_KIDS + 1 - j]; }
        else sl->kind = LK_ANY;
    }
    /* entry 1 (comp_top1's); its stream moves on first */
    for (int64_t v = 0; v < nf; v++) {
        const int64_t *fq = FR + 8 * (flo + v);
        HV[2 * v + 1] = (uint32_t)-1;
        if (fq[3] == -2) { HV[2 * v] = LV_DONE; continue; }
        if (fq[3] < base || fq[3] >= hi) return -2; /* not an instance's: never, but the general loops are exact */
        int64_t q = qof[fq[3] - base];
        HV[2 * v + 1] = (uint32_t)q;
        int64_t *e = E3 + 3 * v * k;
        e[0] = fq[0]; e[1] = fq[1]; e[2] = fq[2];
        EQ[v * k] = (int32_t)q; ER[v * k] = 1;
        B->slots += SL[q].m;
        HV[2 * v] = 1 | LV_SEEN(fq[2]) | (k <= 1 ? LV_DONE : 0);
    }
    for (int64_t v0 = 0; v0 < nf; v0++) {
        while (!(HV[2 * v0] & LV_DONE)) {
            if (stop_flag) return -1;
            int64_t ns = 0;
            if (B->scap < 1) {
                struct frame *t = realloc(B->stk, 64 * sizeof(struct frame));
                if (!t) return -1;
                B->stk = t; B->scap = 64;
            }
            B->stk[ns++] = (struct frame){v0, 0};
            while (ns > 0) {
                int64_t v = B->stk[ns - 1].v;
                uint32_t *hv = HV + 2 * v;
                hv[0] |= LV_BUSY;
                int32_t q = (int32_t)hv[1];
                if (q >= 0) {
                    /* the stream taken last moves on by one rank of its child */
                    lslot_t *sl = SL + q;
                    int32_t r = sl->r;
                    if (sl->x < 0 || r >= k) { sl->r = 0; hv[1] = (uint32_t)-1; }
                    else {
                        int64_t x = sl->x;
                        uint32_t hx = HV[2 * x];
                        if ((int64_t)(hx & LV_CNT) <= r) {
                            if (hx & LV_DONE) { sl->r = 0; hv[1] = (uint32_t)-1; }
                            else if ((hx & LV_BUSY) || kbest_rea == 2) return -2; /* 2: the tests' way to the fallback */
                            else {
                                if (ns == B->scap) {
                                    struct frame *t = realloc(B->stk, (size_t)2 * B->scap * sizeof(struct frame));
                                    if (!t) return -1;
                                    B->stk = t; B->scap *= 2;
                                }
                                B->stk[ns++] = (struct frame){x, 0};
                                continue; /* x's entry r + 1 first; then v again */
                            }
                        } else {
                            lin_next(sl, E3 + 3 * (x * k + r), IR + base * si, si, L, LV, P, cmb, om);
                            sl->r = (uint8_t)(r + 1);
                            hv[1] = (uint32_t)-1;
                        }
                    }
                }
                /* v's next entry: its streams' best head, unless its origin is an entry's already */
                int64_t best = -1;
                for (int64_t t = hp[v]; t < hp[v + 1]; t++) {
                    const lslot_t *a = SL + t;
                    if (a->r && (best < 0 || less4(as_f(a->w), a->s, a->o, t, as_f(SL[best].w), SL[best].s, SL[best].o, best)))
                        best = t;
                }
                if (best < 0) { hv[0] = (hv[0] | LV_DONE) & ~LV_BUSY; ns--; continue; }
                const lslot_t *sl = SL + best;
                int64_t o = sl->o, c = hv[0] & LV_CNT;
                uint32_t seen = LV_SEEN(o);
                int64_t *ev = E3 + 3 * v * k;
                int dup = 0;
                if (hv[0] & seen)
                    for (int64_t t = 0; t < c; t++)
                        if (ev[3 * t + 2] == o) { dup = 1; break; }
                hv[1] = (uint32_t)best;
                if (dup) continue; /* its stream moves on, then the next */
                int64_t *e = ev + 3 * c;
                e[0] = as_i(P->sign * as_f(sl->w)); /* sign is +-1: exact */
                e[1] = sl->s; e[2] = o;
                EQ[v * k + c] = (int32_t)best;
                ER[v * k + c] = sl->r;
                B->slots += sl->m;
                hv[0] = ((hv[0] + 1) | seen | (c + 1 >= k ? LV_DONE : 0)) & ~LV_BUSY;
                ns--;
                /* the stream moves on now where its child has the entry already (its line is
                 * in cache now, not at v's next request): the same head either way */
                lslot_t *ts = SL + best;
                if (!(hv[0] & LV_DONE) && ts->x >= 0 && ts->r < k && (int64_t)(HV[2 * ts->x] & LV_CNT) > ts->r) {
                    lin_next(ts, E3 + 3 * ((int64_t)ts->x * k + ts->r), IR + base * si, si, L, LV, P, cmb, om);
                    ts->r++;
                    hv[1] = (uint32_t)-1;
                }
            }
        }
    }
    return 0;
}

/* Components by rea_linear, compiled per combine code and origin mode (as comp_topk_t):
 * entry 1 by comp_top1 (T), then the enumeration, for instances base..hi-1 that each have at
 * most one child that is no leaf, that child a fact of theirs, and whose ranking allows the
 * recursive enumeration (as rea_ok: a monotone ranking, every rule step with a child in the
 * component adding size). Sets B->lin_done (and lin_flo,
 * lin_fhi: the facts in B's arrays). Returns 0; -1 out of memory or stopped; -2 not so ranked
 * (the caller initialises the blocks and ranks by comp_topk_t; nothing was counted). */
static int rea_linear(const int64_t *IR, int64_t si, int64_t base, int64_t hi, kbest_t *B, const prm_t *P, top1_t *T) {
    B->lin_done = 0;
    if (!kbest_rea || B->k < 2 || hi <= base || hi - base >= INT32_MAX || B->L >= INT32_MAX) return -2;
    int64_t flo, fhi, L = B->L, step = 0;
    heads_range(IR, si, base, hi, &flo, &fhi);
    for (int64_t p = base; p < hi; p++) {
        const int64_t *d = IR + p * si;
        int64_t r = d[IR_RULE], m = d[IR_M], c = 0, add = P->rule_size[r];
        if (m > 255 || r > 255 || add < 0 || add > INT32_MAX || !mono_w(P->combine, P->sign, P->rule_w[r])) return -2; /* a stream's narrow fields */
        for (int64_t j = 0; j < m; j++) {
            int64_t x = d[IR_KIDS + j];
            if (x < L) {
                if (!mono_w(P->combine, P->sign, as_f(B->LV[4 * x])) || B->LV[4 * x + 1] < 0 || B->LV[4 * x + 1] > INT32_MAX) return -2;
                add += B->LV[4 * x + 1];
            } else if (++c > 1 || x < flo || x > fhi || P->rule_size[r] < 1) return -2; /* linear, adding size */
        }
        if (add > step) step = add;
    }
    /* a stream's size is int32: a tree among a fact's k best takes each fact's k best subtrees,
     * so it is a chain of at most nf * k rule steps, each adding at most `step` */
    if ((double)step * (double)((fhi - flo + 1) * B->k + 1) >= (double)INT32_MAX) return -2;
    int r = rea_top1(IR, si, base, hi, NULL, B, P, T, flo, fhi, 0);
    if (r) return r;
    int om = P->origin_mode != 0;
    switch (P->combine) {
    case 0: r = om ? rea_linear_as(IR, si, base, hi, B, P, 0, 1, flo, fhi, T) : rea_linear_as(IR, si, base, hi, B, P, 0, 0, flo, fhi, T); break;
    case 1: r = om ? rea_linear_as(IR, si, base, hi, B, P, 1, 1, flo, fhi, T) : rea_linear_as(IR, si, base, hi, B, P, 1, 0, flo, fhi, T); break;
    default: r = om ? rea_linear_as(IR, si, base, hi, B, P, 2, 1, flo, fhi, T) : rea_linear_as(IR, si, base, hi, B, P, 2, 0, flo, fhi, T); break;
    }
    if (r) return r;
    B->lin_done = 1; B->lin_flo = flo; B->lin_fhi = fhi; B->lin_base = base;
    __atomic_fetch_add(&kbest_counts[0], 1, __ATOMIC_RELAXED);
    __atomic_fetch_add(&kbest_counts[3], 1, __ATOMIC_RELAXED);
    return 0;
}

/* after rea_linear: fact v's entries (0 outside flo..fhi), and its entry t: weight, size (the
 * result), its rule, children (into kids: m of them, m the result) and their ranks (into rk:
 * every child's 1 but the component's) */
static inline int64_t lin_count(const kbest_t *B, int64_t v) {
    return v < B->lin_flo || v > B->lin_fhi ? 0 : B->lhv[2 * (v - B->lin_flo)] & LV_CNT;
}

static inline int64_t lin_entry(const kbest_t *B, const int64_t *IR, int64_t si, int64_t v, int64_t t,
                                const int64_t **e, int32_t *rule, int64_t *kids, int32_t *rk) {
    int64_t i = (v - B->lin_flo) * B->k + t, m;
    const lslot_t *sl = B->lsl + B->leq[i];
    int64_t x = B->lin_flo + sl->x, j = 0;
    *e = B->le3 + 3 * i;
    *rule = sl->rule;
    switch (sl->kind) {
    case LK_C: m = 1; kids[0] = x; break;
    case LK_CL: m = 2; kids[0] = x; kids[1] = sl->u; break;
    case LK_LC: m = 2; kids[0] = sl->u; kids[1] = x; j = 1; break;
    default: {
        const int64_t *d = IR + (B->lin_base + sl->u) * si;
        m = d[IR_M];
        memcpy(kids, d + IR_KIDS, (size_t)m * sizeof(int64_t));
        j = sl->x >= 0 ? lin_child(d, B->L) : 0;
    }
    }
    for (int64_t c = 0; c < m; c++) rk[c] = 1;
    if (sl->x >= 0) rk[j] = B->ler[i];
    return m;
}

/* Which loop ranks k > 1: 1 the recursive enumeration where it applies (the default), 0 the
 * global loop everywhere (the pure-Python twin's: the tests compare the two bit for bit), 2 the
 * recursive enumeration giving up at its first nested request (the tests reach the fallback so);
 * -1 only asks. Returns the setting before. Not for use while a kernel runs. */
EXPORT int selp_kbest_rea(int on) {
    int was = kbest_rea;
    if (on >= 0 && on <= 2) kbest_rea = on;
    return was;
}

/* out[0..3] = the components counted so far (see kbest_counts); reset: zeroed after */
EXPORT void selp_kbest_counts(int64_t *out, int reset) {
    for (int i = 0; i < 4; i++) out[i] = __atomic_load_n(&kbest_counts[i], __ATOMIC_RELAXED);
    if (reset)
        for (int i = 0; i < 4; i++) __atomic_store_n(&kbest_counts[i], 0, __ATOMIC_RELAXED);
}

static void kbest_init(kbest_t *B, int64_t k, int64_t M) {
    memset(B, 0, sizeof(*B));
    B->k = k; B->M = M;
    B->sc = C_RANKS + (M + 1) / 2;
    B->se = E_RANKS + (M + 1) / 2;
    B->fb = (2 + k + B->se * k + 7) / 8 * 8;
}

static void kbest_free(kbest_t *B) {
    free(B->C); free(B->todo); free(B->dirty); free(B->hp.raw); free(B->last); free(B->stk);
    free(B->hir); free(B->horig);
    free(B->lhp); free(B->lsl); free(B->lhv); free(B->le3); free(B->leq); free(B->ler); free(B->lqof);
}

EXPORT run_t *selp_topk(int64_t F, int64_t I, const uint8_t *leaf, const double *leaf_w,
                        const int64_t *leaf_origin, const int32_t *inst_rule, const int64_t *inst_head,
                        const int64_t *child_ptr, const int64_t *child_fact, const double *rule_w,
                        const int64_t *rule_size, const int64_t *rule_hash, const uint8_t *rule_copy,
                        int combine, double sign, const int64_t *leaf_size, int origin_mode, int64_t k) {
    stop_flag = 0;
    run_t *run = calloc(1, sizeof(run_t));
    if (!run) return NULL;
    run->F = F; run->I = I; run->k = k;
    int64_t *IR = pack(run, leaf, inst_rule, inst_head, child_ptr, child_fact);
    run->IR = IR;
    kbest_t B;
    kbest_init(&B, k, run->M);
    int64_t si = run->si, fb = B.fb, se = B.se;
    run->sc = B.sc; run->se = se; run->fb = fb;
    const int64_t *nid = run->nid, *cptr = run->cptr;
    prm_t P = {rule_w, rule_size, rule_hash, rule_copy, combine, origin_mode, sign};
    int64_t *FB = aligned_alloc(64, ((size_t)F * fb + 8) * sizeof(int64_t));
    run->FB = FB;
    int64_t L = run->L, *LV = malloc(((size_t)L * 4 + 1) * sizeof(int64_t));
    B.L = L; B.LV = LV;
    if (!IR || !FB || !LV) goto fail;
    for (int64_t f = 0; f < F; f++) {
        double lw = leaf_w[f];
        int64_t ls = leaf_size ? leaf_size[f] : 0, x = nid[f];
        /* a leaf's block keeps its entry for selp_fill; the loop reads it from LV */
        fb_init(FB + x * fb, k, se, leaf[f], lw, ls, leaf_origin[f]);
        if (leaf[f]) { LV[4 * x] = as_i(lw); LV[4 * x + 1] = ls; LV[4 * x + 2] = leaf_origin[f]; LV[4 * x + 3] = 0; }
    }
    /* entry 1 of a component the recursive enumeration ranks: comp_top1 (see top1_t) */
    top1_t T = {0};
    if (kbest_rea && k > 1) {
        T.FR = malloc(((size_t)F * 8 + 1) * sizeof(int64_t));
        T.rem = malloc(((size_t)I + 1) * sizeof(int32_t));
        if (!T.FR || !T.rem) goto fail_t;
        top1_leaves(&T, L, LV);
        for (int64_t x = L; x < F; x++) fr_init(T.FR + 8 * x, 0, 0.0, 0, 0); /* no entry until published */
    }
    /* one component after another (see "Components"): the heap holds one component's candidates */
    for (int64_t comp = 0; comp < run->ncomp; comp++)
        if (comp_topk_t(IR, si, cptr[comp], cptr[comp + 1], FB + L * fb, &B, &P, T.FR ? &T : NULL)) goto fail_t;
    top1_free(&T);
    for (int64_t f = 0; f < F; f++) {
        int64_t *b = FB + f * fb;
        run->n_entries += FB_CNT(b);
        for (int32_t r = 0; r < FB_CNT(b); r++) {
            int64_t pos = FB_ENTRY(b, k, r)[3];
            if (pos >= 0) run->n_ranks += IR[pos * si + IR_M];
        }
    }
    kbest_free(&B);
    free(LV);
    return run;
fail_t:
    top1_free(&T);
fail:
    kbest_free(&B);
    free(LV);
    selp_free(run);
    return NULL;
}

/* ---- the result ---------------------------------------------------------------------------- */

EXPORT int64_t selp_n_entries(const run_t *r) { return r->n_entries; }
EXPORT int64_t selp_n_ranks(const run_t *r) { return r->n_ranks; }

/* Entries grouped by fact, best first, into the caller's arrays (see KernelResult): fact_ptr
 * [F+1], w/size/origin/inst [n_entries], crp [n_entries+1], cr [n_ranks]. inst is the input
 * instance id. (Reading in the kernel's order and writing in the input's, in two passes, was
 * measured slower for top-1.) Returns 0. */
EXPORT int selp_fill(const run_t *r, int64_t *fact_ptr, double *w, int64_t *size, int64_t *origin,
                     int64_t *inst, int64_t *crp, int32_t *cr) {
    int64_t k = r->k, si = r->si, se = r->se, p = 0;
    fact_ptr[0] = 0;
    crp[0] = 0;
    for (int64_t f = 0; f < r->F; f++) {
        int64_t g = r->nid[f];
        const int64_t *b = r->FB ? r->FB + g * r->fb : NULL;
        int32_t n = b ? FB_CNT(b) : r->cnt[g];
        for (int32_t t = 0; t < n; t++, p++) {
            const int64_t *e = b ? FB_ENTRY(b, k, t) : r->S + 4 * g;
            w[p] = as_f(e[0]);
            size[p] = e[1];
            origin[p] = e[2];
            int64_t pos = e[3];
            if (pos < 0) { inst[p] = -1; crp[p + 1] = crp[p]; continue; }
            const int64_t *d = r->IR + pos * si;
            int64_t m = d[IR_M];
            inst[p] = d[IR_ID];
            crp[p + 1] = crp[p] + m;
            if (b) {
                const int32_t *rk = (const int32_t *)(e + E_RANKS);
                for (int64_t j = 0; j < m; j++) cr[crp[p] + j] = rk[j];
            } else {
                for (int64_t j = 0; j < m; j++) cr[crp[p] + j] = 1;
            }
        }
        fact_ptr[f + 1] = p;
    }
    return 0;
}

/* The largest number of derivation trees of any fact, each count capped at `cap`, or -1 when
 * the instance graph has a cycle (some facts then have infinitely many trees). A leaf has one
 * tree, another fact the sum over its instances of the product of its children's counts; facts
 * are taken in Kahn's topological order. Twin: selp.topk.kernel.tree_count_bound. */
EXPORT int64_t selp_tree_count_bound(int64_t F, int64_t I, const uint8_t *leaf, const int64_t *inst_head,
                                     const int64_t *child_ptr, const int64_t *child_fact, int64_t cap) {
    int64_t *count = calloc((size_t)F + 1, sizeof(int64_t));
    int64_t *open = calloc((size_t)F + 1, sizeof(int64_t));     /* instances of f not counted */
    int64_t *waiting = malloc(((size_t)I + 1) * sizeof(int64_t)); /* children not final */
    int64_t *uptr = calloc((size_t)F + 2, sizeof(int64_t));
    int64_t *uses = malloc(((size_t)child_ptr[I] + 1) * sizeof(int64_t));
    int64_t *stack = malloc(((size_t)F + 1) * sizeof(int64_t));
    int64_t best = -2;
    if (!count || !open || !waiting || !uptr || !uses || !stack) goto done;
    for (int64_t i = 0; i < I; i++) {
        open[inst_head[i]]++;
        waiting[i] = child_ptr[i + 1] - child_ptr[i];
        for (int64_t t = child_ptr[i]; t < child_ptr[i + 1]; t++) uptr[child_fact[t] + 1]++;
    }
    for (int64_t f = 0; f < F; f++) uptr[f + 1] += uptr[f];
    for (int64_t i = 0; i < I; i++)
        for (int64_t t = child_ptr[i]; t < child_ptr[i + 1]; t++) uses[uptr[child_fact[t]]++] = i;
    for (int64_t f = F; f > 0; f--) uptr[f] = uptr[f - 1];
    uptr[0] = 0;
    int64_t ns = 0, final = 0;
    for (int64_t f = 0; f < F; f++) {
        if (leaf[f]) count[f] = 1;
        if (open[f] == 0) stack[ns++] = f;
    }
    /* instances without children count at once */
    for (int64_t i = 0; i < I; i++) {
        if (waiting[i] != 0) continue;
        int64_t h = inst_head[i];
        count[h] = count[h] + 1 < cap ? count[h] + 1 : cap;
        if (--open[h] == 0) stack[ns++] = h;
    }
    while (ns > 0) {
        int64_t f = stack[--ns];
        final++;
        for (int64_t u = uptr[f]; u < uptr[f + 1]; u++) {
            int64_t i = uses[u];
            if (--waiting[i] != 0) continue;
            int64_t n = 1;
            for (int64_t t = child_ptr[i]; t < child_ptr[i + 1]; t++) {
                n *= count[child_fact[t]];
                if (n > cap) n = cap;
            }
            int64_t h = inst_head[i];
            count[h] = count[h] + n < cap ? count[h] + n : cap;
            if (--open[h] == 0) stack[ns++] = h;
        }
    }
    if (final < F) { best = -1; goto done; }
    best = F ? 0 : 1;
    for (int64_t f = 0; f < F; f++) if (count[f] > best) best = count[f];
done:
    free(count); free(open); free(waiting); free(uptr); free(uses); free(stack);
    return best; /* -2: out of memory */
}

/* The layout of run_t and the calling conventions, checked by selp.topk.kernel before use: an
 * editable install whose extension was built from an older _kernel.c is then not called (the
 * pure-Python twin runs, and says so). 2: selp_fill returns int; entries hold their ranks.
 * 3: leaf sizes and origin modes (selp_top1/selp_topk take leaf_size and origin_mode).
 * 4: rule instances formed here (selp_head, selp_join and their helpers).
 * 5: instances formed and ranked component by component (selp_join_prepare, selp_static).
 * 6: selp_static's result in kernel order, its buffers handed over (selp_static_arrays).
 * 7: selp_static takes a number of threads; the top-k loop reads leaves from a compact array.
 * 8: selp_static's result has no inst array (p[4] NULL) and int32 child ids; two workers write
 *    it from both ends.
 * 9: selp_static's result has no origins and no child slot pointers (p[3], p[5] NULL:
 *    selp_entry_origins); its sizes are int32, its rules and ranks uint8 (*err 3: a size or
 *    rule did not fit; k > 255 is refused).
 * 10: the packed DTable's child slots written here (selp_pack_slots, selp_pack_static_slots).
 * 11: k > 1 by recursive enumeration where the ranking is monotone (selp_kbest_rea); entries'
 *     weights and sizes recomputed (selp_entry_values).
 * 12: value classes for the static path's groups (selp_value_classes). */
EXPORT int64_t selp_abi(void) { return 13; }

/* The classes of V values linked by P pairs (a[i], b[i]): root[v] becomes the smallest value of
 * v's class (union-find, the smaller root kept, path halving). The static path groups a
 * component's facts by the class of their values when the decomposition is by value components
 * (selp.topk.decomposed.value_classes). */
EXPORT void selp_value_classes(int64_t V, int64_t P, const int64_t *a, const int64_t *b, int64_t *root) {
    for (int64_t v = 0; v < V; v++) root[v] = v;
    for (int64_t i = 0; i < P; i++) {
        int64_t x = uf_find(root, a[i]), y = uf_find(root, b[i]);
        if (x < y) root[y] = x;
        else if (y < x) root[x] = y;
    }
    for (int64_t v = 0; v < V; v++) root[v] = root[root[v]]; /* roots come first: one pass settles each */
}

/* The origin hash of a rule step in either mode (0: mix64, 1: Spark's xxhash64 chain). */
EXPORT int64_t selp_origin_of_mode(int64_t rule_hash, const int64_t *child_origins, int64_t n, int mode) {
    uint64_t h = (uint64_t)rule_hash;
    for (int64_t t = 0; t < n; t++) h = origin_step(mode, h, child_origins[t]);
    return origin_end(mode, h, n);
}

/* The origin hash of a rule step (for the tests: the kernels use the same two helpers). */
EXPORT int64_t selp_origin_of(int64_t rule_hash, const int64_t *child_origins, int64_t n) {
    return selp_origin_of_mode(rule_hash, child_origins, n, 0);
}

/* ---- rule instances formed here: hash indexes and nested index joins -------------------- */

/* Instead of a DuckDB join whose 2.6M result rows are then fetched, selp.topk.joins ships each
 * body relation's facts as integer-coded columns (fact ids, values dictionary-encoded) with a
 * join plan, and the instances are enumerated here: atom after atom in body order, each later
 * atom read through a hash index on its columns bound by earlier atoms, the head's fact id
 * looked up in an index on the head's first column. Constants and an atom's
 * repeated variables are filtered before (in SQL). Memory latency is again what costs: an
 * index holds its rows' columns and ids inline, grouped by bucket (a probe reads one bucket
 * start and then consecutive memory); the head lookup binary-searches the bucket of its first
 * column, sorted by all columns, which consecutive instances of one body row mostly share
 * (transitive closure: the heads path(x, *) for one x stay in cache). */

typedef struct {
    int64_t nb, nk, nc;  /* buckets (a power of two), key columns, columns */
    int64_t *bstart;     /* bucket b's entries: bstart[b]..bstart[b+1]-1 */
    int64_t *ent;        /* entries of nc + 1 int64: the columns (keys first), then the fact id */
} index_t;

static inline uint64_t key_hash(const int64_t *vals, int64_t nk) {
    uint64_t h = G64;
    for (int64_t c = 0; c < nk; c++) h = mix64(h * G64 + (uint64_t)vals[c]);
    return h;
}

static void index_free(index_t *x) {
    if (!x) return;
    free(x->bstart); free(x->ent); free(x);
}

/* An index over `rows` rows of nc columns cols[c][row] (the first nk are the key) and their fact
 * ids; NULL when out of memory. Entries of a bucket keep the rows' order. */
static index_t *index_new(int64_t rows, int64_t nk, int64_t nc, const int64_t *const *cols, const int64_t *ids) {
    index_t *x = calloc(1, sizeof(index_t));
    if (!x) return NULL;
    int64_t nb = 1;
    while (nb < rows) nb <<= 1;
    x->nb = nb; x->nk = nk; x->nc = nc;
    x->bstart = calloc((size_t)nb + 1, sizeof(int64_t));
    x->ent = malloc(((size_t)rows * (nc + 1) + 1) * sizeof(int64_t));
    int64_t *hb = malloc(((size_t)rows + 1) * sizeof(int64_t));
    if (!x->bstart || !x->ent || !hb) { free(hb); index_free(x); return NULL; }
    int64_t vals[16];
    for (int64_t r = 0; r < rows; r++) {
        for (int64_t c = 0; c < nk; c++) vals[c] = cols[c][r];
        hb[r] = (int64_t)(key_hash(vals, nk) & (uint64_t)(nb - 1));
        x->bstart[hb[r] + 1]++;
    }
    for (int64_t b = 0; b < nb; b++) x->bstart[b + 1] += x->bstart[b];
    /* a stable counting sort, filled from the back: bstart[b+1] ends as bucket b's start */
    for (int64_t r = rows - 1; r >= 0; r--) {
        int64_t *e = x->ent + (--x->bstart[hb[r] + 1]) * (nc + 1);
        for (int64_t c = 0; c < nc; c++) e[c] = cols[c][r];
        e[nc] = ids[r];
    }
    for (int64_t b = 0; b < nb; b++) x->bstart[b] = x->bstart[b + 1];
    x->bstart[nb] = rows;
    free(hb);
    return x;
}

/* The head relation: an index on column 0 (all columns and the fact id inline), each bucket's
 * entries sorted by all columns, so that a lookup binary-searches one bucket. */
typedef index_t head_t;

EXPORT void selp_head_free(head_t *x) { index_free(x); }

static inline int ent_cmp(const int64_t *a, const int64_t *b, int64_t nc) {
    for (int64_t c = 0; c < nc; c++) if (a[c] != b[c]) return a[c] < b[c] ? -1 : 1;
    return 0;
}

/* entries e[0..n) of w int64 each, sorted by their first nc int64 (quicksort, insertion sort
 * below 16 entries; tmp holds one entry) */
static void ent_sort(int64_t *e, int64_t n, int64_t w, int64_t nc, int64_t *tmp) {
    while (n > 16) {
        int64_t *pv = tmp + w, *m = e + (n / 2) * w;
        memcpy(pv, m, (size_t)w * sizeof(int64_t));
        int64_t i = 0, j = n - 1;
        for (;;) {
            while (ent_cmp(e + i * w, pv, nc) < 0) i++;
            while (ent_cmp(e + j * w, pv, nc) > 0) j--;
            if (i >= j) break;
            memcpy(tmp, e + i * w, (size_t)w * sizeof(int64_t));
            memcpy(e + i * w, e + j * w, (size_t)w * sizeof(int64_t));
            memcpy(e + j * w, tmp, (size_t)w * sizeof(int64_t));
            i++; j--;
        }
        /* [0, j] <= pivot <= [j+1, n): recurse on the smaller part */
        if (j + 1 < n - j - 1) { ent_sort(e, j + 1, w, nc, tmp); e += (j + 1) * w; n -= j + 1; }
        else { ent_sort(e + (j + 1) * w, n - j - 1, w, nc, tmp); n = j + 1; }
    }
    for (int64_t i = 1; i < n; i++) {
        memcpy(tmp, e + i * w, (size_t)w * sizeof(int64_t));
        int64_t j = i - 1;
        while (j >= 0 && ent_cmp(e + j * w, tmp, nc) > 0) { memcpy(e + (j + 1) * w, e + j * w, (size_t)w * sizeof(int64_t)); j--; }
        memcpy(e + (j + 1) * w, tmp, (size_t)w * sizeof(int64_t));
    }
}

/* The head index over n facts of hk columns cols[c][row] with these fact ids; NULL when out of
 * memory. */
EXPORT head_t *selp_head(int64_t n, int64_t hk, const int64_t *const *cols, const int64_t *ids) {
    head_t *x = index_new(n, hk ? 1 : 0, hk, cols, ids);
    int64_t *tmp = malloc(2 * ((size_t)hk + 1) * sizeof(int64_t));
    if (!x || !tmp) { free(tmp); index_free(x); return NULL; }
    for (int64_t b = 0; b < x->nb; b++)
        ent_sort(x->ent + x->bstart[b] * (hk + 1), x->bstart[b + 1] - x->bstart[b], hk + 1, hk, tmp);
    free(tmp);
    return x;
}

/* The fact id of the head with these codes, -1 when there is none. */
static inline int64_t head_find(const head_t *x, const int64_t *key) {
    int64_t hk = x->nc, w = hk + 1;
    uint64_t b = key_hash(key, hk ? 1 : 0) & (uint64_t)(x->nb - 1);
    int64_t lo = x->bstart[b], hi = x->bstart[b + 1];
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (ent_cmp(x->ent + mid * w, key, hk) < 0) lo = mid + 1; else hi = mid;
    }
    if (lo == x->bstart[b + 1] || ent_cmp(x->ent + lo * w, key, hk) != 0) return -1;
    return x->ent[lo * w + hk];
}

/* A join plan (see selp.topk.joins): per body atom a (in body order) its rows, fact ids and
 * ncol[a] columns of codes, each binding variable slot[.] (its first occurrence) or, when
 * bound[.], keyed on that slot (bound by an earlier atom); child[a]: whether the atom is a
 * child of the instances (a filter atom -- demand -- joins but is no child). The head: its
 * index and per head column a slot (>= 0) or a constant code (hslot -1, hconst). */
typedef struct {
    int64_t na, hk, m;
    const int64_t *rows, *ncol, *slot, *coff; const uint8_t *bound, *child;
    const int64_t *const *ids; const int64_t *const *cols; /* cols[coff[a] + c] */
    index_t **idx;            /* per atom: an index on its bound columns (NULL: scan) */
    int64_t **free_of;        /* per atom with an index: its free columns' slots, in entry order */
    const head_t *head; const int64_t *hslot, *hconst;
    int64_t vals[64], fid[16];
    int64_t *out, n, cap;     /* instances: head id then the children's ids, m + 1 int64 each */
    int err;
    /* prepared for selp_static (selp_join_prepare): atom 0 is the driver, set by the caller;
     * an instance goes to grp's records, each atom a child at body position cpos[a] */
    struct grp *grp; const int64_t *cpos; int64_t rule;
} join_t;

static void grp_emit(join_t *j);

static void join_emit(join_t *j) {
    if (j->grp) { grp_emit(j); return; }
    int64_t key[16];
    for (int64_t c = 0; c < j->hk; c++) key[c] = j->hslot[c] >= 0 ? j->vals[j->hslot[c]] : j->hconst[c];
    int64_t h = head_find(j->head, key);
    if (h < 0) { j->err = 2; return; } /* the head is not a fact: the plan or the facts are wrong */
    if (j->n == j->cap) {
        int64_t cap = 2 * j->cap + 4096;
        int64_t *b = realloc(j->out, (size_t)cap * (j->m + 1) * sizeof(int64_t));
        if (!b) { j->err = 1; return; }
        j->out = b; j->cap = cap;
    }
    int64_t *d = j->out + j->n * (j->m + 1);
    d[0] = h;
    int64_t t = 1;
    for (int64_t a = 0; a < j->na; a++) if (j->child[a]) d[t++] = j->fid[a];
    j->n++;
}

static void join_rec(join_t *j, int64_t a) {
    if (j->err) return;
    if (a == j->na) { join_emit(j); return; }
    int64_t nc = j->ncol[a];
    index_t *x = j->idx[a];
    if (!x) {
        const int64_t *slot = j->slot + j->coff[a];
        const int64_t *const *cols = j->cols + j->coff[a];
        const int64_t *ids = j->ids[a];
        for (int64_t r = 0; r < j->rows[a] && !j->err; r++) {
            if (a == 0 && (r & 1023) == 0 && stop_flag) { j->err = 3; return; }
            for (int64_t c = 0; c < nc; c++) j->vals[slot[c]] = cols[c][r];
            j->fid[a] = ids[r];
            join_rec(j, a + 1);
        }
        return;
    }
    const int64_t *slot = j->slot + j->coff[a];
    const uint8_t *bound = j->bound + j->coff[a];
    int64_t key[16], nk = x->nk, w = nc + 1;
    for (int64_t c = 0, t = 0; c < nc; c++) if (bound[c]) key[t++] = j->vals[slot[c]];
    uint64_t b = key_hash(key, nk) & (uint64_t)(x->nb - 1);
    const int64_t *fs = j->free_of[a];
    for (int64_t p = x->bstart[b]; p < x->bstart[b + 1] && !j->err; p++) {
        const int64_t *e = x->ent + p * w;
        int64_t c = 0;
        for (; c < nk; c++) if (e[c] != key[c]) break;
        if (c < nk) continue;
        for (c = nk; c < nc; c++) j->vals[fs[c - nk]] = e[c];
        j->fid[a] = e[nc];
        join_rec(j, a + 1);
    }
}

/* A join over `na` atoms with indexes on every later atom's bound columns (see selp_join);
 * NULL when out of memory, err 1 when an index could not be built. */
static join_t *join_new(int64_t na, const int64_t *rows, const int64_t *const *ids,
                        const int64_t *ncol, const int64_t *const *cols, const int64_t *slot,
                        const uint8_t *bound, const uint8_t *child, const head_t *head, int64_t hk,
                        const int64_t *hslot, const int64_t *hconst) {
    join_t *j = calloc(1, sizeof(join_t));
    if (!j) return NULL;
    int64_t *coff = calloc((size_t)na + 1, sizeof(int64_t));
    j->idx = calloc((size_t)na + 1, sizeof(index_t *));
    j->free_of = calloc((size_t)na + 1, sizeof(int64_t *));
    j->na = na; j->rows = rows; j->ids = ids; j->ncol = ncol; j->cols = cols;
    j->slot = slot; j->coff = coff; j->bound = bound; j->child = child; j->head = head; j->hk = hk;
    j->hslot = hslot; j->hconst = hconst;
    if (!coff || !j->idx || !j->free_of) { j->err = 1; return j; }
    for (int64_t a = 0; a < na; a++) coff[a + 1] = coff[a] + ncol[a];
    for (int64_t a = 0; a < na; a++) if (child[a]) j->m++;
    for (int64_t a = 0; a < na; a++) {
        const int64_t *cc[16];
        int64_t nk = 0, nf = 0, *fs = malloc(((size_t)ncol[a] + 1) * sizeof(int64_t));
        if (!fs) { j->err = 1; return j; }
        j->free_of[a] = fs;
        for (int64_t c = 0; c < ncol[a]; c++) if (bound[coff[a] + c]) cc[nk++] = cols[coff[a] + c];
        if (nk == 0) continue;
        for (int64_t c = 0; c < ncol[a]; c++)
            if (!bound[coff[a] + c]) { cc[nk + nf] = cols[coff[a] + c]; fs[nf++] = slot[coff[a] + c]; }
        j->idx[a] = index_new(rows[a], nk, ncol[a], cc, ids[a]);
        if (!j->idx[a]) { j->err = 1; return j; }
    }
    return j;
}

/* the indexes and plan copies of a join (its instances stay) */
static void join_drop(join_t *j) {
    for (int64_t a = 0; a < j->na; a++) {
        if (j->idx) index_free(j->idx[a]);
        if (j->free_of) free(j->free_of[a]);
    }
    free(j->idx); j->idx = NULL;
    free(j->free_of); j->free_of = NULL;
    free((int64_t *)j->coff); j->coff = NULL;
}

/* The instances of one rule: returns a handle (NULL when out of memory) whose selp_join_count
 * instances selp_join_fill copies out; selp_join_error: 0; 1 out of memory; 2 an instance's
 * head is not among the head's facts; 3 stopped (selp_stop). Later atoms with bound columns get
 * an index here. At most 16 atoms and head columns, 64 variable slots (the caller checks). */
EXPORT join_t *selp_join(int64_t na, const int64_t *rows, const int64_t *const *ids,
                         const int64_t *ncol, const int64_t *const *cols, const int64_t *slot,
                         const uint8_t *bound, const uint8_t *child, const head_t *head, int64_t hk,
                         const int64_t *hslot, const int64_t *hconst) {
    stop_flag = 0;
    join_t *j = join_new(na, rows, ids, ncol, cols, slot, bound, child, head, hk, hslot, hconst);
    if (!j) return NULL;
    if (!j->err) join_rec(j, 0);
    join_drop(j);
    return j;
}

/* A join kept for selp_static: atom 0 is the driver (the recursive atom, its columns cols[0..]
 * read at the driver fact's row of the component relation, ids unused), the other atoms indexed
 * as in selp_join with kernel fact ids; child atom a is child cpos[a] of the instance (body
 * order), the instances are of rule `rule`. Freed by selp_join_free; selp_join_error says
 * whether it was built (1: out of memory). */
EXPORT join_t *selp_join_prepare(int64_t na, const int64_t *rows, const int64_t *const *ids,
                                 const int64_t *ncol, const int64_t *const *cols, const int64_t *slot,
                                 const uint8_t *bound, const uint8_t *child, int64_t hk,
                                 const int64_t *hslot, const int64_t *hconst, const int64_t *cpos, int64_t rule) {
    join_t *j = join_new(na, rows, ids, ncol, cols, slot, bound, child, NULL, hk, hslot, hconst);
    if (!j) return NULL;
    j->cpos = cpos; j->rule = rule;
    return j;
}

EXPORT int64_t selp_join_count(const join_t *j) { return j->n; }
EXPORT int selp_join_error(const join_t *j) { return j->err; }

/* heads[n], kids[n * m] (row-major: an instance's children in body order) */
EXPORT void selp_join_fill(const join_t *j, int64_t *heads, int64_t *kids) {
    int64_t m = j->m;
    for (int64_t i = 0; i < j->n; i++) {
        const int64_t *d = j->out + i * (m + 1);
        heads[i] = d[0];
        for (int64_t t = 0; t < m; t++) kids[i * m + t] = d[1 + t];
    }
}

EXPORT void selp_join_free(join_t *j) {
    if (!j) return;
    join_drop(j);
    free(j->out); free(j);
}

/* ---- the static path: instances formed and ranked component by component ----------------- */

/* When the recursion is decomposable on a key position (selp.engines.decompose: right-recursive
 * transitive closure passes z, so path(*, z) is one component), the components are known before
 * any instance exists. selp.topk.embedded then numbers the facts: the leaves 0..L-1, then the
 * component relation's facts grouped by their key (a group's in input order), and calls
 * selp_static, which for each group forms its instances -- the exit rules' (formed before by
 * selp_join, handed over grouped), then for each of the group's facts in order and each
 * recursive rule in program order, the rule's other atoms joined with it (selp_join_prepare),
 * the head found in a hash table of the group's facts -- into one reused buffer, in exactly
 * the order the global kernel sorts them (no non-leaf child first, then by the last non-leaf
 * child, then rule and join order), runs comp_top1/comp_topk on it with the group's facts
 * numbered locally after the leaves (their records in cache), and appends the group's entries
 * to the result. No global instance array, union-find or sort. An instance id in the result
 * is then the entry's own index (the entry holds its rule and children). */

typedef struct grp {
    int64_t *tab; uint64_t mask;            /* local fact ids (L + i), -1 empty: open addressing */
    const int64_t *const *cols; int64_t hk; /* the component relation's columns, by kernel id - L */
    int64_t L, off;                         /* local id L + i is the group's fact off + i (from L) */
    int64_t *IR, n, cap, si;                /* the group's instance records */
    int err;
} grp_t;

/* The result of selp_static, written as it is found: the entries in kernel order (the leaves,
 * then each group's facts in turn), each array appended to sequentially and handed to numpy
 * without a copy (selp_static_arrays). Python maps an input fact id to its row (kernel id)
 * through nid; the entries of row x are fp[x]..fp[x+1]-1. */
typedef struct acc {
    int64_t L, F;
    int64_t *fp;                            /* F + 1: each row's first entry */
    /* per entry (no child slot pointers, no origins: see selp_static_arrays); size as int32 (a
     * larger one sets `over`, and the caller takes the global path), rule as uint8 */
    double *w; int32_t *size; uint8_t *rule;
    int64_t n, cap;
    int32_t *kid;                           /* per child slot: input fact id (F < 2^31: see selp_static) */
    uint8_t *cr;                            /* per child slot: its rank (k <= 255: see selp_static) */
    int over;                               /* a tree size above INT32_MAX, or a rule above 255, was met */
    int64_t nr, rcap;
    int64_t *inv;                           /* kernel id -> input id (during the run) */
    int64_t bound;                          /* top-k: the most trees of any fact (capped at k), -1 cyclic */
    int top;                                /* writes each group below the last, from te/tr down (see selp_static) */
    int64_t te, tr;
    int mapped;                             /* the per-entry and per-slot arrays are big_alloc mappings */
} acc_t;

/* ---- two workers' entries in one reservation ---------------------------------------------
 * A block mapped for its bound (MAP_NORESERVE: address space only; a page costs memory once
 * written), its length in a header. Two workers then write one result: the first from the
 * bottom up, the second each of its groups below the last from the top down, and the gap
 * between them is closed by one move of the second's part (see selp_static). Without mmap, or
 * when the reservation is refused, the second worker writes buffers of its own that are copied
 * (merge). */
#define BIG_HEAD 64
static void *big_alloc(int64_t n, size_t size) {
#if defined(MAP_ANONYMOUS) && defined(MREMAP_MAYMOVE) && defined(MAP_NORESERVE)
    size_t len = (BIG_HEAD + (size_t)n * size + size + 4095) & ~(size_t)4095;
    char *b = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (b == MAP_FAILED) return NULL;
    *(size_t *)b = len;
    return b + BIG_HEAD;
#else
    (void)n; (void)size;
    return NULL;
#endif
}

/* the block cut to n items: the tail's pages given back (a failure keeps it whole) */
static void big_cut(void *p, int64_t n, size_t size) {
#if defined(MAP_ANONYMOUS) && defined(MREMAP_MAYMOVE) && defined(MAP_NORESERVE)
    char *b = (char *)p - BIG_HEAD;
    size_t was = *(size_t *)b, len = (BIG_HEAD + (size_t)n * size + size + 4095) & ~(size_t)4095;
    if (len < was && munmap(b + len, was - len) == 0) *(size_t *)b = len;
#else
    (void)p; (void)n; (void)size;
#endif
}

static void big_free(void *p) {
#if defined(MAP_ANONYMOUS) && defined(MREMAP_MAYMOVE) && defined(MAP_NORESERVE)
    if (p) munmap((char *)p - BIG_HEAD, *(size_t *)((char *)p - BIG_HEAD));
#else
    (void)p;
#endif
}

/* the result's arrays reserved for at most ne entries and nr child slots (-1: not reserved) */
static int acc_reserve(acc_t *a, int64_t ne, int64_t nr) {
    if (ne <= 0 || ne > ((int64_t)1 << 40) || nr > ((int64_t)1 << 40)) return -1;
    a->w = big_alloc(ne, 8); a->size = big_alloc(ne, 4);
    a->rule = big_alloc(ne, 1); a->kid = big_alloc(nr, 4); a->cr = big_alloc(nr, 1);
    if (!a->w || !a->size || !a->rule || !a->kid || !a->cr) {
        big_free(a->w); big_free(a->size); big_free(a->rule);
        big_free(a->kid); big_free(a->cr);
        a->w = NULL; a->size = a->kid = NULL; a->rule = a->cr = NULL;
        return -1;
    }
    a->mapped = 1; a->cap = ne; a->rcap = nr;
    return 0;
}

/* a worker's acc without what it shares with the result (inv; A's arrays when it wrote them) */
static void acc_unalias(acc_t *a) {
    a->inv = NULL;
    if (a->top) { a->w = NULL; a->size = a->kid = NULL; a->rule = a->cr = NULL; }
}

static void acc_free(acc_t *a) {
    if (!a) return;
    if (a->mapped) {
        big_free(a->w); big_free(a->size); big_free(a->rule);
        big_free(a->kid); big_free(a->cr);
    } else {
        free(a->w); free(a->size); free(a->rule); free(a->kid); free(a->cr);
    }
    free(a->fp); free(a->inv); free(a);
}

static int grow(void **p, int64_t n, size_t size) {
    void *q = realloc(*p, (size_t)n * size + size);
    if (!q) return -1;
    *p = q;
    return 0;
}

/* room for `more` entries and `slots` child slots; realloc of large blocks remaps pages, so
 * growing by doubling copies nothing and touches no page not written later */
static int acc_room(acc_t *a, int64_t more, int64_t slots) {
    if (a->top) return 0; /* its groups' places are counted exactly below the last (see work) */
    if (a->mapped) return a->n + more > a->cap || a->nr + slots > a->rcap ? -1 : 0; /* reserved for the bound */
    if (a->n + more > a->cap) {
        int64_t cap = 2 * a->cap + more + 4096;
        if (grow((void **)&a->w, cap, 8) || grow((void **)&a->size, cap, 4) || grow((void **)&a->rule, cap, 1))
            return -1;
        a->cap = cap;
    }
    if (a->nr + slots > a->rcap) {
        int64_t cap = 2 * a->rcap + slots + 4096;
        if (grow((void **)&a->kid, cap, 4) || grow((void **)&a->cr, cap, 1)) return -1;
        a->rcap = cap;
    }
    return 0;
}

/* append one entry of a non-leaf fact (room made by acc_room): m children (local ids: leaves
 * below L, the group's facts from L on, which are kernel ids off later) with these ranks (NULL:
 * all 1); the entry is its own instance */
static inline void acc_add(acc_t *a, double w, int64_t s, int32_t rule, int64_t m, const int64_t *kids,
                           const int32_t *ranks, int64_t L, int64_t off) {
    int64_t e = a->n++, t = a->nr;
    if (__builtin_expect((uint64_t)s > INT32_MAX || (uint32_t)rule > 255, 0)) a->over = 1;
    a->w[e] = w; a->size[e] = (int32_t)s; a->rule[e] = (uint8_t)rule;
    for (int64_t j = 0; j < m; j++, t++) {
        a->kid[t] = (int32_t)a->inv[kids[j] >= L ? kids[j] + off : kids[j]];
        a->cr[t] = ranks ? (uint8_t)ranks[j] : 1;
    }
    a->nr = t;
}

/* The derivation trees of a group's facts counted (capped at cap) in Kahn's order over its
 * instances, as selp_tree_count_bound does over all of them: the largest count, or -1 when the
 * group's instances have a cycle. rem/uptr/uses as uses_of left them (rem is consumed);
 * cnt, open: nf slots; stack: nf + n slots. */
static int64_t grp_count(const int64_t *IR, int64_t si, int64_t n, int64_t L, int64_t nf, int64_t cap,
                         int32_t *rem, const int64_t *uptr, const int64_t *uses, int64_t *cnt, int64_t *open,
                         int64_t *stack) {
    memset(cnt, 0, (size_t)nf * sizeof(int64_t));
    memset(open, 0, (size_t)nf * sizeof(int64_t));
    for (int64_t p = 0; p < n; p++) open[IR[p * si + IR_HEAD] - L]++;
    int64_t ns = 0, final = 0, best = 0;
    for (int64_t p = 0; p < n; p++) if (rem[p] == 0) stack[ns++] = ~p; /* ~p: an instance */
    for (int64_t f = 0; f < nf; f++) if (open[f] == 0) stack[ns++] = f;
    while (ns > 0) {
        int64_t x = stack[--ns];
        if (x < 0) {
            const int64_t *d = IR + (~x) * si;
            int64_t c = 1;
            for (int64_t j = 0; j < d[IR_M]; j++) {
                int64_t kid = d[IR_KIDS + j];
                c *= kid >= L ? cnt[kid - L] : 1;
                if (c > cap) c = cap;
            }
            int64_t h = d[IR_HEAD] - L;
            cnt[h] = cnt[h] + c < cap ? cnt[h] + c : cap;
            if (--open[h] == 0) stack[ns++] = h;
            continue;
        }
        final++;
        if (cnt[x] > best) best = cnt[x];
        for (int64_t u = uptr[x]; u < uptr[x + 1]; u++) {
            int64_t q = uses[u] < 0 ? ~uses[u] : uses[u];
            if (--rem[q] == 0) stack[ns++] = ~q;
        }
    }
    return final < nf ? -1 : best;
}

static inline int64_t grp_find(const grp_t *g, const int64_t *key) {
    uint64_t b = key_hash(key, g->hk) & g->mask;
    for (;;) {
        int64_t x = g->tab[b];
        if (x < 0) return -1;
        int64_t r = g->off + x - g->L, c = 0;
        for (; c < g->hk; c++) if (g->cols[c][r] != key[c]) break;
        if (c == g->hk) return x;
        b = (b + 1) & g->mask;
    }
}

static void grp_emit(join_t *j) {
    grp_t *g = j->grp;
    int64_t key[16];
    for (int64_t c = 0; c < j->hk; c++) key[c] = j->hslot[c] >= 0 ? j->vals[j->hslot[c]] : j->hconst[c];
    int64_t h = grp_find(g, key);
    if (h < 0) { j->err = 2; return; } /* the head is not a fact of the group: plan or facts wrong */
    if (g->n == g->cap) {
        int64_t cap = 2 * g->cap + 1024;
        if (grow((void **)&g->IR, cap * g->si, 8)) { j->err = 1; return; }
        g->cap = cap;
    }
    int64_t *d = g->IR + g->n * g->si;
    d[IR_HEAD] = h; d[IR_RULE] = j->rule; d[IR_M] = j->m; d[IR_ID] = g->n;
    for (int64_t a = 0; a < j->na; a++) if (j->child[a]) d[IR_KIDS + j->cpos[a]] = j->fid[a];
    g->n++;
}

/* A group's uses lists (uses_of) in buffers reused from group to group. */
typedef struct {
    int32_t *rem; int64_t *todo, icap; int64_t *uptr, *fill, fcap; int64_t *uses;
} uses_t;

/* uses_of over the group's nf facts and G->n instances, the buffers grown as needed; -1 when
 * out of memory */
static int grp_uses(const grp_t *G, int64_t L, int64_t nf, uses_t *U) {
    int64_t n = G->n, si = G->si, links = 0;
    for (int64_t p = 0; p < n; p++) links += G->IR[p * si + IR_M];
    if (n + 1 > U->icap) {
        U->icap = 2 * n + 1;
        if (grow((void **)&U->rem, U->icap, 4) || grow((void **)&U->todo, U->icap, 8)) return -1;
    }
    if (nf + 2 > U->fcap) {
        U->fcap = 2 * nf + 2;
        if (grow((void **)&U->uptr, U->fcap, 8) || grow((void **)&U->fill, U->fcap, 8)) return -1;
    }
    if (grow((void **)&U->uses, links, 8)) return -1;
    uses_of(G->IR, si, 0, n, L, L, nf, U->rem, U->uptr, U->uses, U->fill);
    return 0;
}

/* What selp_static shares between its workers (read-only during the run, but the claims). */
typedef struct {
    int64_t F, L, ng, hk, nj, M, k, si, big, rec;
    const int64_t *gptr, *eptr, *ehead, *ecptr, *ekids; const int32_t *erule;
    const int64_t *const *gcols; join_t *const *joins; const uint8_t *const *masks;
    const int64_t *LV;        /* top-k: the leaves' entries (weight, size, origin, -) */
    const int64_t *LR;        /* top-1: the leaves' records (8 int64 each) */
    prm_t P;
    int64_t *fp;              /* per row (kernel id) its first entry, in its worker's acc until merged */
    int64_t *own, *ge0, *gr0; /* per group: its worker, its first entry and child slot there */
    int64_t *ge1, *gr1;       /* per group: the end of its entries and child slots there */
    pthread_mutex_t mu;
    int64_t front, back;      /* worker 0 claims groups from the front, the others from the back */
    volatile int abort;       /* a worker failed: the others stop */
} shared_t;

/* One worker's state: its buffers (reused from group to group) and its share of the result. */
typedef struct {
    shared_t *S;
    int64_t id;
    int64_t first;            /* a group claimed for it before the threads start (-1 none) */
    acc_t *A;
    int err;                  /* 0, 1 out of memory or stopped, 2 a head not among the group's facts */
} worker_t;

/* the next group for worker `id`, -1 when none is left */
static int64_t claim(shared_t *S, int64_t id) {
    int64_t g = -1;
    pthread_mutex_lock(&S->mu);
    if (S->front < S->back && !S->abort) g = id == 0 ? S->front++ : --S->back;
    pthread_mutex_unlock(&S->mu);
    return g;
}

/* The groups a worker claims, one at a time: form the instances, rank them, append the entries
 * to the worker's acc (see selp_static). */
static void *work(void *arg) {
    worker_t *W = arg;
    shared_t *S = W->S;
    acc_t *A = W->A;
    int64_t L = S->L, k = S->k, M = S->M, si = S->si, hk = S->hk, nj = S->nj, rec = S->rec;
    const prm_t *P = &S->P;
    kbest_t B;
    kbest_init(&B, k, M);
    B.L = L; B.LV = S->LV;
    /* top-1: the leaves' records then one group's; top-k: one group's blocks (L + i at ST + i * rec) */
    int64_t *ST = aligned_alloc(64, (((size_t)(k == 1 ? L + S->big : S->big) * rec + 1) * sizeof(int64_t) + 63) & ~(size_t)63); /* blocks on cache lines */
    join_t *J = malloc(((size_t)nj + 1) * sizeof(join_t)); /* the joins, each with its own bindings */
    grp_t G = {0};
    G.si = si; G.cols = S->gcols; G.hk = hk; G.L = L;
    int64_t tcap = 0;
    uses_t U = {0};
    int64_t *cnt = NULL, *stack = NULL;
    heap_t hp = {NULL, 0, 0};
    /* k > 1 by recursive enumeration: entry 1 by comp_top1 over compact records (see top1_t),
     * not by the global loop over the group's k-entry blocks (TC at 1M: 40,000-fact groups) */
    top1_t T1 = {0};
    int64_t trem = 0;
    int use_t = k > 1 && kbest_rea;
    W->err = 1;
    if (!ST || !J) goto done;
    if (k == 1) memcpy(ST, S->LR, (size_t)L * 8 * sizeof(int64_t));
    if (use_t) {
        T1.FR = malloc(((size_t)(L + S->big) * 8 + 1) * sizeof(int64_t));
        if (!T1.FR) goto done;
        top1_leaves(&T1, L, S->LV);
    }
    for (int64_t j = 0; j < nj; j++) { J[j] = *S->joins[j]; J[j].grp = &G; J[j].err = 0; }
    for (int64_t g; (g = W->first >= 0 ? W->first : claim(S, W->id)) >= 0;) {
        W->first = -1;
        int64_t off = S->gptr[g], nf = S->gptr[g + 1] - off;
        G.off = off; G.n = 0;
        S->own[g] = W->id;
        /* the group's facts: fresh records after the leaves (k > 1: blocks once the linear
         * enumeration, which needs none, declined), a hash table by their columns */
        if (k == 1)
            for (int64_t i = 0; i < nf; i++) fr_init(ST + 8 * (L + i), 0, 0.0, 0, 0);
        int64_t T = 16;
        while (T < 2 * nf) T <<= 1;
        if (T > tcap) {
            if (grow((void **)&G.tab, T, 8)) goto done;
            tcap = T;
        }
        memset(G.tab, 0xff, (size_t)T * sizeof(int64_t));
        G.mask = (uint64_t)(T - 1);
        for (int64_t i = 0; i < nf; i++) {
            int64_t key[16];
            for (int64_t c = 0; c < hk; c++) key[c] = S->gcols[c][off + i];
            uint64_t b = key_hash(key, hk) & G.mask;
            while (G.tab[b] >= 0) b = (b + 1) & G.mask;
            G.tab[b] = L + i;
        }
        /* its instances: the exit rules' first, then by driver fact, rule and join order */
        for (int64_t i = S->eptr[g]; i < S->eptr[g + 1]; i++) {
            if (G.n == G.cap) {
                int64_t cap = 2 * G.cap + 1024;
                if (grow((void **)&G.IR, cap * si, 8)) goto done;
                G.cap = cap;
            }
            int64_t *d = G.IR + G.n * si, m = S->ecptr[i + 1] - S->ecptr[i];
            d[IR_HEAD] = S->ehead[i] - off; d[IR_RULE] = S->erule[i]; d[IR_M] = m; d[IR_ID] = G.n;
            for (int64_t j = 0; j < m; j++) {
                int64_t x = S->ekids[S->ecptr[i] + j];
                d[IR_KIDS + j] = x >= L ? x - off : x;
            }
            G.n++;
        }
        for (int64_t i = 0; i < nf; i++) {
            for (int64_t r = 0; r < nj; r++) {
                join_t *j = J + r;
                if (S->masks[r] && !S->masks[r][off + i]) continue;
                for (int64_t c = 0; c < j->ncol[0]; c++) j->vals[j->slot[c]] = j->cols[c][off + i];
                j->fid[0] = L + i;
                join_rec(j, 1);
                if (j->err) { if (j->err == 2) W->err = 2; goto done; }
            }
        }
        if (stop_flag || S->abort) goto done;
        int64_t n = G.n;
        if (k == 1) {
            if (grp_uses(&G, L, nf, &U)) goto done;
            if (comp_top1(G.IR, si, 0, n, ST, U.rem, U.uptr, U.uses, L, U.todo, &hp, P, NULL)) goto done;
            if (A->top) {
                int64_t ne = 0, ns = 0;
                for (int64_t i = 0; i < nf; i++) {
                    const int64_t *q = ST + 8 * (L + i);
                    if (q[3] != -2) { ne++; ns += G.IR[q[3] * si + IR_M]; }
                }
                A->n = A->te - ne; A->nr = A->tr - ns; A->te -= ne; A->tr -= ns;
            }
            S->ge0[g] = A->n; S->gr0[g] = A->nr;
            if (acc_room(A, nf, nf * M)) goto done;
            for (int64_t i = 0; i < nf; i++) {
                int64_t *q = ST + 8 * (L + i);
                S->fp[L + off + i] = A->n;
                if (q[3] == -2) continue;
                const int64_t *d = G.IR + q[3] * si;
                acc_add(A, as_f(q[0]), q[1], (int32_t)d[IR_RULE], d[IR_M], d + IR_KIDS, NULL, L, off);
            }
        } else {
            if (A->bound >= 0) {
                /* the tree-count bound, as selp_tree_count_bound gives it on the global path */
                if (grp_uses(&G, L, nf, &U) || grow((void **)&cnt, nf + n, 8) || grow((void **)&stack, nf + n, 8)) goto done;
                int64_t b = grp_count(G.IR, si, n, L, nf, k, U.rem, U.uptr, U.uses, cnt, U.fill, stack);
                A->bound = b < 0 ? -1 : (b > A->bound ? b : A->bound);
            }
            B.slots = 0;
            if (use_t) {
                if (n > trem) {
                    if (grow((void **)&T1.rem, n, sizeof(int32_t))) goto done;
                    trem = n;
                }
                for (int64_t i = 0; i < nf; i++) fr_init(T1.FR + 8 * (L + i), 0, 0.0, 0, 0); /* no entry yet */
            }
            int lr = use_t ? rea_linear(G.IR, si, 0, n, &B, P, &T1) : -2;
            if (lr == -1) goto done;
            if (lr == -2) {
                B.slots = 0;
                for (int64_t i = 0; i < nf; i++) fb_init(ST + i * rec, k, B.se, 0, 0.0, 0, 0);
                if (use_t)
                    for (int64_t i = 0; i < nf; i++) fr_init(T1.FR + 8 * (L + i), 0, 0.0, 0, 0);
                if (comp_topk_t(G.IR, si, 0, n, ST, &B, P, use_t ? &T1 : NULL)) goto done;
            }
            int lin = B.lin_done;
            int64_t ne = 0;
            for (int64_t i = 0; i < nf; i++) ne += lin ? lin_count(&B, L + i) : FB_CNT(ST + i * rec);
            if (A->top) { /* its places below the last group's: counted while ranking */
                int64_t ns = B.slots;
                A->n = A->te - ne; A->nr = A->tr - ns; A->te -= ne; A->tr -= ns;
            }
            S->ge0[g] = A->n; S->gr0[g] = A->nr;
            if (acc_room(A, ne, ne * M)) goto done;
            for (int64_t i = 0; lin && i < nf; i++) {
                S->fp[L + off + i] = A->n;
                int32_t rk[256], rule;
                int64_t kids[256], c = lin_count(&B, L + i);
                for (int64_t t = 0; t < c; t++) {
                    const int64_t *e;
                    int64_t m = lin_entry(&B, G.IR, si, L + i, t, &e, &rule, kids, rk);
                    acc_add(A, as_f(e[0]), e[1], rule, m, kids, rk, L, off);
                }
            }
            for (int64_t i = 0; !lin && i < nf; i++) {
                int64_t *b = ST + i * rec, se = B.se;
                S->fp[L + off + i] = A->n;
                if (i + 4 < nf) { /* the instance records read a few facts on: each is a miss otherwise */
                    const int64_t *b4 = ST + (i + 4) * rec;
                    for (int32_t r = 0; r < FB_CNT(b4); r++) __builtin_prefetch(G.IR + FB_ENTRY(b4, k, r)[3] * si);
                }
                for (int32_t r = 0; r < FB_CNT(b); r++) {
                    int64_t *e = FB_ENTRY(b, k, r);
                    const int64_t *d = G.IR + e[3] * si;
                    acc_add(A, as_f(e[0]), e[1], (int32_t)d[IR_RULE], d[IR_M], d + IR_KIDS,
                            (const int32_t *)(e + E_RANKS), L, off);
                }
            }
        }
        S->ge1[g] = A->n; S->gr1[g] = A->nr;
    }
    W->err = 0;
done:
    if (W->err) S->abort = 1;
    free(ST); free(J); free(G.tab); free(G.IR); free(U.rem); free(U.uptr); free(U.fill); free(U.uses); free(U.todo);
    free(hp.a); free(cnt); free(stack);
    top1_free(&T1);
    kbest_free(&B);
    return NULL;
}

/* A worker's entries from n on and child slots from nr on (copied already) given back: realloc
 * shrinks a large block in place (unmapping its tail), a failure leaves it as it was. */
static void acc_shrink(acc_t *X, int64_t n, int64_t nr) {
    grow((void **)&X->w, n, 8); grow((void **)&X->size, n, 4);
    grow((void **)&X->rule, n, 1);
    grow((void **)&X->kid, nr, 4); grow((void **)&X->cr, nr, 1);
    X->n = X->cap = n; X->nr = X->rcap = nr;
}

/* The other workers' groups (first..ng-1: they claim from the back) appended to A in group
 * order: the entries' indices, child slot pointers and rows' first entries shifted. A worker
 * wrote its groups in descending order, so what is copied of it is always a suffix of its
 * buffers, given back as the copy goes (the peak stays near one copy of the result, not 1.5). */
static int merge(shared_t *S, acc_t *A, acc_t *const *accs, int64_t nw, int64_t first) {
    int64_t ne = 0, nr = 0, held[64];
    for (int64_t w = 1; w < nw; w++) { ne += accs[w]->n; nr += accs[w]->nr; held[w] = accs[w]->n; }
    if (acc_room(A, ne, nr)) return -1;
    for (int64_t g = first; g < S->ng; g++) {
        acc_t *X = accs[S->own[g]];
        int64_t e0 = S->ge0[g], r0 = S->gr0[g];
        int64_t n = S->ge1[g] - e0, m = S->gr1[g] - r0, de = A->n - e0;
        memcpy(A->w + A->n, X->w + e0, (size_t)n * sizeof(double));
        memcpy(A->size + A->n, X->size + e0, (size_t)n * sizeof(int32_t));
        memcpy(A->rule + A->n, X->rule + e0, (size_t)n);
        memcpy(A->kid + A->nr, X->kid + r0, (size_t)m * sizeof(int32_t));
        memcpy(A->cr + A->nr, X->cr + r0, (size_t)m);
        for (int64_t x = S->L + S->gptr[g]; x < S->L + S->gptr[g + 1]; x++) S->fp[x] += de;
        A->n += n; A->nr += m;
        if (held[S->own[g]] - e0 >= (1 << 18)) { acc_shrink(X, e0, r0); held[S->own[g]] = e0; }
    }
    return 0;
}

/* Top-1 (k == 1) or top-k of every fact, component by component (see above). F facts, of which
 * kernel ids 0..L-1 are the leaves; nid: input id -> kernel id; group g's facts are kernel ids
 * L + gptr[g] .. L + gptr[g+1] - 1, their hk columns gcols[c][kernel id - L]. Exit instances,
 * grouped: eptr[g]..eptr[g+1]-1, rule erule, head ehead and children ekids[ecptr[i]..] (kernel
 * ids, in the order the global kernel sorts them). nj recursive rules in program order, each a
 * prepared join (atom 0 the driver) with the driver's filter masks[r] (by kernel id - L; NULL
 * none); M the most children of any instance. Returns NULL when out of memory or stopped (*err
 * 1), when a join finds a head that is not a fact of its group or F >= 2^31 (*err 2), or when
 * a value does not fit the result's narrow fields -- a tree size above INT32_MAX, a rule index
 * above 255, k above 255 (*err 3): the caller then takes the global path.
 *
 * Threads: groups are independent (each is formed and ranked with buffers reset for it, and
 * nothing of one group's run reaches another's), so `threads` workers rank them at once. The
 * calling thread's worker claims groups from the front and writes straight into the result;
 * the others claim from the back into their own buffers, which are appended in group order at
 * the end (a copy of their share, sequential). The result is the one-thread result, bit for
 * bit, whatever the split. */
EXPORT run_t *selp_static(int64_t F, int64_t L, const int64_t *nid, const uint8_t *leaf, const double *leaf_w,
                          const int64_t *leaf_origin, const int64_t *leaf_size, int64_t ng, const int64_t *gptr,
                          int64_t hk, const int64_t *const *gcols, const int64_t *eptr, const int32_t *erule,
                          const int64_t *ehead, const int64_t *ecptr, const int64_t *ekids, int64_t nj,
                          join_t *const *joins, const uint8_t *const *masks, int64_t M, const double *rule_w,
                          const int64_t *rule_size, const int64_t *rule_hash, const uint8_t *rule_copy,
                          int combine, double sign, int origin_mode, int64_t k, int64_t threads, int32_t *err) {
    stop_flag = 0;
    *err = 1;
    if (F > INT32_MAX) { *err = 2; return NULL; } /* child ids are int32: the caller takes the global path */
    if (k > 255) { *err = 3; return NULL; }       /* ranks are uint8 */
    if (threads > ng) threads = ng;
    if (threads > 64) threads = 64;
    if (threads < 1) threads = 1;
    run_t *run = calloc(1, sizeof(run_t));
    acc_t *A = calloc(1, sizeof(acc_t));
    shared_t *S = calloc(1, sizeof(shared_t));
    acc_t *accs[64] = {0};
    worker_t W[64];
    pthread_t tid[64];
    if (!run || !A || !S) { free(run); free(A); free(S); return NULL; }
    run->F = F; run->k = k; run->acc = A; run->L = L;
    A->L = L; A->F = F;
    kbest_t B;
    kbest_init(&B, k, M); /* for the block size only */
    S->F = F; S->L = L; S->ng = ng; S->hk = hk; S->nj = nj; S->M = M; S->k = k; S->si = IR_KIDS + M;
    S->rec = k == 1 ? 8 : B.fb; /* a fact's record: top-1's 8 int64, top-k's block */
    for (int64_t g = 0; g < ng; g++) if (gptr[g + 1] - gptr[g] > S->big) S->big = gptr[g + 1] - gptr[g];
    S->gptr = gptr; S->eptr = eptr; S->ehead = ehead; S->ecptr = ecptr; S->ekids = ekids; S->erule = erule;
    S->gcols = gcols; S->joins = joins; S->masks = masks;
    S->P = (prm_t){rule_w, rule_size, rule_hash, rule_copy, combine, origin_mode, sign};
    S->front = 0; S->back = ng;
    pthread_mutex_init(&S->mu, NULL);
    int64_t *LV = malloc(((size_t)L * (k == 1 ? 8 : 4) + 1) * sizeof(int64_t));
    S->own = malloc(((size_t)ng + 1) * sizeof(int64_t));
    S->ge0 = malloc(((size_t)ng + 1) * sizeof(int64_t));
    S->gr0 = malloc(((size_t)ng + 1) * sizeof(int64_t));
    S->ge1 = malloc(((size_t)ng + 1) * sizeof(int64_t));
    S->gr1 = malloc(((size_t)ng + 1) * sizeof(int64_t));
    A->bound = F > L ? 0 : 1; /* a leaf has one tree */
    if (L > 0) A->bound = 1;
    A->fp = malloc(((size_t)F + 1) * sizeof(int64_t));
    A->inv = malloc(((size_t)F + 1) * sizeof(int64_t));
    S->fp = A->fp;
    /* two workers: one reservation for the bound (each fact at most k entries of at most M
     * children), written from both ends; otherwise a first guess of one entry per fact (top-1's
     * count when every fact is derived), grown as needed */
    int64_t per = k == 1 ? 1 : k, NE = 0, NR = 0;
    if (threads == 2 && F - L < ((int64_t)1 << 40) / per / (M + 1)) { NE = L + (F - L) * per; NR = (F - L) * per * M + 1; }
    if (!LV || !S->own || !S->ge0 || !S->gr0 || !S->ge1 || !S->gr1 || !A->fp || !A->inv) goto fail;
    if ((NE == 0 || acc_reserve(A, NE, NR)) && acc_room(A, F + 1, (F - L) * M + 1)) goto fail;
    if (k == 1) S->LR = LV; else S->LV = LV;
    for (int64_t f = 0; f < F; f++) {
        int64_t x = nid[f];
        A->inv[x] = f;
        if (x >= L) continue;
        /* the leaves' entries are rows 0..L-1 */
        int64_t ls = leaf_size ? leaf_size[f] : 0;
        if ((uint64_t)ls > INT32_MAX) A->over = 1;
        A->w[x] = leaf_w[f]; A->size[x] = (int32_t)ls; A->rule[x] = 0;
        A->fp[x] = x;
        if (k == 1) fr_init(LV + 8 * x, 1, leaf_w[f], ls, leaf_origin[f]);
        else { LV[4 * x] = as_i(leaf_w[f]); LV[4 * x + 1] = ls; LV[4 * x + 2] = leaf_origin[f]; LV[4 * x + 3] = 0; }
    }
    A->n = L;
    accs[0] = A;
    for (int64_t w = 1; w < threads; w++) {
        accs[w] = calloc(1, sizeof(acc_t));
        if (!accs[w]) goto fail;
        if (A->mapped) { /* the second worker writes A's arrays from the top down */
            acc_t *X = accs[w];
            X->w = A->w; X->size = A->size; X->rule = A->rule;
            X->kid = A->kid; X->cr = A->cr; X->cap = A->cap; X->rcap = A->rcap;
            X->top = 1; X->te = X->n = A->cap; X->tr = X->nr = A->rcap;
        } else {
            if (acc_room(accs[w], 1, 1)) goto fail;
        }
        accs[w]->L = L; accs[w]->F = F; accs[w]->inv = A->inv;
        accs[w]->bound = A->bound;
    }
    /* each other worker gets the last groups before any starts: every worker ranks at least one
     * (whatever the threads' start-up latency), so the layouts of the writes from both ends
     * are what the tests see on small programs too */
    for (int64_t w = 0; w < threads; w++) {
        W[w].S = S; W[w].id = w; W[w].A = accs[w]; W[w].err = 0;
        W[w].first = w > 0 && S->front < S->back ? --S->back : -1;
    }
    int ran[64] = {0};
    for (int64_t w = 1; w < threads; w++)
        ran[w] = !pthread_create(&tid[w], NULL, work, &W[w]); /* one not started: its groups are ranked below */
    work(&W[0]);
    for (int64_t w = 1; w < threads; w++) if (ran[w]) pthread_join(tid[w], NULL);
    for (int64_t w = 1; w < threads; w++) if (!ran[w]) work(&W[w]);
    for (int64_t w = 0; w < threads; w++)
        if (W[w].err) { *err = W[w].err == 2 ? 2 : 1; goto fail; }
    for (int64_t w = 0; w < threads; w++)
        if (accs[w]->over) { *err = 3; goto fail; } /* a size or rule beyond the result's narrow fields */
    for (int64_t w = 1; w < threads; w++) {
        int64_t b = accs[w]->bound;
        A->bound = A->bound < 0 || b < 0 ? -1 : (b > A->bound ? b : A->bound);
    }
    if (A->mapped && threads == 2) {
        /* the gap between the two parts closed: the second's entries and slots moved down onto
         * the end of the first's (pages written already but for the gap's few), their child
         * slot pointers and its rows' first entries shifted */
        acc_t *X = accs[1];
        int64_t n0 = A->n, r0 = A->nr, n1 = A->cap - X->te, s1 = A->rcap - X->tr, de = n0 - X->te, dr = r0 - X->tr;
        if (de) {
            memmove(A->w + n0, A->w + X->te, (size_t)n1 * sizeof(double));
            memmove(A->size + n0, A->size + X->te, (size_t)n1 * sizeof(int32_t));
            memmove(A->rule + n0, A->rule + X->te, (size_t)n1);
        }
        if (dr) {
            memmove(A->kid + r0, A->kid + X->tr, (size_t)s1 * sizeof(int32_t));
            memmove(A->cr + r0, A->cr + X->tr, (size_t)s1);
        }
        for (int64_t g = 0; g < ng; g++)
            if (S->own[g] == 1)
                for (int64_t x = L + gptr[g]; x < L + gptr[g + 1]; x++) A->fp[x] += de;
        A->n = n0 + n1; A->nr = r0 + s1;
        big_cut(A->w, A->n, 8); big_cut(A->size, A->n, 4);
        big_cut(A->rule, A->n, 1); big_cut(A->kid, A->nr, 4); big_cut(A->cr, A->nr, 1);
    } else if (threads > 1 && merge(S, A, accs, threads, S->front)) goto fail;
    A->fp[F] = A->n;
    free(A->inv); A->inv = NULL;
    run->n_entries = A->n;
    run->n_ranks = A->nr;
    *err = 0;
    for (int64_t w = 1; w < threads; w++) { acc_unalias(accs[w]); acc_free(accs[w]); }
    free(LV); free(S->own); free(S->ge0); free(S->gr0); free(S->ge1); free(S->gr1); pthread_mutex_destroy(&S->mu); free(S);
    kbest_free(&B);
    return run;
fail:
    for (int64_t w = 1; w < threads; w++) if (accs[w]) { acc_unalias(accs[w]); acc_free(accs[w]); }
    free(LV); free(S->own); free(S->ge0); free(S->gr0); free(S->ge1); free(S->gr1); pthread_mutex_destroy(&S->mu); free(S);
    kbest_free(&B);
    selp_free(run);
    return NULL;
}

/* top-k: the largest number of derivation trees of any fact, capped at k (-1: some fact has
 * infinitely many); what selp_tree_count_bound gives for all the instances. */
EXPORT int64_t selp_static_bound(const run_t *r) { return r->acc->bound; }

/* The result of selp_static in kernel order (see KernelResult and its `row`), as the run's own
 * buffers, which numpy then wraps without a copy (they live until selp_free): p[0] fact_ptr
 * [F+1] by row (kernel id), p[1..6] per entry w, size, then three NULLs -- no origins (an
 * entry's origin is its rule's hash over its children's: selp_entry_origins computes them when
 * a tree is drawn or saved), no inst array (an entry is its own instance, rows 0..L-1 are the
 * leaves'), no child slot pointers (an entry's number of children is its rule's) -- 8 bytes an
 * entry not written each, then rule (0 for a leaf, whose rule is never read), p[7..8] per child
 * slot its rank and input fact id. Narrow types, each a few bytes an entry of fresh memory
 * less: size int32, rule and rank uint8, child id int32 (selp_static checks that they fit). */
EXPORT void selp_static_arrays(const run_t *r, void **p) {
    const acc_t *A = r->acc;
    p[0] = A->fp; p[1] = A->w; p[2] = A->size; p[3] = NULL; p[4] = NULL; p[5] = NULL;
    p[6] = A->rule; p[7] = A->cr; p[8] = A->kid;
}

/* The origins of selp_static's entries lo..hi-1 and of every entry below them, as the kernel
 * computed them when ranking (origin_step over the children's origins in body order, then
 * origin_end, or the first child's for a copy rule), into out where done[e] is 0 (then set;
 * the caller's arrays of n entries, kept between calls: a tree drawn computes its own entries
 * only; the leaves' rows 0..L-1 are done and their origins set by the caller). crp: the child
 * slot pointers (n + 1); an entry's child at slot t is entry fp[nid[kid[t]]] + cr[t] - 1.
 * Children first, by a depth-first walk on the caller's stack of n slots (a chain of entries
 * can be as long as a group; its pages are touched only as deep as a walk goes, and it is
 * allocated once for many calls: one per fact drawn). Returns 0. */
EXPORT int selp_entry_values(int64_t n, int64_t lo, int64_t hi, const int64_t *fp, const int64_t *nid,
                             const uint8_t *rule, const int64_t *crp, const int32_t *kid, const uint8_t *cr,
                             const int64_t *rule_hash, const uint8_t *rule_copy, int origin_mode, int64_t *out,
                             uint8_t *done, int64_t *stack, const double *rule_w, const int64_t *rule_size,
                             int combine, double *out_w, int64_t *out_s);

EXPORT int selp_entry_origins(int64_t n, int64_t lo, int64_t hi, const int64_t *fp, const int64_t *nid,
                              const uint8_t *rule, const int64_t *crp, const int32_t *kid, const uint8_t *cr,
                              const int64_t *rule_hash, const uint8_t *rule_copy, int origin_mode, int64_t *out,
                              uint8_t *done, int64_t *stack) {
    return selp_entry_values(n, lo, hi, fp, nid, rule, crp, kid, cr, rule_hash, rule_copy, origin_mode, out, done,
                             stack, NULL, NULL, 0, NULL, NULL);
}

/* selp_entry_origins, and with rule_w non-NULL each entry's weight and size as well, into out_w
 * and out_s (the leaves' set by the caller): the rule's weight combined with the children's in
 * body order, the rule's size plus theirs -- the arithmetic of the kernel's loops, in the same
 * order, so the same bits. A partition-local Spark task then ships neither (selp.topk.packed). */
EXPORT int selp_entry_values(int64_t n, int64_t lo, int64_t hi, const int64_t *fp, const int64_t *nid,
                             const uint8_t *rule, const int64_t *crp, const int32_t *kid, const uint8_t *cr,
                             const int64_t *rule_hash, const uint8_t *rule_copy, int origin_mode, int64_t *out,
                             uint8_t *done, int64_t *stack, const double *rule_w, const int64_t *rule_size,
                             int combine, double *out_w, int64_t *out_s) {
    (void)n;
    for (int64_t e0 = lo; e0 < hi; e0++) {
        if (done[e0]) continue;
        int64_t sp = 0;
        stack[sp++] = e0;
        while (sp > 0) {
            int64_t e = stack[sp - 1], pending = 0;
            for (int64_t t = crp[e]; t < crp[e + 1]; t++) {
                int64_t c = fp[nid[kid[t]]] + cr[t] - 1;
                if (!done[c]) { stack[sp++] = c; pending = 1; break; }
            }
            if (pending) continue;
            int64_t rl = rule[e], m = crp[e + 1] - crp[e], o0 = 0;
            uint64_t hh = (uint64_t)rule_hash[rl];
            for (int64_t t = crp[e]; t < crp[e + 1]; t++) {
                int64_t o = out[fp[nid[kid[t]]] + cr[t] - 1];
                if (t == crp[e]) o0 = o;
                hh = origin_step(origin_mode, hh, o);
            }
            out[e] = rule_copy[rl] ? o0 : origin_end(origin_mode, hh, m);
            if (rule_w) {
                double w = rule_w[rl];
                int64_t s = rule_size[rl];
                for (int64_t t = crp[e]; t < crp[e + 1]; t++) {
                    int64_t c = fp[nid[kid[t]]] + cr[t] - 1;
                    w = comb(combine, w, out_w[c]);
                    s += out_s[c];
                }
                out_w[e] = w; out_s[e] = s;
            }
            done[e] = 1;
            sp--;
        }
    }
    return 0;
}


/* ---- the packed DTable's child slots (selp.topk.packed) ------------------------------------
 * What a partition-local Spark task ships (selp.topk.component, selp.topk.component_static):
 * per entry its children as slots (c, r) -- r >= 1: the entry of rank r of member fact c of the
 * partition; r == 0: row c of the leaf table -- and where each entry's slots start (int32,
 * E + 1). One pass over the entries writing the three arrays, where numpy's gathers, repeats and
 * selects made five to eight temporaries of a slot each (at top-7 a fifth to a quarter of the
 * task). The caller checks that the values fit (slots < 2^31, k <= 255). */

/* The kernel's result (selp_fill's arrays): entries 0..n-1 are the member facts' (members are
 * facts 0..n_members-1, their entries first); an entry's children are its instance's
 * (child_ptr/child_fact by input instance id inst[e]) at ranks cr[crp[e]..]. A child below
 * n_members is a member; below n_facts a lower fact, whose entries are the leaf table's rows
 * from fp[n_members] (lower0) on; else a copy step's leaf, row n_lower + (c - first_seed). */
EXPORT void selp_pack_slots(int64_t n, const int64_t *inst, const int64_t *child_ptr, const int64_t *child_fact,
                            const int64_t *crp, const int32_t *cr, const int64_t *fp, int64_t n_members,
                            int64_t n_facts, int64_t lower0, int64_t n_lower, int64_t first_seed, int32_t *off,
                            int32_t *slot_c, uint8_t *slot_r) {
    int64_t s = 0;
    off[0] = 0;
    for (int64_t e = 0; e < n; e++) {
        int64_t a = child_ptr[inst[e]], m = child_ptr[inst[e] + 1] - a;
        const int64_t *kids = child_fact + a;
        const int32_t *rk = cr + crp[e];
        for (int64_t j = 0; j < m; j++, s++) {
            int64_t c = kids[j];
            if (c < n_members) { slot_c[s] = (int32_t)c; slot_r[s] = (uint8_t)rk[j]; }
            else if (c < n_facts) { slot_c[s] = (int32_t)(fp[c] + rk[j] - 1 - lower0); slot_r[s] = 0; }
            else { slot_c[s] = (int32_t)(n_lower + c - first_seed); slot_r[s] = 0; }
        }
        off[e + 1] = (int32_t)s;
    }
}

/* selp_static's result (selp_static_arrays): entries lo..hi-1 are the member facts' (rows from
 * L on; rows 0..L-1 are the leaves', one childless entry each); an entry's children are its
 * rule's rule_m[rule[e]] slots, in order, kid (input ids: a member below n, a leaf's row
 * n + its row of the leaf table) at rank cr. */
EXPORT void selp_pack_static_slots(int64_t L, int64_t lo, int64_t hi, const uint8_t *rule, const int64_t *rule_m,
                                   const int32_t *kid, const uint8_t *cr, int64_t n, int32_t *off, int32_t *slot_c,
                                   uint8_t *slot_r) {
    int64_t t = 0;
    for (int64_t e = L; e < lo; e++) t += rule_m[rule[e]];
    int64_t s = 0;
    off[0] = 0;
    for (int64_t e = lo; e < hi; e++) {
        int64_t m = rule_m[rule[e]];
        for (int64_t j = 0; j < m; j++, s++, t++) {
            int32_t c = kid[t];
            int leaf = c >= n;
            slot_c[s] = leaf ? (int32_t)(c - n) : c;
            slot_r[s] = leaf ? 0 : cr[t];
        }
        off[e - lo + 1] = (int32_t)s;
    }
}

/* selp_static's result again: per entry of the member facts (entries lo..hi-1, a fact's
 * together and best first, fact row L + i's from fp[L + i]; inv maps a row to its input id
 * 0..n-1), its fact (owner), its rank (1..) and its rule's code (code[rule[e]]) -- what
 * numpy made with two repeats, an arange and a gather, each a fresh array of 8 bytes an entry */
EXPORT void selp_pack_static_entries(int64_t L, int64_t n, int64_t lo, const int64_t *fp, const int32_t *inv,
                                     const uint8_t *rule, const int8_t *code, int32_t *owner, uint8_t *rank,
                                     int8_t *rule_code) {
    for (int64_t i = 0; i < n; i++) {
        int64_t a = fp[L + i] - lo, b = fp[L + i + 1] - lo;
        int32_t f = inv[L + i];
        for (int64_t e = a; e < b; e++) {
            owner[e] = f;
            rank[e] = (uint8_t)(e - a + 1);
            rule_code[e] = code[rule[lo + e]];
        }
    }
}

/* ---- a module, so that setuptools builds it as one and importlib finds its file ---------- */

#include <Python.h>

static struct PyModuleDef kernel_module = {
    PyModuleDef_HEAD_INIT, "_kernel",
    "The DTable's compiled hot loop; called through ctypes (see selp.topk.kernel).", -1, NULL,
};

PyMODINIT_FUNC PyInit__kernel(void) { return PyModule_Create(&kernel_module); }
