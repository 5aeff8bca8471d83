/* Unigram's Viterbi pass in C: the twin of core/pipeline/models/unigram.py's
 * UnigramModel.best_path (sentencepiece's EncodeOptimized, Hugging Face's
 * encode_optimized). Same loop, same order of comparisons, same float rounding, so the
 * same best path on every input, ties included (tests/test_native_unigram.py checks it
 * against the pure search on arbitrary text and on real model files). And reading a
 * tokenizer.json's Unigram scores as the tokenizers library reads them (serde_floats,
 * vocab_columns: the twins of core/pipeline/models/unigram_json.py's, at the end of this file).
 *
 *   Lattice(candidates, scores, unk_score, float32, reset, byte_ids)
 *       built once per model: `candidates` maps each piece the search may match to its ID
 *       (-1: in the trie but never a node, an UNUSED piece), `scores` the score by ID;
 *       `float32` rounds every path score to a C float as sentencepiece does (else
 *       double, as Hugging Face); `reset` is the score reset (1e5, or inf); `byte_ids` the
 *       256 byte pieces' IDs (-1 where missing).
 *   .best_path(text, start=0.0) -> ([(start, end, id)], score)   id -1: an unknown char
 *   .encode(text, byte_fallback, unk_id) -> [id]   the sentencepiece finish of
 *       best_path(text): an unknown character as its byte pieces (byte_fallback; none when
 *       one is missing), else a run of unknown characters as one unk_id (-1 when the model
 *       has none: the caller raises its error)
 *
 * The pure search sums in Python floats (doubles) and stores each sum in an
 * array("f") or array("d"): a double sum of two values rounded once to float. Here the
 * same: every sum is a double, rounded to float when `float32`, kept in a double array.
 *
 *   .tokenize_hf(text, unk_id, byte_fallback) -> [(id, start, end)] or None
 *       Hugging Face's finish of best_path(text) (the pure _finish_huggingface): unknown
 *       nodes and unk_id pieces next to each other fused, the fused string looked up in
 *       `candidates`, else its byte pieces (byte_fallback, when all are there), else
 *       unk_id; None when that is needed and unk_id is -1 (the caller raises its error)
 *
 * The trie is over code points: node 0 is the root; an edge (node, code point) -> child
 * lives in one open-addressing hash table sized from the pieces' total length (no growth,
 * memory linear in the vocabulary), each entry holding the child's value: the piece's ID,
 * or -1 (a prefix of a piece only, or an UNUSED piece), as the pure search's dict of
 * pieces and prefixes. Every walk starts at the root, so its edges below U+10000 are also
 * in a direct table.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <math.h>
#include <string.h>

#define EMPTY_KEY UINT64_MAX
#define NO_START (-1)

typedef struct {
    uint64_t key;     /* (node << 21) | code point, EMPTY_KEY where free */
    uint32_t child;   /* the edge's child node */
    int32_t value;    /* the child's piece ID, or -1 */
} Edge;

#define ROOT_DIRECT 0x10000

typedef struct {
    PyObject_HEAD
    Edge *edges;
    size_t mask;      /* table size - 1 (a power of two) */
    int shift;        /* 64 - log2(table size): a key's slot is its hash's top bits */
    int32_t *root;    /* code point < ROOT_DIRECT -> the root's edge (its slot), or -1 */
    size_t nodes;
    PyObject *candidates; /* piece -> ID, for the Hugging Face finish's look-ups */
    PyObject **id_objs;   /* ID -> its int object, made on first use (IDs < n_scores) */
    double *scores;   /* by ID */
    Py_ssize_t n_scores;
    double unk_score;
    double reset;
    int float32;
    int32_t byte_ids[256];
} Lattice;

static inline size_t
slot_of(uint64_t key, int shift)
{
    return (size_t)((key * 0x9E3779B97F4A7C15ULL) >> shift); /* Fibonacci hashing */
}

/* The edge from `node` along code point `cp`, or NULL. */
static inline const Edge *
edge_get(const Lattice *self, uint32_t node, Py_UCS4 cp)
{
    if (node == 0 && cp < ROOT_DIRECT) {
        int32_t slot = self->root[cp];
        return slot < 0 ? NULL : &self->edges[slot];
    }
    uint64_t key = ((uint64_t)node << 21) | (uint64_t)cp;
    size_t i = slot_of(key, self->shift);
    for (;;) {
        const Edge *e = &self->edges[i];
        if (e->key == key)
            return e;
        if (e->key == EMPTY_KEY)
            return NULL;
        i = (i + 1) & self->mask;
    }
}

/* The edge from `node` along `cp`, made when missing (the table has room: sized from the
 * total length of all pieces, an upper bound on the edges). */
static Edge *
edge_add(Lattice *self, uint32_t node, Py_UCS4 cp)
{
    uint64_t key = ((uint64_t)node << 21) | (uint64_t)cp;
    size_t i = slot_of(key, self->shift);
    for (;;) {
        Edge *e = &self->edges[i];
        if (e->key == key)
            return e;
        if (e->key == EMPTY_KEY) {
            e->key = key;
            e->child = (uint32_t)self->nodes++;
            e->value = -1;
            if (node == 0 && cp < ROOT_DIRECT)
                self->root[cp] = (int32_t)i;
            return e;
        }
        i = (i + 1) & self->mask;
    }
}

static void
Lattice_dealloc(Lattice *self)
{
    PyMem_Free(self->edges);
    PyMem_Free(self->root);
    PyMem_Free(self->scores);
    Py_XDECREF(self->candidates);
    if (self->id_objs != NULL) {
        for (Py_ssize_t i = 0; i < self->n_scores; i++)
            Py_XDECREF(self->id_objs[i]);
        PyMem_Free(self->id_objs);
    }
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* The table again at the smallest size that keeps it at most half full: sized first from
 * the pieces' total length, it holds fewer edges where pieces share prefixes (a 250,000-
 * piece model: a third), and a small table is a fast one (it stays in cache). */
static int
shrink_table(Lattice *self)
{
    size_t used = self->nodes - 1; /* (an edge per node but the root) */
    size_t cap = 16;
    int bits = 4;
    while (cap < 2 * used) {
        cap <<= 1;
        bits++;
    }
    if (cap >= self->mask + 1)
        return 0;
    Edge *edges = PyMem_Malloc(cap * sizeof(Edge));
    if (edges == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (size_t i = 0; i < cap; i++)
        edges[i].key = EMPTY_KEY;
    int shift = 64 - bits;
    for (size_t j = 0; j <= self->mask; j++) {
        const Edge *old = &self->edges[j];
        if (old->key == EMPTY_KEY)
            continue;
        size_t i = slot_of(old->key, shift);
        while (edges[i].key != EMPTY_KEY)
            i = (i + 1) & (cap - 1);
        edges[i] = *old;
        Py_UCS4 cp = (Py_UCS4)(old->key & ((1u << 21) - 1));
        if ((old->key >> 21) == 0 && cp < ROOT_DIRECT)
            self->root[cp] = (int32_t)i;
    }
    PyMem_Free(self->edges);
    self->edges = edges;
    self->mask = cap - 1;
    self->shift = shift;
    return 0;
}

static int
build_trie(Lattice *self, PyObject *candidates)
{
    PyObject *key, *val;
    Py_ssize_t pos = 0;
    size_t total = 1;
    while (PyDict_Next(candidates, &pos, &key, &val)) {
        if (!PyUnicode_Check(key)) {
            PyErr_SetString(PyExc_TypeError, "candidates: pieces must be str");
            return -1;
        }
        total += (size_t)PyUnicode_GET_LENGTH(key);
    }
    if (total >= ((size_t)1 << 31)) {
        PyErr_SetString(PyExc_OverflowError, "too many pieces for the native lattice");
        return -1;
    }
    size_t cap = 16;
    int bits = 4;
    while (cap < 2 * total) {
        cap <<= 1;
        bits++;
    }
    self->shift = 64 - bits;
    self->edges = PyMem_Malloc(cap * sizeof(Edge));
    self->root = PyMem_Malloc(ROOT_DIRECT * sizeof(int32_t));
    if (self->edges == NULL || self->root == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (size_t i = 0; i < cap; i++)
        self->edges[i].key = EMPTY_KEY;
    memset(self->root, 0xFF, ROOT_DIRECT * sizeof(int32_t)); /* all -1 */
    self->mask = cap - 1;
    self->nodes = 1;
    pos = 0;
    while (PyDict_Next(candidates, &pos, &key, &val)) {
        long id = PyLong_AsLong(val);
        if (id == -1 && PyErr_Occurred())
            return -1;
        if (id < -1 || id >= self->n_scores) {
            PyErr_SetString(PyExc_ValueError, "candidates: an ID without a score");
            return -1;
        }
        int kind = PyUnicode_KIND(key);
        const void *data = PyUnicode_DATA(key);
        Py_ssize_t len = PyUnicode_GET_LENGTH(key);
        uint32_t node = 0;
        Edge *last = NULL;
        for (Py_ssize_t i = 0; i < len; i++) {
            last = edge_add(self, node, PyUnicode_READ(kind, data, i));
            node = last->child;
        }
        if (last != NULL) /* (the empty piece is never a node: no walk ends at the root) */
            last->value = (int32_t)id;
    }
    return shrink_table(self);
}

static PyObject *
Lattice_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"candidates", "scores", "unk_score", "float32", "reset",
                             "byte_ids", NULL};
    PyObject *candidates, *scores, *byte_ids;
    double unk_score, reset;
    int float32;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O!OdpdO", kwlist, &PyDict_Type,
                                     &candidates, &scores, &unk_score, &float32, &reset,
                                     &byte_ids))
        return NULL;
    Lattice *self = (Lattice *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    self->unk_score = unk_score;
    self->reset = reset;
    self->float32 = float32;
    PyObject *seq = PySequence_Fast(scores, "scores must be a sequence of floats");
    if (seq == NULL)
        goto fail;
    self->n_scores = PySequence_Fast_GET_SIZE(seq);
    self->scores = PyMem_Malloc((size_t)(self->n_scores ? self->n_scores : 1) * sizeof(double));
    if (self->scores == NULL) {
        Py_DECREF(seq);
        PyErr_NoMemory();
        goto fail;
    }
    for (Py_ssize_t i = 0; i < self->n_scores; i++) {
        double s = PyFloat_AsDouble(PySequence_Fast_GET_ITEM(seq, i));
        if (s == -1.0 && PyErr_Occurred()) {
            Py_DECREF(seq);
            goto fail;
        }
        self->scores[i] = s;
    }
    Py_DECREF(seq);
    seq = PySequence_Fast(byte_ids, "byte_ids must be a sequence of 256 ints");
    if (seq == NULL)
        goto fail;
    if (PySequence_Fast_GET_SIZE(seq) != 256) {
        Py_DECREF(seq);
        PyErr_SetString(PyExc_ValueError, "byte_ids must be a sequence of 256 ints");
        goto fail;
    }
    for (int b = 0; b < 256; b++) {
        long v = PyLong_AsLong(PySequence_Fast_GET_ITEM(seq, b));
        if (v == -1 && PyErr_Occurred()) {
            Py_DECREF(seq);
            goto fail;
        }
        self->byte_ids[b] = (v < 0 || v > INT32_MAX) ? -1 : (int32_t)v;
    }
    Py_DECREF(seq);
    if (build_trie(self, candidates) < 0)
        goto fail;
    Py_INCREF(candidates);
    self->candidates = candidates;
    self->id_objs = PyMem_Calloc((size_t)(self->n_scores ? self->n_scores : 1), sizeof(PyObject *));
    if (self->id_objs == NULL) {
        PyErr_NoMemory();
        goto fail;
    }
    return (PyObject *)self;
fail:
    Py_DECREF(self);
    return NULL;
}

/* Whether a method got min..max positional arguments (else a TypeError, 0). */
static int
arg_count(const char *name, Py_ssize_t nargs, Py_ssize_t min, Py_ssize_t max)
{
    if (nargs >= min && nargs <= max)
        return 1;
    PyErr_Format(PyExc_TypeError, "%s() takes %zd to %zd arguments (%zd given)", name, min,
                 max, nargs);
    return 0;
}

/* `arg` if it is a str, else NULL with a TypeError. */
static PyObject *
str_arg(PyObject *arg)
{
    if (!PyUnicode_Check(arg)) {
        PyErr_Format(PyExc_TypeError, "text must be str, not %.100s", Py_TYPE(arg)->tp_name);
        return NULL;
    }
#if PY_VERSION_HEX < 0x030C0000
    if (PyUnicode_READY(arg) < 0) /* (a legacy string: its code points made readable) */
        return NULL;
#endif
    return arg;
}

/* The search's state at each position of a text of n characters: the best score of a
 * path ending there, where its last node starts (NO_START: none yet) and its ID. */
typedef struct {
    double best;
    int32_t start;
    int32_t id;
} Cell;

typedef struct {
    Cell *cells;
} Viterbi;

static void
viterbi_free(Viterbi *v)
{
    PyMem_Free(v->cells);
}

/* The pure best_path's loop over `data` (n code points of type T), from score `start`. */
#define VITERBI_LOOP(T)                                                                   \
    do {                                                                                  \
        const T *chars = (const T *)data;                                                 \
        for (Py_ssize_t s = 0; s < n; s++) {                                              \
            double here = cells[s].best;                                                  \
            if (!(-reset <= here && here <= reset)) {                                     \
                /* sentencepiece 0.2.3's score reset (NaN too, as the pure comparison) */ \
                for (Py_ssize_t i = s; i <= frontier; i++) {                              \
                    if (i == s || cells[i].start != NO_START) {                           \
                        double d = cells[i].best - here;                                  \
                        cells[i].best = f32 ? (double)(float)d : d;                       \
                    }                                                                     \
                }                                                                         \
                here = 0.0;                                                               \
            }                                                                             \
            int single = 0;                                                               \
            uint32_t node = 0;                                                            \
            for (Py_ssize_t k = s + 1; k <= n; k++) {                                     \
                const Edge *e = edge_get(self, node, (Py_UCS4)chars[k - 1]);              \
                if (e == NULL)                                                            \
                    break;                                                                \
                node = e->child;                                                          \
                int32_t id = e->value;                                                    \
                if (id >= 0) {                                                            \
                    if (k > frontier)                                                     \
                        frontier = k;                                                     \
                    double c = scores[id] + here;                                         \
                    if (f32)                                                              \
                        c = (double)(float)c;                                             \
                    Cell *to = &cells[k];                                                 \
                    if (to->start == NO_START || c > to->best) {                          \
                        to->best = c;                                                     \
                        to->start = (int32_t)s;                                           \
                        to->id = id;                                                      \
                    }                                                                     \
                    if (k == s + 1)                                                       \
                        single = 1;                                                       \
                }                                                                         \
            }                                                                             \
            if (!single) {                                                                \
                if (s + 1 > frontier)                                                     \
                    frontier = s + 1;                                                     \
                double c = self->unk_score + here;                                        \
                if (f32)                                                                  \
                    c = (double)(float)c;                                                 \
                Cell *to = &cells[s + 1];                                                 \
                if (to->start == NO_START || c > to->best) {                              \
                    to->best = c;                                                         \
                    to->start = (int32_t)s;                                               \
                    to->id = -1;                                                          \
                }                                                                         \
            }                                                                             \
        }                                                                                 \
    } while (0)

static int
viterbi(const Lattice *self, PyObject *text, double start, Viterbi *v)
{
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    v->cells = NULL;
    if (n >= INT32_MAX) { /* (positions are int32: a text of 2**31 characters is refused) */
        PyErr_NoMemory();
        return -1;
    }
    size_t size = (size_t)n + 1;
    Cell *cells = v->cells = PyMem_Malloc(size * sizeof(Cell));
    if (cells == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    const int f32 = self->float32;
    const double reset = self->reset;
    const double *scores = self->scores;
    for (size_t i = 0; i < size; i++) {
        cells[i].best = 0.0;
        cells[i].start = NO_START;
        cells[i].id = 0;
    }
    cells[0].best = f32 ? (double)(float)start : start;
    Py_ssize_t frontier = 0; /* the furthest end any node reached (max_frontier) */
    if (kind == PyUnicode_1BYTE_KIND)
        VITERBI_LOOP(Py_UCS1);
    else if (kind == PyUnicode_2BYTE_KIND)
        VITERBI_LOOP(Py_UCS2);
    else
        VITERBI_LOOP(Py_UCS4);
    return 0;
}

/* The best path's node count (walking back from n). */
static Py_ssize_t
path_length(const Viterbi *v, Py_ssize_t n)
{
    Py_ssize_t count = 0;
    for (Py_ssize_t end = n; end > 0; end = v->cells[end].start)
        count++;
    return count;
}

static PyObject *
Lattice_best_path(Lattice *self, PyObject *const *args, Py_ssize_t nargs)
{
    PyObject *text;
    double start = 0.0;
    if (!arg_count("best_path", nargs, 1, 2) || (text = str_arg(args[0])) == NULL)
        return NULL;
    if (nargs > 1 && (start = PyFloat_AsDouble(args[1])) == -1.0 && PyErr_Occurred())
        return NULL;
    Viterbi v;
    if (viterbi(self, text, start, &v) < 0)
        return NULL;
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    Py_ssize_t count = path_length(&v, n);
    PyObject *path = PyList_New(count);
    if (path == NULL) {
        viterbi_free(&v);
        return NULL;
    }
    Py_ssize_t end = n;
    for (Py_ssize_t i = count - 1; i >= 0; i--) {
        Py_ssize_t s = v.cells[end].start;
        PyObject *node = Py_BuildValue("(nni)", s, end, (int)v.cells[end].id);
        if (node == NULL) {
            Py_DECREF(path);
            viterbi_free(&v);
            return NULL;
        }
        PyList_SET_ITEM(path, i, node);
        end = s;
    }
    double score = v.cells[n].best;
    viterbi_free(&v);
    return Py_BuildValue("(Nd)", path, score);
}

/* Append `id` to `out` as an int (one object per ID, kept: an encode's list holds
 * thousands of them); -1 with an exception on failure. */
static int
append_id(Lattice *self, PyObject *out, long id)
{
    PyObject *x;
    if (id >= 0 && id < self->n_scores) {
        x = self->id_objs[id];
        if (x == NULL) {
            x = self->id_objs[id] = PyLong_FromLong(id);
            if (x == NULL)
                return -1;
        }
        return PyList_Append(out, x);
    }
    x = PyLong_FromLong(id);
    if (x == NULL)
        return -1;
    int rc = PyList_Append(out, x);
    Py_DECREF(x);
    return rc;
}

/* UTF-8 bytes of one code point (0 for a surrogate: it has none). */
static int
utf8_of(Py_UCS4 cp, unsigned char *buf)
{
    if (cp < 0x80) {
        buf[0] = (unsigned char)cp;
        return 1;
    }
    if (cp < 0x800) {
        buf[0] = (unsigned char)(0xC0 | (cp >> 6));
        buf[1] = (unsigned char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp >= 0xD800 && cp <= 0xDFFF)
        return 0;
    if (cp < 0x10000) {
        buf[0] = (unsigned char)(0xE0 | (cp >> 12));
        buf[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
        buf[2] = (unsigned char)(0x80 | (cp & 0x3F));
        return 3;
    }
    buf[0] = (unsigned char)(0xF0 | (cp >> 18));
    buf[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
    buf[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
    buf[3] = (unsigned char)(0x80 | (cp & 0x3F));
    return 4;
}

static PyObject *
Lattice_encode(Lattice *self, PyObject *const *args, Py_ssize_t nargs)
{
    PyObject *text;
    int byte_fallback;
    long unk_id;
    if (!arg_count("encode", nargs, 3, 3) || (text = str_arg(args[0])) == NULL)
        return NULL;
    if ((byte_fallback = PyObject_IsTrue(args[1])) < 0)
        return NULL;
    if ((unk_id = PyLong_AsLong(args[2])) == -1 && PyErr_Occurred())
        return NULL;
    Viterbi v;
    if (viterbi(self, text, 0.0, &v) < 0)
        return NULL;
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    /* the path's ends, left to right */
    Py_ssize_t count = path_length(&v, n);
    Py_ssize_t *ends = PyMem_Malloc((size_t)(count ? count : 1) * sizeof(Py_ssize_t));
    PyObject *out = ends != NULL ? PyList_New(0) : NULL;
    if (out == NULL) {
        if (ends == NULL)
            PyErr_NoMemory();
        goto fail;
    }
    Py_ssize_t end = n;
    for (Py_ssize_t i = count - 1; i >= 0; i--) {
        ends[i] = end;
        end = v.cells[end].start;
    }
    int prev_unknown = 0;
    for (Py_ssize_t i = 0; i < count; i++) {
        Py_ssize_t e = ends[i];
        int32_t id = v.cells[e].id;
        if (id >= 0) {
            if (append_id(self, out, id) < 0)
                goto fail;
            prev_unknown = 0;
            continue;
        }
        if (!byte_fallback) {
            if (!prev_unknown && append_id(self, out, unk_id) < 0)
                goto fail;
            prev_unknown = 1;
            continue;
        }
        /* an unknown node is one character: its byte pieces, or none if one is missing */
        Py_UCS4 cp = PyUnicode_READ(kind, data, v.cells[e].start);
        unsigned char buf[4];
        int len = utf8_of(cp, buf);
        if (len == 0) {
            /* a lone surrogate: str.encode's error, as the pure code raises */
            PyObject *one = PyUnicode_Substring(text, v.cells[e].start, e);
            PyObject *raw = one != NULL ? PyUnicode_AsUTF8String(one) : NULL;
            Py_XDECREF(one);
            Py_XDECREF(raw);
            if (raw != NULL)
                PyErr_SetString(PyExc_UnicodeEncodeError, "surrogates not allowed");
            goto fail;
        }
        int missing = 0;
        for (int b = 0; b < len; b++)
            missing |= self->byte_ids[buf[b]] < 0;
        if (missing)
            continue;
        for (int b = 0; b < len; b++)
            if (append_id(self, out, self->byte_ids[buf[b]]) < 0)
                goto fail;
    }
    PyMem_Free(ends);
    viterbi_free(&v);
    return out;
fail:
    Py_XDECREF(out);
    PyMem_Free(ends);
    viterbi_free(&v);
    return NULL;
}

/* Append (id, start, end) to `out`; -1 with an exception on failure. */
static int
append_token(PyObject *out, long id, Py_ssize_t start, Py_ssize_t end)
{
    PyObject *t = Py_BuildValue("(lnn)", id, start, end);
    if (t == NULL)
        return -1;
    int rc = PyList_Append(out, t);
    Py_DECREF(t);
    return rc;
}

/* One fused stretch text[start:end] of unknown nodes: the piece of that string, else its
 * byte pieces (byte_fallback, all present), else unk_id. 1: `out` has them; 0: it needs
 * unk_id and there is none; -1: an exception. */
static int
finish_unknown(Lattice *self, PyObject *text, Py_ssize_t start, Py_ssize_t end, long unk_id,
               int byte_fallback, PyObject *out)
{
    PyObject *sub = PyUnicode_Substring(text, start, end);
    if (sub == NULL)
        return -1;
    PyObject *found = PyDict_GetItemWithError(self->candidates, sub); /* borrowed */
    if (found != NULL) {
        long id = PyLong_AsLong(found);
        Py_DECREF(sub);
        if (id == -1 && PyErr_Occurred())
            return -1;
        return append_token(out, id, start, end) < 0 ? -1 : 1;
    }
    if (PyErr_Occurred()) {
        Py_DECREF(sub);
        return -1;
    }
    if (byte_fallback) {
        PyObject *raw = PyUnicode_AsUTF8String(sub); /* (a surrogate raises, as in Python) */
        Py_DECREF(sub);
        if (raw == NULL)
            return -1;
        const unsigned char *bytes = (const unsigned char *)PyBytes_AS_STRING(raw);
        Py_ssize_t len = PyBytes_GET_SIZE(raw);
        int missing = 0;
        for (Py_ssize_t b = 0; b < len; b++)
            missing |= self->byte_ids[bytes[b]] < 0;
        if (!missing) {
            for (Py_ssize_t b = 0; b < len; b++) {
                if (append_token(out, self->byte_ids[bytes[b]], start, end) < 0) {
                    Py_DECREF(raw);
                    return -1;
                }
            }
            Py_DECREF(raw);
            return 1;
        }
        Py_DECREF(raw);
    }
    else {
        Py_DECREF(sub);
    }
    if (unk_id < 0)
        return 0;
    return append_token(out, unk_id, start, end) < 0 ? -1 : 1;
}

static PyObject *
Lattice_tokenize_hf(Lattice *self, PyObject *const *args, Py_ssize_t nargs)
{
    PyObject *text;
    long unk_id;
    int byte_fallback;
    if (!arg_count("tokenize_hf", nargs, 3, 3) || (text = str_arg(args[0])) == NULL)
        return NULL;
    if ((unk_id = PyLong_AsLong(args[1])) == -1 && PyErr_Occurred())
        return NULL;
    if ((byte_fallback = PyObject_IsTrue(args[2])) < 0)
        return NULL;
    Viterbi v;
    if (viterbi(self, text, 0.0, &v) < 0)
        return NULL;
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    Py_ssize_t count = path_length(&v, n);
    Py_ssize_t *ends = PyMem_Malloc((size_t)(count ? count : 1) * sizeof(Py_ssize_t));
    PyObject *out = ends != NULL ? PyList_New(0) : NULL;
    if (out == NULL) {
        if (ends == NULL)
            PyErr_NoMemory();
        goto fail;
    }
    Py_ssize_t end = n;
    for (Py_ssize_t i = count - 1; i >= 0; i--) {
        ends[i] = end;
        end = v.cells[end].start;
    }
    /* fused unknown stretches: [run_start, run_end) pending while run_start >= 0 */
    Py_ssize_t run_start = -1, run_end = -1;
    for (Py_ssize_t i = 0; i <= count; i++) {
        Py_ssize_t e = i < count ? ends[i] : -1;
        int32_t id = i < count ? v.cells[e].id : 0;
        int is_unk = i < count && (id < 0 || (unk_id >= 0 && id == unk_id));
        if (is_unk) {
            if (run_start < 0)
                run_start = v.cells[e].start;
            run_end = e;
            continue;
        }
        if (run_start >= 0) {
            int rc = finish_unknown(self, text, run_start, run_end, unk_id, byte_fallback, out);
            if (rc < 0)
                goto fail;
            if (rc == 0) { /* no unk_id: the caller raises its error */
                Py_DECREF(out);
                PyMem_Free(ends);
                viterbi_free(&v);
                Py_RETURN_NONE;
            }
            run_start = -1;
        }
        if (i < count && append_token(out, id, v.cells[e].start, e) < 0)
            goto fail;
    }
    PyMem_Free(ends);
    viterbi_free(&v);
    return out;
fail:
    Py_XDECREF(out);
    PyMem_Free(ends);
    viterbi_free(&v);
    return NULL;
}

static PyObject *
Lattice_sizeof(Lattice *self, PyObject *Py_UNUSED(ignored))
{
    size_t cap = self->mask + 1;
    size_t bytes = sizeof(Lattice) + cap * sizeof(Edge) + ROOT_DIRECT * sizeof(int32_t) +
                   (size_t)self->n_scores * sizeof(double);
    return PyLong_FromSize_t(bytes);
}

static PyMethodDef Lattice_methods[] = {
    {"best_path", (PyCFunction)(void (*)(void))Lattice_best_path, METH_FASTCALL,
     "best_path(text, start=0.0) -> ([(start, end, id)], score): the best path, id -1 "
     "for an unknown character"},
    {"encode", (PyCFunction)(void (*)(void))Lattice_encode, METH_FASTCALL,
     "encode(text, byte_fallback, unk_id) -> [id]: the best path's IDs; an unknown "
     "character as its byte pieces (byte_fallback), a run of them as one unk_id"},
    {"tokenize_hf", (PyCFunction)(void (*)(void))Lattice_tokenize_hf, METH_FASTCALL,
     "tokenize_hf(text, unk_id, byte_fallback) -> [(id, start, end)] or None: Hugging "
     "Face's finish of the best path (None: it needs unk_id and there is none)"},
    {"__sizeof__", (PyCFunction)Lattice_sizeof, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject LatticeType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "tokplay_native.unigram.Lattice",
    .tp_basicsize = sizeof(Lattice),
    .tp_dealloc = (destructor)Lattice_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A Unigram model's search: its pieces as a trie over code points, its scores.",
    .tp_methods = Lattice_methods,
    .tp_new = Lattice_new,
};

/* ---- serde_floats: scores as the tokenizers library reads them from JSON -------------- */

PyDoc_STRVAR(serde_floats_doc,
"serde_floats(values, fallback, /) -> list[float]\n--\n\n"
"core.pipeline.models.unigram_json._serde_floats: each float as serde_json (tokenizers) reads the\n"
"digits Python prints for it. A value whose repr is plain digits (no exponent, no nan or\n"
"inf, at most 20 characters) and that is not zero is its digits as an integer, made a float,\n"
"divided by 10 to the number of digits after the point; any other is fallback(value).\n"
"TypeError when values is no list of exact floats.");

static PyObject *
serde_floats(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    /* 10^k, each exact as a double (as float(f"1e{k}") reads it) */
    static const double pow10[21] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,
                                     1e7,  1e8,  1e9,  1e10, 1e11, 1e12, 1e13,
                                     1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20};
    (void)module;
    if (nargs != 2 || !PyList_CheckExact(args[0])) {
        PyErr_SetString(PyExc_TypeError, "serde_floats(values: list, fallback)");
        return NULL;
    }
    PyObject *values = args[0], *fallback = args[1];
    Py_ssize_t n = PyList_GET_SIZE(values);
    PyObject *out = PyList_New(n);
    if (out == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = PyList_GET_ITEM(values, i), *made = NULL;
        if (!PyFloat_CheckExact(item)) {
            PyErr_SetString(PyExc_TypeError, "serde_floats: every value must be a float");
            Py_DECREF(out);
            return NULL;
        }
        double v = PyFloat_AS_DOUBLE(item);
        char *text = v == 0.0 ? NULL : PyOS_double_to_string(v, 'r', 0, Py_DTSF_ADD_DOT_0, NULL);
        if (v != 0.0 && text == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        size_t len = text == NULL ? 0 : strlen(text);
        const char *dot = text == NULL ? NULL : strchr(text, '.');
        if (text != NULL && len <= 20 && dot != NULL && strpbrk(text, "en") == NULL) {
            /* (at most 19 digits: they fit a u64) */
            uint64_t digits = 0;
            for (const char *c = text; *c; c++)
                if (*c >= '0' && *c <= '9')
                    digits = digits * 10 + (uint64_t)(*c - '0');
            double f = (double)digits;
            made = PyFloat_FromDouble((text[0] == '-' ? -f : f) / pow10[len - (size_t)(dot - text) - 1]);
        }
        else
            made = PyObject_CallOneArg(fallback, item);
        PyMem_Free(text);
        if (made == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        PyList_SET_ITEM(out, i, made);
    }
    return out;
}

/* ---- vocab_columns: a tokenizer.json's Unigram scores read from the file's digits ------ */

/* 10^k as serde_json's POW10 holds them (correctly rounded), filled at import */
static double serde_pow10[309];

typedef struct {
    const unsigned char *p, *end;
} Cursor;

static void
skip_ws(Cursor *c)
{
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r'))
        c->p++;
}

/* At a '"': past the string's closing quote. The key's text (between the quotes) in
 * *start, *len; *escaped when it holds a backslash. -1: no closing quote. A quote ends the
 * string when an even run of backslashes precedes it (JSON escapes are `\x` pairs). */
static int
skip_string(Cursor *c, const unsigned char **start, Py_ssize_t *len, int *escaped)
{
    const unsigned char *from = ++c->p;
    int esc = 0;
    for (;;) {
        const unsigned char *q = memchr(c->p, '"', (size_t)(c->end - c->p));
        if (q == NULL)
            return -1;
        const unsigned char *b = q;
        while (b > from && b[-1] == '\\')
            b--;
        esc |= q > c->p && memchr(c->p, '\\', (size_t)(q - c->p)) != NULL;
        c->p = q + 1;
        if (((q - b) & 1) == 0)
            break;
    }
    if (start != NULL) {
        *start = from;
        *len = (c->p - 1) - from;
        *escaped = esc;
    }
    return 0;
}

/* Past one JSON value (a string, a nested array or object, a number or literal). -1: the
 * text ends first. The input is valid JSON (json.loads read it); any other is only walked
 * within its bounds. */
static int
skip_value(Cursor *c)
{
    skip_ws(c);
    if (c->p >= c->end)
        return -1;
    if (*c->p == '"')
        return skip_string(c, NULL, NULL, NULL);
    if (*c->p == '{' || *c->p == '[') {
        Py_ssize_t depth = 0;
        while (c->p < c->end) {
            unsigned char ch = *c->p;
            if (ch == '"') {
                if (skip_string(c, NULL, NULL, NULL) < 0)
                    return -1;
                continue;
            }
            c->p++;
            if (ch == '{' || ch == '[')
                depth++;
            else if ((ch == '}' || ch == ']') && --depth == 0)
                return 0;
        }
        return -1;
    }
    while (c->p < c->end && strchr(",]} \t\n\r", *c->p) == NULL)
        c->p++;
    return 0;
}

/* The JSON number at the cursor as serde_json reads it (the pure serde_number); -1 when
 * the text is no JSON number. */
static int
serde_number(Cursor *c, double *out)
{
    const uint64_t max = UINT64_MAX;
    int negative = 0, full = 0, digits = 0;
    uint64_t sig = 0;
    int64_t exponent = 0;
    if (c->p < c->end && *c->p == '-') {
        negative = 1;
        c->p++;
    }
    for (; c->p < c->end && *c->p >= '0' && *c->p <= '9'; c->p++, digits++) {
        uint64_t d = (uint64_t)(*c->p - '0');
        if (full || sig > (max - d) / 10) {
            full = 1;
            exponent++;
        }
        else
            sig = sig * 10 + d;
    }
    if (digits == 0)
        return -1;
    int frac = c->p < c->end && *c->p == '.';
    int has_exp = 0;
    if (frac) {
        c->p++;
        digits = 0;
        int dropping = 0;
        for (; c->p < c->end && *c->p >= '0' && *c->p <= '9'; c->p++, digits++) {
            uint64_t d = (uint64_t)(*c->p - '0');
            if (dropping || sig > (max - d) / 10)
                dropping = 1; /* (and every digit after it) */
            else {
                sig = sig * 10 + d;
                exponent--;
            }
        }
        if (digits == 0)
            return -1;
    }
    if (c->p < c->end && (*c->p == 'e' || *c->p == 'E')) {
        has_exp = 1;
        c->p++;
        int exp_negative = 0;
        if (c->p < c->end && (*c->p == '+' || *c->p == '-'))
            exp_negative = *c->p++ == '-';
        int64_t power = 0;
        int overflow = 0;
        digits = 0;
        for (; c->p < c->end && *c->p >= '0' && *c->p <= '9'; c->p++, digits++) {
            int d = *c->p - '0';
            if (overflow || power * 10 + d > INT32_MAX)
                overflow = 1;
            else
                power = power * 10 + d;
        }
        if (digits == 0)
            return -1;
        if (overflow) { /* (an i32 exponent: 0, or out of range) */
            double z = sig != 0 && !exp_negative ? Py_HUGE_VAL : 0.0;
            *out = negative ? -z : z;
            return 0;
        }
        exponent += exp_negative ? -power : power;
        if (exponent > INT32_MAX)
            exponent = INT32_MAX;
        if (exponent < INT32_MIN)
            exponent = INT32_MIN;
    }
    double f = (double)sig;
    if (!frac && !has_exp && !full) { /* an integer: u64 or i64 */
        *out = negative ? -f : f;
        return 0;
    }
    for (;;) { /* serde_json's f64_from_parts */
        if (exponent >= -308 && exponent <= 308) {
            if (exponent >= 0)
                f *= serde_pow10[exponent];
            else
                f /= serde_pow10[-exponent];
            break;
        }
        if (f == 0.0 || exponent >= 0) {
            if (f != 0.0)
                f = Py_HUGE_VAL;
            break;
        }
        f /= 1e308;
        exponent += 308;
    }
    *out = negative ? -f : f;
    return 0;
}

/* The pure _close (math.isclose): serde_json's reading `score` can be the number Python parsed as `item`
 * (a float or an int); -1 with an exception (never raised: an int too big is no match). */
static int
close_to(double score, PyObject *item)
{
    double value;
    if (PyFloat_CheckExact(item))
        value = PyFloat_AS_DOUBLE(item);
    else {
        value = PyLong_AsDouble(item);
        if (value == -1.0 && PyErr_Occurred()) {
            if (!PyErr_ExceptionMatches(PyExc_OverflowError))
                return -1;
            PyErr_Clear();
            return 0;
        }
    }
    if (score == value)
        return 1;
    if (isinf(score) || isinf(value)) /* (math.isclose, rel_tol=1e-9, abs_tol=1e-300) */
        return 0;
    double diff = fabs(score - value);
    return diff <= fabs(1e-9 * value) || diff <= fabs(1e-9 * score) || diff <= 1e-300;
}

/* What reading a file's Unigram vocab found so far (the last of each key counts, as in
 * json.loads: a later "model" or "vocab" member starts it again). */
typedef struct {
    PyObject *vocab;  /* model.vocab as json.loads read it from the text */
    PyObject *found;  /* (tokens, scores) of the last vocab read, or NULL */
    int unsure;       /* a key spelled with an escape: the pure reader decides */
} Reading;

typedef int (*MemberReader)(Cursor *c, Reading *r);

/* Walk the object at the cursor, past its end: `read` takes the value of each member named
 * `key`, skip_value the others. 0: done; 1: the text is no such object; -1: an exception. */
static int
walk_object(Cursor *c, const char *key, MemberReader read, Reading *r)
{
    size_t key_len = strlen(key);
    skip_ws(c);
    if (c->p >= c->end || *c->p != '{')
        return 1;
    c->p++;
    skip_ws(c);
    if (c->p < c->end && *c->p == '}') {
        c->p++;
        return 0;
    }
    for (;;) {
        const unsigned char *name;
        Py_ssize_t len;
        int escaped;
        skip_ws(c);
        if (c->p >= c->end || *c->p != '"' || skip_string(c, &name, &len, &escaped) < 0)
            return 1;
        r->unsure |= escaped;
        skip_ws(c);
        if (c->p >= c->end || *c->p != ':')
            return 1;
        c->p++;
        skip_ws(c);
        int rc = (size_t)len == key_len && memcmp(name, key, key_len) == 0 ? read(c, r)
                 : skip_value(c) < 0                                        ? 1
                                                                            : 0;
        if (rc != 0)
            return rc;
        skip_ws(c);
        if (c->p < c->end && *c->p == ',') {
            c->p++;
            continue;
        }
        if (c->p < c->end && *c->p == '}') {
            c->p++;
            return 0;
        }
        return 1;
    }
}

/* The [string, number] items of the array at the cursor, one for one beside r->vocab, as
 * r->found (tokens, scores); r->found stays NULL when they do not fit. 0, past the array
 * either way; 1: the text ends first; -1: an exception. */
static int
read_vocab_items(Cursor *c, Reading *r)
{
    const unsigned char *start = c->p;
    PyObject *vocab = r->vocab;
    Py_ssize_t n = PyList_GET_SIZE(vocab), i = 0;
    PyObject *tokens = PyList_New(n), *scores = PyList_New(n);
    if (tokens == NULL || scores == NULL)
        goto fail;
    if (c->p >= c->end || *c->p++ != '[')
        goto misfit;
    skip_ws(c);
    if (c->p < c->end && *c->p == ']')
        c->p++;
    else {
        for (;; i++) {
            if (i >= n)
                goto misfit;
            PyObject *item = PyList_GET_ITEM(vocab, i);
            if (!PyList_CheckExact(item) || PyList_GET_SIZE(item) != 2)
                goto misfit;
            PyObject *token = PyList_GET_ITEM(item, 0), *parsed = PyList_GET_ITEM(item, 1);
            if (!PyUnicode_CheckExact(token) ||
                !(PyFloat_CheckExact(parsed) || PyLong_CheckExact(parsed)))
                goto misfit;
            double score;
            skip_ws(c);
            if (c->p >= c->end || *c->p++ != '[')
                goto misfit;
            skip_ws(c);
            if (c->p >= c->end || *c->p != '"' || skip_string(c, NULL, NULL, NULL) < 0)
                goto misfit;
            skip_ws(c);
            if (c->p >= c->end || *c->p++ != ',')
                goto misfit;
            skip_ws(c);
            if (serde_number(c, &score) < 0)
                goto misfit;
            skip_ws(c);
            if (c->p >= c->end || *c->p++ != ']')
                goto misfit;
            int ok = close_to(score, parsed);
            if (ok < 0)
                goto fail;
            if (!ok)
                goto misfit;
            PyObject *made = PyFloat_FromDouble(score);
            if (made == NULL)
                goto fail;
            Py_INCREF(token);
            PyList_SET_ITEM(tokens, i, token);
            PyList_SET_ITEM(scores, i, made);
            skip_ws(c);
            if (c->p < c->end && *c->p == ',') {
                c->p++;
                continue;
            }
            if (c->p < c->end && *c->p == ']') {
                c->p++;
                i++;
                break;
            }
            goto misfit;
        }
    }
    if (i != n)
        goto misfit;
    r->found = PyTuple_Pack(2, tokens, scores);
    Py_DECREF(tokens);
    Py_DECREF(scores);
    return r->found == NULL ? -1 : 0;
misfit: /* (not these items: past the array all the same, for a later "vocab") */
    Py_DECREF(tokens);
    Py_DECREF(scores);
    c->p = start;
    return skip_value(c) < 0 ? 1 : 0;
fail:
    Py_XDECREF(tokens);
    Py_XDECREF(scores);
    return -1;
}

static int
read_vocab(Cursor *c, Reading *r)
{
    Py_CLEAR(r->found);
    return read_vocab_items(c, r);
}

static int
read_model(Cursor *c, Reading *r)
{
    Py_CLEAR(r->found);
    const unsigned char *start = c->p;
    int rc = walk_object(c, "vocab", read_vocab, r);
    if (rc == 1 && c->p == start) /* (a model that is no object: skipped, nothing found) */
        rc = skip_value(c) < 0 ? 1 : 0;
    return rc;
}

PyDoc_STRVAR(vocab_columns_doc,
"vocab_columns(vocab, source, /) -> (tokens, scores) or None\n--\n\n"
"core.pipeline.models.unigram_json._vocab_columns without parsing source again: vocab is\n"
"model.vocab as json.loads read it from source (bytes); tokens are its pieces and scores\n"
"the numbers source spells for them, as serde_json reads the digits. None when vocab is no\n"
"list of [str, int or float] or source does not hold them one for one (or the text needs\n"
"the pure reader: a key with an escape). One pass over the text.");

static PyObject *
vocab_columns(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs != 2 || !PyList_CheckExact(args[0]) || !PyBytes_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "vocab_columns(vocab: list, source: bytes)");
        return NULL;
    }
    Reading r = {args[0], NULL, 0};
    Cursor c = {(const unsigned char *)PyBytes_AS_STRING(args[1]), NULL};
    c.end = c.p + PyBytes_GET_SIZE(args[1]);
    if (c.end - c.p >= 3 && memcmp(c.p, "\xEF\xBB\xBF", 3) == 0)
        c.p += 3; /* (the byte order mark utf-8-sig drops) */
    int rc = walk_object(&c, "model", read_model, &r);
    if (rc < 0) {
        Py_XDECREF(r.found);
        return NULL;
    }
    skip_ws(&c);
    if (rc != 0 || r.unsure || r.found == NULL || c.p != c.end) {
        Py_XDECREF(r.found);
        Py_RETURN_NONE;
    }
    return r.found;
}

static PyMethodDef methods[] = {
    {"serde_floats", (PyCFunction)(void (*)(void))serde_floats, METH_FASTCALL, serde_floats_doc},
    {"vocab_columns", (PyCFunction)(void (*)(void))vocab_columns, METH_FASTCALL,
     vocab_columns_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "tokplay_native.unigram",
    "Unigram's Viterbi pass (the twin of core.pipeline.models.unigram's best_path) and a\n"
    "tokenizer.json's Unigram scores as tokenizers reads them (core.pipeline.models.unigram_json).",
    -1, methods,
};

PyMODINIT_FUNC
PyInit_unigram(void)
{
    if (PyType_Ready(&LatticeType) < 0)
        return NULL;
    for (int k = 0; k < 309; k++) {
        char text[8];
        PyOS_snprintf(text, sizeof text, "1e%d", k);
        serde_pow10[k] = PyOS_string_to_double(text, NULL, NULL);
        if (serde_pow10[k] == -1.0 && PyErr_Occurred())
            return NULL;
    }
    PyObject *m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
    Py_INCREF(&LatticeType);
    if (PyModule_AddObject(m, "Lattice", (PyObject *)&LatticeType) < 0) {
        Py_DECREF(&LatticeType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
