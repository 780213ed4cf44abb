"""The output catalogue: every per-row field of the records, declared once, and every surface derived from it.

`perf_models.outputs.MODEL_OUTPUTS` declares what the models compute; `IDENTITY` and `DESCRIPTIVE` below declare
what the scoring adds from the op rows (names, times, kernel names, call stacks). `CATALOGUE` is the three in
order. From it come the records' columns (server.scoring.records), the roofline CSV's columns, the metrics JSON's
per-op `roofline` block (server.scoring.ranking), the MCP result models of compute_roofline and model_attention
(`result_model`) and their values (`result_values`, server.scoring.field_values), and the CLI's column titles. A
field's name is the same on every surface; a new field is one line in the catalogue plus its computation. This
module is the declarations only (no numpy, no pandas): the tool declarations and the CLI's tables import it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, Field, create_model

from sdpa_analyzer.perf_models.outputs import MODEL_OUTPUTS, Output, Surface, declare
from sdpa_analyzer.server.results import ResultModel

IDENTITY: tuple[Output, ...] = (
    declare("row", "int", "", None, "row", "rc", "row index in <category>_ops.csv (0-based)"),
    declare("name", "text", "", None, "op", "rc", "op name as the trace records it"),
    declare("direction", "text", "", None, "dir", "rjc", "fwd | bwd"),
    declare("attention_type", "text", "", None, "type", "rc", "flash | memory_efficient | cudnn | unfused | paged | "
            "…: the op name when it is specific, else the dominant kernel's"),
    declare("op_attention_type", "text", "", None, "op type", "c", "the attention type the op name implies"),
    declare("kernel_attention_type", "text", "", None, "kernel type", "c", "the attention type the dominant kernel "
            "implies"),
    declare("library", "text", "", None, "library", "rc", "the library of the dominant kernel (Unknown when none)"),
    declare("family", "text", "", None, "op family", "c", "the registry family of the op (aten, flash_attn, aiter, "
            "vllm, …)"),
    declare("layout", "text", "", None, "layout", "c", "tensor layout of q/k/v (BHND, BNHD, THD, …)"),
    declare("config_source", "text", "", None, "config from", "c", "where the config came from: the op's arguments, "
            "its perf_params, a step annotation, a capture"),
    declare("shape", "text", "", None, "shape", "rjc", "B batch, H heads (q/kv), N lengths (q×kv), d head dims, mask; "
            "the op family for rows without a model"),
    declare("mask", "text", "", None, "mask", "rjc", "none | causal (top-left / bottom-right) | sliding window (left, "
            "right)"),
    declare("dtype", "text", "", None, "dtype", "rjc", "element type of Q"),
    declare("count", "int", "calls", None, "count", "rc", "calls (instances) of the row"),
    declare("time_ms", "float", "ms", 4, "time ms", "rc", "total kernel time of the row"),
    declare("mean_us", "float", "µs", 3, "mean µs", "rjc", "kernel time of one call"),
    declare("has_model", "bool", "", None, "model", "jc", "whether the perf models could model the row"),
    declare("no_model_reason", "text", "", None, "why no model", "jc", "why the row has no perf model"),
)
DESCRIPTIVE: tuple[Output, ...] = (
    declare("verdict", "text", "", None, "verdict", "rm", "the verdict in words (regime, band, bound wording)"),
    declare("upstream_efficiency_pct", "float", "%", 2, "upstream %", "jc", "the upstream tool's own roofline % "
            "(Pct Roofline_mean), a cross-reference only"),
    declare("copy_overhead_us", "float", "µs", 3, "copies µs", "jc", "layout copies (.contiguous / clone / copy_) of "
            "Q/K/V before or of the output after the call, in the same module: their kernel time, summed"),
    declare("kv_cache_write_us", "float", "µs", 3, "KV write µs", "rjc", "KV-cache write time beside the row (not in "
            "time_ms)"),
    declare("args", "text", "", None, "args", "c", "tensor inputs: `(B,H,N,d) bf16<br>…`, empty and Scalar slots "
            "dropped"),
    declare("kernel_name", "text", "", None, "kernels", "", "every kernel of the row, `Kernel 1: a<br>Kernel 2: b`"),
    declare("kernel_name_trunc", "text", "", None, "kernel", "rc", "the same, each name cut to 75 characters"),
    declare("dominant_kernel", "text", "", None, "dominant kernel", "", "the kernel with the most time"),
    declare("launcher_path", "text", "", None, "launcher", "c", "first user-code frame that launched the op"),
    declare("module_chain", "list", "", None, "modules", "", "nn.Module chain of the call, outermost first"),
    declare("call_chain", "list", "", None, "call chain", "", "call stack of the call, root first"),
    declare("warnings", "list", "", None, "warnings", "rc", "why numbers are missing or bounded, anomalies"),
)
CATALOGUE: tuple[Output, ...] = IDENTITY + MODEL_OUTPUTS + DESCRIPTIVE
BY_NAME: dict[str, Output] = {o.name: o for o in CATALOGUE}
assert len(BY_NAME) == len(CATALOGUE), "a catalogue name is declared twice"
COMPUTED_AT_RESULT = ("verdict",)  # not a records column: computed from the row's fields when a result is built


def on(surface: Surface) -> tuple[Output, ...]:
    """The fields of one surface, in catalogue order."""
    return tuple(o for o in CATALOGUE if surface in o.surfaces)


# ---- MCP result models ----------------------------------------------------------------------------
_TYPES: dict[str, Any] = {"float": float, "int": int, "text": str, "bool": bool, "list": list[str]}


def result_model(name: str, surface: Surface, doc: str, *, required: Sequence[str] = (),
                 base: type[BaseModel] = ResultModel, **extra: Any) -> type[BaseModel]:
    """A pydantic model with the surface's fields (typed, described with their units), then `extra` fields given
    as create_model takes them. Fields in `required` have no default; the others default to None (False for bools,
    an empty list for lists)."""
    fields: dict[str, Any] = {}
    for o in on(surface):
        t = _TYPES[o.kind]
        if o.name in required:
            fields[o.name] = (t, Field(description=o.help))
        elif o.kind == "bool":
            fields[o.name] = (bool, Field(False, description=o.help))
        elif o.kind == "list":
            fields[o.name] = (t, Field(default_factory=list, description=o.help))
        else:
            fields[o.name] = (t | None, Field(None, description=o.help))
    model = create_model(name, __base__=base, __doc__=doc, **fields, **extra)
    return model


# ---- files -----------------------------------------------------------------------------------------
def csv_columns() -> list[str]:
    """The roofline CSV's columns (records columns, in catalogue order)."""
    return [o.name for o in on("csv")]


__all__ = [
    "BY_NAME",
    "CATALOGUE",
    "COMPUTED_AT_RESULT",
    "DESCRIPTIVE",
    "IDENTITY",
    "csv_columns",
    "on",
    "result_model",
]
