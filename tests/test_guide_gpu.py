"""docs/internal-api.md "A GPU", walked through: a new part is one data file with sourced properties. The steps are
done in a temporary copy of the packages; only the files the walk-through names change, and the new part is
identified from a trace's deviceProperties (its name, or an unknown name by its properties) and scored against the
file's datasheet roofs (the expected numbers are computed here by hand)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.support import REPO

pytestmark = pytest.mark.slow  # a copy of the packages and a fresh interpreter

GUIDE = REPO / "docs" / "internal-api.md"
KEY = "guide-part"
URL = "https://example.invalid/guide-part-datasheet.pdf"  # the walk-through's made-up document
PART = {
    "key": KEY, "name": "Guide Accelerator 64GB", "vendor": "nvidia", "arch": "sm_90", "part_family": "guide-part",
    "form_factor": "pcie", "aliases": ["Guide Accelerator"], "device_names": ["Guide Accelerator 64GB"],
    "device_patterns": [r"\bguide accelerator\b"], "sm_count": 100, "l2_cache_mb": 40, "llc_mb": None,
    "memory_gb": 64, "hbm_tbs_datasheet": 2.5, "hbm_tbs_achievable": None, "hbm_tbs_unverified": None,
    "tflops_datasheet": {"matrix_bf16": 500.0, "matrix_fp16": 500.0, "matrix_fp8": 1000.0, "matrix_tf32": 250.0,
                         "matrix_fp32_3xtf32": 83.3, "matrix_fp32": 60.0, "vector_fp32": 60.0},
    "tflops_achievable": {}, "tflops_unverified": {}, "achievable_method": None, "notes": [],
    "sources": {name: f"Guide Accelerator datasheet — {URL}" for name in (
        "sm_count", "l2_cache_mb", "memory_gb", "hbm_tbs_datasheet", "tflops_datasheet.*")},
}  # fmt: skip
# what the walk-through lets change: the new data file and the regenerated table of docs/gpus.md (the tests it names
# live in tests/, outside the copy)
ALLOWED = {f"perf_models/data/gpus/{KEY}.json", "docs/gpus.md"}


def _digests(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and "__pycache__" not in p.parts}  # fmt: skip


def _run(copy: Path, code: str) -> str:
    env = {**os.environ, "PYTHONPATH": f"{copy}{os.pathsep}{REPO}"}  # the copy's packages first; tests.support
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=copy, env=env, capture_output=True,
                         text=True, timeout=300)  # fmt: skip
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout


@pytest.fixture(scope="module")
def copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("guide-gpu")
    for pkg in ("perf_models", "server", "prompts"):
        shutil.copytree(REPO / pkg, root / pkg, ignore=shutil.ignore_patterns("__pycache__"))
    (root / "docs").mkdir()
    shutil.copy2(REPO / "docs" / "gpus.md", root / "docs" / "gpus.md")
    before = _digests(root)
    # steps 1-3: the one data file
    (root / "perf_models" / "data" / "gpus" / f"{KEY}.json").write_text(json.dumps(PART, indent=2), encoding="utf-8")
    # step 5: regenerate the docs table as the guide says
    _run(root, """
        from pathlib import Path
        from sdpa_analyzer.server.tools.archs import TABLE_BEGIN, TABLE_END, markdown_table
        page = Path("docs/gpus.md")
        text = page.read_text(encoding="utf-8")
        start, end = text.index(TABLE_BEGIN), text.index(TABLE_END) + len(TABLE_END)
        page.write_text(text[:start] + markdown_table() + text[end:], encoding="utf-8")
    """)
    after = _digests(root)
    changed = {k for k in after if before.get(k) != after[k]} | (set(before) - set(after))
    assert changed == ALLOWED, f"the walk-through touched {sorted(changed - ALLOWED)} beyond the files it names"
    return root


def test_the_guide_walks_through_adding_a_gpu() -> None:
    text = GUIDE.read_text(encoding="utf-8")
    entry = text[text.index("- **A GPU**"):text.index("- **A band**")]
    for step in ("perf_models/data/gpus/<key>.json", "tflops_datasheet", "sustained_clock_ghz", "device_patterns",
                 "IDENTIFIED", "docs/gpus.md", "tests/test_guide_gpu.py"):
        assert step in entry, step


def test_the_new_gpu_is_identified_from_device_properties(copy: Path) -> None:
    out = _run(copy, """
        import json
        from sdpa_analyzer.perf_models.devices import identify_device
        props = {"totalGlobalMem": 61 * 2**30, "numSms": 100, "computeMajor": 9, "computeMinor": 0, "warpSize": 32}
        named = identify_device({**props, "name": "Guide Accelerator 64GB"})
        unknown = identify_device({**props, "name": "GA-64 engineering sample"})
        wrong = identify_device({**props, "name": "Guide Accelerator 64GB", "numSms": 96})
        print(json.dumps([named.gpu.key, named.warning, unknown.gpu.key if unknown.gpu else None,
                          unknown.warning, wrong.gpu, wrong.reason]))
    """)
    named, named_warning, unknown, unknown_warning, wrong, wrong_reason = json.loads(out)
    assert (named, named_warning) == (KEY, None)
    # a name the table does not know, with the new part's properties (no other part has 100 SMs on sm_90)
    assert unknown == KEY and "not in the GPU table" in unknown_warning and f"scored as {KEY}" in unknown_warning
    # properties that contradict it (96 SMs): no part fits, refused
    assert wrong is None and "96 SMs/CUs are not 100" in wrong_reason


def test_the_new_gpu_is_scored_against_its_datasheet_roofs(copy: Path, tmp_path: Path) -> None:
    out = _run(copy, f"""
        import json
        from pathlib import Path
        from sdpa_analyzer.server.roots import DataRoots
        from sdpa_analyzer.server.tools import call
        from tests.support import kernel_trace
        roots = DataRoots(["/"])
        m = call("model_attention", roots, batch=4, heads_q=16, seq_q=4096, head_dim=128, arch={KEY!r},
                 measured_us=2000.0)
        doc = kernel_trace([{{}}, {{}}], device="Guide Accelerator 64GB")
        doc["deviceProperties"][0].update(totalGlobalMem=61 * 2**30, numSms=100, computeMajor=9, computeMinor=0,
                                          warpSize=32)
        trace = Path({str(tmp_path)!r}) / "trace.json"
        trace.write_text(json.dumps(doc))
        res = call("analyze_trace", roots, trace_path=str(trace), output_dir=str(trace.parent / "out"))
        roof = call("compute_roofline", roots, output_dir=str(trace.parent / "out"), category="sdpa_fwd")
        table = call("list_architectures", roots, gpu={KEY!r}).details
        print(json.dumps([m.peaks.gpu_key, m.peaks.peak_tflops, m.peaks.peak_tflops_kind, m.efficiency_pct,
                          res.gpu.arch, roof.peaks.gpu_key, roof.peaks.peak_tflops, roof.peaks.peak_tbs,
                          roof.modeled_rows, table.sources["sm_count"]]))
    """)
    key, peak, kind, eff, traced, scored, roof_peak, roof_tbs, modeled, source = json.loads(out)
    # 4·B·H·N²·d = 4·4·16·4096²·128 = 549.8 GFLOP in 2 ms = 274.9 TFLOPS: 54.98 % of the file's 500 (compute-bound:
    # intensity ~N/2 = 2048 FLOP/B against a ridge of 500 / 2.5 = 200)
    assert (key, peak, kind) == (KEY, 500.0, "datasheet")
    assert eff == pytest.approx(100 * 4 * 4 * 16 * 4096**2 * 128 / 2e-3 / 500e12, abs=0.01)
    assert traced == scored == KEY and (roof_peak, roof_tbs) == (500.0, 2.5) and modeled == 1
    assert URL in source
