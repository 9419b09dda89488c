/* Gzip members for harvesters/warc_gzip.py: a batch of WARC records, each its own gzip member, compressed by
 * one raw deflate stream in one call that lets go of the GIL once. Python's zlib lets go of it twice a record
 * (compress, then flush), and each time the harvest's fetching thread takes it, so the WARC writer waited to
 * get it back twice a record (issue 35: the OAI-PMH harvest's writer thread). The calls on the stream are the
 * ones warc_gzip.GzipMembers makes (deflate without flushing, then a full flush), so the bytes are the same.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>
#include <zlib.h>

static const unsigned char GZIP_HEADER[10] = {0x1f, 0x8b, 0x08, 0, 0, 0, 0, 0, 0, 0x03};
static const unsigned char LAST_BLOCK[2] = {0x03, 0x00}; /* BFINAL=1, fixed codes, end of block */

typedef struct {
    PyObject_HEAD
    z_stream zs;
    int ready;
} Members;

typedef struct {
    unsigned char *data;
    size_t size, cap;
} Buf;

static int buf_reserve(Buf *b, size_t more) {
    if (b->size + more <= b->cap) return 0;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->size + more) cap *= 2;
    unsigned char *grown = realloc(b->data, cap); /* no GIL: the C allocator, not Python's */
    if (grown == NULL) return -1;
    b->data = grown;
    b->cap = cap;
    return 0;
}

static int buf_put(Buf *b, const void *data, size_t n) {
    if (buf_reserve(b, n) < 0) return -1;
    memcpy(b->data + b->size, data, n);
    b->size += n;
    return 0;
}

/* deflate `flush` over what is in zs, appending everything it makes; Z_OK or a zlib error. */
static int run_deflate(z_stream *zs, Buf *out, int flush) {
    for (;;) {
        if (buf_reserve(out, 16384) < 0) return Z_MEM_ERROR;
        zs->next_out = out->data + out->size;
        zs->avail_out = (uInt)(out->cap - out->size);
        int err = deflate(zs, flush);
        out->size = out->cap - zs->avail_out;
        if (err != Z_OK && err != Z_BUF_ERROR) return err;
        if (zs->avail_in == 0 && zs->avail_out != 0) return Z_OK;
    }
}

static int one_member(z_stream *zs, Buf *out, const unsigned char *data, size_t size) {
    unsigned char trailer[8];
    uLong crc = crc32(0L, Z_NULL, 0);
    size_t done = 0;
    if (buf_put(out, GZIP_HEADER, sizeof GZIP_HEADER) < 0) return Z_MEM_ERROR;
    /* at least one call, an empty record's too: the zlib module's compress(b"") makes it, and the flush after
     * it then writes its sync marker (zlib skips a full flush right after another) */
    do { /* avail_in is 32 bits: a record past 1 GiB goes in pieces */
        uInt piece = (size - done) > 0x40000000u ? 0x40000000u : (uInt)(size - done);
        zs->next_in = (Bytef *)(data + done);
        zs->avail_in = piece;
        int err = run_deflate(zs, out, Z_NO_FLUSH);
        if (err != Z_OK) return err;
        crc = crc32(crc, data + done, piece);
        done += piece;
    } while (done < size);
    zs->next_in = Z_NULL;
    zs->avail_in = 0;
    int err = run_deflate(zs, out, Z_FULL_FLUSH);
    if (err != Z_OK) return err;
    uint32_t c = (uint32_t)crc, n = (uint32_t)(size & 0xFFFFFFFFu);
    for (int i = 0; i < 4; i++) {
        trailer[i] = (unsigned char)(c >> (8 * i));
        trailer[4 + i] = (unsigned char)(n >> (8 * i));
    }
    if (buf_put(out, LAST_BLOCK, sizeof LAST_BLOCK) < 0 || buf_put(out, trailer, sizeof trailer) < 0)
        return Z_MEM_ERROR;
    return Z_OK;
}

static int Members_init(Members *self, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"level", NULL};
    int level = Z_DEFAULT_COMPRESSION;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "|i", kwlist, &level)) return -1;
    if (self->ready) {
        deflateEnd(&self->zs);
        self->ready = 0;
    }
    memset(&self->zs, 0, sizeof self->zs);
    /* what zlib.compressobj(level, DEFLATED, -MAX_WBITS) asks for: memLevel 8, the default strategy */
    if (deflateInit2(&self->zs, level, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
        PyErr_SetString(PyExc_ValueError, "zlib refused the compression settings");
        return -1;
    }
    self->ready = 1;
    return 0;
}

static void Members_dealloc(Members *self) {
    if (self->ready) deflateEnd(&self->zs);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *Members_compress(Members *self, PyObject *records) {
    if (!self->ready) {
        PyErr_SetString(PyExc_RuntimeError, "Members not initialised");
        return NULL;
    }
    PyObject *seq = PySequence_Fast(records, "records must be a sequence of bytes");
    if (seq == NULL) return NULL;
    Py_ssize_t count = PySequence_Fast_GET_SIZE(seq);
    PyObject **items = PySequence_Fast_ITEMS(seq);
    for (Py_ssize_t i = 0; i < count; i++) {
        if (!PyBytes_CheckExact(items[i])) {
            Py_DECREF(seq);
            PyErr_SetString(PyExc_TypeError, "records must be bytes");
            return NULL;
        }
    }
    Buf out = {NULL, 0, 0};
    int err = Z_OK;
    Py_BEGIN_ALLOW_THREADS /* the bytes are immutable and `seq` holds them */
    for (Py_ssize_t i = 0; i < count && err == Z_OK; i++)
        err = one_member(&self->zs, &out, (const unsigned char *)PyBytes_AS_STRING(items[i]),
                         (size_t)PyBytes_GET_SIZE(items[i]));
    Py_END_ALLOW_THREADS
    Py_DECREF(seq);
    if (err != Z_OK) {
        free(out.data);
        if (err == Z_MEM_ERROR) return PyErr_NoMemory();
        return PyErr_Format(PyExc_RuntimeError, "zlib deflate failed (%d)", err);
    }
    PyObject *result = PyBytes_FromStringAndSize((const char *)out.data, (Py_ssize_t)out.size);
    free(out.data);
    return result;
}

static PyMethodDef Members_methods[] = {
    {"compress", (PyCFunction)Members_compress, METH_O,
     "compress(records) -> bytes: each record (bytes) its own gzip member, in order, letting go of the GIL once."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject MembersType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "swath.harvesters._gzmembers.Members",
    .tp_basicsize = sizeof(Members),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Members(level=-1): gzip members, one a record, from one raw deflate stream.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Members_init,
    .tp_dealloc = (destructor)Members_dealloc,
    .tp_methods = Members_methods,
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_gzmembers", NULL, -1, NULL};

PyMODINIT_FUNC PyInit__gzmembers(void) {
    if (PyType_Ready(&MembersType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) return NULL;
    Py_INCREF(&MembersType);
    if (PyModule_AddObject(m, "Members", (PyObject *)&MembersType) < 0) {
        Py_DECREF(&MembersType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
