/*
 * exporters._csvrow: one CSV record as UTF-8 bytes, the same bytes Python's csv module writes for the
 * "excel" dialect (QUOTE_MINIMAL, doublequote, "\r\n") with a given delimiter.
 *
 * Why C: the csv module walks every character of every field one code point at a time; for tweets
 * (about 900 characters over 84 columns) that costs more than parsing the JSON. Here a field is
 * scanned once as UTF-8 (bytes below 0x80 are never part of a multi-byte sequence, so the special
 * characters are found bytewise) and copied with memcpy; str objects are encoded straight from their
 * code points and ints up to 64 bits written digit by digit, so no temporary objects are made.
 * tests/test_csvrow.py checks it against the csv module on generated rows; exporters/writers.py falls
 * back to the csv module without it.
 */
#include "_outbuf.h"

/* Append one field: quoted when it holds the delimiter, a quote or a line break; quotes doubled.
 * memchr (vectorised in the C library) finds them faster than a loop over the bytes. */
static int append_field(Out *out, const char *s, Py_ssize_t n, char delimiter)
{
    int quote = 0;
    Py_ssize_t quotes = 0;
    if (n < 16) { /* short fields (ids, dates, words): a plain loop beats four memchr calls */
        for (Py_ssize_t i = 0; i < n; i++) {
            char c = s[i];
            if (c == '"') {
                quote = 1;
                quotes++;
            }
            else if (c == delimiter || c == '\r' || c == '\n')
                quote = 1;
        }
    }
    else {
        const char *quote_at = memchr(s, '"', n);
        quote = quote_at != NULL || memchr(s, delimiter, n) != NULL || memchr(s, '\n', n) != NULL
                || memchr(s, '\r', n) != NULL;
        for (const char *q = quote_at; q != NULL; q = memchr(q + 1, '"', n - (q + 1 - s)))
            quotes++;
    }
    if (out_grow(out, n + quotes + 2) < 0)
        return -1;
    char *d = out->buf + out->len;
    if (!quote) {
        memcpy(d, s, n);
        out->len += n;
        return 0;
    }
    *d++ = '"';
    if (quotes == 0) {
        memcpy(d, s, n);
        d += n;
    }
    else {
        for (Py_ssize_t i = 0; i < n; i++) {
            if (s[i] == '"')
                *d++ = '"';
            *d++ = s[i];
        }
    }
    *d++ = '"';
    out->len = d - out->buf;
    return 0;
}

/* A str as UTF-8 into `scratch`, straight from its code points (no cached copy on the str object).
 * Returns -1 with no exception set for a lone surrogate: the caller lets Python raise the error. */
static int utf8_of(Out *scratch, PyObject *text)
{
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    scratch->len = 0;
    if (out_grow(scratch, n * 4) < 0)
        return -2;
    unsigned char *d = (unsigned char *)scratch->buf;
    if (kind == PyUnicode_1BYTE_KIND) { /* Latin-1: one or two bytes each */
        const Py_UCS1 *chars = data;
        for (Py_ssize_t i = 0; i < n; i++) {
            Py_UCS1 c = chars[i];
            if (c < 0x80)
                *d++ = c;
            else {
                *d++ = 0xc0 | (c >> 6);
                *d++ = 0x80 | (c & 0x3f);
            }
        }
    }
    else {
        for (Py_ssize_t i = 0; i < n; i++) {
            Py_UCS4 c = kind == PyUnicode_2BYTE_KIND ? ((const Py_UCS2 *)data)[i] : ((const Py_UCS4 *)data)[i];
            if (c < 0x80)
                *d++ = (unsigned char)c;
            else if (c < 0x800) {
                *d++ = 0xc0 | (c >> 6);
                *d++ = 0x80 | (c & 0x3f);
            }
            else if (c < 0x10000) {
                if (c >= 0xd800 && c <= 0xdfff)
                    return -1;
                *d++ = 0xe0 | (c >> 12);
                *d++ = 0x80 | ((c >> 6) & 0x3f);
                *d++ = 0x80 | (c & 0x3f);
            }
            else {
                *d++ = 0xf0 | (c >> 18);
                *d++ = 0x80 | ((c >> 12) & 0x3f);
                *d++ = 0x80 | ((c >> 6) & 0x3f);
                *d++ = 0x80 | (c & 0x3f);
            }
        }
    }
    scratch->len = (char *)d - scratch->buf;
    return 0;
}

static int append_text(Out *out, Out *scratch, PyObject *text, char delimiter)
{
    if (PyUnicode_IS_ASCII(text))
        return append_field(out, (const char *)PyUnicode_DATA(text), PyUnicode_GET_LENGTH(text), delimiter);
    int status = utf8_of(scratch, text);
    if (status == -1) {
        /* not UTF-8 (a lone surrogate): Python raises the UnicodeEncodeError that says where */
        Py_ssize_t size;
        if (PyUnicode_AsUTF8AndSize(text, &size) != NULL)
            PyErr_SetString(PyExc_UnicodeEncodeError, "surrogates not allowed");
        return -1;
    }
    if (status < 0)
        return -1;
    return append_field(out, scratch->buf, scratch->len, delimiter);
}

/* An int that fits in 64 bits, in decimal (what str() writes); 1 if it does not fit. */
static int append_int(Out *out, PyObject *number)
{
    int overflow = 0;
    long long value = PyLong_AsLongLongAndOverflow(number, &overflow);
    if (overflow)
        return 1;
    if (value == -1 && PyErr_Occurred())
        return -1;
    /* digits from the right; the magnitude as unsigned, so the most negative value does not overflow */
    char digits[24];
    char *end = digits + sizeof digits, *d = end;
    unsigned long long magnitude = value < 0 ? 0ULL - (unsigned long long)value : (unsigned long long)value;
    do {
        *--d = (char)('0' + magnitude % 10);
        magnitude /= 10;
    } while (magnitude);
    if (value < 0)
        *--d = '-';
    if (out_grow(out, end - d) < 0)
        return -1;
    memcpy(out->buf + out->len, d, end - d);
    out->len += end - d;
    return 0;
}

static PyObject *encode_row(PyObject *module, PyObject *args)
{
    PyObject *row;
    int delimiter = ',';
    if (!PyArg_ParseTuple(args, "O|C:encode_row", &row, &delimiter))
        return NULL;
    if (delimiter > 0x7f || delimiter == '"' || delimiter == '\r' || delimiter == '\n') {
        PyErr_SetString(PyExc_ValueError, "delimiter must be an ASCII character other than a quote or line break");
        return NULL;
    }
    PyObject *seq = PySequence_Fast(row, "a row must be a sequence");
    if (seq == NULL)
        return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    PyObject **fields = PySequence_Fast_ITEMS(seq);
    Out out = {NULL, 0, 0}, scratch = {NULL, 0, 0};
    PyObject *result = NULL;
    if (out_grow(&out, 4096) < 0)
        goto done;

    for (Py_ssize_t i = 0; i < n; i++) {
        if (i > 0) {
            if (out_grow(&out, 1) < 0)
                goto done;
            out.buf[out.len++] = (char)delimiter;
        }
        PyObject *field = fields[i];
        if (field == Py_None)
            continue; /* as the csv module: an empty field */
        if (PyUnicode_Check(field)) {
            if (append_text(&out, &scratch, field, (char)delimiter) < 0)
                goto done;
            continue;
        }
        if (field == Py_True || field == Py_False) {
            const char *word = field == Py_True ? "True" : "False";
            if (append_field(&out, word, (Py_ssize_t)strlen(word), (char)delimiter) < 0)
                goto done;
            continue;
        }
        if (PyLong_CheckExact(field)) {
            int status = append_int(&out, field);
            if (status < 0)
                goto done;
            if (status == 0)
                continue;
        }
        PyObject *text = PyObject_Str(field); /* floats, big ints, anything else: as str() writes it */
        if (text == NULL)
            goto done;
        int failed = append_text(&out, &scratch, text, (char)delimiter) < 0;
        Py_DECREF(text);
        if (failed)
            goto done;
    }
    /* A record of one empty field must still be a line with a field in it, as the csv module writes it. */
    if (n == 1 && out.len == 0) {
        if (out_grow(&out, 2) < 0)
            goto done;
        out.buf[out.len++] = '"';
        out.buf[out.len++] = '"';
    }
    if (out_grow(&out, 2) < 0)
        goto done;
    out.buf[out.len++] = '\r';
    out.buf[out.len++] = '\n';
    result = PyBytes_FromStringAndSize(out.buf, out.len);
done:
    PyMem_Free(out.buf);
    PyMem_Free(scratch.buf);
    Py_DECREF(seq);
    return result;
}

static PyMethodDef methods[] = {
    {"encode_row", encode_row, METH_VARARGS,
     "encode_row(row, delimiter=',') -> bytes: one CSV record, UTF-8, ending in \\r\\n."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_csvrow", "CSV records as the csv module writes them, faster.", -1, methods,
};

PyMODINIT_FUNC PyInit__csvrow(void)
{
    return PyModule_Create(&module);
}
