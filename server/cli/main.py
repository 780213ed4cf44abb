"""`sdpa-analyzer` command line: the server (`serve`) and one subcommand per tool.

Exit codes: 0 ok, 1 findings invalid, 2 usage or input error. Human tables on stdout; `--json` prints
the same structured result the MCP tool returns.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from perf_models.errors import PerfModelError
from server.errors import InputError, os_error_message
from server.roots import DataRoots

EXIT_OK, EXIT_INVALID, EXIT_INPUT = 0, 1, 2
log = logging.getLogger("sdpa_analyzer")


class UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # argparse exits 2 too; keep the one-line style
        self.print_usage(sys.stderr)
        print(f"sdpa-analyzer: error: {message}", file=sys.stderr)
        raise SystemExit(EXIT_INPUT)


# ------------------------------------------------------------------ formatting helpers
def fmt(v: Any, nd: int = 2) -> str:
    if v is None:
        return "—"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        if v != v:
            return "—"
        if abs(v) >= 1e6:
            return f"{v:.3g}"
        return f"{v:.{nd}f}"
    return str(v)


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]], max_width: int = 48) -> str:
    cells = [[fmt(c) for c in r] for r in rows]
    cells = [[c if len(c) <= max_width else c[: max_width - 1] + "…" for c in r] for r in cells]
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(headers)]
    line = "  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True))
    sep = "  ".join("-" * w for w in widths)
    body = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in cells]
    return "\n".join([line, sep, *body])


def emit(result: BaseModel | dict[str, Any], as_json: bool, human: Callable[[Any], str]) -> None:
    if as_json:
        data = result.model_dump(mode="json") if isinstance(result, BaseModel) else result
        print(json.dumps(data, indent=2, ensure_ascii=False))
    else:
        print(human(result))


def _peaks_line(p: Any) -> str:
    if p is None:
        return ""
    t = f"{p.peak_tflops:g} TFLOPS {p.compute_spec} ({p.peak_tflops_kind})" if p.peak_tflops else "no compute peak"
    return f"GPU: {p.gpu_name} [{p.gpu_key}, from {p.source}] — {t}, {p.peak_tbs:g} TB/s ({p.peak_tbs_kind})"


# ------------------------------------------------------------------ human renderers
def human_load(r: Any) -> str:
    if r.status != "OK":
        return f"{r.category}: {r.status} — {r.message}"
    head = (
        f"{r.category}: {r.rows} rows, {r.instances} instances, kernel time {r.total_kernel_time_ms:.3f} ms "
        f"= {fmt(r.percent_of_e2e)}% of E2E ({fmt(r.e2e_baseline_ms, 3)} ms); platform {r.platform or '—'}"
    )
    rows = [[o.name, o.args.replace("<br>", " "), o.count, o.time_ms, o.percent_of_total] for o in r.top_ops]
    return "\n".join(
        [head, table(["op", "args", "count", "time ms", "%E2E"], rows), *[f"warning: {w}" for w in r.warnings]]
    )


def _short_op(name: str) -> str:
    """`aten::_scaled_dot_product_flash_attention` -> `_scaled_dot_product_flash_attention`; unfused rows keep
    their first word (their names hold `::` inside the parenthesised op list)."""
    if name.startswith("unfused_attention"):
        return name.split(" ")[0]
    return name.split("::")[-1]


def human_roofline(r: Any) -> str:
    if r.status != "OK":
        return f"{r.category}: NO_DATA"
    lines = [
        _peaks_line(r.peaks),
        f"{r.category}: {r.total_rows} rows ({r.modeled_rows} modeled), {r.total_time_ms:.3f} ms, "
        f"time-weighted efficiency {fmt(r.weighted_efficiency_pct)}% ({r.bytes_model} bytes)",
    ]
    rows = [
        [
            _short_op(x.name),
            x.shape,
            x.attention_type,
            x.library,
            x.count,
            x.time_ms,
            x.achieved_tflops,
            x.efficiency_pct,
            x.bound,
            f"{x.expected_band_pct[0]:g}-{x.expected_band_pct[1]:g}" if x.expected_band_pct else None,
        ]
        for x in r.rows
    ]
    lines.append(
        table(["op", "shape", "type", "library", "count", "time ms", "TFLOPS", "eff %", "bound", "band %"], rows, 40)
    )
    lines += [f"note: {n}" for n in r.notes] + [f"warning: {w}" for w in r.warnings]
    if r.roofline_file:
        lines.append(f"full table: {r.roofline_file}")
    return "\n".join(lines)


def human_rank(r: Any) -> str:
    if r.status != "OK":
        return f"{r.category}: {r.status} {r.error or ''}".strip()
    rows = [
        [
            f"P{f.rank}",
            f.bound_type,
            f.library,
            f.eff_bucket,
            f.estimate_method,
            f.impact_score_low,
            f.impact_score,
            f.impact_score_high,
            ", ".join(f.members),
        ]
        for f in r.findings
    ]
    out = [
        _peaks_line(r.peaks),
        f"{r.category} ({r.comparison_scope}): {r.operation_count} instances, {fmt(r.total_time_ms, 3)} ms, "
        f"{fmt(r.percent_of_compute)}% of E2E; {len(r.findings)} findings",
        table(["rank", "bound", "library", "eff", "method", "low", "mid", "high", "members"], rows)
        if rows
        else "(no findings)",
        f"metrics: {r.metrics_file}",
    ]
    return "\n".join(out + [f"warning: {w}" for w in r.warnings])


def human_validate(r: Any) -> str:
    if r.passed:
        return "PASS: findings file is valid"
    out = ["FAIL:"]
    for e in r.errors:
        out.append(f"  line {e.line or '—'} [{e.rule}] {e.message}\n      fix: {e.fix}")
    return "\n".join(out)


def human_model(r: Any) -> str:
    rows = [
        ["mask", r.mask],
        ["FLOPs (useful)", f"{r.flops_useful:.4g}"],
        ["FLOPs (executed)", f"{r.flops_executed:.4g}"],
        ["bytes (compulsory)", f"{r.bytes_compulsory:.4g}"],
        ["bytes (tiled)", f"{r.bytes_tiled:.4g}"],
        ["intensity (FLOP/B)", r.intensity],
        ["ridge (FLOP/B)", r.ridge],
        ["ideal time (µs)", r.ideal_us],
        ["bound", r.bound],
        ["measured (µs)", r.measured_us],
        ["TFLOPS achieved", r.achieved_tflops],
        ["efficiency %", r.efficiency_pct],
        ["expected band %", f"{r.expected_band_pct[0]:g}-{r.expected_band_pct[1]:g}"],
    ]
    return "\n".join([_peaks_line(r.peaks), table(["quantity", "value"], rows), *[f"note: {n}" for n in r.notes]])


def human_archs(r: Any) -> str:
    rows = [
        [a.key, a.name, a.vendor, a.tflops.get("matrix_bf16"), a.tflops.get("matrix_fp8"), a.hbm_tbs, a.sm_count]
        for a in r.architectures
    ]
    return table(["key", "name", "vendor", "bf16 TFLOPS", "fp8 TFLOPS", "HBM TB/s", "SMs/CUs"], rows)


# ------------------------------------------------------------------ commands
def _roots(args: argparse.Namespace) -> DataRoots:
    # the CLI runs with the user's own permissions: no root restriction unless asked for
    # relative paths are taken against the first root: the working directory, as a shell user expects
    return DataRoots([Path(r) for r in args.root] if getattr(args, "root", None) else [Path.cwd(), Path("/")])


def cmd_serve(args: argparse.Namespace) -> int:
    from server.mcp_server import create_server

    roots = [Path(r) for r in args.root] if args.root else [Path.cwd()]
    for r in roots:
        if not r.is_dir():
            raise InputError(f"--root {r} is not a folder")
    server = create_server(roots)
    if args.http:
        server.run("streamable-http", host=args.host, port=args.port)
    else:
        server.run()
    return EXIT_OK


def cmd_load(args: argparse.Namespace) -> int:
    from server.tools.service import load_category_data

    r = load_category_data(_roots(args), args.output_dir, args.category)
    emit(r, args.json, human_load)
    return EXIT_OK


def cmd_roofline(args: argparse.Namespace) -> int:
    from server.tools.service import compute_roofline

    r = compute_roofline(
        _roots(args), args.output_dir, args.category, args.arch, args.bytes_model, args.limit, args.offset
    )
    emit(r, args.json, human_roofline)
    return EXIT_OK


def cmd_rank(args: argparse.Namespace) -> int:
    from server.tools.service import rank_findings

    r = rank_findings(_roots(args), args.output_dir, args.category, args.scope, args.arch, args.bytes_model)
    emit(r, args.json, human_rank)
    return EXIT_OK


def cmd_validate(args: argparse.Namespace) -> int:
    from server.tools.findings_service import validate_findings

    r = validate_findings(_roots(args), args.findings_path, args.tier, args.scope)
    emit(r, args.json, human_validate)
    return EXIT_OK if r.passed else EXIT_INVALID


def cmd_template(args: argparse.Namespace) -> int:
    from server.tools.findings_service import render_findings_template

    r = render_findings_template(_roots(args), args.output_dir, args.category)
    emit(r, args.json, lambda x: f"wrote {x.findings_file}: {x.p_items} P-items, {x.slots} prose slots to fill")
    return EXIT_OK


def cmd_model(args: argparse.Namespace) -> int:
    from server.tools.service import model_attention

    r = model_attention(
        _roots(args),
        batch=args.batch,
        heads_q=args.heads,
        seq_q=args.seq_q,
        head_dim=args.head_dim,
        heads_kv=args.heads_kv,
        seq_kv=args.seq_kv,
        head_dim_v=args.head_dim_v,
        dtype=args.dtype,
        kv_cache_dtype=args.kv_cache_dtype,
        direction=args.direction,
        mask=args.mask,
        alignment=args.alignment,
        window_left=args.window_left,
        window_right=args.window_right,
        dropout_p=args.dropout,
        arch=args.arch,
        measured_us=args.measured_us,
        bytes_model=args.bytes_model,
        bwd_convention=args.bwd_convention,
    )
    emit(r, args.json, human_model)
    return EXIT_OK


def cmd_archs(args: argparse.Namespace) -> int:
    from server.tools.service import list_architectures

    emit(list_architectures(), args.json, human_archs)
    return EXIT_OK


def cmd_analyze(args: argparse.Namespace) -> int:
    from server.tools.trace_service import analyze_trace_cli

    return analyze_trace_cli(args, _roots(args))


def cmd_plot(args: argparse.Namespace) -> int:
    from server.tools.plot_service import plot_roofline

    r, _png = plot_roofline(_roots(args), args.output_dir, args.category, args.arch, args.bytes_model)
    emit(r, args.json, lambda x: "\n".join(f"wrote {f}" for f in x.files))
    return EXIT_OK


def cmd_report(args: argparse.Namespace) -> int:
    from server.tools.plot_service import write_report

    path = write_report(_roots(args), args.output_dir, args.arch, args.bytes_model, args.output)
    print(f"wrote {path}")
    return EXIT_OK


def cmd_demo(args: argparse.Namespace) -> int:
    from server.cli.demo import run_demo

    return run_demo(Path(args.output_dir))


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="sdpa-analyzer", description="Why are the attention (SDPA) ops in my PyTorch trace slow?")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)

    def common(sp: argparse.ArgumentParser, *, output_dir: bool = True, category: bool = True) -> None:
        if output_dir:
            sp.add_argument("output_dir", help="analysis folder")
        if category:
            sp.add_argument("category", nargs="?", default="sdpa_fwd", help="sdpa_fwd | sdpa_bwd | inferenceattention")
        sp.add_argument("--json", action="store_true", help="print the structured result as JSON")
        sp.add_argument("--root", action="append", help="restrict file access to this folder (repeatable)")

    s = sub.add_parser("serve", help="run the MCP server (stdio by default)")
    s.add_argument("--http", action="store_true", help="streamable HTTP instead of stdio")
    s.add_argument("--host", default="127.0.0.1")
    s.add_argument("--port", type=int, default=8000)
    s.add_argument("--root", action="append", help="data root the tools may read/write (repeatable; default: cwd)")
    s.set_defaults(fn=cmd_serve)

    s = sub.add_parser("load", help="load_category_data")
    common(s)
    s.set_defaults(fn=cmd_load)

    s = sub.add_parser("roofline", help="compute_roofline")
    common(s)
    s.add_argument("--arch")
    s.add_argument("--bytes-model", default="compulsory", choices=["compulsory", "tiled"])
    s.add_argument("--limit", type=int, default=20)
    s.add_argument("--offset", type=int, default=0)
    s.set_defaults(fn=cmd_roofline)

    s = sub.add_parser("rank", help="rank_findings (writes <cat>_metrics.json)")
    common(s)
    s.add_argument("--scope", default="standalone", choices=["standalone", "comparative"])
    s.add_argument("--arch")
    s.add_argument("--bytes-model", default="compulsory", choices=["compulsory", "tiled"])
    s.set_defaults(fn=cmd_rank)

    s = sub.add_parser("validate", help="validate_findings (exit 1 when invalid)")
    s.add_argument("findings_path")
    s.add_argument("--tier", default="compute", choices=["compute", "system"])
    s.add_argument("--scope", choices=["standalone", "comparative"])
    s.add_argument("--json", action="store_true")
    s.add_argument("--root", action="append")
    s.set_defaults(fn=cmd_validate)

    s = sub.add_parser("template", help="render_findings_template")
    common(s)
    s.set_defaults(fn=cmd_template)

    s = sub.add_parser("model", help="model_attention: what-if roofline for explicit shapes")
    s.add_argument("--batch", "-b", type=int, required=True)
    s.add_argument("--heads", type=int, required=True, help="query heads")
    s.add_argument("--heads-kv", type=int)
    s.add_argument("--seq-q", "-n", type=int, required=True)
    s.add_argument("--seq-kv", type=int)
    s.add_argument("--head-dim", "-d", type=int, required=True)
    s.add_argument("--head-dim-v", type=int)
    s.add_argument("--dtype", default="bf16")
    s.add_argument("--kv-cache-dtype")
    s.add_argument("--direction", default="fwd", choices=["fwd", "bwd"])
    s.add_argument("--mask", default="none", choices=["none", "causal", "sliding_window"])
    s.add_argument("--alignment", default="bottom_right", choices=["top_left", "bottom_right"])
    s.add_argument("--window-left", type=int, default=-1)
    s.add_argument("--window-right", type=int, default=-1)
    s.add_argument("--dropout", type=float, default=0.0)
    s.add_argument("--arch", default="h100-sxm")
    s.add_argument("--measured-us", type=float)
    s.add_argument("--bytes-model", default="compulsory", choices=["compulsory", "tiled"])
    s.add_argument("--bwd-convention", default="5gemm", choices=["5gemm", "recompute_fwd", "two_phase"])
    s.add_argument("--json", action="store_true")
    s.set_defaults(fn=cmd_model)

    s = sub.add_parser("archs", help="list_architectures")
    s.add_argument("--json", action="store_true")
    s.set_defaults(fn=cmd_archs)

    s = sub.add_parser("analyze", help="analyze_trace: raw profiler trace -> analysis folder")
    s.add_argument("trace")
    s.add_argument("-o", "--output-dir", default=None, help="analysis folder (default: <trace name>_analysis)")
    s.add_argument("--arch", default="auto")
    s.add_argument("--compare", help="second trace for comparative mode")
    s.add_argument("--json", action="store_true")
    s.add_argument("--root", action="append")
    s.set_defaults(fn=cmd_analyze)

    s = sub.add_parser("plot", help="plot_roofline: PNG roofline chart")
    common(s)
    s.add_argument("--arch")
    s.add_argument("--bytes-model", default="compulsory", choices=["compulsory", "tiled"])
    s.set_defaults(fn=cmd_plot)

    s = sub.add_parser("report", help="one self-contained HTML report of an analysis folder")
    s.add_argument("output_dir")
    s.add_argument("--arch")
    s.add_argument("--bytes-model", default="compulsory", choices=["compulsory", "tiled"])
    s.add_argument("-o", "--output", help="HTML file (default: <output_dir>/report.html)")
    s.add_argument("--root", action="append")
    s.set_defaults(fn=cmd_report)

    s = sub.add_parser("demo", help="synthetic trace -> analyze -> roofline -> rank -> report")
    s.add_argument("--output-dir", default="demo-out")
    s.set_defaults(fn=cmd_demo)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s")
    args = build_parser().parse_args(argv)
    try:
        return int(args.fn(args))
    except (InputError, PerfModelError, FileNotFoundError) as exc:
        print(f"sdpa-analyzer: error: {' '.join(str(exc).split())}", file=sys.stderr)
        return EXIT_INPUT
    except OSError as exc:  # e.g. an output folder under a file, a full disk: one line, no traceback
        print(f"sdpa-analyzer: error: {os_error_message(exc)}", file=sys.stderr)
        return EXIT_INPUT
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
