/* The loops behind a SentencePiece model's load, in C: twins of the pure code in
 * core/pipeline/sentencepiece/ (proto.py, tables.py, bpe.py) and core/formats/gguf.py.
 * The files read are untrusted input: every length and offset is checked against the end
 * of the buffer before it is used.
 *
 *   pieces(buf, pos)            the run of ModelProto.pieces (field 1) from pos:
 *                               (texts, scores, types, end)
 *   columns(buf, pos)           the same run as packed columns, no object per piece:
 *                               (spans, scores, types, end); texts(buf, spans) the strs
 *   fields(buf, start, end[, strings])   any message's fields: (fields, stop)
 *   gguf_strings(buf, pos, stop, count, big_endian)
 *                               up to count GGUF strings (u64 length, UTF-8): (strings, end)
 *   gguf_spans(buf, pos, stop, count, big_endian)
 *                               the same strings as spans (no str made): (spans, end)
 *   float32_doubles(buf)        a GGUF float32 array as native doubles (packed scores)
 *   tables(texts, scores, types)   SentencePieceBPE's vocab and merge ranks, one pass
 *   piece_chars(pieces)         every character, and those around a U+2581, as sets
 *   char_ranges(chars)          a regex character class's inside for those characters
 *   first_repeat(texts)         the index of the first text spelled twice, -1 if none
 *   char_cuts(pieces | buf, spans, types)   a CharCuts: .split(text), cuts.WordCuts' words
 *
 * The readers read only what they can read cleanly and stop before anything else (a piece
 * written in an unusual way, a truncated or invalid field, a string running past `stop`):
 * the pure reader goes on from there, reads what it can and raises its one-line error for
 * the rest. So a file reads to the same values, or fails with the same error, with or
 * without this module; tables() answers None where the pure code has a case of its own
 * (a text spelled twice, a NaN score). tests/test_native_spm.py checks every pair on real
 * and on mutated files.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#if PY_VERSION_HEX < 0x030B0000 /* (Python 3.10 names it privately) */
#define PyFloat_Unpack4(p, le) _PyFloat_Unpack4((const unsigned char *)(p), (le))
#endif
#include <stdint.h>
#include <math.h>
#include <string.h>
#include "hash.h"

/* A varint at buf[*pos:end] into *out; 0 when it is not read cleanly: it runs past end, or
 * it is longer than max_bytes (the pure reader then says why, or reads a value so large
 * that only it keeps every bit). */
static int
varint(const unsigned char *buf, Py_ssize_t *pos, Py_ssize_t end, int max_bytes,
       uint64_t *out)
{
    uint64_t result = 0;
    Py_ssize_t p = *pos;
    for (int i = 0; i < max_bytes; i++) {
        if (p >= end)
            return 0;
        unsigned char b = buf[p++];
        if (i == 9 && b > 1)
            return 0; /* more than 64 bits */
        result |= (uint64_t)(b & 0x7F) << (7 * i);
        if (b < 0x80) {
            *out = result;
            *pos = p;
            return 1;
        }
    }
    return 0;
}

/* The code point at buf[i] (i < n) into *c and its length in bytes, or 0 when no valid
 * UTF-8 starts there (the Unicode standard's table 3-7, which Python's strict decoder
 * follows). */
static inline int
utf8_next(const unsigned char *buf, Py_ssize_t n, Py_ssize_t i, Py_UCS4 *c)
{
    unsigned char b = buf[i];
    if (b < 0x80) {
        *c = b;
        return 1;
    }
    if (b >= 0xC2 && b <= 0xDF) {
        if (n - i < 2 || (buf[i + 1] & 0xC0) != 0x80)
            return 0;
        *c = ((Py_UCS4)(b & 0x1F) << 6) | (buf[i + 1] & 0x3F);
        return 2;
    }
    if (b >= 0xE0 && b <= 0xEF) {
        if (n - i < 3)
            return 0;
        unsigned char b1 = buf[i + 1], b2 = buf[i + 2];
        unsigned char lo = b == 0xE0 ? 0xA0 : 0x80, hi = b == 0xED ? 0x9F : 0xBF;
        if (b1 < lo || b1 > hi || (b2 & 0xC0) != 0x80)
            return 0;
        *c = ((Py_UCS4)(b & 0x0F) << 12) | ((Py_UCS4)(b1 & 0x3F) << 6) | (b2 & 0x3F);
        return 3;
    }
    if (b >= 0xF0 && b <= 0xF4) {
        if (n - i < 4)
            return 0;
        unsigned char b1 = buf[i + 1], b2 = buf[i + 2], b3 = buf[i + 3];
        unsigned char lo = b == 0xF0 ? 0x90 : 0x80, hi = b == 0xF4 ? 0x8F : 0xBF;
        if (b1 < lo || b1 > hi || (b2 & 0xC0) != 0x80 || (b3 & 0xC0) != 0x80)
            return 0;
        *c = ((Py_UCS4)(b & 0x07) << 18) | ((Py_UCS4)(b1 & 0x3F) << 12) |
             ((Py_UCS4)(b2 & 0x3F) << 6) | (b3 & 0x3F);
        return 4;
    }
    return 0;
}

/* 1 when buf[0:n] is valid UTF-8 (utf8_next), with its characters counted and the largest
 * found; else 0. Pieces are short and mostly "▁" and ASCII: one pass to check and measure,
 * one (utf8_str's) to copy, with no intermediate buffer. */
static int
utf8_check(const unsigned char *buf, Py_ssize_t n, Py_ssize_t *chars_out, Py_UCS4 *max_out)
{
    Py_ssize_t i = 0, chars = 0;
    Py_UCS4 max = 0;
    while (i < n) {
        Py_UCS4 c;
        int len = utf8_next(buf, n, i, &c);
        if (len == 0)
            return 0;
        if (c > max)
            max = c;
        i += len;
        chars++;
    }
    *chars_out = chars;
    *max_out = max;
    return 1;
}

/* utf8_check's answer alone, with nothing counted: the packed reader's check, run over
 * every piece of a file at each load. */
static int
utf8_valid(const unsigned char *buf, Py_ssize_t n)
{
    Py_ssize_t i = 0;
    while (i < n) {
        unsigned char b = buf[i];
        if (b < 0x80) {
            i++;
            continue;
        }
        if (b >= 0xC2 && b <= 0xDF) {
            if (n - i < 2 || (buf[i + 1] & 0xC0) != 0x80)
                return 0;
            i += 2;
        }
        else if (b >= 0xE0 && b <= 0xEF) {
            if (n - i < 3)
                return 0;
            unsigned char b1 = buf[i + 1], lo = b == 0xE0 ? 0xA0 : 0x80, hi = b == 0xED ? 0x9F : 0xBF;
            if (b1 < lo || b1 > hi || (buf[i + 2] & 0xC0) != 0x80)
                return 0;
            i += 3;
        }
        else if (b >= 0xF0 && b <= 0xF4) {
            if (n - i < 4)
                return 0;
            unsigned char b1 = buf[i + 1], lo = b == 0xF0 ? 0x90 : 0x80, hi = b == 0xF4 ? 0x8F : 0xBF;
            if (b1 < lo || b1 > hi || (buf[i + 2] & 0xC0) != 0x80 || (buf[i + 3] & 0xC0) != 0x80)
                return 0;
            i += 4;
        }
        else
            return 0;
    }
    return 1;
}

/* buf[0:n] as a new str; NULL with no exception set when it is no valid UTF-8, NULL with
 * one set on an error. */
static PyObject *
utf8_str(const unsigned char *buf, Py_ssize_t n)
{
    Py_ssize_t chars, i;
    Py_UCS4 max;
    if (!utf8_check(buf, n, &chars, &max))
        return NULL;
    if (max < 0x80)
        return PyUnicode_FromStringAndSize((const char *)buf, n);
    PyObject *out = PyUnicode_New(chars, max);
    if (out == NULL)
        return NULL;
    int kind = PyUnicode_KIND(out);
    void *data = PyUnicode_DATA(out);
    Py_ssize_t k = 0;
    for (i = 0; i < n; k++) {
        unsigned char b = buf[i];
        Py_UCS4 c;
        if (b < 0x80)
            c = b, i += 1;
        else if (b < 0xE0)
            c = ((Py_UCS4)(b & 0x1F) << 6) | (buf[i + 1] & 0x3F), i += 2;
        else if (b < 0xF0)
            c = ((Py_UCS4)(b & 0x0F) << 12) | ((Py_UCS4)(buf[i + 1] & 0x3F) << 6) |
                (buf[i + 2] & 0x3F), i += 3;
        else
            c = ((Py_UCS4)(b & 0x07) << 18) | ((Py_UCS4)(buf[i + 1] & 0x3F) << 12) |
                ((Py_UCS4)(buf[i + 2] & 0x3F) << 6) | (buf[i + 3] & 0x3F), i += 4;
        PyUnicode_WRITE(kind, data, k, c);
    }
    return out;
}

/* One piece message buf[start:end] as proto.py's _parse_piece reads it. 1 with *text (a
 * new reference), *score and *type set; 0 when it is not read cleanly (no exception set);
 * -1 on an error (exception set). With text NULL, no str is made: span[0:2] get where its
 * UTF-8 lies in buf (checked valid) and how long it is. */
static int
one_piece(const unsigned char *buf, Py_ssize_t start, Py_ssize_t end, PyObject **text,
          int64_t *span, double *score, long *type)
{
    Py_ssize_t p = start, text_at = -1, text_len = 0;
    double s = 0.0;
    long t = 1; /* NORMAL */
    while (p < end) {
        uint64_t key, value;
        /* field numbers fit in 29 bits: a longer key is left to the pure reader */
        if (!varint(buf, &p, end, 5, &key) || (key >> 3) == 0)
            return 0;
        uint64_t number = key >> 3;
        switch (key & 7) {
        case 0:
            if (!varint(buf, &p, end, 10, &value))
                return 0;
            if (number == 3) {
                /* protobuf's enum: the low 32 bits, two's complement; unknown values kept
                 * as unknown fields (the type stays what it was) */
                int32_t v = (int32_t)(uint32_t)(value & 0xFFFFFFFFu);
                if (v >= 1 && v <= 6)
                    t = v;
            }
            break;
        case 1:
            if (end - p < 8)
                return 0;
            p += 8;
            break;
        case 5:
            if (end - p < 4)
                return 0;
            if (number == 2) {
                s = PyFloat_Unpack4((const char *)buf + p, 1);
                if (s == -1.0 && PyErr_Occurred())
                    return -1;
            }
            p += 4;
            break;
        case 2:
            if (!varint(buf, &p, end, 10, &value) || value > (uint64_t)(end - p))
                return 0;
            if (number == 1) {
                if (text_at >= 0)
                    return 0; /* the pure reader decodes (and may refuse) each */
                text_at = p;
                text_len = (Py_ssize_t)value;
            }
            p += (Py_ssize_t)value;
            break;
        default: /* groups and wire types protobuf never writes */
            return 0;
        }
    }
    if (text == NULL) {
        if (text_at >= 0 && !utf8_valid(buf + text_at, text_len))
            return 0; /* (not UTF-8: the pure reader names the byte) */
        span[0] = text_at < 0 ? 0 : (int64_t)text_at;
        span[1] = (int64_t)text_len;
        *score = s;
        *type = t;
        return 1;
    }
    PyObject *decoded;
    if (text_at < 0)
        decoded = PyUnicode_FromStringAndSize("", 0);
    else {
        decoded = utf8_str(buf + text_at, text_len);
        if (decoded == NULL)
            return PyErr_Occurred() ? -1 : 0; /* (not UTF-8: the pure reader names the byte) */
    }
    if (decoded == NULL)
        return -1;
    /* (not hashed here: a BPE model encodes from a C table of the UTF-8, and makes the dicts
     * keyed by these strs on first use, if ever) */
    *text = decoded;
    *score = s;
    *type = t;
    return 1;
}

/* one_piece(buf, start, end, NULL, span, score, type) for a piece written as spm_train
 * writes nearly every one: a text under 128 bytes, its score, and its type when not NORMAL
 * (0A n text, 15 f32, [18 t]). 1 with the same answers one_piece gives; 0 for any other
 * layout, which one_piece then reads (its general loop costs more than the rest of the
 * load's parse). */
static int
plain_piece(const unsigned char *buf, Py_ssize_t start, Py_ssize_t end, int64_t *span,
            double *score, long *type)
{
    if (end - start < 7 || buf[start] != 0x0A || buf[start + 1] >= 0x80)
        return 0;
    Py_ssize_t text_at = start + 2, n = buf[start + 1], q = text_at + n;
    if (end - q != 5 && end - q != 7)
        return 0;
    if (buf[q] != 0x15)
        return 0;
    long t = 1;
    if (end - q == 7) {
        unsigned char v = buf[q + 6];
        if (buf[q + 5] != 0x18 || v < 1 || v > 6)
            return 0; /* (a type 0 or beyond 6 is an unknown enum value: one_piece's) */
        t = v;
    }
    for (Py_ssize_t i = text_at; i < q; i++)
        if (buf[i] >= 0x80) {
            if (!utf8_valid(buf + text_at, n))
                return 0; /* (not UTF-8: the pure reader names the byte) */
            break;
        }
    double s = PyFloat_Unpack4((const char *)buf + q + 1, 1);
    if (s == -1.0 && PyErr_Occurred()) {
        PyErr_Clear();
        return 0;
    }
    span[0] = (int64_t)text_at;
    span[1] = (int64_t)n;
    *score = s;
    *type = t;
    return 1;
}

/* Append a new reference to list (stealing it); -1 on error. */
static int
append_new(PyObject *list, PyObject *item)
{
    if (item == NULL)
        return -1;
    int rc = PyList_Append(list, item);
    Py_DECREF(item);
    return rc;
}

PyDoc_STRVAR(pieces_doc,
"pieces(buf, pos) -> (texts, scores, types, end)\n\n"
"The ModelProto.pieces (field 1, key byte 0x0A) that follow one another from buf[pos], as\n"
"core.pipeline.sentencepiece.proto._parse_piece reads each: its text (str), score\n"
"(float32 as float) and type (1..6). Stops before the first field that is not such a piece\n"
"or is not read cleanly; end is where the pieces read end (pos when none).");

static PyObject *
pieces(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "pieces() takes 2 arguments (buf, pos)");
        return NULL;
    }
    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0)
        return NULL;
    Py_ssize_t pos = PyLong_AsSsize_t(args[1]);
    PyObject *texts = NULL, *scores = NULL, *types = NULL, *result = NULL;
    if (pos == -1 && PyErr_Occurred())
        goto done;
    if (pos < 0 || pos > view.len) {
        PyErr_SetString(PyExc_ValueError, "pieces(): pos is outside the buffer");
        goto done;
    }
    texts = PyList_New(0);
    scores = PyList_New(0);
    types = PyList_New(0);
    if (texts == NULL || scores == NULL || types == NULL)
        goto done;
    const unsigned char *buf = (const unsigned char *)view.buf;
    Py_ssize_t end = view.len;
    while (pos < end && buf[pos] == 0x0A) {
        Py_ssize_t p = pos + 1;
        uint64_t length;
        if (!varint(buf, &p, end, 10, &length) || length > (uint64_t)(end - p))
            break;
        PyObject *text = NULL;
        double score;
        long type;
        int rc = one_piece(buf, p, p + (Py_ssize_t)length, &text, NULL, &score, &type);
        if (rc < 0)
            goto done;
        if (rc == 0)
            break;
        if (append_new(texts, text) < 0 || append_new(scores, PyFloat_FromDouble(score)) < 0 ||
            append_new(types, PyLong_FromLong(type)) < 0)
            goto done;
        pos = p + (Py_ssize_t)length;
    }
    result = Py_BuildValue("(OOOn)", texts, scores, types, pos);
done:
    Py_XDECREF(texts);
    Py_XDECREF(scores);
    Py_XDECREF(types);
    PyBuffer_Release(&view);
    return result;
}

/* A growing array of fixed-size items, written straight into the bytes object that
 * Python gets (cut to size at the end: no copy). */
typedef struct {
    PyObject *bytes;
    Py_ssize_t used, size; /* in bytes */
} Grow;

/* Room for `size` bytes at first; -1 on error. */
static int
grow_init(Grow *g, Py_ssize_t size)
{
    g->used = 0;
    g->size = size > 0 ? size : 1;
    g->bytes = PyBytes_FromStringAndSize(NULL, g->size);
    return g->bytes == NULL ? -1 : 0;
}

static inline int
grow_put(Grow *g, const void *item, Py_ssize_t n)
{
    if (g->used + n > g->size) {
        Py_ssize_t size = g->size * 2;
        while (size < g->used + n)
            size *= 2;
        if (_PyBytes_Resize(&g->bytes, size) < 0)
            return -1;
        g->size = size;
    }
    memcpy(PyBytes_AS_STRING(g->bytes) + g->used, item, (size_t)n);
    g->used += n;
    return 0;
}

/* The bytes written, as a new reference (g is left empty); NULL on error. */
static PyObject *
grow_take(Grow *g)
{
    if (g->used != g->size && _PyBytes_Resize(&g->bytes, g->used) < 0)
        return NULL;
    PyObject *out = g->bytes;
    g->bytes = NULL;
    return out;
}

PyDoc_STRVAR(columns_doc,
"columns(buf, pos) -> (spans, scores, types, end)\n\n"
"pieces(buf, pos) without a Python object per piece: the same run of pieces read the same\n"
"way, as three packed columns by ID: spans (bytes of native int64 pairs: where each text's\n"
"UTF-8 starts in buf, and its length; checked valid UTF-8), scores (native doubles, each a\n"
"float32's value) and types (one byte each, 1..6). texts(buf, spans) makes the strs.");

static PyObject *
columns(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "columns() takes 2 arguments (buf, pos)");
        return NULL;
    }
    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0)
        return NULL;
    Grow spans = {0}, scores = {0}, types = {0};
    PyObject *result = NULL, *a = NULL, *b = NULL, *c = NULL;
    Py_ssize_t pos = PyLong_AsSsize_t(args[1]);
    if (pos == -1 && PyErr_Occurred())
        goto done;
    if (pos < 0 || pos > view.len) {
        PyErr_SetString(PyExc_ValueError, "columns(): pos is outside the buffer");
        goto done;
    }
    const unsigned char *buf = (const unsigned char *)view.buf;
    Py_ssize_t end = view.len;
    /* (room for as many pieces as the bytes could hold at about 8 bytes each, a real
     * file's least: no copy as the columns grow; pages never written are never touched) */
    Py_ssize_t room = (end - pos) / 8 + 16;
    if (grow_init(&spans, room * 16) < 0 || grow_init(&scores, room * 8) < 0 ||
        grow_init(&types, room) < 0)
        goto done;
    while (pos < end && buf[pos] == 0x0A) {
        Py_ssize_t p = pos + 1;
        uint64_t length;
        if (!varint(buf, &p, end, 10, &length) || length > (uint64_t)(end - p))
            break;
        int64_t span[2];
        double score;
        long type;
        int rc = plain_piece(buf, p, p + (Py_ssize_t)length, span, &score, &type);
        if (rc == 0)
            rc = one_piece(buf, p, p + (Py_ssize_t)length, NULL, span, &score, &type);
        if (rc < 0)
            goto done;
        if (rc == 0)
            break;
        unsigned char code = (unsigned char)type;
        if (grow_put(&spans, span, sizeof span) < 0 || grow_put(&scores, &score, sizeof score) < 0 ||
            grow_put(&types, &code, 1) < 0)
            goto done;
        pos = p + (Py_ssize_t)length;
    }
    if ((a = grow_take(&spans)) != NULL && (b = grow_take(&scores)) != NULL &&
        (c = grow_take(&types)) != NULL)
        result = Py_BuildValue("(OOOn)", a, b, c, pos);
done:
    Py_XDECREF(a);
    Py_XDECREF(b);
    Py_XDECREF(c);
    Py_XDECREF(spans.bytes);
    Py_XDECREF(scores.bytes);
    Py_XDECREF(types.bytes);
    PyBuffer_Release(&view);
    return result;
}

PyDoc_STRVAR(texts_doc,
"texts(buf, spans[, ids]) -> list[str]\n\n"
"The strs of columns()'s spans (start, length pairs into buf), or of those at ids (a list\n"
"of int) alone; ValueError for a span outside buf or one that is no valid UTF-8,\n"
"IndexError for an id with no span.");

static PyObject *
texts(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2 && nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "texts() takes 2 or 3 arguments (buf, spans[, ids])");
        return NULL;
    }
    PyObject *ids = nargs == 3 ? args[2] : NULL;
    if (ids != NULL && !PyList_Check(ids)) {
        PyErr_SetString(PyExc_TypeError, "texts(): ids must be a list of int");
        return NULL;
    }
    Py_buffer view, spans;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0)
        return NULL;
    if (PyObject_GetBuffer(args[1], &spans, PyBUF_SIMPLE) < 0) {
        PyBuffer_Release(&view);
        return NULL;
    }
    PyObject *out = NULL;
    Py_ssize_t n = spans.len / (Py_ssize_t)(2 * sizeof(int64_t));
    if (spans.len % (Py_ssize_t)(2 * sizeof(int64_t))) {
        PyErr_SetString(PyExc_ValueError, "texts(): spans is not a whole number of pairs");
        goto done;
    }
    Py_ssize_t count = ids == NULL ? n : PyList_GET_SIZE(ids);
    if ((out = PyList_New(count)) == NULL)
        goto done;
    const unsigned char *buf = (const unsigned char *)view.buf;
    for (Py_ssize_t k = 0; k < count; k++) {
        Py_ssize_t i = k;
        if (ids != NULL) {
            i = PyLong_AsSsize_t(PyList_GET_ITEM(ids, k));
            if (i == -1 && PyErr_Occurred()) {
                Py_CLEAR(out);
                goto done;
            }
            if (i < 0 || i >= n) {
                PyErr_Format(PyExc_IndexError, "texts(): no piece %zd", i);
                Py_CLEAR(out);
                goto done;
            }
        }
        int64_t span[2];
        memcpy(span, (const char *)spans.buf + i * (Py_ssize_t)sizeof span, sizeof span);
        if (span[0] < 0 || span[1] < 0 || span[0] > view.len || span[1] > view.len - span[0]) {
            PyErr_Format(PyExc_ValueError, "texts(): span %zd is outside the buffer", i);
            Py_CLEAR(out);
            goto done;
        }
        PyObject *s = utf8_str(buf + span[0], (Py_ssize_t)span[1]);
        if (s == NULL) {
            if (!PyErr_Occurred())
                PyErr_Format(PyExc_ValueError, "texts(): span %zd is no valid UTF-8", i);
            Py_CLEAR(out);
            goto done;
        }
        PyList_SET_ITEM(out, k, s);
    }
done:
    PyBuffer_Release(&spans);
    PyBuffer_Release(&view);
    return out;
}

/* gguf_strings' and gguf_spans' arguments (buf, pos, stop, count, big_endian): 0 with the
 * buffer held (the caller releases it) and stop clipped to it, -1 with an exception set. */
static int
gguf_args(const char *name, PyObject *const *args, Py_ssize_t nargs, Py_buffer *view,
          Py_ssize_t *pos, Py_ssize_t *stop, Py_ssize_t *count, int *big)
{
    if (nargs != 5) {
        PyErr_Format(PyExc_TypeError, "%s() takes 5 arguments (buf, pos, stop, count, big_endian)",
                     name);
        return -1;
    }
    if (PyObject_GetBuffer(args[0], view, PyBUF_SIMPLE) < 0)
        return -1;
    if (((*pos = PyLong_AsSsize_t(args[1])) == -1 && PyErr_Occurred()) ||
        ((*stop = PyLong_AsSsize_t(args[2])) == -1 && PyErr_Occurred()) ||
        ((*count = PyLong_AsSsize_t(args[3])) == -1 && PyErr_Occurred()) ||
        (*big = PyObject_IsTrue(args[4])) < 0)
        goto fail;
    if (*pos < 0 || *pos > view->len || *count < 0) {
        PyErr_Format(PyExc_ValueError, "%s(): pos or count out of range", name);
        goto fail;
    }
    if (*stop > view->len)
        *stop = view->len;
    return 0;
fail:
    PyBuffer_Release(view);
    return -1;
}

/* The GGUF string at buf[pos:stop] (a u64 length, then that many bytes): 1 with its bytes
 * at *start, *n long, when it lies whole before stop; else 0 (the reading stops there). */
static int
gguf_next(const unsigned char *buf, Py_ssize_t pos, Py_ssize_t stop, int big, Py_ssize_t *start,
          Py_ssize_t *n)
{
    if (stop - pos < 8)
        return 0;
    uint64_t length = 0;
    for (int i = 0; i < 8; i++)
        length = (length << 8) | buf[pos + (big ? i : 7 - i)];
    if (length > (uint64_t)(stop - pos - 8))
        return 0;
    *start = pos + 8;
    *n = (Py_ssize_t)length;
    return 1;
}

PyDoc_STRVAR(gguf_strings_doc,
"gguf_strings(buf, pos, stop, count, big_endian) -> (strings, end)\n\n"
"Up to count GGUF strings (a u64 length, then that many UTF-8 bytes) from buf[pos], as\n"
"core.formats.gguf's _Reader.strings reads them while they lie whole before stop. Stops\n"
"before a string that runs past stop (or past the buffer) or is not valid UTF-8; end is\n"
"where the strings read end.");

static PyObject *
gguf_strings(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    Py_buffer view;
    Py_ssize_t pos, stop, count, start, n;
    int big;
    if (gguf_args("gguf_strings", args, nargs, &view, &pos, &stop, &count, &big) < 0)
        return NULL;
    PyObject *out = PyList_New(0), *result = NULL;
    if (out == NULL)
        goto done;
    const unsigned char *buf = (const unsigned char *)view.buf;
    for (Py_ssize_t k = 0; k < count && gguf_next(buf, pos, stop, big, &start, &n); k++) {
        PyObject *s = utf8_str(buf + start, n);
        if (s == NULL) {
            if (PyErr_Occurred())
                goto done;
            break; /* (not UTF-8: the pure reader names the byte) */
        }
        if (append_new(out, s) < 0)
            goto done;
        pos = start + n;
    }
    result = Py_BuildValue("(On)", out, pos);
done:
    Py_XDECREF(out);
    PyBuffer_Release(&view);
    return result;
}

/* ─── tables ─────────────────────────────────────────────────────────────────────────── */

/* An empty dict with room for n keys: a tenth of a load goes to growing the dicts
 * otherwise. _PyDict_NewPresized is private but exported from 3.11 through 3.13 (put back
 * in 3.13 by cpython gh-112026, for Cython among others); elsewhere a plain dict. */
static PyObject *
new_dict(Py_ssize_t n)
{
#if defined(PY_VERSION_HEX) && PY_VERSION_HEX < 0x030E0000 && !defined(Py_LIMITED_API)
    return _PyDict_NewPresized(n);
#else
    (void)n;
    return PyDict_New();
#endif
}

/* An order-preserving unsigned key of a (non-NaN) double: equal doubles (0.0 and -0.0
 * too) give equal keys, a larger double a larger key. */
static uint64_t
order_key(double d)
{
    uint64_t bits;
    if (d == 0.0)
        d = 0.0;
    memcpy(&bits, &d, sizeof bits);
    return (bits >> 63) ? ~bits : bits | ((uint64_t)1 << 63);
}

/* Dense ranks, best (largest) first, of keys[0:n] into rank[]: equal keys, equal ranks.
 * An LSD radix sort of the indices (eight passes over one byte each): linear in n. */
static int
dense_ranks(const uint64_t *keys, Py_ssize_t n, Py_ssize_t *rank)
{
    Py_ssize_t *order = PyMem_New(Py_ssize_t, n ? n : 1);
    Py_ssize_t *spare = PyMem_New(Py_ssize_t, n ? n : 1);
    if (order == NULL || spare == NULL) {
        PyMem_Free(order);
        PyMem_Free(spare);
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++)
        order[i] = i;
    for (int shift = 0; shift < 64; shift += 8) {
        Py_ssize_t count[257] = {0};
        for (Py_ssize_t i = 0; i < n; i++)
            count[((keys[i] >> shift) & 0xFF) + 1]++;
        if (n == 0 || count[((keys[0] >> shift) & 0xFF) + 1] == n)
            continue; /* one digit for all (float32 scores leave the low bits zero) */
        for (int b = 0; b < 256; b++)
            count[b + 1] += count[b];
        for (Py_ssize_t i = 0; i < n; i++)
            spare[count[(keys[order[i]] >> shift) & 0xFF]++] = order[i];
        Py_ssize_t *t = order;
        order = spare;
        spare = t;
    }
    Py_ssize_t r = -1;
    for (Py_ssize_t k = n - 1; k >= 0; k--) {
        if (k == n - 1 || keys[order[k]] != keys[order[k + 1]])
            r++;
        rank[order[k]] = r;
    }
    PyMem_Free(order);
    PyMem_Free(spare);
    return 0;
}

PyDoc_STRVAR(tables_doc,
"tables(texts, scores, types) -> (vocab, ranks) or None\n\n"
"SentencePieceBPE's two tables in one pass, for pieces spelled once each: vocab, text -> ID;\n"
"ranks, for each piece that may be merged into (types other than 2, 3, 6: CONTROL, UNKNOWN,\n"
"BYTE), text -> the place of its score among those pieces' distinct scores, best first.\n"
"None when a text is spelled twice, or a score is not a float or is NaN: the caller's own\n"
"way then (core.pipeline.sentencepiece.bpe.piece_tables). TypeError unless the texts are\n"
"strs and the types ints.");

static PyObject *
tables(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3 || !PyList_Check(args[0]) || !PyList_Check(args[1]) ||
        !PyList_Check(args[2])) {
        PyErr_SetString(PyExc_TypeError, "tables() takes 3 lists (texts, scores, types)");
        return NULL;
    }
    PyObject *texts = args[0], *scores = args[1], *types = args[2];
    Py_ssize_t n = PyList_GET_SIZE(texts);
    if (PyList_GET_SIZE(scores) != n || PyList_GET_SIZE(types) != n) {
        PyErr_SetString(PyExc_ValueError, "tables(): the three lists differ in length");
        return NULL;
    }
    /* exact types only: no Python code (a __hash__, an __eq__) may run and change the lists
     * while they are read by index */
    for (Py_ssize_t i = 0; i < n; i++) {
        if (!PyUnicode_CheckExact(PyList_GET_ITEM(texts, i)) ||
            !PyLong_CheckExact(PyList_GET_ITEM(types, i))) {
            PyErr_SetString(PyExc_TypeError, "tables(): texts must be strs, types ints");
            return NULL;
        }
        PyObject *score = PyList_GET_ITEM(scores, i);
        if (!PyFloat_CheckExact(score) || isnan(PyFloat_AS_DOUBLE(score)))
            Py_RETURN_NONE;
    }
    /* (sized for n keys up front: the dicts are never resized while filled) */
    PyObject *vocab = new_dict(n), *ranks = NULL, *result = NULL;
    PyObject **id_of = PyMem_New(PyObject *, n ? n : 1);
    uint64_t *keys = PyMem_New(uint64_t, n ? n : 1);
    Py_ssize_t *ids = PyMem_New(Py_ssize_t, n ? n : 1), *rank = PyMem_New(Py_ssize_t, n ? n : 1);
    Py_ssize_t made = 0; /* id_of[0:made] are new references */
    if (vocab == NULL || id_of == NULL || keys == NULL || ids == NULL || rank == NULL) {
        if (vocab != NULL)
            PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t m = 0; /* mergeable pieces: ids[0:m], their scores' keys keys[0:m] */
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *id = PyLong_FromSsize_t(i);
        if (id == NULL)
            goto done;
        id_of[made++] = id;
        if (PyDict_SetItem(vocab, PyList_GET_ITEM(texts, i), id) < 0)
            goto done;
        int overflow;
        long t = PyLong_AsLongAndOverflow(PyList_GET_ITEM(types, i), &overflow);
        if (overflow || !(t == 2 || t == 3 || t == 6)) {
            keys[m] = order_key(PyFloat_AS_DOUBLE(PyList_GET_ITEM(scores, i)));
            ids[m++] = i;
        }
    }
    if (PyDict_GET_SIZE(vocab) != n) { /* a text spelled twice */
        result = Py_None;
        Py_INCREF(result);
        goto done;
    }
    if (dense_ranks(keys, m, rank) < 0)
        goto done;
    ranks = new_dict(m);
    if (ranks == NULL)
        goto done;
    /* a rank r < m <= n is the int object of ID r: no second int per piece */
    for (Py_ssize_t j = 0; j < m; j++)
        if (PyDict_SetItem(ranks, PyList_GET_ITEM(texts, ids[j]), id_of[rank[j]]) < 0)
            goto done;
    result = PyTuple_Pack(2, vocab, ranks);
done:
    for (Py_ssize_t i = 0; i < made; i++)
        Py_DECREF(id_of[i]);
    PyMem_Free(id_of);
    PyMem_Free(keys);
    PyMem_Free(ids);
    PyMem_Free(rank);
    Py_XDECREF(vocab);
    Py_XDECREF(ranks);
    return result;
}

/* ─── characters ─────────────────────────────────────────────────────────────────────── */

#define N_CODES 0x110000
#define SPACE_CHAR 0x2581

/* A set of code points as bits: the Basic Multilingual Plane (8 KB) until a character
 * past it is seen, then all of Unicode (136 KB, mostly untouched pages). */
typedef struct {
    uint64_t *w;
    Py_ssize_t words;
} Bits;

static int
bits_init(Bits *b)
{
    b->words = 0x10000 / 64;
    b->w = PyMem_Calloc(b->words, sizeof(uint64_t));
    if (b->w == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    return 0;
}

/* Room for every code point; -1 on error. */
static int
bits_widen(Bits *b)
{
    if (b->words == N_CODES / 64)
        return 0;
    uint64_t *w = PyMem_Realloc(b->w, (N_CODES / 64) * sizeof(uint64_t));
    if (w == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    memset(w + b->words, 0, (N_CODES / 64 - b->words) * sizeof(uint64_t));
    b->w = w;
    b->words = N_CODES / 64;
    return 0;
}

/* (the caller has widened b for c) */
static void
bit_set(Bits *b, Py_UCS4 c)
{
    b->w[c >> 6] |= (uint64_t)1 << (c & 63);
}

static int
bit_get(const Bits *b, Py_UCS4 c)
{
    return (Py_ssize_t)(c >> 6) < b->words && (b->w[c >> 6] >> (c & 63) & 1);
}

/* The set of the code points marked in bits, as one-character strs. */
static PyObject *
bits_to_set(const Bits *bits)
{
    PyObject *out = PySet_New(NULL);
    if (out == NULL)
        return NULL;
    for (Py_ssize_t w = 0; w < bits->words; w++) {
        uint64_t word = bits->w[w];
        for (int b = 0; word; b++, word >>= 1) {
            if (!(word & 1))
                continue;
            PyObject *ch = PyUnicode_FromOrdinal((int)(w * 64 + b));
            if (ch == NULL || PySet_Add(out, ch) < 0) {
                Py_XDECREF(ch);
                Py_DECREF(out);
                return NULL;
            }
            Py_DECREF(ch);
        }
    }
    return out;
}

PyDoc_STRVAR(piece_chars_doc,
"piece_chars(pieces) -> (used, before, after)\n\n"
"For an iterable of str: the set of every character in them, and the characters seen right\n"
"before and right after a U+2581 inside one of them (as sets of one-character strs):\n"
"core.pipeline.sentencepiece.bpe's set(''.join(pieces)) and space_neighbours(pieces).");

static PyObject *
piece_chars(PyObject *self, PyObject *pieces)
{
    PyObject *iter = PyObject_GetIter(pieces), *item, *result = NULL;
    PyObject *used = NULL, *before = NULL, *after = NULL;
    if (iter == NULL)
        return NULL;
    Bits b_used = {NULL, 0}, b_before = {NULL, 0}, b_after = {NULL, 0};
    if (bits_init(&b_used) < 0 || bits_init(&b_before) < 0 || bits_init(&b_after) < 0)
        goto done;
    while ((item = PyIter_Next(iter)) != NULL) {
        if (!PyUnicode_Check(item)
#if PY_VERSION_HEX < 0x030C0000
            || PyUnicode_READY(item) < 0
#endif
        ) {
            Py_DECREF(item);
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_TypeError, "piece_chars(): every piece must be a str");
            goto done;
        }
        if (PyUnicode_KIND(item) == PyUnicode_4BYTE_KIND &&
            (bits_widen(&b_used) < 0 || bits_widen(&b_before) < 0 || bits_widen(&b_after) < 0)) {
            Py_DECREF(item);
            goto done;
        }
        int kind = PyUnicode_KIND(item);
        const void *data = PyUnicode_DATA(item);
        Py_ssize_t len = PyUnicode_GET_LENGTH(item);
        for (Py_ssize_t i = 0; i < len; i++) {
            Py_UCS4 c = PyUnicode_READ(kind, data, i);
            bit_set(&b_used, c);
            if (c == SPACE_CHAR) {
                if (i > 0)
                    bit_set(&b_before, PyUnicode_READ(kind, data, i - 1));
                if (i + 1 < len)
                    bit_set(&b_after, PyUnicode_READ(kind, data, i + 1));
            }
        }
        Py_DECREF(item);
    }
    if (PyErr_Occurred())
        goto done;
    used = bits_to_set(&b_used);
    before = used ? bits_to_set(&b_before) : NULL;
    after = before ? bits_to_set(&b_after) : NULL;
    if (after != NULL)
        result = PyTuple_Pack(3, used, before, after);
done:
    PyMem_Free(b_used.w);
    PyMem_Free(b_before.w);
    PyMem_Free(b_after.w);
    Py_XDECREF(used);
    Py_XDECREF(before);
    Py_XDECREF(after);
    Py_DECREF(iter);
    return result;
}

/* ─── CharCuts: where a text can be cut into words no piece crosses ──────────────────── */

/* core/pipeline/sentencepiece/cuts.py's cut_regex as a loop over the text's characters:
 * which characters the pieces that may be merged into use, and which sit right before and
 * right after a U+2581 inside one. Built from those pieces (strs, or a parsed file's packed
 * UTF-8), it needs no regex: a vocabulary puts thousands of characters after a U+2581,
 * and the regex of them takes milliseconds to compile on a model's first encode. */
typedef struct {
    PyObject_HEAD
    Bits used, before, after;
    int any_used;
} CharCuts;

static void
CharCuts_dealloc(CharCuts *self)
{
    PyMem_Free(self->used.w);
    PyMem_Free(self->before.w);
    PyMem_Free(self->after.w);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* Mark a piece's character c, prev the one before it (first: none before): c is used, and
 * a ▁ marks the characters either side of it; -1 on error. (The caller sets any_used.) */
static inline int
cuts_mark_char(CharCuts *self, Py_UCS4 c, Py_UCS4 prev, int first)
{
    if (c > 0xFFFF && (bits_widen(&self->used) < 0 || bits_widen(&self->before) < 0 ||
                       bits_widen(&self->after) < 0))
        return -1;
    bit_set(&self->used, c);
    if (!first && c == SPACE_CHAR)
        bit_set(&self->before, prev); /* (prev was widened for when it came) */
    if (!first && prev == SPACE_CHAR)
        bit_set(&self->after, c);
    return 0;
}

/* Mark one piece's characters c[0:n]; -1 on error. */
static int
cuts_mark(CharCuts *self, const Py_UCS4 *c, Py_ssize_t n)
{
    for (Py_ssize_t i = 0; i < n; i++)
        if (cuts_mark_char(self, c[i], i ? c[i - 1] : 0, i == 0) < 0)
            return -1;
    self->any_used |= n > 0;
    return 0;
}

/* cuts_mark over one piece's UTF-8 buf[0:n], checked and decoded in the same pass (no
 * code point buffer: a 32,768-piece vocab's cutter took 0.78 ms in three passes, checking,
 * decoding, marking); 0 when buf holds no valid UTF-8, -1 on error, else 1. */
static int
cuts_mark_utf8(CharCuts *self, const unsigned char *buf, Py_ssize_t n)
{
    Py_UCS4 prev = 0;
    for (Py_ssize_t i = 0; i < n;) {
        Py_UCS4 c;
        int len = utf8_next(buf, n, i, &c);
        if (len == 0)
            return 0;
        if (cuts_mark_char(self, c, prev, i == 0) < 0)
            return -1;
        prev = c;
        i += len;
    }
    self->any_used |= n > 0;
    return 1;
}

PyDoc_STRVAR(CharCuts_split_doc,
"split(text, /)\n--\n\n"
"The words of text no piece crosses: cuts.WordCuts(pieces).split(text), the same list.");

/* Whether a text is cut between prev and c: cut_regex's three rules at an inner position
 * (the ends give only empty words). */
static inline int
cut_between(const CharCuts *self, Py_UCS4 prev, Py_UCS4 c)
{
    return (c == SPACE_CHAR && !bit_get(&self->before, prev)) ||
           (prev == SPACE_CHAR && !bit_get(&self->after, c)) ||
           (self->any_used && (!bit_get(&self->used, prev) || !bit_get(&self->used, c)));
}

static int
check_text(PyObject *text, const char *what)
{
    if (!PyUnicode_Check(text)) {
        PyErr_Format(PyExc_TypeError, "%s(): text must be a str", what);
        return -1;
    }
#if PY_VERSION_HEX < 0x030C0000
    if (PyUnicode_READY(text) < 0)
        return -1;
#endif
    return 0;
}

/* The words of text (a new list); *longest gets the longest word's length. */
static PyObject *
cuts_split(CharCuts *self, PyObject *text, Py_ssize_t *longest)
{
    *longest = 0;
    if (check_text(text, "split") < 0)
        return NULL;
    Py_ssize_t n = PyUnicode_GET_LENGTH(text), start = 0;
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    PyObject *out = PyList_New(0);
    if (out == NULL)
        return NULL;
    Py_UCS4 prev = n ? PyUnicode_READ(kind, data, 0) : 0;
    for (Py_ssize_t p = 1; p < n; p++) {
        Py_UCS4 c = PyUnicode_READ(kind, data, p);
        if (cut_between(self, prev, c)) {
            if (p - start > *longest)
                *longest = p - start;
            PyObject *word = PyUnicode_Substring(text, start, p);
            if (word == NULL || PyList_Append(out, word) < 0) {
                Py_XDECREF(word);
                Py_DECREF(out);
                return NULL;
            }
            Py_DECREF(word);
            start = p;
        }
        prev = c;
    }
    if (n > 0) {
        if (n - start > *longest)
            *longest = n - start;
        PyObject *word = start == 0 ? Py_NewRef(text) : PyUnicode_Substring(text, start, n);
        if (word == NULL || PyList_Append(out, word) < 0) {
            Py_XDECREF(word);
            Py_DECREF(out);
            return NULL;
        }
        Py_DECREF(word);
    }
    return out;
}

static PyObject *
CharCuts_split(CharCuts *self, PyObject *text)
{
    Py_ssize_t longest;
    return cuts_split(self, text, &longest);
}

PyDoc_STRVAR(CharCuts_split_longest_doc,
"split_longest(text, /)\n--\n\n"
"(split(text), the length of its longest word).");

static PyObject *
CharCuts_split_longest(CharCuts *self, PyObject *text)
{
    Py_ssize_t longest;
    PyObject *words = cuts_split(self, text, &longest);
    if (words == NULL)
        return NULL;
    return Py_BuildValue("(Nn)", words, longest);
}

PyDoc_STRVAR(CharCuts_bounds_doc,
"bounds(text, /)\n--\n\n"
"Where split(text)'s words start and the text ends, without making them: (a bytes of\n"
"native Py_ssize_t offsets, one more than the words, b'' for an empty text; the longest\n"
"word's length). SpmWords.encode_bounds reads it.");

static PyObject *
CharCuts_bounds(CharCuts *self, PyObject *text)
{
    if (check_text(text, "bounds") < 0)
        return NULL;
    Py_ssize_t n = PyUnicode_GET_LENGTH(text), start = 0, longest = 0, count = 0;
    if (n == 0)
        return Py_BuildValue("(y#n)", "", (Py_ssize_t)0, (Py_ssize_t)0);
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    Py_ssize_t *at = NULL;
    size_t cap = 0;
    if (reserve_items((void **)&at, &cap, 64, sizeof(Py_ssize_t), 64) < 0)
        return PyErr_NoMemory();
    at[count++] = 0;
    Py_UCS4 prev = PyUnicode_READ(kind, data, 0);
    for (Py_ssize_t p = 1; p < n; p++) {
        Py_UCS4 c = PyUnicode_READ(kind, data, p);
        if (cut_between(self, prev, c)) {
            if (reserve_items((void **)&at, &cap, (size_t)count + 2, sizeof(Py_ssize_t), 64) < 0) {
                PyMem_Free(at);
                return PyErr_NoMemory();
            }
            if (p - start > longest)
                longest = p - start;
            at[count++] = p;
            start = p;
        }
        prev = c;
    }
    if (n - start > longest)
        longest = n - start;
    at[count++] = n; /* (room: reserved two at each cut, and 64 > 1 at the start) */
    PyObject *out = Py_BuildValue("(y#n)", (const char *)at, count * (Py_ssize_t)sizeof(Py_ssize_t),
                                  longest);
    PyMem_Free(at);
    return out;
}

static PyMethodDef CharCuts_methods[] = {
    {"split", (PyCFunction)CharCuts_split, METH_O, CharCuts_split_doc},
    {"bounds", (PyCFunction)CharCuts_bounds, METH_O, CharCuts_bounds_doc},
    {"split_longest", (PyCFunction)CharCuts_split_longest, METH_O, CharCuts_split_longest_doc},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject CharCutsType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "tokplay_native.spm.CharCuts",
    .tp_doc = "Where a text can be cut into words no piece crosses (char_cuts() makes one).",
    .tp_basicsize = sizeof(CharCuts),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_dealloc = (destructor)CharCuts_dealloc,
    .tp_methods = CharCuts_methods,
};

static CharCuts *
cuts_new(void)
{
    CharCuts *self = PyObject_New(CharCuts, &CharCutsType);
    if (self == NULL)
        return NULL;
    self->used.w = self->before.w = self->after.w = NULL;
    self->any_used = 0;
    if (bits_init(&self->used) < 0 || bits_init(&self->before) < 0 ||
        bits_init(&self->after) < 0) {
        Py_DECREF(self);
        return NULL;
    }
    return self;
}

PyDoc_STRVAR(char_cuts_doc,
"char_cuts(pieces) -> CharCuts\n"
"char_cuts(buf, spans, types) -> CharCuts\n\n"
"The cutter of cuts.WordCuts for the pieces that may be merged into: an iterable of str,\n"
"or a parsed file's packed pieces (columns()' spans and types), of which those whose type\n"
"is not CONTROL, UNKNOWN or BYTE (2, 3, 6). ValueError for a span outside buf or no valid\n"
"UTF-8; TypeError for a piece that is no str.");

static PyObject *
char_cuts(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 1 && nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "char_cuts() takes 1 or 3 arguments");
        return NULL;
    }
    CharCuts *self = cuts_new();
    if (self == NULL)
        return NULL;
    Py_UCS4 *chars = NULL;
    Py_ssize_t room = 0;
    if (nargs == 1) {
        PyObject *iter = PyObject_GetIter(args[0]), *item;
        if (iter == NULL)
            goto fail;
        while ((item = PyIter_Next(iter)) != NULL) {
            Py_ssize_t n = -1;
            if (PyUnicode_Check(item)
#if PY_VERSION_HEX < 0x030C0000
                && PyUnicode_READY(item) == 0
#endif
            )
                n = PyUnicode_GET_LENGTH(item);
            if (n < 0)
                PyErr_SetString(PyExc_TypeError, "char_cuts(): every piece must be a str");
            else if (n > room) {
                PyMem_Free(chars);
                room = n * 2;
                if ((chars = PyMem_Malloc(sizeof(Py_UCS4) * (size_t)room)) == NULL)
                    PyErr_NoMemory();
            }
            if (PyErr_Occurred() || (n && PyUnicode_AsUCS4(item, chars, room, 0) == NULL) ||
                cuts_mark(self, chars, n) < 0) {
                Py_DECREF(item);
                Py_DECREF(iter);
                goto fail;
            }
            Py_DECREF(item);
        }
        Py_DECREF(iter);
        if (PyErr_Occurred())
            goto fail;
        PyMem_Free(chars);
        return (PyObject *)self;
    }
    Py_buffer buf, spans, types;
    if (PyObject_GetBuffer(args[0], &buf, PyBUF_SIMPLE) < 0)
        goto fail;
    if (PyObject_GetBuffer(args[1], &spans, PyBUF_SIMPLE) < 0) {
        PyBuffer_Release(&buf);
        goto fail;
    }
    if (PyObject_GetBuffer(args[2], &types, PyBUF_SIMPLE) < 0) {
        PyBuffer_Release(&buf);
        PyBuffer_Release(&spans);
        goto fail;
    }
    int ok = spans.len == types.len * (Py_ssize_t)(2 * sizeof(int64_t));
    if (!ok)
        PyErr_SetString(PyExc_ValueError, "char_cuts(): spans and types of different lengths");
    const unsigned char *code = types.buf, *data = buf.buf;
    for (Py_ssize_t i = 0; ok && i < types.len; i++) {
        if (code[i] == 2 || code[i] == 3 || code[i] == 6)
            continue; /* (reserved: never merged into) */
        int64_t span[2];
        memcpy(span, (const char *)spans.buf + i * (Py_ssize_t)sizeof span, sizeof span);
        int marked = span[0] < 0 || span[1] < 0 || span[0] > buf.len ||
                     span[1] > buf.len - span[0]
                         ? 0
                         : cuts_mark_utf8(self, data + span[0], (Py_ssize_t)span[1]);
        if (marked == 0)
            PyErr_Format(PyExc_ValueError, "char_cuts(): span %zd is no text in buf", i);
        ok = marked == 1;
    }
    PyBuffer_Release(&buf);
    PyBuffer_Release(&spans);
    PyBuffer_Release(&types);
    if (!ok)
        goto fail;
    PyMem_Free(chars);
    return (PyObject *)self;
fail:
    PyMem_Free(chars);
    Py_DECREF(self);
    return NULL;
}

/* re.escape's special characters (Python 3.7+): each is written with a backslash */
static int
escaped(Py_UCS4 c)
{
    return c < 128 && strchr("()[]{}?*+-|^$\\.&~# \t\n\r\v\f", (int)c) != NULL && c != 0;
}

static Py_ssize_t
put_char(Py_UCS4 *out, Py_ssize_t at, Py_UCS4 c)
{
    if (escaped(c))
        out[at++] = '\\';
    out[at++] = c;
    return at;
}

PyDoc_STRVAR(char_ranges_doc,
"char_ranges(chars) -> str\n\n"
"The inside of a regex character class for an iterable of one-character strs, runs of\n"
"code points as ranges, each end as re.escape writes it:\n"
"core.pipeline.sentencepiece.bpe._char_ranges.");

static PyObject *
char_ranges(PyObject *self, PyObject *chars)
{
    PyObject *iter = PyObject_GetIter(chars), *item, *result = NULL;
    if (iter == NULL)
        return NULL;
    Py_UCS4 *out = NULL;
    Bits bits = {NULL, 0};
    if (bits_init(&bits) < 0)
        goto done;
    Py_ssize_t count = 0;
    while ((item = PyIter_Next(iter)) != NULL) {
        if (!PyUnicode_Check(item) ||
#if PY_VERSION_HEX < 0x030C0000
            PyUnicode_READY(item) < 0 ||
#endif
            PyUnicode_GET_LENGTH(item) != 1) {
            Py_DECREF(item);
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_TypeError, "char_ranges(): one-character strs only");
            goto done;
        }
        Py_UCS4 c = PyUnicode_READ_CHAR(item, 0);
        Py_DECREF(item);
        if (c >= 0x10000 && bits_widen(&bits) < 0)
            goto done;
        if (!bit_get(&bits, c)) {
            bit_set(&bits, c);
            count++;
        }
    }
    if (PyErr_Occurred())
        goto done;
    out = PyMem_New(Py_UCS4, 5 * count + 1);
    if (out == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t at = 0;
    long first = -1, last = -1, limit = (long)bits.words * 64;
    for (long c = 0; c <= limit; c++) {
        int on = c < limit && bit_get(&bits, (Py_UCS4)c);
        if (on && first >= 0 && c == last + 1) {
            last = c;
            continue;
        }
        if (first >= 0) {
            at = put_char(out, at, (Py_UCS4)first);
            if (last != first) {
                out[at++] = '-';
                at = put_char(out, at, (Py_UCS4)last);
            }
            first = -1;
        }
        if (on)
            first = last = c;
        else if (c < limit && (c & 63) == 0 && bits.w[c >> 6] == 0)
            c += 63; /* (a word with no character: skip it) */
    }
    result = PyUnicode_FromKindAndData(PyUnicode_4BYTE_KIND, out, at);
done:
    PyMem_Free(bits.w);
    PyMem_Free(out);
    Py_DECREF(iter);
    return result;
}

/* ─── any message ────────────────────────────────────────────────────────────────────── */

PyDoc_STRVAR(fields_doc,
"fields(buf, start, end, strings=b'') -> (fields, stop)\n\n"
"The fields of the message buf[start:end] as proto.py's _fields yields them: (number,\n"
"wire_type, value, at) with value an int (wire types 0, 1, 5) or a (start, stop) pair (2);\n"
"for a field whose number is a byte of strings, a wire type 2 value is its text, a str\n"
"(a TrainerSpec's ~750 control symbols, decoded in this pass). Stops before a field it does\n"
"not read cleanly (a group, a key over 5 bytes, a varint over 64 bits, anything truncated or\n"
"malformed, such a text that is no valid UTF-8): stop is where the pure reader goes on.");

static PyObject *
fields(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3 && nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "fields() takes 3 or 4 arguments (buf, start, end, strings)");
        return NULL;
    }
    unsigned char as_text[256] = {0}; /* field numbers (< 256) whose values are strs */
    if (nargs == 4) {
        if (!PyBytes_Check(args[3])) {
            PyErr_SetString(PyExc_TypeError, "fields(): strings is bytes of field numbers");
            return NULL;
        }
        for (Py_ssize_t i = 0; i < PyBytes_GET_SIZE(args[3]); i++)
            as_text[(unsigned char)PyBytes_AS_STRING(args[3])[i]] = 1;
    }
    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0)
        return NULL;
    PyObject *out = NULL, *result = NULL;
    Py_ssize_t pos = PyLong_AsSsize_t(args[1]);
    if (pos == -1 && PyErr_Occurred())
        goto done;
    Py_ssize_t end = PyLong_AsSsize_t(args[2]);
    if (end == -1 && PyErr_Occurred())
        goto done;
    if (pos < 0 || end > view.len || pos > end) {
        PyErr_SetString(PyExc_ValueError, "fields(): start or end outside the buffer");
        goto done;
    }
    out = PyList_New(0);
    if (out == NULL)
        goto done;
    const unsigned char *buf = (const unsigned char *)view.buf;
    while (pos < end) {
        Py_ssize_t p = pos;
        uint64_t key, v;
        if (!varint(buf, &p, end, 5, &key) || (key >> 3) == 0)
            break;
        int wire = (int)(key & 7);
        PyObject *value;
        if (wire == 0) {
            if (!varint(buf, &p, end, 10, &v))
                break;
            value = PyLong_FromUnsignedLongLong(v);
        }
        else if (wire == 1 || wire == 5) {
            int size = wire == 1 ? 8 : 4;
            if (end - p < size)
                break;
            v = 0;
            for (int i = size - 1; i >= 0; i--)
                v = (v << 8) | buf[p + i];
            p += size;
            value = PyLong_FromUnsignedLongLong(v);
        }
        else if (wire == 2) {
            if (!varint(buf, &p, end, 10, &v) || v > (uint64_t)(end - p))
                break;
            if ((key >> 3) < 256 && as_text[key >> 3]) {
                value = utf8_str(buf + p, (Py_ssize_t)v);
                if (value == NULL && !PyErr_Occurred())
                    break; /* (not UTF-8: the pure reader names the field) */
            }
            else
                value = Py_BuildValue("(nn)", p, p + (Py_ssize_t)v);
            p += (Py_ssize_t)v;
        }
        else
            break; /* groups (skipped by the pure reader) and wire types never written */
        if (value == NULL)
            goto done;
        /* (built by hand: Py_BuildValue reads its format string per field, which cost more
         * than the rest of a TrainerSpec's read) */
        PyObject *item = PyTuple_New(4);
        if (item == NULL) {
            Py_DECREF(value);
            goto done;
        }
        PyTuple_SET_ITEM(item, 2, value);
        PyObject *number = PyLong_FromUnsignedLongLong(key >> 3), *kind = PyLong_FromLong(wire),
                 *at = PyLong_FromSsize_t(pos);
        if (number != NULL)
            PyTuple_SET_ITEM(item, 0, number);
        if (kind != NULL)
            PyTuple_SET_ITEM(item, 1, kind);
        if (at != NULL)
            PyTuple_SET_ITEM(item, 3, at);
        if (number == NULL || kind == NULL || at == NULL) {
            Py_DECREF(item); /* (a tuple's unset items are NULL: its dealloc skips them) */
            goto done;
        }
        if (append_new(out, item) < 0)
            goto done;
        pos = p;
    }
    result = Py_BuildValue("(On)", out, pos);

done:
    Py_XDECREF(out);
    PyBuffer_Release(&view);
    return result;
}

/* ---- first_repeat: is some text spelled twice? ------------------------------------- */

PyDoc_STRVAR(first_repeat_doc,
"first_repeat(texts, /) -> int\n--\n\n"
"The index of the first str of texts (a list of str) equal to an earlier one, -1 if none:\n"
"len(set(texts)) != len(texts) without hashing each fresh str into a set. TypeError for\n"
"anything but a list of exact strs.");

/* subtle: CPython spells equal strs alike (the narrowest kind that holds them, then their
 * code units), so their kind and bytes compare as the strs do; hashed here with a cheap
 * mix of those bytes, not the str's SipHash (which it would then keep). */
static uint64_t
str_key_hash(PyObject *s)
{
    const unsigned char *p = PyUnicode_DATA(s);
    Py_ssize_t n = PyUnicode_GET_LENGTH(s) * PyUnicode_KIND(s);
    uint64_t h = 0x9E3779B97F4A7C15ULL ^ (uint64_t)n ^ ((uint64_t)PyUnicode_KIND(s) << 56);
    for (; n >= 8; p += 8, n -= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        h = (h ^ w) * 0xBF58476D1CE4E5B9ULL;
        h ^= h >> 31;
    }
    uint64_t w = 0;
    memcpy(&w, p, (size_t)n);
    h = (h ^ w) * 0x94D049BB133111EBULL;
    return h ^ (h >> 29);
}

static PyObject *
first_repeat(PyObject *module, PyObject *texts)
{
    if (!PyList_CheckExact(texts)) {
        PyErr_SetString(PyExc_TypeError, "first_repeat(texts): a list of str");
        return NULL;
    }
    Py_ssize_t n = PyList_GET_SIZE(texts), size = 16;
    for (Py_ssize_t i = 0; i < n; i++)
        if (!PyUnicode_CheckExact(PyList_GET_ITEM(texts, i))) {
            PyErr_SetString(PyExc_TypeError, "first_repeat(texts): a list of str");
            return NULL;
        }
    while (size < 2 * n)
        size *= 2;
    if (n >= INT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "first_repeat(texts): too many texts");
        return NULL;
    }
    /* a slot: the hash's top 32 bits, then 1 + the text's index (0: empty), so that most
     * probes read no str */
    uint64_t *slots = PyMem_Calloc((size_t)size, sizeof(uint64_t));
    if (slots == NULL)
        return PyErr_NoMemory();
    Py_ssize_t found = -1;
    for (Py_ssize_t i = 0; i < n && found < 0; i++) {
        PyObject *s = PyList_GET_ITEM(texts, i);
        Py_ssize_t bytes = PyUnicode_GET_LENGTH(s) * PyUnicode_KIND(s);
        uint64_t h = str_key_hash(s), tag = h >> 32;
        Py_ssize_t k = (Py_ssize_t)(h & (uint64_t)(size - 1));
        for (; slots[k] != 0; k = (k + 1) & (size - 1)) {
            if (slots[k] >> 32 != tag)
                continue;
            PyObject *t = PyList_GET_ITEM(texts, (Py_ssize_t)(slots[k] & 0xFFFFFFFFu) - 1);
            if (PyUnicode_GET_LENGTH(t) == PyUnicode_GET_LENGTH(s) &&
                PyUnicode_KIND(t) == PyUnicode_KIND(s) &&
                memcmp(PyUnicode_DATA(t), PyUnicode_DATA(s), (size_t)bytes) == 0) {
                found = i;
                break;
            }
        }
        slots[k] = tag << 32 | (uint64_t)(i + 1);
    }
    PyMem_Free(slots);
    return PyLong_FromSsize_t(found);
}

/* ─── GGUF arrays kept packed ────────────────────────────────────────────────────────── */

PyDoc_STRVAR(gguf_spans_doc,
"gguf_spans(buf, pos, stop, count, big_endian) -> (spans, end)\n\n"
"gguf_strings() without a str per string: the same strings, read with the same stopping\n"
"rules, as spans (bytes of native int64 pairs: where each string's UTF-8 starts, counted\n"
"from pos, and its length; checked valid UTF-8). buf[pos:end] holds them all, and\n"
"texts(buf[pos:end], spans) makes the strs.");

static PyObject *
gguf_spans(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    Py_buffer view;
    Py_ssize_t pos, stop, count, start, n;
    int big;
    if (gguf_args("gguf_spans", args, nargs, &view, &pos, &stop, &count, &big) < 0)
        return NULL;
    Grow spans = {0};
    PyObject *result = NULL, *packed = NULL;
    const unsigned char *buf = (const unsigned char *)view.buf;
    const Py_ssize_t base = pos;
    /* (room for every string the bytes could hold, 8 bytes of length each at least, up to
     * count: no copy as the spans grow) */
    Py_ssize_t room = stop > pos ? (stop - pos) / 8 + 1 : 1;
    if (room > count)
        room = count;
    if (grow_init(&spans, room * (Py_ssize_t)(2 * sizeof(int64_t))) < 0)
        goto done;
    for (Py_ssize_t k = 0; k < count && gguf_next(buf, pos, stop, big, &start, &n); k++) {
        if (!utf8_valid(buf + start, n))
            break; /* (not UTF-8: the pure reader names the byte) */
        int64_t span[2] = {(int64_t)(start - base), (int64_t)n};
        if (grow_put(&spans, span, sizeof span) < 0)
            goto done;
        pos = start + n;
    }
    if ((packed = grow_take(&spans)) != NULL)
        result = Py_BuildValue("(On)", packed, pos);
done:
    Py_XDECREF(packed);
    Py_XDECREF(spans.bytes);
    PyBuffer_Release(&view);
    return result;
}

PyDoc_STRVAR(float32_doubles_doc,
"float32_doubles(buf, /) -> bytes\n\n"
"Native float32s (an array('f')'s bytes) as native doubles, each the same value (as\n"
"array('f').tolist() gives it); ValueError when buf is not a whole number of float32s.");

static PyObject *
float32_doubles(PyObject *module, PyObject *arg)
{
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    PyObject *out = NULL;
    if (view.len % (Py_ssize_t)sizeof(float)) {
        PyErr_SetString(PyExc_ValueError, "float32_doubles(): not a whole number of float32s");
        goto done;
    }
    Py_ssize_t n = view.len / (Py_ssize_t)sizeof(float);
    if (n > PY_SSIZE_T_MAX / (Py_ssize_t)sizeof(double)) {
        PyErr_NoMemory();
        goto done;
    }
    out = PyBytes_FromStringAndSize(NULL, n * (Py_ssize_t)sizeof(double));
    if (out == NULL)
        goto done;
    double *to = (double *)PyBytes_AS_STRING(out);
    const char *from = (const char *)view.buf;
    for (Py_ssize_t i = 0; i < n; i++) {
        float f;
        memcpy(&f, from + i * (Py_ssize_t)sizeof f, sizeof f); /* (buf may be unaligned) */
        double d = (double)f;
        memcpy(to + i, &d, sizeof d);
    }
done:
    PyBuffer_Release(&view);
    return out;
}

static PyMethodDef methods[] = {
    {"pieces", (PyCFunction)(void (*)(void))pieces, METH_FASTCALL, pieces_doc},
    {"columns", (PyCFunction)(void (*)(void))columns, METH_FASTCALL, columns_doc},
    {"texts", (PyCFunction)(void (*)(void))texts, METH_FASTCALL, texts_doc},
    {"gguf_strings", (PyCFunction)(void (*)(void))gguf_strings, METH_FASTCALL,
     gguf_strings_doc},
    {"tables", (PyCFunction)(void (*)(void))tables, METH_FASTCALL, tables_doc},
    {"piece_chars", (PyCFunction)piece_chars, METH_O, piece_chars_doc},
    {"char_ranges", (PyCFunction)char_ranges, METH_O, char_ranges_doc},
    {"fields", (PyCFunction)(void (*)(void))fields, METH_FASTCALL, fields_doc},
    {"first_repeat", (PyCFunction)first_repeat, METH_O, first_repeat_doc},
    {"char_cuts", (PyCFunction)(void (*)(void))char_cuts, METH_FASTCALL, char_cuts_doc},
    {"gguf_spans", (PyCFunction)(void (*)(void))gguf_spans, METH_FASTCALL, gguf_spans_doc},
    {"float32_doubles", (PyCFunction)float32_doubles, METH_O, float32_doubles_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "tokplay_native.spm",
    "The readers behind a SentencePiece model's load, in C (see spm.c).", -1, methods,
};

PyMODINIT_FUNC
PyInit_spm(void)
{
    if (PyType_Ready(&CharCutsType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m != NULL && PyModule_AddObjectRef(m, "CharCuts", (PyObject *)&CharCutsType) < 0)
        Py_CLEAR(m);
    return m;
}
