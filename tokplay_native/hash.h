/* What the compiled helpers share, included by each (a header: every helper is its own
 * extension module, so none can call another's functions). */
#ifndef TOKPLAY_NATIVE_HASH_H
#define TOKPLAY_NATIVE_HASH_H

#include <Python.h>
#include <stdint.h>
#include <string.h>

/* A fast hash of a short byte string (words and tokens are a few to a few dozen bytes). */
static inline uint64_t
hash_bytes(const unsigned char *s, Py_ssize_t n)
{
    uint64_t h = 0x9E3779B97F4A7C15ULL ^ (uint64_t)n;
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, s, 8);
        h = (h ^ w) * 0xBF58476D1CE4E5B9ULL;
        h ^= h >> 31;
        s += 8;
        n -= 8;
    }
    /* the last 0-7 bytes as one word, read without a byte loop into memory (which the
     * word's load then waits for): two 4-byte reads that may overlap, or three bytes */
    uint64_t w = 0;
    if (n >= 4) {
        uint32_t lo, hi;
        memcpy(&lo, s, 4);
        memcpy(&hi, s + n - 4, 4);
        w = (uint64_t)hi << 32 | lo;
    }
    else if (n > 0)
        w = (uint64_t)s[0] << 16 | (uint64_t)s[n >> 1] << 8 | s[n - 1];
    h = (h ^ w) * 0x94D049BB133111EBULL;
    h ^= h >> 29;
    return h;
}

/* Room for `need` items of `size` bytes in *buf (capacity *cap, doubled from `first`);
 * -1 when it cannot be had (overflow or no memory), *buf then unchanged. */
static inline int
reserve_items(void **buf, size_t *cap, size_t need, size_t size, size_t first)
{
    if (need <= *cap)
        return 0;
    size_t n = *cap ? *cap : first;
    while (n < need) {
        if (n > SIZE_MAX / 2 / size)
            return -1;
        n *= 2;
    }
    void *p = PyMem_Realloc(*buf, n * size);
    if (p == NULL)
        return -1;
    *buf = p;
    *cap = n;
    return 0;
}

#endif
