"""Whose content each P-item and Detailed Analysis block holds, and one fix when it is another's.

Before the P-items are checked one by one, `resolve_owners` reads three ranks for each P-item and candidate block:
the one its heading (or `rank=`) says, the one whose scores its impact marker holds, and the one whose numbers and
names its prose quotes (grounding.py). A heading over another P-item's content, or prose under another P-item's
heading, is ONE error with one fix (write these two heading lines / swap these two line ranges); the errors that
follow from it (rank order, library suffix) are not reported, and everything else is checked against the rank of
the content, so that applying the one fix literally leaves a valid file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from sdpa_analyzer.server.findings.document import Collector, Document
from sdpa_analyzer.server.findings.grounding import Grounding, Number
from sdpa_analyzer.server.findings.metrics_view import FindingView
from sdpa_analyzer.server.findings.prose import Run, category_number, neutral_name
from sdpa_analyzer.server.findings.spec import library_suffix

_RANK_ATTR = re.compile(r"\brank=\d+")
_TITLE_WORDS = re.compile(r"[^a-z0-9]+")


@dataclass
class Owner:
    """A P-item or candidate block: the rank its heading (or `rank=`) says, the rank whose scores its marker holds
    when that is another one, the rank its prose quotes when that is another one, and the rank its content is
    checked against."""

    heading: int
    marker: int | None
    prose: int | None
    content: int
    evidence: str = ""  # a token that shows whose the prose is (for messages)
    foreign: list[tuple[int, int]] = field(default_factory=list)  # 1-based line ranges quoting another rank

    @property
    def prose_rank(self) -> int:
        """The rank the prose is checked against: the one it quotes when that is another P-item's (reported once
        as swapped or misplaced), else the content's."""
        return self.prose if self.prose is not None else self.content


def _marker_rank(numbers: dict[str, str], findings: list[FindingView], keys: tuple[str, ...]) -> int | None:
    if any(key not in numbers for key in keys) or all(numbers[k] == "null" for k in keys):
        return None
    hits = [
        f.rank for f in findings if all(numbers[k] == {"low": f.low, "mid": f.mid, "high": f.high}[k] for k in keys)
    ]
    return hits[0] if len(hits) == 1 else None


def _tokens(runs: list[Run], grounding: Grounding) -> list[tuple[str, Number | str]]:
    """The numbers and backticked names of the runs that belong to some P-item (the category's are nobody's)."""
    found: list[tuple[str, Number | str]] = []
    for run in runs:
        found += [("n", n) for n in run.numbers if not category_number(grounding, n)]
        found += [("s", span) for _, span in run.spans if not neutral_name(grounding, span)]
    return found


def _holds(grounding: Grounding, rank: int, kind: str, token: Number | str) -> bool:
    if kind == "n":
        return isinstance(token, Number) and grounding.has_number(rank, token)
    return isinstance(token, str) and grounding.has_name(rank, token)


def _prose_rank(runs: list[Run], rank: int, grounding: Grounding) -> tuple[int | None, str]:
    """The one other rank that holds every token of the runs, when some token is not `rank`'s."""
    tokens = _tokens(runs, grounding)
    foreign = [(kind, token) for kind, token in tokens if not _holds(grounding, rank, kind, token)]
    if not foreign:
        return None, ""
    first = foreign[0][1]
    choices = grounding.number_ranks(first) if isinstance(first, Number) else grounding.name_owners(first)
    for q in choices:
        if q != rank and all(_holds(grounding, q, k, t) for k, t in tokens):
            return q, first.written if isinstance(first, Number) else f"`{first}`"
    return None, ""


def resolve_owners(
    doc: Document, runs: list[Run], findings: list[FindingView], grounding: Grounding | None
) -> tuple[list[Owner], list[Owner]]:
    """Owners of the P-items and of the candidate blocks, in document order (without metrics: as written)."""
    if grounding is None:
        return (
            [Owner(item.rank, None, None, item.rank) for item in doc.p_items],
            [Owner(c.rank or 0, None, None, c.rank or 0) for c in doc.candidates],
        )
    by_region: dict[tuple[str, int], list[Run]] = {}
    for run in runs:
        if not run.heading:
            by_region.setdefault((run.region, run.index), []).append(run)
    known = {f.rank for f in findings}
    items = []
    for position, item in enumerate(doc.p_items):
        markers = doc.markers_in("p_item", item.index, item.end)
        marker = _marker_rank(markers[0].numbers(), findings, ("low", "mid", "high")) if markers else None
        items.append(_owner(item.rank, marker, by_region.get(("p_item", position), []), known, grounding))
    blocks = []
    for position, cand in enumerate(doc.candidates):
        markers = doc.markers_in("detail_estimate", cand.index, cand.end)
        marker = _marker_rank(markers[0].numbers(), findings, ("low", "high")) if markers else None
        rank = cand.rank if cand.rank is not None else 0
        blocks.append(_owner(rank, marker, by_region.get(("candidate", position), []), known, grounding))
    return items, blocks


def _owner(heading: int, marker: int | None, runs: list[Run], known: set[int], grounding: Grounding | None) -> Owner:
    if marker == heading or heading not in known:
        marker = None
    if marker is not None:
        if grounding is not None and _prose_rank(runs, marker, grounding)[0] is not None:
            return Owner(heading, None, None, heading)  # marker and prose disagree: check it as written
        return Owner(heading, marker, None, marker)  # the content is the marker's rank's: the heading is wrong
    if grounding is None or heading not in known:
        return Owner(heading, None, None, heading)
    prose, token = _prose_rank(runs, heading, grounding)
    return Owner(heading, None, prose, heading, token, _foreign_lines(runs, heading, grounding) if prose else [])


def _foreign_lines(runs: list[Run], rank: int, grounding: Grounding) -> list[tuple[int, int]]:
    """The 1-based line ranges of the runs that quote a number or name `rank` does not hold."""
    lines: set[int] = set()
    for run in runs:
        lines |= {run.line_at(n.start) for n in run.numbers
                  if not category_number(grounding, n) and not grounding.has_number(rank, n)}  # fmt: skip
        lines |= {line for line, span in run.spans
                  if not neutral_name(grounding, span) and not grounding.has_name(rank, span)}  # fmt: skip
    return _line_ranges(lines)


# ---- reporting ---------------------------------------------------------------------------------------------------
@dataclass
class Suppressed:
    """Errors that follow from a root cause reported once: (rule, first line, last line), 0-based, inclusive."""

    spans: list[tuple[str, int, int]] = field(default_factory=list)

    def add(self, rules: tuple[str, ...], first: int, last: int) -> None:
        self.spans.extend((rule, first, last) for rule in rules)

    def hides(self, rule: str, line: int | None) -> bool:
        if line is None:
            return False
        return any(rule == r and first <= line - 1 <= last for r, first, last in self.spans)


def _ranges(runs: list[Run]) -> list[tuple[int, int]]:
    """The 1-based line ranges the runs' prose sits on (their marker and Impact lines left out)."""
    return _line_ranges({line for run in runs for line in run.lines})


def _line_ranges(lines: set[int]) -> list[tuple[int, int]]:
    """0-based line numbers as 1-based inclusive ranges of consecutive lines."""
    ranges: list[tuple[int, int]] = []
    for line in sorted(lines):
        if ranges and ranges[-1][1] == line:
            ranges[-1] = (ranges[-1][0], line + 1)
        else:
            ranges.append((line + 1, line + 1))
    return ranges


def _ranges_text(ranges: list[tuple[int, int]]) -> str:
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in ranges)


def _partner(owners: list[Owner], i: int, attr: str) -> int | None:
    me = owners[i]
    other = getattr(me, attr)
    for j, owner in enumerate(owners):
        if j != i and owner.heading == other and getattr(owner, attr) == me.heading:
            return j
    return None


def report_item_owners(
    doc: Document,
    owners: list[Owner],
    runs: list[Run],
    findings: dict[int, FindingView],
    out: Collector,
    hidden: Suppressed,
) -> None:
    """R2-swapped-headings and R14-swapped / R14-misplaced for the P-items."""
    prose = _prose_runs(runs, "p_item")
    for i, owner in enumerate(owners):
        item = doc.p_items[i]
        if owner.marker is not None:
            j = _partner(owners, i, "marker")
            if j is not None and j < i:
                continue
            want = _heading_line(doc, i, owner.content, findings.get(owner.content), j)
            fix = f"Write `{want}` at line {item.index + 1}"
            if j is not None:
                other = doc.p_items[j]
                want_j = _heading_line(doc, j, owners[j].content, findings.get(owners[j].content), i)
                fix += f" and `{want_j}` at line {other.index + 1}"
                hidden.add(("R2-rank-order", "R2-library", "R2-heading"), other.index, other.end - 1)
            hidden.add(("R2-rank-order", "R2-library", "R2-heading"), item.index, item.end - 1)
            out.error(
                "R2-swapped-headings",
                item.index,
                f"`### P{owner.heading}:` heads P{owner.content}'s content (its impact marker holds category_findings "
                f"rank {owner.content}'s scores).",
                fix + "; keep everything under the headings as it is.",
            )
        elif owner.prose is not None:
            _report_prose(owners, i, prose, f"P{owner.heading}", "Insight and Action", out, "P-item")


def report_block_owners(
    doc: Document, owners: list[Owner], runs: list[Run], out: Collector, hidden: Suppressed
) -> None:
    """R3-swapped-rank and R14-swapped / R14-misplaced for the Detailed Analysis blocks."""
    prose = _prose_runs(runs, "candidate")
    for i, owner in enumerate(owners):
        cand = doc.candidates[i]
        if owner.marker is not None:
            j = _partner(owners, i, "marker")
            if j is not None and j < i:
                continue
            line = _RANK_ATTR.sub(f"rank={owner.content}", doc.lines[cand.index].strip())
            fix = f"Write `{line}` at line {cand.index + 1}"
            if j is not None:
                other = doc.candidates[j]
                line = _RANK_ATTR.sub(f"rank={owners[j].content}", doc.lines[other.index].strip())
                fix += f" and `{line}` at line {other.index + 1}"
                hidden.add(("R3-rank",), other.index, other.end - 1)
            hidden.add(("R3-rank",), cand.index, cand.end - 1)
            out.error(
                "R3-swapped-rank",
                cand.index,
                f"the block marked rank={owner.heading} holds rank {owner.content}'s detail_estimate and prose.",
                fix + "; keep the blocks where they are.",
            )
        elif owner.prose is not None:
            _report_prose(owners, i, prose, f"rank={owner.heading}", "Identification, Reasoning and Resolution", out,
                          "block")  # fmt: skip


def _prose_runs(runs: list[Run], region: str) -> dict[int, list[Run]]:
    found: dict[int, list[Run]] = {}
    for run in runs:
        if run.region == region and not run.heading:
            found.setdefault(run.index, []).append(run)
    return found


def _report_prose(
    owners: list[Owner], i: int, prose: dict[int, list[Run]], name: str, what: str, out: Collector, kind: str
) -> None:
    owner = owners[i]
    mine = prose.get(i, [])
    if not mine:
        return
    j = _partner(owners, i, "prose")
    label = "P" if kind == "P-item" else "rank="
    theirs = prose.get(j, []) if j is not None else []
    if j is not None:
        # Move only the lines that quote the other P-item (an Insight swapped under an Action that quotes nothing
        # is fixed by swapping the Insight lines, not the whole paragraph), when both sides line up.
        mine_lines, their_lines = owner.foreign, owners[j].foreign
        if mine_lines and [b - a for a, b in mine_lines] == [b - a for a, b in their_lines]:
            mine_ranges, their_ranges = mine_lines, their_lines
        else:
            mine_ranges, their_ranges = _ranges(mine), _ranges(theirs)
    if j is not None and len(their_ranges) == len(mine_ranges):
        if j < i:
            return
        out.error(
            "R14-swapped",
            mine_ranges[0][0] - 1,
            f"the {what} of {name} (lines {_ranges_text(mine_ranges)}) belong to {label}{owner.prose} (they quote "
            f"{owner.evidence}), and {label}{owner.prose}'s (lines {_ranges_text(their_ranges)}) to {name}.",
            f"Swap lines {_ranges_text(mine_ranges)} with lines {_ranges_text(their_ranges)}; keep the "
            "headings, markers, tables and Impact lines where they are.",
        )
        return
    out.error(
        "R14-misplaced",
        _ranges(mine)[0][0] - 1,
        f"the {what} of {name} (lines {_ranges_text(_ranges(mine))}) quote {label}{owner.prose}'s "
        f"{owner.evidence} and nothing of {name}'s own.",
        f"Rewrite lines {_ranges_text(_ranges(mine))} about {name}'s members, or move them to {label}{owner.prose}.",
    )


def _heading_line(doc: Document, position: int, rank: int, finding: FindingView | None, partner: int | None) -> str:
    """The heading P-item `position` should have: its own title under the content's rank, or the partner's title
    when the whole heading line moved (its library suffix is the other finding's)."""
    title = doc.p_items[position].title
    suffix = library_suffix(finding.library) if finding else None
    if partner is not None and suffix is not None and not title.endswith(suffix):
        title = doc.p_items[partner].title
    return f"### P{rank}: {title}"


def _bare_title(text: str, suffix: str | None) -> str:
    text = text.strip()
    return text[: -len(suffix)].rstrip() if suffix and text.endswith(suffix) else text


def _title_key(text: str) -> str:
    return _TITLE_WORDS.sub(" ", text.lower()).strip()


def check_block_titles(
    doc: Document,
    item_owners: list[Owner],
    block_owners: list[Owner],
    runs: list[Run],
    findings: dict[int, FindingView],
    out: Collector,
) -> None:
    """R4-title: a block's `####` title is its P-item's title without the library (the template asks for it); a
    title that is another P-item's is an error (swapped), any other difference a warning."""
    titles: dict[int, tuple[str, str]] = {}  # rank -> (comparison key, the title without the library)
    for item, owner in zip(doc.p_items, item_owners, strict=True):
        finding = findings.get(owner.content)
        bare = _bare_title(item.title, library_suffix(finding.library) if finding else None)
        if _title_key(bare) and "{{" not in bare:
            titles.setdefault(owner.content, (_title_key(bare), bare))
    headings = {run.index: run for run in runs if run.region == "candidate" and run.heading}
    wrong: dict[int, int] = {}  # candidate position -> the rank whose title it has
    for i, owner in enumerate(block_owners):
        run = headings.get(i)
        own = titles.get(owner.content)
        if run is None or own is None:
            continue
        key = _title_key(run.raw)
        if key == own[0] or "{{" in run.raw:
            continue
        other = next((rank for rank, (title, _) in titles.items() if title == key and rank != owner.content), None)
        if other is None:
            out.warn(
                "R4-title",
                run.start,
                f"the title of rank={owner.content} differs from P{owner.content}'s title.",
                f"Write `#### {own[1]}` (the P-item's title without the library).",
            )
        else:
            wrong[i] = other
    for i, other in wrong.items():
        j = next(
            (k for k, r in wrong.items() if block_owners[k].content == other and r == block_owners[i].content), None
        )
        if j is not None and j < i:
            continue
        run = headings[i]
        fix = f"Swap lines {run.start + 1} and {headings[j].start + 1}." if j is not None else (
            f"Write `#### {titles[block_owners[i].content][1]}` at line {run.start + 1}.")  # fmt: skip
        out.error(
            "R4-title",
            run.start,
            f"the title of the rank={block_owners[i].content} block is P{other}'s title.",
            fix,
        )
