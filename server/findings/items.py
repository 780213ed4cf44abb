"""Rules on the Recommendations side: P-item set and order (2), p_item markers (8), numbers (9),
heuristic warning line (10)."""

from __future__ import annotations

import bisect
import itertools
import re
from collections import Counter

from sdpa_analyzer.server.errors import shorten_middle
from sdpa_analyzer.server.findings.document import Collector, Document, Marker, PItem, inside_any
from sdpa_analyzer.server.findings.metrics_view import FindingView
from sdpa_analyzer.server.findings.spec import (
    MISSING,
    NOT_QUANTIFIABLE,
    P_LABELS,
    heuristic_warning_line,
    library_suffix,
)
from sdpa_analyzer.server.findings.template import IMPACT_TEXT

_IMPACT_LINE = "**Impact**: impact_score: "

_LABEL_EXACT = {label: re.compile(rf"^\*\*{label}\*\*:") for label in P_LABELS}
# `\s*[*_]{0,2}\s*` spelled without its two adjacent `\s*` (quadratic backtracking on a line of spaces)
_LABEL_NEAR = re.compile(
    r"^\s*(?:[*_]{1,2}\s*)?(insight|action|impact)s?\s*(?:(?:[*_]{1,2}\s*)?:|:\s*[*_]{0,2})", re.I
)
_IMPACT_SCORE = re.compile(r"impact_score\s*:\s*(-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?|null)")
_WARNING_LIKE = re.compile(r"^\s*>\s*\*\*Warning\b", re.I)
_WARNING_FORMAT = re.compile(
    r"^> \*\*Warning — estimated:\*\* No performance model for this op; impact is derived from its "
    r"E2E GPU-time share \((-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)%\), not a gap projection\.$"
)


def _example_heading(rank: int, finding: FindingView | None) -> str:
    suffix = library_suffix(finding.library) if finding else None
    return f"### P{rank}: <title>" + (f" {suffix}" if suffix else "")


def check_p_item_set(
    doc: Document, expected: list[int] | None, findings: dict[int, FindingView], out: Collector
) -> None:
    """Rule 2: one P-item per category_findings[] entry, ranks in ascending order."""
    if expected is None or not expected:
        return  # no metrics: nothing to compare; empty findings are rule 11's business
    found = [item.rank for item in doc.p_items]
    if len(found) != len(expected) or sorted(found) != sorted(expected):
        # sets, counts and a running maximum: linear in P-items and findings (both can number 10^4)
        counts = Counter(found)
        wanted = set(expected)
        missing = [rank for rank in expected if rank not in counts]
        extra = next((item for item in doc.p_items if item.rank not in wanted or counts[item.rank] > 1), None)
        ranks = shorten_middle(", ".join(map(str, expected)), 120)
        if extra is not None:
            out.error(
                "R2-p-items",
                extra.index,
                f"P{extra.rank} has no matching category_findings[] entry (ranks: {ranks}) or repeats one.",
                "Delete this P-item: the P-item set comes only from category_findings[].",
            )
        highest = list(itertools.accumulate(found, max))  # highest rank up to each P-item, non-decreasing
        for position, rank in enumerate(missing):
            if out.full:
                out.dropped += len(missing) - position
                break
            after = bisect.bisect_right(highest, rank)  # the first P-item ranked above the missing one
            anchor = doc.p_items[after].index if after < len(doc.p_items) else None
            if anchor is None:
                anchor = doc.p_items[-1].end if doc.p_items else doc.rec
            out.error(
                "R2-p-items",
                anchor,
                f"no P-item for category_findings[] rank {rank} ({len(found)} P-items, {len(expected)} findings).",
                f"Add `{_example_heading(rank, findings.get(rank))}` with Insight, Action and its "
                "p_item impact marker here, in rank order.",
            )
        return
    for item, rank in zip(doc.p_items, expected, strict=True):
        if item.rank != rank:
            out.error(
                "R2-rank-order",
                item.index,
                f"P{item.rank} is where P{rank} belongs: P-items must follow ascending rank.",
                f"Reorder the P-items as {shorten_middle(', '.join(f'P{r}' for r in expected), 120)}.",
            )
            return


def check_title(item: PItem, finding: FindingView | None, out: Collector) -> None:
    if finding is None:
        return
    suffix = library_suffix(finding.library)
    title = item.title.rstrip()
    if suffix is None:
        if title.lower().endswith("(unknown)"):
            out.error(
                "R2-library",
                item.index,
                "title ends with `(Unknown)`.",
                "Drop the `(Unknown)` suffix: it is omitted when the library is unknown.",
            )
        return
    if not title.endswith(suffix):
        out.error(
            "R2-library",
            item.index,
            f"P{item.rank} title does not end with `{suffix}` (the finding's library).",
            f"End the heading with ` {suffix}`, e.g. `### P{item.rank}: <title> {suffix}`.",
        )
    elif not title[: -len(suffix)].strip():
        out.error(
            "R2-heading",
            item.index,
            f"P{item.rank} has a library suffix but no title.",
            f"Write a short title before `{suffix}`.",
        )


def check_labels(doc: Document, item: PItem, out: Collector) -> dict[str, int]:
    """**Insight**, **Action**, **Impact**: spelled exactly, once each, in that order, with text."""
    found: dict[str, int] = {}
    misspelt: set[str] = set()
    for index in range(item.index + 1, item.end):
        line = doc.lines[index]
        label = next((name for name, rx in _LABEL_EXACT.items() if rx.match(line)), None)
        if label is None:
            near = _LABEL_NEAR.match(line)
            if near:
                name = near.group(1).capitalize()
                misspelt.add(name)
                out.error(
                    "R2-labels",
                    index,
                    f"label written as `{line.strip()[:40]}`.",
                    f"Write the label exactly as `**{name}**:` at the start of the line.",
                )
            continue
        if label in found:
            out.error(
                "R2-labels",
                index,
                f"`**{label}**` appears twice in P{item.rank}.",
                f"Keep one `**{label}**:` line in this P-item.",
            )
            continue
        found[label] = index
        if label != "Impact" and not line.split(":", 1)[1].strip():
            out.error(
                "R2-label-empty",
                index,
                f"`**{label}**:` has no text.",
                f"Write the {label.lower()} on the same line after `**{label}**:`.",
            )
    for label in P_LABELS:
        if label not in found and label not in misspelt:
            out.error(
                "R2-labels",
                item.index,
                f"P{item.rank} has no `**{label}**:` line.",
                f"Add a `**{label}**:` line to P{item.rank} (order: Insight, Action, Impact).",
            )
    order = [found[label] for label in P_LABELS if label in found]
    for previous, current in itertools.pairwise(order):
        if current < previous:
            out.error(
                "R2-label-order",
                current,
                f"P{item.rank} labels are out of order.",
                "Order the lines as **Insight**, then **Action**, then the marked **Impact**.",
            )
            break
    return found


def p_item_marker(doc: Document, item: PItem, out: Collector) -> Marker | None:
    """Rule 8: exactly one p_item marker inside each P-item."""
    own = doc.markers_in("p_item", item.index, item.end)
    if not own:
        out.error(
            "R8-p-item",
            item.index,
            f"P{item.rank} has no p_item impact marker.",
            "Wrap the **Impact** line in `<!-- impact-begin kind=p_item low=.. mid=.. high=.. -->` "
            "and `<!-- impact-end -->`.",
        )
        return None
    for extra in own[1:]:
        out.error(
            "R8-p-item",
            extra.begin,
            f"P{item.rank} has more than one p_item marker.",
            "Keep one p_item marker per P-item; delete this one.",
        )
    return own[0]


def check_stray_p_markers(doc: Document, out: Collector) -> None:
    starts = [item.index for item in doc.p_items]
    for marker in doc.markers:
        if marker.kind == "p_item" and not inside_any(doc.p_items, marker.begin, starts):
            out.error(
                "R8-p-item",
                marker.begin,
                "p_item marker outside any P-item.",
                "Move it into its `### P<rank>:` item around the **Impact** line, or delete it.",
            )


def check_impact_line(
    doc: Document,
    item: PItem,
    marker: Marker | None,
    labels: dict[str, int],
    finding: FindingView | None,
    out: Collector,
) -> None:
    impact = labels.get("Impact")
    if impact is None:
        return
    if marker is not None and not marker.contains(impact):
        out.error(
            "R8-impact-outside",
            impact,
            f"P{item.rank} **Impact** line is outside its p_item marker.",
            "Put the **Impact** line between the impact-begin and impact-end lines.",
        )
    expected = finding.mid if finding else (marker.attrs.get("mid") if marker else None)
    if expected is None:
        return
    match = _IMPACT_SCORE.search(doc.lines[impact])
    if match is None:
        if expected != "null" or NOT_QUANTIFIABLE not in doc.lines[impact].lower():
            out.error(
                "R9-impact-text",
                impact,
                f"P{item.rank} **Impact** line lacks `impact_score: {expected}`.",
                f"Write `**Impact**: impact_score: {expected}`.",
            )
    elif match.group(1) != expected:
        out.error(
            "R9-impact-text",
            impact,
            f"P{item.rank} **Impact** says impact_score: {match.group(1)}, the finding's is {expected}.",
            f"Write `**Impact**: impact_score: {expected}` (copied exactly from the metrics JSON).",
        )
    elif " ".join(doc.lines[impact].split()) not in (
        f"{_IMPACT_LINE}{expected}",
        f"{_IMPACT_LINE}{expected} {IMPACT_TEXT}",
    ):
        out.error(
            "R9-impact-text",
            impact,
            f"P{item.rank} **Impact** line is rewritten (`{shorten_middle(doc.lines[impact].strip(), 80)}`): it holds "
            "the score and its unit only.",
            f"Write `{_IMPACT_LINE}{expected} {IMPACT_TEXT}` at line {impact + 1} (the whole line, exactly).",
        )


def check_marker_numbers(marker: Marker, finding: FindingView, label: str, out: Collector) -> None:
    """Rule 9: marker numbers are the finding's, spelled exactly as the metrics JSON writes them."""
    expected = {"low": finding.low, "mid": finding.mid, "high": finding.high}
    wrong = [key for key, value in marker.numbers().items() if value != expected[key]]
    if wrong:
        got = ", ".join(f"{key}={marker.attrs[key]}" for key in wrong)
        want = ", ".join(f"{key}={expected[key]}" for key in wrong)
        keys = {"low": "impact_score_low", "mid": "impact_score", "high": "impact_score_high"}
        fields = ", ".join(keys[key] for key in wrong)
        out.error(
            "R9-marker-numbers",
            marker.begin,
            f"{label} marker has {got}; category_findings rank {finding.rank} has {want} ({fields}).",
            f"Set {want} exactly as written in the metrics JSON (no re-rounding, no trailing zeros).",
        )


def check_warning_line(
    doc: Document, item: PItem, marker: Marker | None, finding: FindingView | None, out: Collector
) -> None:
    """Rule 10: a heuristic finding's p_item marker is followed by the estimated-impact warning."""
    warnings = [i for i in range(item.index + 1, item.end) if _WARNING_LIKE.match(doc.lines[i])]
    heuristic = finding.heuristic if finding else None
    if heuristic is False:
        for index in warnings:
            out.error(
                "R10-unexpected-warning",
                index,
                f"P{item.rank} is a quantified finding but carries the heuristic warning.",
                "Delete the warning line: it belongs only to heuristic (unmodeled) findings.",
            )
        return
    if heuristic is None:
        for index in warnings:
            if not _WARNING_FORMAT.match(doc.lines[index]):
                out.error(
                    "R10-heuristic-warning",
                    index,
                    "heuristic warning line is not in the required form.",
                    "Write: " + heuristic_warning_line("<percent_of_total>"),
                )
        return
    if marker is None or marker.end is None:
        return
    expected = heuristic_warning_line(finding.percent_text or MISSING)
    after = marker.end + 1
    while after < item.end and not doc.lines[after].strip():
        after += 1
    line = doc.lines[after] if after < item.end else ""
    if line.rstrip() == expected:
        return
    where = after if _WARNING_LIKE.match(line) else marker.end + 1
    problem = "has the wrong text or percentage" if _WARNING_LIKE.match(line) else "is missing"
    out.error(
        "R10-heuristic-warning",
        where,
        f"P{item.rank} is a heuristic finding: the warning line after its p_item marker {problem}.",
        f"Put this line right after `<!-- impact-end -->`: {expected}",
    )
