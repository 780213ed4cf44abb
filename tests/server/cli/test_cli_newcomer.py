"""What a new user meets on the command line (issue 22): a closed pipe is a quiet exit, hints speak in CLI
terms, a bad choice or a wrong file is one line, `serve --http` says where it listens, and the tables' words
(legend, counts, the peaks line, stragglers) say what was computed."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest
from mcp import Client

from sdpa_analyzer.perf_models.hardware import get_gpu
from sdpa_analyzer.server.cli.human import clip
from sdpa_analyzer.server.cli.main import main
from sdpa_analyzer.server.synthetic import SyntheticAttentionCall, build_trace, write_trace
from sdpa_analyzer.server.vocab import CATEGORIES, HEURISTIC_HIGH, HEURISTIC_LOW, HEURISTIC_MID, LOW_FACTOR, MID_FACTOR
from tests.support import CLI_COMMAND, FLASH_ROW, REPO, make_folder

CLI = [*CLI_COMMAND]
# FLASH_ROW without its Concrete Inputs: no causal flag, so no model (an unmodeled, heuristic row)
UNMODELED_ROW = FLASH_ROW.replace("\"('', '', '', '0.', 'True', 'False', '0.125')\"", '""')


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    try:
        rc = main(list(argv))
    except SystemExit as exc:  # argparse usage errors
        rc = int(exc.code or 0)
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`sdpa-analyzer demo`'s analysis folder (forward and backward categories, ranked)."""
    out = tmp_path_factory.mktemp("demo") / "demo-out"
    proc = subprocess.run([*CLI, "demo", "--output-dir", str(out)], capture_output=True, text=True, cwd=REPO,
                          timeout=300)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return out / "analysis"


# ---------------------------------------------------------------- a reader that leaves
@pytest.mark.parametrize(
    "argv", [["archs"], ["roofline", "{demo}", "sdpa_fwd", "--json"], ["rank", "{demo}", "sdpa_bwd"]]
)
def test_a_closed_pipe_is_a_quiet_exit(demo: Path, argv: list[str]) -> None:
    """`sdpa-analyzer archs | head -1`: the reader is gone before anything is written (its end of the pipe is
    closed first, so every write fails, whatever the output's size): exit 0, nothing on stderr."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        proc = subprocess.run([*CLI, *(a.format(demo=demo) for a in argv)], stdout=write_end, stderr=subprocess.PIPE,
                              text=True, cwd=REPO, timeout=120)  # fmt: skip
    finally:
        os.close(write_end)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr


def test_a_closed_pipe_through_a_shell_pipeline(demo: Path) -> None:
    """The README's own case, through a real shell: `... | head -c 100` prints its 100 bytes and nothing else."""
    cmd = f"{sys.executable} -m sdpa_analyzer.server.cli.main roofline {demo} sdpa_fwd --json | head -c 100"
    proc = subprocess.run(["bash", "-o", "pipefail", "-c", cmd], capture_output=True, cwd=REPO, timeout=120)
    assert proc.returncode == 0 and len(proc.stdout) == 100 and proc.stderr == b"", proc.stderr


# ---------------------------------------------------------------- words of the CLI
def test_hints_name_cli_commands_and_flags(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = make_folder(tmp_path, [FLASH_ROW])
    assert run(capsys, "rank", str(folder), "sdpa_fwd", "--arch", "h100-sxm")[0] == 0
    _, out, _ = run(capsys, "report", str(folder), "--arch", "mi300x")
    (warning,) = [line for line in out.splitlines() if line.startswith("warning:")]
    assert "re-run sdpa-analyzer rank with --arch mi300x" in warning
    assert "pass --arch h100-sxm to sdpa-analyzer report" in warning
    assert not re.search(r"\b(rank_findings|render_report|arch=)", out)
    # the MCP surface keeps its own words: --json is the tool's result as an MCP client gets it
    _, out, _ = run(capsys, "report", str(folder), "--arch", "mi300x", "--json")
    assert "re-run rank_findings with arch=mi300x" in json.loads(out)["warnings"][0]
    # and the help speaks CLI too
    _, out, _ = run(capsys, "template", "--help")
    assert "run sdpa-analyzer rank first" in " ".join(out.split()) and "rank_findings" not in out


def test_a_bad_choice_is_one_line_naming_the_choices(demo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = run(capsys, "plot", str(demo), "alll")
    assert rc == 2 and out == "" and err.count("\n") == 1
    assert f"category='alll' is invalid: pass one of {', '.join([*CATEGORIES, 'all'])}" in err
    assert "literal" not in err


def test_validate_refuses_what_is_not_a_findings_file(demo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for name, kind in (("sdpa_fwd_metrics.json", "JSON"), ("sdpa_fwd_ops.csv", "a CSV file")):
        rc, out, err = run(capsys, "validate", str(demo / "category_data" / name))
        assert rc == 2 and out == "" and err.count("\n") == 1
        assert f"is not a findings file (it is {kind})" in err and "missing" not in err
    rc, out, err = run(capsys, "validate", str(demo.parent / "demo_trace.json.gz"))
    assert rc == 2 and "(it is a gzip file)" in err


def test_template_says_the_findings_file_was_kept(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = make_folder(tmp_path, [FLASH_ROW])
    assert run(capsys, "rank", str(folder), "sdpa_fwd", "--arch", "h100-sxm")[0] == 0
    main_file = folder / "category_findings" / "sdpa_fwd_findings.md"
    rc, out, _ = run(capsys, "template", str(folder), "sdpa_fwd")
    (line,) = out.splitlines()
    assert rc == 0 and line.startswith(f"wrote {main_file}: 1 P-item, ") and line.endswith(" prose slots to fill")
    main_file.write_text("my prose\n")
    rc, out, _ = run(capsys, "template", str(folder), "sdpa_fwd")
    kept, wrote = out.splitlines()
    assert kept.startswith(f"kept {main_file} unchanged (it exists")
    assert wrote.startswith(f"wrote {folder / 'category_findings' / 'sdpa_fwd_findings.template.md'}: ")
    assert main_file.read_text() == "my prose\n"


def test_counts_are_singular_for_one(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = make_folder(tmp_path, [FLASH_ROW])
    out = run(capsys, "load", str(folder), "sdpa_fwd")[1]
    out += "".join(run(capsys, cmd, str(folder), "sdpa_fwd", "--arch", "h100-sxm")[1] for cmd in ("roofline", "rank"))
    assert "sdpa_fwd: 1 row, 10 instances" in out and "sdpa_fwd: 1 row (1 modeled)" in out and "; 1 finding\n" in out
    assert not re.search(r"\b1 (rows|instances|findings)\b", out)


# ---------------------------------------------------------------- the rank legend follows what is shown
def _legend(out: str) -> str:
    (line,) = [ln for ln in out.splitlines() if ln.startswith("impact in % of E2E")]
    return line


def test_rank_legend_of_standalone_and_heuristic_findings(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    quantified = _legend(run(capsys, "rank", str(make_folder(tmp_path, [FLASH_ROW], name="q")), "sdpa_fwd",
                             "--arch", "h100-sxm")[1])  # fmt: skip
    assert "at 100 % of their roofline" in quantified and f"mid {MID_FACTOR:g} x high, low {LOW_FACTOR:g}" in quantified
    assert "heuristic" not in quantified and "trace 2" not in quantified
    _, out, _ = run(capsys, "rank", str(make_folder(tmp_path, [UNMODELED_ROW], name="h")), "sdpa_fwd",
                     "--arch", "h100-sxm", "--json")  # fmt: skip
    assert {f["estimate_method"] for f in json.loads(out)["findings"]} == {"heuristic"}
    heuristic = _legend(run(capsys, "rank", str(tmp_path / "h"), "sdpa_fwd", "--arch", "h100-sxm")[1])
    assert f"{HEURISTIC_MID:g} / {HEURISTIC_LOW:g} / {HEURISTIC_HIGH:g} x their share of E2E" in heuristic
    assert "100 % of their roofline" not in heuristic  # no quantified finding shown: no roofline formula


def test_rank_legend_of_comparative_findings(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    def trace(kernel_us: float, name: str) -> Path:
        calls = [SyntheticAttentionCall(flavour="aten_flash", heads_q=16, seq_q=2048, causal=True, repeat=4,
                                        kernel_us=kernel_us)]  # fmt: skip
        return write_trace(build_trace(calls), tmp_path / name)

    slow, fast = trace(900.0, "t1.json.gz"), trace(450.0, "t2.json.gz")
    out_dir = tmp_path / "cmp"
    assert run(capsys, "analyze", str(slow), "-o", str(out_dir), "--compare", str(fast))[0] == 0
    rc, out, err = run(capsys, "rank", str(out_dir), "sdpa_fwd", "--scope", "comparative")
    assert rc == 0, err
    legend = _legend(out)
    assert "at trace 2's speed" in legend and "100 % of their roofline" not in legend
    assert "to band" not in legend  # comparative findings have no band column value


# ---------------------------------------------------------------- the peaks line
def test_no_compute_roof_says_why_and_names_the_charts(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = make_folder(tmp_path, [UNMODELED_ROW], platform="MI300X")
    _, out, _ = run(capsys, "roofline", str(folder), "sdpa_fwd", "--arch", "mi300x")
    peaks = out.splitlines()[0]
    _, plot, _ = run(capsys, "plot", str(folder), "sdpa_fwd", "--arch", "mi300x", "--json")
    drawn = json.loads(plot)
    expected = get_gpu("mi300x").compute_roof("matrix_bf16").value  # the table's bf16 roof (achievable on MI300X)
    assert drawn["peak_tflops"] == expected and drawn["compute_spec"] == "matrix_bf16"
    assert "no compute roof: no modeled row has a dtype to choose the compute spec" in peaks
    assert f"the chart draws matrix_bf16's {expected:g} TFLOPS" in peaks


def test_sources_come_out_whole(capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = run(capsys, "model", "-b", "1", "--heads", "8", "-n", "128", "-d", "64", "--arch", "h100-sxm",
                     "--json")  # fmt: skip
    peaks = json.loads(out)["peaks"]
    gpu = get_gpu("h100-sxm")
    assert peaks["peak_tflops_source"] == gpu.compute_roof("matrix_bf16").source
    assert peaks["peak_tbs_source"] == gpu.bandwidth_roof().source
    assert "…" not in peaks["peak_tflops_source"] + peaks["peak_tbs_source"]


def test_table_cells_are_cut_between_words() -> None:
    members = "aten::_scaled_dot_product_flash_attention, flash_attn::_flash_attn_forward, aiter::mha_fwd"
    assert clip(members, 48) == "aten::_scaled_dot_product_flash_attention…"
    assert clip("fwd B2 H32/8 N2048 d128 causal sliding window", 40) == "fwd B2 H32/8 N2048 d128 causal sliding…"
    assert clip("x" * 60, 10) == "x" * 9 + "…"  # one long word: cut where it must be
    assert clip("short", 10) == "short"


# ---------------------------------------------------------------- serve --http
def test_serve_http_prints_its_endpoint(tmp_path: Path) -> None:
    proc = subprocess.Popen([*CLI, "serve", "--http", "--port", "0", "--root", str(tmp_path)], cwd=REPO,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert proc.stderr is not None
        deadline = time.monotonic() + 60
        line = ""
        while time.monotonic() < deadline and not line.startswith("MCP endpoint:"):
            line = proc.stderr.readline()
            assert line or proc.poll() is None, "the server exited"
        match = re.fullmatch(r"MCP endpoint: (http://127\.0\.0\.1:(\d+)/mcp)\n", line)
        assert match and int(match.group(2)) > 0, line

        async def tools() -> set[str]:
            async with Client(match.group(1)) as c:
                return {t.name for t in (await c.list_tools()).tools}

        assert "compute_roofline" in anyio.run(tools)  # the printed URL is the one that answers
    finally:
        proc.terminate()
        proc.wait(timeout=10)


# ---------------------------------------------------------------- many ranks
def test_one_slow_rank_is_one_straggler_with_its_shape_nested(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    traces = tmp_path / "traces"
    traces.mkdir()
    for rank in range(4):
        call = SyntheticAttentionCall(flavour="aten_flash", heads_q=16, seq_q=1024, causal=True, repeat=4,
                                      kernel_us=300.0 if rank == 2 else 200.0)  # fmt: skip
        write_trace(build_trace([call], seed=rank, distributed_info={"rank": rank, "world_size": 4}),
                    traces / f"t{rank}.pt.trace.json.gz")  # fmt: skip
    rc, out, err = run(capsys, "analyze-ranks", str(traces), "-o", str(tmp_path / "out"), "--workers", "1")
    assert rc == 0, err
    head = next(line for line in out.splitlines() if line.startswith("stragglers"))
    assert head == "stragglers over 1.1x the median (2 of 2): 1 rank category, 1 shape"
    rows = [line for line in out.splitlines() if re.match(r"\d+(\+\d+)?\s+\d+\s+sdpa_fwd", line)]
    assert len(rows) == 1  # the category and its only shape: one line, the 1.2 ms once
    assert rows[0].split()[:2] == ["1+2", "2"] and "whole category = its one shape:" in rows[0]
    # 4 calls of 300 µs against a median of 4 × 200 µs
    assert rows[0].split()[-5:-3] == ["1.2", "0.8"]
    rc, out, _ = run(capsys, "rank-summary", str(tmp_path / "out"))
    assert "findings 1-2 of 2: 1 rank category, 1 shape" in out and out.count("whole category = its one shape") == 1


def test_a_category_straggler_with_several_shapes_nests_them(capsys: pytest.CaptureFixture[str]) -> None:
    from types import SimpleNamespace

    from sdpa_analyzer.server.cli.human_ranks import human_rank_summary

    def s(position: int, kind: str, time_ms: float, shape: str | None = None) -> SimpleNamespace:
        return SimpleNamespace(position=position, kind=kind, rank=2, category="sdpa_fwd", operation="aten::x",
                               shape=shape, time_ms=time_ms, median_ms=1.0, ratio=time_ms, excess_ms=time_ms - 1,
                               percent_of_rank_e2e=1.0)  # fmt: skip

    findings = [s(1, "category", 3.0), s(2, "shape", 2.0, "B1 N1024"), s(3, "shape", 1.0, "B1 N512")]
    r = SimpleNamespace(summary_file="s.json", traces=4, ranks_ok=4, ranks_failed=0, world_size=4, folder_rank=None,
                        missing_ranks=[], errors=[], categories=[], findings=findings, findings_total=3, offset=0,
                        partial_shapes_total=0)  # fmt: skip
    lines = human_rank_summary(r).splitlines()
    body = [line for line in lines if re.match(r"\d\s", line)]
    assert [line.split()[0] for line in body] == ["1", "2", "3"]
    assert "(whole category)" in body[0] and "└ x B1 N1024" in body[1] and "└ x B1 N512" in body[2]
    assert "1 rank category, 2 shapes" in lines[1]
