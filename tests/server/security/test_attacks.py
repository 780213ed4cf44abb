"""Issue 18's single-folder attacks, through the real MCP client and the CLI: each refused or consistent, and a
byte-for-byte snapshot of the outside tree unchanged (the ranks and Dask cases are in tests/server/ranks/).

* render_report / plot_roofline replacing files they did not write (findings, ops CSV, manifest, trace, source);
* results not bound to their run: rank_findings / compute_roofline while analyze_trace re-analyzes the folder, and
  readers of a metrics JSON or findings file of an older analysis;
* hard links to outside files, `/proc/self/fd/N` and `/proc/self/root/...` paths, a data root that is itself a link
  (and is swapped), concurrent analyze and rank on one folder.
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
from sdpa_analyzer.server.roots import DataRoots
from sdpa_analyzer.server.synthetic import SyntheticAttentionCall, build_trace, write_trace
from sdpa_analyzer.server.tools import call
from sdpa_analyzer.server.tools.base import ToolFailure
from tests.support import FLASH_ROW, make_folder, snapshot

pytestmark = pytest.mark.anyio
CAT = "sdpa_fwd"
H100 = "NVIDIA H100 80GB HBM3"


def trace(path: Path, seq: int = 512, kernel_us: float = 100.0) -> Path:
    c = SyntheticAttentionCall(flavour="aten_flash", heads_q=8, seq_q=seq, repeat=2, kernel_us=kernel_us)
    return write_trace(build_trace([c], gpu_name=H100), path)


@pytest.fixture
def world(tmp_path: Path) -> tuple[Path, Path]:
    """root/ with two traces, an analyzed, ranked folder a/ with its findings skeleton and a source file;
    outside/ with victims of every kind."""
    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    trace(root / "t1.json")
    trace(root / "t2.json", seq=1024, kernel_us=300.0)
    roots = DataRoots([root])
    call("analyze_trace", roots, trace_path=str(root / "t1.json"), output_dir=str(root / "a"))
    call("rank_findings", roots, output_dir=str(root / "a"), category=CAT)
    call("render_findings_template", roots, output_dir=str(root / "a"), category=CAT)
    (root / "a" / "notes.py").write_text("print('a source file of the user')\n")
    for name in ("victim.csv", "victim.json", "victim.html", "victim.png", "victim.md"):
        (outside / name).write_text(f"outside {name}\n")
    return root, outside


def files_of(folder: Path, skip: tuple[str, ...] = ()) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file() and not p.is_symlink() and not str(p.relative_to(folder)).startswith(skip)}  # fmt: skip


async def one_call(root: Path, tool: str, args: dict[str, Any]) -> Any:
    async with Client(create_server([root]), raise_exceptions=True) as c:
        return await c.call_tool(tool, args)


def one_line(res: Any) -> str:
    assert res.is_error, res.structured_content
    text = res.content[0].text
    assert "\n" not in text and len(text) <= 300 and "internal error" not in text, text
    return text


# ---------------------------------------------------------------------------------------------- output names
async def test_render_report_never_replaces_a_file_it_did_not_write(world: tuple[Path, Path]) -> None:
    root, _ = world
    a = root / "a"
    theirs = files_of(a)
    # names that point at other files are not names of ours
    for name in ("../category_findings/sdpa_fwd_findings.md", "../category_data/sdpa_fwd_ops.csv",
                 "../category_data/category_manifest.json", "../../t1.json", "../notes.py", str(root / "x.html"),
                 "sub/x.html", "x.md", ".hidden.html"):  # fmt: skip
        text = one_line(await one_call(root, "render_report", {"output_dir": "a", "output": name}))
        assert "pass a file name ending .html, without folders" in text, (name, text)
    # files at our names that we did not write
    (a / "reports").mkdir()
    (a / "reports" / "mine.html").write_text("<html>my own page</html>")
    os.link(a / "category_data" / f"{CAT}_ops.csv", a / "reports" / "csv.html")  # the ops CSV under a report name
    (a / "report.html").write_text("a page someone else wrote")
    for args in ({"output": "mine.html"}, {"output": "csv.html"}, {}):
        text = one_line(await one_call(root, "render_report", {"output_dir": "a", **args}))
        assert "already exists and it was not written by render_report" in text, text
    assert files_of(a, ("reports", "report.html")) == theirs
    # ours: written, then replaced again; a link at our name is replaced as a link, its target untouched
    (a / "report.html").unlink()
    (a / "report.html").symlink_to(a / "category_findings" / f"{CAT}_findings.md")
    for _ in range(2):
        res = await one_call(root, "render_report", {"output_dir": "a"})
        assert not res.is_error, res.content[0].text
    assert not (a / "report.html").is_symlink() and "sdpa-analyzer render_report" in (a / "report.html").read_text()
    assert not (await one_call(root, "render_report", {"output_dir": "a", "output": "new.html"})).is_error
    assert files_of(a, ("reports", "report.html")) == theirs
    proc = subprocess.run([sys.executable, "-m", "sdpa_analyzer.server.cli.main", "report", str(a), "-o", "../x.html"],
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert files_of(a, ("reports", "report.html")) == theirs


async def test_plot_roofline_never_replaces_a_file_it_did_not_write(world: tuple[Path, Path]) -> None:
    root, _ = world
    png = root / "a" / "plots" / f"roofline_{CAT}_compulsory.png"
    png.parent.mkdir()
    png.write_bytes(b"\x89PNG\r\n\x1a\n a chart someone else drew")
    text = one_line(await one_call(root, "plot_roofline", {"output_dir": "a", "category": CAT}))
    assert "not written by plot_roofline" in text and png.read_bytes().endswith(b"someone else drew")
    png.unlink()
    for _ in range(2):  # ours: written, then replaced
        assert not (await one_call(root, "plot_roofline", {"output_dir": "a", "category": CAT})).is_error
    assert b"sdpa-analyzer plot_roofline" in png.read_bytes()[:200]


# ---------------------------------------------------------------------------------------------- results bound to a run
def _run_id(folder: Path) -> str:
    return json.loads((folder / "category_data" / "category_manifest.json").read_text())["sdpa_analyzer_run"]["run_id"]


@pytest.mark.parametrize("tool", ["rank_findings", "compute_roofline"])
def test_a_scoring_tool_racing_a_reanalysis_writes_nothing(
    world: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, tool: str
) -> None:
    """The tool has loaded run 1; before it writes, analyze_trace commits run 2 into the folder: the tool writes
    no file of run 1's ops, and says so in one line."""
    from sdpa_analyzer.server.scoring import ranking
    from sdpa_analyzer.server.tools import roofline as roofline_tool

    root, _ = world
    a, roots = root / "a", DataRoots([root])
    old_run = _run_id(a)
    # rank_findings imports build_metrics when it runs: the hook goes where the function is defined
    hooked = (ranking, "build_metrics") if tool == "rank_findings" else (roofline_tool, "_row_model")
    real = getattr(*hooked)
    done: list[bool] = []

    def reanalyze_first(*args: Any, **kwargs: Any) -> Any:
        if not done:
            done.append(True)
            call("analyze_trace", roots, trace_path=str(root / "t2.json"), output_dir=str(a))
        return real(*args, **kwargs)

    monkeypatch.setattr(*hooked, reanalyze_first)
    with pytest.raises(ToolFailure, match=r"was re-analyzed .* while \w+ ran on the older analysis") as err:
        call(tool, roots, output_dir=str(a), category=CAT)
    assert "\n" not in str(err.value) and done and _run_id(a) != old_run
    assert not (a / "category_data" / f"{CAT}_metrics.json").exists()  # nothing of run 1 left beside run 2
    assert not (a / "category_data" / f"{CAT}_roofline.csv").exists()


def test_derived_files_record_their_run(world: tuple[Path, Path]) -> None:
    import pandas as pd

    root, _ = world
    a, roots = root / "a", DataRoots([root])
    call("compute_roofline", roots, output_dir=str(a), category=CAT)
    run = _run_id(a)
    metrics = json.loads((a / "category_data" / f"{CAT}_metrics.json").read_text())
    assert metrics["sdpa_analyzer"]["run_id"] == run
    csv = pd.read_csv(a / "category_data" / f"{CAT}_roofline.csv")
    assert set(csv["sdpa_analyzer_run_id"]) == {run}
    lines = (a / "category_findings" / f"{CAT}_findings.md").read_text().splitlines()
    assert lines[1] == f"<!-- sdpa_analyzer_run_id: {run} -->"
    # a folder without a run record (an orchestrator's) works as before and records none
    plain = make_folder(root, [FLASH_ROW], name="plain")
    call("rank_findings", roots, output_dir=str(plain), category=CAT)
    assert json.loads((plain / "category_data" / f"{CAT}_metrics.json").read_text())["sdpa_analyzer"]["run_id"] is None
    tpl = call("render_findings_template", roots, output_dir=str(plain), category=CAT)
    assert "sdpa_analyzer_run_id" not in Path(tpl.findings_file).read_text()
    assert "sdpa_analyzer_run_id" not in pd.read_csv(plain / "category_data" / f"{CAT}_roofline.csv").columns


async def test_readers_refuse_an_older_analysis(world: tuple[Path, Path]) -> None:
    root, _ = world
    a, roots = root / "a", DataRoots([root])
    metrics = a / "category_data" / f"{CAT}_metrics.json"
    findings = a / "category_findings" / f"{CAT}_findings.md"
    old_metrics, old_findings = metrics.read_bytes(), findings.read_bytes()
    call("analyze_trace", roots, trace_path=str(root / "t2.json"), output_dir=str(a))  # run 2 (derived files go)
    metrics.write_bytes(old_metrics)  # what a writer racing the re-analysis used to leave
    check = {"findings_path": f"a/category_findings/{CAT}_findings.md"}
    async with Client(create_server([root]), raise_exceptions=True) as c:
        for tool, args in (("render_findings_template", {"output_dir": "a", "category": CAT}),
                           ("validate_findings", check)):  # fmt: skip
            text = one_line(await c.call_tool(tool, args))
            assert "computed from an older analysis" in text and "re-run rank_findings" in text, (tool, text)
        rep = await c.call_tool("render_report", {"output_dir": "a"})
        assert not rep.is_error
        assert "computed from an older analysis" in (a / "report.html").read_text()
        # ranked again: the metrics are run 2's, the findings file (run 1's numbers) is refused
        assert not (await c.call_tool("rank_findings", {"output_dir": "a", "category": CAT})).is_error
        findings.write_bytes(old_findings)
        text = one_line(await c.call_tool("validate_findings", check))
        assert "rendered from another analysis" in text and "re-run render_findings_template" in text, text


def test_concurrent_analyze_and_rank_leave_a_consistent_folder(world: tuple[Path, Path]) -> None:
    """Two analyses of different traces and two rankings into one folder at once, repeatedly: every call either
    succeeds or refuses in one line, and at the end every file of the folder is from one run."""
    root, _ = world
    a, roots = root / "a", DataRoots([root])
    failures: list[str] = []

    def work(kind: str) -> None:
        for i in range(4):
            try:
                if kind == "analyze":
                    call("analyze_trace", roots, trace_path=str(root / ("t1.json" if i % 2 else "t2.json")),
                         output_dir=str(a))  # fmt: skip
                else:
                    call("rank_findings", roots, output_dir=str(a), category=CAT)
            except ToolFailure as exc:
                failures.append(str(exc))

    threads = [threading.Thread(target=work, args=(k,)) for k in ("analyze", "rank", "analyze", "rank")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all("\n" not in f and ("re-analyzed" in f or "analysis incomplete" in f) for f in failures), failures
    run = _run_id(a)
    meta = json.loads((a / "metadata" / f"{CAT}_metadata.json").read_text())
    assert meta["sdpa_analyzer_run_id"] == run
    metrics = a / "category_data" / f"{CAT}_metrics.json"
    if metrics.exists():
        assert json.loads(metrics.read_text())["sdpa_analyzer"]["run_id"] == run
    assert not [p.name for p in a.iterdir() if p.name.startswith(".sdpa")]


# ---------------------------------------------------------------------------------------------- links and /proc
async def test_hard_links_to_outside_files_are_never_written_through(world: tuple[Path, Path]) -> None:
    root, outside = world
    a = root / "a"
    cd = a / "category_data"
    (a / "plots").mkdir()
    for rel, victim in ((f"category_data/{CAT}_metrics.json", "victim.json"),
                        (f"category_data/{CAT}_roofline.csv", "victim.csv"), ("report.html", "victim.html"),
                        (f"plots/roofline_{CAT}_compulsory.png", "victim.png")):  # fmt: skip
        (a / rel).unlink(missing_ok=True)
        os.link(outside / victim, a / rel)
    (a / "category_findings" / f"{CAT}_findings.md").unlink()
    os.link(outside / "victim.md", a / "category_findings" / f"{CAT}_findings.md")
    before = snapshot(outside)
    async with Client(create_server([root]), raise_exceptions=True) as c:
        for tool, extra in (("compute_roofline", {"category": CAT}), ("rank_findings", {"category": CAT}),
                            ("render_findings_template", {"category": CAT})):  # fmt: skip
            res = await c.call_tool(tool, {"output_dir": "a", **extra})
            assert not res.is_error, (tool, res.content[0].text)
        for tool, extra in (("render_report", {}), ("plot_roofline", {"category": CAT})):
            one_line(await c.call_tool(tool, {"output_dir": "a", **extra}))  # not ours there: refused
        assert json.loads((cd / f"{CAT}_metrics.json").read_text())["category"] == CAT  # ours now, a name of its own
        (cd / f"{CAT}_ops.csv").unlink()
        os.link(outside / "victim.csv", cd / f"{CAT}_ops.csv")  # the ops CSV analyze_trace replaces
        again = await c.call_tool("analyze_trace", {"trace_path": "t2.json", "output_dir": "a"})
        assert not again.is_error, again.content[0].text
    assert snapshot(outside) == before


async def test_proc_paths_resolve_like_any_other(world: tuple[Path, Path]) -> None:
    root, outside = world
    before = snapshot(outside)
    fd_dir = os.open(outside, os.O_RDONLY)
    fd_file = os.open(outside / "victim.json", os.O_RDONLY)
    try:
        async with Client(create_server([root]), raise_exceptions=True) as c:
            for tool, args in (
                ("load_category_data", {"output_dir": f"/proc/self/fd/{fd_dir}", "category": CAT}),
                ("analyze_trace", {"trace_path": f"/proc/self/fd/{fd_file}", "output_dir": "o1"}),
                ("analyze_trace", {"trace_path": "t1.json", "output_dir": f"/proc/self/fd/{fd_dir}/o2"}),
                ("load_category_data", {"output_dir": f"/proc/self/root{outside}", "category": CAT}),
                ("rank_findings", {"output_dir": f"/proc/{os.getpid()}/root{outside}", "category": CAT}),
                ("load_rank_summary", {"output_dir": "/proc/self/cwd"}),
            ):
                text = one_line(await c.call_tool(tool, args))
                assert "outside the allowed data roots" in text or "symbolic link" in text, (args, text)
            # the same folder by another name is the same folder
            ok = await c.call_tool("load_category_data", {"output_dir": f"/proc/self/root{root}/a", "category": CAT})
            assert not ok.is_error and ok.structured_content["output_dir"] == str(root / "a")
    finally:
        os.close(fd_dir)
        os.close(fd_file)
    assert snapshot(outside) == before
    cli = [sys.executable, "-m", "sdpa_analyzer.server.cli.main", "load", "/proc/self/fd/0", CAT, "--root", str(root)]
    proc = subprocess.run(cli, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert proc.returncode == 2 and "outside the allowed data roots" in proc.stderr, proc.stderr


async def test_a_root_that_is_a_link_is_fixed_at_start(world: tuple[Path, Path], tmp_path: Path) -> None:
    root, outside = world
    link = tmp_path / "rootlink"
    link.symlink_to(root)
    shutil.copytree(root / "a", outside / "a")  # a twin outside: the swapped link would lead there
    before = snapshot(outside)
    async with Client(create_server([link]), raise_exceptions=True) as c:
        ok = await c.call_tool("load_category_data", {"output_dir": "a", "category": CAT})
        assert not ok.is_error and ok.structured_content["output_dir"] == str(root / "a")
        link.unlink()
        link.symlink_to(outside)  # the root's own name now leads outside
        still = await c.call_tool("rank_findings", {"output_dir": "a", "category": CAT})
        assert not still.is_error and still.structured_content["metrics_file"].startswith(str(root))
        text = one_line(await c.call_tool("rank_findings", {"output_dir": str(link / "a"), "category": CAT}))
        assert "outside the allowed data roots" in text or "symbolic link" in text
    assert snapshot(outside) == before
