/*
 * A growable byte buffer, shared by swath's C helpers (exporters/_csvrow.c, exporters/_tablerow.c,
 * platforms/twitter/_jsontext.c; setup.py puts exporters/ on their include path). Header-only: each extension
 * stays one optional, self-contained shared object.
 */
#ifndef SWATH_OUTBUF_H
#define SWATH_OUTBUF_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

typedef struct {
    char *buf;
    Py_ssize_t len, cap;
} Out;

/* Room for `extra` more bytes (doubling, from 256); -1 with MemoryError set. */
static inline int out_grow(Out *out, Py_ssize_t extra)
{
    if (out->len + extra <= out->cap)
        return 0;
    Py_ssize_t cap = out->cap ? out->cap : 256;
    while (cap < out->len + extra)
        cap *= 2;
    char *buf = PyMem_Realloc(out->buf, cap);
    if (buf == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    out->buf = buf;
    out->cap = cap;
    return 0;
}

static inline int out_put(Out *out, const char *s, Py_ssize_t n)
{
    if (out_grow(out, n) < 0)
        return -1;
    memcpy(out->buf + out->len, s, n);
    out->len += n;
    return 0;
}

static inline void out_free(Out *out)
{
    PyMem_Free(out->buf);
    out->buf = NULL;
    out->len = out->cap = 0;
}

#endif
