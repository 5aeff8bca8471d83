/* The BPE merge loop in C: the twin of core/engine/bpe.py's hot paths, of a pre-token's BPE in
 * core/engine/pretoken_bpe.py and of the pre-token cache's loop in core/engine/text_encoder.py. Same
 * algorithm, same order of look-ups, same answers (tests/test_native_bpe.py checks them
 * against the pure code on arbitrary input and on real models).
 *
 * BPE joins the adjacent pair of lowest rank, the leftmost on a tie, until no pair has a
 * rank (bpe_loop, written once below). Two ways to rank a pair:
 *
 *   merge_joined(parts, ranks)            in a Python dict, by left + right (rank files over
 *                                         bytes, SentencePiece over str); a join makes it
 *   merge_made(parts, ranks, made)        in a Python dict, by (left, right); a join makes
 *                                         made[rank] (merge lists over token IDs)
 *
 * and, built once per tokenizer on its first new pre-token, C hash tables that answer the
 * same without making a Python object per look-up:
 *
 *   RankTable(encoder).encode(data)       a rank file's BPE of one pre-token's bytes -> IDs
 *   PairTable(ranks, made, byte_ids).encode(data)   the same for a merge list
 *   SpmWords(merge_rank, vocab, ...)      a SentencePiece BPE model's words -> IDs
 *   spm_words(texts, scores, types, ...)  the same, straight from its piece columns
 *   encode_words(...)                     a pre-token cache's loop over one of those
 *
 * Ranks are ints below NO_MERGE (1 << 62, what a missing pair ranks); the loop rescans an
 * array of ranks after each join (n^2), so callers send only short inputs (core.engine.bpe._LONG
 * parts, 256) and keep their heap for longer ones. The merge_* functions join `parts` in
 * place and return it, as core.engine.bpe.merge does. Every function holds the GIL throughout.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hash.h"

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

/* The BPE loop, written once for every kind of part below. r[i] ranks the pair of parts
 * (i, i + 1); rank(ctx, i, &r[i]) ranks it among the current parts, and join(ctx, i, n, rank)
 * joins parts i and i + 1 of n (the context's arrays drop slot i + 1). The ranks are asked
 * for in core.engine.bpe.merge's order: the pairs left to right, then after each join the new left
 * pair before the new right one. Returns the count of parts left, or -1 with an exception. */
typedef int (*RankFn)(void *ctx, Py_ssize_t i, long long *out);
typedef int (*JoinFn)(void *ctx, Py_ssize_t i, Py_ssize_t n, long long rank);

#if defined(__GNUC__)
/* (inlined where it is called, so the compiler calls rank and join directly) */
__attribute__((always_inline))
#endif
static inline Py_ssize_t
bpe_loop(void *ctx, Py_ssize_t n, long long *r, RankFn rank, JoinFn join)
{
    for (Py_ssize_t i = 0; i + 1 < n; i++)
        if (rank(ctx, i, &r[i]) < 0)
            return -1;
    while (n > 1) {
        Py_ssize_t i = lowest(r, n - 1);
        if (r[i] == NO_MERGE)
            break;
        if (join(ctx, i, n, r[i]) < 0)
            return -1;
        memmove(&r[i], &r[i + 1], sizeof(long long) * (size_t)(n - i - 2));
        n--;
        if (i > 0 && rank(ctx, i - 1, &r[i - 1]) < 0)
            return -1;
        if (i + 1 < n && rank(ctx, i, &r[i]) < 0)
            return -1;
    }
    return n;
}

/* Drop slot i + 1 of an array of n items. */
#define DROP(array, i, n) \
    memmove(&(array)[(i) + 1], &(array)[(i) + 2], sizeof((array)[0]) * (size_t)((n) - (i) - 2))

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

/* Parts that are Python objects (owned references in p), ranked through the dict `ranks`.
 * With `made` NULL a pair's key is p[i] + p[i+1] and a join makes that key (kept in k[i]);
 * otherwise the key is the tuple (p[i], p[i+1]) and a join makes made[rank]. */
typedef struct {
    PyObject **p, **k, *ranks, *made;
} Objects;

static int
objects_rank(void *ctx, Py_ssize_t i, long long *out)
{
    Objects *c = ctx;
    PyObject *key = c->made == NULL ? PyNumber_Add(c->p[i], c->p[i + 1])
                                    : PyTuple_Pack(2, c->p[i], c->p[i + 1]);
    if (key == NULL)
        return -1;
    int bad = rank_of(c->ranks, key, out);
    if (c->made == NULL) {
        Py_XDECREF(c->k[i]);
        c->k[i] = key;
    }
    else
        Py_DECREF(key);
    return bad;
}

static int
objects_join(void *ctx, Py_ssize_t i, Py_ssize_t n, long long rank)
{
    Objects *c = ctx;
    PyObject *joined;
    if (c->made == NULL) {
        joined = c->k[i];
        c->k[i] = NULL;
        Py_XDECREF(c->k[i + 1]); /* (recomputed: its left part changed) */
        c->k[i + 1] = NULL;
        DROP(c->k, i, n);
        c->k[n - 2] = NULL;
    }
    else if ((joined = made_of(c->made, rank)) == NULL)
        return -1;
    Py_DECREF(c->p[i]);
    Py_DECREF(c->p[i + 1]);
    c->p[i] = joined;
    DROP(c->p, i, n);
    c->p[n - 1] = NULL;
    return 0;
}

/* The merge loop over `p[0:n]` (owned references), in place; returns the new count or -1
 * (then p[0:n] still holds references or NULLs, for release()). */
static Py_ssize_t
merge_loop(PyObject **p, Py_ssize_t n, PyObject *ranks, PyObject *made)
{
    Py_ssize_t result = -1;
    Objects ctx = {p, NULL, ranks, made};
    long long *r = PyMem_Malloc(sizeof(long long) * (size_t)n);
    if (made == NULL)
        ctx.k = PyMem_Calloc((size_t)n, sizeof(PyObject *));
    if (r == NULL || (made == NULL && ctx.k == NULL))
        PyErr_NoMemory();
    else
        result = bpe_loop(&ctx, n, r, objects_rank, objects_join);
    PyMem_Free(r);
    release(ctx.k, n);
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
"core.engine.bpe.merge(parts, ranks, key=operator.add): join the adjacent pair whose\n"
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
"core.engine.bpe.merge(parts, ranks, made): join the adjacent pair (left, right) of lowest\n"
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

/* ------------------------------------------------------------------------------------ *
 * Tables built once per tokenizer (lazily, on its first cache miss): the same answers as
 * core.engine.bpe.merge over the tokenizer's dicts, without making a Python object per look-up. A pre-token's
 * BPE is then look-ups in a C hash table (open addressing, linear probing) and the final
 * IDs; on non-Latin text, where pre-tokens are long runs of multi-byte characters, that is
 * most of an encode.
 * ------------------------------------------------------------------------------------ */

/* Ask for the cache line at p ahead of its use (a hint: nothing where the compiler has
 * no such builtin). */
#if defined(__GNUC__) || defined(__clang__)
#define PREFETCH(p) __builtin_prefetch(p)
#else
#define PREFETCH(p) ((void)(p))
#endif
#define PREFETCH_AHEAD 8


static uint64_t
hash_pair(uint64_t key)
{
    key = (key ^ (key >> 30)) * 0xBF58476D1CE4E5B9ULL;
    key = (key ^ (key >> 27)) * 0x94D049BB133111EBULL;
    return key ^ (key >> 31);
}

/* The smallest power of two with at most 50% load for n entries. */
static Py_ssize_t
slots_for(Py_ssize_t n)
{
    Py_ssize_t size = 16;
    while (size < 2 * n)
        size *= 2;
    return size;
}

/* ---- RankTable: a rank file's bytes -> rank (= ID) ---------------------------------- */

/* A slot holds the top 32 bits of the key's hash and 1 + its entry's index (0: empty), so
 * probing reads only the slot array (one cache line) until the tags agree; before it, a
 * byte per slot (BYTE_TAG, in ByteMap.tags) answers most look-ups of keys that are no token
 * from an array an eighth of the slots' size, which stays in cache. */
#define SLOT(tag, index) ((uint64_t)(tag) << 32 | (uint64_t)((index) + 1))
#define SLOT_INDEX(slot) ((Py_ssize_t)((slot) & 0xffffffffULL) - 1)
#define SLOT_TAG(slot) ((uint32_t)((slot) >> 32))
#define INLINE 8 /* key bytes kept in the entry itself (most tokens): no blob to read */
#define BYTE_TAG(h) ((uint8_t)((h) >> 56) | 1) /* never 0, which marks an empty slot */

/* bytes -> (value, id), kept in C: RankTable's and SpmTable's storage. */
typedef struct {
    long long value; /* a rank (NO_MERGE: none) */
    long long id;    /* SpmTable: the piece's ID, -1 if none; RankTable: unused */
    uint32_t length;
    uint32_t offset; /* into blob, for keys longer than INLINE */
    unsigned char inline_key[INLINE];
} ByteEntry;

typedef struct {
    ByteEntry *entries;
    Py_ssize_t count, capacity;
    uint64_t *slots;
    /* each slot's 8-bit tag (BYTE_TAG of its key's hash; 0: empty), an eighth of the slots'
     * size: a look-up reads it first, and most of a new pre-token's look-ups (pairs that are
     * no token) end there, in a cache line the slots' megabytes would have missed */
    uint8_t *tags;
    Py_ssize_t mask;
    unsigned char *blob; /* the longer keys' bytes, one after another */
    Py_ssize_t blob_used, blob_capacity;
} ByteMap;

static int
bytemap_init(ByteMap *map, Py_ssize_t capacity, Py_ssize_t blob_capacity)
{
    if (capacity >= INT32_MAX / 4 || blob_capacity >= (Py_ssize_t)UINT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "too many tokens, or too long");
        return -1;
    }
    Py_ssize_t size = slots_for(capacity);
    map->mask = size - 1;
    map->capacity = capacity;
    map->blob_capacity = blob_capacity;
    map->entries = PyMem_Malloc(sizeof(ByteEntry) * (size_t)(capacity ? capacity : 1));
    map->slots = PyMem_Calloc((size_t)size, sizeof(uint64_t));
    map->tags = PyMem_Calloc((size_t)size, 1);
    map->blob = PyMem_Malloc((size_t)(blob_capacity ? blob_capacity : 1));
    if (map->entries == NULL || map->slots == NULL || map->tags == NULL || map->blob == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    return 0;
}

static void
bytemap_free(ByteMap *map)
{
    PyMem_Free(map->entries);
    PyMem_Free(map->slots);
    PyMem_Free(map->tags);
    PyMem_Free(map->blob);
}

static const unsigned char *
entry_key(const ByteMap *map, const ByteEntry *entry)
{
    return entry->length <= INLINE ? entry->inline_key : map->blob + entry->offset;
}

/* The entry of data[0:n], or NULL. */
static const ByteEntry *
bytemap_find(const ByteMap *map, const unsigned char *data, Py_ssize_t n)
{
    uint64_t h = hash_bytes(data, n);
    uint32_t tag = (uint32_t)(h >> 32);
    uint8_t byte_tag = BYTE_TAG(h);
    for (Py_ssize_t slot = (Py_ssize_t)h & map->mask;; slot = (slot + 1) & map->mask) {
        uint8_t seen = map->tags[slot];
        if (seen == 0)
            return NULL;
        if (seen != byte_tag)
            continue;
        uint64_t got = map->slots[slot];
        if (SLOT_TAG(got) != tag)
            continue;
        const ByteEntry *entry = &map->entries[SLOT_INDEX(got)];
        if ((Py_ssize_t)entry->length == n && memcmp(entry_key(map, entry), data, (size_t)n) == 0)
            return entry;
    }
}

/* The entry of data[0:n], added (value NO_MERGE, id -1) if missing; NULL on error. */
static ByteEntry *
bytemap_add(ByteMap *map, const unsigned char *data, Py_ssize_t n)
{
    ByteEntry *found = (ByteEntry *)bytemap_find(map, data, n);
    if (found != NULL)
        return found;
    if (map->count >= map->capacity || (n > INLINE && map->blob_used + n > map->blob_capacity)) {
        PyErr_SetString(PyExc_RuntimeError, "a table changed while it was copied");
        return NULL;
    }
    ByteEntry *entry = &map->entries[map->count];
    entry->value = NO_MERGE;
    entry->id = -1;
    entry->length = (uint32_t)n;
    entry->offset = 0;
    if (n <= INLINE)
        memcpy(entry->inline_key, data, (size_t)n);
    else {
        memcpy(map->blob + map->blob_used, data, (size_t)n);
        entry->offset = (uint32_t)map->blob_used;
        map->blob_used += n;
    }
    uint64_t h = hash_bytes(data, n);
    Py_ssize_t slot = (Py_ssize_t)h & map->mask;
    while (map->slots[slot] != 0)
        slot = (slot + 1) & map->mask;
    map->slots[slot] = SLOT(h >> 32, map->count);
    map->tags[slot] = BYTE_TAG(h);
    map->count++;
    return entry;
}

/* A dict key's bytes: a bytes object's own, or a str's UTF-8 (kept alive by the str). */
static const unsigned char *
key_bytes(PyObject *key, Py_ssize_t *n)
{
    if (PyBytes_CheckExact(key)) {
        *n = PyBytes_GET_SIZE(key);
        return (const unsigned char *)PyBytes_AS_STRING(key);
    }
    if (PyUnicode_CheckExact(key))
        return (const unsigned char *)PyUnicode_AsUTF8AndSize(key, n);
    PyErr_SetString(PyExc_TypeError, "table keys must be bytes or str");
    return NULL;
}

/* The bytes the keys of `dict` take beyond INLINE each; -1 on error. */
static Py_ssize_t
blob_size(PyObject *dict)
{
    Py_ssize_t total = 0, pos = 0, n;
    PyObject *key, *value;
    while (PyDict_Next(dict, &pos, &key, &value)) {
        if (key_bytes(key, &n) == NULL)
            return -1;
        if (n > INLINE)
            total += n;
    }
    return total;
}

/* Copy `dict` (key -> int) into `map`: its values go in `value`, or in `id` if as_id. */
static int
bytemap_copy(ByteMap *map, PyObject *dict, int as_id)
{
    Py_ssize_t pos = 0, n;
    PyObject *key, *value;
    while (PyDict_Next(dict, &pos, &key, &value)) {
        const unsigned char *data = key_bytes(key, &n);
        if (data == NULL)
            return -1;
        long long v = PyLong_AsLongLong(value);
        if (v == -1 && PyErr_Occurred())
            return -1;
        ByteEntry *entry = bytemap_add(map, data, n);
        if (entry == NULL)
            return -1;
        if (as_id)
            entry->id = v;
        else
            entry->value = v;
    }
    return 0;
}

/* Parts that are slices of one byte string, ranked in a ByteMap: part i is
 * data[b[i]:b[i + 1]]; v, if not NULL, holds each part's value (a join's is its rank). */
typedef struct {
    const ByteMap *map;
    const unsigned char *data;
    Py_ssize_t *b;
    long long *v;
} Offsets;

static int
offsets_rank(void *ctx, Py_ssize_t i, long long *out)
{
    const Offsets *c = ctx;
    const ByteEntry *entry = bytemap_find(c->map, c->data + c->b[i], c->b[i + 2] - c->b[i]);
    *out = entry == NULL ? NO_MERGE : entry->value;
    return 0;
}

static int
offsets_join(void *ctx, Py_ssize_t i, Py_ssize_t n, long long rank)
{
    Offsets *c = ctx;
    if (c->v != NULL) {
        c->v[i] = rank;
        DROP(c->v, i, n);
    }
    DROP(c->b, i, n + 1); /* (n parts, n + 1 bounds) */
    return 0;
}

typedef struct {
    PyObject_HEAD
    ByteMap map;
    long long byte_rank[256]; /* each single byte's value (NO_MERGE if none) */
    int whole_first; /* ignore_merges: a pre-token that is a token is that token */
    /* each two-byte key's value by (first byte << 8 | second), PAIR_NONE if it is no token,
     * PAIR_MAP if its value does not fit (looked up in map then): half of a new pre-token's
     * look-ups are its pairs of bytes, and these 256 KB stay in cache where the map's
     * megabytes do not; NULL until rank_pairs fills it */
    int32_t *pair_rank;
} RankTable;

#define PAIR_NONE (-1)
#define PAIR_MAP (-2)

static void
RankTable_dealloc(RankTable *self)
{
    bytemap_free(&self->map);
    PyMem_Free(self->pair_rank);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* Fill self->pair_rank from the map's two-byte keys; -1 with MemoryError. */
static int
rank_pairs(RankTable *self)
{
    int32_t *pairs = PyMem_Malloc(sizeof(int32_t) * 65536);
    if (pairs == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t k = 0; k < 65536; k++)
        pairs[k] = PAIR_NONE;
    for (Py_ssize_t e = 0; e < self->map.count; e++) {
        const ByteEntry *entry = &self->map.entries[e];
        if (entry->length != 2)
            continue;
        long long value = entry->value;
        pairs[entry->inline_key[0] << 8 | entry->inline_key[1]] =
            value >= 0 && value < INT32_MAX ? (int32_t)value : PAIR_MAP;
    }
    self->pair_rank = pairs;
    return 0;
}

/* Offsets over a RankTable: a part pair of two bytes is ranked from its pair_rank. */
typedef struct {
    Offsets o; /* (first: offsets_join takes this context as its Offsets) */
    const int32_t *pair_rank;
} PairOffsets;

static int
pair_offsets_rank(void *ctx, Py_ssize_t i, long long *out)
{
    const PairOffsets *c = ctx;
    const unsigned char *at = c->o.data + c->o.b[i];
    if (c->o.b[i + 2] - c->o.b[i] == 2) {
        int32_t value = c->pair_rank[at[0] << 8 | at[1]];
        if (value != PAIR_MAP) {
            *out = value == PAIR_NONE ? NO_MERGE : value;
            return 0;
        }
    }
    return offsets_rank(ctx, i, out);
}

/* The value of data[0:n], or NO_MERGE. */
static long long
rank_find(const RankTable *t, const unsigned char *data, Py_ssize_t n)
{
    const ByteEntry *entry = bytemap_find(&t->map, data, n);
    return entry == NULL ? NO_MERGE : entry->value;
}

static PyObject *
RankTable_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    static char *names[] = {"encoder", "ignore_merges", NULL};
    PyObject *encoder;
    int whole_first = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O!|$p:RankTable", names, &PyDict_Type,
                                     &encoder, &whole_first))
        return NULL;
    Py_ssize_t pos = 0;
    PyObject *key, *value;
    while (PyDict_Next(encoder, &pos, &key, &value))
        if (!PyBytes_CheckExact(key)) {
            PyErr_SetString(PyExc_TypeError, "RankTable: keys must be bytes");
            return NULL;
        }
    RankTable *self = (RankTable *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    self->whole_first = whole_first;
    Py_ssize_t blob = blob_size(encoder);
    if (blob < 0 || bytemap_init(&self->map, PyDict_GET_SIZE(encoder), blob) < 0 ||
        bytemap_copy(&self->map, encoder, 0) < 0) {
        Py_DECREF(self);
        return NULL;
    }
    for (int b = 0; b < 256; b++) {
        unsigned char byte = (unsigned char)b;
        self->byte_rank[b] = rank_find(self, &byte, 1);
    }
    if (rank_pairs(self) < 0) {
        Py_DECREF(self);
        return NULL;
    }
    return (PyObject *)self;
}

static PyObject *
rank_encode(const RankTable *self, const unsigned char *data, Py_ssize_t size)
{
    if (self->whole_first && size > 0) {
        long long whole = rank_find(self, data, size);
        if (whole != NO_MERGE) {
            PyObject *id = PyLong_FromLongLong(whole);
            if (id == NULL)
                return NULL;
            PyObject *out = PyTuple_Pack(1, id);
            Py_DECREF(id);
            return out;
        }
    }
    /* part i is data[b[i]:b[i + 1]], its value v[i]; r[i] ranks the pair (i, i + 1). In a
     * rank file a token's rank is its ID, so a joined part's value is the pair's rank. */
    Py_ssize_t small_b[65];
    long long small_r[65], small_v[65];
    Py_ssize_t *b = small_b;
    long long *r = small_r, *v = small_v;
    PyObject *out = NULL;
    if (size > 64) {
        b = PyMem_Malloc(sizeof(Py_ssize_t) * (size_t)(size + 1));
        r = PyMem_Malloc(sizeof(long long) * (size_t)(size + 1));
        v = PyMem_Malloc(sizeof(long long) * (size_t)(size + 1));
        if (b == NULL || r == NULL || v == NULL) {
            PyErr_NoMemory();
            goto done;
        }
    }
    for (Py_ssize_t i = 0; i < size; i++) {
        b[i] = i;
        v[i] = self->byte_rank[data[i]];
    }
    b[size] = size;
    PairOffsets ctx = {{&self->map, data, b, v}, self->pair_rank};
    Py_ssize_t n = bpe_loop(&ctx, size, r, pair_offsets_rank, offsets_join);
    out = PyTuple_New(n);
    if (out == NULL)
        goto done;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item;
        if (v[i] == NO_MERGE) { /* a byte that is no token: what encoder[part] raises */
            PyObject *part = PyBytes_FromStringAndSize((const char *)data + b[i], b[i + 1] - b[i]);
            if (part != NULL) {
                PyErr_SetObject(PyExc_KeyError, part);
                Py_DECREF(part);
            }
            item = NULL;
        }
        else
            item = PyLong_FromLongLong(v[i]);
        if (item == NULL) {
            Py_CLEAR(out);
            goto done;
        }
        PyTuple_SET_ITEM(out, i, item);
    }
done:
    if (b != small_b)
        PyMem_Free(b);
    if (r != small_r)
        PyMem_Free(r);
    if (v != small_v)
        PyMem_Free(v);
    return out;
}

PyDoc_STRVAR(RankTable_encode_doc,
"encode(data, /)\n--\n\n"
"tuple(map(encoder.__getitem__, core.engine.bpe.merge([bytes([b]) for b in data], encoder,\n"
"key=operator.add))) with the encoder this table was built from (its whole first with\n"
"ignore_merges).");

static PyObject *
RankTable_encode(RankTable *self, PyObject *arg)
{
    if (!PyBytes_CheckExact(arg)) {
        PyErr_SetString(PyExc_TypeError, "RankTable.encode(data: bytes)");
        return NULL;
    }
    return rank_encode(self, (const unsigned char *)PyBytes_AS_STRING(arg), PyBytes_GET_SIZE(arg));
}

static PyMethodDef RankTable_methods[] = {
    {"encode", (PyCFunction)RankTable_encode, METH_O, RankTable_encode_doc},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject RankTableType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "tokplay_native.bpe.RankTable",
    .tp_doc = "RankTable(encoder: dict[bytes, int]): a rank file's table, for encode(data).",
    .tp_basicsize = sizeof(RankTable),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = RankTable_new,
    .tp_dealloc = (destructor)RankTable_dealloc,
    .tp_methods = RankTable_methods,
};

/* ---- PairTable: a merge list's (left ID, right ID) -> (rank, merged ID) ------------- */

typedef struct {
    uint64_t key; /* left << 32 | right */
    long long rank;
    long long made;
} PairEntry;

typedef struct {
    PyObject_HEAD
    PairEntry *entries;
    uint64_t *slots; /* SLOT(tag, index), as RankTable's */
    Py_ssize_t mask;
    long long byte_ids[256];
    RankTable *whole; /* ignore_merges: the encoder, looked up first; else NULL */
} PairTable;

static void
PairTable_dealloc(PairTable *self)
{
    PyMem_Free(self->entries);
    PyMem_Free(self->slots);
    Py_XDECREF(self->whole);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static const PairEntry *
pair_find(const PairTable *t, long long left, long long right)
{
    uint64_t key = (uint64_t)left << 32 | (uint64_t)right;
    uint64_t h = hash_pair(key);
    uint32_t tag = (uint32_t)(h >> 32);
    for (Py_ssize_t slot = (Py_ssize_t)h & t->mask;; slot = (slot + 1) & t->mask) {
        uint64_t got = t->slots[slot];
        if (got == 0)
            return NULL;
        if (SLOT_TAG(got) == tag && t->entries[SLOT_INDEX(got)].key == key)
            return &t->entries[SLOT_INDEX(got)];
    }
}

/* An ID as a table key part: 0 <= id < 2**32. */
static int
table_id(PyObject *obj, long long *out)
{
    long long v = PyLong_AsLongLong(obj);
    if (v == -1 && PyErr_Occurred())
        return -1;
    if (v < 0 || v > (long long)UINT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "PairTable: token IDs must be in 0..2**32-1");
        return -1;
    }
    *out = v;
    return 0;
}

static PyObject *
PairTable_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    static char *names[] = {"ranks", "made", "byte_ids", "whole", NULL};
    PyObject *ranks, *made, *byte_ids, *whole = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O!OO|$O:PairTable", names, &PyDict_Type,
                                     &ranks, &made, &byte_ids, &whole))
        return NULL;
    if (whole != Py_None && !PyObject_TypeCheck(whole, &RankTableType)) {
        PyErr_SetString(PyExc_TypeError, "PairTable: whole must be a RankTable or None");
        return NULL;
    }
    Py_ssize_t n = PyDict_GET_SIZE(ranks);
    if (n >= INT32_MAX / 4) {
        PyErr_SetString(PyExc_ValueError, "PairTable: too many merges");
        return NULL;
    }
    PairTable *self = (PairTable *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    if (whole != Py_None) {
        Py_INCREF(whole);
        self->whole = (RankTable *)whole;
    }
    for (int b = 0; b < 256; b++) {
        PyObject *index = PyLong_FromLong(b);
        PyObject *id = index == NULL ? NULL : PyObject_GetItem(byte_ids, index);
        Py_XDECREF(index);
        int bad = id == NULL || table_id(id, &self->byte_ids[b]) < 0;
        Py_XDECREF(id);
        if (bad)
            goto fail;
    }
    Py_ssize_t size = slots_for(n);
    self->mask = size - 1;
    self->entries = PyMem_Malloc(sizeof(PairEntry) * (size_t)(n ? n : 1));
    self->slots = PyMem_Calloc((size_t)size, sizeof(uint64_t));
    if (self->entries == NULL || self->slots == NULL) {
        PyErr_NoMemory();
        goto fail;
    }
    Py_ssize_t count = 0, pos = 0;
    PyObject *key, *value;
    while (PyDict_Next(ranks, &pos, &key, &value)) {
        long long left, right;
        if (!PyTuple_CheckExact(key) || PyTuple_GET_SIZE(key) != 2) {
            PyErr_SetString(PyExc_TypeError, "PairTable: keys must be (left, right) tuples");
            goto fail;
        }
        if (table_id(PyTuple_GET_ITEM(key, 0), &left) < 0 ||
            table_id(PyTuple_GET_ITEM(key, 1), &right) < 0)
            goto fail;
        long long rank = PyLong_AsLongLong(value);
        if (rank == -1 && PyErr_Occurred())
            goto fail;
        if (rank >= NO_MERGE) /* never joins: leave it out, as a missing pair */
            continue;
        PyObject *joined = made_of(made, rank);
        long long joined_id;
        int bad = joined == NULL || table_id(joined, &joined_id) < 0;
        Py_XDECREF(joined);
        if (bad)
            goto fail;
        if (count >= n) {
            PyErr_SetString(PyExc_RuntimeError, "PairTable: the dict changed size");
            goto fail;
        }
        PairEntry *entry = &self->entries[count];
        entry->key = (uint64_t)left << 32 | (uint64_t)right;
        entry->rank = rank;
        entry->made = joined_id;
        uint64_t h = hash_pair(entry->key);
        Py_ssize_t slot = (Py_ssize_t)h & self->mask;
        while (self->slots[slot] != 0)
            slot = (slot + 1) & self->mask;
        self->slots[slot] = SLOT(h >> 32, count);
        count++;
    }
    return (PyObject *)self;
fail:
    Py_DECREF(self);
    return NULL;
}

/* Parts that are token IDs (p), ranked in a PairTable. */
typedef struct {
    const PairTable *t;
    long long *p;
} Ids;

static int
ids_rank(void *ctx, Py_ssize_t i, long long *out)
{
    const Ids *c = ctx;
    const PairEntry *entry = pair_find(c->t, c->p[i], c->p[i + 1]);
    *out = entry == NULL ? NO_MERGE : entry->rank;
    return 0;
}

static int
ids_join(void *ctx, Py_ssize_t i, Py_ssize_t n, long long rank)
{
    Ids *c = ctx;
    c->p[i] = pair_find(c->t, c->p[i], c->p[i + 1])->made;
    DROP(c->p, i, n);
    return 0;
}

/* Merge p[0:n] and return the IDs as a tuple (or a list). */
static PyObject *
pair_run(const PairTable *t, long long *p, Py_ssize_t n, int as_list)
{
    long long small_r[64];
    long long *r = n <= 64 ? small_r : PyMem_Malloc(sizeof(long long) * (size_t)n);
    if (r == NULL)
        return PyErr_NoMemory();
    Ids ctx = {t, p};
    n = bpe_loop(&ctx, n, r, ids_rank, ids_join);
    if (r != small_r)
        PyMem_Free(r);
    PyObject *out = as_list ? PyList_New(n) : PyTuple_New(n);
    if (out == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *id = PyLong_FromLongLong(p[i]);
        if (id == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        if (as_list)
            PyList_SET_ITEM(out, i, id);
        else
            PyTuple_SET_ITEM(out, i, id);
    }
    return out;
}

PyDoc_STRVAR(PairTable_encode_doc,
"encode(data, /)\n--\n\n"
"tuple(core.engine.bpe.merge([byte_ids[b] for b in data], ranks, made)) with the tables this\n"
"one was built from (the whole data first, with whole=).");

static PyObject *
pair_encode(const PairTable *self, const unsigned char *data, Py_ssize_t n)
{
    if (self->whole != NULL && n > 0) {
        long long whole = rank_find(self->whole, data, n);
        if (whole != NO_MERGE) {
            PyObject *id = PyLong_FromLongLong(whole);
            if (id == NULL)
                return NULL;
            PyObject *out = PyTuple_Pack(1, id);
            Py_DECREF(id);
            return out;
        }
    }
    long long small_p[64];
    long long *p = n <= 64 ? small_p : PyMem_Malloc(sizeof(long long) * (size_t)n);
    if (p == NULL)
        return PyErr_NoMemory();
    for (Py_ssize_t i = 0; i < n; i++)
        p[i] = self->byte_ids[data[i]];
    PyObject *out = pair_run(self, p, n, 0);
    if (p != small_p)
        PyMem_Free(p);
    return out;
}

static PyObject *
PairTable_encode(PairTable *self, PyObject *arg)
{
    if (!PyBytes_CheckExact(arg)) {
        PyErr_SetString(PyExc_TypeError, "PairTable.encode(data: bytes)");
        return NULL;
    }
    return pair_encode(self, (const unsigned char *)PyBytes_AS_STRING(arg), PyBytes_GET_SIZE(arg));
}

PyDoc_STRVAR(PairTable_merge_doc,
"merge(ids, /)\n--\n\n"
"merge_made(list(ids), ranks, made) with the tables this one was built from: a new\n"
"list. IDs outside 0..2**32-1 raise ValueError.");

static PyObject *
PairTable_merge(PairTable *self, PyObject *arg)
{
    PyObject *seq = PySequence_Fast(arg, "PairTable.merge(ids): a sequence of ints");
    if (seq == NULL)
        return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    long long small_p[64];
    long long *p = n <= 64 ? small_p : PyMem_Malloc(sizeof(long long) * (size_t)n);
    PyObject *out = NULL;
    if (p == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++)
        if (table_id(PySequence_Fast_GET_ITEM(seq, i), &p[i]) < 0)
            goto done;
    out = pair_run(self, p, n, 1);
done:
    if (p != small_p)
        PyMem_Free(p);
    Py_DECREF(seq);
    return out;
}

static PyMethodDef PairTable_methods[] = {
    {"encode", (PyCFunction)PairTable_encode, METH_O, PairTable_encode_doc},
    {"merge", (PyCFunction)PairTable_merge, METH_O, PairTable_merge_doc},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject PairTableType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "tokplay_native.bpe.PairTable",
    .tp_doc = "PairTable(ranks: dict[tuple[int, int], int], made, byte_ids): a merge list's\n"
              "tables, for encode(data) and merge(ids).",
    .tp_basicsize = sizeof(PairTable),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PairTable_new,
    .tp_dealloc = (destructor)PairTable_dealloc,
    .tp_methods = PairTable_methods,
};

/* ---- SpmWords: a SentencePiece BPE model's word -> IDs ------------------------------- */

/* core/pipeline/sentencepiece/bpe.py's _word_ids for a word of plain characters: BPE over
 * the characters (a pair's key is its concatenation, ranked in merge_rank), then each
 * symbol's ID in vocab, <unk> spelled as its UTF-8 bytes' pieces under byte fallback. Both
 * dicts are copied once into one C table keyed by UTF-8 (a rank and an ID per piece), so the
 * loop works on offsets into the word's UTF-8 and makes no object until the IDs. A word it
 * does not take (a character that starts a user-defined piece, over 256 characters, a lone
 * surrogate, <unk> without byte fallback) goes to the caller's compute. */
typedef struct {
    PyObject_HEAD
    ByteMap map;          /* piece -> (rank, ID) */
    long long byte_ids[256];
    int byte_fallback;
    long long unk;
    Py_UCS4 *user_first;  /* sorted first characters of user-defined pieces */
    Py_ssize_t n_user_first;
    /* each ID's int, made the first time a word needs it and kept: a new word's tuple then
     * allocates no int (most IDs are above CPython's small ints), which is most of what a
     * cold cache costs beyond the merge loop; n_ids is 0 until the first word, -1 if the
     * array could not be had (ints are then made each time) */
    PyObject **id_objects;
    Py_ssize_t n_ids;
    /* the word cache (see words_keep): slots, then the words' UTF-8 and their IDs */
    struct WordSlot *w_slots;
    Py_ssize_t w_mask, w_count;
    unsigned char *w_keys;
    size_t w_keys_used, w_keys_cap;
    int32_t *w_ids;
    size_t w_ids_used, w_ids_cap;
} SpmWords;

typedef struct WordSlot {
    uint64_t hash;
    uint32_t key_at, key_len, ids_at, n_ids;
} WordSlot;

static void
SpmWords_dealloc(SpmWords *self)
{
    bytemap_free(&self->map);
    PyMem_Free(self->user_first);
    for (Py_ssize_t i = 0; i < self->n_ids; i++)
        Py_XDECREF(self->id_objects[i]);
    PyMem_Free(self->id_objects);
    PyMem_Free(self->w_slots);
    PyMem_Free(self->w_keys);
    PyMem_Free(self->w_ids);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* The int of `id`, a new reference: the one kept in self->id_objects (see there). */
static PyObject *
spm_id_object(SpmWords *self, long long id)
{
    if (self->n_ids == 0) {
        long long top = self->unk;
        for (Py_ssize_t e = 0; e < self->map.count; e++)
            if (self->map.entries[e].id > top)
                top = self->map.entries[e].id;
        for (int b = 0; b < 256; b++)
            if (self->byte_ids[b] > top)
                top = self->byte_ids[b];
        self->id_objects = top >= 0 && top < PY_SSIZE_T_MAX / (Py_ssize_t)sizeof(PyObject *)
            ? PyMem_Calloc((size_t)top + 1, sizeof(PyObject *)) : NULL;
        self->n_ids = self->id_objects == NULL ? -1 : (Py_ssize_t)top + 1;
    }
    if (id < 0 || id >= self->n_ids)
        return PyLong_FromLongLong(id);
    PyObject *obj = self->id_objects[id];
    if (obj == NULL) {
        obj = PyLong_FromLongLong(id);
        if (obj == NULL)
            return NULL;
        self->id_objects[id] = obj;
    }
    Py_INCREF(obj);
    return obj;
}

static int
compare_ucs4(const void *a, const void *b)
{
    Py_UCS4 x = *(const Py_UCS4 *)a, y = *(const Py_UCS4 *)b;
    return (x > y) - (x < y);
}

static PyObject *
SpmWords_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    static char *names[] = {"merge_rank", "vocab", "unk", "byte_ids", "user_first", NULL};
    PyObject *merge_rank, *vocab, *byte_ids, *user_first;
    long long unk;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O!O!$LOU:SpmWords", names, &PyDict_Type,
                                     &merge_rank, &PyDict_Type, &vocab, &unk, &byte_ids,
                                     &user_first))
        return NULL;
    SpmWords *self = (SpmWords *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    self->unk = unk;
    self->byte_fallback = byte_ids != Py_None;
    for (int b = 0; self->byte_fallback && b < 256; b++) {
        PyObject *index = PyLong_FromLong(b);
        PyObject *id = index == NULL ? NULL : PyObject_GetItem(byte_ids, index);
        Py_XDECREF(index);
        self->byte_ids[b] = id == NULL ? -1 : PyLong_AsLongLong(id);
        Py_XDECREF(id);
        if (PyErr_Occurred())
            goto fail;
    }
    self->n_user_first = PyUnicode_GET_LENGTH(user_first);
    self->user_first = PyUnicode_AsUCS4Copy(user_first);
    if (self->user_first == NULL)
        goto fail;
    qsort(self->user_first, (size_t)self->n_user_first, sizeof(Py_UCS4), compare_ucs4);
    /* the pieces of both dicts, once each (most are in both): the table's size */
    Py_ssize_t pieces = PyDict_GET_SIZE(merge_rank), pos = 0;
    PyObject *key, *value;
    while (PyDict_Next(vocab, &pos, &key, &value)) {
        int in_both = PyDict_Contains(merge_rank, key);
        if (in_both < 0)
            goto fail;
        pieces += !in_both;
    }
    Py_ssize_t blob_a = blob_size(merge_rank), blob_b = blob_a < 0 ? -1 : blob_size(vocab);
    if (blob_b < 0 || bytemap_init(&self->map, pieces, blob_a + blob_b) < 0 ||
        bytemap_copy(&self->map, merge_rank, 0) < 0 || bytemap_copy(&self->map, vocab, 1) < 0)
        goto fail;
    return (PyObject *)self;
fail:
    Py_DECREF(self);
    return NULL;
}

/* text[start:end] (at most 256 characters) as UTF-8 in buf (1,024 bytes), or its own bytes
 * if the text is ASCII; NULL for a lone surrogate (no UTF-8). Not PyUnicode_AsUTF8AndSize,
 * which allocates a copy kept in each str: a new word's copy cost as much as its look-ups. */
static const unsigned char *
span_utf8(PyObject *text, Py_ssize_t start, Py_ssize_t end, unsigned char *buf, Py_ssize_t *size)
{
    if (PyUnicode_IS_ASCII(text)) {
        *size = end - start;
        return (const unsigned char *)PyUnicode_DATA(text) + start;
    }
    int kind = PyUnicode_KIND(text);
    const void *chars = PyUnicode_DATA(text);
    Py_ssize_t k = 0;
    for (Py_ssize_t i = start; i < end; i++) {
        Py_UCS4 c = PyUnicode_READ(kind, chars, i);
        if (c < 0x80)
            buf[k++] = (unsigned char)c;
        else if (c < 0x800) {
            buf[k++] = (unsigned char)(0xC0 | c >> 6);
            buf[k++] = (unsigned char)(0x80 | (c & 0x3F));
        }
        else if (c < 0x10000) {
            if (c >= 0xD800 && c <= 0xDFFF)
                return NULL;
            buf[k++] = (unsigned char)(0xE0 | c >> 12);
            buf[k++] = (unsigned char)(0x80 | (c >> 6 & 0x3F));
            buf[k++] = (unsigned char)(0x80 | (c & 0x3F));
        }
        else {
            buf[k++] = (unsigned char)(0xF0 | c >> 18);
            buf[k++] = (unsigned char)(0x80 | (c >> 12 & 0x3F));
            buf[k++] = (unsigned char)(0x80 | (c >> 6 & 0x3F));
            buf[k++] = (unsigned char)(0x80 | (c & 0x3F));
        }
    }
    *size = k;
    return buf;
}

/* A whole word (at most 256 characters): span_utf8 of all of it. */
static const unsigned char *
word_utf8(PyObject *word, unsigned char *buf, Py_ssize_t *size)
{
    return span_utf8(word, 0, PyUnicode_GET_LENGTH(word), buf, size);
}

/* Whether text[start:end] holds the first character of a user-defined piece. */
static int
holds_user_first(const SpmWords *self, PyObject *text, Py_ssize_t start, Py_ssize_t end)
{
    if (!self->n_user_first)
        return 0;
    int kind = PyUnicode_KIND(text);
    const void *chars = PyUnicode_DATA(text);
    for (Py_ssize_t i = start; i < end; i++) {
        Py_UCS4 c = PyUnicode_READ(kind, chars, i);
        if (bsearch(&c, self->user_first, (size_t)self->n_user_first, sizeof(Py_UCS4),
                    compare_ucs4) != NULL)
            return 1;
    }
    return 0;
}

/* The IDs of a word of plain characters, data[0:size] in UTF-8 (at most 1,024 bytes), into
 * ids (room for one per byte); their count, or -1 where the caller's compute decides (<unk>
 * without byte fallback: its runs merge). */
static Py_ssize_t
spm_ids(const SpmWords *self, const unsigned char *data, Py_ssize_t size, long long *ids)
{
    /* part i is data[b[i]:b[i + 1]], starting as the word's characters; r[i] ranks (i, i+1) */
    Py_ssize_t b[257];
    long long r[257];
    Py_ssize_t m = 0;
    for (Py_ssize_t k = 0; k < size; k++)
        if ((data[k] & 0xC0) != 0x80)
            b[m++] = k;
    b[m] = size;
    Offsets ctx = {&self->map, data, b, NULL};
    m = bpe_loop(&ctx, m, r, offsets_rank, offsets_join);
    Py_ssize_t count = 0;
    for (Py_ssize_t i = 0; i < m; i++) {
        const ByteEntry *entry = bytemap_find(&self->map, data + b[i], b[i + 1] - b[i]);
        long long id = entry == NULL || entry->id < 0 ? self->unk : entry->id;
        if (id != self->unk)
            ids[count++] = id;
        else if (!self->byte_fallback)
            return -1;
        else
            for (Py_ssize_t k = b[i]; k < b[i + 1]; k++)
                ids[count++] = self->byte_ids[data[k]];
    }
    return count;
}

/* A word's IDs as a new tuple; NULL without an exception: the caller's compute decides.
 * check_user: a word holding a user-defined piece's first character goes back too (0: the
 * caller knows the word holds no user-defined piece). */
static PyObject *
spm_word(SpmWords *self, PyObject *word, int check_user)
{
    Py_ssize_t n = PyUnicode_GET_LENGTH(word);
    if (n > 256 || (check_user && holds_user_first(self, word, 0, n)))
        return NULL;
    Py_ssize_t size;
    unsigned char buf[1024];
    const unsigned char *data = word_utf8(word, buf, &size);
    if (data == NULL)
        return NULL; /* a lone surrogate: compute raises what it raises */
    long long ids[1024];
    Py_ssize_t count = spm_ids(self, data, size, ids);
    if (count < 0)
        return NULL;
    PyObject *out = PyTuple_New(count);
    if (out == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *id = spm_id_object(self, ids[i]);
        if (id == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        PyTuple_SET_ITEM(out, i, id);
    }
    return out;
}

/* ---- SpmWords' word cache: a word's UTF-8 -> its IDs, with no object per word ---------- */

/* encode_bounds looks each word up here before it runs BPE: Python's dict would need a str
 * per word to look up (and a tuple per new word to keep), and on a cold CPU cache those
 * allocations cost more than the merges. A slot holds the word's hash and where its UTF-8
 * and IDs sit in two growing arrays; an empty slot has key_len 0 (no word is empty). The
 * cache forgets everything at once when it holds WORDS_MAX words or its keys WORD_BYTES_MAX
 * bytes (as the model's dict does at CACHE_MAX). */
#define WORDS_MAX 200000
#define WORD_BYTES_MAX (64 << 20)

static void
words_forget(SpmWords *self)
{
    PyMem_Free(self->w_slots);
    self->w_slots = NULL;
    self->w_mask = -1;
    self->w_count = 0;
    self->w_keys_used = 0;
    self->w_ids_used = 0;
}

/* The slot of data[0:size] (hash h): its own, or the empty one it would go in. */
static WordSlot *
words_slot(const SpmWords *self, uint64_t h, const unsigned char *data, Py_ssize_t size)
{
    for (Py_ssize_t i = (Py_ssize_t)h & self->w_mask;; i = (i + 1) & self->w_mask) {
        WordSlot *slot = &self->w_slots[i];
        if (slot->key_len == 0 || (slot->hash == h && (Py_ssize_t)slot->key_len == size &&
                                   memcmp(self->w_keys + slot->key_at, data, (size_t)size) == 0))
            return slot;
    }
}

/* Keep ids[0:count] for data[0:size] (hash h); -1 on MemoryError. */
static int
words_keep(SpmWords *self, uint64_t h, const unsigned char *data, Py_ssize_t size,
           const long long *ids, Py_ssize_t count)
{
    if (self->w_count >= WORDS_MAX || self->w_keys_used + (size_t)size > WORD_BYTES_MAX)
        words_forget(self);
    if (self->w_slots == NULL || (self->w_count + 1) * 2 > self->w_mask + 1) {
        Py_ssize_t cap = self->w_slots == NULL ? 1024 : (self->w_mask + 1) * 2;
        WordSlot *slots = PyMem_Calloc((size_t)cap, sizeof(WordSlot));
        if (slots == NULL)
            return -1;
        for (Py_ssize_t i = 0; self->w_slots != NULL && i <= self->w_mask; i++) {
            WordSlot *old = &self->w_slots[i];
            if (old->key_len == 0)
                continue;
            Py_ssize_t j = (Py_ssize_t)old->hash & (cap - 1);
            while (slots[j].key_len != 0)
                j = (j + 1) & (cap - 1);
            slots[j] = *old;
        }
        PyMem_Free(self->w_slots);
        self->w_slots = slots;
        self->w_mask = cap - 1;
    }
    if (reserve_items((void **)&self->w_keys, &self->w_keys_cap, self->w_keys_used + (size_t)size,
                      1, 1 << 16) < 0 ||
        reserve_items((void **)&self->w_ids, &self->w_ids_cap, self->w_ids_used + (size_t)count,
                      sizeof(int32_t), 1 << 14) < 0)
        return -1;
    WordSlot *slot = words_slot(self, h, data, size);
    if (slot->key_len != 0)
        return 0; /* (kept meanwhile) */
    memcpy(self->w_keys + self->w_keys_used, data, (size_t)size);
    for (Py_ssize_t i = 0; i < count; i++)
        self->w_ids[self->w_ids_used + (size_t)i] = (int32_t)ids[i];
    *slot = (WordSlot){h, (uint32_t)self->w_keys_used, (uint32_t)size,
                       (uint32_t)self->w_ids_used, (uint32_t)count};
    self->w_keys_used += (size_t)size;
    self->w_ids_used += (size_t)count;
    self->w_count++;
    return 0;
}

/* out.append(int) for each of ids[0:count] (the kept ints); -1 with an exception. */
static int
append_ids(SpmWords *self, PyObject *out, const long long *ids, Py_ssize_t count)
{
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *id = spm_id_object(self, ids[i]);
        if (id == NULL || PyList_Append(out, id) < 0) {
            Py_XDECREF(id);
            return -1;
        }
        Py_DECREF(id);
    }
    return 0;
}

/* compute(text[start:end]) appended to out (and kept when every item is an ID that fits);
 * -1 with an exception. */
static int
encode_by_compute(SpmWords *self, PyObject *text, Py_ssize_t start, Py_ssize_t end,
                  PyObject *compute, PyObject *out, uint64_t h, const unsigned char *data,
                  Py_ssize_t size)
{
    PyObject *word = PyUnicode_Substring(text, start, end);
    if (word == NULL)
        return -1;
    PyObject *got = PyObject_CallOneArg(compute, word);
    Py_DECREF(word);
    if (got == NULL)
        return -1;
    PyObject *items = PySequence_Fast(got, "compute(word) must give a sequence of IDs");
    Py_DECREF(got);
    if (items == NULL)
        return -1;
    Py_ssize_t count = PySequence_Fast_GET_SIZE(items);
    int keep = data != NULL && count <= 1024;
    long long ids[1024];
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *item = PySequence_Fast_GET_ITEM(items, i);
        if (PyList_Append(out, item) < 0) {
            Py_DECREF(items);
            return -1;
        }
        if (keep) {
            long long id = PyLong_Check(item) ? PyLong_AsLongLong(item) : -1;
            if (id < 0 || id > INT32_MAX) {
                PyErr_Clear();
                keep = 0;
            }
            else
                ids[i] = id;
        }
    }
    Py_DECREF(items);
    return keep ? words_keep(self, h, data, size, ids, count) : 0;
}

PyDoc_STRVAR(SpmWords_piece_id_doc,
"piece_id(piece, /)\n--\n\n"
"The ID the table holds for piece (a str), -1 if none.");

static PyObject *
SpmWords_piece_id(SpmWords *self, PyObject *piece)
{
    Py_ssize_t size;
    if (!PyUnicode_Check(piece)) {
        PyErr_SetString(PyExc_TypeError, "piece_id(piece): a str");
        return NULL;
    }
    const unsigned char *data = (const unsigned char *)PyUnicode_AsUTF8AndSize(piece, &size);
    if (data == NULL) {
        if (!PyErr_ExceptionMatches(PyExc_UnicodeEncodeError))
            return NULL;
        PyErr_Clear(); /* a lone surrogate: no table holds it */
        return PyLong_FromLong(-1);
    }
    const ByteEntry *entry = bytemap_find(&self->map, data, size);
    return PyLong_FromLongLong(entry == NULL || entry->id < 0 ? -1 : entry->id);
}

PyDoc_STRVAR(SpmWords_plain_ids_doc,
"plain_ids(word, /)\n--\n\n"
"The IDs of a word that holds no user-defined piece (BPE over its characters), as a tuple;\n"
"None where the table does not take it (over 256 characters, a lone surrogate, <unk>\n"
"without byte fallback).");

static PyObject *
SpmWords_plain_ids(SpmWords *self, PyObject *word)
{
    if (!PyUnicode_Check(word)) {
        PyErr_SetString(PyExc_TypeError, "plain_ids(word): a str");
        return NULL;
    }
    PyObject *ids = spm_word(self, word, 0);
    if (ids == NULL && !PyErr_Occurred())
        Py_RETURN_NONE;
    return ids;
}

PyDoc_STRVAR(SpmWords_encode_bounds_doc,
"encode_bounds(text, bounds, compute, maxkey, out, /)\n--\n\n"
"out += the IDs of each word of text that bounds (CharCuts.bounds(text)[0]) marks: the\n"
"table's word cache, else BPE over the word's characters, else compute(word) (a word\n"
"holding a user-defined piece's first character, a lone surrogate, <unk> without byte\n"
"fallback, over 256 characters). encode_words(words, ...) with those words, with no str\n"
"made for a word the table takes. Words of at most maxkey characters are kept.");

static PyObject *
SpmWords_encode_bounds(SpmWords *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 5 || !PyUnicode_Check(args[0]) || !PyBytes_Check(args[1]) ||
        !PyList_CheckExact(args[4])) {
        PyErr_SetString(PyExc_TypeError,
                        "encode_bounds(text: str, bounds: bytes, compute, maxkey: int, out: list)");
        return NULL;
    }
    PyObject *text = args[0], *compute = args[2], *out = args[4];
    Py_ssize_t maxkey = PyLong_AsSsize_t(args[3]);
    if (maxkey == -1 && PyErr_Occurred())
        return NULL;
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    Py_ssize_t n_bounds = PyBytes_GET_SIZE(args[1]) / (Py_ssize_t)sizeof(Py_ssize_t);
    const Py_ssize_t *at = (const Py_ssize_t *)PyBytes_AS_STRING(args[1]);
    if (PyBytes_GET_SIZE(args[1]) % (Py_ssize_t)sizeof(Py_ssize_t) ||
        (n_bounds == 0) != (n == 0) || (n_bounds && (at[0] != 0 || at[n_bounds - 1] != n))) {
        PyErr_SetString(PyExc_ValueError, "encode_bounds: bounds are not this text's");
        return NULL;
    }
    for (Py_ssize_t k = 0; k + 1 < n_bounds; k++)
        if (at[k + 1] <= at[k]) {
            PyErr_SetString(PyExc_ValueError, "encode_bounds: bounds are not this text's");
            return NULL;
        }
    for (Py_ssize_t k = 0; k + 1 < n_bounds; k++) {
        Py_ssize_t start = at[k], end = at[k + 1], size = 0;
        unsigned char buf[1024];
        const unsigned char *data =
            end - start <= 256 ? span_utf8(text, start, end, buf, &size) : NULL;
        int keep = data != NULL && end - start <= maxkey;
        uint64_t h = keep ? hash_bytes(data, size) : 0;
        if (keep && self->w_slots != NULL) {
            const WordSlot *slot = words_slot(self, h, data, size);
            if (slot->key_len != 0) {
                const int32_t *kept = self->w_ids + slot->ids_at;
                for (uint32_t i = 0; i < slot->n_ids; i++) {
                    PyObject *id = spm_id_object(self, kept[i]);
                    if (id == NULL || PyList_Append(out, id) < 0) {
                        Py_XDECREF(id);
                        return NULL;
                    }
                    Py_DECREF(id);
                }
                continue;
            }
        }
        long long ids[1024];
        Py_ssize_t count = data != NULL && !holds_user_first(self, text, start, end)
            ? spm_ids(self, data, size, ids) : -1;
        if (count < 0) {
            if (encode_by_compute(self, text, start, end, compute, out, h, keep ? data : NULL,
                                  size) < 0)
                return NULL;
            continue;
        }
        if (append_ids(self, out, ids, count) < 0 ||
            (keep && words_keep(self, h, data, size, ids, count) < 0))
            return NULL;
    }
    Py_RETURN_NONE;
}

PyDoc_STRVAR(SpmWords_clear_cache_doc,
"clear_cache()\n--\n\n"
"Forget the words encode_bounds kept (e.g. to time a cold encode).");

static PyObject *
SpmWords_clear_cache(SpmWords *self, PyObject *Py_UNUSED(ignored))
{
    words_forget(self);
    Py_RETURN_NONE;
}

static PyMethodDef SpmWords_methods[] = {
    {"piece_id", (PyCFunction)SpmWords_piece_id, METH_O, SpmWords_piece_id_doc},
    {"plain_ids", (PyCFunction)SpmWords_plain_ids, METH_O, SpmWords_plain_ids_doc},
    {"encode_bounds", (PyCFunction)(void (*)(void))SpmWords_encode_bounds, METH_FASTCALL,
     SpmWords_encode_bounds_doc},
    {"clear_cache", (PyCFunction)SpmWords_clear_cache, METH_NOARGS, SpmWords_clear_cache_doc},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject SpmWordsType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "tokplay_native.bpe.SpmWords",
    .tp_doc = "SpmWords(merge_rank, vocab, *, unk, byte_ids, user_first): a SentencePiece BPE\n"
              "model's words -> IDs, for encode_words.",
    .tp_basicsize = sizeof(SpmWords),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = SpmWords_new,
    .tp_dealloc = (destructor)SpmWords_dealloc,
    .tp_methods = SpmWords_methods,
};

/* ---- spm_words: an SpmWords straight from a model's piece columns -------------------- */

/* The same table as SpmWords(merge_rank, vocab, ...) over piece_tables' dicts
 * (core/pipeline/sentencepiece/tables.py), without making them: a model's load then makes no
 * dict of 32,000 keys. Types CONTROL (3), UNKNOWN (2) and BYTE (6) are reserved (never
 * merged into); every other piece's rank is the place of its score among those pieces'
 * distinct scores, best first (tables._ranks). */
#define SPM_RESERVED(t) ((t) == 2 || (t) == 3 || (t) == 6)

/* A score and its piece's ID, sorted best first to give the ranks in one walk. */
typedef struct {
    double score;
    Py_ssize_t id;
} Scored;

static int
compare_desc(const void *a, const void *b)
{
    double x = ((const Scored *)a)->score, y = ((const Scored *)b)->score;
    return (x < y) - (x > y);
}

/* Add data[0:n] as entry `id` (hashed once: a model's 32,000 pieces are added at each
 * load); the ID already holding it when the text is spelled twice, else -1. */
static long long
bytemap_add_hashed(ByteMap *map, const unsigned char *data, Py_ssize_t n, uint64_t h,
                   long long id)
{
    uint32_t tag = (uint32_t)(h >> 32);
    Py_ssize_t slot = (Py_ssize_t)h & map->mask;
    for (;; slot = (slot + 1) & map->mask) {
        uint64_t got = map->slots[slot];
        if (got == 0)
            break;
        const ByteEntry *entry = &map->entries[SLOT_INDEX(got)];
        if (SLOT_TAG(got) == tag && (Py_ssize_t)entry->length == n &&
            memcmp(entry_key(map, entry), data, (size_t)n) == 0)
            return entry->id;
    }
    ByteEntry *entry = &map->entries[map->count];
    entry->value = NO_MERGE;
    entry->id = id;
    entry->length = (uint32_t)n;
    entry->offset = 0;
    if (n <= INLINE)
        memcpy(entry->inline_key, data, (size_t)n);
    else {
        memcpy(map->blob + map->blob_used, data, (size_t)n);
        entry->offset = (uint32_t)map->blob_used;
        map->blob_used += n;
    }
    map->slots[slot] = SLOT(tag, map->count);
    map->tags[slot] = BYTE_TAG(h);
    map->count++;
    return -1;
}

static long long
bytemap_add_new(ByteMap *map, const unsigned char *data, Py_ssize_t n, long long id)
{
    return bytemap_add_hashed(map, data, n, hash_bytes(data, n), id);
}

/* The UTF-8 size of a str, -1 for a lone surrogate (not encodable). Written here, not
 * asked of PyUnicode_AsUTF8AndSize, which keeps a copy in each of 32,000 fresh strs. */
static Py_ssize_t
utf8_size(PyObject *s)
{
    Py_ssize_t n = PyUnicode_GET_LENGTH(s), size = 0;
    if (PyUnicode_IS_ASCII(s))
        return n;
    int kind = PyUnicode_KIND(s);
    const void *data = PyUnicode_DATA(s);
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_UCS4 c = PyUnicode_READ(kind, data, i);
        if (c >= 0xD800 && c <= 0xDFFF)
            return -1;
        size += c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4;
    }
    return size;
}

/* Write the UTF-8 of s (utf8_size(s) bytes, no lone surrogate) into out; its size. */
static Py_ssize_t
utf8_write(PyObject *s, unsigned char *out)
{
    Py_ssize_t n = PyUnicode_GET_LENGTH(s);
    unsigned char *start = out;
    if (PyUnicode_IS_ASCII(s)) {
        memcpy(out, PyUnicode_DATA(s), (size_t)n);
        return n;
    }
    int kind = PyUnicode_KIND(s);
    const void *data = PyUnicode_DATA(s);
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_UCS4 c = PyUnicode_READ(kind, data, i);
        if (c < 0x80)
            *out++ = (unsigned char)c;
        else if (c < 0x800) {
            *out++ = (unsigned char)(0xC0 | c >> 6);
            *out++ = (unsigned char)(0x80 | (c & 0x3F));
        }
        else if (c < 0x10000) {
            *out++ = (unsigned char)(0xE0 | c >> 12);
            *out++ = (unsigned char)(0x80 | (c >> 6 & 0x3F));
            *out++ = (unsigned char)(0x80 | (c & 0x3F));
        }
        else {
            *out++ = (unsigned char)(0xF0 | c >> 18);
            *out++ = (unsigned char)(0x80 | (c >> 12 & 0x3F));
            *out++ = (unsigned char)(0x80 | (c >> 6 & 0x3F));
            *out++ = (unsigned char)(0x80 | (c & 0x3F));
        }
    }
    return out - start;
}

/* Each column's checked items: types and scores into C arrays, the texts' UTF-8 sizes
 * beyond INLINE into *blob; a lone surrogate is a TypeError (the dict route decides). */
static int
spm_columns(PyObject *texts, PyObject *scores, PyObject *types, unsigned char *reserved,
            double *score, Py_ssize_t *blob, Py_ssize_t *longest)
{
    Py_ssize_t n = PyList_GET_SIZE(texts), size;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *t = PyList_GET_ITEM(types, i), *s = PyList_GET_ITEM(scores, i);
        if (!PyLong_CheckExact(t) || !PyFloat_CheckExact(s) ||
            !PyUnicode_CheckExact(PyList_GET_ITEM(texts, i))) {
            PyErr_SetString(PyExc_TypeError, "spm_words: texts str, scores float, types int");
            return -1;
        }
        int overflow;
        long type = PyLong_AsLongAndOverflow(t, &overflow);
        reserved[i] = !overflow && SPM_RESERVED(type);
        score[i] = PyFloat_AS_DOUBLE(s);
        if ((size = utf8_size(PyList_GET_ITEM(texts, i))) < 0) {
            PyErr_SetString(PyExc_TypeError, "spm_words: a text is no valid UTF-8");
            return -1;
        }
        if (size > *longest)
            *longest = size;
        if (size == 0) {
            PyErr_Format(PyExc_ValueError, "piece %zd is empty", i);
            return -1;
        }
        if (size > INLINE)
            *blob += size;
    }
    return 0;
}

/* Every text -> its ID (a ValueError for one spelled twice), every merged-into piece's rank;
 * 1 if some such score is NaN (no rank: the caller's heap path), 0 if done, -1 on error.
 * The map holds n entries and the texts' bytes (spm_columns counted them). */
static int spm_ranks(SpmWords *self, Py_ssize_t n, const unsigned char *reserved,
                     const double *score);

static int
spm_fill(SpmWords *self, PyObject *texts, const unsigned char *reserved, const double *score,
         unsigned char *scratch)
{
    Py_ssize_t n = PyList_GET_SIZE(texts);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *text = PyList_GET_ITEM(texts, i);
        const unsigned char *data = scratch;
        Py_ssize_t size = PyUnicode_GET_LENGTH(text);
        if (PyUnicode_IS_ASCII(text))
            data = PyUnicode_DATA(text);
        else /* (checked by spm_columns: no lone surrogate, at most `longest` bytes) */
            size = utf8_write(text, scratch);
        long long first = bytemap_add_new(&self->map, data, size, i);
        if (first >= 0) {
            PyErr_Format(PyExc_ValueError, "piece %R is defined twice (IDs %lld and %zd)", text,
                         first, i);
            return -1;
        }
    }
    return spm_ranks(self, n, reserved, score);
}

/* Every merged-into piece's rank (entries i = IDs 0..n-1 in the map); 1 if some such score
 * is NaN (no rank: the caller's heap path), 0 if done, -1 on error. */
static int
spm_ranks(SpmWords *self, Py_ssize_t n, const unsigned char *reserved, const double *score)
{
    Py_ssize_t m = 0;
    int single = 1; /* every score a float32, as a parsed file's are */
    for (Py_ssize_t i = 0; i < n; i++)
        if (!reserved[i]) {
            if (score[i] != score[i])
                return 1;
            single = single && (double)(float)score[i] == score[i];
        }
    if (single) {
        /* subtle: a rank need not be the place among the distinct scores, only order the
         * pieces as it does (bpe_loop compares ranks, never reads them): a float32's bits
         * as an unsigned key, sign flipped, are in its order, so no sort is needed */
        for (Py_ssize_t i = 0; i < n; i++)
            if (!reserved[i]) {
                float f = score[i] == 0.0 ? 0.0f : (float)score[i]; /* (-0.0 is 0.0) */
                uint32_t u;
                memcpy(&u, &f, sizeof u);
                uint32_t ascending = u & 0x80000000u ? ~u : u | 0x80000000u;
                self->map.entries[i].value = (long long)(0xFFFFFFFFu - ascending);
            }
        return 0;
    }
    Scored *best = PyMem_Malloc(sizeof(Scored) * (size_t)(n ? n : 1));
    if (best == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    int ordered = 1; /* (a trained model's scores mostly fall with the ID: often no sort) */
    for (Py_ssize_t i = 0; i < n; i++)
        if (!reserved[i]) {
            ordered = ordered && (m == 0 || best[m - 1].score >= score[i]);
            best[m].score = score[i];
            best[m++].id = i;
        }
    if (!ordered)
        qsort(best, (size_t)m, sizeof(Scored), compare_desc);
    /* (entries were added in ID order, one per text; 0.0 == -0.0, as in a set) */
    long long rank = -1;
    for (Py_ssize_t k = 0; k < m; k++) {
        rank += k == 0 || best[k - 1].score != best[k].score;
        self->map.entries[best[k].id].value = rank;
    }
    PyMem_Free(best);
    return 0;
}

/* byte_ids[b]: the ID of <0xBB> if that is a reserved piece, else unk (byte fallback). */
static void
spm_byte_ids(SpmWords *self, const unsigned char *reserved)
{
    for (int b = 0; self->byte_fallback && b < 256; b++) {
        char name[8];
        snprintf(name, sizeof name, "<0x%02X>", b);
        const ByteEntry *entry = bytemap_find(&self->map, (const unsigned char *)name, 6);
        int is_reserved = entry != NULL && entry->id >= 0 && reserved[entry->id];
        self->byte_ids[b] = is_reserved ? entry->id : self->unk;
    }
}

/* A new SpmWords with unk, byte_fallback and user_first set, its map ready for n pieces
 * whose texts beyond INLINE take blob bytes; NULL on error. */
static SpmWords *
spm_new(long long unk, int byte_fallback, PyObject *user_first, Py_ssize_t n, Py_ssize_t blob)
{
    SpmWords *self = (SpmWords *)SpmWordsType.tp_alloc(&SpmWordsType, 0);
    if (self == NULL)
        return NULL;
    self->unk = unk;
    self->byte_fallback = byte_fallback;
    self->n_user_first = PyUnicode_GET_LENGTH(user_first);
    self->user_first = PyUnicode_AsUCS4Copy(user_first);
    if (self->user_first == NULL || bytemap_init(&self->map, n, blob) < 0) {
        Py_DECREF(self);
        return NULL;
    }
    qsort(self->user_first, (size_t)self->n_user_first, sizeof(Py_UCS4), compare_ucs4);
    return self;
}

PyDoc_STRVAR(spm_words_doc,
"spm_words(texts, scores, types, /, *, unk, byte_fallback, user_first)\n--\n\n"
"SpmWords(merge_rank, vocab, unk=unk, byte_ids=..., user_first=user_first) as built from\n"
"core.pipeline.sentencepiece.tables.piece_tables' dicts, straight from a SentencePiece\n"
"model's piece columns by ID (texts: list[str], scores: list[float], types: list[int]):\n"
"each text's ID, each piece that may be merged into (a type other than UNKNOWN 2,\n"
"CONTROL 3, BYTE 6) ranked by the place of its score among their distinct scores, best\n"
"first; byte_ids[b] is the ID of <0xBB> if that is a reserved piece, else unk (when\n"
"byte_fallback). None when one of those scores is NaN. ValueError when a text is empty or\n"
"spelled twice; TypeError for other item types or a text with a lone surrogate.");

static PyObject *
spm_words(PyObject *module, PyObject *args, PyObject *kwargs)
{
    static char *names[] = {"texts", "scores", "types", "unk", "byte_fallback", "user_first",
                            NULL};
    PyObject *texts, *scores, *types, *user_first;
    long long unk;
    int byte_fallback;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O!O!O!$LpU:spm_words", names, &PyList_Type,
                                     &texts, &PyList_Type, &scores, &PyList_Type, &types, &unk,
                                     &byte_fallback, &user_first))
        return NULL;
    Py_ssize_t n = PyList_GET_SIZE(texts), blob = 0, longest = 0;
    if (PyList_GET_SIZE(scores) != n || PyList_GET_SIZE(types) != n) {
        PyErr_SetString(PyExc_TypeError, "spm_words: columns of different lengths");
        return NULL;
    }
    unsigned char *reserved = PyMem_Malloc((size_t)(n ? n : 1));
    double *score = PyMem_Malloc(sizeof(double) * (size_t)(n ? n : 1));
    unsigned char *scratch = NULL;
    SpmWords *self = NULL;
    PyObject *out = NULL;
    if (reserved == NULL || score == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    if (spm_columns(texts, scores, types, reserved, score, &blob, &longest) < 0)
        goto done;
    if ((scratch = PyMem_Malloc((size_t)longest + 1)) == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    if ((self = spm_new(unk, byte_fallback, user_first, n, blob)) == NULL)
        goto done;
    int nan = spm_fill(self, texts, reserved, score, scratch);
    if (nan < 0)
        goto done;
    if (nan) {
        out = Py_NewRef(Py_None);
        goto done;
    }
    spm_byte_ids(self, reserved);
    out = Py_NewRef((PyObject *)self);
done:
    Py_XDECREF(self);
    PyMem_Free(reserved);
    PyMem_Free(score);
    PyMem_Free(scratch);
    return out;
}


PyDoc_STRVAR(spm_words_raw_doc,
"spm_words_raw(buf, spans, scores, types, /, *, unk, byte_fallback, user_first)\n--\n\n"
"spm_words(texts, scores, types, ...) from packed columns (tokplay_native.spm.columns'):\n"
"the texts as spans (native int64 start, length pairs) of UTF-8 in buf, scores as native\n"
"doubles, types as one byte each. No str is made. The same answers and errors; a span\n"
"outside buf or columns of different lengths are a ValueError.");

static PyObject *
spm_words_raw(PyObject *module, PyObject *args, PyObject *kwargs)
{
    static char *names[] = {"buf", "spans", "scores", "types", "unk", "byte_fallback",
                            "user_first", NULL};
    Py_buffer buf, spans, scores, types;
    PyObject *user_first, *out = NULL;
    long long unk;
    int byte_fallback;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "y*y*y*y*$LpU:spm_words_raw", names, &buf,
                                     &spans, &scores, &types, &unk, &byte_fallback, &user_first))
        return NULL;
    SpmWords *self = NULL;
    Py_ssize_t n = types.len, blob = 0;
    const unsigned char *data = (const unsigned char *)buf.buf, *code = types.buf;
    const int64_t *span = spans.buf;
    const double *score = scores.buf;
    int64_t *span_copy = NULL;
    double *score_copy = NULL;
    uint64_t *hashes = NULL;
    unsigned char *reserved = PyMem_Malloc((size_t)(n ? n : 1));
    if (reserved == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    if (spans.len != n * (Py_ssize_t)(2 * sizeof(int64_t)) ||
        scores.len != n * (Py_ssize_t)sizeof(double)) {
        PyErr_SetString(PyExc_ValueError, "spm_words_raw: columns of different lengths");
        goto done;
    }
    /* (read in place: a bytes object's items are aligned; another buffer's may not be) */
    if ((uintptr_t)spans.buf % sizeof(int64_t)) {
        if ((span_copy = PyMem_Malloc((size_t)spans.len + 1)) == NULL) {
            PyErr_NoMemory();
            goto done;
        }
        span = memcpy(span_copy, spans.buf, (size_t)spans.len);
    }
    if ((uintptr_t)scores.buf % sizeof(double)) {
        if ((score_copy = PyMem_Malloc((size_t)scores.len + 1)) == NULL) {
            PyErr_NoMemory();
            goto done;
        }
        score = memcpy(score_copy, scores.buf, (size_t)scores.len);
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        int64_t at = span[2 * i], size = span[2 * i + 1];
        if (at < 0 || size < 0 || at > buf.len || size > buf.len - at) {
            PyErr_Format(PyExc_ValueError, "spm_words_raw: span %zd is outside buf", i);
            goto done;
        }
        if (size == 0) {
            PyErr_Format(PyExc_ValueError, "piece %zd is empty", i);
            goto done;
        }
        if (size > INLINE)
            blob += (Py_ssize_t)size;
        reserved[i] = SPM_RESERVED(code[i]);
    }
    if ((self = spm_new(unk, byte_fallback, user_first, n, blob)) == NULL)
        goto done;
    /* every hash first, then the inserts, each slot fetched a few inserts ahead: the
     * slots are read at random, and waiting on each was most of the build */
    if ((hashes = PyMem_Malloc(sizeof(uint64_t) * (size_t)(n ? n : 1))) == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++)
        hashes[i] = hash_bytes(data + span[2 * i], (Py_ssize_t)span[2 * i + 1]);
    for (Py_ssize_t i = 0; i < n; i++) {
        const unsigned char *text = data + span[2 * i];
        if (i + PREFETCH_AHEAD < n)
            PREFETCH(&self->map.slots[(Py_ssize_t)hashes[i + PREFETCH_AHEAD] & self->map.mask]);
        long long first = bytemap_add_hashed(&self->map, text, (Py_ssize_t)span[2 * i + 1],
                                             hashes[i], i);
        if (first >= 0) {
            PyObject *shown = PyUnicode_DecodeUTF8((const char *)text,
                                                   (Py_ssize_t)span[2 * i + 1], "replace");
            if (shown != NULL) {
                PyErr_Format(PyExc_ValueError, "piece %R is defined twice (IDs %lld and %zd)",
                             shown, first, i);
                Py_DECREF(shown);
            }
            goto done;
        }
    }
    int nan = spm_ranks(self, n, reserved, score);
    if (nan < 0)
        goto done;
    if (nan) {
        out = Py_NewRef(Py_None);
        goto done;
    }
    spm_byte_ids(self, reserved);
    out = Py_NewRef((PyObject *)self);
done:
    Py_XDECREF(self);
    PyMem_Free(reserved);
    PyMem_Free(span_copy);
    PyMem_Free(score_copy);
    PyMem_Free(hashes);
    PyBuffer_Release(&buf);
    PyBuffer_Release(&spans);
    PyBuffer_Release(&scores);
    PyBuffer_Release(&types);
    return out;
}

/* ---- encode_words: a pre-token cache's look-ups and misses, in one loop --------------- */

PyDoc_STRVAR(encode_words_doc,
"encode_words(pretokens, cache, table, compute, maxkey, maxsize, out, /)\n--\n\n"
"out += cache[p] for each pre-token p, as core.engine.text_encoder.PretokenCache does: a hit is\n"
"the cached tuple; a miss is table.encode(p's UTF-8) (a RankTable or PairTable), the\n"
"word's IDs (an SpmWords), or\n"
"compute(p) for a pre-token the table does not take (a lone surrogate, over 256 bytes),\n"
"kept when len(p) <= maxkey (the cache is cleared first when it holds maxsize).");

static PyObject *
encode_words(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 7 || !PyList_CheckExact(args[0]) || !PyDict_Check(args[1]) ||
        !PyList_CheckExact(args[6]) ||
        !(PyObject_TypeCheck(args[2], &RankTableType) ||
          PyObject_TypeCheck(args[2], &PairTableType) ||
          PyObject_TypeCheck(args[2], &SpmWordsType))) {
        PyErr_SetString(PyExc_TypeError,
                        "encode_words(pretokens: list, cache: dict, table, compute, maxkey, "
                        "maxsize, out: list)");
        return NULL;
    }
    PyObject *words = args[0], *cache = args[1], *table = args[2], *compute = args[3];
    PyObject *out = args[6];
    Py_ssize_t maxkey = PyLong_AsSsize_t(args[4]);
    if (maxkey == -1 && PyErr_Occurred())
        return NULL;
    Py_ssize_t maxsize = PyLong_AsSsize_t(args[5]);
    if (maxsize == -1 && PyErr_Occurred())
        return NULL;
    int by_rank = PyObject_TypeCheck(table, &RankTableType);
    int spm = PyObject_TypeCheck(table, &SpmWordsType);
    for (Py_ssize_t k = 0; k < PyList_GET_SIZE(words); k++) {
        PyObject *word = PyList_GET_ITEM(words, k);
        PyObject *ids = PyDict_GetItemWithError(cache, word); /* borrowed */
        if (ids != NULL)
            Py_INCREF(ids);
        else if (PyErr_Occurred())
            return NULL;
        else {
            unsigned char buf[1024];
            const unsigned char *data = NULL;
            Py_ssize_t size = -1;
            if (spm) {
                ids = PyUnicode_CheckExact(word) ? spm_word((SpmWords *)table, word, 1) : NULL;
                if (ids == NULL && PyErr_Occurred())
                    return NULL;
            }
            else if (PyUnicode_CheckExact(word) && PyUnicode_GET_LENGTH(word) <= 256)
                /* NULL for a lone surrogate: compute() knows what to do (and a longer word
                 * is over the tables' 256 bytes) */
                data = word_utf8(word, buf, &size);
            if (spm) {
                if (ids == NULL)
                    ids = PyObject_CallOneArg(compute, word);
            }
            else if (data != NULL && size <= 256)
                ids = by_rank ? rank_encode((RankTable *)table, data, size)
                              : pair_encode((PairTable *)table, data, size);
            else
                ids = PyObject_CallOneArg(compute, word);
            if (ids == NULL)
                return NULL;
            if (PyUnicode_Check(word) && PyUnicode_GET_LENGTH(word) <= maxkey) {
                if (PyDict_GET_SIZE(cache) >= maxsize)
                    PyDict_Clear(cache);
                if (PyDict_SetItem(cache, word, ids) < 0) {
                    Py_DECREF(ids);
                    return NULL;
                }
            }
        }
        /* out += ids */
        PyObject *grown = PySequence_InPlaceConcat(out, ids);
        Py_DECREF(ids);
        if (grown == NULL)
            return NULL;
        Py_DECREF(grown);
    }
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"merge_joined", (PyCFunction)(void (*)(void))merge_joined, METH_FASTCALL, merge_joined_doc},
    {"merge_made", (PyCFunction)(void (*)(void))merge_made, METH_FASTCALL, merge_made_doc},
    {"encode_words", (PyCFunction)(void (*)(void))encode_words, METH_FASTCALL, encode_words_doc},
    {"spm_words", (PyCFunction)(void (*)(void))spm_words, METH_VARARGS | METH_KEYWORDS,
     spm_words_doc},
    {"spm_words_raw", (PyCFunction)(void (*)(void))spm_words_raw, METH_VARARGS | METH_KEYWORDS,
     spm_words_raw_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "tokplay_native.bpe",
    "The BPE merge loop in C: twins of core.engine.bpe.merge's hot paths (see bpe.c).", -1, methods,
};

PyMODINIT_FUNC
PyInit_bpe(void)
{
    if (PyType_Ready(&RankTableType) < 0 || PyType_Ready(&PairTableType) < 0 ||
        PyType_Ready(&SpmWordsType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
    if (PyModule_AddIntConstant(m, "NO_MERGE", NO_MERGE) < 0 ||
        PyModule_AddObjectRef(m, "RankTable", (PyObject *)&RankTableType) < 0 ||
        PyModule_AddObjectRef(m, "PairTable", (PyObject *)&PairTableType) < 0 ||
        PyModule_AddObjectRef(m, "SpmWords", (PyObject *)&SpmWordsType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
