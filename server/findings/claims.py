"""The claims of a P-item's prose against the tools' facts, with server.vocab's closed vocabularies (rules 15, 17):

* the workload of a serving step (`decode-heavy` for a prefill-heavy step): classification.workload_profile;
* the direction of a comparison (`trace 2 is slower` when it is faster): operations[].time_ms / t2_time_ms;
* a bottleneck claimed for an op within its expected band;
* advice the seed gates on a fact (KV block size only over the KV-write rule, chunked prefill only prefill-heavy,
  decode batching only decode-heavy, a fused kernel only for an unfused implementation, tile tuning only for a
  fused kernel);
* what a trace cannot show (cache hit rates, occupancy, bank conflicts, register spills...), claimed rather than
  said to be invisible or to be measured;
* a GPU form factor (`PCIe` on an SXM part) other than the resolved GPU's.

A phrase preceded by a negation states nothing. Each rule checks one sentence at a time.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from sdpa_analyzer.server.findings.document import Collector
from sdpa_analyzer.server.findings.metrics_view import FindingView, MetricsView, finding_operation_indices
from sdpa_analyzer.server.findings.prose import Run
from sdpa_analyzer.server.findings.spec import NEGATIONS, as_float
from sdpa_analyzer.server.vocab import (
    BOTTLENECK_CLAIM,
    DIRECTION_WORDS,
    FORM_FACTORS,
    GATED_ADVICE,
    UNOBSERVABLE,
    UNOBSERVABLE_OK,
    WORKLOAD_PHRASES,
)

_I = re.IGNORECASE
_NEGATION = re.compile(NEGATIONS, _I)
_WORKLOAD = [(kind, re.compile(p, _I)) for kind, phrases in WORKLOAD_PHRASES.items() for p in phrases]
_DIRECTION = [(kind, re.compile(p, _I)) for kind, p in DIRECTION_WORDS.items()]
_BOTTLENECK = re.compile(BOTTLENECK_CLAIM, _I)
_GATED = [(kind, re.compile(p, _I), gate) for kind, (phrases, gate) in GATED_ADVICE.items() for p in phrases]
_UNOBSERVABLE = re.compile("|".join(UNOBSERVABLE), _I)
_UNOBSERVABLE_OK = re.compile("|".join(UNOBSERVABLE_OK), _I)
_FORM = re.compile(FORM_FACTORS, _I)
_SENTENCE = re.compile(r"(?:[^.;!?]|[.;!?](?=\S))+(?:[.;!?]+|$)")  # a decimal point ends no sentence
_LABEL = re.compile(r"\b(Insight|Action|Identification|Reasoning for Slowdown|Resolution)\**\s*:")
_TRACE = re.compile(r"\b(?:trace[ -]?([12])|T([12]))\b", _I)
_HEAVY = {"prefill_heavy", "decode_heavy", "mixed"}


@dataclass
class Claims:
    """The facts of one P-item its words are checked against."""

    rank: int
    workloads: set[str] = field(default_factory=set)  # prefill_heavy / decode_heavy / mixed (serving steps)
    directions: set[str] = field(default_factory=set)  # slower / faster: trace 2 against trace 1
    in_band: bool = False  # every member within (or above) its band
    kinds: set[str] = field(default_factory=set)  # attention_type of the members
    kv_over: bool = False  # KV-cache writes over the rule (the finding's or the category's)


def claims_for(finding: FindingView, view: MetricsView, category_facts: dict[str, Any]) -> Claims:
    claims = Claims(finding.rank)
    statuses = set()
    for index in finding_operation_indices(finding, view.operations):
        op = view.operations[index]
        roofline = op.get("roofline") if isinstance(op.get("roofline"), dict) else {}
        cls = op.get("classification") if isinstance(op.get("classification"), dict) else {}
        profile = cls.get("workload_profile") if isinstance(cls.get("workload_profile"), dict) else {}
        if profile.get("workload_type") in _HEAVY:
            claims.workloads.add(str(profile["workload_type"]))
        if cls.get("attention_type"):
            claims.kinds.add(str(cls["attention_type"]))
        statuses.add(roofline.get("band_status"))
        t1, t2 = as_float(op.get("time_ms")), as_float(op.get("t2_time_ms"))
        if t1 is not None and t2 is not None and t1 != t2:
            claims.directions.add("slower" if t2 > t1 else "faster")
    claims.in_band = bool(statuses) and statuses <= {"within", "above"}
    for facts in (finding.raw.get("facts"), category_facts):
        kv = facts.get("kv_cache_write") if isinstance(facts, dict) else None
        claims.kv_over |= bool(isinstance(kv, dict) and kv.get("over_threshold"))
    return claims


def _allowed(kind: str, claims: Claims) -> bool:
    if kind == "kv_block_size":
        return claims.kv_over
    if kind == "chunked_prefill":
        return "prefill_heavy" in claims.workloads
    if kind == "decode_batching":
        return "decode_heavy" in claims.workloads
    if kind == "migrate_fused":
        return "unfused" in claims.kinds
    if kind == "kernel_tuning":
        return not claims.kinds or claims.kinds != {"unfused"}
    return True


def _negated(text: str, start: int) -> bool:
    return _NEGATION.search(text[max(0, start - 30) : start]) is not None


def check_claims(run: Run, claims: Claims, out: Collector) -> None:
    """The claims of one run of P-item `claims.rank` (see the module docstring)."""
    who = f"P{claims.rank}"
    labels = [(m.start(), m.group(1)) for m in _LABEL.finditer(run.text)]
    for sentence in _SENTENCE.finditer(run.text):
        text, base = sentence.group(), sentence.start()
        label = next((name for at, name in reversed(labels) if at <= base + len(text) - 1), "")
        advice = label in ("Action", "Resolution")  # where the prose advises

        def line(offset: int, base: int = base) -> int:
            return run.line_at(base + offset)

        for kind, pattern in _WORKLOAD:
            for match in pattern.finditer(text):
                if _negated(text, match.start()) or kind in claims.workloads:
                    continue
                have = ", ".join(sorted(claims.workloads)) or "no serving-step profile"
                out.error("R15-workload", line(match.start()),
                          f"`{match.group()}`, but {who}'s step is {have} (classification.workload_profile).",
                          f"Delete `{match.group()}`; write the workload by reference (`{{{{{who}.op1.workload}}}}`).",
                          edit=(match.group(), ""))  # fmt: skip
        _check_direction(text, line, claims, who, out)
        for match in _BOTTLENECK.finditer(text):
            if claims.in_band and not _negated(text, match.start()):
                out.error("R15-bottleneck", line(match.start()),
                          f"`{match.group()}`, but {who}'s ops are within their expected band: not a bottleneck.",
                          f"Delete `{match.group()}`: an op within its band is as good as the best published kernels.",
                          edit=(match.group(), ""))  # fmt: skip
        for kind, pattern, gate in _GATED if advice else ():
            for match in pattern.finditer(text):
                if _negated(text, match.start()) or _allowed(kind, claims):
                    continue
                out.error("R17-advice", line(match.start()),
                          f"`{match.group()}`: that advice holds only for {gate}, and {who} is not one.",
                          "Delete that advice; follow the levers the template lists for this P-item.")  # fmt: skip
        for match in _UNOBSERVABLE.finditer(text):
            if _UNOBSERVABLE_OK.search(text):
                continue
            out.error("R17-unobservable", line(match.start()),
                      f"`{match.group().strip()}` is not visible in a trace: the prose cannot claim it.",
                      f"Say that {match.group().strip()} is not visible in trace data (a kernel profile would show "
                      "it), or delete the claim.")  # fmt: skip
            break


def _check_direction(text: str, line: Any, claims: Claims, who: str, out: Collector) -> None:
    if len(claims.directions) != 1:
        return
    subject = _TRACE.search(text)
    if subject is None:
        return
    which = subject.group(1) or subject.group(2)
    truth = next(iter(claims.directions))
    for kind, pattern in _DIRECTION:
        for match in pattern.finditer(text, subject.end()):
            if _negated(text, match.start()):
                continue
            said = kind if which == "2" else ("faster" if kind == "slower" else "slower")
            if said != truth:
                out.error("R15-direction", line(match.start()),
                          f"`{match.group()}` says trace 2 is {said} than trace 1; for {who} it is {truth}.",
                          f"Write the direction by reference (`{{{{{who}.op1.direction}}}}`) instead of "
                          f"`{match.group()}`.")  # fmt: skip
            return


def check_form_factor(run: Run, gpu_name: str, out: Collector) -> None:
    """`H100 PCIe` on an SXM part: a form factor other than the resolved GPU's."""
    own = {m.group().upper() for m in _FORM.finditer(gpu_name)}
    for match in _FORM.finditer(run.text):
        if match.group().upper() not in own:
            out.error("R15-gpu", run.line_at(match.start()),
                      f"`{match.group()}` is not this GPU's form factor: the metrics JSON's GPU is {gpu_name}.",
                      f"Delete `{match.group()}`; write the GPU by reference (`{{{{cat.gpu}}}}`).",
                      edit=(match.group(), ""))  # fmt: skip


__all__ = ["Claims", "check_claims", "check_form_factor", "claims_for"]
