/* Loading a merge list in C: the twins of two whole-list passes of a byte-level load.
 *
 *   merge_ids(merges, by_key[, joined])
 *                               core.formats.hf_json._fast_pairs' and gguf_vocab._id_merges'
 *                               split: each merge ("left right" with exactly one space, or
 *                               a [left, right] list) as the IDs of its parts in by_key;
 *                               joined: also the ID of the parts joined (a pipeline BPE's)
 *   index_pairs(lefts, rights, by_id, encoder)
 *                               core.vocab_index._index_ordinary_ids: what each merge makes
 *                               and the (left, right) -> rank dict
 *
 * Either answers None where the pure pass answers None (a part not in by_key, a merge not
 * shaped as the others, a join that is no token...), and index_pairs also where a pair is
 * listed twice (the pure pass keeps the first rank and builds its dict otherwise). Same
 * results otherwise: tests/test_native_tables.py.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

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

static PyMethodDef methods[] = {
    {"merge_ids", (PyCFunction)(void (*)(void))merge_ids, METH_FASTCALL, merge_ids_doc},
    {"index_pairs", (PyCFunction)(void (*)(void))index_pairs, METH_FASTCALL, index_pairs_doc},
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
