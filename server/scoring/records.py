"""Op rows → perf_models → one roofline record per row (a column-oriented DataFrame).

Parsing is batched (`parse_ops_table`: one plan per structural group of rows, shapes extracted with
numpy) and all the math runs vectorized over the whole table in one estimate_work + roofline call.
Descriptive columns (labels, kernel names) are built once per distinct value and mapped onto rows.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from sdpa_analyzer.perf_models.assess import assess
from sdpa_analyzer.perf_models.config import AttentionConfig, BwdConvention
from sdpa_analyzer.perf_models.dtypes import SHORT_LABEL, try_normalize_dtype
from sdpa_analyzer.perf_models.estimate import estimate_work
from sdpa_analyzer.perf_models.hardware import GpuSpec
from sdpa_analyzer.perf_models.kernels import classify_kernels
from sdpa_analyzer.perf_models.limits import oversized
from sdpa_analyzer.perf_models.literals import LiteralParseError, parse_literal
from sdpa_analyzer.perf_models.model_attention import default_family
from sdpa_analyzer.perf_models.ops.batch import ParsedTable, parse_ops_table
from sdpa_analyzer.perf_models.outputs import MODEL_OUTPUTS
from sdpa_analyzer.perf_models.registry import ParsedOp, parse_op
from sdpa_analyzer.perf_models.row_outputs import row_outputs
from sdpa_analyzer.server.factorize import factorize
from sdpa_analyzer.server.folder.cells import CELL_SEP
from sdpa_analyzer.server.folder.read import KERNEL_SUM, CategoryData
from sdpa_analyzer.server.vocab import profile_type

TRUNC_KERNEL = 75
MODULE_PREFIX = "nn.Module: "
SPECIFIC_TYPES = ("flash", "memory_efficient", "cudnn", "math", "unfused", "paged")
# a quoted string, either quote, backslash escapes inside; the loop unrolled ([^'\\]* runs, then an escape) so the
# engine takes a run per step, not a character: ~4x faster on 3 KB call stacks than `(?:[^'\\]|\\.)*`
_QUOTED = re.compile(r"'([^'\\]*(?:\\.[^'\\]*)*)'|\"([^\"\\]*(?:\\.[^\"\\]*)*)\"")
# an integer nest as compact JSON (brackets, no whitespace; trailing commas go after) and without its numbers
_COMPACT_NEST = str.maketrans("()", "[]", " \t\n\r\x0b\x0c")
_NO_DIGITS = str.maketrans("", "", "0123456789")


@dataclass
class RooflineTable:
    records: pd.DataFrame
    gpu: GpuSpec
    bytes_model: str
    parsed: ParsedTable
    peak_notes: list[str] = field(default_factory=list)
    source: CategoryData | None = field(default=None, repr=False)  # the loaded data these records came from
    _codes: dict[str, tuple[np.ndarray, list[Any]]] = field(default_factory=dict, repr=False)

    def config(self, row: int) -> AttentionConfig | None:
        return self.parsed.config(row)

    def dominant_compute_spec(self) -> str | None:
        return dominant_compute_spec([self])

    def column_codes(self, column: str) -> tuple[np.ndarray, list[Any]]:
        """Codes and values of a records column (factorize(..., exact=False): mostly distinct columns are not
        hashed), computed once: the CSV and the metrics JSON both encode text columns once per distinct
        value. Columns built from codes come with them (see compute_records). Values may be None/NaN only
        where the code is -1."""
        if column in self._codes:
            return self._codes[column]
        codes = factorize(self.records[column].to_numpy(dtype=object), exact=False)
        if len(codes[1]) <= len(self.records) // 2:  # a mostly distinct column is cheap to redo: not kept (MBs)
            self._codes[column] = codes
        return codes


def dominant_compute_spec(tables: list[RooflineTable]) -> str | None:
    """The compute spec with the most kernel time over the tables (ties: the alphabetically first); None when no
    row has one.

    One definition for every place that shows one roof for a table (a result's peaks, the metrics' default peak,
    the chart's ceiling): deterministic, and weighted by what the time is spent on."""
    frames = [t.records[["compute_spec", "time_ms"]] for t in tables]
    if not frames:
        return None
    totals = pd.concat(frames).groupby("compute_spec", dropna=True, sort=True)["time_ms"].sum()
    return None if totals.empty else str(totals.idxmax())


# ---------------------------------------------------------------- cell formatting (once per distinct value)
def short_args(dims: Any, types: Any) -> str:
    """`(16,16,559,64) bf16<br>...`: each tensor input; empty and Scalar slots dropped."""
    if not isinstance(dims, list | tuple):
        return ""
    types = list(types) if isinstance(types, list | tuple) else []
    parts = []
    for i, d in enumerate(dims):
        if not isinstance(d, list | tuple) or len(d) == 0:
            continue
        t = types[i] if i < len(types) else ""
        canon = try_normalize_dtype(str(t)) if t else None
        label = SHORT_LABEL.get(canon, str(t)) if canon else str(t)
        parts.append(f"({','.join(str(x) for x in d)}) {label}".rstrip())
    return "<br>".join(parts)


def truncate_kernel(name: str) -> str:
    return name if len(name) <= TRUNC_KERNEL else name[:TRUNC_KERNEL] + "..."


def kernel_name_cells(names: list[str]) -> tuple[str, str]:
    """Full and truncated kernel-name cells; several kernels as `Kernel 1: a<br>Kernel 2: b`."""
    if not names:
        return "", ""
    if len(names) == 1:
        return names[0], truncate_kernel(names[0])
    full = "<br>".join(f"Kernel {i + 1}: {n}" for i, n in enumerate(names))
    trunc = "<br>".join(f"Kernel {i + 1}: {truncate_kernel(n)}" for i, n in enumerate(names))
    return full, trunc


def chains(call_stack: Any) -> tuple[list[str], list[str]]:
    """(module_chain, call_chain) from a `call_stack_full` cell (string or list), without evaluating it.

    The cell is a list repr root→kernel whose tail holds one sub-list per kernel; quoted strings are read
    in order with a regex (never eval), keeping the common prefix and the first kernel's branch.
    """
    if call_stack is None or (isinstance(call_stack, float) and call_stack != call_stack):
        return [], []
    if isinstance(call_stack, list | tuple):
        flat = [str(x) for x in call_stack if isinstance(x, str)]
        for x in call_stack:
            if isinstance(x, list | tuple):
                flat.extend(str(y) for y in x if isinstance(y, str))
                break
    else:
        text = str(call_stack)
        cut = text.find("[", 1)
        head, tail = (text[:cut], text[cut:]) if cut > 0 else (text, "")
        first_branch = tail[: tail.find("]") + 1] if tail else ""
        flat = [a or b for a, b in _QUOTED.findall(head + first_branch)]
    modules: list[str] = []
    for f in flat:
        if f.startswith(MODULE_PREFIX):
            modules.append(f[len(MODULE_PREFIX) :])
    return modules, flat


# ---------------------------------------------------------------- parsing and classification
def _parse(data: CategoryData) -> ParsedTable:
    """Batch-parse every row; rows that failed on their own arguments, and paged rows (whose step token counts are
    in perf_params), are parsed again with perf_params.

    perf_params cells are unique per row in real CSVs, so they are only parsed for the rows that need them.
    """
    df = data.df
    assert df is not None
    names = df["name"].astype(str).tolist()
    dims = data.input_dims_cells()
    types, conc = (data.parsed[c] for c in ("Input type", "Concrete Inputs"))
    pt = parse_ops_table(names, dims, types, conc, [None] * len(names))
    raw_pp = df["perf_params"].tolist() if "perf_params" in df else [None] * len(names)
    # paged rows read their step's token counts from perf_params even when their arguments alone give a model
    # (a bound from max_seqlen_k): the annotation's sums make it exact
    paged = np.asarray(pt.attention_type == "paged", dtype=bool)
    retry = [i for i in np.flatnonzero(~pt.modeled | paged) if isinstance(raw_pp[i], str) and raw_pp[i].strip()]
    if retry:
        pt = pt.with_rows({int(i): parse_op(names[i], dims[i], types[i], conc[i], raw_pp[i]) for i in retry})
    return _without_oversized(_ingest_reasons(pt, df))


def _ingest_reasons(pt: ParsedTable, df: pd.DataFrame) -> ParsedTable:
    """An unmodeled row says why as the trace's analysis found it (`perf_model_reason`: e.g. a kernel-made call whose
    length is known only as a range, non-causal, so no lower bound), not as the re-parse of its name and arguments
    gives it ("missing Input Dims")."""
    if "perf_model_reason" not in df:
        return pt
    said = df["perf_model_reason"].to_numpy(dtype=object)
    rows = [i for i in np.flatnonzero(~pt.modeled).tolist() if isinstance(said[i], str) and said[i].strip()]
    if not rows:
        return pt
    reason = pt.reason.copy()
    reason[rows] = said[rows]
    return replace(pt, reason=reason)


def _without_oversized(pt: ParsedTable) -> ParsedTable:
    """Rows beyond what the models count exactly (perf_models.limits: e.g. a batch of 2^40) become unmodeled
    with the reason, instead of wrapping int64 into 0 FLOPs; the other rows are scored as usual."""
    rows = np.flatnonzero(pt.modeled)
    reasons = oversized(pt.table)
    bad = {int(rows[k]): str(r) for k, r in enumerate(reasons.tolist()) if r is not None}
    if not bad:
        return pt
    return pt.with_rows(
        {
            i: ParsedOp(
                name=pt.name[i], config=None, reason=why, family=pt.family[i], layout=pt.layout[i],
                attention_type=pt.attention_type[i], direction=pt.direction[i], warnings=pt.warnings[i],
                source=pt.source[i],
            )
            for i, why in bad.items()
        }
    )


def _classify_rows(data: CategoryData) -> tuple[list[Any], np.ndarray]:
    """Kernel classification per distinct (kernel names, index of the longest kernel), and each row's index
    into that list.

    Attention type and library depend only on the names and on which kernel dominates, so rows that
    differ only in durations share one classification (made from the first such row's durations).
    """
    kd = data.kernels
    key = kd.codes * (int(kd.dominant.max(initial=-1)) + 2) + (kd.dominant + 1)
    _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    classes = []
    for kernels in kd.rows(first.tolist()):
        durs = [float(k["total_duration_us"] or 0.0) for k in kernels]
        classes.append(classify_kernels([k["name"] for k in kernels], durs))
    return classes, inverse.reshape(-1)


def _distinct(values: Any) -> tuple[np.ndarray, list[Any]]:
    """Codes and distinct values of an object column, keeping missing values as they are: pandas would turn
    None into NaN, and `None or ""` is not `nan or ""`. Missing values are told apart by type."""
    arr = np.fromiter(values, dtype=object, count=len(values))
    codes, out = factorize(arr)
    na = np.flatnonzero(codes < 0)
    if len(na):
        by_type: dict[type, int] = {}
        for i in na.tolist():
            v = arr[i]
            if type(v) not in by_type:
                by_type[type(v)] = len(out)
                out.append(v)
            codes[i] = by_type[type(v)]
    return codes, out


def _as_codes(values: list[Any], codes: np.ndarray) -> tuple[np.ndarray, list[Any]]:
    """(codes, values) of a column built as values[codes], in column_codes' form (missing values: -1)."""
    missing = [k for k, v in enumerate(values) if v is None or (isinstance(v, float) and v != v)]
    if missing:
        codes = np.where(np.isin(codes, missing), -1, codes)
    return codes, values


def _per_row(values: list[Any], codes: np.ndarray) -> np.ndarray:
    """values[codes] as an object array (values may be sequences, which np.array would unpack)."""
    table = np.empty(len(values), dtype=object)
    for k, v in enumerate(values):
        table[k] = v
    return table[codes]


def _final_type(op_type: str, kc: Any) -> str:
    """Op name when it is specific (e.g. `_scaled_dot_product_efficient_attention`), else the kernels' verdict."""
    kern = getattr(kc, "attention_type", None)
    if op_type in SPECIFIC_TYPES:
        return "unfused" if op_type == "math" else op_type
    if getattr(kc, "is_unfused", False):
        return "unfused"
    return kern if kern and kern != "unknown" else (op_type or "unknown")


# ---------------------------------------------------------------- the records
def compute_records(
    data: CategoryData,
    gpu: GpuSpec,
    *,
    bytes_model: str = "compulsory",
    bwd_convention: BwdConvention = BwdConvention.FIVE_GEMM,
    skip_masked_tiles: bool = True,
) -> RooflineTable:
    df = data.df
    assert df is not None
    n = len(df)
    pt = _parse(data)
    counts = df["operation_count"].to_numpy(dtype=float)
    ksum = df[KERNEL_SUM].to_numpy(dtype=float)
    mean_us = ksum / np.maximum(counts, 1)
    classes, class_of = _classify_rows(data)
    op_codes, op_types = _distinct(pt.attention_type)
    pair_codes, pairs = pd.factorize(op_codes * len(classes) + class_of)
    final = [_final_type(op_types[int(p) // len(classes)], classes[int(p) % len(classes)]) for p in pairs]
    att_types = _per_row(final, pair_codes)
    kernel_att = [getattr(k, "attention_type", None) for k in classes]
    known: dict[str, tuple[np.ndarray, list[Any]]] = {
        "attention_type": _as_codes(final, pair_codes),
        "kernel_attention_type": _as_codes(kernel_att, class_of),
    }
    idx = np.flatnonzero(pt.modeled)

    rec: dict[str, Any] = {
        "row": np.arange(n),
        "name": df["name"].astype(str).to_numpy(dtype=object),
        "count": counts.astype(np.int64),
        "time_ms": ksum / 1000.0,
        "mean_us": mean_us,
        "has_model": pt.modeled.copy(),
        "direction": pt.direction,
        "attention_type": att_types,
        "op_attention_type": pt.attention_type,
        "kernel_attention_type": _per_row(kernel_att, class_of),
        "family": pt.family,
        "layout": pt.layout,
        "config_source": pt.source,
        "mask": pt.mask_label,
        "dtype": pt.dtype_q,
    }
    # every row modeled (the usual case): each output column is the model's array itself, cast as the empty column
    # would have cast it (10^5 rows: ~70 MB of columns never allocated only to be overwritten)
    every_row = n > 0 and len(idx) == n
    for o in MODEL_OUTPUTS:  # a row without a model has no value: NaN, None, False
        rec[o.name] = None if every_row else _empty_column(o.kind, n)  # None: a place in the column order
    if not every_row:
        rec["band_status"][:] = "none"
    # rows without warnings share one empty list (10^5 lists of their own were ~6 MB and 0.2 s); `warn` gives a
    # row its own list before adding to it, so the shared one stays empty
    no_warnings: list[str] = []
    warnings: list[list[str]] = [list(w) if w else no_warnings for w in pt.warnings]

    def warn(i: int, message: str, first: bool = False) -> None:
        warnings[i] = [message, *warnings[i]] if first else [*warnings[i], message]

    for i in np.flatnonzero(~pt.modeled).tolist():
        warn(i, f"no perf model: {pt.reason[i]}", first=True)

    if len(idx):
        t = pt.table
        tile_families = _per_row([getattr(k, "tile_family", None) for k in classes], class_of)[idx]
        tile_families = np.where(tile_families == None, default_family(gpu), tile_families)  # noqa: E711
        work = estimate_work(t, bwd_convention=bwd_convention, skip_masked_tiles=skip_masked_tiles,
                             family=tile_families, num_sms=getattr(gpu, "sm_count", None))
        a = assess(t, work, gpu, mean_us[idx], bytes_model=bytes_model, attention_types=att_types[idx])
        rf = a.roofline
        for name, values in row_outputs(t, work, a, gpu, bytes_model).items():
            if every_row:
                rec[name] = np.asarray(values, dtype=_EMPTY_DTYPES.get(_KIND_OF[name], object))
            else:
                rec[name][idx] = values
        unknown_window = np.flatnonzero(t.window_unknown)
        if len(unknown_window):
            rec["mask"] = np.asarray(rec["mask"], dtype=object).copy()
            rec["mask"][idx[unknown_window]] = "sliding window (size unknown: modeled causal)"
        for j in np.flatnonzero(a.peak_tflops_kind == "missing"):
            warn(idx[j], f"{gpu.name} has no compute roof for {pt.dtype_q[idx[j]]}; efficiency not computed")
        for j in np.flatnonzero(~np.asarray(rf.has_measurement)):
            warn(idx[j], "no measured kernel time; efficiency not computed")
        # a serving row above the roofline whose bound is a window the trace does not give: what resolves it (the
        # other causes are the row's model_check, or its step-split warning)
        for j in np.flatnonzero(rf.is_anomaly & t.window_unknown & ~t.step_split).tolist():
            warn(idx[j], _window_anomaly_cause(float(rf.efficiency_pct[j])))
        flagged = np.flatnonzero(rf.anomaly_flag)
        for j in flagged.tolist():
            warn(
                idx[j],
                f"efficiency {rf.efficiency_pct[j]:.1f}% exceeds the roofline by more than 10%: check the shapes, the "
                "peaks or whether the measured time misses kernels — an anomaly, not an excellent kernel"
            )
    rec["warnings"] = warnings
    rec["no_model_reason"] = pt.reason
    _add_descriptive_columns(rec, data, classes, class_of, known)
    # copy=False: the columns as built, one block each (pandas would copy every float column into one 2-D block:
    # ~60 columns, ~50 MB at 10^5 rows, nothing here reads the frame row-wise); nothing writes to `rec` after this
    records = pd.DataFrame(rec, copy=False)
    notes = []
    if bytes_model == "tiled" and gpu.vendor == "nvidia":
        notes.append("tiled bytes assume tile re-reads miss the cache; on NVIDIA parts most re-reads hit L2")
    if bytes_model == "compulsory" and gpu.vendor == "amd":
        notes.append(
            "compulsory bytes assume perfect reuse; on MI300-class parts (4 MB L2 per XCD) the tiled estimate "
            "is the better guess of HBM traffic (bytes_model='tiled')"
        )
    return RooflineTable(
        records=records, gpu=gpu, bytes_model=bytes_model, parsed=pt, peak_notes=notes, source=data, _codes=known
    )


def _window_anomaly_cause(efficiency: float) -> str:
    """Why a serving row modeled with an unknown window can read above 100 %, and what resolves it."""
    return (f"efficiency {efficiency:.1f}% is above 100%: an upper bound, not a measurement — sliding-window "
            "layers whose window the trace does not give are modeled full causal; the model's config.json "
            "(--model-config / model_config) resolves them")


_KIND_OF = {o.name: o.kind for o in MODEL_OUTPUTS}
_EMPTY_DTYPES = {"float": np.float64, "int": np.float64, "bool": np.bool_}  # other kinds: object (_empty_column)


def _empty_column(kind: str, n: int) -> np.ndarray:
    if kind in ("float", "int"):  # ints too: NaN marks "no value" (the catalogue's int fields come out as ints)
        return np.full(n, np.nan)
    if kind == "bool":
        return np.zeros(n, dtype=bool)
    return np.full(n, None, dtype=object)


def _unique_map(values: list[Any], fn: Any) -> tuple[np.ndarray, list[Any]]:
    """fn of each distinct value, once, and each row's index into those results."""
    if not set(map(type, values)) <= {str, float, type(None)}:  # parsed cells (lists): by their repr
        codes = factorize([v if isinstance(v, str) else repr(v) for v in values])[0]
        firsts = np.unique(codes, return_index=True)[1]
        return codes, [fn(values[i]) for i in firsts.tolist()]
    codes, uniques = factorize(values)
    results = [fn(u) for u in uniques]
    missing = np.flatnonzero(codes < 0)
    if len(missing):  # empty cells (None/NaN) share one result, the last
        results.append(fn(values[int(missing[0])]))
        codes = np.where(codes < 0, len(results) - 1, codes)
    return codes, results


def _add_descriptive_columns(
    rec: dict[str, Any],
    data: CategoryData,
    classes: list[Any],
    class_of: np.ndarray,
    known: dict[str, tuple[np.ndarray, list[Any]]],
) -> None:
    """Text columns; those built from a few distinct values record their codes in `known`."""
    df = data.df
    assert df is not None
    n = len(df)
    args = _args_column(data)
    rec["args"] = args
    rec["shape"] = _shape_labels(rec)
    missing = np.flatnonzero((np.asarray([not a for a in args], dtype=bool)) & rec["has_model"])
    if len(missing):  # autograd nodes have no Input Dims: show the linked forward's shapes
        for i, a in zip(missing.tolist(), _args_from_records(rec, missing), strict=True):
            args[i] = a

    kd = data.kernels
    names_cells = [kernel_name_cells(list(names)) for names in kd.name_sets]
    stacks = df["call_stack_full"].tolist() if "call_stack_full" in df else [None] * n
    chain_codes, chain_pairs = _unique_map(stacks, chains)
    by_codes = {
        "kernel_name": ([c[0] for c in names_cells], kd.codes),
        "kernel_name_trunc": ([c[1] for c in names_cells], kd.codes),
        "library": ([getattr(k, "library", None) or "Unknown" for k in classes], class_of),
        "dominant_kernel": ([getattr(k, "dominant_kernel", None) for k in classes], class_of),
        "module_chain": ([c[0] for c in chain_pairs], chain_codes),
        "call_chain": ([c[1] for c in chain_pairs], chain_codes),
    }
    for col, (values, codes) in by_codes.items():
        rec[col] = _per_row(values, codes).tolist()
        known[col] = _as_codes(values, codes)
    entry = df["entry_point"].tolist() if "entry_point" in df else [None] * n
    rec["launcher_path"] = [e if isinstance(e, str) and e else "Not found" for e in entry]
    for col, src in (("upstream_efficiency_pct", "Pct Roofline_mean"), ("copy_overhead_us", "copy_overhead_us_sum"),
                     ("kv_cache_write_us", "kv_cache_write_us_sum")):
        rec[col] = pd.to_numeric(df[src], errors="coerce").to_numpy() if src in df else np.full(n, np.nan)


def _args_column(data: CategoryData) -> list[str]:
    """short_args of every row. Plain Input Dims cells (integer nests) are rewritten as compact JSON for
    the whole column at once and grouped by structure (the JSON without its numbers) and Input type; in a
    group of flat entries, each entry's numbers are the text between `],[`, and one format template per
    group assembles the rows. Other rows take short_args itself, once per distinct cell pair."""
    df = data.df
    assert df is not None
    n = len(df)
    types = data.parsed["Input type"]
    out: list[str] = [""] * n
    plain = np.flatnonzero(data.dims_plain) if len(data.dims_plain) == n else np.zeros(0, dtype=np.int64)
    done = np.zeros(n, dtype=bool)
    if len(plain):
        raw = df["Input Dims"].tolist()
        compact = CELL_SEP.join([raw[i] for i in plain.tolist()]).translate(_COMPACT_NEST).replace(",]", "]")
        structure = compact.translate(_NO_DIGITS)
        type_cells = df["Input type"].to_numpy(dtype=object)[plain] if "Input type" in df else np.full(len(plain), "")
        type_codes, _ = _distinct(type_cells)
        one = structure[: structure.find(CELL_SEP)] if len(plain) > 1 else structure
        if type_codes.max(initial=0) == 0 and structure == CELL_SEP.join([one] * len(plain)):
            groups = [np.arange(len(plain))]  # one structure and one Input type (the usual case)
            rows: list[str] | str = compact
        else:
            rows = compact.split(CELL_SEP)
            shape_codes = factorize(structure.split(CELL_SEP))[0]
            group_codes, _ = pd.factorize(shape_codes * (int(type_codes.max(initial=0)) + 1) + type_codes)
            order = np.argsort(group_codes, kind="stable")
            groups = np.split(order, np.flatnonzero(np.diff(group_codes[order])) + 1)
        del compact, structure
        for positions in groups:
            members = plain[positions]
            first = int(members[0])
            cells = rows if isinstance(rows, str) else [rows[k] for k in positions.tolist()]
            filled = _fill_args_template(cells, len(members), data.input_dims(first), types[first])
            if filled is not None:
                for i, a in zip(members.tolist(), filled, strict=True):
                    out[i] = a
                done[members] = True
    rest = np.flatnonzero(~done)
    if len(rest):
        dims_raw = df["Input Dims"].tolist() if "Input Dims" in df else [None] * n
        types_raw = df["Input type"].tolist() if "Input type" in df else [None] * n
        cache: dict[tuple[Any, Any], str] = {}
        for i in rest.tolist():
            dims = data.input_dims(i)
            key = (dims_raw[i] if isinstance(dims_raw[i], str) else repr(dims), types_raw[i])
            if key not in cache:
                cache[key] = short_args(dims, types[i])
            out[i] = cache[key]
    return out


def _fill_args_template(cells: list[str] | str, n: int, first: Any, types: Any) -> list[str] | None:
    """short_args of n cells that share one structure and Input type, given as compact JSON (`[[1,2],[],[3]]`),
    as a list or already joined with the separator; `first`: the first cell parsed. None when the structure is
    not a non-empty list of integer lists (short_args formats nested entries its own way)."""
    if not isinstance(first, list) or not first or not all(
        isinstance(d, list) and all(type(x) is int for x in d) for d in first
    ):
        return None
    types = list(types) if isinstance(types, list | tuple) else []
    pieces, used = [], []
    for i, d in enumerate(first):
        if len(d) == 0:
            continue
        t = types[i] if i < len(types) else ""
        canon = try_normalize_dtype(str(t)) if t else None
        label = SHORT_LABEL.get(canon, str(t)) if canon else str(t)
        escaped = label.replace("{", "{{").replace("}", "}}")
        pieces.append(f"({{}}) {escaped}".rstrip())
        used.append(i)
    template = "<br>".join(pieces)
    if not used:
        return [template] * n
    width = len(first)
    body = cells if isinstance(cells, str) else CELL_SEP.join(cells)
    labels = {p[4:] for p in pieces}  # each piece is "({})" and then " label" or nothing
    label = pieces[0][4:].replace("{{", "{").replace("}}", "}")
    if used == list(range(len(used))) and len(labels) == 1 and not any(c in label for c in "[]" + CELL_SEP):
        # the usual shape: tensors first, then only empty slots, one dtype. Rewrite the whole group's text
        # at once: `[[a],[b],[],[]]` → `(a) bf16<br>(b) bf16`
        tail = "]" + ",[]" * (width - len(used)) + "]"
        if body.count(tail) == n and body.count("[[") == n:
            closing = ")" + label
            body = body.replace(tail, closing).replace(CELL_SEP + "[[", CELL_SEP + "(")
            return ("(" + body[2:]).replace("],[", closing + "<br>(").split(CELL_SEP)
    # every row is `[[` entry `],[` entry ... `]]`: with `],[` between rows too, one split gives the entries
    entries = body.replace("]]" + CELL_SEP + "[[", "],[")[2:-2].split("],[")
    if len(entries) != width * n:
        return None
    return list(map(template.format, *(entries[k::width] for k in used)))


def _shape_labels(rec: dict[str, Any]) -> list[str]:
    """`fwd B16 H16/4 N559x1024 d64 causal` for modeled rows, the op family for the others."""
    n = len(rec["has_model"])
    out = np.empty(n, dtype=object)
    has = np.asarray(rec["has_model"], dtype=bool)
    off = np.flatnonzero(~has)
    if len(off):
        fam_codes, fams = _distinct(np.asarray(rec["family"], dtype=object)[off])
        out[off] = _per_row([str(f or "") for f in fams], fam_codes)
    on = np.flatnonzero(has)
    if len(on):
        b, hq, hk, nq, nk, dq, dv = (
            np.asarray(rec[c], dtype=float)[on].astype(np.int64)
            for c in ("batch", "heads_q", "heads_kv", "seq_q", "seq_kv", "head_dim_qk", "head_dim_v")
        )
        heads = _pair_labels("H{}", "H{}/{}", hq, hk)
        seq = _pair_labels("N{}", "N{}x{}", nq, nk)
        d = _pair_labels("d{}", "d{}/{}", dq, dv)
        direction = np.asarray(rec["direction"], dtype=object)[on]
        mask = np.asarray(rec["mask"], dtype=object)[on]
        dm_codes, _ = pd.factorize(_distinct(direction)[0] * (len(on) + 1) + _distinct(mask)[0])
        firsts = np.unique(dm_codes, return_index=True)[1]
        prefixes = []
        for j in firsts.tolist():
            m = mask[j]
            suffix = "" if m in (None, "none") else (" causal" if str(m).startswith("causal") else " window")
            prefixes.append((f"{direction[j]}", suffix))
        pre = _per_row([p[0] for p in prefixes], dm_codes).tolist()
        suf = _per_row([p[1] for p in prefixes], dm_codes).tolist()
        out[on] = list(map("{} B{} {} {} {}{}".format, pre, b.tolist(), heads, seq, d, suf))
    return out.tolist()


def _pair_labels(same: str, differ: str, a: np.ndarray, b: np.ndarray) -> list[str]:
    """`same` with a where a == b, else `differ` with (a, b): formatted once per distinct pair."""
    codes, _ = pd.factorize(a * (int(b.max(initial=0)) + 1) + b)
    firsts = np.unique(codes, return_index=True)[1].tolist()
    av, bv = a[firsts].tolist(), b[firsts].tolist()
    labels = [same.format(x) if x == y else differ.format(x, y) for x, y in zip(av, bv, strict=True)]
    return _per_row(labels, codes).tolist()


def _args_from_records(rec: dict[str, Any], rows: np.ndarray) -> list[str]:
    """short_args-style text from the modeled shapes (q, k, v), for rows without Input Dims."""
    dtype = np.asarray(rec["dtype"], dtype=object)[rows]
    codes, uniques = _distinct(dtype)
    b, hq, hk, nq, nk, dq, dv = (
        np.asarray(rec[c], dtype=float)[rows].astype(np.int64).tolist()
        for c in ("batch", "heads_q", "heads_kv", "seq_q", "seq_kv", "head_dim_qk", "head_dim_v")
    )
    out = np.empty(len(rows), dtype=object)
    for k, u in enumerate(uniques):
        label = SHORT_LABEL.get(str(u), str(u)).replace("{", "{{").replace("}", "}}")
        template = "<br>".join((f"({{}},{{}},{{}},{{}}) {label}",) * 3)
        sel = np.flatnonzero(codes == k)
        cols = [
            [c[j] for j in sel.tolist()] for c in (b, hq, nq, dq, b, hk, nk, dq, b, hk, nk, dv)
        ]
        out[sel] = list(map(template.format, *cols))
    return out.tolist()


def step_workload(perf_params: Any) -> str | None:
    """decode | prefill | mixed from a row's step-annotation counts (num_ctx_requests / num_gen_requests in its
    perf_params), for rows without a model (a graph replay analyzed without its capture); None when unknown."""
    if not isinstance(perf_params, str) or "num_gen_requests" not in perf_params:
        return None
    try:
        params = parse_literal(perf_params, "perf_params")
    except LiteralParseError:
        return None
    if not isinstance(params, dict):
        return None
    n_ctx, n_gen = params.get("num_ctx_requests"), params.get("num_gen_requests")
    if not isinstance(n_ctx, int) or not isinstance(n_gen, int) or n_ctx + n_gen <= 0:
        return None
    return "decode" if n_ctx == 0 else ("prefill" if n_gen == 0 else "mixed")


def workload_profile(rec: pd.Series, cfg: AttentionConfig | None) -> dict[str, Any]:
    """TraceLens-style workload profile: shapes, token sums, ctx ratio, pattern (MHA/GQA/MQA)."""
    if not rec["has_model"]:
        return {
            "n_q": None, "n_kv": None, "h_q": None, "h_kv": None, "sum_ctx_tokens": None, "sum_gen_tokens": None,
            "ctx_ratio": None, "workload_type": "unknown", "attention_pattern": None, "gqa_ratio": None,
        }  # fmt: skip
    hq, hk = int(rec["heads_q"]), int(rec["heads_kv"])
    ratio = hq // hk
    pattern = "MHA" if ratio == 1 else ("MQA" if hk == 1 else "GQA")
    sum_ctx = sum_gen = 0
    ctx_ratio = None
    wtype = "prefill" if int(rec["seq_q"]) > 1 else "decode"
    paged = cfg.paged if cfg is not None else None
    if paged is not None:
        # vLLM's vocabulary: context tokens = prompt (prefill) tokens this step, generated = decode tokens
        q_tokens = paged.sum_query_tokens or paged.num_requests
        decode = paged.num_requests if q_tokens == paged.num_requests else 0
        sum_gen = decode
        sum_ctx = q_tokens - decode
        total = sum_ctx + sum_gen
        ctx_ratio = round(sum_ctx / total, 4) if total else None
        if ctx_ratio is not None:
            wtype = profile_type(ctx_ratio)
            if sum_ctx == 0:
                wtype = "decode"  # one new token per request: a pure decode step
    return {
        "n_q": int(rec["seq_q"]), "n_kv": int(rec["seq_kv"]), "h_q": hq, "h_kv": hk, "sum_ctx_tokens": sum_ctx,
        "sum_gen_tokens": sum_gen, "ctx_ratio": ctx_ratio, "workload_type": wtype, "attention_pattern": pattern,
        "gqa_ratio": ratio if ratio > 1 else None,
    }  # fmt: skip


__all__ = [
    "RooflineTable",
    "chains",
    "compute_records",
    "dominant_compute_spec",
    "kernel_name_cells",
    "short_args",
    "step_workload",
    "truncate_kernel",
    "workload_profile",
]
