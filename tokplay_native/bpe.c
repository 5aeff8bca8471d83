/* The BPE merge loop in C: the twin of core/bpe.py's two hot paths and of a byte-level
 * pre-token's BPE in core/tokenizer.py. Same algorithm, same order of look-ups, same
 * answers (tests/test_native.py checks them against the pure functions on arbitrary input).
 *
 * BPE joins the adjacent pair of lowest rank, the leftmost on a tie, until no pair has a
 * rank. A pair's rank is looked up in a Python dict, as the pure code does, so nothing is
 * built at load time and the tables stay the tokenizer's own:
 *
 *   merge_joined(parts, ranks)            key = left + right, a join makes left + right
 *                                         (rank files over bytes, SentencePiece over str)
 *   merge_made(parts, ranks, made)        key = (left, right), a join makes made[rank]
 *                                         (merge lists over token IDs)
 *   encode_joined(data, encoder)          a rank file's BPE of one pre-token's bytes -> IDs
 *   encode_made(data, byte_ids, ranks, made)   a merge list's BPE of one pre-token's bytes
 *
 * Ranks are ints below NO_MERGE (1 << 62, what a missing pair ranks); the loop rescans an
 * array of ranks after each join (n^2), so callers send only short inputs (core.bpe._LONG
 * parts) and keep their heap for longer ones. The merge_* functions join `parts` in place
 * and return it, as core.bpe.merge does.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#define NO_MERGE (1LL << 62)

/* ranks.get(key, NO_MERGE) for a dict of ints; -1 with an exception set on error. */
static int
rank_of(PyObject *ranks, PyObject *key, long long *out)
{
    PyObject *value = PyDict_GetItemWithError(ranks, key); /* borrowed */
    if (value == NULL) {
        if (PyErr_Occurred())
            return -1;
        *out = NO_MERGE;
        return 0;
    }
    long long rank = PyLong_AsLongLong(value);
    if (rank == -1 && PyErr_Occurred())
        return -1;
    *out = rank;
    return 0;
}

/* The index of the lowest rank among r[0:n], the leftmost on a tie (n >= 1). */
static Py_ssize_t
lowest(const long long *r, Py_ssize_t n)
{
    Py_ssize_t best = 0;
    for (Py_ssize_t i = 1; i < n; i++)
        if (r[i] < r[best])
            best = i;
    return best;
}

/* made[rank] as a new reference. */
static PyObject *
made_of(PyObject *made, long long rank)
{
    if (PyList_CheckExact(made) && rank >= 0 && rank < PyList_GET_SIZE(made)) {
        PyObject *item = PyList_GET_ITEM(made, rank);
        Py_INCREF(item);
        return item;
    }
    if (PyTuple_CheckExact(made) && rank >= 0 && rank < PyTuple_GET_SIZE(made)) {
        PyObject *item = PyTuple_GET_ITEM(made, rank);
        Py_INCREF(item);
        return item;
    }
    PyObject *index = PyLong_FromLongLong(rank);
    if (index == NULL)
        return NULL;
    PyObject *item = PyObject_GetItem(made, index);
    Py_DECREF(index);
    return item;
}

static void
release(PyObject **items, Py_ssize_t n)
{
    if (items == NULL)
        return;
    for (Py_ssize_t i = 0; i < n; i++)
        Py_XDECREF(items[i]);
    PyMem_Free(items);
}

/* The merge loop over `p[0:n]` (owned references), in place; returns the new count or -1.
 * With `made` NULL a pair's key is p[i] + p[i+1] and a join makes that key (kept in k[i]);
 * otherwise the key is the tuple (p[i], p[i+1]) and a join makes made[rank]. */
static Py_ssize_t
merge_loop(PyObject **p, Py_ssize_t n, PyObject *ranks, PyObject *made)
{
    Py_ssize_t result = -1;
    long long *r = PyMem_Malloc(sizeof(long long) * (size_t)n);
    PyObject **k = made == NULL ? PyMem_Calloc((size_t)n, sizeof(PyObject *)) : NULL;
    if (r == NULL || (made == NULL && k == NULL)) {
        PyErr_NoMemory();
        goto done;
    }
#define KEY(i, key)                                                                    \
    ((key) = made == NULL ? PyNumber_Add(p[i], p[(i) + 1]) : PyTuple_Pack(2, p[i], p[(i) + 1]))
#define RANK(i)                                                                        \
    do {                                                                               \
        PyObject *key_;                                                                \
        if (KEY(i, key_) == NULL)                                                      \
            goto done;                                                                 \
        int bad_ = rank_of(ranks, key_, &r[i]);                                        \
        if (made == NULL) {                                                            \
            Py_XDECREF(k[i]);                                                          \
            k[i] = key_;                                                               \
        }                                                                              \
        else                                                                           \
            Py_DECREF(key_);                                                           \
        if (bad_)                                                                      \
            goto done;                                                                 \
    } while (0)

    for (Py_ssize_t i = 0; i + 1 < n; i++)
        RANK(i);
    while (n > 1) {
        Py_ssize_t i = lowest(r, n - 1);
        long long best = r[i];
        if (best == NO_MERGE)
            break;
        PyObject *joined;
        if (made == NULL) {
            joined = k[i];
            k[i] = NULL;
        }
        else if ((joined = made_of(made, best)) == NULL)
            goto done;
        Py_DECREF(p[i]);
        Py_DECREF(p[i + 1]);
        p[i] = joined;
        memmove(&p[i + 1], &p[i + 2], sizeof(PyObject *) * (size_t)(n - i - 2));
        memmove(&r[i], &r[i + 1], sizeof(long long) * (size_t)(n - i - 2));
        if (made == NULL) {
            memmove(&k[i], &k[i + 1], sizeof(PyObject *) * (size_t)(n - i - 2));
            k[n - 2] = NULL;
        }
        n--;
        p[n] = NULL;
        if (i > 0)
            RANK(i - 1);
        if (i + 1 < n)
            RANK(i);
    }
    result = n;
#undef RANK
#undef KEY
done:
    PyMem_Free(r);
    release(k, n);
    return result;
}

/* Run merge_loop over the list `parts` and write the result back into it. */
static PyObject *
merge_list(PyObject *parts, PyObject *ranks, PyObject *made)
{
    Py_ssize_t n = PyList_GET_SIZE(parts);
    if (n < 2) {
        Py_INCREF(parts);
        return parts;
    }
    PyObject **p = PyMem_Malloc(sizeof(PyObject *) * (size_t)n);
    if (p == NULL)
        return PyErr_NoMemory();
    for (Py_ssize_t i = 0; i < n; i++) {
        p[i] = PyList_GET_ITEM(parts, i);
        Py_INCREF(p[i]);
    }
    Py_ssize_t m = merge_loop(p, n, ranks, made);
    if (m < 0) {
        release(p, n);
        return NULL;
    }
    PyObject *joined = PyList_New(m);
    if (joined == NULL) {
        release(p, m);
        return NULL;
    }
    for (Py_ssize_t i = 0; i < m; i++)
        PyList_SET_ITEM(joined, i, p[i]); /* steals */
    PyMem_Free(p);
    int bad = PyList_SetSlice(parts, 0, n, joined);
    Py_DECREF(joined);
    if (bad)
        return NULL;
    Py_INCREF(parts);
    return parts;
}

PyDoc_STRVAR(merge_joined_doc,
"merge_joined(parts, ranks, /)\n--\n\n"
"core.bpe.merge(parts, ranks, key=operator.add): join the adjacent pair whose\n"
"concatenation ranks lowest in the dict `ranks` (the leftmost on a tie) until none has\n"
"a rank; `parts` (a list of bytes or str) is joined in place and returned.");

static PyObject *
merge_joined(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2 || !PyList_CheckExact(args[0]) || !PyDict_CheckExact(args[1])) {
        PyErr_SetString(PyExc_TypeError, "merge_joined(parts: list, ranks: dict)");
        return NULL;
    }
    return merge_list(args[0], args[1], NULL);
}

PyDoc_STRVAR(merge_made_doc,
"merge_made(parts, ranks, made, /)\n--\n\n"
"core.bpe.merge(parts, ranks, made): join the adjacent pair (left, right) of lowest\n"
"rank in the dict `ranks` (the leftmost on a tie) into made[rank] until no pair has a\n"
"rank; `parts` (a list) is joined in place and returned.");

static PyObject *
merge_made(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3 || !PyList_CheckExact(args[0]) || !PyDict_CheckExact(args[1])) {
        PyErr_SetString(PyExc_TypeError, "merge_made(parts: list, ranks: dict, made)");
        return NULL;
    }
    return merge_list(args[0], args[1], args[2]);
}

PyDoc_STRVAR(encode_joined_doc,
"encode_joined(data, encoder, /)\n--\n\n"
"A rank file's BPE of one pre-token: tuple(map(encoder.__getitem__,\n"
"core.bpe.merge([bytes([b]) for b in data], encoder, key=operator.add))).\n"
"Parts are kept as offsets into `data` (as tiktoken does), so a look-up makes one\n"
"bytes object and a join makes none.");

/* encoder[data[a:b]] as an int (for the rank) or a new reference (for the ID). */
static PyObject *
slice_key(const char *data, Py_ssize_t a, Py_ssize_t b)
{
    return PyBytes_FromStringAndSize(data + a, b - a);
}

static PyObject *
encode_joined(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2 || !PyBytes_CheckExact(args[0]) || !PyDict_CheckExact(args[1])) {
        PyErr_SetString(PyExc_TypeError, "encode_joined(data: bytes, encoder: dict)");
        return NULL;
    }
    const char *data = PyBytes_AS_STRING(args[0]);
    Py_ssize_t size = PyBytes_GET_SIZE(args[0]);
    PyObject *encoder = args[1];
    PyObject *out = NULL;
    /* part i is data[b[i]:b[i + 1]]; r[i] ranks the pair (i, i + 1) */
    Py_ssize_t *b = PyMem_Malloc(sizeof(Py_ssize_t) * (size_t)(size + 1));
    long long *r = PyMem_Malloc(sizeof(long long) * (size_t)(size + 1));
    if (b == NULL || r == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t n = size; /* parts */
    for (Py_ssize_t i = 0; i <= size; i++)
        b[i] = i;
#define RANK(i)                                                                        \
    do {                                                                               \
        PyObject *key_ = slice_key(data, b[i], b[(i) + 2]);                            \
        if (key_ == NULL)                                                              \
            goto done;                                                                 \
        int bad_ = rank_of(encoder, key_, &r[i]);                                      \
        Py_DECREF(key_);                                                               \
        if (bad_)                                                                      \
            goto done;                                                                 \
    } while (0)
    for (Py_ssize_t i = 0; i + 1 < n; i++)
        RANK(i);
    while (n > 1) {
        Py_ssize_t i = lowest(r, n - 1);
        if (r[i] == NO_MERGE)
            break;
        memmove(&b[i + 1], &b[i + 2], sizeof(Py_ssize_t) * (size_t)(n - i - 1));
        memmove(&r[i], &r[i + 1], sizeof(long long) * (size_t)(n - i - 2));
        n--;
        if (i > 0)
            RANK(i - 1);
        if (i + 1 < n)
            RANK(i);
    }
#undef RANK
    out = PyTuple_New(n);
    if (out == NULL)
        goto done;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *key = slice_key(data, b[i], b[i + 1]);
        if (key == NULL) {
            Py_CLEAR(out);
            goto done;
        }
        PyObject *id = PyDict_GetItemWithError(encoder, key); /* borrowed */
        if (id == NULL) {
            if (!PyErr_Occurred())
                PyErr_SetObject(PyExc_KeyError, key);
            Py_DECREF(key);
            Py_CLEAR(out);
            goto done;
        }
        Py_DECREF(key);
        Py_INCREF(id);
        PyTuple_SET_ITEM(out, i, id);
    }
done:
    PyMem_Free(b);
    PyMem_Free(r);
    return out;
}

PyDoc_STRVAR(encode_made_doc,
"encode_made(data, byte_ids, ranks, made, /)\n--\n\n"
"A merge list's BPE of one pre-token: tuple(core.bpe.merge([byte_ids[b] for b in data],\n"
"ranks, made)).");

static PyObject *
encode_made(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 4 || !PyBytes_CheckExact(args[0]) || !PyDict_CheckExact(args[2])) {
        PyErr_SetString(PyExc_TypeError,
                        "encode_made(data: bytes, byte_ids, ranks: dict, made)");
        return NULL;
    }
    const unsigned char *data = (const unsigned char *)PyBytes_AS_STRING(args[0]);
    Py_ssize_t n = PyBytes_GET_SIZE(args[0]);
    PyObject **p = PyMem_Calloc((size_t)(n ? n : 1), sizeof(PyObject *));
    if (p == NULL)
        return PyErr_NoMemory();
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *index = PyLong_FromLong(data[i]);
        p[i] = index == NULL ? NULL : PyObject_GetItem(args[1], index);
        Py_XDECREF(index);
        if (p[i] == NULL) {
            release(p, i);
            return NULL;
        }
    }
    Py_ssize_t m = n > 1 ? merge_loop(p, n, args[2], args[3]) : n;
    if (m < 0) {
        release(p, n);
        return NULL;
    }
    PyObject *out = PyTuple_New(m);
    if (out == NULL) {
        release(p, m);
        return NULL;
    }
    for (Py_ssize_t i = 0; i < m; i++)
        PyTuple_SET_ITEM(out, i, p[i]); /* steals */
    PyMem_Free(p);
    return out;
}

static PyMethodDef methods[] = {
    {"merge_joined", (PyCFunction)(void (*)(void))merge_joined, METH_FASTCALL, merge_joined_doc},
    {"merge_made", (PyCFunction)(void (*)(void))merge_made, METH_FASTCALL, merge_made_doc},
    {"encode_joined", (PyCFunction)(void (*)(void))encode_joined, METH_FASTCALL, encode_joined_doc},
    {"encode_made", (PyCFunction)(void (*)(void))encode_made, METH_FASTCALL, encode_made_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "tokplay_native.bpe",
    "The BPE merge loop in C: twins of core.bpe.merge's hot paths (see bpe.c).", -1, methods,
};

PyMODINIT_FUNC
PyInit_bpe(void)
{
    PyObject *m = PyModule_Create(&module);
    if (m != NULL && PyModule_AddIntConstant(m, "NO_MERGE", NO_MERGE) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
