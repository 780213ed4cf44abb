"""Read and validate one category of an analysis folder: `<cat>_ops.csv`, metadata, manifest.

Everything that can be wrong with the files becomes an InputError with one line naming the file,
the field (column/row) and the fix. A missing CSV is not an error: it means the trace had no ops of
this category (status NO_DATA).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pandas as pd

from perf_models.errors import PerfModelError
from perf_models.literals import parse_literal

from .errors import InputError

CATEGORY_RE = re.compile(r"^[a-z][a-z0-9_]{0,63}$")
KNOWN_CATEGORIES = ("sdpa_fwd", "sdpa_bwd", "inferenceattention")

KERNEL_SUM = "Kernel Time (µs)_sum"
KERNEL_MEAN = "Kernel Time (µs)_mean"
REQUIRED_COLUMNS = ("name", "operation_count", KERNEL_SUM)
# literal-typed columns parsed up front (perf_params and call stacks are read lazily, only where needed)
LITERAL_COLUMNS = ("Input Dims", "Input type", "Concrete Inputs")
_INT_NEST = re.compile(r"^[\d\s,()\[\]]*$")
_TRAILING_COMMA = re.compile(r",\s*\]")

_KD_NAME_RE = re.compile(r"'name':\s*'((?:[^'\\]|\\.)*)'")
_KD_DUR_RE = re.compile(r"'total_duration_us':\s*(?:np\.float64\()?\s*([-+0-9.eE]+|nan)\)?")
_KD_COUNT_RE = re.compile(r"'count':\s*(?:np\.int64\()?\s*(\d+)")


@dataclass
class CategoryData:
    output_dir: Path
    category: str
    status: str  # OK | NO_DATA
    csv_path: Path
    metadata_path: Path
    df: pd.DataFrame | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    manifest: dict[str, Any] | None = None
    e2e_ms: float | None = None
    comparison_scope: str = "standalone"
    trace2_e2e_ms: float | None = None
    warnings: list[str] = field(default_factory=list)
    # parsed literal columns, aligned with df rows (None where the cell is empty)
    parsed: dict[str, list[Any]] = field(default_factory=dict)
    kernels: list[list[dict[str, Any]]] = field(default_factory=list)

    @property
    def is_comparative(self) -> bool:
        return self.comparison_scope == "comparative"


def check_category(category: str) -> str:
    cat = str(category).strip()
    if not CATEGORY_RE.match(cat):
        raise InputError(
            f"category={category!r} is invalid: expected a lowercase name such as {', '.join(KNOWN_CATEGORIES)}"
        )
    return cat


def read_json_file(path: Path, what: str) -> dict[str, Any]:
    try:
        data = orjson.loads(path.read_bytes())
    except FileNotFoundError:
        raise InputError(f"{what} not found: {path}") from None
    except orjson.JSONDecodeError as exc:
        raise InputError(f"{path}: not valid JSON ({exc.msg} at char {exc.pos}); rewrite {what} as JSON") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read {what} ({exc.strerror})") from None
    if not isinstance(data, dict):
        raise InputError(f"{path}: {what} must be a JSON object, found {type(data).__name__}")
    return data


def load_category(output_dir: Path, category: str) -> CategoryData:
    """Load and validate one category. `output_dir` must already be resolved under the data roots."""
    cat = check_category(category)
    if not output_dir.exists():
        raise InputError(f"output_dir not found: {output_dir} — pass an analysis folder (or run analyze_trace first)")
    if not output_dir.is_dir():
        raise InputError(f"output_dir is not a folder: {output_dir}")
    csv_path = output_dir / "category_data" / f"{cat}_ops.csv"
    meta_path = output_dir / "metadata" / f"{cat}_metadata.json"
    manifest_path = output_dir / "category_data" / "category_manifest.json"
    data = CategoryData(
        output_dir=output_dir, category=cat, status="NO_DATA", csv_path=csv_path, metadata_path=meta_path
    )

    if manifest_path.exists():
        data.manifest = read_json_file(manifest_path, "category manifest")
        scope = data.manifest.get("comparison_scope")
        if scope in ("standalone", "comparative"):
            data.comparison_scope = scope
    if meta_path.exists():
        data.metadata = read_json_file(meta_path, f"{cat} metadata")
    if not csv_path.exists():
        return data

    data.status = "OK"
    data.df = _read_csv(csv_path)
    _validate_columns(data.df, csv_path)
    data.e2e_ms = _e2e_baseline(data, manifest_path)
    _read_trace2_baseline(data)
    has_trace2_columns = any(c in data.df.columns for c in ("speedup (trace2/trace1)", "delta_us (trace2 - trace1)"))
    if data.manifest is None or data.manifest.get("comparison_scope") not in ("standalone", "comparative"):
        data.comparison_scope = "comparative" if has_trace2_columns else "standalone"
    _parse_literal_columns(data)
    return data


def _read_csv(path: Path) -> pd.DataFrame:
    try:
        df = pd.read_csv(path, dtype={"name": str}, keep_default_na=True, low_memory=False)
    except pd.errors.EmptyDataError:
        raise InputError(f"{path}: the CSV is empty — regenerate it (analyze_trace) or delete it for NO_DATA") from None
    except (pd.errors.ParserError, UnicodeDecodeError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise InputError(f"{path}: not a readable CSV ({first}) — regenerate it with analyze_trace") from None
    return df


def _validate_columns(df: pd.DataFrame, path: Path) -> None:
    missing = [c for c in REQUIRED_COLUMNS if c not in df.columns]
    if missing:
        raise InputError(
            f"{path}: missing column(s) {', '.join(repr(c) for c in missing)} — the ops CSV needs "
            f"{', '.join(REQUIRED_COLUMNS)} (see formats.md); regenerate it with analyze_trace"
        )
    if df.empty:
        return
    if df["name"].isna().any():
        row = int(np.flatnonzero(df["name"].isna().to_numpy())[0])
        raise InputError(f"{path}: row {row + 2} has an empty 'name' — every row needs the op name")
    for col in (KERNEL_SUM, "operation_count") + ((KERNEL_MEAN,) if KERNEL_MEAN in df.columns else ()):
        values = pd.to_numeric(df[col], errors="coerce")
        bad = values.isna().to_numpy() | (values.to_numpy() < 0) | ~np.isfinite(values.to_numpy(dtype=float))
        if col == "operation_count":
            bad |= values.to_numpy() == 0
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            raise InputError(
                f"{path}: column {col!r} row {row + 2} is {df[col].iloc[row]!r} — expected a finite "
                f"{'positive count' if col == 'operation_count' else 'non-negative time in µs'}; fix or drop the row"
            )
        df[col] = values


def _e2e_baseline(data: CategoryData, manifest_path: Path) -> float:
    util = data.metadata.get("gpu_utilization") if data.metadata else None
    source = data.metadata_path
    if not isinstance(util, dict) and data.manifest:
        util, source = data.manifest.get("gpu_utilization"), manifest_path
    if not isinstance(util, dict) or "total_time_ms" not in util:
        raise InputError(
            f"{data.metadata_path}: no gpu_utilization.total_time_ms (E2E baseline) in metadata or manifest — "
            "add it (first-to-last GPU activity of the profiled window, ms) or rerun analyze_trace"
        )
    try:
        e2e = float(util["total_time_ms"])
    except (TypeError, ValueError):
        e2e = float("nan")
    if not np.isfinite(e2e) or e2e <= 0:
        raise InputError(
            f"{source}: gpu_utilization.total_time_ms is {util['total_time_ms']!r} — the E2E baseline must be a "
            "positive number of ms; fix the metadata or rerun analyze_trace"
        )
    return e2e


def _read_trace2_baseline(data: CategoryData) -> None:
    p = data.output_dir / "metadata" / "trace2_gpu_utilization.json"
    util = None
    if p.exists():
        util = read_json_file(p, "trace-2 GPU utilization")
    elif data.manifest and isinstance(data.manifest.get("trace2_gpu_utilization"), dict):
        util = data.manifest["trace2_gpu_utilization"]
    if util and isinstance(util.get("total_time_ms"), int | float) and util["total_time_ms"] > 0:
        data.trace2_e2e_ms = float(util["total_time_ms"])


def _parse_cells(values: pd.Series, col: str, path: Path, rows: list[int] | None = None) -> list[Any]:
    """Parse each distinct cell once (rows often repeat signatures), strictly, never with eval."""
    out: list[Any] = []
    cache: dict[str, Any] = {}
    for j, v in enumerate(values.tolist()):
        i = rows[j] if rows is not None else j
        if v is None or (isinstance(v, float) and np.isnan(v)):
            out.append(None)
            continue
        s = str(v)
        if s not in cache:
            try:
                cache[s] = parse_literal(s)
            except PerfModelError as exc:
                raise InputError(
                    f"{path}: column {col!r} row {i + 2} is not a Python literal ({exc}) — "
                    "fix the cell; only literal tuples/lists/dicts/numbers/strings are accepted"
                ) from None
        out.append(cache[s])
    return out


def parse_kernel_details(cell: Any) -> list[dict[str, Any]]:
    """Kernel names, counts and total durations from a `kernel_details_summary` cell.

    The cells are large dict reprs with `np.float64(...)` numbers; a regex pulls out the three fields
    we need without evaluating anything, which is also much faster than literal_eval on 100k rows.
    """
    if cell is None or (isinstance(cell, float) and np.isnan(cell)):
        return []
    s = str(cell)
    out: list[dict[str, Any]] = []
    for chunk in s.split("{")[1:]:
        m = _KD_NAME_RE.search(chunk)
        if not m:
            continue
        d = _KD_DUR_RE.search(chunk)
        c = _KD_COUNT_RE.search(chunk)
        dur = float(d.group(1)) if d else float("nan")
        out.append(
            {
                "name": m.group(1).replace("\\'", "'"),
                "count": int(c.group(1)) if c else None,
                "total_duration_us": dur if np.isfinite(dur) else None,
            }
        )
    return out


def _parse_int_nests(values: pd.Series, col: str, path: Path) -> list[Any]:
    """Shape cells (`((16, 16, 559, 64), (), ...)`): integer nests become JSON and go through one orjson call.

    Every cell is checked to hold only digits, commas, spaces and brackets first; anything else (or a
    malformed nest) takes the strict per-cell literal parser, which names the row.
    """
    cells = values.tolist()
    plain = [isinstance(v, str) and bool(_INT_NEST.match(v)) for v in cells]
    out: list[Any] = [None] * len(cells)
    idx = [i for i, ok in enumerate(plain) if ok]
    if idx:
        parts = [_TRAILING_COMMA.sub("]", cells[i].replace("(", "[").replace(")", "]")) for i in idx]
        try:
            parsed = orjson.loads("[" + ",".join(parts) + "]")
            if len(parsed) != len(idx):
                raise ValueError("cell count changed")
            for i, v in zip(idx, parsed, strict=True):
                out[i] = v
        except (orjson.JSONDecodeError, ValueError):
            idx = []  # some cell is malformed: let the strict parser find and name it
            plain = [False] * len(cells)
    rest = [i for i, ok in enumerate(plain) if not ok]
    if rest:
        sub = _parse_cells(values.iloc[rest], col, path, rows=rest)
        for i, v in zip(rest, sub, strict=True):
            out[i] = v
    return out


def _parse_literal_columns(data: CategoryData) -> None:
    assert data.df is not None
    for col in LITERAL_COLUMNS:
        if col == "Input Dims" and col in data.df.columns:
            data.parsed[col] = _parse_int_nests(data.df[col], col, data.csv_path)
        elif col in data.df.columns:
            data.parsed[col] = _parse_cells(data.df[col], col, data.csv_path)
        else:
            data.parsed[col] = [None] * len(data.df)
    if "kernel_details_summary" in data.df.columns:
        data.kernels = [parse_kernel_details(v) for v in data.df["kernel_details_summary"].tolist()]
    else:
        data.kernels = [[] for _ in range(len(data.df))]
        data.warnings.append(
            f"{data.csv_path.name}: no kernel_details_summary column; library and kernel names unknown"
        )
