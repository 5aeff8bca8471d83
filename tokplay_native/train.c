/* Training's merge loop in C: the twin of core/train/merge.py's MergeState, with the same
 * merges in the same order and the same counts (tests/test_native_train.py checks both):
 *
 *   state = MergeState(counts)    counts: dict[str, int], each count in 1 .. 2**62, or the
 *                                 same packed as (table, arena) by count.c's packed()
 *   state.merge_best()            -> (left ID, right ID, count), or None when no pair is left
 *   state.tokens                  list[bytes]: token ID -> bytes (256 bytes, then one per merge)
 *
 * The data, as in rustbpe and Hugging Face's trainer: each distinct pre-token's token IDs
 * (uint32, rewritten in place by a merge: a word only gets shorter); a hash table from pair
 * to its count and the words that may hold it (a stale word is scanned and nothing found);
 * a max-heap of (count, pair) with lazy invalidation. Exact because a pair's count only goes
 * down once it exists (pairs holding the new token are born in its merge, at full count): a
 * popped entry whose count is current is the best; a stale one goes back with its count.
 * A merge visits only its pair's words and changes only the pairs next to each occurrence.
 *
 * The order is MergeState's: the higher count, then the greater pair compared as bytes (left
 * token, then right), then (two merges can make the same bytes) the lower IDs, as the pure
 * heap compares the pair strings last. Out of memory midway leaves the state unusable: it
 * says so on the next call rather than give wrong merges.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <stdint.h>
#include <string.h>

#include "hash.h"

#define MAX_COUNT (1LL << 62)

typedef struct {
    int64_t count;
    uint32_t a, b;
    int32_t *where; /* word indices, each word at most once in a row */
    int32_t nwhere, capwhere;
    uint32_t stamp; /* the merge that last listed this pair as born */
} Pair;

typedef struct {
    int64_t off; /* into ids */
    int64_t freq;
    int32_t len;
    uint32_t stamp; /* the merge that last rewrote this word */
} Word;

typedef struct {
    int64_t count;
    uint32_t pair; /* index into pairs */
} HeapItem;

typedef struct {
    PyObject_HEAD
    PyObject *tokens;  /* the list shown to Python (it may be changed from there); no
                        * tp_clear: a cycle through it is broken by the list's own */
    PyObject **toks;   /* our own strong references: what comparisons read */
    uint32_t ntoks;
    size_t captoks;
    uint32_t *ids;
    Word *words;
    int32_t nwords;
    Pair *pairs;
    uint32_t npairs;
    size_t cappairs;
    uint32_t *slots; /* pair index + 1; 0 = empty */
    uint64_t mask;   /* nslots - 1 (a power of two) */
    HeapItem *heap;
    size_t nheap, capheap;
    uint32_t *born;
    size_t nborn, capborn;
    uint32_t merge_no;
    int broken;
} State;

/* ---- Growing arrays -------------------------------------------------------- */

/* Room for `need` items of `size` bytes in *buf (capacity *cap); -1 when it cannot be had. */
static int
reserve(void **buf, size_t *cap, size_t need, size_t size)
{
    return reserve_items(buf, cap, need, size, 8);
}

/* Append word wi to a pair's where list, unless it is already the last one there. */
static int
where_add(Pair *p, int32_t wi)
{
    if (p->nwhere && p->where[p->nwhere - 1] == wi)
        return 0;
    if (p->nwhere == p->capwhere) {
        size_t cap = (size_t)p->capwhere;
        void *buf = p->where;
        if (cap >= INT32_MAX / 2 || reserve(&buf, &cap, cap + 1, sizeof(int32_t)) < 0)
            return -1;
        p->where = buf;
        p->capwhere = (int32_t)cap;
    }
    p->where[p->nwhere++] = wi;
    return 0;
}

/* ---- The pair table -------------------------------------------------------- */

static inline uint64_t
slot_of(uint32_t a, uint32_t b, uint64_t mask)
{
    uint64_t key = ((uint64_t)a << 32) | b;
    key *= 0x9E3779B97F4A7C15ULL; /* Fibonacci hashing: the high bits are the mixed ones */
    return (key ^ (key >> 32)) & mask;
}

static int
rehash(State *s, uint64_t nslots)
{
    uint32_t *slots = PyMem_Calloc(nslots, sizeof(uint32_t));
    if (slots == NULL)
        return -1;
    uint64_t mask = nslots - 1;
    for (uint32_t i = 0; i < s->npairs; i++) {
        uint64_t h = slot_of(s->pairs[i].a, s->pairs[i].b, mask);
        while (slots[h])
            h = (h + 1) & mask;
        slots[h] = i + 1;
    }
    PyMem_Free(s->slots);
    s->slots = slots;
    s->mask = mask;
    return 0;
}

/* The index of pair (a, b), inserted with count 0 when new; -1 when out of memory. */
static int64_t
pair_at(State *s, uint32_t a, uint32_t b)
{
    uint64_t h = slot_of(a, b, s->mask);
    for (;;) {
        uint32_t i = s->slots[h];
        if (i == 0)
            break;
        Pair *p = &s->pairs[i - 1];
        if (p->a == a && p->b == b)
            return i - 1;
        h = (h + 1) & s->mask;
    }
    if (s->npairs == UINT32_MAX - 1)
        return -1;
    if ((uint64_t)(s->npairs + 1) * 2 > s->mask + 1) { /* keep the load under one half */
        if (rehash(s, (s->mask + 1) * 2) < 0)
            return -1;
        h = slot_of(a, b, s->mask);
        while (s->slots[h])
            h = (h + 1) & s->mask;
    }
    void *buf = s->pairs;
    if (reserve(&buf, &s->cappairs, (size_t)s->npairs + 1, sizeof(Pair)) < 0)
        return -1;
    s->pairs = buf;
    uint32_t i = s->npairs++;
    s->pairs[i] = (Pair){0, a, b, NULL, 0, 0, 0};
    s->slots[h] = i + 1;
    return i;
}

/* ---- The heap -------------------------------------------------------------- */

static int
cmp_token(State *s, uint32_t x, uint32_t y)
{
    if (x == y)
        return 0;
    PyObject *X = s->toks[x], *Y = s->toks[y];
    Py_ssize_t nx = PyBytes_GET_SIZE(X), ny = PyBytes_GET_SIZE(Y);
    int c = memcmp(PyBytes_AS_STRING(X), PyBytes_AS_STRING(Y), (size_t)(nx < ny ? nx : ny));
    if (c)
        return c;
    return (nx > ny) - (nx < ny);
}

/* Whether x comes out of the heap before y. */
static int
before(State *s, const HeapItem *x, const HeapItem *y)
{
    if (x->count != y->count)
        return x->count > y->count;
    const Pair *p = &s->pairs[x->pair], *q = &s->pairs[y->pair];
    int c = cmp_token(s, p->a, q->a);
    if (c == 0)
        c = cmp_token(s, p->b, q->b);
    if (c)
        return c > 0;
    return p->a != q->a ? p->a < q->a : p->b < q->b;
}

static void
sift_down(State *s, size_t i)
{
    HeapItem *h = s->heap;
    size_t n = s->nheap;
    HeapItem item = h[i];
    for (;;) {
        size_t child = 2 * i + 1;
        if (child >= n)
            break;
        if (child + 1 < n && before(s, &h[child + 1], &h[child]))
            child++;
        if (!before(s, &h[child], &item))
            break;
        h[i] = h[child];
        i = child;
    }
    h[i] = item;
}

static int
heap_push(State *s, int64_t count, uint32_t pair)
{
    void *buf = s->heap;
    if (reserve(&buf, &s->capheap, s->nheap + 1, sizeof(HeapItem)) < 0)
        return -1;
    s->heap = buf;
    HeapItem item = {count, pair};
    size_t i = s->nheap++;
    while (i) {
        size_t parent = (i - 1) / 2;
        if (!before(s, &item, &s->heap[parent]))
            break;
        s->heap[i] = s->heap[parent];
        i = parent;
    }
    s->heap[i] = item;
    return 0;
}

static void
heap_pop(State *s)
{
    s->heap[0] = s->heap[--s->nheap];
    if (s->nheap)
        sift_down(s, 0);
}

/* Drop stale entries until the top is current; 1 if a pair is left, 0 if none. */
static int
settle_top(State *s)
{
    while (s->nheap) {
        HeapItem top = s->heap[0];
        int64_t current = s->pairs[top.pair].count;
        if (current == top.count)
            return 1;
        if (current > 0) { /* stale: its real count is lower; sift it down in place */
            s->heap[0].count = current;
            sift_down(s, 0);
        }
        else
            heap_pop(s);
    }
    return 0;
}

/* ---- Construction ---------------------------------------------------------- */

static void
State_free_data(State *s)
{
    for (uint32_t i = 0; i < s->npairs; i++)
        PyMem_Free(s->pairs[i].where);
    PyMem_Free(s->pairs);
    PyMem_Free(s->slots);
    PyMem_Free(s->ids);
    PyMem_Free(s->words);
    PyMem_Free(s->heap);
    PyMem_Free(s->born);
    for (uint32_t i = 0; i < s->ntoks; i++)
        Py_DECREF(s->toks[i]);
    PyMem_Free(s->toks);
}

/* Append a new token (a new reference, stolen) to both token lists. */
static int
add_token(State *s, PyObject *token)
{
    void *buf = s->toks;
    int failed = reserve(&buf, &s->captoks, (size_t)s->ntoks + 1, sizeof(PyObject *));
    s->toks = buf;
    if (failed || PyList_Append(s->tokens, token) < 0) {
        Py_DECREF(token);
        return failed ? (PyErr_NoMemory(), -1) : -1;
    }
    s->toks[s->ntoks++] = token;
    return 0;
}

/* Where read_words and read_packed are while they add words. */
typedef struct {
    Py_ssize_t nids;
    int64_t weight; /* the sum of count * pairs: it bounds every pair count, so it must fit 64 bits */
    size_t cap_ids, cap_words;
} Reading;

/* Add one pre-token (n UTF-8 bytes, counted freq times) as a word; 0, or -1 with an exception set. */
static int
add_word(State *s, Reading *r, const unsigned char *utf8, Py_ssize_t n, long long freq)
{
    if (freq < 1 || freq > MAX_COUNT) {
        PyErr_SetString(PyExc_ValueError, "a count is outside 1 .. 2**62");
        return -1;
    }
    if (n < 2)
        return 0; /* a single byte has no pair to merge */
    if (n > INT32_MAX || s->nwords == INT32_MAX || r->nids > PY_SSIZE_T_MAX / 8 - n ||
        (int64_t)freq > (INT64_MAX - r->weight) / (int64_t)(n - 1)) {
        PyErr_SetString(PyExc_OverflowError, "the counts are too large to add up in 64 bits");
        return -1;
    }
    r->weight += (int64_t)freq * (int64_t)(n - 1);
    void *ids = s->ids, *words = s->words;
    int failed = reserve(&ids, &r->cap_ids, (size_t)(r->nids + n), sizeof(uint32_t));
    s->ids = ids;
    failed = failed || reserve(&words, &r->cap_words, (size_t)s->nwords + 1, sizeof(Word));
    s->words = words;
    if (failed) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++)
        s->ids[r->nids + i] = utf8[i];
    s->words[s->nwords++] = (Word){r->nids, freq, (int32_t)n, 0};
    r->nids += n;
    return 0;
}

/* Read a dict of counts into words; 0, or -1 with an exception set. */
static int
read_words(State *s, PyObject *counts)
{
    Py_ssize_t pos = 0;
    PyObject *key, *value;
    Reading r = {0, 0, 0, 0};
    while (PyDict_Next(counts, &pos, &key, &value)) {
        if (!PyUnicode_Check(key) || !PyLong_Check(value)) {
            PyErr_Format(PyExc_TypeError, "counts must map str to int, not %.100s to %.100s",
                         Py_TYPE(key)->tp_name, Py_TYPE(value)->tp_name);
            return -1;
        }
        int overflow = 0;
        long long freq = PyLong_AsLongLongAndOverflow(value, &overflow);
        if (freq == -1 && PyErr_Occurred())
            return -1;
        Py_ssize_t n;
        const char *utf8 = PyUnicode_AsUTF8AndSize(key, &n);
        if (utf8 == NULL || add_word(s, &r, (const unsigned char *)utf8, n, overflow ? 0 : freq) < 0)
            return -1;
    }
    return 0;
}

/* Whether n bytes hold a surrogate encoded as UTF-8 would be (0xED, then 0xA0..0xBF). */
static int
has_surrogate(const unsigned char *key, size_t n)
{
    for (size_t i = 0; i + 1 < n; i++)
        if (key[i] == 0xED && key[i + 1] >= 0xA0)
            return 1;
    return 0;
}

/* Read packed counts (count.c's PretokenCounts.packed(): rows of int64 count and uint32
 * length, then the keys' bytes one after another) into words; 0, or -1 with an exception set.
 *
 * Why: on 1 GB of text the counts hold millions of pre-tokens; going through a dict of str
 * made a str and an int for each, then read them back (1.6 s of a 12 s training). */
static int
read_packed(State *s, PyObject *packed)
{
    Py_buffer table, arena;
    if (!PyArg_ParseTuple(packed, "y*y*:MergeState", &table, &arena))
        return -1;
    const size_t row = sizeof(int64_t) + sizeof(uint32_t);
    Reading r = {0, 0, 0, 0};
    size_t off = 0;
    int result = 0;
    if (table.len % (Py_ssize_t)row) {
        PyErr_SetString(PyExc_ValueError, "packed counts: the table is not whole rows");
        result = -1;
    }
    for (Py_ssize_t k = 0; result == 0 && k < table.len; k += (Py_ssize_t)row) {
        int64_t count;
        uint32_t len;
        memcpy(&count, (const char *)table.buf + k, sizeof(int64_t));
        memcpy(&len, (const char *)table.buf + k + sizeof(int64_t), sizeof(uint32_t));
        if (len > (size_t)arena.len - off) {
            PyErr_SetString(PyExc_ValueError, "packed counts: a key runs past the arena");
            result = -1;
        }
        else if (has_surrogate((const unsigned char *)arena.buf + off, len)) {
            /* a lone surrogate (kept by count.c as "surrogatepass" would): not UTF-8, which the
             * dict path refuses too; the caller's pure loop then raises UnicodeEncodeError */
            PyErr_SetString(PyExc_ValueError, "packed counts: a key holds a lone surrogate");
            result = -1;
        }
        else {
            result = add_word(s, &r, (const unsigned char *)arena.buf + off, (Py_ssize_t)len, count);
            off += len;
        }
    }
    PyBuffer_Release(&table);
    PyBuffer_Release(&arena);
    return result;
}

/* Count every pair, list its words, heap them all; 0, or -1 (out of memory). */
static int
index_pairs(State *s)
{
    uint64_t nslots = 1024;
    while (nslots < (uint64_t)s->nwords * 2 && nslots < (1ULL << 31))
        nslots *= 2;
    if (rehash(s, nslots) < 0)
        return -1;
    for (int32_t wi = 0; wi < s->nwords; wi++) {
        Word w = s->words[wi];
        const uint32_t *ids = s->ids + w.off;
        for (int32_t i = 0; i + 1 < w.len; i++) {
            int64_t p = pair_at(s, ids[i], ids[i + 1]);
            if (p < 0 || where_add(&s->pairs[p], wi) < 0)
                return -1;
            s->pairs[p].count += w.freq;
        }
    }
    void *buf = s->heap;
    if (reserve(&buf, &s->capheap, s->npairs, sizeof(HeapItem)) < 0)
        return -1;
    s->heap = buf;
    for (uint32_t i = 0; i < s->npairs; i++)
        s->heap[s->nheap++] = (HeapItem){s->pairs[i].count, i};
    for (size_t i = s->nheap / 2; i-- > 0;)
        sift_down(s, i);
    return 0;
}

static PyObject *
State_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"counts", NULL};
    PyObject *counts;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O:MergeState", kwlist, &counts))
        return NULL;
    if (!PyDict_Check(counts) && !PyTuple_Check(counts)) {
        PyErr_Format(PyExc_TypeError, "MergeState() takes a dict or packed counts, not %.100s",
                     Py_TYPE(counts)->tp_name);
        return NULL;
    }
    State *s = (State *)type->tp_alloc(type, 0);
    if (s == NULL)
        return NULL;
    s->tokens = PyList_New(0);
    if (s->tokens == NULL)
        goto error;
    for (int i = 0; i < 256; i++) {
        char c = (char)i;
        PyObject *token = PyBytes_FromStringAndSize(&c, 1);
        if (token == NULL || add_token(s, token) < 0)
            goto error;
    }
    int read = PyDict_Check(counts) ? read_words(s, counts) : read_packed(s, counts);
    if (read < 0 || (index_pairs(s) < 0 && PyErr_NoMemory() == NULL))
        goto error;
    return (PyObject *)s;
error:
    Py_DECREF(s);
    return NULL;
}

/* ---- Merging --------------------------------------------------------------- */

/* count(a, b) += delta; when (a, b) holds the new token, list it as born and note word wi. */
static int
add_delta(State *s, uint32_t a, uint32_t b, int64_t delta, uint32_t new_id, int32_t wi)
{
    int64_t p = pair_at(s, a, b);
    if (p < 0)
        return -1;
    Pair *pair = &s->pairs[p];
    pair->count += delta;
    if (a != new_id && b != new_id)
        return 0;
    if (pair->stamp != s->merge_no) {
        pair->stamp = s->merge_no;
        void *buf = s->born;
        if (reserve(&buf, &s->capborn, s->nborn + 1, sizeof(uint32_t)) < 0)
            return -1;
        s->born = buf;
        s->born[s->nborn++] = (uint32_t)p;
    }
    return delta > 0 ? where_add(pair, wi) : 0;
}

/* Rewrite word wi with every (a, b) -> new_id, left to right, and update the pair counts. */
static int
merge_word(State *s, int32_t wi, uint32_t a, uint32_t b, uint32_t new_id)
{
    Word *w = &s->words[wi];
    uint32_t *ids = s->ids + w->off;
    int32_t n = w->len, i = 0, j = 0;
    int64_t f = w->freq;
    while (i < n) {
        if (i + 1 < n && ids[i] == a && ids[i + 1] == b) {
            /* subtle: the left neighbour is read from the rewritten part (it may be new_id
             * from the previous occurrence), the right one from the original (i + 2 > j) */
            if (j > 0) {
                uint32_t x = ids[j - 1];
                if (add_delta(s, x, a, -f, new_id, wi) < 0 || add_delta(s, x, new_id, f, new_id, wi) < 0)
                    return -1;
            }
            if (i + 2 < n) {
                uint32_t y = ids[i + 2];
                if (add_delta(s, b, y, -f, new_id, wi) < 0 || add_delta(s, new_id, y, f, new_id, wi) < 0)
                    return -1;
            }
            ids[j++] = new_id;
            i += 2;
        }
        else
            ids[j++] = ids[i++];
    }
    w->len = j; /* s->words never moves after construction */
    return 0;
}

/* One merge: the best pair everywhere. Returns a new (a, b, count) tuple, Py_None (new
 * reference) when no pair is left, or NULL with an exception set. */
static PyObject *
State_merge_best(State *s, PyObject *Py_UNUSED(ignored))
{
    if (s->broken)
        return PyErr_Format(PyExc_RuntimeError, "this training state ran out of memory: train again");
    if (!settle_top(s))
        Py_RETURN_NONE;
    if (s->ntoks == UINT32_MAX - 1) {
        PyErr_SetString(PyExc_OverflowError, "too many tokens");
        return NULL;
    }
    uint32_t p = s->heap[0].pair;
    uint32_t a = s->pairs[p].a, b = s->pairs[p].b, new_id = s->ntoks;
    int64_t count = s->pairs[p].count;
    PyObject *result = Py_BuildValue("(IIL)", a, b, (long long)count);
    if (result == NULL)
        return NULL;
    PyObject *left = s->toks[a], *right = s->toks[b];
    Py_ssize_t nl = PyBytes_GET_SIZE(left), nr = PyBytes_GET_SIZE(right);
    PyObject *token = PyBytes_FromStringAndSize(NULL, nl + nr);
    if (token == NULL) {
        Py_DECREF(result);
        return NULL;
    }
    memcpy(PyBytes_AS_STRING(token), PyBytes_AS_STRING(left), (size_t)nl);
    memcpy(PyBytes_AS_STRING(token) + nl, PyBytes_AS_STRING(right), (size_t)nr);
    if (add_token(s, token) < 0) {
        Py_DECREF(result);
        return NULL;
    }
    /* from here on, a failure leaves the state half merged */
    heap_pop(s);
    s->merge_no++;
    s->nborn = 0;
    int32_t *where = s->pairs[p].where, nwhere = s->pairs[p].nwhere;
    s->pairs[p].where = NULL; /* detached: the pair table may move while we walk it */
    s->pairs[p].nwhere = s->pairs[p].capwhere = 0;
    int failed = 0;
    for (int32_t k = 0; k < nwhere && !failed; k++) {
        int32_t wi = where[k];
        if (s->words[wi].stamp == s->merge_no)
            continue; /* listed twice */
        s->words[wi].stamp = s->merge_no;
        failed = merge_word(s, wi, a, b, new_id) < 0;
    }
    PyMem_Free(where);
    s->pairs[p].count = 0; /* every occurrence is gone (non-overlapping, left to right) */
    for (size_t k = 0; k < s->nborn && !failed; k++) {
        uint32_t q = s->born[k];
        if (s->pairs[q].count > 0)
            failed = heap_push(s, s->pairs[q].count, q) < 0;
        else { /* born and gone in the same merge (aaaa: (new, a) comes and goes) */
            PyMem_Free(s->pairs[q].where);
            s->pairs[q].where = NULL;
            s->pairs[q].nwhere = s->pairs[q].capwhere = 0;
        }
    }
    if (failed) {
        s->broken = 1;
        Py_DECREF(result);
        return PyErr_NoMemory();
    }
    return result;
}

/* ---- The type -------------------------------------------------------------- */

static int
State_traverse(State *s, visitproc visit, void *arg)
{
    Py_VISIT(s->tokens);
    return 0;
}

static void
State_dealloc(State *s)
{
    PyObject_GC_UnTrack(s);
    Py_CLEAR(s->tokens);
    State_free_data(s);
    Py_TYPE(s)->tp_free((PyObject *)s);
}

static PyMemberDef State_members[] = {
    {"tokens", T_OBJECT_EX, offsetof(State, tokens), READONLY, "token ID -> bytes: the bytes, then one per merge"},
    {NULL, 0, 0, 0, NULL},
};

static PyMethodDef State_methods[] = {
    {"merge_best", (PyCFunction)State_merge_best, METH_NOARGS,
     "merge_best() -> (left ID, right ID, count) | None: merge the best pair everywhere."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject StateType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "tokplay_native.train.MergeState",
    .tp_doc = "MergeState(counts: dict[str, int] | (table, arena)): training's merge loop over pre-token counts.",
    .tp_basicsize = sizeof(State),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_new = State_new,
    .tp_dealloc = (destructor)State_dealloc,
    .tp_traverse = (traverseproc)State_traverse,
    .tp_methods = State_methods,
    .tp_members = State_members,
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "tokplay_native.train",
    "Training's merge loop in C: the twin of core.train.merge.MergeState (see train.c).", -1, NULL,
};

PyMODINIT_FUNC
PyInit_train(void)
{
    if (PyType_Ready(&StateType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
    if (PyModule_AddObjectRef(m, "MergeState", (PyObject *)&StateType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
