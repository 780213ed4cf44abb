"""The CLI: subcommands, --json, and exit codes (0 ok, 1 findings invalid, 2 usage/input error)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support import FLASH_ROW, make_folder
from tests.support import run_cli as run


def test_roofline_rank_validate_exit_codes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = make_folder(tmp_path, [FLASH_ROW])
    rc, out, _ = run(capsys, "roofline", str(folder), "sdpa_fwd", "--arch", "h100-sxm")
    assert rc == 0 and "_scaled_dot_product_flash_attention" in out and "eff %" in out
    rc, out, _ = run(capsys, "rank", str(folder), "sdpa_fwd", "--arch", "h100-sxm", "--json")
    assert rc == 0 and json.loads(out)["findings"][0]["rank"] == 1
    rc, out, _ = run(capsys, "template", str(folder), "sdpa_fwd")
    assert rc == 0
    findings = folder / "category_findings" / "sdpa_fwd_findings.md"
    rc, out, _ = run(capsys, "validate", str(findings))
    assert rc == 1 and "FAIL" in out


def test_input_errors_exit_2_with_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, _, err = run(capsys, "roofline", str(tmp_path / "missing"), "sdpa_fwd")
    assert rc == 2 and err.count("\n") == 1 and "output_dir not found" in err
    rc, _, err = run(capsys, "model", "-b", "1", "--heads", "32", "--heads-kv", "7", "-n", "128", "-d", "64")
    assert rc == 2 and "--heads-kv 7" in err
    rc, _, err = run(capsys, "model", "-b", "1", "--heads", "8", "-n", "128", "-d", "64", "--arch", "nope")
    assert rc == 2 and "--arch 'nope'" in err
    rc, _, err = run(capsys, "roofline")
    assert rc == 2


def test_archs_and_model(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = run(capsys, "archs")
    assert rc == 0 and "h100-sxm" in out and "mi300x" in out
    rc, out, _ = run(
        capsys,
        "model",
        "-b",
        "1",
        "--heads",
        "32",
        "-n",
        "1024",
        "-d",
        "128",
        "--direction",
        "bwd",
        "--mask",
        "causal",
        "--json",
    )
    data = json.loads(out)
    # seed PR numbers: causal bwd, B=1, H=32, N=1024, d=128, 5 GEMMs: 2·32·(1024·1025/2)·(3·128+2·128)
    assert rc == 0 and data["flops_useful"] == 2 * 32 * (1024 * 1025 // 2) * 640


def test_relative_paths_are_taken_from_the_working_directory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    make_folder(tmp_path, [FLASH_ROW], name="rel")
    monkeypatch.chdir(tmp_path)
    rc, out, err = run(capsys, "roofline", "rel", "sdpa_fwd", "--arch", "h100-sxm", "--json")
    assert rc == 0, err
    assert json.loads(out)["roofline_file"] == str(tmp_path / "rel" / "category_data" / "sdpa_fwd_roofline.csv")


def test_os_errors_are_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = make_folder(tmp_path, [FLASH_ROW])
    (folder / "reports").write_text("x")  # a file where the reports folder goes
    rc, _, err = run(capsys, "report", str(folder), "-o", "report.html")
    assert rc == 2 and err.count("\n") == 1 and "reports" in err and "Traceback" not in err, err


def test_version_ranges_choices_and_repeatable_roots(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from sdpa_analyzer.server import __version__

    rc, out, _ = run(capsys, "--version")
    assert rc == 0 and out.strip() == f"sdpa-analyzer {__version__}"
    folder = make_folder(tmp_path, [FLASH_ROW])
    rc, _, err = run(capsys, "roofline", str(folder), "sdpa_fwd", "--limit", "-1")
    assert rc == 2 and "--limit -1" in err and err.count("\n") == 1
    rc, _, err = run(capsys, "roofline", str(folder), "sdpa_fwd", "--bytes-model", "l2")
    assert rc == 2 and "--bytes-model 'l2'" in err and "compulsory" in err
    rc, _, err = run(capsys, "model", "-b", "1", "--heads", "8", "-n", "64", "-d", "64", "--mask", "diagonal")
    assert rc == 2 and "--mask 'diagonal'" in err
    # --root takes one folder per flag and is repeated for several
    other = tmp_path / "other"
    other.mkdir()
    rc, out, _ = run(capsys, "load", str(folder), "sdpa_fwd", "--root", str(other), "--root", str(tmp_path), "--json")
    assert rc == 0 and json.loads(out)["status"] == "OK"
    rc, _, err = run(capsys, "load", str(folder), "sdpa_fwd", "--root", str(other), "--root", str(other))
    assert rc == 2 and "outside the allowed data roots" in err
    from sdpa_analyzer.server.cli.main import build_parser

    args = build_parser().parse_args(["serve", "--root", "a", "--root", "c"])
    assert args.root == ["a", "c"]


def test_root_never_takes_the_argument_after_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from sdpa_analyzer.server.synthetic import build_trace, demo_calls, write_trace

    trace = tmp_path / "t.json.gz"
    write_trace(build_trace(demo_calls()), trace)
    monkeypatch.chdir(tmp_path)
    # the trace after --root DIR is the trace, not a second root (it was: "the following arguments are required")
    rc, out, err = run(capsys, "analyze", "--root", str(tmp_path), str(trace), "-o", "out", "--json")
    assert rc == 0, err
    assert json.loads(out)["output_dir"] == str(tmp_path / "out")
    folder = tmp_path / "out"
    rc, out, err = run(capsys, "rank", "--root", str(tmp_path), str(folder), "sdpa_fwd", "--json")
    assert rc == 0 and json.loads(out)["status"] == "OK", err
    # and a second folder after one --root is an unknown argument, said in one line (not taken as a root)
    rc, _, err = run(capsys, "load", str(folder), "sdpa_fwd", "--root", str(tmp_path), str(tmp_path))
    assert rc == 2 and "unrecognized arguments" in err and err.count("\n") == 2  # usage line + error line


def test_all_runs_the_command_for_each_category(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from sdpa_analyzer.server.synthetic import build_trace, demo_calls, write_trace

    trace = tmp_path / "t.json.gz"
    write_trace(build_trace(demo_calls()), trace)
    folder = tmp_path / "out"
    assert run(capsys, "analyze", str(trace), "-o", str(folder))[0] == 0
    rc, out, err = run(capsys, "rank", str(folder), "all", "--json")
    assert rc == 0, err
    result = json.loads(out)
    # the synthetic trace holds forward and backward calls and no serving attention
    assert list(result) == ["sdpa_fwd", "sdpa_bwd", "inferenceattention"]
    assert [r["status"] for r in result.values()] == ["OK", "OK", "NO_DATA"]
    assert [r["category"] for r in result.values()] == list(result)
    data = folder / "category_data"
    assert sorted(p.name for p in data.glob("*_metrics.json")) == ["sdpa_bwd_metrics.json", "sdpa_fwd_metrics.json"]
    rc, out, _ = run(capsys, "rank", str(folder), "all")
    assert rc == 0 and [line for line in out.splitlines() if line.startswith("== ")] == [
        "== sdpa_fwd", "== sdpa_bwd", "== inferenceattention"]  # fmt: skip
    rc, out, _ = run(capsys, "template", str(folder), "all")
    assert rc == 0 and len(list((folder / "category_findings").glob("*_findings.md"))) == 3
    # a typo is still one line naming the choices
    rc, _, err = run(capsys, "rank", str(folder), "alll")
    assert rc == 2 and "'alll' is invalid" in err and err.count("\n") == 1


def test_analyze_writes_under_the_working_directory_by_default(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from sdpa_analyzer.server.synthetic import build_trace, demo_calls, write_trace

    traces = tmp_path / "traces"
    traces.mkdir()
    trace = traces / "run1.json.gz"
    write_trace(build_trace(demo_calls()), trace)
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    rc, out, _ = run(capsys, "analyze", str(trace), "--json")
    assert rc == 0 and json.loads(out)["output_dir"] == str(work / "run1_analysis")
    assert (work / "run1_analysis" / "category_data" / "sdpa_fwd_ops.csv").is_file()
    assert not (traces / "run1_analysis").exists()


def test_demo_starts_from_a_clean_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out_dir = tmp_path / "demo-out"
    assert run(capsys, "demo", "--output-dir", str(out_dir))[0] == 0
    stale = out_dir / "analysis" / "category_findings" / "sdpa_fwd_findings.md"
    stale.parent.mkdir(parents=True, exist_ok=True)
    stale.write_text("an earlier run's findings\n")
    assert run(capsys, "demo", "--output-dir", str(out_dir))[0] == 0
    assert not stale.exists()  # the second run started clean: no "findings file already exists"
    foreign = tmp_path / "mine"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("not the demo's")
    rc, _, err = run(capsys, "demo", "--output-dir", str(foreign))
    assert rc != 0 and (foreign / "notes.txt").exists() and "not written by the demo" in err


def test_rank_table_gives_the_impact_unit_and_band_columns(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = make_folder(tmp_path, [FLASH_ROW])
    rc, out, _ = run(capsys, "rank", str(folder), "sdpa_fwd", "--arch", "h100-sxm", "--json")
    finding = json.loads(out)["findings"][0]
    # the orchestrator's contract: mid = 0.875 x high, low = 0.75 x high (high: the whole gap to the roofline)
    assert finding["impact_score"] == pytest.approx(0.875 * finding["impact_score_high"], abs=0.01)
    assert finding["impact_score_low"] == pytest.approx(0.75 * finding["impact_score_high"], abs=0.01)
    rc, out, _ = run(capsys, "rank", str(folder), "sdpa_fwd", "--arch", "h100-sxm")
    assert rc == 0
    header = next(line for line in out.splitlines() if line.startswith("rank "))
    assert header.split()[:8] == ["rank", "bound", "library", "eff", "method", "impact", "low", "mid"]
    assert "to band" in header and "saved ms" in header
    row = next(line for line in out.splitlines() if line.startswith("P1 "))
    cells = row.split()
    assert f"{finding['impact_score_low']:.2f}" in cells and f"{finding['impact_score']:.2f}" in cells
    levers = finding.get("levers", [])
    assert (f"{levers[0]['saved_ms']:.3f}" if levers else "—") in cells
    assert "impact in % of E2E" in out


def test_relative_paths_are_taken_against_the_working_directory_with_roots(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    first, work = tmp_path / "first_root", tmp_path / "work"
    first.mkdir()
    folder = make_folder(work, [FLASH_ROW])
    monkeypatch.chdir(work)
    relative = str(folder.relative_to(work))
    roots = ("--root", str(first), "--root", str(work))
    rc, _, err = run(capsys, "rank", relative, "sdpa_fwd", "--arch", "h100-sxm", *roots)
    assert rc == 0, err
    assert (folder / "category_data" / "sdpa_fwd_metrics.json").is_file()
    assert not any(first.iterdir()), "nothing may land under the first root"
    # a relative path that the working directory puts outside every root is refused, not re-read under a root
    rc, _, err = run(capsys, "rank", relative, "sdpa_fwd", "--arch", "h100-sxm", "--root", str(first))
    assert rc == 2 and "outside the allowed data roots" in err


def test_roofline_table_marks_rates_of_bounded_work() -> None:
    from types import SimpleNamespace

    from sdpa_analyzer.server.cli.human import human_roofline

    def row(work_bound: str, eff: float) -> SimpleNamespace:
        return SimpleNamespace(name="vllm::unified_attention_with_output", shape="fwd", attention_type="paged",
                               library="vLLM", count=1, time_ms=0.1, achieved_tflops=10.0, efficiency_pct=eff,
                               compute_pct=eff, memory_pct=None, regime="memory", band_low=None, band_high=None,
                               band_status="none", work_bound=work_bound)  # fmt: skip

    result = SimpleNamespace(status="OK", peaks=None, category="inferenceattention", total_rows=3, modeled_rows=3,
                             total_time_ms=0.3, weighted_efficiency_pct=2.0, bytes_model="compulsory", notes=[],
                             warnings=[], roofline_file=None,
                             rows=[row("exact", 1.0), row("lower", 2.0), row("upper", 3.0)])  # fmt: skip
    lines = human_roofline(result).splitlines()
    exact, lower, upper = (line.split() for line in lines if line.startswith("unified_attention"))
    assert exact[6:9] == ["10.0", "1.0", "1.0"]  # the result's digits, as the metrics JSON writes them
    assert lower[6:9] == ["≥10.0", "≥2.0", "≥2.0"] and upper[6:9] == ["≤10.0", "≤3.0", "≤3.0"]
    assert lower[9] == upper[9] == "—"  # no value: no mark
    assert any(line.startswith("≥ / ≤ / ~: the row's work is a lower bound") for line in lines)
    assert not any("left out" in line for line in lines)  # the result leaves nothing out (no efficiency_left_out)


def test_roofline_header_names_the_time_the_efficiency_leaves_out() -> None:
    from types import SimpleNamespace

    from sdpa_analyzer.server.cli.human import human_roofline

    left = [SimpleNamespace(why="bound", rows=2, time_ms=0.2, share_pct=66.67),
            SimpleNamespace(why="inconsistent", rows=1, time_ms=0.05, share_pct=16.67)]  # fmt: skip
    result = SimpleNamespace(status="OK", peaks=None, category="inferenceattention", total_rows=4, modeled_rows=4,
                             total_time_ms=0.3, weighted_efficiency_pct=None, bytes_model="compulsory", notes=[],
                             warnings=[], roofline_file=None, rows=[], efficiency_left_out=left)  # fmt: skip
    header = next(line for line in human_roofline(result).splitlines() if line.startswith("inferenceattention:"))
    assert header.endswith("left out of it: bound 2 rows 0.2 ms (66.67 %), inconsistent 1 row 0.05 ms (16.67 %)")


def test_fmt_writes_the_digits_a_result_holds() -> None:
    import numpy as np

    from sdpa_analyzer.server.cli.human import fmt

    # the metrics JSON writes these floats as 2.723, 7.8, 0.1654 and 31.0: the terminal says the same
    assert [fmt(2.723), fmt(7.8), fmt(0.1654), fmt(31.0)] == ["2.723", "7.8", "0.1654", "31.0"]
    assert [fmt(np.float64(7.8)), fmt(12), fmt(None), fmt(float("nan")), fmt(False)] == ["7.8", "12", "—", "—", "no"]
