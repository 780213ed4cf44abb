"""The JSON schemas a tool listing sends, made small without changing what they accept.

A client pays for every character of `tools/list` on each connection (an LLM reads the listing into its context),
so the listing carries what a caller needs and no more:

- input schemas keep every constraint, default and description (they are what a caller fills in), and lose
  pydantic's generated `title`s (the property name again, spaced out) and `"default": null` (an optional argument
  left out is null: not being required says so); `anyOf [T, null]` becomes `type: [T, "null"]`;
- output schemas keep the shape a client can rely on in `structuredContent`: every top-level field that is always
  there with a value (the required ones, the lists, counts and flags), with its JSON type and, for a list of
  scalars, its items' type; the required fields. Left out: the fields that are null where they do not apply, the
  nested fields, descriptions and defaults. Every structured result is valid under it, since it only loosens the
  full schema; the full schema, every field described with its unit, is one request away
  (`sdpa://schemas/{tool}`). Measured: 60k of the 90k characters of the listing were output schemas; see
  tests/server/mcp/test_listing_size.py.

Pure functions on JSON-schema dicts: nothing here knows a tool or the MCP library.
"""

from __future__ import annotations

from typing import Any

_SUBSCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
_SUBSCHEMA_ONE = ("items", "additionalProperties", "not", "contains")
_SUBSCHEMA_MAPS = ("properties", "$defs", "patternProperties")
_NULL = {"type": "null"}


def compact_input_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """The same schema without generated titles, optional fields written as a type list (see the module doc)."""
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if (key == "title" and isinstance(value, str)) or (key == "default" and value is None):
            continue
        if key in _SUBSCHEMA_MAPS and isinstance(value, dict):
            out[key] = {name: compact_input_schema(sub) for name, sub in value.items()}
        elif key in _SUBSCHEMA_LISTS and isinstance(value, list):
            out[key] = [compact_input_schema(sub) for sub in value]
        elif key in _SUBSCHEMA_ONE and isinstance(value, dict):
            out[key] = compact_input_schema(value)
        else:
            out[key] = value
    return _nullable_as_type_list(out)


def _nullable_as_type_list(schema: dict[str, Any]) -> dict[str, Any]:
    """`{"anyOf": [{"type": T, ...}, {"type": "null"}], ...}` → `{"type": [T, "null"], ...}`: the same values
    accepted (JSON Schema applies a type's keywords, maxLength or minimum, to that type only)."""
    members = schema.get("anyOf")
    if not (isinstance(members, list) and len(members) == 2 and _NULL in members):
        return schema
    (other,) = [m for m in members if m != _NULL]
    if not isinstance(other.get("type"), str) or "const" in other or (set(other) & (set(schema) - {"anyOf"})):
        return schema
    merged = {k: v for k, v in schema.items() if k != "anyOf"}
    merged.update(other)
    merged["type"] = [other["type"], "null"]
    if "enum" in other:
        merged["enum"] = [*other["enum"], None]
    return merged


def output_shape_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """The top-level shape of a result schema: each field that always has a value, with its JSON type (and its
    items' type for a list of scalars), and the required fields (see the module doc)."""
    defs = schema.get("$defs", {})
    out: dict[str, Any] = {"type": "object"}
    required = list(schema.get("required", []))
    props = {name: _types_only(sub, defs, items=True) for name, sub in schema.get("properties", {}).items()}
    out["properties"] = {name: p for name, p in props.items() if name in required or not _nullable(p)}
    if required:
        out["required"] = required
    return out


def _nullable(shape: dict[str, Any]) -> bool:
    kind = shape.get("type")
    return kind is None or kind == "null" or (isinstance(kind, list) and "null" in kind)


def _types_only(schema: dict[str, Any], defs: dict[str, Any], *, items: bool) -> dict[str, Any]:
    """`{"type": ...}` of a subschema ({} when it admits several shapes that one type list cannot say)."""
    if "$ref" in schema:
        return _types_only(defs.get(schema["$ref"].rsplit("/", 1)[-1], {}), defs, items=items)
    for key in ("anyOf", "oneOf"):
        if key in schema:
            kinds: list[str] = []
            item_types = []
            for sub in schema[key]:
                member = _types_only(sub, defs, items=items)
                if "type" not in member:
                    return {}
                t = member["type"]
                kinds += [k for k in (t if isinstance(t, list) else [t]) if k not in kinds]
                item_types += [member["items"]] if "items" in member else []
            out: dict[str, Any] = {"type": kinds[0] if len(kinds) == 1 else kinds}
            if len(item_types) == 1:
                out["items"] = item_types[0]
            return out
    kind = schema.get("type")
    if kind is None:
        return {}
    shape: dict[str, Any] = {"type": kind}
    if items and "items" in schema and (kind == "array" or (isinstance(kind, list) and "array" in kind)):
        item = _types_only(schema["items"], defs, items=False)
        if item and item != {"type": "object"}:  # a list of objects says enough as "array"; scalars are cheap
            shape["items"] = item
    return shape


__all__ = ["compact_input_schema", "output_shape_schema"]
