"""The validator against the mistakes an LLM makes in the prose of a findings file (rules 13-18), on fills of real
folders: the demo (forward and backward), the H100 and MI300X Qwen traces, a comparative pair, a heuristic (no
model) folder, a vLLM serving step and the demo with one op's work known only as a lower bound.

Each folder is analyzed here (compute_roofline + rank_findings: our metrics JSON, whatever its numbers are today),
its template is filled by tests.support.fill_findings (sentences built only from the metrics JSON), and that fill
must pass at once. Then every kind of mistake below is applied to the fill as a function of its text — one edit,
numbers and names taken from the metrics of the folder at hand — and must be caught by the rule named for it; every
harmless edit must pass. `pytest -s` prints the catch table.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path
from typing import Any

import pytest

from sdpa_analyzer.server.findings import load_metrics, render_findings_template, validate_findings_text
from sdpa_analyzer.server.findings.metrics_view import FindingView, finding_operation_indices, view_metrics
from sdpa_analyzer.server.findings.spec import number_text
from sdpa_analyzer.server.roots import DataRoots
from sdpa_analyzer.server.synthetic import build_trace, demo_calls, write_trace
from sdpa_analyzer.server.tools import call
from tests.support import ANALYSIS_FOLDERS, FINDINGS_CORPUS, TRACES, copy_fixture, fill_findings, roots_for

CATCH_RATE = 0.95


@dataclass
class Case:
    """One filled findings file and what its mistakes are built from."""

    name: str
    metrics: dict[str, Any]
    text: str
    scope: str
    findings: list[FindingView]
    ops: dict[int, list[dict[str, Any]]] = field(default_factory=dict)

    @property
    def lines(self) -> list[str]:
        return self.text.split("\n")

    def line(self, prefix: str, rank: int) -> int | None:
        """Index of the first line starting with `prefix` in rank's P-item or block (prefix decides which)."""
        region = None
        for i, line in enumerate(self.lines):
            start = re.match(r"^### P(\d+):|^<!--\s*reasoning-candidate\b.*?\brank=(\d+)", line)
            if start:
                region = int(start.group(1) or start.group(2))
            elif line.startswith("## "):
                region = None
            if region == rank and line.startswith(prefix):
                return i
        return None

    def edit(self, prefix: str, rank: int, old: str, new: str) -> str | None:
        i = self.line(prefix, rank)
        if i is None or old not in self.lines[i]:
            return None
        lines = self.lines
        lines[i] = lines[i].replace(old, new, 1)
        return "\n".join(lines)

    def append(self, prefix: str, rank: int, sentence: str) -> str | None:
        i = self.line(prefix, rank)
        if i is None:
            return None
        lines = self.lines
        lines[i] = lines[i].rstrip() + " " + sentence
        return "\n".join(lines)

    def op(self, rank: int) -> dict[str, Any]:
        return self.ops[rank][0]

    def first(self, test: Callable[[FindingView, dict[str, Any]], bool]) -> int | None:
        return next((f.rank for f in self.findings if test(f, self.op(f.rank))), None)

    def gpu_text(self) -> str:
        return str(self.metrics.get("sdpa_analyzer"))


def _get(obj: Any, *path: str) -> Any:
    for key in path:
        obj = obj.get(key) if isinstance(obj, dict) else None
    return obj


def _case(name: str, metrics: dict[str, Any]) -> Case:
    view = view_metrics(metrics)
    filled = fill_findings(render_findings_template(metrics, view.category or "sdpa_fwd"), metrics)
    text = validate_findings_text(filled, metrics).resolved_text or filled  # the file validate_findings writes
    ops = {f.rank: [view.operations[i] for i in finding_operation_indices(f, view.operations)] for f in view.findings}
    return Case(name, metrics, text, view.scope or "standalone", view.findings, ops)


def _rank(roots: DataRoots, folder: Path, category: str, scope: str = "standalone") -> dict[str, Any]:
    call("compute_roofline", roots, output_dir=str(folder), category=category)
    call("rank_findings", roots, output_dir=str(folder), category=category, comparison_scope=scope)
    return load_metrics(folder / "category_data" / f"{category}_metrics.json")


@pytest.fixture(scope="module")
def cases(tmp_path_factory: pytest.TempPathFactory) -> list[Case]:
    tmp = tmp_path_factory.mktemp("prose")
    roots = DataRoots([tmp, TRACES.parent] if TRACES.exists() else [tmp])
    trace = tmp / "demo_trace.json.gz"
    write_trace(build_trace(demo_calls()), trace)
    call("analyze_trace", roots, trace_path=str(trace), output_dir=str(tmp / "demo"))
    found = [_case(f"demo {c}", _rank(roots, tmp / "demo", c)) for c in ("sdpa_fwd", "sdpa_bwd")]
    bounded = _rank(roots, tmp / "demo", "sdpa_fwd")  # the demo with P1's work known only as a lower bound
    first = view_metrics(bounded).findings[0]
    for index in finding_operation_indices(first, bounded["operations"]):
        bounded["operations"][index]["roofline"]["work_bound"] = "lower"
    found.append(_case("demo, lower-bound work", bounded))
    if ANALYSIS_FOLDERS.exists():
        for name, scope in (("h100_qwen1.5-0.5b", "standalone"), ("mi300_qwen1.5-0.5b", "standalone"),
                            ("cmp_test03_attention_fused_vs_unfused_comparative", "comparative"),
                            ("cmp_test03_attention_fused_vs_unfused_trace1_standalone", "standalone")):  # fmt: skip
            folder = copy_fixture(name, tmp)
            found.append(_case(name, _rank(DataRoots(roots_for(tmp)), folder, "sdpa_fwd", scope)))
    serving = TRACES / "inference" / "vllm_prefilldecode_piecewise" / "graph_execution.json.gz"
    if serving.exists():
        call("analyze_trace", roots, trace_path=str(serving), output_dir=str(tmp / "vllm"))
        found.append(_case("vllm serving step", _rank(roots, tmp / "vllm", "inferenceattention")))
    # a comparative ranking of that pair has no finding today (trace 2 is not faster for any op): the comparative
    # corpus metrics (one finding, trace 2 slower) and the reference pipeline's metrics of the pair stand in
    found.append(_case("corpus comparative", load_metrics(FINDINGS_CORPUS / "metrics" / "comparative.json")))
    reference = ANALYSIS_FOLDERS / "cmp_test03_attention_fused_vs_unfused_comparative" / "category_data"
    if (reference / "sdpa_fwd_metrics.json").exists():
        found.append(_case("reference pipeline, comparative", load_metrics(reference / "sdpa_fwd_metrics.json")))
    return [case for case in found if case.findings]


# ---- the mistakes: (kind, rule that must catch it, edit) -----------------------------------------------------
def _numbers(line: str) -> list[str]:
    return re.findall(r"(?<![\w.])\d+\.\d+(?![\w.])", line)


def _time(case: Case, rank: int = 1) -> str | None:
    value = case.op(rank).get("time_ms")
    return number_text(value) if value is not None else None


def _invented(case: Case) -> str | None:
    t = _time(case)
    return case.edit("**Insight**", 1, f"takes {t} ms", f"takes {Decimal(t) + Decimal('0.37')} ms") if t else None


def _rounded(case: Case, places: int = 1) -> str | None:
    for text in _numbers(case.lines[case.line("**Insight**", 1) or 0]):
        value = Decimal(text)
        if -value.as_tuple().exponent > places:
            rounded = value.quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_UP)
            return case.edit("**Insight**", 1, text, str(rounded))
    return None


def _other_time(case: Case) -> str | None:
    mine, other = _time(case, 1), next((_time(case, f.rank) for f in case.findings[1:]), None)
    if mine is None or other is None or other == mine:
        return None
    return case.edit("**Insight**", 1, f"takes {mine} ms", f"takes {other} ms")


def _other_name(case: Case) -> str | None:
    mine = str(case.op(1).get("name"))
    other = next((str(case.op(f.rank).get("name")) for f in case.findings[1:] if case.op(f.rank).get("name") != mine),
                 None)  # fmt: skip
    return case.edit("**Insight**", 1, f"`{mine}`", f"`{other}`") if other else None


def _wrong_name(case: Case) -> str | None:
    mine = str(case.op(1).get("name"))
    fake = "aten::_scaled_dot_product_cudnn_attention" if "cudnn" not in mine else "aten::_efficient_attention_forward"
    return case.edit("**Insight**", 1, f"`{mine}`", f"`{fake}`")


def _swap_lines(case: Case, prefixes: tuple[str, ...], first: int = 1, second: int = 2) -> str | None:
    lines = case.lines
    for prefix in prefixes:
        a, b = case.line(prefix, first), case.line(prefix, second)
        if a is None or b is None:
            return None
        lines[a], lines[b] = lines[b], lines[a]
    return "\n".join(lines)


def _swap_ranks(case: Case) -> str | None:
    a, b = case.line("### P1:", 1), case.line("### P2:", 2)
    if a is None or b is None:
        return None
    lines = case.lines
    lines[a], lines[b] = lines[a].replace("### P1:", "### P2:", 1), lines[b].replace("### P2:", "### P1:", 1)
    return "\n".join(lines)


def _swap_block_ranks(case: Case) -> str | None:
    a, b = case.line("<!-- reasoning-candidate", 1), case.line("<!-- reasoning-candidate", 2)
    if a is None or b is None:
        return None
    lines = case.lines
    lines[a], lines[b] = lines[a].replace("rank=1", "rank=2"), lines[b].replace("rank=2", "rank=1")
    return "\n".join(lines)


def _copy_insight(case: Case) -> str | None:
    a, b = case.line("**Insight**", 1), case.line("**Insight**", 2)
    if a is None or b is None:
        return None
    lines = case.lines
    lines[a] = lines[b]
    return "\n".join(lines)


def _bound_word(case: Case, have: str, write: str) -> str | None:
    rank = case.first(lambda f, op: not f.heuristic and _get(op, "efficiency", "bound_type") == have
                      and _get(op, "roofline", "regime") != write)  # fmt: skip
    return case.edit("**Insight**", rank, f"{have}-bound", write) if rank else None


def _band_word(case: Case, status: str, write: str) -> str | None:
    sentences = {"within": "within the expected band", "below": "below the best published kernels for this shape"}
    rank = case.first(lambda f, op: _get(op, "roofline", "band_status") == status and not f.heuristic)
    return case.edit("**Insight**", rank, sentences[status], write) if rank else None


def _bound_claim_heuristic(case: Case) -> str | None:
    rank = case.first(lambda f, op: f.heuristic)
    return case.append("**Insight**", rank, "It is memory-bound.") if rank else None


def _no_band_verdict(case: Case) -> str | None:
    rank = case.first(lambda f, op: not f.heuristic and _get(op, "roofline", "band_status") in (None, "none"))
    return case.append("**Insight**", rank, "It sits within the expected band.") if rank else None


def _not_bottleneck(case: Case) -> str | None:
    rank = case.first(lambda f, op: _get(op, "roofline", "band_status") == "below")
    return case.append("**Action**", rank, "It is not a bottleneck.") if rank else None


def _wrong_gpu(case: Case) -> str | None:
    gpu = next(g for g in ("MI300X", "H100", "B200") if g not in case.gpu_text())
    return case.append("**Action**", 1, f"The {gpu} runs it.")


def _bounded_plain(case: Case) -> str | None:
    return case.edit("**Insight**", 1, "at least ", "") if "lower-bound" in case.name else None


def _bounded_wrong(case: Case) -> str | None:
    return case.edit("**Insight**", 1, "at least ", "at most ") if "lower-bound" in case.name else None


def _standalone(case: Case, sentence: str) -> str | None:
    return case.append("**Action**", 1, sentence) if case.scope == "standalone" else None


def _comparative_silent(case: Case) -> str | None:
    if case.scope != "comparative":
        return None
    i = case.line("**Insight**", 1)
    lines = case.lines
    assert i is not None
    lines[i] = f"**Insight**: `{case.op(1).get('name')}` takes {_time(case)} ms."
    lines[case.line("**Action**", 1) or 0] = "**Action**: Profile the op directly."
    return "\n".join(lines)


def _action(case: Case, text: str) -> str | None:
    i = case.line("**Action**", 1)
    if i is None:
        return None
    lines = case.lines
    lines[i] = f"**Action**: {text}"
    return "\n".join(lines)


def _citation(case: Case, new: str) -> str | None:
    i = case.line("**Identification:**", 1)
    if i is None or "(source:" not in case.lines[i]:
        return None
    lines = case.lines
    lines[i] = lines[i][: lines[i].index("(source:")] + new
    return "\n".join(lines)


def _impact_line(case: Case, tail: str) -> str | None:
    mid = case.findings[0].mid
    return case.edit("**Impact**", 1, f"impact_score: {mid} (% of E2E)", f"impact_score: {mid}{tail}")


def _share(case: Case, key: str, unit: str) -> str | None:
    value = case.op(1).get(key)
    if value is None or (key != "percent_of_total" and value == case.op(1).get("percent_of_total")):
        return None  # the same number is also the op's share of E2E: no mistake to make
    return case.append("**Insight**", 1, f"That is {number_text(value)} {unit}.")


MISTAKES: list[tuple[str, str, Callable[[Case], str | None]]] = [
    # rule 13: numbers
    ("invented number", "R13-bare", _invented),
    ("invented number in an added sentence", "R13-bare", lambda c: c.append("**Action**", 1, "It costs 3.1416 ms.")),
    ("invented percentage in the Identification", "R13-bare",
     lambda c: c.append("**Identification:**", 1, "About 42.42 % of the GPU time goes here.")),
    ("number rounded to one decimal", "R13-bare", _rounded),
    ("number rounded to an integer", "R13-bare", lambda c: _rounded(c, 0)),
    ("ms written as µs", "R13-bare",
     lambda c: c.edit("**Insight**", 1, f"takes {_time(c)} ms", f"takes {_time(c)} µs")),
    ("ms written as %", "R13-bare", lambda c: c.edit("**Insight**", 1, f"takes {_time(c)} ms", f"takes {_time(c)} %")),
    ("µs digits kept with ms", "R13-bare",
     lambda c: c.edit("**Insight**", 1, f"takes {_time(c)} ms", f"takes {Decimal(_time(c) or 0) * 1000} ms")),
    ("% of E2E written as ms", "R13-bare", lambda c: _share(c, "percent_of_total", "ms")),
    ("% of the category written as % of E2E", "R13-bare", lambda c: _share(c, "percent_of_category", "% of E2E")),
    ("impact score written as ms saved", "R13-bare",
     lambda c: c.append("**Action**", 1, f"This saves {c.findings[0].mid} ms.")),
    ("another P-item's time", "R13-bare", _other_time),
    ("another P-item's number in the Identification", "R13-bare",
     lambda c: c.append("**Identification:**", 1, f"It takes {_time(c, 2)} ms.") if len(c.findings) > 1
     and _time(c, 2) != _time(c, 1) else None),
    ("a P-item that does not exist", "R13-rank", lambda c: c.append("**Action**", 1, "See also P9.")),
    # rule 14: names, swapped prose
    ("op name of no member", "R14-name", _wrong_name),
    ("misspelt op name", "R14-name", lambda c: c.edit("**Insight**", 1, "`aten::_", "`aten::")),
    ("invented kernel name", "R14-name",
     lambda c: c.append("**Reasoning for Slowdown:**", 1, "The `flash_fwd_splitkv_kernel_v3` kernel dominates.")),
    ("invented module name", "R14-name",
     lambda c: c.append("**Identification:**", 1, "It runs in `BertSelfAttention`.")),
    ("another P-item's op name", "R14-other-item", _other_name),
    ("P1/P2 Insight and Action swapped", "R14-swapped", lambda c: _swap_lines(c, ("**Insight**", "**Action**"))),
    ("P1/P2 Insight swapped", "R14-swapped", lambda c: _swap_lines(c, ("**Insight**",))),
    ("P2's Insight copied into P1", "R14-misplaced", _copy_insight),
    ("Detailed Analysis prose of ranks 1/2 swapped", "R14-swapped",
     lambda c: _swap_lines(c, ("**Identification:**", "**Reasoning for Slowdown:**", "**Resolution:**"))),
    # headings
    ("P1/P2 heading lines swapped", "R2-swapped-headings", lambda c: _swap_lines(c, ("### P",))),
    ("P1/P2 rank numbers swapped", "R2-swapped-headings", _swap_ranks),
    ("candidate rank= attributes swapped", "R3-swapped-rank", _swap_block_ranks),
    ("block titles swapped", "R4-title", lambda c: _swap_lines(c, ("#### ",))),
    # rule 15: verdict words
    ("memory-bound for a compute-bound op", "R15-bound", lambda c: _bound_word(c, "compute", "memory-bound")),
    ("compute-bound for a memory-bound op", "R15-bound", lambda c: _bound_word(c, "memory", "compute-bound")),
    ("balanced for a compute-bound op", "R15-bound", lambda c: _bound_word(c, "compute", "balanced")),
    ("a bound claimed for a heuristic finding", "R15-bound", _bound_claim_heuristic),
    ("below the band for an in-band op", "R15-band", lambda c: _band_word(c, "within", "below the expected band")),
    ("in band for a below-band op", "R15-band", lambda c: _band_word(c, "below", "within the expected band")),
    ("above the band for a below-band op", "R15-band", lambda c: _band_word(c, "below", "above the band")),
    ("a band verdict where there is no band", "R15-band", _no_band_verdict),
    ("not a bottleneck for a below-band op", "R15-bottleneck", _not_bottleneck),
    ("a wrong GPU", "R15-gpu", _wrong_gpu),
    ("a lower-bound efficiency stated as measured", "R15-work-bound", _bounded_plain),
    ("a lower-bound efficiency stated as at most", "R15-work-bound", _bounded_wrong),
    # rule 16: scope
    ("trace 2 is faster, in a standalone file", "R16-scope", lambda c: _standalone(c, "Trace 2 is faster.")),
    ("a speedup, in a standalone file", "R16-scope", lambda c: _standalone(c, "The speedup is worth it.")),
    ("a regression, in a standalone file", "R16-scope", lambda c: _standalone(c, "This is a regression.")),
    ("compared with the previous run, standalone", "R16-scope",
     lambda c: _standalone(c, "It is slower than the previous run.")),
    ("a comparative P-item that compares nothing", "R16-scope", _comparative_silent),
    # rule 17: language
    ("fuse the SDPA kernel", "R17-fuse-sdpa", lambda c: _action(c, "Fuse the SDPA kernel.")),
    ("fusing the attention kernels", "R17-fuse-sdpa", lambda c: _action(c, "Try fusing the attention kernels.")),
    ("the attention kernel should be fused", "R17-fuse-sdpa",
     lambda c: _action(c, "The attention kernel should be fused.")),
    ("kernel fusion of the SDPA op", "R17-fuse-sdpa", lambda c: _action(c, "Apply kernel fusion to the SDPA op.")),
    ("fuse the backticked op", "R17-fuse-sdpa", lambda c: _action(c, f"Fuse the `{c.op(1).get('name')}` kernel.")),
    ("CUDA kernels", "R17-vendor", lambda c: _action(c, "Profile the CUDA kernels of this op.")),
    ("cuDNN named for a non-cuDNN op", "R17-vendor",
     lambda c: _action(c, "Try cuDNN for this shape.") if "cudnn" not in str(c.op(1)).lower() else None),
    ("Triton", "R17-vendor",
     lambda c: _action(c, "Write a Triton kernel for this shape.") if "triton" not in str(c.findings[0].library).lower()
     else None),  # a Triton library the tools name may be named
    ("CUTLASS", "R17-vendor", lambda c: _action(c, "Tune the CUTLASS tiles.")),
    ("ROCm / CK", "R17-vendor", lambda c: _action(c, "Update ROCm and its CK kernels.")),
    # rule 18 and rule 9: citation, Impact line
    ("citation removed", "R18-citation", lambda c: _citation(c, "")),
    ("citation changed", "R18-citation", lambda c: _citation(c, "(source: `operations[].time_ms`)")),
    ("Impact line rewritten with ms", "R9-impact-text", lambda c: _impact_line(c, " ms")),
    ("Impact line with a comment", "R9-impact-text",
     lambda c: _impact_line(c, " (% of E2E), about half a millisecond")),
]


def _pad_table(text: str) -> str:
    return "\n".join(
        "|  " + "  |  ".join(c.strip() for c in line.strip().strip("|").split(" | ")) + "  |"
        if line.startswith("| ") else line
        for line in text.split("\n")
    )  # fmt: skip


def _gpu_token(case: Case) -> str | None:
    """The GPU model the metrics JSON names (H100, MI300X, ...)."""
    name = _get(case.metrics, "sdpa_analyzer", "gpu", "name") or ""
    found = re.search(r"\b(?:[A-Z]{1,2}\d{3}[A-Z]?|MI\d{3}[A-Z]?)\b", name)
    return found.group() if found else None


def _wrap(case: Case, prefix: str) -> str | None:
    i = case.line(prefix, 1)
    if i is None:
        return None
    lines = case.lines
    words = lines[i].split(" ")
    half = len(words) // 2
    lines[i : i + 1] = [" ".join(words[:half]), " ".join(words[half:])]
    return "\n".join(lines)


def _extra_table(case: Case) -> str | None:
    i = case.line("**Reasoning for Slowdown:**", 1)
    if i is None:
        return None
    lines = case.lines
    lines[i:i] = ["| Reference | Source |", "|---|---|", "| — | — |", ""]
    return "\n".join(lines)


HARMLESS: list[tuple[str, Callable[[Case], str | None]]] = [
    ("trailing spaces on every line", lambda c: "\n".join(line + "  " if line else line for line in c.lines)),
    ("double spaces inside sentences", lambda c: c.edit("**Insight**", 1, " takes ", "  takes  ")),
    ("padded table cells", lambda c: _pad_table(c.text)),
    ("aligned separator row", lambda c: c.text.replace("|---|---|---|", "|:---|:---:|---:|")),
    ("CRLF line endings", lambda c: c.text.replace("\n", "\r\n")),
    ("the Insight wrapped over two lines", lambda c: _wrap(c, "**Insight**")),
    ("the Identification wrapped over two lines", lambda c: _wrap(c, "**Identification:**")),
    ("a blank line between Insight and Action", lambda c: c.edit("**Insight**", 1, "", "") and "\n".join(
        [line + ("\n" if line.startswith("**Insight**") else "") for line in c.lines])),
    ("reordered clauses", lambda c: c.edit("**Reasoning for Slowdown:**", 1, "; the trace does not record",
                                           ". Note that the trace does not record")),
    ("synonyms", lambda c: c.edit("**Insight**", 1, " takes ", " spends ") and (c.edit("**Insight**", 1, " takes ",
                                   " spends ") or "").replace("**Action**: Profile", "**Action**: Examine")),
    ("an added sentence with the category's time", lambda c: c.append(
        "**Identification:**", 1, f"The category takes {number_text(c.metrics.get('total_time_ms'))} ms in all.")),
    ("a backticked argument shape", lambda c: c.append(
        "**Reasoning for Slowdown:**", 1, f"Its arguments are `{str(c.op(1).get('args')).split('<br>')[0]}`.")),
    ("a negated wrong bound word",
     lambda c: c.edit("**Insight**", 1, "compute-bound", "compute-bound, not memory-bound")),
    ("the right GPU named",
     lambda c: c.append("**Action**", 1, f"The {_gpu_token(c)} runs it.") if _gpu_token(c) else None),
    ("a reference to another P-item", lambda c: c.append("**Action**", 1, "P1 comes first.")),
    ("a contract threshold quoted", lambda c: c.append(
        "**Reasoning for Slowdown:**", 1, "The KV-cache write rule starts at about 10 % of the op.")),
    ("another table after the Data table", _extra_table),
    ("emphasis on a word", lambda c: c.edit("**Resolution:**", 1, "keeps", "*keeps*")),
]


def _validate(text: str, case: Case) -> list[Any]:
    return validate_findings_text(text, case.metrics).errors


def test_a_correct_fill_passes_on_the_first_try(cases: list[Case]) -> None:
    assert len(cases) >= 3
    for case in cases:
        report = validate_findings_text(case.text, case.metrics)
        assert report.passed, (case.name, [str(e) for e in report.errors])
        assert report.warnings == [], (case.name, [str(w) for w in report.warnings])


def test_the_mistakes_are_caught_by_their_rule(cases: list[Case]) -> None:
    table: dict[str, list[str]] = {}
    rules: dict[str, str] = {}
    caught = applied = 0
    for kind, rule, mistake in MISTAKES:
        rules[kind] = rule
        for case in cases:
            text = mistake(case)
            if text is None or text == case.text:
                continue
            found = {e.rule for e in _validate(text, case)}
            applied += 1
            # a number typed against our metrics JSON is R13-bare; against an orchestrator's (no block of ours, no
            # references listed to its writer) it is checked as a number: any R13 rule
            hit = rule in found or (rule == "R13-bare" and any(r.startswith("R13-") for r in found))
            caught += hit
            table.setdefault(kind, []).append("✓" if hit else f"✗ {case.name}: {sorted(found) or 'PASS'}")
    print(f"\n{'kind of mistake':<48} {'rule':<20} caught")
    for kind, marks in table.items():
        misses = [m for m in marks if m != "✓"]
        print(f"{kind:<48} {rules[kind]:<20} {len(marks) - len(misses)}/{len(marks)}")
        for miss in misses:
            print(f"    {miss}")
    print(f"caught {caught} of {applied} ({caught / applied:.1%}) in {len(table)} kinds over {len(cases)} folders")
    assert len(table) >= 40, sorted(set(rules) - set(table))
    assert caught >= CATCH_RATE * applied


def test_harmless_edits_raise_no_error(cases: list[Case]) -> None:
    alarms = []
    edits = 0
    for kind, edit in HARMLESS:
        for case in cases:
            text = edit(case)
            if not text or text == case.text:
                continue
            edits += 1
            errors = _validate(text, case)
            if errors:
                alarms.append((kind, case.name, [str(e) for e in errors]))
    print(f"\n{edits} harmless edits of {len(HARMLESS)} kinds, {len(alarms)} false alarm(s)")
    assert len({kind for kind, _ in HARMLESS}) >= 15
    assert alarms == []



# ---- the fixes, applied literally --------------------------------------------------------------------------
_SWAP_RANGES = re.compile(r"^Swap lines ([\d, -]+?) with lines ([\d, -]+?);")
_SWAP_TWO = re.compile(r"^Swap lines (\d+) and (\d+)\.")
_WRITE_AT = re.compile(r"`([^`]+)` at line (\d+)")
_INSTEAD = re.compile(r"^Write `([^`]+)` instead of `([^`]+)`")


def _ranges(text: str) -> list[list[int]]:
    out = []
    for part in text.split(", "):
        a, _, b = part.partition("-")
        out.append(list(range(int(a) - 1, int(b or a))))
    return out


def apply_fixes(text: str, errors: list[Any]) -> str | None:
    """Every error's fix done as it says (None when a fix is not one of the mechanical forms below)."""
    lines = text.split("\n")
    new = list(lines)
    for error in errors:
        fix = error.fix
        if error.edit is not None and error.line is not None:
            assert error.edit[0] != error.edit[1] and error.edit[0] in new[error.line - 1], (str(error), error.edit)
            new[error.line - 1] = new[error.line - 1].replace(error.edit[0], error.edit[1], 1)
        elif match := _SWAP_RANGES.match(fix):
            mine, theirs = _ranges(match.group(1)), _ranges(match.group(2))
            for a, b in zip(mine, theirs, strict=True):
                new[a[0] : a[-1] + 1], new[b[0] : b[-1] + 1] = lines[b[0] : b[-1] + 1], lines[a[0] : a[-1] + 1]
        elif match := _SWAP_TWO.match(fix):
            a, b = int(match.group(1)) - 1, int(match.group(2)) - 1
            new[a], new[b] = lines[b], lines[a]
        elif fix.startswith("Write `") and " at line " in fix:
            for text_, line in _WRITE_AT.findall(fix):
                new[int(line) - 1] = text_
        elif (match := _INSTEAD.match(fix)) and error.line is not None:
            new[error.line - 1] = new[error.line - 1].replace(match.group(2), match.group(1), 1)
        else:
            return None
    return "\n".join(new)


FIXABLE = {
    "P1/P2 Insight and Action swapped", "P1/P2 Insight swapped", "Detailed Analysis prose of ranks 1/2 swapped",
    "P1/P2 heading lines swapped", "P1/P2 rank numbers swapped", "candidate rank= attributes swapped",
    "block titles swapped", "number rounded to one decimal", "ms written as µs", "memory-bound for a compute-bound op",
    "in band for a below-band op", "CUDA kernels", "Impact line rewritten with ms",
}  # fmt: skip


def _untraceable_action(line: str) -> bool:
    """An Action line with no number and no backticked name: nothing ties it to one P-item, so a swap of it cannot
    be seen (and its fix moves only the lines that quote the other item)."""
    return line.startswith("**Action**") and "`" not in line and not re.search(r"\d", line)


def test_one_error_per_swap_and_its_fix_applied_literally_gives_a_valid_file(cases: list[Case]) -> None:
    applied = 0
    for kind, rule, mistake in MISTAKES:
        if kind not in FIXABLE:
            continue
        for case in cases:
            text = mistake(case)
            if text is None or text == case.text:
                continue
            errors = _validate(text, case)
            lines = text.split("\n")
            if "swapped" in kind:  # (an Action that quotes nothing is judged with the prose around it: see below)
                said = [e.rule for e in errors
                        if not (e.rule == "R17-advice" and _untraceable_action(lines[e.line - 1]))]
                assert said == [rule], (kind, case.name, [str(e) for e in errors])
                errors = [e for e in errors if e.rule != "R17-advice"]
            fixed = apply_fixes(text, errors)
            assert fixed is not None, (kind, case.name, [e.fix for e in errors])
            after = _validate(fixed, case)
            # an Action that quotes nothing stays where it was (nothing ties it to one P-item); when its advice is
            # gated on the other P-item's facts, the re-validation says so: the one error a swap fix leaves
            lines = fixed.split("\n")
            after = [e for e in after if not (e.rule == "R17-advice" and _untraceable_action(lines[e.line - 1]))]
            assert after == [], (kind, case.name, [str(e) for e in errors], [str(e) for e in after])
            if "swapped" in kind:  # a swap undone exactly, but for Action lines that quote nothing of either item
                left = [(a, b) for a, b in zip(fixed.splitlines(), case.text.splitlines(), strict=True) if a != b]
                assert all(_untraceable_action(a) and _untraceable_action(b) for a, b in left), (kind, case.name, left)
            applied += 1
    assert applied >= 20


def test_an_invented_p_item_in_an_empty_file_gets_one_consistent_fix(cases: list[Case]) -> None:
    metrics = dict(cases[0].metrics, category_findings=[])
    empty = fill_findings(render_findings_template(metrics, "sdpa_fwd"), metrics)
    assert validate_findings_text(empty, metrics).passed
    invented = empty.replace(
        "## Detailed Analysis",
        "### P1: Slow attention\n**Insight**: It is slow.\n**Action**: Profile it.\n\n## Detailed Analysis",
    )
    errors = validate_findings_text(invented, metrics).errors
    assert errors and {e.rule for e in errors} == {"R11-not-empty"}, [str(e) for e in errors]
    assert all("Leave" in e.fix for e in errors)


def test_a_ranks_summary_is_quotable_when_given(cases: list[Case]) -> None:
    case = cases[0]
    text = case.append("**Identification:**", 1, "This rank takes 7.4321 ms against a median of 6.1234 ms.")
    assert text is not None
    assert {e.rule for e in validate_findings_text(text, case.metrics).errors} == {"R13-bare"}
    summary = {"findings": [{"rank": 1, "time_ms": 7.4321, "median_ms": 6.1234}]}  # load_rank_summary's numbers
    assert validate_findings_text(text, case.metrics, quotable=summary).passed
