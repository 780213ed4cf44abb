"""The binding roof among three (tensor cores, exponential units, HBM) and the ceiling reach the findings as
references: the template lists them, prose that cites them validates, and the resolved words are the hand-computed
binding roof."""

from __future__ import annotations

import json
from pathlib import Path

from sdpa_analyzer.server.roots import DataRoots
from sdpa_analyzer.server.tools import call
from tests.support import FLASH_ROW, fill_findings, make_folder

# FLASH_ROW by hand on an H100 SXM (datasheet 989.4 TFLOPS bf16, 66.9 TFLOPS FP32, 3.35 TB/s; 16 exp per SM-clock
# against 256 FP32 FLOP per SM-clock, so 66.9e12 × 16 / 256 = 4.18e12 exp/s): B2 H8 N1024 d64 causal, one call:
#   kept pairs  16 × 1024 × 1025 / 2 = 8,396,800
#   tensor      2 × 8,396,800 × (64 + 64) FLOP / 989.4e12 = 2.17 µs
#   exp         8,396,800 / 4.18e12 = 2.01 µs
#   HBM         Q, K, V, O: 4 × 2 × 8 × 1024 × 64 × 2 B = 8.39 MB (+ the fp32 LSE) / 3.35e12 = 2.52 µs  -> HBM binds
# The same call non-causal at N 4096, d128: tensor 2 × 16 × 4096² × 256 / 989.4e12 = 138.9 µs, exp 16 × 4096² /
# 4.18e12 = 64.2 µs, HBM 4 × 2 × 8 × 4096 × 128 × 2 B / 3.35e12 = 20.0 µs -> the tensor cores bind.
LONG_ROW = (FLASH_ROW.replace("(2, 8, 1024, 64)", "(2, 8, 4096, 128)").replace("'True'", "'False'")
            .replace(",10,1000.0,100.0,", ",10,10000.0,1000.0,"))  # fmt: skip


def _template(tmp_path: Path, row: str, **window: float) -> tuple[Path, str, dict]:
    folder = make_folder(tmp_path, [row], **window)
    roots = DataRoots([tmp_path])
    call("rank_findings", roots, output_dir=str(folder), category="sdpa_fwd", arch="h100-sxm")
    tpl = call("render_findings_template", roots, output_dir=str(folder), category="sdpa_fwd")
    metrics = json.loads((folder / "category_data" / "sdpa_fwd_metrics.json").read_text())
    return Path(tpl.findings_file), Path(tpl.findings_file).read_text(), metrics


def _cite_and_validate(tmp_path: Path, row: str, expected: str) -> None:
    path, text, metrics = _template(tmp_path, row)
    assert "{{P1.op1.binding_roof}} = " + expected in text
    assert "{{P1.op1.ceiling_pct}} = " in text
    filled = fill_findings(text, metrics).splitlines()
    at = next(i for i, line in enumerate(filled) if line.startswith("**Insight**"))
    filled[at] += " It is {{P1.op1.binding_roof}}; the ceiling model's best for it is {{P1.op1.ceiling_pct}}."
    path.write_text("\n".join(filled) + "\n")
    report = call("validate_findings", DataRoots([tmp_path]), findings_path=str(path))
    assert report.passed, [str(e) for e in report.errors]
    assert f"It is {expected};" in path.read_text()  # written out resolved


def test_hbm_binds_the_short_causal_call(tmp_path: Path) -> None:
    _cite_and_validate(tmp_path, FLASH_ROW, "bound by HBM bandwidth")


def test_the_tensor_cores_bind_the_long_call(tmp_path: Path) -> None:
    _cite_and_validate(tmp_path, LONG_ROW, "bound by the tensor cores")


# FLASH_ROW's ten calls in 1 µs in all: its HBM time alone is 2.52 µs a call (above), so the modeled work would run at
# about 2,500 % of the HBM roof: the model, not the kernel, is wrong. It is no finding (half of a 2 µs window, it would
# otherwise be P1), and the prose may say why by reference to the category's row.
TOO_FAST_ROW = FLASH_ROW.replace(",10,1000.0,100.0,", ",10,1.0,0.1,")


def test_a_row_above_the_roofline_is_no_finding_and_reaches_the_prose_as_its_model_check(tmp_path: Path) -> None:
    _, text, metrics = _template(tmp_path, TOO_FAST_ROW, e2e_ms=0.002)
    assert metrics["category_findings"] == []
    line = next(x for x in text.splitlines() if "{{cat.op1.model_check}} = " in x)
    assert "model inconsistent" in line
    assert "{{cat.op1.band}}" not in text  # no band verdict on an inconsistent model
