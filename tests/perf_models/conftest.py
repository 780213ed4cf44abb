"""Every parse_op call a registry test makes is checked against the batch parser too (parse_ops_table must give
the same ParsedOp row for row, alone and repeated into a group): the registry tests' rows are the batch parser's
widest corpus."""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from typing import Any

import pytest

from sdpa_analyzer.perf_models.registry import parse_op
from tests.support import Row, check_table


@pytest.fixture(autouse=True)
def _batch_parser_sees_the_same_rows(request: pytest.FixtureRequest) -> Iterator[None]:
    module = request.module
    if not module.__name__.rsplit(".", 1)[-1].startswith("test_registry_") or getattr(module, "parse_op", None) is None:
        yield
        return
    rows: list[Row] = []
    bind = inspect.signature(parse_op).bind

    def recording(*args: Any, **kwargs: Any) -> Any:
        b = bind(*args, **kwargs)
        b.apply_defaults()
        rows.append(tuple(b.arguments.values()))  # type: ignore[arg-type]
        return parse_op(*args, **kwargs)

    module.parse_op = recording
    try:
        yield
    finally:
        module.parse_op = parse_op
    if rows:
        check_table(rows)
        check_table(rows * 3)  # repeated rows form real groups
