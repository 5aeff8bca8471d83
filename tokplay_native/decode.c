/* Decoding in C: the tokens' bytes joined from an ID -> bytes list, in one pass over the
 * IDs into one buffer (the twin of core.native's itemgetter join).
 *
 *   join(table, ids)        b"".join(table[i] for i in ids)
 *   join_text(table, ids)   the same bytes as str: UTF-8 with errors="replace", as
 *                           bytes.decode (one U+FFFD per maximal invalid subsequence)
 *
 * table is a list of bytes (None where an ID is no token), ids a list of ints (bool
 * included, as an int). Each ID picks its row as a list index does: a negative one counts
 * from the end. IndexError for an ID outside the list (any int too big for an index
 * included), TypeError for an item that is no int or a row that is no bytes: the caller's
 * per-item loop then names it (with several bad items, which error comes is not fixed).
 * No Python code runs in the loop, so neither list can change under it. Same results as
 * the pure join: tests/test_native_decode.py.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

#define BLOCK 32 /* IDs whose rows are fetched ahead together */
#if defined(__GNUC__) || defined(__clang__)
#define PREFETCH(p) __builtin_prefetch(p)
#else
#define PREFETCH(p) ((void)(p))
#endif

/* The joined bytes in a PyMem buffer the caller frees, their count in *size; NULL with an
 * exception set on a bad item (see above) or no memory.
 *
 * subtle: the IDs go a block at a time, first each one's row looked up and fetched ahead
 * (the rows are bytes objects all over the heap: waiting for each one in turn was half of
 * the time), then the rows copied. */
static char *
joined(PyObject *table, PyObject *ids, Py_ssize_t *size)
{
    Py_ssize_t n = PyList_GET_SIZE(ids), rows = PyList_GET_SIZE(table), len = 0;
    Py_ssize_t cap = n < (PY_SSIZE_T_MAX - 64) / 8 ? 4 * n + 64 : n; /* ~3 bytes a token */
    PyObject *row[BLOCK];
    char *buf = PyMem_Malloc(cap);
    if (buf == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    for (Py_ssize_t start = 0; start < n; start += BLOCK) {
        int count = n - start < BLOCK ? (int)(n - start) : BLOCK;
        for (int j = 0; j < count; j++) {
            PyObject *item = PyList_GET_ITEM(ids, start + j);
            if (!PyLong_Check(item)) {
                PyErr_Format(PyExc_TypeError, "item %zd of the IDs is no int", start + j);
                goto fail;
            }
            Py_ssize_t i = PyLong_AsSsize_t(item);
            if (i == -1 && PyErr_Occurred()) { /* OverflowError: past any list */
                PyErr_Clear();
                i = PY_SSIZE_T_MIN;
            }
            if (i < 0 && i != PY_SSIZE_T_MIN) /* from the end, as a list index */
                i += rows;
            if (i < 0 || i >= rows) {
                PyErr_Format(PyExc_IndexError, "item %zd of the IDs is outside the table",
                             start + j);
                goto fail;
            }
            row[j] = PyList_GET_ITEM(table, i);
            PREFETCH(row[j]);
        }
        for (int j = 0; j < count; j++) {
            if (!PyBytes_Check(row[j])) {
                PyErr_Format(PyExc_TypeError, "the ID at item %zd is no token", start + j);
                goto fail;
            }
            Py_ssize_t m = PyBytes_GET_SIZE(row[j]);
            if (m > cap - len) {
                if (len > PY_SSIZE_T_MAX / 2 - m) {
                    PyErr_NoMemory();
                    goto fail;
                }
                cap = 2 * (len + m);
                char *grown = PyMem_Realloc(buf, cap);
                if (grown == NULL) {
                    PyErr_NoMemory();
                    goto fail;
                }
                buf = grown;
            }
            memcpy(buf + len, PyBytes_AS_STRING(row[j]), m);
            len += m;
        }
    }
    *size = len;
    return buf;
fail:
    PyMem_Free(buf);
    return NULL;
}

/* The two lists of join(table, ids), or 0 with a TypeError. */
static int
check_args(PyObject *const *args, Py_ssize_t nargs, const char *usage)
{
    if (nargs != 2 || !PyList_Check(args[0]) || !PyList_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, usage);
        return 0;
    }
    return 1;
}

PyDoc_STRVAR(join_doc,
"join(table, ids, /)\n--\n\n"
"b\"\".join(table[i] for i in ids): table a list of bytes, ids a list of ints. IndexError\n"
"for an ID outside the table, TypeError for an item that is no int or a row that is no\n"
"bytes (None).");

/* join's and join_text's shared body: the joined bytes as bytes, or decoded (as_text). */
static PyObject *
join_as(PyObject *const *args, Py_ssize_t nargs, const char *usage, int as_text)
{
    Py_ssize_t size;
    if (!check_args(args, nargs, usage))
        return NULL;
    char *buf = joined(args[0], args[1], &size);
    if (buf == NULL)
        return NULL;
    PyObject *out = as_text ? PyUnicode_DecodeUTF8(buf, size, "replace")
                            : PyBytes_FromStringAndSize(buf, size);
    PyMem_Free(buf);
    return out;
}

static PyObject *
join(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    return join_as(args, nargs, "join(table: list, ids: list)", 0);
}

PyDoc_STRVAR(join_text_doc,
"join_text(table, ids, /)\n--\n\n"
"join(table, ids).decode(\"utf-8\", \"replace\"), with no bytes object between.");

static PyObject *
join_text(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    return join_as(args, nargs, "join_text(table: list, ids: list)", 1);
}

static PyMethodDef methods[] = {
    {"join", (PyCFunction)(void (*)(void))join, METH_FASTCALL, join_doc},
    {"join_text", (PyCFunction)(void (*)(void))join_text, METH_FASTCALL, join_text_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "tokplay_native.decode",
    "Decoding in C: the tokens' bytes joined from an ID -> bytes list (see decode.c).", -1,
    methods,
};

PyMODINIT_FUNC
PyInit_decode(void)
{
    return PyModule_Create(&module);
}
