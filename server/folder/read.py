"""Read and validate one category of an analysis folder: `<cat>_ops.csv`, metadata, manifest.

Everything that can be wrong with the files becomes an InputError with one line naming the file,
the field (column/row) and the fix. A missing CSV is not an error: it means the trace had no ops of
this category (status NO_DATA).

Columns are read as columns (10^5 rows in well under a second): literal cells are parsed once per
distinct value, Input Dims cells that are plain integer nests are checked in bulk and left as text for
perf_models' bulk reader, and kernel_details_summary is reduced to each row's kernel names and dominant
kernel without parsing every cell, its cells kept packed (server.folder.kernel_details).
"""

from __future__ import annotations

import csv
import io
import math
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pandas as pd

from sdpa_analyzer.perf_models.errors import PerfModelError
from sdpa_analyzer.perf_models.literals import MAX_NESTING, is_missing, parse_literal
from sdpa_analyzer.server.errors import InputError, shorten_middle
from sdpa_analyzer.server.factorize import factorize
from sdpa_analyzer.server.folder import layout
from sdpa_analyzer.server.folder.cells import CELL_SEP
from sdpa_analyzer.server.folder.kernel_details import KernelDetails, read_kernel_details
from sdpa_analyzer.server.folder.manifest import PENDING_MARKER, check_complete
from sdpa_analyzer.server.roots import UNRESTRICTED, DataRoots
from sdpa_analyzer.server.vocab import CATEGORIES, E2E_MIN_MS, MAX_KERNEL_TO_E2E, SCOPES

KERNEL_SUM = "Kernel Time (µs)_sum"
KERNEL_MEAN = "Kernel Time (µs)_mean"
REQUIRED_COLUMNS = ("name", "operation_count", KERNEL_SUM)
# literal-typed columns parsed up front (perf_params and call stacks are read lazily, only where needed)
LITERAL_COLUMNS = ("Input Dims", "Input type", "Concrete Inputs")
_INT_NEST = re.compile(r"^[\d\s,()\[\]]*$")
_TRAILING_COMMA = re.compile(r",\s*\]")
_PARENS_TO_BRACKETS = str.maketrans("()", "[]")
_PLAIN_ASCII = str.maketrans("", "", "0123456789,()[] \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f\x00")
_DIGITS_TO_ONE = str.maketrans("0123456789", "1111111111")
# digits 1-9 → d, 0 stays, anything else → space: a number with a leading zero reads " 0d" or " 00"
_ZERO_CHECK = {c: "d" for c in range(ord("1"), ord("9") + 1)} | {ord("0"): "0"}
_ZERO_CHECK_TABLE = str.maketrans({chr(c): (_ZERO_CHECK.get(c) or " ") for c in range(128)})



@dataclass
class CategoryData:
    output_dir: Path
    category: str
    status: str  # OK | NO_DATA
    csv_path: Path
    metadata_path: Path
    df: pd.DataFrame | None = None
    roots: DataRoots = UNRESTRICTED  # what the files were read through; outputs beside them are written through it
    metadata: dict[str, Any] = field(default_factory=dict)
    manifest: dict[str, Any] | None = None
    e2e_ms: float | None = None
    comparison_scope: str = "standalone"
    trace2_e2e_ms: float | None = None
    warnings: list[str] = field(default_factory=list)
    # parsed Input type / Concrete Inputs, aligned with df rows (None where the cell is empty)
    parsed: dict[str, list[Any]] = field(default_factory=dict)
    kernels: KernelDetails = field(default_factory=lambda: KernelDetails.empty(0))
    # Input Dims: rows whose cell is a plain integer nest (checked at load, read on demand or in bulk by
    # perf_models); the other non-empty cells, parsed strictly at load
    dims_plain: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))
    dims_other: dict[int, Any] = field(default_factory=dict)

    def time_base(self) -> tuple[float | None, float | None]:
        """(GPU busy ms, GPU idle ms) of the profiled window as analyze_trace recorded them (metadata `e2e_window`);
        None where the metadata has no such number (an orchestrator's folder, an older analysis)."""
        window = self.metadata.get("e2e_window") if isinstance(self.metadata, dict) else None
        if not isinstance(window, dict):
            return None, None

        def ms(v: Any) -> float | None:
            ok = isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) and v >= 0
            return float(v) if ok else None

        return ms(window.get("busy_time_ms")), ms(window.get("idle_time_ms"))

    def input_dims(self, i: int) -> Any:
        """Row i's parsed Input Dims: a list nest for plain cells (as JSON), the literal otherwise, None if empty."""
        if len(self.dims_plain) and self.dims_plain[i]:
            assert self.df is not None
            return orjson.loads(_int_nest_json(self.df["Input Dims"].iat[i]))
        return self.dims_other.get(int(i))

    def input_dims_cells(self) -> list[Any]:
        """Every row's Input Dims as parse_op takes them: plain cells as their text (perf_models reads those
        in bulk), the others parsed."""
        if self.df is None or "Input Dims" not in self.df:
            return [None] * (0 if self.df is None else len(self.df))
        cells = self.df["Input Dims"].tolist()
        out: list[Any] = [None] * len(cells)
        for i in np.flatnonzero(self.dims_plain).tolist():
            out[i] = cells[i]
        for i, v in self.dims_other.items():
            out[i] = v
        return out


def check_category(category: str) -> str:
    """The category name, refused unless it is one of ours (a typo must never read as "no attention ops")."""
    cat = str(category).strip()
    if cat not in CATEGORIES:
        shown = shorten_middle(repr(category), 60)
        raise InputError(f"category={shown} is invalid: expected one of {', '.join(CATEGORIES)}")
    return cat


def read_json_file(path: Path, what: str, roots: DataRoots = UNRESTRICTED) -> dict[str, Any]:
    """A JSON object file, read through the data roots; every failure is one InputError naming the file."""
    try:
        data = orjson.loads(roots.read_bytes(path, what=what))
    except FileNotFoundError:
        raise InputError(f"{what} not found: {path}") from None
    except orjson.JSONDecodeError as exc:
        raise InputError(f"{path}: not valid JSON ({exc.msg} at char {exc.pos}); rewrite {what} as JSON") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read {what} ({exc.strerror or type(exc).__name__})") from None
    if not isinstance(data, dict):
        raise InputError(f"{path}: {what} must be a JSON object, found {type(data).__name__}")
    return data


def category_input_files(output_dir: Path, category: str) -> tuple[Path, ...]:
    """Every file load_category reads: ops CSV, metadata, manifest, trace-2 GPU utilization, pending-run marker."""
    cat = check_category(category)
    return (
        output_dir / layout.ops_csv(cat),
        output_dir / layout.metadata_json(cat),
        output_dir / layout.manifest(),
        output_dir / layout.trace2_utilization(),
        output_dir / PENDING_MARKER,
    )


_TRACE_SUFFIXES = (".json", ".json.gz", ".pt.trace.json", ".pt.trace.json.gz")
_CHILDREN_LOOKED_AT = 200  # a folder of thousands of entries is not searched further for hints


def check_analysis_folder(output_dir: Path, roots: DataRoots = UNRESTRICTED) -> None:
    """Refuse a folder that is not an analysis folder (no category_data/): a parent of one, a folder of traces, an
    empty or unrelated folder. One line naming what was expected, what is there, and the fix — never a NO_DATA
    result, which would tell the LLM to write "no attention" into the wrong folder."""
    if roots.is_dir(output_dir / layout.CATEGORY_DATA, what="category_data folder"):
        return
    folders: list[str] = []
    try:
        with roots.directory(output_dir, what="output_dir") as fd:
            names = sorted(os.listdir(fd))[:_CHILDREN_LOOKED_AT]
            for n in names:
                try:
                    if stat.S_ISDIR(os.stat(n, dir_fd=fd, follow_symlinks=False).st_mode):
                        folders.append(n)
                except OSError:
                    continue
    except OSError:
        names = []
    inner = [n for n in folders if roots.is_dir(output_dir / n / layout.CATEGORY_DATA, what="analysis folder")]
    traces = [n for n in names if n.endswith(_TRACE_SUFFIXES) and not n.startswith(".")]
    where = f"{output_dir} is not an analysis folder (no {layout.CATEGORY_DATA}/ inside)"
    if inner:
        shown = ", ".join(str(output_dir / n) for n in inner[:3]) + (", …" if len(inner) > 3 else "")
        raise InputError(f"{where}: it holds analysis folders — pass one of them ({shown})")
    if traces:
        raise InputError(
            f"{where}: it holds profiler traces ({', '.join(traces[:2])}{', …' if len(traces) > 2 else ''}) — run "
            f"analyze_trace on one first (sdpa-analyzer analyze {traces[0]} -o OUT), then pass OUT"
        )
    what = "it is empty" if not names else f"it holds {', '.join(names[:3])}{', …' if len(names) > 3 else ''}"
    raise InputError(f"{where}; {what} — pass the folder analyze_trace wrote (or an orchestrator's analysis folder)")


def load_category(output_dir: Path, category: str, roots: DataRoots = UNRESTRICTED) -> CategoryData:
    """Load and validate one category, every file read through `roots` (output_dir is resolved again there).

    A folder that analyze_trace wrote is checked against its manifest first (server.folder.manifest): a
    category it lists must be there, from the same run; one it does not list is NO_DATA; an interrupted run
    is an error, never a silent NO_DATA."""
    cat = check_category(category)
    st = roots.stat(output_dir, what="output_dir")
    if st is None:
        raise InputError(f"output_dir not found: {output_dir} — pass an analysis folder (or run analyze_trace first)")
    if not roots.is_dir(output_dir, what="output_dir"):
        raise InputError(f"output_dir is not a folder: {output_dir}")
    check_analysis_folder(output_dir, roots)
    csv_path, meta_path, manifest_path, _, marker_path = category_input_files(output_dir, cat)
    data = CategoryData(
        output_dir=output_dir, category=cat, status="NO_DATA", csv_path=csv_path, metadata_path=meta_path, roots=roots
    )

    if roots.exists(manifest_path, what="category manifest"):
        data.manifest = read_json_file(manifest_path, "category manifest", roots)
        scope = data.manifest.get("comparison_scope")
        if scope in SCOPES:
            data.comparison_scope = scope
    if roots.exists(meta_path, what=f"{cat} metadata"):
        data.metadata = read_json_file(meta_path, f"{cat} metadata", roots)
        # what analyze_trace found about the category as a whole (attention kernels outside every row, captures)
        data.warnings += [str(w) for w in (data.metadata.get("warnings") or []) if isinstance(w, str)][:10]
    marker = read_json_file(marker_path, "analyze marker", roots) if roots.exists(marker_path) else None
    has_csv = roots.exists(csv_path, what=f"{cat} ops CSV")
    listed = check_complete(output_dir, cat, data.manifest, data.metadata, marker, has_csv)
    if listed is False:  # a complete analysis of ours that found no ops of this category
        if has_csv:
            data.warnings.append(f"{csv_path.name} is not part of the analysis the manifest records: ignored")
        return data
    if not has_csv:
        return data

    data.status = "OK"
    data.df = _read_csv(csv_path, roots)
    _validate_columns(data.df, csv_path)
    data.e2e_ms = _e2e_baseline(data, manifest_path)
    _read_trace2_baseline(data)
    has_trace2_columns = any(c in data.df.columns for c in ("speedup (trace2/trace1)", "delta_us (trace2 - trace1)"))
    if data.manifest is None or data.manifest.get("comparison_scope") not in SCOPES:
        data.comparison_scope = "comparative" if has_trace2_columns else "standalone"
    _parse_literal_columns(data)
    return data


_READ_CHUNK_ROWS = 8192
_DISTINCT_SAMPLE_ROWS = 1024  # the rows a column's repetition is judged on (a whole block when blocks are larger)
_MAX_EXACT = float(2**53)


def _read_csv(path: Path, roots: DataRoots = UNRESTRICTED) -> pd.DataFrame:
    """The ops CSV in one pass, a block of rows at a time, every repeated text cell kept once.

    Real ops CSVs repeat their large cells (call stacks of 1-4 KB, kernel summaries) across thousands of rows.
    Read whole, pandas' C tokenizer holds every token of the file at once (a 100k-row, 400 MB CSV then peaks at
    ~600 MB); read a block at a time, each block makes its own copy of each repeated cell. So each block's text
    column is factorized (C-level passes: pandas' parser already gives equal cells of a block one string) and only
    its distinct cells are looked up in the column's table of distinct cells: one string per distinct cell of the
    file, and no Python step per row. A column whose first block barely repeats (shapes, perf_params, kernel
    summaries) is taken as it is."""
    distinct: dict[str, str] = {}
    unique_cells: set[str] = set()  # columns whose first rows barely repeat: not interned
    sampled: dict[str, tuple[int, int]] = {}  # per column until it is decided: rows seen, distinct cells per block
    blocks = []
    fh = roots.open_read(path, what="ops CSV")
    try:
        _check_first_row(fh, path)
        # index_col=False: a first row longer than the header must not turn its extra fields into an index
        # (pandas would build a MultiIndex of every extra field: minutes for a 500 KB row, the fields lost)
        with pd.read_csv(
            fh, dtype={"name": str}, keep_default_na=True, chunksize=_READ_CHUNK_ROWS, index_col=False
        ) as reader:
            for block in reader:
                for col in block.columns:
                    if block[col].dtype.kind in "OT" and col not in unique_cells:
                        cells, kept = _shared_cells(block[col].to_numpy(dtype=object), distinct)
                        block[col] = pd.Series(cells, index=block.index, dtype=object, copy=False)
                        if col in sampled or not blocks:
                            rows, kinds = sampled.get(col, (0, 0))
                            rows, kinds = rows + len(cells), kinds + kept
                            sampled[col] = (rows, kinds)
                            if rows >= _DISTINCT_SAMPLE_ROWS:  # decided once, on the column's first rows
                                del sampled[col]
                                if kinds > rows // 2:  # mostly distinct (shapes, perf_params): nothing to share
                                    unique_cells.add(col)
                blocks.append(block)
    except pd.errors.EmptyDataError:
        raise InputError(f"{path}: the CSV is empty — regenerate it (analyze_trace) or delete it for NO_DATA") from None
    except (pd.errors.ParserError, UnicodeDecodeError, csv.Error) as exc:
        first = str(exc).strip().splitlines()[-1] if str(exc).strip() else type(exc).__name__
        raise InputError(f"{path}: not a readable CSV ({first}) — regenerate it with analyze_trace") from None
    finally:
        fh.close()
    if not blocks:  # a header and no rows
        with roots.open_read(path, what="ops CSV") as again:
            return pd.read_csv(again, dtype={"name": str}, nrows=0, index_col=False)
    return blocks[0] if len(blocks) == 1 else pd.concat(blocks, ignore_index=True)


def _shared_cells(cells: np.ndarray, distinct: dict[str, str]) -> tuple[np.ndarray, int]:
    """`cells` with each text cell replaced by the one string of its value in `distinct` (added there when new),
    and how many distinct cells the block had. Empty cells stay as pandas reads them (NaN)."""
    codes, uniques = factorize(cells)
    shared = np.empty(len(uniques) + 1, dtype=object)
    for k, value in enumerate(uniques):  # per distinct cell of the block, not per row
        shared[k] = distinct.setdefault(value, value) if type(value) is str else value
    shared[-1] = np.nan  # code -1: an empty cell
    return shared[codes], len(uniques)


# the csv module's cell limit (128 KiB) is below what real cells reach (call stacks, kernel summaries); raising
# it only ever lets longer cells through, and MAX_LITERAL_CHARS bounds what is parsed further
csv.field_size_limit(max(csv.field_size_limit(), 1 << 26))


def _check_first_row(fh: Any, path: Path) -> None:
    """Refuse a first data row with more fields than the header (pandas would not: see _read_csv); later rows
    are pandas' own check. Reads two records with the csv module (linear in their length), then rewinds."""
    text = io.TextIOWrapper(fh, encoding="utf-8", newline="")
    try:
        reader = csv.reader(text)
        header = next(reader, None)
        first = next(reader, None)
    finally:
        text.detach()
    fh.seek(0)
    if header is not None and first is not None and len(first) > len(header):
        raise InputError(
            f"{path}: row 2 has {len(first)} fields but the header has {len(header)} — the CSV is malformed; "
            "regenerate it with analyze_trace"
        )


def _validate_columns(df: pd.DataFrame, path: Path) -> None:
    missing = [c for c in REQUIRED_COLUMNS if c not in df.columns]
    if missing:
        raise InputError(
            f"{path}: missing column(s) {', '.join(repr(c) for c in missing)} — the ops CSV needs "
            f"{', '.join(REQUIRED_COLUMNS)} (see docs/formats.md); regenerate it with analyze_trace"
        )
    if df.empty:
        return
    if df["name"].isna().any():
        row = int(np.flatnonzero(df["name"].isna().to_numpy())[0])
        raise InputError(f"{path}: row {row + 2} has an empty 'name' — every row needs the op name")
    for col in (KERNEL_SUM, "operation_count") + ((KERNEL_MEAN,) if KERNEL_MEAN in df.columns else ()):
        values = pd.to_numeric(df[col], errors="coerce")
        numbers = values.to_numpy(dtype=float)
        with np.errstate(invalid="ignore"):
            # beyond 2^53 a count or a µs time is no real trace's, and int64/float64 would no longer hold it
            bad = values.isna().to_numpy() | (numbers < 0) | ~np.isfinite(numbers) | (numbers > _MAX_EXACT)
            if col == "operation_count":
                bad |= (numbers == 0) | (numbers != np.floor(numbers))
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            want = "whole positive count" if col == "operation_count" else "finite non-negative time in µs"
            raise InputError(
                f"{path}: column {col!r} row {row + 2} is {df[col].iloc[row]!r} — expected a {want} "
                "(at most 2^53); fix or drop the row"
            )
        df[col] = values


def metadata_ms(value: Any, source: Path, field: str) -> float:
    """A metadata time in ms, checked before anything uses it: a JSON number (not a boolean, not a string),
    finite, at least E2E_MIN_MS and at most 2^53. Anything else is one InputError naming the file and the field."""
    shown = shorten_middle(repr(value), 40)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InputError(
            f"{source}: {field} is {shown} ({type(value).__name__}) — it must be a JSON number of ms; fix the "
            "metadata or rerun analyze_trace"
        )
    ms = float(value)
    if not math.isfinite(ms) or ms < E2E_MIN_MS or ms > _MAX_EXACT:
        raise InputError(
            f"{source}: {field} is {shown} — the E2E baseline must be a positive number of ms between "
            f"{E2E_MIN_MS:g} and 2^53; fix the metadata or rerun analyze_trace"
        )
    return ms


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
    e2e = metadata_ms(util["total_time_ms"], source, "gpu_utilization.total_time_ms")
    _check_plausible(data, e2e, source, "gpu_utilization.total_time_ms")
    return e2e


def _check_plausible(data: CategoryData, e2e_ms: float, source: Path, field: str) -> None:
    """The baseline against the category's own kernel time (its ops ran inside the window): far more kernel time
    than window is a wrong number (a unit, a denormal), refused; some more is overlap, said in a warning."""
    assert data.df is not None
    kernel_ms = float(data.df[KERNEL_SUM].to_numpy(dtype=float).sum()) / 1000.0
    ratio = kernel_ms / e2e_ms
    if ratio > MAX_KERNEL_TO_E2E:
        raise InputError(
            f"{source}: {field} is {e2e_ms:g} ms, but the {data.category} ops alone ran {kernel_ms:.6g} ms "
            f"({ratio:.3g}x the window, more than {MAX_KERNEL_TO_E2E:g}x overlap can explain) — fix the E2E "
            "baseline (ms of the profiled window) or rerun analyze_trace"
        )
    if ratio > 1.0 + 1e-6:
        data.warnings.append(
            f"the {data.category} kernel time ({kernel_ms:.6g} ms) exceeds the E2E baseline ({e2e_ms:g} ms, "
            f"{field}): kernels overlapped on several streams or GPUs, or the baseline is too small; shares of "
            "E2E above 100 % follow from it"
        )


def _read_trace2_baseline(data: CategoryData) -> None:
    _, _, manifest_path, p, _ = category_input_files(data.output_dir, data.category)
    util, source = None, p
    if data.roots.exists(p, what="trace-2 GPU utilization"):
        util = read_json_file(p, "trace-2 GPU utilization", data.roots)
    elif data.manifest and isinstance(data.manifest.get("trace2_gpu_utilization"), dict):
        util, source = data.manifest["trace2_gpu_utilization"], manifest_path
    if isinstance(util, dict) and util.get("total_time_ms") is not None:
        data.trace2_e2e_ms = metadata_ms(util["total_time_ms"], source, "trace-2 gpu_utilization.total_time_ms")


def _parse_cells(values: pd.Series, col: str, path: Path, rows: list[int] | None = None) -> list[Any]:
    """Parse each distinct cell once (rows often repeat signatures), strictly, never with eval."""
    cells = values.tolist()
    codes, uniques = factorize(cells)
    valid = np.flatnonzero(codes >= 0)
    _, first_at = np.unique(codes[valid], return_index=True)
    first = valid[first_at]  # each distinct cell's first row (codes number cells by first appearance)
    parsed: list[Any] = []
    for u, j in zip(uniques, first.tolist(), strict=True):
        try:
            parsed.append(parse_literal(str(u)))
        except PerfModelError as exc:
            i = rows[j] if rows is not None else j
            raise InputError(
                f"{path}: column {col!r} row {i + 2} cannot be read ({exc}) — fix the cell; only literal "
                f"tuples/lists/dicts/numbers/strings, nested at most {MAX_NESTING} deep, are accepted"
            ) from None
    table = np.empty(len(parsed) + 1, dtype=object)  # the last slot (code -1) stays None: an empty cell
    for k, v in enumerate(parsed):
        table[k] = v  # one by one: numpy would unpack tuples given as a list
    return table[codes].tolist()


def _int_nest_json(cell: str) -> str:
    """A plain integer-nest cell as JSON: brackets for parentheses, no trailing commas."""
    return _TRAILING_COMMA.sub("]", cell.translate(_PARENS_TO_BRACKETS))


def _check_int_nests(values: pd.Series, col: str, path: Path) -> tuple[np.ndarray, dict[int, Any]]:
    """Shape cells (`((16, 16, 559, 64), (), ...)`): which are plain integer nests, and the others parsed.

    A cell is plain when it holds only digits, commas, whitespace and brackets (checked on the whole column
    at once, then per cell only if some cell is not). Plain cells are checked to be well-formed nests with
    orjson, a block of rows at a time; if any is not, every cell takes the strict per-cell literal parser,
    which names the bad row.
    """
    cells = values.tolist()
    if set(map(type, cells)) == {str}:  # every cell text (the usual case): no step per row
        idx: list[int] | range = range(len(cells))
        texts = cells
    else:
        idx = [i for i, v in enumerate(cells) if type(v) is str]
        texts = [cells[i] for i in idx]
    joined = CELL_SEP.join(texts)
    # the separator is not a plain character, so the joined text is plain exactly when every cell is; deleting
    # the ASCII plain characters is a fast first check (Unicode whitespace is plain too: then the regex decides)
    if joined.count(CELL_SEP) != max(len(texts) - 1, 0) or (
        joined.translate(_PLAIN_ASCII) and not _INT_NEST.match(joined.replace(CELL_SEP, " "))
    ):
        plain = [bool(_INT_NEST.match(t)) for t in texts]
        idx = [i for i, ok in zip(idx, plain, strict=True) if ok]
        texts = [t for t, ok in zip(texts, plain, strict=True) if ok]
    del joined
    done = np.zeros(len(cells), dtype=bool)
    if _plain_nests_well_formed(texts):
        done[idx if isinstance(idx, list) else slice(idx.start, idx.stop)] = True
    # else some cell is malformed: the strict parser finds and names it
    del texts
    rest = [i for i in np.flatnonzero(~done).tolist() if not is_missing(cells[i])]
    other: dict[int, Any] = {}
    if rest:
        sub = _parse_cells(values.iloc[rest], col, path, rows=rest)
        other = {i: v for i, v in zip(rest, sub, strict=True) if v is not None}
    return done, other


def _plain_nests_well_formed(texts: list[str]) -> bool:
    """Whether every plain cell (digits, commas, whitespace, brackets) is one well-formed integer nest no deeper than
    MAX_NESTING, checked without building the nests: only its structure matters here (the bulk shape reader parses
    the numbers later). Every digit becomes 1, so cells that differ only in their numbers share one skeleton, and
    orjson checks each distinct skeleton once; a leading zero (`007`, not a literal) is looked for in the text."""
    if not texts:
        return True
    # ',\s*]' never spans a separator, so one substitution over the column equals one per cell
    body = _int_nest_json(CELL_SEP.join(texts))
    marked = (" " + body).translate(_ZERO_CHECK_TABLE)
    if " 0d" in marked or " 00" in marked:
        return False
    _, skeletons = factorize(body.translate(_DIGITS_TO_ONE).split(CELL_SEP))
    for skeleton in skeletons:
        try:
            orjson.loads(skeleton)  # exactly one JSON value, or it raises
        except orjson.JSONDecodeError:
            return False
        if _bracket_depth(skeleton) > MAX_NESTING:  # the bulk shape reader recurses per level
            return False
    return True


_BRACKET_STEP = np.zeros(256, dtype=np.int64)
_BRACKET_STEP[[ord("["), ord("(")]] = 1
_BRACKET_STEP[[ord("]"), ord(")")]] = -1


def _bracket_depth(text: str) -> int:
    """Deepest nesting of a block of balanced integer-nest cells (no strings in them), vectorized."""
    codes = np.frombuffer(text.encode("utf-8"), dtype=np.uint8)
    return int(np.cumsum(_BRACKET_STEP[codes]).max(initial=0))


def _parse_literal_columns(data: CategoryData) -> None:
    assert data.df is not None
    data.dims_plain = np.zeros(len(data.df), dtype=bool)
    for col in LITERAL_COLUMNS:
        if col == "Input Dims":
            if col in data.df.columns:
                data.dims_plain, data.dims_other = _check_int_nests(data.df[col], col, data.csv_path)
        elif col in data.df.columns:
            data.parsed[col] = _parse_cells(data.df[col], col, data.csv_path)
        else:
            data.parsed[col] = [None] * len(data.df)
    if "kernel_details_summary" in data.df.columns:
        data.kernels = read_kernel_details(data.df["kernel_details_summary"].tolist())
        # the cells live on packed in data.kernels.cells: as a column they were most of the category's memory
        data.df = data.df.drop(columns="kernel_details_summary")
    else:
        data.kernels = KernelDetails.empty(len(data.df))
        data.warnings.append(
            f"{data.csv_path.name}: no kernel_details_summary column; library and kernel names unknown"
        )
