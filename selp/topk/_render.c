/* Derivation trees streamed from flat arrays: text drawings, JSON, JSON lines and the
 * shared-subtree form (selp.topk.render holds the Python side and the format's description).
 *
 * A tree is never built: a node is a row of integer arrays (its fact, its rule, its children as
 * node ids) and every piece of text it prints -- a fact's label, a rule's name and weight -- was
 * rendered once, before, into byte buffers with offsets. Rendering is copying those pieces into
 * an output buffer while walking the DAG with an explicit stack (trees can be thousands of levels
 * deep). The caller asks for a chunk of answers at a time and writes it out, so memory stays
 * bounded by a chunk plus the deepest tree, and Ctrl-C and progress are handled between chunks.
 *
 * Weights are formatted here, as Python formats the displayed weight (selp.topk.monoid.display
 * cuts floats to 12 significant digits): text is format(w, ".12g"), JSON is repr() of that
 * float, as json.dumps writes it.
 *
 * Called through ctypes; the module below exists only so that setuptools builds this file.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RENDER_ABI 1

enum { FMT_TEXT = 0, FMT_JSON = 1, FMT_JSONL = 2 };
/* how weights are given: a float shown with 12 digits; an int kept negated (the size monoid);
 * an access level 0..3 shown as a letter; or rendered in advance (text and JSON per item) */
enum { W_FLOAT = 0, W_NEGINT = 1, W_ACCESS = 2, W_STRINGS = 3 };

typedef struct {
    int mode;
    const double *value;                      /* W_FLOAT, W_NEGINT, W_ACCESS */
    const int64_t *text_off; const char *text;  /* W_STRINGS */
    const int64_t *json_off; const char *json;
} Weights;

typedef struct {
    char *p;
    int64_t n, cap;
    int failed;
} Buf;

typedef struct {
    /* nodes: one per (resolved) DTable entry */
    const int64_t *node_fact;   /* the fact's row in the label buffers */
    const int32_t *node_rule;   /* rule of P (index into the rule pieces), -1: a leaf */
    const int64_t *child_ptr;   /* n_nodes + 1 */
    const int64_t *child;       /* node ids, in body order */
    Weights node_w;             /* a node's own (subtree) weight */
    int leaf_weightless;        /* leaves show no weight (a monoid that ignores fact weights) */
    /* facts: "path(0, 7)" and '{"relation": "path", "args": [0, 7]' (no closing brace) */
    const int64_t *ftext_off; const char *ftext;
    const int64_t *fjson_off; const char *fjson;
    /* rules: "[r1 0.9]", '"rule": "r1", "weight": 0.9' and '"r1"' */
    const int64_t *rtext_off; const char *rtext;
    const int64_t *rjson_off; const char *rjson;
    const int64_t *rname_off; const char *rname;
    /* answers: a fact and its trees (root nodes, best first) with their weights */
    int64_t n_answers;
    const int64_t *ans_fact;
    const int64_t *ans_ptr;
    const int64_t *ans_root;
    Weights ans_w;
    /* working memory */
    Buf out;
    int64_t *stack; int64_t stack_cap;  /* frames of 3 int64 */
    char *pre; int64_t pre_cap;
    /* the last float formatted, per slot (nodes, answers) and form (text, JSON) */
    uint64_t last_bits[2][2]; char last[2][2][48]; int last_len[2][2], last_valid[2][2];
    /* the shared-subtree stream: facts and answers emitted so far */
    int64_t next_fact, next_answer;
    int64_t *ans_last;  /* per answer: the largest node id of its trees */
} Ctx;

static int reserve(Buf *b, int64_t more) {
    if (b->failed) return 0;
    if (b->n + more <= b->cap) return 1;
    int64_t cap = b->cap ? b->cap : 1 << 16;
    while (cap < b->n + more) cap *= 2;
    char *p = realloc(b->p, (size_t)cap);
    if (!p) { b->failed = 1; return 0; }
    b->p = p; b->cap = cap;
    return 1;
}

/* a copy of a short piece without a call into libc: two overlapping fixed-size moves */
static inline void copy_short(char *d, const char *s, int64_t n) {
    if (n > 32) memcpy(d, s, (size_t)n);
    else if (n >= 16) { memcpy(d, s, 16); memcpy(d + n - 16, s + n - 16, 16); }
    else if (n >= 8) { memcpy(d, s, 8); memcpy(d + n - 8, s + n - 8, 8); }
    else if (n >= 4) { memcpy(d, s, 4); memcpy(d + n - 4, s + n - 4, 4); }
    else if (n > 0) { d[0] = s[0]; d[n / 2] = s[n / 2]; d[n - 1] = s[n - 1]; }
}

static inline void put(Buf *b, const char *s, int64_t len) {
    if (len <= 0 || !reserve(b, len)) return;
    copy_short(b->p + b->n, s, len);
    b->n += len;
}

#define PUTS(b, lit) put((b), (lit), (int64_t)(sizeof(lit) - 1))

static inline void put_piece(Buf *b, const int64_t *off, const char *data, int64_t i) {
    put(b, data + off[i], off[i + 1] - off[i]);
}

static void put_int(Buf *b, int64_t v) {
    char tmp[24];
    int n = snprintf(tmp, sizeof tmp, "%lld", (long long)v);
    put(b, tmp, n);
}

/* 10^0 .. 10^27, exact in a long double (5^27 < 2^64) */
static long double POW10[28];
static int pow10_ready;

/* The 12 significant digits of |w| > 0, correctly rounded, and the decimal exponent of the
 * first: |w| ~ d.ddddddddddd x 10^exp. |w| x 10^(11-exp) is formed in a long double (relative
 * error 2^-64, under 1e-7 of the last digit); when its fraction is that close to one half the
 * rounding is not certain and 0 is returned (the caller asks the C library). */
static int digits12(double w, char dig[12], int *exp_out) {
    if (!pow10_ready) {
        long double p = 1.0L;
        for (int i = 0; i < 28; i++) { POW10[i] = p; p *= 10.0L; }
        pow10_ready = 1;
    }
    long double a = fabs(w);
    int e = (int)floor(log10((double)a));
    for (int tries = 0; tries < 3; tries++) {
        int k = 11 - e;
        if (k > 27 || k < -27) return 0;
        long double scaled = k >= 0 ? a * POW10[k] : a / POW10[-k];
        if (scaled >= 1e12L) { e++; continue; }
        if (scaled < 1e11L) { e--; continue; }
        long double r = floorl(scaled);
        long double frac = scaled - r;
        if (fabsl(frac - 0.5L) < 1e-6L) return 0;
        uint64_t n = (uint64_t)r + (frac > 0.5L);
        if (n >= 1000000000000ULL) { n /= 10; e++; }
        for (int i = 11; i >= 0; i--) { dig[i] = (char)('0' + n % 10); n /= 10; }
        *exp_out = e;
        return 1;
    }
    return 0;
}

/* digits and exponent of w as printf's "%.11e" gives them (the slow, exact way) */
static void digits12_slow(double w, char dig[12], int *exp_out) {
    char tmp[48];
    snprintf(tmp, sizeof tmp, "%.11e", fabs(w));
    const char *s = tmp;
    int nd = 0;
    dig[nd++] = *s++;
    if (*s == '.') s++;
    while (*s >= '0' && *s <= '9' && nd < 12) dig[nd++] = *s++;
    while (nd < 12) dig[nd++] = '0';
    while (*s && *s != 'e') s++;
    *exp_out = *s ? atoi(s + 1) : 0;
}

static char *put_exp(char *o, int exp) {
    *o++ = 'e';
    *o++ = exp < 0 ? '-' : '+';
    int x = exp < 0 ? -exp : exp;
    if (x >= 100) { *o++ = (char)('0' + x / 100); x %= 100; }
    *o++ = (char)('0' + x / 10);
    *o++ = (char)('0' + x % 10);
    return o;
}

/* format(w, ".12g") (text, json = 0) or repr(float(format(w, ".12g"))) as json.dumps writes it
 * (json = 1): the same 12 digits, trailing zeros dropped; %g switches to an exponent from 10^12
 * on, repr from 10^16 on, both below 10^-4 */
static int format_float(char *out, double w, int json) {
    if (isnan(w)) { memcpy(out, json ? "NaN" : "nan", 3); return 3; }
    char *o = out;
    if (signbit(w)) *o++ = '-';
    if (isinf(w)) {
        if (json) { memcpy(o, "Infinity", 8); o += 8; } else { memcpy(o, "inf", 3); o += 3; }
        return (int)(o - out);
    }
    if (w == 0.0) {
        if (json) { memcpy(o, "0.0", 3); o += 3; } else *o++ = '0';
        return (int)(o - out);
    }
    char dig[12];
    int exp, nd = 12;
    if (!digits12(w, dig, &exp)) digits12_slow(w, dig, &exp);
    if (json && fabs(w) < 2.2250738585072014e-308) {
        /* a subnormal has fewer than 12 digits of precision: repr's shortest digits that read
         * back as the float the 12 digits name */
        char tmp[48];
        snprintf(tmp, sizeof tmp, "%c.%.11se%d", dig[0], dig + 1, exp);
        double t = strtod(tmp, NULL);
        for (int p = 0; p < 17; p++) {
            snprintf(tmp, sizeof tmp, "%.*e", p, fabs(t));
            if (strtod(tmp, NULL) == fabs(t)) break;
        }
        const char *q = tmp;
        nd = 0;
        dig[nd++] = *q++;
        if (*q == '.') q++;
        while (*q >= '0' && *q <= '9' && nd < 12) dig[nd++] = *q++;
        while (*q && *q != 'e') q++;
        exp = *q ? atoi(q + 1) : 0;
    }
    while (nd > 1 && dig[nd - 1] == '0') nd--;
    int fixed = exp >= -4 && exp < (json ? 16 : 12);
    if (!fixed) {
        *o++ = dig[0];
        if (nd > 1) { *o++ = '.'; for (int i = 1; i < nd; i++) *o++ = dig[i]; }
        o = put_exp(o, exp);
    } else if (exp >= 0) {
        for (int i = 0; i <= exp; i++) *o++ = i < nd ? dig[i] : '0';
        if (nd > exp + 1) { *o++ = '.'; for (int i = exp + 1; i < nd; i++) *o++ = dig[i]; }
        else if (json) { *o++ = '.'; *o++ = '0'; }
    } else {
        *o++ = '0'; *o++ = '.';
        for (int i = 0; i < -exp - 1; i++) *o++ = '0';
        for (int i = 0; i < nd; i++) *o++ = dig[i];
    }
    return (int)(o - out);
}

static const char ACCESS[] = "TSCU";

/* the weight of item i, as text (json = 0) or JSON (json = 1); slot: a one-value cache each for
 * node and answer weights (a graph's leaves mostly share one weight) */
static void put_weight(Ctx *c, const Weights *w, int slot, int64_t i, int json) {
    Buf *b = &c->out;
    if (w->mode == W_STRINGS) {
        if (json) put_piece(b, w->json_off, w->json, i);
        else put_piece(b, w->text_off, w->text, i);
        return;
    }
    double v = w->value[i];
    if (w->mode == W_NEGINT) { put_int(b, (int64_t)(-v)); return; }
    if (w->mode == W_ACCESS) {
        int64_t lv = (int64_t)v;
        char q[3] = {'"', lv >= 0 && lv < 4 ? ACCESS[lv] : '?', '"'};
        if (json) put(b, q, 3);
        else put(b, q + 1, 1);
        return;
    }
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    if (!c->last_valid[slot][json] || c->last_bits[slot][json] != bits) {
        c->last_len[slot][json] = format_float(c->last[slot][json], v, json);
        c->last_bits[slot][json] = bits;
        c->last_valid[slot][json] = 1;
    }
    put(b, c->last[slot][json], c->last_len[slot][json]);
}

static int push3(Ctx *c, int64_t *top, int64_t a, int64_t b, int64_t d) {
    if (*top + 3 > c->stack_cap) {
        int64_t cap = c->stack_cap ? c->stack_cap * 2 : 3 * 1024;
        int64_t *s = realloc(c->stack, (size_t)cap * sizeof(int64_t));
        if (!s) { c->out.failed = 1; return 0; }
        c->stack = s; c->stack_cap = cap;
    }
    c->stack[*top] = a; c->stack[*top + 1] = b; c->stack[*top + 2] = d;
    *top += 3;
    return 1;
}

/* ---- JSON ------------------------------------------------------------------------------------ */

static void json_leaf(Ctx *c, int64_t n) {
    Buf *b = &c->out;
    put_piece(b, c->fjson_off, c->fjson, c->node_fact[n]);
    PUTS(b, ", \"rule\": null, \"weight\": ");
    if (c->leaf_weightless) PUTS(b, "null");
    else put_weight(c, &c->node_w, 0, n, 1);
    PUTS(b, ", \"children\": []}");
}

static void json_open(Ctx *c, int64_t n) {
    Buf *b = &c->out;
    put_piece(b, c->fjson_off, c->fjson, c->node_fact[n]);
    PUTS(b, ", ");
    put_piece(b, c->rjson_off, c->rjson, c->node_rule[n]);
    PUTS(b, ", \"children\": [");
}

/* {"relation": ..., "args": [...], "rule": ..., "weight": ..., "children": [...]} */
static void json_tree(Ctx *c, int64_t root) {
    Buf *b = &c->out;
    if (c->node_rule[root] < 0) { json_leaf(c, root); return; }
    int64_t top = 0;
    json_open(c, root);
    if (!push3(c, &top, root, 0, 0)) return;
    while (top > 0 && !b->failed) {
        int64_t *f = c->stack + top - 3;
        int64_t n = f[0], i = f[1];
        int64_t lo = c->child_ptr[n], hi = c->child_ptr[n + 1];
        if (lo + i >= hi) { PUTS(b, "]}"); top -= 3; continue; }
        f[1] = i + 1;
        if (i > 0) PUTS(b, ", ");
        int64_t ch = c->child[lo + i];
        if (c->node_rule[ch] < 0) json_leaf(c, ch);
        else { json_open(c, ch); if (!push3(c, &top, ch, 0, 0)) return; }
    }
}

static void json_answer(Ctx *c, int64_t a) {
    Buf *b = &c->out;
    PUTS(b, "{\"fact\": ");
    put_piece(b, c->fjson_off, c->fjson, c->ans_fact[a]);
    PUTS(b, "}, \"trees\": [");
    for (int64_t t = c->ans_ptr[a]; t < c->ans_ptr[a + 1]; t++) {
        if (t > c->ans_ptr[a]) PUTS(b, ", ");
        PUTS(b, "{\"weight\": ");
        put_weight(c, &c->ans_w, 1, t, 1);
        PUTS(b, ", \"tree\": ");
        json_tree(c, c->ans_root[t]);
        PUTS(b, "}");
    }
    PUTS(b, "]}");
}

/* ---- text ------------------------------------------------------------------------------------ */

static const char *CONN_FIRST[3] = {"    ", "\xe2\x94\x9c\xe2\x94\x80 ", "\xe2\x94\x94\xe2\x94\x80 "}; /* "    ", "├─ ", "└─ " */
static const int CONN_FIRST_LEN[3] = {4, 7, 7};
static const char *CONN_REST[3] = {"    ", "\xe2\x94\x82  ", "   "}; /* "    ", "│  ", "   " */
static const int CONN_REST_LEN[3] = {4, 5, 3};

static void text_label(Ctx *c, int64_t n) {
    Buf *b = &c->out;
    put_piece(b, c->ftext_off, c->ftext, c->node_fact[n]);
    PUTS(b, "  ");
    int32_t r = c->node_rule[n];
    if (r >= 0) { put_piece(b, c->rtext_off, c->rtext, r); return; }
    if (c->leaf_weightless) { PUTS(b, "(fact)"); return; }
    PUTS(b, "(fact ");
    put_weight(c, &c->node_w, 0, n, 0);
    PUTS(b, ")");
}

/* one line per node, pre-order: the prefix of box-drawing characters, the label */
static void text_tree(Ctx *c, int64_t root) {
    Buf *b = &c->out;
    int64_t top = 0;
    if (!push3(c, &top, root, 0, 0)) return;
    while (top > 0 && !b->failed) {
        top -= 3;
        int64_t n = c->stack[top], L = c->stack[top + 1], conn = c->stack[top + 2];
        put(b, c->pre, L);
        put(b, CONN_FIRST[conn], CONN_FIRST_LEN[conn]);
        text_label(c, n);
        PUTS(b, "\n");
        int64_t need = L + CONN_REST_LEN[conn];
        if (need > c->pre_cap) {
            int64_t cap = c->pre_cap ? c->pre_cap : 256;
            while (cap < need) cap *= 2;
            char *p = realloc(c->pre, (size_t)cap);
            if (!p) { b->failed = 1; return; }
            c->pre = p; c->pre_cap = cap;
        }
        /* pre[0:L] is the parent's continuation and stays valid: deeper lines write past it */
        memcpy(c->pre + L, CONN_REST[conn], (size_t)CONN_REST_LEN[conn]);
        int64_t lo = c->child_ptr[n], hi = c->child_ptr[n + 1];
        for (int64_t j = hi - 1; j >= lo; j--)
            if (!push3(c, &top, c->child[j], need, j == hi - 1 ? 2 : 1)) return;
    }
}

static void text_answer(Ctx *c, int64_t a) {
    Buf *b = &c->out;
    put_piece(b, c->ftext_off, c->ftext, c->ans_fact[a]);
    PUTS(b, "\n");
    for (int64_t t = c->ans_ptr[a]; t < c->ans_ptr[a + 1]; t++) {
        PUTS(b, "  #");
        put_int(b, t - c->ans_ptr[a] + 1);
        PUTS(b, "  weight ");
        put_weight(c, &c->ans_w, 1, t, 0);
        PUTS(b, "\n");
        text_tree(c, c->ans_root[t]);
    }
    PUTS(b, "\n");
}

/* ---- the interface --------------------------------------------------------------------------- */

int64_t selp_render_abi(void) { return RENDER_ABI; }

/* P: pointer arrays as listed; the Python side keeps every array alive while the context is */
void *selp_render_new(const int64_t *node_fact, const int32_t *node_rule, const int64_t *child_ptr,
                      const int64_t *child, int node_mode, const double *node_value,
                      const int64_t *node_text_off, const char *node_text, const int64_t *node_json_off,
                      const char *node_json, int leaf_weightless,
                      const int64_t *ftext_off, const char *ftext, const int64_t *fjson_off, const char *fjson,
                      const int64_t *rtext_off, const char *rtext, const int64_t *rjson_off, const char *rjson,
                      const int64_t *rname_off, const char *rname,
                      int64_t n_answers, const int64_t *ans_fact, const int64_t *ans_ptr, const int64_t *ans_root,
                      int ans_mode, const double *ans_value, const int64_t *ans_text_off, const char *ans_text,
                      const int64_t *ans_json_off, const char *ans_json) {
    Ctx *c = calloc(1, sizeof(Ctx));
    if (!c) return NULL;
    c->node_fact = node_fact; c->node_rule = node_rule; c->child_ptr = child_ptr; c->child = child;
    c->node_w = (Weights){node_mode, node_value, node_text_off, node_text, node_json_off, node_json};
    c->leaf_weightless = leaf_weightless;
    c->ftext_off = ftext_off; c->ftext = ftext; c->fjson_off = fjson_off; c->fjson = fjson;
    c->rtext_off = rtext_off; c->rtext = rtext; c->rjson_off = rjson_off; c->rjson = rjson;
    c->rname_off = rname_off; c->rname = rname;
    c->n_answers = n_answers; c->ans_fact = ans_fact; c->ans_ptr = ans_ptr; c->ans_root = ans_root;
    c->ans_w = (Weights){ans_mode, ans_value, ans_text_off, ans_text, ans_json_off, ans_json};
    return c;
}

void selp_render_free(void *p) {
    Ctx *c = p;
    if (!c) return;
    free(c->out.p); free(c->stack); free(c->pre); free(c->ans_last);
    free(c);
}

/* Render answers a0, a0+1, ... in fmt until the output holds at least `limit` bytes or the
 * answers end. *out / *len: the chunk (valid until the next call). Returns the next answer to
 * render, or -1 when memory ran out. JSON answers after the first get their ", " separator. */
int64_t selp_render_answers(void *p, int fmt, int64_t a0, int64_t limit, char **out, int64_t *len) {
    Ctx *c = p;
    c->out.n = 0;
    int64_t a = a0;
    while (a < c->n_answers && c->out.n < limit && !c->out.failed) {
        if (fmt == FMT_TEXT) text_answer(c, a);
        else {
            if (fmt == FMT_JSON && a > 0) PUTS(&c->out, ", ");
            json_answer(c, a);
            if (fmt == FMT_JSONL) PUTS(&c->out, "\n");
        }
        a++;
    }
    *out = c->out.p;
    *len = c->out.n;
    return c->out.failed ? -1 : a;
}

/* Nodes reachable from the answers, numbered in post-order (children before parents, answers
 * in order), and the facts in order of first use. new_id (n_nodes) and fact_new (n_facts) come
 * filled with -1; order / fact_order receive the old ids in the new order. counts[0], [1]: how
 * many nodes and facts. Returns 0, or -1 when memory ran out. */
int selp_postorder(int64_t n_answers, const int64_t *ans_ptr, const int64_t *ans_root, const int64_t *child_ptr,
                   const int64_t *child, const int64_t *node_fact, int64_t *new_id, int64_t *order,
                   int64_t *fact_new, int64_t *fact_order, int64_t *counts) {
    int64_t cap = 2 * 1024, top = 0, nn = 0, nf = 0;
    int64_t *st = malloc((size_t)cap * sizeof(int64_t));
    if (!st) return -1;
    for (int64_t t = 0; t < ans_ptr[n_answers]; t++) {
        int64_t r = ans_root[t];
        if (new_id[r] >= 0) continue;
        new_id[r] = -2; /* on the stack */
        st[0] = r; st[1] = 0; top = 2;
        while (top > 0) {
            int64_t n = st[top - 2], i = st[top - 1];
            int64_t lo = child_ptr[n], hi = child_ptr[n + 1];
            if (lo + i < hi) {
                st[top - 1] = i + 1;
                int64_t ch = child[lo + i];
                if (new_id[ch] != -1) continue; /* numbered (a DAG has no cycle through -2) */
                if (top + 2 > cap) {
                    cap *= 2;
                    int64_t *s = realloc(st, (size_t)cap * sizeof(int64_t));
                    if (!s) { free(st); return -1; }
                    st = s;
                }
                new_id[ch] = -2;
                st[top] = ch; st[top + 1] = 0; top += 2;
                continue;
            }
            top -= 2;
            new_id[n] = nn;
            order[nn++] = n;
            int64_t f = node_fact[n];
            if (fact_new[f] < 0) { fact_new[f] = nf; fact_order[nf++] = f; }
        }
    }
    free(st);
    counts[0] = nn; counts[1] = nf;
    return 0;
}

/* The shared-subtree stream over post-ordered nodes (selp_postorder's numbering, applied by the
 * caller): from node e0 on, each node's line preceded by its fact's line when the fact is new,
 * and each answer's line as soon as all its trees' nodes are out. Same chunking and return as
 * selp_render_answers (the next node; n_nodes when done). */
int64_t selp_render_dag(void *p, int64_t n_nodes, int64_t e0, int64_t limit, char **out, int64_t *len) {
    Ctx *c = p;
    Buf *b = &c->out;
    b->n = 0;
    if (!c->ans_last) {
        c->ans_last = malloc((size_t)(c->n_answers + 1) * sizeof(int64_t));
        if (!c->ans_last) return -1;
        for (int64_t a = 0; a < c->n_answers; a++) {
            int64_t m = -1;
            for (int64_t t = c->ans_ptr[a]; t < c->ans_ptr[a + 1]; t++)
                if (c->ans_root[t] > m) m = c->ans_root[t];
            c->ans_last[a] = m;
        }
    }
    int64_t e = e0;
    for (;;) {
        /* answers whose trees are all out */
        while (c->next_answer < c->n_answers && c->ans_last[c->next_answer] < e) {
            int64_t a = c->next_answer++;
            PUTS(b, "{\"answer\": ");
            put_int(b, c->ans_fact[a]);
            PUTS(b, ", \"trees\": [");
            for (int64_t t = c->ans_ptr[a]; t < c->ans_ptr[a + 1]; t++) {
                if (t > c->ans_ptr[a]) PUTS(b, ", ");
                put_int(b, c->ans_root[t]);
            }
            PUTS(b, "]}\n");
        }
        if (e >= n_nodes || b->n >= limit || b->failed) break;
        int64_t f = c->node_fact[e];
        if (f == c->next_fact) { /* facts are numbered in order of first use */
            PUTS(b, "{\"fact\": ");
            put_int(b, f);
            PUTS(b, ", ");
            put(b, c->fjson + c->fjson_off[f] + 1, c->fjson_off[f + 1] - c->fjson_off[f] - 1);
            PUTS(b, "}\n");
            c->next_fact++;
        }
        PUTS(b, "{\"entry\": ");
        put_int(b, e);
        PUTS(b, ", \"fact\": ");
        put_int(b, f);
        PUTS(b, ", \"rule\": ");
        if (c->node_rule[e] < 0) PUTS(b, "null");
        else put_piece(b, c->rname_off, c->rname, c->node_rule[e]);
        PUTS(b, ", \"weight\": ");
        put_weight(c, &c->node_w, 0, e, 1);
        PUTS(b, ", \"children\": [");
        for (int64_t j = c->child_ptr[e]; j < c->child_ptr[e + 1]; j++) {
            if (j > c->child_ptr[e]) PUTS(b, ", ");
            put_int(b, c->child[j]);
        }
        PUTS(b, "]}\n");
        e++;
    }
    *out = b->p;
    *len = b->n;
    return b->failed ? -1 : e;
}

/* ---- a module, so that setuptools builds it as one and importlib finds its file ---------- */

#include <Python.h>

static struct PyModuleDef render_module = {
    PyModuleDef_HEAD_INIT, "_render",
    "Derivation trees streamed from flat arrays; called through ctypes (see selp.topk.render).", -1, NULL,
};

PyMODINIT_FUNC PyInit__render(void) { return PyModule_Create(&render_module); }
