"""analyze_ranks and load_rank_summary inside the sandbox, for the whole run (issue 18), and their bad values
(issue 23): hand-edited summaries, arch files, one run per folder.

Every case that could reach outside the data root compares a byte-for-byte snapshot of the outside tree before and
after (tests.support.snapshot). Swaps in the middle of a run happen from the run's own progress callback (called in
the calling process after each rank) or from a wrapper around the planner, so they land exactly between two steps.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from sdpa_analyzer.server.mcp_server import create_server
from sdpa_analyzer.server.ranks import run as ranks_run
from sdpa_analyzer.server.roots import DataRoots
from sdpa_analyzer.server.synthetic import SyntheticAttentionCall, build_trace, write_trace
from sdpa_analyzer.server.tools import call
from sdpa_analyzer.server.tools.base import ToolFailure
from tests.support import snapshot

pytestmark = pytest.mark.anyio
ARCH_JSON = {"name": "lab-gpu", "mem_bw_gbps": 3000, "max_achievable_tflops": {"matrix_bf16": 600, "matrix_fp16": 600}}


def write_job(folder: Path, world: int = 2) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    call_ = SyntheticAttentionCall(flavour="aten_flash", heads_q=8, seq_q=512, repeat=2, kernel_us=100.0)
    return [
        write_trace(
            build_trace([call_], seed=r, distributed_info={"backend": "nccl", "rank": r, "world_size": world}),
            folder / f"rank_{r}.json.gz",
        )
        for r in range(world)
    ]


@pytest.fixture
def world(tmp_path: Path) -> tuple[Path, Path]:
    """root/ (the data root, with a 2-rank job in root/traces) and outside/ (never to be touched)."""
    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    write_job(root / "traces")
    write_job(outside / "traces")  # another job's traces, outside
    (outside / "ranks_summary.json").write_text(json.dumps({"schema": "sdpa-analyzer/ranks-summary/1", "ranks": []}))
    (outside / ".rank_0.old-deadbeef").mkdir()  # what a killed run leaves: not ours to delete when it is outside
    (outside / ".rank_0.old-deadbeef" / "keep").write_text("outside")
    (outside / ".rank_1.staging-cafebabe").mkdir()
    (outside / "arch.json").write_text(json.dumps(ARCH_JSON))
    return root, outside


def ranks(root: Path, progress: Any = None, **args: Any) -> Any:
    return call("analyze_ranks", DataRoots([root]), progress, **{"trace_dir": str(root / "traces"), "workers": 1,
                                                                 **args})  # fmt: skip


# ---------------------------------------------------------------------------------------------- the roots of a rank
def test_rank_tasks_get_the_real_roots(world: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    root, _ = world
    seen: list[tuple[str, ...]] = []
    real = ranks_run.run_pool

    def spy(tasks: Any, workers: int, on_done: Any) -> None:
        seen.extend(t.roots for t in tasks)
        real(tasks, workers, on_done)

    monkeypatch.setattr(ranks_run, "run_pool", spy)
    res = ranks(root, output_dir=str(root / "out"))
    assert res.ranks_ok == 2 and seen == [(str(root),), (str(root),)]  # never ("/",)


# ---------------------------------------------------------------------------------------------- swaps mid-run
def test_output_folder_swapped_for_a_link_mid_run(world: tuple[Path, Path]) -> None:
    """After rank 0 is done, OUT is moved away and a link to outside/ put in its place: rank 1 cannot publish there,
    the summary is not written there, and the clean-up deletes nothing there (outside holds `.rank_*` folders)."""
    root, outside = world
    out = root / "out"
    before = snapshot(outside)
    swapped: list[bool] = []

    def on_progress(done: float, total: float, message: str) -> None:
        if message.startswith("rank ") and not swapped:
            out.rename(root / "out-moved")
            out.symlink_to(outside)
            swapped.append(True)

    with pytest.raises(ToolFailure, match="symbolic link") as err:
        ranks(root, on_progress, output_dir=str(out))
    assert "\n" not in str(err.value)
    assert swapped and snapshot(outside) == before
    assert (root / "out-moved" / "rank_0" / "category_data" / "category_manifest.json").is_file()


def test_trace_swapped_for_a_link_after_planning(world: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    root, outside = world
    real_plan = ranks_run.plan_ranks

    def plan_then_swap(traces: list[Path], roots: DataRoots) -> Any:
        plan = real_plan(traces, roots)
        victim = root / "traces" / "rank_1.json.gz"
        victim.unlink()
        victim.symlink_to(outside / "traces" / "rank_1.json.gz")
        return plan

    monkeypatch.setattr(ranks_run, "plan_ranks", plan_then_swap)
    before = snapshot(outside)
    res = ranks(root, output_dir=str(root / "out"))
    assert res.ranks_ok == 1 and [e.rank for e in res.errors] == [1]
    assert "symbolic link" in res.errors[0].error or "outside the allowed data roots" in res.errors[0].error
    assert not (root / "out" / "rank_1").exists() and snapshot(outside) == before


def test_a_rank_folder_that_is_a_link_out_is_replaced_not_followed(world: tuple[Path, Path]) -> None:
    root, outside = world
    out = root / "out"
    ranks(root, output_dir=str(out))
    shutil.rmtree(out / "rank_1")
    (outside / "victim").mkdir()
    (outside / "victim" / "category_data").mkdir()
    (outside / "victim" / "category_data" / "sdpa_fwd_ops.csv").write_text("not yours\n")
    (out / "rank_1").symlink_to(outside / "victim")
    before = snapshot(outside)
    res = ranks(root, output_dir=str(out), overwrite=True)
    assert res.ranks_ok == 2 and snapshot(outside) == before
    assert not (out / "rank_1").is_symlink() and (out / "rank_1" / "category_data" / "sdpa_fwd_ops.csv").is_file()
    assert not [p.name for p in out.iterdir() if p.name.startswith(".")]  # our staging and replaced folders went


def test_a_trace_folder_link_out_is_refused(world: tuple[Path, Path]) -> None:
    root, outside = world
    (root / "traces" / "rank_9.json.gz").symlink_to(outside / "traces" / "rank_0.json.gz")
    with pytest.raises(ToolFailure, match="symbolic link"):
        ranks(root, output_dir=str(root / "out"))
    assert not (root / "out").exists()


# ---------------------------------------------------------------------------------------------- one run per folder
def test_a_second_run_into_the_same_folder_is_refused(world: tuple[Path, Path]) -> None:
    """While a run works in OUT, a second one (a retried call, another agent) is refused at once; the first run's
    folders and summary are then complete and its own."""
    root, _ = world
    out = root / "out"
    second: list[BaseException | Any] = []

    def on_progress(done: float, total: float, message: str) -> None:
        if "ranks to analyze" in message:  # the first run holds the folder: try another one now, from a thread
            def other() -> None:
                try:
                    second.append(ranks(root, output_dir=str(out), overwrite=True))
                except ToolFailure as exc:
                    second.append(exc)

            t = threading.Thread(target=other)
            t.start()
            t.join()

    res = ranks(root, on_progress, output_dir=str(out))
    assert len(second) == 1 and isinstance(second[0], ToolFailure), second
    assert "being written by another analyze_ranks run" in str(second[0])
    summary = json.loads((out / "ranks_summary.json").read_text())
    assert res.ranks_ok == 2 and [r["status"] for r in summary["ranks"]] == ["OK", "OK"]
    for r in summary["ranks"]:
        manifest = json.loads((out / r["folder"] / "category_data" / "category_manifest.json").read_text())
        assert manifest["sdpa_analyzer_run"]["trace_path"].endswith(Path(r["trace_path"]).name)


# ---------------------------------------------------------------------------------------------- load_rank_summary
async def test_load_rank_summary_never_reads_outside(world: tuple[Path, Path], tmp_path: Path) -> None:
    root, outside = world
    ranks(root, output_dir=str(root / "out"))
    (root / "linked").mkdir()
    (root / "linked" / "ranks_summary.json").symlink_to(outside / "ranks_summary.json")
    (root / "to_outside").symlink_to(outside)
    before = snapshot(outside)
    async with Client(create_server([root]), raise_exceptions=True) as c:
        ok = await c.call_tool("load_rank_summary", {"output_dir": "out/rank_1"})
        assert not ok.is_error and ok.structured_content["folder_rank"] == 1
        for folder, said in (("linked", "symbolic link"), ("to_outside", "outside the allowed data roots"),
                             (".", "no ranks_summary.json")):  # fmt: skip
            r = await c.call_tool("load_rank_summary", {"output_dir": folder})
            assert r.is_error and said in r.content[0].text, (folder, r.content[0].text)
    # a root named like a rank folder: its parent (outside the roots) is never read for the summary
    rank_root = tmp_path / "rank_0"
    rank_root.mkdir()
    (tmp_path / "ranks_summary.json").write_text((root / "out" / "ranks_summary.json").read_text())
    async with Client(create_server([rank_root]), raise_exceptions=True) as c:
        r = await c.call_tool("load_rank_summary", {"output_dir": "."})
        assert r.is_error and "no ranks_summary.json" in r.content[0].text, r.content[0].text
    assert snapshot(outside) == before


EDITS: list[tuple[str, Any, str]] = [
    ("ranks", "all of them", "ranks"),
    ("ranks", [1, 2], "ranks.0"),
    ("categories", "x", "categories"),
    ("categories", [{"category": "sdpa_fwd", "ranks": 2, "slowest_rank": 0, "kernel_time_ms": [1, 2]}],
     "categories.0.kernel_time_ms"),
    ("stragglers", [5], "stragglers.0"),
    ("missing_ranks", "3", "missing_ranks"),
    ("world_size", "2", "world_size"),
    ("errors", ["boom"], "errors.0"),
    ("ranks_ok", True, "ranks_ok"),
    ("shapes", [{"category": "sdpa_fwd"}], "shapes.0"),
]


@pytest.mark.parametrize(("key", "value", "field"), EDITS, ids=[f"{k}-{i}" for i, (k, _, _) in enumerate(EDITS)])
async def test_hand_edited_summaries_are_one_line_errors(
    world: tuple[Path, Path], key: str, value: Any, field: str
) -> None:
    root, _ = world
    out = root / "out"
    ranks(root, output_dir=str(out))
    doc = json.loads((out / "ranks_summary.json").read_text())
    doc[key] = value
    (out / "ranks_summary.json").write_text(json.dumps(doc))
    async with Client(create_server([root]), raise_exceptions=True) as c:
        r = await c.call_tool("load_rank_summary", {"output_dir": "out"})
    text = r.content[0].text
    assert r.is_error and "internal error" not in text and "\n" not in text and len(text) <= 300, text
    assert "ranks_summary.json" in text and field in text and "rerun analyze_ranks" in text, text
    proc = subprocess.run([sys.executable, "-m", "sdpa_analyzer.server.cli.main", "rank-summary", str(out)], capture_output=True,
                          text=True, timeout=120)  # fmt: skip
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1 and field in proc.stderr, proc.stderr


def test_the_summary_written_is_the_schema_read(world: tuple[Path, Path]) -> None:
    from sdpa_analyzer.server.ranks.read import RankSummaryDoc

    root, _ = world
    ranks(root, output_dir=str(root / "out"))
    doc = json.loads((root / "out" / "ranks_summary.json").read_text())
    checked = RankSummaryDoc.model_validate(doc).model_dump(by_alias=True)

    def kept(written: Any, read: Any, at: str = "") -> None:
        """Everything written is read back with its value (the reader may add its defaults beside it)."""
        if isinstance(written, dict):
            for k, v in written.items():
                kept(v, read[k], f"{at}.{k}")
        elif isinstance(written, list):
            assert len(written) == len(read), at
            for i, (a, b) in enumerate(zip(written, read, strict=True)):
                kept(a, b, f"{at}[{i}]")
        else:
            assert written == read, at

    kept(doc, checked)


# ---------------------------------------------------------------------------------------------- arch JSON files
async def test_an_arch_file_works_for_ranks_and_analyze_through_the_sandbox(world: tuple[Path, Path]) -> None:
    root, outside = world
    (root / "arch.json").write_text(json.dumps(ARCH_JSON))
    (root / "linked_arch.json").symlink_to(outside / "arch.json")
    before = snapshot(outside)
    async with Client(create_server([root]), raise_exceptions=True) as c:
        r = await c.call_tool("analyze_ranks", {"trace_dir": "traces", "output_dir": "out", "arch": "arch.json",
                                                "workers": 1})  # fmt: skip
        assert not r.is_error, r.content[0].text
        assert r.structured_content["ranks_ok"] == 2 and r.structured_content["errors"] == []
        a = await c.call_tool("analyze_trace", {"trace_path": "traces/rank_0.json.gz", "output_dir": "single",
                                                "arch": "arch.json"})  # fmt: skip
        assert not a.is_error and a.structured_content["gpu"]["source"] == "arch_json", a.content[0].text
        roof = await c.call_tool("compute_roofline", {"output_dir": "out/rank_0", "category": "sdpa_fwd",
                                                      "arch": "arch.json"})  # fmt: skip
        assert roof.structured_content["peaks"]["peak_tbs"] == pytest.approx(3.0)  # the file's 3000 GB/s
        bad = await c.call_tool("analyze_ranks", {"trace_dir": "traces", "output_dir": "out2",
                                                  "arch": "linked_arch.json"})  # fmt: skip
        assert bad.is_error and "symbolic link" in bad.content[0].text
    summary = json.loads((root / "out" / "ranks_summary.json").read_text())
    assert {r["gpu"] for r in summary["ranks"]} == {"custom-lab-gpu"}
    rank0 = [c for c in summary["rank_categories"] if c["rank"] == 0 and c["category"] == "sdpa_fwd"]
    assert rank0[0]["weighted_efficiency_pct"] == roof.structured_content["weighted_efficiency_pct"]  # the file's roofs
    assert not (root / "out2").exists() and snapshot(outside) == before
    proc = subprocess.run([sys.executable, "-m", "sdpa_analyzer.server.cli.main", "analyze-ranks", "traces", "-o", "out3", "--arch",
                           "arch.json", "--workers", "1", "--root", str(root)], capture_output=True, text=True,
                          cwd=root, timeout=300)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert os.path.isdir(root / "out3" / "rank_1")
