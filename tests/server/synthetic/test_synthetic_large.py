"""generate_large_trace: a million-event trace for the ingestion benchmark, checked with numpy."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import orjson
import pytest

from sdpa_analyzer.server.synthetic import generate_large_trace


@pytest.mark.slow
def test_million_event_trace_is_complete_and_linked(tmp_path: Path) -> None:
    path = tmp_path / "large.json"
    written = generate_large_trace(1_000_000, path)
    events = orjson.loads(path.read_bytes())["traceEvents"]
    assert len(events) == written >= 1_000_000

    kernels = [e for e in events if e.get("cat") == "kernel"]
    launches = [e for e in events if e.get("cat") in ("cuda_runtime", "cuda_driver")
                and e["name"] in ("cudaLaunchKernel", "cudaLaunchKernelExC")]
    k_corr = np.array([e["args"]["correlation"] for e in kernels])
    l_corr = np.array([e["args"]["correlation"] for e in launches])
    # every kernel has exactly one launch and every launch one kernel
    assert len(np.unique(k_corr)) == len(k_corr) == len(l_corr)
    assert np.array_equal(np.sort(k_corr), np.sort(l_corr))

    # every kernel lies inside exactly one ProfilerStep window
    steps = sorted((e["ts"], e["ts"] + e["dur"]) for e in events if e.get("cat") == "user_annotation")
    starts, ends = np.array([s for s, _ in steps]), np.array([e for _, e in steps])
    assert np.all(starts[1:] >= ends[:-1])
    k_start = np.array([e["ts"] for e in kernels])
    k_end = k_start + np.array([e["dur"] for e in kernels])
    owner = np.searchsorted(starts, k_start, side="right") - 1
    assert np.all(owner >= 0) and np.all(k_end <= ends[owner])

    # mostly non-attention work, with one attention call per layer
    attention = sum(1 for e in kernels if "flash_fwd_kernel" in e["name"])
    sdpa = sum(1 for e in events if e.get("name") == "aten::scaled_dot_product_attention")
    assert attention == sdpa > 0
    assert attention < 0.05 * len(kernels)

    # ids stay unique across the replicated steps
    ext = np.array([e["args"]["External id"] for e in events if e.get("cat") == "cpu_op"])
    assert len(np.unique(ext)) == len(ext)
    py = np.array([e["args"]["Python id"] for e in events if e.get("cat") == "python_function"])
    assert len(np.unique(py)) == len(py)
