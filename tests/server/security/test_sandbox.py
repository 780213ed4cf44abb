"""The data roots as a sandbox, through a real MCP client: a symbolic link at any depth under an allowed folder
that leads outside the roots is refused, and nothing outside is ever read, written or deleted.

Each case links one piece of an analysis folder (the folder itself, category_data/, metadata/,
category_findings/, plots/, single files, the metadata's trace_path, an arch JSON, the trace) to a twin outside
the root, calls the tools over `Client(create_server([root]))`, and compares a byte-for-byte snapshot of the
outside tree before and after. One case runs over stdio against `sdpa-analyzer serve --root`.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

from sdpa_analyzer.server.errors import PathOutsideRootsError
from sdpa_analyzer.server.mcp_server import create_server
from sdpa_analyzer.server.roots import DataRoots
from sdpa_analyzer.server.synthetic import SyntheticAttentionCall, build_trace, write_trace
from tests.support import FLASH_ROW, make_folder, snapshot

pytestmark = pytest.mark.anyio
CAT = "sdpa_fwd"
ARCH = "h100-sxm"


@pytest.fixture
def world(tmp_path: Path) -> tuple[Path, Path]:
    """root/ (the data root) and outside/ (never to be touched): outside holds a complete analysis folder, a
    trace of another GPU, an arch JSON and loose files."""
    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    make_folder(outside, [FLASH_ROW], name="secret")
    (outside / "secret" / "category_findings").mkdir()
    (outside / "secret" / "category_findings" / f"{CAT}_findings.md").write_text("outside prose\n")
    (outside / "secret" / "category_data" / f"{CAT}_metrics.json").write_text('{"category": "sdpa_fwd"}\n')
    (outside / "secret" / "plots").mkdir()
    (outside / "secret" / "plots" / f"roofline_{CAT}_compulsory.png").write_bytes(b"not yours")
    (outside / "arch.json").write_text(json.dumps({"name": "x", "mem_bw_gbps": 1000, "max_achievable_tflops": {}}))
    call = SyntheticAttentionCall(flavour="aten_flash", batch=1, heads_q=8, seq_q=256, head_dim_qk=64, kernel_us=50.0)
    write_trace(build_trace([call], gpu_name="AMD Instinct MI300X"), outside / "trace.json")
    return root, outside


def own_folder(root: Path, name: str = "a") -> Path:
    return make_folder(root, [FLASH_ROW], name=name)


def swap_for_link(path: Path, target: Path) -> None:
    """Replace `path` (file or folder) by a symbolic link to `target`."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif path.exists() or path.is_symlink():
        path.unlink()
    path.symlink_to(target)


async def call(root: Path, tool: str, args: dict[str, Any]) -> Any:
    async with Client(create_server([root]), raise_exceptions=True) as c:
        return await c.call_tool(tool, args)


async def refused(root: Path, outside: Path, tool: str, args: dict[str, Any]) -> str:
    before = snapshot(outside)
    res = await call(root, tool, args)
    assert res.is_error, f"{tool} {args} should be refused, got {res.structured_content}"
    text = res.content[0].text
    assert "outside the allowed data roots" in text or "symbolic link" in text, text
    assert "\n" not in text and len(text) <= 300, text
    if str(outside) not in json.dumps(args):  # a link led out: the message names the path as given, not its target
        assert str(outside) not in text, text
    assert snapshot(outside) == before, f"{tool} touched the outside tree"
    return text


SCORING = [
    ("load_category_data", {}),
    ("compute_roofline", {"arch": ARCH}),
    ("rank_findings", {"arch": ARCH}),
    ("render_findings_template", {}),
    ("plot_roofline", {"arch": ARCH, "category": CAT}),
    ("render_report", {"arch": ARCH}),
]


@pytest.mark.parametrize(("tool", "extra"), SCORING, ids=[t for t, _ in SCORING])
@pytest.mark.parametrize("linked", ["output_dir", "category_data", "metadata"])
async def test_linked_folder_levels_are_refused(world: tuple[Path, Path], linked: str, tool: str, extra: dict) -> None:
    root, outside = world
    if linked == "metadata" and tool == "render_findings_template":
        pytest.skip("the template is rendered from the metrics JSON alone: it never opens metadata/")
    folder = own_folder(root)
    if linked == "output_dir":
        swap_for_link(folder, outside / "secret")
    else:
        swap_for_link(folder / linked, outside / "secret" / linked)
    args = {"output_dir": "a", **extra}
    if tool not in ("render_report",):
        args.setdefault("category", CAT)
    await refused(root, outside, tool, args)


@pytest.mark.parametrize(
    "relative",
    ["category_data/sdpa_fwd_ops.csv", "metadata/sdpa_fwd_metadata.json", "category_data/category_manifest.json"],
)
@pytest.mark.parametrize("tool", ["load_category_data", "rank_findings"])
async def test_linked_input_files_are_refused(world: tuple[Path, Path], relative: str, tool: str) -> None:
    root, outside = world
    folder = own_folder(root)
    if relative.endswith("manifest.json"):
        (outside / "manifest.json").write_text('{"comparison_scope": "standalone"}')
        swap_for_link(folder / relative, outside / "manifest.json")
    else:
        swap_for_link(folder / relative, outside / "secret" / relative)
    extra = {"arch": ARCH} if tool != "load_category_data" else {}
    await refused(root, outside, tool, {"output_dir": "a", "category": CAT, **extra})


async def test_linked_findings_folder_refuses_template_and_validation(world: tuple[Path, Path]) -> None:
    root, outside = world
    folder = own_folder(root)
    assert not (await call(root, "rank_findings", {"output_dir": "a", "category": CAT, "arch": ARCH})).is_error
    (folder / "category_findings").symlink_to(outside / "secret" / "category_findings")
    await refused(root, outside, "render_findings_template", {"output_dir": "a", "category": CAT})
    await refused(root, outside, "validate_findings", {"findings_path": f"a/category_findings/{CAT}_findings.md"})


async def test_linked_output_files_are_replaced_never_written_through(world: tuple[Path, Path]) -> None:
    """A link standing where the tools write their own file (metrics JSON, roofline CSV, PNG, findings file): the
    outside target is untouched; metrics/roofline/plot replace the link with their file, the findings file is
    never replaced (the skeleton goes beside it)."""
    root, outside = world
    folder = own_folder(root)
    links = {
        f"category_data/{CAT}_metrics.json": outside / "secret" / "category_data" / f"{CAT}_metrics.json",
        f"category_data/{CAT}_roofline.csv": outside / "secret" / "category_data" / f"{CAT}_ops.csv",
        f"plots/roofline_{CAT}_compulsory.png": outside / "secret" / "plots" / f"roofline_{CAT}_compulsory.png",
        f"category_findings/{CAT}_findings.md": outside / "secret" / "category_findings" / f"{CAT}_findings.md",
    }
    for rel, target in links.items():
        (folder / rel).parent.mkdir(exist_ok=True)
        (folder / rel).symlink_to(target)
    before = snapshot(outside)
    async with Client(create_server([root]), raise_exceptions=True) as c:
        for tool, extra in (("compute_roofline", {}), ("rank_findings", {}), ("plot_roofline", {"category": CAT})):
            res = await c.call_tool(tool, {"output_dir": "a", "category": CAT, "arch": ARCH, **extra})
            assert not res.is_error, res.content[0].text
        tpl = await c.call_tool("render_findings_template", {"output_dir": "a", "category": CAT})
        assert tpl.structured_content["wrote_main_file"] is False
        assert tpl.structured_content["findings_file"].endswith(f"{CAT}_findings.template.md")
        check = await c.call_tool("validate_findings", {"findings_path": f"a/category_findings/{CAT}_findings.md"})
        assert check.is_error and "symbolic link" in check.content[0].text
    assert snapshot(outside) == before
    for rel in list(links)[:3]:
        assert not (folder / rel).is_symlink() and (folder / rel).is_file(), rel
    assert (folder / f"category_findings/{CAT}_findings.md").is_symlink()  # left as it was


async def test_linked_metrics_json_is_refused_by_validation(world: tuple[Path, Path]) -> None:
    root, outside = world
    folder = own_folder(root)
    (folder / "category_findings").mkdir()
    (folder / "category_findings" / f"{CAT}_findings.md").write_text("# x\n")
    (folder / "category_data" / f"{CAT}_metrics.json").symlink_to(
        outside / "secret" / "category_data" / f"{CAT}_metrics.json"
    )
    await refused(root, outside, "validate_findings", {"findings_path": f"a/category_findings/{CAT}_findings.md"})


@pytest.mark.parametrize("form", ["absolute", "relative", "through_link"])
async def test_trace_path_outside_is_never_read(world: tuple[Path, Path], form: str) -> None:
    """The metadata names a trace outside the roots (an MI300X trace; the metadata says H100): the tools score
    against the metadata's GPU with a warning, never against what the outside trace says."""
    root, outside = world
    folder = own_folder(root)
    meta_path = folder / "metadata" / f"{CAT}_metadata.json"
    meta = json.loads(meta_path.read_text())
    if form == "absolute":
        meta["trace_path"] = str(outside / "trace.json")
    elif form == "relative":
        meta["trace_path"] = "../../outside/trace.json"
    else:
        (root / "t.json").symlink_to(outside / "trace.json")
        meta["trace_path"] = "../t.json"
    meta_path.write_text(json.dumps(meta))
    before = snapshot(outside)
    res = await call(root, "compute_roofline", {"output_dir": "a", "category": CAT})
    assert not res.is_error, res.content[0].text
    peaks = res.structured_content["peaks"]
    assert peaks["gpu_key"] == ARCH and peaks["source"] == "metadata" and peaks["trace_gpu_name"] is None
    warned = res.structured_content["warnings"]
    assert any("is outside the data roots" in w and "not read" in w for w in warned), warned
    with_arch = await call(root, "compute_roofline", {"output_dir": "a", "category": CAT, "arch": "mi300x"})
    assert not with_arch.is_error and with_arch.structured_content["peaks"]["gpu_key"] == "mi300x"
    assert snapshot(outside) == before


async def test_arch_json_outside_is_refused(world: tuple[Path, Path]) -> None:
    root, outside = world
    own_folder(root)
    (root / "arch.json").symlink_to(outside / "arch.json")
    await refused(root, outside, "compute_roofline", {"output_dir": "a", "category": CAT, "arch": "arch.json"})
    await refused(root, outside, "model_attention", {"batch": 1, "heads_q": 8, "seq_q": 128, "head_dim": 64,
                                                     "arch": str(outside / "arch.json")})  # fmt: skip


async def test_analyze_trace_refuses_every_link_out(world: tuple[Path, Path]) -> None:
    root, outside = world
    own = root / "trace.json"
    shutil.copy(outside / "trace.json", own)
    (root / "linked_trace.json").symlink_to(outside / "trace.json")
    await refused(root, outside, "analyze_trace", {"trace_path": "linked_trace.json", "output_dir": "o1"})
    await refused(root, outside, "analyze_trace", {"trace_path": "trace.json", "trace2_path": "linked_trace.json",
                                                   "output_dir": "o2"})  # fmt: skip
    # the output folder, or a folder inside it, leads out: nothing written there, nothing deleted there
    (outside / "cd").mkdir()
    (outside / "cd" / "sdpa_bwd_ops.csv").write_text("stale, but not ours to delete\n")
    (outside / "cd" / "sdpa_fwd_metrics.json").write_text("{}")
    (root / "o3").mkdir()
    (root / "o3" / "category_data").symlink_to(outside / "cd")
    await refused(root, outside, "analyze_trace", {"trace_path": "trace.json", "output_dir": "o3"})
    (root / "o4").symlink_to(outside / "cd")
    await refused(root, outside, "analyze_trace", {"trace_path": "trace.json", "output_dir": "o4"})
    (root / "o5").mkdir()
    (root / "o5" / "metadata").symlink_to(outside / "cd")
    await refused(root, outside, "analyze_trace", {"trace_path": "trace.json", "output_dir": "o5"})
    await refused(root, outside, "analyze_trace", {"trace_path": "trace.json", "output_dir": "../outside/o6"})
    assert not (outside / "o6").exists()


async def test_report_output_outside_is_refused(world: tuple[Path, Path]) -> None:
    root, outside = world
    folder = own_folder(root)
    (folder / "reports").symlink_to(outside)
    await refused(root, outside, "render_report", {"output_dir": "a", "arch": ARCH, "output": "r.html"})
    before = snapshot(outside)
    for name in (str(outside / "r.html"), "../r.html", "reports/r.html"):  # a name only: never a path elsewhere
        res = await call(root, "render_report", {"output_dir": "a", "arch": ARCH, "output": name})
        assert res.is_error and "pass a file name ending .html, without folders" in res.content[0].text
    assert snapshot(outside) == before


@pytest.mark.parametrize("path", ["../outside/secret", "/etc", "a/../../outside/secret"])
async def test_plain_paths_outside_are_refused(world: tuple[Path, Path], path: str) -> None:
    root, outside = world
    own_folder(root)
    await refused(root, outside, "load_category_data", {"output_dir": path, "category": CAT})


async def test_paths_keep_their_exact_characters(world: tuple[Path, Path]) -> None:
    root, _ = world
    own_folder(root, "good")
    res = await call(root, "load_category_data", {"output_dir": "good\n", "category": CAT})
    assert res.is_error and "line break" in res.content[0].text  # not silently "good"
    own_folder(root, "sp ")  # a trailing space is part of a real name
    ok = await call(root, "load_category_data", {"output_dir": "sp ", "category": CAT})
    assert not ok.is_error and ok.structured_content["output_dir"].endswith("sp ")
    missing = await call(root, "load_category_data", {"output_dir": "good ", "category": CAT})
    assert missing.is_error and "not found" in missing.content[0].text


async def test_links_inside_the_roots_still_work(world: tuple[Path, Path]) -> None:
    """Links are not banned: one that stays under a root (a shared traces folder, another root) is followed."""
    root, outside = world
    real = own_folder(root, "real")
    (root / "alias").symlink_to(real)
    res = await call(root, "rank_findings", {"output_dir": "alias", "category": CAT, "arch": ARCH})
    assert not res.is_error, res.content[0].text
    assert (real / "category_data" / f"{CAT}_metrics.json").is_file()
    async with Client(create_server([root, outside]), raise_exceptions=True) as c:  # outside as a second root
        (root / "b").symlink_to(outside / "secret")
        res = await c.call_tool("load_category_data", {"output_dir": "b", "category": CAT})
        assert not res.is_error and res.structured_content["status"] == "OK"


async def test_over_stdio(world: tuple[Path, Path]) -> None:
    """The issue's repro, over the real transport: `ln -s /outside/cd R/a/category_data`, then rank_findings."""
    root, outside = world
    folder = own_folder(root)
    swap_for_link(folder / "category_data", outside / "secret" / "category_data")
    before = snapshot(outside)
    params = StdioServerParameters(command=sys.executable, args=["-m", "sdpa_analyzer.server.cli.main", "serve", "--root", str(root)])
    async with Client(params) as c:
        ranked = await c.call_tool("rank_findings", {"output_dir": "a", "category": CAT, "arch": ARCH})
        loaded = await c.call_tool("load_category_data", {"output_dir": "a", "category": CAT})
        tpl = await c.call_tool("render_findings_template", {"output_dir": "a", "category": CAT})
    for res in (ranked, loaded, tpl):
        assert res.is_error and "symbolic link" in res.content[0].text, res.content[0].text
    assert snapshot(outside) == before


def test_a_link_swapped_in_after_the_check_is_refused(tmp_path: Path) -> None:
    """The check-then-open race: the path is resolved (no link yet), then a folder on it becomes a link out.
    Opening walks the resolved path with O_NOFOLLOW, so it refuses instead of following the new link."""
    root, outside = tmp_path / "root", tmp_path / "outside"
    (root / "a").mkdir(parents=True)
    (root / "a" / "f.txt").write_text("mine")
    outside.mkdir()
    (outside / "f.txt").write_text("secret")
    roots = DataRoots([root])
    checked = roots.resolve(root / "a" / "f.txt")
    (root / "a" / "f.txt").unlink()
    (root / "a").rmdir()
    (root / "a").symlink_to(outside)
    real_resolve = roots.resolve
    try:
        object.__setattr__(roots, "resolve", lambda path, what="path": checked)  # the check already passed
        with pytest.raises(PathOutsideRootsError, match="became a symbolic link"):
            roots.open_read(checked)
        with pytest.raises(PathOutsideRootsError, match="became a symbolic link"):
            with roots.directory(checked.parent):
                pass
    finally:
        object.__setattr__(roots, "resolve", real_resolve)


def test_fifo_and_devices_are_not_opened(tmp_path: Path) -> None:
    """Reading a FIFO would block forever, a device could never end: only regular files are opened."""
    os.mkfifo(tmp_path / "pipe")
    roots = DataRoots([tmp_path])
    with pytest.raises(ValueError, match="not a regular file"):
        roots.open_read(tmp_path / "pipe")
    with pytest.raises(ValueError, match="not a regular file"):
        DataRoots(["/dev"]).open_read("/dev/zero")


def test_cli_with_root_refuses_links_out(world: tuple[Path, Path]) -> None:
    """The same sandbox for a person at the CLI who passes --root."""
    import subprocess

    root, outside = world
    folder = own_folder(root)
    swap_for_link(folder / "category_data", outside / "secret" / "category_data")
    before = snapshot(outside)
    for command in (["rank", "a", CAT, "--arch", ARCH], ["load", "a", CAT], ["template", "a", CAT]):
        proc = subprocess.run(
            [sys.executable, "-m", "sdpa_analyzer.server.cli.main", *command, "--root", str(root)],
            capture_output=True, text=True, cwd=root, timeout=120,
        )  # fmt: skip
        assert proc.returncode == 2, (command, proc.stdout, proc.stderr)
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and "symbolic link" in lines[0] and "Traceback" not in proc.stderr, proc.stderr
    assert snapshot(outside) == before
