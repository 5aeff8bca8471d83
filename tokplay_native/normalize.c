/* A SentencePiece char map (precompiled_charsmap) applied in C: the twin of
 * core/pipeline/sentencepiece/normalizer.py's SentencePieceNormalizer.normalize_str and of
 * core/pipeline/precompiled.py's Precompiled.normalize_str (the text alone, no spans).
 * Same walk of the same Darts double-array trie, same choices, so the same string on every
 * input (tests/test_native_normalize.py checks both against the pure twins).
 *
 *   CharsMap(blob, symbols=())
 *       built once per normalizer: `blob` the raw precompiled_charsmap (uint32 trie size,
 *       the trie's little-endian units, then the NUL-terminated replacements), `symbols`
 *       the user-defined pieces (kept as they are, longest first). ValueError where the
 *       pure code would behave oddly (an empty trie, replacements that are not UTF-8, an
 *       empty symbol): the caller keeps the pure path then.
 *   .sp_normalize(text, add_dummy_prefix, remove_extra_whitespaces, escape_whitespaces,
 *                 treat_whitespace_as_suffix) -> str
 *       sentencepiece's Normalizer::Normalize: at each character a user-defined piece, else
 *       the longest rule of the trie (when it ends on a character boundary), else the
 *       character; heading spaces dropped, the dummy prefix, runs of spaces squeezed,
 *       trailing spaces dropped or the dummy suffix (the pure _general, streamed)
 *   .hf_normalize(text, clusters=None) -> str or None
 *       Hugging Face's Precompiled: each grapheme cluster (`clusters`, a list of str whose
 *       concatenation is `text`; None: every character is its own cluster) shorter than 6
 *       bytes replaced whole by its shortest matching rule, else each character by its own
 *       shortest rule (a NUL byte ends a walk), or kept. `clusters` may instead be a
 *       bitmap (bytes, a bit per code point, low bit first): the characters that may join
 *       a cluster; where `text` has one (or CR LF), None: the caller cuts the clusters
 *
 * A lone surrogate has no UTF-8 form: UnicodeEncodeError, as the pure twins raise.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

/* ---- a growable byte buffer ------------------------------------------------------------ */

typedef struct {
    char *data;
    Py_ssize_t len, cap;
} Buf;

static int
buf_reserve(Buf *b, Py_ssize_t more)
{
    if (more > PY_SSIZE_T_MAX - b->len) {
        PyErr_NoMemory();
        return -1;
    }
    Py_ssize_t need = b->len + more;
    if (need <= b->cap)
        return 0;
    Py_ssize_t cap = b->cap ? b->cap : 64;
    while (cap < need)
        cap = cap > PY_SSIZE_T_MAX / 2 ? need : cap * 2;
    char *data = PyMem_Realloc(b->data, (size_t)cap);
    if (data == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    b->data = data;
    b->cap = cap;
    return 0;
}

static int
buf_put(Buf *b, const char *s, Py_ssize_t n)
{
    if (n <= 0)
        return 0;
    if (buf_reserve(b, n) < 0)
        return -1;
    memcpy(b->data + b->len, s, (size_t)n);
    b->len += n;
    return 0;
}

/* The UTF-8 length of the character starting with `lead` (valid UTF-8 is given). */
static inline Py_ssize_t
utf8_len(unsigned char lead)
{
    if (lead < 0x80)
        return 1;
    if (lead < 0xE0)
        return 2;
    return lead < 0xF0 ? 3 : 4;
}

/* ---- the object --------------------------------------------------------------------- */

typedef struct {
    int32_t child;    /* first child, or -1 */
    int32_t sibling;  /* next sibling, or -1 */
    uint8_t byte;
    uint8_t terminal; /* a user-defined piece ends here */
} SymNode;

typedef struct {
    PyObject_HEAD
    uint32_t *units;
    Py_ssize_t n_units;
    char *pool;         /* the replacements, NUL-terminated strings */
    Py_ssize_t pool_len;
    SymNode *sym;       /* the user-defined pieces as a byte trie, node 0 the root */
    Py_ssize_t n_sym;
    int32_t sym_root[256];
    /* per byte: no rule starts with it (the trie's root has no such child): a character
     * with this first byte is copied as it is, and a run of them in one go */
    uint8_t no_rule[256];
    /* per ASCII byte: whether it has a rule alone (a leaf after it), and the bytes a walk
     * may read after it: with none of those next, an ASCII character's longest match is
     * itself alone, found without the walk */
    uint8_t ascii_rule[128];
    uint8_t follow[128][32];
    /* per byte: a character starting with it is kept by Precompiled (no rule, or ASCII
     * whose walk finds no leaf, or NUL, which ends a walk) */
    uint8_t hf_plain[256];
} CharsMap;

#define MASK ((1u << 31) | 0xFFu)

static inline uint32_t
offset_of(uint32_t unit)
{
    return (unit >> 10) << ((unit & (1u << 9)) >> 6);
}

/* One step down the trie, from *node along `byte`: -1 where the walk ends (no such child);
 * 1 when the child ends a rule, with its value (an offset into the pool); else 0. */
static int
step(const CharsMap *m, uint64_t *node, unsigned char byte, uint32_t *value)
{
    uint64_t size = (uint64_t)m->n_units, at = *node ^ byte;
    if (at >= size)
        return -1;
    uint32_t unit = m->units[at];
    if ((unit & MASK) != byte)
        return -1;
    at ^= offset_of(unit);
    *node = at;
    if (!((unit >> 8) & 1))
        return 0;
    if (at >= size)
        return -1;
    *value = m->units[at] & ((1u << 31) - 1);
    return 1;
}

/* CharsMap.longest_reach's match: the longest rule matching data[pos:n] (its byte length,
 * 0 for none) and its value (an offset into the pool). */
static Py_ssize_t
longest(const CharsMap *m, const unsigned char *data, Py_ssize_t pos, Py_ssize_t n,
        uint32_t *value)
{
    uint64_t node = offset_of(m->units[0]);
    Py_ssize_t best = 0;
    uint32_t found;
    for (Py_ssize_t i = pos; i < n; i++) {
        int rc = step(m, &node, data[i], &found);
        if (rc < 0)
            break;
        if (rc) {
            best = i + 1 - pos;
            *value = found;
        }
    }
    return best;
}

/* CharsMap.first: the shortest rule matching a prefix of data[0:n] (a NUL byte ends the
 * walk): 1 and its value, or 0. */
static int
shortest(const CharsMap *m, const unsigned char *data, Py_ssize_t n, uint32_t *value)
{
    uint64_t node = offset_of(m->units[0]);
    for (Py_ssize_t i = 0; i < n && data[i] != 0; i++) {
        int rc = step(m, &node, data[i], value);
        if (rc)
            return rc > 0;
    }
    return 0;
}

/* The replacement at `value`: up to its NUL or the pool's end (empty past the end). */
static const char *
replacement(const CharsMap *m, uint32_t value, Py_ssize_t *len)
{
    if ((Py_ssize_t)value >= m->pool_len) {
        *len = 0;
        return m->pool;
    }
    const char *start = m->pool + value;
    const char *end = memchr(start, 0, (size_t)(m->pool_len - (Py_ssize_t)value));
    *len = end ? end - start : m->pool_len - (Py_ssize_t)value;
    return start;
}

/* The longest user-defined piece at data[pos:n] (its byte length), or 0. */
static Py_ssize_t
symbol_at(const CharsMap *m, const unsigned char *data, Py_ssize_t pos, Py_ssize_t n)
{
    if (m->n_sym <= 1)
        return 0;
    int32_t node = m->sym_root[data[pos]];
    Py_ssize_t best = 0;
    Py_ssize_t i = pos;
    while (node >= 0) {
        if (m->sym[node].terminal)
            best = i + 1 - pos;
        if (++i >= n)
            break;
        int32_t c = m->sym[node].child;
        while (c >= 0 && m->sym[c].byte != data[i])
            c = m->sym[c].sibling;
        node = c;
    }
    return best;
}

static int
add_symbol(CharsMap *m, const unsigned char *s, Py_ssize_t len, Py_ssize_t *cap)
{
    int32_t parent = -1;
    for (Py_ssize_t i = 0; i < len; i++) {
        int32_t found = parent < 0 ? m->sym_root[s[i]] : m->sym[parent].child;
        if (parent >= 0)
            while (found >= 0 && m->sym[found].byte != s[i])
                found = m->sym[found].sibling;
        if (found < 0) {
            if (m->n_sym >= INT32_MAX) {
                PyErr_SetString(PyExc_ValueError, "too many user-defined pieces");
                return -1;
            }
            if (m->n_sym == *cap) {
                Py_ssize_t cap2 = *cap * 2;
                SymNode *grown = PyMem_Realloc(m->sym, (size_t)cap2 * sizeof(SymNode));
                if (grown == NULL) {
                    PyErr_NoMemory();
                    return -1;
                }
                m->sym = grown;
                *cap = cap2;
            }
            found = (int32_t)m->n_sym++;
            m->sym[found].child = -1;
            m->sym[found].byte = s[i];
            m->sym[found].terminal = 0;
            if (parent < 0) {
                m->sym[found].sibling = -1;
                m->sym_root[s[i]] = found;
            } else {
                m->sym[found].sibling = m->sym[parent].child;
                m->sym[parent].child = found;
            }
        }
        parent = found;
    }
    m->sym[parent].terminal = 1;
    return 0;
}

static void
CharsMap_dealloc(CharsMap *self)
{
    PyMem_Free(self->units);
    PyMem_Free(self->pool);
    PyMem_Free(self->sym);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *
CharsMap_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"blob", "symbols", NULL};
    Py_buffer blob;
    PyObject *symbols = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "y*|O", kwlist, &blob, &symbols))
        return NULL;
    CharsMap *self = (CharsMap *)type->tp_alloc(type, 0);
    if (self == NULL) {
        PyBuffer_Release(&blob);
        return NULL;
    }
    for (int i = 0; i < 256; i++)
        self->sym_root[i] = -1;
    const unsigned char *raw = blob.buf;
    Py_ssize_t len = blob.len;
    uint32_t size = len > 4 ? (uint32_t)raw[0] | (uint32_t)raw[1] << 8 |
                                  (uint32_t)raw[2] << 16 | (uint32_t)raw[3] << 24
                            : 0;
    /* (the pure CharsMap refuses the same, or fails on a trie past the blob's end; an
     * empty trie it reads differently: the pure path keeps those) */
    if (len <= 4 || size == 0 || (Py_ssize_t)size > len - 4 || size % 4) {
        PyErr_SetString(PyExc_ValueError, "a broken or empty char map");
        goto fail;
    }
    self->n_units = size / 4;
    self->units = PyMem_Malloc((size_t)size);
    self->pool_len = len - 4 - (Py_ssize_t)size;
    self->pool = PyMem_Malloc((size_t)self->pool_len + 1);
    if (self->units == NULL || self->pool == NULL) {
        PyErr_NoMemory();
        goto fail;
    }
    for (Py_ssize_t k = 0; k < self->n_units; k++) {
        const unsigned char *u = raw + 4 + 4 * k;
        self->units[k] = (uint32_t)u[0] | (uint32_t)u[1] << 8 | (uint32_t)u[2] << 16 |
                         (uint32_t)u[3] << 24;
    }
    uint64_t root = offset_of(self->units[0]);
    for (int b = 0; b < 256; b++) {
        uint64_t node = root ^ (uint64_t)b;
        self->no_rule[b] =
            !(node < (uint64_t)self->n_units && (self->units[node] & MASK) == (uint32_t)b);
    }
    for (int b = 0; b < 128; b++) {
        if (self->no_rule[b])
            continue;
        uint32_t unit = self->units[root ^ (uint64_t)b];
        uint64_t next = (root ^ (uint64_t)b) ^ offset_of(unit);
        if ((unit >> 8) & 1) {
            if (next >= (uint64_t)self->n_units)
                continue; /* (the walk stops there: no rule, nothing after) */
            self->ascii_rule[b] = 1;
        }
        for (int c = 0; c < 256; c++) {
            uint64_t node = next ^ (uint64_t)c;
            if (node < (uint64_t)self->n_units && (self->units[node] & MASK) == (uint32_t)c)
                self->follow[b][c >> 3] |= (uint8_t)(1u << (c & 7));
        }
    }
    for (int b = 0; b < 256; b++)
        self->hf_plain[b] = b == 0 || self->no_rule[b] || (b < 128 && !self->ascii_rule[b]);
    memcpy(self->pool, raw + 4 + size, (size_t)self->pool_len);
    self->pool[self->pool_len] = 0;
    /* replacements that are not UTF-8 the pure twin decodes with U+FFFD: left to it */
    PyObject *check = PyUnicode_DecodeUTF8(self->pool, self->pool_len, "strict");
    if (check == NULL) {
        PyErr_Clear();
        PyErr_SetString(PyExc_ValueError, "the char map's replacements are not UTF-8");
        goto fail;
    }
    Py_DECREF(check);
    PyBuffer_Release(&blob);
    Py_ssize_t cap = 16;
    self->sym = PyMem_Malloc((size_t)cap * sizeof(SymNode));
    if (self->sym == NULL) {
        PyErr_NoMemory();
        Py_DECREF(self);
        return NULL;
    }
    self->n_sym = 1; /* (node 0 unused: n_sym > 1 means there are pieces) */
    if (symbols != NULL) {
        PyObject *seq = PySequence_Fast(symbols, "symbols must be a sequence of str");
        if (seq == NULL) {
            Py_DECREF(self);
            return NULL;
        }
        for (Py_ssize_t k = 0; k < PySequence_Fast_GET_SIZE(seq); k++) {
            PyObject *item = PySequence_Fast_GET_ITEM(seq, k);
            Py_ssize_t slen;
            const char *s = PyUnicode_Check(item) ? PyUnicode_AsUTF8AndSize(item, &slen)
                                                  : NULL;
            if (s == NULL || slen == 0) {
                PyErr_Clear();
                PyErr_SetString(PyExc_ValueError, "a user-defined piece that is not text");
                Py_DECREF(seq);
                Py_DECREF(self);
                return NULL;
            }
            if (add_symbol(self, (const unsigned char *)s, slen, &cap) < 0) {
                Py_DECREF(seq);
                Py_DECREF(self);
                return NULL;
            }
        }
        Py_DECREF(seq);
    }
    return (PyObject *)self;
fail:
    PyBuffer_Release(&blob);
    Py_DECREF(self);
    return NULL;
}

static const char *
utf8_of(PyObject *text, Py_ssize_t *n)
{
    if (!PyUnicode_Check(text)) {
        PyErr_Format(PyExc_TypeError, "text must be str, not %.100s", Py_TYPE(text)->tp_name);
        return NULL;
    }
    return PyUnicode_AsUTF8AndSize(text, n); /* (UnicodeEncodeError on a lone surrogate) */
}

/* ---- SentencePiece ------------------------------------------------------------------ */

typedef struct {
    Buf out;
    const char *space;
    Py_ssize_t space_len;
    int squeeze;       /* remove_extra_whitespaces */
    int dummy_prefix;  /* add_dummy_prefix and not treat_whitespace_as_suffix */
    int started;       /* heading spaces are behind */
    int prev_space;
} SpState;

/* One chunk of the walk (a user-defined piece, a rule's replacement or one character):
 * the pure _general's loop body. */
static int
sp_chunk(SpState *st, const char *s, Py_ssize_t n)
{
    if (!st->started) {
        if (st->squeeze && n == 1 && s[0] == ' ')
            return 0; /* a heading space */
        st->started = 1;
        st->prev_space = st->squeeze;
        if (st->dummy_prefix && buf_put(&st->out, st->space, st->space_len) < 0)
            return -1;
    }
    Py_ssize_t chars = 0;
    for (Py_ssize_t i = 0; i < n && chars < 2; i++)
        chars += ((unsigned char)s[i] & 0xC0) != 0x80;
    if (chars == 1) {
        if (!(n == 1 && s[0] == ' ')) {
            st->prev_space = 0;
            return buf_put(&st->out, s, n);
        }
        if (st->prev_space)
            return 0;
        st->prev_space = st->squeeze;
        return buf_put(&st->out, st->space, st->space_len);
    }
    if (st->prev_space)
        while (n > 0 && s[0] == ' ')
            s++, n--;
    if (n > 0) {
        Py_ssize_t from = 0;
        for (Py_ssize_t i = 0; i < n; i++) {
            if (s[i] != ' ')
                continue;
            if (buf_put(&st->out, s + from, i - from) < 0 ||
                buf_put(&st->out, st->space, st->space_len) < 0)
                return -1;
            from = i + 1;
        }
        if (buf_put(&st->out, s + from, n - from) < 0)
            return -1;
        st->prev_space = s[n - 1] == ' ';
    }
    if (!st->squeeze)
        st->prev_space = 0;
    return 0;
}

/* Whether the character at data[pos] is a chunk alone: no user-defined piece starts
 * there, no rule matches there. */
static inline int
sp_alone(const CharsMap *m, const unsigned char *data, Py_ssize_t pos, Py_ssize_t n)
{
    unsigned char b = data[pos];
    if (m->sym_root[b] >= 0)
        return 0;
    if (m->no_rule[b])
        return 1;
    if (b >= 128 || m->ascii_rule[b])
        return 0;
    return pos + 1 == n || !((m->follow[b][data[pos + 1] >> 3] >> (data[pos + 1] & 7)) & 1);
}

static PyObject *
CharsMap_sp_normalize(CharsMap *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 5) {
        PyErr_SetString(PyExc_TypeError, "sp_normalize(text, add_dummy_prefix, "
                        "remove_extra_whitespaces, escape_whitespaces, "
                        "treat_whitespace_as_suffix)");
        return NULL;
    }
    Py_ssize_t n;
    const unsigned char *data = (const unsigned char *)utf8_of(args[0], &n);
    if (data == NULL)
        return NULL;
    int flags[4];
    for (int k = 0; k < 4; k++)
        if ((flags[k] = PyObject_IsTrue(args[k + 1])) < 0)
            return NULL;
    if (n == 0) {
        Py_INCREF(args[0]);
        return args[0];
    }
    int add_dummy = flags[0], squeeze = flags[1], escape = flags[2], suffix = flags[3];
    SpState st = {{NULL, 0, 0}, escape ? "\xe2\x96\x81" : " ", escape ? 3 : 1, squeeze,
                  add_dummy && !suffix, 0, 0};
    if (buf_reserve(&st.out, n + 8) < 0)
        return NULL;
    Py_ssize_t pos = 0;
    while (pos < n) {
        if (sp_alone(self, data, pos, n)) {
            Py_ssize_t end = pos + utf8_len(data[pos]);
            if (!st.started || data[pos] == ' ') {
                if (sp_chunk(&st, (const char *)data + pos, (end > n ? n : end) - pos) < 0)
                    goto fail;
                pos = end;
                continue;
            }
            /* characters that are chunks alone, no space: each copied as it is
             * (sp_chunk's first case), so a run of them at once */
            while (end < n && data[end] != ' ' && sp_alone(self, data, end, n))
                end += utf8_len(data[end]);
            if (end > n)
                end = n;
            if (buf_put(&st.out, (const char *)data + pos, end - pos) < 0)
                goto fail;
            st.prev_space = 0;
            pos = end;
            continue;
        }
        Py_ssize_t len = symbol_at(self, data, pos, n);
        if (len > 0) {
            if (sp_chunk(&st, (const char *)data + pos, len) < 0)
                goto fail;
            pos += len;
            continue;
        }
        uint32_t value = 0;
        len = longest(self, data, pos, n, &value);
        /* (a rule ending inside a character would make invalid UTF-8: not applied) */
        if (len > 0 && (pos + len == n || (data[pos + len] & 0xC0) != 0x80)) {
            Py_ssize_t rlen;
            const char *r = replacement(self, value, &rlen);
            if (sp_chunk(&st, r, rlen) < 0)
                goto fail;
            pos += len;
            continue;
        }
        len = utf8_len(data[pos]);
        if (len > n - pos)
            len = n - pos;
        if (sp_chunk(&st, (const char *)data + pos, len) < 0)
            goto fail;
        pos += len;
    }
    if (!st.started) { /* nothing but spaces: nothing at all, not even the dummy prefix */
        PyMem_Free(st.out.data);
        return PyUnicode_FromStringAndSize("", 0);
    }
    if (squeeze) /* trailing spaces go, typed ▁ too (rstrip) */
        while (st.out.len >= st.space_len &&
               memcmp(st.out.data + st.out.len - st.space_len, st.space,
                      (size_t)st.space_len) == 0)
            st.out.len -= st.space_len;
    if (add_dummy && suffix && buf_put(&st.out, st.space, st.space_len) < 0)
        goto fail;
    PyObject *result = PyUnicode_DecodeUTF8(st.out.data, st.out.len, "strict");
    PyMem_Free(st.out.data);
    return result;
fail:
    PyMem_Free(st.out.data);
    return NULL;
}

/* ---- Hugging Face's Precompiled ----------------------------------------------------- */

#define WHOLE_CLUSTER_BYTES 6

/* Each character of data[0:n] by its own shortest rule, or kept. */
static int
hf_chars(const CharsMap *m, Buf *out, const unsigned char *data, Py_ssize_t n)
{
    Py_ssize_t pos = 0;
    while (pos < n) {
        if (m->hf_plain[data[pos]]) { /* a run of characters no rule matches: as it is */
            Py_ssize_t end = pos;
            while (end < n && m->hf_plain[data[end]])
                end += utf8_len(data[end]);
            if (end > n)
                end = n;
            if (buf_put(out, (const char *)data + pos, end - pos) < 0)
                return -1;
            pos = end;
            continue;
        }
        Py_ssize_t len = utf8_len(data[pos]);
        if (len > n - pos)
            len = n - pos;
        uint32_t value;
        if (shortest(m, data + pos, len, &value)) {
            Py_ssize_t rlen;
            const char *r = replacement(m, value, &rlen);
            if (buf_put(out, r, rlen) < 0)
                return -1;
        } else if (buf_put(out, (const char *)data + pos, len) < 0) {
            return -1;
        }
        pos += len;
    }
    return 0;
}

#define BITMAP_BYTES (0x110000 / 8)

/* Whether data[0:n] may hold a grapheme cluster of two characters or more: a character
 * of the `joining` bitmap, or CR LF. */
static int
may_join(const unsigned char *data, Py_ssize_t n, const unsigned char *joining)
{
    Py_ssize_t pos = 0;
    while (pos < n) {
        unsigned char lead = data[pos];
        Py_ssize_t len = utf8_len(lead);
        if (len > n - pos)
            return 1; /* (not UTF-8: never from a str) */
        uint32_t cp;
        if (len == 1) {
            if (lead == '\r' && pos + 1 < n && data[pos + 1] == '\n')
                return 1;
            cp = lead;
        } else if (len == 2) {
            cp = (uint32_t)(lead & 0x1F) << 6 | (data[pos + 1] & 0x3F);
        } else if (len == 3) {
            cp = (uint32_t)(lead & 0x0F) << 12 | (uint32_t)(data[pos + 1] & 0x3F) << 6 |
                 (data[pos + 2] & 0x3F);
        } else {
            cp = (uint32_t)(lead & 0x07) << 18 | (uint32_t)(data[pos + 1] & 0x3F) << 12 |
                 (uint32_t)(data[pos + 2] & 0x3F) << 6 | (data[pos + 3] & 0x3F);
        }
        if (cp < 0x110000 && (joining[cp >> 3] >> (cp & 7)) & 1)
            return 1;
        pos += len;
    }
    return 0;
}

static PyObject *
CharsMap_hf_normalize(CharsMap *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs < 1 || nargs > 2) {
        PyErr_SetString(PyExc_TypeError, "hf_normalize(text, clusters=None)");
        return NULL;
    }
    PyObject *clusters = nargs == 2 && args[1] != Py_None ? args[1] : NULL;
    Py_ssize_t n;
    const unsigned char *data = (const unsigned char *)utf8_of(args[0], &n);
    if (data == NULL)
        return NULL;
    if (clusters != NULL && PyBytes_Check(clusters)) {
        if (PyBytes_GET_SIZE(clusters) != BITMAP_BYTES) {
            PyErr_SetString(PyExc_ValueError, "the joining bitmap needs a bit per code point");
            return NULL;
        }
        if (may_join(data, n, (const unsigned char *)PyBytes_AS_STRING(clusters)))
            Py_RETURN_NONE;
        clusters = NULL;
    }
    Buf out = {NULL, 0, 0};
    if (buf_reserve(&out, n + 8) < 0)
        return NULL;
    if (clusters == NULL) {
        if (hf_chars(self, &out, data, n) < 0)
            goto fail;
    } else {
        if (!PyList_Check(clusters)) {
            PyErr_SetString(PyExc_TypeError, "clusters must be a list of str, or bytes");
            goto fail;
        }
        for (Py_ssize_t k = 0; k < PyList_GET_SIZE(clusters); k++) {
            Py_ssize_t cn;
            const unsigned char *c =
                (const unsigned char *)utf8_of(PyList_GET_ITEM(clusters, k), &cn);
            if (c == NULL)
                goto fail;
            uint32_t value;
            Py_ssize_t first = cn ? utf8_len(c[0]) : 0;
            /* (one character: its own rule; several, short: the whole cluster's) */
            if (cn > first && cn < WHOLE_CLUSTER_BYTES && shortest(self, c, cn, &value)) {
                Py_ssize_t rlen;
                const char *r = replacement(self, value, &rlen);
                if (buf_put(&out, r, rlen) < 0)
                    goto fail;
            } else if (hf_chars(self, &out, c, cn) < 0) {
                goto fail;
            }
        }
    }
    PyObject *result = PyUnicode_DecodeUTF8(out.data, out.len, "strict");
    PyMem_Free(out.data);
    return result;
fail:
    PyMem_Free(out.data);
    return NULL;
}

static PyObject *
CharsMap_sizeof(CharsMap *self, PyObject *Py_UNUSED(ignored))
{
    return PyLong_FromSsize_t((Py_ssize_t)sizeof(CharsMap) + 4 * self->n_units +
                              self->pool_len + 1 +
                              (Py_ssize_t)sizeof(SymNode) * self->n_sym);
}

static PyMethodDef CharsMap_methods[] = {
    {"sp_normalize", (PyCFunction)(void (*)(void))CharsMap_sp_normalize, METH_FASTCALL,
     "sp_normalize(text, add_dummy_prefix, remove_extra_whitespaces, escape_whitespaces, "
     "treat_whitespace_as_suffix) -> str: SentencePiece's normalized text"},
    {"hf_normalize", (PyCFunction)(void (*)(void))CharsMap_hf_normalize, METH_FASTCALL,
     "hf_normalize(text, clusters=None) -> str or None: Hugging Face's Precompiled text "
     "(None: a bitmap said a cluster may join, and clusters are needed)"},
    {"__sizeof__", (PyCFunction)CharsMap_sizeof, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject CharsMapType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "tokplay_native.normalize.CharsMap",
    .tp_basicsize = sizeof(CharsMap),
    .tp_dealloc = (destructor)CharsMap_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A char map's trie and replacements, and the user-defined pieces.",
    .tp_methods = CharsMap_methods,
    .tp_new = CharsMap_new,
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "tokplay_native.normalize",
    "A SentencePiece char map applied in C (the twin of normalize_str in "
    "core.pipeline.sentencepiece.normalizer and core.pipeline.precompiled).", -1, NULL,
};

PyMODINIT_FUNC
PyInit_normalize(void)
{
    if (PyType_Ready(&CharsMapType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
    Py_INCREF(&CharsMapType);
    if (PyModule_AddObject(m, "CharsMap", (PyObject *)&CharsMapType) < 0) {
        Py_DECREF(&CharsMapType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
