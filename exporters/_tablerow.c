/*
 * swath.exporters._tablerow: a table's row function (exporters/table.py compile_row) run as a small program
 * over the item's dicts: each column a dict lookup on a prefix object found once per row, a getattr of the
 * Item, a constant or a call, then its transform.
 *
 * Why C: the generated Python row function costs ~100 ns a column in bytecode (a .get call, a walrus test,
 * a list slot); a Twitter v2 row has 85 columns, and the export's whole per-tweet budget is ~20 us.
 * What it does not take exactly as the generated function would (an object that is not a plain dict where a
 * .get is due, a local that is neither a dict nor falsy) is handed to that function itself, the reference:
 * the rows are the same either way (tests/test_tablerow.py compares them). A column or prepare() raising one
 * of table.SHAPE_ERRORS sends the row to the slow path, as the generated function's `except` does.
 */
#include "_outbuf.h"

enum { L_ITEM, L_PREPARED, L_PATTR, L_GET };  /* a local: item.item, prepare(item), getattr(P, key), parent.get(key) or {} */
enum { C_GET, C_LOCAL, C_ATTR, C_CONST, C_CALL };  /* a column: local.get(key), a local, item.<key>, key, key(item) */
enum { T_NONE, T_CALL, T_SKIP_NONE, T_NEWLINES };  /* its transform: none, fn(v), None or fn(v), table.no_newlines */

typedef struct {
    int kind, parent;
    PyObject *key; /* borrowed from the spec tuple the program keeps */
} Local;

typedef struct {
    int kind, local, tmode;
    PyObject *arg, *transform; /* borrowed, as above */
} Column;

typedef struct {
    PyObject_HEAD
    PyObject *fast, *slow, *prepare, *shape_errors, *spec, *attr_item;
    Py_ssize_t nlocals, ncols;
    Local *locals;
    Column *cols;
} Program;

#define MAX_LOCALS 256

static void program_dealloc(Program *self)
{
    Py_XDECREF(self->fast);
    Py_XDECREF(self->slow);
    Py_XDECREF(self->prepare);
    Py_XDECREF(self->shape_errors);
    Py_XDECREF(self->spec);
    Py_XDECREF(self->attr_item);
    PyMem_Free(self->locals);
    PyMem_Free(self->cols);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int int_at(PyObject *tuple, Py_ssize_t i, int *out)
{
    long v = PyLong_AsLong(PyTuple_GET_ITEM(tuple, i));
    if (v == -1 && PyErr_Occurred())
        return -1;
    *out = (int)v;
    return 0;
}

static PyObject *program_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    PyObject *fast, *slow, *prepare, *shape_errors, *locals, *cols;
    if (!PyArg_ParseTuple(args, "OOOOO!O!:Program", &fast, &slow, &prepare, &shape_errors, &PyTuple_Type, &locals,
                          &PyTuple_Type, &cols))
        return NULL;
    Py_ssize_t nl = PyTuple_GET_SIZE(locals), nc = PyTuple_GET_SIZE(cols);
    if (nl > MAX_LOCALS) {
        PyErr_SetString(PyExc_ValueError, "too many locals");
        return NULL;
    }
    Program *self = (Program *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    self->locals = PyMem_Calloc(nl ? nl : 1, sizeof(Local));
    self->cols = PyMem_Calloc(nc ? nc : 1, sizeof(Column));
    self->attr_item = PyUnicode_InternFromString("item");
    self->spec = PyTuple_Pack(2, locals, cols);
    if (!self->locals || !self->cols || !self->attr_item || !self->spec)
        goto error;
    for (Py_ssize_t i = 0; i < nl; i++) {
        PyObject *t = PyTuple_GET_ITEM(locals, i);
        Local *l = &self->locals[i];
        if (!PyTuple_Check(t) || PyTuple_GET_SIZE(t) != 3 || int_at(t, 0, &l->kind) < 0 || int_at(t, 1, &l->parent) < 0)
            goto bad;
        l->key = PyTuple_GET_ITEM(t, 2);
        if (l->kind < L_ITEM || l->kind > L_GET || ((l->kind == L_GET || l->kind == L_PATTR) && (l->parent < 0
            || l->parent >= i || !PyUnicode_CheckExact(l->key))))
            goto bad;
    }
    for (Py_ssize_t i = 0; i < nc; i++) {
        PyObject *t = PyTuple_GET_ITEM(cols, i);
        Column *c = &self->cols[i];
        if (!PyTuple_Check(t) || PyTuple_GET_SIZE(t) != 5 || int_at(t, 0, &c->kind) < 0 || int_at(t, 1, &c->local) < 0
            || int_at(t, 3, &c->tmode) < 0)
            goto bad;
        c->arg = PyTuple_GET_ITEM(t, 2);
        c->transform = PyTuple_GET_ITEM(t, 4);
        if (c->kind < C_GET || c->kind > C_CALL || c->tmode < T_NONE || c->tmode > T_NEWLINES
            || ((c->kind == C_GET || c->kind == C_LOCAL) && (c->local < 0 || c->local >= nl))
            || ((c->kind == C_GET || c->kind == C_ATTR) && !PyUnicode_CheckExact(c->arg))
            || (c->kind == C_CALL && !PyCallable_Check(c->arg))
            || (c->tmode != T_NONE && !PyCallable_Check(c->transform)))
            goto bad;
    }
    self->nlocals = nl;
    self->ncols = nc;
    Py_INCREF(fast);
    self->fast = fast;
    Py_INCREF(slow);
    self->slow = slow;
    Py_INCREF(prepare);
    self->prepare = prepare;
    Py_INCREF(shape_errors);
    self->shape_errors = shape_errors;
    return (PyObject *)self;
bad:
    if (!PyErr_Occurred())
        PyErr_SetString(PyExc_ValueError, "malformed row program");
error:
    Py_DECREF(self);
    return NULL;
}

/* Whether a str holds a line break (no_newlines' test). */
static int has_line_break(PyObject *s)
{
    Py_ssize_t n = PyUnicode_GET_LENGTH(s);
    if (PyUnicode_IS_ASCII(s)) {
        const char *d = (const char *)PyUnicode_DATA(s);
        return memchr(d, '\n', n) != NULL || memchr(d, '\r', n) != NULL;
    }
    return PyUnicode_FindChar(s, '\n', 0, n, 1) >= 0 || PyUnicode_FindChar(s, '\r', 0, n, 1) >= 0;
}

enum { OK, DELEGATE, FAIL, RAISE };  /* RAISE: an error outside the generated function's `try` */

static PyObject *s_cr, *s_lf, *s_empty, *s_backslash_n; /* no_newlines' strings */
static PyObject *empty; /* the `or {}` of a missing or falsy value: read only, shared */

static int run(Program *self, PyObject *item, PyObject **vals, PyObject *row)
{
    for (Py_ssize_t i = 0; i < self->nlocals; i++) {
        Local *l = &self->locals[i];
        PyObject *v;
        switch (l->kind) {
        case L_ITEM:
            v = PyObject_GetAttr(item, self->attr_item);
            if (v == NULL)
                return RAISE;
            break;
        case L_PREPARED:
            v = self->prepare == Py_None ? Py_NewRef(Py_None) : PyObject_CallOneArg(self->prepare, item);
            break;
        case L_PATTR:
            v = PyObject_GetAttr(vals[l->parent], l->key);
            break;
        default: { /* parent.get(key) or {} */
            PyObject *parent = vals[l->parent];
            if (!PyDict_CheckExact(parent))
                return DELEGATE;
            v = PyDict_GetItemWithError(parent, l->key);
            if (v == NULL) {
                if (PyErr_Occurred())
                    return FAIL;
                v = Py_NewRef(empty);
            } else if (PyDict_CheckExact(v)) {
                Py_INCREF(v);
            } else {
                int truth = PyObject_IsTrue(v);
                if (truth < 0)
                    return FAIL;
                if (truth)
                    return DELEGATE; /* a .get on it fails or is not a dict's: the generated function decides */
                v = Py_NewRef(empty);
            }
        }
        }
        if (v == NULL)
            return FAIL;
        vals[i] = v;
    }
    for (Py_ssize_t i = 0; i < self->ncols; i++) {
        Column *c = &self->cols[i];
        PyObject *v;
        switch (c->kind) {
        case C_GET: {
            PyObject *d = vals[c->local];
            if (!PyDict_CheckExact(d))
                return DELEGATE;
            v = PyDict_GetItemWithError(d, c->arg);
            if (v == NULL && PyErr_Occurred())
                return FAIL;
            v = Py_NewRef(v ? v : Py_None);
            break;
        }
        case C_LOCAL:
            v = Py_NewRef(vals[c->local]);
            break;
        case C_ATTR:
            v = PyObject_GetAttr(item, c->arg);
            break;
        case C_CONST:
            v = Py_NewRef(c->arg);
            break;
        default:
            v = PyObject_CallOneArg(c->arg, item);
        }
        if (v == NULL)
            return FAIL;
        if (c->tmode == T_NEWLINES && PyUnicode_CheckExact(v) && has_line_break(v)) {
            /* no_newlines: value.replace("\r", "").replace("\n", "\\n") */
            PyObject *t = PyUnicode_Replace(v, s_cr, s_empty, -1);
            Py_DECREF(v);
            if (t == NULL)
                return FAIL;
            v = PyUnicode_Replace(t, s_lf, s_backslash_n, -1);
            Py_DECREF(t);
            if (v == NULL)
                return FAIL;
        }
        else if (c->tmode == T_CALL || (c->tmode == T_SKIP_NONE && v != Py_None)) {
            PyObject *t = PyObject_CallOneArg(c->transform, v);
            Py_DECREF(v);
            if (t == NULL)
                return FAIL;
            v = t;
        }
        PyList_SET_ITEM(row, i, v);
    }
    return OK;
}

static PyObject *program_call(Program *self, PyObject *args, PyObject *kwds)
{
    PyObject *item;
    if (!PyArg_UnpackTuple(args, "row", 1, 1, &item))
        return NULL;
    PyObject *vals[MAX_LOCALS];
    for (Py_ssize_t i = 0; i < self->nlocals; i++)
        vals[i] = NULL;
    PyObject *row = PyList_New(self->ncols); /* slots not yet set are NULL, which list_dealloc skips */
    if (row == NULL)
        return NULL;
    int status = run(self, item, vals, row);
    for (Py_ssize_t i = 0; i < self->nlocals; i++)
        Py_XDECREF(vals[i]);
    if (status == OK)
        return row;
    Py_DECREF(row);
    if (status == RAISE)
        return NULL;
    if (status == FAIL) {
        if (!PyErr_ExceptionMatches(self->shape_errors))
            return NULL;
        PyErr_Clear();
        return PyObject_CallOneArg(self->slow, item);
    }
    return PyObject_CallOneArg(self->fast, item);
}

static PyTypeObject ProgramType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "swath.exporters._tablerow.Program",
    .tp_basicsize = sizeof(Program),
    .tp_dealloc = (destructor)program_dealloc,
    .tp_call = (ternaryfunc)program_call,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Program(fast, slow, prepare, shape_errors, locals, columns): a table's row function (table.py).",
    .tp_new = program_new,
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_tablerow", "A table's row function as a program over the item's dicts.", -1, NULL,
};

PyMODINIT_FUNC PyInit__tablerow(void)
{
    if (PyType_Ready(&ProgramType) < 0)
        return NULL;
    empty = PyDict_New();
    s_cr = PyUnicode_FromString("\r");
    s_lf = PyUnicode_FromString("\n");
    s_empty = PyUnicode_FromString("");
    s_backslash_n = PyUnicode_FromString("\\n");
    if (!empty || !s_cr || !s_lf || !s_empty || !s_backslash_n)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
    if (PyModule_AddObjectRef(m, "Program", (PyObject *)&ProgramType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
