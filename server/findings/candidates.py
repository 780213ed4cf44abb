"""Rules on the Detailed Analysis side: candidate blocks (3), sub-sections (4), detail_estimate markers
(8, 9). The Data table rules (5-7) live in tables.py."""

from __future__ import annotations

import re

from sdpa_analyzer.server.findings.document import Candidate, Collector, Document, Marker, inside_any
from sdpa_analyzer.server.findings.items import check_marker_numbers
from sdpa_analyzer.server.findings.metrics_view import FindingView
from sdpa_analyzer.server.findings.spec import NOT_QUANTIFIABLE, SUBSECTIONS

_LABELS = "|".join(re.escape(label) for label in SUBSECTIONS)
_LABEL_EXACT = re.compile(rf"\*\*({_LABELS}):\*\*")
# `\s*[*_]{0,2}\s*` spelled without its two adjacent `\s*` (quadratic backtracking on a line of spaces)
_LABEL_NEAR = re.compile(rf"^\s*(?:[*_]{{1,2}}\s*)?({_LABELS})\s*(?:(?:[*_]{{1,2}}\s*)?:|:\s*[*_]{{0,2}})", re.I)
# the number, then optionally its unit as the template writes it
_BULLET = re.compile(r"^\s*[-*]\s*(Low|High) end impact_score:\s*(\S+?)(?:\s+\(% of E2E\))?\s*$")


def check_candidate_set(doc: Document, expected: list[int] | None, tier: str, out: Collector) -> None:
    """Rule 3: one candidate per P-item (same ranks, same order), tier matching the file's tier."""
    for candidate in doc.candidates:
        if candidate.tier != tier:
            out.error(
                "R3-tier",
                candidate.index,
                f"candidate tier={candidate.tier} in a {tier}-tier findings file.",
                f"Write `tier={tier}` in the reasoning-candidate marker.",
            )
    if expected is None:
        expected = [item.rank for item in doc.p_items]
    if not expected:
        return  # empty findings: rule 11 reports any block
    found = [candidate.rank for candidate in doc.candidates]
    if len(found) != len(expected):
        anchor = doc.candidates[len(expected)].index if len(found) > len(expected) else doc.det
        out.error(
            "R3-candidates",
            anchor,
            f"{len(found)} reasoning-candidate block(s) for {len(expected)} P-item(s) "
            f"(ranks {', '.join(map(str, expected))}).",
            "Write exactly one `<!-- reasoning-candidate tier=.. rank=N -->` block per P-item, in the same order.",
        )
        return
    for candidate, rank in zip(doc.candidates, expected, strict=True):
        if candidate.rank != rank:
            out.error(
                "R3-rank",
                candidate.index,
                f"candidate rank={candidate.rank} where rank={rank} belongs.",
                f"Order the candidate blocks as the P-items: ranks {', '.join(map(str, expected))}.",
            )
            return


def sub_section_lines(doc: Document, candidate: Candidate, out: Collector) -> dict[str, int]:
    """Rule 4: the five labels, each once, each starting its own line, in order."""
    found: dict[str, int] = {}
    near: dict[str, int] = {}
    for index in range(candidate.index + 1, candidate.end):
        line = doc.lines[index]
        matches = list(_LABEL_EXACT.finditer(line))
        if not matches:
            guess = _LABEL_NEAR.match(line)
            if guess:
                label = next(s for s in SUBSECTIONS if s.lower() == guess.group(1).lower())
                near.setdefault(label, index)
            continue
        indent = len(line) - len(line.lstrip())
        for match in matches:
            label = match.group(1)
            if match.start() != indent:
                out.error(
                    "R4-own-line",
                    index,
                    f"`**{label}:**` does not start its own line.",
                    f"Put a line break before `**{label}:**`.",
                )
            if label in found:
                out.error(
                    "R4-duplicate",
                    index,
                    f"`**{label}:**` appears twice in candidate rank={candidate.rank}.",
                    f"Keep one `**{label}:**` in this block.",
                )
            else:
                found[label] = index
    for label in SUBSECTIONS:
        if label in found:
            continue
        if label in near:
            out.error(
                "R4-subsections",
                near[label],
                f"label written as `{doc.lines[near[label]].strip()[:40]}`.",
                f"Write the label exactly as `**{label}:**` (colon inside the bold).",
            )
        else:
            out.error(
                "R4-subsections",
                candidate.index,
                f"candidate rank={candidate.rank} has no `**{label}:**`.",
                f"Add `**{label}:**` (order: {', '.join(SUBSECTIONS)}).",
            )
    present = sorted((index, SUBSECTIONS.index(label)) for label, index in found.items())
    highest = -1
    for index, order in present:
        if order < highest:
            out.error(
                "R4-order",
                index,
                f"`**{SUBSECTIONS[order]}:**` is out of order.",
                f"Order the sub-sections as {', '.join(SUBSECTIONS)}.",
            )
            break
        highest = order
    return found


def detail_marker(
    doc: Document, candidate: Candidate, labels: dict[str, int], finding: FindingView | None, out: Collector
) -> Marker | None:
    """Rule 8: a detail_estimate marker per candidate, or the not-quantifiable sentence."""
    own = doc.markers_in("detail_estimate", candidate.index, candidate.end)
    for extra in own[1:]:
        out.error(
            "R8-detail-estimate",
            extra.begin,
            "more than one detail_estimate marker in one candidate.",
            "Keep one detail_estimate marker under **Impact estimate:**.",
        )
    anchor = labels.get("Impact estimate", candidate.index)
    if own:
        if "Impact estimate" in labels and own[0].begin < labels["Impact estimate"]:
            out.error(
                "R8-detail-estimate",
                own[0].begin,
                "detail_estimate marker comes before **Impact estimate:**.",
                "Move the marker block under the `**Impact estimate:**` line.",
            )
        return own[0]
    says_unquantifiable = any(
        NOT_QUANTIFIABLE in doc.lines[i].lower() for i in range(candidate.index + 1, candidate.end)
    )
    if says_unquantifiable and (finding is None or not finding.quantifiable):
        return None
    if finding is not None and finding.quantifiable:
        fix = (
            f"Add under **Impact estimate:** `<!-- impact-begin kind=detail_estimate low={finding.low} "
            f"high={finding.high} -->`, the two bullets, and `<!-- impact-end -->`."
        )
    else:
        fix = "Add the detail_estimate marker block, or write 'Impact not quantifiable from trace data.'"
    out.error("R8-detail-estimate", anchor, f"candidate rank={candidate.rank} has no detail_estimate marker.", fix)
    return None


def check_stray_detail_markers(doc: Document, out: Collector) -> None:
    starts = [c.index for c in doc.candidates]
    for marker in doc.markers:
        if marker.kind == "detail_estimate" and not inside_any(doc.candidates, marker.begin, starts):
            out.error(
                "R8-detail-estimate",
                marker.begin,
                "detail_estimate marker outside any candidate block.",
                "Move it under the **Impact estimate:** line of its candidate block, or delete it.",
            )


def check_detail_numbers(doc: Document, marker: Marker, finding: FindingView | None, out: Collector) -> None:
    """Rule 9 for the detail block: marker numbers and the two bullets."""
    if finding is not None:
        check_marker_numbers(marker, finding, f"candidate rank={finding.rank} detail_estimate", out)
    expected = {
        "Low": finding.low if finding else marker.attrs.get("low"),
        "High": finding.high if finding else marker.attrs.get("high"),
    }
    if marker.end is None:
        return  # unclosed: R8-unclosed says so; its extent is unknown
    seen: set[str] = set()
    for index in range(marker.begin + 1, marker.end):
        match = _BULLET.match(doc.lines[index])
        if not match:
            continue
        side, value = match.group(1), match.group(2)
        seen.add(side)
        if expected[side] is not None and value != expected[side]:
            out.error(
                "R9-impact-text",
                index,
                f"{side} end bullet says {value}, the finding's is {expected[side]}.",
                f"Write `- {side} end impact_score: {expected[side]}` exactly.",
            )
    for side in ("Low", "High"):
        if side not in seen and expected[side] not in (None, "null"):
            out.error(
                "R9-impact-text",
                marker.begin,
                f"detail_estimate block lacks the {side} end bullet.",
                f"Add `- {side} end impact_score: {expected[side]}` inside the marker.",
            )
