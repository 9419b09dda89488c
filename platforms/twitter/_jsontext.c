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
#include "_outbuf.h"
#include <stddef.h>
#include <structmember.h>

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
    if (out_grow(out, n * 12 + 3) < 0) /* at most 12 characters a code point: a surrogate pair */
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
    if (out_put(out, "[", 1) < 0)
        return -1;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(values); i++) {
        PyObject *e = PyList_GET_ITEM(values, i);
        if (!PyDict_CheckExact(e))
            return 0;
        if (i && out_put(out, ", ", 2) < 0)
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
                if (out_put(out, text, 3) < 0)
                    return -1;
                continue;
            }
            if (!PyUnicode_CheckExact(v))
                return 0;
        } else if (v == NULL || v == Py_None) {
            if (out_put(out, "null", 4) < 0)
                return -1;
            continue;
        } else if (!PyUnicode_CheckExact(v)) {
            return 0;
        }
        if (put_str(out, prefix, v) < 0)
            return -1;
    }
    return out_put(out, "]", 1) < 0 ? -1 : 1;
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


/* ---- json_list: any parsed JSON value as json.dumps writes it (ensure_ascii, ", " and ": ") ---- */

static Out scratch; /* json_list's buffer, kept between calls */
static PyObject *fallback; /* exporter_v2's Python json_list: the shapes put_json leaves (set_fallback) */

#define MAX_DEPTH 64 /* deeper values go to Python, whose encoder has the recursion limit's own rules */

/* 1 written, 0 a value left to Python (nothing useful in `out`), -1 an error. */
static int put_json(Out *out, PyObject *v, int depth)
{
    if (v == Py_None)
        return out_put(out, "null", 4) < 0 ? -1 : 1;
    if (v == Py_True)
        return out_put(out, "true", 4) < 0 ? -1 : 1;
    if (v == Py_False)
        return out_put(out, "false", 5) < 0 ? -1 : 1;
    if (PyUnicode_CheckExact(v))
        return put_str(out, 0, v) < 0 ? -1 : 1;
    if (PyLong_CheckExact(v) || PyFloat_CheckExact(v)) {
        if (PyFloat_CheckExact(v)) {
            double d = PyFloat_AS_DOUBLE(v);
            if (Py_IS_NAN(d))
                return out_put(out, "NaN", 3) < 0 ? -1 : 1;
            if (Py_IS_INFINITY(d))
                return (d > 0 ? out_put(out, "Infinity", 8) : out_put(out, "-Infinity", 9)) < 0 ? -1 : 1;
        }
        PyObject *text = PyObject_Repr(v); /* json's int.__repr__ / float.__repr__ */
        if (text == NULL)
            return 0; /* e.g. an int past the digit limit: Python raises its own error */
        Py_ssize_t n;
        const char *s = PyUnicode_AsUTF8AndSize(text, &n);
        int status = s == NULL ? -1 : out_put(out, s, n) < 0 ? -1 : 1;
        Py_DECREF(text);
        return status;
    }
    if (depth >= MAX_DEPTH)
        return 0;
    if (PyList_CheckExact(v)) {
        if (out_put(out, "[", 1) < 0)
            return -1;
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(v); i++) {
            if (i && out_put(out, ", ", 2) < 0)
                return -1;
            int status = put_json(out, PyList_GET_ITEM(v, i), depth + 1);
            if (status <= 0)
                return status;
        }
        return out_put(out, "]", 1) < 0 ? -1 : 1;
    }
    if (PyDict_CheckExact(v)) {
        if (out_put(out, "{", 1) < 0)
            return -1;
        Py_ssize_t pos = 0, i = 0;
        PyObject *key, *value;
        while (PyDict_Next(v, &pos, &key, &value)) {
            if (!PyUnicode_CheckExact(key))
                return 0; /* json.dumps turns numbers, booleans and None into keys: Python does it */
            if (i++ && out_put(out, ", ", 2) < 0)
                return -1;
            if (put_str(out, 0, key) < 0 || out_put(out, ": ", 2) < 0)
                return -1;
            int status = put_json(out, value, depth + 1);
            if (status <= 0)
                return status;
        }
        return out_put(out, "}", 1) < 0 ? -1 : 1;
    }
    return 0; /* tuples, subclasses, anything else: Python's json */
}

static PyObject *ascii_text(Out *out)
{
    PyObject *text = PyUnicode_New(out->len, 127);
    if (text != NULL)
        memcpy(PyUnicode_DATA(text), out->buf, out->len);
    return text;
}

static PyObject *json_list(PyObject *module, PyObject *value)
{
    if (value == Py_None)
        Py_RETURN_NONE;
    scratch.len = 0; /* put_json runs no Python code: the GIL keeps this buffer ours until we return */
    int status = put_json(&scratch, value, 0);
    PyObject *text = status > 0 ? ascii_text(&scratch) : NULL;
    if (scratch.cap > (1 << 20))
        out_free(&scratch); /* one huge value does not pin its buffer */
    if (status > 0 || (status < 0 && PyErr_ExceptionMatches(PyExc_MemoryError)))
        return text;
    PyErr_Clear();
    if (fallback == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "_jsontext.set_fallbacks was not called");
        return NULL;
    }
    return PyObject_CallOneArg(fallback, value); /* the reference decides: its text or its error */
}



/* ---- prepare: exporter_v2's _Prepared (the values several columns share) for the common shapes ---- */

static PyObject *entity_columns_py; /* exporter_v2._entity_columns: the shapes entity_texts leaves */
static PyObject *prepared_py;       /* exporter_v2._Prepared: every shape prepare leaves */
static PyObject *none_dict;         /* exporter_v2._NONE's stand-in: an empty dict nothing writes to */
static PyObject *s_item, *s_built, *s_context, *s_scratch, *s_get, *s_users, *s_tweets, *s_polls, *s_places, *s_referenced,
    *s_type, *s_id, *s_author_id, *s_entities, *s_description, *s_url, *s_urls, *s_attachments, *s_poll_ids, *s_geo,
    *s_place_id, *s_retweeted;

typedef struct {
    PyObject_HEAD
    PyObject *refs, *merged, *author, *poll, *place, *inc, *ref_author, *ref_username, *ents, *author_ents,
        *author_urls, *author_url;
} Prepared;

#define MEMBER(name) {#name, T_OBJECT_EX, offsetof(Prepared, name), READONLY, NULL}
static PyMemberDef prepared_members[] = {
    MEMBER(refs), MEMBER(merged), MEMBER(author), MEMBER(poll), MEMBER(place), MEMBER(inc), MEMBER(ref_author),
    MEMBER(ref_username), MEMBER(ents), MEMBER(author_ents), MEMBER(author_urls), MEMBER(author_url), {NULL},
};

static void prepared_dealloc(Prepared *p)
{
    Py_XDECREF(p->refs);
    Py_XDECREF(p->merged);
    Py_XDECREF(p->author);
    Py_XDECREF(p->poll);
    Py_XDECREF(p->place);
    Py_XDECREF(p->inc);
    Py_XDECREF(p->ref_author);
    Py_XDECREF(p->ref_username);
    Py_XDECREF(p->ents);
    Py_XDECREF(p->author_ents);
    Py_XDECREF(p->author_urls);
    Py_XDECREF(p->author_url);
    Py_TYPE(p)->tp_free((PyObject *)p);
}

static PyTypeObject PreparedType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "swath.platforms.twitter._jsontext.Prepared",
    .tp_basicsize = sizeof(Prepared),
    .tp_dealloc = (destructor)prepared_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "exporter_v2._Prepared's values, made by prepare().",
    .tp_members = prepared_members,
};

/* d.get(key) as a new reference (None if absent); d must be a dict. */
static PyObject *get(PyObject *d, PyObject *key)
{
    PyObject *v = PyDict_GetItemWithError(d, key);
    if (v == NULL && PyErr_Occurred())
        return NULL;
    return Py_NewRef(v ? v : Py_None);
}

/* The value at d[key] if it is a dict, else the shared empty one (items.obj), borrowed. */
static PyObject *obj_at(PyObject *d, PyObject *key)
{
    PyObject *v = PyDict_GetItemWithError(d, key);
    return v != NULL && PyDict_CheckExact(v) ? v : none_dict;
}

/* A list of only dicts (what items.objs returns as it is) or NULL for any other shape, borrowed. */
static PyObject *plain_objs(PyObject *v)
{
    if (v == NULL || !PyList_CheckExact(v))
        return NULL;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(v); i++)
        if (!PyDict_CheckExact(PyList_GET_ITEM(v, i)))
            return NULL;
    return v;
}

/* _entity_columns(ents): the common shapes here, the rest by the Python function. */
static PyObject *entity_columns(PyObject *ents)
{
    if (!PyDict_CheckExact(ents) || PyDict_GET_SIZE(ents) == 0)
        return Py_NewRef(none_dict);
    PyObject *texts = entity_texts(NULL, ents);
    if (texts == NULL)
        return NULL;
    if (texts == Py_None) {
        Py_DECREF(texts);
        return PyObject_CallOneArg(entity_columns_py, ents);
    }
    if (PyDict_GET_SIZE(texts) < PyDict_GET_SIZE(ents)) { /* kinds it does not shorten (annotations): json_list */
        Py_ssize_t pos = 0;
        PyObject *kind, *values;
        while (PyDict_Next(ents, &pos, &kind, &values)) {
            int has = PyDict_Contains(texts, kind);
            if (has < 0)
                goto error;
            if (has)
                continue;
            PyObject *text = json_list(NULL, values);
            if (text == NULL || PyDict_SetItem(texts, kind, text) < 0) {
                Py_XDECREF(text);
                goto error;
            }
            Py_DECREF(text);
        }
    }
    return texts;
error:
    Py_DECREF(texts);
    return NULL;
}

/* inc.get(name): one of the page's lookups (built by Includes on first use). */
static PyObject *lookup(PyObject *inc, PyObject *name)
{
    PyObject *built = PyObject_GetAttr(inc, s_built); /* Includes' slot of the lookups built so far */
    if (built == NULL)
        return NULL;
    PyObject *d = PyDict_CheckExact(built) ? PyDict_GetItemWithError(built, name) : NULL;
    Py_DECREF(built); /* the Includes still holds it, and d */
    if (d != NULL && PyDict_CheckExact(d))
        return Py_NewRef(d);
    if (PyErr_Occurred())
        return NULL;
    d = PyObject_CallMethodOneArg(inc, s_get, name);
    if (d != NULL && !PyDict_CheckExact(d)) {
        Py_DECREF(d);
        PyErr_SetString(PyExc_TypeError, "Includes.get gave no dict");
        return NULL;
    }
    return d;
}

/* table[key] or {} for a str key, else {} (`inc.users.get(key) or _NONE if type(key) is str else _NONE`). */
static PyObject *find(PyObject *inc, PyObject *name, PyObject *key)
{
    if (key == NULL || !PyUnicode_CheckExact(key))
        return Py_NewRef(none_dict);
    PyObject *table = lookup(inc, name);
    if (table == NULL)
        return NULL;
    PyObject *v = PyDict_GetItemWithError(table, key);
    if (v == NULL && PyErr_Occurred()) {
        Py_DECREF(table);
        return NULL;
    }
    int truth = v == NULL ? 0 : PyObject_IsTrue(v);
    PyObject *found = truth < 0 ? NULL : Py_NewRef(truth ? v : none_dict);
    Py_DECREF(table);
    return found;
}

/* The referenced tweets' columns: refs {type: id}, ref_author and ref_username {type: ...}, merged. 1 done,
 * 0 a shape left to Python, -1 an error. */
static int references(Prepared *p, PyObject *t, PyObject *refs)
{
    Py_ssize_t n = PyList_GET_SIZE(refs);
    p->refs = PyDict_New();
    if (p->refs == NULL)
        return -1;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *r = PyList_GET_ITEM(refs, i);
        PyObject *kind = PyDict_GetItemWithError(r, s_type), *rid;
        if (kind == NULL && PyErr_Occurred())
            return -1;
        rid = PyDict_GetItemWithError(r, s_id);
        if (rid == NULL && PyErr_Occurred())
            return -1;
        if ((kind != NULL && !PyUnicode_CheckExact(kind)) || (rid != NULL && !PyUnicode_CheckExact(rid)))
            return 0; /* keys or ids of another type: Python's dict rules and errors */
        if (PyDict_SetItem(p->refs, kind ? kind : Py_None, rid ? rid : Py_None) < 0)
            return -1;
    }
    p->ref_author = PyDict_New();
    p->ref_username = PyDict_New();
    if (p->ref_author == NULL || p->ref_username == NULL)
        return -1;
    PyObject *tweets = NULL, *users = NULL;
    Py_ssize_t pos = 0;
    PyObject *kind, *rid;
    int status = 1;
    while (PyDict_Next(p->refs, &pos, &kind, &rid)) {
        if (rid == Py_None)
            continue;
        if (tweets == NULL && (tweets = lookup(p->inc, s_tweets)) == NULL)
            goto fail;
        PyObject *ref = PyDict_GetItemWithError(tweets, rid);
        if (ref == NULL) {
            if (PyErr_Occurred())
                goto fail;
            continue;
        }
        if (!PyDict_CheckExact(ref)) {
            status = 0;
            break;
        }
        PyObject *author_id = PyDict_GetItemWithError(ref, s_author_id);
        if (author_id == NULL && PyErr_Occurred())
            goto fail;
        if (PyDict_SetItem(p->ref_author, kind, author_id ? author_id : Py_None) < 0)
            goto fail;
        if (users == NULL && (users = lookup(p->inc, s_users)) == NULL)
            goto fail;
        PyObject *user = author_id ? PyDict_GetItemWithError(users, author_id) : NULL; /* unhashable: TypeError */
        if (user == NULL && PyErr_Occurred())
            goto fail;
        PyObject *username = user != NULL && PyDict_CheckExact(user) ? PyDict_GetItemWithError(user, k_username) : NULL;
        if (username == NULL && PyErr_Occurred())
            goto fail;
        if (PyDict_SetItem(p->ref_username, kind, username ? username : Py_None) < 0)
            goto fail;
        if (kind != Py_None && PyUnicode_Compare(kind, s_retweeted) == 0)
            Py_SETREF(p->merged, Py_NewRef(ref)); /* twarc-csv merges a retweet's text/entities/metrics */
    }
    Py_XDECREF(tweets);
    Py_XDECREF(users);
    return status;
fail:
    Py_XDECREF(tweets);
    Py_XDECREF(users);
    return -1;
}

/* Includes.author_values: (description entities' columns, url entities' expanded urls, url). */
static int author_values(Prepared *p)
{
    PyObject *author = p->author;
    PyObject *ents = obj_at(author, s_entities);
    PyObject *desc = PyDict_GetItemWithError(ents, s_description);
    if (desc == NULL && PyErr_Occurred())
        return -1;
    p->author_ents = entity_columns(desc ? desc : Py_None);
    if (p->author_ents == NULL)
        return -1;
    PyObject *raw = PyDict_GetItemWithError(obj_at(ents, s_url), s_urls);
    if (raw == NULL && PyErr_Occurred())
        return -1;
    if (raw != NULL && PyList_CheckExact(raw) && plain_objs(raw) == NULL)
        return 0; /* objs() would filter the list: Python does it */
    if (raw == NULL || !PyList_CheckExact(raw) || PyList_GET_SIZE(raw) == 0) {
        p->author_urls = Py_NewRef(Py_None);
        p->author_url = get(author, s_url);
        return p->author_url == NULL ? -1 : 1;
    }
    Py_ssize_t n = PyList_GET_SIZE(raw);
    PyObject *expanded = PyList_New(n);
    if (expanded == NULL)
        return -1;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *u = get(PyList_GET_ITEM(raw, i), k_expanded_url);
        if (u == NULL) {
            Py_DECREF(expanded);
            return -1;
        }
        PyList_SET_ITEM(expanded, i, u);
    }
    p->author_url = Py_NewRef(PyList_GET_ITEM(expanded, n - 1));
    p->author_urls = json_list(NULL, expanded);
    Py_DECREF(expanded);
    return p->author_urls == NULL ? -1 : 1;
}

/* 1 done, 0 a shape left to Python, -1 an error. */
static int fill(Prepared *p, PyObject *t)
{
    PyObject *raw = PyDict_GetItemWithError(t, s_referenced);
    if (raw == NULL && PyErr_Occurred())
        return -1;
    p->merged = Py_NewRef(t);
    if (raw != NULL && PyList_CheckExact(raw) && PyList_GET_SIZE(raw) > 0) {
        if (plain_objs(raw) == NULL)
            return 0;
        int status = references(p, t, raw);
        if (status <= 0)
            return status;
    } else {
        p->refs = Py_NewRef(none_dict);
        p->ref_author = Py_NewRef(none_dict);
        p->ref_username = Py_NewRef(none_dict);
    }
    PyObject *author_id = PyDict_GetItemWithError(t, s_author_id);
    if (author_id == NULL && PyErr_Occurred())
        return -1;
    if ((p->author = find(p->inc, s_users, author_id)) == NULL)
        return -1;
    PyObject *ents = PyDict_GetItemWithError(p->merged, s_entities);
    if (ents == NULL && PyErr_Occurred())
        return -1;
    if ((p->ents = entity_columns(ents ? ents : Py_None)) == NULL)
        return -1;
    int status = author_values(p);
    if (status <= 0)
        return status;
    PyObject *poll_ids = PyDict_GetItemWithError(obj_at(t, s_attachments), s_poll_ids);
    if (poll_ids == NULL && PyErr_Occurred())
        return -1;
    PyObject *poll_id = poll_ids != NULL && PyList_CheckExact(poll_ids) && PyList_GET_SIZE(poll_ids) > 0
        ? PyList_GET_ITEM(poll_ids, 0) : NULL;
    if ((p->poll = find(p->inc, s_polls, poll_id)) == NULL)
        return -1;
    PyObject *place_id = PyDict_GetItemWithError(obj_at(t, s_geo), s_place_id);
    if (place_id == NULL && PyErr_Occurred())
        return -1;
    if ((p->place = find(p->inc, s_places, place_id)) == NULL)
        return -1;
    return 1;
}

static PyObject *includes_type; /* exporter_v2.Includes: the only context prepare takes itself */

static PyObject *prepare(PyObject *module, PyObject *item)
{
    if (prepared_py == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "_jsontext.set_fallbacks was not called");
        return NULL;
    }
    PyObject *t = PyObject_GetAttr(item, s_item);
    if (t == NULL)
        return NULL;
    PyObject *inc = PyObject_GetAttr(item, s_context);
    if (inc == NULL) {
        Py_DECREF(t);
        return NULL;
    }
    PyObject *result = NULL;
    int status = 0;
    if (PyDict_CheckExact(t) && (PyObject *)Py_TYPE(inc) == includes_type) {
        Prepared *p = PyObject_New(Prepared, &PreparedType);
        if (p != NULL) {
            memset(&p->refs, 0, sizeof(Prepared) - offsetof(Prepared, refs));
            p->inc = Py_NewRef(inc);
            status = fill(p, t);
            if (status > 0)
                result = (PyObject *)p;
            else
                Py_DECREF(p);
        }
        else
            status = -1;
    }
    Py_DECREF(t);
    Py_DECREF(inc);
    if (status == 0) {
        if (PyErr_Occurred())
            return NULL;
        result = PyObject_CallOneArg(prepared_py, item); /* the reference: its values or its error */
    }
    if (result != NULL && PyObject_SetAttr(item, s_scratch, result) < 0)
        Py_CLEAR(result);
    return result;
}

static PyObject *set_fallbacks(PyObject *module, PyObject *args)
{
    PyObject *json, *columns, *prepared, *includes;
    if (!PyArg_ParseTuple(args, "OOOO:set_fallbacks", &json, &columns, &prepared, &includes))
        return NULL;
    Py_XSETREF(fallback, Py_NewRef(json));
    Py_XSETREF(entity_columns_py, Py_NewRef(columns));
    Py_XSETREF(prepared_py, Py_NewRef(prepared));
    Py_XSETREF(includes_type, Py_NewRef(includes));
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"entity_texts", entity_texts, METH_O,
     "entity_texts(entities) -> {kind: json text} for hashtags, cashtags, mentions and urls, or None when a "
     "shape is left to the Python code."},
    {"json_list", json_list, METH_O,
     "json_list(value) -> json.dumps(value), None for None; shapes it leaves go to the Python json_list."},
    {"prepare", prepare, METH_O, "prepare(item) -> exporter_v2._prepare(item), the common shapes in C."},
    {"set_fallbacks", set_fallbacks, METH_VARARGS,
     "set_fallbacks(json_list, entity_columns, Prepared, Includes): the Python code for the shapes left to it."},
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
    struct { PyObject **at; const char *text; } names[] = {
        {&s_item, "item"}, {&s_built, "_built"}, {&s_context, "context"}, {&s_scratch, "scratch"}, {&s_get, "get"}, {&s_users, "users"},
        {&s_tweets, "tweets"}, {&s_polls, "polls"}, {&s_places, "places"}, {&s_referenced, "referenced_tweets"},
        {&s_type, "type"}, {&s_id, "id"}, {&s_author_id, "author_id"}, {&s_entities, "entities"},
        {&s_description, "description"}, {&s_url, "url"}, {&s_urls, "urls"}, {&s_attachments, "attachments"},
        {&s_poll_ids, "poll_ids"}, {&s_geo, "geo"}, {&s_place_id, "place_id"}, {&s_retweeted, "retweeted"},
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if ((*names[i].at = PyUnicode_InternFromString(names[i].text)) == NULL)
            return NULL;
    if ((none_dict = PyDict_New()) == NULL || PyType_Ready(&PreparedType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m != NULL && PyModule_AddObjectRef(m, "Prepared", (PyObject *)&PreparedType) < 0)
        Py_CLEAR(m);
    return m;
}
