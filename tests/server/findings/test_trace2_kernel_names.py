"""Trace 2's kernels are nameable in a comparative findings file (rule 14 takes the names of the metrics JSON).

A comparative analysis records the kernels of the matched trace-2 calls (`trace2_kernel_names` in the ops CSV,
`kernel_name_trace2` in the metrics JSON's operations[]), so prose that names the kernel trace 2 ran passes, while a
kernel name neither trace holds is still flagged `R14-name`. The kernel named is read from trace 2's own events
(the longest kernel trace 1 does not have), not from the analysis. Pairs: a synthetic one (memory-efficient SDPA in
trace 1, flash SDPA at half the time in trace 2, the same module) and, with ../shared, the MI300X microbenchmark
pairs whose trace 2 is faster (fused aiter/CK flash for unfused bmm/softmax/bmm; two unfused runs).
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from sdpa_analyzer.server.findings import load_metrics, render_findings_template, validate_findings_text
from sdpa_analyzer.server.roots import DataRoots
from sdpa_analyzer.server.synthetic import build_trace, write_trace
from sdpa_analyzer.server.synthetic.calls import SyntheticAttentionCall
from sdpa_analyzer.server.tools import call
from sdpa_analyzer.server.tools.base import ToolFailure
from tests.support import FLASH_ROW, OPS_HEADER, SHARED_SKIP_REASON, TRACES, fill_findings, make_folder

MICROBENCH = TRACES / "mi300x-microbench"
MADE_UP = "flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<64, 64, 256, 4, false, false, cutlass::half_t>>"
GPT2 = ("GPT2LMHeadModel", "GPT2Model", "GPT2Block", "GPT2Attention")


def _kernel_times(trace: dict[str, Any]) -> dict[str, float]:
    """Kernel name → its summed duration, from the trace's GPU kernel events."""
    out: dict[str, float] = {}
    for e in trace.get("traceEvents", []):
        if e.get("ph") == "X" and str(e.get("cat", "")).lower() == "kernel":
            out[e["name"]] = out.get(e["name"], 0.0) + float(e.get("dur", 0.0))
    return out


def _read(path: Path) -> dict[str, Any]:
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return json.load(fh)


def _trace2_only_kernel(trace1: dict[str, Any], trace2: dict[str, Any]) -> str:
    """The longest kernel of trace 2 that trace 1 never ran: a name only trace 2 can supply."""
    before = _kernel_times(trace1)
    after = {n: t for n, t in _kernel_times(trace2).items() if n not in before}
    assert after, "trace 2 runs no kernel of its own"
    return max(after, key=lambda n: after[n])


def _synthetic_pair(tmp: Path) -> tuple[Path, Path, str]:
    shape = {"batch": 4, "heads_q": 12, "seq_q": 1024, "head_dim_qk": 64, "dtype": "fp16", "causal": True,
             "repeat": 2, "module_names": GPT2}  # fmt: skip
    slow = SyntheticAttentionCall(flavour="aten_efficient", kernel_us=60.0, aux_kernel_us=3.0, **shape)
    fast = SyntheticAttentionCall(flavour="aten_flash", kernel_us=30.0, aux_kernel_us=2.0, **shape)
    t1, t2 = build_trace([slow]), build_trace([fast])
    return write_trace(t1, tmp / "t1.json.gz"), write_trace(t2, tmp / "t2.json.gz"), _trace2_only_kernel(t1, t2)


def _shared_pair(first: str, second: str) -> tuple[Path, Path, str]:
    t1, t2 = MICROBENCH / f"{first}.json.gz", MICROBENCH / f"{second}.json.gz"
    if not (t1.is_file() and t2.is_file()):
        pytest.skip(SHARED_SKIP_REASON)
    return t1, t2, _trace2_only_kernel(_read(t1), _read(t2))


PAIRS = {
    "synthetic efficient→flash": None,
    "test03 unfused→fused": ("test03_attention_fused_vs_unfused_trace2", "test03_attention_fused_vs_unfused_trace1"),
    "test02 unfused→unfused": ("test02_attention_both_unfused_trace1", "test02_attention_both_unfused_trace2"),
}


@pytest.mark.parametrize("pair", list(PAIRS))
def test_a_trace2_kernel_is_nameable_and_a_made_up_one_is_not(pair: str, tmp_path: Path) -> None:
    names = PAIRS[pair]
    t1, t2, kernel2 = _synthetic_pair(tmp_path) if names is None else _shared_pair(*names)
    roots = DataRoots([tmp_path, t1.parent])
    out = tmp_path / "analysis"
    call("analyze_trace", roots, trace_path=str(t1), trace2_path=str(t2), output_dir=str(out), arch="h100-sxm")
    call("rank_findings", roots, output_dir=str(out), category="sdpa_fwd", arch="h100-sxm",
         comparison_scope="comparative")  # fmt: skip
    metrics = load_metrics(out / "category_data" / "sdpa_fwd_metrics.json")
    assert metrics["category_findings"], "trace 2 is faster: the pair has a comparative finding"
    filled = fill_findings(render_findings_template(metrics, "sdpa_fwd"), metrics)
    assert validate_findings_text(filled, metrics).passed

    insight = next(line for line in filled.split("\n") if line.startswith("**Insight**"))

    def with_sentence(kernel: str) -> str:
        return filled.replace(insight, f"{insight} Trace 2 runs it as `{kernel}`.", 1)

    named = validate_findings_text(with_sentence(kernel2), metrics)
    assert named.passed, [(e.rule, e.message) for e in named.errors]
    made_up = validate_findings_text(with_sentence(MADE_UP), metrics)
    assert [e.rule for e in made_up.errors] == ["R14-name"], [(e.rule, e.message) for e in made_up.errors]


def _comparative_folder(tmp_path: Path, cell: str) -> Path:
    header = OPS_HEADER + ",speedup (trace2/trace1),delta_us (trace2 - trace1),lca_count_trace2,trace2_kernel_names"
    return make_folder(tmp_path, [f'{FLASH_ROW},0.5,-500.0,10,"{cell}"'], header=header)


def test_trace2_kernels_are_written_as_trace1s(tmp_path: Path) -> None:
    folder = _comparative_folder(tmp_path, "['fill_kernel', 'attn_kernel<64, 128>']")
    call("rank_findings", DataRoots([tmp_path]), output_dir=str(folder), category="sdpa_fwd", arch="h100-sxm",
         comparison_scope="comparative")  # fmt: skip
    op = json.loads((folder / "category_data" / "sdpa_fwd_metrics.json").read_text())["operations"][0]
    assert op["kernel_name_trace2"] == "Kernel 1: fill_kernel<br>Kernel 2: attn_kernel<64, 128>"
    assert op["count_trace2"] == 10 and op["t2_time_ms"] == 0.5  # 1000 µs - 500 µs


@pytest.mark.parametrize("cell", ["fill_kernel", "[1, 2]", "__import__('os')"])
def test_a_trace2_kernel_cell_that_is_no_list_of_names_is_one_line(tmp_path: Path, cell: str) -> None:
    folder = _comparative_folder(tmp_path, cell)
    with pytest.raises(ToolFailure) as err:
        call("rank_findings", DataRoots([tmp_path]), output_dir=str(folder), category="sdpa_fwd", arch="h100-sxm",
             comparison_scope="comparative")  # fmt: skip
    message = str(err.value)
    assert "\n" not in message and "sdpa_fwd_ops.csv" in message and "'trace2_kernel_names' row 2" in message
