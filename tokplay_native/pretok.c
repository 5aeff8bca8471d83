/* Pre-tokenization in C for the built-in patterns: the twin of `regex`'s findall with
 * core.engine.pretokenize's GPT2_PATTERN, CL100K_PATTERN, LLAMA3_PATTERN, O200K_PATTERN and
 * TEKKEN_PATTERN (tests/test_native_pretok.py checks them against `regex` on generated and
 * real text):
 *
 *   split = Splitter(pattern, classes, known, fill)
 *   split(text)       the pre-tokens of text (a list of str); first fill(block) for each block
 *                     of 256 code points the text uses whose classes are not known yet
 *                     (core.engine.pretoken_split.CharClasses.fill)
 *
 * Why C: on text that is not ASCII, `regex`'s findall was most of an encode (6 of 13 ms for a
 * 50 KB mix of scripts with o200k), as much as tiktoken's whole encode.
 *
 * What a character is comes from `regex` itself, never from a table compiled in here:
 * `classes` holds one byte of flags per code point (CL_* below), which the caller computes
 * with `regex` one block of 256 code points at a time, the first time a text uses the block
 * (fill), and `known` one byte per block (1: filled). So the classes are `regex`'s on every version
 * of it, and a text in three scripts costs a few blocks, not the whole of Unicode.
 *
 * Each pattern is an alternation tried left to right at each position, its quantifiers
 * greedy with backtracking; each function below gives the end of the match at i, reasoning
 * out the backtracking once (the comments say how). Every character starts a match of every
 * one of these patterns (a letter, a number, whitespace, or anything else), so findall never
 * skips one; the code still skips as findall would if none matched.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

#define CL_L 1  /* \p{L} */
#define CL_N 2  /* \p{N} */
#define CL_S 4  /* \s */
#define CL_U 8  /* [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}] */
#define CL_W 16 /* [\p{Ll}\p{Lm}\p{Lo}\p{M}] */

enum { GPT2 = 0, CL100K = 1, LLAMA3 = 2, O200K = 3, TEKKEN = 4, KINDS = 5 };

#define BLOCKS (0x110000 >> 8)

typedef struct {
    int kind;
    void *data;
    Py_ssize_t n;
    const unsigned char *classes;
} Text;

static inline Py_UCS4
ch(const Text *t, Py_ssize_t i)
{
    return PyUnicode_READ(t->kind, t->data, i);
}

static inline unsigned
cls(const Text *t, Py_ssize_t i)
{
    return t->classes[ch(t, i)];
}

static inline int
is_crlf(Py_UCS4 c)
{
    return c == '\r' || c == '\n';
}

/* [^\r\n\p{L}\p{N}] */
static inline int
prefix_char(const Text *t, Py_ssize_t i)
{
    Py_UCS4 c = ch(t, i);
    return !is_crlf(c) && !(t->classes[c] & (CL_L | CL_N));
}

/* [^\s\p{L}\p{N}] */
static inline int
other_char(const Text *t, Py_ssize_t i)
{
    return !(cls(t, i) & (CL_S | CL_L | CL_N));
}

/* The end of the run of characters with any of `flags` from i. */
static inline Py_ssize_t
run_end(const Text *t, Py_ssize_t i, unsigned flags)
{
    while (i < t->n && (cls(t, i) & flags))
        i++;
    return i;
}

/* The end of the run of [^\s\p{L}\p{N}] from i. */
static inline Py_ssize_t
other_end(const Text *t, Py_ssize_t i)
{
    while (i < t->n && other_char(t, i))
        i++;
    return i;
}

/* A letter of a contraction, as `(?i:x)` matches it in `regex` (simple case folding: the
 * long s U+017F is an s; tests check every code point). */
static inline int
letter_is(Py_UCS4 c, char lower, int ignore_case)
{
    if (c == (Py_UCS4)lower)
        return 1;
    if (!ignore_case)
        return 0;
    return c == (Py_UCS4)(lower - 'a' + 'A') || (lower == 's' && c == 0x17F);
}

/* The length of a contraction at i ('s 't 'd 'm, 'll 've 're), or 0. The one-letter and the
 * two-letter ones start with different letters, so the first that matches is the only one. */
static Py_ssize_t
contraction(const Text *t, Py_ssize_t i, int ignore_case)
{
    if (i + 1 >= t->n || ch(t, i) != '\'')
        return 0;
    Py_UCS4 a = ch(t, i + 1);
    if (letter_is(a, 's', ignore_case) || letter_is(a, 'd', ignore_case) ||
        letter_is(a, 'm', ignore_case) || letter_is(a, 't', ignore_case))
        return 2;
    if (i + 2 >= t->n)
        return 0;
    Py_UCS4 b = ch(t, i + 2);
    if ((letter_is(a, 'l', ignore_case) && letter_is(b, 'l', ignore_case)) ||
        (letter_is(a, 'v', ignore_case) && letter_is(b, 'e', ignore_case)) ||
        (letter_is(a, 'r', ignore_case) && letter_is(b, 'e', ignore_case)))
        return 3;
    return 0;
}

/* The whitespace alternatives, at i where \s matches (j: the end of its run).
 * \s*[\r\n]+ : the greedy \s* gives back characters from the right until [\r\n] matches, so
 *              the match ends after the run's last \r or \n (none: no match);
 * \s+(?!\S)  : the whole run at the end of the text, else the run but its last character
 *              (which is followed by whitespace then), if that leaves one;
 * \s+        : the whole run. */
/* \s*[\r\n] in the run [i, j): the end of its last \r or \n, or 0 if it has none. */
static Py_ssize_t
after_last_line_break(const Text *t, Py_ssize_t i, Py_ssize_t j)
{
    for (Py_ssize_t k = j - 1; k >= i; k--)
        if (is_crlf(ch(t, k)))
            return k + 1;
    return 0;
}

/* \s+(?!\S)|\s+ on the run [i, j) (j > i). */
static Py_ssize_t
spaces(const Text *t, Py_ssize_t i, Py_ssize_t j)
{
    if (j == t->n)
        return j;
    return j - 1 > i ? j - 1 : j;
}

static Py_ssize_t
spaces_lines_first(const Text *t, Py_ssize_t i, Py_ssize_t j)
{
    Py_ssize_t e = after_last_line_break(t, i, j);
    return e ? e : spaces(t, i, j);
}

/* ---- the patterns: the end of the match at i (i < n), or i if none ---------------------- */

/* GPT2_PATTERN: '(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
 * ` ?x+`: the space is taken if x follows; without it, x+ at the space cannot match. */
static Py_ssize_t
match_gpt2(const Text *t, Py_ssize_t i)
{
    Py_ssize_t c = contraction(t, i, 0);
    if (c)
        return i + c;
    Py_ssize_t p = i + (ch(t, i) == ' ' && i + 1 < t->n);
    unsigned k = cls(t, p);
    if (k & CL_L)
        return run_end(t, p, CL_L);
    if (k & CL_N)
        return run_end(t, p, CL_N);
    if (other_char(t, p))
        return other_end(t, p);
    Py_ssize_t j = run_end(t, i, CL_S);
    return j == i ? i : spaces(t, i, j);
}

/* The letters and numbers of CL100K_PATTERN and LLAMA3_PATTERN:
 * [^\r\n\p{L}\p{N}]?\p{L}+ : the prefix character only before a letter (a prefix character
 *                            is no letter, so without it \p{L}+ cannot match at it either);
 * \p{N}{1,3}. Then ` ?[^\s\p{L}\p{N}]+[\r\n]*`. Returns i if none matched. */
static Py_ssize_t
words_cl100k(const Text *t, Py_ssize_t i)
{
    Py_ssize_t c = contraction(t, i, 1);
    if (c)
        return i + c;
    unsigned k = cls(t, i);
    if (k & CL_L)
        return run_end(t, i, CL_L);
    if (prefix_char(t, i) && i + 1 < t->n && (cls(t, i + 1) & CL_L))
        return run_end(t, i + 1, CL_L);
    if (k & CL_N) {
        Py_ssize_t e = i + 1;
        while (e < t->n && e < i + 3 && (cls(t, e) & CL_N))
            e++;
        return e;
    }
    Py_ssize_t p = i + (ch(t, i) == ' ' && i + 1 < t->n);
    if (other_char(t, p)) {
        Py_ssize_t e = other_end(t, p);
        while (e < t->n && is_crlf(ch(t, e)))
            e++;
        return e;
    }
    return i;
}

/* CL100K_PATTERN's whitespace: \s++$|\s*[\r\n]|\s+(?!\S)|\s (a run to the end of the text is
 * one pre-token; else up to the run's last \r or \n; else all but the last character; else
 * one character). */
static Py_ssize_t
match_cl100k(const Text *t, Py_ssize_t i)
{
    Py_ssize_t e = words_cl100k(t, i);
    if (e > i)
        return e;
    Py_ssize_t j = run_end(t, i, CL_S);
    if (j == i)
        return i;
    if (j == t->n)
        return j;
    Py_ssize_t after = after_last_line_break(t, i, j);
    return after ? after : spaces(t, i, j);
}

/* LLAMA3_PATTERN's whitespace: \s*[\r\n]+|\s+(?!\S)|\s+ */
static Py_ssize_t
match_llama3(const Text *t, Py_ssize_t i)
{
    Py_ssize_t e = words_cl100k(t, i);
    if (e > i)
        return e;
    Py_ssize_t j = run_end(t, i, CL_S);
    return j == i ? i : spaces_lines_first(t, i, j);
}

/* O200K_PATTERN's first alternative from p (after its optional prefix character):
 * U*W+ with U = [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}], W = [\p{Ll}\p{Lm}\p{Lo}\p{M}] (they overlap).
 * U* takes its whole run [p, b); if W+ matches at b it runs to the end of the W run. Else U*
 * gives back characters: the first place W+ matches is the last W character q in [p, b), and
 * W+ ends right after it (nothing after q up to b is W, nor b). Returns p if none. */
static Py_ssize_t
upper_lower(const Text *t, Py_ssize_t p)
{
    Py_ssize_t b = run_end(t, p, CL_U);
    if (b < t->n && (cls(t, b) & CL_W))
        return run_end(t, b, CL_W);
    for (Py_ssize_t q = b - 1; q >= p; q--)
        if (cls(t, q) & CL_W)
            return q + 1;
    return p;
}

/* O200K_PATTERN (contractions and up to 3 digits) and TEKKEN_PATTERN (neither):
 * [^\r\n\p{L}\p{N}]?U*W+C? | [^\r\n\p{L}\p{N}]?U+W*C? | \p{N}{1,3} | ?[^\s\p{L}\p{N}]+[\r\n/]*
 * | \s*[\r\n]+ | \s+(?!\S) | \s+   (C: a contraction, case-insensitive). Each optional prefix
 * character is tried taken first, then not (a mark is both a prefix character and U and W). */
static Py_ssize_t
match_o200k(const Text *t, Py_ssize_t i, int o200k)
{
    int prefix = prefix_char(t, i) && i + 1 < t->n;
    Py_ssize_t e = i;
    if (prefix) { /* the first alternative with its prefix character, then without */
        Py_ssize_t end = upper_lower(t, i + 1);
        if (end > i + 1)
            e = end;
    }
    if (e == i)
        e = upper_lower(t, i);
    if (e == i) { /* the second: U+ then W* (never gives back: W* cannot fail) */
        if (prefix && (cls(t, i + 1) & CL_U))
            e = run_end(t, run_end(t, i + 1, CL_U), CL_W);
        else if (cls(t, i) & CL_U)
            e = run_end(t, run_end(t, i, CL_U), CL_W);
    }
    if (e > i)
        return o200k ? e + contraction(t, e, 1) : e;
    if (cls(t, i) & CL_N) {
        e = i + 1;
        while (o200k && e < t->n && e < i + 3 && (cls(t, e) & CL_N))
            e++;
        return e;
    }
    Py_ssize_t p = i + (ch(t, i) == ' ' && i + 1 < t->n);
    if (other_char(t, p)) {
        e = other_end(t, p);
        while (e < t->n && (is_crlf(ch(t, e)) || ch(t, e) == '/'))
            e++;
        return e;
    }
    Py_ssize_t j = run_end(t, i, CL_S);
    return j == i ? i : spaces_lines_first(t, i, j);
}

static Py_ssize_t
match_at(const Text *t, int pattern, Py_ssize_t i)
{
    switch (pattern) {
    case GPT2:
        return match_gpt2(t, i);
    case CL100K:
        return match_cl100k(t, i);
    case LLAMA3:
        return match_llama3(t, i);
    case O200K:
        return match_o200k(t, i, 1);
    default:
        return match_o200k(t, i, 0);
    }
}

/* ---- Splitter ------------------------------------------------------------------------------ */

typedef struct {
    PyObject_HEAD
    int pattern;
    Py_buffer classes, known;
    PyObject *fill;
} Splitter;

/* Fill every block text uses that is not known yet (fill(block) for each); -1 on error. */
static int
fill_blocks(Splitter *self, const Text *t)
{
    const unsigned char *known = self->known.buf;
    Py_ssize_t last = -1;
    for (Py_ssize_t i = 0; i < t->n; i++) {
        Py_ssize_t block = (Py_ssize_t)(ch(t, i) >> 8);
        if (block == last || known[block])
            continue;
        PyObject *done = PyObject_CallFunction(self->fill, "n", block);
        if (done == NULL)
            return -1;
        Py_DECREF(done);
        if (!known[block]) {
            PyErr_Format(PyExc_RuntimeError, "Splitter: fill(%zd) left its block unknown", block);
            return -1;
        }
        last = block;
    }
    return 0;
}

static void
Splitter_dealloc(Splitter *self)
{
    if (self->classes.obj != NULL)
        PyBuffer_Release(&self->classes);
    if (self->known.obj != NULL)
        PyBuffer_Release(&self->known);
    Py_XDECREF(self->fill);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *
Splitter_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    static char *names[] = {"pattern", "classes", "known", "fill", NULL};
    int pattern;
    PyObject *classes, *known, *fill;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "iOOO:Splitter", names, &pattern, &classes,
                                     &known, &fill))
        return NULL;
    if (!PyCallable_Check(fill)) {
        PyErr_SetString(PyExc_TypeError, "Splitter: fill must be callable");
        return NULL;
    }
    if (pattern < 0 || pattern >= KINDS) {
        PyErr_Format(PyExc_ValueError, "Splitter: no pattern number %d", pattern);
        return NULL;
    }
    Splitter *self = (Splitter *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    self->pattern = pattern;
    self->fill = Py_NewRef(fill);
    if (PyObject_GetBuffer(classes, &self->classes, PyBUF_SIMPLE) < 0 ||
        PyObject_GetBuffer(known, &self->known, PyBUF_SIMPLE) < 0) {
        Py_DECREF(self);
        return NULL;
    }
    if (self->classes.len != 0x110000 || self->known.len != BLOCKS) {
        PyErr_SetString(PyExc_ValueError,
                        "Splitter: classes must hold 0x110000 bytes, known 0x1100");
        Py_DECREF(self);
        return NULL;
    }
    return (PyObject *)self;
}

static PyObject *
Splitter_call(Splitter *self, PyObject *args, PyObject *kwargs)
{
    PyObject *text;
    if (!PyArg_ParseTuple(args, "U:Splitter", &text))
        return NULL;
    Text t = {PyUnicode_KIND(text), PyUnicode_DATA(text), PyUnicode_GET_LENGTH(text),
              self->classes.buf};
    /* every block the text uses is known first (a 1-byte string is all in block 0) */
    if (t.kind != PyUnicode_1BYTE_KIND || (t.n && !((const unsigned char *)self->known.buf)[0]))
        if (fill_blocks(self, &t) < 0)
            return NULL;
    PyObject *out = PyList_New(0);
    if (out == NULL)
        return NULL;
    Py_ssize_t i = 0;
    while (i < t.n) {
        Py_ssize_t e = match_at(&t, self->pattern, i);
        if (e <= i) { /* no alternative matched: findall moves on by one character */
            i++;
            continue;
        }
        PyObject *piece = PyUnicode_Substring(text, i, e);
        if (piece == NULL || PyList_Append(out, piece) < 0) {
            Py_XDECREF(piece);
            Py_DECREF(out);
            return NULL;
        }
        Py_DECREF(piece);
        i = e;
    }
    return out;
}

static PyTypeObject SplitterType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "tokplay_native.pretok.Splitter",
    .tp_doc = "Splitter(pattern, classes, known, fill): a built-in pattern's findall (see pretok.c).",
    .tp_basicsize = sizeof(Splitter),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = Splitter_new,
    .tp_dealloc = (destructor)Splitter_dealloc,
    .tp_call = (ternaryfunc)Splitter_call,
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "tokplay_native.pretok",
    "The built-in pre-tokenizer patterns' findall in C (see pretok.c).", -1, NULL,
};

PyMODINIT_FUNC
PyInit_pretok(void)
{
    if (PyType_Ready(&SplitterType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
    if (PyModule_AddIntConstant(m, "GPT2", GPT2) < 0 ||
        PyModule_AddIntConstant(m, "CL100K", CL100K) < 0 ||
        PyModule_AddIntConstant(m, "LLAMA3", LLAMA3) < 0 ||
        PyModule_AddIntConstant(m, "O200K", O200K) < 0 ||
        PyModule_AddIntConstant(m, "TEKKEN", TEKKEN) < 0 ||
        PyModule_AddIntConstant(m, "L", CL_L) < 0 || PyModule_AddIntConstant(m, "N", CL_N) < 0 ||
        PyModule_AddIntConstant(m, "S", CL_S) < 0 || PyModule_AddIntConstant(m, "U", CL_U) < 0 ||
        PyModule_AddIntConstant(m, "W", CL_W) < 0 ||
        PyModule_AddObjectRef(m, "Splitter", (PyObject *)&SplitterType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
