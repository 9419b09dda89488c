/*
 * swath.platforms.twitter._jsontext: the v2 table's entity columns (#tag, $cash, @user, expanded urls) as the text
 * json.dumps writes for them (ensure_ascii, ", " between items), the same as platforms/twitter/exporter_v2.py's
 * _entity_columns in Python.
 *
 * Why C: every tweet and every author description has a few entity lists; in Python each costs a list
 * comprehension, dict lookups per entity and a call into json's encoder, about 2 us a tweet, a tenth of the
 * export's time per tweet. Here each list is written straight into one ASCII buffer.
 * Only the common shape is handled: a list of objects whose tag/username/url is a string (or a missing or
 * null url). Anything else returns None and the Python code computes every column (it is the reference,
 * and without a C compiler the only code); tests/test_jsontext.py checks both give the same columns.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

typedef struct {
    char *buf;
    Py_ssize_t len, cap;
} Out;

static int grow(Out *out, Py_ssize_t extra)
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

static const char HEX[] = "0123456789abcdef";

static char *put_u(char *p, Py_UCS4 c)
{
    *p++ = '\\';
    *p++ = 'u';
    *p++ = HEX[(c >> 12) & 15];
    *p++ = HEX[(c >> 8) & 15];
    *p++ = HEX[(c >> 4) & 15];
    *p++ = HEX[c & 15];
    return p;
}

/* A string as json's encode_basestring_ascii writes it, after an optional one-character prefix. */
static int put_str(Out *out, char prefix, PyObject *s)
{
    Py_ssize_t n = PyUnicode_GET_LENGTH(s);
    int kind = PyUnicode_KIND(s);
    const void *data = PyUnicode_DATA(s);
    if (grow(out, n * 12 + 3) < 0) /* at most 12 characters a code point: a surrogate pair */
        return -1;
    char *p = out->buf + out->len;
    *p++ = '"';
    if (prefix)
        *p++ = prefix;
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_UCS4 c = PyUnicode_READ(kind, data, i);
        if (c >= ' ' && c <= '~' && c != '"' && c != '\\') {
            *p++ = (char)c;
            continue;
        }
        switch (c) {
        case '"': *p++ = '\\'; *p++ = '"'; break;
        case '\\': *p++ = '\\'; *p++ = '\\'; break;
        case '\n': *p++ = '\\'; *p++ = 'n'; break;
        case '\r': *p++ = '\\'; *p++ = 'r'; break;
        case '\t': *p++ = '\\'; *p++ = 't'; break;
        case '\b': *p++ = '\\'; *p++ = 'b'; break;
        case '\f': *p++ = '\\'; *p++ = 'f'; break;
        default:
            if (c >= 0x10000) {
                Py_UCS4 v = c - 0x10000;
                p = put_u(p, 0xd800 | ((v >> 10) & 0x3ff));
                p = put_u(p, 0xdc00 | (v & 0x3ff));
            } else {
                p = put_u(p, c);
            }
        }
    }
    *p++ = '"';
    out->len = p - out->buf;
    return 0;
}

static int put_ascii(Out *out, const char *s, Py_ssize_t n)
{
    if (grow(out, n) < 0)
        return -1;
    memcpy(out->buf + out->len, s, n);
    out->len += n;
    return 0;
}

enum { HASHTAGS, CASHTAGS, MENTIONS, URLS, OTHER };

static PyObject *k_tag, *k_username, *k_media_key, *k_display_url, *k_expanded_url;

static int kind_of(PyObject *kind)
{
    if (!PyUnicode_CheckExact(kind))
        return OTHER;
    if (PyUnicode_CompareWithASCIIString(kind, "hashtags") == 0)
        return HASHTAGS;
    if (PyUnicode_CompareWithASCIIString(kind, "cashtags") == 0)
        return CASHTAGS;
    if (PyUnicode_CompareWithASCIIString(kind, "mentions") == 0)
        return MENTIONS;
    if (PyUnicode_CompareWithASCIIString(kind, "urls") == 0)
        return URLS;
    return OTHER;
}

/* One kind's column text into `out`: 1 done, 0 a shape left to Python, -1 an error. */
static int column(Out *out, int which, PyObject *values)
{
    if (!PyList_CheckExact(values))
        return 0;
    if (put_ascii(out, "[", 1) < 0)
        return -1;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(values); i++) {
        PyObject *e = PyList_GET_ITEM(values, i);
        if (!PyDict_CheckExact(e))
            return 0;
        if (i && put_ascii(out, ", ", 2) < 0)
            return -1;
        PyObject *key;
        char prefix = 0;
        switch (which) {
        case HASHTAGS: key = k_tag; prefix = '#'; break;
        case CASHTAGS: key = k_tag; prefix = '$'; break;
        case MENTIONS: key = k_username; prefix = '@'; break;
        default: {
            int media = PyDict_Contains(e, k_media_key);
            if (media < 0)
                return -1;
            key = media ? k_display_url : k_expanded_url;
        }
        }
        PyObject *v = PyDict_GetItemWithError(e, key); /* borrowed */
        if (v == NULL && PyErr_Occurred())
            return -1;
        if (prefix) {
            if (v == NULL) {  /* e.get(key, ""): the prefix alone */
                char text[3] = {'"', prefix, '"'};
                if (put_ascii(out, text, 3) < 0)
                    return -1;
                continue;
            }
            if (!PyUnicode_CheckExact(v))
                return 0;
        } else if (v == NULL || v == Py_None) {
            if (put_ascii(out, "null", 4) < 0)
                return -1;
            continue;
        } else if (!PyUnicode_CheckExact(v)) {
            return 0;
        }
        if (put_str(out, prefix, v) < 0)
            return -1;
    }
    return put_ascii(out, "]", 1) < 0 ? -1 : 1;
}

static PyObject *entity_texts(PyObject *module, PyObject *ents)
{
    if (!PyDict_CheckExact(ents))
        Py_RETURN_NONE;
    PyObject *columns = PyDict_New();
    if (columns == NULL)
        return NULL;
    Out out = {NULL, 0, 0};
    Py_ssize_t pos = 0;
    PyObject *kind, *values;
    while (PyDict_Next(ents, &pos, &kind, &values)) {
        int which = kind_of(kind);
        if (which == OTHER)
            continue; /* annotations and the like: json_list in Python */
        if (values == Py_None) {
            if (PyDict_SetItem(columns, kind, Py_None) < 0)
                goto error;
            continue;
        }
        out.len = 0;
        int done = column(&out, which, values);
        if (done < 0)
            goto error;
        if (done == 0) {
            PyMem_Free(out.buf);
            Py_DECREF(columns);
            Py_RETURN_NONE;
        }
        PyObject *text = PyUnicode_New(out.len, 127);
        if (text == NULL)
            goto error;
        memcpy(PyUnicode_DATA(text), out.buf, out.len);
        int failed = PyDict_SetItem(columns, kind, text);
        Py_DECREF(text);
        if (failed < 0)
            goto error;
    }
    PyMem_Free(out.buf);
    return columns;
error:
    PyMem_Free(out.buf);
    Py_DECREF(columns);
    return NULL;
}

static PyMethodDef methods[] = {
    {"entity_texts", entity_texts, METH_O,
     "entity_texts(entities) -> {kind: json text} for hashtags, cashtags, mentions and urls, or None when a "
     "shape is left to the Python code."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_jsontext", "Twitter v2 entity columns as json.dumps writes them, faster.", -1, methods,
};

PyMODINIT_FUNC PyInit__jsontext(void)
{
    k_tag = PyUnicode_InternFromString("tag");
    k_username = PyUnicode_InternFromString("username");
    k_media_key = PyUnicode_InternFromString("media_key");
    k_display_url = PyUnicode_InternFromString("display_url");
    k_expanded_url = PyUnicode_InternFromString("expanded_url");
    if (!k_tag || !k_username || !k_media_key || !k_display_url || !k_expanded_url)
        return NULL;
    return PyModule_Create(&module);
}
