"""What a finding buys and the facts around it: the kernel advisor and the seed's patterns, for the metrics JSON.

For each finding (its member rows of the records):

* `advice`: the members' kernel time; the levers of the declared table LEVERS (each with its id, largest saving
  first, each saving marked `saving_bound` at least / at most when it rests on a bounded work and `upper_bound`
  when it assumes the most a change can give, e.g. every copy gone): what matching the best published kernel for
  their shape (the band's reference) and reaching the roofline would save, in ms and % of E2E; that reference
  (kernel, its efficiency at this shape, the source) for the dominant member; the what-ifs the models computed
  (perf_models.advice): fp8
  Q/K/V at the same % of roofline for compute-bound calls on a GPU with fp8 tensor cores, and the same hidden
  size at head dim 128 where its band is higher — each with the time after, the ms saved and the % of E2E;
* `facts`: layout copies around the calls (`.contiguous()` on Q/K/V before, on the output after: the seed's
  contiguous-copy pattern) with their time and share of the attention time; KV-cache writes beside paged calls with
  their share of the op (attention + write) and whether they pass the seed's 10 % rule.

For the category: the same facts over every row, the attention kernels outside every row (from the analysis'
metadata), and for a backward category each backward shape against its forward (time per call, FLOPs and
efficiency of both).

In-band gating (`in_band_rows`): an op within or above its expected band is as good as the best published kernels
for its shape; it is not a P-item, and is listed with its numbers in `sdpa_analyzer.in_band`.

Every number is rounded once here, to the digits written; the template copies them and the validator checks them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from sdpa_analyzer.server.factorize import factorize
from sdpa_analyzer.server.numbers import finite
from sdpa_analyzer.server.vocab import KV_WRITE_SHARE_PCT
from sdpa_analyzer.server.writers.json_columns import Field, Ints, Numbers, Obj, RowList, Texts, Values

IN_BAND_STATUSES = ("within", "above")
_SHAPE_KEY = ("batch", "heads_q", "heads_kv", "seq_q", "seq_kv", "head_dim_qk", "head_dim_v", "mask")
MATCH_REFERENCE = "match the best published kernel for this shape"
MIN_WHAT_IF_GAIN = 0.05  # a what-if is shown when it saves at least this share of the members' time


def in_band_rows(records: pd.DataFrame, comparative: bool) -> np.ndarray:
    """Rows within or above their expected band (standalone only: comparative findings compare two traces)."""
    if comparative:
        return np.zeros(len(records), dtype=bool)
    return np.isin(records["band_status"].to_numpy(dtype=object), IN_BAND_STATUSES)


_IN_BAND_COLUMNS = ("row", "name", "library", "shape", "count", "time_ms", "efficiency_pct", "band_metric",
                    "band_value", "band_low", "band_high", "band_status")


def in_band_list(records: pd.DataFrame, rows: np.ndarray, e2e_ms: float) -> RowList:
    """The in-band ops, longest first, with the numbers that put them there: column-wise (a long training run can hold
    tens of thousands of them; as dicts they were ~90 MB at 10^5 rows), written as the list of their dicts."""
    r = records[list(_IN_BAND_COLUMNS)].iloc[rows]  # the columns it writes: a copy of every column was ~25 MB
    order = np.argsort(-r["time_ms"].to_numpy(dtype=float), kind="stable")
    r = r.iloc[order]
    time_ms = r["time_ms"].to_numpy(dtype=float)

    def texts(column: str) -> Texts:
        return Texts(*factorize(r[column].astype(str).tolist()))

    fields = [
        Field("row", Ints(r["row"].to_numpy(dtype=np.int64))),
        Field("operation", texts("name")),
        Field("library", texts("library")),
        Field("shape", texts("shape")),
        Field("count", Ints(r["count"].to_numpy(dtype=np.int64))),
        Field("time_ms", Numbers(time_ms, 3)),
        Field("percent_of_total", Numbers(100.0 * time_ms / e2e_ms, 2)),
        Field("efficiency_pct", Numbers(r["efficiency_pct"].to_numpy(dtype=float), 2)),
        Field("band_metric", Values(r["band_metric"].tolist())),
        Field("band_value", Numbers(r["band_value"].to_numpy(dtype=float), 2)),
        Field("band_low", Numbers(r["band_low"].to_numpy(dtype=float), 1)),
        Field("band_high", Numbers(r["band_high"].to_numpy(dtype=float), 1)),
        Field("band_status", texts("band_status")),
    ]
    return RowList(Obj(fields), len(r))


def _ms(us: float) -> float | None:
    return finite(us / 1000.0, 3)


def _pct(ms: float, of_ms: float) -> float | None:
    return finite(100.0 * ms / of_ms, 2) if of_ms > 0 else None


@dataclass(frozen=True)
class Members:
    """A finding's member rows, as the levers read them (each column once, as float arrays)."""

    rows: pd.DataFrame
    count: np.ndarray
    time_ms: np.ndarray
    efficiency: np.ndarray
    band_ms: np.ndarray

    @classmethod
    def of(cls, r: pd.DataFrame) -> Members:
        count = r["count"].to_numpy(dtype=float)
        return cls(r, count, r["time_ms"].to_numpy(dtype=float), r["efficiency_pct"].to_numpy(dtype=float),
                   count * r["band_reference_time_us"].to_numpy(dtype=float) / 1000.0)

    def column_ms(self, column: str) -> np.ndarray:
        """A per-call µs column of the records, as ms over every call of each row."""
        return self.count * self.rows[column].to_numpy(dtype=float) / 1000.0


Saving = tuple[float, float, int | None]  # time before (ms), time after (ms), members it applies to (None: all)


def _match_reference(m: Members) -> Saving | None:
    banded = np.isfinite(m.band_ms)
    if not banded.any():
        return None
    return float(m.time_ms[banded].sum()), float(m.band_ms[banded].sum()), int(banded.sum())


def _reach_roofline(m: Members) -> Saving | None:
    known = np.isfinite(m.efficiency)
    if not known.any():
        return None
    total = float(m.time_ms.sum())
    to_roof = float(np.nansum(np.where(known, m.time_ms * np.maximum(0.0, 1 - m.efficiency / 100.0), 0.0)))
    return total, total - to_roof, None


def _fp8(m: Members) -> Saving | None:
    fp8_ms = m.column_ms("fp8_time_us")
    ok = np.isfinite(fp8_ms)
    if not ok.any() or m.time_ms[ok].sum() - fp8_ms[ok].sum() < MIN_WHAT_IF_GAIN * m.time_ms[ok].sum():
        return None
    return float(m.time_ms[ok].sum()), float(fp8_ms[ok].sum()), int(ok.sum())


def _head_dim(m: Members) -> Saving | None:
    alt_ms = m.column_ms("head_dim_alt_time_us")
    ok = np.isfinite(alt_ms) & np.isfinite(m.band_ms)
    if not ok.any() or m.band_ms[ok].sum() - alt_ms[ok].sum() < MIN_WHAT_IF_GAIN * m.band_ms[ok].sum():
        return None
    return float(m.band_ms[ok].sum()), float(alt_ms[ok].sum()), int(ok.sum())


def _drop_copies(m: Members) -> Saving | None:
    copy_ms = float(np.nansum(m.rows["copy_overhead_us"].to_numpy(dtype=float))) / 1000.0
    return (copy_ms, 0.0, None) if copy_ms > 0 else None


@dataclass(frozen=True)
class Lever:
    """One change a finding's members could make, declared once: its id (the findings' references and the Action's
    citations name it), its label, what it computes, when it applies (its gate), what its saving is measured
    against, whether its saving rests on the counted work (so a bounded work bounds it) or assumes the most a change
    can give (an upper bound), and the function computing the times before and after."""

    id: str
    label: str
    computes: str
    gate: str
    compared_with: str
    saving: Callable[[Members], Saving | None]
    rests_on_work: bool = True
    upper_bound: bool = False


LEVERS: tuple[Lever, ...] = (
    Lever("match_reference", MATCH_REFERENCE,
          "the members' time at the best published kernel's efficiency for their shape (the band's reference)",
          "a member with a reference band", "the members' measured time", _match_reference),
    Lever("reach_roofline", "reach the roofline (a bound no kernel reaches)",
          "the members' time at 100 % of their roofline", "a member with an efficiency",
          "the members' measured time", _reach_roofline, upper_bound=True),
    Lever("fp8", "fp8 (e4m3) Q/K/V at the same % of the roofline",
          "the time with Q, K, V in fp8 at today's % of the roofline (perf_models.advice)",
          "compute-bound or balanced bf16/fp16 forward calls on a GPU with fp8 tensor cores, saving at least "
          f"{MIN_WHAT_IF_GAIN:.0%} of their time", "the members' measured time", _fp8),
    Lever("head_dim_128", "head dim 128 at the same hidden size, at the best published kernel for it",
          "the time at the best published head-dim-128 kernel, heads x head dim kept (perf_models.advice)",
          "head dim under 128, a band for both shapes, saving at least "
          f"{MIN_WHAT_IF_GAIN:.0%} of the reference time", "the best published kernel at today's head dim",
          _head_dim),
    Lever("drop_copies", "drop the layout copies of Q/K/V/output around the calls (the attention backend takes "
          "strided inputs)", "the copies' own kernel time", "layout copies next to the calls",
          "the copies' own kernel time", _drop_copies, rests_on_work=False, upper_bound=True),
)  # fmt: skip
LEVER_IDS = tuple(lever.id for lever in LEVERS)
# a saving that rests on a bounded work: lower-bound work (the true work is larger) makes the time at any
# efficiency longer, so the saving is at most the one computed; upper-bound work, at least
WORK_BOUND_SAVING = {"lower": "at most", "upper": "at least"}


def _work_qualifier(m: Members) -> str | None:
    if "work_bound" not in m.rows:
        return None
    bounds = {b for b in m.rows["work_bound"].tolist() if isinstance(b, str)} & set(WORK_BOUND_SAVING)
    return WORK_BOUND_SAVING[bounds.pop()] if len(bounds) == 1 else ("about" if bounds else None)


def finding_advice(records: pd.DataFrame, rows: list[int], e2e_ms: float) -> dict[str, Any]:
    """What the finding's members would save by each lever of LEVERS, largest saving first."""
    r = records.iloc[rows]
    m = Members.of(r)
    total = float(m.time_ms.sum())
    qualifier = _work_qualifier(m)
    levers: list[dict[str, Any]] = []
    for lever in LEVERS:
        found = lever.saving(m)
        if found is None:
            continue
        before, after, members = found
        saved = max(0.0, before - after)
        entry: dict[str, Any] = {
            "id": lever.id, "change": lever.label, "time_ms": finite(before, 3), "time_after_ms": finite(after, 3),
            "saved_ms": finite(saved, 3), "saved_pct_e2e": _pct(saved, e2e_ms),
        }  # fmt: skip
        if members is not None:
            entry["members"] = members
        if lever.compared_with != "the members' measured time":
            entry["compared_with"] = lever.compared_with
        if lever.rests_on_work and qualifier is not None:
            entry["saving_bound"] = qualifier
        if lever.upper_bound:
            entry["upper_bound"] = True
        levers.append(entry)
    levers.sort(key=lambda x: -(x["saved_ms"] or 0.0))
    advice: dict[str, Any] = {"time_ms": finite(total, 3), "levers": levers}
    lead = int(np.argmax(m.time_ms)) if len(m.time_ms) else None
    if lead is not None and isinstance(r["band_id"].iloc[lead], str):
        x = r.iloc[lead]
        advice["reference"] = {
            "operation": str(x["name"]), "band_id": x["band_id"], "band_metric": x["band_metric"],
            "band_low": finite(x["band_low"], 1), "band_high": finite(x["band_high"], 1),
            "band_value": finite(x["band_value"], 2), "band_status": x["band_status"],
            "kernel": x["band_reference_kernel"], "kernel_pct": finite(x["band_reference_pct"], 1),
            "source": x["band_reference_source"], "borrowed_from": x["band_borrowed_from"],
            "time_ms": finite(x["time_ms"], 3),
            "time_at_reference_ms": _ms(float(x["count"]) * x["band_reference_time_us"]),
        }  # fmt: skip
    return advice


def finding_facts(records: pd.DataFrame, rows: list[int], e2e_ms: float) -> dict[str, Any]:
    """Copies around the members' calls and their KV-cache writes (see the module docstring)."""
    r = records.iloc[rows] if rows is not None else records
    time_ms = float(r["time_ms"].sum())
    facts: dict[str, Any] = {}
    copy_ms = float(np.nansum(r["copy_overhead_us"].to_numpy(dtype=float))) / 1000.0
    if copy_ms > 0:
        facts["copy_overhead"] = {
            "time_ms": finite(copy_ms, 3), "attention_time_ms": finite(time_ms, 3),
            "percent_of_attention": _pct(copy_ms, time_ms), "percent_of_e2e": _pct(copy_ms, e2e_ms),
            "rows": int((np.nan_to_num(r["copy_overhead_us"].to_numpy(dtype=float)) > 0).sum()),
        }  # fmt: skip
    kv_ms = float(np.nansum(r["kv_cache_write_us"].to_numpy(dtype=float))) / 1000.0
    if kv_ms > 0:
        share = _pct(kv_ms, time_ms + kv_ms)
        facts["kv_cache_write"] = {
            "time_ms": finite(kv_ms, 3), "attention_time_ms": finite(time_ms, 3), "percent_of_op": share,
            "percent_of_e2e": _pct(kv_ms, e2e_ms), "threshold_pct": KV_WRITE_SHARE_PCT,
            "over_threshold": bool(share is not None and share > KV_WRITE_SHARE_PCT),
        }  # fmt: skip
    return facts


def backward_vs_forward(bwd: pd.DataFrame, fwd: pd.DataFrame | None) -> list[dict[str, Any]]:
    """Each modeled backward shape against the forward of the same shape (B, heads, lengths, head dims, mask)."""
    if fwd is None or bwd.empty:
        return []
    b = bwd[bwd["has_model"].to_numpy(dtype=bool)]
    f = fwd[fwd["has_model"].to_numpy(dtype=bool)]
    if b.empty or f.empty:
        return []
    keys = list(_SHAPE_KEY)
    f_by = f.groupby(keys, dropna=False, sort=False).agg(
        fwd_operation=("name", "first"), fwd_calls=("count", "sum"), fwd_time_ms=("time_ms", "sum"),
        fwd_flops=("flops_useful", "first"), fwd_eff=("efficiency_pct", "first"))  # fmt: skip
    b_by = b.groupby(keys, dropna=False, sort=False).agg(
        bwd_operation=("name", "first"), bwd_calls=("count", "sum"), bwd_time_ms=("time_ms", "sum"),
        bwd_flops=("flops_useful", "first"), bwd_eff=("efficiency_pct", "first"), shape=("shape", "first"))  # fmt: skip
    both = b_by.join(f_by, how="inner")
    out = []
    for _, x in both.sort_values("bwd_time_ms", ascending=False).iterrows():
        bwd_call = 1000.0 * x["bwd_time_ms"] / max(x["bwd_calls"], 1)
        fwd_call = 1000.0 * x["fwd_time_ms"] / max(x["fwd_calls"], 1)
        out.append({
            "shape": str(x["shape"]).removeprefix("bwd "), "backward_operation": str(x["bwd_operation"]),
            "forward_operation": str(x["fwd_operation"]), "backward_us_per_call": finite(bwd_call, 3),
            "forward_us_per_call": finite(fwd_call, 3),
            "time_ratio": finite(bwd_call / fwd_call, 2) if fwd_call else None,
            "flops_ratio": finite(x["bwd_flops"] / x["fwd_flops"], 2) if x["fwd_flops"] else None,
            "backward_efficiency_pct": finite(x["bwd_eff"], 2), "forward_efficiency_pct": finite(x["fwd_eff"], 2),
        })  # fmt: skip
    return out


def category_facts(records: pd.DataFrame, metadata: dict[str, Any] | None, e2e_ms: float,
                   forward: pd.DataFrame | None = None) -> dict[str, Any]:
    """The category's facts: copies and KV writes over every row, kernels outside every row, backward vs forward."""
    facts = finding_facts(records, None, e2e_ms)  # type: ignore[arg-type]
    outside = (metadata or {}).get("attention_outside_rows")
    if isinstance(outside, dict):
        facts["attention_outside_rows"] = outside
    pairs = backward_vs_forward(records, forward)
    if pairs:
        facts["backward_vs_forward"] = pairs
    return facts


__all__ = [
    "IN_BAND_STATUSES",
    "LEVERS",
    "LEVER_IDS",
    "Lever",
    "backward_vs_forward",
    "category_facts",
    "finding_advice",
    "finding_facts",
    "in_band_list",
    "in_band_rows",
]
