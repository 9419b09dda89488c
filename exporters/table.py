"""Export tables as declarations: a list of Col(name, getter, transform)."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import orjson

_Fn = TypeVar("_Fn", bound=Callable[..., Any])


def dig(value: Any, keys: tuple[str, ...] | list[str]) -> Any:
    """value[k1][k2]..., None as soon as a step is missing or not an object."""
    for k in keys:
        if not isinstance(value, dict):
            return None
        value = value.get(k)
    return value


_EMPTY: dict = {}

_tablerow: Any
try:  # exporters/_tablerow.c: the row function as a C program (the build goes on without a C compiler)
    import swath.exporters._tablerow as _tablerow_extension

    _tablerow = _tablerow_extension
except ImportError:
    _tablerow = None

# _tablerow.c's locals, columns and transform modes (see its enums)
_L_ITEM, _L_PREPARED, _L_PATTR, _L_GET = range(4)
_C_GET, _C_LOCAL, _C_ATTR, _C_CONST, _C_CALL = range(5)
_T_NONE, _T_CALL, _T_SKIP_NONE, _T_NEWLINES = range(4)
# What an item of an unexpected shape raises in a row function (a list where an object was expected, a
# timestamp past the year 9999, a value nested deeper than json.dumps recurses: orjson parses 1,024 levels).
SHAPE_ERRORS = (AttributeError, TypeError, KeyError, IndexError, ValueError, OverflowError, RecursionError)


@dataclass(frozen=True)
class Col:
    """A column: its header, where the value comes from, and an optional transform of that value.

    `get` is a dotted path into the item's JSON ("user.screen_name"), a dotted path into what the
    table's prepare() returned ("$author.public_metrics.followers_count"), an attribute of the Item
    itself ("@url", "@harvest_date"), or a function of the Item.
    """

    name: str
    get: str | Callable[[Any], Any]
    transform: Callable[[Any], Any] | None = None

    def safe(self, item: Any, prepared: Any) -> Any:
        """The value, walking the path defensively (the slow path for odd items); None where the item's
        shape defeats the column (`prepared` is None when the table's prepare() itself failed)."""
        try:
            if callable(self.get):
                value = self.get(item)
            elif self.get.startswith("@"):
                value = getattr(item, self.get[1:])
            elif self.get.startswith("$"):
                root, *keys = self.get[1:].split(".")
                value = dig(getattr(prepared, root, None), keys)
            else:
                value = dig(item.item, self.get.split("."))
            return self.transform(value) if self.transform is not None else value
        except SHAPE_ERRORS:
            return None


def compile_row(columns: tuple[Col, ...], prepare: Callable[[Any], Any] | None) -> Callable[[Any], list[Any]]:
    """One function computing every column, so a row costs one call, not one per column: the C program of
    _tablerow.c when it was built, else the generated Python function (its reference, see python_row)."""
    fast, program = _compile(columns, prepare)
    if _tablerow is None:
        return fast
    return _tablerow.Program(fast, lambda item: _slow_row(columns, prepare, item), prepare, SHAPE_ERRORS,
                             *program)


def python_row(columns: tuple[Col, ...], prepare: Callable[[Any], Any] | None) -> Callable[[Any], list[Any]]:
    """The generated Python row function alone (what compile_row returns without the C extension)."""
    return _compile(columns, prepare)[0]


def _compile(columns: tuple[Col, ...], prepare: Callable[[Any], Any] | None
             ) -> tuple[Callable[[Any], list[Any]], tuple[tuple[Any, ...], tuple[Any, ...]]]:
    """The generated function, and the same computation as _tablerow.c's program (locals, columns).

    Paths become .get() calls with every shared prefix (user, author.public_metrics...) looked up once
    into a local; an item whose shape breaks them (a list where an object was expected) falls back
    to Col.safe for that row, column by column.
    """
    env: dict[str, Any] = {"_E": _EMPTY, "_prepare": prepare, "SHAPE_ERRORS": SHAPE_ERRORS, "_dumps": orjson.dumps,
                           "_slow": lambda item: _slow_row(columns, prepare, item)}
    prefixes: dict[tuple[str, ...], str] = {("t",): "t"}
    lines: list[str] = []
    # the program: locals (kind, parent, key) and columns (kind, local, arg, transform mode, transform)
    slots: dict[tuple[str, ...], int] = {("t",): 0, ("P",): 1}
    program_locals: list[tuple[int, int, Any]] = [(_L_ITEM, 0, None), (_L_PREPARED, 0, None)]
    program_cols: list[tuple[int, int, Any, int, Any]] = []

    def slot(prefix: tuple[str, ...]) -> int:
        if prefix not in slots:
            kind = _L_PATTR if len(prefix) == 2 and prefix[0] == "P" else _L_GET
            parent = slot(prefix[:-1])
            slots[prefix] = len(program_locals)
            program_locals.append((kind, parent, prefix[-1]))
        return slots[prefix]

    def local(prefix: tuple[str, ...]) -> str:
        """The local holding the object at `prefix` (created on first use)."""
        if prefix not in prefixes:
            parent = local(prefix[:-1])
            name = prefixes[prefix] = f"v{len(prefixes)}"
            lines.append(f"{name} = {parent}.get({prefix[-1]!r}) or _E")
        slot(prefix)
        return prefixes[prefix]

    parts = []
    for i, col in enumerate(columns):
        if callable(col.get):
            env[f"_f{i}"] = col.get
            expr = getattr(col.get, "inline", None) or f"_f{i}(item)"
            op: tuple[int, int, Any] = (_C_CONST, 0, col.get(None)) if getattr(col.get, "constant", False) \
                else (_C_CALL, 0, col.get)
        elif col.get.startswith("@"):
            expr = f"item.{col.get[1:]}"
            op = (_C_ATTR, 0, col.get[1:])
        else:
            if col.get.startswith("$"):
                root, _, rest = col.get[1:].partition(".")
                prefixes.setdefault(("P", root), f"P.{root}")
                keys = ("P", root, *rest.split(".")) if rest else ("P", root)
            else:
                keys = ("t", *col.get.split("."))
            if keys[0] == "P" and len(keys) == 2:
                expr = f"P.{keys[1]}"
                op = (_C_LOCAL, slot(keys), None)
            else:
                expr = f"{local(keys[:-1])}.get({keys[-1]!r})"
                op = (_C_GET, slot(keys[:-1]), keys[-1])
        mode = _T_NONE
        if col.transform is not None:
            env[f"_t{i}"] = col.transform
            inline = getattr(col.transform, "inline", None)
            expr = inline.format(value=expr, fn=f"_t{i}") if inline else f"_t{i}({expr})"
            mode = _T_NEWLINES if col.transform is no_newlines else _T_SKIP_NONE if inline in _SKIP_NONE else _T_CALL
        # a transform's `native`: a C function computing the same, which the program calls instead
        program_cols.append((*op, mode, getattr(col.transform, "native", col.transform)))
        parts.append(expr)
    body = "".join(f"        {line}\n" for line in lines)
    source = (
        "def fast(item):\n"
        "    t = item.item\n"
        "    try:\n"
        f"        P = {'_prepare(item)' if prepare is not None else 'None'}\n" + body +
        "        return [\n            " + ",\n            ".join(parts) + ",\n        ]\n"
        "    except SHAPE_ERRORS:\n"
        "        return _slow(item)\n"
    )
    exec(compile(source, "<export table>", "exec"), env)  # noqa: S102 - code built from our own declarations
    return env["fast"], (tuple(program_locals), tuple(program_cols))


def _slow_row(columns: tuple[Col, ...], prepare: Callable[[Any], Any] | None, item: Any) -> list[Any]:
    try:
        prepared = prepare(item) if prepare is not None else None
    except SHAPE_ERRORS:
        prepared = None  # its "$" columns stay empty; the item's own columns are still read
    return [c.safe(item, prepared) for c in columns]


@dataclass(frozen=True)
class Table:
    name: str  # e.g. "twitter_v2"; also the file-name suffix when an export writes several tables
    columns: tuple[Col, ...]
    # Optional: values several columns share, computed once per item ("$name..." paths read them).
    prepare: Callable[[Any], Any] | None = None
    row: Callable[[Any], list[Any]] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "row", compile_row(self.columns, self.prepare))

    @property
    def headers(self) -> list[str]:
        return [c.name for c in self.columns]


# --- transforms shared by tables ---
# A transform may carry `inline`: the same computation as one expression over {value} ({fn} calls the
# transform itself), which compile_row writes into the row function: no call for the common case.

def with_inline(expression: str) -> Callable[[_Fn], _Fn]:
    """Give a transform (or a getter) its `inline` expression; compile_row reads it with getattr."""

    def attach(fn: _Fn) -> _Fn:
        vars(fn)["inline"] = expression  # a function attribute, which mypy cannot declare
        return fn

    return attach


@with_inline("(None if (_v := {value}) is None else _dumps(_v).decode())")
def json_list(value: Any) -> str | None:
    """Lists and objects as compact UTF-8 JSON (twarc-csv's values; it spaces and \\u-escapes them), None
    stays empty."""
    if value is None:
        return None
    try:
        return orjson.dumps(value).decode()
    except orjson.JSONEncodeError:  # an int past 64 bits: the json module writes the same, slower
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


@with_inline('({fn}(_v) if type(_v := {value}) is str and ("\\n" in _v or "\\r" in _v) else _v)')
def no_newlines(value: Any) -> Any:
    """twarc-csv's mandatory escape: CR dropped, LF written as the two characters \\n."""
    if type(value) is str and ("\n" in value or "\r" in value):
        return value.replace("\r", "").replace("\n", "\\n")
    return value


def constant(value: str | int | None) -> Callable[[Any], Any]:
    """A column whose value is the same in every row (written into the row function as a literal)."""
    get = lambda item: value  # noqa: E731 - the slow path's callable
    vars(get)["constant"] = True  # compile_row's C program holds the value itself
    return with_inline(repr(value))(get)


def from_timestamp(value: Any) -> str | None:
    if value in (None, ""):
        return None
    return dt.datetime.fromtimestamp(int(value), dt.UTC).isoformat()


# A transform's inline form that leaves None as None (exporter_v2's json_list has it).
NONE_STAYS_NONE = "(None if (_v := {value}) is None else {fn}(_v))"
# Inline forms that leave None as None: _tablerow.c calls their transform only for other values.
_SKIP_NONE = (NONE_STAYS_NONE, vars(json_list)["inline"])
