"""Hypothesis strategies read from swath's JSON Schemas: valid messages, and mutations of them that break
exactly one rule (a required field gone, a wrong type, a broken pattern, not JSON at all)."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from swath.messages.validation import schema

TEXT = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=30)
JUNK = st.one_of(st.none(), st.booleans(), st.integers(-2**63, 2**63 - 1), st.floats(allow_nan=False), TEXT,
                 st.lists(st.integers(-99, 99), max_size=3), st.dictionaries(TEXT, st.integers(-99, 99), max_size=2))


def _resolve(node: dict[str, Any]) -> dict[str, Any]:
    ref = node.get("$ref")
    if not ref:
        return node
    doc, _, pointer = ref.partition("#")
    target: Any = schema(doc.removesuffix(".json")) if doc and doc != "common.json" else _common()
    for part in pointer.strip("/").split("/"):
        target = target[part]
    return _resolve(target)


def _common() -> dict[str, Any]:
    import json
    from importlib import resources

    return json.loads(resources.files("schemas").joinpath("common.json").read_text("utf-8"))


def from_schema(node: dict[str, Any]) -> st.SearchStrategy[Any]:
    """Values valid against `node` (the subset of JSON Schema swath's schemas use)."""
    node = _resolve(node)
    if "enum" in node:
        return st.sampled_from(node["enum"])
    types = node.get("type", "object")
    if isinstance(types, list):
        return st.one_of(*(from_schema({**node, "type": t}) for t in types))
    if types == "string":
        if "pattern" in node:
            return st.from_regex(node["pattern"], fullmatch=True).filter(lambda s: len(s) <= 60)
        return st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=node.get("minLength", 0),
                       max_size=20)
    if types == "integer":
        return st.integers(min_value=node.get("minimum", -10**6), max_value=10**6)
    if types == "number":
        return st.floats(allow_nan=False, allow_infinity=False)
    if types == "boolean":
        return st.booleans()
    if types == "null":
        return st.none()
    if types == "array":
        return st.lists(from_schema(node.get("items", {"type": "string"})), min_size=node.get("minItems", 0),
                        max_size=3)
    props = node.get("properties", {})
    required = set(node.get("required", []))
    extra = node.get("additionalProperties")
    fixed = {name: from_schema(sub) for name, sub in props.items() if name in required}
    optional = {name: from_schema(sub) for name, sub in props.items() if name not in required}
    base = st.fixed_dictionaries(fixed, optional=optional)
    if isinstance(extra, dict):
        base = st.tuples(base, st.dictionaries(TEXT, from_schema(extra), max_size=2)).map(lambda t: {**t[1], **t[0]})
    if "oneOf" in node:  # export_start: exactly one of seeds / collection
        branches = node["oneOf"]

        def pick(pair: tuple[dict[str, Any], int]) -> st.SearchStrategy[dict[str, Any]]:
            value, index = pair
            branch = branches[index]
            strategies = {k: st.just(v) for k, v in value.items() if k not in branch.get("not", {}).get("required", [])}
            for name in branch.get("required", []):
                strategies[name] = from_schema(props[name])
            return st.fixed_dictionaries(strategies)

        return st.tuples(base, st.integers(0, len(branches) - 1)).flatmap(pick)
    return base


def mutation(name: str, protected: frozenset[str] = frozenset()) -> st.SearchStrategy[tuple[str, Any]]:
    """(what was broken, how) for a message of schema `name`, leaving `protected` fields alone."""
    node = schema(name)
    required = [k for k in node.get("required", []) if k not in protected]
    typed = [k for k in node.get("properties", {}) if k not in protected]
    return st.one_of(
        st.tuples(st.just("drop"), st.sampled_from(required)),
        st.tuples(st.just("retype"), st.tuples(st.sampled_from(typed), JUNK)),
        st.tuples(st.just("not_object"), JUNK),
        st.tuples(st.just("bytes"), st.sampled_from([b"", b"{", b"{\"id\": ", b"\xff\xfe{}", b"null", b"[{}]",
                                                      b"{\"id\": \"\xc3\x28\"}", b"\x00" * 8, b"[" * 5000])),
    )
