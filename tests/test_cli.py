"""The CLI: subcommands, --json, and exit codes (0 ok, 1 findings invalid, 2 usage/input error)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from server_fixtures import FLASH_ROW, make_folder

from server.cli.main import main


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    try:
        rc = main(list(argv))
    except SystemExit as exc:  # argparse usage errors
        rc = int(exc.code or 0)
    out, err = capsys.readouterr()
    return rc, out, err


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
    assert rc == 2 and "heads_kv=7" in err
    rc, _, err = run(capsys, "model", "-b", "1", "--heads", "8", "-n", "128", "-d", "64", "--arch", "nope")
    assert rc == 2 and "arch='nope'" in err
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
    blocker = tmp_path / "a_file"
    blocker.write_text("x")
    rc, _, err = run(capsys, "report", str(folder), "-o", str(blocker / "report.html"))
    assert rc == 2 and err.count("\n") == 1 and "a_file" in err and "Traceback" not in err
