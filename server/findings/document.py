"""Parse a findings file into its parts (sections, P-items, candidate blocks, impact markers).

Parsing reports the shape errors it meets (rules 1, 2-heading, 3-malformed, 8-pairing) into a
Collector; the rule modules then check the parts against the metrics JSON.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from sdpa_analyzer.server.errors import MESSAGE_LIMIT, shorten_message
from sdpa_analyzer.server.findings.markdown import Block, parse_attrs, structural_lines
from sdpa_analyzer.server.findings.models import FindingError
from sdpa_analyzer.server.findings.spec import DETAILED_ANALYSIS, MARKER_KINDS, RECOMMENDATIONS

MAX_REPORTED = 200

# Every pattern here runs on text an LLM (or anyone) wrote: each is linear in the line's length. Patterns whose
# natural spelling backtracks quadratically (`\s*x?\s*`, `(.*?)\s*$`, `<!--.*impact`, `(.*?)-->` repeated) are
# written as a plain match plus a string operation with the same result.
_P_ITEM = re.compile(r"^### P(\d+): (\S.*)$")  # the title is group 2, trailing whitespace stripped
_P_LIKE = re.compile(r"^#{1,6}\s*(?:\*+\s*)?P\s*\d+\b")
_MARKER_HEAD = re.compile(r"<!--\s*impact-(begin|end)\b")
_LIKE_OPEN = re.compile(r"impact[-_ ]?(begin|end)", re.IGNORECASE)
_LIKE_CLOSE = re.compile(r"impact-(begin|end)\b", re.IGNORECASE)
_CANDIDATE = re.compile(r"^\s*<!--\s*reasoning-candidate\b(.*?)-->\s*$")
_NUMBER_TOKEN = re.compile(r"^(-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?|null)$")


class Collector:
    """Errors and warnings found so far; positions are 0-based line indexes, reported 1-based."""

    def __init__(self) -> None:
        self.errors: list[FindingError] = []
        self.warnings: list[FindingError] = []
        self.dropped = 0

    @property
    def full(self) -> bool:
        """No more errors will be listed (loops over many items stop building messages: only the count goes on)."""
        return len(self.errors) >= MAX_REPORTED

    def error(
        self, rule: str, index: int | None, message: str, fix: str, edit: tuple[str, str] | None = None
    ) -> None:
        """`edit`: the fix as a literal replacement on that line (old, new), where the fix is one."""
        if len(self.errors) >= MAX_REPORTED:
            self.dropped += 1
            return
        error = _finding_error(rule, index, message, fix)
        if edit is not None and edit[0] and edit[0] != edit[1]:
            error.edit = [edit[0], edit[1]]
        self.errors.append(error)

    def warn(self, rule: str, index: int | None, message: str, fix: str) -> None:
        if len(self.warnings) < MAX_REPORTED:
            self.warnings.append(_finding_error(rule, index, message, fix))


def _finding_error(rule: str, index: int | None, message: str, fix: str) -> FindingError:
    # messages quote the file's own lines: each is kept to one short line whatever the file holds
    return FindingError(
        rule=rule,
        line=None if index is None else index + 1,
        message=shorten_message(message, MESSAGE_LIMIT),
        fix=shorten_message(fix, MESSAGE_LIMIT),
    )


@dataclass(frozen=True)
class Heading:
    index: int
    level: int
    text: str


@dataclass
class Marker:
    begin: int
    end: int | None
    kind: str | None
    attrs: dict[str, str]

    def numbers(self) -> dict[str, str]:
        return {key: self.attrs[key] for key in ("low", "mid", "high") if key in self.attrs}

    def contains(self, index: int) -> bool:
        return self.begin < index and (self.end is None or index < self.end)


@dataclass
class PItem:
    index: int
    rank: int
    title: str
    end: int


@dataclass
class Candidate:
    index: int
    rank: int | None
    tier: str | None
    end: int


@dataclass
class Document:
    raw: list[str]
    lines: list[str]
    headings: list[Heading]
    blocks: list[Block] = field(default_factory=list)
    rec: int | None = None
    det: int | None = None
    rec_end: int = 0
    det_end: int = 0
    p_items: list[PItem] = field(default_factory=list)
    candidates: list[Candidate] = field(default_factory=list)
    markers: list[Marker] = field(default_factory=list)
    marker_begins: list[int] = field(default_factory=list)  # markers[i].begin, ascending (line order)

    def markers_in(self, kind: str, lo: int, hi: int) -> list[Marker]:
        """Markers of `kind` beginning strictly between lines lo and hi, found by bisection (a file of 10^4
        P-items and markers would otherwise compare every pair)."""
        i = bisect.bisect_right(self.marker_begins, lo)
        j = bisect.bisect_left(self.marker_begins, hi)
        return [m for m in self.markers[i:j] if m.kind == kind]

    def in_rec(self, index: int) -> bool:
        return self.rec is not None and self.rec < index < self.rec_end

    def in_det(self, index: int) -> bool:
        return self.det is not None and self.det < index < self.det_end


class _Block(Protocol):
    index: int
    end: int


def inside_any(blocks: Sequence[_Block], line: int, starts: list[int] | None = None) -> bool:
    """Whether `line` lies strictly inside one of `blocks` (in line order, disjoint: P-items, candidate blocks),
    by bisection on their first lines (`starts`, when the caller has them already)."""
    starts = [b.index for b in blocks] if starts is None else starts
    i = bisect.bisect_left(starts, line) - 1
    return i >= 0 and blocks[i].index < line < blocks[i].end


def p_item_heading(line: str) -> tuple[int, str] | None:
    """(rank, title) of a `### P<rank>: <title>` line, or None."""
    match = _P_ITEM.match(line)
    if match is None:
        return None
    return int(match.group(1)), match.group(2).rstrip()


def impact_markers(line: str) -> list[tuple[str, str]]:
    r"""(begin|end, attribute text) of every `<!-- impact-begin|end ... -->` in the line, left to right (the first
    `-->` closes each one): `re.finditer(r"<!--\s*impact-(begin|end)\b(.*?)-->")`, in linear time."""
    found = []
    pos = 0
    while (head := _MARKER_HEAD.search(line, pos)) is not None:
        close = line.find("-->", head.end())
        if close < 0:  # no later marker can close either
            break
        found.append((head.group(1), line[head.end() : close]))
        pos = close + 3
    return found


def looks_like_marker(line: str) -> bool:
    r"""A line that tries to be an impact marker: `<!--` followed later by impact-begin/end (any spelling), or
    impact-begin/end followed later by `-->` (the regex `<!--.*impact[-_ ]?(begin|end)|impact-(begin|end)\b.*-->`
    with re.I, in linear time)."""
    opening = line.find("<!--")
    if opening >= 0 and _LIKE_OPEN.search(line, opening + 4):
        return True
    close = _LIKE_CLOSE.search(line)
    return close is not None and line.find("-->", close.end()) >= 0


def headings_of(blocks: list[Block]) -> list[Heading]:
    """The `#` headings at the top level of the file (not inside a list item, a quote or fenced code), with
    their title as markdown reads it (trailing spaces and closing `#`s dropped)."""
    return [Heading(b.start, b.level, b.content.strip()) for b in blocks if b.kind == "heading" and b.depth == 0]


def _section_key(text: str) -> str:
    return re.sub(r"[^a-z]", "", text.lower())


_NEAR = {
    "recommendations": RECOMMENDATIONS,
    "recommendation": RECOMMENDATIONS,
    "detailedanalysis": DETAILED_ANALYSIS,
    "detailedanalyses": DETAILED_ANALYSIS,
}


def _next_top(headings: list[Heading], after: int, total: int) -> int:
    for heading in headings:
        if heading.index > after and heading.level <= 2:
            return heading.index
    return total


def parse_sections(doc: Document, out: Collector) -> None:
    """Rule 1: `## Recommendations` then `## Detailed Analysis`, and nothing after them."""
    exact: dict[str, list[int]] = {RECOMMENDATIONS: [], DETAILED_ANALYSIS: []}
    near: dict[str, list[int]] = {RECOMMENDATIONS: [], DETAILED_ANALYSIS: []}
    for heading in doc.headings:
        if heading.level == 2 and heading.text in exact:
            exact[heading.text].append(heading.index)
        elif _section_key(heading.text) in _NEAR and heading.level <= 4:
            near[_NEAR[_section_key(heading.text)]].append(heading.index)
    for name, found in exact.items():
        for index in found[1:]:
            out.error(
                "R1-duplicate",
                index,
                f"`## {name}` appears more than once.",
                f"Keep one `## {name}` section; merge the content of this one into it.",
            )
    doc.rec = exact[RECOMMENDATIONS][0] if exact[RECOMMENDATIONS] else None
    doc.det = exact[DETAILED_ANALYSIS][0] if exact[DETAILED_ANALYSIS] else None
    _report_missing(doc, near, out)
    if doc.rec is not None and doc.det is not None and doc.det < doc.rec:
        out.error(
            "R1-order",
            doc.rec,
            "`## Recommendations` comes after `## Detailed Analysis`.",
            "Move the whole `## Recommendations` section above `## Detailed Analysis`.",
        )
    total = len(doc.lines)
    doc.rec_end = _next_top(doc.headings, doc.rec, total) if doc.rec is not None else 0
    doc.det_end = _next_top(doc.headings, doc.det, total) if doc.det is not None else 0
    _report_extra_sections(doc, exact, near, out)


def _report_missing(doc: Document, near: dict[str, list[int]], out: Collector) -> None:
    for name, present in ((RECOMMENDATIONS, doc.rec), (DETAILED_ANALYSIS, doc.det)):
        if present is not None:
            continue
        if near[name]:
            index = near[name][0]
            out.error(
                "R1-sections",
                index,
                f"section heading is `{doc.lines[index].strip()}`, not `## {name}`.",
                f"Write the heading exactly as `## {name}` (level 2, this spelling and case).",
            )
            continue
        anchor = _missing_section_anchor(doc, name)
        where = "above this line" if anchor is not None else "at the end of the file"
        out.error(
            "R1-sections",
            anchor,
            f"`## {name}` section is missing.",
            f"Add a `## {name}` heading {where}"
            + (
                " (empty when category_findings[] is empty)."
                if name == RECOMMENDATIONS
                else " after the Recommendations (empty when category_findings[] is empty)."
            ),
        )


def _missing_section_anchor(doc: Document, name: str) -> int | None:
    """The line a missing section heading belongs above: its first content, else the next section."""
    content = re.compile(r"^### P\d" if name == RECOMMENDATIONS else r"^\s*<!--\s*reasoning-candidate")
    first = next((i for i, line in enumerate(doc.lines) if content.match(line)), None)
    if first is not None:
        return first
    return doc.det if name == RECOMMENDATIONS else None


def _report_extra_sections(
    doc: Document, exact: dict[str, list[int]], near: dict[str, list[int]], out: Collector
) -> None:
    starts = [i for i in (doc.rec, doc.det) if i is not None]
    if not starts:
        return
    known = {i for found in exact.values() for i in found} | {i for found in near.values() for i in found}
    for heading in doc.headings:
        if heading.level <= 2 and heading.index > min(starts) and heading.index not in known:
            out.error(
                "R1-extra-section",
                heading.index,
                f"heading `{doc.lines[heading.index].strip()}` after `## Recommendations`: the file must "
                "end with the Recommendations and Detailed Analysis sections.",
                "Move this section above `## Recommendations`, or make it a `####` heading inside a block.",
            )


def parse_p_items(doc: Document, out: Collector) -> None:
    """P-item headings inside Recommendations; any other level-3 heading there is an R2-heading error."""
    for position, heading in enumerate(doc.headings):
        raw = doc.lines[heading.index]
        inside = doc.in_rec(heading.index)
        if heading.level == 3 and inside:
            item = p_item_heading(raw)
            end = _block_end(doc.headings, position, 3, doc.rec_end)
            if item is not None:
                doc.p_items.append(PItem(heading.index, item[0], item[1], end))
            else:
                out.error(
                    "R2-heading",
                    heading.index,
                    f"`{raw.strip()}` is not a P-item heading; Recommendations holds only P-items.",
                    "Write it as `### P<rank>: <title> (<Library>)`, e.g. `### P1: Low attention "
                    "efficiency (PyTorch Native)`, or move it above `## Recommendations`.",
                )
        elif _P_LIKE.match(raw) and (heading.level <= 3 or inside):
            out.error(
                "R2-heading",
                heading.index,
                f"`{raw.strip()}` looks like a P-item but is not a `###` heading inside Recommendations.",
                "P-items are `### P<rank>: <title>` headings directly under `## Recommendations`.",
            )


def _block_end(headings: list[Heading], position: int, level: int, limit: int) -> int:
    for k in range(position + 1, len(headings)):  # by index: a slice would copy the rest for every heading
        heading = headings[k]
        if heading.index >= limit:
            break
        if heading.level <= level:
            return heading.index
    return limit


def parse_markers(doc: Document, out: Collector) -> None:
    """Rule 8 pairing, kinds, attributes and values of the impact markers."""
    open_marker: Marker | None = None
    for index, line in enumerate(doc.lines):
        matches = impact_markers(line) if "impact-" in line else []
        if not matches:
            if looks_like_marker(line):
                out.error(
                    "R8-syntax",
                    index,
                    f"malformed impact marker `{line.strip()[:80]}`.",
                    "Write markers as `<!-- impact-begin kind=p_item low=.. mid=.. high=.. -->` and "
                    "`<!-- impact-end -->`, each a complete HTML comment.",
                )
            continue
        for kind, attr_text in matches:
            if kind == "begin":
                if open_marker is not None:
                    out.error(
                        "R8-nested",
                        index,
                        "impact-begin before the previous marker was closed.",
                        "Add `<!-- impact-end -->` after the previous marker's content.",
                    )
                open_marker = Marker(index, None, None, parse_attrs(attr_text))
                open_marker.kind = open_marker.attrs.get("kind")
                doc.markers.append(open_marker)
            elif open_marker is None:
                out.error(
                    "R8-unmatched-end",
                    index,
                    "impact-end without a matching impact-begin.",
                    "Delete this line, or add the `<!-- impact-begin ... -->` that it closes.",
                )
            else:
                open_marker.end = index
                open_marker = None
    if open_marker is not None:
        out.error(
            "R8-unclosed",
            open_marker.begin,
            "impact-begin is never closed.",
            "Add `<!-- impact-end -->` on the line after the Impact text it wraps.",
        )
    doc.marker_begins = [m.begin for m in doc.markers]
    for marker in doc.markers:
        _check_marker_attrs(marker, out)


def _check_marker_attrs(marker: Marker, out: Collector) -> None:
    kinds = ", ".join(MARKER_KINDS)
    if marker.kind not in MARKER_KINDS:
        out.error(
            "R8-kind",
            marker.begin,
            f"impact marker kind={marker.kind!r} is not one of {kinds}.",
            "Use kind=p_item in a P-item, kind=detail_estimate under **Impact estimate:**.",
        )
        return
    missing = [key for key in MARKER_KINDS[marker.kind] if key not in marker.attrs]
    if missing:
        need = " ".join(f"{key}=..." for key in MARKER_KINDS[marker.kind])
        out.error(
            "R8-attrs",
            marker.begin,
            f"{marker.kind} marker lacks {', '.join(missing)}.",
            f"A {marker.kind} marker carries `{need}` copied from the metrics JSON.",
        )
    numbers = marker.numbers()
    bad = {key: value for key, value in numbers.items() if not _NUMBER_TOKEN.match(value)}
    for key, value in bad.items():
        out.error(
            "R8-value",
            marker.begin,
            f"marker {key}={value!r} is not a number or null.",
            "Copy the number exactly as the metrics JSON writes it (e.g. 9.69), or null.",
        )
    values = [value for key, value in numbers.items() if key not in bad]
    if "null" in values and any(value != "null" for value in values):
        out.error(
            "R8-null-mix",
            marker.begin,
            "marker mixes null and numbers.",
            "Either every number comes from the metrics JSON, or all are null (not quantifiable).",
        )


def parse_candidates(doc: Document, out: Collector) -> None:
    """Rule 3 block markers: well formed, inside Detailed Analysis."""
    starts: list[tuple[int, dict[str, str]]] = []
    for index, line in enumerate(doc.lines):
        if "reasoning-candidate" not in line:
            continue
        match = _CANDIDATE.match(line)
        attrs = parse_attrs(match.group(1)) if match else {}
        if not match or "tier" not in attrs or not attrs.get("rank", "").isdigit():
            out.error(
                "R3-malformed",
                index,
                f"malformed candidate marker `{line.strip()[:80]}`.",
                "Write it alone on its line as `<!-- reasoning-candidate tier=compute rank=N -->`.",
            )
            continue
        if not doc.in_det(index):
            out.error(
                "R3-outside",
                index,
                "reasoning-candidate marker outside `## Detailed Analysis`.",
                "Move this block under `## Detailed Analysis`.",
            )
            continue
        starts.append((index, attrs))
    for position, (index, attrs) in enumerate(starts):
        end = starts[position + 1][0] if position + 1 < len(starts) else doc.det_end
        doc.candidates.append(Candidate(index, int(attrs["rank"]), attrs.get("tier"), end))


def parse_document(raw: list[str], blocks: list[Block], out: Collector) -> Document:
    """The parts of a findings file (its lines, `text.splitlines()`, and their markdown blocks, `read_blocks`)."""
    doc = Document(raw=raw, lines=structural_lines(raw, blocks), headings=headings_of(blocks), blocks=blocks)
    parse_sections(doc, out)
    parse_p_items(doc, out)
    parse_markers(doc, out)
    parse_candidates(doc, out)
    return doc
