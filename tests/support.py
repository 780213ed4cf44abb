"""What the tests share (no test imports another test): where ../shared lives and skipping cleanly without it,
writable copies of the shared analysis folders, small hand-made folders, a pool task that kills its worker, and
an HTML parser for the report."""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from dataclasses import fields, replace
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from mcp import StdioServerParameters
from mcp.client.stdio import get_default_environment

from sdpa_analyzer.perf_models.config import AttentionConfig
from sdpa_analyzer.perf_models.dtypes import matrix_compute_spec
from sdpa_analyzer.perf_models.errors import ConfigError
from sdpa_analyzer.perf_models.ops.batch import ParsedTable, parse_ops_table
from sdpa_analyzer.perf_models.registry import parse_op
from sdpa_analyzer.perf_models.table import ConfigTable
from sdpa_analyzer.server.ranks.task import RankOutcome, RankTask, analyze_rank

REPO = Path(__file__).resolve().parents[1]
# The installed name the repo's folders live under (pyproject.toml's package-dir): a copy of the packages is imported
# from a folder that holds NAMESPACE/server, NAMESPACE/perf_models and NAMESPACE/prompts (see package_view).
NAMESPACE = "sdpa_analyzer"
PACKAGES = ("perf_models", "server", "prompts")
# the CLI in a child process, as `python -m` runs it (the console script is the same entry point)
CLI_COMMAND = (sys.executable, "-m", f"{NAMESPACE}.server.cli.main")


def stdio_server(root: Path) -> StdioServerParameters:
    """`serve --root ROOT` as a stdio child importing the same code as the test.

    The SDK gives a child a minimal environment, without PYTHONPATH; a test running a copy of the packages sets it.
    """
    env = get_default_environment()
    if "PYTHONPATH" in os.environ:
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    return StdioServerParameters(command=CLI_COMMAND[0], args=[*CLI_COMMAND[1:], "serve", "--root", str(root)], env=env)


def package_view(checkout: Path, into: Path) -> Path:
    """A folder for PYTHONPATH whose NAMESPACE/<package> links to `checkout`'s folders (imports the checkout's code)."""
    view = into / NAMESPACE
    view.mkdir(parents=True, exist_ok=True)
    for pkg in PACKAGES:
        (view / pkg).symlink_to(checkout / pkg, target_is_directory=True)
    return into
SHARED = Path(os.environ.get("SDPA_SHARED_DIR", REPO.parent / "shared"))
TRACES = SHARED / "traces"
ANALYSIS_FOLDERS = SHARED / "analysis-folders"
FINDINGS_CORPUS = REPO / "tests" / "server" / "findings" / "findings_corpus"
SHARED_SKIP_REASON = "needs ../shared (real traces and analysis folders; set SDPA_SHARED_DIR to point elsewhere)"


def snapshot(folder: Path) -> dict[str, Any]:
    """Every entry under `folder` (links not followed): kind, and content for files; mtimes for files too."""
    out: dict[str, Any] = {}
    for dirpath, dirnames, filenames in os.walk(folder):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            st = p.lstat()
            if p.is_symlink():
                out[str(p.relative_to(folder))] = ("link", os.readlink(p))
            elif p.is_file():
                out[str(p.relative_to(folder))] = ("file", p.read_bytes(), st.st_mtime_ns)
            else:
                out[str(p.relative_to(folder))] = ("dir",)
    return out


def need(path: Path) -> Path:
    """Return path, or skip the calling test when the shared fixture is not there."""
    if not path.exists():
        pytest.skip(f"{SHARED_SKIP_REASON}: {path} is absent")
    return path

FIXTURES_WITH_OPS = [
    "cmp_test03_attention_fused_vs_unfused_comparative",
    "cmp_test03_attention_fused_vs_unfused_trace1_standalone",
    "h100_bert-small",
    "h100_qwen1.5-0.5b",
    "mi300_falconsai-nsfw",
    "mi300_qwen1.5-0.5b",
    "synthetic_flash_attn_fwd_bwd_gqa_noncausal",
    "unit_sdpa_01_long_seq_low_eff",
    "unit_sdpa_03_short_seq_overhead",
]


def copy_fixture(name: str, tmp_path: Path) -> Path:
    """Copy a shared fixture folder (read-only there) into tmp_path/analysis-folders/<name>, writable.

    A `traces` link beside it keeps the metadata's relative trace_path (../../traces/...) reachable.
    """
    src = need(ANALYSIS_FOLDERS / name)
    dst = tmp_path / "analysis-folders" / name
    shutil.copytree(src, dst)
    for p in [dst, *dst.rglob("*")]:
        p.chmod(0o755 if p.is_dir() else 0o644)
    link = tmp_path / "traces"
    if TRACES.exists() and not link.exists():
        link.symlink_to(TRACES)
    return dst


def roots_for(tmp_path: Path) -> list[Path]:
    return [tmp_path, SHARED] if SHARED.exists() else [tmp_path]


OPS_HEADER = (
    "name,op category,Input Dims,Input type,Concrete Inputs,operation_count,Kernel Time (µs)_sum,"
    "Kernel Time (µs)_mean,kernel_details_summary,entry_point"
)


def make_folder(
    tmp_path: Path,
    rows: list[str],
    *,
    e2e_ms: float = 10.0,
    platform: str = "H100",
    header: str = OPS_HEADER,
    category: str = "sdpa_fwd",
    name: str = "folder",
) -> Path:
    """A minimal analysis folder with our own rows (no shared data needed)."""
    out = tmp_path / name
    (out / "category_data").mkdir(parents=True)
    (out / "metadata").mkdir()
    (out / "category_data" / f"{category}_ops.csv").write_text(header + "\n" + "\n".join(rows) + "\n", encoding="utf-8")
    meta = {
        "platform": platform,
        "category": category.upper(),
        "category_name": category,
        "gpu_utilization": {
            "total_time_ms": e2e_ms,
            "computation_time_percent": 90.0,
            "exposed_comm_time_percent": 0.0,
            "exposed_memcpy_time_percent": 0.0,
            "idle_time_percent": 10.0,
        },
    }
    (out / "metadata" / f"{category}_metadata.json").write_text(json.dumps(meta), encoding="utf-8")
    return out


# FlashAttention-3's backward kernel as released in 2024 (deepseek-ai/profile-data train.json names it): the kernel
# class before the Sm90 suffix; the grid and ingest tests launch it
FA3_BWD_2024 = (
    "void cutlass::device_kernel<flash::FlashAttnBwd<flash::CollectiveMainloopBwd<2, cute::tuple<cute::C<1>, "
    "cute::C<1>, cute::C<1> >, cute::tuple<cute::C<64>, cute::C<128>, cute::C<192> >, cutlass::bfloat16_t, float, "
    "cutlass::arch::Sm90, true, false, false, false, false, true, false, 2, 2, 1, false>, flash::CollectiveEpilogueBwd<"
    "cute::tuple<cute::C<64>, cute::C<128>, cute::C<192> >, cutlass::bfloat16_t, cutlass::arch::Sm90, 256, false, "
    "false, false>, flash::SingleTileScheduler<false, false, 128> > >(flash::FlashAttnBwd<...>::Params)"
)


# One realistic aten flash row: B=2, H=8, N=1024, d=64, bf16, causal, 10 calls of 100 µs each.
FLASH_ROW = (
    "aten::_scaled_dot_product_flash_attention,SDPA_fwd,"
    '"((2, 8, 1024, 64), (2, 8, 1024, 64), (2, 8, 1024, 64), (), (), (), ())",'
    "\"('c10::BFloat16', 'c10::BFloat16', 'c10::BFloat16', 'Scalar', 'Scalar', 'Scalar', 'Scalar')\","
    "\"('', '', '', '0.', 'True', 'False', '0.125')\",10,1000.0,100.0,"
    "\"[{'name': 'void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<64, 128, 128, 4> >(Flash_fwd_params)', "
    "'stream': 7, 'count': 10, 'total_duration_us': np.float64(1000.0)}]\","
    "model.py(10): forward"
)

def make_large_folder(tmp_path: Path, rows: int, seed: int = 0, name: str = "large") -> Path:
    """An analysis folder of `rows` distinct flash rows with long call stacks and two kernels each (a fill and
    the flash kernel): what a long training trace gives, for result-size and budget tests."""
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(seed)
    flash = "void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<{d}, 128, 64, 4, false> >(Params)"
    fill = "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float> >(int)"
    frames = [f"project/models/block_{k}/attention.py({100 + k}): forward" for k in range(30)]
    out = []
    for i in range(rows):
        b, h, n, d = int(rng.integers(1, 9)), int(rng.choice([8, 16, 32])), int(rng.integers(64, 4097)), 128
        count, mean = int(rng.integers(1, 20)), float(rng.uniform(20, 3000))
        stack = repr([*frames, f"nn.Module: Layer_{i % 24}", "aten::_scaled_dot_product_flash_attention"])
        kd = (f"[{{'name': '{fill}', 'stream': 7, 'count': {count}, 'total_duration_us': np.float64({count * 1.5})}}, "
              f"{{'name': '{flash.format(d=d)}', 'stream': 7, 'count': {count}, "
              f"'total_duration_us': np.float64({count * mean:.3f})}}]")
        out.append({
            "name": "aten::_scaled_dot_product_flash_attention", "op category": "SDPA_fwd",
            "Input Dims": f"(({b}, {h}, {n}, {d}), ({b}, {h}, {n}, {d}), ({b}, {h}, {n}, {d}), (), (), (), ())",
            "Input type": "('c10::BFloat16', 'c10::BFloat16', 'c10::BFloat16', 'Scalar', 'Scalar', 'Scalar', 'Scalar')",
            "Concrete Inputs": f"('', '', '', '0.', '{bool(i % 2)}', 'False', '0.125')", "operation_count": count,
            "Kernel Time (µs)_sum": count * (mean + 1.5), "Kernel Time (µs)_mean": mean + 1.5,
            "kernel_details_summary": kd, "entry_point": "project/train.py(88): step", "call_stack_full": stack,
        })
    folder = tmp_path / name
    (folder / "category_data").mkdir(parents=True)
    (folder / "metadata").mkdir()
    pd.DataFrame(out).to_csv(folder / "category_data" / "sdpa_fwd_ops.csv", index=False)
    total = sum(r["Kernel Time (µs)_sum"] for r in out) / 1000.0 * 1.5
    meta = {"platform": "H100", "gpu_utilization": {"total_time_ms": total}}
    (folder / "metadata" / "sdpa_fwd_metadata.json").write_text(json.dumps(meta))
    return folder


SDPA_ARGS = {
    "Input Dims": [[2, 8, 128, 64], [2, 8, 128, 64], [2, 8, 128, 64], [], [], [], []],
    "Input type": ["c10::BFloat16"] * 3 + ["Scalar"] * 4,
    "Input Strides": [[65536, 8192, 64, 1]] * 3 + [[]] * 4,
    "Concrete Inputs": ["", "", "", "0.", "True", "False", "0.125"],
}
FLASH_OP = "aten::_scaled_dot_product_flash_attention"


def kernel_trace(kernels: list[dict], device: str | None = "NVIDIA H100 80GB HBM3") -> dict:
    """A minimal GPU trace: one ProfilerStep, and per entry of `kernels` one flash SDPA op (B=2, H=8, N=128,
    d=64) launching one kernel at 100 µs intervals (30 µs long unless the entry says otherwise). An entry's
    `kernel` / `op` / `launch` dicts override fields of that kernel, op or runtime event."""
    events: list[dict] = [
        {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0.0,
         "dur": 100.0 * len(kernels) + 100.0, "args": {}},
    ]  # fmt: skip
    for i, k in enumerate(kernels):
        t = 10.0 + 100.0 * i
        op = {"ph": "X", "cat": "cpu_op", "name": FLASH_OP, "pid": 1, "tid": 1, "ts": t, "dur": 50.0,
              "args": {"External id": i + 1, **SDPA_ARGS}}  # fmt: skip
        launch = {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": t + 10,
                  "dur": 5.0, "args": {"correlation": 100 + i, "External id": i + 1}}  # fmt: skip
        kernel = {"ph": "X", "cat": "kernel", "name": "flash_fwd_kernel", "pid": 0, "tid": 7, "ts": t + 20,
                  "dur": 30.0, "args": {"correlation": 100 + i, "stream": 7, "device": 0}}  # fmt: skip
        op.update(k.get("op", {}))
        launch.update(k.get("launch", {}))
        kernel.update(k.get("kernel", {}))
        events += [op, launch, kernel]
    doc: dict = {"schemaVersion": 1, "traceEvents": events}
    if device is not None:
        doc["deviceProperties"] = [{"id": 0, "name": device}]
    return doc


_RUN_FIELDS = re.compile(rb'("(?:sdpa_analyzer_)?run_id": ")[0-9a-f]+(")|("(?:started|finished)_at": ")[^"]+(")')


def folder_bytes(folder: Path) -> dict[str, bytes]:
    """Every file of an analysis folder, by relative path, with what differs between two runs of the same analysis
    (the run id and the finish time) blanked: two runs that computed the same thing compare equal."""
    return {
        str(p.relative_to(folder)): _RUN_FIELDS.sub(rb"\1\3-\2\4", p.read_bytes())
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


__all__ = [
    "FIXTURES_WITH_OPS",
    "FLASH_OP",
    "FLASH_ROW",
    "SDPA_ARGS",
    "SHARED",
    "copy_fixture",
    "folder_bytes",
    "kernel_trace",
    "make_folder",
    "make_large_folder",
    "roots_for",
    "run_cli",
    "snapshot",
]


def die_on_rank_1(task: RankTask) -> RankOutcome:
    """A pool task (unpickled by reference in the pool's processes): rank 1 kills its process, as the OOM killer
    would; the other ranks are analyzed as usual."""
    if task.rank == 1:
        os._exit(137)
    return analyze_rank(task)


class PageParser(HTMLParser):
    """Tables by id (rows of cell texts; <br> and <li> become newlines), img tags, every attribute."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tables: dict[str, list[list[str]]] = {}
        self.imgs: list[dict[str, str | None]] = []
        self.attrs: list[tuple[str, str, str | None]] = []
        self.start_tags: list[str] = []
        self.text: list[str] = []
        self._table: str | None = None
        self._row: list[str] | None = None
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.start_tags.append(tag)
        self.attrs.extend((tag, k, v) for k, v in attrs)
        a = dict(attrs)
        if tag == "table":
            self._table = a.get("id") or f"anon{len(self.tables)}"
            self.tables[self._table] = []
        elif tag == "tr" and self._table is not None:
            self._row = []
        elif tag in ("td", "th") and self._row is not None:
            self._cell = []
        elif tag in ("br", "li") and self._cell is not None and self._cell:
            self._cell.append("\n")
        elif tag == "img":
            self.imgs.append(a)

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None and self._row is not None:
            self._row.append("".join(self._cell).strip())
            self._cell = None
        elif tag == "tr" and self._row is not None and self._table is not None:
            self.tables[self._table].append(self._row)
            self._row = None
        elif tag == "table":
            self._table = None

    def handle_data(self, data: str) -> None:
        self.text.append(data)
        if self._cell is not None:
            self._cell.append(data)


def parse_html(page: str) -> PageParser:
    p = PageParser()
    p.feed(page)
    p.close()
    return p


# ---- the batch parser against parse_op ----------------------------------------------------------------
Row = tuple[Any, Any, Any, Any, Any]  # name, Input Dims, Input type, Concrete Inputs, perf_params


def check_table(rows: list[Row]) -> ParsedTable:
    """parse_ops_table over `rows` must equal parse_op row by row, and its table must hold their configs."""
    names, dims, types, conc, pps = (list(c) for c in zip(*rows, strict=True))
    snapshot = json.dumps([dims, types, conc], default=repr)
    pt = parse_ops_table(names, dims, types, conc, pps)
    assert json.dumps([dims, types, conc], default=repr) == snapshot, "the caller's cells were modified"
    assert pt.n == len(rows)
    for i, row in enumerate(rows):
        want = parse_op(*row)
        if want.config is not None and max(_int_fields(want.config)) >= 2**63:
            # the one deviation: a config a 64-bit table column cannot hold is reported, not modeled
            want = replace(want, config=None, reason=pt.reason[i], source=None)
            assert "does not fit a 64-bit integer" in want.reason
        got = pt.op(i)
        assert got == want, f"row {i} {row!r:.300}\n got:  {got}\n want: {want}"
        assert pt.modeled[i] == (want.config is not None)
        assert pt.mask_label[i] == (want.config.mask.label if want.config else None)
        assert pt.dtype_q[i] == (want.config.dtype_q if want.config else None)
    configs = [pt.config(i) for i in np.flatnonzero(pt.modeled)]
    assert len(pt.table) == len(configs)
    computable = [c for c in configs if _has_compute_spec(c)]
    if configs and len(computable) == len(configs):
        want_table = ConfigTable.from_configs(configs)
        for f in fields(ConfigTable):
            np.testing.assert_array_equal(getattr(pt.table, f.name), getattr(want_table, f.name), err_msg=f.name)
    return pt


def _int_fields(cfg: AttentionConfig) -> list[int]:
    parts = [cfg, cfg.varlen, cfg.paged]
    return [v for p in parts if p is not None for v in vars_of(p) if isinstance(v, int) and not isinstance(v, bool)]


def vars_of(obj: Any) -> list[Any]:
    return [getattr(obj, f.name) for f in fields(obj)]


def _has_compute_spec(cfg: AttentionConfig) -> bool:
    try:
        matrix_compute_spec(cfg.dtype_q)
    except ConfigError:
        return False
    return True


# ---- a correct fill of a findings skeleton ------------------------------------------------------------------
_SLOT = re.compile(r"\{\{FILL:[^}]*\}\}")
_REGION = re.compile(r"^### P(\d+):|^<!--\s*reasoning-candidate\b.*?\brank=(\d+)")
_BAND_SENTENCE = {
    "within": "within the expected band",
    "below": "below the best published kernels for this shape",
    "above": "above the band of the best published kernels",
}


def fill_findings(skeleton: str, metrics: dict[str, Any]) -> str:
    """Fill every `{{FILL: …}}` slot of a rendered skeleton as a careful analyst would, with sentences built only
    from the metrics JSON's numbers and names (each copied as the JSON writes it) and the contract's words: the slot
    kind comes from the label its line starts with, the facts from the finding of the region (P-item or block) the
    slot sits in. A slot the helper does not know gets a sentence without numbers."""
    from sdpa_analyzer.server.findings.metrics_view import finding_operation_indices, view_metrics

    view = view_metrics(metrics)
    findings = {f.rank: f for f in view.findings}
    ops = {f.rank: [view.operations[i] for i in finding_operation_indices(f, view.operations)] for f in view.findings}
    scope = view.scope or "standalone"
    rank: int | None = None
    out = []
    for line in skeleton.split("\n"):
        region = _REGION.match(line)
        if region:
            rank = int(region.group(1) or region.group(2))
        elif line.startswith("## "):
            rank = None
        if "{{FILL:" in line:
            finding = findings.get(rank) if rank is not None else None
            text = _slot_text(line, finding, ops.get(rank, []), scope) if finding else "The ranked findings follow."
            line = _SLOT.sub(lambda _m, t=text: t, line, count=1)
            line = _SLOT.sub("", line)
        out.append(line)
    return "\n".join(out)


def _get(obj: Any, *path: str) -> Any:
    for key in path:
        obj = obj.get(key) if isinstance(obj, dict) else None
    return obj


def _slot_text(line: str, finding: Any, ops: list[dict[str, Any]], scope: str) -> str:
    op = ops[0] if ops else {}
    name = f"`{op.get('name')}`" if op.get("name") else "The op"
    impl = str(_get(op, "classification", "attention_type") or "attention")
    if line.startswith(("### P", "#### ")):
        chain = op.get("module_chain")
        where = f" in {chain[-1]}" if isinstance(chain, list) and chain else ""
        return f"{impl.replace('_', ' ').capitalize()} attention{where} of P{finding.rank}"
    if line.startswith("**Insight**"):
        return _insight(finding, op, name, scope)
    if line.startswith("**Action**"):
        if scope == "comparative":
            return "Check what changed between the runs for this op first: its kernel names, shapes and counts."
        if finding.heuristic:
            return "Profile this op directly; the tools need a performance model before they can judge it."
        if impl == "unfused":
            return "Send the attention through a fused kernel (the framework's SDPA entry point)."
        if finding.raw.get("bound_type") == "memory":
            return "Examine how the dominant kernel reads memory: the Q, K and V layout, their strides and dtype."
        return "Profile the dominant kernel's tile shape and occupancy for this shape."
    if line.startswith("**Identification:**"):
        return _identification(finding, op, impl)
    if line.startswith("**Reasoning for Slowdown:**"):
        kernel = str(op.get("kernel_name") or "").split("<", 1)[0].strip()
        where = f"the kernel `{kernel}`" if kernel else "its kernels"
        return (f"{name} runs {{{{P{finding.rank}.op1.count}}}} calls through {where}; the trace does not record "
                "the kernel's tile sizes, so a kernel profile would show which tile shape suits it.")  # fmt: skip
    if line.startswith("**Resolution:**"):
        return "A kernel configuration that suits this shape keeps the GPU's units busy for more of each call."
    return "This follows from the numbers in the table."


def _insight(finding: Any, op: dict[str, Any], name: str, scope: str) -> str:
    p = f"P{finding.rank}.op1"
    if scope == "comparative":
        diff = op.get("difference_ms")
        t1, t2 = op.get("time_ms"), op.get("t2_time_ms")
        moved = (f", {{{{{p}.direction}}}} by {{{{{p}.difference_ms}}}}" if diff is not None and t1 is not None
                 and t2 is not None and t1 != t2 else "")  # fmt: skip
        return f"{name} takes {{{{{p}.t2_time_ms}}}} in trace 2 against {{{{{p}.time_ms}}}} in trace 1{moved}."
    share = f" ({{{{{p}.share}}}})" if op.get("percent_of_total") is not None else ""
    if finding.heuristic:
        return f"{name} takes {{{{{p}.time_ms}}}}{share} and has no performance model."
    eff = _get(op, "efficiency", "efficiency_percent")
    bound = _get(op, "efficiency", "bound_type")
    work = _get(op, "roofline", "work_bound")
    text = f"{name} takes {{{{{p}.time_ms}}}}{share}"
    if eff is not None:
        qualifier = f"{{{{{p}.work_bound}}}} " if work in ("lower", "upper") else ""
        text += f" at {qualifier}{{{{{p}.efficiency}}}} efficiency"
    if bound in ("compute", "memory"):
        text += f", {{{{{p}.bound}}}}"
    status = _get(op, "roofline", "band_status")
    if work not in ("lower", "upper", "unknown") and status in _BAND_SENTENCE:
        text += f", {{{{{p}.band}}}}"
    return text + "."


def _identification(finding: Any, op: dict[str, Any], impl: str) -> str:
    text = f"The {impl.replace('_', ' ')} implementation"
    if finding.library:
        text += f" of the {finding.library} library"
    chain = op.get("module_chain")
    if isinstance(chain, list) and chain:
        text += f" runs in `{chain[-1]}`"
    profile = _get(op, "classification", "workload_profile") or {}
    p = f"P{finding.rank}.op1"
    if profile.get("n_q") is not None and profile.get("n_kv") is not None:
        text += f" at sequence lengths {{{{{p}.n_q}}}} and {{{{{p}.n_kv}}}}"
    roofline = op.get("roofline") if isinstance(op.get("roofline"), dict) else {}
    status = roofline.get("band_status")
    if (not finding.heuristic and status in _BAND_SENTENCE and roofline.get("work_bound") not in ("lower", "upper")
            and roofline.get("band_low") is not None):  # fmt: skip
        text += f"; its efficiency sits {{{{{p}.band}}}} ({{{{{p}.band_low}}}} to {{{{{p}.band_high}}}})"
    return text + "."


def run_cli(capsys: Any, *argv: str) -> tuple[int, str, str]:
    """One `sdpa-analyzer` command in this process: its exit code (argparse's usage errors included) and what it
    printed on stdout and stderr (read from pytest's capsys)."""
    from sdpa_analyzer.server.cli.main import main

    try:
        rc = main(list(argv))
    except SystemExit as exc:  # argparse usage errors
        rc = int(exc.code or 0)
    out, err = capsys.readouterr()
    return rc, out, err
