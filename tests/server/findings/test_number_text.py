"""number_text spells a value as the metrics JSON writes it, whatever Python or numpy type holds it."""

from __future__ import annotations

from decimal import Decimal

import numpy as np
import pytest

from sdpa_analyzer.server.findings.spec import number_text


@pytest.mark.parametrize(
    ("value", "written"),
    [
        (1.5, "1.5"), (np.float64(1.5), "1.5"), (np.float32(0.25), "0.25"), (2.723, "2.723"),
        (np.int64(7), "7"), (7, "7"), (Decimal("5.960"), "5.960"), (True, "true"), (None, "null"),
        (float("nan"), "NaN"), (np.float64("inf"), "Infinity"),
    ],
)  # fmt: skip
def test_a_value_is_written_as_json_writes_it(value: object, written: str) -> None:
    assert number_text(value) == written
