"""server.writers.json_columns: a document written column-wise is byte-for-byte orjson's compact dump of the dicts,
its list one item a line."""

from __future__ import annotations

import io
import math
from typing import Any

import numpy as np
import orjson
import pytest

from sdpa_analyzer.server.writers.json_columns import (
    DUMPS_OPTIONS,
    Bools,
    Const,
    Field,
    Ints,
    Numbers,
    Obj,
    Pair,
    RowList,
    Sparse,
    Texts,
    Values,
    encode_strings,
    write_document,
)

_MARK = "\x00the items\x00"


def _expected(doc: dict[str, Any], rows: list[dict[str, Any]]) -> bytes:
    """orjson's compact dump of the document, its `items` list written one item a line (docs/formats.md)."""
    whole = orjson.dumps({**doc, "items": rows}, option=DUMPS_OPTIONS) + b"\n"
    before, after = orjson.dumps({**doc, "items": _MARK}, option=DUMPS_OPTIONS).split(orjson.dumps(_MARK))
    items = b"[\n" + b",\n".join(orjson.dumps(r, option=DUMPS_OPTIONS) for r in rows) + b"\n]" if rows else b"[]"
    expected = before + items + after + b"\n"
    assert orjson.loads(expected) == orjson.loads(whole)  # the same JSON value as the compact dump
    return expected


def _written(doc: dict[str, Any], item: Obj, n: int, chunk_rows: int = 1024) -> bytes:
    buf = io.BytesIO()
    write_document(buf, {**doc, "items": None}, "items", item, n, chunk_rows=chunk_rows)
    return buf.getvalue()


def _float_or_none(x: float) -> float | None:
    return x if math.isfinite(x) else None


def _case(n: int, seed: int) -> tuple[dict[str, Any], Obj, list[dict[str, Any]]]:
    """Raw columns; the expected dicts built from them row by row (the way the metrics dicts used to be)."""
    rng = np.random.default_rng(seed)
    big = rng.uniform(-1, 1, n) * 10.0 ** rng.integers(-8, 14, n)
    big[rng.random(n) < 0.05] = np.nan
    big[: min(n, 2)] = [np.inf, -0.0][: min(n, 2)]
    few = rng.choice([70.0, 50.0, np.nan], n)  # few distinct values: rendered as pre-built runs
    counts = rng.integers(0, 10**12, n)
    ints_f = rng.choice([1.0, 8.0, np.nan], n)
    flags = rng.random(n) < 0.3
    pool = ["fwd", "bwd", 'quo"te', "ünï — code", "line\nbreak", "back\\slash", ""]
    codes = rng.integers(-1, len(pool), n)  # -1: null
    distinct = [f"cell {i} ({i}, {i * 7})" for i in range(n)]  # mostly distinct strings
    chains = [["a", "b"], [], ["x"]]
    chain_of = [chains[k] for k in rng.integers(0, 3, n)]  # shared list objects
    sparse = {i: {"p": round(float(i) / 3, 2), "dominant": "k"} for i in range(0, n, 7)}

    item = Obj([
        Field("name", Texts(codes, pool)),
        Field("count", Ints(counts)),
        Field("big", Numbers(big, 3)),
        Field("inner", Obj([
            Field("few", Numbers(few, 1)),
            Field("flag", Bools(flags)),
            Field("const", Const(3.35, n)),
            Field("gqa", Ints(ints_f, valid=ints_f > 1)),
            Field("deeper", Obj([Field("chain", Values(chain_of)), Field("label", Texts(codes, pool))])),
            Field("breakdown", Sparse(sparse), optional=True),
        ])),
        Field("text", Texts(np.arange(n), distinct)),
        Field("band", Pair(Numbers(few, 1), Numbers(big, 0))),
        Field("raw", Values([None, 1, 1.0, True, "1", {"k": [1, 2]}] * (n // 6) + [None] * (n % 6))),
        Field("empty", Obj([])),
    ])  # fmt: skip
    raw = [None, 1, 1.0, True, "1", {"k": [1, 2]}] * (n // 6) + [None] * (n % 6)
    rows = []
    for i in range(n):
        inner: dict[str, Any] = {
            "few": _float_or_none(round(float(few[i]), 1)) if not math.isnan(few[i]) else None,
            "flag": bool(flags[i]),
            "const": 3.35,
            "gqa": int(ints_f[i]) if ints_f[i] > 1 else None,
            "deeper": {"chain": chain_of[i], "label": pool[codes[i]] if codes[i] >= 0 else None},
        }
        if i in sparse:
            inner["breakdown"] = sparse[i]
        rows.append({
            "name": pool[codes[i]] if codes[i] >= 0 else None,
            "count": int(counts[i]),
            "big": _float_or_none(float(np.round(big[i], 3))),
            "inner": inner,
            "text": distinct[i],
            "band": [_float_or_none(float(np.round(few[i], 1))), _float_or_none(float(np.round(big[i], 0)))],
            "raw": raw[i],
            "empty": {},
        })  # fmt: skip
    doc = {"category": "sdpa_fwd", "status": "OK", "items": None, "after": [{"x": 1}], "n": n}
    return doc, item, rows


@pytest.mark.parametrize(("n", "chunk_rows"), [(1, 1024), (3, 2), (500, 64), (2000, 1024)])
def test_matches_orjson(n: int, chunk_rows: int) -> None:
    doc, item, rows = _case(n, seed=n)
    assert _written(doc, item, n, chunk_rows) == _expected(doc, rows)


def test_other_values_dumped_one_by_one_match_orjson() -> None:
    # top-level lists are written item by item, other values whole: still orjson's bytes, key order kept
    doc = {"first": [], "items": None, "lists": [[1, 2.5], {"k": [None, True]}, "s"], "keys": {1: "int key"}, "z": 0}
    assert _written(doc, Obj([Field("x", Const("v", 2))]), 2) == _expected(doc, [{"x": "v"}, {"x": "v"}])


def test_empty_list() -> None:
    doc = {"a": 1, "items": None}
    assert _written(doc, Obj([Field("x", Const(1, 0))]), 0) == _expected(doc, [])


def test_encode_strings_matches_orjson() -> None:
    values = ["", "a", 'q"', "\\", "\n  ", "—", None, 3, ["l"], "x,\n  y"]
    # composite values as orjson indents them at the top level
    assert encode_strings(values) == [orjson.dumps(v, option=DUMPS_OPTIONS) for v in values]


def test_row_list_is_written_and_read_as_the_dicts() -> None:
    # a RowList inside another value: orjson's bytes of the dicts it stands for, and its items are those dicts
    _, item, rows = _case(300, seed=7)
    nested = {"a": 1, "block": {"listed": RowList(item, 300), "z": [1.5]}, "items": None}
    written = _written(nested, Obj([Field("x", Const(1, 2))]), 2)
    plain = {"a": 1, "block": {"listed": rows, "z": [1.5]}, "items": None}
    assert written == _expected(plain, [{"x": 1}, {"x": 1}])
    listed = RowList(item, 300)
    assert len(listed) == 300
    assert listed[:5] == orjson.loads(orjson.dumps(rows[:5], option=DUMPS_OPTIONS))
    assert listed[-1] == orjson.loads(orjson.dumps(rows[-1], option=DUMPS_OPTIONS))
    assert RowList(item, 0).json() == b"[]"


@pytest.mark.parametrize(
    "values",
    [
        [None, 1, 1.0, True, "1", 1, True, 1.0],  # equal in Python, different JSON
        [1, 2, 1, 3],
        [1.0, float("nan"), 1.0, float("inf")],
        [True, False, True],
        ["a", None, "b", "a", None],
        [["x"], ["x"], [], {"k": 1}, ["x"]],  # unhashable: told apart by identity, equal texts all the same
        [["x", "y"], [], ["x", "y"]],
    ],
)
def test_values_column_gives_each_rows_own_json(values: list[object]) -> None:
    column = Values(values)
    texts = column.texts(0, len(values))
    assert texts == [orjson.dumps(v, option=orjson.OPT_SERIALIZE_NUMPY) for v in values]
