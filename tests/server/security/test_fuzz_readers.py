"""Fuzzing the readers added since the last round (issue 31), in the style of test_fuzz.py and with its helpers
(derandomized, SDPA_FUZZ_SCALE for a longer campaign, every call an accepted result or one of our one-line errors):

* the model config.json (analyze_trace's `model_config`),
* the arch JSON file (`arch=` a path: model_attention),
* the streamed metrics reader (files in rank_findings' one-operation-a-line layout, which the compact files of
  test_fuzz.py never reach): read by validate_findings, and checked against the whole-document parse whenever the
  streamed read vouches for a file (the same operations, the same other keys).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from sdpa_analyzer.server.folder.metrics_file import open_streamed
from sdpa_analyzer.server.roots import DataRoots
from sdpa_analyzer.server.synthetic import SyntheticAttentionCall, build_trace, write_trace
from tests.server.findings.test_metrics_stream import line_layout
from tests.server.security.test_fuzz import (  # noqa: F401  (box: a fixture, found by name)
    CORPUS,
    HOSTILE_TEXT,
    TALLIES,
    box,
    byte_mutations,
    checked_call,
    dumps,
    fresh,
    fuzz_settings,
    json_values,
    write,
)

# ---- model config.json ------------------------------------------------------------------------------
SEED_CONFIG = {
    "model_type": "gemma3_text", "num_hidden_layers": 4, "num_attention_heads": 8, "num_key_value_heads": 4,
    "head_dim": 64, "hidden_size": 512, "sliding_window": 128, "max_position_embeddings": 8192,
    "layer_types": ["sliding_attention", "sliding_attention", "sliding_attention", "full_attention"],
}  # fmt: skip
CONFIG_KEYS = [*SEED_CONFIG, "text_config", "attention_chunk_size", "no_rope_layers", "use_sliding_window",
               "max_window_layers", "zzz"]  # fmt: skip


@st.composite
def mutated_configs(draw: Any) -> bytes:
    doc: dict[str, Any] = json.loads(json.dumps(SEED_CONFIG))
    for _ in range(draw(st.integers(1, 4))):
        key = draw(st.sampled_from(CONFIG_KEYS))
        if key == "layer_types" and draw(st.booleans()):
            kinds = ["sliding_attention", "full_attention", "chunked_attention", "mamba", "linear_attention", "x"]
            doc[key] = draw(st.lists(st.sampled_from(kinds), max_size=draw(st.sampled_from([6, 5000]))))
        elif key == "text_config":
            doc = {"model_type": "wrapper", "text_config": doc if draw(st.booleans()) else draw(json_values)}
        else:
            doc[key] = draw(json_values)
    data = dumps(doc).encode("utf-8", "surrogatepass")
    return draw(byte_mutations(data)) if draw(st.integers(0, 2)) == 0 else data


@pytest.fixture(scope="module")
def seed_trace(box: Path) -> Path:  # noqa: F811
    call = SyntheticAttentionCall(flavour="aten_flash", batch=1, heads_q=8, seq_q=128, head_dim_qk=64, kernel_us=40.0)
    return write_trace(build_trace([call], gpu_name="NVIDIA H100 80GB HBM3"), box / "seed_trace.json")


@pytest.mark.slow
@given(data=mutated_configs())
@fuzz_settings(60)
def test_fuzz_model_config(box: Path, seed_trace: Path, data: bytes) -> None:  # noqa: F811
    case = fresh(box, "config")
    config = write(case / "config.json", data)
    trace = write(case / "t.json", seed_trace.read_bytes())
    res = checked_call("model_config", DataRoots([case]), "analyze_trace", trace_path=str(trace), output_dir="out",
                       model_config=str(config))  # fmt: skip
    if res is None:
        assert not (case / "out").exists(), "a refused config let analyze write"


# ---- arch JSON --------------------------------------------------------------------------------------
SEED_ARCH = {"name": "my-gpu", "mem_bw_gbps": 3350, "memory_gb": 80, "num_cus": 132,
             "max_achievable_tflops": {"matrix_bf16": 708, "matrix_fp8": 1273, "vector_fp32": 60}}  # fmt: skip
ARCH_KEYS = ["name", "mem_bw_gbps", "peak_hbm_bw_tbs", "memory_gb", "num_cus", "max_achievable_tflops", "platform",
             "peak_bf16_maf_tflops", "_reference"]  # fmt: skip
PEAKS = [0, -1, 1e308, 7.08e14, 1e-9, 0.01, 100_000, 100_001, 2**63, "708", None, True, float("nan")]


@st.composite
def mutated_archs(draw: Any) -> bytes:
    doc: dict[str, Any] = json.loads(json.dumps(SEED_ARCH))
    for _ in range(draw(st.integers(1, 4))):
        if draw(st.booleans()) and isinstance(doc.get("max_achievable_tflops"), dict):
            spec = draw(st.sampled_from(["matrix_bf16", "matrix_fp8", "vector_fp32", "matrix_fp4", "bogus", "MATRIX"]))
            doc["max_achievable_tflops"][spec] = draw(st.sampled_from(PEAKS) | json_values)
        else:
            doc[draw(st.sampled_from(ARCH_KEYS))] = draw(st.sampled_from(PEAKS) | json_values)
    data = dumps(doc).encode("utf-8", "surrogatepass")
    return draw(byte_mutations(data)) if draw(st.integers(0, 2)) == 0 else data


@pytest.mark.slow
@given(data=mutated_archs())
@fuzz_settings(200)
def test_fuzz_arch_file(box: Path, data: bytes) -> None:  # noqa: F811
    case = fresh(box, "arch")
    arch = write(case / "gpu.json", data)
    res = checked_call("arch file", DataRoots([case]), "model_attention", batch=2, heads_q=8, seq_q=1024,
                       head_dim=128, arch=str(arch))  # fmt: skip
    if res is not None:
        text = res.model_dump_json()
        assert "NaN" not in text and "Infinity" not in text


# ---- streamed metrics -------------------------------------------------------------------------------
STREAMABLE = [p for p in sorted((CORPUS / "metrics").glob("*.json")) if json.loads(p.read_text()).get("operations")]
VALID_TEXT = {p.stem: (CORPUS / "valid" / f"{p.stem}.md") for p in STREAMABLE}
LINE_PIECES = ['"operation\\u0073": []', '"operations": [1]', '"name": "x"', '"n\\u0061me": "y"', '"time_ms": 1e400',
               '"efficiency": {"efficiency_percent": -1}', '"args": ' + "[" * 70 + "]" * 70]  # fmt: skip


@st.composite
def streamed_metrics(draw: Any) -> tuple[str, bytes]:
    source = STREAMABLE[draw(st.integers(0, len(STREAMABLE) - 1))]
    lines = line_layout(source.read_text()).split("\n")
    for _ in range(draw(st.integers(1, 3))):
        i = draw(st.integers(0, len(lines) - 1))
        kind = draw(st.integers(0, 3))
        line = lines[i]
        if kind == 0 and line.startswith("{") and "}" in line:  # a member added at an operation's start
            lines[i] = "{" + draw(st.sampled_from(LINE_PIECES)) + ", " + line[1:]
        elif kind == 1:  # a member added to the top level, before or after the list
            head_or_tail = 0 if draw(st.booleans()) else len(lines) - 2
            text = lines[head_or_tail]
            at = 1 if head_or_tail == 0 else max(0, text.rfind("}"))
            piece = draw(st.sampled_from(LINE_PIECES))
            lines[head_or_tail] = text[:at] + (piece + ", " if at == 1 else ", " + piece) + text[at:]
        elif kind == 2:
            lines[i] = line.replace(draw(st.sampled_from(['"', ",", ":", "1", "{"])),
                                    draw(st.sampled_from(HOSTILE_TEXT)), 1)  # fmt: skip
        else:
            lines.insert(i, draw(st.sampled_from(["", "]", "{}", "{},", dumps(draw(json_values))])))
    data = "\n".join(lines).encode("utf-8", "surrogatepass")
    return source.stem, (draw(byte_mutations(data)) if draw(st.integers(0, 4)) == 0 else data)


@pytest.mark.slow
@given(case_data=streamed_metrics(), numbers=st.sampled_from(["decimal", "float"]))
@fuzz_settings(300)
def test_fuzz_streamed_metrics(box: Path, case_data: tuple[str, bytes], numbers: str) -> None:  # noqa: F811
    stem, data = case_data
    case = fresh(box, "streamed")
    metrics = write(case / "out" / "category_data" / "sdpa_fwd_metrics.json", data)
    roots = DataRoots([case])
    doc = open_streamed(metrics, roots, numbers)  # type: ignore[arg-type]
    if doc is not None:  # vouched for: the whole parse must give the same document
        try:
            whole = orjson.loads(data) if numbers == "float" else json.loads(data.decode(), parse_float=str)
        except ValueError:
            whole = None  # orjson refuses 1e400 where the streamed read skips it (the documented leniency)
        try:
            if whole is not None and numbers == "float":
                assert list(doc["operations"]) == whole["operations"], data[:300]
                assert [k for k in doc] == [k for k in whole], data[:300]
        finally:
            doc["operations"].close()
    findings = write(case / "out" / "category_findings" / "sdpa_fwd_findings.md", VALID_TEXT[stem].read_bytes())
    checked_call("streamed metrics", roots, "validate_findings", findings_path=str(findings), tier="compute")


@pytest.mark.slow
def test_fuzz_readers_tallies() -> None:
    """Each target ran, some cases were accepted (the seeds are valid) and some refused, none crashed (-s prints)."""
    for name in ("model_config", "arch file", "streamed metrics"):
        tally = TALLIES[name]
        print(tally.line(name))
        assert tally.cases and tally.accepted and tally.refused and not tally.crashes and not tally.hangs, name
