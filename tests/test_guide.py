"""docs/internal-api.md "Where to add…", walked through: each entry is done as the guide says in a temporary copy of the
packages, and the new thing is seen flowing to a tool result (through the CLI and the MCP listing of that copy).

The copy holds perf_models/, server/ and prompts/; every check runs in a fresh interpreter whose import path is the
copy, so the packaged data files (GPU tables, bands) are the copy's."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.support import NAMESPACE, PACKAGES, REPO, SHARED, package_view

pytestmark = pytest.mark.slow  # a copy of the packages and a fresh interpreter per walk-through

GUIDE = REPO / "docs" / "internal-api.md"
GPU_KEY = "guide-gpu"

OP_MODULE = '''"""A library the guide adds: one attention op (BNHD, q/k/v first, causal after the scale)."""

from __future__ import annotations

from sdpa_analyzer.perf_models.ops.specs.base import FWD, OpSpec, Signature, op_specs
from sdpa_analyzer.perf_models.ops.types import AttentionType, CausalRule, Layout

GUIDELIB = "guidelib"
SPECS: list[OpSpec] = []
# guidelib::attn_fwd(q, k, v, softmax_scale, causal)   (a made-up library for the guide's walk-through)
SPECS += op_specs(
    ("guidelib::attn_fwd",), family=GUIDELIB, direction=FWD, layout=Layout.BNHD,
    attention_type=AttentionType.FLASH, causal_rule=CausalRule.BOTTOM_RIGHT,
    signatures=(Signature("guidelib 1", "attn_fwd(q, k, v, softmax_scale, causal)", "the guide test", (5, 5),
                          q=0, k=1, v=2, scale=3, causal=4, dropout_required=False),),
)
# guidelib::paged_attn(q, k_cache, v_cache, kv_indptr): a paged decode op (category inferenceattention)
SPECS += op_specs(
    ("guidelib::paged_attn",), family=GUIDELIB, direction=FWD, layout=Layout.THD,
    attention_type=AttentionType.PAGED, causal_rule=CausalRule.BOTTOM_RIGHT,
    signatures=(Signature("guidelib 1", "paged_attn(q, k_cache, v_cache, kv_indptr)", "the guide test", (4, 4),
                          q=0, k=1, v=2, kv_indptr=3, paged_cache=True, dropout_required=False),),
)
'''

TOOL_MODULE = '''"""A tool the guide adds: echoes its argument."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from sdpa_analyzer.server.results import ResultModel
from sdpa_analyzer.server.tools.base import CliSpec, ToolContext, ToolInput, ToolSpec


class EchoInput(ToolInput):
    text: Annotated[str, Field(max_length=100, description="what to echo")]


class EchoResult(ResultModel):
    echoed: str


def echo(ctx: ToolContext, args: EchoInput) -> EchoResult:
    return EchoResult(echoed=args.text)


TOOL = ToolSpec(name="guide_echo", title="Echo", description="Echo the text (the guide's walk-through).",
                input_model=EchoInput, result_model=EchoResult, run=echo, cli=CliSpec("guide-echo",
                positional=("text",)))
'''


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text, f"{path}: the guide's step no longer matches the code ({old!r} not found)"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def _add_the_guide_tool(tools: Path) -> None:
    """The guide's tool steps: one module under server/tools/, added to the imports and to TOOLS."""
    (tools / "guide_echo.py").write_text(TOOL_MODULE, encoding="utf-8")
    _edit(tools / "__init__.py", "from sdpa_analyzer.server.tools import (\n",
          "from sdpa_analyzer.server.tools import (\n    guide_echo,\n")
    _edit(tools / "__init__.py", "TOOLS: tuple[ToolSpec[Any, Any], ...] = (\n",
          "TOOLS: tuple[ToolSpec[Any, Any], ...] = (\n    guide_echo.TOOL,\n")


@pytest.fixture(scope="module")
def copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The packages with one of each thing the guide adds, done as the guide says."""
    root = tmp_path_factory.mktemp("guide")
    pkgs = root / NAMESPACE  # the copy is imported as the installed name, from PYTHONPATH=root
    for pkg in PACKAGES:
        shutil.copytree(REPO / pkg, pkgs / pkg, ignore=shutil.ignore_patterns("__pycache__"))
    # an attention op of a new library: a module under perf_models/ops/specs/, added to SPECS in __init__
    specs = pkgs / "perf_models" / "ops" / "specs"
    (specs / "guidelib.py").write_text(OP_MODULE, encoding="utf-8")
    _edit(
        specs / "__init__.py",
        "from sdpa_analyzer.perf_models.ops.specs import ",
        "from sdpa_analyzer.perf_models.ops.specs import guidelib, ",
    )
    _edit(specs / "__init__.py", "SPECS: list[OpSpec] = [\n", "SPECS: list[OpSpec] = [\n    *guidelib.SPECS,\n")
    # a GPU: one JSON file in perf_models/data/gpus/ (an H100 SXM's numbers under a new key, name and arch)
    gpus = pkgs / "perf_models" / "data" / "gpus"
    gpu = json.loads((gpus / "h100-sxm.json").read_text(encoding="utf-8"))
    gpu.update(key=GPU_KEY, name="Guide GPU 80GB", arch="sm_guide", aliases=[], device_names=["Guide GPU 80GB"],
               device_patterns=[r"\bguide gpu\b"], part_family="guide", tflops_datasheet={
                   **gpu["tflops_datasheet"], "matrix_bf16": 1000.0})  # fmt: skip
    (gpus / f"{GPU_KEY}.json").write_text(json.dumps(gpu), encoding="utf-8")
    # a band: one entry in perf_models/data/bands.json, with its anchors and their source
    bands_path = pkgs / "perf_models" / "data" / "bands.json"
    bands = json.loads(bands_path.read_text(encoding="utf-8"))
    family = json.loads(json.dumps(bands["families"][0]))
    family.update(id="guide-fwd-none", arch="sm_guide", measured_on=[GPU_KEY], measured_on_name="Guide GPU 80GB")
    bands["families"].append(family)
    bands_path.write_text(json.dumps(bands), encoding="utf-8")
    # a lever: one Lever in LEVERS (server/scoring/advice.py), as the guide writes it
    _edit(
        pkgs / "server" / "scoring" / "advice.py",
        "LEVERS: tuple[Lever, ...] = (\n",
        "LEVERS: tuple[Lever, ...] = (\n" + LEVER_LINE + ",\n",
    )
    # a tool: one module under server/tools/, added to TOOLS
    _add_the_guide_tool(pkgs / "server" / "tools")
    return root


def _guide_lever() -> str:
    """The guide's example lever, copied from its text (the walk-through does what the guide shows)."""
    text = " ".join(GUIDE.read_text(encoding="utf-8").split())
    start = text.index('`Lever("guide_half"')
    return "    " + text[start + 1 : text.index("`", start + 1)]


LEVER_LINE = _guide_lever()


def _run(copy: Path, code: str) -> str:
    env = {**os.environ, "PYTHONPATH": str(copy)}
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=copy, env=env, capture_output=True,
                         text=True, timeout=300)  # fmt: skip
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout


def test_the_guide_names_every_walk_through() -> None:
    text = GUIDE.read_text(encoding="utf-8")
    for entry in ("An attention op", "A GPU", "A band", "A lever", "A tool", "A trace source"):
        assert f"**{entry}**" in text, entry


def _trace_with(op: str, dims: list, types: list, concrete: list, kernel: str, device: str) -> dict:
    events = [
        {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0.0, "dur": 400.0,
         "args": {}},
        {"ph": "X", "cat": "cpu_op", "name": op, "pid": 1, "tid": 1, "ts": 10.0, "dur": 50.0,
         "args": {"External id": 1, "Input Dims": dims, "Input type": types, "Concrete Inputs": concrete}},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 20.0, "dur": 5.0,
         "args": {"correlation": 100, "External id": 1}},
        {"ph": "X", "cat": "kernel", "name": kernel, "pid": 0, "tid": 7, "ts": 30.0, "dur": 300.0,
         "args": {"correlation": 100, "stream": 7, "device": 0}},
    ]  # fmt: skip
    return {"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": device}], "traceEvents": events}


def test_a_new_op_and_a_new_gpu_flow_to_compute_roofline(copy: Path, tmp_path: Path) -> None:
    # guidelib::attn_fwd B2 N2048 H16 d128 causal bf16 on the guide GPU: 4·2·16·(2048·2049/2)·128 FLOPs
    trace = _trace_with(
        "guidelib::attn_fwd",
        [[2, 2048, 16, 128]] * 3 + [[], []],
        ["c10::BFloat16"] * 3 + ["Scalar", "Scalar"],
        ["", "", "", "0.0884", "True"],
        "guidelib_fwd_kernel",
        "Guide GPU 80GB",
    )
    path = tmp_path / "t.json"
    path.write_text(json.dumps(trace))
    out = _run(
        copy,
        f"""
        import json
        from sdpa_analyzer.server.roots import DataRoots
        from sdpa_analyzer.server.tools import call
        roots = DataRoots([{str(tmp_path)!r}])
        call("analyze_trace", roots, trace_path={str(path)!r}, output_dir={str(tmp_path / "out")!r})
        r = call("compute_roofline", roots, output_dir={str(tmp_path / "out")!r}, category="sdpa_fwd")
        row = r.rows[0]
        print(json.dumps({{"name": row.name, "flops": row.flops_useful, "gpu": r.peaks.gpu_key,
                           "peak": r.peaks.peak_tflops, "band": row.band_status}}))
    """,
    )
    got = json.loads(out.strip().splitlines()[-1])
    assert got["name"] == "guidelib::attn_fwd" and got["gpu"] == GPU_KEY and got["peak"] == 1000.0
    assert got["flops"] == 4 * 2 * 16 * (2048 * 2049 // 2) * 128


def test_a_new_paged_op_lands_in_inferenceattention(copy: Path, tmp_path: Path) -> None:
    trace = _trace_with(
        "guidelib::paged_attn",
        [[4, 32, 128], [4096, 16, 8, 128], [4096, 16, 8, 128], [5]],
        ["c10::BFloat16"] * 3 + ["int"],
        ["", "", "", ""],
        "guidelib_paged_kernel",
        "Guide GPU 80GB",
    )
    path = tmp_path / "p.json"
    path.write_text(json.dumps(trace))
    out = _run(
        copy,
        f"""
        from sdpa_analyzer.server.roots import DataRoots
        from sdpa_analyzer.server.tools import call
        roots = DataRoots([{str(tmp_path)!r}])
        res = call("analyze_trace", roots, trace_path={str(path)!r}, output_dir={str(tmp_path / "paged")!r})
        print([c.name for c in res.categories])
    """,
    )
    assert "inferenceattention" in out and "sdpa_fwd" not in out


def test_a_new_band_is_the_verdict_on_its_gpu(copy: Path) -> None:
    out = _run(
        copy,
        f"""
        from sdpa_analyzer.server.roots import DataRoots
        from sdpa_analyzer.server.tools import call
        r = call("model_attention", DataRoots(["/"]), batch=8, heads_q=16, seq_q=4096, head_dim=128,
                 arch={GPU_KEY!r}, measured_us=2000.0)
        print(r.band.id if r.band else None, r.peaks.gpu_key)
    """,
    )
    assert out.split() == ["guide-fwd-none", GPU_KEY]


def test_a_new_tool_reaches_the_cli_and_the_mcp_listing(copy: Path) -> None:
    out = _run(
        copy,
        """
        import anyio
        from mcp import Client
        from sdpa_analyzer.server.cli.main import main
        from sdpa_analyzer.server.mcp_server import create_server
        assert main(["guide-echo", "hello", "--json"]) == 0

        async def listed() -> list[str]:
            async with Client(create_server()) as c:
                return [t.name for t in (await c.list_tools()).tools]

        print("listed:", "guide_echo" in anyio.run(listed))
    """,
    )
    assert '"echoed": "hello"' in out and "listed: True" in out


# ---------------------------------------------------------------- "A tool", as a whole-repository step
TOOL_FILES = ("server/tools/guide_echo.py", "server/tools/__init__.py", "README.md")  # what the guide names
# The tests that cover the tool surface (listing, schemas, allowlist, prompt, README, CLI, imports, layers).
TOOL_TESTS = (
    "tests/server/mcp/test_server_mcp.py::test_lists_every_tool_with_schemas",
    "tests/server/mcp/test_listing_size.py",
    "tests/server/mcp/test_server_stdio.py",
    "tests/server/mcp/test_sdk_public_api.py",
    "tests/prompts",
    "tests/test_readme.py",
    "tests/test_layers.py",
    "tests/server/cli/test_cli.py",
    "tests/server/cli/test_start_imports.py",
)
# Runs the installed console script, which imports the checkout the venv was made from, not the copy.
INSTALLED_SCRIPT = "tests/prompts/test_prompts_server.py::test_server_starts_through_a_prefix"


def _repository_files() -> list[str]:
    """The checkout's files (tracked and new, none ignored), or, outside git, every file but caches and venvs."""
    if (REPO / ".git").exists():
        listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                                capture_output=True, check=True).stdout.decode().split("\0")  # fmt: skip
        return [name for name in listed if name and (REPO / name).is_file()]
    skip = {"__pycache__", ".venv", ".git", ".pytest_cache", ".ruff_cache"}
    return [str(p.relative_to(REPO)) for p in REPO.rglob("*") if p.is_file() and not skip & set(p.parts)]


def _tree(root: Path) -> dict[str, bytes]:
    skip = {"__pycache__", ".venv", ".git", ".pytest_cache", ".ruff_cache"}
    return {name: (root / name).read_bytes() for name in (str(p.relative_to(root)) for p in root.rglob("*")
            if p.is_file() and not skip & set(p.relative_to(root).parts))}  # fmt: skip


@pytest.fixture(scope="module")
def repo_with_a_tool(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The repository (what the tests read) with the guide's tool added by the guide's steps, and nothing else."""
    root = tmp_path_factory.mktemp("guide-tool")
    for name in _repository_files():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / name, root / name)
    _add_the_guide_tool(root / "server" / "tools")
    _edit(
        root / "README.md",
        "| tool | CLI | what it does |\n|---|---|---|\n",
        "| tool | CLI | what it does |\n|---|---|---|\n| `guide_echo` | `guide-echo` | the guide's echo |\n",
    )
    _edit(root / "README.md", "\n$S ", "\n$S guide-echo hello                        # the guide's tool\n$S ")
    return root


def test_a_tool_added_as_the_guide_says_touches_only_the_files_it_names(repo_with_a_tool: Path) -> None:
    changed = {name for name, data in _tree(repo_with_a_tool).items()
               if not (REPO / name).is_file() or (REPO / name).read_bytes() != data}  # fmt: skip
    assert changed == set(TOOL_FILES)


def test_a_tool_added_as_the_guide_says_keeps_the_tool_tests_green(
    repo_with_a_tool: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    view = package_view(repo_with_a_tool, tmp_path_factory.mktemp("guide-tool-view"))
    env = {**os.environ, "SDPA_SHARED_DIR": str(SHARED), "PYTHONPATH": str(view)}  # the copy's code, not the venv's
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "not slow",
                          "--deselect", INSTALLED_SCRIPT, *TOOL_TESTS], cwd=repo_with_a_tool, env=env,
                         capture_output=True, text=True, timeout=900)  # fmt: skip
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
    listed = subprocess.run([sys.executable, "-c", "from sdpa_analyzer.server.tools import TOOLS; print(len(TOOLS))"],
                            cwd=repo_with_a_tool, env=env, capture_output=True, text=True, timeout=120)  # fmt: skip
    assert int(listed.stdout) == len(_tree_tools(REPO)) + 1  # the copy's tests ran on the copy's tools


def _tree_tools(root: Path) -> list[str]:
    text = (root / "server" / "tools" / "__init__.py").read_text(encoding="utf-8")
    return re.findall(r"^    (\w+)\.TOOL,$", text, flags=re.M)


def test_a_new_lever_reaches_the_metrics_and_the_template(copy: Path, tmp_path: Path) -> None:
    from tests.support import FLASH_ROW, make_folder

    folder = make_folder(tmp_path, [FLASH_ROW])
    out = _run(
        copy,
        f"""
        import json
        from pathlib import Path
        from sdpa_analyzer.server.roots import DataRoots
        from sdpa_analyzer.server.tools import call
        roots = DataRoots([{str(tmp_path)!r}])
        call("compute_roofline", roots, output_dir={str(folder)!r}, category="sdpa_fwd")
        call("rank_findings", roots, output_dir={str(folder)!r}, category="sdpa_fwd")
        metrics = json.loads((Path({str(folder)!r}) / "category_data" / "sdpa_fwd_metrics.json").read_text())
        tpl = call("render_findings_template", roots, output_dir={str(folder)!r}, category="sdpa_fwd")
        levers = metrics["category_findings"][0]["advice"]["levers"]
        print(json.dumps({{"levers": levers, "template": Path(tpl.findings_file).read_text()}}))
    """,
    )
    got = json.loads(out.strip().splitlines()[-1])
    half = next(x for x in got["levers"] if x["id"] == "guide_half")
    assert half["saved_ms"] == round(half["time_ms"] / 2, 3)  # half of the members' time, by hand
    assert "{{P1.lever.guide_half.saved_ms}}" in got["template"] and "| guide_half |" in got["template"]
