"""Refit the ceiling model and write perf_models/data/ceiling_params.json; print the leave-one-GPU-out table
(docs/verdicts.md carries it; tests/perf_models/test_ceiling.py checks both against a fresh fit).

Usage: .venv/bin/python scripts/fit_ceiling.py [--check]
"""

from __future__ import annotations

import sys
from pathlib import Path

from sdpa_analyzer.perf_models.ceiling_fit import fit_params_json, leave_one_gpu_out, logo_markdown

TARGET = Path(__file__).resolve().parents[1] / "perf_models" / "data" / "ceiling_params.json"


def main(argv: list[str]) -> int:
    text = fit_params_json()
    if "--check" in argv:
        same = TARGET.exists() and TARGET.read_text(encoding="utf-8") == text
        print("up to date" if same else "stale: run scripts/fit_ceiling.py")
        return 0 if same else 1
    tmp = TARGET.with_suffix(".json.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(TARGET)
    print(logo_markdown(leave_one_gpu_out()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
