/* Loading a merge list in C: the twins of two whole-list passes of a byte-level load.
 *
 *   merge_ids(merges, by_key[, joined])
 *                               core.formats.hf_json._fast_pairs' and gguf_vocab._id_merges'
 *                               split: each merge ("left right" with exactly one space, or
 *                               a [left, right] list) as the IDs of its parts in by_key;
 *                               joined: also the ID of the parts joined (a pipeline BPE's)
 *   index_pairs(lefts, rights, by_id, encoder)
 *                               core.engine.vocab_index._index_ordinary_ids: what each merge makes
 *                               and the (left, right) -> rank dict
 *
 *   packed_merge_ids(tokens_buf, tokens_spans, merges_buf, merges_spans, ids)
 *                               core.formats.gguf_bpe's merge_id_columns, on a GGUF vocab
 *                               read packed (no str made): each merge cut at its first space
 *                               after the first character, its parts and their join as IDs
 *   pair_ranks(lefts, rights)   dict(zip(zip(lefts, rights), range(len(lefts)))), presized
 *
 * Each answers None where the pure pass answers None (a part not in by_key, a merge not
 * shaped as the others, a join that is no token...), and index_pairs also where a pair is
 * listed twice (the pure pass keeps the first rank and builds its dict otherwise);
 * packed_merge_ids also for an empty token or one spelled twice (the pure pass names it).
 * Same results otherwise: tests/test_native_tables.py, tests/test_native_gguf_bpe.py.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "hash.h"

/* by_key[key] as a new reference, or NULL with no exception when it is missing. */
static PyObject *
lookup(PyObject *by_key, PyObject *key)
{
    PyObject *value = PyDict_GetItemWithError(by_key, key);
    Py_XINCREF(value);
    return value;
}

/* made[i] = by_key[a + b] for two strs a and b; -1 (no exception: the caller's None)
 * when either is no str or the join is no key, -1 with one set on an error. */
static int
join_into(PyObject *made, Py_ssize_t i, PyObject *by_key, PyObject *a, PyObject *b)
{
    if (!PyUnicode_CheckExact(a) || !PyUnicode_CheckExact(b))
        return -1;
    PyObject *joined = PyUnicode_Concat(a, b);
    PyObject *id = joined == NULL ? NULL : lookup(by_key, joined);
    Py_XDECREF(joined);
    if (id == NULL)
        return -1;
    PyList_SET_ITEM(made, i, id);
    return 0;
}

PyDoc_STRVAR(merge_ids_doc,
"merge_ids(merges, by_key, joined=False, /)\n--\n\n"
"(lefts, rights): each merge's parts as their values in the dict by_key. The merges are\n"
"all str, each with exactly one space (\"left right\"), or all two-item lists\n"
"([left, right]); None otherwise, when a part is not a key of by_key, or when there are\n"
"no merges. joined: (lefts, rights, made), made[k] the value of the two str parts joined\n"
"(None too when a join is not a key, or a part is no str).");

static PyObject *
merge_ids(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if ((nargs != 2 && nargs != 3) || !PyList_CheckExact(args[0]) || !PyDict_CheckExact(args[1])) {
        PyErr_SetString(PyExc_TypeError, "merge_ids(merges: list, by_key: dict, joined=False)");
        return NULL;
    }
    PyObject *merges = args[0], *by_key = args[1];
    int joined = nargs == 3 ? PyObject_IsTrue(args[2]) : 0;
    if (joined < 0)
        return NULL;
    Py_ssize_t n = PyList_GET_SIZE(merges);
    if (n == 0) /* no merges: the caller's own pass decides (it has its own rule for them) */
        Py_RETURN_NONE;
    PyObject *lefts = PyList_New(n), *rights = PyList_New(n), *made = NULL;
    if (lefts == NULL || rights == NULL || (joined && (made = PyList_New(n)) == NULL))
        goto fail;
    int as_str = n > 0 && PyUnicode_CheckExact(PyList_GET_ITEM(merges, 0));
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *merge = PyList_GET_ITEM(merges, i), *left, *right;
        if (as_str) {
            if (!PyUnicode_CheckExact(merge))
                goto none;
            Py_ssize_t length = PyUnicode_GET_LENGTH(merge);
            Py_ssize_t cut = PyUnicode_FindChar(merge, ' ', 0, length, 1);
            if (cut == -2)
                goto fail;
            if (cut < 0 || PyUnicode_FindChar(merge, ' ', cut + 1, length, 1) != -1)
                goto none; /* no space, or two (or an error: -2, raised below) */
            PyObject *a = PyUnicode_Substring(merge, 0, cut);
            PyObject *b = a == NULL ? NULL : PyUnicode_Substring(merge, cut + 1, length);
            left = a == NULL ? NULL : lookup(by_key, a);
            right = b == NULL || left == NULL ? NULL : lookup(by_key, b);
            if (joined && right != NULL && join_into(made, i, by_key, a, b) < 0) {
                Py_CLEAR(left);
                Py_CLEAR(right);
            }
            Py_XDECREF(a);
            Py_XDECREF(b);
        }
        else {
            if (!PyList_CheckExact(merge) || PyList_GET_SIZE(merge) != 2)
                goto none;
            PyObject *a = PyList_GET_ITEM(merge, 0), *b = PyList_GET_ITEM(merge, 1);
            left = lookup(by_key, a);
            right = left == NULL ? NULL : lookup(by_key, b);
            if (joined && right != NULL && join_into(made, i, by_key, a, b) < 0) {
                Py_CLEAR(left);
                Py_CLEAR(right);
            }
        }
        if (right == NULL) {
            Py_XDECREF(left);
            if (PyErr_Occurred() && !PyErr_ExceptionMatches(PyExc_TypeError))
                goto fail;
            PyErr_Clear(); /* a missing part, or an unhashable one: None, as the pure pass */
            goto none;
        }
        PyList_SET_ITEM(lefts, i, left);
        PyList_SET_ITEM(rights, i, right);
    }
    if (joined)
        return Py_BuildValue("(NNN)", lefts, rights, made);
    return Py_BuildValue("(NN)", lefts, rights);
none:
    Py_XDECREF(lefts);
    Py_XDECREF(rights);
    Py_XDECREF(made);
    Py_RETURN_NONE;
fail:
    Py_XDECREF(lefts);
    Py_XDECREF(rights);
    Py_XDECREF(made);
    return NULL;
}

PyDoc_STRVAR(index_pairs_doc,
"index_pairs(lefts, rights, by_id, encoder, /)\n--\n\n"
"(ranks, made, pairs): pairs[k] = (lefts[k], rights[k]); made[k] = encoder[by_id[left] +\n"
"by_id[right]]; ranks = {pair: k}. None when an ID is outside by_id or names None there,\n"
"a join is not in encoder, or a pair repeats.");

static PyObject *
index_pairs(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 4 || !PyList_CheckExact(args[2]) || !PyDict_CheckExact(args[3])) {
        PyErr_SetString(PyExc_TypeError, "index_pairs(lefts, rights, by_id: list, encoder: dict)");
        return NULL;
    }
    PyObject *lefts = PySequence_Fast(args[0], "index_pairs: lefts must be a sequence");
    PyObject *rights = lefts == NULL ? NULL
                                     : PySequence_Fast(args[1], "index_pairs: rights must be a sequence");
    PyObject *by_id = args[2], *encoder = args[3];
    PyObject *ranks = NULL, *made = NULL, *pairs = NULL, *result = NULL;
    if (rights == NULL)
        goto done;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(lefts), size = PyList_GET_SIZE(by_id);
    if (PySequence_Fast_GET_SIZE(rights) != n) {
        PyErr_SetString(PyExc_ValueError, "index_pairs: lefts and rights differ in length");
        goto done;
    }
    ranks = PyDict_New();
    made = PyTuple_New(n);
    pairs = PyTuple_New(n);
    if (ranks == NULL || made == NULL || pairs == NULL)
        goto done;
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *left = PySequence_Fast_GET_ITEM(lefts, k);
        PyObject *right = PySequence_Fast_GET_ITEM(rights, k);
        if (!PyLong_CheckExact(left) || !PyLong_CheckExact(right))
            goto none;
        Py_ssize_t a = PyLong_AsSsize_t(left), b = PyLong_AsSsize_t(right);
        if ((a == -1 || b == -1) && PyErr_Occurred()) {
            PyErr_Clear();
            goto none;
        }
        if (a < 0 || b < 0 || a >= size || b >= size)
            goto none;
        PyObject *x = PyList_GET_ITEM(by_id, a), *y = PyList_GET_ITEM(by_id, b);
        if (!PyBytes_CheckExact(x) || !PyBytes_CheckExact(y))
            goto none;
        PyObject *joined = PyBytes_FromStringAndSize(NULL, PyBytes_GET_SIZE(x) + PyBytes_GET_SIZE(y));
        if (joined == NULL)
            goto done;
        memcpy(PyBytes_AS_STRING(joined), PyBytes_AS_STRING(x), (size_t)PyBytes_GET_SIZE(x));
        memcpy(PyBytes_AS_STRING(joined) + PyBytes_GET_SIZE(x), PyBytes_AS_STRING(y),
               (size_t)PyBytes_GET_SIZE(y));
        PyObject *id = PyDict_GetItemWithError(encoder, joined); /* borrowed */
        Py_DECREF(joined);
        if (id == NULL) {
            if (PyErr_Occurred())
                goto done;
            goto none;
        }
        Py_INCREF(id);
        PyTuple_SET_ITEM(made, k, id);
        PyObject *pair = PyTuple_Pack(2, left, right);
        if (pair == NULL)
            goto done;
        PyTuple_SET_ITEM(pairs, k, pair);
        PyObject *rank = PyLong_FromSsize_t(k);
        if (rank == NULL)
            goto done;
        PyObject *had = PyDict_SetDefault(ranks, pair, rank); /* borrowed */
        Py_DECREF(rank);
        if (had == NULL)
            goto done;
        if (had != rank)
            goto none; /* a pair listed twice: the pure pass orders that dict its own way */
    }
    result = Py_BuildValue("(OOO)", ranks, made, pairs);
    goto done;
none:
    result = Py_NewRef(Py_None);
done:
    Py_XDECREF(lefts);
    Py_XDECREF(rights);
    Py_XDECREF(ranks);
    Py_XDECREF(made);
    Py_XDECREF(pairs);
    return result;
}

/* ------------------------------------------------------------------------------------ *
 * A GGUF vocab read packed (core.formats.gguf.GGUFStrings: the array's UTF-8 and each
 * string's span in it, native int64 start and length): the merges as IDs without a str per
 * merge. A 262k-token vocab's 515k merges through Python dicts cost three new strs, three
 * hashes and three dict probes each (~0.8 us, mostly cache misses in a 262k-entry dict of
 * str objects); here a token is 8 bytes in an open-addressing table of hashes, and a probe
 * reads the slot and the token's bytes.
 * ------------------------------------------------------------------------------------ */

typedef struct {
    const unsigned char *buf;
    const unsigned char *spans; /* (int64 start, int64 length) pairs, possibly unaligned */
    Py_ssize_t n;
} Packed;

static void
span_of(const Packed *p, Py_ssize_t i, const unsigned char **s, Py_ssize_t *n)
{
    int64_t pair[2];
    memcpy(pair, p->spans + 16 * i, 16);
    *s = p->buf + pair[0];
    *n = (Py_ssize_t)pair[1];
}

/* p over the buffers buf and spans, every span checked to lie inside buf (else ValueError);
 * *longest gets the longest string's length. */
static int
packed_of(const Py_buffer *buf, const Py_buffer *spans, Packed *p, Py_ssize_t *longest)
{
    if (spans->len % 16 != 0) {
        PyErr_SetString(PyExc_ValueError, "packed_merge_ids: spans are int64 pairs");
        return -1;
    }
    p->buf = buf->buf;
    p->spans = spans->buf;
    p->n = spans->len / 16;
    *longest = 0;
    for (Py_ssize_t i = 0; i < p->n; i++) {
        int64_t pair[2];
        memcpy(pair, p->spans + 16 * i, 16);
        if (pair[0] < 0 || pair[1] < 0 || pair[0] > buf->len || pair[1] > buf->len - pair[0]) {
            PyErr_SetString(PyExc_ValueError, "packed_merge_ids: a span runs outside its buffer");
            return -1;
        }
        if (pair[1] > *longest)
            *longest = (Py_ssize_t)pair[1];
    }
    return 0;
}


/* Token bytes -> ID: slots of (hash's top 32 bits) << 32 | (ID + 1), 0 when empty. */
typedef struct {
    uint64_t *slots;
    size_t mask;
    const Packed *tokens;
} TokenTable;

/* The ID of s[0:n] among the tokens, or -1. */
static Py_ssize_t
token_id(const TokenTable *t, const unsigned char *s, Py_ssize_t n)
{
    uint64_t h = hash_bytes(s, n);
    uint32_t tag = (uint32_t)(h >> 32);
    for (size_t slot = (size_t)h & t->mask;; slot = (slot + 1) & t->mask) {
        uint64_t got = t->slots[slot];
        if (got == 0)
            return -1;
        if ((uint32_t)(got >> 32) == tag) {
            Py_ssize_t id = (Py_ssize_t)(got & 0xFFFFFFFFu) - 1, m;
            const unsigned char *token;
            span_of(t->tokens, id, &token, &m);
            if (m == n && memcmp(token, s, (size_t)n) == 0)
                return id;
        }
    }
}

/* The table of every token; 0, or 1 when a token is empty or spelled twice (the caller's
 * None), -1 with MemoryError. */
static int
token_table(TokenTable *t, const Packed *tokens)
{
    size_t size = 16;
    while (size < 2 * (size_t)tokens->n)
        size <<= 1;
    t->slots = PyMem_Calloc(size, sizeof(uint64_t));
    t->mask = size - 1;
    t->tokens = tokens;
    if (t->slots == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t id = 0; id < tokens->n; id++) {
        const unsigned char *s;
        Py_ssize_t n;
        span_of(tokens, id, &s, &n);
        if (n == 0 || token_id(t, s, n) >= 0)
            return 1;
        uint64_t h = hash_bytes(s, n);
        size_t slot = (size_t)h & t->mask;
        while (t->slots[slot] != 0)
            slot = (slot + 1) & t->mask;
        t->slots[slot] = (h >> 32) << 32 | (uint64_t)(id + 1);
    }
    return 0;
}

/* Each merge's left part, right part and their join as token IDs (lefts, rights, made):
 * 0, or 1 when a merge has no space after its first byte or names no token, -1 on error. */
static int
merge_columns(const TokenTable *t, const Packed *merges, Py_ssize_t longest, Py_ssize_t *ids)
{
    unsigned char *joined = PyMem_Malloc((size_t)longest + 1);
    if (joined == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    int result = 0;
    for (Py_ssize_t k = 0; k < merges->n && result == 0; k++) {
        const unsigned char *s, *space;
        Py_ssize_t n;
        span_of(merges, k, &s, &n);
        /* llama.cpp's cut: the first space after the first character (a space is one byte,
         * never inside a longer character, so "after the first byte" is the same) */
        space = n > 1 ? memchr(s + 1, ' ', (size_t)(n - 1)) : NULL;
        if (space == NULL) {
            result = 1;
            break;
        }
        Py_ssize_t cut = space - s, rest = n - cut - 1;
        memcpy(joined, s, (size_t)cut);
        memcpy(joined + cut, space + 1, (size_t)rest);
        Py_ssize_t a = token_id(t, s, cut), b = token_id(t, space + 1, rest);
        Py_ssize_t c = token_id(t, joined, cut + rest);
        if (a < 0 || b < 0 || c < 0)
            result = 1;
        ids[3 * k] = a;
        ids[3 * k + 1] = b;
        ids[3 * k + 2] = c;
    }
    PyMem_Free(joined);
    return result;
}

PyDoc_STRVAR(packed_merge_ids_doc,
"packed_merge_ids(tokens_buf, tokens_spans, merges_buf, merges_spans, ids, /)\n--\n\n"
"(lefts, rights, made) for a vocab and its merges packed as GGUFStrings (spans: native\n"
"int64 start and length pairs into buf): each merge cut at its first space after the\n"
"first character, the parts and their join as token IDs, each given as ids[id] (a list\n"
"with one item per token). None when a token is empty or spelled twice, or a merge has no\n"
"such space or names no token.");

static PyObject *
packed_merge_ids(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 5 || !PyList_CheckExact(args[4])) {
        PyErr_SetString(PyExc_TypeError, "packed_merge_ids(tokens_buf, tokens_spans, "
                                         "merges_buf, merges_spans, ids: list)");
        return NULL;
    }
    Py_buffer views[4];
    int held = 0;
    PyObject *result = NULL, *columns[3] = {NULL, NULL, NULL};
    Py_ssize_t *found = NULL;
    TokenTable table = {NULL, 0, NULL};
    for (; held < 4; held++)
        if (PyObject_GetBuffer(args[held], &views[held], PyBUF_SIMPLE) < 0)
            goto done;
    Packed tokens, merges;
    Py_ssize_t longest_token, longest;
    if (packed_of(&views[0], &views[1], &tokens, &longest_token) < 0 ||
        packed_of(&views[2], &views[3], &merges, &longest) < 0)
        goto done;
    PyObject *ids = args[4];
    if (PyList_GET_SIZE(ids) != tokens.n || tokens.n >= 0xFFFFFFFFLL) {
        PyErr_SetString(PyExc_ValueError, "packed_merge_ids: ids must have one item per token");
        goto done;
    }
    int bad = token_table(&table, &tokens);
    if (bad == 0) {
        found = PyMem_Malloc(sizeof(Py_ssize_t) * 3 * (size_t)(merges.n ? merges.n : 1));
        if (found == NULL) {
            PyErr_NoMemory();
            goto done;
        }
        bad = merge_columns(&table, &merges, longest, found);
    }
    if (bad < 0)
        goto done;
    if (bad > 0) {
        result = Py_NewRef(Py_None);
        goto done;
    }
    for (int c = 0; c < 3; c++) {
        if ((columns[c] = PyList_New(merges.n)) == NULL)
            goto done;
        for (Py_ssize_t k = 0; k < merges.n; k++) {
            PyObject *id = PyList_GET_ITEM(ids, found[3 * k + c]);
            Py_INCREF(id);
            PyList_SET_ITEM(columns[c], k, id);
        }
    }
    result = PyTuple_Pack(3, columns[0], columns[1], columns[2]);
done:
    for (int c = 0; c < 3; c++)
        Py_XDECREF(columns[c]);
    PyMem_Free(found);
    PyMem_Free(table.slots);
    while (held > 0)
        PyBuffer_Release(&views[--held]);
    return result;
}

PyDoc_STRVAR(pair_ranks_doc,
"pair_ranks(lefts, rights, /)\n--\n\n"
"dict(zip(zip(lefts, rights), range(len(lefts)))) for two lists of one length: each pair\n"
"(left, right) -> its rank; a pair listed twice keeps its first place and its last rank.");

static PyObject *
pair_ranks(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2 || !PyList_CheckExact(args[0]) || !PyList_CheckExact(args[1]) ||
        PyList_GET_SIZE(args[0]) != PyList_GET_SIZE(args[1])) {
        PyErr_SetString(PyExc_TypeError, "pair_ranks(lefts: list, rights: list), one length");
        return NULL;
    }
    PyObject *lefts = args[0], *rights = args[1];
    Py_ssize_t n = PyList_GET_SIZE(lefts);
#if PY_VERSION_HEX < 0x030D0000
    PyObject *ranks = _PyDict_NewPresized(n); /* (no rehash while it grows) */
#else
    PyObject *ranks = PyDict_New();
#endif
    if (ranks == NULL)
        return NULL;
    /* (a list may change under a key's __hash__ or __eq__: its size is read each time) */
    for (Py_ssize_t k = 0; k < PyList_GET_SIZE(lefts) && k < PyList_GET_SIZE(rights); k++) {
        PyObject *pair = PyTuple_Pack(2, PyList_GET_ITEM(lefts, k), PyList_GET_ITEM(rights, k));
        PyObject *rank = pair == NULL ? NULL : PyLong_FromSsize_t(k);
        int bad = rank == NULL || PyDict_SetItem(ranks, pair, rank) < 0;
        Py_XDECREF(pair);
        Py_XDECREF(rank);
        if (bad) {
            Py_DECREF(ranks);
            return NULL;
        }
    }
    return ranks;
}

static PyMethodDef methods[] = {
    {"merge_ids", (PyCFunction)(void (*)(void))merge_ids, METH_FASTCALL, merge_ids_doc},
    {"index_pairs", (PyCFunction)(void (*)(void))index_pairs, METH_FASTCALL, index_pairs_doc},
    {"packed_merge_ids", (PyCFunction)(void (*)(void))packed_merge_ids, METH_FASTCALL,
     packed_merge_ids_doc},
    {"pair_ranks", (PyCFunction)(void (*)(void))pair_ranks, METH_FASTCALL, pair_ranks_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "tokplay_native.tables",
    "Loading a merge list in C: twins of two whole-list passes (see tables.c).", -1, methods,
};

PyMODINIT_FUNC
PyInit_tables(void)
{
    return PyModule_Create(&module);
}
