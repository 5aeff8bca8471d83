/* Training's pre-token counting in C: the twin of core/train/count_table.py's PureCounts, with the
 * same counts (tests/test_native_count.py checks both):
 *
 *   counts = PretokenCounts()
 *   counts.add_ascii(text)        GPT-2's pre-tokens of ASCII text, each counted once
 *   counts.update(words)          each str of a list counted once (as Counter.update)
 *   counts.update(other)          another PretokenCounts' counts added, or a Counter's
 *   len(counts), counts.total()   distinct pre-tokens, all of them
 *   counts.counter()              a collections.Counter of them, moved out (this one empties)
 *   counts.packed()               (table, arena): the counts as two bytes objects, what a
 *                                 pickle holds (a worker sends them back) and what train.c's
 *                                 MergeState reads without a dict of str in between
 *
 * Why C: on a big corpus (1 GB, millions of distinct pre-tokens) counting was two thirds of
 * training, and most of it was Python's dict of str (a new str and a new int per pre-token,
 * the lookups in a table of millions). Here a pre-token is cut straight from the text's
 * bytes and looked up in one open-addressing table: its slots hold a 32-bit tag of the hash
 * beside the entry's index, so a miss rarely reads an entry; entries (count, key's place and
 * length) come in the order first seen, their keys packed in one arena of bytes.
 *
 * add_ascii cuts as GPT-2's pattern does on ASCII text (its stdlib `re` twin,
 * core.engine.pretokenize.ascii_pattern("gpt2")): '(?:[sdmt]|ll|ve|re)| ?[A-Za-z]+| ?[0-9]+|
 * ?[^\s A-Za-z0-9]+|\s+(?!\S)|\s+ with \s = [\t\n\v\f\r ]. Keys are UTF-8 bytes.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "hash.h"

typedef struct {
    int64_t count;
    uint64_t off; /* into arena */
    uint32_t len;
    uint32_t tag; /* the hash's high 32 bits */
} Entry;

typedef struct {
    uint64_t *slots; /* tag << 32 | (entry index + 1); 0 = empty */
    uint64_t mask;
    Entry *entries;
    size_t n, cap;
    unsigned char *arena;
    size_t used, arena_cap;
    int64_t total;
} Table;

/* subtle: add_ascii counts into `recent`, a table small enough to stay in the CPU's cache,
 * and adds it to `all` when it fills up (and before anything reads the counts): a frequent
 * pre-token then costs one lookup in the big table per fill, not one per occurrence. */
#ifndef RECENT_MAX
#define RECENT_MAX (1 << 15)
#endif

typedef struct {
    PyObject_HEAD
    Table all, recent;
} Counts;

static int
grow(void **buf, size_t *cap, size_t need, size_t size)
{
    return reserve_items(buf, cap, need, size, 1024);
}

static int
rehash(Table *c, uint64_t nslots)
{
    uint64_t *slots = PyMem_Calloc(nslots, sizeof(uint64_t));
    if (slots == NULL)
        return -1;
    uint64_t mask = nslots - 1;
    for (size_t i = 0; i < c->n; i++) {
        Entry *e = &c->entries[i];
        uint64_t h = hash_bytes(c->arena + e->off, e->len) & mask;
        while (slots[h])
            h = (h + 1) & mask;
        slots[h] = (uint64_t)e->tag << 32 | (uint64_t)(i + 1);
    }
    PyMem_Free(c->slots);
    c->slots = slots;
    c->mask = mask;
    return 0;
}

/* Whether n bytes at x and y are equal: a word at a time (a pre-token is a few bytes: a call
 * to memcmp costs more than the comparison). */
static inline int
same_bytes(const unsigned char *x, const unsigned char *y, size_t n)
{
    for (; n >= 8; x += 8, y += 8, n -= 8) {
        uint64_t u, v;
        memcpy(&u, x, 8);
        memcpy(&v, y, 8);
        if (u != v)
            return 0;
    }
    for (; n; x++, y++, n--)
        if (*x != *y)
            return 0;
    return 1;
}

/* count(key) += k; 0, or -1 when out of memory (no exception set). */
static int
add_key(Table *c, const unsigned char *key, size_t len, int64_t k)
{
    uint64_t h = hash_bytes(key, (Py_ssize_t)len);
    uint32_t tag = (uint32_t)(h >> 32);
    uint64_t i = h & c->mask;
    for (;;) {
        uint64_t s = c->slots[i];
        if (s == 0)
            break;
        if ((uint32_t)(s >> 32) == tag) {
            Entry *e = &c->entries[(uint32_t)s - 1];
            if (e->len == len && same_bytes(c->arena + e->off, key, len)) {
                e->count += k;
                c->total += k;
                return 0;
            }
        }
        i = (i + 1) & c->mask;
    }
    if (len > UINT32_MAX || c->n >= UINT32_MAX - 1)
        return -1;
    void *buf = c->entries;
    if (grow(&buf, &c->cap, c->n + 1, sizeof(Entry)) < 0)
        return -1;
    c->entries = buf;
    buf = c->arena;
    if (grow(&buf, &c->arena_cap, c->used + len, 1) < 0)
        return -1;
    c->arena = buf;
    memcpy(c->arena + c->used, key, len);
    c->entries[c->n] = (Entry){k, c->used, (uint32_t)len, tag};
    c->used += len;
    c->slots[i] = (uint64_t)tag << 32 | (uint64_t)(c->n + 1);
    c->n++;
    c->total += k;
    if ((c->n + 1) * 10 > (c->mask + 1) * 7) /* keep the load under 0.7 */
        return rehash(c, (c->mask + 1) * 2);
    return 0;
}

/* ---- GPT-2's pattern on ASCII ------------------------------------------------- */

enum { WS, LETTER, DIGIT, OTHER };
static unsigned char kind[256];

static void
init_kinds(void)
{
    for (int b = 0; b < 256; b++)
        kind[b] = OTHER;
    for (int b = 'a'; b <= 'z'; b++)
        kind[b] = kind[b - 32] = LETTER;
    for (int b = '0'; b <= '9'; b++)
        kind[b] = DIGIT;
    const char *ws = "\t\n\v\f\r ";
    for (const char *p = ws; *p; p++)
        kind[(unsigned char)*p] = WS;
}

/* The length of the pre-token starting at t[i] (i < n). */
static inline Py_ssize_t
gpt2_next(const unsigned char *t, Py_ssize_t i, Py_ssize_t n)
{
    unsigned char c = t[i];
    if (c == '\'' && i + 1 < n) {
        unsigned char d = t[i + 1];
        if (d == 's' || d == 'd' || d == 'm' || d == 't')
            return 2;
        if (i + 2 < n) {
            unsigned char e = t[i + 2];
            if ((d == 'l' && e == 'l') || (d == 'v' && e == 'e') || (d == 'r' && e == 'e'))
                return 3;
        }
    }
    Py_ssize_t j = i;
    int k = kind[c];
    if (c == ' ' && i + 1 < n && kind[t[i + 1]] != WS) { /* " ?" before a run */
        j = i + 1;
        k = kind[t[j]];
    }
    if (k != WS) {
        do
            j++;
        while (j < n && kind[t[j]] == k);
        return j - i;
    }
    while (j < n && kind[t[j]] == WS)
        j++;
    if (j < n && j - i >= 2) /* \s+(?!\S): give the last one back to what follows */
        j--;
    return j - i;
}

/* ---- The type ------------------------------------------------------------------ */

static PyTypeObject CountsType;
static PyObject *counter_type; /* collections.Counter */

static void
table_free(Table *t)
{
    PyMem_Free(t->slots);
    PyMem_Free(t->entries);
    PyMem_Free(t->arena);
    memset(t, 0, sizeof(Table));
}

/* Add `recent` to `all` and empty it; 0, or -1 with MemoryError set. */
static int
flush(Counts *self)
{
    Table *r = &self->recent;
    for (size_t i = 0; i < r->n; i++) {
        Entry *e = &r->entries[i];
        if (add_key(&self->all, r->arena + e->off, e->len, e->count) < 0) {
            PyErr_NoMemory();
            return -1;
        }
    }
    if (r->n)
        memset(r->slots, 0, (r->mask + 1) * sizeof(uint64_t));
    r->n = r->used = 0;
    r->total = 0;
    return 0;
}

static Counts *
counts_alloc(PyTypeObject *type)
{
    Counts *self = (Counts *)type->tp_alloc(type, 0);
    if (self != NULL && (rehash(&self->all, 1024) < 0 || rehash(&self->recent, 2 * RECENT_MAX) < 0)) {
        Py_DECREF(self);
        return (Counts *)PyErr_NoMemory();
    }
    return self;
}

static PyObject *
Counts_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    if (PyTuple_GET_SIZE(args) || (kwargs && PyDict_GET_SIZE(kwargs))) {
        PyErr_SetString(PyExc_TypeError, "PretokenCounts() takes no arguments");
        return NULL;
    }
    return (PyObject *)counts_alloc(type);
}

static void
Counts_dealloc(Counts *self)
{
    table_free(&self->all);
    table_free(&self->recent);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *
Counts_add_ascii(Counts *self, PyObject *text)
{
    if (!PyUnicode_Check(text) || !PyUnicode_IS_ASCII(text)) {
        PyErr_SetString(PyExc_TypeError, "add_ascii takes an ASCII str");
        return NULL;
    }
    const unsigned char *t = PyUnicode_1BYTE_DATA(text);
    Py_ssize_t n = PyUnicode_GET_LENGTH(text), i = 0;
    Table *r = &self->recent;
    while (i < n) {
        Py_ssize_t len = gpt2_next(t, i, n);
        if (add_key(r, t + i, (size_t)len, 1) < 0)
            return PyErr_NoMemory();
        if (r->n >= RECENT_MAX && flush(self) < 0)
            return NULL;
        i += len;
    }
    Py_RETURN_NONE;
}

/* count(w) += k for a str w; 0, or -1 with an exception set */
static int
add_str(Counts *self, PyObject *w, int64_t k)
{
    PyObject *held = NULL;
    Py_ssize_t len;
    if (!PyUnicode_Check(w)) {
        PyErr_Format(PyExc_TypeError, "update takes a list of str or a dict of str to counts, not of %.100s", Py_TYPE(w)->tp_name);
        return -1;
    }
    const char *utf8 = PyUnicode_AsUTF8AndSize(w, &len);
    if (utf8 == NULL) { /* a lone surrogate (a text given as str): kept as its 3 bytes */
        PyErr_Clear();
        held = PyUnicode_AsEncodedString(w, "utf-8", "surrogatepass");
        if (held == NULL)
            return -1;
        utf8 = PyBytes_AS_STRING(held);
        len = PyBytes_GET_SIZE(held);
    }
    int failed = add_key(&self->all, (const unsigned char *)utf8, (size_t)len, k) < 0;
    Py_XDECREF(held);
    if (failed)
        PyErr_NoMemory();
    return failed ? -1 : 0;
}

/* count each str of a list once */
static PyObject *
add_words(Counts *self, PyObject *words)
{
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(words); i++)
        if (add_str(self, PyList_GET_ITEM(words, i), 1) < 0)
            return NULL;
    Py_RETURN_NONE;
}

/* add a dict's counts (a Counter a Dask task sent back): str -> int from 1 to 2**62 */
static PyObject *
add_mapping(Counts *self, PyObject *counts)
{
    Py_ssize_t pos = 0;
    PyObject *key, *value;
    while (PyDict_Next(counts, &pos, &key, &value)) {
        int overflow = 0;
        long long k = PyLong_Check(value) ? PyLong_AsLongLongAndOverflow(value, &overflow) : 0;
        if (k == -1 && PyErr_Occurred())
            return NULL;
        if (overflow || k < 1 || k > (1LL << 62))
            return PyErr_Format(PyExc_ValueError, "update takes counts from 1 to 2**62");
        if (add_str(self, key, k) < 0)
            return NULL;
    }
    Py_RETURN_NONE;
}

/* Counter.update's forms: a list of str (each counted once), a dict of counts (a Counter), or
 * another PretokenCounts. */
static PyObject *
Counts_update(Counts *self, PyObject *other)
{
    if (PyList_Check(other))
        return add_words(self, other);
    if (PyDict_Check(other))
        return add_mapping(self, other);
    if (!PyObject_TypeCheck(other, &CountsType)) {
        PyErr_Format(PyExc_TypeError, "update takes a list of str, a dict of counts or a PretokenCounts, not %.100s",
                     Py_TYPE(other)->tp_name);
        return NULL;
    }
    Counts *o = (Counts *)other;
    if (flush(self) < 0 || flush(o) < 0)
        return NULL;
    if (o == self) { /* doubling: every count twice */
        for (size_t i = 0; i < self->all.n; i++)
            self->all.entries[i].count *= 2;
        self->all.total *= 2;
        Py_RETURN_NONE;
    }
    for (size_t i = 0; i < o->all.n; i++) {
        Entry *e = &o->all.entries[i];
        if (add_key(&self->all, o->all.arena + e->off, e->len, e->count) < 0)
            return PyErr_NoMemory();
    }
    Py_RETURN_NONE;
}

/* The counts as a collections.Counter; this object is left empty (its memory freed). */
static PyObject *
Counts_counter(Counts *self, PyObject *Py_UNUSED(ignored))
{
    if (flush(self) < 0)
        return NULL;
    PyObject *d = PyObject_CallNoArgs(counter_type);
    if (d == NULL)
        return NULL;
    Table *c = &self->all;
    for (size_t i = 0; i < c->n; i++) {
        Entry *e = &c->entries[i];
        PyObject *key = PyUnicode_DecodeUTF8((const char *)c->arena + e->off, e->len, "surrogatepass");
        PyObject *value = key ? PyLong_FromLongLong(e->count) : NULL;
        int failed = value == NULL || PyDict_SetItem(d, key, value) < 0;
        Py_XDECREF(key);
        Py_XDECREF(value);
        if (failed) {
            Py_DECREF(d);
            return NULL;
        }
    }
    table_free(c);
    if (rehash(c, 1024) < 0) {
        Py_DECREF(d);
        return PyErr_NoMemory();
    }
    return d;
}

static PyObject *
Counts_total(Counts *self, PyObject *Py_UNUSED(ignored))
{
    return PyLong_FromLongLong(self->all.total + self->recent.total);
}

static Py_ssize_t
Counts_len(Counts *self)
{
    return flush(self) < 0 ? -1 : (Py_ssize_t)self->all.n;
}

/* The counts packed as (table, arena): per entry an int64 count and a uint32 length, then the
 * keys' bytes one after another. What a pickle holds and what train.c's MergeState reads. */
static PyObject *
Counts_packed(Counts *self, PyObject *Py_UNUSED(ignored))
{
    if (flush(self) < 0)
        return NULL;
    Table *c = &self->all;
    size_t row = sizeof(int64_t) + sizeof(uint32_t);
    PyObject *table = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(c->n * row));
    PyObject *arena = table ? PyBytes_FromStringAndSize((const char *)c->arena, (Py_ssize_t)c->used) : NULL;
    if (arena == NULL) {
        Py_XDECREF(table);
        return NULL;
    }
    char *out = PyBytes_AS_STRING(table);
    for (size_t i = 0; i < c->n; i++, out += row) {
        memcpy(out, &c->entries[i].count, sizeof(int64_t));
        memcpy(out + sizeof(int64_t), &c->entries[i].len, sizeof(uint32_t));
    }
    return Py_BuildValue("(NN)", table, arena);
}

static PyObject *
Counts_reduce(Counts *self, PyObject *Py_UNUSED(ignored))
{
    PyObject *packed = Counts_packed(self, NULL);
    PyObject *loads = packed ? PyObject_GetAttrString((PyObject *)Py_TYPE(self), "_from_pickle") : NULL;
    PyObject *result = loads ? Py_BuildValue("(OO)", loads, packed) : NULL;
    Py_XDECREF(loads);
    Py_XDECREF(packed);
    return result;
}

static PyObject *
Counts_from_pickle(PyObject *type, PyObject *args)
{
    Py_buffer table, arena;
    if (!PyArg_ParseTuple(args, "y*y*:_from_pickle", &table, &arena))
        return NULL;
    size_t row = sizeof(int64_t) + sizeof(uint32_t);
    Counts *self = NULL;
    if (table.len % row) {
        PyErr_SetString(PyExc_ValueError, "not a pickled PretokenCounts");
        goto done;
    }
    self = counts_alloc((PyTypeObject *)type);
    if (self == NULL)
        goto done;
    const char *in = table.buf;
    const unsigned char *keys = arena.buf;
    size_t off = 0;
    for (Py_ssize_t k = 0; k < table.len; k += (Py_ssize_t)row) {
        int64_t count;
        uint32_t len;
        memcpy(&count, in + k, sizeof(int64_t));
        memcpy(&len, in + k + sizeof(int64_t), sizeof(uint32_t));
        if (off + len > (size_t)arena.len) {
            PyErr_SetString(PyExc_ValueError, "not a pickled PretokenCounts");
            Py_CLEAR(self);
            goto done;
        }
        if (add_key(&self->all, keys + off, len, count) < 0) {
            PyErr_NoMemory();
            Py_CLEAR(self);
            goto done;
        }
        off += len;
    }
done:
    PyBuffer_Release(&table);
    PyBuffer_Release(&arena);
    return (PyObject *)self;
}

static PyMethodDef Counts_methods[] = {
    {"add_ascii", (PyCFunction)Counts_add_ascii, METH_O,
     "add_ascii(text): count GPT-2's pre-tokens of an ASCII str."},
    {"update", (PyCFunction)Counts_update, METH_O,
     "update(words | other): count each str of a list once, or add another PretokenCounts' counts."},
    {"counter", (PyCFunction)Counts_counter, METH_NOARGS,
     "counter() -> Counter: the counts, moved out (this object is left empty)."},
    {"packed", (PyCFunction)Counts_packed, METH_NOARGS,
     "packed() -> (table, arena): the counts as bytes (int64 count, uint32 length per entry; the keys)."},
    {"total", (PyCFunction)Counts_total, METH_NOARGS, "total() -> int: all pre-tokens counted."},
    {"__reduce__", (PyCFunction)Counts_reduce, METH_NOARGS, NULL},
    {"_from_pickle", (PyCFunction)Counts_from_pickle, METH_VARARGS | METH_CLASS, NULL},
    {NULL, NULL, 0, NULL},
};

static PySequenceMethods Counts_as_sequence = {.sq_length = (lenfunc)Counts_len};

static PyTypeObject CountsType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "tokplay_native.count.PretokenCounts",
    .tp_doc = "PretokenCounts(): distinct pre-tokens and their counts (see count.c).",
    .tp_basicsize = sizeof(Counts),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = Counts_new,
    .tp_dealloc = (destructor)Counts_dealloc,
    .tp_methods = Counts_methods,
    .tp_as_sequence = &Counts_as_sequence,
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "tokplay_native.count",
    "Training's pre-token counting in C: the twin of core.train.count_table.PureCounts (see count.c).", -1, NULL,
};

PyMODINIT_FUNC
PyInit_count(void)
{
    init_kinds();
    PyObject *collections = PyImport_ImportModule("collections");
    if (collections == NULL)
        return NULL;
    counter_type = PyObject_GetAttrString(collections, "Counter");
    Py_DECREF(collections);
    if (counter_type == NULL || PyType_Ready(&CountsType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
    if (PyModule_AddObjectRef(m, "PretokenCounts", (PyObject *)&CountsType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
