"""The words of the prose against the tools' verdicts: bound, band, bottleneck, GPU and bounded work (rule 15),
scope (rule 16), forbidden advice and vendor terms (rule 17), the Identification's citation (rule 18).

The vocabularies live in spec.py; the verdicts are the members' `efficiency.bound_type`, `roofline.regime`,
`roofline.band_status` and `roofline.work_bound`, the GPU is `sdpa_analyzer.gpu` (and the GPU names the metrics
JSON itself writes). A phrase preceded by a negation (`not memory-bound`, `rather than below the band`) states
nothing and is not checked.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from sdpa_analyzer.perf_models.hardware import list_gpus
from sdpa_analyzer.server.findings.document import Collector
from sdpa_analyzer.server.findings.grounding import Grounding, Number, compatible
from sdpa_analyzer.server.findings.metrics_view import FindingView, MetricsView, finding_operation_indices
from sdpa_analyzer.server.findings.prose import Run
from sdpa_analyzer.server.findings.spec import (
    BAND_PHRASES,
    BOUND_QUALIFIERS,
    COMPARISON_PHRASES,
    COMPARISON_WORDS,
    FUSE_SDPA,
    FUSE_SDPA_FIX,
    NEGATIONS,
    NOT_A_BOTTLENECK,
    number_text,
)
from sdpa_analyzer.server.vocab import BOUND_PHRASES, CASE_SENSITIVE_VENDOR, VENDOR_FAMILIES

_BOUND = [(said, re.compile(p, re.IGNORECASE)) for said, phrases in BOUND_PHRASES.items() for p in phrases]
_BANDS = [(status, re.compile(p, re.IGNORECASE)) for status, phrases in BAND_PHRASES.items() for p in phrases]
_NOT_A_BOTTLENECK = re.compile(NOT_A_BOTTLENECK, re.IGNORECASE)
_NEGATION = re.compile(NEGATIONS, re.IGNORECASE)
_COMPARISON = re.compile("|".join(COMPARISON_PHRASES), re.IGNORECASE)
_COMPARES = re.compile("|".join(COMPARISON_WORDS), re.IGNORECASE)
_FUSE = re.compile("|".join(FUSE_SDPA), re.IGNORECASE)
_VENDOR = [
    (re.compile(rf"(?<![\w-])(?:{term})(?![\w-])", 0 if term in CASE_SENSITIVE_VENDOR else re.IGNORECASE), neutral)
    for family in VENDOR_FAMILIES.values() for term, neutral in family.items()
]
_GPU_TOKEN = re.compile(r"\b[A-Z]{1,3}\d{2,4}[A-Z]{0,2}\b")
_WORD = re.compile(r"[\w-]+")
_EFFICIENCY_KEYS = frozenset({
    "efficiency_percent", "efficiency_pct", "compute_pct", "memory_pct", "efficiency_datasheet_pct",
    "compute_datasheet_pct", "memory_datasheet_pct", "band_value", "tflops_achieved", "tb_s_achieved",
})  # fmt: skip
_OP_PATH = re.compile(r"^operations\[(\d+)\]")
_BAND_WORDS = {
    "within": "within the expected band",
    "below": "below the best published kernels for this shape",
    "above": "above the band of the best published kernels",
    "none": "no reference band",
}


def _gpu_tokens() -> frozenset[str]:
    tokens = set()
    for spec in list_gpus():
        for text in (spec.name, *spec.aliases, *spec.device_names):
            tokens.update(t.upper() for t in _GPU_TOKEN.findall(text))
    return frozenset(tokens)


_GPU_NAMES = _gpu_tokens()
# the known parts' model tokens, and any token of a GPU model's shape (a part not in perf_models' tables yet)
_GPU_SHAPE = r"[ABHV]\d{3}[A-Z]?|L\d{2}S?|MI\d{3}[A-Z]?|RTX ?\d{4}\w?|G[BH]\d{3}"
_GPU_IN_PROSE = re.compile(r"\b(?:" + "|".join(sorted(map(re.escape, _GPU_NAMES), key=len, reverse=True)) + "|"
                           + _GPU_SHAPE + r")\b", re.IGNORECASE)  # fmt: skip


@dataclass
class Facts:
    """What the tools say about one P-item's members, for its words."""

    rank: int
    heuristic: bool
    bounds: set[str] = field(default_factory=set)  # compute / memory / balanced
    bound: str | None = None  # the finding's bound_type (compute / memory), the word a fix writes
    bands: set[str] = field(default_factory=set)  # within / below / above / none
    band_text: str = ""  # e.g. `op` 40.0–55.0 % (below)
    bounded: dict[int, str] = field(default_factory=dict)  # op index -> lower / upper (work known only as a bound)
    finding_bound: str | None = None  # lower / upper when every member op's work is that bound
    names: str = ""  # words the tools use for this P-item (library, implementation, GPU): vendor terms allowed
    difference: Decimal | None = None  # the first member's operations[].difference_ms (comparative)


def facts_for(finding: FindingView, view: MetricsView, gpu_words: str) -> Facts:
    facts = Facts(finding.rank, finding.heuristic)
    words = [str(finding.library or "")]
    bands = []
    kinds = set()
    for index in finding_operation_indices(finding, view.operations):
        op = view.operations[index]
        efficiency = op.get("efficiency") if isinstance(op.get("efficiency"), dict) else {}
        roofline = op.get("roofline") if isinstance(op.get("roofline"), dict) else {}
        classification = op.get("classification") if isinstance(op.get("classification"), dict) else {}
        for value in (efficiency.get("bound_type"), roofline.get("regime")):
            if value in ("compute", "memory", "balanced"):
                facts.bounds.add(str(value))
        work = roofline.get("work_bound")
        status = roofline.get("band_status") if work not in ("lower", "upper", "unknown") else None
        facts.bands.add(str(status) if status in ("within", "below", "above") else "none")
        if status in ("within", "below", "above"):
            bands.append(
                f"`{op.get('name')}` {number_text(roofline.get('band_low'))}–{number_text(roofline.get('band_high'))} "
                f"% ({status})"
            )
        if work in ("lower", "upper"):
            facts.bounded[index] = str(work)
        kinds.add(work if work in ("lower", "upper") else None)
        words += [str(op.get("library") or ""), str(classification.get("attention_type") or "")]
        if facts.difference is None and op.get("difference_ms") is not None:
            facts.difference = Decimal(number_text(op.get("difference_ms")))
    if finding.raw.get("bound_type") in ("compute", "memory"):
        facts.bound = str(finding.raw["bound_type"])
        facts.bounds.add(facts.bound)
    facts.finding_bound = next(iter(kinds)) if len(kinds) == 1 else None
    facts.band_text = "; ".join(bands[:2])
    facts.names = " ".join([*words, gpu_words]).lower()
    return facts


def gpu_words(metrics: dict[str, Any]) -> str:
    """Every string of the metrics JSON's `sdpa_analyzer` block (GPU name and key, peak sources, notes)."""
    out: list[str] = []
    stack = [metrics.get("sdpa_analyzer")]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
        elif isinstance(node, str):
            out.append(node)
    return " ".join(out)


def _negated(text: str, start: int) -> bool:
    return _NEGATION.search(text[max(0, start - 30) : start]) is not None


def check_verdicts(run: Run, facts: Facts, grounding: Grounding, out: Collector) -> None:
    """Rule 15 for one run of P-item `facts.rank`."""
    who = f"P{facts.rank}"
    for said, match in sorted(((said, m) for said, p in _BOUND for m in p.finditer(run.text)),
                              key=lambda x: x[1].start()):  # fmt: skip
        if _negated(run.text, match.start()):
            continue
        if facts.heuristic:
            out.error(
                "R15-bound",
                run.line_at(match.start()),
                f"{who} is a heuristic finding (no performance model) but the prose calls it `{match.group()}`.",
                f"Delete `{match.group()}`: a heuristic finding makes no claim about its bound.",
            )
        elif facts.bounds and said not in facts.bounds:
            want = " / ".join(f"{b}-bound" if b != "balanced" else "balanced" for b in sorted(facts.bounds))
            first = facts.bound or sorted(facts.bounds)[0]
            out.error(
                "R15-bound",
                run.line_at(match.start()),
                f"`{match.group()}`, but {who}'s members are {want} (efficiency.bound_type, roofline.regime).",
                f"Write `{first if first == 'balanced' else first + '-bound'}` instead of `{match.group()}`.",
            )
    for status, pattern in _BANDS:
        for match in pattern.finditer(run.text):
            if _negated(run.text, match.start()) or status in facts.bands:
                continue
            have = sorted(facts.bands) or ["none"]
            out.error(
                "R15-band",
                run.line_at(match.start()),
                f"`{match.group()}`, but {who}'s roofline.band_status is {', '.join(have)}"
                + (f" ({facts.band_text})." if facts.band_text else "."),
                f"Write `{_BAND_WORDS[have[0]]}` instead of `{match.group()}`.",
            )
    for match in _NOT_A_BOTTLENECK.finditer(run.text):
        if facts.bands and facts.bands <= {"within", "above"}:
            continue
        out.error(
            "R15-bottleneck",
            run.line_at(match.start()),
            f"`{match.group()}`, but {who} is not within its expected band ({', '.join(sorted(facts.bands))}).",
            f"Delete `{match.group()}`: only an op within its expected band is not a bottleneck.",
        )
    if facts.bounded or facts.finding_bound:
        _check_bounded(run, facts, grounding, out)


def _bound_kind(number: Number, facts: Facts, grounding: Grounding) -> str | None:
    """lower / upper when every source of the number is an efficiency figure of work known only as a bound."""
    sources = [
        s for s in grounding.by_rank[facts.rank].numbers.sources(number.value)
        if compatible(number.unit, number.e2e, s.unit)
    ]  # fmt: skip
    kinds = set()
    for source in sources:
        key = source.path.split(" ", 1)[0].rsplit(".", 1)[-1]
        op = _OP_PATH.match(source.path)
        if key not in _EFFICIENCY_KEYS:
            return None
        kinds.add(facts.bounded.get(int(op.group(1))) if op else facts.finding_bound)
    return next(iter(kinds)) if len(kinds) == 1 and None not in kinds else None


def _check_bounded(run: Run, facts: Facts, grounding: Grounding, out: Collector) -> None:
    for number in run.numbers:
        kind = _bound_kind(number, facts, grounding)
        written = run.literal(number)
        if kind is None:
            continue
        before = run.text[max(0, number.start - 24) : number.start].lower()
        other = "upper" if kind == "lower" else "lower"
        if any(q in before for q in BOUND_QUALIFIERS[kind]) and not any(q in before for q in BOUND_QUALIFIERS[other]):
            continue
        qualifier = BOUND_QUALIFIERS[kind][0]
        out.error(
            "R15-work-bound",
            run.line_at(number.start),
            f"`{written}` is a bound: the work of P{facts.rank}'s op is known only as a "
            f"{kind} bound (roofline.work_bound), so its efficiency is {qualifier} that.",
            f"Write `{qualifier} {written}` (and no `{BOUND_QUALIFIERS[other][0]}`) for `{written}`.",
        )


def check_gpu(run: Run, allowed_upper: str, gpu_name: str, out: Collector) -> None:
    """Rule 15: a GPU model named in prose is one the metrics JSON names (`allowed_upper`: its strings, upper case)."""
    for match in _GPU_IN_PROSE.finditer(run.text):
        token = match.group().upper()
        if re.search(rf"\b{re.escape(token)}", allowed_upper):
            continue
        out.error(
            "R15-gpu",
            run.line_at(match.start()),
            f"`{match.group()}` is not the GPU of this trace: the metrics JSON's GPU is {gpu_name or 'unknown'} "
            "(sdpa_analyzer.gpu).",
            f"Write the GPU as the metrics JSON names it ({gpu_name})" if gpu_name else "Delete the GPU name.",
        )


def check_language(run: Run, allowed: str, out: Collector) -> None:
    """Rule 17: no advice to fuse the SDPA kernel; vendor or product terms only where the tools name them."""
    for match in _FUSE.finditer(run.text):
        out.error(
            "R17-fuse-sdpa",
            run.line_at(match.start()),
            f"`{match.group()}`: the contract forbids recommending to fuse the SDPA kernel.",
            FUSE_SDPA_FIX,
        )
    words = set(_WORD.findall(allowed))
    for pattern, neutral in _VENDOR:
        for match in pattern.finditer(run.text):
            if match.group().lower() in words:
                continue
            out.error(
                "R17-vendor",
                run.line_at(match.start()),
                f"`{match.group()}` is a vendor or product term; the prose stays vendor-neutral.",
                f"Write `{neutral}` instead of `{match.group()}` (a real name only in backticks, as the data has it).",
            )


def check_scope_words(run: Run, scope: str, out: Collector) -> bool:
    """Rule 16 for one run: a standalone file compares no traces. Returns whether the run compares the traces."""
    if scope == "standalone":
        for match in _COMPARISON.finditer(run.text):
            out.error(
                "R16-scope",
                run.line_at(match.start()),
                f"`{match.group()}` compares traces, but this file is standalone (one trace).",
                f"Delete `{match.group()}` and the comparison: a standalone file describes one trace.",
            )
        return False
    return _COMPARES.search(run.text) is not None


def comparison_fix(facts: Facts) -> str:
    if facts.difference is None:
        return "Say in the Insight how trace 2 compares with trace 1 for these ops, with the Difference (ms)."
    word = "longer" if facts.difference > 0 else "less"
    return (
        f"Say in the Insight how trace 2 compares with trace 1, e.g. `trace 2 takes {abs(facts.difference)} ms "
        f"{word} than trace 1` (operations[].difference_ms)."
    )


def check_citation(run: Run, want: str | None, out: Collector) -> None:
    """Rule 18: the Identification keeps the `(source: …)` citation the template ended it with."""
    written = " ".join(run.raw.split())
    if want is not None and " ".join(want.split()) in written:
        return
    if want is None and "(source:" in written:
        return
    out.error(
        "R18-citation",
        run.start,
        "the Identification lacks its `(source: …)` citation" + (" as the template wrote it." if want else "."),
        f"End the Identification with {want}." if want else "End the Identification with `(source: <file> → <field>)`.",
    )
