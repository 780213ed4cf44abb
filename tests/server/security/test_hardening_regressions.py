"""Each failure the issue-#12 fuzzer found on main, as a regression test (hangs, crashes, silent wrong numbers,
messages). Expected numbers are computed here from the inputs (kernel durations, shapes), not read back from the
code; time bounds are generous (the former quadratic paths took 46-163 s; these run in well under a second).
"""

from __future__ import annotations

import errno
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from sdpa_analyzer.perf_models.config import AttentionConfig
from sdpa_analyzer.perf_models.errors import ConfigError
from sdpa_analyzer.perf_models.estimate import estimate_work
from sdpa_analyzer.perf_models.table import ConfigTable
from sdpa_analyzer.server.folder.cache import clear as clear_cache
from sdpa_analyzer.server.mcp_server import create_server
from sdpa_analyzer.server.roots import DataRoots
from sdpa_analyzer.server.tools import call
from sdpa_analyzer.server.tools.base import ToolFailure
from sdpa_analyzer.server.writers import atomic
from tests.server.security.test_trace_bombs import _work as reader_work
from tests.support import FLASH_ROW, REPO, kernel_trace, make_folder

SECONDS = 5.0


def timed(fn: Any, *args: Any, **kwargs: Any) -> tuple[Any, float]:
    """The call's result and its CPU seconds: CPU time, not wall time, so another process on a loaded machine (the
    suite's other workers, a benchmark) does not fail a test that guards against minutes of backtracking."""
    start = time.process_time()
    try:
        out = fn(*args, **kwargs)
    except ToolFailure as exc:
        out = exc
    return out, time.process_time() - start


def one_line_error(result: Any) -> str:
    assert isinstance(result, ToolFailure) and not result.internal, result
    text = str(result)
    assert "\n" not in text and len(text) <= 300, text
    return text


def write_trace_json(path: Path, doc: dict | str) -> Path:
    path.write_text(doc if isinstance(doc, str) else json.dumps(doc))
    return path


def dims_row(dims: str) -> str:
    return FLASH_ROW.replace('"((2, 8, 1024, 64), (2, 8, 1024, 64), (2, 8, 1024, 64), (), (), (), ())"', f'"{dims}"')


@pytest.fixture(autouse=True)
def _fresh_cache() -> None:
    clear_cache()


# ---- 3. hangs ---------------------------------------------------------------------------------------
def test_csv_row_with_250k_extra_fields_is_refused_fast(tmp_path: Path) -> None:
    make_folder(tmp_path, [FLASH_ROW + ",x" * 250_000])  # 500 KB: took 46-116 s and loaded "OK" without them
    res, seconds = timed(call, "load_category_data", DataRoots([tmp_path]), output_dir="folder", category="sdpa_fwd")
    assert seconds < SECONDS
    assert "row 2 has 250010 fields but the header has 10" in one_line_error(res)
    make_folder(tmp_path, [FLASH_ROW, FLASH_ROW + ",x" * 250_000], name="later")  # a later row: pandas' own check
    res, seconds = timed(call, "load_category_data", DataRoots([tmp_path]), output_dir="later", category="sdpa_fwd")
    assert seconds < SECONDS and "Expected 10 fields in line 3" in one_line_error(res)


@pytest.mark.parametrize("where", ["last event", "middle event", "after the events"])
@pytest.mark.parametrize("piece", ["}]", "},{", "}\n,\n{"])
def test_trace_strings_full_of_separators_stay_linear(
    tmp_path: Path, where: str, piece: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    doc = kernel_trace([{}] * 3000)  # ~1.6 MB; the separators make ~60000 false boundaries
    hostile = piece * 60_000
    if where == "last event":
        doc["traceEvents"][-1]["args"]["note"] = hostile
    elif where == "middle event":
        doc["traceEvents"][4500]["args"]["note"] = hostile
    else:
        doc["zzz_trailer"] = hostile
    trace = write_trace_json(tmp_path / "t.json", doc)
    # linear: the work counted (bytes the reader's searches walk and hands to its parser), not timed; the
    # last-event case took 58 s on main
    walked, decoded, size = reader_work(trace, monkeypatch)
    assert walked + decoded < 8 * size, (walked, decoded, size)
    monkeypatch.undo()
    res = call("analyze_trace", DataRoots([tmp_path]), trace_path=str(trace), output_dir="o")
    assert res.events == 1 + 3 * 3000
    assert res.categories[0].instances == 3000
    assert res.categories[0].kernel_time_ms == pytest.approx(3000 * 30.0 / 1000)


@pytest.mark.parametrize(
    "line",
    ["<!--" * 50_000, "<!-- impact-begin " * 20_000 + "x", "<!-- reasoning-candidate " * 20_000 + "y",
     "#" + " " * 100_000 + "x", "### P1: a" + " " * 100_000 + "b", "{{FILL:" * 30_000, "a" * 100_000 + "=",
     "**Insight**" + " " * 100_000 + "x", "\t" * 100_000 + "x"],
)  # fmt: skip
def test_findings_lines_that_backtracked_validate_fast(tmp_path: Path, line: str) -> None:
    path = tmp_path / "out" / "category_findings" / "sdpa_fwd_findings.md"
    path.parent.mkdir(parents=True)
    path.write_text(f"# T\n\n## Recommendations\n\n### P1: x (Lib)\n\n{line}\n\n## Detailed Analysis\n\n{line}\n")
    res, seconds = timed(call, "validate_findings", DataRoots([tmp_path]), findings_path=str(path))
    assert seconds < SECONDS, seconds  # '<!--'*50000 took 55-163 s
    assert res.passed is False
    for item in res.errors + res.warnings:
        assert len(item.message) <= 300 and len(item.fix) <= 300


@pytest.mark.parametrize(
    "pair",
    [("### P1: x (Lib)", "<!-- impact-begin kind=p_item low=1 mid=2 high=3 -->"), ("### P2: y", "### P1: x (Lib)"),
     ("<!-- reasoning-candidate tier=compute rank=1 -->", "<!-- impact-begin kind=detail_estimate low=1 high=3 -->")],
)  # fmt: skip
def test_findings_with_thousands_of_items_validate_in_linear_time(tmp_path: Path, pair: tuple[str, str]) -> None:
    from sdpa_analyzer.server.findings.validate import validate_findings_text

    def seconds(n: int) -> float:
        body = "\n".join(pair * n)
        start = time.process_time()  # CPU time: see timed()
        validate_findings_text(f"# T\n\n## Recommendations\n\n{body}\n\n## Detailed Analysis\n\n{body}\n", None)
        return time.process_time() - start

    small, big = seconds(1000), seconds(8000)
    assert big < SECONDS and big < 30 * max(small, 0.01), (small, big)  # quadratic: 64x (17.7 s on main)


# ---- 4. crashes -------------------------------------------------------------------------------------
@pytest.mark.parametrize(("depth", "tool"), [(500, "compute_roofline"), (1200, "load_category_data")])
def test_deep_input_dims_in_a_csv_is_one_line(tmp_path: Path, depth: int, tool: str) -> None:
    make_folder(tmp_path, [dims_row("(" * depth + ")" * depth)])
    res = timed(call, tool, DataRoots([tmp_path]), output_dir="folder", category="sdpa_fwd", arch="h100-sxm")[0] if (
        tool == "compute_roofline") else timed(call, tool, DataRoots([tmp_path]), output_dir="folder",
                                               category="sdpa_fwd")[0]  # fmt: skip
    msg = one_line_error(res)
    assert "'Input Dims' row 2" in msg and f"nested {depth} levels deep" in msg


def test_deep_input_dims_in_a_trace_costs_only_that_op(tmp_path: Path) -> None:
    raw = json.dumps(kernel_trace([{}, {}])).replace(
        '"Input Dims": [[2, 8, 128, 64]', '"Input Dims": [' + "[" * 1000 + "]" * 1000 + ", [2, 8, 128, 64]", 1
    )
    res = call("analyze_trace", DataRoots([tmp_path]), trace_path=str(write_trace_json(tmp_path / "t.json", raw)),
               output_dir="o")  # fmt: skip
    assert res.categories[0].instances == 2
    assert any("nested deeper than 32 levels" in w for w in res.warnings)


@pytest.mark.parametrize("slot", ["None", "nan", "null"])
def test_missing_causal_flag_is_an_unmodeled_row_not_an_assertion(tmp_path: Path, slot: str) -> None:
    make_folder(tmp_path, [FLASH_ROW.replace("'0.', 'True'", f"'0.', '{slot}'")])
    res = call("compute_roofline", DataRoots([tmp_path]), output_dir="folder", category="sdpa_fwd", arch="h100-sxm")
    assert res.modeled_rows == 0 and res.unmodeled_rows == 1
    assert any("slot 4" in w and f"'{slot}'" in w and "True/False" in w for w in res.warnings), res.warnings


def test_missing_causal_flag_under_python_O_is_not_read_as_non_causal() -> None:
    """Under -O the assert vanished and None read as False: a silently non-causal mask."""
    code = (
        "from perf_models.registry import parse_op; "
        "op = parse_op('aten::_scaled_dot_product_flash_attention', ((2, 8, 128, 64),) * 3 + ((),) * 4, "
        "('c10::BFloat16',) * 3 + ('Scalar',) * 4, ('', '', '', '0.', 'None', 'False', '0.125')); "
        "print(op.config is None, op.reason)"
    )
    out = subprocess.run([sys.executable, "-O", "-c", code], capture_output=True, text=True, cwd=REPO, check=True)
    assert out.stdout.startswith("True ") and "'None'" in out.stdout, out.stdout


@pytest.mark.parametrize("field", ["External id", "correlation", "flow id", "Sequence number"])
@pytest.mark.parametrize("value", [1e300, 2**64, 1.5e19])
def test_ids_beyond_64_bits_are_counted_not_crashed(tmp_path: Path, field: str, value: float) -> None:
    doc = kernel_trace([{}, {}, {}])
    events = doc["traceEvents"]
    if field == "flow id":
        events += [{"ph": "s", "cat": "ac2g", "id": value, "pid": 1, "tid": 1, "ts": 20.0, "name": "ac2g"},
                   {"ph": "f", "cat": "ac2g", "id": value, "pid": 0, "tid": 7, "ts": 30.0, "name": "ac2g", "bp": "e"}]
    else:
        for e in events:
            if field in e.get("args", {}) or (field == "Sequence number" and e["cat"] == "cpu_op"):
                e["args"][field] = value
    raw = json.dumps(doc).replace("1e+300", "1e300")
    res = call("analyze_trace", DataRoots([tmp_path]), trace_path=str(write_trace_json(tmp_path / "t.json", raw)),
               output_dir="o")  # fmt: skip
    assert res.status == "OK" and res.categories[0].instances == 3
    assert any("not 64-bit integers" in w for w in res.warnings), res.warnings
    if field in ("flow id", "Sequence number"):  # links that do not depend on the field: times intact
        assert res.categories[0].kernel_time_ms == pytest.approx(0.09)


@pytest.mark.parametrize(
    ("data", "words"),
    [(b'{"category": "\xff\xfe"}', "not UTF-8"), (b"[" * 5000 + b"]" * 5000, "nested 5000 levels deep"),
     (b'{"a":' * 5000 + b"1" + b"}" * 5000, "nested 5000 levels deep"),
     (b'{"category": "sdpa_fwd", "status": "OK", "category_findings": [1]}', "must be a list of objects"),
     (b'{"category": "sdpa_fwd", "status": "OK", "category_findings": [{"rank": [[[[1]]]]}]}', "must be an integer")],
)  # fmt: skip
def test_hostile_metrics_json_is_one_line_naming_it(tmp_path: Path, data: bytes, words: str) -> None:
    out = tmp_path / "o"
    (out / "category_findings").mkdir(parents=True)
    (out / "category_data").mkdir()
    (out / "category_findings" / "sdpa_fwd_findings.md").write_text("# x\n")
    (out / "category_data" / "sdpa_fwd_metrics.json").write_bytes(data)
    res = timed(call, "validate_findings", DataRoots([tmp_path]),
                findings_path=str(out / "category_findings" / "sdpa_fwd_findings.md"))[0]  # fmt: skip
    msg = one_line_error(res)
    assert "sdpa_fwd_metrics.json" in msg and words in msg


@pytest.mark.parametrize(
    ("batch", "words"),
    [(10**30, r"batch\[row 0\]=10+ is invalid: expected an integer below 2\^63"),
     (2**40, r"q elements.*\[row 0\].*at most 2\^53")],
)  # fmt: skip
def test_config_beyond_exact_counting_is_a_config_error(batch: int, words: str) -> None:
    cfg = AttentionConfig(batch=batch, heads_q=8, heads_kv=8, seq_q=128, seq_kv=128, head_dim_qk=64, head_dim_v=64)
    with pytest.raises(ConfigError, match=words):
        estimate_work(ConfigTable.from_configs([cfg]))


def test_model_attention_refuses_shapes_it_cannot_count() -> None:
    res = timed(call, "model_attention", DataRoots([Path.cwd()]), batch=2**31, heads_q=2**31, seq_q=2**31,
                head_dim=2**31)[0]  # fmt: skip
    assert "at most 2^53" in one_line_error(res)


def test_a_lone_surrogate_in_a_cell_does_not_break_the_writers(tmp_path: Path) -> None:
    """Found by the long fuzz campaign: a literal cell with a \\ud800 escape gave a str no UTF-8 writer takes."""
    make_folder(tmp_path, [FLASH_ROW.replace("'c10::BFloat16', 'c10::BFloat16', 'c10::BFloat16',",
                                             "'\\ud800\\udc00', 'c10::BFloat16', 'c10::BFloat16',")])  # fmt: skip
    for tool in ("compute_roofline", "rank_findings"):
        res = call(tool, DataRoots([tmp_path]), output_dir="folder", category="sdpa_fwd", arch="h100-sxm")
        assert res.status == "OK"


@pytest.mark.parametrize("count", ["1e30", "2.5", str(2**63)])
def test_an_operation_count_that_is_not_a_plausible_count_is_refused(tmp_path: Path, count: str) -> None:
    """Found by the long fuzz campaign: 1e30 passed as a finite positive count and wrapped in int64."""
    make_folder(tmp_path, [FLASH_ROW.replace("'0.125')\",10,", f"'0.125')\",{count},")])
    res = timed(call, "compute_roofline", DataRoots([tmp_path]), output_dir="folder", category="sdpa_fwd",
                arch="h100-sxm")[0]  # fmt: skip
    assert "'operation_count' row 2" in one_line_error(res) and "whole positive count" in str(res)


# ---- 5. silent wrong numbers ------------------------------------------------------------------------
@pytest.mark.parametrize(("batch", "seq"), [(2**40, 1024), (2, 2**33)])
def test_huge_shapes_are_unmodeled_not_zero_flops(tmp_path: Path, batch: int, seq: int) -> None:
    dims = f"(({batch}, 8, {seq}, 64), ({batch}, 8, {seq}, 64), ({batch}, 8, {seq}, 64), (), (), (), ())"
    make_folder(tmp_path, [dims_row(dims), FLASH_ROW])
    res = call("compute_roofline", DataRoots([tmp_path]), output_dir="folder", category="sdpa_fwd", arch="h100-sxm")
    rows = {r.row: r for r in res.rows}
    assert rows[0].flops_useful is None and rows[0].efficiency_pct is None  # was 0 FLOPs, 339,615,546,103 %
    assert any("over 2^53" in w for w in rows[0].warnings), rows[0].warnings
    # the sane row beside it is scored as usual: causal B=2 H=8 N=1024 d=64, P = N(N+1)/2 per head
    assert rows[1].flops_useful == 2 * 2 * 8 * (1024 * 1025 // 2) * 128


def test_large_but_countable_shapes_stay_exact(tmp_path: Path) -> None:
    batch = 2**20
    dims = f"(({batch}, 8, 1024, 64), ({batch}, 8, 1024, 64), ({batch}, 8, 1024, 64), (), (), (), ())"
    make_folder(tmp_path, [dims_row(dims)])
    res = call("compute_roofline", DataRoots([tmp_path]), output_dir="folder", category="sdpa_fwd", arch="h100-sxm")
    assert res.rows[0].flops_useful == 2 * batch * 8 * (1024 * 1025 // 2) * 128  # < 2^53: exact in float64


def test_one_kernel_at_ts_1e30_leaves_the_other_kernel_times_intact(tmp_path: Path) -> None:
    doc = kernel_trace([{}, {}, {}, {"kernel": {"ts": 1e30}}])
    res = call("analyze_trace", DataRoots([tmp_path]), trace_path=str(write_trace_json(tmp_path / "t.json", doc)),
               output_dir="o")  # fmt: skip
    assert res.categories[0].instances == 4
    assert res.categories[0].kernel_time_ms == pytest.approx(3 * 0.030)  # all zero on main
    assert any("1 event(s) left out" in w and "ts=1e+30" in w for w in res.warnings), res.warnings


@pytest.mark.parametrize("field", ["ts", "dur"])
@pytest.mark.parametrize("value", ["bad", "oops", -900.0, None, [1, 2], {"a": 1}])
def test_unusable_times_are_left_out_with_a_warning(tmp_path: Path, field: str, value: Any) -> None:
    # kernels at 30, 130, 230, 330 µs, 30 µs each; the third one's time is unusable
    doc = kernel_trace([{}, {}, {"kernel": {field: value}}, {}])
    res = call("analyze_trace", DataRoots([tmp_path]), trace_path=str(write_trace_json(tmp_path / "t.json", doc)),
               output_dir="o")  # fmt: skip
    cat = res.categories[0]
    if value == -900.0 and field == "ts":  # a negative time stamp is a time like any other
        assert cat.kernel_time_ms == pytest.approx(0.120) and res.e2e.total_time_ms == pytest.approx(1.26)
        return
    if value is None and field == "ts":
        assert cat.kernel_time_ms == pytest.approx(0.090)  # a kernel without ts is not a timed event
        return
    if value is None:  # no dur: a zero-length kernel, as Kineto means it
        assert cat.kernel_time_ms == pytest.approx(0.090)
        return
    assert cat.kernel_time_ms == pytest.approx(0.090)  # the three usable kernels (dur "oops" was 0; -900 too)
    assert res.e2e.total_time_ms == pytest.approx((330 + 30 - 30) / 1000)  # first start to last end
    assert any("1 event(s) left out" in w for w in res.warnings), res.warnings


def test_a_bad_ts_no_longer_stretches_e2e(tmp_path: Path) -> None:
    """Times at ~1e6 µs and one kernel ts "bad" (read as 0): E2E was 139x too large."""
    doc = kernel_trace([{}, {}, {}, {"kernel": {"ts": "bad"}}])
    for e in doc["traceEvents"]:
        if isinstance(e.get("ts"), float):
            e["ts"] += 1_000_000.0
    res = call("analyze_trace", DataRoots([tmp_path]), trace_path=str(write_trace_json(tmp_path / "t.json", doc)),
               output_dir="o")  # fmt: skip
    assert res.e2e.total_time_ms == pytest.approx((230 + 30 - 30) / 1000)  # the three usable kernels' span


def test_all_zero_durations_are_refused_by_analyze_itself(tmp_path: Path) -> None:
    doc = kernel_trace([{"kernel": {"dur": 0.0}}] * 3)
    res = timed(call, "analyze_trace", DataRoots([tmp_path]),
                trace_path=str(write_trace_json(tmp_path / "t.json", doc)), output_dir="o")[0]  # fmt: skip
    assert "zero duration" in one_line_error(res)
    assert not (tmp_path / "o").exists()


@pytest.mark.anyio
@pytest.mark.parametrize("platform", [7, [1, 2], {"a": 1}, 1.5, True])
async def test_a_non_string_platform_keeps_the_result_schema_valid(tmp_path: Path, platform: Any) -> None:
    folder = make_folder(tmp_path, [FLASH_ROW])
    meta_path = folder / "metadata" / "sdpa_fwd_metadata.json"
    meta = json.loads(meta_path.read_text())
    meta["platform"] = platform
    meta["trace_path"] = ["not", "a", "path"]
    meta_path.write_text(json.dumps(meta))
    async with Client(create_server([tmp_path]), raise_exceptions=True) as c:
        res = await c.call_tool("load_category_data", {"output_dir": "folder", "category": "sdpa_fwd"})
        roof = await c.call_tool("compute_roofline", {"output_dir": "folder", "category": "sdpa_fwd",
                                                      "arch": "h100-sxm"})  # fmt: skip
    assert not res.is_error, res.content[0].text
    assert res.structured_content["platform"] is None and res.structured_content["trace_path"] is None
    assert any("not a string" in w for w in res.structured_content["warnings"])
    assert not roof.is_error, roof.content[0].text


# ---- 7. messages ------------------------------------------------------------------------------------
def test_a_5000_character_trace_path_does_not_block_the_roofline(tmp_path: Path) -> None:
    folder = make_folder(tmp_path, [FLASH_ROW])
    meta_path = folder / "metadata" / "sdpa_fwd_metadata.json"
    meta = json.loads(meta_path.read_text())
    meta["trace_path"] = "a" * 5000
    meta_path.write_text(json.dumps(meta))
    res = call("compute_roofline", DataRoots([tmp_path]), output_dir="folder", category="sdpa_fwd", arch="h100-sxm")
    assert res.status == "OK" and res.peaks.gpu_key == "h100-sxm"
    assert any("trace_path" in w and len(w) <= 300 for w in res.warnings), res.warnings


def test_a_full_disk_names_the_file_and_the_fix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    make_folder(tmp_path, [FLASH_ROW])

    def no_space(fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")  # no file name: what a failed write says

    monkeypatch.setattr(atomic.os, "fsync", no_space)
    res = timed(call, "rank_findings", DataRoots([tmp_path]), output_dir="folder", category="sdpa_fwd",
                arch="h100-sxm")[0]  # fmt: skip
    msg = one_line_error(res)
    assert "sdpa_fwd_roofline.csv: No space left on device" in msg and "free space" in msg and "a file" not in msg
    assert not list((tmp_path / "folder").rglob("*.tmp"))


def test_a_400_digit_dur_is_named_not_called_truncated(tmp_path: Path) -> None:
    raw = json.dumps(kernel_trace([{}, {}])).replace('"dur": 30.0', '"dur": ' + "9" * 400, 1)
    res = timed(call, "analyze_trace", DataRoots([tmp_path]),
                trace_path=str(write_trace_json(tmp_path / "t.json", raw)), output_dir="o")[0]  # fmt: skip
    msg = one_line_error(res)
    assert "traceEvents[3] is not valid JSON (number is infinity" in msg and "truncated" not in msg


@pytest.mark.anyio
async def test_errors_never_echo_whole_cells(tmp_path: Path) -> None:
    make_folder(tmp_path, [FLASH_ROW.replace("10,1000.0,100.0", "10," + "9x" * 1_000_000 + ",100.0")])  # 2 MB cell
    async with Client(create_server([tmp_path]), raise_exceptions=True) as c:
        res = await c.call_tool("load_category_data", {"output_dir": "folder", "category": "sdpa_fwd"})
    text = res.content[0].text
    assert res.is_error and len(text) <= 300 and "Kernel Time (µs)_sum" in text and "row 2" in text


@pytest.mark.parametrize("piece", ["`aten::op_{i}` ", "{i}.125 ms ", "memory-bound below the band trace 2 CUDA {i} "])
def test_prose_checks_stay_linear_on_a_flood_of_names_and_numbers(tmp_path: Path, piece: str) -> None:
    """Rules 13-17 look every code span and number up: thousands of them cost what they hold, not their square."""
    from sdpa_analyzer.server.findings import load_metrics, render_findings_template
    from sdpa_analyzer.server.findings.validate import validate_findings_text

    make_folder(tmp_path, [FLASH_ROW])
    roots = DataRoots([tmp_path])
    call("compute_roofline", roots, output_dir="folder", category="sdpa_fwd")
    call("rank_findings", roots, output_dir="folder", category="sdpa_fwd")
    metrics = load_metrics(tmp_path / "folder" / "category_data" / "sdpa_fwd_metrics.json")
    skeleton = render_findings_template(metrics, "sdpa_fwd")

    def seconds(n: int) -> float:
        flood = "".join(piece.format(i=i) for i in range(n))
        text = skeleton.replace("**Action**: {{FILL:", f"**Action**: {flood} {{{{FILL:", 1)
        start = time.process_time()  # CPU time: see timed()
        report = validate_findings_text(text, metrics)
        assert not report.passed
        return time.process_time() - start

    small, big = seconds(1000), seconds(8000)
    assert big < SECONDS and big < 30 * max(small, 0.01), (small, big)
