"""Findings by construction, measured: a generated corpus of mistakes BY FAMILY applied to careful first fills (prose
that writes every quantity and verdict as a reference) on the real analysis folders and synthetic ones.

Each family has phrasings the vocabularies were written from (`seen`) and phrasings written afterwards, never used
to write them (`held_out`): both rates are printed, and the test asserts the catch rate over all of them, zero false
alarms on harmless edits, and that every fix given as a literal edit, applied as written, leaves a valid file (a
fix never equals its input; a deletion never makes a file untrue).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from typing import Any

from sdpa_analyzer.server.findings import render_findings_template, validate_findings_text
from tests.server.findings.test_prose_mistakes import Case, cases  # noqa: F401  (the fixture: eight folders)
from tests.support import ANALYSIS_FOLDERS, fill_findings

CATCH_RATE = 0.95
Mistake = Callable[[Case], str | None]


def _source(case: Case) -> Case:
    """The careful first fill as the LLM writes it: references, not numbers."""
    category = case.metrics.get("category") or "sdpa_fwd"
    return dataclasses.replace(case, text=fill_findings(render_findings_template(case.metrics, category), case.metrics))


def _get(obj: Any, *path: str) -> Any:
    for key in path:
        obj = obj.get(key) if isinstance(obj, dict) else None
    return obj


def _bound(case: Case) -> str | None:
    return _get(case.op(1), "efficiency", "bound_type") if not case.findings[0].heuristic else None


def _kind(case: Case) -> str:
    return str(_get(case.op(1), "classification", "attention_type"))


def _workload(case: Case) -> str | None:
    return _get(case.op(1), "classification", "workload_profile", "workload_type")


def _kv_over(case: Case) -> bool:
    return bool(_get(case.findings[0].raw, "facts", "kv_cache_write", "over_threshold")
                or _get(case.metrics, "sdpa_analyzer", "facts", "kv_cache_write", "over_threshold"))  # fmt: skip


def _say(sentence: str, where: str = "**Reasoning for Slowdown:**") -> Mistake:
    return lambda c: c.append(where, 1, sentence)


def _replace_ref(new: str, name: str = "P1.op1.time_ms") -> Mistake:
    return lambda c: c.edit("**Insight**", 1, "{{" + name + "}}", new)


def _typed_value(c: Case) -> str | None:
    """A true number, typed (the op's share of E2E given where its time stood): the wrong thing, right digits."""
    share = c.op(1).get("percent_of_total")
    return c.edit("**Insight**", 1, "{{P1.op1.time_ms}}", f"{share} %") if share is not None else None


def _opposite_bound(words: dict[str, str]) -> Mistake:
    def mistake(c: Case) -> str | None:
        bound = _bound(c)
        return c.append("**Insight**", 1, f"It is {words[bound]}.") if bound in words else None

    return mistake


def _when(test: Callable[[Case], bool], sentence: str, where: str = "**Action**") -> Mistake:
    return lambda c: c.append(where, 1, sentence) if test(c) else None


def _other_item_ref(c: Case) -> str | None:
    return c.append("**Insight**", 1, "It takes {{P2.op1.time_ms}}.") if len(c.findings) > 1 else None


def _reversed_direction(c: Case) -> str | None:
    t1, t2 = c.op(1).get("time_ms"), c.op(1).get("t2_time_ms")
    if c.scope != "comparative" or t1 is None or t2 is None or t1 == t2:
        return None
    return c.append("**Insight**", 1, f"Trace 2 is {'faster' if t2 > t1 else 'slower'} here.")


# family -> (seen phrasings, held-out phrasings); a phrasing that does not apply to a folder returns None there
FAMILIES: dict[str, tuple[list[Mistake], list[Mistake]]] = {
    "wrong number typed": ([_replace_ref("3.1416 ms"), _say("It costs 12.5 ms.")],
                           [_replace_ref("0.75 ms"), _say("It runs 4096 iterations.")]),
    "true number on the wrong thing": ([_typed_value], [_replace_ref("{{P1.op1.share}}")]),
    "hedged number": ([_say("It takes about 4 ms."), _say("Nearly 10 % of E2E goes here.")],
                      [_say("Roughly 2.7 ms of each step is spent here."), _say("It is ~3 ms per step.")]),
    "spelled number": ([_say("That is forty percent of the time."), _say("It takes twice the attention time."),
                        _say("It is a third of E2E.")],
                       [_say("It spends half of the step here."), _say("It is three times slower than it could be."),
                        _say("A two-fold gain is possible."), _say("It is an order of magnitude off.")]),
    "another P-item's reference": ([_other_item_ref], [lambda c: c.append(
        "**Identification:**", 1, "See {{P2.op1.efficiency}}.") if len(c.findings) > 1 else None]),
    "unknown reference": ([_replace_ref("{{P1.op1.time}}")], [_replace_ref("{{P1.kernel_time_ms}}")]),
    "unit typed after a reference": ([_replace_ref("{{P1.op1.time_ms}} ms")], [_replace_ref("{{P1.op1.time_ms}}ms")]),
    "wrong bound words": (
        [_opposite_bound({"memory": "compute-bound", "compute": "memory-bound"}),
         _opposite_bound({"memory": "limited by the compute roof", "compute": "bandwidth-limited"})],
        [_opposite_bound({"memory": "math-limited", "compute": "limited by HBM bandwidth"}),
         _opposite_bound({"memory": "at the tensor roof", "compute": "starved for memory bandwidth"})],
    ),
    "wrong band words": (
        [lambda c: c.append("**Insight**", 1, "It is within the expected band.")
         if _get(c.op(1), "roofline", "band_status") == "below" else None],
        [lambda c: c.append("**Insight**", 1, "It sits inside its reference band.")
         if _get(c.op(1), "roofline", "band_status") == "below" else None],
    ),
    "wrong workload words": (
        [_when(lambda c: _workload(c) != "decode_heavy", "This step is decode-heavy.", "**Insight**")],
        [_when(lambda c: _workload(c) != "prefill_heavy", "The step is mostly prefill.", "**Insight**"),
         _when(lambda c: _workload(c) != "decode_heavy", "The work is dominated by decode.", "**Insight**")],
    ),
    "reversed direction": ([_reversed_direction], []),
    "advice the seed rules out": (
        [_when(lambda c: not _kv_over(c), "Tune the KV-cache block size."),
         _when(lambda c: _workload(c) != "prefill_heavy", "Use chunked prefill."),
         _when(lambda c: _workload(c) != "decode_heavy", "Use a larger decode batch."),
         _when(lambda c: _kind(c) != "unfused", "Migrate to a flash attention kernel."),
         _say("Fuse the SDPA kernel.", "**Action**")],
        [_when(lambda c: not _kv_over(c), "Try a page size of 32 for the cache."),
         _when(lambda c: _workload(c) != "decode_heavy", "Turn on speculative decoding."),
         _when(lambda c: _kind(c) != "unfused", "Fold the attention into one fused kernel."),
         _when(lambda c: _kind(c) == "unfused", "Start with tile tuning of the kernel.")],
    ),
    "unobservable claims": (
        [_say("The L2 cache hit rate is low."), _say("Register spills slow it down."),
         _say("Bank conflicts stall the loads.")],
        [_say("Low achieved occupancy limits the kernel."), _say("Warp divergence hurts it."),
         _say("Its uncoalesced loads waste bandwidth."), _say("Its SM utilization is poor.")],
    ),
    "vendor, product, tool and generation names": (
        [_say("Profile it with Nsight Compute.", "**Action**"), _say("Use hipBLASLt.", "**Action**"),
         _say("Hopper runs it well."), _say("CUDA kernels dominate.")],
        [_say("Check it in rocprof.", "**Action**"), _say("A CDNA3 part behaves differently."),
         _say("Try TensorRT-LLM.", "**Action**"), _say("On Ampere it would differ."), _say("xFormers has one.")],
    ),
}

HARMLESS: list[tuple[str, Mistake]] = [
    ("an own reference added", _say("It runs {{P1.op1.count}} calls.")),
    ("a category reference", _say("The category takes {{cat.time_ms}} in all.")),
    ("the contract's constants", _say("The KV-cache write rule starts at 10 % of the op; short sequences (N < 1024) "
                                      "and block sizes 16, 32 or 64 are the seed's own numbers.")),
    ("identifiers", _say("P1 runs in half precision with double buffering, not fp8; head dim 128 is another shape.")),
    ("an unobservable property said to be invisible",
     _say("The L2 cache hit rate and register spills are not visible in trace data.")),
    ("a measurement asked for", _say("Profile the kernel's achieved occupancy.", "**Action**")),
    ("a negated gated advice", _say("Do not tune the KV-cache block size here.", "**Action**")),
    ("one fused kernel stated", _say("The op already runs as one kernel.")),
    ("a rephrased sentence", lambda c: c.edit("**Resolution:**", 1, "keeps", "lets")),
]


def _caught(text: str, case: Case) -> tuple[bool, list[Any]]:
    errors = validate_findings_text(text, case.metrics).errors
    return bool(errors), errors


def _apply_edits(text: str, errors: list[Any]) -> str | None:
    lines = text.split("\n")
    for error in errors:
        if error.edit is None or error.line is None:
            return None
        old, new = error.edit
        assert old != new, str(error)
        if old not in lines[error.line - 1]:
            return None
        lines[error.line - 1] = lines[error.line - 1].replace(old, new, 1)
    return "\n".join(lines)


def test_careful_first_fills_pass(cases: list[Case]) -> None:  # noqa: F811
    assert len(cases) >= (6 if ANALYSIS_FOLDERS.exists() else 4)  # without ../shared: the demo's and the corpus's
    for case in map(_source, cases):
        report = validate_findings_text(case.text, case.metrics)
        assert report.passed, (case.name, [str(e) for e in report.errors])
        assert report.references > 0 and "{{" not in (report.resolved_text or "{{")


def test_the_mistake_families_are_caught_and_their_edits_leave_a_valid_file(cases: list[Case]) -> None:  # noqa: F811
    sources = [_source(c) for c in cases]
    rates: dict[str, list[int]] = {"seen": [0, 0], "held_out": [0, 0]}
    misses: list[str] = []
    fixed = 0
    for family, (seen, held_out) in FAMILIES.items():
        for split, mistakes in (("seen", seen), ("held_out", held_out)):
            for mistake in mistakes:
                for case in sources:
                    text = mistake(case)
                    if text is None or text == case.text:
                        continue
                    hit, errors = _caught(text, case)
                    rates[split][0] += hit
                    rates[split][1] += 1
                    if not hit:
                        misses.append(f"{family} ({split}) on {case.name}: {text.count(chr(10))}")
                        continue
                    after = _apply_edits(text, errors)
                    if after is not None:
                        left = validate_findings_text(after, case.metrics).errors
                        assert left == [], (family, case.name, [str(e) for e in errors], [str(e) for e in left])
                        fixed += 1
    for split, (hit, total) in rates.items():
        print(f"{split}: caught {hit} of {total} ({hit / max(total, 1):.1%})")
    print(f"{fixed} mistakes fixed by their literal edits; misses: {misses}")
    caught = rates["seen"][0] + rates["held_out"][0]
    total = rates["seen"][1] + rates["held_out"][1]
    assert total >= 200 and rates["held_out"][1] >= 80
    assert caught >= CATCH_RATE * total, misses
    assert fixed >= 50


def test_harmless_edits_raise_no_error(cases: list[Case]) -> None:  # noqa: F811
    alarms = []
    edits = 0
    for kind, edit in HARMLESS:
        for case in map(_source, cases):
            text = edit(case)
            if not text or text == case.text:
                continue
            edits += 1
            errors = validate_findings_text(text, case.metrics).errors
            if errors:
                alarms.append((kind, case.name, [str(e) for e in errors]))
    print(f"{edits} harmless edits, {len(alarms)} false alarm(s)")
    assert edits >= (40 if ANALYSIS_FOLDERS.exists() else 30) and alarms == []


def test_a_reference_resolves_to_one_canonical_rendering(cases: list[Case]) -> None:  # noqa: F811
    """`{{P1.op1.time_ms}}` is written as the metrics JSON's digits and the kind's unit, checked by hand here."""
    case = _source(cases[0])
    text = case.edit("**Insight**", 1, "{{P1.op1.time_ms}}", "{{P1.op1.time_ms}} / {{P1.op1.share}}")
    assert text is not None
    resolved = validate_findings_text(text, case.metrics).resolved_text or ""
    want = f"{case.op(1)['time_ms']} ms / {case.op(1)['percent_of_total']} % of E2E"
    assert want in resolved, re.findall(r"\*\*Insight\*\*.*", resolved)[:1]
