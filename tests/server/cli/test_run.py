"""`sdpa-analyzer run TRACE`: the same files as the separate commands, byte for byte; bad input is one line and
nothing written.

The reference is the separate commands, each in its own process as a user runs them (analyze, then roofline, rank
and template for each category, then report), so nothing the one process shares between its steps (the scoring
cache, anything a step leaves in memory) can make the two agree by construction. Each reference process is forked
from the test's after the libraries are imported and before any command ran (a fresh interpreter per command would
pay the imports eleven times: the imports change no file). Two analyses differ only in the run's id and finish
time, and in the folder's own path where a file records it: those are read from each folder's manifest and
replaced by placeholders before the bytes are compared."""

from __future__ import annotations

import contextlib
import json
import os
import sys
import tempfile
import traceback
import zlib
from pathlib import Path
from typing import Any

import pytest

from sdpa_analyzer.server.cli.main import main
from sdpa_analyzer.server.synthetic import build_trace, demo_calls, write_trace
from sdpa_analyzer.server.vocab import CATEGORIES
from tests.support import TRACES, need
from tests.support import run_cli as _run


def _cli(*argv: str) -> None:
    """One command in a process of its own (run_command); fails the test with the command's stderr."""
    rc, err = run_command(list(argv))
    assert rc == 0, (argv, err[-2000:])


def run_command(argv: list[str]) -> tuple[int, str]:
    """`sdpa-analyzer ARGV` in a child forked from this process: its exit code and stderr."""
    import sdpa_analyzer.server.findings.template  # what the commands import when they run, imported once here
    import sdpa_analyzer.server.ingest.analyze
    import sdpa_analyzer.server.render.report
    import sdpa_analyzer.server.scoring.category  # noqa: F401

    with tempfile.TemporaryFile() as err:
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:  # the child: never back into pytest, whatever happens
            code = 70
            try:
                devnull = os.open(os.devnull, os.O_WRONLY)
                os.dup2(devnull, 1)
                os.dup2(err.fileno(), 2)
                with contextlib.redirect_stdout(open(os.devnull, "w")), contextlib.redirect_stderr(
                    open(os.dup(2), "w")
                ):
                    code = main(argv)
            except SystemExit as exc:
                code = int(exc.code or 0)
            except BaseException:
                traceback.print_exc()
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        err.seek(0)
        return os.waitstatus_to_exitcode(status), err.read().decode(errors="replace")


def _separate(
    trace: Path, out: Path, arch: tuple[str, ...] = (), scoring: tuple[str, ...] = (), compare: Path | None = None,
    report: bool = False,
) -> None:
    """The answer as the separate commands give it, one process each: `arch` to each command that takes it,
    `scoring` to those that score (roofline, rank, report)."""
    two = ["--compare", str(compare)] if compare is not None else []
    _cli("analyze", str(trace), "-o", str(out), *two, *arch)
    scope = ["--scope", "comparative"] if compare is not None else []
    for cat in CATEGORIES:
        _cli("roofline", str(out), cat, *arch, *scoring)
        _cli("rank", str(out), cat, *scope, *arch, *scoring)
        _cli("template", str(out), cat)
    if report:
        _cli("report", str(out), *arch, *scoring)


def _files(folder: Path) -> dict[str, bytes]:
    """Every file under `folder`, with the run's id, its finish time and the folder's path as placeholders."""
    manifest = json.loads((folder / "category_data" / "category_manifest.json").read_bytes())
    run = manifest["sdpa_analyzer_run"]
    variable = {run["run_id"]: b"<run id>", run["finished_at"]: b"<finished at>", str(folder): b"<folder>"}
    for metrics in folder.glob("category_data/*_metrics.json"):  # the crc32 of its roofline CSV, which holds the run id
        rows = json.loads(metrics.read_bytes())["sdpa_analyzer"]["roofline_rows"]
        crc = zlib.crc32((metrics.parent / rows["file"]).read_bytes())
        assert rows["crc32"] == f"{crc:08x}"
        variable[f'"crc32":"{rows["crc32"]}"'] = b'"crc32":"<crc32 of the roofline CSV>"'
    out = {}
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        data = path.read_bytes()
        for text, placeholder in variable.items():
            data = data.replace(text.encode(), placeholder)
        out[str(path.relative_to(folder))] = data
    return out


def _assert_same_files(one: Path, separate: Path) -> None:
    a, b = _files(one), _files(separate)
    assert sorted(a) == sorted(b)
    assert [name for name in a if a[name] != b[name]] == []


@pytest.fixture(scope="module")
def synthetic_trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    trace = tmp_path_factory.mktemp("trace") / "demo.json.gz"
    write_trace(build_trace(demo_calls()), trace)
    return trace


def test_run_writes_what_the_separate_commands_write(synthetic_trace: Path, tmp_path: Path) -> None:
    _separate(synthetic_trace, tmp_path / "separate" / "out", report=True)
    _cli("run", str(synthetic_trace), "-o", str(tmp_path / "one" / "out"), "--report")
    _assert_same_files(tmp_path / "one" / "out", tmp_path / "separate" / "out")
    # the synthetic trace has forward and backward rows and no serving attention: three findings files, the
    # serving one saying there is none (findings-format: a NO_DATA category still gets its short file)
    findings = tmp_path / "one" / "out" / "category_findings"
    assert sorted(p.name for p in findings.iterdir()) == sorted(f"{c}_findings.md" for c in CATEGORIES)
    assert "No SDPA operations found in trace" in (findings / "inferenceattention_findings.md").read_text()


def test_run_on_a_real_trace_with_options(tmp_path: Path) -> None:
    trace = need(TRACES / "h100" / "Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz")
    arch, scoring = ("--arch", "h100-pcie"), ("--bytes-model", "tiled")  # every step on that GPU, with that model
    _separate(trace, tmp_path / "separate" / "out", arch, scoring, report=True)
    _cli("run", str(trace), "-o", str(tmp_path / "one" / "out"), *arch, *scoring, "--report")
    _assert_same_files(tmp_path / "one" / "out", tmp_path / "separate" / "out")
    metrics = json.loads((tmp_path / "one" / "out" / "category_data" / "sdpa_fwd_metrics.json").read_bytes())
    assert metrics["sdpa_analyzer"]["gpu"]["key"] == "h100-pcie"
    assert metrics["sdpa_analyzer"]["bytes_model"] == "tiled"


def test_run_on_two_traces_ranks_what_trace_2_gains(tmp_path: Path) -> None:
    folder = TRACES / "mi300x-microbench"
    trace1 = need(folder / "test03_attention_fused_vs_unfused_trace1.json.gz")
    trace2 = need(folder / "test03_attention_fused_vs_unfused_trace2.json.gz")
    _separate(trace1, tmp_path / "separate" / "out", compare=trace2)
    _cli("run", str(trace1), "-o", str(tmp_path / "one" / "out"), "--compare", str(trace2))
    _assert_same_files(tmp_path / "one" / "out", tmp_path / "separate" / "out")
    metrics = (tmp_path / "one" / "out" / "category_data").glob("*_metrics.json")
    assert {json.loads(p.read_bytes())["comparison_scope"] for p in metrics} == {"comparative"}


def test_bad_input_is_one_line_and_nothing_is_written(
    synthetic_trace: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    cases = [
        (["run", str(tmp_path / "missing.json.gz"), "-o", str(out)], "missing.json.gz"),
        (["run", str(synthetic_trace), "-o", str(out), "--arch", "nope"], "--arch 'nope'"),
        (["run", str(synthetic_trace), "-o", str(out), "--bytes-model", "l2"], "--bytes-model 'l2'"),
        (["run", str(synthetic_trace), "-o", str(out), "--scope", "both"], "scope 'both' is invalid"),
        (["run", str(synthetic_trace), "-o", str(out), "--scope", "comparative"], "pass --compare"),
        (["run", str(synthetic_trace), "-o", str(out), "--arch", str(tmp_path / "gpu.json")], "gpu.json"),
    ]
    not_a_trace = tmp_path / "notes.json"
    not_a_trace.write_text('{"hello": 1}')
    cases.append((["run", str(not_a_trace), "-o", str(out)], "notes.json"))
    for argv, named in cases:
        rc, _, err = _run(capsys, *argv)
        assert rc == 2 and err.count("\n") == 1 and named in err and "Traceback" not in err, (argv, err)
        assert not out.exists(), argv


def test_run_json_gives_every_step_by_tool_and_category(
    synthetic_trace: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rc, out, err = _run(capsys, "run", str(synthetic_trace), "-o", str(tmp_path / "out"), "--json")
    assert rc == 0, err
    result = json.loads(out)
    assert result["analyze_trace"]["output_dir"] == str(tmp_path / "out")
    assert [c for c in CATEGORIES if c in result] == list(CATEGORIES)
    assert result["sdpa_fwd"]["rank_findings"]["status"] == "OK"
    assert result["inferenceattention"]["rank_findings"]["status"] == "NO_DATA"
    assert "render_report" not in result


def test_a_failing_step_is_named_and_the_steps_before_it_stay_whole(
    synthetic_trace: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from dataclasses import replace

    from sdpa_analyzer.server.errors import InputError
    from sdpa_analyzer.server.tools import TOOLS_BY_NAME

    rank = TOOLS_BY_NAME["rank_findings"]

    def fails_on_the_backward(ctx: Any, args: Any) -> Any:
        if args.category == "sdpa_bwd":
            raise InputError("the disk is full")
        return rank.run(ctx, args)

    monkeypatch.setitem(TOOLS_BY_NAME, "rank_findings", replace(rank, run=fails_on_the_backward))
    out = tmp_path / "out"
    rc, _, err = _run(capsys, "run", str(synthetic_trace), "-o", str(out))
    assert rc == 2 and err.count("\n") == 1 and "rank sdpa_bwd: the disk is full" in err, err
    data = out / "category_data"
    # the forward's steps are done and whole; nothing of the backward's ranking, and no step after it ran
    assert json.loads((data / "sdpa_fwd_metrics.json").read_bytes())["category"] == "sdpa_fwd"
    assert (out / "category_findings" / "sdpa_fwd_findings.md").is_file()
    assert not (data / "sdpa_bwd_metrics.json").exists()
    assert not (out / "category_findings" / "sdpa_bwd_findings.md").exists()
