"""The catalogue's values (server.scoring.fields): a records cell as a tool result shows it (numpy, not pandas: the
model_attention command needs no data frame).

The metrics JSON's columns of the same catalogue are server.scoring.ranking's (`json_fields`)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from sdpa_analyzer.perf_models.outputs import Output, Surface
from sdpa_analyzer.server.scoring.fields import on

if TYPE_CHECKING:
    import pandas as pd


def value(o: Output, x: Any) -> Any:
    """A records cell as the catalogue says it is shown: rounded to its digits, None where it has no value."""
    if o.kind == "bool":
        return bool(x) if x is not None and not (isinstance(x, float) and math.isnan(x)) else False
    if o.kind == "list":
        return list(x) if isinstance(x, list | tuple | np.ndarray) else []
    if x is None or (isinstance(x, float | np.floating) and not math.isfinite(float(x))):
        return None
    if o.kind == "text":
        return x if isinstance(x, str) else None
    if o.kind == "int":
        try:
            return int(x)
        except (TypeError, ValueError):
            return None
    f = float(x)
    return round(f, o.digits) if o.digits is not None else f


def result_values(row: Mapping[str, Any] | pd.Series, surface: Surface, **computed: Any) -> dict[str, Any]:
    """The values of one records row for a surface's result model; fields computed at result time come in
    `computed`."""
    out = {}
    for o in on(surface):
        out[o.name] = computed[o.name] if o.name in computed else value(o, row[o.name])
    return out


__all__ = ["result_values", "value"]
